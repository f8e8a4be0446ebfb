"""Capture records and the source protocols every tree/frame producer speaks.

A *source* hands out timestamped captures of one phone screen: the uiautomator hierarchy
(:class:`TreeCapture`) and the screen image (:class:`FrameCapture`), each stamped with when its
capture started and ended on the one clock of the process (``time.monotonic_ns()``) and with the
action *epoch* it belongs to. Live devices (:mod:`perception.sources.device`) and recordings
(:mod:`perception.sources.replay`) implement the same protocols, so the engine, the bench, export
and the tests never know which one they hold.

Raw ``screencap`` output (no ``-p``) is a little-endian header followed by RGBA_8888 pixels:
``width, height, format`` (12 bytes, Android <= 8) or ``width, height, format, colorspace``
(16 bytes, Android 9+). :func:`parse_raw_header` reads it and :func:`encode_raw_screencap` writes
it (the virtual phone uses the latter).
"""

from __future__ import annotations

import enum
import struct
import time
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from perception.errors import FrameError
from perception.types import BoxPx, PointPx, ScreenSize

RAW_FORMAT_RGBA_8888 = 1
RAW_COLORSPACE_SRGB = 1
_RAW_BYTES_PER_PIXEL = 4


@enum.unique
class FrameFormat(enum.StrEnum):
    """How :attr:`FrameCapture.data` is encoded."""

    PNG = "png"
    JPEG = "jpeg"
    RAW = "raw"
    """``screencap`` raw output: header + RGBA_8888 rows."""
    ARRAY = "array"
    """A decoded ``uint8`` array, ``(H, W, 3)`` BGR or ``(H, W, 4)`` BGRA (OpenCV order)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TreeCapture:
    """One uiautomator hierarchy dump, exactly the bytes the phone produced."""

    xml: bytes
    start_ns: int
    end_ns: int
    epoch: int = 0
    serial: str = ""
    step: int | None = None
    """The recording step it came from (replay and the virtual phone), else ``None``."""

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameCapture:
    """One screen image as captured (encoded bytes or a decoded array)."""

    data: bytes | npt.NDArray[np.uint8]
    fmt: FrameFormat
    start_ns: int
    end_ns: int
    epoch: int = 0
    serial: str = ""
    step: int | None = None

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6

    @property
    def nbytes(self) -> int:
        return int(self.data.nbytes) if isinstance(self.data, np.ndarray) else len(self.data)


@dataclass(frozen=True, slots=True)
class Insets:
    """System bar insets in device pixels (status bar on top, navigation bar at the bottom/side)."""

    top_px: int = 0
    bottom_px: int = 0
    left_px: int = 0
    right_px: int = 0

    def content_box(self, screen: ScreenSize) -> BoxPx:
        return BoxPx(
            self.left_px,
            self.top_px,
            screen.width_px - self.right_px,
            screen.height_px - self.bottom_px,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ScreenFacts:
    """What the phone says about its screen right now."""

    size: ScreenSize
    """Size in the current rotation."""
    density_dpi: int
    rotation: int
    """Quarter turns from the natural orientation (0-3)."""
    package: str = ""
    activity: str = ""
    insets: Insets = field(default_factory=Insets)
    captured_ns: int = 0


@runtime_checkable
class TreeSource(Protocol):
    """Anything that can produce a fresh hierarchy dump of its screen."""

    def capture_tree(self) -> TreeCapture:
        """Capture the hierarchy now (blocking, bounded by the source's timeout)."""
        ...


@runtime_checkable
class FrameSource(Protocol):
    """Anything that can produce a fresh screen image."""

    def capture_frame(self) -> FrameCapture:
        """Capture the screen now (blocking, bounded by the source's timeout)."""
        ...


@runtime_checkable
class ScreenSource(TreeSource, FrameSource, Protocol):
    """A whole phone screen: trees, frames, screen facts and an action epoch.

    ``epoch`` starts at 0 and grows by one each time an action is sent (:meth:`new_epoch`);
    captures carry the epoch they were taken in.
    """

    @property
    def serial(self) -> str: ...

    @property
    def epoch(self) -> int: ...

    def new_epoch(self) -> int:
        """Mark that an action was sent; return the new epoch."""
        ...

    def screen_facts(self, *, refresh: bool = False) -> ScreenFacts:
        """Size, density, rotation, focus and insets (cached unless ``refresh``)."""
        ...

    def close(self) -> None: ...


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
    def total_bytes(self) -> int:
        return self.header_bytes + self.width_px * self.height_px * _RAW_BYTES_PER_PIXEL


def parse_raw_header(data: bytes) -> RawHeader:
    """Read the ``screencap`` raw header; raise :class:`FrameError` when it is not one.

    The header length (12 or 16 bytes) is inferred from the total length when the data is
    complete, else from plausibility of the colour-space word.
    """
    if len(data) < 12:
        raise FrameError(f"raw screencap too short: {len(data)} bytes, header needs 12")
    width, height, fmt = struct.unpack_from("<III", data, 0)
    if not (0 < width <= 16384 and 0 < height <= 16384) or fmt != RAW_FORMAT_RGBA_8888:
        head = bytes(data[:40])
        raise FrameError(
            f"not a raw RGBA_8888 screencap (width={width}, height={height}, format={fmt}); "
            f"first bytes {head!r}"
        )
    pixels = width * height * _RAW_BYTES_PER_PIXEL
    if len(data) == 12 + pixels:
        return RawHeader(width, height, fmt, 12)
    if len(data) == 16 + pixels:
        return RawHeader(width, height, fmt, 16)
    # Incomplete data: guess from the colour-space word (0..2 are real colour spaces).
    if len(data) >= 16 and struct.unpack_from("<I", data, 12)[0] <= 2:
        return RawHeader(width, height, fmt, 16)
    return RawHeader(width, height, fmt, 12)


def decode_raw_screencap(data: bytes) -> npt.NDArray[np.uint8]:
    """Raw ``screencap`` bytes -> ``(H, W, 3)`` BGR array (a copy; alpha dropped)."""
    header = parse_raw_header(data)
    if len(data) < header.total_bytes:
        raise FrameError(
            f"raw screencap truncated: {len(data)} of {header.total_bytes} bytes "
            f"({header.width_px}x{header.height_px})"
        )
    rgba = np.frombuffer(
        data, dtype=np.uint8, count=header.total_bytes - header.header_bytes,
        offset=header.header_bytes,
    ).reshape(header.height_px, header.width_px, 4)
    return np.ascontiguousarray(rgba[:, :, 2::-1])


def encode_raw_screencap(bgr: npt.NDArray[np.uint8], *, header_bytes: int = 16) -> bytes:
    """A ``(H, W, 3|4)`` BGR(A) array -> raw ``screencap`` bytes (RGBA_8888, sRGB)."""
    if bgr.ndim != 3 or bgr.shape[2] not in (3, 4):
        raise FrameError(f"expected an (H, W, 3|4) array, got shape {bgr.shape}")
    height, width = int(bgr.shape[0]), int(bgr.shape[1])
    rgba = np.empty((height, width, 4), dtype=np.uint8)
    rgba[:, :, 0] = bgr[:, :, 2]
    rgba[:, :, 1] = bgr[:, :, 1]
    rgba[:, :, 2] = bgr[:, :, 0]
    rgba[:, :, 3] = bgr[:, :, 3] if bgr.shape[2] == 4 else 255
    if header_bytes == 16:
        head = struct.pack("<IIII", width, height, RAW_FORMAT_RGBA_8888, RAW_COLORSPACE_SRGB)
    elif header_bytes == 12:
        head = struct.pack("<III", width, height, RAW_FORMAT_RGBA_8888)
    else:
        raise FrameError(f"raw header is 12 or 16 bytes, not {header_bytes}")
    return head + rgba.tobytes()


def sniff_frame_format(data: bytes) -> FrameFormat:
    """PNG / JPEG by magic bytes, else a raw screencap (validated); else :class:`FrameError`."""
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return FrameFormat.PNG
    if data[:3] == b"\xff\xd8\xff":
        return FrameFormat.JPEG
    parse_raw_header(data)
    return FrameFormat.RAW


def now_ns() -> int:
    """The one clock of the package."""
    return time.monotonic_ns()


def tap_point(box: BoxPx) -> PointPx:
    """Where a tap on ``box`` lands: its centre."""
    return box.center
