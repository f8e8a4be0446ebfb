"""fusion_flat_labels (check_pixels' one pass) gives identical results in both twins, and the
ones fusion_pixel_check's stats and crossval._not_flat give; its box sums are exact."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from perception import fastpath
from perception.fusion.crossval import (
    CELL_PX,
    FLAT_STD,
    OCCLUDED,
    PROBE_SCALE,
    FrameProbe,
    _holds_glyph,
    _not_flat,
    check_pixels,
)
from perception.types import BoxPx, ElementFlag, TreeElement

IMPLS = fastpath.available()
TEXTS = ["", " ", "\u00a0\t", "OK", " x ", "\u3000", "跳过", "\u2028"]


def _reference(
    gray: np.ndarray,
    content: np.ndarray,
    boxes: np.ndarray,
    flags: np.ndarray,
    texts: list[str],
    scale: int,
    cell: int,
    flat_var: float,
) -> tuple[int, list[int], int, int]:
    """What check_pixels computed before: fusion_pixel_check's stats through _not_flat's
    arithmetic (the twin's, the reference semantics)."""
    index, stats, covered, total = IMPLS["python"].fusion_pixel_check(
        gray, content, boxes, flags, texts, 2048, scale, cell
    )
    n, sums, squares = stats.T.astype(np.float64)
    count = np.maximum(n, 1.0)
    mean = sums / count
    not_flat = (n > 0) & (squares / count - mean * mean > flat_var)
    return len(index), index[~not_flat].tolist(), covered, total


@given(
    gray=hnp.arrays(np.uint8, st.tuples(st.integers(1, 30), st.integers(1, 70))),
    content=hnp.arrays(np.bool_, st.tuples(st.integers(0, 6), st.integers(0, 6))),
    boxes=hnp.arrays(
        np.int32,
        st.tuples(st.integers(0, 14), st.just(4)),
        elements=st.integers(min_value=-50, max_value=400),
    ),
    data=st.data(),
    scale=st.integers(1, 5),
    cell=st.integers(1, 40),
    flat_var=st.sampled_from([0.0, 1.0, 36.0, 500.0, -1.0]),
)
@settings(max_examples=150, deadline=None)
def test_flat_labels_parity(
    gray: np.ndarray,
    content: np.ndarray,
    boxes: np.ndarray,
    data: st.DataObject,
    scale: int,
    cell: int,
    flat_var: float,
) -> None:
    n = len(boxes)
    flags = np.array(
        data.draw(st.lists(st.sampled_from([0, 1, 2048, 2049]), min_size=n, max_size=n)),
        dtype=np.int64,
    )
    texts = data.draw(st.lists(st.sampled_from(TEXTS), min_size=n, max_size=n))
    gray = np.ascontiguousarray(gray)
    cells = np.ascontiguousarray(content).view(np.uint8)
    expected = _reference(gray, cells, boxes, flags, texts, scale, cell, flat_var)
    for mod in IMPLS.values():
        got = mod.fusion_flat_labels(gray, cells, boxes, flags, texts, 2048, scale, cell, flat_var)
        assert got == expected
        assert all(type(v) is int for v in got[1])


@pytest.mark.parametrize("width", [1, 7, 8, 15, 16, 17, 31, 32, 43, 47, 48, 63, 64, 65, 270])
def test_box_sums_exact_at_every_row_tail(fastpath_impl: ModuleType, width: int) -> None:
    # Rows of every width around the 16-byte loads (whole loads, a masked last one, the
    # narrow rows' 8-byte and byte paths), boxes flush with the image's last row and column,
    # on pixels whose sums the float verdict sees exactly: the kernel's pixel_check stats and
    # a numpy sum agree.
    rng = np.random.default_rng(width)
    gray = rng.integers(0, 256, (9, width + 5), dtype=np.uint8)
    h, w = gray.shape
    boxes = np.array(
        [
            [0, 0, width, 9],
            [5 * 1, 2, (5 + width) * 1, 9],  # flush with the last row and column
            [w - width, 0, w, 1],
            [3, 4, 3 + max(1, width - 3), 6],
        ],
        dtype=np.int32,
    )
    texts = ["label"] * len(boxes)
    flags = np.zeros(len(boxes), np.int64)
    cells = np.ones((2, 2), np.uint8)
    index, stats, _covered, _total = fastpath_impl.fusion_pixel_check(
        gray, cells, boxes, flags, texts, 2048, 1, 8
    )
    assert index.tolist() == [0, 1, 2, 3]
    for (left, top, right, bottom), row in zip(boxes.tolist(), stats.tolist(), strict=True):
        sub = gray[top:bottom, min(left, w) : min(right, w)].astype(np.int64)
        assert row == [sub.size, int(sub.sum()), int((sub * sub).sum())]
    labelled, flat, _, _ = fastpath_impl.fusion_flat_labels(
        gray, cells, boxes, flags, texts, 2048, 1, 8, 36.0
    )
    assert labelled == 4
    assert flat == [k for k, f in enumerate(_not_flat(stats)) if not f]


def test_flat_verdict_at_the_threshold(fastpath_impl: ModuleType) -> None:
    # Variances just under, at and over the limit: a box of 0s and 12s (variance 36 exactly),
    # one of 0s and 13s (over) and 0s and 11s (under), and a box the probe shrinks to nothing.
    gray = np.zeros((4, 12), np.uint8)
    gray[:, 1:4:2] = 12
    gray[:, 5:8:2] = 13
    gray[:, 9:12:2] = 11
    boxes = np.array([[0, 0, 4, 4], [4, 0, 8, 4], [8, 0, 12, 4], [0, 0, 3, 3]], np.int32)
    flags = np.zeros(4, np.int64)
    labelled, flat, _, _ = fastpath_impl.fusion_flat_labels(
        gray, np.zeros((1, 1), np.uint8), boxes * 4, flags, ["a", "b", "c", "d"], 2048, 4, 8,
        FLAT_STD * FLAT_STD,
    )
    # Scale 4: box 3 (0..3 px) is no probe pixel at all.
    assert labelled == 4 and flat == [0, 2, 3]


def test_flat_labels_inputs(fastpath_impl: ModuleType) -> None:
    gray = np.zeros((4, 4), np.uint8)
    content = np.ones((2, 2), np.uint8)
    boxes = np.array([[0, 0, 4, 4]], np.int32)
    flags = np.zeros(1, np.int64)
    with pytest.raises(ValueError):
        fastpath_impl.fusion_flat_labels(gray, content, boxes, flags, [], 2048, 4, 8, 36.0)
    with pytest.raises(ValueError):
        fastpath_impl.fusion_flat_labels(gray, content, boxes, flags, ["a"], 2048, 4, 0, 36.0)
    with pytest.raises(TypeError):
        fastpath_impl.fusion_flat_labels(gray, content, boxes, flags, [None], 2048, 4, 8, 36.0)
    # A hidden element's text is never read; an empty grid has no content cells.
    out = fastpath_impl.fusion_flat_labels(
        gray, content, boxes, flags + 2048, [None], 2048, 4, 8, 36.0
    )
    assert out == (0, [], 0, 4)
    empty = np.zeros((0, 3), np.uint8)
    assert fastpath_impl.fusion_flat_labels(
        gray, empty, boxes, flags, ["a"], 2048, 1, 8, 36.0
    ) == (1, [0], 0, 0)


def test_check_pixels_verdicts_unchanged(pipeline_impl: str) -> None:
    # The whole check as before: labelled boxes on flat pixels are doubtful unless they hold a
    # small glyph; the share is of the labelled visible boxes.
    pixels = np.full((256, 384, 3), 240, np.uint8)
    pixels[16:48, 16:200] = 20  # a dark bar: its inside is flat, its edge is not
    pixels[100:140, 40:120:6] = 0  # stripes: text-like ink
    pixels[176:184, 320:328] = 200  # a faint dot in a wide flat square: a glyph
    for x in range(0, 64, 8):
        pixels[224:256, x : x + 4] = 0  # content no element covers
    probe = FrameProbe(pixels)

    def element(
        i: int, box: BoxPx, text: str, flags: ElementFlag = ElementFlag.NONE
    ) -> TreeElement:
        return TreeElement(id=i, kind="text", text=text, box_px=box, flags=flags)

    elements = [
        element(1, BoxPx(24, 20, 190, 44), "Inside the bar"),  # flat
        element(2, BoxPx(8, 8, 210, 56), "Around the bar"),  # the bar's edge
        element(3, BoxPx(36, 96, 124, 144), "Stripes"),
        element(4, BoxPx(292, 148, 356, 212), "Dot"),  # flat by variance, holds a glyph
        element(5, BoxPx(200, 60, 260, 90), "Blank"),  # flat
        element(6, BoxPx(200, 60, 260, 90), " "),  # no text: not counted
        element(7, BoxPx(24, 20, 190, 44), "Hidden", ElementFlag(OCCLUDED)),
    ]
    got = check_pixels(elements, probe)
    assert got.doubtful == (0, 4)
    assert got.text_boxes == 5 and got.text_on_pixels == 3 / 5
    stats = fastpath.box_gray_stats(
        probe.gray, np.array([e.box_px for e in elements[:5]], np.int32) // PROBE_SCALE
    )
    assert [bool(v) for v in _not_flat(stats)] == [False, True, True, False, False]
    assert _holds_glyph(probe.gray, np.array(elements[3].box_px, np.int32))
    assert got.coverage is not None and 0 < got.coverage < 1
    assert PROBE_SCALE * CELL_PX == 32
