"""A recording from someone else cannot exhaust memory or lead reads out of its folder, and a
virtual phone's connection places cannot be held by clients that never finish the handshake
(security review, recordings and the virtual phone).

``steps.jsonl``, ``trace.json`` and ``meta.json`` were read whole: a 10 GB steps.jsonl (or one
line of 1 GB) went into memory, and JSON nested 100,000 deep ended in RecursionError. Paths
were checked when a recording opened only: a dump or frame swapped for a symlink out of the
folder afterwards (while a replay or the virtual phone ran) was followed. A client that
connected to the virtual phone and never sent CNXN held one of its 32 places for good, and 32
that sent it and then sat held them all.

Huge files are sparse (``truncate``), so nothing here writes gigabytes.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from _adb import (
    ADB,
    TINY,
    AdbServer,
    requires_adb,
    serving,
    shell,
    wire_cnxn,
    wire_connect,
    wire_recv,
    wire_run,
    wire_run_on,
)

from perception.errors import ConfigError, RecordingError
from perception.simdevice import SimDevice
from perception.simdevice.phone import NULL_ROOT_ERROR, Faults
from perception.simdevice.protocol import (
    A_VERSION,
    AUTH_SIGNATURE,
    AUTH_TOKEN,
    MAX_PAYLOAD,
    Command,
    pack,
)
from perception.simdevice.server import HANDSHAKE_TIMEOUT_S, MAX_CONNECTIONS
from perception.sources import ReplaySource, read_recording, recording as recording_module
from perception.sources.recording import (
    MAX_META_BYTES,
    MAX_STEP_LINE_BYTES,
    MAX_STEPS,
    MAX_STEPS_FILE_BYTES,
    MAX_TRACE_BYTES,
)

CORPUS_TRACE = Path("/work/shared/corpus/droidbot_yelp/yelp_2017")
SECRET = b"PRIVATE-BANK-PIN-1234"
DEEP = "[" * 100_000 + "]" * 100_000


def _tiny(folder: Path) -> Path:
    shutil.copytree(TINY, folder)
    return folder


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def _first_line(root: Path) -> str:
    return (root / "steps.jsonl").read_text(encoding="utf-8").splitlines()[0]


def _refused(root: Path) -> str:
    """The RecordingError opening ``root`` raises, checked to cost little memory or time."""
    before, t0 = _rss_kib(), time.monotonic()
    with pytest.raises(RecordingError) as info:
        read_recording(root)
    assert time.monotonic() - t0 < 5.0
    assert _rss_kib() - before < 64 * 1024  # KiB: nothing near the file's size was read
    return str(info.value)


# ----- steps.jsonl, meta.json, trace.json are read to a limit --------------------------------


def test_a_10_gb_steps_jsonl_is_refused_before_it_is_read(tmp_path: Path) -> None:
    root = _tiny(tmp_path / "rec")
    os.truncate(root / "steps.jsonl", 10 * 1024**3)
    message = _refused(root)
    assert "steps.jsonl" in message and str(MAX_STEPS_FILE_BYTES) in message


def test_a_line_of_64_mib_in_steps_jsonl_is_refused_at_its_limit(tmp_path: Path) -> None:
    """Under the file's limit, but one line longer than any step: read to the line limit."""
    root = _tiny(tmp_path / "rec")
    with open(root / "steps.jsonl", "ab") as f:
        f.truncate(f.tell() + 64 * 1024 * 1024)  # a NUL-filled line without a line break
    message = _refused(root)
    assert "steps.jsonl line 4" in message and str(MAX_STEP_LINE_BYTES) in message


def test_more_steps_than_the_limit_are_refused_and_a_long_real_session_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """10,000 steps (hours of recording) open in reasonable time and memory; past
    :data:`MAX_STEPS` the recording is refused at the first step too many."""
    root = _tiny(tmp_path / "rec")
    first = json.loads(_first_line(TINY))
    with open(root / "steps.jsonl", "w", encoding="utf-8") as out:
        for n in range(10_000):
            out.write(json.dumps(dict(first, step=n, tree_start_ns=n, tree_end_ns=n)) + "\n")
    assert (root / "steps.jsonl").stat().st_size < MAX_STEPS_FILE_BYTES // 20
    before, t0 = _rss_kib(), time.monotonic()
    assert len(read_recording(root).steps) == 10_000
    assert time.monotonic() - t0 < 30.0
    assert _rss_kib() - before < 100 * 1024  # KiB
    assert MAX_STEPS >= 10 * 10_000
    monkeypatch.setattr(recording_module, "MAX_STEPS", 9_999)  # the cap, without 100,000 steps
    with pytest.raises(RecordingError, match=r"line 10000: more than 9999 steps"):
        read_recording(root)


def test_json_nested_100000_deep_is_a_recording_error(tmp_path: Path) -> None:
    root = _tiny(tmp_path / "rec")
    with open(root / "steps.jsonl", "a", encoding="utf-8") as out:
        out.write('{"step": 3, "action": ' + DEEP + "}\n")
    assert "steps.jsonl line 4: JSON nested deeper" in _refused(root)

    root = _tiny(tmp_path / "meta")
    (root / "meta.json").write_text(DEEP, encoding="utf-8")
    assert "meta.json: JSON nested deeper" in _refused(root)


def test_a_huge_meta_json_is_refused_before_it_is_read(tmp_path: Path) -> None:
    root = _tiny(tmp_path / "rec")
    os.truncate(root / "meta.json", 1024**3)
    message = _refused(root)
    assert "meta.json" in message and str(MAX_META_BYTES) in message


@pytest.mark.skipif(not CORPUS_TRACE.is_dir(), reason="the shared corpus is not here")
@pytest.mark.parametrize("name", ["trace.json", "step_000/meta.json", "deep trace.json"])
def test_a_corpus_trace_with_a_huge_or_deep_json_file_is_refused(tmp_path: Path, name: str) -> None:
    root = tmp_path / "trace"
    shutil.copytree(CORPUS_TRACE, root)
    assert read_recording(root).steps  # as the corpus has it
    if name.startswith("deep"):
        (root / "trace.json").write_text(DEEP, encoding="utf-8")
        assert "trace.json: JSON nested deeper" in _refused(root)
        return
    os.truncate(root / name, 2 * 1024**3)
    message = _refused(root)
    limit = MAX_TRACE_BYTES if name == "trace.json" else MAX_META_BYTES
    assert name.split("/")[-1] in message and str(limit) in message


# ----- each read checks again that the file lies inside the recording --------------------------


def _swap_for_link(path: Path, target: Path) -> None:
    path.unlink()
    path.symlink_to(target)


@pytest.fixture()
def outside(tmp_path: Path) -> Path:
    """A dump of this host, outside any recording, holding a text that must not be served."""
    secret = tmp_path / "private" / "screen.xml"
    secret.parent.mkdir()
    secret.write_bytes((TINY / "step_000" / "screen.xml").read_bytes().replace(b"New", SECRET))
    assert SECRET in secret.read_bytes()
    return secret


@pytest.mark.parametrize("what", ["tree", "frame", "step folder"])
def test_a_step_file_swapped_for_a_link_out_after_open_is_refused(
    tmp_path: Path, outside: Path, what: str
) -> None:
    root = _tiny(tmp_path / "rec")
    recording = read_recording(root)
    step = recording.steps[0]
    step.read_tree(), step.read_frame()  # inside: read
    if what == "step folder":  # a folder on the way, not the file itself
        shutil.rmtree(root / "step_000")
        (root / "step_000").symlink_to(outside.parent)
        shutil.copy(TINY / "step_000" / "screen.png", outside.parent / "screen.png")
    else:
        path = step.tree_path if what == "tree" else step.frame_path
        assert path is not None
        _swap_for_link(path, outside)
    read = step.read_frame if what == "frame" else step.read_tree
    with pytest.raises(RecordingError, match="outside the recording folder") as info:
        read()
    assert str(outside.parent) in str(info.value) and "step 0" in str(info.value)


def test_a_link_to_a_file_inside_the_recording_still_reads(tmp_path: Path) -> None:
    root = _tiny(tmp_path / "rec")
    recording = read_recording(root)
    _swap_for_link(root / "step_000" / "screen.xml", root / "step_001" / "screen.xml")
    assert recording.steps[0].read_tree() == recording.steps[1].read_tree()


def test_a_recording_opened_through_a_linked_folder_reads(tmp_path: Path) -> None:
    """The folder's own path may be a link: the check compares where files really are."""
    root = _tiny(tmp_path / "rec")
    (tmp_path / "alias").symlink_to(root)
    recording = read_recording(tmp_path / "alias")
    assert recording.steps[0].read_tree() == (root / "step_000" / "screen.xml").read_bytes()


def test_a_long_replay_refuses_a_dump_swapped_out_midway(tmp_path: Path, outside: Path) -> None:
    root = _tiny(tmp_path / "rec")
    source = ReplaySource(root)
    try:
        assert SECRET not in source.capture_tree().xml
        _swap_for_link(root / "step_000" / "screen.xml", outside)
        with pytest.raises(RecordingError, match="outside the recording folder"):
            source.capture_tree()
    finally:
        source.close()


def test_the_check_at_each_read_reads_the_same_dump(tmp_path: Path) -> None:
    """A read with the folder check gives the bytes a read without it gives (what the check
    costs against a dump parse is measured by ``perception-bench device --sim``:
    ``recording_reads``)."""
    step = read_recording(_tiny(tmp_path / "rec")).steps[0]
    assert step.root is not None
    unchecked = replace(step, root=None)
    assert step.read_tree() == unchecked.read_tree() == step.tree_path.read_bytes()
    assert b"New note" in step.read_tree()


# ----- the virtual phone serves only the recording's own files --------------------------------














def test_the_virtual_phone_does_not_serve_a_dump_swapped_out_while_it_runs(
    tmp_path: Path, outside: Path
) -> None:
    root = _tiny(tmp_path / "rec")
    with SimDevice(root) as sim:
        assert b"New note" in wire_run(sim.port, "exec:uiautomator dump /dev/tty")
        _swap_for_link(root / "step_000" / "screen.xml", outside)
        out = wire_run(sim.port, "exec:uiautomator dump /dev/tty")
        assert SECRET not in out and out.startswith(NULL_ROOT_ERROR)


# ----- the virtual phone's handshake has a deadline --------------------------------------------


def _closed_within(sock: socket.socket, seconds: float) -> float:
    """How long the phone took to close ``sock`` (EOF or reset), failing past ``seconds``."""
    sock.settimeout(seconds)
    t0 = time.monotonic()
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        pass
    return time.monotonic() - t0


@pytest.fixture()
def quick() -> Iterator[SimDevice]:
    with SimDevice(TINY, handshake_timeout_s=0.5) as device:
        yield device


def test_the_default_handshake_timeout_is_a_few_seconds() -> None:
    assert 2.0 <= HANDSHAKE_TIMEOUT_S <= 10.0
    with pytest.raises(ConfigError, match="handshake_timeout_s"):
        SimDevice(TINY, handshake_timeout_s=0)


def test_a_client_that_never_sends_cnxn_is_closed_after_the_timeout(quick: SimDevice) -> None:
    with socket.create_connection(("127.0.0.1", quick.port)) as silent:
        assert 0.3 < _closed_within(silent, 5.0) < 3.0


def test_a_client_that_trickles_its_cnxn_is_closed_at_the_deadline(quick: SimDevice) -> None:
    """A byte now and then does not restart the clock."""
    packet = pack(Command.CNXN, A_VERSION, MAX_PAYLOAD, b"host::\0")
    with socket.create_connection(("127.0.0.1", quick.port)) as slow:
        t0 = time.monotonic()
        try:
            for byte in packet:
                slow.sendall(bytes([byte]))
                time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError):
            pass
        assert time.monotonic() - t0 < 3.0  # cut long before the 6 s the packet would take
        assert _closed_within(slow, 5.0) < 3.0


def test_stalled_clients_holding_every_place_give_them_back(quick: SimDevice) -> None:
    silent = [socket.create_connection(("127.0.0.1", quick.port)) for _ in range(MAX_CONNECTIONS)]
    try:
        time.sleep(0.2)
        assert wire_run(quick.port, "exec:echo first") == b"first\n"  # takes a silent one's place
        for sock in silent:
            _closed_within(sock, 5.0)
        assert wire_run(quick.port, "exec:echo alive") == b"alive\n"
    finally:
        for sock in silent:
            sock.close()


def test_a_connection_past_its_cnxn_is_kept_however_long_it_idles(quick: SimDevice) -> None:
    with wire_connect(quick.port) as sock:
        time.sleep(1.5)  # three handshake timeouts
        assert wire_run_on(sock, "exec:echo alive") == b"alive\n"


def test_an_unauthorized_phone_still_holds_its_client_past_the_timeout() -> None:
    """The ``unauthorized`` fault keeps the adb server waiting at AUTH, as a phone whose
    owner has not accepted the key: that is past CNXN, and not cut."""
    with SimDevice(TINY, faults=Faults(unauthorized=True), handshake_timeout_s=0.5) as sim:
        with socket.create_connection(("127.0.0.1", sim.port), timeout=5) as sock:
            wire_cnxn(sock)
            assert wire_recv(sock)[:2] == (Command.AUTH, AUTH_TOKEN)
            time.sleep(1.5)
            sock.sendall(pack(Command.AUTH, AUTH_SIGNATURE, 0, b"\0" * 256))
            assert wire_recv(sock)[:2] == (Command.AUTH, AUTH_TOKEN)


@requires_adb
def test_the_real_adb_server_is_never_cut(adb_server: AdbServer) -> None:
    assert ADB is not None
    with serving(adb_server, handshake_timeout_s=0.5) as sim:
        time.sleep(1.5)
        done = shell(adb_server, sim.serial, "echo alive")
        assert (done.returncode, done.stdout) == (0, "alive\n")
    with serving(adb_server, faults=Faults(unauthorized=True), handshake_timeout_s=0.5) as sim:
        time.sleep(1.5)
        devices = adb_server.adb("devices")
        assert f"{sim.serial}\tunauthorized" in devices, devices


@requires_adb
def test_clients_that_connect_and_sit_do_not_lock_the_adb_server_out(
    adb_server: AdbServer,
) -> None:
    """Past CNXN a connection is kept however long it idles, but 32 of them took every place:
    the adb server's own reconnect was closed on accept and the phone stayed offline."""
    with SimDevice(TINY) as sim:
        squatters = [wire_connect(sim.port) for _ in range(MAX_CONNECTIONS)]
        try:
            assert "connected" in adb_server.connect(sim)
            done = shell(adb_server, sim.serial, "echo alive")
            assert (done.returncode, done.stdout) == (0, "alive\n")
        finally:
            adb_server.adb("disconnect", sim.serial)
            for sock in squatters:
                sock.close()


def test_the_cli_takes_the_handshake_timeout(capsys: pytest.CaptureFixture[str]) -> None:
    from perception.simdevice.cli import build_parser, main as simdevice_main

    parser = build_parser()
    assert parser.parse_args([str(TINY)]).handshake_timeout_s == HANDSHAKE_TIMEOUT_S
    assert parser.parse_args([str(TINY), "--handshake-timeout-s", "0.5"]).handshake_timeout_s == 0.5
    for bad in ("0", "-1", "nan", "inf", "soon"):
        with pytest.raises(SystemExit) as exit_info:
            simdevice_main([str(TINY), "--handshake-timeout-s", bad])
        assert exit_info.value.code == 2
        assert "--handshake-timeout-s: expects a number of seconds > 0" in capsys.readouterr().err


# ----- a FIFO (or any file that is not a regular file) is refused without waiting -------------


def _returns_within(read: object, seconds: float, fifo: Path) -> BaseException | object:
    """What ``read()`` returns or raises, run in a thread given ``seconds``: a read blocked in
    open() on ``fifo`` fails the test (and is released by opening the FIFO's other end) rather
    than hanging the suite."""
    import threading

    got: list[BaseException | object] = []

    def run() -> None:
        try:
            got.append(read())  # type: ignore[operator]
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            got.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # a reader waits: this end opens
        os.close(fd)
        thread.join(seconds)
        pytest.fail(f"the read waited over {seconds} s on the FIFO {fifo}")
    return got[0]


@pytest.mark.parametrize("what", ["tree", "frame"])
def test_a_step_file_swapped_for_a_link_to_a_fifo_outside_is_refused_at_once(
    tmp_path: Path, what: str
) -> None:
    """read_tree() blocked in open() for good: a FIFO opens only once a writer comes."""
    root = _tiny(tmp_path / "rec")
    fifo = tmp_path / "outside.fifo"
    os.mkfifo(fifo)
    step = read_recording(root).steps[0]
    path = step.tree_path if what == "tree" else step.frame_path
    assert path is not None
    _swap_for_link(path, fifo)
    read = step.read_tree if what == "tree" else step.read_frame
    got = _returns_within(read, 5.0, fifo)
    assert isinstance(got, RecordingError), got
    assert "outside the recording folder" in str(got) and "step 0" in str(got)


@pytest.mark.parametrize("what", ["tree", "frame"])
def test_a_step_file_swapped_for_a_fifo_inside_is_refused_naming_it(
    tmp_path: Path, what: str
) -> None:
    root = _tiny(tmp_path / "rec")
    step = read_recording(root).steps[0]
    path = step.tree_path if what == "tree" else step.frame_path
    assert path is not None
    path.unlink()
    os.mkfifo(path)
    read = step.read_tree if what == "tree" else step.read_frame
    got = _returns_within(read, 5.0, path)
    assert isinstance(got, RecordingError), got
    assert "a FIFO" in str(got) and str(path) in str(got) and "step 0" in str(got)


@pytest.mark.parametrize("layout", ["steps.jsonl", "meta.json", "trace.json", "sample screen.xml"])
def test_a_recording_whose_own_files_are_fifos_is_refused_at_once(
    tmp_path: Path, layout: str
) -> None:
    """steps.jsonl, meta.json, trace.json and a sample's dump (read for its rotation when the
    recording opens) go through the same open as the steps' files; one that is a FIFO names
    itself, where it made the folder "neither a perception recording ... nor a sample"."""
    if layout in ("steps.jsonl", "meta.json"):
        root = _tiny(tmp_path / "rec")
        fifo = root / layout
    elif layout == "trace.json":
        root = tmp_path / "trace"
        root.mkdir()
        fifo = root / "trace.json"
    else:
        root = tmp_path / "sample"
        root.mkdir()
        fifo = root / "screen.xml"
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    got = _returns_within(lambda: read_recording(root), 5.0, fifo)
    assert isinstance(got, RecordingError), got
    assert "a FIFO" in str(got) and str(fifo) in str(got)


# ----- an interruption while the checked file is handed over closes it once ------------------


def test_an_interruption_inside_fdopen_does_not_close_the_descriptor_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C or SIGTERM right after fdopen made the file: the file alone closes the descriptor.
    Closing the number by hand too would close whatever took the number next (here a file
    opened right after; in a process serving several phones, maybe another phone's socket)."""
    from perception.sources import recording as rec_mod

    path = tmp_path / "screen.xml"
    path.write_bytes(b"<hierarchy/>")
    other_path = tmp_path / "other.bin"
    other_path.write_bytes(b"another phone's bytes")
    real_fdopen = os.fdopen
    made: list[object] = []

    def interrupted_fdopen(fd: int, *args: object, **kwargs: object) -> object:
        made.append(real_fdopen(fd, *args, **kwargs))  # type: ignore[call-overload]
        raise KeyboardInterrupt

    monkeypatch.setattr(rec_mod.os, "fdopen", interrupted_fdopen)
    with pytest.raises(KeyboardInterrupt):
        rec_mod._open_inside(tmp_path.resolve(), path, "the recording", "tree")
    monkeypatch.undo()
    with open(other_path, "rb") as other:  # takes the lowest free number
        made.clear()  # the interrupted file is dropped: it closes its own descriptor
        assert other.read() == b"another phone's bytes"
