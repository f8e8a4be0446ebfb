"""The occlusion kernel meets each element only with the covers a grid says can reach it (over
64 covers): the results are those of the plain scan of every cover, in both twins."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from perception import _kernels_tree_py as PYK, fastpath

IMPLS = fastpath.available()
needs_both = pytest.mark.skipif("cython" not in IMPLS, reason="the Cython extension is not built")


def _plain(*args: object) -> tuple[np.ndarray, ...]:
    """The Python twin scanning every cover (no grid)."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(PYK._BlockerGrid, "PLAIN_SCAN_MAX", 10**9)
        out: tuple[np.ndarray, ...] = PYK.tree_visibility(*args)
    return out


def _args(boxes: list[tuple[int, int, int, int]], pops: list[int] | None,
          ranks: list[int]) -> tuple:
    """A root holding ``boxes`` (clickable) in document order, drawn in the order ``ranks``:
    siblings (``pops`` None), or each box a child of the one before after leaving ``pops[i]``
    levels (a random tree)."""
    n = len(boxes) + 1
    clip = np.array([(0, 0, 1080, 2400), *boxes], dtype=np.int32)
    bits = np.array([0] + [PYK.B_CLICKABLE] * (n - 1), dtype=np.int32)
    rank = np.array([0, *(r + 1 for r in ranks)], dtype=np.int32)
    parent = [-1] + [0] * (n - 1)
    depth = [0] * n
    if pops is not None:
        path = [0]
        for i in range(1, n):
            del path[max(1, len(path) - pops[i - 1]):]
            parent[i] = path[-1]
            depth[i] = len(path)
            path.append(i)
    end = [next((j for j in range(i + 1, n) if depth[j] <= depth[i]), n) for i in range(n)]
    class_id = np.zeros(n, dtype=np.int32)
    nodes = np.arange(1, n, dtype=np.int32)
    return (clip, bits, rank, np.array(end, dtype=np.int32), np.array(parent, dtype=np.int32),
            class_id, nodes, clip[1:].copy(), 4, 5, 8, 3, 2)


def _check(args: tuple) -> None:
    want = _plain(*args)
    for impl in IMPLS.values():
        got = impl.tree_visibility(*args)
        for x, y in zip(want, got, strict=True):
            np.testing.assert_array_equal(x, y)


BOX = st.tuples(
    st.integers(-50, 1100), st.integers(-50, 2450), st.integers(0, 400), st.integers(0, 400)
).map(lambda r: (r[0], r[1], r[0] + r[2], r[1] + r[3]))


@settings(max_examples=60, deadline=None)
@given(st.lists(BOX, min_size=65, max_size=160), st.booleans(), st.randoms(use_true_random=False))
def test_grid_finds_what_the_plain_scan_finds(
    boxes: list[tuple[int, int, int, int]], flat: bool,
    rnd: object,
) -> None:
    ranks = list(range(len(boxes)))
    rnd.shuffle(ranks)  # type: ignore[attr-defined]
    pops = None if flat else [rnd.randrange(3) for _ in boxes]  # type: ignore[attr-defined]
    _check(_args(boxes, pops, ranks))


SMALL = st.tuples(
    st.integers(0, 60), st.integers(0, 60), st.integers(1, 30), st.integers(1, 30)
).map(lambda r: (r[0], r[1], r[0] + r[2], r[1] + r[3]))


@settings(max_examples=60, deadline=None)
@given(st.lists(SMALL, min_size=65, max_size=120), st.randoms(use_true_random=False))
def test_grid_on_crowded_small_boxes(
    boxes: list[tuple[int, int, int, int]], rnd: object,
) -> None:
    """Many overlaps each (tap boxes, covers taken together, the 64-part limit)."""
    ranks = list(range(len(boxes)))
    rnd.shuffle(ranks)  # type: ignore[attr-defined]
    _check(_args(boxes, None, ranks))


def test_grid_of_cells_rows_and_a_stack() -> None:
    """A grid of cells, full-width rows over it (wide covers), and a stack on one box."""
    cells = [(x * 40, y * 60, x * 40 + 40, y * 60 + 60) for y in range(20) for x in range(27)]
    rows = [(0, y * 100 + 30, 1080, y * 100 + 80) for y in range(24)]
    stack = [(500, 500, 600, 600)] * 80
    boxes = cells + rows + stack
    _check(_args(boxes, None, list(range(len(boxes)))))
    _check(_args(boxes, None, list(range(len(boxes)))[::-1]))


@needs_both
def test_a_grid_of_cells_is_met_in_near_linear_work() -> None:
    """49,000 sibling buttons: each meets a handful of covers, not all 49,000 (the plain scan
    took 5 s; this counts work, not time: the grid's cells hold few covers each)."""
    cols, rows = 147, 334
    w, h = 1080 // cols, 2400 // rows
    boxes = [(x * w, y * h, x * w + w, y * h + h) for y in range(rows) for x in range(cols)]
    args = _args(boxes, None, list(range(len(boxes))))
    grid = PYK._BlockerGrid([(i + 1, list(b)) for i, b in enumerate(boxes)],
                            args[2].tolist())
    assert not grid.all and not grid.wide
    assert max(len(c) for c in grid.cells) <= 6
    met = sum(1 for _ in grid.around(1, list(boxes[0])))
    assert met <= 6
    occluded = IMPLS["cython"].tree_visibility(*args)[0]
    assert not occluded.any()
