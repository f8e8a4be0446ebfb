"""The one importable face of the kernels.

``PERCEPTION_FASTPATH`` is read once, at import:

- ``python``: force the pure-Python twins (:mod:`perception._fastpath_py`);
- ``cython``: import the compiled extension or raise :class:`FastpathUnavailableError`;
- unset or empty: the extension when it is built, else the twins;
- anything else: :class:`ConfigError`.

A bad value is not raised by ``import perception`` (a tool's ``--help`` must work whatever the
environment holds): :func:`check` raises it, and so does the first kernel call; a
:class:`perception.Perceiver` checks when it is made, and the command-line tools print it as one
line after parsing their arguments.

``IMPLEMENTATION`` says which one is live. The wrappers here validate and normalise arrays
(C-contiguous ``int32``), then call the kernel, which assumes clean input. Both twins give
identical results; the ``tests/test_*parity.py`` files prove it.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Collection, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np

# The flat-box rule of fusion_flat_labels' twin (plain numpy), which the fusion's frame probe
# judges boxes by too.
from perception._kernels_fusion_py import box_not_flat as box_not_flat

# Tree constants shared by both twins (plain Python, no kernel code), the tap-box search in
# plain Python (the compiled tree_visibility has its own copy inside the kernel), which the
# tree's clustering asks for a container's part clear of its controls, and the label-piece rule
# (the compiled labels have their own copy), for the labels the clustering makes itself.
from perception._kernels_tree_py import (
    B_ACTION_MASK as B_ACTION_MASK,
    B_CONTENT_MASK as B_CONTENT_MASK,
    B_DROPPED as B_DROPPED,
    B_EDITABLE as B_EDITABLE,
    B_HAS_BOUNDS as B_HAS_BOUNDS,
    B_HAS_DESC as B_HAS_DESC,
    B_HAS_HINT as B_HAS_HINT,
    B_HAS_RID as B_HAS_RID,
    B_HAS_TEXT as B_HAS_TEXT,
    B_INVISIBLE as B_INVISIBLE,
    B_LAYOUT as B_LAYOUT,
    B_LIST as B_LIST,
    B_NAMED as B_NAMED,
    B_ROOT_MASK as B_ROOT_MASK,
    B_SURFACE as B_SURFACE,
    B_WEBVIEW as B_WEBVIEW,
    B_WINDOW_ROOT as B_WINDOW_ROOT,
    F_CLASS as F_CLASS,
    F_DESC as F_DESC,
    F_HINT as F_HINT,
    F_PKG as F_PKG,
    F_RID as F_RID,
    F_TEXT as F_TEXT,
    NFIELDS as NFIELDS,
    _largest_free,
    label_piece as label_piece,  # a label piece as the kernels make one, for labels made outside
)
from perception.errors import ConfigError, FastpathUnavailableError, PerceptionError

largest_free = _largest_free  # the tap-box search of tree_tap_boxes' twin

Implementation = Literal["cython", "python"]
_R = TypeVar("_R")
_T = TypeVar("_T", bound=tuple[Any, ...])

class _Unavailable:
    """Stands in for the kernels when ``PERCEPTION_FASTPATH`` selects none: every kernel call
    raises the error that says why (:func:`check` raises it up front)."""

    def __init__(self, error: PerceptionError) -> None:
        self.error = error

    def __getattr__(self, name: str) -> Any:
        raise self.error


def _load_extension() -> ModuleType | None:
    try:
        return importlib.import_module("perception._fastpath")
    except ImportError:
        return None


_choice = os.environ.get("PERCEPTION_FASTPATH", "").strip().lower()
_error: PerceptionError | None = None
"""Why no implementation could be selected (a bad ``PERCEPTION_FASTPATH``, or ``cython``
without the extension); None when one was. Kept, not raised here (:func:`check`)."""

if TYPE_CHECKING or _choice == "python":
    from perception import _fastpath_py as _impl

    IMPLEMENTATION: Implementation = "python"
elif _choice not in {"", "cython"}:
    _error = ConfigError(
        f"PERCEPTION_FASTPATH={_choice!r}: expected 'python', 'cython' or unset"
    )
    _impl = _Unavailable(_error)
    IMPLEMENTATION = "python"  # none is: every kernel raises _error
else:
    _ext = _load_extension()
    if _ext is not None:
        _impl = _ext
        IMPLEMENTATION = "cython"
    elif _choice == "cython":
        _error = FastpathUnavailableError(
            "PERCEPTION_FASTPATH=cython but perception._fastpath is not built; "
            "reinstall with a C compiler and Cython (PERCEPTION_REQUIRE_EXT=1 makes that fatal)"
        )
        _impl = _Unavailable(_error)
        IMPLEMENTATION = "cython"  # asked for, not loaded: every kernel raises _error
    else:
        from perception import _fastpath_py as _impl

        IMPLEMENTATION = "python"


def check() -> None:
    """Raise the error that kept ``PERCEPTION_FASTPATH`` from selecting an implementation
    (:class:`ConfigError` for a bad value, :class:`FastpathUnavailableError` for ``cython``
    without the extension); return when one is live."""
    if _error is not None:
        raise _error


def available() -> dict[str, ModuleType]:
    """Every implementation that can be loaded here, by name (for tests and the bench)."""
    from perception import _fastpath_py

    found: dict[str, ModuleType] = {"python": _fastpath_py}
    ext = _load_extension()
    if ext is not None:
        found["cython"] = ext
    return found


def kernels(name: Implementation | None = None) -> ModuleType:
    """The kernel module in use, or the one named (tests and bench compare both)."""
    if name is None:
        return _impl
    mods = available()
    if name not in mods:
        raise FastpathUnavailableError(f"fastpath implementation {name!r} is not available")
    return mods[name]


# --- fusion kernels -----------------------------------------------------------------------------


def _fusion_boxes(boxes: object, name: str) -> Any:
    arr = np.ascontiguousarray(boxes, dtype=np.int32)
    if arr.size == 0:
        return np.zeros((0, 4), dtype=np.int32)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValueError(f"{name}: expected an [N, 4] box array, got shape {arr.shape}")
    return arr


def intersections(a: object, b: object) -> Any:
    """Exact intersection areas ``int64[N, M]`` between two box sets ``(l, t, r, b)`` in px."""
    return _impl.fusion_intersections(_fusion_boxes(a, "a"), _fusion_boxes(b, "b"))


def match_blocks(tree_boxes: object, block_boxes: object) -> tuple[Any, Any]:
    """For each block (e.g. an OCR line), the tree box holding most of it.

    Returns ``(index int32[M], share float64[M])``: ``share`` is the block's area share inside
    that box, halved when the block's centre lies outside; ties go to the smaller box, then the
    lower index; -1 / 0.0 where no box overlaps.
    """
    best, share = _impl.fusion_match(
        _fusion_boxes(tree_boxes, "tree_boxes"), _fusion_boxes(block_boxes, "block_boxes")
    )
    return best, share


def box_gray_stats(gray: object, boxes: object) -> Any:
    """``int64[N, 3]``: pixel count, sum and sum of squares of a uint8 image inside each box."""
    img = np.ascontiguousarray(gray, dtype=np.uint8)
    if img.ndim != 2:
        raise ValueError(f"gray: expected a 2-D uint8 image, got shape {img.shape}")
    return _impl.fusion_box_gray_stats(img, _fusion_boxes(boxes, "boxes"))


def paint_boxes(height: int, width: int, boxes: object) -> Any:
    """A ``uint8[height, width]`` mask, 1 inside any box (boxes clipped to the mask)."""
    if height < 0 or width < 0:
        raise ValueError(f"paint_boxes: negative mask size {height}x{width}")
    return _impl.fusion_paint(int(height), int(width), _fusion_boxes(boxes, "boxes"))


def box_rows(boxes: Sequence[Sequence[int]]) -> np.ndarray[Any, np.dtype[np.int32]]:
    """``int32[N, 4]`` from a sequence of ``(left, top, right, bottom)`` integer rows (``BoxPx``).

    Raises ``ValueError`` for a row without four values, ``OverflowError`` past int32."""
    out: np.ndarray[Any, np.dtype[np.int32]] = _impl.fusion_box_rows(boxes)
    return out


def flag_bits(flags: Sequence[int]) -> np.ndarray[Any, np.dtype[np.int64]]:
    """``int64[N]`` from a sequence of integer flags (``ElementFlag`` members or ints), in one
    C loop with no enum arithmetic. Raises ``OverflowError`` past int64, ``TypeError`` for an
    item that is no integer."""
    out: np.ndarray[Any, np.dtype[np.int64]] = _impl.fusion_flag_bits(flags)
    return out


def line_boxes(
    boxes: object,
    flags: object,
    *,
    unreadable: int,
    width: int,
    height: int,
    low: int,
    high: int,
) -> list[int]:
    """Indices of the boxes (``int32[N, 4]``) that can hold one line of text: inside the
    ``width`` x ``height`` frame, ``low`` to ``high`` px tall, at least 3:2 wide for their
    height, none of the ``unreadable`` bits in their ``flags`` (``int64[N]``); tallest first,
    ties in index order (``perception.fusion.crossval.read_back_sample``)."""
    out: list[int] = _impl.fusion_line_boxes(
        _fusion_boxes(boxes, "boxes"),
        np.ascontiguousarray(flags, dtype=np.int64).reshape(-1),
        int(unreadable),
        int(width),
        int(height),
        int(low),
        int(high),
    )
    return out


def flat_labels(
    gray: object,
    content: object,
    boxes: object,
    flags: object,
    texts: Sequence[str],
    *,
    hidden: int,
    scale: int,
    cell: int,
    flat_var: float,
) -> tuple[int, list[int], int, int]:
    """A tree's boxes against a frame probe in one pass, each box's verdict made in it
    (``perception.fusion.crossval.check_pixels``). ``gray``: the probe's small grey image
    (``scale`` times smaller than the boxes' pixels); ``content``: its ``[rows, cols]`` grid
    of content cells, ``cell`` box pixels square; ``flags``: the elements' flag bits, those
    with any ``hidden`` bit left out. Returns ``(labelled, flat, covered, content)``: how many
    elements are visible with a non-blank text and a non-empty box, those of them (element
    indices, in order) whose grey in ``gray`` is flat (a variance of ``flat_var`` or less,
    float64 from the box's pixel count, sum and sum of squares; an empty box is flat), and how
    many content cells the visible boxes cover (at the cell's centre), out of how many."""
    img = np.ascontiguousarray(gray, dtype=np.uint8)
    cells = np.asarray(content)
    if cells.dtype == np.bool_:
        cells = cells.view(np.uint8)
    cells = np.ascontiguousarray(cells, dtype=np.uint8)
    if img.ndim != 2 or cells.ndim != 2:
        raise ValueError("flat_labels: gray and content must be 2-D")
    result: tuple[int, list[int], int, int] = _impl.fusion_flat_labels(
        img,
        cells,
        _fusion_boxes(boxes, "boxes"),
        np.ascontiguousarray(flags, dtype=np.int64).reshape(-1),
        texts if isinstance(texts, list) else list(texts),
        int(hidden),
        int(scale),
        int(cell),
        float(flat_var),
    )
    return result


def columns(cls: type, names: Sequence[str], items: Sequence[Any]) -> list[list[Any]]:
    """The items' attributes ``names`` as columns, one list per name:
    ``[[getattr(item, name) for item in items] for name in names]``. Each name must be a data
    descriptor of ``cls`` (a slot, ``TypeError`` otherwise); items of exactly ``cls`` are read
    through it in one C loop, without an attribute lookup each (perception.fusion.table)."""
    out: list[list[Any]] = _impl.fusion_columns(cls, tuple(names), items)
    return out


def read_back_pick(
    order: list[int],
    kinds: list[str],
    texts: list[str],
    hidden: Collection[int],
    worth: Callable[[int], bool],
    *,
    shortest: int,
    longest: int,
    samples: int,
    numbers_first: int,
    digits: int,
) -> list[int]:
    """The labels to read back, ``perception.fusion.crossval.read_back_sample``'s choice among
    the line boxes ``order`` (:func:`line_boxes`' indices into ``kinds`` and ``texts``): up to
    ``samples`` indices whose text is ``shortest`` to ``longest`` characters long, holds no
    " | ", is not in ``hidden``, is a label not picked yet and that ``worth(index)`` takes
    (asked last, of the few that pass the rest). Four passes over ``order``: the ``"text"``
    kinds, then the others, among texts with ``digits`` digits or more (``str.isdigit``), until
    ``numbers_first`` are picked; then the ``"text"`` kinds, then the others, among any."""
    out: list[int] = _impl.fusion_read_back_pick(
        order if isinstance(order, list) else list(order),
        kinds if isinstance(kinds, list) else list(kinds),
        texts if isinstance(texts, list) else list(texts),
        hidden,
        worth,
        int(shortest),
        int(longest),
        int(samples),
        int(numbers_first),
        int(digits),
    )
    return out


def records(
    cls: type[_R], slots: tuple[Any, ...], ids: Sequence[object], rows: Sequence[Sequence[object]]
) -> list[_R]:
    """New instances of a ``__slots__`` class (a frozen dataclass too), filled through its slot
    descriptors ``slots``: the first gets ``ids[k]``, the rest ``rows[k]``'s values in order.

    What ``cls(...)`` would build, without a Python call per field (hundreds of candidates per
    observation). Every row has exactly ``len(slots) - 1`` values (``ValueError`` otherwise)."""
    out: list[_R] = _impl.fusion_records(cls, tuple(slots), ids, rows)
    return out


def rows(cls: type[_T], columns: tuple[Sequence[Any], ...]) -> list[_T]:
    """``[cls(*row) for row in zip(*columns)]`` for a NamedTuple ``cls`` (``tuple.__new__`` per
    row, as ``cls._make`` does), without a Python call per row. Columns of equal length."""
    out: list[_T] = _impl.fusion_rows(cls, tuple(columns))
    return out


def keys(
    drafts: Sequence[tuple[Any, ...]],
    boxes: object,
    norms: Sequence[str],
    *,
    width: int,
    height: int,
    grid: int,
    text_len: int,
) -> list[tuple[Any, str, int, int, int, int]]:
    """Identity keys of drafts (``perception.fusion.candidates.candidate_keys``): per draft
    ``(kind, norm[:text_len], left, top, right, bottom)``, the kind its item 1, the box edges
    on a ``grid``-step grid of the screen (``floor(edge * grid / extent)``)."""
    out: list[tuple[Any, str, int, int, int, int]] = _impl.fusion_keys(
        drafts if isinstance(drafts, list) else list(drafts),
        _fusion_boxes(boxes, "boxes"),
        norms if isinstance(norms, list) else list(norms),
        int(width),
        int(height),
        int(grid),
        int(text_len),
    )
    return out


def top_texts(
    drafts: Sequence[tuple[Any, ...]],
    boxes: object,
    *,
    pixel: object,
    ocr: str,
    limit: int,
    scan: int,
    width: int,
) -> tuple[str, ...]:
    """The page's top texts (``perception.fusion.screen.top_texts``): the first ``limit``
    distinct texts by (top, left, draft order) among the first ``scan`` labelled drafts, each
    stripped, its runs of decimal digits masked as ``#`` and cut to ``width`` characters. A
    draft (source at item 0, text at 2, origin at 6) is labelled when its text is not empty and
    its source is not ``pixel`` or its origin is ``ocr``."""
    out: tuple[str, ...] = _impl.fusion_top_texts(
        drafts if isinstance(drafts, list) else list(drafts),
        _fusion_boxes(boxes, "boxes"),
        pixel,
        ocr,
        int(limit),
        int(scan),
        int(width),
    )
    return out


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance between two strings, by code point."""
    if not isinstance(a, str) or not isinstance(b, str):
        raise TypeError("edit_distance: expected two str")
    out: int = _impl.fusion_edit_distance(a, b)
    return out


# --- pixel kernels ------------------------------------------------------------------------------


def _pixel_boxes(boxes: object, name: str) -> np.ndarray[Any, np.dtype[np.int32]]:
    arr = np.ascontiguousarray(boxes, dtype=np.int32)
    if arr.size == 0:
        return np.zeros((0, 4), dtype=np.int32)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValueError(f"{name}: expected an [N, 4] box array, got shape {arr.shape}")
    return arr


def _reading_order(
    boxes: np.ndarray[Any, np.dtype[np.int32]],
) -> np.ndarray[Any, np.dtype[np.int32]]:
    """Indices by (top, left), stable: equal keys keep index order."""
    if boxes.shape[0] == 0:
        return np.zeros(0, dtype=np.int32)
    return np.ascontiguousarray(np.lexsort((boxes[:, 0], boxes[:, 1])), dtype=np.int32)


def pixel_iou(a: object, b: object) -> np.ndarray[Any, np.dtype[np.float64]]:
    """IoU ``float64[N, M]`` of two box sets ``(l, t, r, b)`` in px (exact int64 areas)."""
    out: np.ndarray[Any, np.dtype[np.float64]] = _impl.pixel_iou_matrix(
        _pixel_boxes(a, "a"), _pixel_boxes(b, "b")
    )
    return out


def pixel_nms(
    boxes: object, scores: object, iou_threshold: float = 0.5
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Greedy NMS: a keep mask, best score first, ties by lower index.

    ``iou_threshold`` is turned into an exact fraction (thousandths) so both twins agree.
    """
    arr = _pixel_boxes(boxes, "boxes")
    sc = np.ascontiguousarray(scores, dtype=np.float64).reshape(-1)
    if sc.shape[0] != arr.shape[0]:
        raise ValueError(f"pixel_nms: {arr.shape[0]} boxes but {sc.shape[0]} scores")
    if not 0.0 <= iou_threshold <= 1.0:
        raise ValueError(f"pixel_nms: iou_threshold {iou_threshold} outside [0, 1]")
    order = np.ascontiguousarray(np.argsort(-sc, kind="stable"), dtype=np.int32)
    keep = _impl.pixel_nms(arr, order, round(iou_threshold * 1000), 1000)
    mask: np.ndarray[Any, np.dtype[np.bool_]] = np.asarray(keep, dtype=bool)
    return mask


def merge_text_blocks(
    boxes: object, *, align_px: int, gap_min_px: int, gap_max_px: int, height_diff_px: int
) -> np.ndarray[Any, np.dtype[np.int32]]:
    """Mobile-Agent-v2 block merge of text lines: the block number ``int32[N]`` of each line.

    Lines are walked in reading order (top, then left); a line joins the block above when it is
    left-aligned within ``align_px``, starts ``gap_min_px..gap_max_px`` below the block's last
    line and differs from it in height by at most ``height_diff_px``.
    """
    arr = _pixel_boxes(boxes, "boxes")
    out: np.ndarray[Any, np.dtype[np.int32]] = _impl.pixel_merge_blocks(
        arr,
        _reading_order(arr),
        int(align_px),
        int(gap_min_px),
        int(gap_max_px),
        int(height_diff_px),
    )
    return out


def split_runs(
    profile: object, *, ink_min: int, gap_min_px: int
) -> np.ndarray[Any, np.dtype[np.int32]]:
    """Ink segments ``int32[K, 2]`` (start, end exclusive) of a 1-D profile; runs separated by
    fewer than ``gap_min_px`` empty positions are joined (splits a line at wide gaps)."""
    prof = np.ascontiguousarray(profile, dtype=np.int32).reshape(-1)
    out: np.ndarray[Any, np.dtype[np.int32]] = _impl.pixel_split_runs(
        prof, int(ink_min), int(gap_min_px)
    )
    return out


def spread_mask(
    bgr: np.ndarray[Any, np.dtype[np.uint8]], floor: np.ndarray[Any, np.dtype[np.uint8]]
) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """255 where a BGR pixel's channel spread (largest minus smallest) is at least
    ``floor[largest]`` (256 entries), else 0: an HSV saturation and value threshold without
    the HSV copy."""
    out: np.ndarray[Any, np.dtype[np.uint8]] = _impl.pixel_spread_mask(
        np.ascontiguousarray(bgr), floor
    )
    return out


def line_ink(
    gray: np.ndarray[Any, np.dtype[np.uint8]], d: int, step_min: int
) -> tuple[np.ndarray[Any, np.dtype[np.uint8]], np.ndarray[Any, np.dtype[np.int32]]]:
    """1 where a grey pixel of rows ``d .. H - d`` stands out of the pixels ``d`` rows above and
    below it, both the same way, by ``step_min`` (1-255) or more (``uint8[H - 2d, W]``; no rows
    when ``H <= 2d``), and each row's count (``int32``): a thin line's pixels."""
    if gray.ndim != 2 or gray.dtype != np.uint8:
        raise ValueError(f"line_ink: expected a 2-D uint8 image, got {gray.dtype} {gray.shape}")
    if d < 1:
        raise ValueError(f"line_ink: d must be at least 1, got {d}")
    if not 1 <= step_min <= 255:
        raise ValueError(f"line_ink: step_min {step_min} outside 1-255")
    out: tuple[np.ndarray[Any, np.dtype[np.uint8]], np.ndarray[Any, np.dtype[np.int32]]] = (
        _impl.pixel_line_ink(np.ascontiguousarray(gray), int(d), int(step_min))
    )
    return out


def colour_distance(
    bgr: np.ndarray[Any, np.dtype[np.uint8]], b: int, g: int, r: int
) -> np.ndarray[Any, np.dtype[np.uint8]]:
    """Each BGR pixel's largest channel difference (``uint8[H, W]``) from the colour
    ``(b, g, r)``."""
    out: np.ndarray[Any, np.dtype[np.uint8]] = _impl.pixel_colour_distance(bgr, b, g, r)
    return out


def containing(
    inner: object, outer: object, *, slack_px: int = 0
) -> np.ndarray[Any, np.dtype[np.int32]]:
    """For each ``inner`` box, the index of the smallest ``outer`` box containing it, or -1."""
    out: np.ndarray[Any, np.dtype[np.int32]] = _impl.pixel_containing(
        _pixel_boxes(inner, "inner"), _pixel_boxes(outer, "outer"), int(slack_px)
    )
    return out


def three_runs(
    gray: np.ndarray[Any, np.dtype[np.uint8]], seeds: object, contrast_min: int
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """For each box (rows of left, top, right, bottom in ``gray``, a 2-D uint8 image of any
    strides), whether the column down its middle crosses exactly three strokes (three runs
    lighter, or three darker, than the middle of its darkest and lightest pixels, which differ
    by ``contrast_min`` at least), and for a box at least as wide as tall the columns at a
    quarter and three quarters of its width too. Boxes lie in the image's columns, start in its
    rows and are not empty; rows past its bottom are read as its last row."""
    if gray.ndim != 2 or gray.dtype != np.uint8 or gray.size == 0:
        raise ValueError(f"three_runs: expected a 2-D uint8 image, got {gray.dtype} {gray.shape}")
    arr = np.ascontiguousarray(seeds, dtype=np.int64)
    if arr.size == 0:
        return np.zeros(0, dtype=bool)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise ValueError(f"three_runs: expected an [N, 4] box array, got shape {arr.shape}")
    x0, y0, x1, y1 = arr.T
    if not (
        bool(np.all((x0 >= 0) & (x0 < x1) & (x1 <= gray.shape[1])))
        and bool(np.all((y0 >= 0) & (y0 < y1)))
    ):
        raise ValueError("three_runs: a box is empty or outside the image")
    out: np.ndarray[Any, np.dtype[np.bool_]] = _impl.pixel_three_runs(
        gray, arr, int(contrast_min)
    ).view(np.bool_)
    return out


def toggle_margin(
    patch: np.ndarray[Any, np.dtype[np.uint8]], m: int, near_max: int, ink_min: int
) -> tuple[
    np.ndarray[Any, np.dtype[np.float64]],
    np.ndarray[Any, np.dtype[np.uint8]],
    int,
    int,
    tuple[int, int, int, int],
]:
    """What a toggle's patch (BGR, its box with a margin ``m`` wide round it) shows round the
    control: the background (each channel's median over every second pixel of every second
    row of the margin's top and bottom strips), each pixel's largest channel difference from
    the background's whole levels, how many margin pixels lie within ``near_max`` of it and
    how many ``ink_min`` or more from it, and the box ``(x, y, width, height)`` of all pixels
    ``ink_min`` or more from it (zeros if none)."""
    if patch.ndim != 3 or patch.shape[2] != 3 or patch.dtype != np.uint8:
        raise ValueError(f"toggle_margin: expected a BGR image, got {patch.dtype} {patch.shape}")
    if not (1 <= m and 2 * m < min(patch.shape[0], patch.shape[1])):
        raise ValueError(f"toggle_margin: margin {m} does not fit a {patch.shape[:2]} patch")
    bg, dist, near, inked, box = _impl.pixel_toggle_margin(
        patch, int(m), int(near_max), int(ink_min)
    )
    return bg, dist, int(near), int(inked), box


def flat_count(
    gray: np.ndarray[Any, np.dtype[np.uint8]], box: Sequence[int], flat_range: int
) -> int:
    """How many pixels of ``box`` (left, top, right, bottom inside the 2-D uint8 ``gray``) are
    flat: their 3x3 neighbourhood, cut by the image's edges, spans at most ``flat_range`` grey
    levels (OpenCV's morphological gradient thresholded, counted in one pass over the box)."""
    if gray.ndim != 2 or gray.dtype != np.uint8:
        raise ValueError(f"flat_count: expected a 2-D uint8 image, got {gray.dtype} {gray.shape}")
    left, top, right, bottom = (int(v) for v in box)
    if left < 0 or top < 0 or right > gray.shape[1] or bottom > gray.shape[0]:
        raise ValueError(f"flat_count: box {tuple(box)} outside a {gray.shape} image")
    return int(
        _impl.pixel_flat_count(
            np.ascontiguousarray(gray), left, top, right, bottom, int(flat_range)
        )
    )


# --- tree channel -------------------------------------------------------------------------------
_I32 = np.ndarray[Any, np.dtype[np.int32]]
_I8 = np.ndarray[Any, np.dtype[np.int8]]


def _i32(values: object, ndim: int) -> _I32:
    if ndim == 2:
        return _pixel_boxes(values, "boxes")
    arr = np.ascontiguousarray(values, dtype=np.int32)
    if arr.ndim != 1:
        raise ValueError(f"expected a 1-D array, got shape {arr.shape}")
    return arr


def scan_hierarchy(
    data: bytes, max_depth: int, max_nodes: int, class_tags: bool = False
) -> tuple[int, _I32, _I32, _I32, _I32, _I32, list[str]]:
    """Read one ``<hierarchy>`` document; see ``perception.tree.parse``. With ``class_tags``
    every element but ``<hierarchy>`` is a node (Appium's page source)."""
    result: tuple[int, _I32, _I32, _I32, _I32, _I32, list[str]] = _impl.scan_hierarchy(
        data, int(max_depth), int(max_nodes), bool(class_tags)
    )
    return result


def tree_structure(
    parent: object, box_px: object, bits: object, draw: object, width_px: int, height_px: int
) -> tuple[_I32, _I32, _I32, _I32, _I32]:
    """Clip to the screen, flag dropped / layout / partly off-screen nodes, find each node's
    aggregation root, the draw rank and the subtree ends."""
    result: tuple[_I32, _I32, _I32, _I32, _I32] = _impl.tree_structure(
        _i32(parent, 1),
        _i32(box_px, 2),
        _i32(bits, 1),
        _i32(draw, 1),
        int(width_px),
        int(height_px),
    )
    return result


def tree_big_actions(
    box_px: object, bits: object, mask: int, width_px: int, height_px: int
) -> list[int]:
    """The nodes whose ``bits`` hold any of ``mask`` with a box of at least half the screen's
    width and half its height (``2 * side >= screen side``), in document order."""
    result: list[int] = _impl.tree_big_actions(
        _i32(box_px, 2), _i32(bits, 1), int(mask), int(width_px), int(height_px)
    )
    return result


def tree_elements(
    parent: object, clip_px: object, bits: object, owner: object, end: object, width_px: int,
    *, max_pieces: int, container_area_px: int, page_area_px: int, strings: list[str],
    max_label_chars: int, min_rid_chars: int,
) -> tuple[_I32, _I32, _I32, _I32, _I32, _I32, list[str]]:
    """Pick the elements of a cleaned tree: aggregation roots, scrollables and static text,
    after label borrowing, wrapper folding and static-text merging. A root absorbs at most
    ``max_pieces`` label pieces (the rest stay static text) and none when it is a container
    (scrollable, a list class, over ``max_pieces`` on ``container_area_px`` or more, around
    a scrollable node of that area, or with a label of its own around a control on
    ``page_area_px`` or more: a web page named by its title, a modal barrier around its dialog).
    Returns the node behind each element, each node's element, merged boxes, bits, label
    nodes (CSR: start, nodes) and the label text they make from ``strings`` (the dump's,
    ``NFIELDS`` a node): pieces cut at ``max_label_chars``, repeats left out, at most
    ``max_pieces`` joined by ``" | "``. A list item's one action whose label is its resource id
    (``min_rid_chars`` or more after the last "/", no text, no description) borrows no text from
    its row."""
    if max_pieces < 1 or max_label_chars < 1:
        raise ValueError("max_pieces and max_label_chars must be >= 1")
    if not isinstance(strings, list):
        raise ValueError("strings must be a list (RawTree.strings)")
    result: tuple[_I32, _I32, _I32, _I32, _I32, _I32, list[str]] = _impl.tree_elements(
        _i32(parent, 1), _i32(clip_px, 2), _i32(bits, 1), _i32(owner, 1), _i32(end, 1),
        int(width_px), int(max_pieces), int(container_area_px), int(page_area_px), strings,
        int(max_label_chars), int(min_rid_chars),
    )
    return result


def tree_tap_boxes(
    boxes: object, takes: object, search: object, nodes: object, rank: object, end: object,
    max_parts: int,
) -> tuple[_I8, _I32]:
    """For each element ``search[q]`` (of the elements ``nodes``, in document order, with their
    ``boxes``), the largest part of its box clear of the actions over it (every element that
    takes presses, ``takes``, drawn later by the node ``rank``, not around it by the subtree
    ``end``): ``(crowded, free)``, crowded 1 when more than ``max_parts`` actions are over it,
    else ``free[q]`` holds the part."""
    result: tuple[_I8, _I32] = _impl.tree_tap_boxes(
        _i32(boxes, 2), _i32(takes, 1), _i32(search, 1), _i32(nodes, 1), _i32(rank, 1),
        _i32(end, 1), int(max_parts),
    )
    return result


def tree_visibility(
    clip_px: object, bits: object, rank: object, end: object, parent: object,
    class_id: object, nodes: object, boxes_px: object,
    *, cover_num: int, cover_den: int, keep: int, min_run: int, slack_px: int,
    drawer_layouts: object = None, min_side_px: int = 0,
) -> tuple[_I8, _I8, _I32, _I32, _I32]:
    """Occlusion of the elements by later-drawn covers (together), where to tap those whose
    centre a cover holds, and truncation of homogeneous list runs among the rest (only runs
    inside a scrollable node: what is cut can be scrolled to). An open navigation drawer of
    one of the nodes ``drawer_layouts`` (DrawerLayouts) covers its layout. Returns
    ``(occluded, hidden, more, tap boxes)`` per element and the open drawers as
    ``(drawer, layout)`` node pairs."""
    if cover_den <= 0 or cover_num < 0:
        raise ValueError("cover ratio must be a non-negative fraction")
    if keep < 1:
        raise ValueError("keep must be >= 1")
    result: tuple[_I8, _I8, _I32, _I32, _I32] = _impl.tree_visibility(
        _i32(clip_px, 2), _i32(bits, 1), _i32(rank, 1), _i32(end, 1), _i32(parent, 1),
        _i32(class_id, 1), _i32(nodes, 1), _i32(boxes_px, 2),
        int(cover_num), int(cover_den), int(keep), int(min_run), int(slack_px),
        None if drawer_layouts is None else _i32(drawer_layouts, 1), int(min_side_px),
    )
    return result


def big_boxes(boxes: object, least: float) -> list[int]:
    """Indices of the ``[N, 4]`` boxes with a positive width and height and an area (float64)
    of at least ``least``, in order: the few page-wide boxes among hundreds of rows."""
    out: list[int] = _impl.fusion_big_boxes(_fusion_boxes(boxes, "boxes"), float(least))
    return out
