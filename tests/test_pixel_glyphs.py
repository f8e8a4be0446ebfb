"""The overflow menu (⋮) and the navigation drawer (☰) as icon anchors.

Their dots and bars are each too small or too thin for the icon rule, so a toolbar's two most
tapped icons used to go unseen by the pixel channel. Drawn screens at two densities, the
look-alikes that must not count, and the real toolbars of the corpus.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt
import pytest

from perception.pixel import (
    Frame,
    PixelKind,
    PixelReader,
    anchors,
    build_candidates,
    decode_frame,
    find_anchors,
    frame_flags,
)
from perception.types import PointPx

DARK = (50, 50, 50)


def _screen(w: int, h: int) -> npt.NDArray[np.uint8]:
    img = np.full((h, w, 3), 250, np.uint8)
    cv2.rectangle(img, (0, 0), (w, h // 30), (90, 90, 90), -1)  # a status bar
    return img


def _dots(img: npt.NDArray[np.uint8], cx: int, cy: int, dp: float) -> None:
    """⋮ as Material draws it: three 4 dp dots, 6 dp apart."""
    for k in (-1, 0, 1):
        cv2.circle(img, (cx, round(cy + k * 6 * dp)), round(2 * dp), DARK, -1, cv2.LINE_AA)


def _bars(img: npt.NDArray[np.uint8], cx: int, cy: int, dp: float, lengths=(18, 18, 18)) -> None:
    """☰: three 2 dp bars, 5 dp apart, 18 dp long."""
    for k, length in zip((-1, 0, 1), lengths, strict=True):
        y = round(cy + k * 5 * dp)
        x0 = round(cx - 9 * dp)
        cv2.rectangle(img, (x0, y - round(dp)), (x0 + round(length * dp), y + round(dp)), DARK, -1)


def _icons_at(img: npt.NDArray[np.uint8], *points: tuple[int, int]) -> list[bool]:
    frame = Frame.from_array(img)
    found = find_anchors(frame, frame_flags(frame)[0])
    icons = [a.box_px for a in found if a.kind is PixelKind.ICON]
    return [any(b.contains(PointPx(*p)) for b in icons) for p in points]


def _glyphs_at(img: npt.NDArray[np.uint8], *points: tuple[int, int]) -> list[bool]:
    """The menu-glyph rule alone (the ordinary icon rule may see a grid of dots as an icon,
    rightly), at find_anchors' scale."""
    frame = Frame.from_array(img)
    small = anchors._small(frame, 0.5)
    gray = cv2.cvtColor(small, cv2.COLOR_BGR2GRAY)
    _, boxes, outer = anchors._edge_shapes(anchors._edge_map(gray))
    found = [b for _, b, _, _ in anchors._menu_glyphs(frame, gray, boxes, outer, 0.5)]
    return [any(b.contains(PointPx(x // 2, y // 2)) for b in found) for x, y in points]


@pytest.mark.parametrize(("w", "h", "dp"), [(1080, 2340, 3.0), (480, 800, 1.5)])
def test_toolbar_menu_glyphs_are_icons(w: int, h: int, dp: float) -> None:
    img = _screen(w, h)
    bar_y = round(h / 30 + 28 * dp)
    _bars(img, round(28 * dp), bar_y, dp)
    _dots(img, w - round(24 * dp), bar_y, dp)
    points = (round(28 * dp), bar_y), (w - round(24 * dp), bar_y)
    assert _glyphs_at(img, *points) == [True, True]
    assert _icons_at(img, *points) == [True, True]


def _lying_dots(img: npt.NDArray[np.uint8], cx: int, cy: int, dp: float) -> None:
    """⋯ (Weibo's, WeChat's, iOS-styled "more"): three 4 dp dots side by side, 6 dp apart."""
    for k in (-1, 0, 1):
        cv2.circle(img, (round(cx + k * 6 * dp), cy), round(2 * dp), DARK, -1, cv2.LINE_AA)


@pytest.mark.parametrize(("w", "h", "dp"), [(1080, 2340, 3.0), (480, 800, 1.5)])
def test_lying_dots_are_the_menu_too(w: int, h: int, dp: float) -> None:
    img = _screen(w, h)
    bar_y = round(h / 30 + 28 * dp)
    _lying_dots(img, w - round(24 * dp), bar_y, dp)
    # On a card further down, beside a title (a post's "more"), too.
    _lying_dots(img, w - round(40 * dp), h // 2, dp)
    cv2.putText(img, "Post", (40, h // 2 + 12), cv2.FONT_HERSHEY_SIMPLEX, 1.2, DARK, 2)
    points = (w - round(24 * dp), bar_y), (w - round(40 * dp), h // 2)
    assert _glyphs_at(img, *points) == [True, True]
    assert _icons_at(img, *points) == [True, True]


def test_look_alikes_are_not_menu_glyphs() -> None:
    dp = 3.0
    img = _screen(1080, 2340)
    # A 3x3 grid of dots (an app-drawer icon): each column is three dots, but not alone.
    for col in (-1, 0, 1):
        _dots(img, 200 + round(col * 6 * dp), 600, dp)
    # Three bullets of a list: one above the other, a line apart, each before its text.
    for k in range(3):
        cv2.circle(img, (120, 900 + 60 * k), 6, DARK, -1)
        cv2.putText(img, "item", (150, 912 + 60 * k), cv2.FONT_HERSHEY_SIMPLEX, 1.2, DARK, 2)
    # Bars of three lengths (a chat bubble's lines, "align left"): not the drawer.
    _bars(img, 600, 1300, dp, lengths=(18, 18, 10))
    # An ellipsis in a line of text: three dots side by side, not stacked.
    cv2.putText(img, "Version 2.1...", (100, 1700), cv2.FONT_HERSHEY_SIMPLEX, 1.5, DARK, 3)
    assert _glyphs_at(img, (200, 600), (120, 960), (600, 1300), (445, 1690)) == [False] * 4


REAL = [
    # (sample, the recorded tap on the glyph, the glyph; what the tree calls the button)
    ("fdroidutg_apps/io.github.phora.aeondroid/step_005", (1020, 156), "⋮"),  # More options
    ("llamatouch/trace_7/step_005", (1004, 127), "⋮"),  # More options, dots touching in the map
    ("droidbot_a2dpvol_lowres/a2dpvol_2018-06-05/step_001", (447, 78), "⋮"),  # 480x800
    ("droidbot_habitica/habitica_2020-08-29/step_001", (1024, 143), "⋮"),  # More options
    ("fdroidutg_apps/ru.ikkui.achie/step_002", (84, 155), "☰"),  # Navigation Menu
    ("fdroidutg_apps/anupam.acrylic/step_006", (108, 168), "☰"),  # Show roots
    ("fdroidutg_weibo/weibo_2023-10-24/step_042", (1011, 138), "⋯"),  # More, lying dots
]


def test_real_toolbars(corpus_dir: Path) -> None:
    for sample, point, glyph in REAL:
        image = next((corpus_dir / sample).glob("screen.*[gG]"))
        frame = decode_frame(image.read_bytes())
        flags = frame_flags(frame)[0]
        anchors = find_anchors(frame, flags)
        icons = [a for a in anchors if a.kind is PixelKind.ICON and a.box_px.contains(point)]
        assert icons, sample
        # Through the merge it is an icon candidate of its own, not a tab of the toolbar, and
        # says which glyph it is (never as text: fusion takes text for what OCR read).
        cands = build_candidates([], anchors, status_bar=flags.status_bar_box(frame.size))
        hit = [c for c in cands if c.box_px.contains(point)]
        assert [(c.kind, c.glyph, c.text) for c in hit] == [(PixelKind.ICON, glyph, "")], sample
        assert max(hit[0].box_px.width, hit[0].box_px.height) <= 0.1 * frame.size.width_px


REVIEWED = [row for row in REAL if "a2dpvol" in row[0] or "habitica" in row[0]]


@pytest.mark.parametrize("sample", REVIEWED)
def test_the_glyph_survives_ocr(
    corpus_dir: Path, sample: tuple[str, tuple[int, int], str]
) -> None:
    """The reviewer's screens, read whole (OCR lines and all): ⋮ is named."""
    path, point, glyph = sample
    image = next((corpus_dir / path).glob("screen.*[gG]"))
    with PixelReader() as reader:
        pixels = reader.read(image.read_bytes())
    hit = [c for c in pixels.candidates if c.box_px.contains(PointPx(*point))]
    assert [(c.glyph, c.text) for c in hit] == [(glyph, "")]


@pytest.mark.parametrize(("w", "h", "dp"), [(1080, 2340, 3.0), (480, 800, 1.5)])
def test_each_glyph_is_named(w: int, h: int, dp: float) -> None:
    img = _screen(w, h)
    bar_y = round(h / 30 + 28 * dp)
    _bars(img, round(28 * dp), bar_y, dp)
    _dots(img, w - round(24 * dp), bar_y, dp)
    _lying_dots(img, w // 2, h // 2, dp)
    frame = Frame.from_array(img)
    named = {
        a.glyph: a.box_px.center
        for a in find_anchors(frame, frame_flags(frame)[0])
        if a.glyph
    }
    assert sorted(named) == ["⋮", "⋯", "☰"]
    assert abs(named["☰"].x - 28 * dp) <= 4 and abs(named["⋯"].y - h // 2) <= 4


def test_the_square_is_the_glyph_s() -> None:
    img = _screen(1080, 2340)
    _dots(img, 1000, 200, 3.0)
    frame = Frame.from_array(img)
    (box,) = [
        a.box_px
        for a in find_anchors(frame, frame_flags(frame)[0])
        if a.kind is PixelKind.ICON and a.box_px.contains(PointPx(1000, 200))
    ]
    # 16 dp of dots in a square of about 24 dp (72 px at 3x) centred on them.
    assert 60 <= box.width <= 80 and abs(box.center.x - 1000) <= 4 and abs(box.center.y - 200) <= 4
