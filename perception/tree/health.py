"""Stage 6: health. Signals the arbiter uses to decide how far the tree can be trusted."""

from __future__ import annotations

import numpy as np

from perception import fastpath
from perception.tree.clean import CleanTree, floats
from perception.types import TreeHealth

_CANVAS_SHARE = 0.5


def _union_area(boxes: np.ndarray, width: int, height: int) -> int:
    """Union area of boxes, approximated on a 64 x 64 grid over the screen (cheap, good enough)."""
    if boxes.size == 0 or width <= 0 or height <= 0:
        return 0
    cells = 64
    mask = np.zeros((cells, cells), dtype=bool)
    for left, top, right, bottom in boxes.tolist():
        x0, x1 = left * cells // width, -(-right * cells // width)
        y0, y1 = top * cells // height, -(-bottom * cells // height)
        mask[y0:y1, x0:x1] = True
    return int(mask.sum()) * width * height // (cells * cells)


def _floating(roots: np.ndarray, width: int, height: int) -> bool:
    """The window roots together float over the screen (:func:`~perception.tree.clean.floats`:
    a dialog, pop-up or bottom sheet dumped alone)."""
    if roots.size == 0:
        return False
    box = (
        int(roots[:, 0].min()), int(roots[:, 1].min()),
        int(roots[:, 2].max()), int(roots[:, 3].max()),
    )
    return floats(box, width, height)


def blank_web_views(tree: CleanTree) -> np.ndarray:
    """For each node, is it a WebView that holds no kept node (not dropped, not a pure layout
    container)? The page such a view shows is not in the dump at all (Firefox's pages)."""
    bits = tree.bits
    alive = (bits & fastpath.B_DROPPED) == 0
    kept = alive & ((bits & fastpath.B_LAYOUT) == 0)
    blank = np.zeros(tree.raw.count, dtype=bool)
    for i in np.flatnonzero(alive & ((bits & fastpath.B_WEBVIEW) != 0)).tolist():
        blank[i] = not kept[i + 1 : int(tree.end[i])].any()
    return blank


def health(tree: CleanTree, element_count: int) -> TreeHealth:
    bits = tree.bits
    n = tree.raw.count
    screen = tree.screen
    screen_area = max(1, screen.width_px * screen.height_px)
    alive = (bits & fastpath.B_DROPPED) == 0
    kept = alive & ((bits & fastpath.B_LAYOUT) == 0)
    kept_count = int(kept.sum())

    # Leaves: alive nodes without alive children.
    has_child = np.zeros(n, dtype=bool)
    parents = tree.raw.parent[alive]
    has_child[parents[parents >= 0]] = True
    leaves = alive & ~has_child
    labelled = (bits & (fastpath.B_HAS_TEXT | fastpath.B_HAS_DESC)) != 0
    leaf_count = int(leaves.sum())
    text_share = float((leaves & labelled).sum()) / leaf_count if leaf_count else 0.0

    clip = tree.clip_px.astype(np.int64)
    area = (clip[:, 2] - clip[:, 0]) * (clip[:, 3] - clip[:, 1])

    def share(mask: np.ndarray) -> float:
        return min(1.0, _union_area(clip[mask & alive], screen.width_px, screen.height_px)
                   / screen_area)

    webview = share((bits & fastpath.B_WEBVIEW) != 0)
    blank_web_share = share(blank_web_views(tree))
    surface = share((bits & fastpath.B_SURFACE) != 0)
    canvas = leaves & ~labelled & (area >= _CANVAS_SHARE * screen_area)
    canvas_share = share(canvas)
    roots = alive & (tree.raw.parent < 0)
    covered = share(roots)
    empty = n == 0
    floating = _floating(clip[roots], screen.width_px, screen.height_px)
    # A dialog, pop-up or bottom sheet is dumped as its own window: small, but whole.
    looks_partial = (not empty) and ((covered < 0.5 and not floating) or kept_count == 0)
    return TreeHealth(
        node_count=n,
        kept_count=kept_count,
        element_count=element_count,
        nodes_per_mpx=kept_count / (screen_area / 1e6),
        text_share=round(text_share, 4),
        webview_area_share=round(webview, 4),
        blank_web_area_share=round(blank_web_share, 4),
        surface_area_share=round(surface, 4),
        canvas_area_share=round(canvas_share, 4),
        covered_area_share=round(covered, 4),
        looks_partial=looks_partial,
        empty=empty,
        floating_window=floating,
    )
