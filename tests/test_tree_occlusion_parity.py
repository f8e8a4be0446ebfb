"""The occlusion kernel's twins agree on covers taken together, tap boxes and open drawers, and
the Python twin's geometry is right (brute force on small grids)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from conftest import CORPUS_DIR, requires_corpus
from hypothesis import given, settings, strategies as st

from perception import fastpath, read_tree
from perception._kernels_tree_py import _largest_free, _union_area
from perception.config import TreeConfig

IMPLS = fastpath.available()
PY = IMPLS["python"]
needs_both = pytest.mark.skipif("cython" not in IMPLS, reason="the Cython extension is not built")


def _cy() -> ModuleType:
    return IMPLS["cython"]


def both(*args: object) -> tuple[np.ndarray, ...]:
    a = PY.tree_visibility(*args)
    b = _cy().tree_visibility(*args)
    assert len(a) == len(b) == 5
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, y)
        assert x.dtype == y.dtype
    out: tuple[np.ndarray, ...] = a
    return out



def corpus_files() -> list[Path]:
    return sorted(CORPUS_DIR.rglob("screen.xml")) + sorted((CORPUS_DIR / "dumps").glob("*.xml"))

# --- the geometry (Python twin) ----------------------------------------------------------------

RECT = st.tuples(st.integers(0, 8), st.integers(0, 8), st.integers(1, 8), st.integers(1, 8)).map(
    lambda r: (min(r[0], r[2] - 1), min(r[1], r[3] - 1), r[2], r[3])
)


def _cells(rects: list[tuple[int, int, int, int]]) -> set[tuple[int, int]]:
    return {(x, y) for left, top, right, bottom in rects
            for x in range(left, right) for y in range(top, bottom)}


@settings(max_examples=300, deadline=None)
@given(st.lists(RECT, min_size=1, max_size=5))
def test_union_area_is_the_covered_cells(rects: list[tuple[int, int, int, int]]) -> None:
    assert _union_area(rects) == len(_cells(rects))


@settings(max_examples=300, deadline=None)
@given(st.lists(RECT, min_size=0, max_size=4))
def test_largest_free_rectangle(rects: list[tuple[int, int, int, int]]) -> None:
    box = [0, 0, 8, 8]
    taken = _cells(rects)
    left, top, right, bottom = _largest_free(box, rects)
    found = {(x, y) for x in range(left, right) for y in range(top, bottom)}
    assert not found & taken and 0 <= left <= right <= 8 and 0 <= top <= bottom <= 8
    best = 0
    for x0 in range(8):
        for x1 in range(x0 + 1, 9):
            for y0 in range(8):
                for y1 in range(y0 + 1, 9):
                    cells = {(x, y) for x in range(x0, x1) for y in range(y0, y1)}
                    if not cells & taken:
                        best = max(best, len(cells))
    assert len(found) == best


# --- twins --------------------------------------------------------------------------------------

BOX = st.tuples(*(st.integers(-20, 120),) * 4)


CLASSES = ["android.widget.FrameLayout", "androidx.drawerlayout.widget.DrawerLayout",
           "android.widget.TextView", "com.example.MyDrawerLayout"]


@needs_both
@settings(max_examples=300, deadline=None)
@given(st.lists(BOX, min_size=0, max_size=30), st.data())
def test_twins_on_crowded_forests(boxes: list[tuple[int, int, int, int]],
                                  data: st.DataObject) -> None:
    """Small screens full of overlapping blockers: unions, covered centres, tap boxes, open
    drawers (any node may be a DrawerLayout)."""
    n = len(boxes)
    parent = np.array([data.draw(st.integers(-1, i - 1)) for i in range(n)], dtype=np.int32)
    raw_bits = np.array(
        [data.draw(st.sampled_from([0, 1, 2, 4, 16, 32, 1 << 24, 1 | 32, 1 << 16]))
         for _ in range(n)], dtype=np.int32)
    draw = np.array([data.draw(st.integers(-1, 3)) for _ in range(n)], dtype=np.int32)
    clip, bits, _, rank, end = PY.tree_structure(
        parent, np.array(boxes, dtype=np.int32).reshape(n, 4), raw_bits, draw, 100, 100
    )
    # class ids by first appearance, as the scanner numbers them
    names = [data.draw(st.sampled_from(CLASSES)) for _ in range(n)]
    ids: dict[str, int] = {}
    class_id = np.array([ids.setdefault(name, len(ids)) for name in names], dtype=np.int32)
    layouts = np.array([i for i, name in enumerate(names) if name.endswith("DrawerLayout")],
                       dtype=np.int32)
    nodes = np.array(sorted(set(data.draw(st.lists(st.integers(0, max(n - 1, 0)),
                                                   max_size=n)))) if n else [],
                     dtype=np.int32)
    el_boxes = clip[nodes] if n else np.zeros((0, 4), dtype=np.int32)
    side = data.draw(st.sampled_from([0, 1, 5, 20, 1 << 20]))
    for drawer_layouts in (layouts, np.concatenate([layouts, layouts]), None):
        occluded, _, _, tap, drawers = both(clip, bits, rank, end, parent, class_id, nodes,
                                            el_boxes, 4, 5, 2, 3, 2, drawer_layouts, side)
        for d, p in drawers.tolist():  # a drawer is a later-drawn kept child of its layout
            assert parent[d] == p and p in layouts.tolist()
        assert len(set(drawers[:, 0].tolist())) == len(drawers)  # each found once
        moved = (tap != el_boxes).any(axis=1)
        assert not (moved & (occluded == 1)).any()
        for k in np.flatnonzero(moved).tolist():  # a tap box lies in the element's box
            left, top, right, bottom = tap[k].tolist()
            e = clip[nodes[k]].tolist()
            assert e[0] <= left < right <= e[2] and e[1] <= top < bottom <= e[3]
            assert right - left >= max(side, 1) and bottom - top >= max(side, 1)


@needs_both
@requires_corpus
def test_twins_on_the_corpus_with_drawers_and_tap_boxes() -> None:
    config = TreeConfig()
    for path in corpus_files():
        tree = read_tree(path)
        clean = tree.cleaned
        nodes = np.array([e.node for e in tree.elements], dtype=np.int32)
        boxes = clean.clip_px[nodes] if nodes.size else np.zeros((0, 4), dtype=np.int32)
        vis = (clean.clip_px, clean.bits, clean.rank, clean.end, clean.raw.parent,
               clean.raw.class_id, nodes, boxes, 4, 5, config.list_keep, config.min_list_run, 2)
        both(*vis, np.array(clean.drawer_layouts, dtype=np.int32), 24)
        # every node a DrawerLayout: every later child a drawer
        both(*vis, np.arange(len(clean.bits), dtype=np.int32), 0)


def test_drawer_layouts_must_be_nodes() -> None:
    one = np.zeros((1, 4), dtype=np.int32)
    for impl in IMPLS.values():
        for bad in ([1], [-1]):
            with pytest.raises(ValueError, match="drawer layouts"):
                impl.tree_visibility(one, np.ones(1, np.int32), np.zeros(1, np.int32),
                                     np.ones(1, np.int32), np.full(1, -1, np.int32),
                                     np.zeros(1, np.int32), np.zeros(1, np.int32), one,
                                     4, 5, 8, 3, 2, np.array(bad, dtype=np.int32), 0)


BIG_BOX = st.tuples(st.integers(-20, 1000), st.integers(-20, 2400), st.integers(0, 400),
                    st.sampled_from([10, 40, 120, 600, 2400])).map(
    lambda r: (r[0], r[1], r[0] + r[2], r[1] + r[3])
)


@needs_both
@settings(max_examples=40, deadline=None)
@given(st.lists(BIG_BOX, min_size=65, max_size=220), st.data())
def test_twins_on_screens_with_many_blockers(boxes: list[tuple[int, int, int, int]],
                                             data: st.DataObject) -> None:
    """Past 64 blockers the Python twin looks them up in a grid (a dump of 50,000 sibling
    buttons took it a minute): the same covers, tap boxes and truncation as the compiled scan,
    with wide blockers, empty ones and boxes past the screen's edges."""
    n = len(boxes)
    parent = np.array([-1] + [data.draw(st.integers(0, i - 1)) for i in range(1, n)],
                      dtype=np.int32)
    raw_bits = np.array([data.draw(st.sampled_from([1, 1, 2, 16, 32, 1 | 32, 0]))
                         for _ in range(n)], dtype=np.int32)
    draw = np.full(n, -1, dtype=np.int32)
    clip, bits, _, rank, end = PY.tree_structure(
        parent, np.array(boxes, dtype=np.int32).reshape(n, 4), raw_bits, draw, 1080, 2400
    )
    class_id = np.zeros(n, dtype=np.int32)
    nodes = np.arange(n, dtype=np.int32)
    both(clip, bits, rank, end, parent, class_id, nodes, clip[nodes], 4, 5, 2, 3, 2, None, 12)
