"""Frames: decode, validate and flag a screen image.

A :class:`Frame` holds the pixels as a ``uint8[H, W, 3]`` BGR array (OpenCV order), the size as
a :class:`~perception.types.ScreenSize` and, when known, the capture window in monotonic ns.
:func:`decode_frame` reads PNG, JPEG and raw ``screencap`` bytes (no PNG round trip); every
failure is a typed :class:`~perception.errors.FrameError` that says what it got. Black, uniform
(FLAG_SECURE), rotated and inset frames are *flagged* by :func:`frame_flags`, never refused.
"""

from __future__ import annotations

import logging
import os
import struct
from dataclasses import dataclass
from typing import Any, BinaryIO, TypeAlias

import cv2
import numpy as np
import numpy.typing as npt

from perception.config import PixelConfig, max_frame_bytes
from perception.errors import (
    FrameError,
    FrameSizeMismatchError,
    ImplausibleFrameSizeError,
    NotAnImageError,
    TruncatedFrameError,
)
from perception.screencap import (
    JPEG_MAGIC as JPEG_MAGIC,
    JPEG_SOF_MARKERS as JPEG_SOF_MARKERS,
    PNG_MAGIC as PNG_MAGIC,
    check_frame_side,
    decode_raw_screencap,
    jpeg_segments as _jpeg_segments,
    jpeg_size as _jpeg_size,
    parse_raw_header,
    png_size as _png_size,
)
from perception.types import ScreenSize

log = logging.getLogger(__name__)

U8: TypeAlias = npt.NDArray[Any]
"""A uint8 image (OpenCV's stubs type its results loosely, so this is not narrowed)."""

PNG_MAGIC_CRLF = b"\x89PNG\r\r\n\x1a\r\n"
"""The PNG signature after ``adb shell`` turned every LF into CRLF (a pty on Android < 7)."""


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
        cls,
        pixels: npt.ArrayLike,
        *,
        order: str = "bgr",
        start_ns: int | None = None,
        end_ns: int | None = None,
    ) -> Frame:
        """Wrap a uint8 array: ``[H, W]`` gray, ``[H, W, 3]`` or ``[H, W, 4]`` colour.

        ``order`` is the colour array's channel order: ``"bgr"`` (OpenCV's, and BGRA: what
        ``cv2.imread`` and mss give) or ``"rgb"`` (and RGBA: what PIL's ``np.asarray(image)``
        gives). Nothing in the pixels tells the two apart, so an RGB array passed as BGR is
        read with red and blue swapped (OCR mostly survives it; colour checks do not).
        """
        if order not in ("bgr", "rgb"):
            raise FrameError(f"frame array order must be 'bgr' or 'rgb', got {order!r}")
        arr = np.asarray(pixels)
        if arr.dtype != np.uint8:
            raise FrameError(f"frame array must be uint8, got {arr.dtype}")
        if arr.ndim in (2, 3) and 0 in arr.shape[:2]:
            # OpenCV's colour conversions raise an untyped cv2.error on an empty image.
            raise ImplausibleFrameSizeError(
                f"frame array of shape {arr.shape} holds no pixels: a screen has both sides "
                "above 0 px"
            )
        rgb = order == "rgb"
        if arr.ndim == 2:
            arr = cv2.cvtColor(arr, cv2.COLOR_GRAY2BGR)
        elif arr.ndim == 3 and arr.shape[2] == 4:
            arr = cv2.cvtColor(arr, cv2.COLOR_RGBA2BGR if rgb else cv2.COLOR_BGRA2BGR)
        elif arr.ndim == 3 and arr.shape[2] == 3:
            if rgb:
                arr = arr[:, :, ::-1]  # made contiguous below
        else:
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


FrameLike: TypeAlias = (
    "Frame | bytes | bytearray | memoryview | str | os.PathLike[str] | npt.NDArray[Any]"
)
"""What :func:`load_frame` accepts. A numpy array is BGR or BGRA (OpenCV's order); wrap an RGB
or RGBA one (PIL's) as ``Frame.from_array(arr, order="rgb")``."""

QUOTE_CHARS = 120
"""How much of a str an error message quotes (a base64 image passed as a path is 300 KB)."""
_B64_IMAGE_STARTS = ("iVBORw0KGgo", "/9j/", "data:image/")
"""How base64 PNG and JPEG files, and data URLs, begin."""


def _quote(text: str) -> str:
    if len(text) <= QUOTE_CHARS:
        return repr(text)
    return f"{text[:QUOTE_CHARS]!r}... ({len(text)} characters)"


def _base64_hint(text: str) -> str:
    """A hint when a text handed over as a frame is a base64 image, else ""."""
    if text.lstrip().startswith(_B64_IMAGE_STARTS):
        return (
            ": this is a base64-encoded image (pass the bytes base64.b64decode gives; strip a "
            "data URL's 'data:image/...;base64,' first)"
        )
    return ""


def _path_hint(text: str) -> str:
    """A hint when bytes handed over as a frame name a file rather than hold one, else ""."""
    text = text.strip()
    if not text or "\n" in text or len(text) > 4096 or not os.path.isfile(text):
        return ""
    return ": these bytes name a file; pass the path as a str or pathlib.Path to read it"


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


def _undo_crlf(data: bytes) -> bytes:
    """Undo ``adb shell``'s LF -> CRLF translation exactly (every CRLF in its output is one)."""
    return data.replace(b"\r\n", b"\n")


def _restore_crlf(data: bytes, config: PixelConfig) -> U8 | None:
    """Raw output that ``adb shell`` passed through a pty (Android < 7: every LF became
    CRLF), restored when that gives exactly its header's length; else None."""
    fixed = _undo_crlf(data)
    if len(fixed) == len(data):
        return None
    try:
        restored = parse_raw_header(fixed)
    except FrameError:
        return None
    if len(fixed) != restored.total_bytes:
        return None
    log.warning("raw screencap had every LF turned into CRLF (adb shell); restored")
    check_frame_side(restored.width_px, restored.height_px, config, "raw screencap")
    return decode_raw_screencap(fixed, restored)


def _decode_raw(data: bytes, config: PixelConfig) -> U8 | None:
    """Raw ``screencap`` output (no ``-p``, see :mod:`perception.screencap`); None if not raw.

    Output that ``adb shell`` passed through a pty is restored (:func:`_restore_crlf`).
    """
    try:
        header = parse_raw_header(data)
    except NotAnImageError:  # a header, but a length that matches neither header size
        pixels = _restore_crlf(data, config)
        if pixels is None:
            raise
        return pixels
    except FrameError:
        return None
    if len(data) > 16 + header.pixel_bytes:
        pixels = _restore_crlf(data, config)
        if pixels is not None:
            return pixels
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
        check_frame_side(header.width_px, header.height_px, config, "raw screencap")
    else:
        short, long_ = sorted((header.width_px, header.height_px))
        if short < config.min_side_px or long_ > config.max_side_px:
            return None  # short and implausible: not a screencap, rather than a truncated one
    return decode_raw_screencap(data, header)


PNG_IEND_CHUNK = b"\x00\x00\x00\x00IEND\xaeB`\x82"
"""The whole IEND chunk (length 0, type, CRC): the same 12 bytes in every complete PNG."""


def _check_png_complete(data: bytes) -> None:
    """Refuse a PNG without its IEND chunk. Bytes after it (a newline, a vendor's trailer)
    are left alone, as decoders do: only a cut file lacks the chunk, since its 12 bytes
    (CRC included) do not turn up inside compressed image data."""
    if data.rfind(PNG_IEND_CHUNK, 8) < 0:
        raise TruncatedFrameError(
            f"PNG of {len(data)} bytes stops before its IEND chunk (last bytes "
            f"{data[-8:].hex(' ')})"
        )


def _jpeg_scan_start(data: bytes) -> int:
    """Where the first scan's compressed data starts, past the markers before it; the length
    of ``data`` when the file stops before that.

    The segments before the scan (EXIF, whose thumbnail is a whole JPEG with its own end
    marker, ICC profiles, tables) are skipped by their lengths, so nothing in them is taken
    for the image's end. A marker where none can be (a corrupt header) gives 2: the end
    marker is looked for anywhere and the decoder judges the rest."""
    n = len(data)
    for marker, i in _jpeg_segments(data):
        if marker in (-1, 0xD9):  # a corrupt header, an end of image before any scan
            return 2
        if marker == 0xDA:
            return min(n, i + 2 + int(struct.unpack_from(">H", data, i + 2)[0]))
    return n


def _check_jpeg_complete(data: bytes) -> None:
    """Refuse a JPEG without an end marker (FFD9) after its image data; bytes after the
    marker (a newline, a vendor's trailer, a second image) are left alone. In compressed
    data every FF byte is followed by 00 or a restart marker, so the first FFD9 past the
    first scan's header is the image's own end."""
    if data.find(b"\xff\xd9", _jpeg_scan_start(data)) < 0:
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
        text = raw[:8192].decode("utf-8", "replace")
        hint = _base64_hint(text) or _path_hint(text)
        raise NotAnImageError(f"expected an image, got {_describe(raw)}{hint}")
    else:
        pixels = _decode_raw(raw, cfg)
        if pixels is None:
            raise NotAnImageError(f"not a PNG, JPEG or raw screencap: got {_describe(raw)}")
        return Frame.from_array(pixels, start_ns=start_ns, end_ns=end_ns)
    if declared is not None:
        # Before decoding: a huge image would be allocated in full first (a 20000 x 20000 PNG
        # of 400 KB took 8 s and 2.3 GB), and past OpenCV's pixel limit it raises cv2.error.
        check_frame_side(*declared, cfg, kind)
    buf = np.frombuffer(raw, dtype=np.uint8)
    try:
        pixels = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    except cv2.error as exc:
        raise NotAnImageError(
            f"{kind} that OpenCV refuses to decode ({exc}): {_describe(raw)}"
        ) from exc
    if pixels is None:
        raise NotAnImageError(f"{kind} header but OpenCV cannot decode it: {_describe(raw)}")
    check_frame_side(int(pixels.shape[1]), int(pixels.shape[0]), cfg, kind)
    return Frame.from_array(pixels, start_ns=start_ns, end_ns=end_ns)


def read_frame_file(
    source: str | os.PathLike[str] | BinaryIO, *, config: PixelConfig | None = None
) -> bytes:
    """A frame file's bytes (a path, or an open binary stream such as standard input), read
    to at most :func:`max_frame_bytes` so that an endless or huge input is refused with
    :class:`ImplausibleFrameSizeError` instead of filling memory; an unreadable file is a
    :class:`FrameError` naming it."""
    config = config or PixelConfig()
    limit = max_frame_bytes(config)
    if isinstance(source, str | os.PathLike):
        path = os.fspath(source)
        name = path if isinstance(path, str) else os.fsdecode(path)
        try:
            with open(path, "rb") as f:
                data = f.read(limit + 1)
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            hint = _base64_hint(name) if isinstance(source, str) else ""
            raise FrameError(f"cannot read frame file {_quote(name)}: {reason}{hint}") from exc
    else:
        name = str(getattr(source, "name", "the frame stream"))
        try:
            data = source.read(limit + 1)
        except OSError as exc:
            raise FrameError(f"cannot read {name}: {exc.strerror or exc}") from exc
    if len(data) > limit:
        raise ImplausibleFrameSizeError(
            f"frame {_quote(name)} holds more than {limit} bytes, more than any capture of "
            f"a screen side up to {config.max_side_px} px takes: not a "
            "screenshot"
        )
    return data


def load_frame(frame: FrameLike, *, config: PixelConfig | None = None) -> Frame:
    """Accept a :class:`Frame`, encoded or raw bytes, a file path (a str or any
    ``os.PathLike``) or a numpy array: ``[H, W]`` gray, ``[H, W, 3]`` BGR or ``[H, W, 4]``
    BGRA, uint8 (OpenCV's order; for RGB or RGBA pass ``Frame.from_array(arr, order="rgb")``).
    """
    if isinstance(frame, Frame):
        return frame
    if isinstance(frame, bytes | bytearray | memoryview):
        return decode_frame(frame, config=config)
    if isinstance(frame, str | os.PathLike):
        return decode_frame(read_frame_file(frame, config=config), config=config)
    if isinstance(frame, np.ndarray):
        if frame.ndim in (2, 3) and 0 not in frame.shape[:2]:
            # Before the colour conversion: a grey array of 400 MB cost 900 MB more to convert
            # only to be refused then.
            limits = config or PixelConfig()
            check_frame_side(int(frame.shape[1]), int(frame.shape[0]), limits, "array")
        return Frame.from_array(frame)
    raise FrameError(
        f"cannot read a frame from {type(frame).__name__}: pass bytes, a path, a numpy array "
        "or a Frame"
    )


def check_frame_size(
    frame_size: ScreenSize, tree_size: ScreenSize, *, screen: ScreenSize | None = None
) -> int:
    """Compare a frame with the screen the hierarchy describes; return the rotation mismatch.

    ``tree_size`` is the extent of the dump's windows: the frame must hold it, 1:1 (equal, or
    a partial dump whose windows cover only part of the image). ``screen`` is the tree's own
    screen when it is known rather than estimated (its size as given, or the extent of windows
    that start at the corner): a frame larger than it on both sides, by more than a system
    bar (1/16 of a side, at least 8 px), is another scale's (a screenshot taken at twice the
    size, another device's) and its pixels would not line up with the tree's boxes. One side
    larger is the usual case: a dump without the status or navigation bar, a window that holds
    the top or left part of the screen. Returns 0 when the two fit, 1 when they fit transposed
    (landscape tree, portrait capture). Raises :class:`FrameSizeMismatchError` otherwise.
    """
    fw, fh = frame_size.width_px, frame_size.height_px
    tw, th = tree_size.width_px, tree_size.height_px
    if tw <= fw and th <= fh:
        turned = 0
    elif tw <= fh and th <= fw and (tw, th) != (fw, fh):
        turned = 1
    else:
        why = ""
        if fw < tw and fh < th:
            why = (
                f": smaller on both sides, so a screenshot scaled down ({fw / tw:.2f} of the "
                "width) before it reached us, or another device's; pass the capture at the "
                "device's resolution (screencap's), not a resized copy"
            )
        raise FrameSizeMismatchError(
            f"frame is {fw}x{fh} px but the hierarchy's screen is {tw}x{th} px{why}"
        )
    if screen is not None and screen.width_px > 0 and screen.height_px > 0:
        sw, sh = (
            (screen.width_px, screen.height_px)
            if not turned
            else (screen.height_px, screen.width_px)
        )
        if fw > sw + _bar_px(sw) and fh > sh + _bar_px(sh):
            raise FrameSizeMismatchError(
                f"frame is {fw}x{fh} px but the hierarchy's screen is "
                f"{screen.width_px}x{screen.height_px} px: larger on both sides, so a "
                "screenshot at another scale or of another device (the tree's boxes would "
                "not line up with its pixels)"
            )
    return turned


def _bar_px(side_px: int) -> int:
    """How much larger than the tree's screen a frame's side may be: a system bar the dump
    leaves out (1/16 of the side, at least 8 px; as :func:`perception.tree.clean` allows)."""
    return max(8, side_px // 16)
