"""The virtual phone survives a hostile or buggy adb client: open streams, buffered input and
stored files are bounded, and a recording whose files are not a screenshot or a dump fails as
a phone's capture or dump fails instead of serving the bytes.

Raw-socket tests speak the adb wire protocol themselves (a client that ignores the rules); the
others go through the real ``adb`` binary and adbutils, as users do. Threads are counted in
this process (the phone runs in it) and memory is read from ``/proc/self/status``.
"""

from __future__ import annotations

import logging
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import adbutils
import pytest
from _adb import (
    ADB,
    TINY,
    AdbServer,
    serving,
    shell,
    wire_connect,
    wire_recv,
    wire_run,
    wire_run_on,
)

from perception.simdevice import SimDevice
from perception.simdevice.cli import build_parser, main as simdevice_main
from perception.simdevice.phone import CAPTURE_FAILED, NULL_ROOT_ERROR, STORAGE_BYTES, Phone
from perception.simdevice.protocol import MAX_PAYLOAD, Command, pack
from perception.simdevice.server import (
    MAX_CONNECTIONS,
    MAX_STREAMS,
    MAX_STREAMS_PER_CONNECTION,
)
from perception.sources.recording import read_recording

MIB = 1024 * 1024


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def _settle(predicate: object, timeout_s: float = 5.0) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + timeout_s
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.05)


@pytest.fixture()
def sim() -> Iterator[SimDevice]:
    with SimDevice(TINY) as device:
        yield device


# ----- streams and connections --------------------------------------------------------------


def test_open_streams_on_a_connection_are_capped_and_others_still_answer(sim: SimDevice) -> None:
    """2000 never-ending logcats on one connection used to start 2000 threads; now the OPENs
    past the cap get CLSE (as adbd refuses a service it cannot start)."""
    before = threading.active_count()
    wanted = MAX_STREAMS_PER_CONNECTION + 100
    with wire_connect(sim.port) as sock:
        for i in range(wanted):
            sock.sendall(pack(Command.OPEN, 1000 + i, 0, b"exec:logcat\0"))
        opened = refused = 0
        while opened + refused < wanted:
            command, arg0, arg1, _ = wire_recv(sock)
            assert arg1 >= 1000
            if command == Command.OKAY:
                opened += 1
            elif command == Command.CLSE:
                assert arg0 == 0  # refused: no stream of ours
                refused += 1
        assert (opened, refused) == (MAX_STREAMS_PER_CONNECTION, 100)
        assert sim.streams == MAX_STREAMS_PER_CONNECTION
        assert threading.active_count() <= before + MAX_STREAMS_PER_CONNECTION + 3
        assert wire_run(sim.port, "exec:echo alive") == b"alive\n"
    _settle(lambda: sim.streams == 0)
    assert sim.streams == 0  # the client left: its streams ended and freed their places
    _settle(lambda: threading.active_count() <= before + 2)
    assert threading.active_count() <= before + 2


def test_open_streams_on_the_device_are_capped_over_all_connections(sim: SimDevice) -> None:
    socks = [wire_connect(sim.port) for _ in range(MAX_STREAMS // MAX_STREAMS_PER_CONNECTION + 1)]
    try:
        opened = 0
        for n, sock in enumerate(socks):
            for i in range(MAX_STREAMS_PER_CONNECTION):
                sock.sendall(pack(Command.OPEN, 1 + i, 0, b"exec:logcat\0"))
            for _ in range(MAX_STREAMS_PER_CONNECTION):
                opened += wire_recv(sock)[0] == Command.OKAY
            assert sim.streams == min(MAX_STREAMS, (n + 1) * MAX_STREAMS_PER_CONNECTION)
        assert opened == MAX_STREAMS
        assert sim.streams == MAX_STREAMS
    finally:
        for sock in socks:
            sock.close()
    _settle(lambda: sim.streams == 0)
    assert wire_run(sim.port, "exec:echo alive") == b"alive\n"


def test_a_new_connection_takes_the_place_of_the_quietest_idle_one(sim: SimDevice) -> None:
    """32 clients that connect and sit used to lock everyone else out (the phone's own adb
    server too) for as long as they stayed."""
    socks = [wire_connect(sim.port) for _ in range(MAX_CONNECTIONS)]
    try:
        socks[0].sendall(pack(Command.OKAY, 1, 99))  # a packet: socks[0] is no longer quietest
        time.sleep(0.2)
        assert wire_run(sim.port, "exec:echo alive") == b"alive\n"
        socks[1].settimeout(5)
        assert socks[1].recv(1) == b""  # the quietest: closed for the newcomer
        assert wire_run_on(socks[0], "exec:echo still") == b"still\n"
        assert wire_run_on(socks[2], "exec:echo also") == b"also\n"
    finally:
        for sock in socks:
            sock.close()


def test_connections_that_never_sent_cnxn_go_before_one_that_did(sim: SimDevice) -> None:
    """A port scan or a health check (connect, send nothing) pushed out the adb client that
    had connected first and sat idle."""
    with wire_connect(sim.port) as client:
        time.sleep(0.2)  # the quietest from here on
        silent = [
            socket.create_connection(("127.0.0.1", sim.port)) for _ in range(MAX_CONNECTIONS + 4)
        ]
        try:
            time.sleep(0.3)
            assert wire_run_on(client, "exec:echo still") == b"still\n"
        finally:
            for sock in silent:
                sock.close()


def test_a_new_connection_is_refused_when_every_place_has_a_stream_open(
    sim: SimDevice,
) -> None:
    """A connection running a command is never cut for a newcomer."""
    socks = [wire_connect(sim.port) for _ in range(MAX_CONNECTIONS)]
    try:
        for sock in socks:
            sock.sendall(pack(Command.OPEN, 1, 0, b"exec:logcat\0"))
            assert wire_recv(sock)[0] == Command.OKAY
        extra = socket.create_connection(("127.0.0.1", sim.port), timeout=10)
        with extra:
            assert extra.recv(1) == b""  # closed on accept
        socks.pop().close()
        time.sleep(0.3)  # the phone notices the departure
        assert wire_run(sim.port, "exec:echo alive") == b"alive\n"
    finally:
        for sock in socks:
            sock.close()


def test_a_payload_longer_than_the_phone_takes_ends_that_connection_only(sim: SimDevice) -> None:
    with wire_connect(sim.port) as bad:
        header = struct.pack("<6I", Command.WRTE, 1, 1, MAX_PAYLOAD + 1, 0,
                             Command.WRTE ^ 0xFFFFFFFF)
        bad.sendall(header)
        assert bad.recv(1) == b""  # no waiting for 1 MiB that may never come
    assert wire_run(sim.port, "exec:echo alive") == b"alive\n"


# ----- flow control -------------------------------------------------------------------------


def test_input_flooded_into_a_shell_stream_is_dropped_not_kept(sim: SimDevice) -> None:
    """400 MiB into a logcat used to grow the process by 400 MiB."""
    with wire_connect(sim.port) as sock:
        sock.sendall(pack(Command.OPEN, 7, 0, b"exec:logcat\0"))
        command, local, _, _ = wire_recv(sock)
        assert command == Command.OKAY
        stop = threading.Event()

        def drain() -> None:
            sock.settimeout(0.5)
            while not stop.is_set():
                try:
                    if not sock.recv(1 << 16):
                        return
                except OSError:
                    pass

        drainer = threading.Thread(target=drain, daemon=True)
        drainer.start()
        before = _rss_kib()
        blob = pack(Command.WRTE, 7, local, b"x" * MIB)
        for _ in range(100):
            sock.sendall(blob)
        time.sleep(0.5)
        grown_kib = _rss_kib() - before
        stop.set()
        drainer.join(2)
    assert grown_kib < 30 * 1024, f"RSS grew {grown_kib} KiB for 100 MiB of input"
    assert wire_run(sim.port, "exec:echo alive") == b"alive\n"


def test_a_sync_stream_waits_for_its_input_to_be_taken_and_drops_a_peer_that_does_not(
    sim: SimDevice, caplog: pytest.LogCaptureFixture
) -> None:
    """OKAY comes only once the service took the WRTE (here it is busy sending a file the
    client does not acknowledge); a WRTE sent before that OKAY breaks the protocol: the
    stream is closed and nothing more is kept for it."""
    sim.phone.files.write("/sdcard/f.bin", b"f" * 1000)
    with wire_connect(sim.port) as sock:
        sock.sendall(pack(Command.OPEN, 9, 0, b"sync:\0"))
        command, local, _, _ = wire_recv(sock)
        assert command == Command.OKAY
        path = b"/sdcard/f.bin"
        sock.sendall(pack(Command.WRTE, 9, local, b"RECV" + struct.pack("<I", len(path)) + path))
        assert wire_recv(sock)[:3] == (Command.OKAY, local, 9)  # taken: the next may come
        command, _, _, data = wire_recv(sock)  # the file, which we leave unacknowledged
        assert command == Command.WRTE and data.startswith(b"DATA")
        before = _rss_kib()
        quit_request = pack(Command.WRTE, 9, local, b"QUIT" + struct.pack("<I", 0))
        sock.sendall(quit_request)
        sock.settimeout(0.5)
        with pytest.raises(TimeoutError):
            wire_recv(sock)  # the service has not taken it: no OKAY, the client must wait
        sock.settimeout(10)
        with caplog.at_level(logging.WARNING, logger="perception.simdevice.server"):
            sock.sendall(quit_request)  # without waiting for that OKAY
            assert wire_recv(sock)[:3] == (Command.CLSE, local, 9)
        assert "a WRTE came before the OKAY" in caplog.text
        blob = pack(Command.WRTE, 9, local, b"z" * MIB)
        for _ in range(50):  # into the closed stream: ignored, as adbd ignores it
            sock.sendall(blob)
        time.sleep(0.3)
        assert _rss_kib() - before < 30 * 1024
    _settle(lambda: sim.streams == 0)
    assert sim.streams == 0
    assert wire_run(sim.port, "exec:echo alive") == b"alive\n"


# ----- the file store -----------------------------------------------------------------------


@contextmanager
def _small_phone(adb_server: AdbServer, storage_bytes: int) -> Iterator[SimDevice]:
    with serving(adb_server, storage_bytes=storage_bytes) as device:
        yield device


def test_push_and_pull_through_adbutils_still_round_trip(
    adb_server: AdbServer, tmp_path: Path
) -> None:
    """Many WRTEs each way, every one acknowledged once taken: adb's own flow control."""
    data = bytes(range(256)) * (12 * 1024)  # 3 MiB
    local = tmp_path / "blob.bin"
    local.write_bytes(data)
    with serving(adb_server) as sim:
        device = adbutils.AdbClient(port=adb_server.port).device(sim.serial)
        device.sync.push(str(local), "/sdcard/blob.bin")
        assert sim.phone.files.data["/sdcard/blob.bin"] == data
        assert device.sync.read_bytes("/sdcard/blob.bin") == data


@pytest.mark.skipif(ADB is None, reason="the Debian 'adb' package is not installed")
def test_a_push_beyond_the_store_fails_as_on_a_full_phone(
    adb_server: AdbServer, tmp_path: Path
) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(b"b" * (3 * MIB))
    small = tmp_path / "small.bin"
    small.write_bytes(b"s" * 1000)
    with _small_phone(adb_server, 2 * MIB) as sim:
        proc = subprocess.run(
            [ADB or "adb", "-P", str(adb_server.port), "-s", sim.serial, "push", str(big),
             "/sdcard/big.bin"],
            env=adb_server.env, capture_output=True, text=True, timeout=30,
        )
        assert proc.returncode != 0
        assert "remote write failed: No space left on device" in proc.stdout + proc.stderr
        assert "/sdcard/big.bin" not in sim.phone.files.data
        assert sim.phone.files.used == 0
        out = adb_server.adb("-s", sim.serial, "push", str(small), "/sdcard/small.bin")
        assert "1 file pushed" in out, out  # the session after a refusal works
        assert sim.phone.files.data["/sdcard/small.bin"] == small.read_bytes()


@pytest.mark.skipif(ADB is None, reason="the Debian 'adb' package is not installed")
def test_screenshots_and_redirects_stop_at_the_store_size(adb_server: AdbServer) -> None:
    with _small_phone(adb_server, 64 * 1024) as sim:
        png_bytes = len(sim.phone.frame_png())
        count = 64 * 1024 // png_bytes
        for i in range(count):
            assert shell(adb_server, sim.serial, f"screencap -p /sdcard/s{i}.png").returncode == 0
        full = shell(adb_server, sim.serial, "screencap -p /sdcard/last.png")
        assert full.returncode == 1
        assert "No space left on device" in full.stderr
        line = "echo " + "w" * (64 * 1024 - count * png_bytes + 1) + " > /sdcard/note.txt"
        redirected = shell(adb_server, sim.serial, line)
        assert redirected.returncode == 1
        assert "echo: write error: No space left on device" in redirected.stderr
        assert sim.phone.files.used <= 64 * 1024
        assert shell(adb_server, sim.serial, "rm /sdcard/s0.png").returncode == 0
        assert shell(adb_server, sim.serial, "screencap -p /sdcard/last.png").returncode == 0


def test_a_dump_to_a_full_store_says_so_and_rm_frees_its_room() -> None:
    phone = Phone(read_recording(TINY), storage_bytes=100)
    out = phone.run("uiautomator dump /sdcard/d.xml")
    assert out.code == 1
    assert out.stderr == b"uiautomator: /sdcard/d.xml: No space left on device\n"
    assert phone.run("echo 12345 > /sdcard/a; cat /sdcard/a").stdout == b"12345\n"
    assert phone.files.used == 6
    assert phone.run("rm /sdcard/a").code == 0
    assert phone.files.used == 0


def test_the_cli_takes_the_store_size_in_mib(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        simdevice_main([str(TINY), "--storage-mib", "lots"])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err
    assert "--storage-mib: expects a whole number of MiB >= 0, got 'lots'" in error
    assert build_parser().parse_args([str(TINY)]).storage_mib * MIB == STORAGE_BYTES


# ----- recorded files that are no screenshot or no dump -------------------------------------


@pytest.fixture()
def broken(tmp_path: Path) -> Path:
    """TINY with step 0's frame replaced by text and its dump by a password file."""
    root = tmp_path / "broken"
    shutil.copytree(TINY, root)
    (root / "step_000" / "screen.png").write_bytes(b"HOST-SECRET: not an image\n")
    (root / "step_000" / "screen.xml").write_bytes(b"root:x:0:0:root:/root:/bin/bash\n")
    return root


def test_a_frame_that_is_no_image_is_a_failed_capture(
    broken: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with SimDevice(broken) as sim, caplog.at_level(logging.ERROR):
        for service in ("exec:screencap -p", "exec:screencap"):
            assert wire_run(sim.port, service) == CAPTURE_FAILED
        to_file = wire_run(sim.port, "exec:screencap -p /sdcard/s.png; echo $?")
        assert to_file == CAPTURE_FAILED + b"1\n"
        assert "/sdcard/s.png" not in sim.phone.files.data
    assert str(broken / "step_000" / "screen.png") in caplog.text
    assert "is not an image" in caplog.text


def test_a_dump_that_is_no_dump_fails_as_uiautomator_does(
    broken: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with SimDevice(broken) as sim, caplog.at_level(logging.ERROR):
        assert wire_run(sim.port, "exec:uiautomator dump /dev/tty") == NULL_ROOT_ERROR
        assert wire_run(sim.port, "exec:uiautomator dump /sdcard/d.xml") == NULL_ROOT_ERROR
        assert "/sdcard/d.xml" not in sim.phone.files.data
        wire_run(sim.port, "exec:simctl goto 1")  # the next step is whole: served as before
        assert b"<hierarchy" in wire_run(sim.port, "exec:uiautomator dump /dev/tty")
        assert wire_run(sim.port, "exec:screencap -p").startswith(b"\x89PNG")
    assert str(broken / "step_000" / "screen.xml") in caplog.text


def test_a_frame_over_the_size_limit_is_a_failed_capture_never_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A 1 GiB screen.png (sparse) is refused by its size before it is read, as a replay
    refuses it, and fails as a phone's capture fails; the phone read it whole before."""
    root = tmp_path / "huge"
    shutil.copytree(TINY, root)
    with (root / "step_000" / "screen.png").open("r+b") as f:
        f.truncate(1 << 30)
    with SimDevice(root) as sim, caplog.at_level(logging.ERROR):
        before = _rss_kib()
        for service in ("exec:screencap -p", "exec:screencap"):
            assert wire_run(sim.port, service) == CAPTURE_FAILED
        assert _rss_kib() - before < 100_000
    assert "more than any screen capture takes" in caplog.text


@pytest.mark.skipif(ADB is None, reason="the Debian 'adb' package is not installed")
def test_the_real_adb_sees_the_failures(adb_server: AdbServer, broken: Path) -> None:
    with serving(adb_server, broken) as sim:
        cap = subprocess.run(
            [ADB or "adb", "-P", str(adb_server.port), "-s", sim.serial, "exec-out",
             "screencap -p"],
            env=adb_server.env, capture_output=True, timeout=20,
        )
        assert cap.stdout == CAPTURE_FAILED
        dump = shell(adb_server, sim.serial, "uiautomator dump /dev/tty")
        assert dump.stdout.encode() == NULL_ROOT_ERROR
        assert "root:x:0" not in dump.stdout
