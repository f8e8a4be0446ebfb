"""perception: turn an Android screen into one trustworthy list of tappable candidates."""

import os
import re
import sys
from typing import TYPE_CHECKING, Any

from perception import fastpath as _fastpath
from perception.engine import Engine
from perception.errors import (
    AppStartError,
    CaptureTimeError,
    ConfigError,
    DeviceDisconnectedError,
    DeviceError,
    DeviceOfflineError,
    DeviceTimeoutError,
    DeviceUnauthorizedError,
    DumpFailedError,
    FastpathUnavailableError,
    FrameError,
    FrameSizeMismatchError,
    IdleStateError,
    ImplausibleFrameSizeError,
    InputError,
    InputMethodError,
    NotAnImageError,
    OcrError,
    PerceptionError,
    RecordingError,
    ScreenMismatchError,
    TreeError,
    TreeParseError,
    TruncatedFrameError,
    UnknownCandidateError,
    UnsafeXmlError,
)
from perception.fastpath import IMPLEMENTATION
from perception.fusion.candidates import Candidate
from perception.pipeline import Observation, Perceiver, VisionBox, perceive
from perception.pixel import Frame, PixelReader, Pixels, read_pixels
from perception.sources import ReplaySource, read_recording
from perception.tree import Tree, read_tree
from perception.types import BoxPm, BoxPx, ElementFlag, PointPm, PointPx, ScreenSize

if TYPE_CHECKING:
    from perception.debug import draw_marks

__version__ = "0.1.0"


def _run_as_our_tool() -> bool:
    """Whether the program is one of this distribution's console scripts (``perception``,
    ``perception-agent``, ``perception-bench`` ...): they import this package before their
    ``main`` runs, so an error raised here would be a traceback even for ``--help``; they
    report it themselves instead, as one line (``perception.fastpath.check``)."""
    argv = getattr(sys, "argv", None)
    if not argv or not argv[0]:
        return False
    # pip's launchers: ``perception`` on POSIX, ``perception.exe`` or ``perception-script.py``
    name = re.sub(r"(-script\.pyw?|\.exe)$", "", os.path.basename(argv[0]), flags=re.IGNORECASE)
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        scripts = distribution("perception").entry_points
    except PackageNotFoundError:
        return False
    return any(ep.group == "console_scripts" and ep.name == name for ep in scripts)


try:
    _fastpath.check()  # a bad PERCEPTION_FASTPATH is the importer's error, typed
except PerceptionError:
    if not _run_as_our_tool():
        raise

__all__ = [
    "IMPLEMENTATION",
    "Observation",
    "Candidate",
    "Perceiver",
    "VisionBox",
    "perceive",
    "draw_marks",
    "Engine",
    "ReplaySource",
    "read_recording",
    "Frame",
    "PixelReader",
    "Pixels",
    "read_pixels",
    "read_tree",
    "Tree",
    "BoxPm",
    "BoxPx",
    "ConfigError",
    "DeviceDisconnectedError",
    "DeviceError",
    "DeviceOfflineError",
    "DeviceTimeoutError",
    "DeviceUnauthorizedError",
    "DumpFailedError",
    "ElementFlag",
    "FastpathUnavailableError",
    "FrameError",
    "IdleStateError",
    "InputError",
    "InputMethodError",
    "AppStartError",
    "PerceptionError",
    "PointPm",
    "PointPx",
    "ScreenSize",
    "TreeError",
    "TreeParseError",
    "UnsafeXmlError",
    "CaptureTimeError",
    "FrameSizeMismatchError",
    "ImplausibleFrameSizeError",
    "NotAnImageError",
    "OcrError",
    "RecordingError",
    "ScreenMismatchError",
    "TruncatedFrameError",
    "UnknownCandidateError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    """``perception.draw_marks`` loads :mod:`perception.debug` on first use: ``import
    perception`` stays without the drawing module (an agent that never draws pays nothing)."""
    if name == "draw_marks":
        from perception.debug import draw_marks

        return draw_marks
    raise AttributeError(f"module 'perception' has no attribute {name!r}")
