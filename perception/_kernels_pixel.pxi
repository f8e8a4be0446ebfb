# Pixel-channel kernels (included by _fastpath.pyx). Twins: perception/_kernels_pixel_py.py.
# Boxes are (left, top, right, bottom) int32 rows; areas are exact int64, IoU thresholds are
# compared as integer cross products, and ties go to the lower index, so both twins agree bit
# for bit. Inputs are clean (perception.fastpath normalises them); no checking here.

from libc.stdint cimport int32_t, int64_t, uint8_t

import numpy as np


cdef inline int64_t _px_area(int64_t l, int64_t t, int64_t r, int64_t b) noexcept nogil:
    if r <= l or b <= t:
        return 0
    return (r - l) * (b - t)


cdef inline int64_t _px_inter(const int32_t[:, ::1] a, Py_ssize_t i,
                              const int32_t[:, ::1] b, Py_ssize_t j) noexcept nogil:
    cdef int64_t l = a[i, 0] if a[i, 0] > b[j, 0] else b[j, 0]
    cdef int64_t t = a[i, 1] if a[i, 1] > b[j, 1] else b[j, 1]
    cdef int64_t r = a[i, 2] if a[i, 2] < b[j, 2] else b[j, 2]
    cdef int64_t bt = a[i, 3] if a[i, 3] < b[j, 3] else b[j, 3]
    return _px_area(l, t, r, bt)


cdef inline int64_t _px_box_area(const int32_t[:, ::1] a, Py_ssize_t i) noexcept nogil:
    return _px_area(a[i, 0], a[i, 1], a[i, 2], a[i, 3])


def pixel_iou_matrix(const int32_t[:, ::1] a, const int32_t[:, ::1] b):
    """IoU ``float64[N, M]`` of every box of ``a`` with every box of ``b``; 0.0 for no overlap."""
    cdef Py_ssize_t n = a.shape[0], m = b.shape[0], i, j
    cdef int64_t inter, union, area_a
    out = np.zeros((n, m), dtype=np.float64)
    cdef double[:, ::1] o = out
    with nogil:
        for i in range(n):
            area_a = _px_box_area(a, i)
            for j in range(m):
                inter = _px_inter(a, i, b, j)
                union = area_a + _px_box_area(b, j) - inter
                if union > 0 and inter > 0:
                    o[i, j] = <double>inter / <double>union
    return out


def pixel_nms(const int32_t[:, ::1] boxes, const int32_t[::1] order,
              int64_t iou_num, int64_t iou_den):
    """Greedy NMS in ``order`` (best first); drop when ``inter * den > num * union``."""
    cdef Py_ssize_t n = boxes.shape[0], p, q, i, k, n_kept = 0
    cdef int64_t inter, union, area_i
    cdef bint drop
    keep = np.zeros(n, dtype=np.uint8)
    kept = np.zeros(n, dtype=np.int32)
    cdef uint8_t[::1] kp = keep
    cdef int32_t[::1] kl = kept
    with nogil:
        for p in range(n):
            i = order[p]
            area_i = _px_box_area(boxes, i)
            drop = False
            for q in range(n_kept):
                k = kl[q]
                inter = _px_inter(boxes, i, boxes, k)
                union = area_i + _px_box_area(boxes, k) - inter
                if inter > 0 and inter * iou_den > iou_num * union:
                    drop = True
                    break
            if not drop:
                kl[n_kept] = <int32_t>i
                n_kept += 1
                kp[i] = 1
    return keep


def pixel_merge_blocks(const int32_t[:, ::1] boxes, const int32_t[::1] order,
                       int64_t align_px, int64_t gap_min_px, int64_t gap_max_px,
                       int64_t height_diff_px):
    """Mobile-Agent-v2 block merge; returns the block number of each box (reading order)."""
    cdef Py_ssize_t n = boxes.shape[0], p, q, i, j, anchor
    cdef int32_t next_group = 0
    cdef int64_t gap, dl, dh
    group = np.full(n, -1, dtype=np.int32)
    cdef int32_t[::1] g = group
    with nogil:
        for p in range(n):
            i = order[p]
            if g[i] >= 0:
                continue
            g[i] = next_group
            anchor = i
            for q in range(p + 1, n):
                j = order[q]
                if g[j] >= 0:
                    continue
                gap = <int64_t>boxes[j, 1] - boxes[anchor, 3]
                dl = <int64_t>boxes[j, 0] - boxes[anchor, 0]
                if dl < 0:
                    dl = -dl
                dh = (<int64_t>boxes[j, 3] - boxes[j, 1]) - (
                    <int64_t>boxes[anchor, 3] - boxes[anchor, 1])
                if dh < 0:
                    dh = -dh
                if dl <= align_px and gap_min_px <= gap <= gap_max_px and dh <= height_diff_px:
                    g[j] = next_group
                    anchor = j
            next_group += 1
    return group


def pixel_split_runs(const int32_t[::1] profile, int64_t ink_min, int64_t gap_min_px):
    """Ink segments ``int32[K, 2]`` of a profile; runs closer than ``gap_min_px`` are joined."""
    cdef Py_ssize_t w = profile.shape[0], x = 0, start, k = 0
    buf = np.zeros(((w + 1) // 2 + 1, 2), dtype=np.int32)
    cdef int32_t[:, ::1] s = buf
    with nogil:
        while x < w:
            if profile[x] >= ink_min:
                start = x
                while x < w and profile[x] >= ink_min:
                    x += 1
                if k > 0 and start - s[k - 1, 1] < gap_min_px:
                    s[k - 1, 1] = <int32_t>x
                else:
                    s[k, 0] = <int32_t>start
                    s[k, 1] = <int32_t>x
                    k += 1
            else:
                x += 1
    return np.ascontiguousarray(buf[:k])


def pixel_containing(const int32_t[:, ::1] inner, const int32_t[:, ::1] outer, int64_t slack_px):
    """Index of the smallest ``outer`` box containing each ``inner`` box (with slack), or -1."""
    cdef Py_ssize_t n = inner.shape[0], m = outer.shape[0], i, j
    cdef int64_t best_area, area_j
    cdef int32_t best
    out = np.full(n, -1, dtype=np.int32)
    cdef int32_t[::1] o = out
    with nogil:
        for i in range(n):
            best = -1
            best_area = 0
            for j in range(m):
                area_j = _px_box_area(outer, j)
                if area_j <= 0:
                    continue
                if (inner[i, 0] >= <int64_t>outer[j, 0] - slack_px
                        and inner[i, 1] >= <int64_t>outer[j, 1] - slack_px
                        and inner[i, 2] <= <int64_t>outer[j, 2] + slack_px
                        and inner[i, 3] <= <int64_t>outer[j, 3] + slack_px
                        and (best < 0 or area_j < best_area)):
                    best = <int32_t>j
                    best_area = area_j
            o[i] = best
    return out


def pixel_spread_mask(const uint8_t[:, :, ::1] img, const uint8_t[::1] floor):
    """``uint8[H, W]`` mask of a BGR image: 255 where the spread of a pixel's channels (the
    largest minus the smallest) is at least ``floor[largest]``, else 0. One pass over the
    pixels; ``floor`` has 256 entries."""
    cdef Py_ssize_t n = img.shape[0] * img.shape[1], i
    cdef uint8_t b, g, r, hi, lo
    cdef uint8_t table[256]
    if img.shape[2] != 3:
        raise ValueError(f"pixel_spread_mask: {img.shape[2]} channels, expected 3 (BGR)")
    if floor.shape[0] != 256:
        raise ValueError(f"pixel_spread_mask: floor has {floor.shape[0]} entries, expected 256")
    for i in range(256):
        table[i] = floor[i]
    out = np.zeros((img.shape[0], img.shape[1]), dtype=np.uint8)
    if n == 0:
        return out
    cdef uint8_t[:, ::1] o = out
    cdef uint8_t* q = &o[0, 0]
    cdef const uint8_t* p = &img[0, 0, 0]
    with nogil:
        for i in range(n):
            b = p[0]
            g = p[1]
            r = p[2]
            p += 3
            hi = b if b > g else g
            hi = hi if hi > r else r
            lo = b if b < g else g
            lo = lo if lo < r else r
            q[i] = 255 if <uint8_t>(hi - lo) >= table[hi] else 0
    return out


def pixel_colour_distance(const uint8_t[:, :, :] img, int b, int g, int r):
    """``uint8[H, W]``: each pixel's largest channel difference from the colour ``(b, g, r)``
    (each 0-255) of a BGR image (any strides: a crop of a frame)."""
    cdef Py_ssize_t h = img.shape[0], w = img.shape[1], y, x
    cdef int d, e
    if img.shape[2] != 3:
        raise ValueError(f"pixel_colour_distance: {img.shape[2]} channels, expected 3 (BGR)")
    if not (0 <= b <= 255 and 0 <= g <= 255 and 0 <= r <= 255):
        raise ValueError(f"pixel_colour_distance: colour {(b, g, r)} outside 0-255")
    out = np.zeros((h, w), dtype=np.uint8)
    cdef uint8_t[:, ::1] o = out
    with nogil:
        for y in range(h):
            for x in range(w):
                d = img[y, x, 0] - b
                if d < 0:
                    d = -d
                e = img[y, x, 1] - g
                if e < 0:
                    e = -e
                if e > d:
                    d = e
                e = img[y, x, 2] - r
                if e < 0:
                    e = -e
                if e > d:
                    d = e
                o[y, x] = <uint8_t>d
    return out


def pixel_line_ink(const uint8_t[:, ::1] gray, Py_ssize_t d, int step_min):
    """Where a grey pixel stands out of the pixels ``d`` rows above and ``d`` rows below it,
    both the same way, by ``step_min`` (1-255) or more (``mid - max(above, below)`` or
    ``min(above, below) - mid``): ``uint8[H - 2d, W]`` 1/0 for rows ``d .. H - d`` (none when
    ``H <= 2d``), and each row's count ``int32``. Byte arithmetic throughout, so that the
    compiler runs each row in vector registers."""
    cdef Py_ssize_t n = max(0, gray.shape[0] - 2 * d), w = gray.shape[1], y, x
    cdef const uint8_t* a
    cdef const uint8_t* m
    cdef const uint8_t* b
    cdef uint8_t* q
    cdef uint8_t hi, lo, mid, up, down, s = <uint8_t>step_min
    cdef int32_t count
    ink = np.empty((n, w), dtype=np.uint8)
    counts = np.empty(n, dtype=np.int32)
    if n == 0 or w == 0:
        counts[:] = 0
        return ink, counts
    cdef uint8_t[:, ::1] o = ink
    cdef int32_t[::1] c = counts
    with nogil:
        for y in range(n):
            a = &gray[y, 0]
            m = &gray[y + d, 0]
            b = &gray[y + 2 * d, 0]
            q = &o[y, 0]
            for x in range(w):
                hi = a[x] if a[x] > b[x] else b[x]
                lo = a[x] if a[x] < b[x] else b[x]
                mid = m[x]
                up = mid - hi if mid > hi else 0
                down = lo - mid if lo > mid else 0
                up = up if up > down else down
                q[x] = 1 if up >= s else 0
            count = 0
            for x in range(w):
                count += q[x]
            c[y] = count
    return ink, counts


cdef inline bint _px_three_strokes(const uint8_t[:, :] gray, int64_t x, int64_t top,
                                   int64_t height, int contrast_min) noexcept nogil:
    """Does column ``x`` of ``gray``, rows ``top .. top + height`` (each clamped to the last
    row), cross exactly three strokes: three runs above or three below the middle of its
    darkest and lightest, which differ by ``contrast_min`` at least?"""
    cdef Py_ssize_t last = gray.shape[0] - 1, row
    cdef int64_t k
    cdef int lo = 255, hi = 0, v, runs_above = 0, runs_below = 0
    cdef bint prev_above = False, prev_below = False, above
    for k in range(height):
        row = <Py_ssize_t>(top + k) if top + k < last else last
        v = gray[row, x]
        if v < lo:
            lo = v
        if v > hi:
            hi = v
    if hi - lo < contrast_min:
        return False
    for k in range(height):
        row = <Py_ssize_t>(top + k) if top + k < last else last
        above = 2 * <int>gray[row, x] > lo + hi
        if above and not prev_above:
            runs_above += 1
        if not above and not prev_below:
            runs_below += 1
        prev_above = above
        prev_below = not above
    return runs_above == 3 or runs_below == 3


def pixel_three_runs(const uint8_t[:, :] gray, const int64_t[:, ::1] seeds, int contrast_min):
    """``uint8[N]``: 1 where the box (rows of left, top, right, bottom in ``gray``, any strides:
    a transposed view) has a column down its middle that crosses exactly three strokes
    (:func:`_px_three_strokes`), and, for a box at least as wide as tall, the columns at a
    quarter and three quarters of its width too; else 0."""
    cdef Py_ssize_t n = seeds.shape[0], i
    cdef int64_t x0, y0, bw, height
    out = np.zeros(n, dtype=np.uint8)
    cdef uint8_t[::1] o = out
    with nogil:
        for i in range(n):
            x0 = seeds[i, 0]
            y0 = seeds[i, 1]
            bw = seeds[i, 2] - x0
            height = seeds[i, 3] - y0
            if height <= 0:
                continue
            if not _px_three_strokes(gray, x0 + bw * 2 // 4, y0, height, contrast_min):
                continue
            if bw >= height and not (
                _px_three_strokes(gray, x0 + bw // 4, y0, height, contrast_min)
                and _px_three_strokes(gray, x0 + bw * 3 // 4, y0, height, contrast_min)
            ):
                continue
            o[i] = 1
    return out


def pixel_toggle_margin(const uint8_t[:, :, :] patch, Py_ssize_t m, int near_max, int ink_min):
    """What a toggle's patch (BGR, its box with a margin ``m`` wide, ``2m`` less than either
    side) shows round the control, in one pass: the background ``float64[3]`` (each channel's
    median over rows ``0, 2, .. < m`` and ``h - m, h - m + 2, .. < h``, every second column:
    the middle two's mean when they are even in number), each pixel's largest channel
    difference ``uint8[H, W]`` from the background's whole levels (its floor), how many
    margin pixels lie within ``near_max`` of it and how many ``ink_min`` or more from it, and
    the box ``(x, y, width, height)`` of all pixels ``ink_min`` or more from it (zeros if
    none)."""
    cdef Py_ssize_t h = patch.shape[0], w = patch.shape[1], y, x, c, n = 0, k, seen
    cdef Py_ssize_t ix0 = w, iy0 = h, ix1 = -1, iy1 = -1, near = 0, inked = 0
    cdef Py_ssize_t s1 = patch.strides[1], s2 = patch.strides[2]
    cdef int64_t hist[3][256]
    cdef double med[3]
    cdef int lo_v, v, d, e
    cdef int col[3]
    cdef const uint8_t* p
    cdef uint8_t* q
    cdef bint margin
    if patch.shape[2] != 3:
        raise ValueError(f"pixel_toggle_margin: {patch.shape[2]} channels, expected 3 (BGR)")
    for c in range(3):
        for v in range(256):
            hist[c][v] = 0
    for y in range(h):
        if not ((y < m and y % 2 == 0) or (y >= h - m and (y - (h - m)) % 2 == 0)):
            continue
        p = &patch[y, 0, 0]
        for x in range(0, w, 2):
            hist[0][p[s1 * x]] += 1
            hist[1][p[s1 * x + s2]] += 1
            hist[2][p[s1 * x + 2 * s2]] += 1
            n += 1
    k = n // 2
    for c in range(3):
        # The values at sorted positions k - 1 and k.
        seen = 0
        lo_v = -1
        for v in range(256):
            seen += hist[c][v]
            if lo_v < 0 and seen >= k:
                lo_v = v
            if seen >= k + 1:
                break
        if n % 2:
            med[c] = <double>v
        else:
            med[c] = (<double>lo_v + <double>v) / 2.0
        col[c] = <int>med[c]
    bg = np.array([med[0], med[1], med[2]], dtype=np.float64)
    out = np.empty((h, w), dtype=np.uint8)
    cdef uint8_t[:, ::1] o = out
    with nogil:
        for y in range(h):
            p = &patch[y, 0, 0]
            q = &o[y, 0]
            for x in range(w):
                d = p[s1 * x] - col[0]
                if d < 0:
                    d = -d
                e = p[s1 * x + s2] - col[1]
                if e < 0:
                    e = -e
                if e > d:
                    d = e
                e = p[s1 * x + 2 * s2] - col[2]
                if e < 0:
                    e = -e
                if e > d:
                    d = e
                q[x] = <uint8_t>d
                margin = y < m or y >= h - m or x < m or x >= w - m
                if d >= ink_min:
                    if x < ix0:
                        ix0 = x
                    if x > ix1:
                        ix1 = x
                    if y < iy0:
                        iy0 = y
                    iy1 = y
                    if margin:
                        inked += 1
                if margin and d <= near_max:
                    near += 1
    if ix1 < 0:
        return bg, out, near, inked, (0, 0, 0, 0)
    return bg, out, near, inked, (ix0, iy0, ix1 - ix0 + 1, iy1 - iy0 + 1)


def pixel_flat_count(const uint8_t[:, ::1] gray, Py_ssize_t left, Py_ssize_t top,
                     Py_ssize_t right, Py_ssize_t bottom, int flat_range):
    """How many pixels of the box (inside ``gray``) are flat: their 3x3 neighbourhood, cut by
    the image's edges, spans at most ``flat_range`` grey levels (OpenCV's morphological
    gradient, whose border leaves out what lies outside). Row by row: each column's extremes
    over three rows (a row past an edge read as the row itself, which changes no extreme),
    then three of those side by side, in loops the compiler runs in vector registers."""
    cdef Py_ssize_t h = gray.shape[0], w = gray.shape[1], y, x, c0, c1, n, j
    cdef int64_t count = 0
    cdef uint8_t lo, hi, a, b, c
    cdef const uint8_t* pa
    cdef const uint8_t* pm
    cdef const uint8_t* pb
    if right <= left or bottom <= top:
        return 0
    c0 = left - 1 if left > 0 else 0
    c1 = right + 1 if right < w else w
    n = c1 - c0
    # Column j + 1 of the buffers is column c0 + j of the image; 0 and n + 1 repeat their
    # neighbour (the image's edge).
    cols_lo = np.empty(n + 2, dtype=np.uint8)
    cols_hi = np.empty(n + 2, dtype=np.uint8)
    cdef uint8_t[::1] vlo = cols_lo
    cdef uint8_t[::1] vhi = cols_hi
    cdef uint8_t* ql = &vlo[0]
    cdef uint8_t* qh = &vhi[0]
    cdef Py_ssize_t first = left - c0 + 1, last = right - c0 + 1
    with nogil:
        for y in range(top, bottom):
            pa = &gray[y - 1 if y > 0 else y, c0]
            pm = &gray[y, c0]
            pb = &gray[y + 1 if y + 1 < h else y, c0]
            for j in range(n):
                a = pa[j]
                b = pm[j]
                c = pb[j]
                lo = a if a < b else b
                lo = lo if lo < c else c
                hi = a if a > b else b
                hi = hi if hi > c else c
                ql[j + 1] = lo
                qh[j + 1] = hi
            ql[0] = ql[1]
            qh[0] = qh[1]
            ql[n + 1] = ql[n]
            qh[n + 1] = qh[n]
            for j in range(first, last):
                a = ql[j - 1]
                b = ql[j]
                c = ql[j + 1]
                lo = a if a < b else b
                lo = lo if lo < c else c
                a = qh[j - 1]
                b = qh[j]
                c = qh[j + 1]
                hi = a if a > b else b
                hi = hi if hi > c else c
                count += (hi - lo) <= flat_range
    return count
