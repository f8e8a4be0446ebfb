"""Setting a slider (a SeekBar, a settable RatingBar: the tree's ``slider`` rows): the ``set``
action takes a slider's id and a value from 0 (its minimum) to 1 (its maximum), is checked
against the screen, and becomes a tap on the slider's track, where Android's SeekBar and
RatingBar jump to. End to end through the real openai client against the loopback server, the
agent loop and the virtual phone's adb, on a hand-made player screen and on the corpus's
Acrylic Brush-size dialog."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _adb import AdbServer, device_config, requires_adb, serving
from _apps import write_recording
from _frames import png
from _xml import dump, node, screen
from conftest import CORPUS_DIR, requires_corpus
from test_agent_llm import LoopbackModel, config, screen_of

from agent.actions import (
    ActionSchemaError,
    ActionTargetError,
    SetSlider,
    parse_action,
)
from agent.executor import ExecutionError, Executor, input_for
from agent.llm import ChatModel
from agent.loop import Agent, LoopConfig, StopReason
from agent.prompt import HistoryItem, system_prompt
from perception import perceive
from perception.config import EngineConfig
from perception.engine import Engine
from perception.pipeline import Observation
from perception.sources import read_recording
from perception.sources.device import DeviceSource
from perception.types import PointPx

SEEKBAR = "android.widget.SeekBar"
RATING = "android.widget.RatingBar"
BUTTON = "android.widget.Button"
PLAYER = "com.example.player"
ACRYLIC = "fdroidutg_apps/anupam.acrylic"
FAST = EngineConfig(frame_interval_ms=20, tree_interval_ms=20, observe_timeout_s=10.0)
QUICK = LoopConfig(max_steps=6, step_timeout_s=20.0, settle_ms=0)


def observe(xml: bytes) -> Observation:
    return perceive(xml, png(np.full((2400, 1080, 3), 245, np.uint8)))


@pytest.fixture(scope="module")
def sliders() -> Observation:
    """A settings page: a volume SeekBar, a standing one, a RatingBar to rate with, a disabled
    SeekBar, one running off the screen's right edge, and a button."""
    return observe(screen(
        node((60, 300, 1020, 360), text="Volume", cls="android.widget.TextView"),
        node((60, 380, 1020, 440), cls=SEEKBAR, focusable=True, resource_id="app:id/volume"),
        node((900, 600, 960, 1400), cls=SEEKBAR, focusable=True, resource_id="app:id/bass"),
        node((100, 1500, 580, 1596), cls=RATING, focusable=True, content_desc="Rate"),
        node((60, 1700, 1020, 1760), cls=SEEKBAR, focusable=True, enabled=False,
             resource_id="app:id/balance"),
        node((540, 1900, 1500, 1960), cls=SEEKBAR, focusable=True, resource_id="app:id/speed"),
        node((60, 2200, 1020, 2300), text="Done", cls=BUTTON, clickable=True),
    ))


def cid(obs: Observation, label: str) -> int:
    return next(c.id for c in obs.candidates if c.text == label)


def test_set_takes_a_slider_and_a_value_from_0_to_1(sliders: Observation) -> None:
    volume = cid(sliders, "[volume]")
    assert sliders.candidate(volume).kind == "slider"
    for raw, value in [("0.5", 0.5), ("0", 0.0), ("1", 1.0), ("0.33333", 0.333), ("1.0", 1.0)]:
        answer = f'{{"action":"set","id":{volume},"value":{raw}}}'
        assert parse_action(answer, sliders) == SetSlider(volume, value)
        assert parse_action(answer, sliders, coords=False) == SetSlider(volume, value)
    rating = cid(sliders, "Rate")
    assert parse_action(f'{{"action":"set","id":{rating},"value":0.6}}', sliders) == SetSlider(
        rating, 0.6
    )
    assert SetSlider(volume, 0.25).to_json() == {"action": "set", "id": volume, "value": 0.25}
    done = HistoryItem(step=1, action=SetSlider(volume, 0.25), outcome="same page").to_json()
    assert done["did"] == {"action": "set", "id": volume, "value": 0.25}


@pytest.mark.parametrize("raw", ["1.5", "-0.1", "50", '"0.5"', "true", "NaN", "Infinity", "null"])
def test_a_value_off_the_range_is_refused(sliders: Observation, raw: str) -> None:
    volume = cid(sliders, "[volume]")
    with pytest.raises(ActionSchemaError, match='"value"') as info:
        parse_action(f'{{"action":"set","id":{volume},"value":{raw}}}', sliders)
    assert "0" in str(info.value) and "1" in str(info.value)
    with pytest.raises(ActionSchemaError, match="from 0 to 1"):
        SetSlider(volume, 1.5)


def test_set_acts_on_sliders_only_and_swipe_does_not(sliders: Observation) -> None:
    done, volume = cid(sliders, "Done"), cid(sliders, "[volume]")
    with pytest.raises(ActionTargetError, match=r"\(btn\) is not a slider"):
        parse_action(f'{{"action":"set","id":{done},"value":0.5}}', sliders)
    with pytest.raises(ActionTargetError, match="disabled"):
        parse_action(f'{{"action":"set","id":{cid(sliders, "[balance]")},"value":0.5}}', sliders)
    with pytest.raises(ActionTargetError, match="no candidate 99"):
        parse_action('{"action":"set","id":99,"value":0.5}', sliders)
    with pytest.raises(ActionSchemaError, match="needs the field"):
        parse_action(f'{{"action":"set","id":{volume}}}', sliders)
    with pytest.raises(ActionSchemaError, match="unexpected field"):
        parse_action(f'{{"action":"set","id":{volume},"value":0.5,"x":3}}', sliders)
    # A swipe by id scrolls: on a slider it says how to move one.
    with pytest.raises(ActionTargetError, match="move it with set"):
        parse_action(f'{{"action":"swipe","direction":"right","id":{volume}}}', sliders)
    assert parse_action(f'{{"action":"tap","id":{volume}}}', sliders).kind.value == "tap"


def test_the_prompt_says_how_to_set_a_slider() -> None:
    for coords in (True, False):
        text = system_prompt("Turn the volume down", coords=coords)
        assert '{"action":"set","id":ID,"value":V}   (slider: V 0 min to 1 max)' in text
    assert 'list, web, slider, scroll: "left top right bottom"' in system_prompt("t")


def test_the_tap_lands_on_the_track_where_the_value_lies(sliders: Observation) -> None:
    """The volume bar (60..1020 x 380..440): its ends 1 px inside the box, values between on
    the track inset by half the bar's height (30 px); the standing bass bar (900..960 x
    600..1400) runs from its bottom up; a bar past the screen's edge is planned on its visible
    part (540..1080)."""
    point = Executor.slider_point
    volume = cid(sliders, "[volume]")
    assert point(sliders, volume, 0.0) == PointPx(61, 410)
    assert point(sliders, volume, 1.0) == PointPx(1018, 410)
    assert point(sliders, volume, 0.5) == PointPx(60 + 30 + 450, 410)  # 959 - 60 px of track
    assert point(sliders, volume, 0.25) == PointPx(60 + 30 + 225, 410)
    xs = [point(sliders, volume, v / 20).x for v in range(21)]
    assert xs == sorted(set(xs))  # every step of the value moves the tap to the right
    bass = cid(sliders, "[bass]")
    assert point(sliders, bass, 0.0) == PointPx(930, 1398)
    assert point(sliders, bass, 1.0) == PointPx(930, 601)
    assert point(sliders, bass, 0.5) == PointPx(930, 1399 - 30 - 370)
    speed = cid(sliders, "[speed]")
    assert point(sliders, speed, 1.0) == PointPx(1078, 1930)
    assert point(sliders, speed, 0.5) == PointPx(540 + 30 + 240, 1930)
    with pytest.raises(ExecutionError, match="no candidate 99"):
        point(sliders, 99, 0.5)


def test_the_executor_taps_the_track() -> None:
    """``set`` is one ``input tap`` (what a device source's ``input`` is sent)."""

    class Shell:
        def __init__(self) -> None:
            self.sent: list[tuple[str | int, ...]] = []

        def input(self, *args: str | int) -> None:
            self.sent.append(args)

    obs = observe(screen(node((60, 380, 1020, 440), cls=SEEKBAR, focusable=True,
                              resource_id="app:id/volume")))
    shell = Shell()
    done = Executor(input_for(shell), sleep=False).execute(SetSlider(cid(obs, "[volume]"), 0.25),
                                                           obs)
    assert shell.sent == [("tap", 315, 410)]
    assert done.commands == ("tap 315 410",) and done.points_px == (PointPx(315, 410),)


# ----- end to end: the model, the loop and the virtual phone over adb --------------------------


def player_screen(volume: str) -> tuple[str, bytes]:
    return PLAYER, dump(node(
        (0, 0, 360, 640),
        node((20, 100, 340, 140), text=volume, cls="android.widget.TextView", package=PLAYER),
        node((20, 150, 340, 190), cls=SEEKBAR, focusable=True, package=PLAYER,
             resource_id=f"{PLAYER}:id/volume"),
        node((40, 260, 280, 308), cls=RATING, focusable=True, content_desc="Rate this song",
             package=PLAYER),
        node((20, 560, 340, 620), text="Done", cls=BUTTON, clickable=True, package=PLAYER),
        package=PLAYER,
    ))


def player_recording(root: Path) -> Path:
    """Step 0 moves to step 1 (the volume at 75%) on a tap on the volume bar."""
    tap = {"kind": "tap", "point_px": [260, 170], "target_px": [20, 150, 340, 190],
           "result_step": 1}
    return write_recording(root, [player_screen("Volume"), player_screen("Volume 75%")],
                           [tap, None])


def slider_id(screen: dict[str, Any], label: str) -> int:
    return next(int(row[0]) for row in screen["slider"] if row[1] == label)


def history_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    for message in reversed(body["messages"]):
        if message["role"] == "user" and message["content"].startswith('{"step"'):
            history: list[dict[str, Any]] = json.loads(message["content"])["history"]
            return history
    raise AssertionError("no screen turn")


def run_on(
    adb_server: AdbServer, recording: Path, server: LoopbackModel, task: str, *, at: int = 0
) -> tuple[Any, list[str]]:
    with serving(adb_server, recording) as sim:
        sim.phone.navigator.goto(at)
        source = DeviceSource(sim.serial, config=device_config(adb_server))
        try:
            source.wait_ready()
            with Engine(source, config=FAST) as engine:
                model = ChatModel(config(server))
                agent = Agent(engine, model, Executor(input_for(source), sleep=False), QUICK)
                transcript = agent.run(task)
                model.close()
        finally:
            source.close()
        return transcript, list(sim.phone.events)


@requires_adb
def test_the_model_sets_sliders_on_the_virtual_phone(
    adb_server: AdbServer, tmp_path: Path
) -> None:
    """The model first swipes the volume bar by id (refused: the error says to use set, and goes
    back once), then sets it to 0.75: one tap on its track, which the phone takes as the
    recorded touch on the bar (the page shows 75%); then it rates the song 4 of 5 (0.8) and
    finishes."""

    def listener(body: dict[str, Any]) -> str:
        shown = screen_of(body)
        last = body["messages"][-1]["content"]
        texts = [row[0] if isinstance(row, list) else row for row in shown.get("text", [])]
        if "Volume 75%" in texts:
            if any(h["did"].get("value") == 0.8 for h in history_of(body) if "did" in h):
                return '{"action":"finish","answer":"volume 75%, rated 4 of 5"}'
            return json.dumps({"action": "set", "id": slider_id(shown, "Rate this song"),
                               "value": 0.8})
        volume = slider_id(shown, "[volume]")
        if last.startswith("Your answer was rejected"):
            assert "move it with set" in last
            return json.dumps({"action": "set", "id": volume, "value": 0.75, "reason": "75%"})
        return json.dumps({"action": "swipe", "direction": "right", "id": volume})

    with LoopbackModel(listener) as server:
        transcript, events = run_on(adb_server, player_recording(tmp_path / "player"), server,
                                    "Set the volume to 75% and rate the song 4 of 5")
    assert transcript.stop is StopReason.FINISHED, transcript.dumps()
    first, second, last = transcript.steps
    assert isinstance(first.action, SetSlider) and first.action.value == 0.75
    assert len(first.rejected) == 1 and "move it with set" in first.rejected[0]
    assert len(server.requests) == 4  # the swipe, the set after the error, the rating, finish
    # 320 x 40 px: the track from 20 + 20 to 339 - 20; 0.75 of its 279 px is 209
    assert first.commands == ("tap 249 170",) and first.outcome == "page changed"
    assert isinstance(second.action, SetSlider) and second.action.value == 0.8
    # the rating bar, 240 x 48 px: 40 + 24 + round(0.8 * 191) = 217
    assert second.commands == ("tap 217 284",)
    taps = [e for e in events if e.startswith("tap ")]
    assert [t.split(" -> ")[0] for t in taps] == ["tap 249 170", "tap 217 284"]
    assert taps[0].startswith("tap 249 170 -> 1")  # the recorded touch on the bar
    system = server.requests[0]["messages"][0]["content"]
    assert '"action":"set"' in system and last.action is not None


@requires_adb
@requires_corpus
def test_the_brush_size_is_set_on_acrylic(adb_server: AdbServer) -> None:
    """Acrylic's Brush-size dialog (a SeekBar whose dump says it takes no click): the model sets
    it to a quarter, and the virtual phone serving the corpus trace gets the tap on the bar's
    track (75..1005 x 907..961 px: 75 + 27 + round(0.25 * (929 - 54)) = 321)."""
    trace = CORPUS_DIR / ACRYLIC
    at = read_recording(trace).position_of(3)
    assert at is not None

    def painter(body: dict[str, Any]) -> str:
        shown = screen_of(body)
        if history_of(body):
            return '{"action":"finish","answer":"brush size set"}'
        return json.dumps({"action": "set", "id": slider_id(shown, "[brushSizeSeekBar]"),
                           "value": 0.25})

    with LoopbackModel(painter) as server:
        transcript, events = run_on(adb_server, trace, server, "Make the brush small", at=at)
    assert transcript.stop is StopReason.FINISHED, transcript.dumps()
    first = transcript.steps[0]
    assert isinstance(first.action, SetSlider) and first.commands == ("tap 321 934",)
    assert [e.split(" -> ")[0] for e in events if e.startswith("tap ")] == ["tap 321 934"]
