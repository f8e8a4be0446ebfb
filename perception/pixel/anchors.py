"""OpenCV anchors: structure clues that cost milliseconds.

All work happens on a copy scaled by ``PixelConfig.anchor_scale`` (half size by default):

- projection profiles find full-width separators, hence the toolbar and bottom-navigation bars
  and the blocks between them;
- edges and contours propose cards and buttons (closed, nearly rectangular outlines);
- a saturation mask finds a highlighted tab or a primary (coloured) button;
- connected components of the edge map (read off the same contours: one outer border each)
  propose icon-like elements, and larger graphics (a logo, a thumbnail, album art) as images;
- template matching finds repeats of one icon, only inside a region of interest;
- thin lines and one-line boxes propose text fields (:func:`find_fields`): an underline with
  at most its hint or value on it, or a wide outline whose text starts at its left padding.

Each :class:`Anchor` has a kind, a box in device pixels and a score in 0-1.
"""

from __future__ import annotations

import enum
import functools
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
    INPUT = "input"
    """A text field (:func:`find_fields`): an underline or a box one text line tall whose text,
    if any, starts at its left padding. The fusion offers it in the prompt's ``input`` group."""


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
    # 1 where a pixel differs from the one above it by 12 or more, counted by row: OpenCV's
    # passes, where numpy's compare and count_nonzero along an axis cost three times as much.
    _, step = cv2.threshold(
        cv2.absdiff(gray[top + 1 : bottom], gray[top : bottom - 1]), 11, 1, cv2.THRESH_BINARY
    )
    counts = cv2.reduce(step, 1, cv2.REDUCE_SUM, dtype=cv2.CV_32S).ravel()
    share = counts / step.shape[1]
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
    sizes = np.fromiter(map(len, contours), dtype=np.int64, count=len(contours))
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


FLAT_RANGE = 2
"""A pixel of the scaled copy is flat when its 3x3 neighbourhood spans at most this many grey
levels. (Read on a grid of every second pixel, the neighbourhood twice as wide, launcher icons
on a blurred wallpaper and stars on a red tile were taken for pictures.)"""
AROUND_FLAT_MAX = 0.35
AROUND_COLOURS_MIN = 6
"""An icon-sized shape lies on a picture (a photo, a video frame, an illustration) when the band
round it (:data:`PICTURE_MARGIN`) has no flat background, at most this share of its pixels flat,
and shows many colours, at least this many (:data:`COLOUR_SHARE`). Around the icons of a page,
a toolbar, a list row or an icon grid the band is flat at 0.5-1.0, text included; on the
corpus's photos and game art at 0.0-0.35 with 6-50 colours. A glyph nested in a flat disc or
square, or text, shows 2-5 colours round it."""
COLOUR_SHARE = 0.9
"""Colours are counted as the fewest of the 512 colour bins (8 levels a channel) that hold this
share of a region's pixels: a flat page with text needs 1-3, a photo tens."""
INSIDE_FLAT_MAX = 0.5
INSIDE_COLOURS_MIN = 10
"""A box is a picture inside at most this share flat and with at least this many colours (as
above): video cards, thumbnails and banners on the corpus lie at 0.0-0.5 and 10-80 colours; a
list card with an avatar, a text-only ad at 0.5-1.0 and 1-9."""
PICTURE_MARGIN = 0.5
"""Around an icon-sized shape, the band whose texture decides whether it lies on a picture is
this share of its longer side wide."""
HOLDER_MARGIN = 0.15
HOLDER_FLAT_MIN = 0.7
HOLDER_COLOURS_MAX = 3
"""A shape on a picture whose own edge is lost in the picture's (a play disc whose rim touches
the video's edges) is still a button when the glyph in it lies on a flat fill: the band this
share of its side wide round it is at least this flat, in at most this many colours."""
PICTURE_SIDES_MIN = (0.3, 0.1)
"""A card or a button outline is a picture (:attr:`PixelKind.IMAGE`, a video card or a banner a
model can tap) when it is at least this share of the frame's width and height and textured
inside; a smaller textured outline stays a button (a gradient-filled button with its label)."""


class _Texture:
    """Where the scaled copy is a picture (:data:`AROUND_FLAT_MAX`, :data:`INSIDE_FLAT_MAX`):
    its flat pixels counted box by box (:func:`fastpath.flat_count`, one pass over each box:
    the boxes asked about cover a fifth of the copy at the median on the corpus), and colour
    bins counted only for the boxes that are not flat."""

    __slots__ = ("_gray", "_small", "h", "w")

    def __init__(self, small: U8, gray: U8) -> None:
        self.h, self.w = gray.shape[:2]
        self._small = small
        self._gray = gray

    def _flat_in(self, box: BoxPx) -> tuple[int, int]:
        """The flat pixels in ``box`` (inside the copy: :data:`FLAT_RANGE`, their 3x3
        neighbourhoods those of the whole copy, cut by its edges) and all its pixels."""
        return fastpath.flat_count(self._gray, box, FLAT_RANGE), box.area

    def _colour_bins(self, box: BoxPx) -> npt.NDArray[np.int16]:
        """Each pixel's colour bin (0-511, 8 levels a channel) in ``box``."""
        q = (self._small[box.top : box.bottom, box.left : box.right] >> 5).astype(np.int16)
        bins: npt.NDArray[np.int16] = (q[..., 0] << 6) | (q[..., 1] << 3) | q[..., 2]
        return bins

    @staticmethod
    def _colours(crop: npt.NDArray[np.int16], minus: npt.NDArray[np.int16] | None) -> int:
        """The fewest colour bins that hold :data:`COLOUR_SHARE` of the pixels of ``crop``
        less those of ``minus`` (a part of it)."""
        counts = np.bincount(crop.ravel(), minlength=512)
        if minus is not None:
            counts = counts - np.bincount(minus.ravel(), minlength=512)
        held = np.cumsum(np.sort(counts)[::-1])
        return int(np.searchsorted(held, COLOUR_SHARE * held[-1])) + 1

    def inside(self, box: BoxPx) -> bool:
        """Is ``box`` (in the scaled copy) a picture inside?"""
        flat, area = self._flat_in(box)
        if area <= 0 or flat > INSIDE_FLAT_MAX * area:
            return False
        return self._colours(self._colour_bins(box), None) >= INSIDE_COLOURS_MIN

    def _band(self, box: BoxPx, margin: float) -> tuple[BoxPx, float]:
        """The box round ``box`` whose band is ``margin`` of its longer side wide (at least a
        pixel), and the band's flat share (1.0 when there is no band: ``box`` fills the copy)."""
        m = max(1, round(margin * max(box.width, box.height)))
        band = clip_box(
            BoxPx(box.left - m, box.top - m, box.right + m, box.bottom + m),
            BoxPx(0, 0, self.w, self.h),
        )
        flat_band, in_band = self._flat_in(band)
        flat_box, in_box = self._flat_in(box)
        if in_band <= in_box:
            return band, 1.0
        return band, (flat_band - flat_box) / (in_band - in_box)

    def _band_colours(self, band: BoxPx, box: BoxPx) -> int:
        bins = self._colour_bins(band)
        dx, dy = box.left - band.left, box.top - band.top
        return self._colours(bins, bins[dy : dy + box.height, dx : dx + box.width])

    def around(self, box: BoxPx) -> bool:
        """Does ``box`` (in the scaled copy) lie on a picture: is the band round it
        (:data:`PICTURE_MARGIN`) textured?"""
        band, flat = self._band(box, PICTURE_MARGIN)
        if flat > AROUND_FLAT_MAX:
            return False
        return self._band_colours(band, box) >= AROUND_COLOURS_MIN

    def held(self, box: BoxPx) -> bool:
        """Is ``box`` drawn on a flat fill (:data:`HOLDER_MARGIN`): a glyph on a button?"""
        band, flat = self._band(box, HOLDER_MARGIN)
        if flat < HOLDER_FLAT_MIN:
            return False
        return self._band_colours(band, box) <= HOLDER_COLOURS_MAX


def _contour_boxes(
    contours: Any,
    boxes: npt.NDArray[np.int32],
    outer: npt.NDArray[np.bool_],
    h: int,
    w: int,
    texture: _Texture | None = None,
) -> list[tuple[PixelKind, BoxPx, float]]:
    """Cards and buttons: closed contours that fill most of their box. An outline's inner
    border comes before its outer one (the NMS keeps the first of a tie), the one inside the
    drawn line. A sizeable one that is a picture inside (:data:`PICTURE_SIDES_MIN`,
    :class:`_Texture`) is an image: a video card, a banner."""
    x0, y0, cws, chs = boxes.T
    keep = (cws >= 0.08 * w) & (chs >= 0.02 * h) & (chs <= 0.5 * h) & (cws * chs <= 0.6 * w * h)
    out: list[tuple[PixelKind, BoxPx, float]] = []
    holes: list[bool] = []
    for i in np.flatnonzero(keep).tolist():
        x, y, cw, ch = int(x0[i]), int(y0[i]), int(cws[i]), int(chs[i])
        fill = float(cv2.contourArea(contours[i])) / float(cw * ch)
        if fill < 0.8:
            continue
        box = BoxPx(x, y, x + cw, y + ch)
        kind = (
            PixelKind.CARD
            if (cw >= 0.6 * w and ch >= 0.08 * h) or ch >= 0.15 * h
            else (PixelKind.BUTTON)
        )
        if (
            texture is not None
            and cw >= PICTURE_SIDES_MIN[0] * w
            and ch >= PICTURE_SIDES_MIN[1] * h
            and texture.inside(box)
        ):
            kind = PixelKind.IMAGE
        out.append((kind, box, round(min(1.0, fill), 3)))
        holes.append(not outer[i])
    order = sorted(range(len(out)), key=lambda k: (not holes[k], *_position(out[k])))
    return [out[k] for k in order]


BAR_BACKGROUND_IOU = 0.7
"""A coloured region that covers a bar this closely is the bar's background."""


SATURATION_MIN = 90
VALUE_MIN = 70
"""A tab or a button is in colour: HSV saturation and value (0-255) at least these."""


@functools.cache
def _spread_floor(saturation: int, value: int) -> npt.NDArray[np.uint8]:
    """For each brightest-channel level ``v`` (OpenCV's HSV value), the smallest channel spread
    ``max - min`` whose HSV saturation is at least ``saturation``, or 255 (out of reach: the
    spread never exceeds ``v``) when ``v`` is under ``value``. OpenCV's 8-bit saturation is a
    function of ``v`` and the spread alone, rounded its own way: the table is read off
    ``cvtColor`` itself, so the mask of :func:`_colour_mask` is ``inRange`` of the HSV copy, pixel
    for pixel (the parity test checks every one of the 2^24 colours)."""
    v = np.arange(256, dtype=np.int16)[:, None]
    spread = np.arange(256, dtype=np.int16)[None, :]
    probe = np.empty((256, 256, 3), dtype=np.uint8)
    probe[..., 0] = probe[..., 1] = np.clip(v - spread, 0, 255)  # blue and green the smallest
    probe[..., 2] = np.broadcast_to(v, (256, 256))  # red the largest: value v, spread s
    sat = cv2.cvtColor(probe, cv2.COLOR_BGR2HSV)[..., 1]
    hit = (sat >= saturation) & (spread <= v) & (v >= value)
    floor = np.where(hit.any(axis=1), hit.argmax(axis=1), 255).astype(np.uint8)
    floor.flags.writeable = False
    return floor


def _colour_mask(small: U8) -> U8:
    """255 where ``small`` (BGR) is in colour (:data:`SATURATION_MIN`, :data:`VALUE_MIN`), else
    0: ``inRange`` of its HSV copy, in one pass over the pixels instead of an HSV copy (hue and
    all) and a pass over that (:func:`fastpath.spread_mask`)."""
    return fastpath.spread_mask(small, _spread_floor(SATURATION_MIN, VALUE_MIN))


def _components(mask: U8) -> tuple[U8, U8]:
    """``connectedComponentsWithStats`` (8-connected) of a 0/255 mask: its labels and stats.
    Labels as 16-bit numbers cost half as much as 32-bit ones (the same components, numbered
    alike); OpenCV refuses a mask with more provisional labels than 16 bits hold, and that one
    is labelled in 32 bits."""
    try:
        _, labels, stats, _ = cv2.connectedComponentsWithStats(
            mask, connectivity=8, ltype=cv2.CV_16U
        )
    except cv2.error:
        _, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    return labels, stats


def _saturated(
    small: U8, bars: list[BoxPx], h: int, w: int
) -> list[tuple[PixelKind, BoxPx, float]]:
    mask = _colour_mask(small)
    # Most screens hold little colour: open only the rectangle round it, a pixel wider on each
    # side (zero there, so the opening's border rule changes nothing), for opening adds no pixel.
    x_roi, y_roi, cw_roi, ch_roi = cv2.boundingRect(mask)
    if cw_roi == 0:
        return []
    left, top = max(0, x_roi - 1), max(0, y_roi - 1)
    right = min(mask.shape[1], x_roi + cw_roi + 1)
    bottom = min(mask.shape[0], y_roi + ch_roi + 1)
    kernel = np.ones((3, 3), np.uint8)
    opened = cv2.morphologyEx(mask[top:bottom, left:right], cv2.MORPH_OPEN, kernel)
    # The components' boxes are their outer borders' (:func:`_edge_shapes`), and tracing the
    # borders costs a third of labelling the pixels: only the few of a tab's size are labelled,
    # each in its own box, for its pixel count.
    contours, boxes, outer = _edge_shapes(opened)
    x0, y0, cws, chs = boxes.T
    sized = outer & (cws >= 0.08 * w) & (chs >= 0.015 * h) & (chs <= 0.12 * h) & (cws >= 1.2 * chs)
    out: list[tuple[PixelKind, BoxPx, float]] = []
    # Reading order; two boxes from one corner, the shorter, then the narrower, first.
    picked = sorted(
        np.flatnonzero(sized).tolist(),
        key=lambda i: (int(y0[i]), int(x0[i]), int(chs[i]), int(cws[i])),
    )
    for i in picked:
        x, y, cw, ch = int(x0[i]), int(y0[i]), int(cws[i]), int(chs[i])
        labels, stats = _components(opened[y : y + ch, x : x + cw])
        px, py = (int(v) for v in contours[i][0][0])
        area = int(stats[labels[py - y, px - x], 4])
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


OVERLAY_BAND = 0.12
"""An icon within this share of the frame's height from its top or bottom edge is a bar's
action even on a picture: a video player's back, search and share over the video's frame."""
OVERLAY_FILL_MIN = 0.7
OVERLAY_SOLIDITY_MIN = 0.95
OVERLAY_SQUARENESS_MIN = 0.85
"""An icon-sized shape on a picture is a button laid over it (a video's play disc, a game's
round or rounded-square button) when its outline is a disc or a rounded square: it fills at
least :data:`OVERLAY_FILL_MIN` of its box (a disc 0.79), its hull at least
:data:`OVERLAY_SOLIDITY_MIN` (no notch: an eye under its lid, a nose, a flame are ragged), and
its box is square within :data:`OVERLAY_SQUARENESS_MIN`. Anything else on a picture is part
of the picture, and the picture is the target (:func:`_contour_boxes`)."""


def _overlay(contour: Any, cw: int, ch: int) -> bool:
    """Is this outer border (of a ``cw`` by ``ch`` box) a disc or a rounded square
    (:data:`OVERLAY_FILL_MIN`)?"""
    if min(cw, ch) < OVERLAY_SQUARENESS_MIN * max(cw, ch):
        return False
    area = float(cv2.contourArea(contour))
    if area < OVERLAY_FILL_MIN * cw * ch:
        return False
    return area >= OVERLAY_SOLIDITY_MIN * float(cv2.contourArea(cv2.convexHull(contour)))


ICON_DENSITY_MIN = 0.08
"""An icon's component covers at least this share of its box (a ring's outline, not a frame's)."""


def _least_pixels(x: int, y: int, cw: int, ch: int, h: int, w: int) -> int:
    """The fewest pixels a component of the edge map (:func:`_edge_map`, ``h`` by ``w``) with
    the box ``x, y, cw, ch`` can have. The map is dilated by a 3x3 square, so a component is a
    union of whole squares (cut only by the map's edges): every column its box spans crosses
    one of them, three of its pixels, unless the box touches the map's top or bottom row (a
    cut square may leave one); every row likewise, unless it touches the left or right side.
    A component this dense for sure (:data:`ICON_DENSITY_MIN`) needs no labelling."""
    per_column = 3 if y >= 1 and y + ch <= h - 1 else 1
    per_row = 3 if x >= 1 and x + cw <= w - 1 else 1
    return max(per_column * cw, per_row * ch)


def _icons(
    edges: U8,
    contours: Any,
    boxes: npt.NDArray[np.int32],
    outer: npt.NDArray[np.bool_],
    w: int,
    texture: _Texture | None = None,
) -> list[tuple[PixelKind, BoxPx, float]]:
    """Icons and images: the edge map's connected components of icon or image size, squarish
    and not too hollow. One that lies on a picture (:meth:`_Texture.around`: the eyes in a
    photo, a flame drawn in it) is the picture's, unless it is a button laid over it
    (:func:`_overlay`)."""
    x0, y0, cws, chs = boxes.T
    h, map_w = edges.shape[:2]
    lo, hi = ICON_SIDE[0] * w, ICON_SIDE[1] * w
    side_max = IMAGE_SIDE_MAX * w
    sized = outer & (cws >= lo) & (cws <= side_max) & (chs >= lo) & (chs <= side_max)
    out: list[tuple[PixelKind, BoxPx, float]] = []
    for i in np.flatnonzero(sized).tolist():
        x, y, cw, ch = int(x0[i]), int(y0[i]), int(cws[i]), int(chs[i])
        aspect = cw / float(ch)
        if not 0.6 <= aspect <= 1.67:
            continue
        if _least_pixels(x, y, cw, ch, h, map_w) / float(cw * ch) < ICON_DENSITY_MIN:
            # The component's pixel count: it lies wholly inside its box, so labelling the
            # box finds all of it, as the label under its border's first point.
            labels, stats = _components(edges[y : y + ch, x : x + cw])
            px, py = (int(v) for v in contours[i][0][0])
            density = int(stats[labels[py - y, px - x], 4]) / float(cw * ch)
            if density < ICON_DENSITY_MIN:
                continue
        box = BoxPx(x, y, x + cw, y + ch)
        if (
            texture is not None
            and OVERLAY_BAND * h <= box.top
            and box.bottom <= (1.0 - OVERLAY_BAND) * h
            and texture.around(box)
            and not _overlay(contours[i], cw, ch)
            and not texture.held(box)
        ):
            continue
        squareness = min(aspect, 1.0 / aspect)
        kind = PixelKind.ICON if cw <= hi and ch <= hi else PixelKind.IMAGE
        out.append((kind, box, round(0.5 + 0.4 * squareness, 3)))
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
    crosses three strokes, their left side one). A stroke is a run lighter or darker than the
    middle of the column's darkest and lightest, 30 grey levels apart at least
    (:func:`fastpath.three_runs`: one pass down each column, where numpy's gathers and
    reductions over every box's rows cost ten times as much)."""
    return fastpath.three_runs(gray, seeds, 30)


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
        gray.T,  # a view: only a few columns of it are read (_three_runs_down)
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
        ink = np.abs(patch.astype(np.float32) - _median(border))
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


FIELD_LINE_STEP = 25
"""An underline differs from the rows a few pixels above and below it by this much luma, both
the same way (a thin line lighter or darker than what lies either side)."""
FIELD_LINE_WIDTH = (0.3, 0.95)
FIELD_INSET = 0.02
"""An underline spans 30-95% of the frame width, inset from both edges by 2% at least: a list
divider or a bar's edge runs to an edge of the screen."""
FIELD_BAND = 0.14
FIELD_TEXT_GAP = 0.045
FIELD_TEXT_HEIGHT = 0.075
FIELD_TEXT_LEFT = 0.06
"""Shares of the frame width. Above an underline, within ``FIELD_BAND``, the lowest drawn strip
is the field's hint or value: it ends at most ``FIELD_TEXT_GAP`` above the line (a field sits
its text on the line; a list row centres it between two dividers), is one text line tall and
starts within ``FIELD_TEXT_LEFT`` of the line's left end (a field's text starts at its left
padding)."""
FIELD_TEXT_APART = 0.015
"""What is drawn above a field's text (its label, a title) stands this share of the frame width
clear of it; lines closer together are a paragraph, and a line under one is a rule or a
divider."""
FIELD_EMPTY_BAND = 0.09
"""An empty underline's field reaches this share of the frame width above the line (a text
line and its padding), or up to what is drawn above it if that is nearer."""
FIELD_TEXT_END = 0.9
"""A field's hint or value ends short of the line's last 10%: a row whose drawing reaches the
line's right end carries an action there (an accordion's +, a chevron). On a line in an accent
colour (a field with the focus), an icon-sized drawing there (:data:`FIELD_ICON_SIDE` of the
band) apart from the text is the field's clear cross."""
FIELD_ACCENT_SATURATION = 60
"""An empty underline is a field only in an accent colour (HSV saturation at least this): a
focused field, as in a dialog that asks for one value. A grey rule with nothing on it is a
separator as often as a field."""
FIELD_DIVIDERS = 3
"""This many underlines of one extent are a list's dividers, not a form's fields."""
FIELD_BOX_WIDTH = 0.45
FIELD_BOX_HEIGHT = (0.07, 0.17, 0.2)
FIELD_BOX_TEXT_END = 0.8
FIELD_ROW_GAP = 0.02
"""A boxed field is an outline at least 45% of the frame wide and one text line tall (its
height 7-17% of the width); what it holds starts at its left padding and ends before 80% of its
width (a button centres its label), or it is empty. Outlines stacked on it with one of its side
edges, at most ``FIELD_ROW_GAP`` of the width apart, are a list's rows, and what the contours
call a card is a card: either is a field with a floating label over its value (a form's filled
Material fields, stacked), else only with a hint's text (:data:`FIELD_HINT_SCORE`: a login
form's outlined fields one under the other, or as wide as a card). A box 17-20% tall is a field
with that label or with a hint's text."""
FIELD_LABELLED_HEIGHT = 0.3
"""A box with a floating label over its first line may be this share of the frame width tall
(a notes field, room for lines under its hint: Habitica's "Notes")."""
FIELD_SCORE = 0.7
FIELD_HINT_SCORE = 0.5
"""Scores of boxed fields. ``FIELD_HINT_SCORE`` marks a box that is a field only if the one line
in it reads as a hint or an address (which only the merge, holding the text, can tell): its
line is centred (a pill-shaped field's "Enter Email" looks like a button's label) or runs on to
the box's right edge (an address bar cuts its URL off; a button's label fits its outline), or
the box is a list's row or a card (:data:`FIELD_ROW_GAP`). A row or a card that holds one line
among other edges (a photo behind it, a chevron) is scored so too, and so is one filled darker
than the page when the fill is no flat colour (:data:`FIELD_FLAT_FILL`)."""
FIELD_ICON_SIDE = 0.7
FIELD_TRAILING_ICONS = 2
FIELD_TRAILING_ZONE = 0.7
"""Up to two drawings at most 70% of the box's height wide in its last 30% are a field's
actions (a magnifier, a microphone, a clear cross), not its text. A leading one (a back arrow,
a logo) is taken only when trailing ones are there too: a search bar."""
FIELD_LABEL_HEIGHT = 0.8
"""A floating label over a field's value (a filled Material field): two rows of ink that start
at the same left padding, the upper one at most 80% as tall as the lower one."""
FIELD_WORD_GAP = 0.03
"""Ink columns closer than this share of the frame width are one run (the words of a hint)."""
FIELD_BORDER_ROWS = 0.15
"""A run of ink rows at most this share of the box's height, at the very top or bottom of its
inside, is a piece of its border (a pill's rounded ends reach in past the side margins)."""
FIELD_DARK_FILL = 40
"""A box this much darker (luma) inside than just outside is a title bar or a filled button."""


def _median(values: U8) -> float:
    """``float(np.median(values))`` of a non-empty array, without the generic wrapper that
    costs five times the partition on the few hundred pixels the fields look at."""
    flat = values.ravel()
    n = flat.size
    if n == 0:
        return float(np.median(values))
    half = n // 2
    if n % 2:
        return float(np.partition(flat, half)[half])
    part = np.partition(flat, (half - 1, half))
    return (float(part[half - 1]) + float(part[half])) / 2.0


def _ink_runs(ink: npt.NDArray[np.bool_], gap: int) -> list[list[int]]:
    """Runs ``[start, end)`` of True in a 1-D mask, joined across gaps up to ``gap`` long
    (:func:`fastpath.split_runs`, which splits OCR lines at wide gaps)."""
    runs: list[list[int]] = fastpath.split_runs(ink, ink_min=1, gap_min_px=gap + 1).tolist()
    return runs


def _knob_at_end(edges: U8, a: int, y0: int, b: int, y1: int, reach: int, margin: int) -> bool:
    """Does something drawn across the line's level, above and below it, touch either end of
    the line (the knob that cuts a slider's track in two)?"""
    for lo, hi in ((a - reach, a - margin), (b + margin, b + reach)):
        lo, hi = max(0, lo), min(edges.shape[1], hi)
        if hi <= lo:
            continue
        over = edges[max(0, y0 - reach) : max(0, y0 - margin), lo:hi]
        under = edges[y1 + margin : y1 + reach, lo:hi]
        beyond = edges[max(0, y0 - 3 * reach) : max(0, y0 - 2 * reach), lo:hi]
        if over.any() and under.any() and not beyond.any():
            return True  # (a side running on far above is a dialog's or a card's edge)
    return False


FIELD_SAME_BACKGROUND = 12
"""An underline lies on one background: the luma just above and just below it differ by at most
this much (the edge of a bar or a filled box has another colour on its other side)."""


def _box_edge(
    gray: U8, edges: U8, a: int, y0: int, b: int, y1: int, reach: int, margin: int
) -> bool:
    """Is the line an edge of a box rather than an underline: another colour on its other
    side, or sides rising from both its ends (an outlined button's bottom edge)?"""
    over = gray[max(0, y0 - margin - 3) : max(0, y0 - margin + 1), a:b]
    under = gray[y1 + margin - 1 : y1 + margin + 3, a:b]
    if over.size and under.size:
        back = _median(over)
        if abs(back - _median(under)) > FIELD_SAME_BACKGROUND:
            return True
        # The background goes on past the line's ends (the gap between two boxes does not).
        rows = slice(max(0, y0 - margin - 3), max(0, y0 - margin + 1))
        ends = [gray[rows, max(0, a - 4) : a], gray[rows, b : b + 4]]
        if all(e.size and abs(_median(e) - back) > FIELD_SAME_BACKGROUND for e in ends):
            return True
    rise = edges[max(0, y0 - reach) : max(0, y0 - margin), :]
    if not rise.shape[0]:
        return False
    left = rise[:, max(0, a - 2) : a + 3].any(axis=1)
    right = rise[:, max(0, b - 3) : b + 2].any(axis=1)
    return bool(left.mean() >= 0.7 and right.mean() >= 0.7)


def _accent(small: U8, a: int, y0: int, b: int, y1: int) -> bool:
    """Is the underline from ``a`` to ``b`` on rows ``y0:y1`` of ``small`` (BGR) in an accent
    colour (:data:`FIELD_ACCENT_SATURATION`): a field with the focus?"""
    hsv = cv2.cvtColor(np.ascontiguousarray(small[y0:y1, a:b]), cv2.COLOR_BGR2HSV)
    return _median(hsv[..., 1]) >= FIELD_ACCENT_SATURATION


def _underlines(
    small: U8, gray: U8, edges: U8, top: int, bottom: int
) -> list[tuple[PixelKind, BoxPx, float]]:
    """Material text fields drawn as an underline (:data:`FIELD_LINE_WIDTH`), with at most one
    text line sitting on it (:data:`FIELD_BAND`) and nothing just under it (a slider's knob
    crosses its track). The field's box runs from its text's top (or a band's height above an
    empty line, which must be in an accent colour) down to the line."""
    h, w = gray.shape[:2]
    d = max(2, round(0.006 * w))
    if bottom - top < 2 * d + 1:
        return []
    # Where each pixel stands out of the rows d above and d below, both the same way (lighter
    # or darker than both), and how many do a row: one pass of a kernel, not eight of OpenCV.
    ink, counts = fastpath.line_ink(gray[top:bottom], d, FIELD_LINE_STEP)
    mask = ink.view(np.bool_)
    long_rows = np.flatnonzero(counts >= FIELD_LINE_WIDTH[0] * w)
    if not len(long_rows):
        return []
    lo_w, hi_w = FIELD_LINE_WIDTH[0] * w, FIELD_LINE_WIDTH[1] * w
    inset = FIELD_INSET * w
    lines: list[tuple[int, int, int, int]] = []  # left, top, right, bottom in gray
    for r in long_rows.tolist():
        for a, b in _ink_runs(mask[r], 1):
            if not lo_w <= b - a <= hi_w or a < inset or b > w - inset:
                continue
            y = top + d + r
            last = lines[-1] if lines else None
            if last and y - last[3] <= 1 and abs(a - last[0]) <= 2 and abs(b - last[2]) <= 2:
                lines[-1] = (min(a, last[0]), last[1], max(b, last[2]), y + 1)
            else:
                lines.append((a, y, b, y + 1))
    if not lines:
        return []
    extent: dict[tuple[int, int], int] = {}
    for a, _, b, _ in lines:
        key = (round(a / (0.01 * w)), round(b / (0.01 * w)))
        extent[key] = extent.get(key, 0) + 1
    band = round(FIELD_BAND * w)
    gap_max, text_max = FIELD_TEXT_GAP * w, FIELD_TEXT_HEIGHT * w
    margin = d + 2  # the dilated edges of the line itself
    out: list[tuple[PixelKind, BoxPx, float]] = []
    for a, y0, b, y1 in lines:
        if y1 - y0 > d:
            continue  # a bar, not a line
        key = (round(a / (0.01 * w)), round(b / (0.01 * w)))
        if extent[key] >= FIELD_DIVIDERS:
            continue
        reach = round(0.03 * w)
        below = edges[y1 + margin : y1 + margin + reach, max(0, a - margin) : b + margin]
        if below.size and np.count_nonzero(below.any(axis=0)) > 0.01 * (b - a):
            continue  # a knob on a slider's track, a box's top edge, text right under it
        if _knob_at_end(edges, a, y0, b, y1, reach, margin):
            continue  # a slider's track, cut in two by its knob
        if _box_edge(gray, edges, a, y0, b, y1, reach, margin):
            continue
        above = edges[max(top, y0 - band) : max(top, y0 - margin), a:b]
        if above.shape[0] < band // 2:
            continue
        start = y0 - margin - above.shape[0]
        rows = _ink_runs(np.asarray(above.any(axis=1)), 2)
        if rows and above.shape[0] - rows[-1][1] <= gap_max:
            r0, r1 = rows[-1]  # the field's hint or value
            if r1 - r0 > text_max or r0 == 0:
                continue
            if len(rows) > 1 and r0 - rows[-2][1] < FIELD_TEXT_APART * w:
                continue  # the last line of a paragraph
            drawn: npt.NDArray[np.bool_] = np.asarray(above[r0:r1].any(axis=0), dtype=np.bool_)
            cols = np.flatnonzero(drawn)
            if cols[-1] >= FIELD_TEXT_END * (b - a) and _accent(small, a, y0, b, y1):
                runs = _ink_runs(drawn, round(FIELD_WORD_GAP * w))
                if len(runs) > 1 and runs[-1][1] - runs[-1][0] <= FIELD_ICON_SIDE * band:
                    cols = cols[cols < runs[-2][1]]  # a focused field's clear cross
            if cols[0] > FIELD_TEXT_LEFT * w or cols[-1] >= FIELD_TEXT_END * (b - a):
                continue  # centred, or a row with its action at the end (an accordion's +)
            field_top = start + r0 - margin
        else:  # an empty field, below whatever stands above it (a dialog's title)
            field_top = y0 - round(FIELD_EMPTY_BAND * w)
            if rows and start + rows[-1][1] + margin > field_top:
                continue  # too close for a field's own padding, too far for its text
            if not _accent(small, a, y0, b, y1):
                continue  # a grey rule with nothing on it: an empty field is one with focus
        out.append((PixelKind.INPUT, BoxPx(a, max(top, field_top), b, y1 + 1), FIELD_SCORE))
    return out


def _field_content(inner: U8, bh: int, mx: int, w: int) -> tuple[float, bool] | None:
    """The score of a boxed field whose inside (edges, ``mx`` in from its sides) is ``inner``,
    and whether it is a floating label over a value (:data:`FIELD_LABEL_HEIGHT`); None when
    what it holds is no field's. Empty or one line from the left padding: :data:`FIELD_SCORE`;
    a line between a search bar's icons (:data:`FIELD_TRAILING_ICONS`: a dropdown's arrow or a
    header's cross looks the same), one centred line or one cut off at the right edge want a
    hint's text (:data:`FIELD_HINT_SCORE`)."""
    bw = inner.shape[1] + 2 * mx
    rows = _ink_runs(np.asarray(inner.any(axis=1)), 2)
    # A thin run at the very top or bottom is the border itself (a pill's rounded ends).
    thin = FIELD_BORDER_ROWS * bh
    if rows and rows[0][0] == 0 and rows[0][1] <= thin:
        rows.pop(0)
    if rows and rows[-1][1] == inner.shape[0] and rows[-1][1] - rows[-1][0] <= thin:
        rows.pop()
    if not rows:
        return FIELD_SCORE, False
    left_max = FIELD_TEXT_LEFT * w
    if len(rows) == 2:
        (a0, a1), (b0, b1) = rows
        upper = np.flatnonzero(inner[a0:a1].any(axis=0))
        lower = np.flatnonzero(inner[b0:b1].any(axis=0))
        if (
            a1 - a0 <= FIELD_LABEL_HEIGHT * (b1 - b0)
            and abs(int(upper[0]) - int(lower[0])) <= 0.01 * w
            and upper[0] <= left_max
            and lower[-1] + mx <= FIELD_BOX_TEXT_END * bw
        ):
            return FIELD_SCORE, True
        return None
    if len(rows) != 1:
        return None
    inner = inner[rows[0][0] : rows[0][1]]
    runs = _ink_runs(np.asarray(inner.any(axis=0)), round(FIELD_WORD_GAP * w))
    icon = FIELD_ICON_SIDE * bh
    trailing = 0
    while (
        len(runs) > 1
        and trailing < FIELD_TRAILING_ICONS
        and runs[-1][1] - runs[-1][0] <= icon
        and runs[-1][0] + mx >= FIELD_TRAILING_ZONE * bw
    ):
        runs.pop()
        trailing += 1
    if trailing and len(runs) > 1 and runs[0][1] - runs[0][0] <= icon and runs[0][0] <= left_max:
        runs.pop(0)  # a search bar's back arrow or logo
        left_max += icon + FIELD_WORD_GAP * w
    start, end = runs[0][0], runs[-1][1]
    if start <= left_max and end + mx <= FIELD_BOX_TEXT_END * bw:
        return (FIELD_HINT_SCORE if trailing else FIELD_SCORE), False
    if start <= left_max and end >= inner.shape[1] - 2 and not trailing:
        return FIELD_HINT_SCORE, False  # cut off by the right edge: an address bar's URL
    centre = (start + end) / 2 + mx
    if not trailing and abs(centre - bw / 2) <= 0.1 * bw:
        return FIELD_HINT_SCORE, False
    return None


FIELD_FLAT_FILL = 0.8
"""A box is filled flat (a title bar, a button) when this share of its inside lies within
:data:`FIELD_SAME_BACKGROUND` of its median luma; an outline over a photo is not (chatter's
login fields, drawn over clouds), and is darker than its own white border in places."""


def _flat(inside: U8) -> bool:
    """Is ``inside`` (a box's luma) one flat fill, text aside (:data:`FIELD_FLAT_FILL`)?"""
    if not inside.size:
        return True
    back = _median(inside)
    near = np.abs(inside.astype(np.int16) - back) <= FIELD_SAME_BACKGROUND
    return float(np.count_nonzero(near)) >= FIELD_FLAT_FILL * inside.size


def _one_line(inner: U8, bh: int) -> bool:
    """Does the inside of a box (edges, as :func:`_field_content` takes it) hold one row of
    ink, leaving out pieces of its border (:data:`FIELD_BORDER_ROWS`)?"""
    rows = _ink_runs(np.asarray(inner.any(axis=1)), 2)
    thin = FIELD_BORDER_ROWS * bh
    rows = [r for r in rows if not (r[1] - r[0] <= thin and (r[0] == 0 or r[1] == inner.shape[0]))]
    return len(rows) == 1


def _boxed_fields(
    gray: U8, edges: U8, outlines: list[tuple[PixelKind, BoxPx, float]], w: int
) -> list[tuple[PixelKind, BoxPx, float]]:
    """Outlined or filled text fields among the closed outlines (:data:`FIELD_BOX_WIDTH`)."""
    out: list[tuple[PixelKind, BoxPx, float]] = []
    lo_h, mid_h, hi_h = (v * w for v in FIELD_BOX_HEIGHT)
    near, gap = 0.01 * w, FIELD_ROW_GAP * w
    for kind, box, _ in outlines:
        bw, bh = box.right - box.left, box.bottom - box.top
        if kind not in (PixelKind.BUTTON, PixelKind.CARD) or bw < FIELD_BOX_WIDTH * w:
            continue
        if not lo_h <= bh <= max(hi_h, FIELD_LABELLED_HEIGHT * w):
            continue
        stacked = any(
            o is not box
            and (abs(o.left - box.left) <= near or abs(o.right - box.right) <= near)
            and (0 <= o.top - box.bottom <= gap or 0 <= box.top - o.bottom <= gap)
            for _, o, _ in outlines
        )  # a list's rows, stacked one against the next (or a form's filled fields)
        row = stacked or kind is PixelKind.CARD
        ring = np.concatenate(
            [
                gray[max(0, box.top - 4) : max(0, box.top - 1), box.left : box.right].ravel(),
                gray[box.bottom + 1 : box.bottom + 4, box.left : box.right].ravel(),
            ]
        )
        inside = gray[box.top + 3 : box.bottom - 3, box.left + 3 : box.right - 3]
        if (
            ring.size
            and inside.size  # a box of 6 px or less on a tiny frame has no inside to compare
            and _median(ring) - _median(inside) > FIELD_DARK_FILL
            and not (row and not _flat(inside))
        ):
            continue  # a dark bar on a light page: a dialog's title bar, a filled button
        my, mx = 3, max(3, bh // 4)
        inner = edges[box.top + my : box.bottom - my, box.left + mx : box.right - mx]
        if not inner.size:
            continue
        content = _field_content(inner, bh, mx, w)
        if content is None and row and _one_line(inner, bh):
            content = FIELD_HINT_SCORE, False  # a line over a photo's edges, a row's chevron
        if content is None:
            continue
        score, floating = content
        if bh > hi_h and not floating:
            continue
        if not floating and (row or bh > mid_h):
            score = FIELD_HINT_SCORE  # a list row or a card, unless its line reads as a hint
        out.append((PixelKind.INPUT, box, score))
    return out


def find_fields(
    small: U8,
    gray: U8,
    edges: U8,
    outlines: list[tuple[PixelKind, BoxPx, float]],
    flags: FrameFlags,
    scale: float,
) -> list[tuple[PixelKind, BoxPx, float]]:
    """Text fields (:attr:`PixelKind.INPUT`) in the scaled copy ``gray``: underlines and boxed
    fields between the system bars. Where the tree is useless (games, Flutter) these are the
    only sign of where the agent can type."""
    h, w = gray.shape[:2]
    status = round(flags.status_bar_px * scale)
    nav = round(flags.nav_bar_px * scale) if flags.nav_bar_side == "bottom" else 0
    boxed = _boxed_fields(gray, edges, outlines, w)
    found = [
        f
        for f in _underlines(small, gray, edges, status, h - nav)
        if not any(b.contains(f[1].center) for _, b, _ in boxed)  # a boxed field's bottom edge
    ]
    return sorted([*found, *boxed], key=_position)


def find_anchors(
    frame: Frame, flags: FrameFlags, config: PixelConfig | None = None
) -> list[Anchor]:
    """Every anchor of a frame, boxes in device pixels, de-duplicated per kind (NMS)."""
    cfg = config or PixelConfig()
    if flags.uniform:
        return []
    # A frame far beyond a phone's (a tablet's 4K capture, a hostile 8192 square) is scaled
    # further: the anchors' work grows with the copy's area (5 s for an 8192 square at half size).
    scale = min(cfg.anchor_scale, cfg.anchor_max_side_px / max(frame.pixels.shape[:2]))
    small = _small(frame, scale)
    gray = cv2.cvtColor(small, cv2.COLOR_BGR2GRAY)
    h, w = gray.shape[:2]
    edges = _edge_map(gray)
    found: list[tuple[PixelKind, BoxPx, float]] = []
    bars_blocks = _bars_and_blocks(gray, flags, scale)
    found.extend((k, b, 0.6) for k, b in bars_blocks)
    bars = [b for k, b in bars_blocks if k is PixelKind.BAR]
    contours, boxes, outer = _edge_shapes(edges)
    texture = _Texture(small, gray)
    outlines = _contour_boxes(contours, boxes, outer, h, w, texture)
    found.extend(outlines)
    found.extend(find_fields(small, gray, edges, outlines, flags, scale))
    found.extend(_saturated(small, bars, h, w))
    found.extend(_icons(edges, contours, boxes, outer, w, texture))
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
    by_kind: dict[PixelKind, list[int]] = {}
    for i, a in enumerate(anchors):
        by_kind.setdefault(a.kind, []).append(i)
    for kind in PixelKind:
        idx = by_kind.get(kind)
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
