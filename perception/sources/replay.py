"""A recording served through the source protocols, and the rules that move along it.

:class:`Navigator` is the state machine shared by :class:`ReplaySource` and the virtual phone
(:mod:`perception.simdevice`): a tap inside the recorded target of the current step goes to the
step the recorded action led to (``result_step``, else the following step); anything else stays;
BACK follows a recorded back, else returns to the previously visited step; a start of an app
(``am start``, ``monkey -p``) follows a recorded intent only when it starts the same package, or
the recorded tap that went into that app (:meth:`Navigator.start`).

:class:`ReplaySource` serves the current step's files with fresh ``time.monotonic_ns()``
timestamps. Timing modes: ``manual`` (the step moves only by actions or :meth:`advance`),
``original`` (steps follow the recorded capture times from :meth:`ReplaySource.start`, scaled
by ``speed``), and :func:`iter_steps` for as-fast-as-possible or original-timing playback.
"""

from __future__ import annotations

import enum
import logging
import math
import re
import shlex
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from perception.errors import AppStartError, RecordingError
from perception.sources.base import (
    ADB_KEYBOARD_IME,
    COMPONENT,
    PACKAGE,
    EpochCounter,
    FrameCapture,
    FrameFormat,
    ScreenFacts,
    TreeCapture,
    now_ns,
    package_of,
)
from perception.sources.recording import (
    ActionKind,
    RecordedAction,
    RecordedStep,
    Recording,
    normalise_key,
    read_recording,
)
from perception.types import BoxPx, PointPx, ScreenSize

log = logging.getLogger(__name__)

MIN_SPEED = 0.001
"""Slowest playback: below it the recorded gaps grow past what ``time.sleep`` takes (a speed
of 1e-300 was an OverflowError)."""
TAP_TOLERANCE_NORM = 0.04
"""Without a recorded target, a tap within this share of the screen width of the point counts."""

INTENT_EXTRAS = frozenset(
    "--es --ei --eu --ecn --eia --eial --el --ela --elal --ef --efa --efal --esa --esal --ez"
    .split()
)
"""``am`` extras that take a key and a value (``--esn KEY`` takes a key only)."""
INTENT_VALUE_OPTIONS = dict.fromkeys(
    "-a -c -d -t -f --esn --user --receiver-permission".split(), 1
)
"""``am``'s intent options that take one value (besides ``-n`` and ``-p``, the app's)."""
START_VALUE_OPTIONS = dict.fromkeys(
    "-R -P --start-profiler --sampling --attach-agent --display --windowingMode --activityType "
    "--task --stack".split(),
    1,
)
"""``am start``'s own options that take one value (how it profiles or where it puts the
activity: none changes which activity starts)."""
_VALUE_OPTIONS = {
    **dict.fromkeys((*INTENT_EXTRAS, "-e"), 2),  # -e: --es, as am reads it
    **INTENT_VALUE_OPTIONS,
    **START_VALUE_OPTIONS,
    **dict.fromkeys("-s --throttle --pkg-blacklist-file --pkg-whitelist-file".split(), 1),
}
"""``am`` and ``monkey`` options with how many values follow them (skipped when looking for
the app a command starts: ``-d http://x/y`` or ``--ecn k com.x/.Y`` names no app to start)."""


@dataclass(frozen=True, slots=True)
class IntentTarget:
    """The app an ``am start`` or ``monkey`` command line starts (``""`` where it names none)."""

    package: str = ""
    component: str = ""


def intent_target(command: str) -> IntentTarget:
    """The package and component ``command`` starts: ``-n pkg/cls``, a bare ``pkg/cls``
    argument (DroidBot records ``am start pkg/cls``), ``-p PKG`` (monkey's form) or a bare
    package (``am start com.android.settings``, which am reads as ``-p``)."""
    try:
        words = shlex.split(command)
    except ValueError:  # an unbalanced quote: read it as words
        words = command.split()
    package = component = ""
    i = 0
    while i < len(words):
        word = words[i]
        if word in {"-n", "-p"} and i + 1 < len(words):
            if word == "-n":
                component = words[i + 1]
            else:
                package = package or words[i + 1]
            i += 2
            continue
        takes = _VALUE_OPTIONS.get(word)
        if takes is None and word.startswith("--pct-"):
            takes = 1  # monkey's event percentages
        if takes is not None:
            i += 1 + takes
            continue
        if not component and not word.startswith("-") and COMPONENT.fullmatch(word):
            component = word
        elif not package and PACKAGE.fullmatch(word):
            package = word  # am reads a bare argument without "/" or ":" as -p PKG
        i += 1
    if component:
        package = package_of(component)
    return IntentTarget(package, component)


def short_component(component: str) -> str:
    """``component`` as a phone prints it (``ComponentName.flattenToShortString``): a class
    inside the package is written from its dot (``com.x/com.x.Main`` -> ``com.x/.Main``)."""
    package, _, cls = component.partition("/")
    if cls.startswith(package + ".") and len(cls) > len(package) + 1:
        return f"{package}/{cls[len(package):]}"
    return component


def full_component(component: str) -> str:
    """``component`` with its class written in full (``com.x/.Main`` -> ``com.x/com.x.Main``),
    for comparing two spellings of one activity."""
    package, _, cls = component.partition("/")
    return f"{package}/{package}{cls}" if cls.startswith(".") else component


def recorded_components(recording: Recording) -> tuple[str, ...]:
    """The components the recording's intents start, each once, in step order, as a phone's
    launcher query prints them (:func:`short_component`)."""
    out: dict[str, None] = {}
    for step in recording.steps:
        action = step.action
        if action is not None and action.kind is ActionKind.INTENT:
            component = intent_target(action.intent).component
            if component:
                out.setdefault(short_component(component))
    return tuple(out)


def focus_of(step: RecordedStep) -> tuple[str, str]:
    """The package and activity in front on ``step`` (what the virtual phone's ``dumpsys
    window`` names): the recorded ones, else ``PKG/.Main`` (the launcher's where the step names
    no package). A recorder's ``null`` (Java's, for an activity it could not read) names none."""
    recorded = "" if step.activity == "null" else step.activity
    activity = recorded or f"{step.package or 'com.android.launcher'}/.Main"
    package = step.package or activity.split("/")[0]
    if "/" not in activity:
        activity = f"{package}/{activity}"
    return package, activity


_NOT_LAUNCHED = frozenset({
    "android", "com.android.systemui", "com.android.inputmethod.latin",
    "com.google.android.inputmethod.latin", package_of(ADB_KEYBOARD_IME),
})
_NOT_LAUNCHED_SUFFIXES = (".packageinstaller", ".permissioncontroller", ".documentsui")
_HOME_PACKAGE = re.compile(r"com\.android\.launcher\d*")
"""AOSP's home screen (and the package :func:`focus_of` names where a step records none)."""
_HOME_CLASS = re.compile(r"\w*Launcher|\w+LauncherActivity|GEL|ImageWallpaper")
"""The simple class names of home-screen activities (Launcher3's ``Launcher`` and
``QuickstepLauncher``, ``NexusLauncherActivity``, ``NovaLauncher``, Google's ``GEL``), and
the wallpaper window recorders name as the focus of a home screen; an app's own
``LauncherActivity`` (a common splash screen's name) is not one."""


def _launcher_app(package: str, activities: list[str]) -> bool:
    """Whether a phone's launcher would list ``package``, judged from its name and the
    activities the recording shows of it (a recording holds no intent filters): not the
    system's own windows (the ``android`` resolver, System UI, the keyboards, the permission
    and package-installer dialogs, the document picker), and not a home screen."""
    if package in _NOT_LAUNCHED or package.endswith(_NOT_LAUNCHED_SUFFIXES):
        return False
    if _HOME_PACKAGE.fullmatch(package):
        return False
    return not any(_HOME_CLASS.fullmatch(a.rpartition(".")[2]) for a in activities)


def shown_apps(recording: Recording, listed: frozenset[str] = frozenset()) -> tuple[str, ...]:
    """A launcher activity for each app the recording shows but never starts by intent (a run
    that opened it by tapping its icon, or began inside it), in step order: the first activity
    the recording names for it, else the one :func:`focus_of` names for its first screen
    (``PKG/.Main`` where a step records no activity). A recording holds no intent filters, so
    this is the fair guess: the first screen seen of an app is most often its launcher's. Left
    out, as a phone's launcher leaves them out: the packages of :func:`recorded_components`
    and of ``listed``, and the system's own screens (home screens, permission and picker
    dialogs, keyboards)."""
    listed = listed | {package_of(c) for c in recorded_components(recording)}
    first: dict[str, str] = {}
    recorded: dict[str, str] = {}
    activities: dict[str, list[str]] = {}
    for step in recording.steps:
        package, activity = focus_of(step)
        first.setdefault(package, activity)
        activities.setdefault(package, []).append(activity)
        if COMPONENT.fullmatch(step.activity) and package_of(step.activity) == package:
            recorded.setdefault(package, short_component(step.activity))
    out = []
    for package, activity in first.items():
        chosen = recorded.get(package, short_component(activity))
        if (package not in listed and COMPONENT.fullmatch(chosen)
                and _launcher_app(package, activities[package])):
            out.append(chosen)
    return tuple(out)


def launcher_apps(recording: Recording) -> tuple[str, ...]:
    """The apps a replay of ``recording`` can start: the ones it starts by intent
    (:func:`recorded_components`), then one activity of each other app it shows
    (:func:`shown_apps`), each once, as a phone's launcher query prints them."""
    return (*recorded_components(recording), *shown_apps(recording))


@enum.unique
class Timing(enum.StrEnum):
    MANUAL = "manual"
    ORIGINAL = "original"
    FAST = "fast"


@dataclass(frozen=True, slots=True)
class Move:
    """What an input did to the replay position."""

    moved: bool
    position: int
    reason: str


class Navigator:
    """The position in a recording and the rules that move it (thread-safe)."""

    def __init__(self, recording: Recording) -> None:
        self._recording = recording
        self._position = 0
        self._history: list[int] = []
        self._changes = 0
        self._lock = threading.Lock()

    @property
    def recording(self) -> Recording:
        return self._recording

    @property
    def position(self) -> int:
        return self._position

    @property
    def changes(self) -> int:
        """How many times the position changed: state tied to one visit of a step (the
        virtual phone's keyboard closed by BACK) ends when it changes, even to a step seen
        before."""
        return self._changes

    def _set_locked(self, target: int) -> None:
        if target != self._position:
            self._changes += 1
        self._position = target

    @property
    def current(self) -> RecordedStep:
        return self._recording.steps[self._position]

    def goto(self, position: int) -> Move:
        with self._lock:
            if not 0 <= position < len(self._recording.steps):
                raise RecordingError(
                    f"step position {position} outside 0..{len(self._recording.steps) - 1}"
                )
            return self._move_locked(position, "goto")

    def advance(self) -> Move:
        """Follow the current step's recorded action (or go to the next step)."""
        with self._lock:
            return self._follow_locked("advance")

    def tap(self, point: PointPx, *, long: bool = False) -> Move:
        with self._lock:
            action = self.current.action
            wanted = {ActionKind.LONG_TAP, ActionKind.TAP} if long else {ActionKind.TAP}
            if action is None or action.kind not in wanted:
                return Move(False, self._position, "no recorded tap here")
            if not self._hits(action, point):
                return Move(False, self._position, "tap outside the recorded target")
            return self._follow_locked("tap on the recorded target")

    def swipe(self, start: PointPx, end: PointPx) -> Move:
        with self._lock:
            action = self.current.action
            if action is None or action.kind is not ActionKind.SWIPE:
                return Move(False, self._position, "no recorded swipe here")
            if action.target_px is not None and not action.target_px.contains(start):
                return Move(False, self._position, "swipe starts outside the recorded target")
            return self._follow_locked("recorded swipe")

    def text(self, text: str) -> Move:
        with self._lock:
            action = self.current.action
            if action is None or action.kind is not ActionKind.TEXT:
                return Move(False, self._position, "no recorded text input here")
            return self._follow_locked("recorded text input")

    def key(self, name: str) -> Move:
        key = normalise_key(name)
        with self._lock:
            action = self.current.action
            if action is not None and action.kind is ActionKind.KEY and action.key == key:
                return self._follow_locked(f"recorded {key}", back=key == "BACK")
            if key == "BACK" and self._history:
                previous = self._history.pop()
                self._set_locked(previous)
                return Move(True, previous, "back to the previous step")
            return Move(False, self._position, f"no recorded {key} here")

    def intent(self, command: str) -> Move:
        """Follow the recorded intent when ``command`` starts its package (or names none, or
        the recorded one names none): starting another app does not replay this one's."""
        with self._lock:
            return self._intent_locked(intent_target(command).package)

    def _intent_locked(self, wanted: str) -> Move:
        action = self.current.action
        if action is None or action.kind is not ActionKind.INTENT:
            return Move(False, self._position, "no recorded intent here")
        recorded = intent_target(action.intent).package
        if wanted and recorded and wanted != recorded:
            return Move(
                False, self._position,
                f"no recorded intent for {wanted} here (it starts {recorded})",
            )
        return self._follow_locked("recorded intent")

    def start(self, command: str) -> Move:
        """Start the app ``command`` names (``am start``, ``monkey -p``): follow the recorded
        intent when it starts that app (:meth:`intent`), else the step's other recorded action
        (a tap on the app's icon) when that is how the recording went into the app: this step
        shows another, the step the action leads to shows it. Anywhere else the screen stays
        (the recording holds no screen of the app to show from here)."""
        package = intent_target(command).package
        with self._lock:  # one lock: no other input moves the replay between the two rules
            move = self._intent_locked(package)
            steps = self._recording.steps
            if move.moved or not package or package == focus_of(self.current)[0]:
                return move
            action = self.current.action
            if action is None:
                return move
            target = None
            if action.result_step is not None:
                target = self._recording.position_of(action.result_step)
            if target is None:
                target = self._position + 1
            if target >= len(steps) or focus_of(steps[target])[0] != package:
                return move
            return self._follow_locked(f"recorded way into {package}")

    def _hits(self, action: RecordedAction, point: PointPx) -> bool:
        if action.target_px is not None:
            return action.target_px.contains(point)
        if action.point_px is None:
            return False
        screen = self.current.screen or ScreenSize(1080, 1920)
        radius = max(8, int(screen.width_px * TAP_TOLERANCE_NORM))
        box = BoxPx(
            action.point_px.x - radius,
            action.point_px.y - radius,
            action.point_px.x + radius + 1,
            action.point_px.y + radius + 1,
        )
        return box.contains(point)

    def _follow_locked(self, reason: str, *, back: bool = False) -> Move:
        action = self.current.action
        target: int | None = None
        if action is not None and action.result_step is not None:
            target = self._recording.position_of(action.result_step)
        if target is None:
            target = self._position + 1
        if target >= len(self._recording.steps):
            return Move(False, self._position, f"{reason}: end of the recording")
        if back:
            # Going back unwinds the history instead of growing it.
            if self._history and self._history[-1] == target:
                self._history.pop()
            self._set_locked(target)
            return Move(True, target, reason)
        return self._move_locked(target, reason)

    def _move_locked(self, target: int, reason: str) -> Move:
        if target != self._position:
            self._history.append(self._position)
            del self._history[:-64]
        self._set_locked(target)
        log.debug("replay -> position %d (%s)", target, reason)
        return Move(True, target, reason)


class ReplaySource(EpochCounter):
    """A recording as a :class:`~perception.sources.base.ScreenSource`."""

    def __init__(
        self,
        recording: Recording | str | Path,
        *,
        timing: Timing | str = Timing.MANUAL,
        speed: float = 1.0,
        serial: str | None = None,
        clock: Callable[[], int] = now_ns,
    ) -> None:
        self._recording = (
            recording if isinstance(recording, Recording) else read_recording(recording)
        )
        self._timing = Timing(timing)
        _check_speed(speed)
        self._speed = speed
        self._serial = serial or self._recording.serial or "replay"
        self._clock = clock
        self._navigator = Navigator(self._recording)
        self._epoch = 0
        self._t0_ns = clock()
        self._lock = threading.Lock()
        self._closed = False

    @property
    def recording(self) -> Recording:
        return self._recording

    @property
    def navigator(self) -> Navigator:
        return self._navigator

    def start(self) -> None:
        """Restart the clock of ``original`` timing at the first step."""
        self._t0_ns = self._clock()
        self._navigator.goto(0)

    def advance(self) -> Move:
        move = self._navigator.advance()
        if move.moved:
            self.new_epoch()
        return move

    def perform(self, action: RecordedAction) -> Move:
        """Apply an action to the replay (as the virtual phone does for ``input``)."""
        nav = self._navigator
        if action.kind in (ActionKind.TAP, ActionKind.LONG_TAP) and action.point_px is not None:
            move = nav.tap(action.point_px, long=action.kind is ActionKind.LONG_TAP)
        elif action.kind is ActionKind.SWIPE and action.point_px and action.end_px:
            move = nav.swipe(action.point_px, action.end_px)
        elif action.kind is ActionKind.TEXT:
            move = nav.text(action.text)
        elif action.kind is ActionKind.KEY:
            move = nav.key(action.key)
        elif action.kind is ActionKind.INTENT:
            move = nav.intent(action.intent)
        else:
            move = Move(False, nav.position, "nothing to do")
        self.new_epoch()
        return move

    def launchable_apps(self) -> tuple[str, ...]:
        """The apps the recording starts by intent and the other apps it shows
        (:func:`launcher_apps`, in the form in which the device source's ``launchable_apps``
        lists a phone's); ``()`` when none."""
        return launcher_apps(self._recording)

    def start_app(self, component: str) -> Move:
        """Start ``component`` as ``am start -n COMPONENT`` does on the virtual phone
        (:meth:`Navigator.start`): the replay follows the current step's recorded intent when
        it starts that package, or its recorded tap when that is how the recording went into
        the app, and stays otherwise (the move says which). Starts a new epoch;
        :class:`AppStartError` (and nothing moves) when ``component`` is not a
        ``package/activity``, as the device source does."""
        if not COMPONENT.fullmatch(component):
            raise AppStartError(f"{component!r} is not a package/activity", serial=self._serial)
        move = self._navigator.start(f"am start -n {component}")
        self.new_epoch()
        return move

    def _current(self) -> RecordedStep:
        if self._closed:
            raise RecordingError("replay source is closed")
        if self._timing is Timing.ORIGINAL:
            elapsed_ns = int((self._clock() - self._t0_ns) * self._speed)
            steps = self._recording.steps
            base = steps[0].tree_start_ns
            pos = 0
            for i, s in enumerate(steps):
                if s.tree_start_ns - base <= elapsed_ns:
                    pos = i
            if pos != self._navigator.position:
                self._navigator.goto(pos)
                self.new_epoch()
        return self._navigator.current

    def capture_tree(self) -> TreeCapture:
        start = self._clock()
        step = self._current()
        xml = step.read_tree()
        return TreeCapture(
            xml=xml, start_ns=start, end_ns=self._clock(), epoch=self._epoch,
            serial=self._serial, step=step.step, keyboard_px=step.keyboard_px,
        )

    def capture_frame(self) -> FrameCapture:
        start = self._clock()
        step = self._current()
        data = step.read_frame()
        return FrameCapture(
            data=data, fmt=step.frame_fmt or FrameFormat.PNG, start_ns=start,
            end_ns=self._clock(), epoch=self._epoch, serial=self._serial, step=step.step,
        )

    def screen_facts(self, *, refresh: bool = False) -> ScreenFacts:
        step = self._current()
        return ScreenFacts(
            size=step.screen or self._recording.screen,
            density_dpi=self._recording.density_dpi,
            rotation=step.rotation,
            package=step.package,
            activity=step.activity,
            insets=step.insets,
            captured_ns=self._clock(),
        )

    def close(self) -> None:
        self._closed = True

    def __enter__(self) -> ReplaySource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_steps(
    recording: Recording, *, timing: Timing | str = Timing.FAST, speed: float = 1.0
) -> Iterator[RecordedStep]:
    """Yield the steps in recorded order; with ``original`` timing, sleep the recorded gaps."""
    mode = Timing(timing)
    _check_speed(speed)
    t0 = time.monotonic_ns()
    base = recording.steps[0].tree_start_ns
    for step in recording.steps:
        if mode is Timing.ORIGINAL:
            due_ns = t0 + int((step.tree_start_ns - base) / speed)
            wait_ns = due_ns - time.monotonic_ns()
            if wait_ns > 0:
                time.sleep(wait_ns / 1e9)
        yield step


def _check_speed(speed: float) -> None:
    if not (math.isfinite(speed) and speed >= MIN_SPEED):
        raise RecordingError(f"speed must be a finite number >= {MIN_SPEED}, got {speed}")
