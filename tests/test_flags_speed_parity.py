"""The frame flags' and the fusion probe's faster paths give what the slower ones gave.

- ``_percentile`` of a ``_histogram`` is ``np.percentile`` (linear), bit for bit;
- the probe's cell statistics from integral images are the reductions over a reshaped copy
  (the content mask and the thumbnail, bit for bit);
- ``_room_for_dim_rest`` is a necessary condition of the surface rules' dimmed rest: it never
  turns away a box whose rest is dim enough.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import example, given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from perception.errors import InputError
from perception.fusion.crossval import CELL_PX, FLAT_STD, FrameProbe
from perception.pixel import flags
from perception.pixel.flags import SIGNATURE_SCALE

QUANTILES = st.sampled_from([0.0, 0.1, 12.345, 50.0, 99.0, 99.5, 99.9, 100.0])


@settings(max_examples=300, deadline=None)
@given(
    arrays(np.uint8, st.tuples(st.integers(1, 40), st.integers(1, 60))),
    QUANTILES,
)
def test_histogram_percentile_is_numpys(cells: npt.NDArray[np.uint8], q: float) -> None:
    assert flags._percentile(flags._histogram(cells), q) == float(np.percentile(cells, q))


@settings(max_examples=200, deadline=None)
@given(
    arrays(np.uint8, st.tuples(st.integers(4, 40), st.integers(4, 40))),
    st.integers(0, 39),
    st.integers(0, 39),
    st.integers(1, 20),
    st.integers(1, 20),
)
def test_a_rest_by_histograms_is_the_masked_rest(
    cells: npt.NDArray[np.uint8], y: int, x: int, h: int, w: int
) -> None:
    """The rules take the rest's percentile from the content's histogram less the box's."""
    rest = np.ones(cells.shape, dtype=bool)
    rest[y : y + h, x : x + w] = False
    if not rest.any():
        return
    by_hist = flags._histogram(cells) - flags._histogram(cells[y : y + h, x : x + w])
    assert flags._percentile(by_hist, 99.9) == float(np.percentile(cells[rest], 99.9))


def test_the_percentile_rounds_as_numpys_past_the_midpoint() -> None:
    """Past the interpolation's midpoint numpy counts back from the upper value: 212.8865
    the other way round, 212.88649999999998 its way."""
    cells = np.array([100] * 2 + [255] * 13, np.uint8)
    assert flags._percentile(flags._histogram(cells), 12.345) == float(np.percentile(cells, 12.345))


def test_a_bar_is_looked_for_only_in_the_rows_there_are() -> None:
    rows = np.zeros((4, 3), np.float32)
    rows[0, 0] = 45.0
    assert flags._band_end(rows, 5) == flags._band_end(rows, 4) == 2  # ink, then blank rows


def test_a_histogram_of_nothing_has_no_percentile() -> None:
    empty = flags._histogram(np.zeros((0, 4), np.uint8))
    assert empty.sum() == 0
    with pytest.raises(InputError, match="no values"):
        flags._percentile(empty, 50)


def _dot_on_black() -> npt.NDArray[np.uint8]:
    """What hypothesis found in CI: one dim cell near the top of a black, three-cell-wide
    frame, so four rows lie above the black padding where the bottom bar's search looked at
    five (an IndexError)."""
    gray = np.zeros((72, 3), np.uint8)
    gray[3, 0] = 45
    return gray


@settings(max_examples=150, deadline=None)
@given(arrays(np.uint8, st.tuples(st.integers(1, 90), st.integers(1, 70))))
@example(_dot_on_black())
def test_probe_cells_are_the_reshaped_reductions(gray: npt.NDArray[np.uint8]) -> None:
    frame = np.repeat(np.repeat(gray, SIGNATURE_SCALE, axis=0), SIGNATURE_SCALE, axis=1)
    probe = FrameProbe(frame)
    assert np.array_equal(probe.gray, gray)
    rows, cols = gray.shape[0] // CELL_PX, gray.shape[1] // CELL_PX
    cells = gray[: rows * CELL_PX, : cols * CELL_PX].astype(np.float32)
    cells = cells.reshape(rows, CELL_PX, cols, CELL_PX)
    assert probe.thumb.dtype == np.float32
    assert np.array_equal(probe.thumb, cells.mean(axis=(1, 3)))
    exact = cells.astype(np.float64).var(axis=(1, 3)) > FLAT_STD**2
    assert np.array_equal(probe.content, exact)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_room_for_a_dim_rest_never_refuses_a_qualifying_box(data: st.DataObject) -> None:
    """Content whose rest around some box is dim but for the percentile's allowance: the
    pre-check must let the labelling look (it only spares it frames with no such box)."""
    h = data.draw(st.integers(8, 60))
    w = data.draw(st.integers(8, 60))
    share = data.draw(st.sampled_from([flags.MODAL_FLAT_DIM_CEILING, flags.MODAL_DIM_CEILING[1]]))
    white = data.draw(st.integers(150, 255))
    limit = math.floor(share * white)
    content = data.draw(arrays(np.uint8, (h, w), elements=st.integers(0, limit)))
    y0 = data.draw(st.integers(0, h - 1))
    x0 = data.draw(st.integers(0, w - 1))
    y1 = data.draw(st.integers(y0 + 1, h))
    x1 = data.draw(st.integers(x0 + 1, w))
    box = content[y0:y1, x0:x1]
    box[...] = data.draw(arrays(np.uint8, box.shape, elements=st.integers(0, white)))
    box.flat[0] = white
    rest = np.ones((h, w), dtype=bool)
    rest[y0:y1, x0:x1] = False
    n = int(rest.sum())
    if n < flags.MODAL_DIM_SHARE_MIN * h * w:
        return
    # Bright outliers in the rest, as many as its 99.9th percentile lets through.
    spots = np.flatnonzero(rest)
    allowance = n - 1 - math.floor(0.999 * (n - 1))
    picked = data.draw(st.lists(st.sampled_from(list(spots)), max_size=allowance, unique=True))
    content.flat[picked] = 255
    if float(np.percentile(content[rest], 99.9)) > share * float(content.max()):
        return
    assert flags._room_for_dim_rest(content, share)


def test_room_for_a_dim_rest_allows_the_percentiles_outliers() -> None:
    """A dim page with a panel in the middle and two bright specks in opposite corners of the
    rest (its 99.9th percentile lets a few of 3,000 cells through): room. Bright lines along
    all four edges: any box that leaves a rest leaves some of them in it; no room."""
    content = np.full((60, 60), 40, np.uint8)
    content[20:40, 20:40] = 230
    content[0, 0] = content[59, 59] = 255
    rest = np.ones(content.shape, dtype=bool)
    rest[20:40, 20:40] = False
    assert float(np.percentile(content[rest], 99.9)) <= 0.52 * 255
    assert flags._room_for_dim_rest(content, flags.MODAL_FLAT_DIM_CEILING)
    content[0, :] = content[-1, :] = content[:, 0] = content[:, -1] = 255
    assert not flags._room_for_dim_rest(content, flags.MODAL_FLAT_DIM_CEILING)
