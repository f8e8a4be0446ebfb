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

The tap box is the rule for a container's own controls too (:func:`clear_of_controls`): an
action whose centre lies on an action inside it (a card whose button sits at its middle, a
dialog's message row whose middle is on "WHILE USING THE APP") is offered with the largest part
of its box that none of its offered inner actions overlaps, so that tapping it does not press
the inner control (one kernel call, ``fastpath.tree_tap_boxes``, finds those parts). Without
a label, or with nothing but a sliver left, it is no target (each inner control is): its label
stays as static text to read; one without a label is not offered.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.config import TreeConfig
from perception.tree.clean import BARRIER_SCREEN_SHARE, SHEET_SCRIM_ID, CleanTree, sheets_of
from perception.tree.compress import MIN_RID_CHARS
from perception.types import BoxPx, ElementFlag, TreeElement

COVER_NUM = 4
COVER_DEN = 5
SIZE_SLACK_PX = 2
"""List items whose width and height differ by at most this much have the same shape."""
_OCCLUDED = int(ElementFlag.OCCLUDED)
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


_INNER_TAKERS = int(
    ElementFlag.CLICKABLE | ElementFlag.LONG_CLICKABLE | ElementFlag.CHECKABLE
    | ElementFlag.EDITABLE
)
PAGE_SHARE = (1, 2)
"""An action covering at least this share of the screen's area (numerator, denominator) is a
page: with its centre on its controls it is offered with its tap box only when at least
:data:`PAGE_LEFT` of its box is left clear of them."""
PAGE_LEFT = (1, 10)
"""The least share of a page-sized action's box its tap box keeps (see :data:`PAGE_SHARE`)."""
MAX_INNER_PARTS = 24
"""An action whose centre is on its controls, with more than this many actions over it, is no
target: a page of controls (its tap box would be a margin between them; the search for it is
cubic in their count)."""
_KEEPS_BOX = int(ElementFlag.SCROLLABLE | ElementFlag.OCCLUDED)
_LONG = int(ElementFlag.LONG_CLICKABLE)


def largest_free(box: BoxPx, rects: list[BoxPx]) -> BoxPx:
    """The largest part of ``box`` that none of ``rects`` (inside it) overlaps: the search the
    tap-box kernel runs against covers (``fastpath.largest_free``, its twin's). Of equal areas
    the first found wins."""
    return BoxPx(*fastpath.largest_free(list(box), list(rects)))


def clear_of_controls(
    elements: list[TreeElement], hidden: set[int], tree: CleanTree, takes: list[bool],
    boxes_px: list[list[int]], past: list[int], nodes: npt.NDArray[np.int32],
) -> tuple[dict[int, BoxPx], set[int]]:
    """The tap boxes of the offered actions whose centre lies on an action inside them (see
    the module): ``({element id: tap box}, {ids that are no target})``. What the tap box keeps
    clear of is every action element drawn later that is not occluded and not around it,
    offered or not (a list item past the ones shown still takes its taps), with its box (its
    tap box where a cover holds its centre): its own controls, and a control of a page stacked
    over it whose node does not cover it (no cover for the occlusion pass). ``takes[k]``:
    element ``k`` is such an action (not one folded into another), ``boxes_px[k]`` its box,
    ``past[k]`` the first element after its subtree, ``nodes[k]`` its node (elements are in
    document order; the search is ``fastpath.tree_tap_boxes``). Scroll
    areas, lists and web views keep their box (they are swiped, what is in them is what is
    tapped).

    No target (its box kept): one with nothing to choose it by (no text or description, no
    resource id to show, no long press: Habitica's row with its id stays, as it stays a
    wrapper in cluster), a page-sized one (:data:`PAGE_SHARE`) without text or with less than
    :data:`PAGE_LEFT` left clear, one with more than :data:`MAX_INNER_PARTS` actions over it,
    and one left with a sliver (an unlabelled one needs twice the sides: a part to aim at
    without a name). An unlabelled scrim or wrapper around a dialog offers "tap outside",
    which is the dismiss operation's business (a permission dialog's DENY), not a row, and an
    unlabelled bar's margins between its buttons are nothing to choose by; the margins
    between a page root's controls are no target either (QQ Music's full-screen root,
    labelled with a page stacked under it).
    """
    num, den = TAP_SIDE_SHARE
    screen = tree.screen
    min_side = max(min(screen.width_px, screen.height_px) * num // den, 1)
    page_area = screen.width_px * screen.height_px

    struck = []  # the ones whose centre an action inside them holds
    for k, after in enumerate(past):
        if after > k + 1 and takes[k]:
            left, top, right, bottom = boxes_px[k]
            cx, cy = (left + right) // 2, (top + bottom) // 2
            for j in range(k + 1, after):
                if takes[j]:
                    b = boxes_px[j]
                    if b[0] <= cx < b[2] and b[1] <= cy < b[3]:
                        struck.append(k)
                        break
    if not struck:
        return {}, set()
    slivers: set[int] = set()
    search: list[int] = []  # the ones to find the free part of
    pages: list[bool] = []
    for k in struck:
        e = elements[k]
        if e.id in hidden or int(e.flags) & _KEEPS_BOX or e.kind in ("list", "web"):
            continue
        flags = int(e.flags)
        # a long press its controls may not take is something to choose it by too
        named = bool(e.text) or len(e.resource_id) >= MIN_RID_CHARS or bool(flags & _LONG)
        page = e.box_px.area * PAGE_SHARE[1] >= page_area * PAGE_SHARE[0]
        if not named or (page and not e.text):
            slivers.add(e.id)  # nothing to choose it by: its controls are the targets
            continue
        search.append(k)
        pages.append(page)
    if not search:
        return {}, slivers
    crowded, free_px = fastpath.tree_tap_boxes(
        boxes_px, takes, search, nodes, tree.rank, tree.end, MAX_INNER_PARTS
    )
    boxes: dict[int, BoxPx] = {}
    for k, page, many, part in zip(
        search, pages, crowded.tolist(), free_px.tolist(), strict=True
    ):
        e = elements[k]
        if many:
            slivers.add(e.id)  # a page of controls: its margins are no target
            continue
        free = BoxPx(*part)
        side = min_side if e.text else 2 * min_side  # unlabelled: a part to aim at blind
        if free.width < side or free.height < side or (
            page and free.area * PAGE_LEFT[1] < e.box_px.area * PAGE_LEFT[0]
        ):
            slivers.add(e.id)
        else:
            boxes[e.id] = free
    return boxes, slivers


ROUTE_SHARE = (1, 2)
"""A modal barrier's route (:func:`outside_routes`) is a dialog, a sheet or a menu, with an
outside to tap, when its elements span at most this share of the barrier's area (numerator,
denominator); more is a page under a coach mark, and the barrier keeps its box."""


def outside_routes(
    elements: list[TreeElement], hidden: set[int], tree: CleanTree, barriers: list[int]
) -> tuple[dict[int, BoxPx], set[int]]:
    """The tap boxes of the layers that close a dialog at a tap outside it (``barriers``:
    element ids of ``tree.barriers``' nodes): the largest band of the layer's box clear of
    what it closes, above, below, left or right of it. Its centre is the middle of its box, on
    the dialog (a tap there reads the dialog's card, and nothing closes); a tap in the band
    lands on the layer. ``({element id: tap box}, {ids that are no target})``.

    What a layer closes: a bottom sheet's layer (``touch_outside``), its sheet's box (the
    sheet takes every touch on it); with no band left (the sheet fills the screen) the layer
    is no target, nothing of it shows (the agent presses back). Flutter's barrier, every
    element offered on its route (the nodes around the barrier's, or, for a barrier listed
    after the route, its earlier siblings'); over a route whose elements span more than
    :data:`ROUTE_SHARE` of it (a page under a coach mark) or that leaves no band, it keeps its
    box. A band narrower than :data:`TAP_SIDE_SHARE` of the screen's shorter side, twice, is
    nothing to aim at."""
    num, den = TAP_SIDE_SHARE
    screen = tree.screen
    min_side = 2 * max(min(screen.width_px, screen.height_px) * num // den, 1)
    b_num, b_den = BARRIER_SCREEN_SHARE  # a page-sized element on the route is no dialog's
    page_area = screen.width_px * screen.height_px
    end, clip, parent = tree.end, tree.clip_px, tree.raw.parent
    out: dict[int, BoxPx] = {}
    gone: set[int] = set()
    for k in barriers:
        bar = elements[k]
        node = bar.node
        sheet = bar.resource_id == SHEET_SCRIM_ID
        if sheet:
            route = [BoxPx(*clip[j].tolist()) for j in sheets_of(tree.raw, node)]
        else:
            if int(end[node]) > node + 1:
                first, stop = node + 1, int(end[node])  # around its route
            else:
                first, stop = int(parent[node]) + 1, node  # after it, a sibling
            route = [
                e.box_px for e in elements
                if first <= e.node < stop and e.id not in hidden
                and e.box_px.area * b_den < page_area * b_num
            ]
        if not route:
            continue
        left, top, right, bottom = bar.box_px
        r_left = max(min(b.left for b in route), left)
        r_top = max(min(b.top for b in route), top)
        r_right = min(max(b.right for b in route), right)
        r_bottom = min(max(b.bottom for b in route), bottom)
        spanned = (r_right - r_left) * (r_bottom - r_top)
        if not sheet and spanned * ROUTE_SHARE[1] > bar.box_px.area * ROUTE_SHARE[0]:
            continue  # a page under it, not a dialog: no outside to tap
        bands = (
            BoxPx(left, top, right, r_top),
            BoxPx(left, r_bottom, right, bottom),
            BoxPx(left, r_top, r_left, r_bottom),
            BoxPx(r_right, r_top, right, r_bottom),
        )
        best = max(bands, key=lambda b: b.area if b.width > 0 and b.height > 0 else -1)
        if best.width >= min_side and best.height >= min_side:
            out[k] = best
        elif sheet:
            gone.add(k)
    return out, gone
