"""Odd inputs a user hands the pixel channel: each one decodes to the right pixels or raises a
typed error that says what it got (never an untyped exception, never an empty screen)."""

from __future__ import annotations

import struct
import zlib

import cv2
import numpy as np
import pytest
from _frames import png

from perception.errors import (
    FrameError,
    ImplausibleFrameSizeError,
    NotAnImageError,
)
from perception.pixel import Frame, decode_frame
from perception.types import ScreenSize

FONT = cv2.FONT_HERSHEY_SIMPLEX


def screen(width: int = 360, height: int = 640) -> np.ndarray:
    img = np.full((height, width, 3), 245, np.uint8)
    img[:24] = (40, 40, 40)
    img[24:80] = (200, 120, 30)
    img[100:110, :50] = (10, 13, 10)  # LF and CR bytes in the raw pixels
    cv2.putText(img, "Settings", (16, 62), FONT, 0.9, (255, 255, 255), 2)
    cv2.putText(img, "Wi-Fi", (16, 140), FONT, 0.8, (20, 20, 20), 2)
    return img



def raw(img: np.ndarray, header: int = 16) -> bytes:
    h, w = img.shape[:2]
    head = struct.pack("<III", w, h, 1) + (struct.pack("<I", 1) if header == 16 else b"")
    return head + cv2.cvtColor(img, cv2.COLOR_BGR2RGBA).tobytes()


# --- `adb shell screencap` on Android < 7 runs under a pty that turns every LF into CRLF ---


def test_png_mangled_by_adb_shell_crlf_decodes() -> None:
    img = screen()
    data = png(img)
    assert b"\n" in data[8:]
    f = decode_frame(data.replace(b"\n", b"\r\n"))
    np.testing.assert_array_equal(f.pixels, img)


@pytest.mark.parametrize("header", [12, 16])
def test_raw_mangled_by_adb_shell_crlf_decodes(header: int) -> None:
    img = screen()
    data = raw(img, header)
    assert data.count(b"\n") > 100
    f = decode_frame(data.replace(b"\n", b"\r\n"))
    np.testing.assert_array_equal(f.pixels, img)


def test_raw_with_bytes_past_its_pixels_says_what_it_got() -> None:
    data = raw(screen()) + b"\0" * 100
    with pytest.raises(NotAnImageError, match=r"360x640.*100 bytes") as info:
        decode_frame(data)
    assert "not a PNG, JPEG" not in str(info.value)


@pytest.mark.parametrize("side", [1, 10])
def test_tiny_raw_screencap_is_an_implausible_size(side: int) -> None:
    data = struct.pack("<IIII", side, side, 1, 1) + b"\x80" * (4 * side * side)
    with pytest.raises(ImplausibleFrameSizeError, match=f"{side}x{side}"):
        decode_frame(data)


# --- a huge frame is refused from its header, before its pixels are allocated ---


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def test_huge_png_is_refused_from_its_header() -> None:
    # 20000 x 20000 px in 30 KB: decoding it first took 8 s and 2.3 GB.
    ihdr = struct.pack(">IIBBBBB", 20000, 20000, 8, 0, 0, 0, 0)
    idat = zlib.compress(b"\0" * 20001 * 8)
    data = (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", ihdr)
        + _png_chunk(b"IDAT", idat)
        + _png_chunk(b"IEND", b"")
    )
    with pytest.raises(ImplausibleFrameSizeError, match="20000x20000"):
        decode_frame(data)


def test_huge_jpeg_is_refused_from_its_header() -> None:
    # Decoding first: 20000 x 30000 took 11 s and 3.5 GB; 60000 x 60000 raised OpenCV's own
    # cv2.error (CV_IO_MAX_IMAGE_PIXELS), not a PerceptionError.
    ok, buf = cv2.imencode(".jpg", screen())
    assert ok
    data = bytearray(buf.tobytes())
    sof = data.find(b"\xff\xc0")
    assert sof > 0
    data[sof + 5 : sof + 9] = struct.pack(">HH", 60000, 50000)  # height, width
    with pytest.raises(ImplausibleFrameSizeError, match="50000x60000"):
        decode_frame(bytes(data))


# --- a Frame built by hand ---


def test_frame_built_by_hand_is_checked() -> None:
    img = screen()
    with pytest.raises(FrameError, match="contiguous"):
        Frame(pixels=img[:, ::-1], size=ScreenSize(360, 640))
    with pytest.raises(FrameError, match="1080x1920"):
        Frame(pixels=img, size=ScreenSize(1080, 1920))
    with pytest.raises(FrameError, match="uint8"):
        Frame(pixels=img.astype(np.float32), size=ScreenSize(360, 640))
    assert Frame(pixels=img, size=ScreenSize(360, 640)).size == ScreenSize(360, 640)
