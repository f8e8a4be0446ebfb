"""Stage 4: occlusion. A node covered by a later-drawn sibling or overlay is not tappable.

Blockers are nodes that take touches: clickable or long-clickable nodes (a dialog's scrim, a
transparent touch blocker, a floating button) and the roots of later windows (dialogs, pop-ups).
An element is occluded when one blocker drawn after it, outside its own subtree, covers at least
80% of its node's on-screen area. Draw order is document order with siblings sorted by
``drawing-order`` where the dump has it, and windows stacked by size, the largest at the bottom
(see :func:`perception.tree.clean.window_stack`: tools list them top first, or the other way).

The same kernel (``fastpath.tree_visibility``) then truncates homogeneous list runs among the
elements that are not occluded (stage 3's rule, applied here because it must skip occluded
items), so deciding what the model is offered costs one call. Only runs whose container is
scrollable or inside a scrollable node are cut: the "+N" items can be scrolled to. A keypad or
a grid of tiles that does not scroll is shown whole (the kernel marks the nodes under a
scrollable one in the same pass that collects the blockers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.config import TreeConfig
from perception.tree.clean import CleanTree

COVER_NUM = 4
COVER_DEN = 5
SIZE_SLACK_PX = 2
"""List items whose width and height differ by at most this much have the same shape."""


@dataclass(frozen=True, slots=True)
class Visibility:
    occluded: npt.NDArray[np.int8]
    hidden: npt.NDArray[np.int8]
    """Hidden by list truncation."""
    more: npt.NDArray[np.int32]
    """On the last shown item of a truncated run: how many items follow, not shown."""


def visibility(
    tree: CleanTree,
    nodes: npt.NDArray[np.int32],
    boxes_px: npt.NDArray[np.int32],
    config: TreeConfig,
) -> Visibility:
    """Occlusion and list truncation for the elements behind ``nodes`` (boxes ``boxes_px``)."""
    occluded, hidden, more = fastpath.tree_visibility(
        tree.clip_px, tree.bits, tree.rank, tree.end, tree.raw.parent, tree.raw.class_id,
        nodes, boxes_px,
        cover_num=COVER_NUM, cover_den=COVER_DEN,
        keep=config.list_keep, min_run=config.min_list_run, slack_px=SIZE_SLACK_PX,
    )
    return Visibility(occluded, hidden, more)
