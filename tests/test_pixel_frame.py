"""Frames: decoding, typed validation errors, flags and stability."""

from __future__ import annotations

import struct

import cv2
import numpy as np
import pytest
from _frames import png

from perception.errors import (
    FrameError,
    FrameSizeMismatchError,
    ImplausibleFrameSizeError,
    NotAnImageError,
    PerceptionError,
    TruncatedFrameError,
)
from perception.pixel import Frame, check_frame_size, decode_frame, frame_flags, load_frame
from perception.types import ScreenSize


def screen(width: int = 360, height: int = 640) -> np.ndarray:
    """A small phone-like screen: status bar with a clock, a toolbar, two text rows."""
    img = np.full((height, width, 3), 245, np.uint8)
    img[:24] = (40, 40, 40)
    cv2.putText(img, "12:30", (8, 18), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1)
    img[24:80] = (200, 120, 30)
    cv2.putText(img, "Settings", (16, 62), cv2.FONT_HERSHEY_SIMPLEX, 0.9, (255, 255, 255), 2)
    cv2.putText(img, "Wi-Fi", (16, 140), cv2.FONT_HERSHEY_SIMPLEX, 0.8, (20, 20, 20), 2)
    cv2.putText(img, "Bluetooth", (16, 220), cv2.FONT_HERSHEY_SIMPLEX, 0.8, (20, 20, 20), 2)
    return img



def test_png_and_jpeg_decode() -> None:
    img = screen()
    f = decode_frame(png(img), start_ns=1, end_ns=2)
    assert f.size == ScreenSize(360, 640)
    assert (f.start_ns, f.end_ns) == (1, 2)
    np.testing.assert_array_equal(f.pixels, img)
    ok, jpg = cv2.imencode(".jpg", img)
    assert ok
    assert decode_frame(jpg.tobytes()).size == ScreenSize(360, 640)


@pytest.mark.parametrize("header", [12, 16])
def test_raw_screencap_rgba(header: int) -> None:
    img = screen()
    rgba = cv2.cvtColor(img, cv2.COLOR_BGR2RGBA)
    head = struct.pack("<III", 360, 640, 1) + (struct.pack("<I", 1) if header == 16 else b"")
    f = decode_frame(head + rgba.tobytes())
    np.testing.assert_array_equal(f.pixels, img)


def test_truncated_png_says_what_it_got() -> None:
    data = png(screen())
    with pytest.raises(TruncatedFrameError, match=f"PNG of {len(data) - 40} bytes"):
        decode_frame(data[:-40])


def test_truncated_raw_and_jpeg() -> None:
    head = struct.pack("<III", 360, 640, 1)
    with pytest.raises(TruncatedFrameError, match="360x640"):
        decode_frame(head + b"\0" * 1000)
    ok, jpg = cv2.imencode(".jpg", screen())
    with pytest.raises(TruncatedFrameError, match="JPEG"):
        decode_frame(jpg.tobytes()[:-100])


@pytest.mark.parametrize(
    "data", [b"error: device offline\n", b"adb: no devices/emulators found", b"Killed\n"]
)
def test_adb_error_text_is_not_an_image(data: bytes) -> None:
    with pytest.raises(NotAnImageError, match="text") as info:
        decode_frame(data)
    assert data.strip().decode()[:10] in str(info.value)
    assert isinstance(info.value, PerceptionError)


def test_empty_and_garbage() -> None:
    with pytest.raises(NotAnImageError, match="0 bytes"):
        decode_frame(b"")
    with pytest.raises(NotAnImageError):
        decode_frame(bytes(range(256)) * 3)


def test_implausible_size() -> None:
    with pytest.raises(ImplausibleFrameSizeError, match="20x20"):
        decode_frame(png(np.zeros((20, 20, 3), np.uint8)))
    with pytest.raises(ImplausibleFrameSizeError, match="aspect"):
        decode_frame(png(np.zeros((100, 1000, 3), np.uint8)))


def test_size_check_against_tree() -> None:
    assert check_frame_size(ScreenSize(1080, 2400), ScreenSize(1080, 2400)) == 0
    assert check_frame_size(ScreenSize(1080, 2340), ScreenSize(1080, 1920)) == 0  # partial dump
    assert check_frame_size(ScreenSize(1080, 2340), ScreenSize(1920, 1080)) == 1  # transposed
    with pytest.raises(FrameSizeMismatchError, match="720x1600.*1080x2400"):
        check_frame_size(ScreenSize(720, 1600), ScreenSize(1080, 2400))


def test_load_frame_accepts_everything(tmp_path: object) -> None:
    img = screen()
    f = Frame.from_array(img)
    assert load_frame(f) is f
    assert load_frame(img).size == f.size
    assert load_frame(png(img)).size == f.size
    with pytest.raises(FrameError):
        load_frame(12345)  # type: ignore[arg-type]
    with pytest.raises(FrameError):
        Frame.from_array(np.zeros((10, 10), np.float32))


def test_black_frame_is_flagged_secure_not_refused() -> None:
    f = decode_frame(png(np.zeros((640, 360, 3), np.uint8)))
    flags, _ = frame_flags(f)
    assert flags.black and flags.uniform and flags.secure
    white = Frame.from_array(np.full((640, 360, 3), 255, np.uint8))
    flags, _ = frame_flags(white)
    assert flags.uniform and not flags.black


def test_rotation_and_status_bar() -> None:
    flags, _ = frame_flags(Frame.from_array(screen()))
    assert flags.rotation == 0
    assert 20 <= flags.status_bar_px <= 32
    land = Frame.from_array(np.ascontiguousarray(np.rot90(screen())))
    assert frame_flags(land)[0].rotation == 1


def test_stability_catches_one_character() -> None:
    a = screen()
    b = a.copy()
    cv2.putText(b, "x", (300, 400), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (20, 20, 20), 1)
    fa, fb = Frame.from_array(a), Frame.from_array(b)
    first, sig = frame_flags(fa)
    assert first.stable is None
    same, sig2 = frame_flags(fa, previous=sig)
    assert same.stable is True and same.changed_cells == 0
    changed, _ = frame_flags(fb, previous=sig2)
    assert changed.stable is False and changed.changed_cells > 0
    # The clock in the status bar is masked: a new time alone keeps the screen stable.
    c = a.copy()
    c[:24] = (40, 40, 40)
    cv2.putText(c, "12:31", (8, 18), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1)
    clock, _ = frame_flags(Frame.from_array(c), previous=sig2)
    assert clock.stable is True
