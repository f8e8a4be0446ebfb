"""The one importable face of the kernels.

``PERCEPTION_FASTPATH`` is read once, at import:

- ``python``: force the pure-Python twins (:mod:`perception._fastpath_py`);
- ``cython``: import the compiled extension or raise :class:`FastpathUnavailableError`;
- unset or empty: the extension when it is built, else the twins.

``IMPLEMENTATION`` says which one is live. The wrappers here validate and normalise arrays
(C-contiguous ``int32``), then call the kernel, which assumes clean input. Both twins give
identical results; ``tests/test_fastpath_parity.py`` proves it.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from perception.errors import ConfigError, FastpathUnavailableError

Implementation = Literal["cython", "python"]

_choice = os.environ.get("PERCEPTION_FASTPATH", "").strip().lower()
if _choice not in {"", "python", "cython"}:
    raise ConfigError(f"PERCEPTION_FASTPATH={_choice!r}: expected 'python', 'cython' or unset")


def _load_extension() -> ModuleType | None:
    try:
        return importlib.import_module("perception._fastpath")
    except ImportError:
        return None


if TYPE_CHECKING or _choice == "python":
    from perception import _fastpath_py as _impl

    IMPLEMENTATION: Implementation = "python"
else:
    _ext = _load_extension()
    if _ext is not None:
        _impl = _ext
        IMPLEMENTATION = "cython"
    elif _choice == "cython":
        raise FastpathUnavailableError(
            "PERCEPTION_FASTPATH=cython but perception._fastpath is not built; "
            "reinstall with a C compiler and Cython (PERCEPTION_REQUIRE_EXT=1 makes that fatal)"
        )
    else:
        from perception import _fastpath_py as _impl

        IMPLEMENTATION = "python"


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
