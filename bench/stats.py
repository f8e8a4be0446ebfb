"""Small helpers shared by the bench subcommands: timing, sampling, the corpus's pair checks."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

MATCHED_STATUS = ("match", "match_partial")
"""The corpus builder's ``pair_status`` for a tree and screenshot that show the same screen at
the same geometry (``match_partial``: the windows cover only part of the image)."""


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
