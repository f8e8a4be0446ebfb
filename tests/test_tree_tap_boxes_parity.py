"""The cluster stage's search for tap boxes clear of controls as one kernel
(``tree_tap_boxes``): both twins agree, on generated element sets and on what the pipeline
passes for every corpus screen, and find what the stage found with numpy masks and
``_largest_free`` before."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest
from conftest import CORPUS_DIR, requires_corpus
from hypothesis import given, settings, strategies as st

from perception import fastpath, read_tree
from perception._kernels_tree_py import _largest_free

IMPLS = fastpath.available()
PY = IMPLS["python"]
needs_both = pytest.mark.skipif("cython" not in IMPLS, reason="the Cython extension is not built")


def reference(boxes: np.ndarray, takes: list[bool], search: list[int], nodes: np.ndarray,
              rank: np.ndarray, end: np.ndarray, max_parts: int) -> list[Any]:
    """What the stage computed before the kernel: numpy masks over the takers for each
    searched element, the parts clipped, and ``_largest_free``."""
    takers = [k for k, t in enumerate(takes) if t]
    tn = nodes[takers].astype(np.int64)
    box = boxes[takers].astype(np.int64).reshape(len(takers), 4)
    t_rank, t_end = rank[tn], end[tn]
    out: list[Any] = []
    for k in search:
        ol, ot, o_r, ob = boxes[k].tolist()
        nk, rk = int(nodes[k]), int(rank[nodes[k]])
        later = (
            (t_rank > rk) & ~((tn <= nk) & (nk < t_end))
            & (box[:, 0] < o_r) & (box[:, 2] > ol) & (box[:, 1] < ob) & (box[:, 3] > ot)
        )
        if np.count_nonzero(later) > max_parts:
            out.append("many")
            continue
        parts = [(max(a, ol), max(b, ot), min(c, o_r), min(d, ob))
                 for a, b, c, d in box[later].tolist()]
        out.append(_largest_free(boxes[k].tolist(), parts))
    return out


def _as_found(crowded: np.ndarray, free: np.ndarray) -> list[Any]:
    return ["many" if c else tuple(f) for c, f in zip(crowded.tolist(), free.tolist(),
                                                      strict=True)]


BOX = st.tuples(*(st.integers(0, 12),) * 4).map(
    lambda b: (min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3]))
)


@settings(max_examples=300, deadline=None)
@given(st.integers(2, 25), st.data())
def test_twins_find_what_the_stage_found(n: int, data: st.DataObject) -> None:
    """Random forests (parents before children), random element subsets with random boxes
    on a small grid (nested, overlapping, equal edges: the ties), takers, draw ranks and
    searched elements."""
    # a forest in document order: each node's parent is on the path to the one before it
    parent: list[int] = []
    path: list[int] = []
    for i in range(n):
        deeper = data.draw(st.sampled_from([True, True, False]))  # nest often
        depth = len(path) if deeper else data.draw(st.integers(0, len(path)))
        parent.append(path[depth - 1] if depth else -1)
        path = [*path[:depth], i]
    end = list(range(1, n + 1))
    for i in reversed(range(n)):
        if parent[i] >= 0:
            end[parent[i]] = max(end[parent[i]], end[i])
    nodes = np.array(sorted(set(data.draw(st.lists(st.integers(0, n - 1), min_size=1,
                                                   max_size=2 * n)))), dtype=np.int32)
    m = len(nodes)
    boxes = np.array([data.draw(BOX) for _ in range(m)], dtype=np.int32).reshape(m, 4)
    takes = [data.draw(st.sampled_from([True, True, True, False])) for _ in range(m)]
    rank = np.array(data.draw(st.permutations(range(n))), dtype=np.int32)
    end_a = np.array(end, dtype=np.int32)
    search = sorted(set(data.draw(st.lists(st.integers(0, m - 1), max_size=m))))
    max_parts = data.draw(st.sampled_from([0, 1, 3, 24]))
    want = reference(boxes, takes, search, nodes, rank, end_a, max_parts)
    for name, mod in IMPLS.items():
        crowded, free = mod.tree_tap_boxes(boxes, np.array(takes, dtype=np.int32),
                                           np.array(search, dtype=np.int32), nodes, rank,
                                           end_a, max_parts)
        assert crowded.dtype == np.int8 and free.dtype == np.int32
        assert free.shape == (len(search), 4)
        assert _as_found(crowded, free) == want, name


def test_a_row_whose_middle_is_its_switch_keeps_the_part_left_of_it() -> None:
    """A row (node 0, 0-1000 x 0-200) holding a switch (node 1) drawn later: the row's free
    part is left of the switch; with no action allowed over it, it is crowded."""
    boxes = np.array([[0, 0, 1000, 200], [400, 50, 1000, 150]], dtype=np.int32)
    takes, search = np.array([1, 1], np.int32), np.array([0], np.int32)
    order = np.array([0, 1], np.int32)
    end = np.array([2, 2], np.int32)
    for mod in IMPLS.values():
        crowded, free = mod.tree_tap_boxes(boxes, takes, search, order, order, end, 24)
        assert crowded.tolist() == [0] and free.tolist() == [[0, 0, 400, 200]]
        crowded, _ = mod.tree_tap_boxes(boxes, takes, search, order, order, end, 0)
        assert crowded.tolist() == [1]


@pytest.mark.parametrize("name", sorted(IMPLS))
def test_inconsistent_arrays_are_refused(name: str) -> None:
    mod: ModuleType = IMPLS[name]
    one, none = np.array([0], np.int32), np.zeros(0, np.int32)
    box = np.zeros((1, 4), np.int32)
    crowded, free = mod.tree_tap_boxes(box, one, none, one, one, one, 5)
    assert crowded.shape == (0,) and free.shape == (0, 4)
    with pytest.raises(ValueError, match="one entry per element"):
        mod.tree_tap_boxes(box, np.zeros(2, np.int32), one, one, one, one, 5)
    with pytest.raises(ValueError, match="one entry per node"):
        mod.tree_tap_boxes(box, one, one, one, one, np.zeros(2, np.int32), 5)
    with pytest.raises(ValueError, match="element nodes"):
        mod.tree_tap_boxes(box, one, one, np.array([1], np.int32), one, one, 5)
    with pytest.raises(ValueError, match="searched elements"):
        mod.tree_tap_boxes(box, one, np.array([1], np.int32), one, one, one, 5)


class _Keep:
    """Forwards to the Python twin, keeping the arguments of each ``tree_tap_boxes`` call."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(PY, name)

    def tree_tap_boxes(self, *args: Any) -> Any:
        self.calls.append(args)
        return PY.tree_tap_boxes(*args)


@needs_both
@requires_corpus
def test_corpus_calls_are_identical(monkeypatch: pytest.MonkeyPatch) -> None:
    keep = _Keep()
    monkeypatch.setattr(fastpath, "_impl", keep)
    files = sorted(CORPUS_DIR.rglob("screen.xml")) + sorted((CORPUS_DIR / "dumps").glob("*.xml"))
    for path in files:
        try:
            read_tree(path.read_bytes())
        except Exception:  # noqa: BLE001  (a screen the tree refuses calls no kernel of this)
            continue
    monkeypatch.undo()
    searched = 0
    for args in keep.calls:
        a, b = PY.tree_tap_boxes(*args), IMPLS["cython"].tree_tap_boxes(*args)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[1], b[1])
        searched += len(a[0])
    assert len(keep.calls) > 50 and searched > 100
