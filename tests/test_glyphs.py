"""Icon glyphs read off a button's pixels (perception.pixel.glyphs): drawn icons in several
sizes, stroke widths and both polarities; what must not read as a glyph (letters, "C++", a
checkbox's tick, a photo); the corpus's labelled icon buttons; and the pipeline offering an
unlabelled close button as "×" so that a dismiss is recommended."""

from __future__ import annotations

import json
import re
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt
import pytest

from perception.pixel.glyphs import GLYPHS, glyph_of, read_glyphs
from perception.types import BoxPx
from tests.conftest import CORPUS_DIR, requires_corpus

U8 = npt.NDArray[np.uint8]

SIZES = (36, 48, 72, 96, 144)
"""Button sides in pixels (a 48 dp button at mdpi to xxxhdpi, and a small one)."""
POLARITIES = ((250, 40), (30, 235), (33, 150, 243))
"""(background, ink): dark on light, light on dark, and a white icon on an accent colour."""


def _button(side: int, background: int) -> U8:
    return np.full((side, side, 3), background, np.uint8)


def _pt(x: float, y: float) -> tuple[int, int]:
    return (round(x * 16), round(y * 16))


def _draw(glyph: str, side: int, stroke: float, polarity: tuple[int, ...]) -> U8:
    """The glyph as an app draws it: anti-aliased, in the middle 40% of a button (Material
    draws a 24 dp icon in a 48 dp button, its glyph 14-18 dp of that)."""
    bg, ink = polarity[0], polarity[-1]
    img = _button(side, bg)
    if len(polarity) == 3:
        img[:] = (polarity[0], polarity[1], polarity[1])  # a coloured button, white ink
        ink = 255
    t = max(1, round(stroke * side))
    c = side / 2
    r = 0.2 * side
    colour = (ink, ink, ink)

    def line(a: tuple[float, float], b: tuple[float, float]) -> None:
        cv2.line(img, _pt(*a), _pt(*b), colour, t, cv2.LINE_AA, 4)

    if glyph == "×":
        line((c - r, c - r), (c + r, c + r))
        line((c + r, c - r), (c - r, c + r))
    elif glyph == "+":
        line((c, c - r), (c, c + r))
        line((c - r, c), (c + r, c))
    elif glyph == "←":
        line((c - r, c), (c + r, c))
        line((c - r, c), (c - r * 0.05, c - r * 0.95))
        line((c - r, c), (c - r * 0.05, c + r * 0.95))
    elif glyph == "search":
        cv2.circle(img, _pt(c - 0.25 * r, c - 0.25 * r), round(0.6 * r * 16), colour, t,
                   cv2.LINE_AA, 4)
        line((c + 0.2 * r, c + 0.2 * r), (c + r, c + r))
    elif glyph in ("⋮", "⋯"):
        dot = max(2, round(0.09 * side))
        for k in (-1, 0, 1):
            x, y = (c, c + k * 2.2 * dot) if glyph == "⋮" else (c + k * 2.2 * dot, c)
            cv2.circle(img, _pt(x, y), round(dot / 2 * 16), colour, -1, cv2.LINE_AA, 4)
    elif glyph == "☰":
        for k in (-1, 0, 1):
            line((c - 0.9 * r, c + k * 0.7 * r), (c + 0.9 * r, c + k * 0.7 * r))
    elif glyph == "→":
        line((c - r, c), (c + r, c))
        line((c + r, c), (c + r * 0.05, c - r * 0.95))
        line((c + r, c), (c + r * 0.05, c + r * 0.95))
    elif glyph == "share":
        # Material's: dots of 6 dp at (18, 5), (6, 12), (18, 19) of 24 dp, joined.
        u = r / 7.5
        dots = [(c + 6 * u, c - 7 * u), (c - 6 * u, c), (c + 6 * u, c + 7 * u)]
        line(dots[0], dots[1])
        line(dots[1], dots[2])
        for x, y in dots:
            cv2.circle(img, _pt(x, y), round(2.6 * u * 16), colour, -1, cv2.LINE_AA, 4)
    elif glyph in ("‹", "›"):
        k = 1 if glyph == "‹" else -1  # Material's chevron: 7.4 dp wide, 12 tall
        line((c + k * 0.5 * r, c - 0.8 * r), (c - k * 0.5 * r, c))
        line((c - k * 0.5 * r, c), (c + k * 0.5 * r, c + 0.8 * r))
    elif glyph in ("▶", "send", "⏸", "mic", "settings"):
        _draw_solid(img, glyph, c, r, colour)
    elif glyph == "♡":
        # Material's favourite, outlined: a square turned 45 degrees with a disc on each of its
        # upper sides (the outline of their union, found at 16x and drawn at that precision).
        n = side * 16
        union = np.zeros((n, n), np.uint8)
        d = 0.27 * n / np.sqrt(2)  # half the square's diagonal
        x, y = n / 2, n / 2 + 0.07 * n
        square = np.array([[x, y + d], [x - d, y], [x, y - d], [x + d, y]])
        cv2.fillPoly(union, [np.round(square).astype(np.int32)], 255)
        for p, q in ((square[1], square[2]), (square[2], square[3])):
            cv2.circle(union, (round((p[0] + q[0]) / 2), round((p[1] + q[1]) / 2)),
                       round(d / np.sqrt(2)), 255, -1)
        outline, _ = cv2.findContours(union, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        cv2.polylines(img, outline, True, colour, t, cv2.LINE_AA, 4)
    return img


def _draw_solid(
    img: U8, glyph: str, c: float, r: float, colour: tuple[int, int, int]
) -> None:
    """The filled glyphs, as Material draws them in 24 dp (``r`` is 7.5 dp of it)."""
    u = r / 7.5

    def poly(*pts: tuple[float, float]) -> None:
        cv2.fillPoly(img, [np.array([_pt(c + x * u, c + y * u) for x, y in pts])], colour,
                     cv2.LINE_AA, 4)

    if glyph == "▶":
        poly((-4, -7), (7, 0), (-4, 7))
    elif glyph == "send":
        poly((-10, -9), (11, 0), (-10, 9), (-10, 1), (5, 0), (-10, -1))
    elif glyph == "⏸":
        poly((-6, -7), (-2, -7), (-2, 7), (-6, 7))
        poly((2, -7), (6, -7), (6, 7), (2, 7))
    elif glyph == "mic":
        # A capsule 6 dp wide and 12 tall; below it a U of 7 dp radius round its lower
        # half, 2 dp thick, and its stem.
        cv2.circle(img, _pt(c, c - 6 * u), round(3 * u * 16), colour, -1, cv2.LINE_AA, 4)
        poly((-3, -6), (3, -6), (3, 0), (-3, 0))
        cv2.circle(img, _pt(c, c), round(3 * u * 16), colour, -1, cv2.LINE_AA, 4)
        t = max(1, round(2 * u))
        cv2.ellipse(img, _pt(c, c), (round(7 * u * 16), round(7 * u * 16)), 0, 0, 180, colour,
                    t, cv2.LINE_AA, 4)
        cv2.line(img, _pt(c, c + 7 * u), _pt(c, c + 10 * u), colour, t, cv2.LINE_AA, 4)
    elif glyph == "settings":
        # A gear: 8 teeth round a disc, a hole in its middle.
        for k in range(8):
            a = k * np.pi / 4
            tip = (c + 9.5 * u * np.cos(a), c + 9.5 * u * np.sin(a))
            cv2.line(img, _pt(c, c), _pt(*tip), colour, max(1, round(3.4 * u)), cv2.LINE_AA, 4)
        cv2.circle(img, _pt(c, c), round(7.5 * u * 16), colour, -1, cv2.LINE_AA, 4)
        bg = tuple(int(v) for v in img[1, 1])
        cv2.circle(img, _pt(c, c), round(3.2 * u * 16), bg, -1, cv2.LINE_AA, 4)


@pytest.mark.parametrize("glyph", GLYPHS)
@pytest.mark.parametrize("side", SIZES)
@pytest.mark.parametrize("polarity", POLARITIES)
def test_drawn_glyph_is_named(glyph: str, side: int, polarity: tuple[int, ...]) -> None:
    if glyph in ("search", "☰", "settings") and side < 48:
        pytest.skip("drawn with 1-pixel strokes in a 36-pixel button: not read")
    if glyph == "mic" and side == 48:
        pytest.skip("the capsule and its holder run together, 1 pixel apart: not read")
    if glyph == "♡" and side < 48:
        pytest.skip("a 2-pixel stroke fills the cleft between the lobes in a 36-pixel button")
    for stroke in (0.04, 0.06):
        assert glyph_of(_draw(glyph, side, stroke, polarity)) == glyph, stroke


def test_grey_crop_reads_like_colour() -> None:
    img = _draw("×", 96, 0.05, (250, 40))
    assert glyph_of(cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)) == "×"
    assert glyph_of(cv2.cvtColor(img, cv2.COLOR_BGR2BGRA)) == "×"


def test_glyph_in_a_filled_disc() -> None:
    """A round button (a dark disc on a light page) with a light × in it: looked into once."""
    img = _button(96, 245)
    cv2.circle(img, (48, 48), 36, (60, 30, 90), -1, cv2.LINE_AA)
    cv2.line(img, (36, 36), (60, 60), (255, 255, 255), 4, cv2.LINE_AA)
    cv2.line(img, (60, 36), (36, 60), (255, 255, 255), 4, cv2.LINE_AA)
    assert glyph_of(img) == "×"


def _text(text: str, side: int, *, scale: float, thickness: int = 2) -> U8:
    img = _button(side, 250)
    font = cv2.FONT_HERSHEY_SIMPLEX
    (w, h), base = cv2.getTextSize(text, font, scale, thickness)
    org = ((side - w) // 2, (side + h) // 2)
    cv2.putText(img, text, org, font, scale, (30, 30, 30), thickness, cv2.LINE_AA)
    return img


@pytest.mark.parametrize("text", ["Xbox", "x2", "Max", "C++", "A+", "PRO", "OK", "<<", "1/3"])
def test_text_is_no_glyph(text: str) -> None:
    """Words and symbols in text: a word or "C++" is more than one shape, three letters are no
    dots. (A lone sans-serif X or x is the × it looks like: the rule cannot tell them apart,
    and a button that shows nothing but an X closes something.)"""
    for side, scale in ((96, 1.2), (144, 1.6), (72, 0.8)):
        assert glyph_of(_text(text, side, scale=scale)) == "", (text, side)


def test_checkbox_tick_is_no_glyph() -> None:
    """A checked box: the tick inside its outline (two shapes), and the tick alone (no ×)."""
    for boxed in (True, False):
        img = _button(96, 250)
        if boxed:
            cv2.rectangle(img, (26, 26), (70, 70), (40, 40, 40), 3, cv2.LINE_AA)
        cv2.line(img, (34, 50), (44, 60), (40, 40, 40), 4, cv2.LINE_AA)
        cv2.line(img, (44, 60), (63, 36), (40, 40, 40), 4, cv2.LINE_AA)
        assert glyph_of(img) == "", boxed
    filled = _button(96, 250)
    cv2.rectangle(filled, (26, 26), (70, 70), (200, 120, 0), -1)
    cv2.line(filled, (34, 50), (44, 60), (255, 255, 255), 4, cv2.LINE_AA)
    cv2.line(filled, (44, 60), (63, 36), (255, 255, 255), 4, cv2.LINE_AA)
    assert glyph_of(filled) == ""


def test_other_icons_and_pictures_are_no_glyph() -> None:
    rng = np.random.default_rng(7)
    noise = rng.integers(0, 255, (96, 96, 3), dtype=np.uint8)
    assert glyph_of(noise) == ""
    flat = _button(96, 128)
    assert glyph_of(flat) == ""
    # A solid arrow pointing down (a download button): a filled shape, not strokes.
    arrow = _button(96, 250)
    pts = np.array([[40, 24], [56, 24], [56, 48], [68, 48], [48, 72], [28, 48], [40, 48]])
    cv2.fillPoly(arrow, [pts], (40, 160, 40))
    assert glyph_of(arrow) == ""
    # A ring: none of the named shapes. (A chevron is "‹" since session 20.)
    ring = _button(96, 250)
    cv2.circle(ring, (48, 48), 20, (40, 40, 40), 4, cv2.LINE_AA)
    assert glyph_of(ring) == ""
    # A glyph that runs into the button's edge is part of a bigger picture.
    edge = _draw("×", 96, 0.05, (250, 40))
    big = cv2.resize(edge, (240, 240))[72:168, 72:168]
    assert glyph_of(big) == ""


def test_read_glyphs_looks_only_at_icon_sized_boxes() -> None:
    frame = np.full((1600, 720, 3), 250, np.uint8)
    frame[100:196, 100:196] = _draw("×", 96, 0.05, (250, 40))
    frame[300:348, 20:68] = _draw("←", 48, 0.06, (250, 40))
    boxes = [
        BoxPx(100, 100, 196, 196),  # the ×
        BoxPx(20, 300, 68, 348),  # the ←
        BoxPx(0, 0, 400, 400),  # a card: too big
        BoxPx(100, 100, 108, 108),  # a speck: too small
        BoxPx(710, 1590, 730, 1610),  # past the frame
        BoxPx(90, 100, 206, 196),  # the × in a box wider than tall but square-ish still
    ]
    assert read_glyphs(frame, boxes) == ["×", "←", "", "", "", "×"]


# --- corpus -------------------------------------------------------------------------------------

_DESC = {
    "←": re.compile(r"^(navigate up|back|返回|向上导航|转到上一层级)$", re.I),
    "search": re.compile(r"^(search|搜索)$", re.I),
    "⋮⋯": re.compile(r"^(more options|更多选项|more)$", re.I),
    "⋮⋯☰": re.compile(r"^(更多)$"),  # QQ Music draws its "more" as ☰
    "☰": re.compile(r"^(open navigation drawer|show roots)$", re.I),
}
_BOUNDS = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")


def _labelled_icons(limit: int) -> list[tuple[str, U8]]:
    """Icon-sized tree nodes whose description names a glyph, with their crops."""
    from lxml import etree

    out: list[tuple[str, U8]] = []
    for line in (CORPUS_DIR / "index.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row.get("pair_status") not in ("match", "match_partial") or not row.get("image"):
            continue
        folder = Path(CORPUS_DIR) / row["path"]
        img = cv2.imread(str(folder / row["image"]))
        if img is None:
            continue
        h, w = img.shape[:2]
        for node in etree.parse(str(folder / "screen.xml")).iter("node"):
            desc = (node.get("content-desc") or "").strip()
            m = _BOUNDS.match(node.get("bounds", ""))
            if not desc or node.get("text") or not m:
                continue
            x0, y0, x1, y1 = (int(v) for v in m.groups())
            if x0 < 0 or y0 < 0 or x1 > w or y1 > h or max(x1 - x0, y1 - y0) > w / 5:
                continue
            for name, rx in _DESC.items():
                if rx.match(desc):
                    out.append((name, img[y0:y1, x0:x1]))
            if len(out) >= limit:
                return out
    return out


@requires_corpus
def test_corpus_labelled_icons_read_right() -> None:
    """On the corpus's icon buttons that carry a description, every glyph named is the one
    described (the full figure per glyph: ``perception-bench pixels``), and over half are named
    (134 of the first 224)."""
    icons = _labelled_icons(400)
    assert len(icons) >= 100
    named = [(want, glyph_of(crop)) for want, crop in icons]
    wrong = [(w, g) for w, g in named if g and g not in w]
    assert not wrong
    assert sum(1 for _, g in named if g) >= 0.55 * len(named)


@requires_corpus
def test_corpus_unlabelled_close_is_offered_and_dismissed() -> None:
    """QQ Music's privacy dialog: its × in the corner has no text, description or usable id;
    read off the pixels it is offered as "×", and the dismiss names it."""
    from perception.pipeline import Perceiver, PixelChannel
    from perception.pixel.read import PixelReader

    folder = Path(CORPUS_DIR) / "droidbotexp_qqmusic/qqmusic_2021-11-23/step_001"
    image = next(folder.glob("screen.*g"))
    reader = PixelReader()
    try:
        obs = Perceiver(pixels=PixelChannel(reader)).perceive(
            (folder / "screen.xml").read_bytes(), image.read_bytes()
        )
    finally:
        reader.close()
    close = [c for c in obs.candidates if c.text == "×"]
    assert len(close) == 1
    dismiss = [op for op in obs.operations if op.kind.value == "dismiss"]
    assert [op.candidate_id for op in dismiss] == [close[0].id]
