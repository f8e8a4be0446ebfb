"""Stage 4: occlusion. A node covered by a later-drawn sibling or overlay is not tappable.

Blockers are nodes that take touches: clickable or long-clickable nodes (a dialog's scrim, a
transparent touch blocker, a floating button) and the roots of later windows (dialogs, pop-ups).
A node is occluded when one blocker drawn after it, outside its own subtree, covers at least
80% of its on-screen area. Draw order is document order with siblings sorted by
``drawing-order`` where the dump has it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.tree.clean import CleanTree

COVER_NUM = 4
COVER_DEN = 5


def occluded(tree: CleanTree, nodes: npt.NDArray[np.int32]) -> npt.NDArray[np.bool_]:
    """A boolean per node in ``nodes``."""
    if nodes.size == 0:
        return np.zeros(0, dtype=bool)
    hit = fastpath.tree_occlusion(
        tree.clip_px,
        tree.bits,
        tree.rank,
        tree.end,
        nodes,
        cover_num=COVER_NUM,
        cover_den=COVER_DEN,
    )
    return hit.astype(bool)
