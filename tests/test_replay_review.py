"""``perception replay`` as someone debugging a recorded session uses it: broken and missing
steps, the recorded epochs and timing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from perception.cli.main import main

TINY = Path(__file__).parent / "data" / "sources" / "tiny"


def _copy(tmp_path: Path) -> Path:
    rec = tmp_path / "rec"
    shutil.copytree(TINY, rec)
    return rec


def _rewrite_steps(rec: Path, change: dict[str, object]) -> None:
    lines = (rec / "steps.jsonl").read_text(encoding="utf-8").splitlines()
    out = []
    for line in lines:
        obj = json.loads(line)
        obj.update(change.get(str(obj["step"]), {}))  # type: ignore[call-overload]
        out.append(json.dumps(obj))
    (rec / "steps.jsonl").write_text("\n".join(out) + "\n", encoding="utf-8")


def test_a_broken_step_is_reported_and_the_replay_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A dump that does not parse (no frame to fall back on) stopped the replay with a line
    that named neither the step nor the file; now that step says so and the rest plays."""
    rec = _copy(tmp_path)
    dump = rec / "step_001" / "screen.xml"
    dump.write_bytes(dump.read_bytes()[:120])
    assert main(["replay", str(rec), "--no-frames"]) == 0
    captured = capsys.readouterr()
    headers = [ln for ln in captured.out.splitlines() if ln.startswith("--- step")]
    assert len(headers) == 3
    assert "failed: TreeParseError" in captured.out
    assert f"step 1 ({dump}): TreeParseError" in captured.err
    assert "3 steps, 1 failed" in captured.err
    # --json: the failed step is a line of its own with the error, so the stream has no gap.
    assert main(["replay", str(rec), "--no-frames", "--json"]) == 0
    lines = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]
    assert [ln["step"] for ln in lines] == [0, 1, 2]
    assert lines[1]["error"]["type"] == "TreeParseError" and "observation" not in lines[1]
    assert "error" not in lines[0]


def test_a_broken_frame_names_its_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = _copy(tmp_path)
    frame = rec / "step_002" / "screen.png"
    frame.write_bytes(frame.read_bytes()[:200])
    assert main(["replay", str(rec)]) == 0
    err = capsys.readouterr().err
    assert f"step 2 ({frame}): TruncatedFrameError" in err


def test_every_step_failing_is_a_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rec = _copy(tmp_path)
    for dump in rec.glob("step_*/screen.xml"):
        dump.write_bytes(b"garbage")
    assert main(["replay", str(rec), "--no-frames"]) == 2
    assert "3 steps, 3 failed" in capsys.readouterr().err


def test_a_missing_trace_step_is_said(
    corpus_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = corpus_dir / "droidbot_bitbar" / "bitbar_2024-03-20"
    trace = tmp_path / "bitbar"
    shutil.copytree(src, trace)
    (trace / "step_001" / "screen.xml").unlink()
    assert main(["replay", str(trace), "--no-frames", "--json"]) == 0
    captured = capsys.readouterr()
    assert [json.loads(ln)["step"] for ln in captured.out.splitlines()] == [0, 2, 3]
    assert "step_001" in captured.err and "skipped" in captured.err


def test_replay_uses_the_recorded_epochs_and_shows_the_timing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Watch mode records every step in epoch 0 (no action was sent): the replay gave them
    epochs 0, 1, 2, as if actions had been taken. The recorded times are shown."""
    rec = _copy(tmp_path)
    _rewrite_steps(rec, {"1": {"epoch": 0}, "2": {"epoch": 0}})
    assert main(["replay", str(rec), "--no-frames", "--json"]) == 0
    lines = [json.loads(ln) for ln in capsys.readouterr().out.splitlines()]
    assert [ln["epoch"] for ln in lines] == [0, 0, 0]
    assert [ln["t_ms"] for ln in lines] == [0.0, 400.0, 800.0]
    assert main(["replay", str(rec), "--no-frames"]) == 0
    out = capsys.readouterr().out
    assert "--- step 1 (step_001) at +0.400 s" in out
    assert "epoch=0" in out and "epoch=1" not in out


def test_realtime_says_when_it_waits_a_long_recorded_gap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """DroidBot gaps are minutes (bitbar: 10.8 min before its last step): --realtime sat
    silent, like a hang. A wait over a second is said before it starts."""
    rec = _copy(tmp_path)
    _rewrite_steps(rec, {"1": {"tree_start_ns": 2_400_000_000, "tree_end_ns": 2_430_000_000,
                               "frame_start_ns": 2_405_000_000, "frame_end_ns": 2_425_000_000},
                         "2": {"tree_start_ns": 2_800_000_000, "tree_end_ns": 2_830_000_000,
                               "frame_start_ns": 2_805_000_000, "frame_end_ns": 2_825_000_000}})
    assert main(["replay", str(rec), "--no-frames", "--realtime", "--speed", "2"]) == 0
    err = capsys.readouterr().err.splitlines()
    waits = [ln for ln in err if "waiting" in ln]
    assert waits == ["perception replay: waiting 1.2 s for step 1 (2.4 s recorded, --speed 2)"]
