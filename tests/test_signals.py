"""One way to stop on a signal (perception.signals) for perception, perception-agent and
perception-simdevice: simdevice had its own copy (``_Stopped`` and its exit line)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent import cli as agent_cli
from perception import signals
from perception.cli import main as perception_main
from perception.simdevice import cli as simdevice_cli

ROOT = Path(__file__).resolve().parents[1]
TINY = Path(__file__).parent / "data" / "sources" / "tiny"


def test_the_commands_share_one_rule() -> None:
    """perception (and perception-bench through run_command), perception-agent and
    perception-simdevice stop by the same functions."""
    for module in (perception_main, agent_cli, simdevice_cli):
        assert module.interrupted is signals.interrupted
        assert module.one_line is signals.one_line
        assert module.stop_signals is signals.stop_signals
    assert not hasattr(simdevice_cli, "_Stopped")


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_stop_signals_raise_interrupted_and_restore_the_handlers(
    sig: signal.Signals, code: int
) -> None:
    before = signal.getsignal(sig)
    with pytest.raises(signals.Interrupted) as caught, signals.stop_signals():
        os.kill(os.getpid(), sig)
        time.sleep(5)  # the handler raises at the next bytecode, long before this ends
    assert signal.getsignal(sig) is before
    assert caught.value.signum == sig and str(caught.value) == sig.name
    assert isinstance(caught.value, KeyboardInterrupt)  # handled wherever Ctrl-C is
    assert signals.interrupted(caught.value) == (f"stopped by {sig.name}", code)


def test_interrupted_is_one_line_with_what_was_kept() -> None:
    assert signals.interrupted(KeyboardInterrupt()) == ("interrupted", 130)
    exc = signals.Interrupted(signal.SIGTERM)
    exc.add_note("the partial recording is kept:\n  2 steps in /tmp/rec  ")
    exc.add_note("second")
    assert signals.interrupted(exc) == (
        "stopped by SIGTERM (the partial recording is kept: 2 steps in /tmp/rec; second)", 143
    )
    assert signals.one_line("  a\n   b \n\nc  ") == "a b c"


def test_stop_signals_off_the_main_thread_leave_the_handlers_alone() -> None:
    import threading

    seen: list[object] = []

    def run() -> None:
        with signals.stop_signals():
            seen.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [before]


# ----- perception-simdevice stopped while it reads its recording -------------------------------


def _default_sigint() -> None:
    """Ctrl-C's default in the child: a suite run as a background job hands it SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _long_recording(tmp_path: Path, steps: int) -> Path:
    """``tests/data/sources/tiny`` with its first step repeated ``steps`` times: seconds to read."""
    rec = tmp_path / "long"
    shutil.copytree(TINY, rec)
    first = json.loads((TINY / "steps.jsonl").read_text(encoding="utf-8").splitlines()[0])
    first.pop("action", None)
    with (rec / "steps.jsonl").open("w", encoding="utf-8") as f:
        for i in range(steps):
            at = i * 1_000_000_000
            f.write(json.dumps({
                **first, "step": i, "epoch": i, "tree_start_ns": at, "tree_end_ns": at + 30_000_000,
                "frame_start_ns": at + 5_000_000, "frame_end_ns": at + 25_000_000,
            }) + "\n")
    return rec


def _catches(pid: int, *sigs: signal.Signals) -> bool:
    """Has process ``pid`` a handler of its own for each of ``sigs`` (``SigCgt``)?"""
    status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    caught = int(next(ln for ln in status.splitlines() if ln.startswith("SigCgt:")).split()[1], 16)
    return all(caught >> (sig - 1) & 1 for sig in sigs)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/PID/status")
@pytest.mark.parametrize(("sig", "code", "what"), [
    (signal.SIGINT, 130, "interrupted"),
    (signal.SIGTERM, 143, "stopped by SIGTERM"),
    (signal.SIGHUP, 129, "stopped by SIGHUP"),
])
def test_simdevice_stopped_while_reading_is_one_line_and_128_plus_the_signal(
    tmp_path: Path, sig: signal.Signals, code: int, what: str
) -> None:
    """Nothing is served yet: it ends as perception's commands end, not as a server does."""
    rec = _long_recording(tmp_path, 10_000)  # about 3 s to read here
    proc = subprocess.Popen(
        [sys.executable, "-m", "perception.simdevice.cli", str(rec), "--port", "0"], cwd=ROOT,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=_default_sigint,
    )
    try:
        deadline = time.monotonic() + 60
        # SIGTERM and SIGHUP get their handlers just before the recording is read.
        while not _catches(proc.pid, signal.SIGTERM, signal.SIGHUP):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.005)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert (proc.returncode, out, err.splitlines()) == (code, "", [f"perception-simdevice: {what}"])
