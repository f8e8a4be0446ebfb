"""Every error the package raises derives from :class:`PerceptionError`.

The hierarchy is by what went wrong, so callers can react without parsing messages:

- :class:`InputError`: bad bytes handed to us (a dump, a frame).
  - :class:`TreeError` / :class:`TreeParseError`: the dump is not a usable hierarchy.
    - :class:`DumpFailedError`: the device tool reported a failure instead of a dump
      (``ERROR: could not get idle state.``, ``null root node``, ``Killed``, empty output).
    - :class:`UnsafeXmlError`: DOCTYPE/ENTITY declarations, oversized input, absurd nesting.
    - :class:`ScreenMismatchError`: the screen given with the dump cannot hold its windows.
  - :class:`FrameError`: the bytes are not a usable screen image.
- :class:`UnknownCandidateError`: an id no candidate of the observation has (also a
  ``KeyError``).
- :class:`DeviceError`: a live or virtual phone misbehaved; carries ``serial``.
- :class:`ConfigError`: a setting or environment variable has an unusable value.
"""

from __future__ import annotations

from collections.abc import Sequence


class PerceptionError(Exception):
    """Base class of every error raised by ``perception``."""


class ConfigError(PerceptionError, ValueError):
    """A configuration value or environment variable is invalid."""


class InputError(PerceptionError, ValueError):
    """Input bytes (a dump, a frame, a recording) cannot be used."""


class TreeError(InputError):
    """A hierarchy dump cannot be turned into a tree."""


class TreeParseError(TreeError):
    """The dump is not well-formed uiautomator XML (after one repair attempt).

    ``offset`` is the byte offset where the problem was found, when known.
    """

    def __init__(self, message: str, *, offset: int | None = None) -> None:
        super().__init__(message if offset is None else f"{message} (at byte {offset})")
        self.offset = offset


class DumpFailedError(TreeError):
    """The dump tool reported a failure instead of a hierarchy (never an empty screen)."""


class UnsafeXmlError(TreeError):
    """The input uses XML features we refuse (DOCTYPE, ENTITY) or exceeds size/depth limits."""


class ScreenMismatchError(TreeError):
    """The screen size given with a dump cannot hold the dump's windows (another device, a
    portrait size for a landscape dump, a scaled size)."""


class FrameError(InputError):
    """A screen frame cannot be decoded or does not fit the screen it claims to show."""


class UnknownCandidateError(PerceptionError, KeyError):
    """No candidate of the observation has this id (a model that made one up, or an id from
    another observation's prompt). Also a ``KeyError``, as a lookup miss is."""

    def __init__(
        self, candidate_id: object, shown: Sequence[int] = (), *, hidden: str | None = None
    ) -> None:
        super().__init__(candidate_id)
        self.candidate_id = candidate_id
        self.shown = tuple(shown)
        """The ids the observation's prompt lists."""
        self.hidden = hidden
        """Why the prompt does not list this id (``occluded``, ``static text``, ``unlisted``),
        when a candidate has it; None for an id no candidate has."""

    def __str__(self) -> str:
        # KeyError's own str is the repr of its key; say what went wrong instead.
        ids = ", ".join(map(str, self.shown[:40])) + (" ..." if len(self.shown) > 40 else "")
        what = (
            f"candidate {self.candidate_id!r} is not in the prompt ({self.hidden})"
            if self.hidden
            else f"no candidate has id {self.candidate_id!r}"
        )
        return f"{what}; the prompt's ids: {ids or 'none'}"


class DeviceError(PerceptionError):
    """A device (live or virtual) failed; ``serial`` says which one."""

    def __init__(self, message: str, *, serial: str | None = None) -> None:
        super().__init__(f"[{serial}] {message}" if serial else message)
        self.serial = serial


class InputMethodError(DeviceError):
    """The phone cannot type this text: ``input text`` types printable ASCII only, and ADB
    Keyboard (the input method that types any text) is not installed or not the current one."""


class AppStartError(DeviceError):
    """The phone did not start the app asked for (no such activity, not exported, disabled)."""


class DeviceOfflineError(DeviceError):
    """The device is offline or not found."""


class DeviceUnauthorizedError(DeviceError):
    """The device has not authorised this host (accept the RSA prompt on the phone)."""


class DeviceDisconnectedError(DeviceError):
    """The connection dropped during a transfer."""


class DeviceTimeoutError(DeviceError, TimeoutError):
    """A device command did not finish within its timeout."""


DEVICE_GONE = (DeviceOfflineError, DeviceUnauthorizedError, DeviceDisconnectedError)
"""The device errors that say the phone itself is gone (not one command that failed): what a
caller that treats a failed command as a partial answer still lets through."""


class IdleStateError(DeviceError):
    """``uiautomator dump`` kept failing with "could not get idle state" after retries."""


class FastpathUnavailableError(PerceptionError, ImportError):
    """``PERCEPTION_FASTPATH=cython`` was requested but the extension is not built."""


class TruncatedFrameError(FrameError):
    """The image stops early (a PNG without IEND, a JPEG without EOI, short raw pixels)."""


class NotAnImageError(FrameError):
    """The bytes are not an image at all: text such as an adb error message, or garbage."""


class ImplausibleFrameSizeError(FrameError):
    """The decoded size cannot be a phone screen (too small, too large, absurd aspect)."""


class FrameSizeMismatchError(FrameError):
    """The frame's size does not match the screen the hierarchy describes."""


class CaptureTimeError(InputError):
    """Capture timestamps or epochs are unusable (end before start, an epoch that went back)."""


class RecordingError(InputError):
    """A recording folder (ours or the corpus layout) is missing files or holds bad records."""


class OcrError(PerceptionError, RuntimeError):
    """The OCR engine could not be loaded, or failed on an input."""
