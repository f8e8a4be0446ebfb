"""Kernels written for the anchors' speed give, in both twins, what the numpy code before them
gave, bit for bit.

- ``pixel_three_runs`` (the menu glyphs' first test, :func:`anchors._three_runs_down`) against
  a plain loop over each box's columns: random images and boxes, transposed views (the lying
  ⋯ is looked for in ``gray.T``), boxes running past the bottom row, and the seeds of corpus
  frames.
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
