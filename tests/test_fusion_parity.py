"""The fusion kernels give identical results in both twins (and the right ones)."""

from __future__ import annotations

import re
from dataclasses import FrozenInstanceError
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from perception import fastpath
from perception.fusion.candidates import Candidate, Draft
from perception.types import BoxPx, Channel, ElementFlag

IMPLS = fastpath.available()
needs_both = pytest.mark.skipif(len(IMPLS) < 2, reason="compiled extension not built")

coord = st.integers(min_value=-50, max_value=400)


def _boxes(min_size: int = 0, max_size: int = 12) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(
        np.int32, st.tuples(st.integers(min_size, max_size), st.just(4)), elements=coord
    )


def _call(name: str, *args: object) -> list[object]:
    return [getattr(mod, name)(*args) for mod in IMPLS.values()]


def _same(results: list[object]) -> None:
    first = results[0]
    for other in results[1:]:
        if isinstance(first, tuple):
            assert isinstance(other, tuple)
            for x, y in zip(first, other, strict=True):
                np.testing.assert_array_equal(x, y)
                assert x.dtype == y.dtype
        else:
            np.testing.assert_array_equal(first, other)
            assert first.dtype == other.dtype  # type: ignore[attr-defined]


DEGENERATE = np.array(
    [
        [0, 0, 10, 10],  # plain
        [0, 0, 0, 10],  # zero width
        [5, 5, 5, 5],  # point
        [10, 0, 20, 10],  # touches the first
        [2, 2, 8, 8],  # nested in the first
        [-30, -30, -10, -10],  # negative
        [20, 20, 10, 10],  # inverted
        [0, 0, 10, 10],  # duplicate of the first
    ],
    dtype=np.int32,
)


@given(a=_boxes(), b=_boxes())
@settings(max_examples=60, deadline=None)
def test_intersections_parity(a: np.ndarray, b: np.ndarray) -> None:
    _same(_call("fusion_intersections", a, b))


@given(a=_boxes(), b=_boxes())
@settings(max_examples=60, deadline=None)
def test_match_parity(a: np.ndarray, b: np.ndarray) -> None:
    _same(_call("fusion_match", a, b))


@given(
    gray=hnp.arrays(np.uint8, st.tuples(st.integers(1, 30), st.integers(1, 30))),
    boxes=_boxes(max_size=8),
)
@settings(max_examples=60, deadline=None)
def test_gray_stats_parity(gray: np.ndarray, boxes: np.ndarray) -> None:
    _same(_call("fusion_box_gray_stats", np.ascontiguousarray(gray), boxes))


@given(h=st.integers(0, 40), w=st.integers(0, 40), boxes=_boxes(max_size=8))
@settings(max_examples=60, deadline=None)
def test_paint_parity(h: int, w: int, boxes: np.ndarray) -> None:
    _same(_call("fusion_paint", h, w, boxes))


@needs_both
def test_degenerate_parity() -> None:
    empty = np.zeros((0, 4), dtype=np.int32)
    for a, b in [
        (DEGENERATE, DEGENERATE),
        (empty, DEGENERATE),
        (DEGENERATE, empty),
        (empty, empty),
    ]:
        _same(_call("fusion_intersections", a, b))
        _same(_call("fusion_match", a, b))
    gray = np.arange(400, dtype=np.uint8).reshape(20, 20)
    _same(_call("fusion_box_gray_stats", gray, DEGENERATE))
    _same(_call("fusion_paint", 15, 15, DEGENERATE))


def test_intersections_values(fastpath_impl: ModuleType) -> None:
    inter = fastpath_impl.fusion_intersections(DEGENERATE[:1], DEGENERATE)
    assert inter.tolist() == [[100, 0, 0, 0, 36, 0, 0, 100]]


def test_match_prefers_the_smallest_holder(fastpath_impl: ModuleType) -> None:
    tree = np.array([[0, 0, 100, 100], [0, 0, 50, 50], [0, 0, 50, 50], [200, 0, 300, 50]], np.int32)
    blocks = np.array(
        [[10, 10, 40, 40], [185, 0, 205, 20], [500, 500, 510, 510], [5, 5, 5, 9]], np.int32
    )
    best, share = fastpath_impl.fusion_match(tree, blocks)
    assert best.tolist() == [1, 3, -1, -1]
    assert share.tolist() == [1.0, 0.125, 0.0, 0.0]


def test_gray_stats_values(fastpath_impl: ModuleType) -> None:
    gray = np.zeros((10, 10), np.uint8)
    gray[0:2, 0:2] = 10
    stats = fastpath_impl.fusion_box_gray_stats(
        gray, np.array([[-5, -5, 2, 2], [3, 3, 3, 9]], np.int32)
    )
    assert stats.tolist() == [[4, 40, 400], [0, 0, 0]]


@given(
    gray=hnp.arrays(np.uint8, st.tuples(st.integers(1, 6), st.integers(1, 300))),
    left=st.integers(-4, 300),
    width=st.integers(0, 305),
)
@settings(max_examples=80, deadline=None)
def test_gray_stats_wide_rows(gray: np.ndarray, left: int, width: int) -> None:
    """Rows of every length through the compiled SIMD row loop (16-, 8-byte steps and tail),
    white pixels included (the largest squares), against plain numpy."""
    gray[:, ::7] = 255
    box = np.array([[left, 0, left + width, gray.shape[0]]], np.int32)
    part = gray[:, max(left, 0) : max(left + width, 0)].astype(np.int64)
    expected = [[part.size, int(part.sum()), int((part * part).sum())]]
    for mod in IMPLS.values():
        assert mod.fusion_box_gray_stats(gray, box).tolist() == expected


def test_wrappers_normalise_input() -> None:
    assert fastpath.intersections([], [[0, 0, 1, 1]]).shape == (0, 1)
    best, share = fastpath.match_blocks([(0, 0, 10, 10)], [(1, 1, 2, 2)])
    assert best.tolist() == [0] and share.tolist() == [1.0]
    assert fastpath.paint_boxes(3, 3, [(1, 1, 9, 9)]).sum() == 4
    with pytest.raises(ValueError):
        fastpath.intersections([[1, 2, 3]], [])
    with pytest.raises(ValueError):
        fastpath.box_gray_stats(np.zeros((2, 2, 3)), [])


# --- box rows and records (the candidate list's hot loops) ----------------------------------


int32s = st.integers(min_value=-(2**31), max_value=2**31 - 1)
box_rows_st = st.lists(
    st.tuples(int32s, int32s, int32s, int32s).map(lambda t: BoxPx(*t)), max_size=20
)


@given(rows=box_rows_st)
@settings(max_examples=80, deadline=None)
def test_box_rows_parity(rows: list[BoxPx]) -> None:
    results = _call("fusion_box_rows", rows)
    _same(results)
    assert results[0].shape == (len(rows), 4)
    assert results[0].tolist() == [list(r) for r in rows]


def test_box_rows_inputs(fastpath_impl: ModuleType) -> None:
    rows = [BoxPx(1, 2, 3, 4), (5, 6, 7, 8), [9, 10, 11, 12], (np.int64(1), 2, 3, 4)]
    assert fastpath_impl.fusion_box_rows(rows).tolist() == [
        [1, 2, 3, 4],
        [5, 6, 7, 8],
        [9, 10, 11, 12],
        [1, 2, 3, 4],
    ]
    assert fastpath_impl.fusion_box_rows(()).shape == (0, 4)
    with pytest.raises(ValueError):
        fastpath_impl.fusion_box_rows([(1, 2, 3, 4), (1, 2, 3)])
    with pytest.raises(ValueError):
        fastpath_impl.fusion_box_rows([(1, 2, 3, 4, 5)])
    with pytest.raises(OverflowError):
        fastpath_impl.fusion_box_rows([(0, 0, 2**31, 1)])
    with pytest.raises(OverflowError):
        fastpath_impl.fusion_box_rows([(-(2**31) - 1, 0, 1, 1)])


int64s = st.integers(min_value=-(2**63), max_value=2**63 - 1)
flag_items = st.one_of(int64s, st.sampled_from(list(ElementFlag)), st.booleans())


@given(flags=st.lists(flag_items, max_size=40))
@settings(max_examples=80, deadline=None)
def test_flag_bits_parity(flags: list[int]) -> None:
    results = _call("fusion_flag_bits", flags)
    _same(results)
    assert results[0].tolist() == [int(f) for f in flags]


def test_flag_bits_inputs(fastpath_impl: ModuleType) -> None:
    flags = [ElementFlag.CLICKABLE, ElementFlag.OCCLUDED | ElementFlag.DISABLED, 7, np.int64(9)]
    out = fastpath_impl.fusion_flag_bits(flags)
    assert out.dtype == np.int64
    assert out.tolist() == [
        int(ElementFlag.CLICKABLE), int(ElementFlag.OCCLUDED | ElementFlag.DISABLED), 7, 9
    ]
    assert fastpath_impl.fusion_flag_bits(()).shape == (0,)
    assert fastpath_impl.fusion_flag_bits((2**63 - 1, -(2**63))).tolist() == [2**63 - 1, -(2**63)]
    with pytest.raises(OverflowError):
        fastpath_impl.fusion_flag_bits([2**63])
    with pytest.raises(TypeError):
        fastpath_impl.fusion_flag_bits([1.5])
    with pytest.raises(TypeError):
        fastpath_impl.fusion_flag_bits(["1"])


@given(
    boxes=_boxes(max_size=30),
    bits=st.lists(st.integers(0, 7), min_size=30, max_size=30),
    low=st.integers(0, 40),
    high=st.integers(0, 200),
)
@settings(max_examples=120, deadline=None)
def test_line_boxes_parity(boxes: np.ndarray, bits: list[int], low: int, high: int) -> None:
    flags = np.array(bits[: len(boxes)], dtype=np.int64)
    results = _call("fusion_line_boxes", boxes, flags, 2, 300, 350, low, high)
    assert all(r == results[0] for r in results[1:])
    # What read_back_sample took before the kernel: numpy over the rows, a stable argsort.
    b = boxes.astype(np.int64)
    heights = b[:, 3] - b[:, 1]
    ok = (
        (heights >= low) & (heights <= high) & (b[:, 0] >= 0) & (b[:, 1] >= 0)
        & (b[:, 2] <= 300) & (b[:, 3] <= 350) & ((flags & 2) == 0)
        & ((b[:, 2] - b[:, 0]) * 2 >= heights * 3)
    )
    idx = np.flatnonzero(ok)
    assert results[0] == idx[np.argsort(-heights[idx], kind="stable")].tolist()


def test_line_boxes_inputs(fastpath_impl: ModuleType) -> None:
    boxes = np.array(
        [
            [0, 0, 100, 20],  # 20 tall
            [0, 0, 100, 40],  # 40 tall: first
            [0, 0, 100, 20],  # a tie: after the first 20-tall box
            [0, 0, 20, 20],  # too narrow for its height
            [0, 0, 100, 20],  # unreadable flag
            [-1, 0, 100, 20],  # outside the frame
            [0, 0, 100, 200],  # too tall
            [0, 2**31 - 1, 100, -(2**31)],  # inverted by 2**32: no int32 wrap-around
        ],
        dtype=np.int32,
    )
    flags = np.array([0, 0, 0, 0, 2, 0, 0, 0], dtype=np.int64)
    assert fastpath_impl.fusion_line_boxes(boxes, flags, 2, 300, 300, 12, 60) == [1, 0, 2]
    assert fastpath_impl.fusion_line_boxes(boxes[:0], flags[:0], 2, 300, 300, 12, 60) == []
    with pytest.raises(ValueError):
        fastpath_impl.fusion_line_boxes(boxes, flags[:3], 2, 300, 300, 12, 60)


def _record_rows() -> st.SearchStrategy[list[Draft]]:
    draft = st.builds(
        Draft,
        source=st.sampled_from(list(Channel)),
        kind=st.sampled_from(["btn", "text", "icon"]),
        text=st.text(max_size=12),
        box_px=st.tuples(coord, coord, coord, coord).map(lambda t: BoxPx(*t)),
        confidence=st.floats(0.0, 1.0),
        flags=st.sampled_from([ElementFlag.NONE, ElementFlag.CLICKABLE, ElementFlag(2049)]),
        origin=st.sampled_from(["tree", "ocr", "anchor"]),
        tree_id=st.none() | st.integers(1, 500),
        more=st.integers(0, 9),
        listed=st.booleans(),
    )
    return st.lists(draft, max_size=15)


CANDIDATE_SLOTS = tuple(Candidate.__dict__[name] for name in ("id", *Draft._fields))


@given(drafts=_record_rows(), start=st.integers(-3, 1000))
@settings(max_examples=80, deadline=None)
def test_records_parity(drafts: list[Draft], start: int) -> None:
    ids = list(range(start, start + len(drafts)))
    expected = [Candidate(id=i, **d._asdict()) for i, d in zip(ids, drafts, strict=True)]
    for mod in IMPLS.values():
        out = mod.fusion_records(Candidate, CANDIDATE_SLOTS, ids, drafts)
        assert out == expected
        assert all(type(c) is Candidate for c in out)
        for c, e in zip(out, expected, strict=True):  # the very objects, not just equal ones
            assert all(getattr(c, f) is getattr(e, f) for f in ("source", "text", "box_px"))


def test_records_inputs(fastpath_impl: ModuleType) -> None:
    d = Draft(Channel.TREE, "btn", "OK", BoxPx(0, 0, 1, 1), 0.5, ElementFlag.NONE, "tree")
    (c,) = fastpath_impl.fusion_records(Candidate, CANDIDATE_SLOTS, [7], [list(d)])
    assert c == Candidate(id=7, **d._asdict())
    with pytest.raises(FrozenInstanceError):
        c.text = "x"  # type: ignore[misc]
    assert fastpath_impl.fusion_records(Candidate, CANDIDATE_SLOTS, [], []) == []
    with pytest.raises(ValueError):
        fastpath_impl.fusion_records(Candidate, CANDIDATE_SLOTS, [1, 2], [d])
    with pytest.raises(ValueError):
        fastpath_impl.fusion_records(Candidate, CANDIDATE_SLOTS, [1], [tuple(d)[:-1]])
    with pytest.raises(TypeError):
        fastpath_impl.fusion_records(Candidate, (*CANDIDATE_SLOTS[:-1], "listed"), [1], [d])


@given(drafts=_record_rows())
@settings(max_examples=80, deadline=None)
def test_rows_parity(drafts: list[Draft]) -> None:
    columns = tuple(list(col) for col in zip(*drafts, strict=True)) if drafts else ((),) * 10
    for mod in IMPLS.values():
        out = mod.fusion_rows(Draft, columns)
        assert out == drafts
        assert all(type(d) is Draft for d in out)
        assert all(
            a is b for d, e in zip(out, drafts, strict=True) for a, b in zip(d, e, strict=True)
        )


def test_rows_inputs(fastpath_impl: ModuleType) -> None:
    assert fastpath_impl.fusion_rows(Draft, ()) == []
    out = fastpath_impl.fusion_rows(BoxPx, ([1, 2], (3, 4), [5, 6], [7, 8]))
    assert out == [BoxPx(1, 3, 5, 7), BoxPx(2, 4, 6, 8)] and out[0].bottom == 7
    with pytest.raises(ValueError):
        fastpath_impl.fusion_rows(BoxPx, ([1, 2], [3], [5, 6], [7, 8]))
    with pytest.raises(TypeError):
        fastpath_impl.fusion_rows(Candidate, ([1],))
    with pytest.raises(TypeError):
        fastpath_impl.fusion_records(Draft, CANDIDATE_SLOTS, [], [])


TEXTS = ["", " ", "\u00a0\t", "OK", " x ", "\u3000", "跳过", "\u2028"]


@given(
    gray=hnp.arrays(np.uint8, st.tuples(st.integers(1, 24), st.integers(1, 24))),
    content=hnp.arrays(np.bool_, st.tuples(st.integers(0, 6), st.integers(0, 6))),
    boxes=_boxes(max_size=14),
    data=st.data(),
    scale=st.integers(1, 5),
    cell=st.integers(1, 40),
)
@settings(max_examples=100, deadline=None)
def test_pixel_check_parity(
    gray: np.ndarray,
    content: np.ndarray,
    boxes: np.ndarray,
    data: st.DataObject,
    scale: int,
    cell: int,
) -> None:
    n = len(boxes)
    flags = np.array(
        data.draw(st.lists(st.sampled_from([0, 1, 2048, 2049]), min_size=n, max_size=n)),
        dtype=np.int64,
    )
    texts = data.draw(st.lists(st.sampled_from(TEXTS), min_size=n, max_size=n))
    cells = np.ascontiguousarray(content).view(np.uint8)
    results = [
        mod.fusion_pixel_check(
            np.ascontiguousarray(gray), cells, boxes, flags, texts, 2048, scale, cell
        )
        for mod in IMPLS.values()
    ]
    for index, stats, covered, total in results:
        # The reference: the separate kernels, as crossval used them before the fused pass.
        ref = IMPLS["python"]
        visible = (flags & 2048) == 0
        labelled = [
            k
            for k in range(n)
            if visible[k]
            and boxes[k, 2] > boxes[k, 0]
            and boxes[k, 3] > boxes[k, 1]
            and texts[k].strip()
        ]
        assert index.tolist() == labelled and index.dtype == np.int32
        expected = ref.fusion_box_gray_stats(np.ascontiguousarray(gray), boxes[labelled] // scale)
        np.testing.assert_array_equal(stats, expected.reshape(-1, 3))
        assert stats.dtype == np.int64
        painted = ref.fusion_paint(
            content.shape[0], content.shape[1], (boxes[visible] + cell // 2) // cell
        )
        assert covered == int((painted.astype(bool) & content).sum())
        assert total == int(content.sum())
    first = results[0]
    for other in results[1:]:
        assert first[2:] == other[2:]
        _same([first[0], other[0]])
        _same([first[1], other[1]])


def test_pixel_check_inputs(fastpath_impl: ModuleType) -> None:
    gray = np.zeros((4, 4), np.uint8)
    content = np.ones((2, 2), np.uint8)
    boxes = np.array([[0, 0, 4, 4]], np.int32)
    flags = np.zeros(1, np.int64)
    with pytest.raises(ValueError):
        fastpath_impl.fusion_pixel_check(gray, content, boxes, flags, [], 2048, 4, 8)
    with pytest.raises(ValueError):
        fastpath_impl.fusion_pixel_check(gray, content, boxes, flags, ["a"], 2048, 0, 8)
    with pytest.raises(TypeError):
        fastpath_impl.fusion_pixel_check(gray, content, boxes, flags, [None], 2048, 4, 8)
    # A hidden element's text is never read.
    out = fastpath_impl.fusion_pixel_check(gray, content, boxes, flags + 2048, [None], 2048, 4, 8)
    assert out[0].tolist() == [] and out[2:] == (0, 4)


@given(
    gray=hnp.arrays(np.uint8, st.tuples(st.integers(1, 40), st.integers(1, 40))),
    boxes=_boxes(max_size=60),
    h=st.integers(0, 40),
    w=st.integers(0, 40),
)
@settings(max_examples=80, deadline=None)
def test_many_boxes_against_brute_force(
    gray: np.ndarray, boxes: np.ndarray, h: int, w: int
) -> None:
    """Past a dozen boxes the Python twins switch to whole-image sums: still the exact answer."""
    gh, gw = gray.shape
    stats, mask = [], np.zeros((h, w), np.uint8)
    for left, top, right, bottom in boxes.tolist():
        sub = gray[max(top, 0) : max(min(bottom, gh), 0), max(left, 0) : max(min(right, gw), 0)]
        sub = sub.astype(np.int64)
        stats.append([sub.size, int(sub.sum()), int((sub * sub).sum())])
        mask[max(top, 0) : max(min(bottom, h), 0), max(left, 0) : max(min(right, w), 0)] = 1
    for mod in IMPLS.values():
        got = mod.fusion_box_gray_stats(np.ascontiguousarray(gray), boxes)
        assert got.tolist() == (stats or np.zeros((0, 3), np.int64).tolist())
        np.testing.assert_array_equal(mod.fusion_paint(h, w, boxes), mask)


# Texts for the key and top-text kernels: digits of several scripts (\d is every Unicode decimal
# digit), whitespace to strip, long labels to cut.
DIGITS = "0123456789٣۵३੭๒໑༣၇០᠑0١"
key_text = st.text(
    alphabet=st.sampled_from([*DIGITS, " ", "\t", "\u3000", "a", "B", "跳", "é", "#", "_", "Ⅻ"]),
    max_size=50,
)


def _draft_rows(n_max: int = 15) -> st.SearchStrategy[list[Draft]]:
    draft = st.builds(
        Draft,
        source=st.sampled_from(list(Channel)),
        kind=st.sampled_from(["btn", "text", "icon"]),
        text=key_text,
        box_px=st.tuples(coord, st.integers(-5, 12), coord, coord).map(lambda t: BoxPx(*t)),
        confidence=st.just(0.5),
        flags=st.just(ElementFlag.NONE),
        origin=st.sampled_from(["tree", "ocr", "anchor", "vision"]),
    )
    return st.lists(draft, max_size=n_max)


@given(
    drafts=_draft_rows(),
    data=st.data(),
    width=st.integers(-3, 2000),
    height=st.integers(-3, 3000),
    grid=st.integers(1, 100),
    text_len=st.integers(0, 30),
)
@settings(max_examples=100, deadline=None)
def test_keys_parity(
    drafts: list[Draft], data: st.DataObject, width: int, height: int, grid: int, text_len: int
) -> None:
    norms = data.draw(st.lists(key_text, min_size=len(drafts), max_size=len(drafts)))
    boxes = np.array([d.box_px for d in drafts], dtype=np.int32).reshape(-1, 4)
    results = [
        mod.fusion_keys(drafts, boxes, norms, width, height, grid, text_len)
        for mod in IMPLS.values()
    ]
    w, h = max(width, 1), max(height, 1)
    expected = [
        (
            d.kind,
            t[:text_len],
            b.left * grid // w,
            b.top * grid // h,
            b.right * grid // w,
            b.bottom * grid // h,
        )
        for d, t, b in zip(drafts, norms, (d.box_px for d in drafts), strict=True)
    ]
    for out in results:
        assert out == expected
        assert all(type(v) is int for k in out for v in k[2:])


def test_keys_inputs(fastpath_impl: ModuleType) -> None:
    d = Draft(Channel.TREE, "btn", "OK", BoxPx(0, 0, 1, 1), 0.5, ElementFlag.NONE, "tree")
    one = np.array([[0, 0, 1, 1]], dtype=np.int32)
    assert fastpath_impl.fusion_keys([], np.zeros((0, 4), np.int32), [], 10, 10, 5, 3) == []
    with pytest.raises(ValueError):
        fastpath_impl.fusion_keys([d], one, [], 10, 10, 5, 3)
    with pytest.raises(ValueError):
        fastpath_impl.fusion_keys([d, d], one, ["a", "b"], 10, 10, 5, 3)
    with pytest.raises(ValueError):
        fastpath_impl.fusion_keys([d], one, ["a"], 10, 10, 5, -1)


@given(
    drafts=_draft_rows(40),
    limit=st.integers(1, 6),
    scan=st.integers(0, 50),
    width=st.integers(0, 45),
)
@settings(max_examples=150, deadline=None)
def test_top_texts_parity(drafts: list[Draft], limit: int, scan: int, width: int) -> None:
    boxes = np.array([d.box_px for d in drafts], dtype=np.int32).reshape(-1, 4)
    results = [
        mod.fusion_top_texts(drafts, boxes, Channel.PIXEL, "ocr", limit, scan, width)
        for mod in IMPLS.values()
    ]
    # The reference, spelled out: labelled drafts by (top, left, order), masked, cut, distinct.
    labelled = [
        (d.box_px.top, d.box_px.left, i)
        for i, d in enumerate(drafts)
        if d.text and (d.source is not Channel.PIXEL or d.origin == "ocr")
    ]
    seen: list[str] = []
    for _, _, i in sorted(labelled)[:scan]:
        t = re.sub(r"\d+", "#", drafts[i].text.strip())[:width]
        if t and t not in seen and len(seen) < limit:
            seen.append(t)
    for out in results:
        assert out == tuple(seen)


def test_top_texts_inputs(fastpath_impl: ModuleType) -> None:
    d = Draft(Channel.PIXEL, "text", " a12b3 ", BoxPx(0, 0, 1, 1), 0.5, ElementFlag.NONE, "ocr")
    one = np.array([[0, 0, 1, 1]], dtype=np.int32)
    f = fastpath_impl.fusion_top_texts
    assert f([d], one, Channel.PIXEL, "ocr", 3, 8, 40) == ("a#b#",)
    assert f([d._replace(origin="anchor")], one, Channel.PIXEL, "ocr", 3, 8, 40) == ()
    assert f([], np.zeros((0, 4), np.int32), Channel.PIXEL, "ocr", 3, 8, 40) == ()
    with pytest.raises(ValueError):
        f([d], one, Channel.PIXEL, "ocr", 0, 8, 40)
    with pytest.raises(ValueError):
        f([d, d], one, Channel.PIXEL, "ocr", 3, 8, 40)


_MASKED = st.text(
    alphabet=st.sampled_from("a 1\u0663\uff13\xb2\xbd\xa0\u3000\x85\t\u0e52é日"), max_size=10
)
"""Decimal digits of several scripts (ASCII, Arabic-Indic, fullwidth, Thai), digits that are
not decimal (superscript two, one half), and whitespace of several kinds at either end."""


@given(
    texts=st.lists(_MASKED, min_size=1, max_size=90),
    tops=st.lists(st.integers(0, 3), min_size=90, max_size=90),
    limit=st.integers(1, 8),
    scan=st.integers(0, 90),
)
@settings(max_examples=150, deadline=None)
def test_top_texts_masks_and_orders_as_the_reference(
    texts: list[str], tops: list[int], limit: int, scan: int
) -> None:
    """Many drafts on a few rows (ties on top and left, broken by draft order), texts whose
    digits are masked whatever their script: both twins give what re and a full sort give,
    and the masked texts are equal to (and hash as) the same text written plainly."""
    drafts = [
        Draft(Channel.TREE, "btn", t, BoxPx(0, tops[i], 5, tops[i] + 1), 0.5, ElementFlag.NONE,
              "tree")
        for i, t in enumerate(texts)
    ]
    boxes = np.array([d.box_px for d in drafts], dtype=np.int32).reshape(-1, 4)
    order = sorted((i for i, t in enumerate(texts) if t), key=lambda i: (tops[i], i))[:scan]
    seen: list[str] = []
    for i in order:
        t = re.sub(r"\d+", "#", texts[i].strip())[:40]
        if t and t not in seen and len(seen) < limit:
            seen.append(t)
    for mod in IMPLS.values():
        out = mod.fusion_top_texts(drafts, boxes, Channel.PIXEL, "ocr", limit, scan, 40)
        assert out == tuple(seen)
        assert [hash(t) for t in out] == [hash("".join(list(t))) for t in seen]


_TEXT = st.text(alphabet=st.sampled_from("ab c1日本\U0001f600ÉéΣσ"), max_size=20)


@needs_both
@settings(max_examples=300, deadline=None)
@given(_TEXT, _TEXT)
def test_edit_distance_twins_agree(a: str, b: str) -> None:
    results = _call("fusion_edit_distance", a, b)
    assert len(set(results)) == 1, results
    assert results[0] == _call("fusion_edit_distance", b, a)[0]  # symmetric


@pytest.mark.parametrize(
    ("a", "b", "d"),
    [("", "", 0), ("abc", "", 3), ("kitten", "sitting", 3), ("flaw", "lawn", 2),
     ("日本語", "日本", 1), ("\U0001f600x", "x", 1), ("same", "same", 0)],
)
def test_edit_distance_values(fastpath_impl: ModuleType, a: str, b: str, d: int) -> None:
    assert fastpath_impl.fusion_edit_distance(a, b) == d
    assert fastpath.edit_distance(a, b) == fastpath.edit_distance(b, a) == d
