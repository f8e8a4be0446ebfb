"""The raw ``screencap`` format (no ``-p``), read and written in one place.

A little-endian header, ``width, height, format`` (12 bytes, Android <= 8) or ``width, height,
format, colorspace`` (16 bytes, Android 9+), then the pixels row by row. Formats: 1 RGBA_8888,
2 RGBX_8888, 3 RGB_888, 4 RGB_565, 5 BGRA_8888. The live source parses headers, the recorder and
the pixel channel decode, the virtual phone encodes (RGBA_8888, sRGB).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from perception.errors import FrameError, TruncatedFrameError
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


def parse_raw_header(data: bytes) -> RawHeader:
    """Read the header; raise :class:`FrameError` when the bytes are not one.

    The header length (12 or 16 bytes) follows from the total length when the data is complete,
    else from the plausibility of the colour-space word.
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
    if len(data) == 12 + pixels:
        return RawHeader(width, height, fmt, 12)
    if len(data) == 16 + pixels:
        return RawHeader(width, height, fmt, 16)
    # Incomplete data: guess from the colour-space word (0..2 are real colour spaces).
    if len(data) >= 16 and struct.unpack_from("<I", data, 12)[0] <= 2:
        return RawHeader(width, height, fmt, 16)
    return RawHeader(width, height, fmt, 12)


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
