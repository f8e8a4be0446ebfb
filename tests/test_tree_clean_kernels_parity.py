"""The walks of clean's two list and web rules are kernels, and both twins agree on them.

``tree_list_items`` (:func:`perception.tree.clean.untouched_list_items`'s walks) and
``tree_blanket_clicks`` (:func:`perception.tree.clean.without_blanket_clicks`'s counts) give
the same answers compiled and in plain Python: on arbitrary forests (hypothesis), on the
corpus's dumps, and on small trees whose answer is known.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import numpy as np
import pytest
from conftest import requires_corpus
from hypothesis import given, settings, strategies as st

from perception import ElementFlag, PerceptionError, fastpath
from perception.tree.parse import parse_dump

IMPLS = fastpath.available()
needs_both = pytest.mark.skipif(
    "cython" not in IMPLS, reason="the Cython extension is not built: nothing to compare"
)
PY = IMPLS["python"]
clean_module = importlib.import_module("perception.tree.clean")

CLICK, LONG, CHECK, EDIT, FOCUS = (int(f) for f in (
    ElementFlag.CLICKABLE, ElementFlag.LONG_CLICKABLE, ElementFlag.CHECKABLE, ElementFlag.EDITABLE,
    ElementFlag.FOCUSABLE,
))
TEXT, DESC = fastpath.B_HAS_TEXT, fastpath.B_HAS_DESC
WEB, LIST = fastpath.B_WEBVIEW, fastpath.B_LIST
# the bits the two walks read, one at a time or together
BITS = st.lists(
    st.sampled_from([CLICK, LONG, CHECK, EDIT, FOCUS, TEXT, DESC, WEB, LIST, fastpath.B_INVISIBLE]),
    max_size=3,
).map(lambda picked: sum(set(picked)))


def _cy() -> ModuleType:
    return IMPLS["cython"]


def forest(data: st.DataObject, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Parents in document order (each before its child, subtrees not always contiguous)."""
    parent = np.array([data.draw(st.integers(-1, i - 1)) for i in range(n)], dtype=np.int32)
    bits = np.array([data.draw(BITS) for _ in range(n)], dtype=np.int32)
    return parent, bits


def i32(values: list[int]) -> np.ndarray:
    return np.array(values, dtype=np.int32)


@needs_both
@settings(max_examples=400, deadline=None)
@given(st.integers(0, 40), st.data())
def test_list_items_on_arbitrary_forests(n: int, data: st.DataObject) -> None:
    parent, bits = forest(data, n)
    # any nodes, out of order, repeated or out of range too: both skip the same ones
    lists = i32(data.draw(st.lists(st.integers(-2, n + 2), max_size=8)))
    assert PY.tree_list_items(parent, bits, lists) == _cy().tree_list_items(parent, bits, lists)
    ordered = i32(sorted(set(data.draw(st.lists(st.integers(0, max(n - 1, 0)), max_size=8)))
                         if n else []))
    assert PY.tree_list_items(parent, bits, ordered) == _cy().tree_list_items(
        parent, bits, ordered
    )


@needs_both
@settings(max_examples=400, deadline=None)
@given(st.integers(0, 40), st.data(), st.integers(0, 12), st.integers(1, 12))
def test_blanket_clicks_on_arbitrary_forests(
    n: int, data: st.DataObject, num: int, den: int
) -> None:
    parent, bits = forest(data, n)
    assert PY.tree_blanket_clicks(parent, bits, num, den) == _cy().tree_blanket_clicks(
        parent, bits, num, den
    )


# A list view (0) of three rows; rows 1 and 3 have a labelled child, row 5 has none.
ROWS_PARENT = [-1, 0, 1, 0, 3, 0]
ROWS_BITS = [LIST, 0, TEXT, 0, DESC, 0]


@pytest.mark.parametrize("impl", sorted(IMPLS))
def test_a_list_of_untouched_rows_gives_its_labelled_rows(impl: str) -> None:
    kernels = IMPLS[impl]
    assert kernels.tree_list_items(i32(ROWS_PARENT), i32(ROWS_BITS), i32([0])) == [1, 3]
    touched = [*ROWS_BITS[:4], DESC | FOCUS, 0]  # a focusable node inside it: a list that works
    assert kernels.tree_list_items(i32(ROWS_PARENT), i32(touched), i32([0])) == []
    held = [-1, *[p + 1 for p in ROWS_PARENT]]  # inside a clickable root
    assert kernels.tree_list_items(i32(held), i32([CLICK, *ROWS_BITS]), i32([1])) == []
    one = [LIST, 0, TEXT, 0, 0, 0]  # one labelled row is no list of items
    assert kernels.tree_list_items(i32(ROWS_PARENT), i32(one), i32([0])) == []


# A web view (0) with a paragraph (1), a link that is focusable (2) and a container (3) of one
# clickable leaf (4).
WEB_PARENT = [-1, 0, 0, 0, 3]
WEB_BITS = [WEB, CLICK | TEXT, CLICK | FOCUS | TEXT, CLICK | DESC, CLICK | TEXT]


@pytest.mark.parametrize("impl", sorted(IMPLS))
def test_a_page_clickable_throughout_gives_its_plain_leaves(impl: str) -> None:
    kernels = IMPLS[impl]
    parent, bits = i32(WEB_PARENT), i32(WEB_BITS)
    assert kernels.tree_blanket_clicks(parent, bits, 9, 10) == [[1, 4]]
    # 3 of 4 labelled nodes clickable: short of 9 in 10
    some = i32([WEB, TEXT, *WEB_BITS[2:]])
    assert kernels.tree_blanket_clicks(parent, some, 9, 10) == []
    assert kernels.tree_blanket_clicks(parent, some, 3, 4) == [[4]]


@needs_both
@requires_corpus
def test_corpus_walks_are_identical() -> None:
    from conftest import CORPUS_DIR

    paths = sorted(CORPUS_DIR.rglob("*.xml"))
    assert len(paths) > 400
    lists_seen = webs_seen = 0
    for path in paths:
        try:
            raw = parse_dump(path.read_bytes())
        except PerceptionError:  # a dump the parser refuses has no walks to compare
            continue
        lists = np.flatnonzero(raw.bits & LIST).astype(np.int32)
        items = PY.tree_list_items(raw.parent, raw.bits, lists)
        assert items == _cy().tree_list_items(raw.parent, raw.bits, lists), path
        num, den = clean_module.BLANKET_CLICK_SHARE
        pages = PY.tree_blanket_clicks(raw.parent, raw.bits, num, den)
        assert pages == _cy().tree_blanket_clicks(raw.parent, raw.bits, num, den), path
        lists_seen += bool(items)
        webs_seen += bool(pages)
    assert lists_seen and webs_seen  # the corpus exercises both
