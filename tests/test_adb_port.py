"""The adb server's port from adb's own ``ANDROID_ADB_SERVER_PORT``, the server started there as
``adb`` starts it, and a server that refuses the connection said at once (README review)."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _adb import ADB, AdbServer, _free_port, requires_adb, unreachable_source

from perception.cli.main import main
from perception.config import DeviceConfig
from perception.errors import ConfigError, DeviceOfflineError
from perception.simdevice import SimDevice
from perception.sources.device import DeviceSource


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex(("127.0.0.1", port)) == 0


# ----- the setting ----------------------------------------------------------------------------


def test_adb_port_comes_from_adbs_own_variable() -> None:
    cfg = DeviceConfig.from_env({"ANDROID_ADB_SERVER_PORT": "5038"})
    assert (cfg.adb_port, cfg.adb_default_port) == (5038, 5038)
    assert DeviceConfig.from_env({"ANDROID_ADB_SERVER_PORT": " 5038\n"}).adb_port == 5038
    # unset or empty: adb's 5037
    assert DeviceConfig.from_env({}) == DeviceConfig()
    assert DeviceConfig.from_env({"ANDROID_ADB_SERVER_PORT": ""}) == DeviceConfig()


def test_perceptions_own_setting_wins() -> None:
    env = {"ANDROID_ADB_SERVER_PORT": "5038", "PERCEPTION_DEVICE_ADB_PORT": "5039"}
    cfg = DeviceConfig.from_env(env)
    assert (cfg.adb_port, cfg.adb_default_port) == (5039, 5038)
    cfg = DeviceConfig.from_env({"PERCEPTION_DEVICE_ADB_DEFAULT_PORT": "5040"})
    assert (cfg.adb_port, cfg.adb_default_port) == (5040, 5040)


@pytest.mark.parametrize("value", ["abc", "0", "70000", "-1", "5038x", "５０３８"])
def test_a_bad_adb_server_port_names_the_variable(value: str) -> None:
    with pytest.raises(ConfigError, match=f"^ANDROID_ADB_SERVER_PORT={value!r}: expected"):
        DeviceConfig.from_env({"ANDROID_ADB_SERVER_PORT": value})
    # refused as adb refuses it, whatever else names a port
    with pytest.raises(ConfigError, match="ANDROID_ADB_SERVER_PORT"):
        DeviceConfig.from_env(
            {"ANDROID_ADB_SERVER_PORT": value, "PERCEPTION_DEVICE_ADB_PORT": "5037"}
        )


def test_a_bad_adb_server_port_is_one_line_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", "fifty")
    assert main(["observe", "--serial", "emulator-5554"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("perception: ConfigError: ANDROID_ADB_SERVER_PORT='fifty'")


# ----- a server that refuses the connection ---------------------------------------------------


def test_nothing_listening_fails_at_once(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--adb-port 1`` waited out ``ready_timeout_s`` (10 s) for a server no one starts."""
    monkeypatch.delenv("ANDROID_ADB_SERVER_PORT", raising=False)
    monkeypatch.delenv("PERCEPTION_DEVICE_READY_TIMEOUT_S", raising=False)
    source, port = unreachable_source()
    t0 = time.monotonic()
    unreachable = f"cannot reach the adb server at 127.0.0.1:{port}"
    with pytest.raises(DeviceOfflineError, match=unreachable):
        source.wait_ready()
    assert time.monotonic() - t0 < 1.0
    t0 = time.monotonic()
    assert main(["observe", "--serial", "emulator-5554", "--adb-port", str(port)]) == 2
    assert time.monotonic() - t0 < 2.0
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        f"perception: DeviceOfflineError: [emulator-5554] cannot reach the adb server at "
        f"127.0.0.1:{port} (is it running? `adb -P {port} start-server`)"
    )
    assert "Connection refused" in line
    assert not _listening(port)  # and no server was started there


def test_a_named_port_is_not_adbs_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--adb-port`` other than ``ANDROID_ADB_SERVER_PORT``'s: neither server is started."""
    own, other = _free_port(), _free_port()
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(own))
    cfg = DeviceConfig.from_env().with_(adb_port=other)
    t0 = time.monotonic()
    with pytest.raises(DeviceOfflineError, match=f"127.0.0.1:{other} .*`adb -P {other} start"):
        DeviceSource("emulator-5554", config=cfg).wait_ready()
    assert time.monotonic() - t0 < 1.0
    assert not _listening(own) and not _listening(other)


@requires_adb
def test_a_phone_not_there_yet_is_still_waited_for(adb_server: AdbServer) -> None:
    """A server that answers keeps the wait: the phone may come (``adb connect`` in flight)."""
    cfg = DeviceConfig(adb_port=adb_server.port)
    source = DeviceSource("127.0.0.1:1", config=cfg)
    t0 = time.monotonic()
    with pytest.raises(DeviceOfflineError, match="not found"):
        source.wait_ready(timeout_s=0.5)
    assert time.monotonic() - t0 >= 0.5


# ----- adb's own server from ANDROID_ADB_SERVER_PORT ---------------------------------------


@requires_adb
def test_observe_reaches_the_server_adb_uses(
    adb_server: AdbServer,
    sim: SimDevice,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With ``ANDROID_ADB_SERVER_PORT`` set, ``observe`` went to 5037 and said it could not
    reach the server there."""
    monkeypatch.delenv("PERCEPTION_DEVICE_ADB_PORT", raising=False)
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(adb_server.port))
    assert main(["observe", "--serial", sim.serial, "--timeout-s", "5"]) == 0
    assert capsys.readouterr().out.startswith("state=")


@requires_adb
def test_a_source_built_without_a_config_reaches_the_server_adb_uses(
    adb_server: AdbServer, sim: SimDevice, monkeypatch: pytest.MonkeyPatch
) -> None:
    """README's Python snippet, ``DeviceSource(serial)``, went to 5037 (starting a server
    there) while ``adb`` and our CLIs used the server ``ANDROID_ADB_SERVER_PORT`` names."""
    monkeypatch.delenv("PERCEPTION_DEVICE_ADB_PORT", raising=False)
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(adb_server.port))
    was_5037 = _listening(5037)
    source = DeviceSource(sim.serial)
    try:
        source.wait_ready(timeout_s=5)
        assert source.capture_tree().xml.lstrip().startswith(b"<?xml")
    finally:
        source.close()
    assert _listening(5037) == was_5037


@pytest.fixture
def own_port(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """A free port as ``ANDROID_ADB_SERVER_PORT`` (private HOME: the server's keys), its server
    killed at the end."""
    port = _free_port()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("ADB_VENDOR_KEYS", raising=False)
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(port))
    try:
        yield port
    finally:
        assert ADB is not None
        subprocess.run([ADB, "-P", str(port), "kill-server"], capture_output=True, timeout=20)


@requires_adb
def test_adbs_own_server_is_started_on_its_port(own_port: int) -> None:
    """adb start-server honours ``ANDROID_ADB_SERVER_PORT``: so does the source, as it starts
    the default server on 5037 when none answers."""
    was_5037 = _listening(5037)
    assert not _listening(own_port)
    source = DeviceSource("emulator-5554", config=DeviceConfig.from_env())
    with pytest.raises(DeviceOfflineError, match="not found"):
        source.wait_ready(timeout_s=0.3)  # the server answers: the phone is not there
    assert _listening(own_port)
    assert _listening(5037) == was_5037  # no stray server on adb's usual port
