"""Toggle controls in the pixels: switches, checkboxes and radio buttons, with their state.

Where the tree is missing (Flutter, games, WebViews, a broken dump) a settings screen's toggles
are what an agent most needs named, and the tree's ``switch`` / ``check`` / ``radio`` rows say
whether each is on. The pixels say it too, for the indicators Material and AppCompat draw:

- a switch: a pill-shaped track with a round thumb, larger than the track is thick, at one end.
  The thumb's side and the colour of thumb and track say the state: on is the thumb at the
  right in colour (or a white thumb on a coloured track), off is the thumb at the left in grey.
  When side and colour disagree (a right-to-left layout, a monochrome theme) the state is
  unknown (None), not guessed;
- a checkbox: a small square with slightly rounded corners, outlined and empty (off) or filled
  with a tick cut out of it (on: a V whose lowest point lies left of its middle);
- a radio button: a ring, empty (off) or with a concentric dot (on).

Each candidate comes from the anchors' edge map (an outer component of the right size and
shape, on the scaled copy) and is then checked on the frame's own pixels around it: the control
must stand alone on a flat background (a row, a dialog), and its shape against that background
must be the indicator's, so a pill-shaped button with text in it, a progress bar, an avatar or an
app icon is none of them.
"""

from __future__ import annotations

import functools
from typing import Any, TypeAlias

import cv2
import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.types import BoxPx

U8: TypeAlias = npt.NDArray[Any]
Found: TypeAlias = tuple[str, BoxPx, float, bool | None]
"""A toggle in the scaled copy's pixels: kind (``switch``, ``check``, ``radio``), box, score,
state (None: unknown)."""

DP_PER_WIDTH = 360
"""A phone's screen is about 360 dp across its short side (its width held upright): sizes below
are in dp of that side. A landscape frame's width is its long side (2400 px of a 1080 x 2400
phone): dp taken from it were 2.2x too large, and no toggle of such a frame fitted the sizes."""
SQUARE_DP = (12.5, 30.0)
"""A checkbox's box (18 dp drawn) and a radio's ring (20 dp) with the edge map's slack."""
SWITCH_WIDTH_DP = (26.0, 72.0)
SWITCH_HEIGHT_DP = (16.0, 40.0)
SWITCH_ASPECT = (1.35, 3.4)
"""A switch's box, thumb and track together: AppCompat's is about 37 x 20 dp (18 dp of this
width on a phone 411 dp wide). A word of 12-15 dp tall letters is switch-shaped too: the height
floor keeps the words of a screen (a third of what the check looked at) from costing a look."""
INK_DIFF = 28
"""A pixel differs from the background by at least this (the largest channel difference) to be
part of the control (an off switch's grey track on white is 60-70 away; anti-aliasing less)."""
MARGIN_SHARE = 0.15
"""The margin looked at around a checkbox or a radio, as a share of its short side: its own
text starts about a third of its size after it."""
SWITCH_MARGIN_SHARE = 0.25
"""... and around a switch, whose off thumb may be told from the background only by its
shadow: the background's colour is taken further out."""
BACKGROUND_FLAT = 0.8
"""At least this share of the margin around a control is its background colour (within 16)."""
FLAT_NOISE = 12.0
"""A flat colour's pixels lie within this of its median (80th percentile: JPEG's noise on a
saturated fill reaches 8-12; a gradient or a photo spreads wider)."""
SATURATED = 60
"""HSV saturation (0-255) from which a thumb or track is in colour, not grey."""


def _fill_holes(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
    """``mask`` with every region it encloses filled (flood from the padded border)."""
    h, w = mask.shape
    flood = np.zeros((h + 2, w + 2), dtype=np.uint8)  # np.pad costs ten times as much
    flood[1:-1, 1:-1] = mask
    cv2.floodFill(flood, None, (0, 0), 1)
    outside = flood[1:-1, 1:-1] == 0
    out: npt.NDArray[np.bool_] = mask | outside
    return out


@functools.lru_cache(maxsize=256)
def _disc(h: int, w: int, cx: float, cy: float, r: float) -> npt.NDArray[np.float64]:
    """Each pixel's distance from ``(cx, cy)`` over ``r`` (read-only: cached, controls of one
    size recur on a screen and from screen to screen)."""
    ys, xs = np.mgrid[0:h, 0:w]
    out: npt.NDArray[np.float64] = np.hypot(xs - cx, ys - cy) / max(r, 1e-6)
    out.flags.writeable = False
    return out


def _share(mask: npt.NDArray[np.bool_], where: npt.NDArray[np.bool_]) -> float:
    n = int(where.sum())
    return float(mask[where].sum()) / n if n else 0.0


def _tick(hole: npt.NDArray[np.bool_]) -> bool:
    """Is ``hole`` (the part of a filled square that is not ink) one tick: a V whose lowest
    point lies in the left half of its width, its right arm rising higher than its left?"""
    count, labels, stats, _ = cv2.connectedComponentsWithStats(
        hole.astype(np.uint8), connectivity=8
    )
    if count < 2:
        return False
    big = 1 + int(np.argmax(stats[1:, 4]))
    x, y, w, h, area = (int(v) for v in stats[big])
    side = hole.shape[1]
    if w < 0.4 * side or h < 0.25 * side or area < 0.5 * hole.sum():
        return False
    mark = labels[y : y + h, x : x + w] == big
    has = mark.any(axis=0)
    bottoms = np.where(has, h - 1 - np.argmax(mark[::-1], axis=0), -1)
    tops = np.where(has, np.argmax(mark, axis=0), h)
    lowest = int(np.argmax(bottoms))
    if not 0.15 * w <= lowest <= 0.6 * w or bottoms[lowest] < h - 2:
        return False
    # The left arm ends lower than the right one: a tick, not a V or a chevron.
    left_top = int(tops[: max(1, w // 6)].min())
    right_top = int(tops[w - max(1, w // 6) :].min())
    if right_top >= left_top:
        return False
    # Both arms straight: the lower edge falls in a line to the lowest point and rises in a
    # line from it (a glyph's curves do not).
    xs = np.arange(w)
    for arm, sign in ((slice(0, lowest + 1), 1.0), (slice(lowest, w), -1.0)):
        ax, ay = xs[arm][has[arm]], bottoms[arm][has[arm]].astype(np.float64)
        if len(ax) < 3:
            return False
        slope, icpt = np.polyfit(ax, ay, 1)
        if sign * slope < 0.4 or float(np.abs(ay - (slope * ax + icpt)).max()) > 0.12 * h + 1:
            return False
    return True


def _square(
    own: U8, ink: npt.NDArray[np.bool_], filled: npt.NDArray[np.bool_]
) -> bool | None | str:
    """A checkbox's state from its ink (the square's own box): False outlined and empty, True
    filled with a tick; "" when it is no checkbox."""
    h, w = ink.shape
    hole = filled & ~ink
    share = float(hole.sum()) / (h * w)
    if share >= 0.4:
        ys, xs = np.nonzero(hole)
        hx0, hx1, hy0, hy1 = xs.min(), xs.max() + 1, ys.min(), ys.max() + 1
        if min(hx0, hy0, w - hx1, h - hy1) < 1:
            return ""
        thick = max(hx0, w - hx1, hy0, h - hy1)
        clean = float(hole[hy0:hy1, hx0:hx1].sum()) / ((hx1 - hx0) * (hy1 - hy0))
        if clean >= 0.9 and thick <= 0.25 * w and abs(hx0 - (w - hx1)) <= 2:
            return False
        return ""
    body = cv2.erode(ink.astype(np.uint8), np.ones((5, 5), np.uint8)).astype(bool)
    if 0.05 <= share <= 0.4 and _flat_colour(own, body) is not None and _tick(hole):
        return True
    return ""


def _ring(ink: npt.NDArray[np.bool_]) -> bool | str:
    """A radio's state from its ink (the ring's own box): False an empty ring, True a ring with
    a concentric dot; "" when it is no radio (an avatar, a clock, a ⊖)."""
    h, w = ink.shape
    d = _disc(h, w, (w - 1) / 2, (h - 1) / 2, (w + h) / 4)
    if _share(ink, (d >= 0.85) & (d <= 0.95)) < 0.85 or _share(ink, d > 1.12) > 0.05:
        return ""
    if _share(ink, (d >= 0.58) & (d <= 0.72)) > 0.05:
        return ""  # something between the middle and the ring: no radio's gap
    centre = _share(ink, d <= 0.4)
    if centre >= 0.9:
        return True
    if _share(ink, d <= 0.72) <= 0.03:
        return False
    return ""


def _segment(mask: npt.NDArray[np.bool_], x: int, y: int) -> tuple[int, int, int, int, int]:
    """The box (left, top, right, bottom) and pixel count of the 4-connected part of ``mask``
    holding ``(x, y)``; zeros when that pixel is not in it."""
    if not mask[y, x]:
        return 0, 0, 0, 0, 0
    _, labels, stats, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=4)
    sx, sy, sw, sh, area = (int(v) for v in stats[labels[y, x]])
    return sx, sy, sx + sw, sy + sh, area


def _flat_colour(patch: U8, part: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64] | None:
    """The colour of ``part`` of ``patch`` (its median) when it is one flat colour (JPEG noise
    and anti-aliasing aside), else None."""
    px = patch[part].astype(np.float64)
    if len(px) < 4:
        return None
    mean = np.median(px, axis=0)
    if float(np.percentile(np.abs(px - mean).max(axis=1), 80)) > FLAT_NOISE:
        return None
    out: npt.NDArray[np.float64] = mean
    return out


def _switch(patch: U8, bg: npt.NDArray[np.float64]) -> bool | None | str:
    """A switch's state from its pixels (``patch``, BGR, the control's box with a margin of
    background): "" when it is no switch. Along the middle row lie two flat colours, a thumb
    and a track; the thumb is a disc about the box's height across at one end, the track a band
    under four fifths of that thick, centred on it, running to the other end. An off thumb may
    be almost the background's colour (white on white, drawn by its shadow): it is told from
    the track, not from the background."""
    h, w = patch.shape[:2]
    cy = h // 2
    band = patch[max(0, cy - 1) : cy + 2].astype(np.int16)
    row = band.mean(axis=0)
    # Columns that are not background along the middle row: the control's span.
    # Columns that are not background along the middle row (the longest run: JPEG's noise
    # leaves specks in the margin): the control's span.
    off_bg = np.abs(row - bg).max(axis=1) > 3
    edges = np.flatnonzero(np.diff(np.concatenate(([0], off_bg.view(np.int8), [0]))))
    starts, ends = edges[0::2], edges[1::2]
    if not len(starts):
        return ""
    longest = int(np.argmax(ends - starts))
    x0, x1 = int(starts[longest]), int(ends[longest])
    span = x1 - x0
    if span < 0.5 * w:
        return ""
    out: list[tuple[bool, float]] = []
    for right in (False, True):
        # The thumb's middle a third of the span in from its end, the track's a sixth in
        # from the other end.
        tx = x1 - 1 - span // 4 if right else x0 + span // 4
        kx = x0 + span // 8 if right else x1 - 1 - span // 8
        thumb_c = _flat_colour(patch, _patch_mask(h, w, tx, cy, 2))
        track_c = _flat_colour(patch, _patch_mask(h, w, kx, cy, 1))
        if thumb_c is None or track_c is None:
            continue
        if float(np.abs(thumb_c - track_c).max()) < 12:
            continue
        tol_t = max(3.0, min(12.0, 0.45 * float(np.abs(thumb_c - bg).max())))
        tol_k = max(3.0, min(12.0, 0.45 * float(np.abs(track_c - bg).max())))
        near_t = _distance(patch, np.round(thumb_c)) <= tol_t
        near_k = _distance(patch, np.round(track_c)) <= tol_k
        t0, t1, t2, t3, ta = _segment(near_t, tx, cy)
        k0, k1, k2, k3, ka = _segment(near_k, kx, cy)
        tw, th, kw, kh = t2 - t0, t3 - t1, k2 - k0, k3 - k1
        if min(tw, th, kw, kh) < 4 or t0 == 0 or t1 == 0 or t2 == w or t3 == h:
            continue  # leaked into the margin: the thumb is the background's colour
        if not 0.8 <= tw / th <= 1.25 or not 0.7 <= ta / (np.pi / 4 * tw * th) <= 1.1:
            continue  # not a disc
        if not 0.3 * th <= kh <= 0.85 * th or abs((k1 + k3) - (t1 + t3)) > 0.25 * th:
            continue  # not a band thinner than the thumb and centred on it
        if ka < 0.55 * kw * kh or kw < 0.4 * th:
            continue
        # Side by side: the track runs from the thumb (under it) to the other end.
        if right and not (k0 < t0 and k2 >= t0 - 3) or not right and not (k2 > t2 and k0 <= t2 + 3):
            continue
        pair = np.array([[thumb_c, track_c]], dtype=np.uint8)
        hsv = cv2.cvtColor(pair, cv2.COLOR_BGR2HSV)[0]
        colour = float(max(min(hsv[0, 1], hsv[0, 2]), min(hsv[1, 1], hsv[1, 2])))
        out.append((right, colour))
    if len(out) != 1:
        return ""
    right, colour = out[0]
    coloured = colour >= SATURATED
    return right if right == coloured else None


def _distance(patch: U8, colour: npt.NDArray[Any]) -> U8:
    """Each pixel's largest channel difference (uint8) from ``colour`` (whole numbers 0-255),
    in one pass over the patch (:func:`fastpath.colour_distance`), where OpenCV's absdiff,
    split and two max cost five, and numpy's casts and reductions more."""
    b, g, r = (int(v) for v in colour[:3])
    return fastpath.colour_distance(patch, b, g, r)


def _patch_mask(h: int, w: int, x: int, y: int, r: int) -> npt.NDArray[np.bool_]:
    mask = np.zeros((h, w), dtype=bool)
    mask[max(0, y - r) : y + r + 1, max(0, x - r) : x + r + 1] = True
    return mask


def classify(pixels: U8, box: BoxPx) -> tuple[str, BoxPx, bool | None] | None:
    """What toggle, if any, the frame (BGR, full size) shows around ``box``: its kind, its own
    box (tight around its ink) and state; None when it is no toggle."""
    fh, fw = pixels.shape[:2]
    bw, bh = box.right - box.left, box.bottom - box.top
    switch = SWITCH_ASPECT[0] <= bw / max(1, bh) <= SWITCH_ASPECT[1] * 1.1
    m = max(3, round((SWITCH_MARGIN_SHARE if switch else MARGIN_SHARE) * min(bw, bh)))
    x0, y0, x1, y1 = box.left - m, box.top - m, box.right + m, box.bottom + m
    if x0 < 0 or y0 < 0 or x1 > fw or y1 > fh or pixels.ndim != 3:
        return None
    patch = pixels[y0:y1, x0:x1]
    # The background: the margin's colour (its median, on a sample of its top and bottom
    # strips: the margin is flat or this is no toggle), each pixel's distance from it, the
    # margin's pixels near it and far from it, and the box of the far ones (the control's
    # ink), in one compiled pass (:func:`fastpath.toggle_margin`): a dozen patches a screen.
    bg, dist, near, inked, (ix0, iy0, iw, ih) = fastpath.toggle_margin(patch, m, 16, INK_DIFF)
    ring_px = dist.size - (dist.shape[0] - 2 * m) * (dist.shape[1] - 2 * m)
    if near < BACKGROUND_FLAT * ring_px or inked > 0.05 * ring_px:
        return None  # a busy background, or something touches the control: not alone on it
    if switch:
        state = _switch(patch, bg)
        return None if state == "" else ("switch", box, state)  # type: ignore[return-value]
    if iw * ih < 16:
        return None
    ix1, iy1 = ix0 + iw, iy0 + ih
    ink = dist[iy0:iy1, ix0:ix1] >= INK_DIFF
    own = patch[iy0:iy1, ix0:ix1]
    h, w = ink.shape
    if min(h, w) < 8 or not 0.8 <= w / h <= 1.25:
        return None  # a checkbox and a radio are as wide as they are tall
    tight = BoxPx(x0 + ix0, y0 + iy0, x0 + ix1, y0 + iy1)
    filled = _fill_holes(ink)
    fill = float(filled.mean())
    if fill >= 0.88:
        state = _square(own, ink, filled)
        return None if state == "" else ("check", tight, state)  # type: ignore[return-value]
    if 0.68 <= fill < 0.88:
        state = _ring(ink)
        return None if state == "" else ("radio", tight, state)  # type: ignore[return-value]
    return None


def _alone(
    edges: U8, x0: Any, y0: Any, cws: Any, chs: Any, share: Any
) -> npt.NDArray[np.bool_]:
    """Which boxes (in the edge map's pixels) have no edge in a margin ``share`` of their short
    side wide around them: a toggle stands alone on its row, a letter among its neighbours
    does not. What is left is looked at closely (:func:`classify`), a few boxes a screen
    instead of every glyph of a CJK text. The boxes are toggle-sized and few (15 at the median
    on the corpus, 46 at most): counting the edges in each box and its margin costs
    microseconds, an integral image of the whole map a millisecond."""
    h, w = edges.shape[:2]
    m = np.maximum(2, np.round(share * np.minimum(cws, chs)).astype(np.int64))
    inside = (x0 - m >= 0) & (y0 - m >= 0) & (x0 + cws + m <= w) & (y0 + chs + m <= h)
    ring_area = (cws + 2 * m) * (chs + 2 * m) - cws * chs
    out: npt.NDArray[np.bool_] = np.zeros(len(inside), dtype=bool)
    for i in np.flatnonzero(inside).tolist():
        left, top, right, bottom = int(x0[i]), int(y0[i]), int(x0[i] + cws[i]), int(y0[i] + chs[i])
        k = int(m[i])
        ring = np.count_nonzero(edges[top - k : bottom + k, left - k : right + k])
        ring -= np.count_nonzero(edges[top:bottom, left:right])
        out[i] = ring <= 0.02 * ring_area[i]
    return out


def find_toggles(
    pixels: U8,
    edges: U8,
    boxes: npt.NDArray[np.int32],
    outer: npt.NDArray[np.bool_],
    scale: float,
) -> list[Found]:
    """Toggles among the edge map's outer components (``boxes``: rows of x, y, width, height in
    ``edges``, the map of the copy scaled by ``scale``), checked on the full-size frame; boxes
    come back in the scaled copy's pixels, like every anchor's before it is scaled up."""
    if not len(boxes) or pixels.ndim != 3:
        return []
    dp = min(pixels.shape[:2]) * scale / DP_PER_WIDTH
    x0, y0, cws, chs = boxes.T.astype(np.int64)
    sq = (
        (cws >= SQUARE_DP[0] * dp) & (cws <= SQUARE_DP[1] * dp)
        & (chs >= SQUARE_DP[0] * dp) & (chs <= SQUARE_DP[1] * dp)
        & (cws * 4 <= chs * 5) & (chs * 4 <= cws * 5)
    )
    sw = (
        (cws >= SWITCH_WIDTH_DP[0] * dp) & (cws <= SWITCH_WIDTH_DP[1] * dp)
        & (chs >= SWITCH_HEIGHT_DP[0] * dp) & (chs <= SWITCH_HEIGHT_DP[1] * dp)
        & (cws >= SWITCH_ASPECT[0] * chs * 0.9) & (cws <= SWITCH_ASPECT[1] * chs * 1.1)
    )
    picked = np.flatnonzero(outer & (sq | sw))
    if not len(picked):
        return []
    share = np.where(sq[picked], MARGIN_SHARE, SWITCH_MARGIN_SHARE)
    picked = picked[_alone(edges, x0[picked], y0[picked], cws[picked], chs[picked], share)]
    inv = 1.0 / scale
    out: list[Found] = []
    for i in picked.tolist():
        box = BoxPx(
            int(x0[i] * inv), int(y0[i] * inv),
            int(np.ceil((x0[i] + cws[i]) * inv)), int(np.ceil((y0[i] + chs[i]) * inv)),
        )
        got = classify(pixels, box)
        if got is None:
            continue
        kind, tight, state = got
        small = BoxPx(*(round(v * scale) for v in tight))
        out.append((kind, small, 0.7, state))
    return out
