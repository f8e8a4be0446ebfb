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
from pathlib import Path
from typing import Any

import pytest
from _adb import AdbServer, connected, requires_adb
from test_agent_llm import LoopbackModel, config, id_of, rows_of, screen_of

from agent.executor import Executor, input_for
from agent.llm import ChatModel
from agent.loop import Agent, LoopConfig, StopReason, _same_element
from perception.config import EngineConfig
from perception.engine import Engine
from perception.fusion.candidates import Candidate, IdAllocator, merge
from perception.pipeline import Observation, Perceiver
from perception.sources import ReplaySource
from perception.sources.device import DeviceSource
from perception.types import BoxPx, ElementFlag, ScreenSize, TreeElement

TINY = Path(__file__).parent / "data" / "sources" / "tiny"
FAST = EngineConfig(frame_interval_ms=50, tree_interval_ms=50, observe_timeout_s=15.0)


def _notes_model(engine: Engine, source: DeviceSource, *, move: bool,
                 asked: list[dict[str, Any]]) -> Any:
    """Taps "New note" on the first screen (sending the phone to Settings first when ``move``,
    and waiting until the engine has fused it, as it does while a model thinks), then
    finishes."""

    def script(body: dict[str, Any]) -> str:
        asked.append(body)
        if len(asked) > 1:
            return '{"action":"finish","answer":"done"}'
        target = id_of(screen_of(body), "New note")
        if move:
            source.run("simctl goto 2")
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                now = engine.peek()
                if now is not None and any(c.text == "Dark mode" for c in now.candidates):
                    break
                time.sleep(0.05)
        return json.dumps({"action": "tap", "id": target})

    return script


def _run(adb_server: AdbServer, *, move: bool, **loop: Any) -> tuple[Any, list[str], list[Any]]:
    asked: list[dict[str, Any]] = []
    with connected(adb_server) as (sim, source):
        source.run("simctl goto 0")
        with Engine(source, config=FAST) as engine, LoopbackModel(
            _notes_model(engine, source, move=move, asked=asked)
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
    # Where the engine had the new dump by then, the tree says what is there now; where it had
    # the old dump over the new picture, the pixels do (see the replay test below).
    assert "was 'New note', now " in first.outcome and first.commands == ()
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


# ----- a replay whose engine shows, while the model decides, a screen of our choosing -------


def _observation(step: str, *, frame_only: bool = False) -> Observation:
    folder = TINY / step
    png = (folder / "screen.png").read_bytes()
    if frame_only:  # the dump failed: the engine fuses the frame alone
        return Perceiver().perceive(frame=png)
    return Perceiver().perceive(xml=(folder / "screen.xml").read_bytes(), frame=png)


class Meanwhile:
    """The Engine over a replay, whose ``peek()`` (what the engine fused while the model
    decided) is ``shown`` for the first ``times`` decisions."""

    def __init__(self, engine: Engine, shown: Observation, times: int) -> None:
        self.engine, self.shown, self.times = engine, shown, times

    def observe(self, after_action: bool = False, *, timeout_s: float | None = None) -> Any:
        return self.engine.observe(after_action, timeout_s=timeout_s)

    def mark_action(self) -> int:
        return self.engine.mark_action()

    def peek(self) -> Observation | None:
        if self.times <= 0:
            return None
        self.times -= 1
        return self.shown


def _replay(shown: Observation, times: int, script: Any, **loop: Any) -> tuple[Any, ReplaySource]:
    source = ReplaySource(TINY)
    with Engine(source, config=FAST) as engine, LoopbackModel(script) as server:
        agent = Agent(
            Meanwhile(engine, shown, times), ChatModel(config(server)),
            Executor(input_for(source)), LoopConfig(settle_ms=0, max_steps=6, **loop),
        )
        return agent.run("open a new note"), source


def _new_note_then_finish(body: dict[str, Any]) -> str:
    screen = screen_of(body)
    if any(row.label == "New note" for row in rows_of(screen)):
        return json.dumps({"action": "tap", "id": id_of(screen, "New note")})
    return '{"action":"finish","answer":"done"}'


def test_a_frame_only_observation_meanwhile_is_no_reason_to_hold_back() -> None:
    """A dump that failed (common on an animated screen) leaves the engine a frame-only
    observation of the same screen: OCR lines and icons, which never matched the tree's
    elements, so every tap was held back and the run ended as a loop with nothing sent."""
    transcript, source = _replay(_observation("step_000", frame_only=True), 6,
                                 _new_note_then_finish)
    assert transcript.steps[0].outcome == "page changed"
    assert source.navigator.position == 1 and transcript.stop is StopReason.FINISHED


def test_at_most_one_action_in_a_row_is_held_back() -> None:
    """A screen that changes on its own all the time must not keep every action from the
    phone: after one refusal the next decision, made on the newer screen, is sent."""
    transcript, source = _replay(_observation("step_002"), 6, _new_note_then_finish)
    outcomes = [s.outcome for s in transcript.steps]
    assert outcomes[0].startswith("not sent: the screen changed")
    assert outcomes[1] == "page changed" and source.navigator.position == 1


def test_held_back_actions_do_not_count_as_a_loop() -> None:
    """Refused steps fed the loop detector: three refusals of one tap ended the run as a loop
    ("chosen 3 times on this unchanged screen") with nothing sent."""
    transcript, _ = _replay(
        _observation("step_002"), 6, _new_note_then_finish, loop_repeats=2, loop_window=2
    )
    assert transcript.steps[0].outcome.startswith("not sent: the screen changed")
    assert transcript.steps[1].outcome == "page changed"


def test_an_old_dump_over_the_new_picture_meanwhile_holds_the_tap_back() -> None:
    """While the model decided, the engine fused the notes page's dump (the tree is captured
    less often than the frame) with the Settings page's frame, and called the tree another
    moment's. Its rows still said "New note" where the tap goes, and the tap went to "Dark
    mode" (a race the end-to-end test above lost in CI once): the pixels say where the screen
    went (no text of theirs under the tap point: the OCR line "Dark mode" is narrower than the
    row), and the tap is held back."""
    folder = TINY
    meanwhile = Perceiver().perceive(
        xml=(folder / "step_000" / "screen.xml").read_bytes(),
        frame=(folder / "step_002" / "screen.png").read_bytes(),
    )
    assert meanwhile.consistent is False
    transcript, source = _replay(meanwhile, 1, _new_note_then_finish)
    first = transcript.steps[0]
    assert first.outcome.startswith("not sent: the screen changed while the model decided")
    assert "was 'New note', now nothing on the pixels (the newest dump is older" in first.outcome
    # Asked again on the screen the engine shows next (the replay's notes page), it is sent.
    assert transcript.steps[1].outcome == "page changed" and source.navigator.position == 1


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
        ("New note", True),
        ("New notes", True),  # a character in four apart
        ("Open settings", False),  # another label where it taps
        ("", False),
    ],
)
def test_the_same_element(after: str, same: bool) -> None:
    before = _candidate("New note", (0, 500, 1080, 620))
    assert _same_element(before, _candidate(after, (0, 500, 1080, 620))) is same
    assert not _same_element(before, _candidate("New note", (0, 500, 1080, 620), kind="input"))


@pytest.mark.parametrize(
    ("then", "now", "same"),
    [("40%", "47%", True), ("0:59", "1:00", True), ("On air", "Off air", False)],
)
def test_labels_that_differ_in_their_numbers_are_the_same_control(
    then: str, now: str, same: bool
) -> None:
    box = (100, 500, 500, 620)
    assert _same_element(_candidate(then, box), _candidate(now, box)) is same
