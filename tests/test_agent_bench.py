"""``perception-bench agent`` runs on replayed corpus traces and reports its figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import main


def test_bench_agent_on_corpus_traces(
    corpus_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "agent.json"
    assert main(["agent", "--corpus", str(corpus_dir), "--limit", "2", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["traces"] == 2 and report["steps"] > 5 and report["errors"] == 0
    assert 300 < report["tokens"]["system"] < 800
    assert report["tokens"]["turn"]["p50"] > report["tokens"]["turn_beyond_screen"]["p50"] > 0
    taps = report["taps"]
    assert taps["recorded"] > 0
    assert sum(v for k, v in taps.items() if k != "recorded") == taps["recorded"]
    assert "recorded taps" in capsys.readouterr().out


def test_bench_agent_without_traces(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A folder without traces (empty, or one of the corpus's sources: a level too deep) is
    refused in one line, exit 2, as the other benches refuse theirs: not a report of zeros."""
    assert main(["agent", "--corpus", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "BenchInputError" in err and "no traces" in err


def test_bench_agent_counts_taps_on_views_off_the_screen_apart(
    corpus_dir: Path, tmp_path: Path
) -> None:
    # Habitica's trace taps a note DroidBot logged with inverted bounds (a page of a pager
    # scrolled away), four times: nothing on the screen to tap, so not a tap the action space
    # fails to express.
    trace = next((corpus_dir / "droidbot_habitica").glob("*/trace.json")).parent
    (tmp_path / "droidbot_habitica").mkdir()
    (tmp_path / "droidbot_habitica" / trace.name).symlink_to(trace, target_is_directory=True)
    out = tmp_path / "agent.json"
    assert main(["agent", "--corpus", str(tmp_path), "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["traces"] == 1 and report["taps_off_screen"] == 4
    taps = report["taps"]
    assert taps["recorded"] == 4  # the Refill, Cancel and two streak fields
    assert taps["tap_at_inside"] == taps["tap_at_outside"] == 0
