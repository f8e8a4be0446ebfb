"""Fusion kernel twins: the reference semantics of ``_kernels_fusion.pxi``.

Boxes are ``(left, top, right, bottom)`` int32 rows. Areas and intersections are exact int64 and
every ratio is one final float64 division, so results equal the compiled kernels bit for bit.
Ties go to the lower index. These functions may be replaced by the compiled versions; callers
go through :mod:`perception.fastpath`, which validates and normalises the arrays.
"""

from __future__ import annotations

import itertools
import re
from array import array
from collections import deque
from collections.abc import Callable, Collection, Sequence
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt

__all__ = [
    "fusion_big_boxes",
    "fusion_box_gray_stats",
    "fusion_box_rows",
    "fusion_columns",
    "fusion_edit_distance",
    "fusion_flag_bits",
    "fusion_flat_labels",
    "fusion_intersections",
    "fusion_keys",
    "fusion_line_boxes",
    "fusion_match",
    "fusion_paint",
    "fusion_pixel_check",
    "fusion_read_back_pick",
    "fusion_records",
    "fusion_rows",
    "fusion_top_texts",
]

I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
U8 = npt.NDArray[np.uint8]


def _areas(boxes: I32) -> I64:
    b = boxes.astype(np.int64)
    w = b[:, 2] - b[:, 0]
    h = b[:, 3] - b[:, 1]
    return np.where((w > 0) & (h > 0), w * h, 0).astype(np.int64)


def fusion_intersections(a: I32, b: I32) -> I64:
    """Exact intersection areas ``int64[N, M]`` of every box of ``a`` with every box of ``b``."""
    a64 = a.astype(np.int64)
    b64 = b.astype(np.int64)
    left = np.maximum(a64[:, None, 0], b64[None, :, 0])
    top = np.maximum(a64[:, None, 1], b64[None, :, 1])
    right = np.minimum(a64[:, None, 2], b64[None, :, 2])
    bottom = np.minimum(a64[:, None, 3], b64[None, :, 3])
    w = right - left
    h = bottom - top
    return np.where((w > 0) & (h > 0), w * h, 0).astype(np.int64).reshape(len(a), len(b))


def fusion_match(tree: I32, blocks: I32) -> tuple[I32, F64]:
    """For each block, the tree box that holds most of it: ``(index int32[M], share float64[M])``.

    ``share`` is the part of the block's area inside the tree box, halved when the block's centre
    lies outside it. Among equal shares the smaller tree box wins, then the lower index. A block
    with no overlap (or zero area) gets index -1 and share 0.
    """
    n, m = len(tree), len(blocks)
    best = np.full(m, -1, dtype=np.int32)
    share_out = np.zeros(m, dtype=np.float64)
    if n == 0 or m == 0:
        return best, share_out
    inter = fusion_intersections(tree, blocks)
    barea = _areas(blocks)
    tarea = _areas(tree)
    valid = (inter > 0) & (barea[None, :] > 0)
    share = np.zeros((n, m), dtype=np.float64)
    np.divide(inter, barea[None, :], out=share, where=valid)
    t64 = tree.astype(np.int64)
    b64 = blocks.astype(np.int64)
    cx2 = b64[:, 0] + b64[:, 2]
    cy2 = b64[:, 1] + b64[:, 3]
    inside = (
        (2 * t64[:, None, 0] <= cx2[None, :])
        & (cx2[None, :] < 2 * t64[:, None, 2])
        & (2 * t64[:, None, 1] <= cy2[None, :])
        & (cy2[None, :] < 2 * t64[:, None, 3])
    )
    share = np.where(inside, share, share * 0.5)
    share = np.where(valid, share, 0.0)
    top = share.max(axis=0)
    cand = valid & (share == top[None, :])
    big = np.iinfo(np.int64).max
    masked = np.where(cand, tarea[:, None], big)
    smallest = masked.min(axis=0)
    cand &= masked == smallest[None, :]
    found = cand.any(axis=0)
    best[found] = np.argmax(cand, axis=0)[found].astype(np.int32)
    share_out[found] = top[found]
    return best, share_out


_MANY_BOXES = 16
"""From this many boxes on, the twins below work on whole images instead of box by box."""
_INTEGRAL_PX_PER_BOX = 7000
"""An integral image costs about as much as summing this many pixels box by box (numpy calls)."""


def _clip_boxes(boxes: I32, width: int, height: int) -> tuple[I64, I64, I64, I64, Any]:
    b = boxes.astype(np.int64)
    left, top = np.maximum(b[:, 0], 0), np.maximum(b[:, 1], 0)
    right, bottom = np.minimum(b[:, 2], width), np.minimum(b[:, 3], height)
    return left, top, right, bottom, (right > left) & (bottom > top)


def fusion_box_gray_stats(gray: U8, boxes: I32) -> I64:
    """Pixel count, sum and sum of squares ``int64[N, 3]`` of ``gray`` inside each box (clipped)."""
    h, w = gray.shape
    n = len(boxes)
    out = np.zeros((n, 3), dtype=np.int64)
    if n >= _MANY_BOXES and 0 < h * w < _INTEGRAL_PX_PER_BOX * n and h * w * 255**2 < 2**53:
        # Integral images: every sum is an integer below 2**53, exact in float64.
        sums, squares = cv2.integral2(gray, sdepth=cv2.CV_64F, sqdepth=cv2.CV_64F)
        x0, y0, x1, y1, ok = _clip_boxes(boxes, w, h)
        x0, y0, x1, y1 = x0[ok], y0[ok], x1[ok], y1[ok]
        for col, table in ((1, sums), (2, squares)):
            corner = table[y1, x1] - table[y0, x1] - table[y1, x0]
            out[ok, col] = (corner + table[y0, x0]).astype(np.int64)
        out[ok, 0] = (x1 - x0) * (y1 - y0)
        return out
    for k, (left, top, right, bottom) in enumerate(boxes.tolist()):
        left, top = max(left, 0), max(top, 0)
        right, bottom = min(right, w), min(bottom, h)
        if right <= left or bottom <= top:
            continue
        sub = gray[top:bottom, left:right].astype(np.int64)
        out[k, 0] = (right - left) * (bottom - top)
        out[k, 1] = int(sub.sum())
        out[k, 2] = int((sub * sub).sum())
    return out


def fusion_paint(height: int, width: int, boxes: I32) -> U8:
    """A ``uint8[height, width]`` mask with 1 inside any of the boxes (clipped)."""
    out = np.zeros((height, width), dtype=np.uint8)
    if len(boxes) >= _MANY_BOXES:
        # Corner marks summed up both ways: how many boxes cover each pixel.
        x0, y0, x1, y1, ok = _clip_boxes(boxes, width, height)
        x0, y0, x1, y1 = x0[ok], y0[ok], x1[ok], y1[ok]
        marks = np.zeros((height + 1, width + 1), dtype=np.int64)
        np.add.at(marks, (y0, x0), 1)
        np.add.at(marks, (y0, x1), -1)
        np.add.at(marks, (y1, x0), -1)
        np.add.at(marks, (y1, x1), 1)
        depth = marks.cumsum(axis=0).cumsum(axis=1)[:height, :width]
        out[depth > 0] = 1
        return out
    for left, top, right, bottom in boxes.tolist():
        left, top = max(left, 0), max(top, 0)
        right, bottom = min(right, width), min(bottom, height)
        if right > left and bottom > top:
            out[top:bottom, left:right] = 1
    return out


def fusion_box_rows(boxes: Sequence[Sequence[int]]) -> I32:
    """``int32[N, 4]`` from a sequence of ``(left, top, right, bottom)`` integer rows."""
    n = len(boxes)
    if n == 0:
        return np.zeros((0, 4), dtype=np.int32)
    if set(map(len, boxes)) != {4}:
        k = next(k for k, row in enumerate(boxes) if len(row) != 4)
        raise ValueError(f"box rows: row {k} has {len(boxes[k])} values, expected 4")
    flat = np.fromiter(itertools.chain.from_iterable(boxes), dtype=np.int32, count=4 * n)
    return flat.reshape(n, 4)


def fusion_flag_bits(flags: Sequence[int]) -> I64:
    """``int64[N]`` of a sequence of integer flags (``enum.IntFlag`` members or ints): each
    item's value as ``array("q", ...)`` reads it (``OverflowError`` past int64, ``TypeError``
    for what is no integer)."""
    return np.frombuffer(array("q", flags), dtype=np.int64)


def fusion_line_boxes(
    boxes: I32, flags: I64, unreadable: int, width: int, height: int, low: int, high: int
) -> list[int]:
    """Indices of the boxes that can hold one line of text: inside ``[0, width] x [0,
    height]``, ``low`` to ``high`` tall, at least 3:2 wide for their height, no ``unreadable``
    flag bit; tallest first, ties in index order. Edges in int64 (no overflow)."""
    if len(flags) != len(boxes):
        raise ValueError(f"line boxes: {len(boxes)} boxes, {len(flags)} flags")
    b = boxes.astype(np.int64)
    heights = b[:, 3] - b[:, 1]
    ok = (
        (heights >= low) & (heights <= high)
        & (b[:, 0] >= 0) & (b[:, 1] >= 0) & (b[:, 2] <= width) & (b[:, 3] <= height)
        & ((flags & unreadable) == 0)
        & ((b[:, 2] - b[:, 0]) * 2 >= heights * 3)
    )
    idx = np.flatnonzero(ok)
    out: list[int] = idx[np.argsort(-heights[idx], kind="stable")].tolist()
    return out


def fusion_flat_labels(
    gray: U8,
    content: U8,
    boxes: I32,
    flags: I64,
    texts: list[str],
    hidden: int,
    scale: int,
    cell: int,
    flat_var: float,
) -> tuple[int, list[int], int, int]:
    """:func:`fusion_pixel_check`'s pass with each box's verdict made in it, for
    ``perception.fusion.crossval.check_pixels``: ``(labelled, flat, covered, content)``, how
    many visible elements have a non-blank text and a non-empty box (the elements
    fusion_pixel_check indexes), those of them (indices, in order) whose grey is flat, and the
    content cells as fusion_pixel_check counts them. Flat: a grey variance of ``flat_var`` or
    less in float64 from the box's pixel count, sum and sum of squares, as
    ``crossval._not_flat`` computes it (an empty box is flat)."""
    index, stats, covered, total = fusion_pixel_check(
        gray, content, boxes, flags, texts, hidden, scale, cell
    )
    flat: list[int] = index[~box_not_flat(stats, flat_var)].tolist()
    return len(index), flat, covered, total


def box_not_flat(stats: I64, flat_var: float) -> npt.NDArray[np.bool_]:
    """From each box's pixel count, sum and sum of squares (``int64[N, 3]``): is its grey
    variance, in float64, above ``flat_var``? An empty box (no pixels, no sums) is divided by
    1, not 0, and is flat. The rule both ``perception.fusion.crossval`` and this twin of
    fusion_flat_labels judge boxes by (the compiled kernel states it in C)."""
    n, sums, squares = stats.T.astype(np.float64)
    count = np.maximum(n, 1.0)
    mean = sums / count
    var = squares / count - mean * mean
    out: npt.NDArray[np.bool_] = (n > 0) & (var > flat_var)
    return out


def fusion_columns(cls: type, names: tuple[str, ...], items: Sequence[Any]) -> list[list[Any]]:
    """``[[getattr(item, name) for item in items] for name in names]``: the items' attributes
    as columns, one list per name (``cls``: the items' class, whose data descriptors the
    compiled kernel reads the names through; each must be one), over the items the sequence
    held when called."""
    for name in names:
        d = next((b.__dict__[name] for b in cls.__mro__ if name in b.__dict__), None)
        if not (hasattr(type(d), "__get__") and hasattr(type(d), "__set__")):
            raise TypeError(f"columns: {cls.__name__}.{name} is not a data descriptor")
    items = tuple(items)  # the items as called with, whatever a getattr does to the sequence
    return [[getattr(item, name) for item in items] for name in names]


def fusion_read_back_pick(
    order: list[int],
    kinds: list[str],
    texts: list[str],
    hidden: Collection[int],
    worth: Callable[[int], bool],
    shortest: int,
    longest: int,
    samples: int,
    numbers_first: int,
    digits: int,
) -> list[int]:
    """The labels to read back (``perception.fusion.crossval.read_back_sample``): up to
    ``samples`` of the indices in ``order`` whose text is ``shortest`` to ``longest``
    characters long, holds no " | ", is not in ``hidden``, is a label not picked yet and that
    ``worth(index)`` takes (asked last). Four passes over ``order``: the ``"text"`` kinds then
    the others among texts with at least ``digits`` digits (``str.isdigit``), until
    ``numbers_first`` are picked; then the ``"text"`` kinds, then the others, among any."""
    n = len(texts)
    if len(kinds) != n:
        raise ValueError(f"read back pick: {len(kinds)} kinds, {n} texts")
    picked: list[int] = []
    labels: set[str] = set()
    for numbers, static in ((True, True), (True, False), (False, True), (False, False)):
        if numbers and len(picked) == numbers_first:
            continue
        for i in order:
            if not 0 <= i < n:
                raise IndexError(f"read back pick: index {i} out of {n}")
            if (kinds[i] == "text") is not static or i in hidden:
                continue
            text = texts[i]
            if not isinstance(text, str):
                raise TypeError(f"read back pick: text {i} is not a str")
            if (
                " | " in text
                or not shortest <= len(text) <= longest
                or text in labels
                or (numbers and sum(map(str.isdigit, text)) < digits)
                or not worth(i)
            ):
                continue
            labels.add(text)
            picked.append(i)
            if len(picked) == samples:
                return picked
            if numbers and len(picked) == numbers_first:
                break
    return picked


def fusion_records(
    cls: type, slots: tuple[Any, ...], ids: Sequence[object], rows: Sequence[Sequence[object]]
) -> list[Any]:
    """New ``cls`` instances, filled through its slot descriptors: ``slots[0]`` gets the id,
    ``slots[1:]`` the row's values in order (each row has exactly ``len(slots) - 1`` values).

    The instances are those ``cls``'s own ``__init__`` would fill (frozen dataclasses included:
    the descriptors are the ones it writes through). Field by field over all the records: each
    descriptor's setter is mapped over the instances from C, not called once per field here."""
    n, m = len(ids), len(slots) - 1
    if len(rows) != n:
        raise ValueError(f"records: {n} ids but {len(rows)} rows")
    if m < 0:
        raise ValueError("records: no slots")
    for s in slots:
        if not hasattr(type(s), "__set__"):
            raise TypeError(f"records: {s!r} is not a data descriptor")
    if issubclass(cls, tuple) or cls.__itemsize__:
        raise TypeError(f"records: {cls!r} is not a plain __slots__ class")
    if n and set(map(len, rows)) != {m}:
        k = next(k for k, row in enumerate(rows) if len(row) != m)
        raise ValueError(f"records: row {k} has {len(rows[k])} values, expected {m}")
    out: list[Any] = list(map(object.__new__, itertools.repeat(cls, n)))
    if not n:
        return out
    setters = [s.__set__ for s in slots]
    deque(map(setters[0], out, ids), maxlen=0)
    for setter, column in zip(setters[1:], zip(*rows, strict=True), strict=True):
        deque(map(setter, out, column), maxlen=0)
    return out


def fusion_rows(cls: type[tuple[Any, ...]], columns: tuple[Sequence[Any], ...]) -> list[Any]:
    """``[cls(*row) for row in zip(*columns)]`` for a tuple subclass ``cls`` (a NamedTuple):
    ``tuple.__new__(cls, row)`` per row, the rows read across the columns (equal lengths)."""
    if not issubclass(cls, tuple):
        raise TypeError(f"rows: {cls!r} is not a tuple type")
    if len({len(c) for c in columns}) > 1:
        raise ValueError("rows: columns of different lengths")
    return list(map(tuple.__new__, itertools.repeat(cls), zip(*columns, strict=True)))


def fusion_pixel_check(
    gray: U8,
    content: U8,
    boxes: I32,
    flags: I64,
    texts: list[str],
    hidden: int,
    scale: int,
    cell: int,
) -> tuple[I32, I64, int, int]:
    """The tree's boxes against a frame probe, in one pass over the elements.

    Visible elements are those without any ``hidden`` flag bit. Returns ``(index int32[K],
    stats int64[K, 3], covered, content)``: the visible elements with a non-blank text and a
    non-empty box, with the pixel count, sum and sum of squares of ``gray`` inside their box
    floor-divided by ``scale`` (as :func:`fusion_box_gray_stats`); the content cells (non-zero in
    ``content``) whose centre some visible box covers, a box covering the cells
    ``floor((edge + cell // 2) / cell)`` (as :func:`fusion_paint`); and all content cells."""
    if scale <= 0 or cell <= 0:
        raise ValueError("pixel check: scale and cell must be positive")
    n = len(boxes)
    if len(flags) != n or len(texts) != n:
        raise ValueError(f"pixel check: {n} boxes, {len(flags)} flags, {len(texts)} texts")
    b64 = boxes.astype(np.int64)
    visible = (flags & hidden) == 0
    shown = b64[visible]
    mask = fusion_paint(content.shape[0], content.shape[1], _clamp_i32((shown + cell // 2) // cell))
    covered = int(np.count_nonzero(mask.astype(bool) & (content != 0)))
    total = int(np.count_nonzero(content))
    solid = visible & (b64[:, 2] > b64[:, 0]) & (b64[:, 3] > b64[:, 1])
    inked: list[int] = []
    for k in np.flatnonzero(solid).tolist():
        text = texts[k]
        if not isinstance(text, str):
            raise TypeError(f"pixel check: text {k} is not a str")
        if text.strip():
            inked.append(k)
    index = np.array(inked, dtype=np.int32)
    stats = fusion_box_gray_stats(gray, _clamp_i32(b64[index] // scale))
    return index, stats, covered, total


def _clamp_i32(boxes: I64) -> I32:
    # Past int32 a box is clipped to the image anyway: clamping keeps it where it was.
    info = np.iinfo(np.int32)
    return np.ascontiguousarray(np.clip(boxes, info.min, info.max).astype(np.int32))


def fusion_keys(
    drafts: list[Any],
    boxes: I32,
    norms: list[str],
    width: int,
    height: int,
    grid: int,
    text_len: int,
) -> list[tuple[Any, str, int, int, int, int]]:
    n = len(drafts)
    if boxes.shape[0] != n or len(norms) != n:
        raise ValueError(f"keys: {n} drafts, {boxes.shape[0]} boxes, {len(norms)} texts")
    if text_len < 0:
        raise ValueError("keys: text_len must be >= 0")
    if not n:
        return []
    w, h = max(width, 1), max(height, 1)
    extent = np.array([w, h, w, h], dtype=np.int64)
    left, top, right, bottom = (boxes.astype(np.int64) * grid // extent).T.tolist()
    texts = [t[:text_len] for t in norms]
    return list(zip([d[1] for d in drafts], texts, left, top, right, bottom, strict=True))


_DIGIT_RUNS = re.compile(r"\d+")


def fusion_top_texts(
    drafts: list[Any],
    boxes: I32,
    pixel: object,
    ocr: str,
    limit: int,
    scan: int,
    width: int,
) -> tuple[str, ...]:
    if boxes.shape[0] != len(drafts):
        raise ValueError(f"top texts: {len(drafts)} drafts, {boxes.shape[0]} boxes")
    if limit < 1 or scan < 0 or width < 0:
        raise ValueError("top texts: limit must be >= 1, scan and width >= 0")
    labelled = [i for i, d in enumerate(drafts) if d[2] and (d[0] is not pixel or d[6] == ocr)]
    if not labelled:
        return ()
    idx = np.array(labelled, dtype=np.intp)
    # By top, then left, then draft order (lexsort is stable).
    order = idx[np.lexsort((boxes[idx, 0], boxes[idx, 1]))][:scan]
    seen: list[str] = []
    for i in order.tolist():
        t = _DIGIT_RUNS.sub("#", drafts[i][2].strip())[:width]
        if t and t not in seen:
            seen.append(t)
            if len(seen) >= limit:
                break
    return tuple(seen)


def fusion_edit_distance(a: str, b: str) -> int:
    """Levenshtein distance between ``a`` and ``b``, by code point (insert, delete, substitute
    each cost 1)."""
    if len(a) < len(b):
        a, b = b, a
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def fusion_big_boxes(boxes: I32, least: float) -> list[int]:
    """Indices of the boxes with a positive width and height whose area, in float64 (edges
    subtracted exactly, then multiplied), is at least ``least``; in index order."""
    edges = boxes.astype(np.float64)
    width, height = edges[:, 2] - edges[:, 0], edges[:, 3] - edges[:, 1]
    out: list[int] = np.flatnonzero((width > 0) & (height > 0) & (width * height >= least)).tolist()
    return out
