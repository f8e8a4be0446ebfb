"""Capture records and the source protocols every tree/frame producer speaks.

A *source* hands out timestamped captures of one phone screen: the uiautomator hierarchy
(:class:`TreeCapture`) and the screen image (:class:`FrameCapture`), each stamped with when its
capture started and ended on the one clock of the process (``time.monotonic_ns()``) and with the
action *epoch* it belongs to. Live devices (:mod:`perception.sources.device`) and recordings
(:mod:`perception.sources.replay`) implement the same protocols, so the engine, the bench, export
and the tests never know which one they hold.

Raw ``screencap`` output (no ``-p``) is read and written by :mod:`perception.screencap`; its
names are re-exported here for the sources that use them.
"""

from __future__ import annotations

import enum
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from perception.screencap import (
    RAW_COLORSPACE_SRGB as RAW_COLORSPACE_SRGB,
    RAW_FORMAT_RGBA_8888 as RAW_FORMAT_RGBA_8888,
    RawHeader as RawHeader,
    decode_raw_screencap as decode_raw_screencap,
    encode_raw_screencap as encode_raw_screencap,
    parse_raw_header as parse_raw_header,
)
from perception.types import BoxPx, PointPx, ScreenSize

COMPONENT = re.compile(r"[A-Za-z][\w.]*/[\w.$]+")
"""An activity's ``package/class`` (the class may be short: ``com.x/.Main``), as the launcher
query prints it and ``am start -n`` takes it."""
PACKAGE = re.compile(r"[A-Za-z]\w*(?:\.\w+)+")
"""A package name (``com.android.settings``): at least two dot-separated words."""


def package_of(component: str) -> str:
    """The package of a ``package/class`` component (all of a string without ``/``)."""
    return component.split("/", 1)[0]


_SH_BARE = re.compile(r"[\w.,:/@%+=-]+")


def sh_quote(arg: str | int) -> str:
    """``arg`` as one word of Android's ``sh``: bare when it needs no quoting, else in single
    quotes (what the device source sends, and what the virtual phone's ``export -p`` lists)."""
    text = str(arg)
    if _SH_BARE.fullmatch(text):
        return text
    return "'" + text.replace("'", "'\\''") + "'"


ADB_KEYBOARD_IME = "com.android.adbkeyboard/.AdbIME"
"""ADB Keyboard (https://github.com/senzhk/ADBKeyBoard, also on F-Droid): an input method that
types what an ``am broadcast`` carries, the one way over adb to type text that ``input text``
cannot (anything but printable ASCII: accents, Chinese, emoji). The live device source uses
it, the virtual phone emulates it."""


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
    keyboard_px: BoxPx | None = None
    """The on-screen keyboard's box as the window manager reported it right after the dump
    (the input method's insets, Android 11+, else its window's touchable region: see
    :meth:`perception.sources.device.DeviceSource.keyboard`), None when none was up or the
    phone does not say. Most dumps hold the app's window only, not the keyboard's: without this the
    app's elements under the keyboard are offered, and a tap on one types a key."""

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


class EpochCounter:
    """The serial and the action epoch every source keeps: ``new_epoch()`` after each action.

    Subclasses set ``_serial``, ``_epoch`` and ``_lock`` in their constructor.
    """

    _serial: str
    _epoch: int
    _lock: threading.Lock

    @property
    def serial(self) -> str:
        return self._serial

    @property
    def epoch(self) -> int:
        return self._epoch

    def new_epoch(self) -> int:
        with self._lock:
            self._epoch += 1
            return self._epoch


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
