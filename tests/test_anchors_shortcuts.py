"""The anchors' shortcuts leave the anchors as they were.

- ``pixel_line_ink`` (the underlines' thin-line pixels): both twins, and what the eight OpenCV
  passes it replaces gave, on random images and corpus frames;
- :func:`anchors._saturated` against a labelling of the whole opened colour mask (what it did
  before it read the components off their outer borders);
- :class:`anchors._Texture`'s flat pixels, counted box by box, against an integral image of
  the whole copy's;
- :func:`anchors._median` against ``np.median``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import cv2
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import example, given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from perception import fastpath
from perception.pixel import anchors, decode_frame
from perception.types import BoxPx

KERNEL = np.ones((3, 3), np.uint8)


def _corpus_frames(corpus: Path, n: int) -> list[Path]:
    """``n`` screens spread over the corpus index (the rows with an image on disk)."""
    rows = [json.loads(line) for line in (corpus / "index.jsonl").read_text().splitlines()]
    shots = sorted(
        p for p in (corpus / r["path"] / r["image"] for r in rows if r.get("image")) if p.is_file()
    )
    step = max(1, len(shots) // n)
    return shots[::step][:n]


def _smalls(corpus: Path, n: int) -> list[npt.NDArray[np.uint8]]:
    return [anchors._small(decode_frame(p.read_bytes()), 0.5) for p in _corpus_frames(corpus, n)]


# --- pixel_line_ink ----------------------------------------------------------------------------


def _line_ink_by_opencv(
    g: npt.NDArray[np.uint8], d: int, step_min: int
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int32]]:
    """What ``_underlines`` computed before the kernel: saturating differences with the rows
    ``d`` above and below, the smaller of each pair, the larger of the two, a threshold and a
    row sum."""
    mid, above, below = g[d:-d], g[: -2 * d], g[2 * d :]
    step = cv2.max(
        cv2.min(cv2.subtract(mid, above), cv2.subtract(mid, below)),
        cv2.min(cv2.subtract(above, mid), cv2.subtract(below, mid)),
    )
    _, ink = cv2.threshold(step, step_min - 1, 1, cv2.THRESH_BINARY)
    counts = cv2.reduce(ink, 1, cv2.REDUCE_SUM, dtype=cv2.CV_32S).ravel()
    return ink, counts


grays = arrays(
    np.uint8, st.tuples(st.integers(0, 30), st.integers(0, 40)), elements=st.integers(0, 255)
)


@settings(max_examples=300, deadline=None)
@given(gray=grays, d=st.integers(1, 6), step_min=st.integers(1, 255))
def test_line_ink_twins_agree_with_opencv(
    gray: npt.NDArray[np.uint8], d: int, step_min: int
) -> None:
    """Any image, including ones with no row between ``d`` and ``H - d`` or no column."""
    got = [mod.pixel_line_ink(gray, d, step_min) for mod in fastpath.available().values()]
    n = max(0, gray.shape[0] - 2 * d)
    for ink, counts in got:
        assert ink.dtype == np.uint8 and ink.shape == (n, gray.shape[1])
        assert counts.dtype == np.int32 and counts.shape == (n,)
        assert np.array_equal(ink, got[0][0]) and np.array_equal(counts, got[0][1])
    if n and gray.shape[1]:
        want_ink, want_counts = _line_ink_by_opencv(gray, d, step_min)
        assert np.array_equal(got[0][0], want_ink)
        assert np.array_equal(got[0][1], want_counts)


def test_line_ink_marks_a_thin_line_either_way(fastpath_impl: ModuleType) -> None:
    """A dark line on white and a light one on black stand out; an edge (the same colour on
    one side) and a shallow line do not."""
    gray = np.full((20, 10), 255, np.uint8)
    gray[5] = 0  # dark line
    gray[12:] = 0  # an edge from row 12 down, then black
    gray[16] = 200  # light line on black
    gray[9] = 240  # too shallow: 15 under the white
    ink, counts = fastpath_impl.pixel_line_ink(gray, 2, 25)
    assert np.flatnonzero(counts).tolist() == [5 - 2, 16 - 2]
    assert counts.tolist()[3] == 10 and ink[3].all()


def test_line_ink_refuses_bad_input() -> None:
    with pytest.raises(ValueError):
        fastpath.line_ink(np.zeros((4, 4, 3), np.uint8), 1, 25)
    with pytest.raises(ValueError):
        fastpath.line_ink(np.zeros((4, 4), np.int16), 1, 25)
    with pytest.raises(ValueError):
        fastpath.line_ink(np.zeros((4, 4), np.uint8), 0, 25)
    for step_min in (0, 256):
        with pytest.raises(ValueError):
            fastpath.line_ink(np.zeros((4, 4), np.uint8), 1, step_min)


def test_line_ink_on_corpus_frames(corpus_dir: Path) -> None:
    """The band between the system bars of real screens, as ``_underlines`` passes it."""
    lines = 0
    for small in _smalls(corpus_dir, 16):
        gray = cv2.cvtColor(small, cv2.COLOR_BGR2GRAY)
        band = gray[30:-30]
        d = max(2, round(0.006 * gray.shape[1]))
        want = _line_ink_by_opencv(band, d, anchors.FIELD_LINE_STEP)
        ink, counts = fastpath.line_ink(band, d, anchors.FIELD_LINE_STEP)
        assert np.array_equal(ink, want[0]) and np.array_equal(counts, want[1])
        lines += int((counts >= 0.3 * gray.shape[1]).any())
    assert lines  # the comparison saw long lines, not blank bands


# --- _saturated ----------------------------------------------------------------------------------


def _saturated_by_full_labelling(
    small: npt.NDArray[np.uint8], h: int, w: int
) -> list[tuple[anchors.PixelKind, BoxPx, float]]:
    """The reference: the whole colour mask opened and labelled at once, the same rules (no
    bars, so every one is a button), in reading order."""
    mask = cv2.morphologyEx(anchors._colour_mask(small), cv2.MORPH_OPEN, KERNEL)
    _, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    out = []
    for x, y, cw, ch, area in sorted(stats[1:].tolist(), key=lambda s: (s[1], s[0], s[3], s[2])):
        if not (cw >= 0.08 * w and 0.015 * h <= ch <= 0.12 * h and cw >= 1.2 * ch):
            continue
        if area / float(cw * ch) >= 0.55:
            out.append(
                (
                    anchors.PixelKind.BUTTON,
                    BoxPx(x, y, x + cw, y + ch),
                    round(area / float(cw * ch), 3),
                )
            )
    return out


colour_scenes = st.lists(
    st.tuples(
        st.integers(-10, 120),
        st.integers(-10, 90),
        st.integers(1, 60),
        st.integers(1, 14),
        st.sampled_from(["fill", "ring", "comb"]),
    ),
    min_size=0,
    max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(scene=colour_scenes, seed=st.integers(0, 2**32 - 1))
# Two components whose boxes start at one corner (CI, 2026-12-07): the order was the tracing's.
@example(scene=[(0, 0, 1, 1, "fill")] * 4 + [(-4, -5, 19, 12, "ring")], seed=0)
def test_saturated_equals_a_full_labelling_on_random_scenes(
    scene: list[tuple[int, int, int, int, str]], seed: int
) -> None:
    """Coloured bars, rings (a bar inside a ring's hole is its own component) and combs (a
    sparse fill) anywhere on a 120 x 90 copy, cut by its edges, with coloured specks."""
    rng = np.random.default_rng(seed)
    small = np.full((90, 120, 3), 245, np.uint8)
    small[rng.random((90, 120)) < 0.01] = (30, 60, 220)
    for x, y, cw, ch, kind in scene:
        colour = (200, 90, 20)
        if kind == "fill":
            cv2.rectangle(small, (x, y), (x + cw, y + ch), colour, -1)
        elif kind == "ring":
            cv2.rectangle(small, (x, y), (x + cw, y + ch), colour, 3)
            cv2.rectangle(small, (x + 6, y + 6), (x + cw - 6, y + 8), colour, -1)
        else:
            for cx in range(x, x + cw, 4):
                cv2.rectangle(small, (cx, y), (cx + 2, y + ch), colour, -1)
            cv2.rectangle(small, (x, y), (x + cw, y + 2), colour, -1)
    h, w = small.shape[:2]
    assert anchors._saturated(small, [], h, w) == _saturated_by_full_labelling(small, h, w)


def test_saturated_equals_a_full_labelling_on_corpus_frames(corpus_dir: Path) -> None:
    found = 0
    for small in _smalls(corpus_dir, 24):
        h, w = small.shape[:2]
        got = anchors._saturated(small, [], h, w)
        assert got == _saturated_by_full_labelling(small, h, w)
        found += len(got)
    assert found  # the comparison saw coloured tabs and buttons


# --- _Texture ------------------------------------------------------------------------------------


def _flat_by_integral(gray: npt.NDArray[np.uint8], box: BoxPx) -> int:
    """The reference: an integral image of the whole copy's flat pixels, four reads a box."""
    spread = cv2.morphologyEx(gray, cv2.MORPH_GRADIENT, KERNEL)
    _, mask = cv2.threshold(spread, anchors.FLAT_RANGE, 1, cv2.THRESH_BINARY_INV)
    f = cv2.integral(mask, sdepth=cv2.CV_32S)
    left, top, right, bottom = box
    return int(f[bottom, right] - f[top, right] - f[bottom, left] + f[top, left])


def _random_box(rng: np.random.Generator, h: int, w: int) -> BoxPx:
    """A box of at least one pixel inside an ``h`` by ``w`` copy."""
    left, right = sorted(rng.integers(0, w, 2).tolist())
    top, bottom = sorted(rng.integers(0, h, 2).tolist())
    return BoxPx(left, top, right + 1, bottom + 1)


def test_texture_flat_counts_equal_an_integral_image(corpus_dir: Path) -> None:
    """Counted box by box (:func:`fastpath.flat_count`): the counts of the whole copy's
    morphological gradient, boxes at the copy's edges included, and the same picture
    verdicts."""
    rng = np.random.default_rng(23)
    for small in _smalls(corpus_dir, 8):
        gray = cv2.cvtColor(small, cv2.COLOR_BGR2GRAY)
        h, w = gray.shape
        texture = anchors._Texture(small, gray)
        edge_boxes = [BoxPx(0, 0, w, h), BoxPx(0, 0, 5, 7), BoxPx(w - 9, h - 4, w, h)]
        boxes = [*edge_boxes, *(_random_box(rng, h, w) for _ in range(40))]
        for box in boxes:
            assert texture._flat_in(box) == (_flat_by_integral(gray, box), box.area), box
        for box in boxes:
            if box.width > 2 and box.height > 2:
                band, flat = texture._band(box, anchors.PICTURE_MARGIN)
                inner = _flat_by_integral(gray, box)
                ring = band.area - box.area
                want = 1.0 if ring <= 0 else (_flat_by_integral(gray, band) - inner) / ring
                assert flat == want, box


# --- _median -------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    values=arrays(np.uint8, st.tuples(st.integers(1, 9), st.integers(1, 9), st.integers(1, 3))),
    channel=st.integers(0, 2),
)
def test_median_is_numpy_median(values: npt.NDArray[np.uint8], channel: int) -> None:
    """Odd and even counts, whole arrays and strided views (one channel of a BGR crop)."""
    view = values[..., min(channel, values.shape[2] - 1)]
    for a in (values, view, view[::2], values.ravel()):
        got = anchors._median(a)
        assert isinstance(got, float) and got == float(np.median(a))
