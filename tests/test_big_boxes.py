"""``fastpath.big_boxes``: the page-wide boxes among a screen's rows (a full-screen ad's view),
the same on both twins and as the numpy expression it replaced."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from perception import fastpath

IMPLS = fastpath.available()
_EDGE = st.integers(-(2**31), 2**31 - 1)


def _reference(boxes: np.ndarray, least: float) -> list[int]:
    edges = boxes.astype(np.float64)
    width, height = edges[:, 2] - edges[:, 0], edges[:, 3] - edges[:, 1]
    return list(np.flatnonzero((width > 0) & (height > 0) & (width * height >= least)).tolist())


@given(
    rows=st.lists(st.tuples(_EDGE, _EDGE, _EDGE, _EDGE) | st.tuples(
        st.integers(-5, 40), st.integers(-5, 40), st.integers(-5, 40), st.integers(-5, 40)
    ), max_size=30),
    least=st.floats(0.0, 2.0**70) | st.sampled_from([0.0, 1.0, 0.6 * 1080 * 2400, 2.0**63]),
)
@settings(max_examples=200, deadline=None)
def test_big_boxes_twins_agree_with_the_reference(
    rows: list[tuple[int, int, int, int]], least: float
) -> None:
    boxes = np.array(rows, dtype=np.int32).reshape(-1, 4)
    expected = _reference(boxes, least)
    for mod in IMPLS.values():
        assert mod.fusion_big_boxes(boxes, least) == expected


def test_big_boxes(fastpath_impl: ModuleType) -> None:
    boxes = np.array(
        [[0, 0, 10, 10], [0, 0, 10, 9], [10, 0, 0, 10], [-10, -10, 0, 0], [0, 0, 0, 100]],
        dtype=np.int32,
    )
    assert fastpath_impl.fusion_big_boxes(boxes, 100.0) == [0, 3]
    assert fastpath_impl.fusion_big_boxes(np.zeros((0, 4), np.int32), 1.0) == []
    assert fastpath.big_boxes([[0, 0, 2, 2]], 4) == [0]
    with pytest.raises(ValueError):
        fastpath.big_boxes([[0, 0, 2]], 1.0)
