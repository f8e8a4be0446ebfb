"""The pixel channel names its text-less icons by the glyph they draw
(perception.pixel.glyphs.name_candidates): without a tree (a game, a canvas, a tree that fell
back to the pixels) an agent still sees which icon closes, goes back or searches. Drawn
toolbars read by the real reader, what is not looked at (text, toggles, an icon named
already), the per-frame limit and its config, and the corpus's frames."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from perception import PerceptionError
from perception.config import PixelConfig
from perception.pixel import Frame, PixelCandidate, PixelKind, PixelReader
from perception.pixel.glyphs import GLYPHS, NAMED_KINDS, name_candidates
from perception.types import BoxPx, PointPx
from tests.conftest import CORPUS_DIR, requires_corpus
from tests.test_glyphs import U8, _draw

TOOLBAR = (("←", 0.06), ("search", 0.06), ("×", 0.06), ("+", 0.06))
"""Glyphs drawn along a toolbar, with their stroke width (a share of the button's side)."""


def _toolbar(w: int, h: int, dp: float, polarity: tuple[int, int]) -> tuple[U8, list[PointPx]]:
    """A screen whose toolbar holds :data:`TOOLBAR`'s icons in 48 dp buttons, a text-less page
    under it; and the icons' centres."""
    bg, _ = polarity
    img = np.full((h, w, 3), bg, np.uint8)
    cv2.rectangle(img, (0, 0), (w, round(24 * dp)), (90, 90, 90), -1)  # the status bar
    side = round(48 * dp)
    top = round(28 * dp)
    centres = []
    for k, (glyph, stroke) in enumerate(TOOLBAR):
        left = round(8 * dp) + k * (side + round(24 * dp))
        img[top : top + side, left : left + side] = _draw(glyph, side, stroke, polarity)
        centres.append(PointPx(left + side // 2, top + side // 2))
    return img, centres


@pytest.mark.parametrize(("w", "h", "dp"), [(720, 1280, 2.0), (1080, 1920, 3.0)])
@pytest.mark.parametrize("polarity", [(250, 40), (30, 235)])
def test_toolbar_icons_are_named(w: int, h: int, dp: float, polarity: tuple[int, int]) -> None:
    """The real reader (anchors, no OCR) offers each drawn icon named by its glyph."""
    img, centres = _toolbar(w, h, dp, polarity)
    with PixelReader() as reader:
        pixels = reader.read(Frame.from_array(img), ocr=False)
    named = {}
    for c in pixels.candidates:
        for (glyph, _), p in zip(TOOLBAR, centres, strict=True):
            if c.box_px.contains(p) and c.box_px.area < (50 * dp) ** 2:
                named.setdefault(glyph, set()).add(c.glyph)
    assert named == {glyph: {glyph} for glyph, _ in TOOLBAR}
    assert pixels.timings_ms["glyphs"] >= 0.0


def _candidate(kind: PixelKind, box: BoxPx, *, text: str = "", glyph: str = "") -> PixelCandidate:
    return PixelCandidate(text=text, kind=kind, box_px=box, confidence=0.5, glyph=glyph)


def _frame_of_closes(n: int) -> tuple[U8, list[BoxPx]]:
    """A frame with ``n`` × buttons in a row, and the boxes the icon rule would give them (the
    drawing's own box, not the button's)."""
    img = np.full((400, 100 * n, 3), 250, np.uint8)
    boxes = []
    for k in range(n):
        img[100:196, 100 * k : 100 * k + 96] = _draw("×", 96, 0.06, (250, 40))
        boxes.append(BoxPx(100 * k + 28, 128, 100 * k + 68, 168))
    return img, boxes


def test_only_text_less_unnamed_icons_are_looked_at() -> None:
    img, boxes = _frame_of_closes(6)
    given = [
        _candidate(PixelKind.ICON, boxes[0]),
        _candidate(PixelKind.ICON, boxes[1], text="X"),  # OCR read it: its text stays
        _candidate(PixelKind.ICON, boxes[2], glyph="⋮"),  # named already (the menu rule)
        _candidate(PixelKind.SWITCH, boxes[3]),  # a toggle is not an icon
        _candidate(PixelKind.IMAGE, boxes[4]),
        _candidate(PixelKind.BUTTON, boxes[5]),
    ]
    out = name_candidates(img, given)
    assert [c.glyph for c in out] == ["×", "", "⋮", "", "×", "×"]
    assert [c.text for c in out] == ["", "X", "", "", "", ""]
    assert [(c.kind, c.box_px) for c in out] == [(c.kind, c.box_px) for c in given]
    assert given[0].glyph == ""  # the input is left as it was


def test_limit_takes_icons_first() -> None:
    """Past the limit the rest stay unnamed; icons are looked at before pictures."""
    img, boxes = _frame_of_closes(3)
    given = [
        _candidate(PixelKind.IMAGE, boxes[0]),
        _candidate(PixelKind.ICON, boxes[1]),
        _candidate(PixelKind.TAB, boxes[2]),
    ]
    assert [c.glyph for c in name_candidates(img, given, limit=1)] == ["", "×", ""]
    assert [c.glyph for c in name_candidates(img, given, limit=2)] == ["", "×", "×"]
    assert [c.glyph for c in name_candidates(img, given, limit=0)] == ["", "", ""]
    assert NAMED_KINDS.index(PixelKind.ICON) < NAMED_KINDS.index(PixelKind.IMAGE)


def test_a_box_at_the_frame_edge_is_clipped() -> None:
    """A box grown past the frame's edge is read clipped to it (the × of a full-screen ad in
    its corner)."""
    img = np.full((600, 1080, 3), 250, np.uint8)
    img[0:96, 984:1080] = _draw("×", 96, 0.06, (250, 40))
    out = name_candidates(img, [_candidate(PixelKind.ICON, BoxPx(1000, 10, 1070, 80))])
    assert out[0].glyph == "×"


_BOX = st.tuples(*[st.integers(-200, 1400)] * 4).map(
    lambda v: BoxPx(min(v[0], v[2]), min(v[1], v[3]), max(v[0], v[2]), max(v[1], v[3]))
)


@settings(max_examples=200, deadline=None)
@given(
    boxes=st.lists(_BOX, max_size=12),
    kinds=st.lists(st.sampled_from(list(PixelKind)), min_size=12, max_size=12),
    seed=st.integers(0, 2**16),
)
def test_any_boxes_keep_the_candidates(
    boxes: list[BoxPx], kinds: list[PixelKind], seed: int
) -> None:
    """Boxes anywhere (past the frame's edges, empty, the frame's size) on any picture: no
    error, the same candidates in the same order, and only a glyph of the reader's set added to
    a text-less one of the kinds looked at."""
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 255, (1200, 1080, 3), dtype=np.uint8)
    img[100:196, 100:196] = _draw("×", 96, 0.06, (250, 40))
    given_ = [_candidate(k, b) for k, b in zip(kinds, boxes, strict=False)]
    out = name_candidates(img, given_)
    assert [(c.kind, c.box_px, c.text) for c in out] == [(c.kind, c.box_px, c.text) for c in given_]
    for c in out:
        assert c.glyph == "" or (c.kind in NAMED_KINDS and c.glyph in GLYPHS)


def test_glyph_max_config() -> None:
    img, _ = _toolbar(720, 1280, 2.0, (250, 40))
    with PixelReader(PixelConfig(glyph_max=0)) as reader:
        pixels = reader.read(Frame.from_array(img), ocr=False)
    assert not any(c.glyph for c in pixels.candidates)
    with pytest.raises(PerceptionError, match="glyph_max"):
        PixelConfig(glyph_max=-1)
    assert PixelConfig.from_env({"PERCEPTION_PIXEL_GLYPH_MAX": "5"}).glyph_max == 5


# --- corpus -------------------------------------------------------------------------------------

CORPUS_ICONS = [
    # (sample, a point in the icon, its glyph)
    # A game's close over its picture (the pair falls back to the pixels: no tree to name it).
    ("droidbot_admob_apps/com.HomeCleaningGames/step_007", (93, 165), "×"),
    # A dialog's close and the search bar's microphone, in a llamatouch trace.
    ("llamatouch/trace_18/step_001", (445, 549), "×"),
    ("llamatouch/trace_18/step_001", (926, 2152), "mic"),
    # WeCom's navigate-up arrow.
    ("adb_oneoffs/wework_new_customers", (44, 124), "←"),
]


@requires_corpus
@pytest.mark.parametrize(("sample", "point", "glyph"), CORPUS_ICONS)
def test_corpus_icons_are_named(sample: str, point: tuple[int, int], glyph: str) -> None:
    image = next((Path(CORPUS_DIR) / sample).glob("screen.*[gG]"))
    with PixelReader() as reader:
        pixels = reader.read(image.read_bytes())
    at = [c for c in pixels.candidates if c.box_px.contains(PointPx(*point))]
    assert glyph in {c.glyph for c in at}, [(c.kind, c.text, c.glyph, c.box_px) for c in at]


@requires_corpus
def test_pixel_fallback_dismisses_by_the_drawn_close() -> None:
    """QQ Music's privacy dialog with its tree replaced by one SurfaceView (the fusion bench's
    degraded case): the observation falls back to the pixels, offers the dialog's corner icon
    as "×" and names it as the dismiss; with no icon read for its glyph there is none."""
    from bench.fusion import degrade_surface
    from perception.fusion.arbiter import ArbiterState
    from perception.pipeline import Perceiver, PixelChannel
    from perception.types import ScreenSize

    folder = Path(CORPUS_DIR) / "droidbotexp_qqmusic/qqmusic_2021-11-23/step_001"
    image = next(folder.glob("screen.*[gG]")).read_bytes()
    xml = degrade_surface((folder / "screen.xml").read_bytes(), ScreenSize(1080, 2280))
    dismissed = []
    for glyph_max in (48, 0):
        with PixelReader(PixelConfig(glyph_max=glyph_max)) as reader:
            obs = Perceiver(pixels=PixelChannel(reader)).perceive(xml, image)
        assert obs.state is ArbiterState.PIXEL
        by_id = {c.id: c for c in obs.candidates}
        dismissed.append(
            [by_id[op.candidate_id].text for op in obs.operations if op.kind.value == "dismiss"]
        )
    assert dismissed == [["×"], []]


def test_demo_screen_toolbar_is_named() -> None:
    """The demo screen the package ships, read by its pixels alone: its navigate-up arrow (drawn
    wide, 1.5 times as wide as tall: the aspect an arrow may have is up to 1.6, as a crop scaled
    down rounds it past 1.5) and its overflow menu are named."""
    from importlib.resources import files

    png = (files("perception") / "data" / "demo_screen.png").read_bytes()
    with PixelReader() as reader:
        pixels = reader.read(png, ocr=False)
    toolbar = sorted((c.box_px.left, c.glyph) for c in pixels.candidates if c.box_px.top < 260)
    assert [g for _, g in toolbar if g] == ["←", "⋮"]
