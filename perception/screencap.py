"""The raw ``screencap`` format (no ``-p``), read and written in one place.

A little-endian header, ``width, height, format`` (12 bytes, Android <= 8) or ``width, height,
format, colorspace`` (16 bytes, Android 9+), then the pixels row by row. Formats: 1 RGBA_8888,
2 RGBX_8888, 3 RGB_888, 4 RGB_565, 5 BGRA_8888. The live source parses headers, the recorder and
the pixel channel decode, the virtual phone encodes (RGBA_8888, sRGB).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import cv2
import numpy as np
import numpy.typing as npt

from perception.errors import (
    FrameError,
    ImplausibleFrameSizeError,
    NotAnImageError,
    TruncatedFrameError,
)
from perception.types import ScreenSize

RAW_FORMAT_RGBA_8888 = 1
RAW_COLORSPACE_SRGB = 1
BYTES_PER_PIXEL = {1: 4, 2: 4, 3: 3, 4: 2, 5: 4}
MAX_SIDE_PX = 16384


@dataclass(frozen=True, slots=True)
class RawHeader:
    width_px: int
    height_px: int
    pixel_format: int
    header_bytes: int

    @property
    def size(self) -> ScreenSize:
        return ScreenSize(self.width_px, self.height_px)

    @property
    def pixel_bytes(self) -> int:
        return self.width_px * self.height_px * BYTES_PER_PIXEL[self.pixel_format]

    @property
    def total_bytes(self) -> int:
        return self.header_bytes + self.pixel_bytes


_ALPHA_FORMATS = frozenset({1, 5})
"""RGBA_8888 and BGRA_8888: the fourth byte of each pixel is alpha."""
_COLORSPACES = range(3)
"""The colour-space word of a 16-byte header: 0 unknown, 1 sRGB, 2 Display P3."""


def parse_raw_header(data: bytes) -> RawHeader:
    """Read the header; raise :class:`FrameError` when the bytes are not one.

    The header length (12 or 16 bytes) is the one whose total matches the data exactly (a
    16-byte header's fourth word is always a colour space, 0-2). One length is ambiguous: a
    16-byte-header capture cut by exactly 4 bytes is as long as a whole 12-byte one, and read
    so it comes out shifted by one pixel. The word after 12 bytes decides: when it is a colour
    space and the format has alpha, the 12-byte reading would make the top-left pixel fully
    transparent, which a screen capture never is, so the 16-byte reading (a truncated
    capture) is taken. Formats without alpha cannot tell and keep the exact 12-byte reading.
    A length past a whole 12-byte capture, up to a 16-byte one's, without a colour space
    after 12 bytes matches neither and is refused (:class:`NotAnImageError`). Shorter data
    is guessed from that word too (and is truncated either way).
    """
    if len(data) < 12:
        raise FrameError(f"raw screencap too short: {len(data)} bytes, header needs 12")
    width, height, fmt = struct.unpack_from("<III", data, 0)
    if not (0 < width <= MAX_SIDE_PX and 0 < height <= MAX_SIDE_PX) or fmt not in BYTES_PER_PIXEL:
        head = bytes(data[:40])
        raise FrameError(
            f"not a raw screencap (width={width}, height={height}, format={fmt}); "
            f"first bytes {head!r}"
        )
    pixels = width * height * BYTES_PER_PIXEL[fmt]
    colorspace = len(data) >= 16 and struct.unpack_from("<I", data, 12)[0] in _COLORSPACES
    if len(data) == 16 + pixels and colorspace:
        return RawHeader(width, height, fmt, 16)
    if len(data) == 12 + pixels:
        if colorspace and fmt in _ALPHA_FORMATS:
            return RawHeader(width, height, fmt, 16)  # cut by 4 bytes; decoding says so
        return RawHeader(width, height, fmt, 12)
    if 12 + pixels < len(data) <= 16 + pixels and not colorspace:
        raise NotAnImageError(
            f"raw screencap header says {width}x{height} format {fmt} ({pixels} pixel bytes) "
            f"but {len(data)} bytes came: neither a 12-byte header ({12 + pixels} bytes) nor "
            f"a 16-byte one ({16 + pixels}); capture it again"
        )
    # Incomplete (or, past 16 + pixels, overlong) data: guess from the colour-space word.
    return RawHeader(width, height, fmt, 16 if colorspace else 12)


def decode_raw_screencap(
    data: bytes, header: RawHeader | None = None
) -> npt.NDArray[np.uint8]:
    """Raw ``screencap`` bytes -> a C-contiguous ``(H, W, 3)`` BGR array."""
    header = header or parse_raw_header(data)
    if len(data) < header.total_bytes:
        raise TruncatedFrameError(
            f"raw screencap truncated: the header says {header.width_px}x{header.height_px} "
            f"format {header.pixel_format} ({header.pixel_bytes} pixel bytes) but only "
            f"{len(data) - header.header_bytes} bytes follow the {header.header_bytes}-byte header"
        )
    bpp = BYTES_PER_PIXEL[header.pixel_format]
    flat = np.frombuffer(data, dtype=np.uint8, count=header.pixel_bytes, offset=header.header_bytes)
    shaped = flat.reshape(header.height_px, header.width_px, bpp)
    if bpp == 4:
        code = cv2.COLOR_BGRA2BGR if header.pixel_format == 5 else cv2.COLOR_RGBA2BGR
    elif bpp == 3:
        code = cv2.COLOR_RGB2BGR
    else:
        code = cv2.COLOR_BGR5652BGR
    return np.ascontiguousarray(cv2.cvtColor(shaped, code))


def encode_raw_screencap(bgr: npt.NDArray[np.uint8], *, header_bytes: int = 16) -> bytes:
    """A ``(H, W, 3|4)`` BGR(A) array -> raw ``screencap`` bytes (RGBA_8888, sRGB)."""
    if bgr.ndim != 3 or bgr.shape[2] not in (3, 4):
        raise FrameError(f"expected an (H, W, 3|4) array, got shape {bgr.shape}")
    height, width = int(bgr.shape[0]), int(bgr.shape[1])
    code = cv2.COLOR_BGRA2RGBA if bgr.shape[2] == 4 else cv2.COLOR_BGR2RGBA
    rgba = cv2.cvtColor(np.ascontiguousarray(bgr), code)
    if header_bytes == 16:
        head = struct.pack("<IIII", width, height, RAW_FORMAT_RGBA_8888, RAW_COLORSPACE_SRGB)
    elif header_bytes == 12:
        head = struct.pack("<III", width, height, RAW_FORMAT_RGBA_8888)
    else:
        raise FrameError(f"raw header is 12 or 16 bytes, not {header_bytes}")
    return head + rgba.tobytes()


# ----- encoded frames' headers: the size a PNG or JPEG declares, checked before decoding -----
# Here, below the pixel channel and the virtual phone, so that both refuse an image by its
# header with the same rule (a 400 KB PNG of 20000 x 20000 px would be allocated in full).

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
JPEG_MAGIC = b"\xff\xd8\xff"
JPEG_SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
"""Start-of-frame markers (baseline, progressive, lossless, ...), which carry the image size."""


def png_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from the IHDR chunk (the first chunk of every PNG), None without it."""
    if len(data) < 24 or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack_from(">II", data, 16)
    return int(width), int(height)


def jpeg_segments(data: bytes) -> Iterator[tuple[int, int]]:
    """``(marker, offset)`` of each marker segment before the first scan, by their lengths (so
    nothing inside a segment, such as an EXIF thumbnail's own markers, is taken for one),
    ending after the start of scan (FFDA) or an end of image (FFD9). A byte where a marker
    must be that is not FF yields ``(-1, offset)`` and ends the walk: a corrupt header."""
    i, n = 2, len(data)
    while i + 4 <= n:
        if data[i] != 0xFF:
            yield -1, i
            return
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD8:  # no length field
            i += 2
            continue
        yield marker, i
        if marker in (0xD9, 0xDA):
            return
        (length,) = struct.unpack_from(">H", data, i + 2)
        i += 2 + length


def jpeg_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from the first start-of-frame segment, None when none comes first."""
    for marker, i in jpeg_segments(data):
        if marker in JPEG_SOF_MARKERS:
            if i + 9 > len(data):
                return None
            height, width = struct.unpack_from(">HH", data, i + 5)
            return int(width), int(height)
    return None


def declared_size(data: bytes) -> tuple[str, int, int] | None:
    """``("PNG" | "JPEG", width, height)`` as an encoded image's header declares them, None
    for bytes that are neither or whose header holds no size."""
    if data.startswith(PNG_MAGIC):
        size, kind = png_size(data), "PNG"
    elif data.startswith(JPEG_MAGIC):
        size, kind = jpeg_size(data), "JPEG"
    else:
        return None
    return None if size is None else (kind, *size)


class FrameLimits(Protocol):
    """The sides and aspect ratio a screen image may have (``PixelConfig`` is one)."""

    @property
    def min_side_px(self) -> int: ...
    @property
    def max_side_px(self) -> int: ...
    @property
    def max_aspect(self) -> float: ...


def check_frame_side(width_px: int, height_px: int, limits: FrameLimits, what: str) -> None:
    """:class:`ImplausibleFrameSizeError` for a screen image whose sides or aspect ratio no
    screen has (``limits``' ``min_side_px``, ``max_side_px``, ``max_aspect``)."""
    short, long_ = sorted((width_px, height_px))
    if short < limits.min_side_px or long_ > limits.max_side_px:
        raise ImplausibleFrameSizeError(
            f"{what} is {width_px}x{height_px} px; a screen side must be within "
            f"{limits.min_side_px}..{limits.max_side_px} px"
        )
    if long_ > limits.max_aspect * short:
        raise ImplausibleFrameSizeError(
            f"{what} is {width_px}x{height_px} px, an aspect ratio above {limits.max_aspect}:1"
        )
