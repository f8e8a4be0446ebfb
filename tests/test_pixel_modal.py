"""A dialog, sheet, drawer or popup over a dimmed screen: what lies under the dim layer is not
offered (a tap there dismisses the overlay, it reaches nothing). Real corpus screens.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perception.pixel import PixelReader, decode_frame, frame_flags
from perception.types import BoxPx


def _frame_bytes(corpus_dir: Path, sample: str) -> bytes:
    return next((corpus_dir / sample).glob("screen.*[gG]")).read_bytes()


def _near(box: BoxPx | None, expected: tuple[int, int, int, int], slack_px: int) -> bool:
    return box is not None and all(
        abs(a - b) <= slack_px for a, b in zip(box, expected, strict=True)
    )


@pytest.mark.parametrize(
    ("sample", "surface", "kept"),
    [
        # The permission dialog over A2DP Volume's main screen (480x800).
        ("droidbot_a2dpvol_lowres/a2dpvol_2018-06-05/step_000", (24, 292, 456, 544), {"ALLOW"}),
        # Yelp's search overlay over the dimmed results and bottom tabs (from under the status
        # bar: a surface that reaches the system bars reaches the frame's edge).
        ("droidbot_yelp/yelp_2017/step_010", (0, 0, 1440, 1624), {"Hair Stylists"}),
    ],
)
def test_candidates_under_the_dim_layer_are_left_out(
    corpus_dir: Path,
    reader: PixelReader,
    sample: str,
    surface: tuple[int, int, int, int],
    kept: set[str],
) -> None:
    pixels = reader.read(_frame_bytes(corpus_dir, sample))
    modal = pixels.flags.modal_box_px
    assert _near(modal, surface, 12), modal
    assert modal is not None
    outside = [c for c in pixels.candidates if not modal.contains(c.box_px.center)]
    assert outside == []
    assert kept <= {c.text for c in pixels.candidates}


@pytest.mark.parametrize(
    "sample",
    [
        "droidbot_yelp/yelp_2017/step_004",  # an ordinary list
        "fdroidutg_weibo/weibo_2023-10-24/step_024",  # a white card under a dark picture
        "fdroidutg_weibo/weibo_2023-10-24/step_027",  # a composer under a video on black
        "fdroidutg_apps/ir.hsn6.tpb/step_004",  # the notification shade
        "fdroidutg_apps/mattecarra.accapp/step_002",  # a browser's bottom bar over a grey page
        "adb_oneoffs/unicom_home",
    ],
)
def test_no_dim_layer_no_modal(corpus_dir: Path, sample: str) -> None:
    frame = decode_frame(_frame_bytes(corpus_dir, sample))
    assert frame_flags(frame)[0].modal_box_px is None


@pytest.mark.parametrize(
    ("sample", "surface"),
    [
        ("fdroidutg_apps/anupam.acrylic/step_007", (0, 0, 840, 2340)),  # a drawer, dim right
        ("fdroidutg_apps/com.brosmike.airpushdetector/step_003", (0, 1468, 1080, 2340)),  # sheet
        ("fdroidutg_apps/com.adguard.android.contentblocker/step_002", (48, 288, 1032, 1560)),
    ],
)
def test_drawers_sheets_and_choosers_are_modal(
    corpus_dir: Path, sample: str, surface: tuple[int, int, int, int]
) -> None:
    frame = decode_frame(_frame_bytes(corpus_dir, sample))
    assert _near(frame_flags(frame)[0].modal_box_px, surface, 12)
