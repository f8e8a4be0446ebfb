"""A nearly empty screen is not an empty screen: a pure-black (dark mode) or flat screen with one
label on it is read, while a FLAG_SECURE frame (black but for the system bars and an edge-panel
handle) is still flagged secure and skipped."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from perception.pixel import Frame, PixelReader, frame_flags

FONT = cv2.FONT_HERSHEY_SIMPLEX


def _one_label(bg: int, fg: int, text: str = "Retry") -> np.ndarray:
    img = np.full((3120, 1440, 3), bg, np.uint8)
    cv2.putText(img, text, (620, 1560), FONT, 1.0, (fg, fg, fg), 2, cv2.LINE_AA)
    return img


@pytest.mark.parametrize(("bg", "fg"), [(0, 255), (255, 0), (33, 200)])
def test_one_label_on_a_black_or_flat_screen_is_read(
    reader: PixelReader, bg: int, fg: int
) -> None:
    # These were flagged black/secure or uniform and OCR was skipped: no candidates at all.
    pixels = reader.read(_one_label(bg, fg))
    assert not pixels.flags.black and not pixels.flags.secure and not pixels.flags.uniform
    assert pixels.ocr == "full"
    assert [c.text for c in pixels.candidates] == ["Retry"]


def test_secure_frame_with_system_bars_is_still_black() -> None:
    # As a Samsung phone captures a FLAG_SECURE app (corpus: adb_oneoffs/kbank_secure_black):
    # black, but the status bar's clock and icons, the gesture handle and an edge-panel tab show.
    img = np.zeros((3120, 1440, 3), np.uint8)
    cv2.putText(img, "9:17", (60, 90), FONT, 2.0, (255, 255, 255), 4, cv2.LINE_AA)
    cv2.rectangle(img, (1200, 50), (1380, 100), (255, 255, 255), -1)
    cv2.rectangle(img, (470, 3080), (970, 3092), (200, 200, 200), -1)
    cv2.rectangle(img, (1424, 640), (1440, 1110), (120, 120, 120), -1)
    flags, _ = frame_flags(Frame.from_array(img))
    assert flags.black and flags.secure and not flags.uniform
    white = frame_flags(Frame.from_array(np.full((3120, 1440, 3), 250, np.uint8)))[0]
    assert white.uniform and not white.black
