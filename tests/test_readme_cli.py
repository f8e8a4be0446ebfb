"""What the README tells a user to run: the command lines it documents fail in one line and
with the documented exit code, and do what the README says they do."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import requires_corpus

from perception.cli.main import main
from perception.cli.record import parse_action
from perception.demo import demo_xml
from perception.errors import InputError
from perception.simdevice.cli import main as simdevice_main

TINY = Path(__file__).parent / "data" / "sources" / "tiny"


def _closed_port() -> str:
    """A loopback port nothing listens on: a command that got as far as the adb server would
    fail there with a device error, not with the error a test expects."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


@pytest.mark.parametrize(
    ("line", "needle"),
    [
        ("tap 1", "tap X Y"),
        ("tap a b", "tap X Y"),
        ("long 5", "long X Y"),
        ("swipe 1 2 3", "swipe X1 Y1 X2 Y2 [MS]"),
        ("swipe 1 2 3 4 fast", "swipe X1 Y1 X2 Y2 [MS]"),
        ("text", "text WORDS"),
        ("key", "key NAME"),
        ("jump 1 2", "unknown action 'jump 1 2'"),
        # what the phone cannot do
        ("text tab\there", "control characters"),
        ("key NOSUCHKEY", "unknown key"),
        ("key KEYCODE_NOSUCHKEY", "unknown key"),
        ("key 999", "unknown key"),
        ("tap -5 10", "tap X Y"),
        ("swipe 1 2 3 4 -300", "swipe X1 Y1 X2 Y2 [MS]"),
    ],
)
def test_record_refuses_a_bad_action_line_as_an_input_error(line: str, needle: str) -> None:
    with pytest.raises(InputError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        parse_action(line, b"")


def test_record_text_action_keeps_the_words_without_the_line_break() -> None:
    parsed = parse_action("text hello  world\n", demo_xml())
    assert parsed is not None
    action, input_args = parsed
    assert action.text == "hello  world"
    assert input_args == ["text", "hello%s%sworld"]


def test_record_with_a_missing_actions_file_is_one_line_and_leaves_no_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rec"
    code = main(["record", "--serial", "127.0.0.1:5555", "--adb-port", _closed_port(),
                 "--actions", str(tmp_path / "missing.txt"), str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "InputError" in err and "missing.txt" in err
    assert not out.exists()  # a rerun is not refused as "already holds a recording"


def test_record_checks_the_whole_actions_file_before_driving_the_phone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "actions.txt"
    script.write_text("tap 10 20\n# a comment\n\ntap 30\nback\n", encoding="utf-8")
    out = tmp_path / "rec"
    code = main(["record", "--serial", "127.0.0.1:5555", "--adb-port", _closed_port(),
                 "--actions", str(script), str(out)])
    assert code == 2
    err = capsys.readouterr().err
    assert f"{script} line 4" in err and "tap X Y" in err
    assert "DeviceOfflineError" not in err
    assert not out.exists()


def test_simdevice_names_the_option_a_bad_idle_value_came_from(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exc:
        simdevice_main([str(TINY), "--port", "0", "--idle", "often"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--idle" in err and "always" in err and "invalid literal" not in err


def test_export_strict_says_which_screen_stopped_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "samples" / "broken"
    bad.mkdir(parents=True)
    (bad / "screen.xml").write_text("garbage", encoding="utf-8")
    code = main(["export", str(tmp_path / "samples"), "--no-frames", "--strict"])
    assert code == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "TreeParseError" in err


def test_demo_ocr_says_how_many_pixel_candidates_it_left_out(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import perception.pixel

    fake = SimpleNamespace(
        kind="text", confidence=1.0, box_px=(0, 0, 10, 10), text="x"
    )
    monkeypatch.setattr(
        perception.pixel, "read_pixels", lambda frame: SimpleNamespace(candidates=[fake] * 45)
    )
    assert main(["demo", "--ocr"]) == 0
    out = capsys.readouterr().out
    assert "# pixel channel: 45 candidates" in out
    assert out.rstrip().endswith("... 5 more")


def test_agent_replay_of_a_folder_that_is_not_a_recording_is_a_bad_argument(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agent.cli import main as agent_main

    code = agent_main(["--replay", str(tmp_path / "missing"), "--task", "x",
                       "--base-url", "http://127.0.0.1:9/v1", "--model", "m"])
    assert code == 2  # README: "2 bad arguments"; 1 is kept for errors during the run
    err = capsys.readouterr().err
    assert "RecordingError" in err and "missing" in err


def test_the_ten_lines_run_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    """README's "In your agent, ten lines" block, run as a user pastes it (real OCR, the demo
    screen the package ships): it names what to tap and where."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## In your agent, ten lines", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert len([line for line in code.splitlines() if line.strip()]) <= 12
    exec(compile(code, "README.md", "exec"), {})  # noqa: S102 - the README's own code
    assert capsys.readouterr().out == "Navigate up PointPx(x=84, y=180)\n"


@requires_corpus
def test_the_loop_with_no_model_runs_as_written(
    corpus_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """README's "try the loop with no model server and no phone" block, on the corpus's trace it
    names (its relative path made this checkout's): a tap, then the finish."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("To try the loop with no model server and no phone", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert '"../shared/corpus/' in code
    code = code.replace('"../shared/corpus/', f'"{corpus_dir}/')
    exec(compile(code, "README.md", "exec"), {})  # noqa: S102 - the README's own code
    transcript = json.loads(capsys.readouterr().out)
    assert transcript["stop"] == "finished"
    assert [s["action"]["action"] for s in transcript["steps"]] == ["tap", "finish"]
