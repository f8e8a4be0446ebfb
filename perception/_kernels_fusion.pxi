# Fusion kernels (included by _fastpath.pyx). Twins: perception/_kernels_fusion_py.py.
# Boxes are (left, top, right, bottom) int32 rows; areas and intersections are exact int64 and
# every ratio is one final float64 division, so both twins agree bit for bit. Ties go to the
# lower index.

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t
from cpython.object cimport Py_TYPE

import numpy as np


cdef inline int64_t _fu_area(int64_t l, int64_t t, int64_t r, int64_t b) noexcept nogil:
    if r <= l or b <= t:
        return 0
    return (r - l) * (b - t)


cdef inline int64_t _fu_inter(const int32_t[:, ::1] a, Py_ssize_t i,
                              const int32_t[:, ::1] b, Py_ssize_t j) noexcept nogil:
    cdef int64_t l = a[i, 0] if a[i, 0] > b[j, 0] else b[j, 0]
    cdef int64_t t = a[i, 1] if a[i, 1] > b[j, 1] else b[j, 1]
    cdef int64_t r = a[i, 2] if a[i, 2] < b[j, 2] else b[j, 2]
    cdef int64_t bt = a[i, 3] if a[i, 3] < b[j, 3] else b[j, 3]
    return _fu_area(l, t, r, bt)


def fusion_intersections(const int32_t[:, ::1] a, const int32_t[:, ::1] b):
    """Exact intersection areas ``int64[N, M]`` of every box of ``a`` with every box of ``b``."""
    cdef Py_ssize_t n = a.shape[0], m = b.shape[0], i, j
    out = np.zeros((n, m), dtype=np.int64)
    cdef int64_t[:, ::1] o = out
    with nogil:
        for i in range(n):
            for j in range(m):
                o[i, j] = _fu_inter(a, i, b, j)
    return out


def fusion_match(const int32_t[:, ::1] tree, const int32_t[:, ::1] blocks):
    """For each block, the tree box that holds most of it: ``(index int32[M], share float64[M])``.

    ``share`` is the part of the block's area inside the tree box, halved when the block's centre
    lies outside it. Among equal shares the smaller tree box wins, then the lower index. A block
    with no overlap (or zero area) gets index -1 and share 0.
    """
    cdef Py_ssize_t n = tree.shape[0], m = blocks.shape[0], i, j
    best = np.full(m, -1, dtype=np.int32)
    share = np.zeros(m, dtype=np.float64)
    cdef int32_t[::1] bi = best
    cdef double[::1] bs = share
    cdef int64_t inter, barea, tarea, best_area, cx2, cy2
    cdef double s
    with nogil:
        for j in range(m):
            barea = _fu_area(blocks[j, 0], blocks[j, 1], blocks[j, 2], blocks[j, 3])
            if barea == 0:
                continue
            cx2 = <int64_t>blocks[j, 0] + blocks[j, 2]
            cy2 = <int64_t>blocks[j, 1] + blocks[j, 3]
            best_area = 0
            for i in range(n):
                inter = _fu_inter(tree, i, blocks, j)
                if inter == 0:
                    continue
                s = (<double>inter) / (<double>barea)
                if not (2 * <int64_t>tree[i, 0] <= cx2 and cx2 < 2 * <int64_t>tree[i, 2]
                        and 2 * <int64_t>tree[i, 1] <= cy2 and cy2 < 2 * <int64_t>tree[i, 3]):
                    s = s * 0.5
                tarea = _fu_area(tree[i, 0], tree[i, 1], tree[i, 2], tree[i, 3])
                if s > bs[j] or (s == bs[j] and tarea < best_area):
                    bs[j] = s
                    bi[j] = <int32_t>i
                    best_area = tarea
    return best, share


cdef inline void _fu_row_stats(const uint8_t* row, Py_ssize_t n,
                               uint32_t* s, uint32_t* sq) noexcept nogil:
    # 32-bit lanes (the caller keeps a row under 2**32 / 255**2 pixels): gcc vectorises this.
    cdef uint32_t a = 0, q = 0, v
    cdef Py_ssize_t x
    for x in range(n):
        v = row[x]
        a += v
        q += v * v
    s[0] = a
    sq[0] = q


def fusion_box_gray_stats(const uint8_t[:, ::1] gray, const int32_t[:, ::1] boxes):
    """Pixel count, sum and sum of squares ``int64[N, 3]`` of ``gray`` inside each box (clipped)."""
    cdef Py_ssize_t n = boxes.shape[0], h = gray.shape[0], w = gray.shape[1], k, x, y
    cdef Py_ssize_t l, t, r, b
    out = np.zeros((n, 3), dtype=np.int64)
    cdef int64_t[:, ::1] o = out
    cdef int64_t s, sq, v
    cdef uint32_t rs, rq
    with nogil:
        for k in range(n):
            l = boxes[k, 0] if boxes[k, 0] > 0 else 0
            t = boxes[k, 1] if boxes[k, 1] > 0 else 0
            r = boxes[k, 2] if boxes[k, 2] < w else w
            b = boxes[k, 3] if boxes[k, 3] < h else h
            if r <= l or b <= t:
                continue
            s = 0
            sq = 0
            if r - l <= 65536:
                for y in range(t, b):
                    _fu_row_stats(&gray[y, l], r - l, &rs, &rq)
                    s += rs
                    sq += rq
            else:
                for y in range(t, b):
                    for x in range(l, r):
                        v = gray[y, x]
                        s += v
                        sq += v * v
            o[k, 0] = (r - l) * (b - t)
            o[k, 1] = s
            o[k, 2] = sq
    return out


def fusion_paint(Py_ssize_t height, Py_ssize_t width, const int32_t[:, ::1] boxes):
    """A ``uint8[height, width]`` mask with 1 inside any of the boxes (clipped)."""
    cdef Py_ssize_t n = boxes.shape[0], k, x, y, l, t, r, b
    out = np.zeros((height, width), dtype=np.uint8)
    cdef uint8_t[:, ::1] o = out
    with nogil:
        for k in range(n):
            l = boxes[k, 0] if boxes[k, 0] > 0 else 0
            t = boxes[k, 1] if boxes[k, 1] > 0 else 0
            r = boxes[k, 2] if boxes[k, 2] < width else width
            b = boxes[k, 3] if boxes[k, 3] < height else height
            for y in range(t, b):
                for x in range(l, r):
                    o[y, x] = 1
    return out


def fusion_box_rows(boxes):
    """``int32[N, 4]`` from a sequence of ``(left, top, right, bottom)`` integer rows."""
    cdef Py_ssize_t n = len(boxes), k
    cdef tuple tr
    out = np.zeros((n, 4), dtype=np.int32)
    if n == 0:
        return out
    cdef int32_t[:, ::1] o = out
    for k in range(n):
        row = boxes[k]
        if isinstance(row, tuple):
            tr = <tuple>row
            if len(tr) != 4:
                raise ValueError(f"box rows: row {k} has {len(tr)} values, expected 4")
            o[k, 0] = tr[0]
            o[k, 1] = tr[1]
            o[k, 2] = tr[2]
            o[k, 3] = tr[3]
        else:
            if len(row) != 4:
                raise ValueError(f"box rows: row {k} has {len(row)} values, expected 4")
            o[k, 0] = row[0]
            o[k, 1] = row[1]
            o[k, 2] = row[2]
            o[k, 3] = row[3]
    return out


def fusion_records(type cls, tuple slots, ids, rows):
    """New ``cls`` instances, filled through its slot descriptors: ``slots[0]`` gets the id,
    ``slots[1:]`` the row's values in order (each row has exactly ``len(slots) - 1`` values).

    The instances are those ``cls``'s own ``__init__`` would fill (frozen dataclasses included:
    the descriptors are the ones it writes through), built without a Python call per field."""
    cdef Py_ssize_t n = len(ids), m = len(slots) - 1, k, j
    cdef tuple tr
    if len(rows) != n:
        raise ValueError(f"records: {n} ids but {len(rows)} rows")
    if m < 0:
        raise ValueError("records: no slots")
    for s in slots:
        if Py_TYPE(s).tp_descr_set == NULL:
            raise TypeError(f"records: {s!r} is not a data descriptor")
    new = object.__new__
    out = [None] * n
    for k in range(n):
        row = rows[k]
        if isinstance(row, tuple):
            tr = <tuple>row
        else:
            tr = tuple(row)
        if len(tr) != m:
            raise ValueError(f"records: row {k} has {len(tr)} values, expected {m}")
        obj = new(cls)
        s = slots[0]
        Py_TYPE(s).tp_descr_set(s, obj, ids[k])
        for j in range(m):
            s = slots[j + 1]
            Py_TYPE(s).tp_descr_set(s, obj, tr[j])
        out[k] = obj
    return out
