"""Action -> device commands.

Positions go through :mod:`perception.geometry` only: a candidate is tapped at the centre of its
box clipped to the screen (:func:`perception.sources.base.tap_point`), a slider is tapped along
its clipped box where its track holds the value asked (:meth:`Executor.slider_point`), grid
points become pixels
with :func:`perception.geometry.point_pm_to_px`, and a swipe inside a candidate is planned on the
0-1000 grid from :func:`perception.geometry.box_px_to_pm` before it is mapped back.

Two input sinks speak to a phone:

- :class:`AdbInput` sends ``input tap|swipe|text|keyevent`` through the perception device source
  (:class:`perception.sources.device.DeviceSource`, which owns the adbutils connection and starts
  a new action epoch per command); text that ``input text`` cannot type (anything but printable
  ASCII) goes through ADB Keyboard when it is the phone's input method
  (:meth:`~perception.sources.device.DeviceSource.type_text`); the virtual phone
  (``perception-simdevice``) understands the same commands;
- :class:`ReplayInput` applies the same actions to a :class:`perception.ReplaySource`, whose
  navigator moves along the recording when the action hits the recorded target.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from agent.actions import (
    Action,
    Direction,
    Finish,
    Key,
    KeyName,
    LongPress,
    OpenApp,
    SetSlider,
    Swipe,
    Tap,
    TapAt,
    Type,
    Wait,
    focused_fields,
    typeable,
)
from agent.apps import AppNotFoundError, resolve_app
from perception.errors import (
    DEVICE_GONE,
    AppStartError,
    DeviceError,
    InputMethodError,
    PerceptionError,
)
from perception.geometry import GRID_PM, box_px_to_pm, clip_box, point_pm_to_px
from perception.pipeline import Observation
from perception.sources.base import ADB_KEYBOARD_IME, tap_point
from perception.sources.recording import ActionKind as RecordedKind, RecordedAction
from perception.sources.replay import ReplaySource
from perception.types import BoxPm, ElementFlag, PointPm, PointPx, ScreenSize

if TYPE_CHECKING:  # a type only: importing the device module imports adbutils (a live phone)
    from perception.sources.device import PowerState

log = logging.getLogger(__name__)


SWIPE_MS = 300
LONG_PRESS_MS = 700
FOCUS_MS = 250
"""Pause between tapping a field and typing into it (the keyboard takes focus)."""
KEY_DEL, KEY_FORWARD_DEL = 67, 112
"""Backspace and delete: n of each clear a field of n characters wherever the cursor is."""
KEYS_PER_COMMAND = 256
"""Key codes one ``input keyevent`` command sends (each command starts a process)."""
MAX_CLEAR_CHARS = 2_000
"""A field holding more is not cleared key by key (thousands of key events take too long):
the action is refused unless ADB Keyboard clears it in one broadcast, or it appends."""
SWIPE_SPAN_PM = (250, 750)
"""A screen-wide directional swipe runs between these grid positions."""
SLIDER_END_PX = 1
"""``set`` to 0 or 1 taps this far inside the slider's box from its end: short of the track,
where Android's SeekBar reads its minimum or maximum whatever its padding."""
SWIPE_INSET_PM = 200
"""A swipe inside a candidate keeps this share (per mille of the box) away from its edges."""


class ExecutionError(PerceptionError):
    """An action cannot be carried out on this device or screen (the phone itself is fine).

    ``sent`` holds the commands already sent when it failed part way (a type action's tap):
    the screen may have changed, so the caller must treat the action as sent.
    """

    def __init__(self, message: str, *, sent: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.sent = sent


class InputSink(Protocol):
    """Low-level input of one phone, in device pixels.

    A sink may also say whether it types any text (``unicode_text``, a bool attribute or
    property); one without it is taken to type printable ASCII only. One with a
    ``clear(chars: int | None) -> str | None`` method empties the focused field before a
    ``type`` replaces its text (``chars``: how many it holds, None when unknown; returns the
    command sent, None when it could not); one without it types after what the field holds."""

    def tap(self, point: PointPx) -> str: ...

    def long_press(self, point: PointPx, duration_ms: int) -> str: ...

    def swipe(self, start: PointPx, end: PointPx, duration_ms: int) -> str: ...

    def text(self, text: str) -> str: ...

    def key(self, key: KeyName) -> str: ...


class ShellInput(Protocol):
    """What :class:`AdbInput` needs: ``DeviceSource.input`` (``input ARGS`` on the phone)."""

    def input(self, *args: str | int) -> None: ...


class AdbInput:
    """``input`` commands through a perception device source (real adb, real or virtual phone)."""

    def __init__(self, device: ShellInput) -> None:
        self._device = device
        self._apps: tuple[str, ...] | None = None
        """The launcher's activities, asked once a run (and again when a name matches none or
        several: an app installed or removed since)."""

    @property
    def unicode_text(self) -> bool:
        """Does the phone type any text now: is ADB Keyboard its current input method? (Asks
        the phone; a device source that cannot say types printable ASCII only.)"""
        ask = getattr(self._device, "input_method", None)
        return callable(ask) and ask() == ADB_KEYBOARD_IME

    def _send(self, *args: str | int) -> str:
        self._device.input(*args)
        return " ".join(str(a) for a in args)

    def tap(self, point: PointPx) -> str:
        return self._send("tap", point.x, point.y)

    def long_press(self, point: PointPx, duration_ms: int) -> str:
        return self._send("swipe", point.x, point.y, point.x, point.y, duration_ms)

    def swipe(self, start: PointPx, end: PointPx, duration_ms: int) -> str:
        return self._send("swipe", start.x, start.y, end.x, end.y, duration_ms)

    def text(self, text: str) -> str:
        if typeable(text):
            return "; ".join(self._send("text", arg) for arg in adb_input_text(text))
        type_text = getattr(self._device, "type_text", None)
        if not callable(type_text):
            adb_input_text(text)  # raises: printable ASCII only
        try:
            type_text(text)  # type: ignore[misc]
        except InputMethodError as exc:
            raise ExecutionError(str(exc)) from exc
        return f"am broadcast -a ADB_INPUT_B64 ({len(text)} characters)"

    def key(self, key: KeyName) -> str:
        return self._send("keyevent", key.keycode)

    def open_app(self, app: str) -> str:
        """Start the app ``app`` names (:func:`agent.apps.resolve_app` against the launcher's
        activities) as its launcher icon would; the command sent."""
        listing = getattr(self._device, "launchable_apps", None)
        start = getattr(self._device, "start_app", None)
        if not callable(listing) or not callable(start):
            raise ExecutionError(f"a {type(self._device).__name__} cannot start apps")
        fresh = self._apps is None
        if self._apps is None:
            self._apps = self._launchable(listing)
        try:
            component = resolve_app(app, self._apps)
        except AppNotFoundError:
            if fresh:
                raise
            self._apps = self._launchable(listing)
            component = resolve_app(app, self._apps)
        start(component)
        return f"am start -n {component}"

    @staticmethod
    def _launchable(listing: Callable[[], Sequence[str]]) -> tuple[str, ...]:
        """The launcher's activities, or the step's failure where the phone cannot list them
        (before Android 7, or an error): the model can still find the app on the home screen.
        A phone gone is the device's error, as for any action."""
        try:
            return tuple(listing())
        except DEVICE_GONE:
            raise
        except DeviceError as exc:
            raise ExecutionError(
                f"the phone does not list its apps ({exc}); find the app on the home screen"
            ) from exc

    def power_state(self) -> PowerState | None:
        """Is the screen on and the lock screen up (None when the device source cannot say)?"""
        ask = getattr(self._device, "power_state", None)
        return ask() if callable(ask) else None

    def wake(self) -> str:
        """Turn the screen on (``KEYCODE_WAKEUP``, which a screen that is on ignores)."""
        return self._send("keyevent", "KEYCODE_WAKEUP")

    def unlock(self) -> str:
        """Open a lock screen that asks for nothing (``wm dismiss-keyguard``)."""
        dismiss = getattr(self._device, "dismiss_keyguard", None)
        if not callable(dismiss):
            raise ExecutionError("this device source cannot open a lock screen")
        dismiss()
        return "wm dismiss-keyguard"

    def clear(self, chars: int | None) -> str | None:
        """Empty the focused field: one ADB Keyboard broadcast where it is the input method,
        else ``chars`` backspaces and as many deletes (what the cursor leaves on either side);
        None when the field's length is unknown and ADB Keyboard is not there to clear it."""
        clear_text = getattr(self._device, "clear_text", None)
        if callable(clear_text) and self.unicode_text:
            try:
                clear_text()
            except InputMethodError as exc:
                raise ExecutionError(str(exc)) from exc
            return "am broadcast -a ADB_CLEAR_TEXT"
        if not chars:
            return None
        if chars > MAX_CLEAR_CHARS:
            raise ExecutionError(
                f"the field holds {chars} characters, too many to delete key by key (at most "
                f'{MAX_CLEAR_CHARS}); add "append":true to type after them, or select ADB '
                "Keyboard, which clears a field at once"
            )
        codes = [KEY_DEL] * chars + [KEY_FORWARD_DEL] * chars
        for at in range(0, len(codes), KEYS_PER_COMMAND):
            self._device.input("keyevent", *codes[at : at + KEYS_PER_COMMAND])
        return f"keyevent {KEY_DEL} x{chars} {KEY_FORWARD_DEL} x{chars}"


def adb_input_text(text: str) -> list[str]:
    """``input text`` arguments that type exactly ``text``; refuses what the command cannot type.

    Android's ``input text`` turns every ``%s`` into a space and has no escape for a literal
    one (``%%s`` types ``% ``). So the text is cut between the ``%`` and the ``s`` of each
    literal ``%s``, one command per piece (``100%sure`` is ``100%`` then ``sure``: the fewest
    commands that can type it), and spaces are sent as ``%s``. Shell quoting is the device
    source's (each argument reaches ``input`` whole).
    """
    if not typeable(text):
        raise ExecutionError(
            "adb 'input text' types printable ASCII only; this text has other characters"
        )
    return [piece.replace(" ", "%s") for piece in _LITERAL_PERCENT_S.split(text)]


_LITERAL_PERCENT_S = re.compile(r"(?<=%)(?=s)")
"""The cut inside each ``%s`` of the text (between the ``%`` and the ``s``)."""


class ReplayInput:
    """The same actions applied to a recording being replayed."""

    unicode_text = True
    """A recording takes any typed text (its navigator compares it with the recorded one)."""

    def __init__(self, source: ReplaySource) -> None:
        self._source = source

    def _perform(self, action: RecordedAction, command: str) -> str:
        move = self._source.perform(action)
        log.debug("replay %s -> %s", command, move.reason)
        return f"{command} -> step {move.position} ({move.reason})"

    def tap(self, point: PointPx) -> str:
        return self._perform(
            RecordedAction(kind=RecordedKind.TAP, point_px=point), f"tap {point.x} {point.y}"
        )

    def long_press(self, point: PointPx, duration_ms: int) -> str:
        return self._perform(
            RecordedAction(kind=RecordedKind.LONG_TAP, point_px=point, duration_ms=duration_ms),
            f"long_press {point.x} {point.y}",
        )

    def swipe(self, start: PointPx, end: PointPx, duration_ms: int) -> str:
        return self._perform(
            RecordedAction(
                kind=RecordedKind.SWIPE, point_px=start, end_px=end, duration_ms=duration_ms
            ),
            f"swipe {start.x} {start.y} {end.x} {end.y}",
        )

    def text(self, text: str) -> str:
        return self._perform(RecordedAction(kind=RecordedKind.TEXT, text=text), "text")

    def key(self, key: KeyName) -> str:
        return self._perform(
            RecordedAction(kind=RecordedKind.KEY, key=key.keycode), f"keyevent {key.keycode}"
        )

    def open_app(self, app: str) -> str:
        """The app among those the recording starts or shows (the replay source's
        ``launchable_apps``): the replay moves on where the step's recorded intent starts that
        app, or its recorded tap went into it."""
        component = resolve_app(app, self._source.launchable_apps())
        move = self._source.start_app(component)
        return f"am start -n {component} -> step {move.position} ({move.reason})"


def input_for(source: object) -> InputSink:
    """The input sink for a perception source: a replay, or anything with ``input(*args)``."""
    if isinstance(source, ReplaySource):
        return ReplayInput(source)
    if callable(getattr(source, "input", None)):
        return AdbInput(source)  # type: ignore[arg-type]
    raise ExecutionError(f"no way to send input to a {type(source).__name__}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Executed:
    """What an action turned into on the device."""

    commands: tuple[str, ...] = ()
    duration_ms: float = 0.0
    points_px: tuple[PointPx, ...] = field(default=())


class Executor:
    """Carries out validated actions on one phone (``sink``), in that phone's pixels."""

    def __init__(
        self,
        sink: InputSink,
        *,
        swipe_ms: int = SWIPE_MS,
        long_press_ms: int = LONG_PRESS_MS,
        focus_ms: int = FOCUS_MS,
        sleep: bool = True,
    ) -> None:
        self.sink = sink
        self.swipe_ms = swipe_ms
        self.long_press_ms = long_press_ms
        self.focus_ms = focus_ms
        self._sleep = sleep
        """False: ``wait`` and the focus pause do not sleep (tests, replays)."""

    @property
    def unicode_text(self) -> bool:
        """Whether the sink types any text (else printable ASCII only): the agent asks once a
        run and tells the model and the validator."""
        return bool(getattr(self.sink, "unicode_text", False))

    def power_state(self) -> PowerState | None:
        """The phone's screen: on or off, locked or not (None when the sink cannot say: a
        replay, a sink of the caller's without ``power_state``)."""
        ask = getattr(self.sink, "power_state", None)
        return ask() if callable(ask) else None

    def wake(self) -> str:
        """Turn the screen on; the command sent. :class:`ExecutionError` for a sink that
        cannot."""
        return self._sink_call("wake", "wake a phone")

    def unlock(self) -> str:
        """Open a lock screen that asks for nothing (a swipe); the command sent."""
        return self._sink_call("unlock", "open a lock screen")

    def _sink_call(self, name: str, what: str) -> str:
        """Call the sink's optional method ``name`` (the command it sent), or say it cannot
        ``what``."""
        method = getattr(self.sink, name, None)
        if not callable(method):
            raise ExecutionError(f"a {type(self.sink).__name__} cannot {what}")
        return str(method())

    def execute(self, action: Action, observation: Observation) -> Executed:
        """Send ``action``, planned on ``observation`` (the screen the model decided on)."""
        t0 = time.perf_counter_ns()
        commands: list[str] = []
        points: list[PointPx] = []
        try:
            self._run(action, observation, commands, points)
        except ExecutionError as exc:
            if commands and not exc.sent:
                raise ExecutionError(
                    f"{exc} (after sending: {'; '.join(commands)})", sent=tuple(commands)
                ) from exc
            raise
        return Executed(
            commands=tuple(commands),
            duration_ms=round((time.perf_counter_ns() - t0) / 1e6, 3),
            points_px=tuple(points),
        )

    def _run(
        self, action: Action, observation: Observation, commands: list[str], points: list[PointPx]
    ) -> None:
        """Send ``action``, appending each command sent and each point touched as it goes."""
        match action:
            case Tap(candidate_id=cid):
                p = self.candidate_point(observation, cid)
                points.append(p)
                commands.append(self.sink.tap(p))
            case LongPress(candidate_id=cid):
                p = self.candidate_point(observation, cid)
                points.append(p)
                commands.append(self.sink.long_press(p, self.long_press_ms))
            case TapAt(point_pm=pm):
                p = point_pm_to_px(pm, _screen(observation))
                points.append(p)
                commands.append(self.sink.tap(p))
            case SetSlider(candidate_id=cid, value=value):
                p = self.slider_point(observation, cid, value)
                points.append(p)
                commands.append(self.sink.tap(p))
            case Swipe():
                start, end = self.swipe_points(action, observation)
                points.extend((start, end))
                commands.append(self.sink.swipe(start, end, self.swipe_ms))
            case Type(text=text, candidate_id=cid, append=append):
                if cid is not None:
                    p = self.candidate_point(observation, cid)
                    points.append(p)
                    commands.append(self.sink.tap(p))
                    if self._sleep and self.focus_ms:
                        time.sleep(self.focus_ms / 1000)
                if not append:
                    cleared = self._clear(observation, cid)
                    if cleared is not None:
                        commands.append(cleared)
                commands.append(self.sink.text(text))
            case Key(name=name):
                commands.append(self.sink.key(name))
            case OpenApp(app=app):
                opener = getattr(self.sink, "open_app", None)
                if not callable(opener):
                    raise ExecutionError(f"a {type(self.sink).__name__} cannot start apps")
                try:
                    commands.append(str(opener(app)))
                except (AppNotFoundError, AppStartError) as exc:
                    raise ExecutionError(str(exc)) from exc
            case Wait(duration_ms=ms):
                if self._sleep:
                    time.sleep(ms / 1000)
                commands.append(f"wait {ms} ms")
            case Finish():
                pass

    def _clear(self, observation: Observation, candidate_id: int | None) -> str | None:
        """Empty the field a ``type`` replaces the text of (the candidate, else the focused
        input): nothing to do when the tree says it is empty; its label's length where only
        the pixels saw it; the sink's own way when nobody can tell."""
        clear = getattr(self.sink, "clear", None)
        if clear is None:
            return None
        if candidate_id is None:
            focused = focused_fields(observation)
            candidate_id = focused[0].id if len(focused) == 1 else None
        held = None if candidate_id is None else observation.field_texts.get(candidate_id)
        if held == "":
            return None
        if held is None and candidate_id is not None:
            target = observation.candidate(candidate_id, shown=False)
            if target.kind == "input" or target.flags & ElementFlag.EDITABLE:
                held = target.text  # a field only the pixels saw: what they read in it
        result = clear(len(held) if held else None)
        return None if result is None else str(result)

    @staticmethod
    def candidate_point(observation: Observation, candidate_id: int) -> PointPx:
        """The centre of the candidate's box clipped to the screen."""
        try:
            candidate = observation.candidate(candidate_id, shown=False)
        except KeyError:
            raise ExecutionError(f"no candidate {candidate_id} on this screen") from None
        screen = _screen(observation)
        box = clip_box(candidate.box_px, screen.box_px)
        if box.area == 0:
            raise ExecutionError(f"candidate {candidate_id} lies outside the screen")
        return tap_point(box)

    @staticmethod
    def slider_point(observation: Observation, candidate_id: int, value: float) -> PointPx:
        """Where ``set`` taps slider ``candidate_id`` for ``value`` (0 its minimum, 1 its
        maximum): on the middle line of its box clipped to the screen, along its longer side,
        left to right (bottom to top for a standing one). A tap on a SeekBar's or a RatingBar's
        track makes the value there (AOSP ``AbsSeekBar``: a touch that never moved is a
        tap-seek); the track runs inside the bar's padding, taken as half the bar's thickness
        at each end (the thumb's radius; at most a quarter of its length), and 0 and 1 tap just
        inside the box's ends, which read as the minimum and maximum whatever the padding."""
        try:
            candidate = observation.candidate(candidate_id, shown=False)
        except KeyError:
            raise ExecutionError(f"no candidate {candidate_id} on this screen") from None
        box = clip_box(candidate.box_px, _screen(observation).box_px)
        if box.area == 0:
            raise ExecutionError(f"candidate {candidate_id} lies outside the screen")
        across = box.width >= box.height
        length, thickness = (box.width, box.height) if across else (box.height, box.width)
        end = min(SLIDER_END_PX, (length - 1) // 2)
        if value <= 0:
            along = end
        elif value >= 1:
            along = length - 1 - end
        else:
            inset = min(thickness // 2, length // 4)
            along = inset + round(value * (length - 1 - 2 * inset))
        if across:
            return PointPx(box.left + along, (box.top + box.bottom) // 2)
        return PointPx((box.left + box.right) // 2, box.bottom - 1 - along)

    @staticmethod
    def swipe_points(action: Swipe, observation: Observation) -> tuple[PointPx, PointPx]:
        screen = _screen(observation)
        if action.start_pm is not None and action.end_pm is not None:
            return point_pm_to_px(action.start_pm, screen), point_pm_to_px(action.end_pm, screen)
        assert action.direction is not None
        if action.candidate_id is not None:
            try:
                candidate = observation.candidate(action.candidate_id, shown=False)
            except KeyError:
                raise ExecutionError(f"no candidate {action.candidate_id} on this screen") from None
            area = box_px_to_pm(clip_box(candidate.box_px, screen.box_px), screen)
        else:
            area = BoxPm(0, 0, GRID_PM, GRID_PM)
        start_pm, end_pm = _plan_swipe(action.direction, area)
        return point_pm_to_px(start_pm, screen), point_pm_to_px(end_pm, screen)


def _plan_swipe(direction: Direction, area: BoxPm) -> tuple[PointPm, PointPm]:
    """Start and end on the grid for a swipe across ``area`` (the whole screen by default)."""
    lo, hi = SWIPE_SPAN_PM if area == BoxPm(0, 0, GRID_PM, GRID_PM) else (
        SWIPE_INSET_PM,
        GRID_PM - SWIPE_INSET_PM,
    )
    width, height = area.right - area.left, area.bottom - area.top
    mid_x, mid_y = (area.left + area.right) // 2, (area.top + area.bottom) // 2
    near_x, far_x = area.left + width * lo // GRID_PM, area.left + width * hi // GRID_PM
    near_y, far_y = area.top + height * lo // GRID_PM, area.top + height * hi // GRID_PM
    match direction:
        case Direction.UP:
            return PointPm(mid_x, far_y), PointPm(mid_x, near_y)
        case Direction.DOWN:
            return PointPm(mid_x, near_y), PointPm(mid_x, far_y)
        case Direction.LEFT:
            return PointPm(far_x, mid_y), PointPm(near_x, mid_y)
        case Direction.RIGHT:
            return PointPm(near_x, mid_y), PointPm(far_x, mid_y)
    raise AssertionError(direction)  # pragma: no cover


def _screen(observation: Observation) -> ScreenSize:
    if observation.screen is None:
        raise ExecutionError("the observation has no screen (it is not ready); observe again")
    return observation.screen.size
