"""Pixel-only defects found by the audit of 2026-12-05 (audC): dark dialogs and sheets seen as
modal, stacked and outlined text fields kept as fields, an icon and its caption offered as one
candidate, and the status bar kept out of the candidates. Real corpus screens, and drawn frames
where a rule's edge is clearer so.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from perception.pixel import PixelReader, decode_frame, frame_flags
from perception.pixel.merge import pair_captions, status_clock
from perception.pixel.ocr import TextLine
from perception.types import BoxPx, ScreenSize
from tests._frames import png


def _frame_bytes(corpus_dir: Path, sample: str) -> bytes:
    return next((corpus_dir / sample).glob("screen.*[gG]")).read_bytes()


@pytest.mark.parametrize(
    ("sample", "surface"),
    [
        # A dark bottom sheet over QQ Music's dimmed dark album page.
        ("droidbotexp_qqmusic/qqmusic_2021-11-23/step_030", (0, 1364, 1080, 2280)),
        # A grey "Choose wordlist" dialog over a dimmed dark list.
        ("fdroidutg_apps/us.achromaticmetaphor.agram/step_001", (52, 688, 1004, 1156)),
        # A grey dialog over a dimmed dark page, its buttons on the fill.
        ("fdroidutg_apps/com.brosmike.airpushdetector/step_002", (76, 544, 1004, 1304)),
        # A light Settings dialog over a grey scrim whose dimmed title stays bright.
        ("droidbot_admob_apps/andrei.brusentcov.eyecheck.free/step_004", (92, 284, 676, 892)),
    ],
)
def test_a_flat_surface_over_a_dimmed_screen_is_modal(
    corpus_dir: Path, sample: str, surface: tuple[int, int, int, int]
) -> None:
    flags, _ = frame_flags(decode_frame(_frame_bytes(corpus_dir, sample)))
    modal = flags.modal_box_px
    assert modal is not None
    assert all(abs(a - b) <= 12 for a, b in zip(modal, surface, strict=True)), modal


def _dark_page(card: bool) -> bytes:
    """A dark-mode page (background 18): rows of full-white text, and optionally a lighter
    card (48) holding its own text."""
    img = np.full((1600, 720, 3), 18, np.uint8)
    for y in range(200, 1500, 110):
        cv2.putText(img, "Setting row", (40, y), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (255, 255, 255), 2)
    if card:
        cv2.rectangle(img, (40, 600), (680, 1000), (48, 48, 48), -1)
        cv2.putText(img, "Card title", (80, 700), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (255, 255, 255), 2)
    return png(img)


def _dark_dialog() -> bytes:
    """The same page under a 0.4 scrim with a grey dialog (48) over it."""
    img = np.full((1600, 720, 3), 18, np.uint8)
    for y in range(200, 1500, 110):
        cv2.putText(img, "Setting row", (40, y), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (255, 255, 255), 2)
    img = (img.astype(np.float32) * 0.4).astype(np.uint8)
    cv2.rectangle(img, (40, 600), (680, 1000), (48, 48, 48), -1)
    cv2.putText(img, "Delete?", (80, 700), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (255, 255, 255), 2)
    cv2.putText(img, "CANCEL", (360, 940), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (120, 200, 255), 2)
    return png(img)


def test_a_dark_dialog_over_a_dimmed_dark_page_is_modal() -> None:
    flags, _ = frame_flags(decode_frame(_dark_dialog()))
    modal = flags.modal_box_px
    assert modal is not None
    assert all(abs(a - b) <= 8 for a, b in zip(modal, (40, 600, 681, 1001), strict=True)), modal


@pytest.mark.parametrize("card", [False, True])
def test_a_dark_mode_page_is_no_modal(card: bool) -> None:
    flags, _ = frame_flags(decode_frame(_dark_page(card)))
    assert flags.modal_box_px is None


@pytest.mark.parametrize(
    ("text", "clock"),
    [
        ("9:45", True),
        ("16:10 0 00  D", True),  # the clock joined to the notification icons after it
        ("39%23:22", True),  # ... and to the battery level before it
        ("Sun, Jan 21", False),
        ("Save 10% today", False),
        ("1:234", False),
    ],
)
def test_the_status_clock_is_read_at_the_start_of_its_line(text: str, clock: bool) -> None:
    line = TextLine(text=text, box_px=BoxPx(30, 14, 200, 50), confidence=0.9)
    assert (status_clock([line], ScreenSize(1080, 2280)) is not None) is clock


@pytest.mark.parametrize(
    "sample",
    [
        "adb_oneoffs/wework_new_customers",  # the clock line and the wifi and battery icons
        "droidbot_admob_apps/com.HomeCleaningGames/step_002",  # "39%23:22"
        "droidbot_admob_apps/com.tp.android.curezombie2nd/step_003",  # a bar found 28 px of 64
        "droidbotexp_qqmusic/qqmusic_2021-11-23/step_000",  # launcher status icons
        "droidbotexp_qqmusic/qqmusic_2021-12-06/step_000",
    ],
)
def test_nothing_is_offered_on_the_status_bar(
    corpus_dir: Path, reader: PixelReader, sample: str
) -> None:
    pixels = reader.read(_frame_bytes(corpus_dir, sample))
    band = 24 * min(pixels.size.width_px, pixels.size.height_px) / 360
    assert [c for c in pixels.candidates if c.box_px.center.y <= band] == []
    assert pixels.candidates


def test_icons_in_a_row_take_captions_further_below() -> None:
    """A grid row of like icons, each with a centred caption 1.4 lines below (Yelp's category
    grid, a launcher): each icon takes its caption. A lone icon as far above a line does not (a
    logo over a card's title)."""
    icons = np.array([[100 + 300 * k, 500, 196 + 300 * k, 596] for k in range(3)], np.int32)
    lines = np.array([[90 + 300 * k, 646, 206 + 300 * k, 682] for k in range(3)], np.int32)
    assert pair_captions(icons, lines) == [0, 1, 2]
    assert pair_captions(icons[:1], lines[:1]) == [-1]
    # two like icons are no row yet
    assert pair_captions(icons[:2], lines[:2]) == [-1, -1]
    # a row of icons whose lines lie much further down keeps them apart
    far = lines + np.array([0, 60, 0, 60], np.int32)
    assert pair_captions(icons, far) == [-1, -1, -1]
