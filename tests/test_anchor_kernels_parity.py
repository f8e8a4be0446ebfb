"""Kernels written for the anchors' speed give, in both twins, what the numpy code before them
gave, bit for bit.

- ``pixel_three_runs`` (the menu glyphs' first test, :func:`anchors._three_runs_down`) against
  a plain loop over each box's columns: random images and boxes, transposed views (the lying
  ⋯ is looked for in ``gray.T``), boxes running past the bottom row, and the seeds of corpus
  frames;
- ``pixel_flat_count`` (the flat pixels :class:`anchors._Texture` counts round icons) against
  OpenCV's morphological gradient of the whole image, thresholded, on random images and
  boxes, at the image's edges too.
- ``pixel_toggle_margin`` (the toggles' look at a control's margin) against the numpy and
  OpenCV calls it replaced: random crops and the corpus's candidates.
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from perception import fastpath
from perception.pixel import anchors, decode_frame
from perception.types import BoxPx


def _strokes(column: list[int], contrast_min: int) -> bool:
    """Three runs lighter, or three darker, than the middle of the column's extremes."""
    lo, hi = min(column), max(column)
    if hi - lo < contrast_min:
        return False
    above = [2 * v > lo + hi for v in column]
    for flag in (True, False):
        marks = [a == flag for a in above]
        starts = sum(1 for k, m in enumerate(marks) if m and (k == 0 or not marks[k - 1]))
        if starts == 3:
            return True
    return False


def _three_runs_by_loop(
    gray: npt.NDArray[np.uint8], seeds: npt.NDArray[np.int64], contrast_min: int
) -> list[bool]:
    out = []
    last = gray.shape[0] - 1
    for x0, y0, x1, y1 in seeds.tolist():
        rows = [min(y, last) for y in range(y0, y1)]
        quarters = (2, 1, 3) if x1 - x0 >= y1 - y0 else (2,)
        cols = [x0 + (x1 - x0) * q // 4 for q in quarters]
        out.append(all(_strokes([int(gray[r, c]) for r in rows], contrast_min) for c in cols))
    return out


@st.composite
def _image_and_boxes(draw: st.DrawFn) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]:
    h, w = draw(st.integers(1, 30)), draw(st.integers(1, 30))
    # Stripes make three strokes likely; noise on top makes them uneven.
    levels = draw(st.lists(st.sampled_from([0, 40, 128, 200, 255]), min_size=h, max_size=h))
    noise = draw(arrays(np.uint8, (h, w), elements=st.integers(0, 60)))
    gray = np.clip(np.array(levels, np.int16)[:, None] + noise - 30, 0, 255).astype(np.uint8)
    boxes = []
    for _ in range(draw(st.integers(0, 12))):
        x0 = draw(st.integers(0, w - 1))
        x1 = draw(st.integers(x0 + 1, w))
        y0 = draw(st.integers(0, h - 1))
        y1 = draw(st.integers(y0 + 1, h + 5))  # past the bottom: read as the last row
        boxes.append((x0, y0, x1, y1))
    return gray, np.array(boxes, dtype=np.int64).reshape(-1, 4)


@settings(max_examples=400, deadline=None)
@given(case=_image_and_boxes(), contrast=st.sampled_from([1, 30, 100]), transpose=st.booleans())
def test_three_runs_twins_agree_with_a_loop(
    case: tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]], contrast: int, transpose: bool
) -> None:
    gray, boxes = case
    if transpose:  # a strided view, as the lying glyph's search reads gray.T
        gray = gray.T
        boxes = boxes[(boxes[:, 2] <= gray.shape[1]) & (boxes[:, 1] < gray.shape[0])]
    want = _three_runs_by_loop(gray, boxes, contrast)
    for name, mod in fastpath.available().items():
        got = mod.pixel_three_runs(gray, boxes, contrast)
        assert got.dtype == np.uint8 and got.shape == (len(boxes),), name
        assert got.astype(bool).tolist() == want, name
    assert fastpath.three_runs(gray, boxes, contrast).tolist() == want


def test_three_runs_finds_the_dots() -> None:
    """A column of three dots passes; two dots, and three with too little contrast, do not."""
    gray = np.full((20, 10), 200, np.uint8)
    for top in (2, 8, 14):
        gray[top : top + 3, 3:6] = 20
    faint = np.where(gray == 20, 180, 200).astype(np.uint8)
    boxes = np.array([[3, 1, 6, 18], [3, 2, 6, 11]], np.int64)
    assert fastpath.three_runs(gray, boxes, 30).tolist() == [True, False]
    assert fastpath.three_runs(faint, boxes, 30).tolist() == [False, False]


@pytest.mark.parametrize(
    "boxes",
    [
        [[-1, 0, 2, 3]],  # left of the image
        [[0, 0, 11, 3]],  # past its right side
        [[2, 0, 2, 3]],  # no columns
        [[0, 3, 2, 3]],  # no rows
        [[0, -2, 2, 3]],  # above the image
        [[0, 0, 2]],  # not a box
    ],
)
def test_three_runs_refuses_boxes_outside(boxes: list[list[int]]) -> None:
    with pytest.raises(ValueError):
        fastpath.three_runs(np.zeros((8, 10), np.uint8), boxes, 30)


def test_three_runs_refuses_what_is_not_gray() -> None:
    with pytest.raises(ValueError):
        fastpath.three_runs(np.zeros((8, 10, 3), np.uint8), [[0, 0, 2, 3]], 30)
    with pytest.raises(ValueError):
        fastpath.three_runs(np.zeros((0, 10), np.uint8), [[0, 0, 2, 3]], 30)
    assert fastpath.three_runs(np.zeros((8, 10), np.uint8), [], 30).shape == (0,)


def _corpus_frames(corpus: Path, n: int) -> list[Path]:
    rows = [json.loads(line) for line in (corpus / "index.jsonl").read_text().splitlines()]
    shots = sorted(
        p for p in (corpus / r["path"] / r["image"] for r in rows if r.get("image")) if p.is_file()
    )
    return shots[:: max(1, len(shots) // n)][:n]


def test_three_runs_on_corpus_boxes(corpus_dir: Path) -> None:
    """Every small outer shape of real screens (upright and lying), as the glyphs seed them."""
    seen = 0
    for path in _corpus_frames(corpus_dir, 16):
        frame = decode_frame(path.read_bytes())
        gray = cv2.cvtColor(anchors._small(frame, 0.5), cv2.COLOR_BGR2GRAY)
        _, boxes, outer = anchors._edge_shapes(anchors._edge_map(gray))
        x, y, w, h = boxes[outer].T.astype(np.int64)
        keep = np.maximum(w, h) <= 0.08 * gray.shape[1]
        for image, seeds in (
            (gray, np.stack([x, y, x + w, y + h], axis=1)[keep]),
            (gray.T, np.stack([y, x, y + h, x + w], axis=1)[keep]),
        ):
            want = _three_runs_by_loop(image, seeds, 30)
            for mod in fastpath.available().values():
                assert mod.pixel_three_runs(image, seeds, 30).astype(bool).tolist() == want
            seen += sum(want)
    assert seen > 0  # some boxes passed: the comparison saw both answers


def _margin_before(
    patch: npt.NDArray[np.uint8], m: int, near_max: int, ink_min: int
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.uint8], int, int, tuple[int, int, int, int]]:
    """The toggles' look at a patch's margin as numpy and OpenCV took it before the kernel."""
    ring = np.concatenate((patch[:m:2, ::2].reshape(-1, 3), patch[-m::2, ::2].reshape(-1, 3)))
    bg = np.median(ring, axis=0)
    b, g, r = (float(v) for v in bg.astype(np.uint8))
    planes = cv2.split(cv2.absdiff(np.ascontiguousarray(patch), np.array([b, g, r, 0.0])))
    dist = cv2.max(cv2.max(planes[0], planes[1]), planes[2])
    inner = dist[m:-m, m:-m]
    near = np.count_nonzero(dist <= near_max) - np.count_nonzero(inner <= near_max)
    ink = dist >= ink_min
    inked = np.count_nonzero(ink) - np.count_nonzero(ink[m:-m, m:-m])
    box = cv2.boundingRect(ink.view(np.uint8))
    return bg, dist, int(near), int(inked), tuple(int(v) for v in box)  # type: ignore[return-value]


def _assert_margin_agrees(
    patch: npt.NDArray[np.uint8], m: int, near_max: int, ink_min: int
) -> None:
    want = _margin_before(patch, m, near_max, ink_min)
    for name, mod in fastpath.available().items():
        bg, dist, near, inked, box = mod.pixel_toggle_margin(patch, m, near_max, ink_min)
        assert bg.dtype == np.float64 and np.array_equal(bg, want[0]), name
        assert dist.dtype == np.uint8 and np.array_equal(dist, want[1]), name
        assert (int(near), int(inked), tuple(int(v) for v in box)) == want[2:], name
    got = fastpath.toggle_margin(patch, m, near_max, ink_min)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert got[2:] == want[2:]


@settings(max_examples=400, deadline=None)
@given(
    data=st.data(),
    m=st.integers(1, 6),
    thresholds=st.sampled_from([(16, 28), (0, 1), (40, 20), (255, 255)]),
    offset=st.tuples(st.integers(0, 2), st.integers(0, 2)),
)
def test_toggle_margin_twins_agree_with_numpy(
    data: st.DataObject, m: int, thresholds: tuple[int, int], offset: tuple[int, int]
) -> None:
    """Random patches (odd and even samples of the margin, flat and noisy), as crops of a
    larger frame (strided rows), with and without ink."""
    h = data.draw(st.integers(2 * m + 1, 2 * m + 14))
    w = data.draw(st.integers(2 * m + 1, 2 * m + 14))
    base = data.draw(st.tuples(*[st.integers(0, 255)] * 3))
    noise = data.draw(arrays(np.int16, (h + 2, w + 2, 3), elements=st.integers(-40, 40)))
    frame = np.clip(np.array(base, np.int16) + noise, 0, 255).astype(np.uint8)
    patch = frame[offset[0] : offset[0] + h, offset[1] : offset[1] + w]
    _assert_margin_agrees(patch, m, *thresholds)


def test_toggle_margin_with_no_ink() -> None:
    patch = np.full((12, 14, 3), 128, np.uint8)
    _assert_margin_agrees(patch, 3, 16, 28)
    assert fastpath.toggle_margin(patch, 3, 16, 28)[4] == (0, 0, 0, 0)


@pytest.mark.parametrize("m", [0, 5, 6])
def test_toggle_margin_refuses_a_margin_that_does_not_fit(m: int) -> None:
    with pytest.raises(ValueError):
        fastpath.toggle_margin(np.zeros((10, 12, 3), np.uint8), m, 16, 28)


def test_toggle_margin_on_corpus_controls(
    corpus_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The patches the toggles look at on real screens (every candidate, whatever it turns
    out to be), as :func:`toggles.classify` cuts them."""
    from perception.pixel import toggles

    seen: list[tuple[int, int, int, int]] = []
    real = toggles.classify

    def spy(pixels: npt.NDArray[np.uint8], box: BoxPx) -> object:
        seen.append(tuple(box))
        return real(pixels, box)

    monkeypatch.setattr(toggles, "classify", spy)
    looked = 0
    for path in _corpus_frames(corpus_dir, 40):
        frame = decode_frame(path.read_bytes())
        gray = cv2.cvtColor(anchors._small(frame, 0.5), cv2.COLOR_BGR2GRAY)
        edges = anchors._edge_map(gray)
        _, boxes, outer = anchors._edge_shapes(edges)
        seen.clear()
        toggles.find_toggles(frame.pixels, edges, boxes, outer, 0.5)
        fh, fw = frame.pixels.shape[:2]
        for left, top, right, bottom in seen:
            bw, bh = right - left, bottom - top
            switch = toggles.SWITCH_ASPECT[0] <= bw / max(1, bh) <= toggles.SWITCH_ASPECT[1] * 1.1
            share = toggles.SWITCH_MARGIN_SHARE if switch else toggles.MARGIN_SHARE
            m = max(3, round(share * min(bw, bh)))
            if left - m < 0 or top - m < 0 or right + m > fw or bottom + m > fh:
                continue
            patch = frame.pixels[top - m : bottom + m, left - m : right + m]
            _assert_margin_agrees(patch, m, 16, toggles.INK_DIFF)
            looked += 1
    assert looked >= 20


def _flat_by_gradient(gray: npt.NDArray[np.uint8], box: tuple[int, int, int, int], rng: int) -> int:
    spread = cv2.morphologyEx(gray, cv2.MORPH_GRADIENT, np.ones((3, 3), np.uint8))
    left, top, right, bottom = box
    return int(np.count_nonzero(spread[top:bottom, left:right] <= rng))


@settings(max_examples=400, deadline=None)
@given(data=st.data(), flat_range=st.sampled_from([0, 2, 10, 255]))
def test_flat_count_twins_agree_with_the_gradient(data: st.DataObject, flat_range: int) -> None:
    h, w = data.draw(st.integers(1, 25)), data.draw(st.integers(1, 25))
    levels = data.draw(st.sampled_from([(100, 101), (0, 255), (50, 53)]))
    gray = data.draw(arrays(np.uint8, (h, w), elements=st.integers(*levels)))
    left = data.draw(st.integers(0, w))
    right = data.draw(st.integers(left, w))
    top = data.draw(st.integers(0, h))
    bottom = data.draw(st.integers(top, h))
    want = _flat_by_gradient(gray, (left, top, right, bottom), flat_range)
    for name, mod in fastpath.available().items():
        got = mod.pixel_flat_count(gray, left, top, right, bottom, flat_range)
        assert int(got) == want, name
    assert fastpath.flat_count(gray, (left, top, right, bottom), flat_range) == want


@pytest.mark.parametrize("box", [(-1, 0, 3, 3), (0, -1, 3, 3), (0, 0, 11, 3), (0, 0, 3, 9)])
def test_flat_count_refuses_a_box_outside(box: tuple[int, int, int, int]) -> None:
    with pytest.raises(ValueError):
        fastpath.flat_count(np.zeros((8, 10), np.uint8), box, 2)


def test_flat_count_refuses_what_is_not_gray() -> None:
    with pytest.raises(ValueError):
        fastpath.flat_count(np.zeros((8, 10, 3), np.uint8), (0, 0, 3, 3), 2)
