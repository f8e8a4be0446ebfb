"""The command lines against the real adb server and the virtual phone, as a user meets them:
a failure or a bad option is one line and exit 2, Ctrl-C is one line and exit 130, nothing is
overwritten or left half-written, and the messages read right."""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from _adb import TINY, AdbServer, device_config, requires_adb
from test_agent_llm import LoopbackModel
from test_agent_loop import notes_model

from perception.cli.main import main
from perception.cli.record import parse_action
from perception.config import DeviceConfig, EngineConfig, FusionConfig, PixelConfig, TreeConfig
from perception.demo import demo_png, demo_xml
from perception.errors import ConfigError, DeviceDisconnectedError, RecordingError
from perception.simdevice import Faults, SimDevice
from perception.simdevice.cli import build_parser as simdevice_parser, main as simdevice_main
from perception.sources.device import DeviceSource
from perception.sources.recording import read_recording
from perception.sources.replay import Timing, iter_steps

ROOT = Path(__file__).resolve().parents[1]


def _closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = err.splitlines()
    return line


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str], entry: Any = main) -> str:
    with pytest.raises(SystemExit) as info:
        entry(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def _sample(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "screen.xml").write_bytes(demo_xml())
    (folder / "screen.png").write_bytes(demo_png())
    return folder


def _dev(server: AdbServer, phone: SimDevice, timeout_s: str = "3") -> list[str]:
    return ["--serial", phone.serial, "--adb-port", str(server.port), "--timeout-s", timeout_s]


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _spawn(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """The CLI as a process of its own, with Ctrl-C's default: a suite run as a shell's
    background job (``./.ci/run &``) hands its children SIGINT ignored, as shells do for
    background jobs, and Python then installs no KeyboardInterrupt for it (these tests sent
    SIGINT into the void and failed there)."""
    return subprocess.Popen(
        [sys.executable, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=env, start_new_session=True, preexec_fn=_default_sigint,
    )


# ----- 1 and 5: the recording folder ------------------------------------------------------


def test_record_refuses_a_folder_that_holds_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Files of a corpus trace were replaced by the new recording's (only steps.jsonl was
    looked for); now any file refuses the folder, before the phone is reached."""
    folder = tmp_path / "c"
    (folder / "step_000").mkdir(parents=True)
    (folder / "trace.json").write_text("{}", encoding="utf-8")
    (folder / "step_000" / "screen.xml").write_bytes(b"<old/>")
    code = main(["record", "--serial", "x:1", "--adb-port", _closed_port(), str(folder),
                 "--steps", "1"])
    assert code == 2
    line = _one_line(capsys)
    assert "RecordingError" in line and "not empty" in line and "DeviceOffline" not in line
    assert sorted(p.name for p in folder.rglob("*")) == ["screen.xml", "step_000", "trace.json"]
    assert (folder / "step_000" / "screen.xml").read_bytes() == b"<old/>"


@pytest.mark.parametrize("kind", ["file", "unwritable"])
def test_record_out_dir_that_cannot_be_a_folder_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    if kind == "file":
        out = tmp_path / "f"
        out.write_text("x", encoding="utf-8")
    else:
        out = Path("/proc/nope/rec")
    code = main(["record", "--serial", "x:1", "--adb-port", _closed_port(), str(out)])
    assert code == 2
    line = _one_line(capsys)
    assert line.startswith("perception: RecordingError: ") and str(out) in line


def test_writer_is_lazy_and_removes_a_recording_without_steps(tmp_path: Path) -> None:
    from perception.sources.record import RecordingWriter

    out = tmp_path / "new" / "rec"
    with pytest.raises(RuntimeError), RecordingWriter(out, serial="s"):
        raise RuntimeError("the phone went away before the first step")
    assert not out.exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    with RecordingWriter(empty):
        pass
    assert empty.is_dir() and not list(empty.iterdir())  # a folder the user made stays


# ----- 2: Ctrl-C and SIGTERM --------------------------------------------------------------


def test_interrupt_is_one_line_and_130(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import perception.cli.replay as replay_cli

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(replay_cli, "read_recording", interrupted)
    assert main(["replay", str(TINY)]) == 130
    assert _one_line(capsys) == "perception: interrupted"


@requires_adb
def test_observe_stops_at_once_on_ctrl_c(adb_server: AdbServer) -> None:
    """A dump in flight held the engine's close() for 10 s ("engine threads still running"),
    then a KeyboardInterrupt traceback; closing the source aborts the dump."""
    phone = SimDevice(TINY, faults=Faults(dump_slow_ms=20_000)).start()
    dumping = threading.Event()
    run = phone.phone.run

    def watch(command: str) -> Any:
        if "uiautomator" in command:
            dumping.set()
        return run(command)

    phone.phone.run = watch  # type: ignore[method-assign,assignment]
    adb_server.connect(phone)
    proc = _spawn(["-m", "perception.cli.main", "observe", *_dev(adb_server, phone, "30")],
                  env=adb_server.env)
    try:
        assert dumping.wait(30)
        time.sleep(0.3)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        elapsed = time.monotonic() - t0
    finally:
        proc.kill()
        adb_server.adb("disconnect", phone.serial)
        phone.stop()
    assert proc.returncode == 130
    assert err.splitlines() == ["perception: interrupted"]
    assert elapsed < 3.0


@requires_adb
def test_watch_mode_writes_each_step_at_once_and_stops_on_sigterm(
    adb_server: AdbServer, sim: SimDevice, tmp_path: Path
) -> None:
    out = tmp_path / "r"
    proc = _spawn(["-m", "perception.cli.main", "record", *_dev(adb_server, sim), str(out),
                   "--interval-ms", "100"], env=adb_server.env)
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().strip() == "step 0"
        # Already on disk: a kill that cannot be handled (SIGKILL) keeps the step too.
        assert len((out / "steps.jsonl").read_text(encoding="utf-8").splitlines()) == 1
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert f"perception record: 1 step in {out}" in err
    assert len(read_recording(out).steps) == 1


def test_agent_writes_its_partial_transcript_on_ctrl_c(tmp_path: Path) -> None:
    """The transcript was lost with a KeyboardInterrupt traceback."""
    asked = threading.Event()
    release = threading.Event()

    def model(body: dict[str, Any]) -> str:
        if asked.is_set():
            release.wait(20)
        asked.set()
        return notes_model(body)

    out = tmp_path / "t.json"
    env = dict(os.environ, PERCEPTION_ENGINE_TREE_INTERVAL_MS="20",
               PERCEPTION_ENGINE_FRAME_INTERVAL_MS="20")
    with LoopbackModel(model) as server:
        proc = _spawn(["-m", "agent.cli", "--replay", str(TINY), "--task", "notes",
                       "--base-url", server.base_url, "--model", "m", "--api-key", "k",
                       "--settle-ms", "0", "--transcript", str(out)], env=env)
        try:
            deadline = time.monotonic() + 30
            while len(server.requests) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(server.requests) == 2
            proc.send_signal(signal.SIGINT)
            stdout, err = proc.communicate(timeout=20)
        finally:
            release.set()
            proc.kill()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.splitlines()[-1].startswith("stopped: interrupted")
    transcript = json.loads(out.read_text(encoding="utf-8"))
    assert len(transcript["steps"]) == 1 and transcript["stop"] == "interrupted"
    assert stdout == ""


# ----- 3 and 9: numbers that cannot be right ----------------------------------------------


@pytest.mark.parametrize("port", ["0", "-1", "70000", "x"])
def test_adb_port_out_of_range_is_a_usage_error(
    port: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _usage_error(["observe", "--serial", "s", "--adb-port", port], capsys)
    assert "--adb-port" in err and "1 to 65535" in err
    from agent.cli import main as agent_main

    err = _usage_error(["--serial", "s", "--adb-port", port, "--task", "t",
                        "--base-url", "http://127.0.0.1:9/v1", "--model", "m"], capsys,
                       agent_main)
    assert "--adb-port" in err


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e999"])
def test_timeout_must_be_a_finite_positive_number(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in ("observe", "record"):
        extra = ["out"] if command == "record" else []
        err = _usage_error([command, "--serial", "s", f"--timeout-s={value}", *extra], capsys)
        assert "--timeout-s" in err


@pytest.mark.parametrize("port", ["70000", "-1"])
def test_simdevice_port_out_of_range_is_a_usage_error(
    port: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _usage_error([str(TINY), "--port", port], capsys, simdevice_main)
    assert "--port" in err and "0 to 65535" in err


def test_every_float_setting_must_be_finite() -> None:
    for cls in (TreeConfig, FusionConfig, PixelConfig, DeviceConfig, EngineConfig):
        for f in fields(cls):
            if isinstance(f.default, float):
                for bad in (math.nan, math.inf):
                    with pytest.raises(ConfigError, match=f.name):
                        cls(**{f.name: bad})  # type: ignore[arg-type]
    for port in (0, -1, 70000):
        with pytest.raises(ConfigError, match="adb_port"):
            DeviceConfig(adb_port=port)
    with pytest.raises(ConfigError, match="ready_timeout_s"):
        DeviceConfig(ready_timeout_s=0)


# ----- 4: a failed recording leaves nothing -----------------------------------------------


@requires_adb
def test_a_failed_record_leaves_no_folder_and_the_rerun_works(
    adb_server: AdbServer, sim: SimDevice, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r"
    sim.faults.apply("idle", "always")
    code = main(["record", *_dev(adb_server, sim), str(out), "--steps", "2"])
    assert code == 2
    assert "IdleStateError" in _one_line(capsys)
    assert not out.exists()
    sim.faults.apply("idle", "0")
    assert main(["record", *_dev(adb_server, sim), str(out), "--steps", "1"]) == 0
    assert "perception record: 1 step in" in capsys.readouterr().err
    assert len(read_recording(out).steps) == 1


# ----- 6: record's options ----------------------------------------------------------------


@pytest.mark.parametrize(
    "option", ["--settle-ms=-1", "--steps=-1", "--duration-s=-1", "--interval-ms=-5",
               "--duration-s=nan"],
)
def test_record_numbers_are_checked_before_anything_is_sent(
    option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _usage_error(["record", "--serial", "s", "out", option], capsys)
    assert option.split("=")[0] in err


@requires_adb
def test_scripted_record_stops_at_steps(
    adb_server: AdbServer, sim: SimDevice, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "a.txt"
    script.write_text("tap 180 140\nback\n", encoding="utf-8")
    out = tmp_path / "r"
    assert main(["record", *_dev(adb_server, sim), str(out), "--actions", str(script),
                 "--steps", "2", "--settle-ms", "0"]) == 0
    assert "2 steps in" in capsys.readouterr().err
    steps = read_recording(out).steps
    assert len(steps) == 2 and steps[0].action is not None and steps[1].action is None
    assert len(sim.phone.events) == 1  # the tap; "back" would lead to a third screen


def test_record_takes_what_the_phone_can_do() -> None:
    """What the phone cannot do is refused beside the other bad lines (test_readme_cli)."""
    for good in ("key KEYCODE_VOLUME_UP", "key 4", "key enter", "text hello world"):
        assert parse_action(good, b"") is not None


# ----- 7: replay's options ----------------------------------------------------------------


@pytest.mark.parametrize("option", ["--limit=-1", "--speed=1e-300", "--speed=inf"])
def test_replay_numbers(option: str, capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(["replay", str(TINY), "--realtime", option], capsys)
    assert option.split("=")[0] in err


def test_iter_steps_refuses_a_speed_it_cannot_sleep() -> None:
    rec = read_recording(TINY)
    with pytest.raises(RecordingError, match="speed"):
        list(iter_steps(rec, timing=Timing.ORIGINAL, speed=1e-300))


def test_replay_prints_the_action_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(TINY), "--no-frames", "--limit", "1"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    action = first.split(" next: ", 1)[1]
    assert json.loads(action)["kind"] == "tap"


# ----- 8 and 11: perception-agent ---------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "extra", "needle"),
    [
        ({"PERCEPTION_ENGINE_OBSERVE_TIMEOUT_S": "0"}, [], "ConfigError"),
        ({"PERCEPTION_TREE_MAX_NODES": "-1"}, [], "ConfigError"),
        ({}, ["--task", ""], "--task"),
        ({}, ["--base-url", "notaurl"], "--base-url"),
    ],
)
def test_agent_setup_errors_before_the_phone(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    env: dict[str, str], extra: list[str], needle: str,
) -> None:
    from agent.cli import main as agent_main

    for key, value in env.items():
        monkeypatch.setenv(key, value)
    argv = ["--serial", "127.0.0.1:5555", "--adb-port", _closed_port(), "--task", "t",
            "--base-url", "http://127.0.0.1:9/v1", "--model", "m", *extra]
    with pytest.raises(SystemExit) as info:
        agent_main(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and "DeviceOffline" not in err


def test_agent_stdout_is_the_transcript_alone(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from agent.cli import main as agent_main

    monkeypatch.setenv("PERCEPTION_ENGINE_TREE_INTERVAL_MS", "20")
    monkeypatch.setenv("PERCEPTION_ENGINE_FRAME_INTERVAL_MS", "20")
    with LoopbackModel(notes_model) as server:
        code = agent_main(["--replay", str(TINY), "--task", "notes", "--base-url",
                           server.base_url, "--model", "m", "--api-key", "k",
                           "--settle-ms", "0"])
    assert code == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["stop"] == "finished"
    assert captured.err.splitlines()[0].startswith("step 1: ")


# ----- 10: phones that cannot be used -----------------------------------------------------


@requires_adb
def test_unauthorized_phone_is_one_line_within_timeout(
    adb_server: AdbServer, capsys: pytest.CaptureFixture[str]
) -> None:
    phone = SimDevice(TINY, faults=Faults(unauthorized=True)).start()
    try:
        adb_server.connect(phone)
        t0 = time.monotonic()
        code = main(["observe", *_dev(adb_server, phone, "1")])
        elapsed = time.monotonic() - t0
    finally:
        adb_server.adb("disconnect", phone.serial)
        phone.stop()
    assert code == 2 and elapsed < 4.0
    line = _one_line(capsys)
    assert "DeviceUnauthorizedError" in line and "kill-server" not in line


@requires_adb
def test_offline_phone_is_said_once(
    adb_server: AdbServer, capsys: pytest.CaptureFixture[str]
) -> None:
    phone = SimDevice(TINY).start()
    adb_server.connect(phone)
    phone.stop()
    try:
        deadline = time.monotonic() + 10
        while "offline" not in adb_server.adb("devices") and time.monotonic() < deadline:
            time.sleep(0.1)
        t0 = time.monotonic()
        code = main(["observe", *_dev(adb_server, phone, "1")])
        elapsed = time.monotonic() - t0
    finally:
        adb_server.adb("disconnect", phone.serial)
    assert code == 2 and elapsed < 4.0
    line = _one_line(capsys)
    assert "DeviceOfflineError" in line and line.count("offline") == 1


# ----- 12: wording ------------------------------------------------------------------------


@requires_adb
def test_a_dump_cut_short_says_what_was_missing(adb_server: AdbServer) -> None:
    phone = SimDevice(TINY, faults=Faults(drop="dump")).start()
    try:
        adb_server.connect(phone)
        source = DeviceSource(phone.serial, config=device_config(adb_server))
        with pytest.raises(DeviceDisconnectedError) as info:
            source.capture_tree()
    finally:
        adb_server.adb("disconnect", phone.serial)
        phone.stop()
    message = str(info.value)
    assert "bytes without a complete hierarchy" in message and "of a complete" not in message


def test_counts_read_right(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from perception.simdevice.cli import banner

    _sample(tmp_path / "one")
    assert main(["export", str(tmp_path / "one"), "--no-frames", "-o",
                 str(tmp_path / "o.jsonl")]) == 0
    assert "perception export: 1 screen, 0 failed" in capsys.readouterr().err
    assert "(1 step)" in banner("rec", 1, "127.0.0.1:5555")
    assert "(3 steps)" in banner("rec", 3, "127.0.0.1:5555")


def test_export_where_every_screen_fails_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "screen.xml").write_text("garbage", encoding="utf-8")
    assert main(["export", str(bad), "--no-frames"]) == 2
    assert "0 screens, 1 failed" in capsys.readouterr().err


# ----- 13: the rest -----------------------------------------------------------------------


def test_overlay_encodes_by_suffix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sample = _sample(tmp_path / "s")
    out = tmp_path / "o.jpg"
    assert main(["overlay", str(sample / "screen.png"), "--dump", str(sample / "screen.xml"),
                 "-o", str(out)]) == 0
    assert out.read_bytes()[:3] == b"\xff\xd8\xff"
    err = _usage_error(["overlay", str(sample / "screen.png"), "-o", str(tmp_path / "o.txt")],
                       capsys)
    assert "-o" in err and ".png" in err and not (tmp_path / "o.txt").exists()


def test_negative_fault_durations_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="slow_ms='-5'"):
        Faults().apply("slow_ms", "-5")
    err = _usage_error([str(TINY), "--slow-ms", "-5"], capsys, simdevice_main)
    assert "--slow-ms" in err


def test_help_texts(capsys: pytest.CaptureFixture[str]) -> None:
    assert "``" not in simdevice_parser().format_help()
    from perception.cli.main import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args(["pixels", "--help"])
    assert "JSON indent" in capsys.readouterr().out


@requires_adb
def test_multi_display_warning_is_one_info_line(
    adb_server: AdbServer, sim: SimDevice, caplog: pytest.LogCaptureFixture
) -> None:
    sim.faults.apply("multi_display", "1")
    source = DeviceSource(sim.serial, config=device_config(adb_server))
    caplog.set_level("DEBUG", logger="perception.sources.device")
    source.capture_frame()
    source.capture_frame()
    records = [r for r in caplog.records if "Multiple displays" in r.getMessage()]
    assert len(records) == 1 and records[0].levelname == "INFO"
    assert "\n" not in records[0].getMessage()


def test_observe_summary_says_what_the_prompt_leaves_out() -> None:
    """The human-readable observation listed every candidate alike and not the keyboard: a
    user could not tell which ids the model was shown."""
    from importlib.resources import files

    import perception
    from perception.cli.observe import summary

    xml = (files("perception") / "data" / "demo_screen.xml").read_bytes()
    obs = perception.perceive(xml=xml, keyboard=(0, 1500, 1080, 2400))
    text = summary(obs)
    assert "keyboard=(0, 1500, 1080, 2400)" in text
    assert "'Wi-Fi settings' (static text)" in text
    assert "'Save' (not shown: left out)" in text
    assert "'Navigate up'\n" in text  # shown: nothing added
