"""One tap target, one candidate: an icon inside its own tile (a settings icon's coloured
circle, a quick-settings tile, a floating button) is the tile, and a row of repeated icons
side by side (a star rating) is one icon. Real corpus screens, and the rules on given boxes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perception.pixel import Anchor, PixelCandidate, PixelKind, PixelReader, build_candidates
from perception.types import BoxPx, PointPx


def _read(corpus_dir: Path, reader: PixelReader, sample: str) -> tuple[PixelCandidate, ...]:
    image = next((corpus_dir / sample).glob("screen.*[gG]"))
    return reader.read(image.read_bytes()).candidates


def _at(cands: tuple[PixelCandidate, ...], point: PointPx) -> list[PixelCandidate]:
    return [c for c in cands if c.box_px.contains(point)]


@pytest.mark.parametrize(
    ("sample", "tiles"),
    [
        # Settings: each row's icon in a coloured circle.
        (
            "fdroidutg_apps/bluepie.ad_silence/step_001",
            [PointPx(102, 617), PointPx(102, 835), PointPx(102, 1053), PointPx(102, 1295),
             PointPx(102, 1538)],
        ),
        # Quick settings: each tile's icon.
        (
            "fdroidutg_apps/ir.hsn6.tpb/step_004",
            [PointPx(84, 352), PointPx(266, 352), PointPx(448, 352), PointPx(993, 352)],
        ),
        # Habitica's add button: the round button and the + on it.
        ("droidbot_habitica/habitica_2020-08-29/step_001", [PointPx(540, 1764)]),
    ],
)
def test_an_icon_inside_its_tile_is_one_candidate(
    corpus_dir: Path, reader: PixelReader, sample: str, tiles: list[PointPx]
) -> None:
    cands = _read(corpus_dir, reader, sample)
    for point in tiles:
        here = [c for c in _at(cands, point) if not c.text and c.kind is not PixelKind.CARD]
        assert len(here) == 1, (point, here)


def test_a_star_rating_is_one_icon(corpus_dir: Path, reader: PixelReader) -> None:
    cands = _read(corpus_dir, reader, "droidbot_yelp/yelp_2017/step_004")
    for row_y in (689, 1373, 1719, 2063):  # four results, five stars each (tile and star)
        stars = [c for c in cands if not c.text and c.box_px.top <= row_y <= c.box_px.bottom
                 and c.box_px.right <= 700]
        assert len(stars) == 1, (row_y, stars)
        assert stars[0].box_px.left <= 320 and stars[0].box_px.right >= 600


def _anchor(kind: PixelKind, box: tuple[int, int, int, int], glyph: str = "") -> Anchor:
    return Anchor(kind=kind, box_px=BoxPx(*box), score=0.8, glyph=glyph)


def test_the_rules_on_given_boxes() -> None:
    tile = _anchor(PixelKind.BUTTON, (40, 40, 160, 160))
    icon = _anchor(PixelKind.ICON, (70, 70, 130, 130), "⋮")
    (one,) = build_candidates([], [tile, icon])
    assert one.box_px == tile.box_px and one.glyph == "⋮"  # the tile takes the icon's name
    # An icon in a much wider button (a field's clear button, a row's action) is its own.
    field = _anchor(PixelKind.BUTTON, (40, 40, 1000, 160))
    assert len(build_candidates([], [field, icon])) == 2
    # Three icons side by side, one size, touching: one icon over the row.
    row = [_anchor(PixelKind.ICON, (100 + 64 * k, 500, 160 + 64 * k, 560)) for k in range(5)]
    (stars,) = build_candidates([], row)
    assert stars.box_px == BoxPx(100, 500, 416, 560)
    # Toolbar actions stand an icon apart: each its own; and two touching icons stay two.
    apart = [_anchor(PixelKind.ICON, (600 + 120 * k, 50, 660 + 120 * k, 110)) for k in range(3)]
    assert len(build_candidates([], apart)) == 3
    assert len(build_candidates([], row[:2])) == 2
