"""Icon glyphs read off one button's pixels: the close ×, the back arrow ← (and →), the
chevrons ‹ ›, the add +, the magnifier of a search, the menu glyphs ⋮ ⋯ ☰, play ▶ and pause ⏸,
the settings gear, share (three joined dots), send (a paper plane), the microphone and the
outlined heart ♡ of a like or a favourite (see :func:`glyph_of`).

An icon-only button the tree leaves unlabelled (no text, no description, an obfuscated id)
reaches the model as ``""``; OCR reads nothing off a glyph. This names the few icons an agent
needs most, by shape alone and without a model: the button's drawing is one stroked shape on a
flat background (or three even strokes for the menu glyphs), compared with the same shape drawn
here, at the drawing's own size, aspect and stroke width (:func:`_drawn`). A shape that fits
no template closely, or anything more than one shape (a word, "C++", a checkbox's tick in its
box), is no glyph: a wrong × makes an agent dismiss a screen, so the rule keeps to what it can
tell apart (precision first; see ``perception-bench pixels``, "icon glyphs").

Two callers: the fusion, on the tree's actions it names with nothing or only a resource id
(:meth:`perception.pipeline.Perceiver._pixel_labels`), and the pixel channel, on its own
text-less icons (:func:`name_candidates`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import cv2
import numpy as np
import numpy.typing as npt

from perception.geometry import clip_box
from perception.pixel.anchors import PixelKind, _three_strokes
from perception.pixel.merge import PixelCandidate
from perception.types import BoxPx

U8 = npt.NDArray[np.uint8]

GLYPHS = (
    "×", "←", "+", "search", "⋮", "⋯", "☰", "→", "▶", "⏸", "settings", "share", "send", "mic",
    "‹", "›", "♡",
)
"""What :func:`glyph_of` names. The glyph character itself where one exists (a model reads it
as the icon it draws, and :data:`perception.fusion.screen.CLOSE_SYMBOLS` holds "×"; ▶ and ⏸
are the media keys' own characters, ‹ › the chevrons' quotation marks, ♡ the outlined heart of
a like or favourite button, not yet pressed: a filled heart is not read); the icon's usual
name (Material's) for the magnifier "search", the gear "settings", the joined dots "share",
the paper plane "send" and the microphone "mic", which have no character a model reads as
that."""

GLYPH_LOOKALIKES = frozenset({"", "X", "x", "+", "十", "<", "×"})
"""What OCR reads off a glyph, if anything: a button read as one of these is looked at for its
glyph, which replaces it (a close button read "X" is the × a screen's dismiss looks for)."""

GLYPH_SIDE = (12, 0.2)
"""A button to read is at least 12 pixels on each side and at most a fifth of the frame's
width on its long side (an icon button, not a card)."""
GLYPH_ASPECT = 1.67
"""... and square-ish: its sides at most this far apart."""
_WORK_SIDE = 64
"""The button is scaled down so its long side is at most this (the shapes compared are 32)."""
_CANON = 32
_MIN_INK = 40.0
"""The drawing differs from the background by this much luma at least (as the menu rule)."""
GLYPH_FIT = 0.88
"""Both ways, this share of one shape's pixels lies within a pixel of the other's."""
_STROKE_SHARE = 4.5
"""A glyph's strokes are at most 1 / this of its long side thick (Material's are 2 dp in 14-18)."""
_DOT_FILL = 0.45
"""A dot of ⋮ or ⋯ fills this share of its box at least (a disc 0.79, a small one drawn in
5 x 5 pixels about 0.5; the letters of "PRO" less)."""
_DOT_SIDE = 0.2
"""A dot is at most this share of its button's short side long."""
_DOT_SOLID = 0.85
"""... and is convex: its pixels fill this share of its convex hull at least (P, R, O do not)."""
_ASPECTS: dict[str, tuple[float, float]] = {
    "×": (0.85, 1.18),  # a lone letter X is taller than wide
    "+": (0.85, 1.18),
    "search": (0.85, 1.18),
    "←": (0.85, 1.6),  # Material's 1.0; the demo's 1.5, which a crop scaled down rounds past
    "→": (0.85, 1.6),
    "share": (0.65, 1.0),  # Material's: 15 x 19
    "‹": (0.4, 0.8),  # Material's chevron: 7.4 x 12
    "›": (0.4, 0.8),
    "♡": (0.95, 1.35),  # Material's favourite: 20 x 18.35
}
"""The width / height a stroked drawing of each glyph may have."""
_SOLID_ASPECTS: dict[str, tuple[float, float]] = {
    "▶": (0.7, 1.1),  # 0.87 for an equilateral triangle, Material's 11 x 14
    "send": (1.05, 1.35),  # Material's 21 x 18
}
"""The width / height a filled drawing of each glyph may have."""
SOLID_FIT = 0.9
"""A filled shape is its glyph where this share of it, both ways, lies within a pixel of the
drawn one (a filled shape's inside matches anything filled: the bar is higher than strokes')."""
_ARROW_STROKE = 5.0
"""An arrow's strokes are at most 1 / this of its long side thick (the corpus's arrows 7.9-9.1,
drawn ones 5.3 and up; a star cut out of a tile, drawn with strokes that thick, fits one: 4.6)."""
_BAR_LENGTH = 5.0
"""A bar of ⏸ is at most this many times as long as wide (Material's 3.5, the corpus's 3-3.75;
the letters of "ll" or "II" 5.5 and more)."""
_RING_FILL = 0.5
"""A ring around a glyph (a play button's circle) fills less than this share of its box."""
_LEVEL_ENDS = 4.75
"""A letter X's top and bottom rows hold at least this many strokes' width (see
:func:`_cut_level`; drawn × icons 1.2-4.5, DejaVu Sans X and x 4.8-6.3)."""
_LEVEL_END_WIDTH = 0.7
"""... each of its ends as wide as this share of its arm's width across a row at least (the
letters 0.76 and up; QQ Music's close, its ends rounded, 0.65)."""
_TAPER = 1.3
"""A four-pointed star's arms are this many times as wide near its middle as near their points
at least (see :func:`_tapered`; stars drawn with a waist 0.15-0.45 of their radius 1.37 and up,
the corpus's sparkles and Habitica's difficulty 1.7 and up; a "+" drawn at 36-144 px 1.11 at
most, the corpus's 1.12)."""
_HEART_CLEFT = 0.03
"""A heart's top dips this share of its height between its lobes at least (see :func:`_notched`)."""
_GEAR_TEETH = (6, 12)
"""A gear has this many teeth round its rim (Material's has 8, Android's older one 6); a star
has 5."""
_GEAR_DEPTH = 0.2
"""... cut this share of its radius deep at least (the corpus's gears 0.26-0.31; the rim of a
blurred ring wavers by 0.13)."""


NAMED_KINDS = (PixelKind.ICON, PixelKind.BUTTON, PixelKind.TAB, PixelKind.IMAGE)
"""The pixel channel's text-less candidates :func:`name_candidates` looks at, in this order
(icons first: a picture seldom draws a glyph alone)."""
ICON_MARGIN = 0.15
"""The icon rule's box hugs the drawing (or its disc): it is read grown by this share of its
long side each way, so that the button's background shows round it (see :func:`glyph_of`)."""


def name_candidates(
    pixels: U8, candidates: Sequence[PixelCandidate], limit: int = 48
) -> list[PixelCandidate]:
    """The pixel channel's candidates, those with no text and no glyph (icons, buttons, tabs,
    pictures: :data:`NAMED_KINDS`) named by the glyph they draw where :func:`glyph_of` reads
    one, on their box grown by :data:`ICON_MARGIN` (up to ``limit`` looked at:
    :attr:`perception.config.PixelConfig.glyph_max`). Without a tree (a game, a canvas) an agent
    still sees which icon closes, goes back or searches. The others are as they were."""
    if limit <= 0:
        return list(candidates)
    height, width = pixels.shape[:2]
    frame = BoxPx(0, 0, width, height)
    order = {kind: rank for rank, kind in enumerate(NAMED_KINDS)}
    looked = sorted(
        (i for i, c in enumerate(candidates) if not c.text and not c.glyph and c.kind in order),
        key=lambda i: order[candidates[i].kind],
    )[:limit]
    if not looked:
        return list(candidates)
    boxes = []
    for i in looked:
        box = candidates[i].box_px
        grow = round(ICON_MARGIN * max(box.width, box.height))
        boxes.append(clip_box(
            BoxPx(box.left - grow, box.top - grow, box.right + grow, box.bottom + grow), frame
        ))
    out = list(candidates)
    for i, glyph in zip(looked, read_glyphs(pixels, boxes), strict=True):
        if glyph:
            out[i] = replace(out[i], glyph=glyph)
    return out


def read_glyphs(pixels: U8, boxes: Sequence[BoxPx]) -> list[str]:
    """The glyph each box of a frame (``pixels``) draws (:func:`glyph_of`), or ``""``: only
    icon-sized boxes (:data:`GLYPH_SIDE`, :data:`GLYPH_ASPECT`) inside the frame are looked at,
    about 0.2 ms each."""
    height, width = pixels.shape[:2]
    out = []
    for left, top, right, bottom in boxes:
        w, h = right - left, bottom - top
        if (
            left < 0 or top < 0 or right > width or bottom > height
            or min(w, h) < GLYPH_SIDE[0] or max(w, h) > GLYPH_SIDE[1] * width
        ):
            out.append("")
            continue
        out.append(glyph_of(pixels[top:bottom, left:right]))
    return out


def glyph_of(patch: U8) -> str:
    """The glyph (:data:`GLYPHS`) a button's pixels draw (``patch``: grey or BGR, the button's
    box), or ``""``. The background is what the patch's border shows; the drawing is what
    differs from it by half the largest difference; a drawing that is one filled blob (a round
    button) is looked into once, with the blob as the background."""
    gray = np.ascontiguousarray(patch)
    if gray.ndim == 3:
        code = cv2.COLOR_BGRA2GRAY if gray.shape[2] == 4 else cv2.COLOR_BGR2GRAY
        gray = np.asarray(cv2.cvtColor(gray, code), dtype=np.uint8)
    h, w = gray.shape[:2]
    if min(h, w) < GLYPH_SIDE[0] or max(h, w) > GLYPH_ASPECT * min(h, w):
        return ""
    if max(h, w) > _WORK_SIDE:
        f = _WORK_SIDE / max(h, w)
        size = (max(1, round(w * f)), max(1, round(h * f)))
        gray = np.asarray(cv2.resize(gray, size, interpolation=cv2.INTER_AREA), dtype=np.uint8)
    return _read(gray.astype(np.int16), inner=False)


def _read(gray: npt.NDArray[np.int16], *, inner: bool) -> str:
    border = np.concatenate((gray[0], gray[-1], gray[:, 0], gray[:, -1]))
    ink = np.abs(gray - int(np.median(border)))
    top = int(ink.max())
    if top < _MIN_INK:
        return ""
    mask = (ink * 2 > top).astype(np.uint8)
    n, found, found_stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    labels = np.asarray(found, dtype=np.int32)
    stats = np.asarray(found_stats, dtype=np.int32)
    if n < 2:
        return ""
    areas = stats[1:, cv2.CC_STAT_AREA]
    big = int(areas.max())
    keep = [i + 1 for i in np.flatnonzero(areas * 12 >= big).tolist()]
    hh, ww = gray.shape
    for i in keep:
        x, y, cw, ch = stats[i, :4].tolist()
        if x == 0 or y == 0 or x + cw == ww or y + ch == hh:
            if len(keep) == 1 and not inner and _round_button(mask, cw, ch):
                break  # a disc that is the whole button (a round send button): read inside
            return ""  # a shape runs into the button's edge: a picture, a neighbour, a frame
    if len(keep) > 1 and not inner:
        ring = _ring(stats, keep)
        if ring is not None:
            # A glyph in a circle or an outlined square (a play button): read inside it.
            x0, y0, x1, y1 = ring
            return _read(gray[y0:y1, x0:x1], inner=True)
    if len(keep) == 3:
        return _menu(ink, labels, stats, keep)
    if len(keep) == 2:
        return _pair(labels, stats, keep)
    if len(keep) != 1:
        return ""  # letters, "C++", a tick in its box
    x, y, cw, ch = stats[keep[0], :4].tolist()
    shape = labels[y : y + ch, x : x + cw] == keep[0]
    fill = big / float(cw * ch)
    if fill > 0.45 and _gear(shape):
        return "settings"
    if fill > 0.6 and not inner and min(cw, ch) >= GLYPH_SIDE[0]:
        # A filled disc or rounded square: the glyph is drawn inside it.
        inset = max(1, min(cw, ch) // 8)
        return _read(gray[y + inset : y + ch - inset, x + inset : x + cw - inset], inner=True)
    # The drawing is the button's icon: near its middle, and not a speck.
    if max(cw, ch) * 4 < min(hh, ww) or abs(2 * x + cw - ww) > 0.3 * ww:
        return ""
    if abs(2 * y + ch - hh) > 0.3 * hh:
        return ""
    return _shape(shape)


def _round_button(mask: npt.NDArray[np.uint8], cw: int, ch: int) -> bool:
    """Whether the one shape of ``mask`` spanning it is a round button: as wide and tall as
    the patch and clear of its four corners (a disc, a rounded square; a picture or a frame
    covers its corners)."""
    hh, ww = mask.shape
    k = max(1, min(hh, ww) // 16)
    corners = (mask[:k, :k], mask[:k, -k:], mask[-k:, :k], mask[-k:, -k:])
    return cw == ww and ch == hh and not any(c.any() for c in corners)


def _ring(stats: npt.NDArray[np.int32], keep: list[int]) -> tuple[int, int, int, int] | None:
    """The square inside a ring (a circle or an outlined square drawn with a thin line) that
    holds all the other parts, as (left, top, right, bottom); None without one."""
    outer = max(keep, key=lambda i: int(stats[i, cv2.CC_STAT_WIDTH] * stats[i, cv2.CC_STAT_HEIGHT]))
    x, y, cw, ch = stats[outer, :4].tolist()
    area = int(stats[outer, cv2.CC_STAT_AREA])
    if not 0.85 <= cw / ch <= 1.18 or area >= _RING_FILL * cw * ch:
        return None
    d = min(cw, ch)
    t = area / (np.pi * d)  # the ring's line: its area over its length
    inset = int(np.ceil((d - (d - 2 * t) / np.sqrt(2)) / 2)) + 1
    x0, y0, x1, y1 = x + inset, y + inset, x + cw - inset, y + ch - inset
    if x1 - x0 < GLYPH_SIDE[0] // 2 or y1 - y0 < GLYPH_SIDE[0] // 2:
        return None
    for i in keep:
        if i == outer:
            continue
        px, py, pw, ph = stats[i, :4].tolist()
        if px < x0 or py < y0 or px + pw > x1 or py + ph > y1:
            return None  # a part outside the ring's inside: not a ringed glyph
    return x0, y0, x1, y1


def _pair(
    labels: npt.NDArray[np.int32], stats: npt.NDArray[np.int32], keep: list[int]
) -> str:
    """⏸ (two like, solid upright bars side by side) or the microphone (a solid capsule
    over its holder, a U with a stem), from the drawing's two parts; else ``""``."""
    a, b = sorted(keep, key=lambda i: int(stats[i, cv2.CC_STAT_LEFT]))
    ax, ay, aw, ah, aa = stats[a, :5].tolist()
    bx, by, bw, bh, ba = stats[b, :5].tolist()
    if (
        min(aa / (aw * ah), ba / (bw * bh)) >= 0.8
        and 2 * max(aw, bw) <= min(ah, bh) <= max(ah, bh) <= _BAR_LENGTH * min(aw, bw)
        and max(ah, bh) <= 1.15 * min(ah, bh)
        and max(aw, bw) <= 1.3 * min(aw, bw)
        and abs(ay - by) <= 0.15 * ah
        and 0.4 * aw <= bx - (ax + aw) <= 2.5 * aw
    ):
        return "⏸"
    cap, holder = sorted(keep, key=lambda i: int(stats[i, cv2.CC_STAT_TOP]))
    cx, cy, cw, ch, ca = stats[cap, :5].tolist()
    hx, hy, hw, hh, ha = stats[holder, :5].tolist()
    if not (
        ca >= 0.6 * cw * ch
        and 1.3 * cw <= ch <= 2.6 * cw
        and 1.4 * cw <= hw <= 3.0 * cw
        and abs((2 * cx + cw) - (2 * hx + hw)) <= 0.2 * hw
        and cy + 0.25 * ch <= hy <= cy + ch
        and hy + hh >= cy + ch + 0.25 * ch
        and ha < 0.45 * hw * hh
    ):
        return ""
    # The holder is a U: open at the top, where the capsule sits, and closed round below it.
    part = (labels[hy : hy + hh, hx : hx + hw] == holder).astype(np.uint8)
    below = part[cy + ch - hy :] if cy + ch - hy < hh else part[-1:]
    top_row = part[0]
    if top_row[hw // 3 : hw - hw // 3].any() or not below[:, hw // 2].any():
        return ""
    return "mic"


def _gear(shape: npt.NDArray[np.bool_]) -> bool:
    """A gear: one solid shape with one round hole at its middle and 6-12 teeth round its rim
    (its radius about its middle rises and falls that many times, by a fifth at least)."""
    ch, cw = shape.shape
    if not 0.85 <= cw / ch <= 1.18 or min(cw, ch) < GLYPH_SIDE[0]:
        return False
    found, hierarchy = cv2.findContours(
        shape.astype(np.uint8), cv2.RETR_CCOMP, cv2.CHAIN_APPROX_NONE
    )
    if hierarchy is None:
        return False
    outer = [c for c, h in zip(found, hierarchy[0], strict=True) if h[3] < 0]
    holes = [c for c, h in zip(found, hierarchy[0], strict=True) if h[3] >= 0]
    if len(outer) != 1 or len(holes) != 1:
        return False
    hx, hy, hw, hh = cv2.boundingRect(holes[0])
    if not 0.15 * cw <= hw <= 0.6 * cw or not 0.8 <= hw / max(1, hh) <= 1.25:
        return False
    if abs(2 * hx + hw - cw) > 0.15 * cw or abs(2 * hy + hh - ch) > 0.15 * ch:
        return False
    rim = outer[0][:, 0, :].astype(np.float32)
    rim -= np.array([(cw - 1) / 2, (ch - 1) / 2], np.float32)
    radius = np.hypot(rim[:, 0], rim[:, 1])
    turn = ((np.arctan2(rim[:, 1], rim[:, 0]) + np.pi) * (48 / (2 * np.pi))).astype(np.int32) % 48
    profile = np.zeros(48, np.float32)
    np.maximum.at(profile, turn, radius)
    gap = profile == 0  # a turn no rim pixel fell in (a straight run across a valley)
    if gap.sum() > 6:
        return False
    profile[gap] = np.maximum(np.roll(profile, 1), np.roll(profile, -1))[gap]
    lo, hi = float(profile.min()), float(profile.max())
    if hi - lo < _GEAR_DEPTH * hi:
        return False  # a blurred ring's rim wavers; a gear's teeth stand out
    up = profile > (lo + hi) / 2
    starts = up & ~np.roll(up, 1)
    teeth = int(starts.sum())
    if (starts & ~np.roll(up, -1)).any():
        return False  # a tooth one turn wide: a ragged rim, not teeth
    return _GEAR_TEETH[0] <= teeth <= _GEAR_TEETH[1]


def _menu(
    ink: npt.NDArray[np.int16],
    labels: npt.NDArray[np.int32],
    stats: npt.NDArray[np.int32],
    keep: list[int],
) -> str:
    """⋮, ☰ or ⋯: three like, solid parts (dots or bars) that make three even strokes
    (:func:`perception.pixel.anchors._three_strokes`)."""
    x0 = min(int(stats[i, 0]) for i in keep)
    y0 = min(int(stats[i, 1]) for i in keep)
    x1 = max(int(stats[i, 0] + stats[i, 2]) for i in keep)
    y1 = max(int(stats[i, 1] + stats[i, 3]) for i in keep)
    glyph = ink[y0:y1, x0:x1].astype(np.float32)
    bw, bh = x1 - x0, y1 - y0
    areas = stats[keep, cv2.CC_STAT_AREA]
    fills = areas / (stats[keep, cv2.CC_STAT_WIDTH] * stats[keep, cv2.CC_STAT_HEIGHT])
    if float(fills.min()) < _DOT_FILL:
        return ""  # letters ("PRO"), rings, outlines: not three dots or bars
    for i in keep:
        x, y, cw, ch = stats[i, :4].tolist()
        part = (labels[y : y + ch, x : x + cw] == i).astype(np.uint8)
        outline, _ = cv2.findContours(part, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        hull = float(cv2.contourArea(cv2.convexHull(np.concatenate(outline))))
        if int(stats[i, cv2.CC_STAT_AREA]) < _DOT_SOLID * hull:
            return ""  # a letter's bowl or a ring: a dot or a bar is convex and solid
    # Dots: alike, and small in their button (4 dp in a 24-48 dp square; letters are bigger).
    sides = np.maximum(stats[keep, cv2.CC_STAT_WIDTH], stats[keep, cv2.CC_STAT_HEIGHT])
    dots = (
        int(areas.max()) * 2 <= int(areas.min()) * 3
        and int(sides.max()) <= _DOT_SIDE * min(ink.shape)
    )
    if dots and bw * 2.5 <= bh and _three_strokes(glyph, False):
        return "⋮"
    if dots and bh * 2.5 <= bw and _three_strokes(np.ascontiguousarray(glyph.T), False):
        return "⋯"
    if 1.0 <= bw / bh <= 2.2 and _three_strokes(glyph, True):
        return "☰"
    return ""


def _shape(shape: npt.NDArray[np.bool_]) -> str:
    """The glyph one connected drawing (its box's mask) is, by the closest drawn template."""
    ch, cw = shape.shape
    aspect = cw / ch
    f = _CANON / max(cw, ch)
    tw, th = max(2, round(cw * f)), max(2, round(ch * f))
    mask = cv2.resize(shape.astype(np.uint8) * 255, (tw, th), interpolation=cv2.INTER_AREA) >= 128
    area = int(mask.sum())
    if area == 0:
        return ""
    # The stroke's width: a stroke L long and T thick has area L*T and about 2L edge pixels.
    eroded = cv2.erode(mask.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
    edge = int((mask & ~eroded).sum())
    thick = max(1.0, 2.0 * area / max(edge, 1))
    solid = thick * _STROKE_SHARE > max(tw, th)  # a filled shape (▶, a solid arrow), not strokes
    near = cv2.dilate(mask.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
    best, name = 0.0, ""
    for glyph, (lo, hi) in (_SOLID_ASPECTS if solid else _ASPECTS).items():
        if not lo <= aspect <= hi or (glyph in "←→‹›" and thick * _ARROW_STROKE > max(tw, th)):
            continue
        for drawn in _drawn(glyph, tw, th, thick):
            d = drawn.astype(bool)
            d_near = cv2.dilate(drawn, np.ones((3, 3), np.uint8)).astype(bool)
            fit = min(
                float((mask & d_near).sum()) / area, float((d & near).sum()) / max(1, d.sum())
            )
            if fit > best:
                best, name = fit, glyph
    if best < (SOLID_FIT if solid else GLYPH_FIT):
        return ""
    if name == "×" and _cut_level(shape):
        return ""  # the letter X or x: its strokes end cut level with the line of text
    if name == "share" and not _three_dots(mask, thick):
        return ""  # a chevron "<" as thick as the dots' lines: no dots at its ends
    if name == "+" and _tapered(shape):
        return ""  # a four-pointed star (a sparkle, a difficulty rating): its arms taper
    if name == "♡" and not _notched(shape):
        return ""  # a fan (the Wi-Fi signal), a shield: no cleft between two lobes on top
    return name


def _notched(shape: npt.NDArray[np.bool_]) -> bool:
    """Whether a drawing's top dips at its middle between two lobes, as a heart's does: the
    top of its middle column lies at least :data:`_HEART_CLEFT` of its height (and a pixel)
    below the highest points of both its left and its right lobe (15-45% and 55-85% of the way
    across). An outlined heart's cleft is shallow (the stroke fills the notch: 1-3 pixels in
    30); a fan's top (the Wi-Fi signal) is an arc, highest at its middle, a shield's flat."""
    h, w = shape.shape
    tops = np.where(shape.any(axis=0), shape.argmax(axis=0), h)
    left = int(tops[round(0.15 * w) : max(round(0.15 * w) + 1, round(0.45 * w))].min())
    right = int(tops[round(0.55 * w) : max(round(0.55 * w) + 1, round(0.85 * w))].min())
    middle = int(tops[(w - 1) // 2 : w // 2 + 1].max())
    return bool(middle - max(left, right) >= max(1.0, _HEART_CLEFT * h))


def _tapered(shape: npt.NDArray[np.bool_]) -> bool:
    """Whether a cross's arms narrow to points, as a four-pointed star's do: across its four
    arms, 26-34% of the way in from their ends they are :data:`_TAPER` times as wide as 8-16%
    of the way in (on average over those columns and rows), where a "+"'s strokes keep their
    width up to the crossing (which starts 39% of the way in or later: see
    :data:`_STROKE_SHARE`)."""
    h, w = shape.shape
    cols = shape.sum(axis=0, dtype=np.int32)
    rows = shape.sum(axis=1, dtype=np.int32)

    def width(profile: npt.NDArray[np.int32], lo: float, hi: float) -> float:
        n = len(profile)
        a, b = round(lo * n), max(round(lo * n) + 1, round(hi * n))
        return float(profile[a:b].mean() + profile[n - b : n - a].mean()) / 2

    near = width(cols, 0.08, 0.16) + width(rows, 0.08, 0.16)
    middle = width(cols, 0.26, 0.34) + width(rows, 0.26, 0.34)
    return middle >= _TAPER * max(1.0, near)


def _three_dots(mask: npt.NDArray[np.bool_], thick: float) -> bool:
    """Whether a drawing holds three dots thicker than the lines joining them: what is left
    after opening it with a disc one and a half strokes wide is three parts."""
    k = max(3, round(1.5 * thick))
    disc = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))
    left = cv2.morphologyEx(mask.astype(np.uint8), cv2.MORPH_OPEN, disc)
    return int(cv2.connectedComponents(left, connectivity=8)[0]) - 1 == 3


def _cut_level(shape: npt.NDArray[np.bool_]) -> bool:
    """Whether a cross's four stroke ends are cut level, as a font cuts the letter X or x at
    its baseline and top: then its top and bottom rows hold a stroke's slanted width each end
    (together at least 4.75 strokes wide, and half again what its side columns hold), where an
    icon's ×, its ends cut square to the stroke or round, shows a point there as at its sides."""
    mask = shape.astype(np.uint8)
    eroded = cv2.erode(mask, np.ones((3, 3), np.uint8))
    area = int(mask.sum())
    thick = max(1.0, 2.0 * area / max(1, area - int(eroded.sum())))
    rows = int(mask[0].sum()) + int(mask[-1].sum())
    cols = int(mask[:, 0].sum()) + int(mask[:, -1].sum())
    if rows < _LEVEL_ENDS * thick or rows < 1.5 * cols:
        return False
    # ... and an end is as wide as its arm is across (a round or slanted end is narrower).
    h = mask.shape[0]
    upper, lower = mask[h * 15 // 100 : h * 35 // 100], mask[h * 65 // 100 : h * 85 // 100]
    arms = np.concatenate((upper, lower))
    return _run_width(mask[[0, -1]]) >= _LEVEL_END_WIDTH * _run_width(arms)


def _run_width(rows: npt.NDArray[np.uint8]) -> float:
    """The mean length of the runs of set pixels along these rows."""
    starts = int((rows[:, 0] > 0).sum()) + int(((rows[:, 1:] > 0) & (rows[:, :-1] == 0)).sum())
    return float(rows.sum()) / max(1, starts)


def _heart_outlines() -> tuple[npt.NDArray[np.float64], ...]:
    """Two hearts' outlines, each scaled to fill the unit square: the heart curve (x = 16 sin^3
    t, y = 13 cos t - 5 cos 2t - 2 cos 3t - cos 4t), and Material's, a square turned 45 degrees
    with a disc on each upper side (1.707 of the square's side wide, 1.561 tall)."""
    turn = np.linspace(0, 2 * np.pi, 96, endpoint=False)
    curve = np.stack([
        16 * np.sin(turn) ** 3,
        -(13 * np.cos(turn) - 5 * np.cos(2 * turn) - 2 * np.cos(3 * turn) - np.cos(4 * turn)),
    ], axis=1)
    # Material's outline, the square's side 1, its middle at 0: the left disc's arc from the
    # bottom point's tangent round to the top notch, then the right's, then the point.
    arc = np.linspace(0, np.pi, 48)
    off = 0.5 / np.sqrt(2)
    up, down = arc - np.pi / 4, arc + np.pi / 4
    left = np.stack([-off - 0.5 * np.cos(up), -off - 0.5 * np.sin(up)], 1)
    right = np.stack([off - 0.5 * np.cos(down), -off - 0.5 * np.sin(down)], 1)
    material = np.concatenate([left, right, [[0.0, 1 / np.sqrt(2)]]])
    out = []
    for shape in (curve, material):
        lo, hi = shape.min(axis=0), shape.max(axis=0)
        out.append((shape - lo) / (hi - lo))
    return tuple(out)


_HEARTS = _heart_outlines()
"""The ♡ templates' outlines in the unit square, drawn to each box's size by :func:`_drawn`."""


def _drawn(glyph: str, w: int, h: int, thick: float) -> list[npt.NDArray[np.uint8]]:
    """The glyph drawn to fill a ``w`` x ``h`` box with strokes ``thick`` wide (a few variants
    of its proportions), as 0/1 masks."""
    t = max(1, round(thick))
    r = t / 2.0
    x0, y0, x1, y1 = r, r, w - 1 - r, h - 1 - r
    xm, ym = (x0 + x1) / 2, (y0 + y1) / 2
    out = []

    def canvas() -> npt.NDArray[np.uint8]:
        return np.zeros((h, w), np.uint8)

    def line(img: npt.NDArray[np.uint8], a: tuple[float, float], b: tuple[float, float]) -> None:
        s = 16  # sub-pixel precision: cv2 takes fixed-point points with 4 fraction bits
        pa = (round(a[0] * s), round(a[1] * s))
        pb = (round(b[0] * s), round(b[1] * s))
        cv2.line(img, pa, pb, 1, t, cv2.LINE_8, 4)

    if glyph == "×":
        img = canvas()
        line(img, (x0, y0), (x1, y1))
        line(img, (x1, y0), (x0, y1))
        out.append(img)
    elif glyph == "+":
        img = canvas()
        line(img, (xm, y0), (xm, y1))
        line(img, (x0, ym), (x1, ym))
        out.append(img)
    elif glyph == "←":
        for head in (0.45, 0.55):
            img = canvas()
            line(img, (x0, ym), (x1, ym))
            hx = x0 + (x1 - x0) * head * (y1 - y0) / max(1.0, x1 - x0)
            line(img, (x0, ym), (min(hx, x1), y0))
            line(img, (x0, ym), (min(hx, x1), y1))
            out.append(img)
    elif glyph == "search":
        for share in (0.62, 0.7, 0.78):
            img = canvas()
            d = share * min(x1 - x0, y1 - y0)
            c = (x0 + d / 2, y0 + d / 2)
            s = 16
            cv2.circle(img, (round(c[0] * s), round(c[1] * s)), round(d / 2 * s), 1, t,
                       cv2.LINE_8, 4)
            k = 0.7071 * d / 2
            line(img, (c[0] + k, c[1] + k), (x1, y1))
            out.append(img)
    elif glyph == "→":
        out = [np.ascontiguousarray(img[:, ::-1]) for img in _drawn("←", w, h, thick)]
    elif glyph == "‹":
        img = canvas()
        line(img, (x1, y0), (x0, ym))
        line(img, (x0, ym), (x1, y1))
        out.append(img)
    elif glyph == "›":
        out = [np.ascontiguousarray(img[:, ::-1]) for img in _drawn("‹", w, h, thick)]
    elif glyph == "share":
        # Material's: a dot at the left's middle joined to one at each right corner.
        img = canvas()
        dot = 0.16 * h
        ends = ((w - 1 - dot, dot), (dot, (h - 1) / 2), (w - 1 - dot, h - 1 - dot))
        line(img, ends[0], ends[1])
        line(img, ends[1], ends[2])
        for cx, cy in ends:
            cv2.circle(img, (round(cx * 16), round(cy * 16)), round(dot * 16), 1, -1,
                       cv2.LINE_8, 4)
        out.append(img)
    elif glyph == "▶":
        img = canvas()
        pts = np.array([[0, 0], [w - 1, (h - 1) / 2], [0, h - 1]], np.float64)
        cv2.fillPoly(img, [np.round(pts * 16).astype(np.int32)], 1, cv2.LINE_8, 4)
        out.append(img)
    elif glyph == "♡":
        for outline in _HEARTS:
            fit = outline * np.array([x1 - x0, y1 - y0]) + np.array([x0, y0])
            img = canvas()
            cv2.polylines(img, [np.round(fit * 16).astype(np.int32)], True, 1, t, cv2.LINE_8, 4)
            out.append(img)
    elif glyph == "send":
        # Material's paper plane, side on: a wedge pointing right with a thin cut into its
        # tail's middle (2 of its 18 dp wide, 15 of its 21 deep), which closes up when small.
        for cut in (0.0, 1 / 18):
            img = canvas()
            pts = np.array([
                [0, 0], [w - 1, (h - 1) / 2], [0, h - 1], [0, (0.5 + cut) * (h - 1)],
                [0.71 * (w - 1), (h - 1) / 2], [0, (0.5 - cut) * (h - 1)],
            ], np.float64)
            cv2.fillPoly(img, [np.round(pts * 16).astype(np.int32)], 1, cv2.LINE_8, 4)
            out.append(img)
    return out
