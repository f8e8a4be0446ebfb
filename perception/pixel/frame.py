"""Frames: decode, validate and flag a screen image.

A :class:`Frame` holds the pixels as a ``uint8[H, W, 3]`` BGR array (OpenCV order), the size as
a :class:`~perception.types.ScreenSize` and, when known, the capture window in monotonic ns.
:func:`decode_frame` reads PNG, JPEG and raw ``screencap`` bytes (no PNG round trip); every
failure is a typed :class:`~perception.errors.FrameError` that says what it got. Black, uniform
(FLAG_SECURE), rotated and inset frames are *flagged* by :func:`frame_flags`, never refused.
"""

from __future__ import annotations

import logging
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

import cv2
import numpy as np
import numpy.typing as npt

from perception.config import PixelConfig
from perception.errors import (
    FrameError,
    FrameSizeMismatchError,
    ImplausibleFrameSizeError,
    NotAnImageError,
    TruncatedFrameError,
)
from perception.screencap import decode_raw_screencap, parse_raw_header
from perception.types import ScreenSize

log = logging.getLogger(__name__)

U8: TypeAlias = npt.NDArray[Any]
"""A uint8 image (OpenCV's stubs type its results loosely, so this is not narrowed)."""

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PNG_MAGIC_CRLF = b"\x89PNG\r\r\n\x1a\r\n"
"""The PNG signature after ``adb shell`` turned every LF into CRLF (a pty on Android < 7)."""
JPEG_MAGIC = b"\xff\xd8\xff"
JPEG_SOF_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
"""Start-of-frame markers (baseline, progressive, lossless, ...), which carry the image size."""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Frame:
    """One screen image. ``pixels`` is C-contiguous ``uint8[H, W, 3]`` in BGR order.

    ``start_ns``/``end_ns`` are ``time.monotonic_ns()`` before and after the capture, when the
    source knows them (the fusion layer pairs frames and trees by them).
    """

    pixels: U8
    size: ScreenSize
    start_ns: int | None = None
    end_ns: int | None = None

    @classmethod
    def from_array(
        cls, pixels: npt.ArrayLike, *, start_ns: int | None = None, end_ns: int | None = None
    ) -> Frame:
        """Wrap an array: ``[H, W]`` gray, ``[H, W, 3]`` BGR or ``[H, W, 4]`` BGRA, uint8."""
        arr = np.asarray(pixels)
        if arr.dtype != np.uint8:
            raise FrameError(f"frame array must be uint8, got {arr.dtype}")
        if arr.ndim == 2:
            arr = cv2.cvtColor(arr, cv2.COLOR_GRAY2BGR)
        elif arr.ndim == 3 and arr.shape[2] == 4:
            arr = cv2.cvtColor(arr, cv2.COLOR_BGRA2BGR)
        elif arr.ndim != 3 or arr.shape[2] != 3:
            raise FrameError(f"frame array must be [H, W], [H, W, 3] or [H, W, 4], got {arr.shape}")
        arr = np.ascontiguousarray(arr)
        size = ScreenSize(int(arr.shape[1]), int(arr.shape[0]))
        return cls(pixels=arr, size=size, start_ns=start_ns, end_ns=end_ns)

    def __post_init__(self) -> None:
        # Cheap checks (no pixel is read): every stage slices, hashes and converts these pixels
        # assuming this layout, and would otherwise fail deep inside with an untyped error.
        px = self.pixels
        if not isinstance(px, np.ndarray) or px.dtype != np.uint8 or px.ndim != 3:
            what = f"{px.dtype} {px.shape}" if isinstance(px, np.ndarray) else type(px).__name__
            raise FrameError(
                f"Frame.pixels must be uint8[H, W, 3] (use Frame.from_array), got {what}"
            )
        if px.shape[2] != 3 or not px.flags.c_contiguous:
            raise FrameError(
                f"Frame.pixels must be a C-contiguous uint8[H, W, 3] BGR array (use "
                f"Frame.from_array), got shape {px.shape}, contiguous={px.flags.c_contiguous}"
            )
        if (self.size.width_px, self.size.height_px) != (px.shape[1], px.shape[0]):
            raise FrameError(
                f"Frame.size is {self.size.width_px}x{self.size.height_px} px but the pixels are "
                f"{px.shape[1]}x{px.shape[0]} px"
            )

    @property
    def landscape(self) -> bool:
        return self.size.width_px > self.size.height_px


FrameLike: TypeAlias = "Frame | bytes | bytearray | memoryview | str | Path | npt.NDArray[Any]"


def _describe(data: bytes) -> str:
    head = data[:60]
    text = head.decode("utf-8", errors="replace").strip()
    if text and sum(ch.isprintable() for ch in text) >= 0.9 * len(text):
        return f"{len(data)} bytes of text starting {text!r}"
    return f"{len(data)} bytes starting {head[:16].hex(' ')}"


def _looks_like_text(data: bytes) -> bool:
    head = data[:256]
    if not head:
        return False
    printable = sum(1 for b in head if 32 <= b < 127 or b in (9, 10, 13))
    return printable >= 0.95 * len(head)


def _check_size(width_px: int, height_px: int, config: PixelConfig, what: str) -> None:
    short, long_ = sorted((width_px, height_px))
    if short < config.min_side_px or long_ > config.max_side_px:
        raise ImplausibleFrameSizeError(
            f"{what} is {width_px}x{height_px} px; a screen side must be within "
            f"{config.min_side_px}..{config.max_side_px} px"
        )
    if long_ > config.max_aspect * short:
        raise ImplausibleFrameSizeError(
            f"{what} is {width_px}x{height_px} px, an aspect ratio above {config.max_aspect}:1"
        )


def _undo_crlf(data: bytes) -> bytes:
    """Undo ``adb shell``'s LF -> CRLF translation exactly (every CRLF in its output is one)."""
    return data.replace(b"\r\n", b"\n")


def _decode_raw(data: bytes, config: PixelConfig) -> U8 | None:
    """Raw ``screencap`` output (no ``-p``, see :mod:`perception.screencap`); None if not raw.

    Output that ``adb shell`` passed through a pty (Android < 7: every LF became CRLF) is
    restored when that gives exactly the header's length.
    """
    try:
        header = parse_raw_header(data)
    except FrameError:
        return None
    if len(data) > 16 + header.pixel_bytes:
        fixed = _undo_crlf(data)
        if len(fixed) < len(data):
            try:
                restored = parse_raw_header(fixed)
            except FrameError:
                restored = None
            if restored is not None and len(fixed) == restored.total_bytes:
                log.warning("raw screencap had every LF turned into CRLF (adb shell); restored")
                _check_size(restored.width_px, restored.height_px, config, "raw screencap")
                return decode_raw_screencap(fixed, restored)
        if header.width_px * header.height_px < config.min_side_px**2:
            return None  # a tiny "header" in a long buffer: most likely not a screencap at all
        extra = len(data) - 16 - header.pixel_bytes
        raise NotAnImageError(
            f"raw screencap header says {header.width_px}x{header.height_px} format "
            f"{header.pixel_format} ({header.pixel_bytes} pixel bytes after a 12- or 16-byte "
            f"header) but {len(data)} bytes came, at least {extra} bytes too many: not a raw "
            f"screencap of that size (text mixed into the output?)"
        )
    if len(data) >= header.total_bytes:
        _check_size(header.width_px, header.height_px, config, "raw screencap")
    else:
        short, long_ = sorted((header.width_px, header.height_px))
        if short < config.min_side_px or long_ > config.max_side_px:
            return None  # short and implausible: not a screencap, rather than a truncated one
    return decode_raw_screencap(data, header)


def _png_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from the IHDR chunk (the first chunk of every PNG), None without it."""
    if len(data) < 24 or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack_from(">II", data, 16)
    return int(width), int(height)


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from the first start-of-frame segment, None when none comes first."""
    i, n = 2, len(data)
    while i + 4 <= n:
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD8:  # no length field
            i += 2
            continue
        if marker in (0xD9, 0xDA):  # end of image, start of scan: no frame header before them
            return None
        if marker in JPEG_SOF_MARKERS:
            if i + 9 > n:
                return None
            height, width = struct.unpack_from(">HH", data, i + 5)
            return int(width), int(height)
        (length,) = struct.unpack_from(">H", data, i + 2)
        i += 2 + length
    return None


def _check_png_complete(data: bytes) -> None:
    if data.rfind(b"IEND", max(0, len(data) - 64)) < 0:
        raise TruncatedFrameError(
            f"PNG of {len(data)} bytes stops before its IEND chunk (last bytes "
            f"{data[-8:].hex(' ')})"
        )


def _check_jpeg_complete(data: bytes) -> None:
    tail = data.rstrip(b"\x00")
    if not tail.endswith(b"\xff\xd9"):
        raise TruncatedFrameError(
            f"JPEG of {len(data)} bytes stops before its end marker FFD9 (last bytes "
            f"{data[-8:].hex(' ')})"
        )


def decode_frame(
    data: bytes | bytearray | memoryview,
    *,
    config: PixelConfig | None = None,
    start_ns: int | None = None,
    end_ns: int | None = None,
) -> Frame:
    """Decode PNG, JPEG or raw ``screencap`` bytes into a :class:`Frame`.

    Raises :class:`TruncatedFrameError`, :class:`NotAnImageError` or
    :class:`ImplausibleFrameSizeError`; each message says what it got.
    """
    cfg = config or PixelConfig()
    raw = bytes(data)
    if not raw:
        raise NotAnImageError("got 0 bytes instead of an image (empty screencap output)")
    pixels: U8 | None
    if raw.startswith(PNG_MAGIC_CRLF):
        log.warning("PNG had every LF turned into CRLF (adb shell screencap -p); restored")
        raw = _undo_crlf(raw)
    if raw.startswith(PNG_MAGIC):
        _check_png_complete(raw)
        kind = "PNG"
        declared = _png_size(raw)
    elif raw.startswith(JPEG_MAGIC):
        _check_jpeg_complete(raw)
        kind = "JPEG"
        declared = _jpeg_size(raw)
    elif _looks_like_text(raw):
        raise NotAnImageError(f"expected an image, got {_describe(raw)}")
    else:
        pixels = _decode_raw(raw, cfg)
        if pixels is None:
            raise NotAnImageError(f"not a PNG, JPEG or raw screencap: got {_describe(raw)}")
        return Frame.from_array(pixels, start_ns=start_ns, end_ns=end_ns)
    if declared is not None:
        # Before decoding: a huge image would be allocated in full first (a 20000 x 20000 PNG
        # of 400 KB took 8 s and 2.3 GB), and past OpenCV's pixel limit it raises cv2.error.
        _check_size(*declared, cfg, kind)
    buf = np.frombuffer(raw, dtype=np.uint8)
    try:
        pixels = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    except cv2.error as exc:
        raise NotAnImageError(
            f"{kind} that OpenCV refuses to decode ({exc}): {_describe(raw)}"
        ) from exc
    if pixels is None:
        raise NotAnImageError(f"{kind} header but OpenCV cannot decode it: {_describe(raw)}")
    _check_size(int(pixels.shape[1]), int(pixels.shape[0]), cfg, kind)
    return Frame.from_array(pixels, start_ns=start_ns, end_ns=end_ns)


def load_frame(frame: FrameLike, *, config: PixelConfig | None = None) -> Frame:
    """Accept a :class:`Frame`, encoded or raw bytes, a file path or a numpy array."""
    if isinstance(frame, Frame):
        return frame
    if isinstance(frame, bytes | bytearray | memoryview):
        return decode_frame(frame, config=config)
    if isinstance(frame, str | Path):
        path = Path(frame)
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise FrameError(f"cannot read frame file {path}: {exc}") from exc
        return decode_frame(data, config=config)
    if isinstance(frame, np.ndarray):
        out = Frame.from_array(frame)
        _check_size(out.size.width_px, out.size.height_px, config or PixelConfig(), "array")
        return out
    raise FrameError(f"cannot read a frame from {type(frame).__name__}")


def check_frame_size(frame_size: ScreenSize, tree_size: ScreenSize) -> int:
    """Compare a frame with the screen the hierarchy describes; return the rotation mismatch.

    Returns 0 when the tree's screen fits the frame 1:1 (equal, or a partial dump whose windows
    cover only part of the image), 1 when the two are transposed (landscape tree, portrait
    capture). Raises :class:`FrameSizeMismatchError` otherwise.
    """
    fw, fh = frame_size.width_px, frame_size.height_px
    tw, th = tree_size.width_px, tree_size.height_px
    if tw <= fw and th <= fh:
        return 0
    if tw <= fh and th <= fw and (tw, th) != (fw, fh):
        return 1
    raise FrameSizeMismatchError(
        f"frame is {fw}x{fh} px but the hierarchy's screen is {tw}x{th} px"
    )
