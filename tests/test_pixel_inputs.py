"""Odd inputs a user hands the pixel channel: each one decodes to the right pixels or raises a
typed error that says what it got (never an untyped exception, never an empty screen)."""

from __future__ import annotations

import os
import struct
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from _frames import png

from perception.config import PixelConfig
from perception.errors import (
    FrameError,
    ImplausibleFrameSizeError,
    NotAnImageError,
    TruncatedFrameError,
)
from perception.pixel import Frame, decode_frame, load_frame
from perception.pixel.frame import max_frame_bytes
from perception.screencap import encode_raw_screencap, parse_raw_header
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


# ----- empty arrays: a typed size error, not cv2.error --------------------------------------------


@pytest.mark.parametrize("shape", [(0, 0), (0, 5, 4), (5, 0, 3), (0, 0, 3), (0, 7)])
def test_an_empty_array_is_an_implausible_size(shape: tuple[int, ...]) -> None:
    empty = np.zeros(shape, np.uint8)
    with pytest.raises(ImplausibleFrameSizeError, match="holds no pixels"):
        Frame.from_array(empty)
    with pytest.raises(ImplausibleFrameSizeError):
        load_frame(empty)


@pytest.mark.parametrize("shape", [(12000, 4000), (12000, 4000, 4)])
def test_an_oversized_array_is_refused_before_it_is_converted(shape: tuple[int, ...]) -> None:
    """A grey or BGRA array over the size limit is refused from its shape: converting it to BGR
    first cost three times its size (a 400 MB grey array, 900 MB more) to be refused then."""
    import tracemalloc

    huge = np.broadcast_to(np.uint8(7), shape)  # no memory of its own
    tracemalloc.start()
    try:
        with pytest.raises(ImplausibleFrameSizeError, match="4000x12000"):
            load_frame(huge)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak


# ----- a raw capture cut by 4 bytes: truncated, not shifted ---------------------------------------


def _capture() -> np.ndarray:
    return np.random.default_rng(5).integers(0, 256, (160, 90, 3), dtype=np.uint8)


def test_raw_capture_cut_by_4_bytes_is_truncated_not_shifted() -> None:
    raw = encode_raw_screencap(_capture())  # 16-byte header, RGBA, sRGB
    cut = raw[:-4]  # as long as a whole 12-byte-header capture of the same size
    assert parse_raw_header(cut).header_bytes == 16
    with pytest.raises(TruncatedFrameError, match="16-byte header"):
        decode_frame(cut)
    for n in (1, 3, 5):
        with pytest.raises(TruncatedFrameError):
            decode_frame(raw[:-n])


def test_exact_raw_captures_of_either_header_still_decode() -> None:
    img = _capture()
    for header in (12, 16):
        raw = encode_raw_screencap(img, header_bytes=header)
        assert parse_raw_header(raw).header_bytes == header
        np.testing.assert_array_equal(decode_frame(raw).pixels, img)


def test_raw_length_that_matches_neither_header_is_refused() -> None:
    raw12 = encode_raw_screencap(_capture(), header_bytes=12)
    for extra in (1, 3, 4):  # 4: a 16-byte length, but no colour space after 12 bytes
        with pytest.raises(NotAnImageError, match="neither a 12-byte header"):
            decode_frame(raw12 + b"\0" * extra)


def test_a_12_byte_capture_without_alpha_keeps_its_exact_reading() -> None:
    # RGB_565 (no alpha): a black top-left pair of pixels reads as colour space 0, and
    # nothing tells a cut 16-byte capture from it; the exact 12-byte reading is kept.
    img = np.zeros((160, 90, 2), np.uint8)
    img[50:] = 0x7F
    raw = struct.pack("<III", 90, 160, 4) + img.tobytes()
    assert parse_raw_header(raw).header_bytes == 12
    assert decode_frame(raw).size.width_px == 90


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_load_frame_reads_no_more_than_the_largest_capture() -> None:
    config = PixelConfig(max_side_px=512)
    limit = max_frame_bytes(config)
    assert limit > 16 + 4 * 512 * 512  # a raw capture of the largest square fits
    with pytest.raises(ImplausibleFrameSizeError, match=f"more than {limit} bytes"):
        load_frame("/dev/zero", config=config)


def test_the_largest_allowed_capture_still_loads(tmp_path: Path) -> None:
    config = PixelConfig(max_side_px=512)
    img = np.random.default_rng(3).integers(0, 256, (512, 512, 3), dtype=np.uint8)
    for name, data in (
        ("s.raw", encode_raw_screencap(img)),
        ("s.png", cv2.imencode(".png", img)[1].tobytes()),
    ):
        assert len(data) <= max_frame_bytes(config)
        (tmp_path / name).write_bytes(data)
        np.testing.assert_array_equal(load_frame(tmp_path / name, config=config).pixels, img)
