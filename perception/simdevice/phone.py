"""The simulated phone behind the adb transport: a recording, a tiny shell and fault switches.

Commands understood (enough for adbutils, uiautomator2-style tools and our device source):
``uiautomator dump [--compressed] [PATH|/dev/tty]``, ``screencap [-p] [PATH]``, ``wm size``,
``wm density`` (``reset`` is accepted; setting a size or density is refused, exit 255: the
recording's frames have one), ``wm dismiss-keyguard``, ``dumpsys window [policy|...]``,
``dumpsys power``, ``dumpsys display``, ``dumpsys activity [top|...]``, ``dumpsys package
[PKG]``,
``getprop [NAME]``, ``input [SOURCE] tap X Y | swipe X1 Y1 X2 Y2 [MS] | text T | keyevent K..``,
``am start ...``, ``am broadcast -a ACTION [--es KEY VALUE ..]``, ``monkey -p PKG ...``,
``pm list packages [-f|-s|-3|..] [FILTER]``, ``pm path PKG``, ``cmd package query-activities
...`` (``pm`` and ``cmd package`` alike; Android's other ``pm`` verbs say they are not
emulated, exit 255), ``logcat`` (an empty log: ``-c`` and ``-d`` exit 0 at once, a stream
stays open and quiet until the client closes it),
``ime list [-a] [-s] | enable ID | disable ID | set ID``, ``settings get|put NS KEY [VALUE]``,
``cat``, ``rm``, ``ls``, ``echo``, ``sleep``, ``true``, ``false``. The shell reads a line as
Android's ``sh`` (mksh) does: ``'...'``, ``"..."`` and ``\\`` quoting; ``$?``, ``$NAME`` and
``${NAME}`` outside single quotes (adb shell's environment, plus what ``NAME=value``, ``export
NAME=value`` and ``unset NAME`` change, until the line ends; an unquoted value splits at
blanks); ``exec CMD`` (nothing after it runs); ``;``, ``&`` (run in order),
``&&``, ``||``, ``|`` (``grep``/``head``) and newlines only where unquoted; ``[N]>``, ``>>``,
``N>&M``, ``<`` redirects; ``#`` comments. What it does not emulate (``$(...)``, backticks,
``$((...))``, subshells, here-documents) is refused with exit 2 and runs nothing, rather than
passed on as text a real phone would run; so are ``grep`` and ``head`` options other than
``grep [-F] PATTERN`` and ``head [-n N|-N]`` and their file operands (exit 2, a line on stderr).
Unknown commands answer like ``sh``: ``X: not found``, exit 127. ``input text`` types its first
argument only, as Android 11's does.

Apps (see :meth:`Phone.launcher_components` and :meth:`Phone.installed_packages`): every
package the recording shows or starts is installed (``pm list packages``, ``pm path``,
``dumpsys package PKG``, whose version and install times the recording cannot know:
:meth:`Phone._package_dump`), with the system's own (``android``, Settings, Chrome, the
keyboard); ``dumpsys package`` of any other prints Android's ``Unable to find package: PKG``.
The launcher shows the apps the recording starts by intent, one activity of each other app it
shows (the first seen: :func:`~perception.sources.replay.shown_apps`; not home screens or
system dialogs), Settings (:data:`SETTINGS`) and Chrome (:data:`CHROME`); ``cmd package
query-activities [--brief|--components] -a android.intent.action.MAIN -c
android.intent.category.LAUNCHER`` lists them as a phone does, any other query finds none.
``am start`` of an activity the phone knows (the launcher's, or one a step shows: ``-n
COMPONENT``, a bare ``pkg/cls`` or ``-p PKG``), and ``monkey -p PKG`` of an installed app,
moves along the current step's recorded intent when that intent starts the same package, or
along the step's other recorded action when that is how the recording went into the app (a
tap on its icon: the next step shows it; :meth:`Navigator.start`); otherwise the screen
stays: an app in front prints a real phone's "Activity not started" warning, another is
accepted with nothing to show for it. An activity the phone does not know prints a real
phone's error (``Error: Activity class {pkg/cls} does not exist.`` on stderr, exit 0) and
moves nothing.

Input methods (see :class:`AdbKeyboard`): the phone has Android's keyboard
(:data:`LATIN_IME`) and, if asked, ADB Keyboard (:data:`ADB_KEYBOARD_IME`, installed only or
also enabled and current). ``settings get secure default_input_method`` names the current one.
While ADB Keyboard is current, ``am broadcast -a ADB_INPUT_B64 --es msg BASE64`` (and
``ADB_INPUT_TEXT --es msg TEXT``) types any text, as ``input text`` does; otherwise the
broadcast completes and types nothing, as on a real phone (its receiver lives in the IME).

Control command (the simulator's own, not Android): ``simctl fault NAME=VALUE ...``,
``simctl clear``, ``simctl state``, ``simctl goto POSITION``. Faults (see :class:`Faults`):
``slow_ms=N`` (every command waits N ms), ``dump_slow_ms=N`` (only dumps), ``dumpsys_slow_ms=N``
(only ``dumpsys``), ``idle=N|always``
(the next N dumps print ``ERROR: could not get idle state.``), ``drop=screencap|dump|any``
(the next such transfer drops the TCP connection half-way), ``secure=1`` (black frames, as
FLAG_SECURE windows give), ``unauthorized=1`` (new connections are refused authorisation),
``multi_display=1`` (``screencap`` without ``-d`` first warns on stderr that several displays
exist, as on foldables and Android 12+ emulators; ``exec:`` merges it into the image bytes),
``capture_fail=1`` (``screencap`` prints ``Screen capture failed`` and no image).

Files (``uiautomator dump PATH``, ``screencap PATH``, redirects, ``adb push``) live in memory,
at most :data:`STORAGE_BYTES` in all (``Phone(storage_bytes=...)``): past that a write fails
with ``No space left on device``, as on a phone whose disk is full. A recording's frame that is
not an image fails ``screencap`` as a phone's failed capture does (``Screen capture failed``),
and a dump without a ``<hierarchy>`` element fails ``uiautomator dump`` with the null root
message; the server's log names the file.

Power (phone state, kept with the faults): ``asleep=1`` is a screen that timed out while a model
was thinking: ``dumpsys power`` says ``mWakefulness=Asleep`` and ``Display Power: state=OFF``,
``screencap`` gives black frames (as ``secure=1``), ``uiautomator dump`` still gives the current
step (a real phone dumps the last window), and input does nothing (recorded as ``ignored
(screen off)``) until ``KEYCODE_WAKEUP`` (224) or ``KEYCODE_POWER`` (26); ``KEYCODE_SLEEP``
(223) and ``KEYCODE_POWER`` put it to sleep. ``locked=1`` is a swipe lock screen:
``dumpsys window`` shows the keyguard, input does nothing (``ignored (locked)``) until ``wm
dismiss-keyguard``; with ``pin=1`` it asks for a PIN (``secure=true``) and stays. The two
are independent: waking does not lock, sleeping does not lock.

The on-screen keyboard (see :meth:`Phone.keyboard_box`): a step recorded with a ``keyboard`` box
has it up; with ``keyboard=1`` (off by default) it is also up whenever the step's dump holds a
focused text field, as a real phone shows it, over the bottom :data:`KEYBOARD_SHARE` of the
screen. The dump does not hold it (as most real dumps do not); ``dumpsys window [displays]``
says where it is (an input method ``InsetsSource`` line, Android 13's form). A tap or a swipe
starting inside it does not reach the app (``ignored (keyboard)``); ``KEYCODE_BACK`` closes it
(``keyboard closed``) and nothing else, as a real phone's first BACK does: the step stays, and
the keyboard stays closed until the step changes. ``simctl state`` says ``kbd=[l,t][r,b]`` while
it is up, else ``kbd=-``. ``android10=1`` answers as a phone before Android 11 does, which lists
no ``InsetsSource``: its keyboard shows in ``dumpsys window InputMethod`` alone.
``anr=1`` puts Android's "isn't responding" dialog over the app (a window of the ``android``
package with ``aerr_close`` and ``aerr_wait``, drawn in the frames too): input reaches only its
buttons, and either closes it. :attr:`Phone.commands` keeps the last shell command lines run.
"""

from __future__ import annotations

import base64
import enum
import logging
import re
import threading
import time
import zlib
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from xml.sax.saxutils import escape

import cv2
import numpy as np
import numpy.typing as npt

from perception.config import PixelConfig
from perception.errors import (
    ConfigError,
    ImplausibleFrameSizeError,
    PerceptionError,
    RecordingError,
)
from perception.screencap import check_frame_side, declared_size
from perception.sources.base import (
    ADB_KEYBOARD_IME,
    PACKAGE,
    encode_raw_screencap,
    package_of,
    sh_quote,
)
from perception.sources.recording import RecordedStep, Recording, normalise_key
from perception.sources.replay import (
    INTENT_EXTRAS,
    INTENT_VALUE_OPTIONS,
    START_VALUE_OPTIONS,
    Move,
    Navigator,
    focus_of,
    full_component,
    intent_target,
    recorded_components,
    short_component,
    shown_apps,
)
from perception.types import BoxPx, PointPx, ScreenSize

log = logging.getLogger(__name__)

IDLE_ERROR = b"ERROR: could not get idle state.\n"
MULTI_DISPLAY_WARNING = (
    b"[Warning] Multiple displays were found, but no display id was specified! Defaulting to "
    b"the first display found, however this default is not guaranteed to be consistent across "
    b"captures. A display id should be specified.\n"
    b"A display ID can be specified with the [-d display-id] option.\n"
    b'See "dumpsys SurfaceFlinger --display-id" for valid display IDs.\n'
)
CAPTURE_FAILED = b"Screen capture failed: -1\n"
NULL_ROOT_ERROR = b"ERROR: null root node returned by UiTestAutomationBridge.\n"
"""What ``uiautomator dump`` prints when it gets no window content (here: a recorded dump
that is no dump)."""
NO_SPACE = "No space left on device"
STORAGE_BYTES = 128 * 1024 * 1024
"""The in-memory file store's size: dumps, screenshots, redirects and pushes beyond it fail
with :data:`NO_SPACE` (a client cannot grow the simulator's memory without bound)."""
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_HIERARCHY_TAGS = tuple("<hierarchy".encode(enc) for enc in ("utf-8", "utf-16-le", "utf-16-be"))
DEFAULT_DUMP_PATH = "/sdcard/window_dump.xml"
MAX_SLEEP_S = 5.0
LATIN_IME = "com.android.inputmethod.latin/.LatinIME"
"""Android's own keyboard: installed, enabled and current on every phone."""
_ADB_KEYBOARD_PACKAGE = package_of(ADB_KEYBOARD_IME)
_SYSTEM_IMES = frozenset({LATIN_IME})
_FLAG_RECEIVER_FOREGROUND = 0x400000
"""The flag ``am broadcast`` adds to every intent it sends."""
_USER = "user #0"
_POWER_KEY_CODES = {"223": "SLEEP", "224": "WAKEUP"}
"""Key codes :func:`normalise_key` leaves as numbers (it knows 26, ``POWER``)."""
KEYBOARD_SHARE = 0.4
"""The share of the screen's height the ``keyboard=1`` keyboard covers, from the bottom edge
(a phone keyboard with its suggestion strip, in portrait and landscape alike)."""
_NODE_TAG = re.compile(rb"<node\b[^>]*>")
_FOCUSED = re.compile(rb'\sfocused="true"')
_TEXT_FIELD_CLASS = re.compile(rb'\sclass="[^"]*(?:EditText|AutoCompleteTextView)[^"]*"')
"""A text field's class: EditText and its subclasses (AutoCompleteTextView is one)."""
COMMAND_LOG_SIZE = 1000
SETTINGS = "com.android.settings/.Settings"
CHROME = "com.android.chrome/com.google.android.apps.chrome.Main"
"""Apps every phone's launcher shows besides the recording's (as the phone prints them)."""
_ACTION_MAIN = "android.intent.action.MAIN"
_CATEGORY_LAUNCHER = "android.intent.category.LAUNCHER"
_RESOLVE_LINE = "priority=0 preferredOrder=0 match=0x108000 specificIndex=-1 isDefault=false"
"""What ``query-activities --brief`` prints above each launcher activity's component."""
_MONKEY_ABORTED = -4 & 0xFF
"""monkey's exit status when no activity of the package can run (``System.exit(-4)``)."""


@enum.unique
class AdbKeyboard(enum.StrEnum):
    """Whether the phone has ADB Keyboard: ``absent``, ``installed`` (listed by
    ``ime list -a -s`` but not enabled: ``ime enable`` and ``ime set`` make it current) or
    ``active`` (installed, enabled and the current input method)."""

    ABSENT = "absent"
    INSTALLED = "installed"
    ACTIVE = "active"


def _count(name: str, value: str, alternatives: str = "") -> int:
    """A fault's count or duration: a whole number, 0 or more (ValueError naming the fault;
    a negative one is refused, not clamped to 0)."""
    text = value.strip()
    if not (text.isascii() and text.isdigit()):
        extra = f" {alternatives}" if alternatives else ""
        raise ValueError(f"{name}={value!r}: expected a whole number >= 0{extra}")
    return int(text)


@dataclass(slots=True)
class Faults:
    """Mutable fault switches, shared by every connection of one simulated phone."""

    slow_ms: int = 0
    dump_slow_ms: int = 0
    """Extra delay of ``uiautomator dump`` only (a dump stuck on an animation)."""
    dumpsys_slow_ms: int = 0
    """Extra delay of ``dumpsys`` only (a window manager busy or locked up)."""
    idle_failures: int = 0
    """Dumps left to fail with the idle-state error; -1 means always."""
    drop: str = ""
    """``screencap``, ``dump`` or ``any``: the next such transfer drops the connection."""
    secure: bool = False
    unauthorized: bool = False
    multi_display: bool = False
    """``screencap`` without ``-d`` warns on stderr before the image (several displays)."""
    capture_fail: bool = False
    """``screencap`` fails with a message and no image."""
    keyboard: bool = False
    """The on-screen keyboard comes up on a focused text field (see :meth:`Phone.keyboard_box`;
    off: only steps recorded with a keyboard have one)."""
    anr: bool = False
    """Android's "isn't responding" dialog is up over the app (see :meth:`Phone.anr_buttons`):
    in the dump as a window of its own, drawn in the frames; input reaches only its buttons."""
    android10: bool = False
    """The phone answers as before Android 11: ``dumpsys window`` lists no ``InsetsSource``
    lines (``mStableInsets`` instead), so its keyboard shows only in ``dumpsys window
    InputMethod``'s window block."""
    asleep: bool = False
    """The screen is off (timed out): black frames, input ignored until a wake key."""
    locked: bool = False
    """The lock screen is up (a swipe lock): input ignored until ``wm dismiss-keyguard``."""
    pin: bool = False
    """The lock screen asks for a PIN (``secure=true``): ``wm dismiss-keyguard`` leaves it."""

    def apply(self, name: str, value: str) -> None:
        """Set one fault from ``simctl fault NAME=VALUE`` (ValueError for an unknown one)."""
        if name == "slow_ms":
            self.slow_ms = _count(name, value)
        elif name == "dump_slow_ms":
            self.dump_slow_ms = _count(name, value)
        elif name == "dumpsys_slow_ms":
            self.dumpsys_slow_ms = _count(name, value)
        elif name == "idle":
            self.idle_failures = -1 if value == "always" else _count(name, value, "or 'always'")
        elif name == "drop":
            if value not in {"", "screencap", "dump", "any"}:
                raise ValueError(f"drop={value!r}: expected screencap, dump or any")
            self.drop = value
        elif name in _SWITCHES:
            setattr(self, name, value.lower() in {"1", "true", "yes", "on"})
        else:
            raise ValueError(f"unknown fault {name!r}")

    def describe(self) -> str:
        return (
            f"slow_ms={self.slow_ms} dump_slow_ms={self.dump_slow_ms} "
            f"dumpsys_slow_ms={self.dumpsys_slow_ms} idle={self.idle_failures} "
            f"drop={self.drop or '-'} "
            f"secure={int(self.secure)} unauthorized={int(self.unauthorized)} "
            f"multi_display={int(self.multi_display)} capture_fail={int(self.capture_fail)} "
            f"keyboard={int(self.keyboard)} android10={int(self.android10)} anr={int(self.anr)} "
            f"asleep={int(self.asleep)} locked={int(self.locked)} pin={int(self.pin)}"
        )

    @property
    def black(self) -> bool:
        """``screencap`` gives an all-black frame: a FLAG_SECURE window or a screen that is off."""
        return self.secure or self.asleep

    def input_blocked(self) -> str:
        """Why input does nothing now (an off screen takes no touch; a lock screen takes it),
        or ``""`` when it reaches the app."""
        if self.asleep:
            return "ignored (screen off)"
        if self.locked:
            return "ignored (locked)"
        return ""


_SWITCHES = frozenset(
    {
        "secure", "unauthorized", "multi_display", "capture_fail", "keyboard", "android10", "anr",
        "asleep", "locked", "pin",
    }
)
"""The faults that are on or off (``1``, ``true``, ``yes`` or ``on`` is on)."""


@dataclass(slots=True)
class Result:
    stdout: bytes = b""
    stderr: bytes = b""
    code: int = 0
    drop_after: int | None = None
    """Drop the connection after this many output bytes (the ``drop`` fault)."""
    stderr_first: bool = False
    """stderr was written before stdout (their order where a stream merges them)."""
    hold: bool = False
    """The command does not end by itself (a streaming ``logcat``): the stream stays open,
    with nothing more on it, until the client closes it (or the phone stops)."""


class NoSpaceError(Exception):
    """A write would take the file store past its capacity (the phone's disk is full)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path}: {NO_SPACE}")
        self.path = path


@dataclass(slots=True)
class _Files:
    capacity: int = STORAGE_BYTES
    data: dict[str, bytes] = field(default_factory=dict)
    mtime: dict[str, int] = field(default_factory=dict)
    used: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def room(self, path: str) -> int:
        """Bytes a write to ``path`` may hold (what it replaces counts as free)."""
        return self.capacity - self.used + len(self.data.get(path, b""))

    def write(self, path: str, content: bytes) -> None:
        """Store ``content`` at ``path``; :class:`NoSpaceError` (nothing changes) when the
        store would go past its capacity."""
        with self._lock:
            if len(content) > self.room(path):
                raise NoSpaceError(path)
            self.used += len(content) - len(self.data.get(path, b""))
            self.data[path] = content
            self.mtime[path] = int(time.time())

    def remove(self, path: str) -> bool:
        with self._lock:
            content = self.data.pop(path, None)
            self.mtime.pop(path, None)
            if content is None:
                return False
            self.used -= len(content)
            return True



def _check_declared_size(step: RecordedStep, data: bytes, limits: PixelConfig) -> None:
    """:class:`RecordingError` for a recorded frame whose PNG or JPEG header declares a size no
    screen has, before anything decodes it (a 390 KB PNG of 20000 x 20000 px decodes to 1.2
    GB): the pixel channel's own rule (``PixelConfig``'s side and aspect limits, as
    :func:`perception.pixel.frame.decode_frame` applies them from the header), so the phone
    serves no frame that a replay or an export of the same recording refuses. Callers answer
    as a phone whose capture failed, as for a frame that is not an image."""
    declared = declared_size(data)
    if declared is None:
        return
    kind, width, height = declared
    try:
        check_frame_side(width, height, limits, f"its {kind} header says it")
    except ImplausibleFrameSizeError as exc:
        raise RecordingError(
            f"step {step.step}: its frame {step.frame_path} is not a screenshot: {exc}"
        ) from exc


class Phone:
    """One simulated phone: a recording walked by input events, a file store and faults."""

    def __init__(
        self,
        recording: Recording,
        *,
        serial: str = "perception-sim",
        model: str = "PerceptionSim",
        faults: Faults | None = None,
        adb_keyboard: AdbKeyboard | str = AdbKeyboard.ABSENT,
        storage_bytes: int = STORAGE_BYTES,
    ) -> None:
        if storage_bytes < 0:
            raise ConfigError(f"storage_bytes={storage_bytes}: expected 0 or more bytes")
        try:
            keyboard = AdbKeyboard(adb_keyboard)
        except ValueError:
            raise ConfigError(
                f"adb_keyboard={adb_keyboard!r}: expected absent, installed or active"
            ) from None
        self.recording = recording
        self.navigator = Navigator(recording)
        self.serial = serial
        self.model = model
        self.faults = faults or Faults()
        self.files = _Files(capacity=storage_bytes)
        self._frame_limits = PixelConfig.from_env()
        """The pixel channel's frame size rules (read once: a bad setting fails here)."""
        self._checked: set[tuple[str, int, int]] = set()
        """(path, size, CRC-32) of recorded frames and dumps already found well formed."""
        self._lock = threading.Lock()
        self._frames: OrderedDict[tuple[int, bool], npt.NDArray[np.uint8]] = OrderedDict()
        self._raw: OrderedDict[tuple[int, bool, bool], bytes] = OrderedDict()
        self._dump_paths: set[str] = set()
        self.events: list[str] = []
        """Every input event received, in order (tests and the bench read it)."""
        self.commands: deque[str] = deque(maxlen=COMMAND_LOG_SIZE)
        """The last :data:`COMMAND_LOG_SIZE` shell command lines run, in order (tests read
        which queries a client made)."""
        self._keyboard_closed_at: int | None = None
        """:attr:`Navigator.changes` when BACK closed the keyboard (closed on that visit)."""
        self._text_field_focused: dict[int, bool] = {}
        """Whether each position's dump holds a focused text field (read once)."""
        self.typed: list[str] = []
        """The text each ``input text`` (``%s`` read as a space) or ADB Keyboard broadcast
        typed, in order."""
        self.installed_imes: list[str] = [LATIN_IME]
        """Input method ids ``ime list -a -s`` prints."""
        self.enabled_imes: list[str] = [LATIN_IME]
        """Input method ids ``ime list -s`` prints (in the order they were enabled)."""
        self.current_ime = LATIN_IME
        """``settings get secure default_input_method`` ("" when none is enabled)."""
        if keyboard is not AdbKeyboard.ABSENT:
            self.installed_imes.append(ADB_KEYBOARD_IME)
        if keyboard is AdbKeyboard.ACTIVE:
            self.enabled_imes.append(ADB_KEYBOARD_IME)
            self.current_ime = ADB_KEYBOARD_IME
        self.settings: dict[tuple[str, str], str] = {}
        """What ``settings put`` stored, by (namespace, key), besides the input methods."""
        self.stopping = threading.Event()
        """Set when the server stops: simulated delays end at once (commands finish)."""
        self._recorded_packages: tuple[str, ...] | None = None
        self._launcher: tuple[str, ...] | None = None

    # ----- screen state -------------------------------------------------------------------

    @property
    def step(self) -> RecordedStep:
        return self.navigator.current

    @property
    def screen(self) -> ScreenSize:
        step = self.step
        if step.screen is not None:
            return step.screen
        return ScreenSize(*self._pixels(step, False).shape[1::-1])

    def keyboard_box(self) -> BoxPx | None:
        """Where the on-screen keyboard is now (device pixels, in the step's rotation), or None
        when it is down: the step's recorded box, else with the ``keyboard`` switch the bottom
        :data:`KEYBOARD_SHARE` of the screen while the dump holds a focused text field (a real
        phone shows its keyboard there); never after BACK closed it on this visit."""
        if self._keyboard_closed_at == self.navigator.changes:
            return None
        step = self.step
        if step.keyboard_px is not None:
            return step.keyboard_px
        if self.faults.keyboard and self._focused_text_field():
            return self._keyboard_frame()
        return None

    def _keyboard_frame(self) -> BoxPx:
        """The box a keyboard covers on this screen: the step's recorded one, else the bottom
        :data:`KEYBOARD_SHARE` down to the screen's bottom edge (the input method's inset
        frame on a real phone reaches it, navigation bar included)."""
        recorded = self.step.keyboard_px
        if recorded is not None:
            return recorded
        screen = self.screen
        height = round(screen.height_px * KEYBOARD_SHARE)
        return BoxPx(0, screen.height_px - height, screen.width_px, screen.height_px)

    def _focused_text_field(self) -> bool:
        position = self.navigator.position
        known = self._text_field_focused.get(position)
        if known is None:
            known = any(
                _FOCUSED.search(tag) and _TEXT_FIELD_CLASS.search(tag)
                for tag in _NODE_TAG.findall(self.step.read_tree())
            )
            self._text_field_focused[position] = known
        return known

    def _ime_insets_line(self) -> str:
        """The input method's ``InsetsSource`` line of ``dumpsys window displays`` (Android
        13's form): the keyboard's frame while it is up; while it is down an empty frame and
        ``visible=false``, the frame it would take kept as ``visibleFrame``."""
        shown = self.keyboard_box()
        box = shown or self._keyboard_frame()
        visible_frame = f"[{box.left},{box.top}][{box.right},{box.bottom}]"
        frame = "[0,0][0,0]" if shown is None else visible_frame
        return (
            f"    InsetsSource type=ITYPE_IME frame={frame} visibleFrame={visible_frame} "
            f"visible={str(shown is not None).lower()}"
        )

    def _ime_window_lines(self) -> list[str]:
        """The input method's window block of ``dumpsys window InputMethod`` (every Android
        prints it; before 11 it is the one place the keyboard shows): a window over the screen
        below the status bar, shown (``mViewVisibility=0x0``) with the keyboard's box as its
        touchable region and content insets while it is up, gone (``0x8``) when down."""
        shown = self.keyboard_box()
        box = shown or self._keyboard_frame()
        screen, top = self.screen, self.step.insets.top_px
        return [
            "WINDOW MANAGER WINDOWS (dumpsys window windows)",
            "  Window #3 Window{4be2a1c u0 InputMethod}:",
            "    mDisplayId=0 stackId=0 mSession=Session{ce80bcd 1893:u0a10111}",
            "    mAttrs={(0,0)(fillxwrap) gr=BOTTOM CENTER_VERTICAL sim={adjust=pan} "
            "ty=INPUT_METHOD fmt=TRANSPARENT}",
            f"    mHasSurface={str(shown is not None).lower()} isReadyForDisplay()="
            f"{str(shown is not None).lower()}",
            f"    mViewVisibility={'0x0' if shown is not None else '0x8'} mHaveFrame=true "
            "mObscured=false",
            f"    mFrame=[0,{top}][{screen.width_px},{screen.height_px}]",
            f"    mGivenContentInsets=[0,{max(0, box.top - top)}][0,0]",
            f"    touchable region=SkRegion(({box.left},{box.top},{box.right},{box.bottom}))",
            f"    isOnScreen={str(shown is not None).lower()}",
            "",
        ]

    def _pixels(self, step: RecordedStep, secure: bool) -> npt.NDArray[np.uint8]:
        key = (self.navigator.position, secure)
        with self._lock:
            cached = self._frames.get(key)
            if cached is not None:
                self._frames.move_to_end(key)
                return cached
        if step.frame_path is None:
            raise RecordingError(f"step {step.step} has no frame to serve")
        data = step.read_frame()  # refused by its size before it is read, as replay does
        _check_declared_size(step, data, self._frame_limits)
        image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        if image is None:
            raise RecordingError(f"step {step.step}: its frame {step.frame_path} is not an image")
        pixels: npt.NDArray[np.uint8] = (
            np.zeros_like(image) if secure else np.asarray(image, dtype=np.uint8)
        )
        with self._lock:
            self._frames[key] = pixels
            while len(self._frames) > 4:
                self._frames.popitem(last=False)
        return pixels

    def anr_buttons(self) -> dict[str, BoxPx]:
        """The "isn't responding" dialog's boxes on this screen: ``dialog``, ``title``, and its
        buttons ``close`` (Close app) and ``wait`` (Wait), stacked as Android 12+ draws them."""
        w, h = self.screen.width_px, self.screen.height_px
        left, right = w * 8 // 100, w * 92 // 100
        top = h * 38 // 100
        row = max(48, h * 6 // 100)
        return {
            "dialog": BoxPx(left, top, right, top + 4 * row),
            "title": BoxPx(left + row // 3, top + row // 3, right - row // 3, top + row),
            "close": BoxPx(left, top + 2 * row, right, top + 3 * row),
            "wait": BoxPx(left, top + 3 * row, right, top + 4 * row),
        }

    def _anr_title(self) -> str:
        package = self.step.package or self.recording.meta.get("package") or "App"
        return f"{str(package).rsplit('.', 1)[-1].capitalize()} isn't responding"

    def _with_anr_window(self, xml: bytes) -> bytes:
        """``xml`` with the dialog's window (package ``android``) after the app's, as a dump of
        every window holds it."""
        b = self.anr_buttons()

        def node(box: BoxPx, extra: str, inner: str = "") -> str:
            bounds = f"[{box.left},{box.top}][{box.right},{box.bottom}]"
            return (f'<node index="0" package="android" enabled="true" bounds="{bounds}" '
                    f"{extra}>{inner}</node>")

        title = escape(self._anr_title(), {'"': "&quot;"})
        inner = (
            node(b["title"], f'class="android.widget.TextView" text="{title}" '
                 'resource-id="android:id/alertTitle" clickable="false"')
            + node(b["close"], 'class="android.widget.Button" text="Close app" '
                   'resource-id="android:id/aerr_close" clickable="true"')
            + node(b["wait"], 'class="android.widget.Button" text="Wait" '
                   'resource-id="android:id/aerr_wait" clickable="true"')
        )
        window = node(b["dialog"], 'class="android.widget.FrameLayout" text="" '
                      'resource-id="" clickable="false"', inner)
        end = xml.rfind(b"</hierarchy>")
        return xml if end < 0 else xml[:end] + window.encode() + xml[end:]

    def _drawn_anr(self, pixels: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
        """``pixels`` with the dialog drawn over them (white panel, dark text)."""
        out = pixels.copy()
        ink = (30, 30, 30)
        b = self.anr_buttons()
        d = b["dialog"]
        cv2.rectangle(out, (d.left, d.top), (d.right - 1, d.bottom - 1), (250, 250, 250), -1)
        scale = max(0.6, (b["title"].bottom - b["title"].top) / 45)
        for key, text in (("title", self._anr_title()), ("close", "Close app"), ("wait", "Wait")):
            box = b[key]
            cv2.putText(out, text, (box.left + 20, (box.top + box.bottom) // 2 + int(12 * scale)),
                        cv2.FONT_HERSHEY_SIMPLEX, scale, ink, max(1, int(2 * scale)))
        return out

    def frame_png(self) -> bytes:
        step = self.step
        black = self.faults.black
        anr = self.faults.anr and not black
        png = step.frame_path is not None and step.frame_path.suffix.lower() == ".png"
        if not black and not anr and png:
            data = step.read_frame()
            if data.startswith(_PNG_SIGNATURE) and self._well_formed(step, data, "frame"):
                return data
        pixels = self._pixels(step, black)
        ok, buf = cv2.imencode(".png", self._drawn_anr(pixels) if anr else pixels)
        if not ok:
            raise RecordingError("PNG encoding failed")
        return buf.tobytes()

    def _well_formed(self, step: RecordedStep, data: bytes, what: str) -> bool:
        """Whether a recorded frame decodes as an image (``what="frame"``) or a dump holds a
        ``<hierarchy`` element; :class:`RecordingError` naming the file when it does not.
        Checked once per content. A phone never sends bytes that are no screenshot or no
        dump as if they were one; a damaged dump (truncated, bad character references, UTF-16)
        is served as recorded, as phones do send those."""
        path = step.frame_path if what == "frame" else step.tree_path
        key = (str(path), len(data), zlib.crc32(data))
        if key in self._checked:
            return True
        if what == "frame":
            _check_declared_size(step, data, self._frame_limits)
            if cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED) is None:
                raise RecordingError(f"step {step.step}: its frame {path} is not an image")
        elif not any(tag in data for tag in _HIERARCHY_TAGS):
            raise RecordingError(f"step {step.step}: its dump {path} holds no <hierarchy> element")
        with self._lock:
            if len(self._checked) > 4096:
                self._checked.clear()
            self._checked.add(key)
        return True

    def frame_raw(self) -> bytes:
        black = self.faults.black
        anr = self.faults.anr and not black
        key = (self.navigator.position, black, anr)
        with self._lock:
            cached = self._raw.get(key)
        if cached is None:
            pixels = self._pixels(self.step, black)
            cached = encode_raw_screencap(self._drawn_anr(pixels) if anr else pixels)
            with self._lock:
                self._raw[key] = cached
                while len(self._raw) > 2:
                    self._raw.popitem(last=False)
        return cached

    # ----- the shell ----------------------------------------------------------------------

    def run(self, command_line: str) -> Result:
        """Run a shell command line; returns merged-ready stdout/stderr and the exit code.

        The line is read whole first, as ``sh -c`` reads it: a syntax error runs nothing.
        Variables set on the line (``NAME=value``, ``export``) last until its end, as in the
        one ``sh -c`` a real ``adb shell`` runs.
        """
        self.commands.append(command_line)
        if self.faults.slow_ms:
            self.stopping.wait(self.faults.slow_ms / 1000)
        try:
            lists = _parse(command_line)
        except _ShellError as exc:
            return Result(stderr=f"/system/bin/sh: {exc}\n".encode(), code=2)
        variables = dict(_ENVIRONMENT)
        out = Result()
        last_code = 0
        for connector, pipeline in lists:
            if (connector == "&&" and last_code != 0) or (connector == "||" and last_code == 0):
                continue
            piece, ends = self._pipeline(pipeline, last_code, variables)
            if piece.drop_after is not None and out.drop_after is None:
                out.drop_after = len(out.stdout) + piece.drop_after
            out.stdout += piece.stdout
            out.stderr += piece.stderr
            out.stderr_first = out.stderr_first or piece.stderr_first
            last_code = piece.code
            if piece.hold or ends:  # nothing after it runs: it never ends, or it was exec'd
                out.hold = piece.hold
                break
        out.code = last_code
        return out

    def _pipeline(
        self, pipeline: list[_Command], last_code: int, variables: dict[str, str]
    ) -> tuple[Result, bool]:
        """Run one pipeline; also says whether it ends the line (``exec`` of its only
        command replaces the shell)."""
        data_in = b""
        result = Result()
        ends = held = False
        for command in pipeline:
            words = list(command.words)
            assignments = []
            while words and words[0].assigns:
                assignments.append(words.pop(0))
            argv = [field for word in words for field in _fields(word, last_code, variables)]
            opened = self._open_redirects(command.redirects, last_code, data_in, variables)
            if isinstance(opened, Result):
                result = opened
                data_in = result.stdout
                continue
            routes, command_in = opened
            exec_alone = False
            if argv[:1] == ["exec"]:
                argv = argv[1:]
                exec_alone = not argv
                ends = bool(argv) and len(pipeline) == 1
            if exec_alone and command.redirects:  # refused; as a failed special built-in,
                ends = True  # it ends the shell: nothing meant to run redirected runs
                result = Result(
                    stderr=b"/system/bin/sh: exec: redirecting the shell itself is not "
                    b"emulated by the virtual phone; redirect each command instead\n",
                    code=2,
                )
            elif not argv:  # NAME=value alone: a shell variable until the end of the line
                for word in assignments:
                    name, _, value = _expand(word, last_code, variables).partition("=")
                    variables[name] = value
                result = Result()
            elif argv[0] in _SPECIAL_BUILTINS:
                result = _SPECIAL_BUILTINS[argv[0]](argv[1:], variables)
            else:  # NAME=value before a command is its environment: no command here reads it
                result = self._command(argv, command_in)
            result = self._route(result, routes, argv[0] if argv else "sh")
            held = held or result.hold
            data_in = result.stdout
        result.hold = held  # a command that never ends keeps the whole pipeline waiting
        return result, ends

    def _open_redirects(
        self, redirects: tuple[_Redirect, ...], last_code: int, data_in: bytes,
        variables: dict[str, str],
    ) -> tuple[dict[int, _Route], bytes] | Result:
        """Where each descriptor points after ``redirects`` (left to right, as sh applies
        them) and the command's input; a Result when one cannot be opened (nothing runs)."""
        routes: dict[int, _Route] = {1: _Stream.STDOUT, 2: _Stream.STDERR}
        for redirect in redirects:
            target = _expand(redirect.target, last_code, variables)
            if redirect.op in {">", ">>"}:
                if target == "/dev/null":
                    routes[redirect.fd] = _Stream.DISCARD
                    continue
                if redirect.op == ">" or target not in self.files.data:
                    self.files.write(target, b"")  # empty: fits even on a full store
                routes[redirect.fd] = target
            elif redirect.op == ">&":
                if target == "-":
                    routes[redirect.fd] = _Stream.DISCARD
                elif target.isdigit() and int(target) in routes:
                    routes[redirect.fd] = routes[int(target)]
                else:
                    message = f"/system/bin/sh: {target}: illegal file descriptor name\n"
                    return Result(stderr=message.encode(), code=1)
            elif target == "/dev/null" or target in self.files.data:
                if redirect.fd == 0:
                    data_in = self.files.data.get(target, b"")
            else:
                message = f"/system/bin/sh: can't open {target}: No such file or directory\n"
                return Result(stderr=message.encode(), code=1)
        return routes, data_in

    def _route(self, result: Result, routes: dict[int, _Route], name: str) -> Result:
        """Send the command's stdout and stderr where the redirects point them (in the order
        the command wrote them, where both reach one stream or file). Output a full store
        cannot take is lost, and the command ``name`` says so and fails."""
        routed = Result(code=result.code, stderr_first=result.stderr_first, hold=result.hold)
        streams = [(2, result.stderr), (1, result.stdout)]
        if not result.stderr_first:
            streams.reverse()
        for fd, data in streams:
            route = routes.get(fd, _Stream.DISCARD)
            if route is _Stream.STDOUT:
                if fd == 1 and result.drop_after is not None:
                    routed.drop_after = len(routed.stdout) + result.drop_after
                routed.stdout += data
            elif route is _Stream.STDERR:
                routed.stderr += data
            elif isinstance(route, str) and data:
                try:
                    self.files.write(route, self.files.data.get(route, b"") + data)
                except NoSpaceError:
                    routed.stderr += f"{name}: write error: {NO_SPACE}\n".encode()
                    routed.code = routed.code or 1
        return routed

    def _command(self, argv: list[str], data_in: bytes) -> Result:
        name, args = argv[0], argv[1:]
        handler = getattr(self, f"_cmd_{name.replace('-', '_')}", None)
        if handler is None:
            return Result(stderr=f"/system/bin/sh: {name}: not found\n".encode(), code=127)
        try:
            result: Result = handler(args, data_in)
        except (ValueError, IndexError, ArithmeticError) as exc:  # bad arguments
            return Result(stderr=f"{name}: {exc}\n".encode(), code=1)
        except NoSpaceError as exc:  # the file it writes does not fit
            return Result(stderr=f"{name}: {exc}\n".encode(), code=1)
        return result

    # simple utilities

    def _cmd_echo(self, args: list[str], data_in: bytes) -> Result:
        if args[:1] == ["-n"]:
            return Result(stdout=" ".join(args[1:]).encode())
        return Result(stdout=(" ".join(args) + "\n").encode())

    def _cmd_true(self, args: list[str], data_in: bytes) -> Result:
        return Result()

    def _cmd_false(self, args: list[str], data_in: bytes) -> Result:
        return Result(code=1)

    def _cmd_sleep(self, args: list[str], data_in: bytes) -> Result:
        seconds = float(args[0])
        if not 0 <= seconds < float("inf"):
            raise ValueError(f"invalid number '{args[0]}'")
        self.stopping.wait(min(MAX_SLEEP_S, seconds))
        return Result()

    def _cmd_cat(self, args: list[str], data_in: bytes) -> Result:
        if not args:
            return Result(stdout=data_in)
        out = Result()
        for path in args:
            if path in self.files.data:
                if path in self._dump_paths and self._take_drop("dump"):
                    out.drop_after = len(out.stdout) + max(1, len(self.files.data[path]) // 2)
                out.stdout += self.files.data[path]
            else:
                out.stderr += f"cat: {path}: No such file or directory\n".encode()
                out.code = 1
        return out

    def _cmd_rm(self, args: list[str], data_in: bytes) -> Result:
        force = any(a.startswith("-") and "f" in a for a in args)
        out = Result()
        for path in (a for a in args if not a.startswith("-")):
            if not self.files.remove(path) and not force:
                out.stderr += f"rm: {path}: No such file or directory\n".encode()
                out.code = 1
            self._dump_paths.discard(path)
        return out

    def _cmd_ls(self, args: list[str], data_in: bytes) -> Result:
        paths = [a for a in args if not a.startswith("-")]
        if not paths:
            return Result(stdout="".join(f"{p}\n" for p in sorted(self.files.data)).encode())
        out = Result()
        for path in paths:
            hits = sorted(p for p in self.files.data if p == path or p.startswith(path + "/"))
            if not hits:
                out.stderr += f"ls: {path}: No such file or directory\n".encode()
                out.code = 1
            out.stdout += "".join(f"{p}\n" for p in hits).encode()
        return out

    def _cmd_grep(self, args: list[str], data_in: bytes) -> Result:
        """``grep [-F] PATTERN``: the lines of its input holding PATTERN (a fixed string).
        Any other option, a file operand or no pattern is refused (:func:`_shell_refusal`):
        ``grep -c`` printing lines, or ``grep -v`` the lines it should drop, would be a wrong
        answer with exit 0."""
        words = [a for a in args if a != "-F"]
        if len(words) != 1 or words[0].startswith("-"):
            return _shell_refusal("grep", args, "grep [-F] PATTERN, reading its input")
        pattern = words[0].encode()
        lines = [ln for ln in data_in.splitlines(keepends=True) if pattern in ln]
        return Result(stdout=b"".join(lines), code=0 if lines else 1)

    def _cmd_head(self, args: list[str], data_in: bytes) -> Result:
        """``head [-n N | -nN | -N]``: the first N lines (10) of its input. Any other option
        (``-c`` counts bytes: a header read with ``head -c`` would get lines) or a file
        operand is refused (:func:`_shell_refusal`)."""
        count = "" if args else "10"
        if args[:1] == ["-n"] and len(args) == 2:
            count = args[1]
        elif len(args) == 1 and args[0].startswith("-n") and len(args[0]) > 2:
            count = args[0][2:]
        elif len(args) == 1 and args[0].startswith("-") and args[0][1:].isdigit():
            count = args[0][1:]
        if not count.isdigit():
            # An option it does not emulate, or no number (``-n abc``: int() raised).
            return _shell_refusal("head", args, "head [-n N | -N], reading its input")
        return Result(stdout=b"".join(data_in.splitlines(keepends=True)[: int(count)]))

    def _cmd_logcat(self, args: list[str], data_in: bytes) -> Result:
        """``logcat``: the phone writes no log, so its buffers are empty. ``-c`` clears them
        (silently), ``-d`` and ``-t N`` print what they hold (nothing) and exit 0, and a
        streaming ``logcat`` waits, printing nothing, until the client closes it, as a phone
        where nothing logs does (a script's ``adb logcat > log &`` keeps working). Buffer
        sizes and statistics (``-g``, ``-G``, ``-S``, ``-p``, ``-P``) are not emulated."""
        dump = False
        i = 0
        while i < len(args):
            option, _, inline = args[i].partition("=")
            i += 1
            if not option.startswith("-") or option == "-":
                continue  # a filter spec (TAG:PRIORITY)
            if not option.startswith("--") and len(option) > 2:  # -vtime: -v time
                option, inline = option[:2], args[i - 1][2:]
            takes = option in _LOGCAT_VALUE_OPTIONS
            value = inline
            if takes and not inline:
                if i >= len(args):
                    message = f"logcat: option requires an argument -- '{option.lstrip('-')}'\n"
                    return Result(stderr=message.encode(), code=1)
                value, i = args[i], i + 1
            if option in {"-c", "--clear"}:
                return Result()
            if option in _LOGCAT_NOT_EMULATED:
                return _not_emulated(f"logcat {option}", "-c, -d, -t N and a quiet stream")
            if option in {"-d", "-t"}:
                dump = True
            elif option in {"-f", "--file"}:
                if value not in self.files.data:
                    self.files.write(value, b"")
            elif not takes and option not in _LOGCAT_FLAGS:
                message = f"logcat: unrecognized option '{option}'\n"
                return Result(stderr=message.encode(), code=1)
        return Result(hold=not dump)

    def _cmd_settings(self, args: list[str], data_in: bytes) -> Result:
        """``settings [--user N] get|put NAMESPACE KEY [VALUE]``: ``put`` stores (the shell
        may write secure settings), ``get`` answers ``null`` for what nobody stored. The
        input method keys read and write :attr:`current_ime` and :attr:`enabled_imes`."""
        while args[:1] == ["--user"]:
            args = args[2:]
        verb, rest = (args[0], args[1:]) if args else ("", [])
        if verb == "get" and len(rest) >= 2:
            key = (rest[0], rest[1])
            if key == ("secure", "default_input_method"):
                value: str | None = self.current_ime
            elif key == ("secure", "enabled_input_methods"):
                value = ":".join(self.enabled_imes)
            else:
                value = self.settings.get(key)
            return Result(stdout=f"{'null' if value is None else value}\n".encode())
        if verb == "get":
            return Result(stdout=b"null\n")
        if verb == "put" and len(rest) >= 3:
            key, value = (rest[0], rest[1]), rest[2]
            if key == ("secure", "default_input_method"):
                self.current_ime = value
            elif key == ("secure", "enabled_input_methods"):
                ids = (item.split(";")[0] for item in value.split(":"))
                self.enabled_imes = [i for i in ids if i]
            else:
                self.settings[key] = value
        return Result()

    # Android tools

    def _cmd_getprop(self, args: list[str], data_in: bytes) -> Result:
        props = self.props()
        if args:
            return Result(stdout=(props.get(args[0], "") + "\n").encode())
        return Result(stdout="".join(f"[{k}]: [{v}]\n" for k, v in props.items()).encode())

    def props(self) -> dict[str, str]:
        return {
            "ro.build.version.sdk": "30",
            "ro.build.version.release": "11",
            "ro.product.model": self.model,
            "ro.product.name": "perception_sim",
            "ro.product.device": "perception_sim",
            "ro.product.manufacturer": "perception",
            "ro.product.brand": "perception",
            "ro.product.cpu.abi": "x86_64",
            "ro.serialno": self.serial,
            "ro.sf.lcd_density": str(self.recording.density_dpi),
            "sys.boot_completed": "1",
        }

    def _cmd_uiautomator(self, args: list[str], data_in: bytes) -> Result:
        if not args or args[0] != "dump":
            return Result(stderr=b"Usage: uiautomator dump [--compressed] [file]\n", code=1)
        path = next((a for a in args[1:] if not a.startswith("-")), DEFAULT_DUMP_PATH)
        faults = self.faults
        if faults.dump_slow_ms:
            self.stopping.wait(faults.dump_slow_ms / 1000)
        if faults.idle_failures:
            if faults.idle_failures > 0:
                faults.idle_failures -= 1
            return Result(stdout=IDLE_ERROR)
        step = self.step
        try:
            xml = step.read_tree()
            self._well_formed(step, xml, "dump")
        except PerceptionError as exc:  # not a dump, or one over the size limit
            log.error("uiautomator dump fails as on a phone: %s", exc)
            return Result(stdout=NULL_ROOT_ERROR)
        if faults.anr:
            xml = self._with_anr_window(xml)
        done = f"UI hierchary dumped to: {path}\n".encode()
        if path in {"/dev/tty", "/dev/stdout"}:
            result = Result(stdout=xml + done)
            if self._take_drop("dump"):
                result.drop_after = max(1, len(xml) // 2)
            return result
        self.files.write(path, xml)
        self._dump_paths.add(path)
        return Result(stdout=done)

    def _cmd_screencap(self, args: list[str], data_in: bytes) -> Result:
        faults = self.faults
        warning = MULTI_DISPLAY_WARNING if faults.multi_display and "-d" not in args else b""
        if faults.capture_fail:
            return Result(stderr=warning + CAPTURE_FAILED, code=1, stderr_first=True)
        png = "-p" in args
        path = next((a for a in args if not a.startswith("-") and a.startswith("/")), None)
        png = png or (path is not None and path.endswith(".png"))
        try:
            data = self.frame_png() if png else self.frame_raw()
        except PerceptionError as exc:  # not an image, or a file over the size limit
            log.error("screencap fails as on a phone: %s", exc)
            return Result(stderr=warning + CAPTURE_FAILED, code=1, stderr_first=True)
        if path is not None:
            self.files.write(path, data)
            return Result(stderr=warning, stderr_first=True)
        result = Result(stdout=data, stderr=warning, stderr_first=True)
        if self._take_drop("screencap"):
            result.drop_after = max(1, len(data) // 2)
        return result

    def _take_drop(self, kind: str) -> bool:
        if self.faults.drop in {kind, "any"}:
            self.faults.drop = ""
            return True
        return False

    def physical_size(self) -> ScreenSize:
        screen = self.screen
        if self.step.rotation % 2:
            return ScreenSize(screen.height_px, screen.width_px)
        return screen

    def _cmd_wm(self, args: list[str], data_in: bytes) -> Result:
        """``wm size``, ``wm density`` (read; ``reset`` is accepted: nothing was ever
        overridden), ``wm dismiss-keyguard``. Setting a size or a density is refused: the
        recording's frames have one size."""
        if "-d" in args[1:] and args[args.index("-d", 1) + 1 :][:1] == ["0"]:  # the display
            at = args.index("-d", 1)
            args = args[:at] + args[at + 2 :]
        if args[:1] == ["size"] and len(args) > 1:
            size = self.physical_size()
            return self._wm_set("size", args[1], f"{size.width_px}x{size.height_px}")
        if args[:1] == ["density"] and len(args) > 1:
            return self._wm_set("density", args[1], str(self.recording.density_dpi))
        if args[:1] == ["size"]:
            size = self.physical_size()
            return Result(stdout=f"Physical size: {size.width_px}x{size.height_px}\n".encode())
        if args[:1] == ["density"]:
            return Result(stdout=f"Physical density: {self.recording.density_dpi}\n".encode())
        if args[:1] == ["dismiss-keyguard"]:
            # A swipe lock goes away, a PIN stays; wm prints nothing and exits 0 either way.
            if not self.faults.locked:
                reason = "no keyguard"
            elif self.faults.pin:
                reason = "keyguard asks for a PIN"
            else:
                reason = "keyguard dismissed"
                self.faults.locked = False
            self.events.append(f"wm dismiss-keyguard -> {self.navigator.position} ({reason})")
            return Result()
        return Result(stderr=b"usage: wm [size|density|dismiss-keyguard]\n", code=1)

    def _wm_set(self, what: str, value: str, current: str) -> Result:
        if value == "reset":
            return Result()
        message = (
            f"wm {what} {value}: changing the screen's {what} is not emulated by the virtual "
            f"phone (it stays {current}, as recorded; wm {what} reset is accepted)\n"
        )
        return Result(stderr=message.encode(), code=255)

    def _focus(self) -> tuple[str, str]:
        return focus_of(self.step)

    def _policy_lines(self) -> list[str]:
        """``dumpsys window policy`` (the first section of ``dumpsys window``): the keyguard
        as Android 11-14's ``KeyguardServiceDelegate`` prints it, and the older
        ``mShowingLockscreen`` line that tools written for Android 4-9 still look for."""
        awake, locked = not self.faults.asleep, self.faults.locked
        on, shown = str(awake).lower(), str(locked).lower()
        return [
            "WINDOW MANAGER POLICY STATE (dumpsys window policy)",
            "    mSafeMode=false mSystemReady=true mSystemBooted=true",
            f"    mShowingLockscreen={shown} mShowingDream=false mDreamingLockscreen={shown}",
            f"    mAwake={on}",
            f"    mScreenOnEarly={on} mScreenOnFully={on}",
            "    mKeyguardDrawComplete=true mWindowManagerDrawComplete=true",
            "    KeyguardServiceDelegate",
            f"      showing={shown}",
            f"      showingAndNotOccluded={shown}",
            f"      inputRestricted={shown}",
            "      occluded=false",
            f"      secure={str(self.faults.pin).lower()}",
            "      dreaming=false",
            "      systemIsReady=true",
            "      deviceHasKeyguard=true",
            "      enabled=true",
            "      currentUser=0",
            "      bootCompleted=true",
            f"      screenState=SCREEN_STATE_{'ON' if awake else 'OFF'}",
            f"      interactiveState=INTERACTIVE_STATE_{'AWAKE' if awake else 'SLEEP'}",
        ]

    def _power_dump(self) -> str:
        """An excerpt of Android 10-14's ``dumpsys power``: wakefulness and the display's
        power state, which is what tells a screen that timed out from a FLAG_SECURE one."""
        awake = not self.faults.asleep
        on = str(awake).lower()
        return (
            "POWER MANAGER (dumpsys power)\n\n"
            "Power Manager State:\n"
            "  mDirty=0x0\n"
            f"  mWakefulness={'Awake' if awake else 'Asleep'}\n"
            "  mWakefulnessChanging=false\n"
            "  mIsPowered=true\n"
            "  mPlugType=2\n"
            "  mBatteryLevel=100\n"
            "  mStayOn=false\n"
            "  mProximityPositive=false\n"
            "  mBootCompleted=true\n"
            "  mSystemReady=true\n"
            "  mHalAutoSuspendModeEnabled=false\n"
            f"  mHalInteractiveModeEnabled={on}\n"
            "  mWakeLockSummary=0x0\n"
            f"  mUserActivitySummary={'0x1' if awake else '0x0'}\n"
            "  mRequestWaitForNegativeProximity=false\n"
            "  mSandmanScheduled=false\n"
            "  mBatteryLevelLow=false\n"
            "  mLightDeviceIdleMode=false\n"
            "  mDeviceIdleMode=false\n"
            "  mHoldingWakeLockSuspendBlocker=false\n"
            f"  mHoldingDisplaySuspendBlocker={on}\n"
            "\n"
            "Settings and Configuration:\n"
            "  mStayOnWhilePluggedInSetting=0\n"
            "  mScreenOffTimeoutSetting=30000\n"
            "\n"
            "Wake Locks: size=0\n"
            "\n"
            "Suspend Blockers: size=4\n"
            "  PowerManagerService.WakeLocks: ref count=0\n"
            f"  PowerManagerService.Display: ref count={int(awake)}\n"
            "  PowerManagerService.Broadcasts: ref count=0\n"
            "  PowerManagerService.WirelessChargerDetector: ref count=0\n"
            "\n"
            f"Display Power: state={'ON' if awake else 'OFF'}\n"
        )

    def _cmd_dumpsys(self, args: list[str], data_in: bytes) -> Result:
        if self.faults.dumpsys_slow_ms:
            self.stopping.wait(self.faults.dumpsys_slow_ms / 1000)
        what = args[0] if args else ""
        package, activity = self._focus()
        screen = self.screen
        size = self.physical_size()
        density = self.recording.density_dpi
        rotation = self.step.rotation
        if what == "window" and args[1:2] == ["policy"]:
            return Result(stdout=("\n".join(self._policy_lines()) + "\n").encode())
        if what == "power":
            return Result(stdout=self._power_dump().encode())
        if what == "window":
            ins = self.step.insets
            displays = [
                "WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)",
                "  Display: mDisplayId=0",
                f"    init={size.width_px}x{size.height_px} {density}dpi "
                f"cur={screen.width_px}x{screen.height_px} "
                f"app={screen.width_px}x{screen.height_px - ins.bottom_px}",
                f"    mCurrentRotation=ROTATION_{rotation * 90}",
                f"    mRotation={rotation}",
                f"    InsetsSource type=ITYPE_STATUS_BAR frame=[0,0][{screen.width_px},"
                f"{ins.top_px}] visible={str(ins.top_px > 0).lower()}",
                f"    InsetsSource type=ITYPE_NAVIGATION_BAR frame=[0,"
                f"{screen.height_px - ins.bottom_px}][{screen.width_px},{screen.height_px}] "
                f"visible={str(ins.bottom_px > 0).lower()}",
                self._ime_insets_line(),
            ]
            if self.faults.android10:  # no inset sources before Android 11
                displays = [ln for ln in displays if "InsetsSource" not in ln]
                displays.append(f"    mStableInsets=[0,{ins.top_px}][0,{ins.bottom_px}]")
            if args[1:2] == ["displays"]:  # that section alone, as on a phone
                return Result(stdout=("\n".join(displays) + "\n").encode())
            if args[1:2] == ["InputMethod"]:  # the windows of that name alone
                return Result(stdout=("\n".join(self._ime_window_lines())).encode())
            lines = [
                *self._policy_lines(),
                "",
                *displays,
                "WINDOW MANAGER WINDOWS (dumpsys window windows)",
                f"  mCurrentFocus=Window{{5f3e2a1 u0 {activity}}}",
                f"  mFocusedApp=ActivityRecord{{8c1d0e2 u0 {activity} t12}}",
                "",
            ]
            return Result(stdout="\n".join(lines).encode())
        if what == "display":
            lines = [
                "DISPLAY MANAGER (dumpsys display)",
                f"  mDefaultViewport=DisplayViewport{{valid=true, displayId=0, "
                f"orientation={rotation}, deviceWidth={size.width_px}, "
                f"deviceHeight={size.height_px}}}",
                f'  DisplayDeviceInfo{{"Built-in Screen": {size.width_px} x {size.height_px}, '
                f"density {density}}}",
                "",
            ]
            return Result(stdout="\n".join(lines).encode())
        if what == "activity" and args[1:2] == ["top"]:
            return Result(stdout=(  # the resumed activity's first lines, as a phone
                f"TASK {package} id=12 userId=0\n"
                f"  ACTIVITY {activity} 8c1d0e2 pid={_uid(package) - 5000}\n"
            ).encode())
        if what == "activity":
            return Result(
                stdout=f"  mResumedActivity: ActivityRecord{{8c1d0e2 u0 {activity} t12}}\n"
                f"  mFocusedApp={package}\n".encode()
            )
        if what == "package":
            return self._package_dump(args[1:])
        return Result(stdout=f"Can't find service: {what}\n".encode())

    def _package_dump(self, args: list[str]) -> Result:
        """``dumpsys package [PKG]``: Android 11's sections for one package (every installed
        one without ``PKG``): its launcher activity's filter, its signing key set and its
        ``Package [..]`` block; ``Unable to find package: PKG`` (stdout, exit 0) for one the
        phone does not have (the line Android 13+ prints; older ones print no such line,
        only whatever sections have nothing of the package in them). Android
        reads an argument as a package name when it holds a dot (or is ``android``); its
        other words (``perm``, ``pref``, ``l``, ...) pick sections that are not emulated.

        What the recording cannot know is given as a phone gives an APK that declares
        nothing: ``versionName=null`` and ``versionCode=0`` (adbutils' ``app_info`` reads
        ``version_name=None``, ``version_code=0``), ``minSdk=1``, and the install times a
        phone prints when it has none (2009-01-01 00:00:00, a system image's file times).
        ``targetSdk`` is the phone's own SDK (30): the apps ran on it with runtime permission
        dialogs. The signature hashes are stand-ins read off the name (the recording holds
        no certificate): one for the system's packages, as they share the platform key."""
        words = [a for a in args if not a.startswith("-")]
        if words and not (words[0] == "android" or "." in words[0]):
            return _not_emulated(f"dumpsys package {words[0]}", "dumpsys package [PKG]")
        installed = self.installed_packages()
        if words and words[0] not in installed:
            return Result(stdout=f"Unable to find package: {words[0]}\n".encode())
        packages = [words[0]] if words else sorted(installed)
        launchers = {package_of(c): c for c in reversed(self.launcher_components())}
        lines = ["Activity Resolver Table:", "  Non-Data Actions:"]
        shown = [launchers[p] for p in packages if p in launchers]
        if shown:
            lines.append(f"      {_ACTION_MAIN}:")
        for component in shown:
            lines += [
                f"        {_hash_hex('activity', component)} {component} filter "
                f"{_hash_hex('filter', component)}",
                f'          Action: "{_ACTION_MAIN}"',
                f'          Category: "{_CATEGORY_LAUNCHER}"',
            ]
        lines += ["", "Key Set Manager:"]
        for package in packages:
            key_set = 1 if installed[package] else 10 + _uid(package) % 90
            lines += [f"  [{package}]", f"      Signing KeySets: {key_set}"]
        lines += ["", "Packages:"]
        for package in packages:
            lines += _package_block(package, installed[package])
        return Result(stdout=("\n".join(lines) + "\n").encode())

    def _cmd_input(self, args: list[str], data_in: bytes) -> Result:
        if args and args[0] in {"touchscreen", "keyboard", "mouse", "touchpad", "dpad"}:
            args = args[1:]
        if not args:
            return Result(stderr=b"usage: input ...\n", code=1)
        verb, rest = args[0], args[1:]
        nav = self.navigator
        act: Callable[[], Move]
        touched: PointPx | None = None  # where a tap or a swipe starts
        wanted = _INPUT_ARGUMENTS.get(verb)
        if wanted is not None and len(rest) not in wanted:
            message = f"Error: Invalid arguments for command: {verb}\n{_INPUT_USAGE}"
            return Result(stderr=message.encode(), code=1)
        if wanted is not None:
            bad = next((v for v in rest if not _FLOAT.fullmatch(v.strip())), None)
            if bad is not None:  # Float.parseFloat throws, input's ShellCommand reports it
                detail = f'java.lang.NumberFormatException: For input string: "{bad}"'
                return _exception(verb, detail)
        if verb == "tap":
            touched = PointPx(int(float(rest[0])), int(float(rest[1])))
            act = partial(nav.tap, touched)
        elif verb in {"swipe", "draganddrop"}:
            x1, y1, x2, y2 = (int(float(v)) for v in rest[:4])
            duration = int(float(rest[4])) if len(rest) > 4 else 300
            if abs(x2 - x1) < 10 and abs(y2 - y1) < 10:
                touched = PointPx(x1, y1)
                act = partial(nav.tap, touched, long=duration >= 500)
            else:
                touched = PointPx(x1, y1)
                act = partial(nav.swipe, touched, PointPx(x2, y2))
        elif verb == "text":
            if not rest:
                return Result(stderr=b'Error: Argument expected after "text"\n', code=1)
            # Android 11's input types its first argument only (`input text a b` types "a").
            act = partial(self._text, rest[0].replace("%s", " "))
        elif verb == "keyevent":
            keys = [k for k in rest if not k.startswith("--")] or [""]
            moves = [self._key(key) for key in keys]
            reason = "; ".join(m.reason for m in moves)
            move = Move(any(m.moved for m in moves), moves[-1].position, reason)
            self._record(" ".join(args), move)
            return Result()
        else:
            return Result(stderr=f"Error: Unknown command: {verb}\n".encode(), code=1)
        blocked = self.faults.input_blocked()
        if not blocked and self.faults.anr:
            self._record(" ".join(args), self._anr_input(touched if verb != "swipe" else None))
            return Result()
        if not blocked and touched is not None:
            keyboard = self.keyboard_box()
            if keyboard is not None and keyboard.contains(touched):
                # A key takes it (a swipe there is the keyboard's, gesture typing): the app
                # never sees it.
                blocked = "ignored (keyboard)"
        self._record(" ".join(args), Move(False, nav.position, blocked) if blocked else act())
        return Result()

    def _record(self, shown: str, move: Move) -> None:
        self.events.append(f"{shown} -> {move.position} ({move.reason})")
        log.info("%s -> position %d (%s)", shown, move.position, move.reason)

    def _text(self, text: str) -> Move:
        self.typed.append(text)
        return self.navigator.text(text)

    def _key(self, name: str) -> Move:
        """One key of ``input keyevent``: the power keys turn the screen on or off (and never
        move the recording); any other key reaches the app only while it is awake and
        unlocked."""
        faults = self.faults
        key = normalise_key(name)
        key = _POWER_KEY_CODES.get(key, key)
        if key in {"WAKEUP", "SLEEP", "POWER"}:
            on = key == "WAKEUP" or (key == "POWER" and faults.asleep)
            changed = on == faults.asleep
            faults.asleep = not on
            state = "on" if on else "off"
            reason = f"screen turned {state}" if changed else f"screen already {state}"
            return Move(False, self.navigator.position, reason)
        blocked = faults.input_blocked()
        if blocked:
            return Move(False, self.navigator.position, blocked)
        if faults.anr:
            return self._anr_input(None)
        if key == "BACK" and self.keyboard_box() is not None:
            # A real phone's first BACK closes the keyboard only; the app sees none.
            self._keyboard_closed_at = self.navigator.changes
            return Move(False, self.navigator.position, "keyboard closed")
        return self.navigator.key(name)

    def _anr_input(self, touched: PointPx | None) -> Move:
        """Input while the "isn't responding" dialog is up: a tap on Wait or Close app closes
        it (the app answers again, or is closed: its screen stays, the recording has no other);
        anything else is the dialog's, not the app's."""
        position = self.navigator.position
        buttons = self.anr_buttons()
        for key, reason in (("wait", "not responding: wait"), ("close", "not responding: close")):
            if touched is not None and buttons[key].contains(touched):
                self.faults.anr = False
                return Move(False, position, reason)
        return Move(False, position, "ignored (dialog)")

    def launcher_components(self) -> tuple[str, ...]:
        """The activities the launcher shows, one per app as a phone prints them: the ones
        the recording starts by intent (step order), then one for each other app the
        recording shows (:func:`~perception.sources.replay.shown_apps`), then :data:`SETTINGS`
        and :data:`CHROME`, whose launcher activities the phone knows (a recording that shows
        Settings' app details page does not make that page Settings' icon). Read once."""
        if self._launcher is None:
            fixed = (SETTINGS, CHROME)
            shown = shown_apps(self.recording, listed=frozenset(map(package_of, fixed)))
            one: dict[str, str] = {}
            for component in (*recorded_components(self.recording), *shown, *fixed):
                one.setdefault(package_of(component), component)
            self._launcher = tuple(one.values())
        return self._launcher

    def recorded_packages(self) -> tuple[str, ...]:
        """Every package the recording shows (each step's screen package and focused
        activity, as ``dumpsys window`` names them) or starts by intent, in step order: all
        installed, since the recording ran them. Read once (the recording does not change)."""
        if self._recorded_packages is not None:
            return self._recorded_packages
        found: dict[str, None] = {}
        meta_package = self.recording.meta.get("package")
        if isinstance(meta_package, str) and PACKAGE.fullmatch(meta_package):
            found.setdefault(meta_package)
        for step in self.recording.steps:
            package, activity = focus_of(step)
            found.setdefault(package)
            found.setdefault(package_of(activity))
            if step.action is not None and step.action.intent:
                started = intent_target(step.action.intent).package
                if started:
                    found.setdefault(started)
        self._recorded_packages = tuple(found)
        return self._recorded_packages

    def installed_packages(self) -> dict[str, bool]:
        """``pm list packages``' packages, each with whether it is a system one: the
        recording's (:meth:`recorded_packages`; system where :func:`_is_system_package`
        says so), the apps and services the phone itself emulates (:data:`_SYSTEM_PACKAGES`)
        and ADB Keyboard once installed (a third-party app)."""
        packages = {p: _is_system_package(p) for p in self.recorded_packages()}
        packages.update(dict.fromkeys(_SYSTEM_PACKAGES, True))
        if ADB_KEYBOARD_IME in self.installed_imes:
            packages[_ADB_KEYBOARD_PACKAGE] = False
        return packages

    def known_components(self) -> frozenset[str]:
        """Every activity the phone knows, in full (:func:`full_component`): the launcher's,
        those the recording starts, and each step's focused activity; ``am start -n`` of any
        other says it does not exist."""
        steps = (focus_of(step)[1] for step in self.recording.steps)
        return frozenset(full_component(c) for c in (*self.launcher_components(), *steps))

    def _startable(self, package: str) -> bool:
        """Whether ``am start -p PKG`` and ``monkey -p PKG`` find an activity of ``package``:
        one the launcher shows, or one the recording shows or starts (by package alone too:
        ``monkey -p PKG`` records no activity). The system services of
        :data:`_SYSTEM_PACKAGES` that no launcher lists (``android``, the keyboard) have
        none."""
        shown = (package_of(c) for c in self.launcher_components())
        return package in {*shown, *self.recorded_packages()}

    def _cmd_cmd(self, args: list[str], data_in: bytes) -> Result:
        if args[:1] == ["package"]:
            return self._package(args[1:])
        if not args:
            return Result(stderr=b"cmd: No service specified; use -l to list all services\n",
                          code=20)
        return Result(stderr=f"cmd: Can't find service: {args[0]}\n".encode(), code=20)

    def _cmd_pm(self, args: list[str], data_in: bytes) -> Result:
        return self._package(args)

    def _package(self, args: list[str]) -> Result:
        """The package manager's shell commands: ``list packages``, ``path`` and
        ``query-activities``; Android's other verbs say they are not emulated (exit 255),
        a word that is no verb gets Android's ``Unknown command``."""
        verb = args[0] if args else ""
        if verb == "list":
            noun = args[1] if len(args) > 1 else ""
            if noun == "packages":
                return self._list_packages(args[2:])
            if noun in _PM_LIST_NOUNS:
                return _not_emulated(f"pm list {noun}", _PM_EMULATED)
            if not noun:
                return _illegal_argument("list", 'Argument expected after "list"')
            return Result(stderr=f"Error: unknown list type '{noun}'\n".encode(), code=255)
        if verb == "path":
            return self._package_path(args[1:])
        if verb in _PM_VERBS:
            return _not_emulated(f"pm {verb}", _PM_EMULATED)
        if verb != "query-activities":
            return Result(stderr=f"Unknown command: {verb}\n".encode(), code=255)
        try:
            intent = _Intent.parse(args[1:], flags=0, others=_QUERY_OPTIONS)
        except ValueError as exc:
            return _exception(verb, str(exc))
        found: tuple[str, ...] = ()
        if intent.action == _ACTION_MAIN and intent.categories == [_CATEGORY_LAUNCHER]:
            full = full_component(intent.component) if intent.component else ""
            found = tuple(
                c for c in self.launcher_components()
                if (not intent.package or package_of(c) == intent.package)
                and (not full or full_component(c) == full)
            )
        if not found:
            return Result(stdout=b"No activities found\n")
        if "--components" in args:
            return Result(stdout="".join(f"{c}\n" for c in found).encode())
        lines = [f"{len(found)} activities found:"]
        for i, component in enumerate(found):
            lines.append(f"  Activity #{i}:")
            if "--brief" in args:
                lines += [f"    {_RESOLVE_LINE}", f"    {component}"]
                continue
            package, _, _ = component.partition("/")
            lines += [
                "    priority=0 preferredOrder=0 isDefault=false",
                "    ActivityInfo:",
                f"      name={full_component(component).split('/', 1)[1]}",
                f"      packageName={package}",
                "      enabled=true exported=true directBootAware=false",
                f"      taskAffinity={package} targetActivity=null "
                "persistableMode=PERSIST_ROOT_ONLY",
            ]
        return Result(stdout=("\n".join(lines) + "\n").encode())

    def _list_packages(self, args: list[str]) -> Result:
        """``pm list packages [-f] [-d] [-e] [-s] [-3] [-i] [-u] [-U] [--show-versioncode]
        [--user N] [FILTER]``: one ``package:NAME`` line each (sorted: a phone's order is
        its hash table's), FILTER a part of the name as on a phone; every package is enabled,
        none is disabled or uninstalled-but-kept."""
        flags: set[str] = set()
        name_filter = ""
        i = 0
        while i < len(args):
            arg = args[i]
            if arg in {"--user", "--uid"}:
                if i + 1 >= len(args):
                    return _illegal_argument("packages", f'Argument expected after "{arg}"')
                i += 2
                continue
            if arg.startswith("-") and arg not in _PM_LIST_FLAGS:
                return Result(stderr=f"Error: Unknown option: {arg}\n".encode(), code=255)
            if arg.startswith("-"):
                flags.add(arg)
            elif not name_filter:
                name_filter = arg
            i += 1
        if flags & {"-d", "--apex-only"}:
            return Result()
        lines = []
        for package, system in sorted(self.installed_packages().items()):
            if name_filter not in package or ("-s" in flags and not system):
                continue
            if "-3" in flags and system:
                continue
            line = "package:"
            if "-f" in flags:
                line += f"{_apk_path(package, system)}="
            line += package
            if "--show-versioncode" in flags:
                line += " versionCode:0"
            if "-i" in flags:
                line += "  installer=null"
            if "-U" in flags:
                line += f" uid:{_uid(package)}"
            lines.append(line + "\n")
        return Result(stdout="".join(lines).encode())

    def _package_path(self, args: list[str]) -> Result:
        """``pm path [--user N] PKG``: the package's APK as ``package:PATH``, or nothing and
        exit 1 for a package the phone does not have (as Android's ``pm path`` does)."""
        if args[:1] == ["--user"]:
            args = args[2:]
        if not args:
            return _illegal_argument("path", 'Argument expected after "path"')
        system = self.installed_packages().get(args[0])
        if system is None:
            return Result(code=1)
        return Result(stdout=f"package:{_apk_path(args[0], system)}\n".encode())

    def _start(self, args: list[str]) -> Result:
        """``am start``: print the intent, then start an activity the phone knows
        (:meth:`known_components`; the navigator follows a recorded intent of that package)
        or print the phone's error, on stderr, and still exit 0 (as ``am`` does).

        An app that is already in front stays, with a real phone's warning: its very activity
        gets the intent delivered to it, another of its activities brings its task to the
        front. An installed app that is not in front moves the replay only where the
        recording went into it from this step (:meth:`Navigator.start`); elsewhere the start is
        accepted and the screen stays, as for Settings: the recording holds no screen of it
        to show from here."""
        verb = args[0]
        try:
            intent = _Intent.parse(args[1:], flags=0, others=_START_OPTIONS)
        except ValueError as exc:
            return _exception(verb, str(exc))
        out = Result(stdout=f"Starting: Intent {{ {intent.short()} }}\n".encode())
        error = ""
        full = full_component(intent.component) if intent.component else ""
        if full and full not in self.known_components():
            error = f"Error type 3\nError: Activity class {{{full}}} does not exist.\n"
        elif not full and intent.package and not self._startable(intent.package):
            error = (
                f"Error: Activity not started, unable to resolve Intent {{ {intent.short()} }}\n"
            )
        if error:
            out.stderr = error.encode()
            move = Move(False, self.navigator.position, f"no activity {intent.app} here")
        else:
            front_package, front_activity = self._focus()
            move = self.navigator.start(" ".join(args))
            if not move.moved and full and full == full_component(front_activity):
                out.stdout += (
                    b"Warning: Activity not started, intent has been delivered to currently "
                    b"running top-most instance.\n"
                )
            elif not move.moved and intent.app and intent.app == front_package:
                out.stdout += (
                    b"Warning: Activity not started, its current task has been brought to the "
                    b"front\n"
                )
        self.events.append(f"am {' '.join(args)} -> {move.position} ({move.reason})")
        return out

    def _cmd_am(self, args: list[str], data_in: bytes) -> Result:
        if args[:1] in (["start"], ["start-activity"]):
            return self._start(args)
        if args[:1] == ["force-stop"]:
            return Result()
        if args[:1] == ["broadcast"]:
            return self._broadcast(args[1:])
        return Result(stderr=b"am: unsupported in the simulator\n", code=1)

    def _broadcast(self, args: list[str]) -> Result:
        """``am broadcast``: always completes with result=0 (nobody answers a result), as on a
        real phone; only ADB Keyboard, while it is the current input method, acts on one."""
        try:
            intent = _Intent.parse(args)
        except ValueError as exc:
            return _exception("broadcast", str(exc))
        shown = f"Broadcasting: Intent {{ {intent.short()} }}\nBroadcast completed: result=0\n"
        result = Result(stdout=shown.encode())
        if self.current_ime != ADB_KEYBOARD_IME or ADB_KEYBOARD_IME not in self.installed_imes:
            return result  # its receiver is registered by the IME service, which is not running
        if intent.component or intent.package not in {"", _ADB_KEYBOARD_PACKAGE}:
            return result  # a receiver registered at run time is no component of the manifest
        msg = intent.extras.get("msg")
        if intent.action == "ADB_INPUT_B64" and msg is not None:
            data = _android_b64decode(msg)
            if data is None:  # Base64.decode throws: the IME crashes and types nothing
                log.info("ADB Keyboard: bad base-64 %r, typed nothing", msg[:40])
            elif data:  # Java's String(bytes, "UTF-8") replaces bad bytes, it does not throw
                self._type(data.decode("utf-8", "replace"), "adbkeyboard")
        elif intent.action == "ADB_INPUT_TEXT" and msg:
            self._type(msg, "adbkeyboard")
        elif intent.action == "ADB_CLEAR_TEXT":
            reason = self.faults.input_blocked() or "field cleared"
            self._record("adbkeyboard clear", Move(False, self.navigator.position, reason))
        return result

    def _type(self, text: str, via: str) -> None:
        """Type ``text`` into the focused field, as ``input text`` does (nothing while the
        screen is off or locked: the keyboard has no field)."""
        blocked = self.faults.input_blocked()
        move = Move(False, self.navigator.position, blocked) if blocked else self._text(text)
        self._record(f"{via} text {text}", move)

    def _cmd_ime(self, args: list[str], data_in: bytes) -> Result:
        """``ime list|enable|disable|set``, with the messages and exit status (255 for a
        failure) of Android 11-13's input method service."""
        verb, rest = (args[0], args[1:]) if args else ("", [])
        options = [a for a in rest if a.startswith("-")]
        ids = [a for a in rest if not a.startswith("-")]
        if "--user" in options:  # only user 0 exists: drop the option and its value
            ids = ids[1:]
            options.remove("--user")
        if verb == "list":
            unknown = [o for o in options if o not in {"-a", "-s"}]
            if unknown:
                return Result(stderr=f"Unknown option: {unknown[0]}\n".encode(), code=255)
            shown = self.installed_imes if "-a" in options else self.enabled_imes
            if "-s" in options:
                return Result(stdout="".join(f"{i}\n" for i in shown).encode())
            return Result(stdout="".join(f"{i}:\n  mId={i}\n" for i in shown).encode())
        if verb in {"enable", "disable", "set"}:
            if not ids:
                return _illegal_argument(verb, f'Argument expected after "{verb}"')
            if verb == "set":
                return self._ime_set(ids[0])
            return self._ime_enable(ids[0], verb == "enable")
        if not verb or verb in {"help", "-h"}:
            usage = "ime <command>:\n  list [-a] [-s]\n  enable ID\n  disable ID\n  set ID\n"
            return Result(stdout=usage.encode())
        return Result(stdout=f"Unknown command: {verb}\n".encode(), code=255)

    def _ime_enable(self, ime: str, enable: bool) -> Result:
        if enable and ime not in self.installed_imes:
            message = f"Unknown input method {ime} cannot be enabled for {_USER}\n"
            return Result(stderr=message.encode(), code=255)
        was = ime in self.enabled_imes
        if enable and not was:
            self.enabled_imes.append(ime)
        elif not enable and was:
            self.enabled_imes.remove(ime)
            if self.current_ime == ime:  # the service picks a system keyboard, or none
                system = [i for i in self.enabled_imes if i in _SYSTEM_IMES]
                self.current_ime = (system or self.enabled_imes or [""])[0]
        state = "enabled" if enable else "disabled"
        already = "already" if was == enable else "now"
        return Result(stdout=f"Input method {ime}: {already} {state} for {_USER}\n".encode())

    def _ime_set(self, ime: str) -> Result:
        if ime not in self.installed_imes or ime not in self.enabled_imes:
            message = f"Unknown input method {ime} cannot be selected for {_USER}\n"
            return Result(stderr=message.encode(), code=255)
        self.current_ime = ime
        return Result(stdout=f"Input method {ime} selected for {_USER}\n".encode())

    def _cmd_monkey(self, args: list[str], data_in: bytes) -> Result:
        """``monkey -p PKG ... 1``: starts PKG when the phone has an activity of it
        (:meth:`_startable`; moving as ``am start`` does, or staying: an app in front stays in
        front), else aborts as monkey does (on stdout, exit 252)."""
        package = intent_target(" ".join(args)).package
        if package and not self._startable(package):
            move = Move(False, self.navigator.position, f"no activity {package} here")
            out = Result(stdout=b"** No activities found to run, monkey aborted.\n",
                         code=_MONKEY_ABORTED)
        else:
            move = self.navigator.start(" ".join(args))
            out = Result(stdout=b"Events injected: 1\n")
        self.events.append(f"monkey {' '.join(args)} -> {move.position} ({move.reason})")
        return out

    def _keyboard_shown(self) -> str:
        box = self.keyboard_box()
        return "-" if box is None else f"[{box.left},{box.top}][{box.right},{box.bottom}]"

    def _cmd_simctl(self, args: list[str], data_in: bytes) -> Result:
        if args[:1] == ["fault"]:
            for item in args[1:]:
                name, _, value = item.partition("=")
                self.faults.apply(name, value)
            return Result(stdout=(self.faults.describe() + "\n").encode())
        if args[:1] == ["clear"]:
            self.faults.__init__()  # type: ignore[misc]
            return Result(stdout=(self.faults.describe() + "\n").encode())
        if args[:1] == ["goto"]:
            self.navigator.goto(int(args[1]))
            return self._cmd_simctl(["state"], data_in)
        if args[:1] == ["state"]:
            return Result(
                stdout=(
                    f"position={self.navigator.position} step={self.step.step} "
                    f"steps={len(self.recording.steps)} {self.faults.describe()} "
                    f"ime={self.current_ime or '-'} kbd={self._keyboard_shown()}\n"
                ).encode()
            )
        return Result(stderr=b"usage: simctl fault K=V.. | clear | goto N | state\n", code=1)


_INPUT_ARGUMENTS = {"tap": {2}, "swipe": {4, 5}, "draganddrop": {4, 5}}
"""How many numbers each touch command of ``input`` takes."""
_INPUT_USAGE = (
    "Usage: input [<source>] <command> [<arg>...]\n"
    "  tap <x> <y>\n"
    "  swipe <x1> <y1> <x2> <y2> [duration(ms)]\n"
    "  draganddrop <x1> <y1> <x2> <y2> [duration(ms)]\n"
    "  text <string>\n"
    "  keyevent [--longpress] <key code number or name> ...\n"
)
_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?")
"""What Java's ``Float.parseFloat`` reads (decimal forms; surrounding blanks are trimmed)."""
_LOGCAT_VALUE_OPTIONS = frozenset(
    "-v -b -f -r -n -t -T -m -e -G --pid --uid --regex --format --buffer --file "
    "--rotate-kbytes --rotate-count --max-count".split()
)
"""``logcat`` options that take a value (also as ``--name=value`` and ``-vVALUE``)."""
_LOGCAT_FLAGS = frozenset(
    "-s -d -c -B -D -L -Q --dividers --last --binary --clear --wrap --print".split()
)
_LOGCAT_NOT_EMULATED = frozenset(
    "-g -G -S -p -P --buffer-size --statistics --prune".split()
)

_START_OPTIONS = {
    **dict.fromkeys("-W -S -D -N --streaming --track-allocation".split(), 0),
    **START_VALUE_OPTIONS,
}
"""``am start``'s own options (how it waits, profiles or where it puts the activity), with
how many values each takes: none changes which activity starts."""
_QUERY_OPTIONS = {"--brief": 0, "--components": 0, "--query-flags": 1}
"""``query-activities``' own options, with how many values each takes."""
_INTENT_OPTIONS = {
    **dict.fromkeys(INTENT_EXTRAS, 2),
    **INTENT_VALUE_OPTIONS,
    "-p": 1,
    "-n": 1,
    **dict.fromkeys(
        "--grant-read-uri-permission --grant-write-uri-permission --include-stopped-packages "
        "--exclude-stopped-packages --receiver-foreground --receiver-registered-only "
        "--receiver-replace-pending --allow-background-activity-starts --async".split(),
        0,
    ),
}
"""The ``am broadcast`` options understood, with how many values each takes."""


@dataclass(slots=True)
class _Intent:
    """The intent an ``am broadcast`` command line describes."""

    action: str = ""
    categories: list[str] = field(default_factory=list)
    data: str = ""
    mime_type: str = ""
    flags: int = _FLAG_RECEIVER_FOREGROUND
    package: str = ""
    component: str = ""
    extras: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(
        cls, args: list[str], *, flags: int = _FLAG_RECEIVER_FOREGROUND,
        others: dict[str, int] | None = None,
    ) -> _Intent:
        """ValueError carrying the exception line ``am`` prints for an unusable option.
        ``flags``: the ones the command adds itself (``am start`` adds none before it prints
        the intent); ``others``: the command's own options (ignored), with their value counts.

        A bare argument is read as ``am`` reads it: a URI when it holds ``:``, else a
        component when it holds ``/`` (``am start pkg/cls``), else a package; for the last two
        the intent is MAIN, LAUNCHER unless the command named an action."""
        intent = cls(flags=flags)
        options = {**_INTENT_OPTIONS, **(others or {})}
        bare = ""
        i = 0
        while i < len(args):
            option = args[i]
            takes = options.get(option, 0)
            if option.startswith("-") and option not in options:
                raise ValueError(f"java.lang.IllegalArgumentException: Unknown option: {option}")
            values = args[i + 1 : i + 1 + takes]
            if len(values) < takes:
                raise ValueError(
                    f'java.lang.IllegalArgumentException: Argument expected after "{option}"'
                )
            if not option.startswith("-"):
                bare = option
            elif option in (others or {}):
                pass
            elif option in INTENT_EXTRAS:
                intent.extras[values[0]] = values[1]
            elif option == "--esn":
                intent.extras[values[0]] = ""
            elif option == "-a":
                intent.action = values[0]
            elif option == "-c":
                intent.categories.append(values[0])
            elif option == "-d":
                intent.data = values[0]
            elif option == "-t":
                intent.mime_type = values[0]
            elif option == "-f":
                try:
                    intent.flags |= int(values[0], 0)
                except ValueError:
                    raise ValueError(
                        f'java.lang.NumberFormatException: For input string: "{values[0]}"'
                    ) from None
            elif option == "-p":
                intent.package = values[0]
            elif option == "-n":
                intent.component = values[0]
            i += 1 + takes
        if ":" in bare:
            intent.data = bare
        elif bare:
            if "/" in bare:
                intent.component = bare
            else:
                intent.package = bare
            if not intent.action:
                intent.action = _ACTION_MAIN
                intent.categories = intent.categories or [_CATEGORY_LAUNCHER]
        return intent

    @property
    def app(self) -> str:
        """The package the intent starts (its component's, else ``-p``'s), or ``""``."""
        return package_of(self.component) if self.component else self.package

    def short(self) -> str:
        """As ``Intent.toShortString`` writes it (``act=.. cat=[..] .. (has extras)``)."""
        parts = [f"act={self.action}"] if self.action else []
        if self.categories:
            parts.append(f"cat=[{','.join(self.categories)}]")
        parts += [f"dat={self.data}"] if self.data else []
        parts += [f"typ={self.mime_type}"] if self.mime_type else []
        parts += [f"flg={self.flags:#x}"] if self.flags else []
        parts += [f"pkg={self.package}"] if self.package else []
        parts += [f"cmp={short_component(self.component)}"] if self.component else []
        parts += ["(has extras)"] if self.extras else []
        return " ".join(parts)


_B64_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def _android_b64decode(text: str) -> bytes | None:
    """``android.util.Base64.decode(text, DEFAULT)``, or None where it throws: characters
    outside the alphabet are skipped, padding may be missing but not wrong, and one
    character left over (or data after the padding) is an error."""
    kept = "".join(c for c in text if c in _B64_ALPHABET or c == "=")
    body, equals, padding = kept.partition("=")
    padding = equals + padding
    if set(padding) - {"="}:
        return None  # data after the padding
    tail = len(body) % 4
    if tail == 1 or (padding and (tail == 0 or len(padding) != 4 - tail)):
        return None
    return base64.b64decode(body + "=" * (-len(body) % 4))


_SYSTEM_PACKAGES = (
    "android", "com.android.settings", "com.android.chrome", package_of(LATIN_IME),
)
"""The packages of what the phone itself emulates: the system (its "isn't responding"
dialog), Settings, Chrome and Android's keyboard."""
_SYSTEM_PREFIXES = ("com.android.", "com.google.android.")


def _is_system_package(package: str) -> bool:
    """Whether ``pm list packages -s`` lists a recorded package: Android's and Google's own
    (``com.android.*``, ``com.google.android.*``) come with the phone's system image; any
    other app was installed on it (``-3``). A guess from the name: a recording does not say."""
    return package in _SYSTEM_PACKAGES or package.startswith(_SYSTEM_PREFIXES)


def _apk_path(package: str, system: bool) -> str:
    """Where ``pm path`` says a package's APK is (Android 8-10's layout)."""
    if system:
        return f"/system/app/{package}/{package}.apk"
    return f"/data/app/{package}-1/base.apk"


def _hash_hex(kind: str, name: str) -> str:
    """A stable stand-in for a Java identity or content hash in ``dumpsys`` output (as
    ``Integer.toHexString`` writes one: lower case, no leading zeros)."""
    return f"{zlib.crc32(f'{kind}:{name}'.encode()) & 0xFFFFFFF:x}"


_INSTALL_TIME = "2009-01-01 00:00:00"
"""The install and update time ``dumpsys package`` prints for every package: what a phone
prints for its system image's apps, standing in for a time the recording does not know."""


def _package_block(package: str, system: bool) -> list[str]:
    """One package's ``Package [..]`` block of ``dumpsys package``, as Android 11 prints it
    (the values the recording does not know: :meth:`Phone._package_dump`)."""
    apk = _apk_path(package, system)
    code_path = apk.rpartition("/")[0]
    flags = f"[ {'SYSTEM ' if system else ''}HAS_CODE ALLOW_CLEAR_USER_DATA ALLOW_BACKUP ]"
    signer = "platform" if system else package
    return [
        f"  Package [{package}] ({_hash_hex('setting', package)}):",
        f"    userId={_uid(package)}",
        f"    pkg=Package{{{_hash_hex('package', package)} {package}}}",
        f"    codePath={code_path}",
        f"    resourcePath={code_path}",
        f"    legacyNativeLibraryDir={code_path}/lib",
        "    primaryCpuAbi=null",
        "    secondaryCpuAbi=null",
        "    versionCode=0 minSdk=1 targetSdk=30",
        "    versionName=null",
        "    splits=[base]",
        "    apkSigningVersion=2",
        f"    applicationInfo=ApplicationInfo{{{_hash_hex('package', package)} {package}}}",
        f"    flags={flags}",
        "    forceQueryable=false",
        "    queriesPackages=[]",
        f"    dataDir=/data/user/0/{package}",
        "    supportsScreens=[small, medium, large, xlarge, resizeable, anyDensity]",
        f"    timeStamp={_INSTALL_TIME}",
        f"    firstInstallTime={_INSTALL_TIME}",
        f"    lastUpdateTime={_INSTALL_TIME}",
        f"    signatures=PackageSignatures{{{_hash_hex('signatures', package)} version:2, "
        f"signatures:[{_hash_hex('certificate', signer)}], past signatures:[]}}",
        "    installPermissionsFixed=true",
        f"    pkgFlags={flags}",
        f"    User 0: ceDataInode={_uid(package) * 7 % 900000 + 1000} installed=true "
        "hidden=false suspended=false distractionFlags=0 stopped=false notLaunched=false "
        "enabled=0 instant=false virtual=false",
    ]


def _uid(package: str) -> int:
    """A stable uid for ``pm list packages -U``: 1000 for the system, one in the app range
    (10000-18999) read off the name for the others."""
    if package == "android":
        return 1000
    return 10000 + sum(package.encode()) % 9000


_PM_EMULATED = "list packages, path and query-activities"
_PM_VERBS = frozenset(
    "dump resolve-activity query-services query-receivers query-content-providers install "
    "install-abandon install-commit install-create install-write install-remove "
    "install-existing install-multi-package set-install-location get-install-location "
    "move-package move-primary-storage compile reconcile-secondary-dex-files force-dex-opt "
    "bg-dexopt-job dump-profiles snapshot-profile uninstall clear enable disable disable-user "
    "disable-until-used default-state hide unhide suspend unsuspend grant revoke "
    "reset-permissions set-permission-enforced get-privapp-permissions "
    "get-privapp-deny-permissions get-oem-permissions set-app-link get-app-link "
    "set-app-links verify-app-links get-app-links trim-caches create-user remove-user "
    "set-user-restriction get-max-users get-max-running-users set-home-activity set-installer "
    "get-instantapp-resolver has-feature set-harmful-app-warning get-harmful-app-warning "
    "uninstall-system-updates get-moduleinfo log-visibility art".split()
)
"""Android's ``pm`` verbs the phone does not emulate (they say so; any other word is
Android's ``Unknown command``)."""
_PM_LIST_NOUNS = frozenset(
    "permission-groups permissions features libraries instrumentation users staged-sessions "
    "sdks".split()
)
"""What ``pm list`` lists on Android besides packages (not emulated)."""
_PM_LIST_FLAGS = frozenset("-f -d -e -s -3 -i -l -u -U -a --show-versioncode --apex-only".split())


def _not_emulated(what: str, emulated: str) -> Result:
    """A real command the phone does not carry out: one line saying so (and what it does
    carry out), exit 255 (as Android's shell commands fail)."""
    message = f"{what}: not emulated by the virtual phone (it emulates {emulated})\n"
    return Result(stderr=message.encode(), code=255)


def _shell_refusal(name: str, args: list[str], emulated: str) -> Result:
    """A shell utility used in a way the phone does not emulate (an option, a file operand):
    refused with exit 2 (as ``sh`` refuses what it does not emulate) and one line on stderr,
    rather than another answer with exit 0."""
    line = " ".join([name, *args])
    message = f"{name}: '{line}' is not emulated by the virtual phone (it emulates {emulated})\n"
    return Result(stderr=message.encode(), code=2)


def _exception(verb: str, detail: str) -> Result:
    """How Android's shell commands (``ShellCommand``) report what their verb threw: the
    exception's line, exit 255."""
    text = f"Exception occurred while executing '{verb}':\n{detail}\n"
    return Result(stderr=text.encode(), code=255)


def _illegal_argument(verb: str, message: str) -> Result:
    """A bad argument, as Android's shell commands report one (:func:`_exception`)."""
    return _exception(verb, f"java.lang.IllegalArgumentException: {message}")


class _ShellError(ValueError):
    """A command line sh refuses (a syntax error) or that the phone does not emulate."""


def _unsupported(what: str) -> _ShellError:
    return _ShellError(f"{what} is not emulated by the virtual phone; quote it to pass it as text")


@enum.unique
class _Stream(enum.Enum):
    """Where a descriptor points, other than a file (a file is its path)."""

    STDOUT = enum.auto()
    STDERR = enum.auto()
    DISCARD = enum.auto()


_Route = _Stream | str


@dataclass(frozen=True, slots=True)
class _Param:
    """``$NAME``, ``${NAME}`` or a special parameter such as ``$?``: read when its command runs
    (``false; echo $?`` prints 1), so it stays apart from the literal text around it."""

    name: str
    quoted: bool = False
    """Inside ``"..."``: its value stays one piece (sh splits an unquoted one at blanks)."""


@dataclass(frozen=True, slots=True)
class _Word:
    """One shell word after quote removal: literal pieces and the parameters between them.

    ``quoted`` says some of it was quoted: ``''`` is an empty argument, while an unquoted
    expansion that comes out empty is no argument at all (as in sh).
    """

    parts: tuple[str | _Param, ...]
    quoted: bool
    assigns: str = ""
    """The variable an assignment word (``NAME=value``, ``NAME`` unquoted) sets, else ``""``
    (only where a command's name would be is it read as one)."""


@dataclass(frozen=True, slots=True)
class _Redirect:
    fd: int
    op: str
    """``>``, ``>>``, ``>&`` (point ``fd`` where the target descriptor points) or ``<``."""
    target: _Word


@dataclass(frozen=True, slots=True)
class _Command:
    words: tuple[_Word, ...]
    redirects: tuple[_Redirect, ...]


_Token = _Word | _Redirect | str
"""A word, a redirect, or an operator: ``;``, ``&``, ``&&``, ``||``, ``|`` or a newline."""

_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_CHARS = _NAME_START | frozenset("0123456789")
_SPECIAL_PARAMS = frozenset("?#$!-*@0123456789")
_DOUBLE_QUOTE_ESCAPES = frozenset('$`"\\\n')
_TILDE_ENDS = frozenset(("", "/", " ", "\t", "\n", ";", "&", "|", "<", ">"))
"""What may follow a word's unquoted leading ``~`` for it to be ``$HOME`` (not ``~user``)."""
_ENVIRONMENT = {
    "HOME": "/",
    "USER": "shell",
    "LOGNAME": "shell",
    "SHELL": "/system/bin/sh",
    "TMPDIR": "/data/local/tmp",
    "EXTERNAL_STORAGE": "/sdcard",
    "ANDROID_DATA": "/data",
    "ANDROID_ROOT": "/system",
    "PATH": "/product/bin:/apex/com.android.runtime/bin:/apex/com.android.art/bin:"
    "/system_ext/bin:/system/bin:/system/xbin:/odm/bin:/vendor/bin:/vendor/xbin",
}
"""The environment ``adb shell`` gives (Android 11); other names expand to nothing."""
_SHELL_PID = "4242"


def _param_value(name: str, last_code: int, variables: dict[str, str]) -> str:
    if name == "?":
        return str(last_code)
    if name == "#":
        return "0"
    if name == "0":
        return "/system/bin/sh"
    if name == "$":
        return _SHELL_PID
    return variables.get(name, "")


def _expand(word: _Word, last_code: int, variables: dict[str, str]) -> str:
    """The word's text with its parameters read now, as one string (a redirect's target, an
    assignment's value: sh splits neither)."""
    return "".join(
        p if isinstance(p, str) else _param_value(p.name, last_code, variables)
        for p in word.parts
    )


_IFS_RUN = re.compile(r"[ \t\n]+")


def _fields(word: _Word, last_code: int, variables: dict[str, str]) -> list[str]:
    """The arguments ``word`` becomes, as sh splits it: an unquoted parameter's value splits
    at blanks (``A='a b'; input text $A`` types ``a``), a quoted one stays whole, and a word
    that comes out empty is no argument unless some of it was quoted (``''`` is one)."""
    fields: list[str] = []
    current: list[str] = []
    kept = word.quoted
    for part in word.parts:
        if isinstance(part, str):
            current.append(part)
            kept = True
            continue
        value = _param_value(part.name, last_code, variables)
        if part.quoted:
            current.append(value)
            continue
        for i, piece in enumerate(_IFS_RUN.split(value) if value else ()):
            if i:  # blanks before this piece end the field so far
                if current or kept:
                    fields.append("".join(current))
                current, kept = [], False
            if piece:
                current.append(piece)
                kept = True
    if current or kept:
        fields.append("".join(current))
    return fields


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
"""A word that starts ``NAME=`` unquoted: an assignment where a command's name would be."""


def _export(args: list[str], variables: dict[str, str]) -> Result:
    """``export [NAME[=value]] ..``: sets what has a value (every variable of this shell is
    passed on to the commands it runs, so marking one changes nothing else); with no
    names it lists the variables as ``export -p`` does."""
    if not args or args == ["-p"]:
        lines = (f"export {name}={sh_quote(value)}\n" for name, value in sorted(variables.items()))
        return Result(stdout="".join(lines).encode())
    out = Result()
    for arg in args:
        name, equals, value = arg.partition("=")
        if not _IDENTIFIER.fullmatch(name):
            out.stderr += f"/system/bin/sh: export: {arg}: is not an identifier\n".encode()
            out.code = 1
        elif equals:
            variables[name] = value
    return out


def _unset(args: list[str], variables: dict[str, str]) -> Result:
    """``unset NAME ..``: the variables expand to nothing from here on."""
    out = Result()
    for name in args:
        if not _IDENTIFIER.fullmatch(name):
            out.stderr += f"/system/bin/sh: unset: {name}: is not an identifier\n".encode()
            out.code = 1
        variables.pop(name, None)
    return out


_SPECIAL_BUILTINS: dict[str, Callable[[list[str], dict[str, str]], Result]] = {
    "export": _export,
    "unset": _unset,
}
"""The shell's own commands that change its variables (``exec`` is read in
:meth:`Phone._pipeline`: it changes what runs)."""


class _Lexer:
    """Reads one command line as mksh does, for what the phone emulates: words quoted with
    ``'...'``, ``"..."`` and ``\\``; ``$NAME``, ``${NAME}`` and ``$?`` outside single quotes;
    the operators ``;``, ``&``, ``&&``, ``||``, ``|`` and newline only where unquoted;
    ``[N]>``, ``>>``, ``>&N``, ``<`` redirects; ``#`` comments. Quoting is kept with each
    word, so ``input text ';'`` types a semicolon instead of ending the command."""

    def __init__(self, line: str) -> None:
        self.line = line
        self.i = 0
        self.tokens: list[_Token] = []
        self.parts: list[str | _Param] = []
        self.text: list[str] = []
        self.quoted = False
        self.in_word = False
        self.pending: tuple[int, str] | None = None
        """A redirect waiting for its target word."""
        self.word_start = 0
        """Where the current word starts in the line (an assignment's ``NAME=`` is read off
        its source, where quoting shows)."""
        self.in_double_quotes = False

    def _peek(self) -> str:
        return self.line[self.i] if self.i < len(self.line) else ""

    def _literal(self, text: str) -> None:
        self.text.append(text)
        self.in_word = True

    def _param(self, name: str) -> None:
        if self.text:
            self.parts.append("".join(self.text))
            self.text = []
        self.parts.append(_Param(name, self.in_double_quotes))
        self.in_word = True

    def _end_word(self) -> None:
        if not self.in_word:
            return
        if self.text:
            self.parts.append("".join(self.text))
        assignment = _ASSIGNMENT.match(self.line, self.word_start)
        assigns = assignment.group(1) if assignment and self.pending is None else ""
        word = _Word(tuple(self.parts), self.quoted, assigns)
        self.parts, self.text, self.quoted, self.in_word = [], [], False, False
        if self.pending is not None:
            fd, op = self.pending
            self.pending = None
            self.tokens.append(_Redirect(fd, op, word))
        else:
            self.tokens.append(word)

    def _operator(self, op: str) -> None:
        self._end_word()
        if self.pending is not None:
            raise _ShellError(f"syntax error: {_shown(op)} unexpected")
        self.tokens.append(op)

    def lex(self) -> list[_Token]:
        line = self.line
        while self.i < len(line):
            c = line[self.i]
            if not self.in_word:
                self.word_start = self.i
            self.i += 1
            if c in " \t":
                self._end_word()
            elif c == "#" and not self.in_word:
                end = line.find("\n", self.i)
                self.i = len(line) if end < 0 else end
            elif c == "\\":
                nxt = self._peek()
                self.i += 1 if nxt else 0
                if nxt != "\n":  # a backslash-newline joins the lines
                    self._literal(nxt or "\\")
                    self.quoted = self.quoted or bool(nxt)
            elif c == "'":
                end = line.find("'", self.i)
                if end < 0:
                    raise _ShellError("syntax error: no closing quote")
                self._literal(line[self.i : end])
                self.quoted = True
                self.i = end + 1
            elif c == '"':
                self._double_quoted()
            elif c == "$":
                self._dollar()
            elif c == "~" and not self.in_word and self._peek() in _TILDE_ENDS:
                self._param("HOME")
            elif c == "`":
                raise _unsupported("command substitution (`...`)")
            elif c in ";&|\n":
                pair = line[self.i - 1 : self.i + 1]
                if pair == ";;":
                    raise _ShellError("syntax error: ';;' unexpected")
                if pair in {"&&", "||"}:
                    self.i += 1
                    c = pair
                self._operator(c)
            elif c in "<>":
                self._redirect(c)
            elif c in "()":
                raise _unsupported(f"an unquoted '{c}' (subshells, functions)")
            else:
                self._literal(c)
        self._end_word()
        if self.pending is not None:
            raise _ShellError("syntax error: a redirect without a file at the end of the line")
        return self.tokens

    def _double_quoted(self) -> None:
        """Inside ``"..."``: ``$`` expands, ``\\`` escapes only ``$ ` " \\`` and newline."""
        self.quoted = True
        self.in_word = True
        self.in_double_quotes = True
        line = self.line
        while True:
            if self.i >= len(line):
                raise _ShellError("syntax error: no closing quote")
            c = line[self.i]
            self.i += 1
            if c == '"':
                self.in_double_quotes = False
                return
            if c == "\\" and self._peek() in _DOUBLE_QUOTE_ESCAPES:
                if self._peek() != "\n":
                    self._literal(self._peek())
                self.i += 1
            elif c == "$":
                self._dollar()
            elif c == "`":
                raise _unsupported("command substitution (`...`)")
            else:
                self._literal(c)

    def _dollar(self) -> None:
        line = self.line
        nxt = self._peek()
        if nxt == "(":
            if line.startswith("((", self.i):
                raise _unsupported("arithmetic ($((...)))")
            raise _unsupported("command substitution ($(...))")
        if nxt == "{":
            end = line.find("}", self.i)
            if end < 0:
                raise _ShellError("syntax error: missing '}'")
            name = line[self.i + 1 : end]
            plain = bool(name) and name[0] in _NAME_START and set(name) <= _NAME_CHARS
            if not (plain or (len(name) == 1 and name in _SPECIAL_PARAMS)):
                raise _unsupported(f"the expansion '${{{name}}}'")
            self._param(name)
            self.i = end + 1
        elif nxt and nxt in _SPECIAL_PARAMS:
            self._param(nxt)
            self.i += 1
        elif nxt and nxt in _NAME_START:
            end = self.i
            while end < len(line) and line[end] in _NAME_CHARS:
                end += 1
            self._param(line[self.i : end])
            self.i = end
        else:
            self._literal("$")

    def _redirect(self, c: str) -> None:
        digits = "".join(self.text)
        if self.in_word and not self.quoted and not self.parts and digits.isdigit():
            fd = int(digits)  # "2>": the word before is the descriptor
            self.text, self.in_word = [], False
        else:
            self._end_word()
            fd = 1 if c == ">" else 0
        if self.pending is not None:
            raise _ShellError(f"syntax error: '{c}' unexpected")
        nxt = self._peek()
        op = c
        if c == ">" and nxt in {">", "&", "|"}:
            op = ">" if nxt == "|" else c + nxt
            self.i += 1
        elif c == "<" and nxt in {"<", "&", ">"}:
            raise _unsupported(f"the redirect '<{nxt}'")
        self.pending = (fd, op)


def _shown(op: str) -> str:
    return "newline" if op == "\n" else f"'{op}'"


def _parse(line: str) -> list[tuple[str, list[_Command]]]:
    """The command line as and-or lists: each pipeline with the connector before it
    (``;``, ``&&`` or ``||``; ``&`` runs in order, as ``;`` does: no background jobs here)."""
    lists: list[tuple[str, list[_Command]]] = []
    pipeline: list[_Command] = []
    words: list[_Word] = []
    redirects: list[_Redirect] = []
    connector = ";"
    for token in _Lexer(line).lex():
        if isinstance(token, _Word):
            words.append(token)
            continue
        if isinstance(token, _Redirect):
            redirects.append(token)
            continue
        if not words and not redirects:
            if token == "\n":
                continue  # blank lines, and newlines after | && ||, are allowed
            raise _ShellError(f"syntax error: {_shown(token)} unexpected")
        pipeline.append(_Command(tuple(words), tuple(redirects)))
        words, redirects = [], []
        if token == "|":
            continue
        lists.append((connector, pipeline))
        pipeline = []
        connector = token if token in {"&&", "||"} else ";"
    if words or redirects:
        pipeline.append(_Command(tuple(words), tuple(redirects)))
        lists.append((connector, pipeline))
    elif pipeline or connector != ";":
        raise _ShellError("syntax error: unexpected end of line")
    return lists
