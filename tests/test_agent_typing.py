"""Typing any language: the device source, the executor and ``perception-agent --ime`` against
the virtual phone with and without ADB Keyboard, through the real adb server, with the real
openai client against the loopback model server."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from _adb import AdbServer, connected, requires_adb
from _xml import node, screen
from test_agent_llm import LoopbackModel, rows_of, screen_of

from agent.actions import Type
from agent.cli import main
from agent.executor import AdbInput, ExecutionError, Executor, input_for
from perception import perceive
from perception.demo import demo_png, demo_xml
from perception.errors import InputMethodError
from perception.pipeline import Observation
from perception.simdevice import SimDevice
from perception.simdevice.phone import LATIN_IME
from perception.sources.device import ADB_KEYBOARD_IME, DeviceSource

TEXT = "你好，世界 café ☕ 100%s"


@pytest.fixture(scope="module")
def demo_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo screen (a search field among Wi-Fi settings) as a one-step recording."""
    root = tmp_path_factory.mktemp("demo_rec")
    (root / "step_000").mkdir()
    (root / "step_000" / "screen.xml").write_bytes(demo_xml())
    (root / "step_000" / "screen.png").write_bytes(demo_png())
    line = {"step": 0, "tree": "step_000/screen.xml", "frame": "step_000/screen.png",
            "tree_start_ns": 0, "tree_end_ns": 30_000_000, "frame_start_ns": 5_000_000,
            "frame_end_ns": 25_000_000, "epoch": 0, "action": None}
    (root / "steps.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    return root


def serving(
    adb_server: AdbServer, recording: Path, keyboard: str
) -> AbstractContextManager[tuple[SimDevice, DeviceSource]]:
    return connected(adb_server, recording, adb_keyboard=keyboard)


@requires_adb
def test_the_device_source_selects_adb_keyboard_and_types(
    adb_server: AdbServer, demo_recording: Path
) -> None:
    with serving(adb_server, demo_recording, "installed") as (sim, source):
        assert source.input_method() == LATIN_IME
        assert source.input_methods() == (LATIN_IME,)
        assert ADB_KEYBOARD_IME in source.input_methods(installed=True)
        with pytest.raises(InputMethodError, match="needs ADB Keyboard") as info:
            source.type_text(TEXT)
        assert info.value.serial == sim.serial and sim.phone.typed == []
        epoch = source.epoch
        assert source.select_input_method(ADB_KEYBOARD_IME) == LATIN_IME
        assert source.select_input_method(ADB_KEYBOARD_IME) == ADB_KEYBOARD_IME  # no-op
        source.type_text(TEXT)
        assert sim.phone.typed == [TEXT] and source.epoch == epoch + 1
        assert source.select_input_method(LATIN_IME) == ADB_KEYBOARD_IME
        assert source.input_method() == LATIN_IME
        with pytest.raises(InputMethodError, match="not an input method id"):
            source.select_input_method("rm -rf /")


@requires_adb
def test_a_phone_without_adb_keyboard_says_how_to_get_it(
    adb_server: AdbServer, demo_recording: Path
) -> None:
    with serving(adb_server, demo_recording, "absent") as (sim, source):
        with pytest.raises(InputMethodError, match="install ADB Keyboard"):
            source.select_input_method(ADB_KEYBOARD_IME)
        assert source.input_method() == LATIN_IME
        executor = Executor(input_for(source), sleep=False)
        assert not executor.unicode_text
        obs = perceive(source.capture_tree().xml, source.capture_frame().data)
        field = next(c.id for c in obs.candidates if c.kind == "input")
        with pytest.raises(ExecutionError, match="needs ADB Keyboard") as info:
            executor.execute(Type(TEXT, field), obs)
        assert len(info.value.sent) == 1 and info.value.sent[0].startswith("tap ")
        assert sim.phone.typed == []


@requires_adb
def test_the_executor_types_ascii_by_input_text_and_the_rest_by_broadcast(
    adb_server: AdbServer, demo_recording: Path
) -> None:
    with serving(adb_server, demo_recording, "active") as (sim, source):
        executor = Executor(input_for(source), sleep=False)
        assert isinstance(executor.sink, AdbInput) and executor.unicode_text
        obs = perceive(source.capture_tree().xml, source.capture_frame().data)
        field = next(c.id for c in obs.candidates if c.kind == "input")
        done = executor.execute(Type("plain text", field), obs)
        assert done.commands[-1] == "text plain%stext"
        done = executor.execute(Type(TEXT, field), obs)
        assert done.commands[-1] == f"am broadcast -a ADB_INPUT_B64 ({len(TEXT)} characters)"
        assert sim.phone.typed == ["plain text", TEXT]
        # ADB Keyboard clears a field in one broadcast, whatever it holds
        assert executor.sink.clear(5000) == "am broadcast -a ADB_CLEAR_TEXT"
        assert sim.phone.events[-1].startswith("adbkeyboard clear")


def typing_model(body: dict[str, Any]) -> str:
    """Types into the search field, then finishes; notes what the schema said about text."""
    system = body["messages"][0]["content"]
    typing_model.told.append("any language" in system)  # type: ignore[attr-defined]
    if json.loads(body["messages"][-1]["content"])["history"]:
        return '{"action":"finish","answer":"typed"}'
    screen = screen_of(body)
    field = next(row.id for row in rows_of(screen) if row.label == "Search networks")
    return json.dumps({"action": "type", "text": TEXT, "id": field}, ensure_ascii=False)


@pytest.fixture
def fast_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERCEPTION_ENGINE_TREE_INTERVAL_MS", "20")
    monkeypatch.setenv("PERCEPTION_ENGINE_FRAME_INTERVAL_MS", "20")
    typing_model.told = []  # type: ignore[attr-defined]


def agent_with_ime(adb_server: AdbServer, serial: str, server: LoopbackModel, task: str) -> int:
    """``perception-agent --ime adbkeyboard`` on the virtual phone ``serial``; its exit code."""
    return main([
        "--serial", serial, "--adb-port", str(adb_server.port), "--ime", "adbkeyboard",
        "--task", task, "--base-url", server.base_url, "--model", "scripted-1", "--api-key", "k",
        "--settle-ms", "0", "--steps", "4",
    ])


@requires_adb
def test_the_agent_selects_adb_keyboard_for_the_run_and_restores_it(
    adb_server: AdbServer, demo_recording: Path, capsys: pytest.CaptureFixture[str],
    fast_engine: None,
) -> None:
    with serving(adb_server, demo_recording, "installed") as (sim, source):
        with LoopbackModel(typing_model) as server:
            code = agent_with_ime(adb_server, sim.serial, server, "Search for the network 你好")
        err = capsys.readouterr().err
        assert code == 0, err
        assert sim.phone.typed == [TEXT]
        assert typing_model.told and all(typing_model.told)  # type: ignore[attr-defined]
        assert source.input_method() == LATIN_IME  # put back after the run
        assert source.input_methods() == (LATIN_IME,)  # and ADB Keyboard off the enabled list
    with serving(adb_server, demo_recording, "absent") as (sim, _):
        with LoopbackModel(typing_model) as server:
            code = agent_with_ime(adb_server, sim.serial, server, "t")
        assert code == 1 and server.requests == []
        assert "InputMethodError" in capsys.readouterr().err


def test_ime_needs_a_phone(demo_recording: Path) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--replay", str(demo_recording), "--ime", "adbkeyboard", "--task", "t",
              "--base-url", "http://127.0.0.1:1/v1", "--model", "m"])
    assert info.value.code == 2


# ----- a type replaces the field's text unless it appends ------------------------------------


def form(value: str, hint: str = "Search", **field: object) -> Observation:
    """A screen with one text field holding ``value`` (the dump names its ``hint``), and the
    same screen's frame (grey; the tree is trusted)."""
    import cv2
    import numpy as np

    attrs: dict[str, object] = dict(
        cls="android.widget.EditText", clickable=True, focusable=True, text=value or hint,
        hint=hint, resource_id="com.app:id/query",
    )
    attrs.update(field)
    xml = screen(
        node((40, 200, 1040, 330), **attrs),  # type: ignore[arg-type]
        node((40, 400, 1040, 530), cls="android.widget.Button", clickable=True, text="Go"),
    )
    frame = np.full((2400, 1080, 3), 238, np.uint8)
    ink = (30, 30, 30)
    cv2.putText(frame, (value or hint)[:30], (60, 280), cv2.FONT_HERSHEY_SIMPLEX, 2, ink, 3)
    cv2.putText(frame, "Go", (500, 480), cv2.FONT_HERSHEY_SIMPLEX, 2, ink, 3)
    return perceive(xml, cv2.imencode(".png", frame)[1].tobytes())


def field_id(obs: Observation) -> int:
    return next(c.id for c in obs.candidates if c.kind == "input")


class Keys:
    """A device source's ``input`` that records each command's arguments instead of sending."""

    def __init__(self) -> None:
        self.sent: list[tuple[str | int, ...]] = []

    def input(self, *args: str | int) -> None:
        self.sent.append(args)


def test_the_observation_knows_what_a_field_holds() -> None:
    """The label shows the hint of an empty field, and cuts a long text: the observation keeps
    what the field holds, which is what replacing it must delete."""
    empty = form("")
    assert empty.candidate(field_id(empty)).text == "Search"
    assert empty.field_texts == {field_id(empty): ""}
    long = "a fairly long search query that the label cuts somewhere after forty"
    full = form(long)
    assert full.candidate(field_id(full)).text != long
    assert full.field_texts == {field_id(full): long}
    assert len(form("x", hint="").field_texts) == 1  # an older dump: no hint attribute


def test_a_password_field_gives_its_length_never_its_text() -> None:
    """A dump that holds a password in clear (some apps' fields do) must not hand it on through
    ``field_texts``, which agents log and show models; the prompt already masks it. Replacing
    it still needs its length."""
    obs = form("hunter2", hint="", password=True)
    fid = field_id(obs)
    assert obs.candidate(fid).password
    assert obs.field_texts == {fid: "\u2022" * 7}
    assert "hunter2" not in obs.to_prompt() + repr(obs.field_texts)
    keys = Keys()
    Executor(input_for(keys), sleep=False).execute(Type("new", fid), obs)
    assert keys.sent[1] == ("keyevent", *[67] * 7, *[112] * 7)  # the whole password deleted


def test_type_deletes_what_the_field_holds_first() -> None:
    obs = form("hello")
    fid = field_id(obs)
    keys = Keys()
    done = Executor(input_for(keys), sleep=False).execute(Type("world", fid), obs)
    assert keys.sent[1] == ("keyevent", *[67] * 5, *[112] * 5)  # after the tap, before the text
    assert keys.sent[2] == ("text", "world")
    assert done.commands[1] == "keyevent 67 x5 112 x5"
    keys.sent.clear()
    Executor(input_for(keys), sleep=False).execute(Type("world", fid, append=True), obs)
    assert [args[0] for args in keys.sent] == ["tap", "text"]
    keys.sent.clear()
    Executor(input_for(keys), sleep=False).execute(Type("world", fid), form(""))
    assert [args[0] for args in keys.sent] == ["tap", "text"]  # empty: nothing to delete


def test_a_long_field_is_cleared_in_few_commands_and_a_huge_one_refused() -> None:
    obs = form("y" * 300)
    keys = Keys()
    Executor(input_for(keys), sleep=False).execute(Type("z", field_id(obs)), obs)
    cleared = [args for args in keys.sent if args[0] == "keyevent"]
    assert len(cleared) == 3 and sum(len(a) - 1 for a in cleared) == 600
    huge = form("y" * 2001)
    keys.sent.clear()
    with pytest.raises(ExecutionError, match='"append":true') as info:
        Executor(input_for(keys), sleep=False).execute(Type("z", field_id(huge)), huge)
    assert [args[0] for args in keys.sent] == ["tap"]
    assert len(info.value.sent) == 1 and info.value.sent[0].startswith("tap ")


def test_text_that_reached_no_field_is_reported() -> None:
    """Neither input text nor ADB Keyboard says whether the text landed: the screen after the
    type is the witness (its fields' texts), and the step's outcome says when none holds it."""
    from agent.loop import typed_into_a_field

    before = form("")
    fid = field_id(before)
    assert typed_into_a_field(Type("hello", fid), before, form("hello"))
    assert typed_into_a_field(Type("hello  world", fid), before, form("say hello world"))
    assert not typed_into_a_field(Type("hello", fid), before, form(""))
    secret = form("", password=True)
    assert typed_into_a_field(Type("hunter2", field_id(secret)), secret, form("", password=True))
    import cv2
    import numpy as np

    grey = cv2.imencode(".png", np.full((2400, 1080, 3), 238, np.uint8))[1].tobytes()
    pixels_only = perceive(frame=grey)
    assert typed_into_a_field(Type("hello"), before, pixels_only)  # no tree: nobody can tell


@requires_adb
def test_ime_leaves_an_adb_keyboard_enabled_before_enabled(
    adb_server: AdbServer, demo_recording: Path, capsys: pytest.CaptureFixture[str],
    fast_engine: None,
) -> None:
    """A phone whose user had ADB Keyboard enabled (not selected) keeps it enabled."""
    with serving(adb_server, demo_recording, "installed") as (sim, source):
        source.run(f"ime enable {ADB_KEYBOARD_IME}")
        with LoopbackModel(typing_model) as server:
            code = agent_with_ime(adb_server, sim.serial, server, "t")
        assert code == 0, capsys.readouterr().err
        assert source.input_method() == LATIN_IME
        assert source.input_methods() == (LATIN_IME, ADB_KEYBOARD_IME)
