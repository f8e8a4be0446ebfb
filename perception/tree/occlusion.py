"""Stage 4: occlusion. What is drawn over an element takes the taps meant for it.

Covers are nodes that take touches, drawn after the element and neither inside it nor around
it: clickable or long-clickable nodes (a dialog's scrim, a transparent touch blocker, a floating
button, a bottom bar), the roots of later windows (dialogs, pop-ups, a keyboard), and an open
navigation drawer, whose cover is its whole DrawerLayout: the scrim that dims the page and
closes the drawer on a tap is drawn by the DrawerLayout, not a node of the dump. A drawer is a
child of a DrawerLayout (class name ending ``DrawerLayout``) other than the first drawn, the
content; a closed one is invisible or off the screen, so dropped. A clickable ancestor is no
cover (a full-screen clickable wrapper holds its page; a row holds its switch).

A dialog or a pop-up window over others (:func:`perception.tree.clean.modal_cover`) covers
every element of the windows under it, not only those under its box: a tap around it lands on
the dim layer and only closes it.

An element is occluded when its covers together overlap 80% of its node's on-screen area (one
cover or several: a bar and a panel side by side). An action (clickable, long-clickable,
checkable or editable) whose centre lies under a cover while more than that 20% shows is
offered with its **tap box**: the largest part of its box that no cover overlaps, so that the
centre an agent taps lands on it. A text or a list keeps its box (it is read or swiped).

Why a tap box rather than the flag (both measured on the corpus, README "Tree channel"): of
the 39 tap boxes on screens with a screenshot, 35 lie on the element as drawn. 27 are partly
under a bar, a mini-player or a pop-up (a list row, a Maps photo above the bottom navigation,
the map around a photo card, Eye exam's "Start test" above a drawer handle), which the flag
would take from the agent although a tap there works; 8 are in fact on top where the dump's
order is wrong (DroidBot dumps carry no ``drawing-order``; a WebView's DOM order is not its
paint order: Habitica's snackbar, AdGuard's web menu), where the flag loses a visible control
and the tap box still hits it. 4 are on a page hidden under an opaque page that takes no taps
(no cover the dump shows), where the flag would be right. A visible part narrower than
:data:`TAP_SIDE_SHARE` of the screen's shorter side is a sliver nothing can aim at: then the
element is occluded.

Draw order is document order with siblings sorted by ``drawing-order`` where the dump has it,
and windows stacked by size, the largest at the bottom (see
:func:`perception.tree.clean.window_stack`: tools list them top first, or the other way).

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
TAP_SIDE_SHARE = (1, 45)
"""A tap box's sides are at least this share of the screen's shorter side (8 dp on a 360 dp
wide phone; numerator, denominator), or the element is occluded."""


@dataclass(frozen=True, slots=True)
class Visibility:
    occluded: npt.NDArray[np.int8]
    hidden: npt.NDArray[np.int8]
    """Hidden by list truncation."""
    more: npt.NDArray[np.int32]
    """On the last shown item of a truncated run: how many items follow, not shown."""
    boxes_px: npt.NDArray[np.int32]
    """Each element's box, or its tap box where a cover holds its centre (see the module)."""
    open_drawers: npt.NDArray[np.int32]
    """The open navigation drawers, as (drawer, DrawerLayout) node pairs: each covers its
    layout's page."""


def visibility(
    tree: CleanTree,
    nodes: npt.NDArray[np.int32],
    boxes_px: npt.NDArray[np.int32],
    config: TreeConfig,
) -> Visibility:
    """Occlusion, tap boxes and list truncation for the elements behind ``nodes`` (boxes
    ``boxes_px``)."""
    num, den = TAP_SIDE_SHARE
    screen = tree.screen
    occluded, hidden, more, boxes, drawers = fastpath.tree_visibility(
        tree.clip_px, tree.bits, tree.rank, tree.end, tree.raw.parent, tree.raw.class_id,
        nodes, boxes_px,
        cover_num=COVER_NUM, cover_den=COVER_DEN,
        keep=config.list_keep, min_run=config.min_list_run, slack_px=SIZE_SLACK_PX,
        drawer_layouts=tree.drawer_layouts or None,
        min_side_px=min(screen.width_px, screen.height_px) * num // den,
    )
    if tree.under_modal:
        under = np.zeros(tree.raw.count, dtype=bool)
        for root, end in tree.under_modal:
            under[root:end] = True
        occluded = occluded.copy()
        occluded[under[nodes]] = 1
    return Visibility(occluded, hidden, more, boxes, drawers)
