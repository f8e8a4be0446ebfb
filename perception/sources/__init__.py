"""Where screens come from: live phones over adb, recordings, and the records they produce.

``perception.sources.device`` (live phones) is imported lazily: it is the only module of the
package that imports adbutils.
"""

from perception.sources.base import (
    FrameCapture,
    FrameFormat,
    FrameSource,
    Insets,
    ScreenFacts,
    ScreenSource,
    TreeCapture,
    TreeSource,
)
from perception.sources.loop import FrameLoop
from perception.sources.record import RecordingWriter
from perception.sources.recording import (
    ActionKind,
    RecordedAction,
    RecordedStep,
    Recording,
    read_recording,
)
from perception.sources.replay import Navigator, ReplaySource, Timing, iter_steps

__all__ = [
    "ActionKind",
    "FrameCapture",
    "FrameFormat",
    "FrameLoop",
    "FrameSource",
    "Insets",
    "Navigator",
    "RecordedAction",
    "RecordedStep",
    "Recording",
    "RecordingWriter",
    "ReplaySource",
    "ScreenFacts",
    "ScreenSource",
    "Timing",
    "TreeCapture",
    "TreeSource",
    "iter_steps",
    "read_recording",
]
