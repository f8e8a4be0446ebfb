"""``perception-bench device --sim``'s ``recording_reads``: what the folder check at each read of
a recorded dump costs against a parse of it (moved here from a timed unit test: the figure is
reported, never asserted)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.device import recording_reads
from perception.errors import RecordingError

TINY = Path(__file__).parent / "data" / "sources" / "tiny"


def test_recording_reads_reports_each_figure_per_step() -> None:
    report = recording_reads(TINY)
    assert report["steps"] == 3
    for key in ("read_us", "checked_read_us", "check_us", "parse_us"):
        assert set(report[key]) == {"p50", "p95"}
    assert report["read_us"]["p50"] > 0 and report["parse_us"]["p50"] > 0
    assert report["check_over_parse"] == round(
        report["check_us"]["p50"] / report["parse_us"]["p50"], 4
    )
    assert recording_reads(TINY, max_steps=1)["steps"] == 1


def test_a_recording_that_cannot_be_read_is_a_recording_error(tmp_path: Path) -> None:
    with pytest.raises(RecordingError):
        recording_reads(tmp_path / "nonexist")
