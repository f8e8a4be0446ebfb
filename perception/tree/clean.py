"""Stage 2: clean. Clip every node to the screen and classify it.

Dropped: invisible (``visible-to-user="false"``, or under an invisible parent) and nodes with no
area on the screen (off-screen or zero-area). Pure layout containers (no text, no description,
no resource hint, not actionable) stay as structure only: they link their children but never
become elements. Disabled nodes are kept and flagged. One kernel call does it all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.tree.parse import RawTree
from perception.types import ScreenSize

I32 = npt.NDArray[np.int32]


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanTree:
    raw: RawTree
    screen: ScreenSize
    clip_px: I32
    """Boxes clipped to the screen, ``int32[n, 4]``."""
    bits: I32
    """Raw bits plus PARTLY_OFFSCREEN, ``fastpath.B_DROPPED`` and ``fastpath.B_LAYOUT``."""
    owner: I32
    """Aggregation root of each node (see :mod:`perception.tree.cluster`), -1 if none."""
    rank: I32
    """Draw rank: later-drawn nodes have higher ranks."""
    end: I32
    """Subtree end (exclusive) of each node in document order."""


def infer_screen(raw: RawTree) -> ScreenSize:
    """The screen the dump describes, from its window roots (rotation already applied)."""
    roots = raw.parent < 0
    if not roots.any():
        return ScreenSize(0, 0)
    boxes = raw.box_px[roots]
    return ScreenSize(int(max(0, boxes[:, 2].max())), int(max(0, boxes[:, 3].max())))


def clean(raw: RawTree, screen: ScreenSize) -> CleanTree:
    clip, bits, owner, rank, end = fastpath.tree_structure(
        raw.parent, raw.box_px, raw.bits, raw.draw, screen.width_px, screen.height_px
    )
    return CleanTree(
        raw=raw, screen=screen, clip_px=clip, bits=bits, owner=owner, rank=rank, end=end
    )
