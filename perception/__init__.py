"""perception: turn an Android screen into one trustworthy list of tappable candidates."""

from typing import TYPE_CHECKING, Any

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
