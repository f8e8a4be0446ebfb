"""RecordingWriter over long sessions (review 18, memory and time).

Every ``add_step`` and ``set_action`` rewrote ``steps.jsonl`` whole (beside it, then renamed):
a long ``perception record`` slowed with every step (12 s per 1,000 steps at the start, 39 s at
step 4,000) and wrote the square of the step count (4.5 GB for a 1.1 MB file). The writer had
no step limit while the reader refuses more than ``MAX_STEPS`` steps, so a long session wrote a
recording that could not be read back. Now a step appends one line and ``set_action`` rewrites
the last line only, a write that fails is undone, and the reader's limits stop the writer.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import perception.sources.record as record
from perception.errors import RecordingError
from perception.sources.base import ScreenFacts, TreeCapture
from perception.sources.record import RecordingWriter
from perception.sources.recording import (
    MAX_STEP_LINE_BYTES,
    ActionKind,
    RecordedAction,
    read_recording,
)
from perception.types import PointPx, ScreenSize

XML = (
    b'<?xml version="1.0"?><hierarchy rotation="0">'
    b'<node bounds="[0,0][100,100]" class="a" text="x"/></hierarchy>'
)
FACTS = ScreenFacts(
    size=ScreenSize(1080, 2400), density_dpi=420, rotation=0, package="com.x",
    activity="com.x/.A",
)
TAP = RecordedAction(kind=ActionKind.TAP, point_px=PointPx(10, 20))


def _tree(k: int) -> TreeCapture:
    return TreeCapture(xml=XML, start_ns=k * 10**9, end_ns=k * 10**9 + 1000, epoch=k)


def _written_bytes() -> int | None:
    """Bytes this process handed to write system calls so far (Linux), else None."""
    try:
        text = Path("/proc/self/io").read_text(encoding="ascii")
    except OSError:
        return None
    return next(int(v) for k, v in (ln.split(": ") for ln in text.splitlines()) if k == "wchar")


def test_a_step_appends_one_line_and_an_action_rewrites_only_the_last(tmp_path: Path) -> None:
    out = tmp_path / "rec"
    before = _written_bytes()
    with RecordingWriter(out, facts=FACTS) as writer:
        writer.add_step(_tree(0), None, FACTS)
        inode = (out / "steps.jsonl").stat().st_ino
        for k in range(1, 400):
            head = (out / "steps.jsonl").read_bytes()
            writer.set_action(TAP)
            after_action = (out / "steps.jsonl").read_bytes()
            # Lines before the last one are never written again.
            cut = head.rstrip(b"\n").rfind(b"\n") + 1
            assert after_action[:cut] == head[:cut]
            writer.add_step(_tree(k), None, FACTS)
        assert (out / "steps.jsonl").stat().st_ino == inode  # appended in place, not replaced
    steps_bytes = (out / "steps.jsonl").stat().st_size
    after = _written_bytes()
    if before is not None and after is not None:
        # Each step writes its dump and its line twice (step, then action); the old writer
        # wrote about 400 * 400 lines here (some 45 MB), for a file of some 130 KB.
        assert after - before < 4 * (steps_bytes + 400 * len(XML)) + 100_000
    rec = read_recording(out)
    assert len(rec.steps) == 400
    assert [s.action for s in rec.steps] == [TAP] * 399 + [None]
    assert not list(out.glob("*.part"))


def test_a_shorter_action_pads_the_line_and_reads_back(tmp_path: Path) -> None:
    out = tmp_path / "rec"
    long_text = RecordedAction(kind=ActionKind.TEXT, text="é" * 500)
    back = RecordedAction(kind=ActionKind.KEY, key="BACK")
    with RecordingWriter(out, facts=FACTS) as writer:
        writer.add_step(_tree(0), None, FACTS)
        writer.set_action(TAP)
        writer.add_step(_tree(1), None, FACTS)
        writer.set_action(long_text)
        writer.set_action(back)  # shorter: the old line's tail must not survive as a line
    lines = (out / "steps.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 3
    assert all(isinstance(json.loads(line), dict) for line in lines[:-1])
    rec = read_recording(out)
    assert [s.action for s in rec.steps] == [TAP, back]


def test_the_writer_stops_at_the_readers_step_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the reader's MAX_STEPS (made 5 here: 100,000 real steps take minutes)."""
    monkeypatch.setattr(record, "MAX_STEPS", 5)
    out = tmp_path / "rec"
    with RecordingWriter(out, facts=FACTS) as writer:
        for k in range(5):
            writer.add_step(_tree(k), None, FACTS)
            writer.set_action(TAP)
        with pytest.raises(RecordingError, match="holds 5 steps.*start a new recording"):
            writer.add_step(_tree(5), None, FACTS)
        assert writer.step_count == 5
    assert not (out / "step_005").exists()
    assert len(read_recording(out).steps) == 5


def test_the_writer_stops_at_the_readers_file_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the reader's MAX_STEPS_FILE_BYTES (made 2,000 here, not 128 MB)."""
    monkeypatch.setattr(record, "MAX_STEPS_FILE_BYTES", 2000)
    out = tmp_path / "rec"
    with RecordingWriter(out, facts=FACTS) as writer:
        with pytest.raises(RecordingError, match="past 2000 bytes.*start a new recording"):
            for k in range(100):
                writer.add_step(_tree(k), None, FACTS)
        count = writer.step_count
        assert not (out / f"step_{count:03d}").exists()  # the refused step left nothing
        size = (out / "steps.jsonl").stat().st_size
        assert 0 < size <= 2000
        # An action that would cross the limit is refused too, and the step stays as it was.
        with pytest.raises(RecordingError, match="past 2000 bytes"):
            writer.set_action(RecordedAction(kind=ActionKind.TEXT, text="x" * 2000))
        assert (out / "steps.jsonl").stat().st_size == size
    rec = read_recording(out)
    assert len(rec.steps) == count and rec.steps[-1].action is None


def test_an_action_over_the_readers_line_limit_is_refused(tmp_path: Path) -> None:
    """The real MAX_STEP_LINE_BYTES (1 MiB): the writer never writes a line the reader
    refuses, and the step keeps the action it had."""
    out = tmp_path / "rec"
    with RecordingWriter(out, facts=FACTS) as writer:
        writer.add_step(_tree(0), None, FACTS)
        writer.set_action(TAP)
        writer.add_step(_tree(1), None, FACTS)
        writer.set_action(RecordedAction(kind=ActionKind.TEXT, text="y"))
        one = len((out / "steps.jsonl").read_bytes().splitlines(keepends=True)[-1])
        fits = RecordedAction(kind=ActionKind.TEXT, text="y" * (1 + MAX_STEP_LINE_BYTES - one))
        writer.set_action(fits)  # exactly the limit, newline included: the reader takes it
        last = (out / "steps.jsonl").read_bytes().splitlines(keepends=True)[-1]
        assert len(last) == MAX_STEP_LINE_BYTES
        kept = (out / "steps.jsonl").read_bytes()
        huge = RecordedAction(kind=ActionKind.TEXT, text=fits.text + "y")
        with pytest.raises(RecordingError, match="more than the 1048576 bytes a step's line"):
            writer.set_action(huge)
        assert (out / "steps.jsonl").read_bytes() == kept
        writer.add_step(_tree(2), None, FACTS)  # the recording goes on
    assert [s.action for s in read_recording(out).steps] == [TAP, fits, None]


_FULL_DISK = r"""
import resource, signal, sys
from pathlib import Path
from typing import Any
sys.path.insert(0, sys.argv[2])
from test_record_writer_long import FACTS, TAP, _tree
from perception.errors import RecordingError
from perception.sources.recording import ActionKind, RecordedAction
from perception.sources.record import RecordingWriter

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (3000, hard))
writer = RecordingWriter(Path(sys.argv[1]), facts=FACTS)
try:
    for k in range(1000):
        writer.add_step(_tree(k), None, FACTS)
        writer.set_action(TAP)
except RecordingError as exc:
    print("step", writer.step_count, exc)
try:
    writer.set_action(RecordedAction(kind=ActionKind.TEXT, text="z" * 2500))
except RecordingError as exc:
    print("action", exc)
writer.close()
"""


def test_a_write_cut_short_by_a_full_disk_is_undone(tmp_path: Path) -> None:
    """A real short write: the file size limit (RLIMIT_FSIZE, 3,000 bytes) stops a line part
    way, as a full disk does; the writer cuts it off again and says why."""
    out = tmp_path / "rec"
    run = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, str(out), str(Path(__file__).parent)],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    step_line, action_line = run.stdout.splitlines()
    assert step_line.startswith("step ") and "cannot write" in step_line
    assert action_line.startswith("action ") and "cannot write" in action_line
    count = int(step_line.split()[1])
    data = (out / "steps.jsonl").read_bytes()
    assert data.endswith(b"\n") and len(data) <= 3000
    rec = read_recording(out)
    assert len(rec.steps) == count
    assert rec.steps[-1].action == TAP  # the refused action left the last one as it was
    assert not (out / f"step_{count:03d}").exists()


_FOREVER = r"""
import sys
from pathlib import Path
from typing import Any
sys.path.insert(0, sys.argv[2])
from test_record_writer_long import FACTS, TAP, _tree
from perception.sources.recording import ActionKind, RecordedAction
from perception.sources.record import RecordingWriter

writer = RecordingWriter(Path(sys.argv[1]), facts=FACTS)
text = RecordedAction(kind=ActionKind.TEXT, text="w" * 3000)  # lines across page boundaries
for k in range(10**6):
    writer.add_step(_tree(k), None, FACTS)
    if k == 0:
        print("started", flush=True)
    writer.set_action(TAP if k % 2 else text)
"""


def test_a_writer_killed_at_any_point_leaves_a_recording_that_reads_back(
    tmp_path: Path,
) -> None:
    rng = random.Random(18)
    for attempt in range(5):
        out = tmp_path / f"rec{attempt}"
        child = subprocess.Popen(
            [sys.executable, "-c", _FOREVER, str(out), str(Path(__file__).parent)],
            stdout=subprocess.PIPE, text=True,
        )
        try:
            assert child.stdout is not None and child.stdout.readline() == "started\n"
            time.sleep(rng.uniform(0.0, 0.4))
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.kill()
            child.wait(30)
            if child.stdout is not None:
                child.stdout.close()
        rec = read_recording(out)
        assert rec.steps and [s.step for s in rec.steps] == list(range(len(rec.steps)))


def _three_steps(tmp_path: Path) -> Path:
    out = tmp_path / "rec"
    with RecordingWriter(out, facts=FACTS) as writer:
        for k in range(3):
            writer.add_step(_tree(k), None, FACTS)
            writer.set_action(TAP)
    return out


@pytest.mark.parametrize(
    "tear",
    [
        lambda last: last[: len(last) // 2],  # an append cut short: no line break
        # an in-place rewrite cut short: the new line's start over the old one's end
        lambda last: last[:45] + last[60:],
        lambda last: last[:20] + "é".encode()[:1],  # a character cut in two
    ],
    ids=["append", "rewrite", "utf8"],
)
def test_a_last_line_torn_by_a_kill_leaves_the_steps_before_it(
    tmp_path: Path, tear: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The reader rejected the whole recording for a last line a SIGKILL cut inside its one
    write; the steps before it are whole and read back, the torn one is left out, said."""
    out = _three_steps(tmp_path)
    path = out / "steps.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    torn = tear(lines[-1])
    with pytest.raises(ValueError):
        json.loads(torn)
    path.write_bytes(b"".join(lines[:-1]) + torn)
    rec = read_recording(out)
    assert [s.step for s in rec.steps] == [0, 1]
    assert "the last line is not a whole step" in caplog.text


@pytest.mark.parametrize(
    "bad",
    [b"[1, 2]\n", b"5\n", b"[" * 100_000 + b"]" * 100_000 + b"\n"],
    ids=["list", "number", "nested"],
)
def test_a_last_line_that_is_no_torn_step_is_still_an_error(tmp_path: Path, bad: bytes) -> None:
    out = _three_steps(tmp_path)
    with (out / "steps.jsonl").open("ab") as f:
        f.write(bad)
    with pytest.raises(RecordingError, match="line 4"):
        read_recording(out)


def test_a_torn_line_before_the_last_is_an_error(tmp_path: Path) -> None:
    out = _three_steps(tmp_path)
    path = out / "steps.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(lines[0] + lines[1][:30] + b"\n" + lines[2])
    with pytest.raises(RecordingError, match="line 2"):
        read_recording(out)
