"""The walks of clean's rules are kernels, and both twins agree on them.

``tree_list_items`` (:func:`perception.tree.clean.untouched_list_items`'s walks),
``tree_blanket_clicks`` (:func:`perception.tree.clean.without_blanket_clicks`'s counts) and
``tree_covered_text`` (:func:`perception.tree.clean.without_covered_text`'s walk) give the same
answers compiled and in plain Python: on arbitrary forests (hypothesis), on the corpus's dumps,
and on small trees whose answer is known.
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
@settings(max_examples=200, deadline=None)
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
@settings(max_examples=200, deadline=None)
@given(st.integers(0, 40), st.data(), st.integers(0, 12), st.integers(1, 12))
def test_blanket_clicks_on_arbitrary_forests(
    n: int, data: st.DataObject, num: int, den: int
) -> None:
    parent, bits = forest(data, n)
    assert PY.tree_blanket_clicks(parent, bits, num, den) == _cy().tree_blanket_clicks(
        parent, bits, num, den
    )


SIDE = st.integers(-50, 1200)
# sides as the scanner keeps them (BOUND_LIMIT), where doubling wraps as int32 does
HUGE = st.integers(-1_000_000_000, 1_000_000_000)


@needs_both
@settings(max_examples=200, deadline=None)
@given(st.integers(0, 30), st.data())
def test_covered_text_on_arbitrary_forests(n: int, data: st.DataObject) -> None:
    parent, bits = forest(data, n)
    side = data.draw(st.sampled_from([SIDE, HUGE]))
    box = np.array([[data.draw(side) for _ in range(4)] for _ in range(n)], dtype=np.int32)
    box = box.reshape(n, 4)
    # mostly large boxes, so that pages, roots and texts under them come up
    for i in range(n):
        if data.draw(st.booleans()):
            box[i] = (0, 0, 1080, 1000) if data.draw(st.booleans()) else (100, 200, 500, 600)
    width, height = data.draw(st.sampled_from([(1080, 1000), (1, 1), (65_535, 65_535)]))
    assert PY.tree_covered_text(parent, box, bits, width, height) == _cy().tree_covered_text(
        parent, box, bits, width, height
    )


# A clickable window root (0) holds a text (1) and a clickable page (2) drawn over it with a
# child (3); a text (4) after the page is not under it.
PAGE_PARENT = [-1, 0, 0, 2, 0]
PAGE_BOX = [[0, 0, 1080, 2000], [10, 10, 300, 60], [0, 0, 1080, 2000], [0, 0, 50, 50],
            [0, 0, 50, 50]]
PAGE_BITS = [CLICK, TEXT, CLICK, TEXT, TEXT]


@pytest.mark.parametrize("impl", sorted(IMPLS))
def test_a_page_over_text_in_one_clickable_root_covers_it(impl: str) -> None:
    kernels = IMPLS[impl]
    parent, box = i32(PAGE_PARENT), np.array(PAGE_BOX, dtype=np.int32)
    assert kernels.tree_covered_text(parent, box, i32(PAGE_BITS), 1080, 2000) == [1]
    small = box.copy()
    small[2] = (0, 0, 1080, 900)  # under half the screen's height: no page
    assert kernels.tree_covered_text(parent, small, i32(PAGE_BITS), 1080, 2000) == []
    clicked = [CLICK, TEXT | CLICK, CLICK, TEXT, TEXT]  # a control is no static text
    assert kernels.tree_covered_text(parent, box, i32(clicked), 1080, 2000) == []


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
    lists_seen = webs_seen = covers_seen = 0
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
        screen = clean_module.infer_screen(raw)[0]
        width, height = screen.width_px, screen.height_px
        covered = PY.tree_covered_text(raw.parent, raw.box_px, raw.bits, width, height)
        assert covered == _cy().tree_covered_text(
            raw.parent, raw.box_px, raw.bits, width, height
        ), path
        lists_seen += bool(items)
        webs_seen += bool(pages)
        covers_seen += bool(covered)
    assert lists_seen and webs_seen and covers_seen  # the corpus exercises all three
