"""One text-less candidate per spot. Where the tree is useless (games, Flutter) the pixel channel
alone decides what the model may tap, and two rows at one centre (a ring and the picture in it,
an outline and its glyph) are rows it cannot tell apart; so are the stars that decorate one
tile, and a wrapped sentence's end offered as a button because a letter above it was boxed as
an icon. Real corpus screens, frames drawn with cv2, and the rules on given boxes, on both
fast-path twins.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
import pytest

from perception.pixel import (
    Anchor,
    Frame,
    PixelCandidate,
    PixelKind,
    PixelReader,
    TextLine,
    build_candidates,
    find_anchors,
    frame_flags,
)
from perception.types import BoxPx, PointPx

SPOT_PX = 8
"""Two text-less candidates whose centres lie this close are one spot to a tapping agent."""


def _read(corpus_dir: Path, reader: PixelReader, sample: str) -> tuple[PixelCandidate, ...]:
    image = next((corpus_dir / sample).glob("screen.*[gG]"))
    return reader.read(image.read_bytes()).candidates


def _same_spots(cands: Sequence[PixelCandidate]) -> list[tuple[BoxPx, BoxPx]]:
    """Pairs of text-less candidates centred within :data:`SPOT_PX` of each other."""
    bare = [c.box_px for c in cands if not c.text]
    return [
        (a, b)
        for n, a in enumerate(bare)
        for b in bare[n + 1 :]
        if abs(a.center.x - b.center.x) <= SPOT_PX and abs(a.center.y - b.center.y) <= SPOT_PX
    ]


@pytest.mark.parametrize(
    "sample",
    [
        "llamatouch/trace_18/step_001",  # the launcher: app icons with a glyph inside
        "llamatouch/trace_18/step_002",  # Duolingo's path: the owl in its ring
        "llamatouch/trace_18/step_003",  # the lesson node: the ring and the button in it
        "llamatouch/trace_18/step_004",  # a picture with an outline across its middle
        "fdroidutg_weibo/weibo_2023-10-24/step_038",  # avatars with an outline inside
        "fdroidutg_apps/bluepie.ad_silence/step_006",  # Firefox's tiles: outline in outline
    ],
)
def test_one_text_less_candidate_per_spot(
    corpus_dir: Path, reader: PixelReader, sample: str
) -> None:
    cands = _read(corpus_dir, reader, sample)
    assert _same_spots(cands) == []


def test_the_lesson_node_is_one_candidate(corpus_dir: Path, reader: PixelReader) -> None:
    """The ring (an image) and the green button in it (an image too, or an outline), one
    centre: one row, on the ring's box (a tap anywhere on it starts the lesson)."""
    cands = _read(corpus_dir, reader, "llamatouch/trace_18/step_003")
    here = [c for c in cands if not c.text and c.box_px.contains(PointPx(541, 852))]
    assert len(here) == 1, here
    assert here[0].box_px.width >= 250


def test_the_stars_of_a_difficulty_tile_are_one_icon(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """Habitica's task editor: Trivial, Easy, Medium and Hard are tiles with one to four stars
    (the tree's clickable is the tile and its caption). The stars decorate the tile."""
    cands = _read(corpus_dir, reader, "droidbot_habitica/habitica_2020-08-29/step_002")
    for left, right in ((609, 754), (894, 1039)):  # Medium (three stars), Hard (four)
        tile = BoxPx(left, 1078, right, 1240)
        inside = [c for c in cands if not c.text and tile.contains(c.box_px.center)]
        assert len(inside) == 1, (tile, inside)
    # Each tile still has its caption as a text target.
    texts = {c.text for c in cands}
    assert {"Trivial", "Easy", "Medium", "Hard"} <= texts


def test_a_wrapped_sentence_end_is_no_button(corpus_dir: Path, reader: PixelReader) -> None:
    """Bitbar's quiz: "Haven't you heard about Testdroid / Cloud?" — the icon rule boxed the
    "h" of the first line, right over "Cloud?", which took it for its icon."""
    cands = _read(corpus_dir, reader, "droidbot_bitbar/bitbar_2024-03-20/step_002")
    (cloud,) = [c for c in cands if c.text == "Cloud?"]
    assert cloud.kind is PixelKind.TEXT
    assert cloud.box_px.top > 1130  # its own line, not the union with the letter above


def test_a_tab_icon_ocr_read_still_heads_its_caption(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """Weibo's "Me" tab: OCR reads its icon as "8", a line as narrow as the icon. The icon is
    no letter of a longer line, and stays the caption's."""
    cands = _read(corpus_dir, reader, "fdroidutg_weibo/weibo_2023-10-24/step_038")
    (me,) = [c for c in cands if c.text == "Me"]
    assert me.kind is PixelKind.TAB  # a bottom navigation bar's item (test_pixel_tabs)
    assert me.box_px.top < 1700  # the icon's top, above the caption


# --- frames drawn with cv2 ------------------------------------------------------------------


def _star(img: np.ndarray, cx: int, cy: int, r: int, colour: tuple[int, int, int]) -> None:
    pts = []
    for k in range(10):
        radius = r if k % 2 == 0 else r * 0.4
        a = -math.pi / 2 + k * math.pi / 5
        pts.append((round(cx + radius * math.cos(a)), round(cy + radius * math.sin(a))))
    cv2.fillPoly(img, [np.array(pts, np.int32)], colour, cv2.LINE_AA)


def _drawn() -> np.ndarray:
    """A lesson node (a grey ring around a green button with a white star) and a difficulty
    tile with four grey stars, two by two, on a light screen."""
    img = np.full((2340, 1080, 3), 250, np.uint8)
    cv2.circle(img, (540, 900), 150, (225, 225, 225), -1, cv2.LINE_AA)
    cv2.circle(img, (540, 900), 120, (250, 250, 250), -1, cv2.LINE_AA)
    cv2.ellipse(img, (540, 900), (100, 90), 0, 0, 360, (0, 200, 88), -1, cv2.LINE_AA)
    _star(img, 540, 900, 40, (255, 255, 255))
    cv2.rectangle(img, (700, 1500), (980, 1780), (240, 240, 240), -1)
    for dx in (0, 50):
        for dy in (0, 50):
            _star(img, 800 + dx, 1600 + dy, 22, (150, 150, 150))
    return img


def _candidates(img: np.ndarray) -> list[PixelCandidate]:
    frame = Frame.from_array(img)
    return build_candidates([], find_anchors(frame, frame_flags(frame)[0]))


def test_a_drawn_node_and_tile_are_one_candidate_each(pipeline_impl: str) -> None:
    cands = _candidates(_drawn())
    node = [c for c in cands if c.box_px.contains(PointPx(540, 900))]
    assert len(node) == 1, node
    assert node[0].box_px.width >= 240  # the ring's box
    tile = BoxPx(700, 1500, 980, 1780)
    stars = [c for c in cands if tile.contains(c.box_px.center)]
    assert len(stars) == 1, stars
    assert stars[0].box_px.width >= 90 and stars[0].box_px.height >= 90  # over all four


def test_a_drawn_column_of_icons_stays_apart(pipeline_impl: str) -> None:
    """Icons one over the other, a row's padding apart, are a list's rows: each a target."""
    img = np.full((2340, 1080, 3), 250, np.uint8)
    for k in range(4):
        _star(img, 120, 600 + 130 * k, 55, (60, 60, 60))
    cands = _candidates(img)
    assert len([c for c in cands if c.box_px.left < 250]) == 4


# --- the rules on given boxes ---------------------------------------------------------------


def _anchor(kind: PixelKind, box: tuple[int, int, int, int], glyph: str = "") -> Anchor:
    return Anchor(kind=kind, box_px=BoxPx(*box), score=0.8, glyph=glyph)


def test_one_spot_across_kinds(pipeline_impl: str) -> None:
    ring = _anchor(PixelKind.IMAGE, (416, 776, 664, 1024))
    outline = _anchor(PixelKind.BUTTON, (450, 830, 630, 970))
    (one,) = build_candidates([], [ring, outline])
    # The ring's box, the better supported kind: a tap on the ring starts the lesson too.
    assert one.box_px == ring.box_px and one.kind is PixelKind.BUTTON
    # A card with a small icon at its centre (a play button on a thumbnail): one tap point.
    card = _anchor(PixelKind.CARD, (140, 778, 654, 1176))
    play = _anchor(PixelKind.ICON, (384, 958, 420, 992), "⋮")
    (one,) = build_candidates([], [card, play])
    assert one.box_px == card.box_px and one.kind is PixelKind.ICON and one.glyph == "⋮"
    # Off its centre, the same icon in that card is another point to tap (the card is more
    # than TILE_SIDES_MAX times its size).
    corner = _anchor(PixelKind.ICON, (160, 800, 196, 834))
    assert len(build_candidates([], [card, corner])) == 2
    # A picture a fifth of its size off a card's centre: two points.
    picture = _anchor(PixelKind.IMAGE, (456, 544, 912, 970))
    frame = _anchor(PixelKind.CARD, (296, 298, 980, 1016))
    assert len(build_candidates([], [frame, picture])) == 2
    # A toggle keeps its kind and box inside a picture centred on it.
    switch = Anchor(kind=PixelKind.SWITCH, box_px=BoxPx(500, 880, 580, 920), score=0.9)
    kinds = {c.kind for c in build_candidates([], [ring, switch])}
    assert PixelKind.SWITCH in kinds


def test_clusters_of_icons(pipeline_impl: str) -> None:
    def icon(left: int, top: int) -> Anchor:
        return _anchor(PixelKind.ICON, (left, top, left + 44, top + 42))

    triangle = [icon(660, 1104), icon(634, 1138), icon(686, 1136)]
    (one,) = build_candidates([], triangle)
    assert one.box_px == BoxPx(634, 1104, 730, 1180)
    square = [icon(920, 1104), icon(970, 1104), icon(920, 1154), icon(970, 1154)]
    (one,) = build_candidates([], square)
    assert one.box_px == BoxPx(920, 1104, 1014, 1196)
    # Two stars stay two (two small buttons side by side); a column stays a column.
    assert len(build_candidates([], square[:2])) == 2
    column = [icon(100, 300 + 48 * k) for k in range(3)]
    assert len(build_candidates([], column)) == 3


def _line(text: str, box: tuple[int, int, int, int]) -> TextLine:
    return TextLine(text=text, box_px=BoxPx(*box), confidence=0.99)


def test_a_letter_boxed_as_an_icon_heads_no_caption(pipeline_impl: str) -> None:
    above = _line("Haven't you heard about Testdroid", (82, 1080, 1002, 1137))
    end = _line("Cloud?", (446, 1145, 640, 1210))
    letter = _anchor(PixelKind.ICON, (508, 1078, 560, 1130))
    cands = build_candidates([above, end], [letter])
    (cloud,) = [c for c in cands if c.text == "Cloud?"]
    assert cloud.kind is PixelKind.TEXT and cloud.box_px == end.box_px
    # An icon under a line as narrow as itself is the icon OCR read ("8"): still the caption's.
    read = _line("8", (943, 1654, 1000, 1719))
    caption = _line("Me", (946, 1727, 1000, 1766))
    tab = _anchor(PixelKind.ICON, (942, 1652, 1002, 1718))
    cands = build_candidates([read, caption], [tab])
    (me,) = [c for c in cands if c.text == "Me"]
    assert me.kind is PixelKind.BUTTON and me.box_px.top == 1652
