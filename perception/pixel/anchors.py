"""OpenCV anchors: structure clues that cost milliseconds.

All work happens on a copy scaled by ``PixelConfig.anchor_scale`` (half size by default):

- projection profiles find full-width separators, hence the toolbar and bottom-navigation bars
  and the blocks between them;
- edges and contours propose cards and buttons (closed, nearly rectangular outlines);
- a saturation mask finds a highlighted tab or a primary (coloured) button;
- connected components of the edge map (read off the same contours: one outer border each)
  propose icon-like elements, and larger graphics (a logo, a thumbnail, album art) as images;
- template matching finds repeats of one icon, only inside a region of interest.

Each :class:`Anchor` has a kind, a box in device pixels and a score in 0-1.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

import cv2
import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.config import PixelConfig
from perception.geometry import clip_box, scale_box
from perception.pixel.flags import FrameFlags
from perception.pixel.frame import Frame
from perception.pixel.toggles import find_toggles
from perception.types import BoxPx

U8: TypeAlias = npt.NDArray[Any]
"""A uint8 image (OpenCV's stubs type its results loosely, so this is not narrowed)."""


@enum.unique
class PixelKind(enum.StrEnum):
    """What a pixel candidate or anchor looks like."""

    TEXT = "text"
    ICON = "icon"
    CARD = "card"
    BAR = "bar"
    TAB = "tab"
    BUTTON = "button"
    BLOCK = "block"
    IMAGE = "image"
    SWITCH = "switch"
    CHECK = "check"
    RADIO = "radio"
    """Toggle controls (:mod:`perception.pixel.toggles`), named as the tree names them."""


TOGGLE_KINDS = frozenset({PixelKind.SWITCH, PixelKind.CHECK, PixelKind.RADIO})


@dataclass(frozen=True, slots=True, kw_only=True)
class Anchor:
    """A structure clue from OpenCV, in device pixels."""

    kind: PixelKind
    box_px: BoxPx
    score: float
    glyph: str = ""
    """The menu glyph an icon's shape is (:data:`MENU_GLYPHS`: ⋮, ⋯ or ☰), else empty."""
    checked: bool | None = None
    """A toggle's state (on / off), None when unknown or not a toggle (:data:`TOGGLE_KINDS`)."""


def _small(frame: Frame, scale: float) -> U8:
    if scale >= 1.0:
        return frame.pixels
    h, w = frame.pixels.shape[:2]
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    out: U8 = cv2.resize(frame.pixels, size, interpolation=cv2.INTER_AREA)
    return out


def _separators(gray: U8, top: int, bottom: int) -> tuple[list[int], set[int]]:
    """Rows (in ``gray``) where a horizontal edge crosses most of the width, and those of them
    whose edge reaches both sides of the frame (within 3%)."""
    if bottom - top < 3:
        return [], set()
    step = cv2.absdiff(gray[top + 1 : bottom], gray[top : bottom - 1]) >= 12
    share = np.count_nonzero(step, axis=1) / step.shape[1]
    rows = np.flatnonzero(share >= 0.7)
    side = max(1, round(0.03 * gray.shape[1]))
    out: list[int] = []
    spanning: set[int] = set()
    for r in rows.tolist():
        row = top + r + 1
        if not out or row - out[-1] > 2:
            out.append(row)
            if step[r, :side].any() and step[r, -side:].any():
                spanning.add(row)
    return out, spanning


def _bars_and_blocks(gray: U8, flags: FrameFlags, scale: float) -> list[tuple[PixelKind, BoxPx]]:
    h, w = gray.shape[:2]
    status = round(flags.status_bar_px * scale)
    nav = round(flags.nav_bar_px * scale) if flags.nav_bar_side == "bottom" else 0
    content_bottom = h - nav
    seps, spanning = _separators(gray, status, content_bottom)
    out: list[tuple[PixelKind, BoxPx]] = []
    if status:
        out.append((PixelKind.BAR, BoxPx(0, 0, w, status)))
    if nav:
        out.append((PixelKind.BAR, BoxPx(0, content_bottom, w, h)))
    top_bar = [s for s in seps if status + 0.03 * h <= s <= status + 0.12 * h]
    if top_bar:
        out.append((PixelKind.BAR, BoxPx(0, status, w, top_bar[0])))
    # A bottom bar's separator runs from edge to edge; the top edge of a row of dialog buttons
    # or of a floating card, inset from the sides, crosses most of the width too.
    bottom_bar = [
        s
        for s in seps
        if content_bottom - 0.12 * h <= s <= content_bottom - 0.04 * h and s in spanning
    ]
    if bottom_bar:
        out.append((PixelKind.BAR, BoxPx(0, bottom_bar[-1], w, content_bottom)))
    edges = [status, *seps, content_bottom]
    for a, b in zip(edges, edges[1:], strict=False):
        if b - a >= 0.04 * h:
            out.append((PixelKind.BLOCK, BoxPx(0, a, w, b)))
    return out


def _edge_map(gray: U8) -> U8:
    """Canny edges, dilated so that an outline drawn with a gap still closes."""
    edges: U8 = cv2.dilate(cv2.Canny(gray, 40, 120), np.ones((3, 3), np.uint8))
    return edges


def _edge_shapes(edges: U8) -> tuple[Any, npt.NDArray[np.int32], npt.NDArray[np.bool_]]:
    """The edge map's contours (one findContours for cards, buttons and icons), each one's box
    as rows of ``x, y, width, height``, and which are outer borders. Every 8-connected
    component of the map has exactly one outer border with the component's own box, so the
    icons need no labelling pass of their own."""
    contours, hierarchy = cv2.findContours(edges, cv2.RETR_CCOMP, cv2.CHAIN_APPROX_SIMPLE)
    if not contours:
        return contours, np.zeros((0, 4), dtype=np.int32), np.zeros(0, dtype=bool)
    # Boxes of all contours at once (thousands of glyph outlines on a text-heavy screen).
    sizes = np.fromiter((len(c) for c in contours), dtype=np.int64, count=len(contours))
    points = np.concatenate(contours).reshape(-1, 2)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    x0 = np.minimum.reduceat(points[:, 0], starts)
    y0 = np.minimum.reduceat(points[:, 1], starts)
    cws = np.maximum.reduceat(points[:, 0], starts) - x0 + 1
    chs = np.maximum.reduceat(points[:, 1], starts) - y0 + 1
    return contours, np.stack([x0, y0, cws, chs], axis=1), hierarchy[0][:, 3] < 0


def _position(found: tuple[PixelKind, BoxPx, float]) -> tuple[int, int, int, int]:
    """A sort key in reading order. Anchors are sorted, not left in the order OpenCV lists
    contours or labels components: the NMS keeps the earlier of two boxes that tie."""
    box = found[1]
    return (box.top, box.left, box.bottom, box.right)


def _contour_boxes(
    contours: Any, boxes: npt.NDArray[np.int32], outer: npt.NDArray[np.bool_], h: int, w: int
) -> list[tuple[PixelKind, BoxPx, float]]:
    """Cards and buttons: closed contours that fill most of their box. An outline's inner
    border comes before its outer one (the NMS keeps the first of a tie), the one inside the
    drawn line."""
    x0, y0, cws, chs = boxes.T
    keep = (cws >= 0.08 * w) & (chs >= 0.02 * h) & (chs <= 0.5 * h) & (cws * chs <= 0.6 * w * h)
    out: list[tuple[PixelKind, BoxPx, float]] = []
    holes: list[bool] = []
    for i in np.flatnonzero(keep).tolist():
        x, y, cw, ch = int(x0[i]), int(y0[i]), int(cws[i]), int(chs[i])
        fill = float(cv2.contourArea(contours[i])) / float(cw * ch)
        if fill < 0.8:
            continue
        kind = (
            PixelKind.CARD
            if (cw >= 0.6 * w and ch >= 0.08 * h) or ch >= 0.15 * h
            else (PixelKind.BUTTON)
        )
        out.append((kind, BoxPx(x, y, x + cw, y + ch), round(min(1.0, fill), 3)))
        holes.append(not outer[i])
    order = sorted(range(len(out)), key=lambda k: (not holes[k], *_position(out[k])))
    return [out[k] for k in order]


BAR_BACKGROUND_IOU = 0.7
"""A coloured region that covers a bar this closely is the bar's background."""


def _saturated(
    small: U8, bars: list[BoxPx], h: int, w: int
) -> list[tuple[PixelKind, BoxPx, float]]:
    hsv = cv2.cvtColor(small, cv2.COLOR_BGR2HSV)
    mask = cv2.inRange(hsv, (0, 90, 70), (180, 255, 255))
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    # Labelling costs by the pixel, and most screens hold little colour: label only the
    # rectangle around it (half the frame at the median on the corpus; the same components).
    left, top, cw_roi, ch_roi = cv2.boundingRect(mask)
    if cw_roi == 0:
        return []
    _, _, stats, _ = cv2.connectedComponentsWithStats(
        mask[top : top + ch_roi, left : left + cw_roi], connectivity=8
    )
    cws, chs = stats[:, 2], stats[:, 3]
    sized = (cws >= 0.08 * w) & (chs >= 0.015 * h) & (chs <= 0.12 * h) & (cws >= 1.2 * chs)
    sized[0] = False  # the background
    out: list[tuple[PixelKind, BoxPx, float]] = []
    # Labels come in the order of OpenCV's parallel stripes: sort for an order of our own.
    picked = sorted(np.flatnonzero(sized).tolist(), key=lambda i: (stats[i, 1], stats[i, 0]))
    for i in picked:
        x, y, cw, ch, area = (int(v) for v in stats[i])
        x, y = x + left, y + top
        fill = area / float(cw * ch)
        if fill < 0.55:
            continue
        box = BoxPx(x, y, x + cw, y + ch)
        if bars and fastpath.pixel_iou([box], bars).max() >= BAR_BACKGROUND_IOU:
            continue  # a coloured toolbar or bottom bar: the bar itself, not a tab in it
        cy = (y + y + ch) // 2
        in_bar = any(b.top <= cy < b.bottom for b in bars)
        out.append((PixelKind.TAB if in_bar else PixelKind.BUTTON, box, round(fill, 3)))
    return out


ICON_SIDE = (0.025, 0.14)
IMAGE_SIDE_MAX = 0.6
"""Icon and image sides as shares of the frame width: a component up to 14% wide is an icon, up
to 60% an image (a logo, a thumbnail); larger ones are layout, left to cards and blocks."""


def _icons(
    edges: U8, contours: Any, boxes: npt.NDArray[np.int32], outer: npt.NDArray[np.bool_], w: int
) -> list[tuple[PixelKind, BoxPx, float]]:
    """Icons and images: the edge map's connected components of icon or image size, squarish
    and not too hollow."""
    x0, y0, cws, chs = boxes.T
    lo, hi = ICON_SIDE[0] * w, ICON_SIDE[1] * w
    side_max = IMAGE_SIDE_MAX * w
    sized = outer & (cws >= lo) & (cws <= side_max) & (chs >= lo) & (chs <= side_max)
    out: list[tuple[PixelKind, BoxPx, float]] = []
    for i in np.flatnonzero(sized).tolist():
        x, y, cw, ch = int(x0[i]), int(y0[i]), int(cws[i]), int(chs[i])
        aspect = cw / float(ch)
        if not 0.6 <= aspect <= 1.67:
            continue
        # The component's pixel count: it lies wholly inside its box, so labelling the box
        # finds all of it, as the label under its border's first point.
        _, labels, stats, _ = cv2.connectedComponentsWithStats(
            edges[y : y + ch, x : x + cw], connectivity=8
        )
        px, py = (int(v) for v in contours[i][0][0])
        density = int(stats[labels[py - y, px - x], 4]) / float(cw * ch)
        if density < 0.08:
            continue
        squareness = min(aspect, 1.0 / aspect)
        kind = PixelKind.ICON if cw <= hi and ch <= hi else PixelKind.IMAGE
        out.append((kind, BoxPx(x, y, x + cw, y + ch), round(0.5 + 0.4 * squareness, 3)))
    return sorted(out, key=_position)


MENU_SIDE_MAX = 0.08
"""The overflow (⋮) and drawer (☰) glyphs are at most this share of the frame width long."""
MENU_GLYPHS = ("⋮", "⋯", "☰")
"""What the glyph rule names: the overflow menu upright and lying, and the navigation drawer.
The glyphs themselves, not words: one or two tokens, read by a model as the icon they draw, and
never taken for text on the screen (a word "more" could be a label OCR read)."""


def _runs(ink: npt.NDArray[np.bool_]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """Starts and ends (exclusive) of the True runs of a 1-D mask."""
    edges = np.flatnonzero(np.diff(np.concatenate(([0], ink.view(np.int8), [0]))))
    return edges[0::2], edges[1::2]


def _even(values: npt.NDArray[np.intp]) -> bool:
    return bool(values.max() <= 1.5 * values.min() + 1)


def _three_strokes(ink: npt.NDArray[np.float32], bars: bool) -> bool:
    """Does this patch of darkness (rows x columns, against the background) hold exactly three
    strokes one above the other, of one thickness and about one gap apart: round dots (⋮) or,
    if ``bars``, bars of one length running unbroken from side to side (☰)?"""
    mark = ink > float(ink.max()) / 2
    starts, ends = _runs(np.asarray(mark.any(axis=1)))
    if len(starts) != 3:
        return False
    thick, gaps = ends - starts, starts[1:] - ends[:-1]
    if not (_even(thick) and _even(gaps) and gaps.max() <= 2 * thick.max() + 1):
        return False
    spans = []
    for top, bottom in zip(starts.tolist(), ends.tolist(), strict=True):
        left, right = _runs(np.asarray(mark[top:bottom].any(axis=0)))
        if len(left) != 1:
            return False  # letters side by side, or a bullet before a line
        spans.append((int(left[0]), int(right[0])))
    widths = np.array([r - left for left, r in spans])
    if not _even(widths) or max(abs(spans[0][0] - x) for x, _ in spans) > 2:
        return False
    if bars:
        return bool(widths.min() >= 3 * thick.max())
    return bool(widths.max() <= 1.6 * thick.max() + 1 and thick.max() <= 1.6 * widths.min() + 1)


def _three_runs_down(gray: U8, seeds: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """For each box (rows of left, top, right, bottom in ``gray``), whether the column down its
    middle crosses exactly three strokes, and for a box as wide as tall (bars) the columns at
    a quarter and three quarters of its width too: the cheap test, all boxes at once, that
    words and letters fail before any is looked at closely (the middle of an "e" or a "B"
    crosses three strokes, their left side one)."""
    x0, y0, x1, y1 = seeds.T
    heights = y1 - y0
    steps = np.arange(int(heights.max()))[None, :]
    valid = steps < heights[:, None]
    rows = np.minimum(y0[:, None] + steps, gray.shape[0] - 1)

    def runs(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.intp]:
        starts: npt.NDArray[np.bool_] = np.diff(mask.view(np.int8), axis=1, prepend=0) == 1
        counts: npt.NDArray[np.intp] = np.count_nonzero(starts, axis=1)
        return counts

    ok = np.ones(len(seeds), dtype=bool)
    wide = (x1 - x0) >= heights
    for quarter in (2, 1, 3):
        vals = gray[rows, (x0 + (x1 - x0) * quarter // 4)[:, None]].astype(np.int16)
        lo = np.where(valid, vals, 255).min(axis=1)
        hi = np.where(valid, vals, 0).max(axis=1)
        above = valid & (2 * vals > (lo + hi)[:, None])
        three = ((runs(above) == 3) | (runs(valid & ~above) == 3)) & (hi - lo >= 30)
        ok &= three if quarter == 2 else three | ~wide
    return ok


def _menu_glyphs(
    frame: Frame,
    gray: U8,
    boxes: npt.NDArray[np.int32],
    outer: npt.NDArray[np.bool_],
    scale: float,
) -> list[tuple[PixelKind, BoxPx, float, str]]:
    """The overflow menu, upright (⋮) or lying (⋯, the "more" of Weibo, WeChat and iOS-styled
    apps), and the navigation drawer (☰): three dots or three bars, each far too small or too
    thin for an icon, so ``_icons`` cannot see them, yet the most tapped icons of a toolbar.
    Their parts are separate components in the edge map, or one when they sit close (a thin
    column for ⋮ on a small screen). Either way the frame's own pixels must show exactly three
    even strokes, with nothing else drawn in the square the glyph is drawn in (the dots of an
    app icon's grid, a patterned photo, the letters before an ellipsis). ⋯ is found as ⋮ in
    the transposed frame. Each comes with its glyph (:data:`MENU_GLYPHS`)."""
    if not len(boxes):
        return []
    width = frame.pixels.shape[1] * scale
    shapes = boxes[outer]
    found = _upright_glyphs(frame.pixels, gray, shapes, scale, width, drawer=True)
    lying = _upright_glyphs(
        frame.pixels.swapaxes(0, 1),
        np.ascontiguousarray(gray.T),
        shapes[:, [1, 0, 3, 2]],
        scale,
        width,
        drawer=False,
    )
    found.extend(
        (kind, BoxPx(b.top, b.left, b.bottom, b.right), score, "⋯")
        for kind, b, score, _ in lying
    )
    return found


def _upright_glyphs(
    pixels: U8,
    gray: U8,
    boxes: npt.NDArray[np.int32],
    scale: float,
    w: float,
    *,
    drawer: bool,
) -> list[tuple[PixelKind, BoxPx, float, str]]:
    """⋮, and ☰ if ``drawer``, among the edge map's outer components (``boxes``: rows of x, y,
    width, height in ``gray``, the scaled copy of ``pixels``); ``w`` is the scaled frame's
    width, whichever way the arrays lie."""
    if not len(boxes):
        return []
    x0, y0, cws, chs = boxes.T.astype(np.int64)
    long_side = np.maximum(cws, chs)
    small = (long_side <= MENU_SIDE_MAX * w) & (long_side >= 3)
    seeds: set[tuple[int, int, int, int]] = set()
    # One component: a column three times as tall as wide (⋮ whose dots touch in the map),
    # or a block about as wide as ☰ (its bars merged).
    wide = (cws >= chs) & (cws <= 2.2 * chs) & drawer
    one = small & (chs >= ICON_SIDE[0] * w * 0.8) & ((cws * 2.5 <= chs) | wide)
    for i in np.flatnonzero(one).tolist():
        seeds.add((int(x0[i]), int(y0[i]), int(x0[i] + cws[i]), int(y0[i] + chs[i])))
    # Three parts of one width, one above the other, left edges aligned: dots (squarish) or
    # bars (three times as long as thick at least).
    shaped = ((cws * 5 >= chs * 3) & (cws * 3 <= chs * 5)) | ((cws >= 3 * chs) & drawer)
    parts = np.flatnonzero(small & shaped & (chs < ICON_SIDE[0] * w)).tolist()
    parts.sort(key=lambda i: (int(x0[i]), int(y0[i])))
    for n, i in enumerate(parts):
        stack = [i]
        for j in parts[n + 1 :]:
            if x0[j] - x0[i] > 2:
                break
            last = stack[-1]
            gap = y0[j] - (y0[last] + chs[last])
            if 0 <= gap <= 2 * chs[last] + 2 and abs(cws[j] - cws[i]) <= max(2, 0.2 * cws[i]):
                stack.append(j)
                if len(stack) == 3:
                    break
        if len(stack) == 3:
            right = max(int(x0[k] + cws[k]) for k in stack)
            seeds.add((int(x0[i]), int(y0[i]), right, int(y0[stack[2]] + chs[stack[2]])))
    if not seeds:
        return []
    ordered = np.array(sorted(seeds, key=lambda b: (b[1], b[0])), dtype=np.int64)
    ordered = ordered[_three_runs_down(gray, ordered)]
    inv = 1.0 / scale
    height, full_width = pixels.shape[:2]
    out: list[tuple[PixelKind, BoxPx, float, str]] = []
    for left, top, right, bottom in ordered.tolist():
        bw, bh = right - left, bottom - top
        bars = bw * 2.5 > bh
        if bars and not (drawer and 1.0 <= bw / bh <= 2.2):
            continue  # neither a column of dots nor a stack of bars
        # The square the glyph is drawn in (⋮ and ☰ are 16-18 dp long in a 24 dp square), at
        # full size, and the glyph's box inside it.
        cx, cy, side = (left + right) * inv / 2, (top + bottom) * inv / 2, max(bw, bh) * inv * 4 / 3
        sx0, sy0 = round(cx - side / 2), round(cy - side / 2)
        sx1, sy1 = round(cx + side / 2), round(cy + side / 2)
        if sx0 < 0 or sy0 < 0 or sx1 > full_width or sy1 > height:
            continue
        patch = np.ascontiguousarray(pixels[sy0:sy1, sx0:sx1])
        if patch.ndim == 3:
            patch = cv2.cvtColor(patch, cv2.COLOR_BGR2GRAY)
        # The background is what the square's border shows (a flat toolbar or row).
        border = np.concatenate((patch[0], patch[-1], patch[:, 0], patch[:, -1]))
        ink = np.abs(patch.astype(np.float32) - float(np.median(border)))
        gx0, gy0 = max(0, int(left * inv) - 1 - sx0), max(0, int(top * inv) - 1 - sy0)
        gx1, gy1 = int(right * inv) + 1 - sx0, int(bottom * inv) + 1 - sy0
        glyph = ink[gy0:gy1, gx0:gx1]
        if glyph.size == 0 or float(glyph.max()) < 40.0:
            continue
        ring = ink.copy()
        ring[gy0:gy1, gx0:gx1] = 0.0
        if float(ring.max()) > 0.4 * float(glyph.max()):
            continue  # something else is drawn in the glyph's square
        if _three_strokes(glyph, bars):
            # Like every anchor here, in the scaled copy's pixels.
            square = BoxPx(*(round(v * scale) for v in (sx0, sy0, sx1, sy1)))
            out.append((PixelKind.ICON, square, 0.8, "☰" if bars else "⋮"))
    return out


def find_anchors(
    frame: Frame, flags: FrameFlags, config: PixelConfig | None = None
) -> list[Anchor]:
    """Every anchor of a frame, boxes in device pixels, de-duplicated per kind (NMS)."""
    cfg = config or PixelConfig()
    if flags.uniform:
        return []
    scale = cfg.anchor_scale
    small = _small(frame, scale)
    gray = cv2.cvtColor(small, cv2.COLOR_BGR2GRAY)
    h, w = gray.shape[:2]
    edges = _edge_map(gray)
    found: list[tuple[PixelKind, BoxPx, float]] = []
    bars_blocks = _bars_and_blocks(gray, flags, scale)
    found.extend((k, b, 0.6) for k, b in bars_blocks)
    bars = [b for k, b in bars_blocks if k is PixelKind.BAR]
    contours, boxes, outer = _edge_shapes(edges)
    found.extend(_contour_boxes(contours, boxes, outer, h, w))
    found.extend(_saturated(small, bars, h, w))
    found.extend(_icons(edges, contours, boxes, outer, w))
    glyphs = [""] * len(found)
    for kind, box, score, glyph in _menu_glyphs(frame, gray, boxes, outer, scale):
        found.append((kind, box, score))
        glyphs.append(glyph)
    states: list[bool | None] = [None] * len(found)
    for name, box, score, checked in find_toggles(frame.pixels, edges, boxes, outer, scale):
        kind = PixelKind(name)
        if kind is not PixelKind.SWITCH and any(b.contains(box.center) for b in bars):
            continue  # an outlined square or a ring in a toolbar is an action's icon
        found.append((kind, box, score))
        glyphs.append("")
        states.append(checked)
    if not found:
        return []
    inv = 1.0 / scale
    screen = frame.size.box_px
    anchors = [
        Anchor(kind=k, box_px=clip_box(scale_box(b, inv), screen), score=s, glyph=g, checked=c)
        for (k, b, s), g, c in zip(found, glyphs, states, strict=True)
    ]
    return dedupe_anchors(anchors)


def dedupe_anchors(anchors: list[Anchor], iou_threshold: float = 0.6) -> list[Anchor]:
    """Per-kind NMS (best score first, ties by order), keeping the input order. An anchor that
    loses to another on about its box hands it its glyph: the ordinary icon rule often finds
    a ⋮ too, with a higher score."""
    keep = np.zeros(len(anchors), dtype=bool)
    out = list(anchors)
    for kind in PixelKind:
        idx = [i for i, a in enumerate(anchors) if a.kind is kind]
        if not idx:
            continue
        boxes = np.array([anchors[i].box_px for i in idx], dtype=np.int32)
        scores = np.array([anchors[i].score for i in idx], dtype=np.float64)
        mask = fastpath.pixel_nms(boxes, scores, iou_threshold)
        for i, m in zip(idx, mask.tolist(), strict=True):
            keep[i] = m
        named = [k for k, i in enumerate(idx) if anchors[i].glyph and not mask[k]]
        if named:
            iou = fastpath.pixel_iou(boxes[named], boxes)
            iou[:, ~mask] = -1.0
            for row, k in enumerate(named):
                best = int(np.argmax(iou[row]))
                winner = idx[best]
                if iou[row, best] >= iou_threshold and not out[winner].glyph:
                    out[winner] = replace(out[winner], glyph=anchors[idx[k]].glyph)
    return [a for a, k in zip(out, keep.tolist(), strict=True) if k]


def repeated_icons(
    frame: Frame, template_box: BoxPx, roi: BoxPx, *, threshold: float = 0.85
) -> list[Anchor]:
    """Matches of the icon in ``template_box`` inside ``roi`` (never the whole frame).

    Uses normalised cross-correlation on gray pixels; overlapping matches are suppressed and
    the template's own position is included when it lies inside ``roi``.
    """
    screen = frame.size.box_px
    tb = clip_box(template_box, screen)
    rb = clip_box(roi, screen)
    if tb.width < 4 or tb.height < 4 or rb.width < tb.width or rb.height < tb.height:
        return []
    gray = cv2.cvtColor(frame.pixels, cv2.COLOR_BGR2GRAY)
    templ = gray[tb.top : tb.bottom, tb.left : tb.right]
    region = gray[rb.top : rb.bottom, rb.left : rb.right]
    if float(templ.std()) < 1.0:
        return []
    res = cv2.matchTemplate(region, templ, cv2.TM_CCOEFF_NORMED)
    ys, xs = np.nonzero(res >= threshold)
    if ys.size == 0:
        return []
    boxes = np.stack(
        [xs + rb.left, ys + rb.top, xs + rb.left + tb.width, ys + rb.top + tb.height], axis=1
    )
    scores = res[ys, xs].astype(np.float64)
    keep = fastpath.pixel_nms(boxes, scores, 0.3)
    out: list[Anchor] = []
    for i in np.flatnonzero(keep).tolist():
        left, top, right, bottom = (int(v) for v in boxes[i])
        box = BoxPx(left, top, right, bottom)
        out.append(Anchor(kind=PixelKind.ICON, box_px=box, score=round(float(scores[i]), 4)))
    out.sort(key=lambda a: (a.box_px.top, a.box_px.left))
    return out
