"""A tap is not sent on a screen that changed while the model decided (agent review, 2026-12-05).

The model picked "New note" on the notes app's first page; while it answered, the phone went to
Settings; the executor tapped the old coordinates, which landed on "Dark mode", and the next
screen read as progress. The virtual phone here is moved by ``simctl goto`` from inside the
scripted model (what a dialog, an ad or another app does on a real phone while the model
thinks); the real Engine, adb server, openai client and executor run as users run them.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from _adb import AdbServer, connected, requires_adb
from test_agent_llm import LoopbackModel, config, id_of, screen_of

from agent.executor import Executor, input_for
from agent.llm import ChatModel
from agent.loop import Agent, LoopConfig, StopReason, _same_element
from perception.config import EngineConfig
from perception.engine import Engine
from perception.fusion.candidates import Candidate, IdAllocator, merge
from perception.sources.device import DeviceSource
from perception.types import BoxPx, ElementFlag, ScreenSize, TreeElement

FAST = EngineConfig(frame_interval_ms=50, tree_interval_ms=50, observe_timeout_s=15.0)


def _notes_model(source: DeviceSource, *, move: bool, asked: list[dict[str, Any]]) -> Any:
    """Taps "New note" on the first screen (sending the phone to Settings first when ``move``,
    and waiting until the engine has seen it), then finishes."""

    def script(body: dict[str, Any]) -> str:
        asked.append(body)
        if len(asked) > 1:
            return '{"action":"finish","answer":"done"}'
        target = id_of(screen_of(body), "New note")
        if move:
            source.run("simctl goto 2")
            time.sleep(0.6)  # a model thinks for seconds; the engine captures meanwhile
        return json.dumps({"action": "tap", "id": target})

    return script


def _run(adb_server: AdbServer, *, move: bool, **loop: Any) -> tuple[Any, list[str], list[Any]]:
    asked: list[dict[str, Any]] = []
    with connected(adb_server) as (sim, source):
        source.run("simctl goto 0")
        with Engine(source, config=FAST) as engine, LoopbackModel(
            _notes_model(source, move=move, asked=asked)
        ) as server:
            agent = Agent(
                engine, ChatModel(config(server)), Executor(input_for(source)),
                LoopConfig(settle_ms=0, max_steps=4, **loop),
            )
            transcript = agent.run("open a new note")
        taps = [e for e in sim.phone.events if e.startswith("tap ")]
    return transcript, taps, asked


@requires_adb
def test_a_tap_is_not_sent_when_its_target_left_while_the_model_decided(
    adb_server: AdbServer,
) -> None:
    transcript, taps, asked = _run(adb_server, move=True)
    assert taps == []  # "Dark mode", now under those coordinates, was not toggled
    first = transcript.steps[0]
    assert first.outcome.startswith("not sent: the screen changed while the model decided")
    assert "'New note'" in first.outcome and first.commands == ()
    # The next step asks again on the new screen and tells the model what happened.
    assert "Dark mode" in json.dumps(screen_of(asked[1]))
    assert "not sent" in asked[1]["messages"][-1]["content"]
    assert transcript.stop is StopReason.FINISHED


@requires_adb
def test_a_tap_on_a_screen_that_stayed_is_sent(adb_server: AdbServer) -> None:
    transcript, taps, _ = _run(adb_server, move=False)
    assert len(taps) == 1 and transcript.steps[0].outcome != ""
    assert not transcript.steps[0].outcome.startswith("not sent")


@requires_adb
def test_the_check_can_be_turned_off(adb_server: AdbServer) -> None:
    transcript, taps, _ = _run(adb_server, move=True, recheck_target=False)
    assert len(taps) == 1  # the old behaviour, for callers who act on their own checks


SCREEN = ScreenSize(1080, 2400)


def _candidate(text: str, box: tuple[int, int, int, int], kind: str = "btn") -> Candidate:
    element = TreeElement(
        id=0, kind=kind, text=text, box_px=BoxPx(*box), flags=ElementFlag.CLICKABLE
    )
    drafts = merge(elements=[element], tree_confidence=0.9, screen=SCREEN)
    return IdAllocator().assign(drafts, page="p", screen=SCREEN)[0]


@pytest.mark.parametrize(
    ("after", "same"),
    [
        (("New note", (0, 500, 1080, 620)), True),
        (("New note", (0, 512, 1080, 632)), True),  # a few pixels down: the same row
        (("0:15", (0, 500, 1080, 620)), False),  # another label in the same place
        (("New note", (0, 900, 1080, 1020)), False),  # the list moved: another row is there
        (("New notes", (0, 500, 1080, 620)), True),  # a character in four apart
    ],
)
def test_the_same_element(after: tuple[str, tuple[int, int, int, int]], same: bool) -> None:
    before = _candidate("New note", (0, 500, 1080, 620))
    assert _same_element(before, _candidate(*after)) is same
    assert not _same_element(before, _candidate("New note", (0, 500, 1080, 620), kind="input"))
