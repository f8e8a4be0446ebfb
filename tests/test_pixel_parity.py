"""Pixel kernels: the compiled and pure-Python twins agree exactly (and are right)."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from perception import fastpath

ref = fastpath.available()["python"]  # the reference semantics

box = st.tuples(
    st.integers(-50, 300), st.integers(-50, 300), st.integers(-10, 120), st.integers(-10, 120)
).map(lambda t: (t[0], t[1], t[0] + t[2], t[1] + t[3]))  # negative sizes included
boxes = st.lists(box, min_size=0, max_size=24).map(
    lambda b: np.array(b, dtype=np.int32).reshape(-1, 4)
)

DEGENERATE = [
    np.zeros((0, 4), np.int32),
    np.array([[0, 0, 0, 0]], np.int32),  # zero area
    np.array([[0, 0, 10, 10], [0, 0, 10, 10]], np.int32),  # identical (tie by index)
    np.array([[0, 0, 100, 100], [10, 10, 20, 20]], np.int32),  # nested
    np.array([[0, 0, 10, 10], [10, 0, 20, 10]], np.int32),  # touching
    np.array([[-30, -30, -10, -10], [-20, -20, 5, 5]], np.int32),  # negative coordinates
    np.array([[5, 5, 0, 0], [0, 0, 5, 5]], np.int32),  # inverted box
]


def _order(b: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.lexsort((b[:, 0], b[:, 1])), dtype=np.int32)


def _check_all(impl: ModuleType, a: np.ndarray, b: np.ndarray) -> None:
    np.testing.assert_array_equal(impl.pixel_iou_matrix(a, b), ref.pixel_iou_matrix(a, b))
    order = _order(a)
    for num in (0, 300, 500, 1000):
        np.testing.assert_array_equal(
            impl.pixel_nms(a, order, num, 1000), ref.pixel_nms(a, order, num, 1000)
        )
    np.testing.assert_array_equal(
        impl.pixel_merge_blocks(a, order, 10, -10, 30, 10),
        ref.pixel_merge_blocks(a, order, 10, -10, 30, 10),
    )
    for slack in (0, 4):
        np.testing.assert_array_equal(
            impl.pixel_containing(a, b, slack), ref.pixel_containing(a, b, slack)
        )


@pytest.mark.parametrize("a", DEGENERATE, ids=lambda a: f"n{len(a)}")
def test_degenerate_inputs_agree(fastpath_impl: ModuleType, a: np.ndarray) -> None:
    _check_all(fastpath_impl, a, a)
    _check_all(fastpath_impl, a, DEGENERATE[3])


@settings(max_examples=60, deadline=None)
@given(a=boxes, b=boxes)
def test_random_boxes_agree(a: np.ndarray, b: np.ndarray) -> None:
    for impl in fastpath.available().values():
        _check_all(impl, a, b)


@settings(max_examples=60, deadline=None)
@given(
    profile=st.lists(st.integers(0, 5), min_size=0, max_size=80),
    ink_min=st.integers(1, 3),
    gap=st.integers(0, 12),
)
def test_split_runs_agree(profile: list[int], ink_min: int, gap: int) -> None:
    prof = np.array(profile, dtype=np.int32)
    want = ref.pixel_split_runs(prof, ink_min, gap)
    for impl in fastpath.available().values():
        got = impl.pixel_split_runs(prof, ink_min, gap)
        assert got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_iou_values(fastpath_impl: ModuleType) -> None:
    a = np.array([[0, 0, 10, 10]], np.int32)
    b = np.array([[5, 0, 15, 10], [10, 0, 20, 10], [0, 0, 10, 10]], np.int32)
    got = fastpath_impl.pixel_iou_matrix(a, b)
    np.testing.assert_array_equal(got, [[50 / 150, 0.0, 1.0]])


def test_nms_prefers_score_then_index(fastpath_impl: ModuleType) -> None:
    b = np.array([[0, 0, 10, 10], [0, 0, 10, 10], [1, 1, 11, 11], [50, 50, 60, 60]], np.int32)
    order = np.array([1, 0, 2, 3], np.int32)  # box 1 scores best
    keep = fastpath_impl.pixel_nms(b, order, 500, 1000)
    assert keep.tolist() == [0, 1, 0, 1]


def test_merge_blocks_mobile_agent_rule(fastpath_impl: ModuleType) -> None:
    # Two wrapped lines of one paragraph, a far line, and a right-shifted line.
    b = np.array(
        [[10, 100, 400, 140], [12, 150, 380, 190], [10, 400, 300, 440], [200, 200, 400, 240]],
        np.int32,
    )
    groups = fastpath_impl.pixel_merge_blocks(b, _order(b), 10, -10, 30, 10)
    assert groups.tolist() == [0, 0, 2, 1]


def test_split_runs_splits_wide_gaps_only(fastpath_impl: ModuleType) -> None:
    prof = np.array([1, 1, 0, 1, 1, 0, 0, 0, 0, 0, 2, 2, 0], np.int32)
    got = fastpath_impl.pixel_split_runs(prof, 1, 3)
    assert got.tolist() == [[0, 5], [10, 12]]


def test_containing_picks_smallest_then_lowest_index(fastpath_impl: ModuleType) -> None:
    inner = np.array([[20, 20, 30, 30], [500, 500, 510, 510]], np.int32)
    outer = np.array([[0, 0, 100, 100], [10, 10, 50, 50], [10, 10, 50, 50]], np.int32)
    assert fastpath_impl.pixel_containing(inner, outer, 0).tolist() == [1, -1]


def test_wrappers_validate_and_normalise() -> None:
    with pytest.raises(ValueError):
        fastpath.pixel_iou([[1, 2, 3]], [[0, 0, 1, 1]])
    with pytest.raises(ValueError):
        fastpath.pixel_nms([[0, 0, 1, 1]], [0.5, 0.4])
    keep = fastpath.pixel_nms([[0, 0, 10, 10], [0, 0, 10, 10]], [0.1, 0.9], 0.5)
    assert keep.tolist() == [False, True]
    assert fastpath.pixel_iou([], [[0, 0, 1, 1]]).shape == (0, 1)
    assert fastpath.split_runs([], ink_min=1, gap_min_px=2).shape == (0, 2)
