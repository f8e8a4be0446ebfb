"""A private adb server and a virtual phone for tests that drive the real ``adb`` (Debian's
package; ``.ci/run`` installs it). Fixtures are registered in ``conftest.py``."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from perception.config import DeviceConfig
from perception.simdevice import SimDevice
from perception.simdevice.protocol import A_VERSION, MAX_PAYLOAD, Command, pack, unpack_header
from perception.sources.device import DeviceSource

TINY = Path(__file__).parent / "data" / "sources" / "tiny"
ADB = shutil.which("adb")
requires_adb = pytest.mark.skipif(
    ADB is None, reason="the Debian 'adb' package is not installed (.ci/run installs it)"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _listens(port: int, *, timeout_s: float) -> bool:
    """Does something accept connections on ``port`` (127.0.0.1) within ``timeout_s``?"""
    deadline = time.monotonic() + timeout_s
    while True:
        with socket.socket() as s:
            s.settimeout(1.0)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def unreachable_source(serial: str = "emulator-5554") -> tuple[DeviceSource, int]:
    """A device source whose adb server port nothing listens on (bound and closed again), and
    that port."""
    port = _free_port()
    return DeviceSource(serial, config=DeviceConfig(adb_port=port)), port


class AdbServer:
    def __init__(self, home: Path) -> None:
        self.port = _free_port()
        self.env = dict(os.environ, HOME=str(home), ANDROID_ADB_SERVER_PORT=str(self.port))
        self.env.pop("ADB_VENDOR_KEYS", None)

    def adb(self, *args: str, timeout_s: float = 20.0) -> str:
        assert ADB is not None
        proc = subprocess.run(
            [ADB, "-P", str(self.port), *args], env=self.env, capture_output=True, text=True,
            timeout=timeout_s,
        )
        return proc.stdout + proc.stderr

    def connect(self, sim: SimDevice) -> str:
        out = self.adb("connect", sim.serial)
        assert "connected" in out or "failed to authenticate" in out, out
        return out


@pytest.fixture(scope="module")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AdbServer]:
    if ADB is None:
        pytest.skip("the Debian 'adb' package is not installed (.ci/run installs it)")
    server = AdbServer(tmp_path_factory.mktemp("adbhome"))
    # adb's client can return before the daemon it forked listens, or give up on it (a loaded
    # CI machine, a fresh HOME whose key is still being made): a test then met "connection
    # refused". Wait for the port, and ask once more.
    said = [server.adb("start-server")]
    if not _listens(server.port, timeout_s=15.0):
        said.append(server.adb("start-server"))
        if not _listens(server.port, timeout_s=15.0):
            pytest.fail(f"adb start-server twice: nothing listens on {server.port}: {said!r}")
    try:
        yield server
    finally:
        server.adb("kill-server")


def device_config(server: AdbServer, **changes: object) -> DeviceConfig:
    base = DeviceConfig(
        adb_port=server.port, command_timeout_s=3.0, dump_timeout_s=3.0, frame_timeout_s=3.0,
        idle_retries=2, idle_backoff_ms=20, ready_timeout_s=5.0,
    )
    return base.with_(**changes)


@contextmanager
def serving(
    adb_server: AdbServer, recording: Path = TINY, **options: Any
) -> Iterator[SimDevice]:
    """A virtual phone serving ``recording`` (``options``: SimDevice's, such as ``faults`` or
    ``adb_keyboard``), connected to the test adb server."""
    device = SimDevice(recording, **options).start()
    try:
        adb_server.connect(device)
        yield device
    finally:
        adb_server.adb("disconnect", device.serial)
        device.stop()


@contextmanager
def connected(
    adb_server: AdbServer, recording: Path = TINY, **options: Any
) -> Iterator[tuple[SimDevice, DeviceSource]]:
    """:func:`serving`, with a ready perception device source on it (closed at the end)."""
    with serving(adb_server, recording, **options) as device:
        source = DeviceSource(device.serial, config=device_config(adb_server))
        try:
            source.wait_ready()
            yield device, source
        finally:
            source.close()


def shell(adb_server: AdbServer, serial: str, line: str) -> subprocess.CompletedProcess[str]:
    """``adb shell LINE`` with stdout, stderr and the exit status apart (shell_v2)."""
    return subprocess.run(
        [ADB or "adb", "-P", str(adb_server.port), "-s", serial, "shell", line],
        env=adb_server.env, capture_output=True, text=True, encoding="utf-8", timeout=20,
    )


@contextmanager
def simdevice_cli(adb_server: AdbServer, *options: str) -> Iterator[str]:
    """``perception-simdevice TINY --port 0 OPTIONS`` run as a process, connected to the test
    adb server: yields its serial (read off its banner); stopped (exit 0) and disconnected at
    the end."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "perception.simdevice.cli", str(TINY), "--port", "0", *options],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        serial = proc.stdout.readline().split(" on ")[1].split(";")[0]
        out = adb_server.adb("connect", serial)
        assert "connected" in out, out
        yield serial
        adb_server.adb("disconnect", serial)
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


@pytest.fixture
def sim(adb_server: AdbServer) -> Iterator[SimDevice]:
    """The tiny recording served by a virtual phone the test adb server is connected to."""
    with serving(adb_server) as device:
        yield device


@pytest.fixture
def phone(adb_server: AdbServer, sim: SimDevice) -> Iterator[tuple[SimDevice, DeviceSource]]:
    source = DeviceSource(sim.serial, config=device_config(adb_server))
    source.wait_ready()
    yield sim, source


# ----- a raw adb-wire client (no adb server between the test and the virtual phone) ------------


def wire_recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        part = sock.recv(n - len(buf))
        if not part:
            raise EOFError("the phone closed the connection")
        buf.extend(part)
    return bytes(buf)


def wire_recv(sock: socket.socket) -> tuple[int, int, int, bytes]:
    """One packet: command, arg0, arg1, payload."""
    command, arg0, arg1, length = unpack_header(wire_recv_exact(sock, 24))
    return command, arg0, arg1, wire_recv_exact(sock, length) if length else b""


def wire_cnxn(sock: socket.socket) -> None:
    sock.sendall(pack(Command.CNXN, A_VERSION, MAX_PAYLOAD, b"host::features=shell_v2\0"))


def wire_connect(port: int) -> socket.socket:
    """A connection past the handshake."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    wire_cnxn(sock)
    while wire_recv(sock)[0] != Command.CNXN:
        pass
    return sock


def wire_run_on(sock: socket.socket, service: str, local_id: int = 1) -> bytes:
    """A well-behaved client: OPEN, read every WRTE (acknowledging it) until CLSE."""
    sock.sendall(pack(Command.OPEN, local_id, 0, service.encode() + b"\0"))
    out = b""
    while True:
        command, arg0, _, data = wire_recv(sock)
        if command == Command.WRTE:
            out += data
            sock.sendall(pack(Command.OKAY, local_id, arg0))
        elif command == Command.CLSE:
            return out


def wire_run(port: int, service: str) -> bytes:
    with wire_connect(port) as sock:
        return wire_run_on(sock, service)
