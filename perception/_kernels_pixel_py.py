"""Pixel-channel kernels, pure Python: the reference semantics of ``_kernels_pixel.pxi``.

Each function may be replaced by the compiled version with identical results. Inputs are
already normalised by :mod:`perception.fastpath` (C-contiguous ``int32``, valid shapes); the
kernels do no checking. Area arithmetic is exact (Python ints, int64 in the compiled twin) and
ties are broken by index.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I32 = npt.NDArray[np.int32]
F64 = npt.NDArray[np.float64]
U8 = npt.NDArray[np.uint8]

__all__ = [
    "pixel_colour_distance",
    "pixel_containing",
    "pixel_flat_count",
    "pixel_iou_matrix",
    "pixel_line_ink",
    "pixel_merge_blocks",
    "pixel_nms",
    "pixel_spread_mask",
    "pixel_split_runs",
    "pixel_three_runs",
    "pixel_toggle_margin",
]


def _area(left: int, top: int, right: int, bottom: int) -> int:
    if right <= left or bottom <= top:
        return 0
    return (right - left) * (bottom - top)


def _inter(a: list[int], b: list[int]) -> int:
    return _area(max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))


def pixel_iou_matrix(a: I32, b: I32) -> F64:
    """IoU of every box in ``a`` ([N, 4]) with every box in ``b`` ([M, 4]); 0.0 for empty unions."""
    n, m = a.shape[0], b.shape[0]
    out = np.zeros((n, m), dtype=np.float64)
    al = a.tolist()
    bl = b.tolist()
    for i in range(n):
        area_a = _area(*al[i])
        for j in range(m):
            inter = _inter(al[i], bl[j])
            union = area_a + _area(*bl[j]) - inter
            if union > 0 and inter > 0:
                out[i, j] = float(inter) / float(union)
    return out


def pixel_nms(boxes: I32, order: I32, iou_num: int, iou_den: int) -> U8:
    """Greedy non-maximum suppression.

    ``order`` lists box indices from best to worst (the caller sorts stably, so ties keep index
    order). A box is dropped when a kept, better box overlaps it with IoU > ``iou_num/iou_den``,
    decided exactly as ``inter * iou_den > iou_num * union``. Returns ``keep`` (1/0) per box.
    """
    n = boxes.shape[0]
    keep = np.zeros(n, dtype=np.uint8)
    bl = boxes.tolist()
    ol = order.tolist()
    kept: list[int] = []
    for i in ol:
        area_i = _area(*bl[i])
        drop = False
        for k in kept:
            inter = _inter(bl[i], bl[k])
            union = area_i + _area(*bl[k]) - inter
            if inter > 0 and inter * iou_den > iou_num * union:
                drop = True
                break
        if not drop:
            kept.append(i)
            keep[i] = 1
    return keep


def pixel_merge_blocks(
    boxes: I32, order: I32, align_px: int, gap_min_px: int, gap_max_px: int, height_diff_px: int
) -> I32:
    """Group text lines into blocks by the Mobile-Agent-v2 rule.

    ``order`` is the reading order (top, then left; sorted stably by the caller). Walking it, each
    unmerged line starts a block and absorbs, in order, every later unmerged line ``j`` that is
    left-aligned with the block's last line (``|left_j - left_a| <= align_px``), starts just
    below it (``gap_min_px <= top_j - bottom_a <= gap_max_px``) and has a similar height
    (``|h_j - h_a| <= height_diff_px``); ``j`` then becomes the block's last line. Returns the
    block number of each box (blocks numbered in reading order from 0).
    """
    n = boxes.shape[0]
    group = np.full(n, -1, dtype=np.int32)
    bl = boxes.tolist()
    ol = order.tolist()
    next_group = 0
    for pos, i in enumerate(ol):
        if group[i] >= 0:
            continue
        group[i] = next_group
        anchor = i
        for j in ol[pos + 1 :]:
            if group[j] >= 0:
                continue
            a = bl[anchor]
            b = bl[j]
            gap = b[1] - a[3]
            if (
                abs(b[0] - a[0]) <= align_px
                and gap_min_px <= gap <= gap_max_px
                and abs((b[3] - b[1]) - (a[3] - a[1])) <= height_diff_px
            ):
                group[j] = next_group
                anchor = j
        next_group += 1
    return group


def pixel_split_runs(profile: I32, ink_min: int, gap_min_px: int) -> I32:
    """Split a column (or row) profile into ink segments separated by wide gaps.

    A position has ink when ``profile[x] >= ink_min``. Ink runs separated by fewer than
    ``gap_min_px`` empty positions are joined. Returns ``[K, 2]`` ``(start, end)`` pairs, end
    exclusive, left to right; ``[0, 2]`` when there is no ink.
    """
    w = profile.shape[0]
    pl = profile.tolist()
    segs: list[list[int]] = []
    x = 0
    while x < w:
        if pl[x] >= ink_min:
            start = x
            while x < w and pl[x] >= ink_min:
                x += 1
            if segs and start - segs[-1][1] < gap_min_px:
                segs[-1][1] = x
            else:
                segs.append([start, x])
        else:
            x += 1
    if not segs:
        return np.zeros((0, 2), dtype=np.int32)
    return np.array(segs, dtype=np.int32)


def pixel_containing(inner: I32, outer: I32, slack_px: int) -> I32:
    """For each ``inner`` box, the smallest ``outer`` box that contains it, or -1.

    Containment allows ``slack_px`` on every side. Among containing boxes the smallest area wins,
    ties by the lower index. An empty outer box never contains anything.
    """
    n, m = inner.shape[0], outer.shape[0]
    out = np.full(n, -1, dtype=np.int32)
    il = inner.tolist()
    olist = outer.tolist()
    areas = [_area(*o) for o in olist]
    for i in range(n):
        best = -1
        best_area = 0
        a = il[i]
        for j in range(m):
            o = olist[j]
            if areas[j] <= 0:
                continue
            if (
                a[0] >= o[0] - slack_px
                and a[1] >= o[1] - slack_px
                and a[2] <= o[2] + slack_px
                and a[3] <= o[3] + slack_px
                and (best < 0 or areas[j] < best_area)
            ):
                best = j
                best_area = areas[j]
        out[i] = best
    return out


def pixel_spread_mask(img: U8, floor: U8) -> U8:
    """A BGR image's mask (``uint8[H, W]``): 255 where the spread of a pixel's channels (the
    largest minus the smallest) is at least ``floor[largest]``, else 0; ``floor`` has 256
    entries."""
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"pixel_spread_mask: image of shape {img.shape}, expected (H, W, 3) BGR")
    if floor.shape[0] != 256:
        raise ValueError(f"pixel_spread_mask: floor has {floor.shape[0]} entries, expected 256")
    hi = img.max(axis=2)
    spread = hi - img.min(axis=2)
    out: U8 = np.where(spread >= floor[hi], 255, 0).astype(np.uint8)
    return out


def pixel_colour_distance(img: U8, b: int, g: int, r: int) -> U8:
    """Each pixel's largest channel difference (``uint8[H, W]``) from the colour ``(b, g, r)``
    (each 0-255) of a BGR image."""
    if img.ndim != 3 or img.shape[2] != 3:
        raise ValueError(f"pixel_colour_distance: image of shape {img.shape}, expected (H, W, 3)")
    if not (0 <= b <= 255 and 0 <= g <= 255 and 0 <= r <= 255):
        raise ValueError(f"pixel_colour_distance: colour {(b, g, r)} outside 0-255")
    diff = np.abs(img.astype(np.int16) - np.array([b, g, r], dtype=np.int16))
    out: U8 = diff.max(axis=2, initial=0).astype(np.uint8)
    return out


def pixel_line_ink(gray: U8, d: int, step_min: int) -> tuple[U8, I32]:
    """Where a grey pixel stands out of the pixels ``d`` rows above and ``d`` rows below it,
    both the same way, by ``step_min`` (1-255) or more (``mid - max(above, below)`` or
    ``min(above, below) - mid``): ``uint8[H - 2d, W]`` 1/0 for rows ``d .. H - d`` (none when
    ``H <= 2d``), and each row's count ``int32``."""
    n = gray.shape[0] - 2 * d
    if n <= 0 or gray.shape[1] == 0:
        return np.zeros((max(0, n), gray.shape[1]), np.uint8), np.zeros(max(0, n), np.int32)
    g = gray.astype(np.int16)
    above, mid, below = g[:n], g[d : d + n], g[2 * d : 2 * d + n]
    hit = (mid - np.maximum(above, below) >= step_min) | (
        np.minimum(above, below) - mid >= step_min
    )
    ink: U8 = hit.astype(np.uint8)
    counts: I32 = np.count_nonzero(hit, axis=1).astype(np.int32)
    return ink, counts


def pixel_three_runs(gray: U8, seeds: npt.NDArray[np.int64], contrast_min: int) -> U8:
    """``uint8[N]``: 1 where the box (rows of left, top, right, bottom in ``gray``, any strides:
    a transposed view) has a column down its middle that crosses exactly three strokes (three
    runs above, or three below, the middle of the column's darkest and lightest, which differ
    by ``contrast_min`` at least; rows past the last are read as the last), and, for a box at
    least as wide as tall, the columns at a quarter and three quarters of its width too; else
    0. All boxes at once, a column each."""
    if not len(seeds):
        return np.zeros(0, dtype=np.uint8)
    x0, y0, x1, y1 = seeds.T
    heights = y1 - y0
    steps = np.arange(max(1, int(heights.max())))[None, :]
    valid = steps < heights[:, None]
    rows = np.minimum(y0[:, None] + steps, gray.shape[0] - 1)

    def runs(mask: npt.NDArray[np.bool_]) -> npt.NDArray[np.intp]:
        # A run starts where a True follows a False (or the row's start): plain slicing, for
        # np.diff's prepend and count_nonzero's axis cost more than the work on these rows.
        counts: npt.NDArray[np.intp] = (mask[:, 1:] & ~mask[:, :-1]).sum(axis=1) + mask[:, 0]
        return counts

    ok = np.ones(len(seeds), dtype=bool)
    wide = (x1 - x0) >= heights
    for quarter in (2, 1, 3):
        vals = gray[rows, (x0 + (x1 - x0) * quarter // 4)[:, None]].astype(np.int16)
        lo = np.where(valid, vals, 255).min(axis=1)
        hi = np.where(valid, vals, 0).max(axis=1)
        above = valid & (2 * vals > (lo + hi)[:, None])
        three = ((runs(above) == 3) | (runs(valid & ~above) == 3)) & (hi - lo >= contrast_min)
        ok &= three if quarter == 2 else three | ~wide
    out: U8 = ok.astype(np.uint8)
    return out


def pixel_toggle_margin(
    patch: U8, m: int, near_max: int, ink_min: int
) -> tuple[F64, U8, int, int, tuple[int, int, int, int]]:
    """What a toggle's patch (BGR, its box with a margin ``m`` wide, ``2m`` less than either
    side) shows round the control: the background ``float64[3]`` (each channel's median over
    rows ``0, 2, .. < m`` and ``h - m, h - m + 2, .. < h``, every second column), each pixel's
    largest channel difference ``uint8[H, W]`` from the background's whole levels (its floor),
    how many margin pixels lie within ``near_max`` of it and how many ``ink_min`` or more from
    it, and the box ``(x, y, width, height)`` of all pixels ``ink_min`` or more from it (zeros
    if none)."""
    ring = np.concatenate((patch[:m:2, ::2].reshape(-1, 3), patch[-m::2, ::2].reshape(-1, 3)))
    bg: F64 = np.median(ring, axis=0)
    dist = pixel_colour_distance(patch, *(int(v) for v in bg.astype(np.uint8)))
    inner = dist[m:-m, m:-m]
    near = int(np.count_nonzero(dist <= near_max) - np.count_nonzero(inner <= near_max))
    ink = dist >= ink_min
    inked = int(np.count_nonzero(ink) - np.count_nonzero(ink[m:-m, m:-m]))
    cols, rows = np.flatnonzero(ink.any(axis=0)), np.flatnonzero(ink.any(axis=1))
    if not len(cols):
        return bg, dist, near, inked, (0, 0, 0, 0)
    x0, y0 = int(cols[0]), int(rows[0])
    return bg, dist, near, inked, (x0, y0, int(cols[-1]) + 1 - x0, int(rows[-1]) + 1 - y0)


def _three_wide(a: U8, op: np.ufunc, axis: int) -> U8:
    """``op`` of each element and its neighbours either side along ``axis`` (those that are)."""
    out = a.copy()
    before = (slice(None),) * axis + (slice(1, None),)
    after = (slice(None),) * axis + (slice(None, -1),)
    op(out[before], a[after], out=out[before])
    op(out[after], a[before], out=out[after])
    return out


def pixel_flat_count(
    gray: U8, left: int, top: int, right: int, bottom: int, flat_range: int
) -> int:
    """How many pixels of the box (inside ``gray``) are flat: their 3x3 neighbourhood, cut by
    the image's edges, spans at most ``flat_range`` grey levels (OpenCV's morphological
    gradient, whose border leaves out what lies outside)."""
    if right <= left or bottom <= top:
        return 0
    h, w = gray.shape
    y0, x0 = max(0, top - 1), max(0, left - 1)
    around = gray[y0 : min(h, bottom + 1), x0 : min(w, right + 1)]
    # The neighbourhood's extremes: three rows, then three columns, each cut at the crop's
    # edges (which are the image's, or a pixel beyond the box).
    lo = _three_wide(_three_wide(around, np.minimum, 0), np.minimum, 1)
    hi = _three_wide(_three_wide(around, np.maximum, 0), np.maximum, 1)
    spread = (hi - lo)[top - y0 : bottom - y0, left - x0 : right - x0]
    return int(np.count_nonzero(spread <= flat_range))
