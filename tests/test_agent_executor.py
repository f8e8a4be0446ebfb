"""Actions -> device input: geometry through perception.geometry, a replay, and the virtual phone
driven through the real adb server and the perception device source."""

from __future__ import annotations

import pytest
from _adb import TINY, requires_adb
from hypothesis import given, strategies as st

from agent.actions import Direction, Finish, Key, KeyName, LongPress, Swipe, Tap, TapAt, Type, Wait
from agent.executor import (
    AdbInput,
    ExecutionError,
    Executor,
    ReplayInput,
    adb_input_text,
    input_for,
)
from perception import perceive
from perception.demo import demo_png, demo_xml
from perception.geometry import box_px_to_pm, point_pm_to_px
from perception.pipeline import Observation
from perception.simdevice import SimDevice
from perception.sources import ReplaySource
from perception.sources.device import DeviceSource
from perception.types import PointPm, PointPx, ScreenSize


def observe(source: ReplaySource | DeviceSource) -> Observation:
    return perceive(source.capture_tree().xml, source.capture_frame().data)


def cid(obs: Observation, text: str) -> int:
    return next(c.id for c in obs.candidates if c.text == text)


@pytest.fixture(scope="module")
def demo() -> Observation:
    return perceive(demo_xml(), demo_png())


def test_positions_go_through_geometry(demo: Observation) -> None:
    screen = ScreenSize(1080, 2400)
    network = demo.candidate(cid(demo, "HomeNet | Saved"))
    assert Executor.candidate_point(demo, network.id) == network.box_px.center
    up = Executor.swipe_points(Swipe(direction=Direction.UP), demo)
    assert up == (
        point_pm_to_px(PointPm(500, 750), screen),
        point_pm_to_px(PointPm(500, 250), screen),
    )
    left = Executor.swipe_points(Swipe(direction=Direction.LEFT), demo)
    assert left[0].x > left[1].x and left[0].y == left[1].y
    points = Executor.swipe_points(
        Swipe(start_pm=PointPm(0, 1000), end_pm=PointPm(1000, 0)), demo
    )
    assert points == (PointPx(0, 2399), PointPx(1079, 0))
    networks = next(c for c in demo.candidates if c.kind == "list")
    start, end = Executor.swipe_points(
        Swipe(direction=Direction.UP, candidate_id=networks.id), demo
    )
    assert networks.box_px.contains(start) and networks.box_px.contains(end)
    assert start.y > end.y and start.x == end.x
    pm = box_px_to_pm(networks.box_px, screen)
    assert pm.top < 500 < pm.bottom  # planned on the grid inside the list
    with pytest.raises(ExecutionError, match="no candidate 999"):
        Executor.candidate_point(demo, 999)


def typed_by_android(args: list[str]) -> str:
    """What Android's ``input text`` types from each argument: ``sendText`` in AOSP's
    ``InputShellCommand`` (``Input.java`` before), ported: a ``%`` followed by ``s`` becomes a
    space, and nothing escapes it."""
    typed = ""
    for arg in args:
        buff, escape, i = list(arg), False, 0
        while i < len(buff):
            if escape:
                escape = False
                if buff[i] == "s":
                    buff[i] = " "
                    i -= 1
                    del buff[i]
            if buff[i] == "%":
                escape = True
            i += 1
        typed += "".join(buff)
    return typed


@pytest.mark.parametrize(
    "text", ["hello big world", "100%sure", "pa%%s %s%", "%s", "50% off", "a'b;c", "%%ss", "% s"]
)
def test_adb_text_types_exactly_the_text(text: str) -> None:
    assert typed_by_android(adb_input_text(text)) == text


@given(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)
       | st.text(st.sampled_from("%s %s"), max_size=12))
def test_adb_text_types_any_printable_ascii_exactly(text: str) -> None:
    """One command, and one more per literal ``%s`` (no command can type one whole)."""
    args = adb_input_text(text)
    assert typed_by_android(args) == text
    assert len(args) == text.count("%s") + 1
    assert not any(" " in arg for arg in args)


def test_adb_text_escaping() -> None:
    assert adb_input_text("hello big world") == ["hello%sbig%sworld"]
    assert adb_input_text("100%sure") == ["100%", "sure"]  # no escape for a literal %s
    assert adb_input_text("%s%s") == ["%", "s%", "s"]
    assert adb_input_text("% ") == ["%%s"]  # Android types "% " (the second % takes the s)
    assert adb_input_text("a'b;c") == ["a'b;c"]  # the device source quotes for the shell
    with pytest.raises(ExecutionError, match="ASCII"):
        adb_input_text("Grüße")


class RecordingShell:
    """A device source's ``input`` that records each command's arguments instead of sending."""

    def __init__(self) -> None:
        self.sent: list[tuple[str | int, ...]] = []

    def input(self, *args: str | int) -> None:
        self.sent.append(args)


def test_type_sends_these_input_text_commands(demo: Observation) -> None:
    shell = RecordingShell()
    executor = Executor(input_for(shell), sleep=False)
    assert isinstance(executor.sink, AdbInput)
    done = executor.execute(Type("hello big world"), demo)
    assert shell.sent == [("text", "hello%sbig%sworld")]
    assert done.commands == ("text hello%sbig%sworld",)
    shell.sent.clear()
    asked = "100%sure, 50% off %s"
    done = executor.execute(Type(asked), demo)
    assert shell.sent == [("text", "100%"), ("text", "sure,%s50%%soff%s%"), ("text", "s")]
    assert done.commands == ("text 100%; text sure,%s50%%soff%s%; text s",)
    assert typed_by_android([str(args[1]) for args in shell.sent]) == asked
    shell.sent.clear()
    with pytest.raises(ExecutionError, match="ASCII"):
        executor.execute(Type("naïve"), demo)
    assert shell.sent == []


def test_replay_moves_when_the_action_hits_the_recorded_target() -> None:
    source = ReplaySource(TINY)
    executor = Executor(input_for(source))
    assert isinstance(executor.sink, ReplayInput)
    obs = observe(source)
    done = executor.execute(Tap(cid(obs, "About")), obs)  # not the recorded target
    assert source.navigator.position == 0 and "outside the recorded target" in done.commands[0]
    done = executor.execute(Tap(cid(obs, "New note")), obs)
    assert source.navigator.position == 1
    assert done.points_px == (obs.candidate(cid(obs, "New note")).box_px.center,)
    assert "-> step 1" in done.commands[0]
    obs = observe(source)
    target = source.navigator.current.action
    assert target is not None and target.target_px is not None
    size = ScreenSize(360, 640)
    center_pm = box_px_to_pm(target.target_px, size)
    point = PointPm(
        (center_pm.left + center_pm.right) // 2, (center_pm.top + center_pm.bottom) // 2
    )
    done = executor.execute(TapAt(point), obs)
    assert done.points_px == (point_pm_to_px(point, size),)
    assert source.navigator.position == 2
    executor.execute(Key(KeyName.BACK), observe(source))
    assert source.navigator.position == 0
    assert executor.execute(Finish("done"), obs).commands == ()
    waited = Executor(input_for(source), sleep=False).execute(Wait(50), obs)
    assert waited.commands == ("wait 50 ms",)


def test_no_screen_no_input() -> None:
    with pytest.raises(ExecutionError, match="no way to send input"):
        input_for(object())




@requires_adb
def test_virtual_phone_over_real_adb(phone: tuple[SimDevice, DeviceSource]) -> None:
    sim, source = phone
    executor = Executor(input_for(source))
    assert isinstance(executor.sink, AdbInput)
    obs = observe(source)
    new_note = obs.candidate(cid(obs, "New note"))
    done = executor.execute(Tap(new_note.id), obs)
    center = new_note.box_px.center
    assert done.commands == (f"tap {center.x} {center.y}",)
    assert sim.phone.events[-1].startswith(f"tap {center.x} {center.y} -> 1")
    assert source.epoch >= 1  # the device source starts a new action epoch per command
    obs = observe(source)
    assert any(c.text == "Save" for c in obs.candidates)
    executor.execute(Type("hello big world"), obs)
    assert sim.phone.events[-1].startswith("text hello%sbig%sworld")
    # what the phone types (phone.py decodes %s as Android does) is exactly the text asked for
    before = len(sim.phone.events)
    asked = "100%sure, 50% off %s; it's \"$HOME\" \\ `id` |&*?~ %%s"
    executor.execute(Type(asked), obs)
    sent = [e.split(" -> ")[0].removeprefix("text ") for e in sim.phone.events[before:]]
    assert typed_by_android(sent) == asked
    executor.execute(Swipe(direction=Direction.UP), obs)
    start, end = Executor.swipe_points(Swipe(direction=Direction.UP), obs)
    assert sim.phone.events[-1].startswith(f"swipe {start.x} {start.y} {end.x} {end.y} 300")
    some = next(c for c in obs.candidates if c.actionable)
    executor.execute(LongPress(some.id), obs)
    p = some.box_px.center
    assert sim.phone.events[-1].startswith(f"swipe {p.x} {p.y} {p.x} {p.y} 700")
    executor.execute(Key(KeyName.BACK), obs)
    assert sim.phone.events[-1].startswith("keyevent KEYCODE_BACK -> 0")
    assert b"New note" in source.capture_tree().xml


@requires_adb
def test_a_failure_after_a_tap_says_what_was_sent(phone: tuple[SimDevice, DeviceSource]) -> None:
    """A type action taps its field, then its text cannot be typed: the error carries the tap
    (the phone moved), so the loop can treat the action as sent."""
    sim, source = phone
    obs = observe(source)
    new_note = obs.candidate(cid(obs, "New note"))
    with pytest.raises(ExecutionError, match="after sending: tap") as info:
        Executor(input_for(source), sleep=False).execute(Type("Café", new_note.id), obs)
    center = new_note.box_px.center
    assert info.value.sent == (f"tap {center.x} {center.y}",)
    assert sim.phone.events[-1].startswith(f"tap {center.x} {center.y} -> 1")
