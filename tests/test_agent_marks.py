"""``perception-agent --marks``: the set-of-marks screenshot of the frame each observation was
fused from goes to the model (the real openai client, the loopback server) before the same text;
off by default; a frame-less observation is sent the text alone."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest
from test_agent_cli import args
from test_agent_llm import LoopbackModel, config, id_of, rows_of
from test_agent_loop import FAST, TINY, keypad_recording

from agent.cli import main
from agent.executor import Executor, input_for
from agent.llm import ChatModel
from agent.loop import Agent, LoopConfig, StepRecord, StopReason, Transcript
from agent.prompt import build_messages, content_text, system_prompt
from perception import perceive
from perception.demo import demo_png, demo_xml
from perception.engine import Engine
from perception.errors import ConfigError
from perception.sources import ReplaySource

QUICK = LoopConfig(max_steps=6, step_timeout_s=20.0, settle_ms=0)
MARKS = LoopConfig(max_steps=6, step_timeout_s=20.0, settle_ms=0, marks=True)


def turn_of(body: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """The newest screen turn of a request: its text, and its image parts (none for a str)."""
    for message in reversed(body["messages"]):
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            if content.startswith('{"step"'):
                return content, []
            continue
        texts = [p["text"] for p in content if p["type"] == "text"]
        assert len(texts) == 1 and texts[0].startswith('{"step"'), content
        return texts[0], [p for p in content if p["type"] == "image_url"]
    raise AssertionError("no screen turn in the request")


def decoded(part: dict[str, Any]) -> np.ndarray:
    url = part["image_url"]["url"]
    head, _, data = url.partition(",")
    assert head == "data:image/jpeg;base64"
    raw = base64.b64decode(data, validate=True)
    assert raw[:3] == b"\xff\xd8\xff"  # a JPEG
    image = cv2.imdecode(np.frombuffer(raw, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None
    return image


def notes(body: dict[str, Any]) -> str:
    """test_agent_loop's notes_model, reading the text part of a turn with an image."""
    screen = json.loads(turn_of(body)[0])["screen"]
    labels = {row.label for row in rows_of(screen)}
    if "New note" in labels:
        return f'{{"action":"tap","id":{id_of(screen, "New note")}}}'
    if "Save" in labels:
        return f'{{"action":"tap","id":{id_of(screen, "Save")}}}'
    return '{"action":"finish","answer":"Dark mode is there."}'


def run(
    source: ReplaySource, server: LoopbackModel, task: str, loop: LoopConfig
) -> tuple[Transcript, list[StepRecord]]:
    seen: list[StepRecord] = []
    with Engine(source, config=FAST) as engine:
        model = ChatModel(config(server))
        agent = Agent(engine, model, Executor(input_for(source)), loop, on_step=seen.append)
        transcript = agent.run(task)
        model.close()
    return transcript, seen


def test_build_messages_with_a_frame_puts_the_marked_screenshot_before_the_same_text() -> None:
    obs = perceive(demo_xml(), demo_png())
    plain = build_messages(obs, "Open settings")
    marked = build_messages(obs, "Open settings", frame=demo_png(), max_side_px=1280)
    assert isinstance(plain[1]["content"], str)
    assert plain[0]["content"] == system_prompt("Open settings")
    assert "red labels are the ids" not in plain[0]["content"]
    assert marked[0]["content"] == system_prompt("Open settings", marks=True)
    assert "red labels are the ids" in marked[0]["content"]
    image, text = marked[1]["content"]
    assert image["type"] == "image_url" and text["type"] == "text"
    assert text["text"] == plain[1]["content"]
    assert decoded(dict(image)).shape == (1280, 576, 3)  # 1080x2400 scaled to 1280 high
    assert content_text(marked[1]["content"]) == (plain[1]["content"], 1)
    assert content_text(plain[1]["content"]) == (plain[1]["content"], 0)


def test_the_engine_keeps_the_frame_of_the_observation_it_returned() -> None:
    source = ReplaySource(TINY)
    with Engine(source, config=FAST) as engine:
        assert engine.last_frame() is None
        obs = engine.observe()
        frame = engine.last_frame()
        assert obs.screen is not None and isinstance(frame, bytes)
        assert frame == (TINY / "step_000" / "screen.png").read_bytes()


def test_the_engine_has_no_frame_for_a_tree_only_observation(tmp_path: Path) -> None:
    with Engine(ReplaySource(keypad_recording(tmp_path)), config=FAST) as engine:
        obs = engine.observe()
        assert obs.ready and engine.last_frame() is None


def test_the_loop_sends_the_marked_screenshot_of_each_frame() -> None:
    source = ReplaySource(TINY)
    with LoopbackModel(notes) as server:
        transcript, seen = run(source, server, "Create a note and find the dark mode", MARKS)
    assert transcript.stop is StopReason.FINISHED, transcript.dumps()
    assert [s.images for s in seen] == [1, 1, 1]
    assert all(s["images"] == 1 for s in json.loads(transcript.dumps())["steps"])
    for body in server.requests:
        assert "red labels are the ids" in body["messages"][0]["content"]
        text, images = turn_of(body)
        assert len(images) == 1
        assert decoded(images[0]).shape == (640, 360, 3)  # the recording's size: not scaled up
        assert body["messages"][1]["content"][0]["type"] == "image_url"  # the image first
    # the text part is what a run without marks sends
    with LoopbackModel(notes) as plain_server:
        run(ReplaySource(TINY), plain_server, "Create a note and find the dark mode", QUICK)
    for marked, plain in zip(server.requests, plain_server.requests, strict=True):
        assert turn_of(marked)[0] == plain["messages"][1]["content"]
        # a replay types any text; the one sentence about the labels is the only difference
        task = "Create a note and find the dark mode"
        assert plain["messages"][0]["content"] == system_prompt(task, unicode_text=True)
        assert marked["messages"][0]["content"] == system_prompt(
            task, unicode_text=True, marks=True
        )


def test_marks_are_off_by_default() -> None:
    assert LoopConfig().marks is False
    source = ReplaySource(TINY)
    with LoopbackModel(notes) as server:
        transcript, seen = run(source, server, "Create a note and find the dark mode", QUICK)
    assert transcript.stop is StopReason.FINISHED
    assert all(isinstance(b["messages"][1]["content"], str) for b in server.requests)
    assert all("red labels" not in b["messages"][0]["content"] for b in server.requests)
    assert all(s.images is None for s in seen)
    assert all("images" not in s for s in json.loads(transcript.dumps())["steps"])


def test_a_frameless_observation_is_sent_the_text_alone(tmp_path: Path) -> None:
    source = ReplaySource(keypad_recording(tmp_path))
    with LoopbackModel(['{"action":"finish","answer":"no frame"}']) as server:
        transcript, seen = run(source, server, "Set a timer", MARKS)
    assert transcript.stop is StopReason.FINISHED
    (body,) = server.requests
    assert isinstance(body["messages"][1]["content"], str)
    assert body["messages"][0]["content"] == system_prompt("Set a timer", unicode_text=True)
    assert [s.images for s in seen] == [0]


def test_marks_need_an_engine_that_keeps_frames() -> None:
    class NoFrames:
        def observe(self, after_action: bool = False, *, timeout_s: float | None = None) -> Any:
            raise AssertionError("not reached")

        def mark_action(self) -> int:
            return 0

    source = ReplaySource(TINY)
    with LoopbackModel([]) as server:
        model = ChatModel(config(server))
        with pytest.raises(ConfigError, match="last_frame"):
            Agent(NoFrames(), model, Executor(input_for(source)), MARKS)
        model.close()
    with pytest.raises(ConfigError, match="marks_max_side_px"):
        LoopConfig(marks=True, marks_max_side_px=10)


@pytest.fixture
def fast_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERCEPTION_ENGINE_TREE_INTERVAL_MS", "20")
    monkeypatch.setenv("PERCEPTION_ENGINE_FRAME_INTERVAL_MS", "20")


@pytest.mark.usefixtures("fast_engine")
def test_cli_marks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "t.json"
    with LoopbackModel(notes) as server:
        code = main(["--replay", str(TINY), *args(server, "--marks", "--marks-max-side", "320",
                                                   "--transcript", str(out))])
    assert code == 0, capsys.readouterr().err
    assert "text only" not in capsys.readouterr().err
    for body in server.requests:
        (image,) = turn_of(body)[1]
        assert decoded(image).shape == (320, 180, 3)
    assert [s["images"] for s in json.loads(out.read_text())["steps"]] == [1, 1, 1]


@pytest.mark.usefixtures("fast_engine")
def test_cli_says_which_step_went_without_an_image(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = keypad_recording(tmp_path)
    with LoopbackModel(['{"action":"finish","answer":"done"}']) as server:
        code = main(["--replay", str(recording), *args(server, "--marks")])
    assert code == 0
    err = capsys.readouterr().err.splitlines()
    assert "finished [text only: no frame]" in err[0]
    assert isinstance(server.requests[0]["messages"][1]["content"], str)


@pytest.mark.usefixtures("fast_engine")
def test_cli_marks_flags(capsys: pytest.CaptureFixture[str]) -> None:
    from agent.cli import build_parser

    parsed = build_parser().parse_args(
        ["--replay", str(TINY), "--task", "t", "--base-url", "http://x/v1", "--model", "m"]
    )
    assert parsed.marks is False and parsed.marks_max_side is None
    parsed = build_parser().parse_args(
        ["--replay", str(TINY), "--task", "t", "--base-url", "http://x/v1", "--model", "m",
         "--marks", "--marks-max-side", "960"]
    )
    assert parsed.marks is True and parsed.marks_max_side == 960
    base = ["--replay", str(TINY), "--task", "t", "--base-url", "http://127.0.0.1:1/v1",
            "--model", "m"]
    for bad, why in (
        (["--marks-max-side", "960"], "--marks-max-side needs --marks"),
        (["--marks", "--marks-max-side", "10"], "--marks-max-side must be at least 64"),
        (["--marks", "--marks-max-side", "big"], "--marks-max-side: expects a whole number"),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(base + bad)
        assert exit_info.value.code == 2
        assert why in capsys.readouterr().err
