"""Icon glyphs read off one button's pixels: the close ×, the back arrow ←, the add +, the
magnifier of a search, and the menu glyphs ⋮ ⋯ ☰ (see :func:`glyph_of`).

An icon-only button the tree leaves unlabelled (no text, no description, an obfuscated id)
reaches the model as ``""``; OCR reads nothing off a glyph. This names the few icons an agent
needs most, by shape alone and without a model: the button's drawing is one stroked shape on a
flat background (or three even strokes for the menu glyphs), compared with the same shape drawn
here, at the drawing's own size, aspect and stroke width (:func:`_drawn`). A shape that fits
no template closely, or anything more than one shape (a word, "C++", a checkbox's tick in its
box), is no glyph: a wrong × makes an agent dismiss a screen, so the rule keeps to what it can
tell apart (precision first; see ``perception-bench pixels``, "icon glyphs")."""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np
import numpy.typing as npt

from perception.pixel.anchors import _three_strokes
from perception.types import BoxPx

U8 = npt.NDArray[np.uint8]

GLYPHS = ("×", "←", "+", "search", "⋮", "⋯", "☰")
"""What :func:`glyph_of` names. The glyph character itself where one exists (a model reads it
as the icon it draws, and :data:`perception.fusion.screen.CLOSE_SYMBOLS` holds "×"); the word
"search" for the magnifier, which has no character a model reads as that."""

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
    "←": (0.85, 1.5),
}
"""The width / height a drawing of each glyph may have."""


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
            return ""  # a shape runs into the button's edge: a picture, a neighbour, a frame
    if len(keep) == 3:
        return _menu(ink, labels, stats, keep)
    if len(keep) != 1:
        return ""  # letters, "C++", a tick in its box
    x, y, cw, ch = stats[keep[0], :4].tolist()
    shape = labels[y : y + ch, x : x + cw] == keep[0]
    fill = big / float(cw * ch)
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
    if thick * _STROKE_SHARE > max(tw, th):
        return ""  # a blob or a filled shape (a solid arrow), not strokes
    near = cv2.dilate(mask.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
    best, name = 0.0, ""
    for glyph, (lo, hi) in _ASPECTS.items():
        if not lo <= aspect <= hi:
            continue
        for drawn in _drawn(glyph, tw, th, thick):
            d = drawn.astype(bool)
            d_near = cv2.dilate(drawn, np.ones((3, 3), np.uint8)).astype(bool)
            fit = min(
                float((mask & d_near).sum()) / area, float((d & near).sum()) / max(1, d.sum())
            )
            if fit > best:
                best, name = fit, glyph
    return name if best >= GLYPH_FIT else ""


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
    return out
