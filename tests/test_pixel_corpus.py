"""The pixel channel on a few real screens of the corpus (read by path, never copied).

The ``corpus_dir`` fixture skips these, with the reason, where the corpus is absent.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from perception.config import PixelConfig
from perception.errors import FrameSizeMismatchError
from perception.pixel import (
    PixelReader,
    anchors,
    check_frame_size,
    decode_frame,
    frame_flags,
)
from perception.types import BoxPx, ScreenSize


def test_flag_secure_screen_is_flagged_not_refused(corpus_dir: Path) -> None:
    frame = decode_frame((corpus_dir / "adb_oneoffs/kbank_secure_black/screen.png").read_bytes())
    assert frame.size == ScreenSize(1440, 3120)
    flags, _ = frame_flags(frame)
    assert flags.black and flags.secure
    pixels = PixelReader().read(frame)
    assert pixels.ocr == "skipped" and pixels.candidates == ()


def test_partial_and_mismatched_tree_sizes(corpus_dir: Path) -> None:
    frame = decode_frame((corpus_dir / "llamatouch/trace_18/step_000/screen.png").read_bytes())
    assert check_frame_size(frame.size, ScreenSize(1080, 2274)) == 0  # the dump's extent
    with pytest.raises(FrameSizeMismatchError):
        check_frame_size(frame.size, ScreenSize(1440, 2560))


def test_roi_ocr_on_a_real_screen(corpus_dir: Path) -> None:
    frame = decode_frame((corpus_dir / "llamatouch/trace_18/step_000/screen.png").read_bytes())
    with PixelReader() as reader:
        lines = reader.ocr_regions(frame, [BoxPx(0, 480, 1080, 880)])
    texts = [ln.text.casefold() for ln in lines]
    assert "sources" in texts
    assert all(480 <= ln.box_px.top and ln.box_px.bottom <= 880 for ln in lines)


def _icons_by_full_labelling(edges: np.ndarray, w: int) -> set[tuple[int, int, int, int]]:
    """The reference the anchors' icon pass must equal: every 8-connected component of the edge
    map labelled at once, filtered by the same size, aspect and density rules."""
    _, _, stats, _ = cv2.connectedComponentsWithStats(edges, connectivity=8)
    lo, side_max = anchors.ICON_SIDE[0] * w, anchors.IMAGE_SIDE_MAX * w
    out = set()
    for x, y, cw, ch, area in stats[1:].tolist():
        if not (lo <= cw <= side_max and lo <= ch <= side_max and 0.6 <= cw / ch <= 1.67):
            continue
        if area / float(cw * ch) >= anchors.ICON_DENSITY_MIN:
            out.add((x, y, x + cw, y + ch))
    return out


@pytest.mark.parametrize(
    "sample",
    ["llamatouch/trace_18/step_000", "fdroidutg_weibo/weibo_2023-10-24/step_011",
     "droidbot_yelp/yelp_2017/step_001"],
)
def test_anchors_icons_equal_a_full_labelling(
    corpus_dir: Path, sample: str
) -> None:
    image = next(p for p in (corpus_dir / sample).iterdir() if p.stem == "screen"
                 and p.suffix in (".png", ".jpg"))
    frame = decode_frame(image.read_bytes())
    small = anchors._small(frame, PixelConfig().anchor_scale)
    gray = cv2.cvtColor(small, cv2.COLOR_BGR2GRAY)
    edges = anchors._edge_map(gray)
    contours, boxes, outer = anchors._edge_shapes(edges)
    found = {tuple(b) for _, b, _ in anchors._icons(edges, contours, boxes, outer, gray.shape[1])}
    reference = _icons_by_full_labelling(edges, gray.shape[1])
    assert found == reference and len(found) > 5
