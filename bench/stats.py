"""Small helpers shared by the bench subcommands: option types, timing, sampling, the corpus's
pair checks."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from perception.cli.options import whole
from perception.errors import RecordingError

MATCHED_STATUS = ("match", "match_partial")
"""The corpus builder's ``pair_status`` for a tree and screenshot that show the same screen at
the same geometry (``match_partial``: the windows cover only part of the image)."""


def at_least_one(text: str) -> int:
    """A count of 1 or more (``--samples``, ``--repeat``): a whole number, and not 0."""
    count = whole(text)
    if count < 1:
        raise argparse.ArgumentTypeError(f"expects a whole number >= 1, got {text!r}")
    return count


def time_ms(fn: Callable[[], Any], repeat: int = 5) -> float:
    """The median wall time of ``repeat`` calls, in milliseconds."""
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - t0) / 1e6)
    return statistics.median(samples)


def pct(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100), nearest-rank; 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def p50_p95(values: Sequence[float]) -> dict[str, float]:
    return {"p50": round(pct(values, 50), 4), "p95": round(pct(values, 95), 4)}


def target(value: float | None, ok: Callable[[float], bool]) -> dict[str, Any]:
    """One of an issue's targets in a bench report: the value this run measured and whether
    it meets the target (None: not measured in this run, e.g. no baseline or no corpus part)."""
    return {"value": value, "met": None if value is None else bool(ok(value))}


def fmt(value: Any, suffix: str = "") -> str:
    """A report's figure for a line of text: floats to 3 decimals below 10, to 1 above."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}{suffix}" if value < 10 else f"{value:.1f}{suffix}"
    return f"{value}{suffix}"


def target_lines(targets: dict[str, dict[str, Any]]) -> list[str]:
    """The report's ``targets`` section: a line a target, met / MISSED / n/a first."""
    lines = ["", "targets"]
    for name, t in targets.items():
        met = {True: "met", False: "MISSED", None: "n/a"}[t["met"]]
        lines.append(f"  {met:<7}{name}: {fmt(t['value'])}")
    return lines


INDEX = "index.jsonl"
IMAGES = ("screen.png", "screen.jpg")
"""The image names a screen folder may hold, looked for in this order."""


def read_index(corpus: Path, layout: str, required: Sequence[str] = ("path",)) -> list[Any]:
    """The rows of ``corpus/index.jsonl``, each a dict holding ``required``.

    The pixel and fusion benches read the corpus through this index; a folder of a user's own
    captures usually has none, and a traceback after minutes of OCR said so badly. This fails
    first, with a :class:`RecordingError` of one line naming what is missing and, with
    ``layout``, what the bench needs.
    """
    if not corpus.is_dir():
        raise RecordingError("not a directory")
    index = corpus / INDEX
    if not index.is_file():
        raise RecordingError(f"no {INDEX}; {layout}")
    rows: list[Any] = []
    for number, line in enumerate(index.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problem = f"{INDEX} line {number} is not JSON ({exc.msg})"
            raise RecordingError(f"{problem}; {layout}") from None
        if not isinstance(row, dict):
            raise RecordingError(f"{INDEX} line {number} is not a JSON object; {layout}")
        missing = [name for name in required if row.get(name) is None]
        if missing:
            raise RecordingError(f"{INDEX} line {number} has no {', '.join(missing)}; {layout}")
        if not isinstance(row["path"], str):
            raise RecordingError(f"{INDEX} line {number}: path is not a string; {layout}")
        rows.append(row)
    if not rows:
        raise RecordingError(f"{INDEX} has no rows; {layout}")
    return rows


def screen_image(folder: Path, name: str | None = None) -> Path | None:
    """The screen's image in ``folder``: ``name`` when given, else the first of :data:`IMAGES`
    there; None when it is not there."""
    for candidate in (name,) if name else IMAGES:
        if (folder / candidate).is_file():
            return folder / candidate
    return None


def require_image(
    folder: Path, name: str | None, layout: str, where: str | Path | None = None
) -> Path:
    """:func:`screen_image`, or a :class:`RecordingError` naming the image that is missing and
    the layout the bench needs (``where``: the folder as the message names it)."""
    path = screen_image(folder, name)
    if path is None:
        what = name or " or ".join(IMAGES)
        raise RecordingError(f"{where or folder}/ has no {what}; {layout}")
    return path


def check_screens(corpus: Path, rows: Sequence[Any], layout: str) -> None:
    """Every row's folder holds ``screen.xml`` and its image (the row's ``image``, else
    ``screen.png`` or ``screen.jpg``), checked before the bench's slow work starts; a
    :class:`RecordingError` names the first row that does not."""
    for row in rows:
        folder = corpus / row["path"]
        if not folder.is_dir():
            raise RecordingError(f"{INDEX} row {row['path']!r}: no such folder; {layout}")
        if not (folder / "screen.xml").is_file():
            raise RecordingError(f"{row['path']}/ has no screen.xml; {layout}")
        require_image(folder, row.get("image"), layout, where=row["path"])
