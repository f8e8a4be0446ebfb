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

from perception.pixel import decode_frame, frame_flags
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
