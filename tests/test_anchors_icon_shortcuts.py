"""The icon pass's shortcut leaves the anchors as they were.

- :func:`anchors._least_pixels`: no component of a dilated edge map has fewer pixels than it
  says, so an icon it finds dense for sure is one the labelling finds dense too; and the icon
  pass, which labels only the others, equals a labelling of the whole map on random maps.
"""

from __future__ import annotations

import cv2
import numpy as np
import numpy.typing as npt
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays
from test_pixel_corpus import _icons_by_full_labelling

from perception.pixel import anchors

KERNEL = np.ones((3, 3), np.uint8)

sparse_maps = st.tuples(st.integers(1, 60), st.integers(1, 60), st.integers(0, 2**32 - 1)).map(
    lambda a: (np.random.default_rng(a[2]).random((a[0], a[1])) < 0.04).astype(np.uint8) * 255
)
"""Canny-like maps: a few scattered edge pixels, as many shapes as sizes, frame edges included."""

dense_maps = arrays(
    np.uint8, st.tuples(st.integers(1, 40), st.integers(1, 40)), elements=st.sampled_from([0, 255])
)
"""Maps half edge pixels: components that merge, run off every edge, hold holes."""


def _dilated(canny: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    out: npt.NDArray[np.uint8] = cv2.dilate(canny, KERNEL)
    return out


def _check_bound(edges: npt.NDArray[np.uint8]) -> None:
    h, w = edges.shape
    _, _, stats, _ = cv2.connectedComponentsWithStats(edges, connectivity=8)
    for x, y, cw, ch, area in stats[1:].tolist():
        assert area >= anchors._least_pixels(x, y, cw, ch, h, w), (x, y, cw, ch, area)


@settings(max_examples=300, deadline=None)
@given(canny=sparse_maps)
def test_least_pixels_bounds_every_component_of_a_sparse_map(canny: npt.NDArray[np.uint8]) -> None:
    _check_bound(_dilated(canny))


@settings(max_examples=300, deadline=None)
@given(canny=dense_maps)
def test_least_pixels_bounds_every_component_of_a_dense_map(canny: npt.NDArray[np.uint8]) -> None:
    _check_bound(_dilated(canny))


def test_least_pixels_is_three_a_column_or_row_inside_and_one_at_the_edges() -> None:
    # One square in the middle of a 20 x 20 map: 9 pixels, 3 a column and 3 a row.
    assert anchors._least_pixels(5, 5, 3, 3, 20, 20) == 9
    # A horizontal stroke 3 rows tall: 3 a column.
    assert anchors._least_pixels(2, 4, 12, 3, 20, 20) == 36
    # Touching the top row: a cut square may leave one pixel a column; the rows still hold 3.
    assert anchors._least_pixels(2, 0, 12, 2, 20, 20) == 12
    # In the corner: one a column and one a row.
    assert anchors._least_pixels(0, 0, 5, 4, 20, 20) == 5


shapes_drawn = st.lists(
    st.tuples(
        st.sampled_from(["square", "diagonal"]),
        st.integers(0, 80),
        st.integers(0, 80),
        st.integers(3, 60),
        st.integers(1, 3),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=200, deadline=None)
@given(shapes=shapes_drawn, seed=st.integers(0, 2**32 - 1))
def test_icons_equal_a_full_labelling_on_random_maps(
    shapes: list[tuple[str, int, int, int, int]], seed: int
) -> None:
    """Outlined squares and diagonal strokes of any size and width (a long thin diagonal falls
    under the density floor), with scattered specks, anywhere on a 100 x 100 map, cut by its
    edges: the icon pass finds what labelling all of it finds."""
    canny = (np.random.default_rng(seed).random((100, 100)) < 0.002).astype(np.uint8) * 255
    for kind, x, y, side, stroke in shapes:
        if kind == "square":
            cv2.rectangle(canny, (x, y), (x + side, y + side), 255, stroke)
        else:
            cv2.line(canny, (x, y), (x + side, y + side), 255, stroke)
    edges = _dilated(canny)
    contours, boxes, outer = anchors._edge_shapes(edges)
    found = {tuple(b) for _, b, _ in anchors._icons(edges, contours, boxes, outer, 100)}
    assert found == _icons_by_full_labelling(edges, edges.shape[1])


def test_a_long_thin_diagonal_is_labelled_and_left_out() -> None:
    """The density floor still drops what it dropped: a one-pixel diagonal 60 long, dilated,
    covers 0.07 of its box, too little to skip the labelling on the bound alone."""
    canny = np.zeros((100, 100), np.uint8)
    cv2.line(canny, (20, 20), (79, 79), 255, 1)
    edges = _dilated(canny)
    contours, boxes, outer = anchors._edge_shapes(edges)
    assert anchors._least_pixels(19, 19, 62, 62, 100, 100) / (62 * 62) < anchors.ICON_DENSITY_MIN
    assert anchors._icons(edges, contours, boxes, outer, 100) == []
    assert _icons_by_full_labelling(edges, edges.shape[1]) == set()
