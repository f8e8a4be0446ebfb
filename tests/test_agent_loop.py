"""The decision loop end to end: a replayed recording served by the threaded Engine, the real
openai client against a loopback server whose scripted model reads the screen it is sent, and
the executor moving the replay along."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from _adb import requires_adb
from _xml import SCREEN, dump, node
from test_agent_llm import LoopbackModel, config, id_of, rows_of, screen_of, tool_call_reply

from agent.actions import Action, Finish, Tap, Type, parse_action
from agent.executor import Executor, input_for
from agent.llm import ChatModel, Decision
from agent.loop import Agent, LoopConfig, StepRecord, StopReason, Transcript
from agent.prompt import ChatMessage
from perception.config import EngineConfig
from perception.engine import Engine
from perception.errors import ConfigError
from perception.geometry import box_px_to_pm
from perception.pipeline import Observation
from perception.simdevice import SimDevice
from perception.sources import ReplaySource, read_recording
from perception.sources.device import DeviceSource

TINY = Path(__file__).parent / "data" / "sources" / "tiny"
FAST = EngineConfig(frame_interval_ms=20, tree_interval_ms=20, observe_timeout_s=10.0)
QUICK = LoopConfig(max_steps=6, step_timeout_s=20.0, settle_ms=0)


def run(
    source: ReplaySource,
    server: LoopbackModel,
    task: str,
    loop: LoopConfig = QUICK,
    **llm: Any,
) -> tuple[Transcript, list[StepRecord]]:
    seen: list[StepRecord] = []
    with Engine(source, config=FAST) as engine:
        model = ChatModel(config(server, **llm))
        agent = Agent(engine, model, Executor(input_for(source)), loop, on_step=seen.append)
        transcript = agent.run(task)
        model.close()
    return transcript, seen


def notes_model(body: dict[str, Any]) -> str:
    """Open a new note, save it, then report the settings screen."""
    screen = screen_of(body)
    labels = {row.label for row in rows_of(screen)}
    if "New note" in labels:
        return f'{{"action":"tap","id":{id_of(screen, "New note")},"reason":"start"}}'
    if "Save" in labels:
        return f'```json\n{{"action":"tap","id":{id_of(screen, "Save")}}}\n```'
    if "Dark mode" in labels:
        return '{"action":"finish","answer":"The settings screen offers Dark mode."}'
    return '{"action":"key","key":"back"}'


def test_loop_follows_the_recording_to_finish() -> None:
    source = ReplaySource(TINY)
    with LoopbackModel(notes_model) as server:
        transcript, seen = run(source, server, "Create a note and find the dark mode setting")
    assert transcript.stop is StopReason.FINISHED and transcript.ok
    assert transcript.answer == "The settings screen offers Dark mode."
    assert [s.outcome for s in transcript.steps] == ["page changed", "page changed", "finished"]
    assert source.navigator.position == 2
    assert seen == list(transcript.steps)
    assert all(isinstance(s.action, Tap) for s in transcript.steps[:2])
    assert all(s.commands and "-> step" in s.commands[0] for s in transcript.steps[:2])
    assert len({s.page for s in transcript.steps}) == 3
    # each decision was made on a post-action screen, in a newer epoch
    assert transcript.steps[0].epoch < transcript.steps[1].epoch < transcript.steps[2].epoch
    # the model saw its own history, and the step budget
    last = json.loads(server.requests[-1]["messages"][1]["content"])
    assert [h["result"] for h in last["history"]] == ["page changed", "page changed"]
    assert last["history"][0]["did"]["action"] == "tap"
    assert last["step"] == 3 and last["steps_left"] == QUICK.max_steps - 3
    assert json.loads(transcript.dumps())["stop"] == "finished"


def test_repeated_action_on_the_same_page_stops_as_a_loop() -> None:
    source = ReplaySource(TINY)

    def stubborn(body: dict[str, Any]) -> str:
        return f'{{"action":"tap","id":{id_of(screen_of(body), "About")}}}'

    with LoopbackModel(stubborn) as server:
        transcript, _ = run(source, server, "Open About")
    assert transcript.stop is StopReason.LOOP
    outcomes = [s.outcome for s in transcript.steps]
    assert outcomes[:2] == ["nothing changed", "nothing changed"]
    assert outcomes[2].startswith("not sent: chosen 3 times on this unchanged screen")
    assert transcript.steps[2].commands == ()
    assert source.navigator.position == 0


def test_budget_stops_the_loop() -> None:
    source = ReplaySource(TINY)
    with LoopbackModel(notes_model) as server:
        transcript, _ = run(source, server, "Explore", LoopConfig(max_steps=2, settle_ms=0))
    assert transcript.stop is StopReason.BUDGET and not transcript.ok
    assert len(transcript.steps) == 2 and source.navigator.position == 2


def test_rejected_answers_are_recorded_and_the_loop_goes_on() -> None:
    source = ReplaySource(TINY)
    answers = iter(["tap the new note button", '{"action":"tap","id":4242}'])

    def confused_then_fine(body: dict[str, Any]) -> str:
        return next(answers, None) or notes_model(body)

    with LoopbackModel(confused_then_fine) as server:
        transcript, _ = run(source, server, "Create a note")
    first = transcript.steps[0]
    assert first.action is None and first.outcome.startswith("rejected: ActionTargetError")
    assert len(first.answers) == 2 and len(first.rejected) == 2
    assert transcript.stop is StopReason.FINISHED
    # the rejection is part of the history the model saw next
    second = json.loads(server.requests[2]["messages"][1]["content"])
    assert second["history"][0]["result"].startswith("rejected:")


def test_model_failure_and_timeout_end_the_loop_typed() -> None:
    """The step that ends on a model error or timeout is in the transcript: page, state, epoch,
    what went wrong."""
    with LoopbackModel(["{}"], status=400) as server:
        transcript, seen = run(ReplaySource(TINY), server, "Anything")
    assert transcript.stop is StopReason.ERROR
    assert transcript.error is not None and transcript.error.startswith("LLMError")
    (step,) = transcript.steps
    assert seen == [step] and step.page and step.state == "tree" and step.candidates > 0
    assert step.outcome.startswith("model error: ") and "HTTP 400" in step.outcome
    # A server failing (5xx) or rate-limited (429) through its retries may answer later: a step
    # without a usable answer, as a timeout is, until max_unusable_steps of them in a row.
    for status in (500, 429):
        with LoopbackModel(["{}"], status=status) as server:
            transcript, seen = run(ReplaySource(TINY), server, "Anything")
        assert transcript.stop is StopReason.ERROR
        assert transcript.error is not None
        assert transcript.error.startswith("LLMUnavailableError")
        assert len(transcript.steps) == LoopConfig().max_unusable_steps
        assert all(
            s.outcome.startswith("model unavailable: ") and f"HTTP {status}" in s.outcome
            for s in transcript.steps
        )
    answers = iter(['{"action":"tap","id":4242}'])

    def wrong_then_slow(body: dict[str, Any]) -> str:
        answer = next(answers, None)
        if answer is None:
            time.sleep(5.0)
            return '{"action":"wait","ms":5}'
        return answer

    # A step deadline the observation meets on a loaded machine too (0.6 s was missed by the
    # replay's own observation beside other jobs: a DeviceTimeoutError, not the model's).
    with LoopbackModel(wrong_then_slow) as server:
        transcript, _ = run(
            ReplaySource(TINY), server, "Anything", LoopConfig(step_timeout_s=2.0, settle_ms=0)
        )
    # A timeout is a step without a usable answer: the loop asks again, and stops (timeout)
    # after max_unusable_steps of them in a row.
    assert transcript.stop is StopReason.TIMEOUT
    assert transcript.error is not None and "LLMTimeoutError" in transcript.error
    assert len(transcript.steps) == LoopConfig().max_unusable_steps
    step = transcript.steps[0]
    assert step.outcome.startswith("model timeout: ") and step.epoch == 0
    assert step.answers == ('{"action":"tap","id":4242}',) and "4242" in step.rejected[0]
    outcomes = [s["outcome"] for s in json.loads(transcript.dumps())["steps"]]
    assert all(o.startswith("model timeout") for o in outcomes), outcomes


def test_unusable_answers_stop_the_run_early() -> None:
    """A model that never answers usably (here: tool calls only) stops the run with a model
    error after max_unusable_steps steps, not after the whole budget."""
    with LoopbackModel([tool_call_reply()]) as server:
        transcript, _ = run(
            ReplaySource(TINY), server, "Anything", LoopConfig(max_steps=20, settle_ms=0)
        )
    assert transcript.stop is StopReason.ERROR
    assert len(transcript.steps) == LoopConfig().max_unusable_steps == 3
    assert len(server.requests) == 6  # each step: the answer and one repair
    assert transcript.error is not None
    assert transcript.error.startswith("LLMError: no usable answer in 3 steps in a row")
    assert "tool call" in transcript.error


def keypad_recording(root: Path) -> Path:
    """A timer's keypad, tree only: each digit tapped shifts into the display. The page (its
    fingerprint masks digits) stays the same; what it shows does not."""
    displays = ["00h 00m 00s", "00h 00m 01s", "00h 00m 10s", "00h 01m 00s", "00h 10m 00s"]
    lines = []
    for i, display in enumerate(displays):
        keys = [
            node((100 + c * 300, 900 + r * 300, 380 + c * 300, 1180 + r * 300), text=d,
                 clickable=True, cls="android.widget.Button",
                 resource_id=f"com.android.deskclock:id/key_{d}")
            for r, row in enumerate(["123", "456", "789", "0"]) for c, d in enumerate(row)
        ]
        xml = dump(node(SCREEN, node((0, 80, 1080, 240), text="Timer"),
                        node((100, 300, 980, 600), text=display,
                             resource_id="com.android.deskclock:id/timer_time_text"),
                        *keys, package="com.android.deskclock"))
        (root / f"step_{i}").mkdir()
        (root / f"step_{i}" / "screen.xml").write_bytes(xml)
        step: dict[str, Any] = {
            "step": i, "tree": f"step_{i}/screen.xml", "tree_start_ns": i * 10**8,
            "tree_end_ns": i * 10**8 + 10**7, "epoch": i, "package": "com.android.deskclock",
            "activity": "com.android.deskclock/.DeskClock", "screen": [1080, 2400],
        }
        if i < 4:
            left, top = (100, 1800) if i else (100, 900)  # "1", then "0"
            step["action"] = {"kind": "tap", "point_px": [left + 140, top + 140],
                              "target_px": [left, top, left + 280, top + 280],
                              "result_step": i + 1}
        lines.append(json.dumps(step))
    (root / "steps.jsonl").write_text("\n".join(lines) + "\n")
    return root


def test_progress_on_the_same_page_is_not_a_loop(tmp_path: Path) -> None:
    """Setting a 10 minute timer taps "0" three times on one page: each tap changes the display,
    so it is progress ("same page, content changed"), not a loop."""
    source = ReplaySource(keypad_recording(tmp_path))

    def typist(body: dict[str, Any]) -> str:
        screen = screen_of(body)
        display = next(row[0] for row in screen["text"] if "h " in row[0])
        if "10m" in display:
            return '{"action":"finish","answer":"' + display + '"}'
        key = "0" if "01s" in display or "10s" in display or "01m" in display else "1"
        return f'{{"action":"tap","id":{id_of(screen, key)}}}'

    with LoopbackModel(typist) as server:
        transcript, _ = run(source, server, "Set a 10 minute timer", LoopConfig(settle_ms=0))
    assert transcript.stop is StopReason.FINISHED, transcript.dumps()
    assert transcript.answer is not None and transcript.answer.endswith("00h 10m 00s")
    outcomes = [s.outcome for s in transcript.steps]
    assert outcomes == ["same page, content changed"] * 4 + ["finished"]
    assert len({s.page for s in transcript.steps}) == 1  # one page throughout


class FirstDisagrees:
    """The Engine, with its first observation marked as one whose tree and pixels disagree."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.calls = 0

    def observe(self, after_action: bool = False, *, timeout_s: float | None = None) -> Any:
        from dataclasses import replace

        obs = self.engine.observe(after_action, timeout_s=timeout_s)
        self.calls += 1
        return replace(obs, consistent=False) if self.calls == 1 else obs

    def mark_action(self) -> int:
        return self.engine.mark_action()


@pytest.mark.parametrize("rechecks", [1, 0])
def test_a_screen_whose_tree_and_pixels_disagree_is_observed_again(rechecks: int) -> None:
    """A dump of another moment than the frame is usually gone at the next capture: the loop
    observes once more before the model decides (and with no recheck allowed, the model is
    shown the warning)."""
    warned: list[bool] = []

    def model(body: dict[str, Any]) -> str:
        warned.append('"warn":"tree and pixels disagree"' in str(body["messages"][-1]["content"]))
        return notes_model(body)

    loop = LoopConfig(max_steps=6, step_timeout_s=20.0, settle_ms=0, recheck_inconsistent=rechecks)
    source = ReplaySource(TINY)
    with LoopbackModel(model) as server, Engine(source, config=FAST) as engine:
        observer = FirstDisagrees(engine)
        chat = ChatModel(config(server))
        transcript = Agent(observer, chat, Executor(input_for(source)), loop).run("Create a note")
        chat.close()
    assert transcript.stop is StopReason.FINISHED or transcript.steps
    assert observer.calls == len(transcript.steps) + rechecks
    assert warned[0] is (rechecks == 0) and not any(warned[1:])


class Loading:
    """The Engine, its first ``count`` observations saying the screen is loading (a ``wait``
    operation, as a spinner on a blank page gets)."""

    def __init__(self, engine: Engine, count: int) -> None:
        self.engine = engine
        self.count = count
        self.calls = 0

    def observe(self, after_action: bool = False, *, timeout_s: float | None = None) -> Any:
        from dataclasses import replace

        from perception.fusion.screen import Operation, OperationKind

        obs = self.engine.observe(after_action, timeout_s=timeout_s)
        self.calls += 1
        if self.calls > self.count:
            return obs
        wait = Operation(kind=OperationKind.WAIT, reason="part of the page is loading")
        return replace(obs, operations=(wait, *obs.operations))

    def mark_action(self) -> int:
        return self.engine.mark_action()


@pytest.mark.parametrize(("loading", "waits"), [(1, 2), (5, 2), (1, 0)])
def test_a_loading_screen_is_waited_out_before_the_model_is_asked(
    loading: int, waits: int
) -> None:
    """The loop waits and observes again while the screen says it is loading, up to
    ``loading_waits`` times a step; the model then gets the last observation (with its
    ``wait`` hint if it still loads). Each wait the model is spared is a call and its tokens."""
    hinted: list[bool] = []

    def model(body: dict[str, Any]) -> str:
        hinted.append('"ops":[["wait"]' in str(body["messages"][-1]["content"]))
        return notes_model(body)

    loop = LoopConfig(max_steps=6, step_timeout_s=20.0, settle_ms=0, loading_waits=waits,
                      loading_wait_ms=50)
    source = ReplaySource(TINY)
    with LoopbackModel(model) as server, Engine(source, config=FAST) as engine:
        observer = Loading(engine, loading)
        chat = ChatModel(config(server))
        began = time.monotonic()
        transcript = Agent(observer, chat, Executor(input_for(source)), loop).run("Create a note")
        spent = time.monotonic() - began
        chat.close()
    assert transcript.steps
    # Each step observes once, and again after each wait while the screen still loads.
    left, extra, expect_hint = loading, 0, []
    for _ in transcript.steps:
        took = min(left, waits)
        extra += took
        left -= took
        expect_hint.append(left > 0)  # the model is given a screen that still loads
        left = max(0, left - 1)
    assert observer.calls == len(transcript.steps) + extra
    assert spent >= extra * 0.05
    assert hinted == expect_hint[: len(hinted)]


def test_loading_waits_are_validated() -> None:
    for bad in ({"loading_waits": -1}, {"loading_wait_ms": -5}, {"loading_wait_ms": 10**6},
                {"loading_waits": True}):
        with pytest.raises(ConfigError, match="loading_wait"):
            LoopConfig(**bad)  # type: ignore[arg-type]


def test_a_cycle_of_pages_that_change_nothing_is_a_loop() -> None:
    """New note, Save, back, New note, ...: each (page, content, action) came back every third
    step, twice within the 6-step window of before, and the run went on to its budget."""

    def cycle(body: dict[str, Any]) -> str:
        labels = {row.label for row in rows_of(screen_of(body))}
        for label in ("New note", "Save"):
            if label in labels:
                return json.dumps({"action": "tap", "id": id_of(screen_of(body), label)})
        return '{"action":"key","key":"back"}'

    with LoopbackModel(cycle) as server:
        transcript, _ = run(ReplaySource(TINY), server, "Cycle", replace(QUICK, max_steps=30))
    assert transcript.stop is StopReason.LOOP
    assert len(transcript.steps) == 7  # the third time round, not sent
    assert transcript.steps[-1].outcome.startswith("not sent: chosen 3 times")


def test_loop_config_is_validated() -> None:
    with pytest.raises(ConfigError):
        LoopConfig(max_steps=0)
    with pytest.raises(ConfigError):
        LoopConfig(loop_repeats=4, loop_window=3)
    # A step deadline that is not a number of seconds (nan compared false, so it passed and
    # broke the loop's first deadline arithmetic; inf never ends a step).
    for bad in (float("nan"), float("inf"), -1.0):
        with pytest.raises(ConfigError, match="step_timeout_s"):
            LoopConfig(step_timeout_s=bad)
    with pytest.raises(ConfigError):
        LoopConfig(settle_ms=float("nan"))  # type: ignore[arg-type]


@pytest.fixture
def corpus_trace(corpus_dir: Path) -> Iterator[Path]:
    yield next((corpus_dir / "droidbot_a2dpvol_lowres").glob("*/trace.json")).parent


def test_loop_on_a_replayed_corpus_trace(corpus_trace: Path) -> None:
    """A real DroidBot trace: the scripted model taps whatever the recording tapped next."""
    recording = read_recording(corpus_trace)
    source = ReplaySource(recording)
    visited: list[int] = []

    def replayer(body: dict[str, Any]) -> str:
        screen = screen_of(body)
        step = source.navigator.current
        visited.append(step.step)
        if len(visited) > 4 or step.action is None or step.action.target_px is None:
            return '{"action":"finish","answer":"replayed"}'
        size = step.screen or recording.screen
        target = box_px_to_pm(step.action.target_px, size)

        def distance(point: tuple[int, int] | None) -> float:
            if point is None:
                return float("inf")
            cx, cy = (target.left + target.right) / 2, (target.top + target.bottom) / 2
            return abs(point[0] - cx) + abs(point[1] - cy)

        best = min(rows_of(screen), key=lambda row: distance(row.point_pm))
        return f'{{"action":"tap","id":{best.id}}}'

    with LoopbackModel(replayer) as server:
        transcript, _ = run(source, server, "Replay the trace")
    assert transcript.stop is StopReason.FINISHED, transcript.dumps()
    taps = [s for s in transcript.steps if isinstance(s.action, Tap)]
    assert len(taps) == 4
    assert all(s.outcome == "page changed" for s in taps), [s.outcome for s in taps]
    # the replay followed the recorded transitions
    expected = [recording.steps[0].step]
    for _ in range(4):
        current = recording.steps[recording.position_of(expected[-1]) or 0]
        assert current.action is not None
        nxt = current.action.result_step
        if nxt is None:
            pos = recording.position_of(expected[-1])
            assert pos is not None
            nxt = recording.steps[pos + 1].step
        expected.append(nxt)
    assert visited == expected


class ScriptedDecider:
    """Decisions handed to the loop as built actions: the one way to reach an action the parser
    refuses (a type of non-ASCII text) and so test what the loop does when it fails part way."""

    def __init__(self, actions: list[Action]) -> None:
        self.actions = list(actions)

    def decide(
        self, messages: Sequence[ChatMessage], observation: Observation, *,
        timeout_s: float | None = None, coords: bool = True,
    ) -> Decision:
        action = self.actions.pop(0)
        text = json.dumps(action.to_json())
        return Decision(action=action, answers=(text,))


class MarkedEngine(Engine):
    """The real engine, noting the epochs of the action barriers the loop sets."""

    marks: list[int]

    def mark_action(self) -> int:
        epoch = super().mark_action()
        self.marks = [*getattr(self, "marks", []), epoch]
        return epoch


@requires_adb
def test_an_action_that_fails_part_way_is_still_marked(
    phone: tuple[SimDevice, DeviceSource],
) -> None:
    """The tap of a type action reaches the virtual phone, its text cannot be typed: the step
    records the tap, and the next decision is made on a screen captured after it."""
    sim, source = phone
    with MarkedEngine(source, config=FAST) as engine:
        new_note = next(c for c in engine.observe().candidates if c.text == "New note")
        model = ScriptedDecider([Type("Café", new_note.id), Finish("done")])
        transcript = Agent(engine, model, Executor(input_for(source), sleep=False), QUICK).run(
            "Write Café"
        )
        marks = getattr(engine, "marks", [])
    first, second = transcript.steps
    assert first.outcome.startswith("failed:") and "after sending: tap" in first.outcome
    assert len(first.commands) == 1 and first.commands[0].startswith("tap ")
    assert sim.phone.events[-1].startswith(first.commands[0] + " -> 1")
    assert len(marks) == 1 and second.epoch >= marks[0] > first.epoch
    assert transcript.stop is StopReason.FINISHED


class ParsingDecider:
    """A model of the caller's own: its answers checked with parse_action, whose errors it
    lets fly, as a newcomer's first Decider would."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = list(answers)

    def decide(
        self, messages: Sequence[ChatMessage], observation: Observation, *,
        timeout_s: float | None = None, coords: bool = True,
    ) -> Decision:
        text = self.answers.pop(0)
        if text == "crash":
            raise RuntimeError("the vendor SDK fell over")
        return Decision(action=parse_action(text, observation), answers=(text,))


def test_a_callers_model_that_raises_never_escapes_run() -> None:
    """parse_action's errors from a Decider of the caller's are rejected answers (the loop goes
    on); anything else it raises stops the run with the transcript, never out of run()."""
    with Engine(ReplaySource(TINY), config=FAST) as engine:
        model = ParsingDecider(['{"action":"tap","id":42}', '{"action":"finish","answer":"ok"}'])
        transcript = Agent(engine, model, Executor(input_for(engine.source)), QUICK).run("Go")
    first, second = transcript.steps
    assert first.outcome.startswith("rejected: there is no candidate 42")
    assert first.answers == () and "42" in first.rejected[0]
    assert transcript.stop is StopReason.FINISHED and transcript.answer == "ok"
    with Engine(ReplaySource(TINY), config=FAST) as engine:
        model = ParsingDecider(["crash"])
        transcript = Agent(engine, model, Executor(input_for(engine.source)), QUICK).run("Go")
    (step,) = transcript.steps
    assert transcript.stop is StopReason.ERROR
    assert transcript.error == "RuntimeError: the vendor SDK fell over"
    assert step.outcome == "model error: the vendor SDK fell over" and step.page


class OneScreen:
    """An observer that always sees the same (real) observation."""

    def __init__(self, observation: Observation) -> None:
        self.observation = observation

    def observe(self, after_action: bool = False, *, timeout_s: float | None = None) -> Any:
        return self.observation

    def mark_action(self) -> int:
        return 0


def test_a_secure_screen_is_handed_over() -> None:
    """A black frame over a tree full of things (FLAG_SECURE: a bank's login) asks for a
    person: the run stops before the model is asked, unless hand_over is off."""
    import cv2
    import numpy as np

    from perception import perceive
    from perception.demo import demo_png, demo_xml

    size = cv2.imdecode(np.frombuffer(demo_png(), np.uint8), cv2.IMREAD_COLOR).shape
    black = cv2.imencode(".png", np.zeros(size, np.uint8))[1].tobytes()
    obs = perceive(xml=demo_xml(), frame=black)
    assert obs.screen is not None and obs.screen.secure
    asked = ParsingDecider(['{"action":"finish","answer":"typed the PIN"}'])
    agent = Agent(OneScreen(obs), asked, Executor(input_for(ReplaySource(TINY))), QUICK)
    transcript = agent.run("Log in")
    (step,) = transcript.steps
    assert transcript.stop is StopReason.HAND_OVER and not transcript.ok
    assert step.outcome.startswith("handed over: ") and "FLAG_SECURE" in step.outcome
    assert step.action is None and asked.answers  # the model was not asked
    on = Agent(OneScreen(obs), asked, Executor(input_for(ReplaySource(TINY))),
               LoopConfig(max_steps=2, settle_ms=0, hand_over=False))
    assert on.run("Log in").stop is StopReason.FINISHED


class TellingDecider:
    """Finishes at once, noting the system prompt and whether any text may be typed."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, bool]] = []

    def decide(
        self, messages: Sequence[ChatMessage], observation: Observation, *,
        timeout_s: float | None = None, coords: bool = True, unicode_text: bool = False,
    ) -> Decision:
        self.seen.append((str(messages[0]["content"]), unicode_text))
        return Decision(action=Finish("ok"), answers=('{"action":"finish","answer":"ok"}',))


def test_the_model_may_type_any_text_where_the_input_can() -> None:
    """A replay takes any text: the model is told so and its decider validates so. A decider
    written before ``unicode_text`` existed keeps the printable-ASCII rule on both sides."""
    with Engine(ReplaySource(TINY), config=FAST) as engine:
        told = TellingDecider()
        Agent(engine, told, Executor(input_for(engine.source)), QUICK).run("Write 你好")
        older = ParsingDecider(
            ['{"action":"type","text":"你好"}', '{"action":"finish","answer":"x"}']
        )
        transcript = Agent(engine, older, Executor(input_for(engine.source)), QUICK).run("Go")
    ((system, unicode_text),) = told.seen
    assert unicode_text and "any language" in system and "printable ASCII" not in system
    first, _ = transcript.steps
    assert first.outcome.startswith("rejected:") and "printable ASCII" in first.outcome


class PlainDecider:
    """A model of the caller's written against the Decider Protocol alone: no ``coords``, no
    ``unicode_text`` keyword."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def decide(
        self, messages: Sequence[ChatMessage], observation: Observation, *,
        timeout_s: float | None = None,
    ) -> Decision:
        self.calls.append({"timeout_s": timeout_s})
        return Decision(action=Finish("seen"), answers=('{"action":"finish","answer":"seen"}',))


def test_a_decider_without_the_optional_keywords_runs_id_only() -> None:
    """The id-only prompt (coords=False) with a decider that takes no ``coords``: the loop does
    not pass it (the run used to die on an unexpected keyword)."""
    model = PlainDecider()
    loop = LoopConfig(max_steps=2, step_timeout_s=20.0, settle_ms=0, coords=False)
    with Engine(ReplaySource(TINY), config=FAST) as engine:
        transcript = Agent(engine, model, Executor(input_for(engine.source)), loop).run("Look")
    assert transcript.stop is StopReason.FINISHED and transcript.answer == "seen"
    assert len(model.calls) == 1


def test_an_id_only_run_refuses_grid_points_from_a_decider_that_allowed_them() -> None:
    """A decider without ``coords`` validates with grid points allowed; on an id-only run the
    loop refuses its tap_at itself (the model was never shown a box to aim at)."""
    from agent.actions import TapAt
    from perception.types import PointPm

    model = ScriptedDecider([TapAt(PointPm(500, 500)), Finish("done")])
    loop = LoopConfig(max_steps=3, step_timeout_s=20.0, settle_ms=0, coords=False)
    with Engine(ReplaySource(TINY), config=FAST) as engine:
        transcript = Agent(engine, PlainScripted(model), Executor(input_for(engine.source)),
                           loop).run("Tap the middle")
    first = transcript.steps[0]
    assert first.outcome.startswith("rejected: this screen shows no positions")
    assert not first.commands
    assert transcript.stop is StopReason.FINISHED


class PlainScripted:
    """A scripted decider whose ``decide`` takes no ``coords``."""

    def __init__(self, inner: ScriptedDecider) -> None:
        self.inner = inner

    def decide(
        self, messages: Sequence[ChatMessage], observation: Observation, *,
        timeout_s: float | None = None,
    ) -> Decision:
        return self.inner.decide(messages, observation, timeout_s=timeout_s)
