"""``perception-agent``: on a recording, and on the virtual phone through the real adb server,
with the real openai client against the loopback model server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _adb import TINY, AdbServer, requires_adb
from test_agent_llm import LoopbackModel
from test_agent_loop import notes_model

from agent.cli import main
from perception.simdevice import SimDevice


@pytest.fixture(autouse=True)
def fast_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PERCEPTION_ENGINE_TREE_INTERVAL_MS", "20")
    monkeypatch.setenv("PERCEPTION_ENGINE_FRAME_INTERVAL_MS", "20")


def args(server: LoopbackModel, *extra: str) -> list[str]:
    return [
        "--task", "Create a note and find the dark mode setting",
        "--base-url", server.base_url, "--model", "scripted-1", "--api-key", "k",
        "--settle-ms", "0", *extra,
    ]


def test_cli_on_a_recording(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "transcript.json"
    with LoopbackModel(notes_model) as server:
        code = main(["--replay", str(TINY), *args(server, "--transcript", str(out))])
    assert code == 0
    captured = capsys.readouterr()
    assert captured.out == ""  # the transcript went to the file; step lines are on stderr
    lines = captured.err.splitlines()
    assert lines[0].startswith('step 1: {"action": "tap"') and "page changed" in lines[0]
    assert "finished" in lines[2]
    assert lines[-1].startswith("stopped: finished after 3 steps; answer: ")
    transcript = json.loads(out.read_text())
    assert transcript["stop"] == "finished" and len(transcript["steps"]) == 3


def test_cli_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    with LoopbackModel(notes_model) as server:
        assert main(["--replay", str(TINY), *args(server, "--steps", "1")]) == 3
        printed = json.loads(capsys.readouterr().out)  # stdout is the transcript alone
        assert printed["stop"] == "budget"
    with LoopbackModel(["{}"], status=400) as server:
        assert main(["--replay", str(TINY), *args(server, "--llm-retries", "0")]) == 1
    assert len(server.requests) == 1  # a request the server refuses: the run ends at once
    capsys.readouterr()
    with LoopbackModel(["{}"], status=500) as server:
        code = main(["--replay", str(TINY), *args(server, "--llm-retries", "0", "--steps", "9")])
    assert code == 1 and json.loads(capsys.readouterr().out)["stop"] == "error"
    assert len(server.requests) == 3  # a failing server may answer later: 3 steps, then error
    with pytest.raises(SystemExit) as info:
        main(["--replay", str(TINY), "--base-url", "http://127.0.0.1:1/v1", "--model", "m"])
    assert info.value.code == 2  # no --task
    with pytest.raises(SystemExit) as info:
        main(["--replay", str(TINY), "--task", "t", "--base-url", "http://x/v1", "--model", "m",
              "--steps", "0"])
    assert info.value.code == 2


@requires_adb
def test_cli_on_the_virtual_phone(
    adb_server: AdbServer, sim: SimDevice, capsys: pytest.CaptureFixture[str]  # noqa: F811
) -> None:
    with LoopbackModel(notes_model) as server:
        code = main(
            ["--serial", sim.serial, "--adb-port", str(adb_server.port), *args(server)]
        )
    assert code == 0, capsys.readouterr().err
    taps = [e for e in sim.phone.events if e.startswith("tap ")]
    assert len(taps) == 2 and "-> 1" in taps[0] and "-> 2" in taps[1]
    transcript = json.loads(capsys.readouterr().out)
    assert transcript["answer"] == "The settings screen offers Dark mode."


def test_an_unwritable_transcript_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Checked before the run (exit 2, the model never asked); a write that still fails (a full
    disk: /dev/full) prints the transcript instead and keeps the run's exit code."""
    with LoopbackModel(notes_model) as server:
        for bad in (tmp_path / "missing" / "t.json", tmp_path):
            with pytest.raises(SystemExit) as info:
                main(["--replay", str(TINY), *args(server, "--transcript", str(bad))])
            assert info.value.code == 2
            assert "--transcript" in capsys.readouterr().err
        assert server.requests == []
        if Path("/dev/full").exists():
            code = main(["--replay", str(TINY), *args(server, "--transcript", "/dev/full")])
            assert code == 0
            captured = capsys.readouterr()
            assert "cannot write the transcript" in captured.err
            assert json.loads(captured.out)["stop"] == "finished"


def test_model_text_cannot_drive_the_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    """ESC and C1 (CSI \\x9b) in what the model wrote are printed escaped; the transcript JSON
    reads back the exact text."""
    raw = 'ok \x1b[31mRED\x1b]0;title\x07 \x9b2J \u202e {"action":"finish","answer":"done"}'
    with LoopbackModel([raw]) as server:
        code = main(["--replay", str(TINY), *args(server, "--max-tokens", "77")])
    assert code == 0 and server.requests[0]["max_tokens"] == 77
    captured = capsys.readouterr()
    for text in (captured.out, captured.err):
        assert not any(ch in text for ch in "\x1b\x07\x9b\u202e"), repr(text)
    transcript = json.loads(captured.out)
    assert transcript["steps"][0]["answers"] == [raw] and transcript["answer"] == "done"
