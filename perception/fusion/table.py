"""The tree elements as columns, read once per fusion and shared by every stage.

Scoring, cross-validation, the merge and the screen description each look at a few fields of
every element; reading each field once into a list (and boxes and flags into arrays) costs less
than one attribute walk per stage. Built from the elements themselves on every fusion: nothing
here outlives the observation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.types import BoxPx, ElementFlag, TreeElement

I32 = npt.NDArray[np.int32]


def boxes_array(boxes: Sequence[BoxPx] | I32) -> I32:
    """``int32[N, 4]`` from a sequence of boxes (or an ``[N, 4]`` array, passed through)."""
    if isinstance(boxes, np.ndarray):
        arr: I32 = np.ascontiguousarray(boxes, dtype=np.int32).reshape(-1, 4)
        return arr
    return fastpath.box_rows(boxes)


def flag_bits(flags: Sequence[ElementFlag | int]) -> npt.NDArray[np.int64]:
    """``int64[N]``: the flags as plain integers (one C loop, no enum arithmetic)."""
    return fastpath.flag_bits(flags)


_COLUMNS = ("kind", "text", "box_px", "flags", "id", "more", "class_name", "resource_id")
"""The element fields every fusion reads (a slot of :class:`TreeElement` each): one C pass
over the elements reads them all, a Python comprehension a field cost more each."""


class ElementTable:
    """Columns of ``elements`` (same order). ``boxes``/``flags`` hold the elements' own objects."""

    __slots__ = (
        "_box_arr",
        "_flag_arr",
        "boxes",
        "class_names",
        "elements",
        "flags",
        "ids",
        "kinds",
        "mores",
        "resource_ids",
        "texts",
    )

    def __init__(self, elements: Sequence[TreeElement]) -> None:
        self.elements = elements
        self.kinds: list[str]
        self.texts: list[str]
        self.boxes: list[BoxPx]
        self.flags: list[ElementFlag]
        self.ids: list[int]
        self.mores: list[int]
        self.class_names: list[str]
        self.resource_ids: list[str]
        (
            self.kinds,
            self.texts,
            self.boxes,
            self.flags,
            self.ids,
            self.mores,
            self.class_names,
            self.resource_ids,
        ) = fastpath.columns(TreeElement, _COLUMNS, elements)
        self._box_arr: I32 | None = None
        self._flag_arr: npt.NDArray[np.int64] | None = None

    def __len__(self) -> int:
        return len(self.kinds)

    @property
    def box_array(self) -> I32:
        """``int32[N, 4]`` of the boxes (built on first use)."""
        if self._box_arr is None:
            self._box_arr = boxes_array(self.boxes)
        return self._box_arr

    @property
    def flag_array(self) -> npt.NDArray[np.int64]:
        """``int64[N]`` of the flags (built on first use)."""
        if self._flag_arr is None:
            self._flag_arr = flag_bits(self.flags)
        return self._flag_arr

    def digest(self) -> int:
        """Identity of the content within this process (kind, text, box and flags of each).

        The boxes and flags go in as their arrays' bytes (built for the fusion's stages
        anyway): one hash of a byte string, not one per box."""
        return hash(
            (
                tuple(self.kinds),
                tuple(self.texts),
                self.box_array.tobytes(),
                self.flag_array.tobytes(),
            )
        )
