"""The Engine on the virtual phone through the real adb server: observations, actions, faults."""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import threading
import time
from pathlib import Path

import cv2
import pytest
from _adb import (
    TINY,
    AdbServer,
    device_config,
    requires_adb,
    unreachable_source,
)

from perception.cli.main import main
from perception.config import DeviceConfig, EngineConfig
from perception.engine import Engine
from perception.errors import DeviceDisconnectedError, DeviceError, DeviceOfflineError
from perception.simdevice import SimDevice
from perception.sources import read_recording
from perception.sources.device import DeviceSource
from perception.tree.compress import iter_rows
from perception.types import BoxPx, PointPx

CFG = EngineConfig(frame_interval_ms=50, tree_interval_ms=50, observe_timeout_s=15.0)




def _texts(obs: object) -> set[str]:
    return {c.text for c in getattr(obs, "candidates", ())}


@requires_adb
def test_engine_on_the_virtual_phone(phone: tuple[SimDevice, DeviceSource]) -> None:
    sim, source = phone
    with Engine(source, config=CFG) as engine:
        obs = engine.observe()
        assert "New note" in _texts(obs) and obs.state.value == "tree"
        assert obs.screen is not None and obs.screen.size.width_px == 360
        assert obs.screen.activity == "com.example.notes/.MainActivity"
        source.input("tap", 40, 120)  # the recorded "New note" target
        obs = engine.observe(after_action=True)
        assert "Save" in _texts(obs) and "New note" not in _texts(obs)
        assert obs.screen is not None
        assert obs.screen.activity == "com.example.notes/.EditActivity"
    assert not [t for t in threading.enumerate() if t.name.startswith("perception-")]


@requires_adb
def test_engine_falls_back_to_pixels_on_idle_state(
    phone: tuple[SimDevice, DeviceSource],
) -> None:
    sim, source = phone
    sim.faults.apply("idle", "always")
    with Engine(source, config=CFG) as engine:
        obs = engine.observe()
        assert obs.pairing.value == "frame_only"
        assert obs.tree_confidence == 0.0
        assert engine.stats().tree_errors >= 1
        sim.faults.apply("idle", "0")  # the tree comes back
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            obs = engine.observe()
            if obs.pairing.value == "paired":
                break
        assert obs.pairing.value == "paired" and "New note" in _texts(obs)


@requires_adb
def test_engine_raises_when_the_phone_is_gone(phone: tuple[SimDevice, DeviceSource]) -> None:
    sim, source = phone
    with Engine(source, config=CFG) as engine:
        engine.observe()
        sim.stop()  # the phone disappears mid-session
        t0 = time.monotonic()
        with pytest.raises(DeviceError) as info:
            for _ in range(50):
                engine.observe(timeout_s=5.0)
        assert info.value.serial == sim.serial
        assert time.monotonic() - t0 < 8.0


@requires_adb
def test_engine_slow_phone_times_out_not_hangs(
    adb_server: AdbServer,  # noqa: F811
    phone: tuple[SimDevice, DeviceSource],
) -> None:
    sim, _ = phone
    # Timeouts well above a healthy dump's time even on a loaded CI machine (0.4 s failed there
    # once, after the fault had been cleared), and a fault well above the timeouts.
    source = DeviceSource(sim.serial, config=device_config(adb_server, dump_timeout_s=1.0,
                                                       frame_timeout_s=1.0))
    sim.faults.apply("slow_ms", "2500")
    with Engine(source, config=CFG) as engine:
        t0 = time.monotonic()
        with pytest.raises(DeviceError):
            engine.observe(timeout_s=4.0)
        assert time.monotonic() - t0 < 5.0
        sim.faults.apply("slow_ms", "0")
        obs = engine.observe(timeout_s=10.0)
        assert "New note" in _texts(obs)


@requires_adb
def test_engine_keeps_the_tree_when_screencap_fails(
    phone: tuple[SimDevice, DeviceSource],
) -> None:
    """``screencap`` printing ``Screen capture failed`` was a DeviceDisconnectedError, so the
    engine waited for a frame that never came and observe() timed out with trees in hand."""
    sim, source = phone
    sim.faults.apply("capture_fail", "1")
    with Engine(source, config=CFG) as engine:
        obs = engine.observe(timeout_s=5.0)
        assert "New note" in _texts(obs) and obs.pixel_confidence == 0.0
        assert engine.stats().frame_errors >= 1
    sim.faults.apply("capture_fail", "0")
    sim.faults.apply("multi_display", "1")
    with Engine(source, config=CFG) as engine:  # warnings before the image: paired again
        deadline = time.monotonic() + 10
        obs = engine.observe(timeout_s=5.0)
        while obs.pairing.value != "paired" and time.monotonic() < deadline:
            obs = engine.observe(timeout_s=5.0)
        assert obs.pairing.value == "paired" and engine.stats().frame_errors == 0


def _parse(module: object, argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    module.add_parser(parser.add_subparsers())  # type: ignore[attr-defined]
    return parser.parse_args(argv)


@requires_adb
def test_cli_observe_and_record(
    adb_server: AdbServer,  # noqa: F811
    phone: tuple[SimDevice, DeviceSource],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from perception.cli import observe, record

    sim, _ = phone
    port = str(adb_server.port)
    args = _parse(observe, ["observe", "--serial", sim.serial, "--adb-port", port, "--json"])
    assert args.run(args) == 0
    prompt = json.loads(capsys.readouterr().out)
    assert prompt["state"] == "tree"
    assert {"New note", "Settings"} <= {r.label for r in iter_rows(prompt)}

    script = tmp_path / "actions.txt"
    script.write_text("tap 50 150\n# a comment\ntap 60 130\nback\n")
    out = tmp_path / "rec"
    args = _parse(record, ["record", "--serial", sim.serial, "--adb-port", port, str(out),
                           "--actions", str(script), "--settle-ms", "0"])
    assert args.run(args) == 0
    rec = read_recording(out)
    assert [s.activity.rsplit(".", 1)[-1] for s in rec.steps] == [
        "MainActivity", "EditActivity", "SettingsActivity", "MainActivity",
    ]
    first = rec.steps[0].action
    assert first is not None and first.target_px == BoxPx(20, 100, 340, 180)
    assert rec.steps[2].action is not None and rec.steps[2].action.key == "BACK"
    # The recording replays on a new virtual phone: the recorded taps move it along.
    replayed = SimDevice(rec)
    nav = replayed.phone.navigator
    assert nav.tap(PointPx(50, 150)).moved and nav.tap(PointPx(60, 130)).moved
    replayed.stop()


@requires_adb
def test_record_keeps_no_action_the_phone_refused(
    adb_server: AdbServer,  # noqa: F811
    phone: tuple[SimDevice, DeviceSource],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Text ``input text`` cannot type, on a phone without ADB Keyboard: the run stops with the
    error, and the recording does not claim the text was the action taken next."""
    from perception.cli import record

    sim, _ = phone
    script = tmp_path / "actions.txt"
    script.write_text("tap 50 150\ntext h\u00e9llo\n", encoding="utf-8")
    out = tmp_path / "rec"
    args = _parse(record, ["record", "--serial", sim.serial, "--adb-port", str(adb_server.port),
                           str(out), "--actions", str(script), "--settle-ms", "0"])
    with pytest.raises(DeviceError, match="ADB Keyboard"):
        args.run(args)
    rec = read_recording(out)
    assert len(rec.steps) == 2
    assert rec.steps[0].action is not None and rec.steps[0].action.kind.value == "tap"
    assert rec.steps[1].action is None


def test_cli_replay_prints_one_observation_per_step(capsys: pytest.CaptureFixture[str]) -> None:
    from perception.cli import replay

    args = _parse(replay, ["replay", str(TINY), "--json"])
    assert args.run(args) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["step"] for line in lines] == [0, 1, 2]
    assert lines[0]["action"]["kind"] == "tap"
    assert any(r.label == "Save" for r in iter_rows(lines[1]["observation"]))


@requires_adb
def test_engine_uses_frames_while_dumps_time_out(
    adb_server: AdbServer,  # noqa: F811
    phone: tuple[SimDevice, DeviceSource],
) -> None:
    sim, _ = phone
    source = DeviceSource(sim.serial, config=device_config(adb_server, dump_timeout_s=0.3))
    sim.faults.apply("dump_slow_ms", "1000")
    with Engine(source, config=CFG) as engine:
        obs = engine.observe(timeout_s=8.0)
        assert obs.pairing.value == "frame_only"
        assert engine.stats().tree_errors >= 1


def _rotated_recording(tmp_path: Path) -> Path:
    """``tiny`` whose second step is the same screen turned to landscape (rotation 1)."""
    out = tmp_path / "rotating"
    shutil.copytree(TINY, out)
    step = out / "step_001"
    image = cv2.imread(str(step / "screen.png"), cv2.IMREAD_COLOR)
    assert image is not None
    cv2.imwrite(str(step / "screen.png"), cv2.rotate(image, cv2.ROTATE_90_COUNTERCLOCKWISE))
    xml = (step / "screen.xml").read_bytes().replace(b'rotation="0"', b'rotation="1"')
    (step / "screen.xml").write_bytes(xml)
    lines = [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines()]
    lines[1].update(rotation=1, screen=[640, 360])
    (out / "steps.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return out


@requires_adb
def test_rotation_invalidates_cached_facts_and_frames(
    adb_server: AdbServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    sim = SimDevice(_rotated_recording(tmp_path)).start()
    try:
        adb_server.connect(sim)
        source = DeviceSource(sim.serial, config=device_config(adb_server))
        source.wait_ready()
        facts = source.screen_facts()
        assert (facts.rotation, facts.size.width_px) == (0, 360)
        source.input("tap", 50, 150)
        source.capture_tree()  # a rotated dump drops the cached facts: no refresh needed
        facts = source.screen_facts()
        assert (facts.rotation, facts.size.width_px, facts.size.height_px) == (1, 640, 360)
        assert source.run("wm size").strip() == b"Physical size: 360x640"
        source.run("simctl goto 0")
        with Engine(source, config=CFG) as engine:
            obs = engine.observe()
            assert obs.screen is not None and obs.screen.rotation == 0
            source.input("tap", 50, 150)
            obs = engine.observe(after_action=True)
            assert obs.screen is not None and obs.screen.rotation == 1
            assert obs.screen.size.width_px == 640
    finally:
        adb_server.adb("disconnect", sim.serial)
        sim.stop()


def test_a_server_that_does_not_answer_is_not_started_on_another_port(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """adbutils answers a refused connection by running ``adb start-server``, which starts a
    server on 5037 whatever port was asked for (and waits up to 20 s): for any server but the
    default one, the source says the server is unreachable instead, at once."""
    import adbutils._adb

    def spawn(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"adb server started: {args}")

    monkeypatch.setattr(adbutils._adb.subprocess, "run", spawn)
    source, port = unreachable_source()
    t0 = time.monotonic()
    unreachable = f"cannot reach the adb server at 127.0.0.1:{port}"
    with pytest.raises(DeviceOfflineError, match=unreachable):
        source.state()
    with pytest.raises(DeviceOfflineError, match="cannot reach the adb server"):
        source.run("echo hi")
    assert time.monotonic() - t0 < 5.0


def test_no_adb_server_is_named_not_connection_lost(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    source, port = unreachable_source()
    with pytest.raises(DeviceOfflineError) as info:
        source.state()
    message = str(info.value)
    assert message.startswith(f"[emulator-5554] cannot reach the adb server at 127.0.0.1:{port}")
    assert f"`adb -P {port} start-server`" in message and "connection lost" not in message
    with pytest.raises(DeviceOfflineError, match="cannot reach the adb server"):
        source.run("echo hi")
    monkeypatch.setenv("PERCEPTION_DEVICE_READY_TIMEOUT_S", "0.2")
    assert main(["observe", "--serial", "emulator-5554", "--adb-port", str(port)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("perception: DeviceOfflineError: [emulator-5554] cannot reach the adb")


def test_a_server_that_answered_and_went_away_is_connection_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = int(listener.getsockname()[1])

    def answer_once() -> None:  # one get-state, as an adb server answers it
        conn, _ = listener.accept()
        with conn:
            conn.recv(1024)
            conn.sendall(b"OKAY0006device")

    server = threading.Thread(target=answer_once)
    server.start()
    source = DeviceSource("emulator-5554", config=DeviceConfig(adb_port=port))
    try:
        assert source.state() == "device"
    finally:
        server.join(timeout=5.0)
        listener.close()
    with pytest.raises(DeviceDisconnectedError, match="connection lost"):
        source.state()
