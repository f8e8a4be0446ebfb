# Fusion kernels (included by _fastpath.pyx). Twins: perception/_kernels_fusion_py.py.
# Boxes are (left, top, right, bottom) int32 rows; areas and intersections are exact int64 and
# every ratio is one final float64 division, so both twins agree bit for bit. Ties go to the
# lower index.

from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from cpython.long cimport PyLong_AsLongLong
from cpython.object cimport PyObject, PyTypeObject, Py_TYPE
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF
from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.object cimport descrgetfunc
from cpython.sequence cimport PySequence_Fast_ITEMS
from cpython.tuple cimport PyTuple_SET_ITEM
from cpython.unicode cimport Py_UNICODE_ISDECIMAL, Py_UNICODE_ISDIGIT, Py_UNICODE_ISSPACE
from libc.stdlib cimport calloc, free, malloc, qsort

cdef extern from "Python.h":
    ctypedef PyObject* (*_fu_allocfunc)(PyTypeObject*, Py_ssize_t)
    ctypedef struct _FuType "PyTypeObject":
        _fu_allocfunc tp_alloc


cdef inline object _fu_alloc(type cls, Py_ssize_t items):
    # What object.__new__(cls) / tuple.__new__(cls, ...) allocate: cls's own tp_alloc.
    cdef PyObject* p = (<_FuType*>cls).tp_alloc(<PyTypeObject*>cls, items)
    if p == NULL:
        raise MemoryError()
    obj = <object>p
    Py_DECREF(obj)
    return obj

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


cdef extern from *:
    """
    /* Pixel sum and sum of squares of one row of grey bytes, exact in 32 bits (the caller keeps
       a row at most 65536 pixels: 65536 * 255**2 < 2**32). SSE2 (every x86-64) by 16 and 8
       bytes: boxes on the probe are tens of pixels wide, where a compiler's own vector loop
       leaves most of the row to its scalar tail. Elsewhere the plain loop. */
    #include <stdint.h>
    #if defined(__SSE2__)
    #include <emmintrin.h>
    static inline void perception_row_stats(const uint8_t* row, Py_ssize_t n,
                                            uint32_t* s, uint32_t* sq) {
        const __m128i zero = _mm_setzero_si128();
        __m128i acc_s = zero, acc_q = zero, v, lo, hi, t;
        Py_ssize_t x = 0;
        uint32_t a, q;
        for (; x + 16 <= n; x += 16) {
            v = _mm_loadu_si128((const __m128i*)(row + x));
            acc_s = _mm_add_epi64(acc_s, _mm_sad_epu8(v, zero));
            lo = _mm_unpacklo_epi8(v, zero);
            hi = _mm_unpackhi_epi8(v, zero);
            acc_q = _mm_add_epi32(acc_q, _mm_madd_epi16(lo, lo));
            acc_q = _mm_add_epi32(acc_q, _mm_madd_epi16(hi, hi));
        }
        if (x + 8 <= n) {
            v = _mm_loadl_epi64((const __m128i*)(row + x));
            acc_s = _mm_add_epi64(acc_s, _mm_sad_epu8(v, zero));
            lo = _mm_unpacklo_epi8(v, zero);
            acc_q = _mm_add_epi32(acc_q, _mm_madd_epi16(lo, lo));
            x += 8;
        }
        a = (uint32_t)_mm_cvtsi128_si32(acc_s)
            + (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(acc_s, 8));
        t = _mm_add_epi32(acc_q, _mm_srli_si128(acc_q, 8));
        t = _mm_add_epi32(t, _mm_srli_si128(t, 4));
        q = (uint32_t)_mm_cvtsi128_si32(t);
        for (; x < n; x++) {
            uint32_t p = row[x];
            a += p;
            q += p * p;
        }
        *s = a;
        *sq = q;
    }

    /* Sum and sum of squares of a box of grey bytes: `rows` rows of `cols` bytes (at most
       65536, as above), `stride` bytes apart. Each row 16 bytes at a time; its last 1-15 bytes
       by one more 16-byte load ending at the row's end, the bytes before them (counted
       already) masked off, so nothing outside the box's rows is read. The squares' 32-bit
       lanes go into 64-bit ones once a row, and the lanes are added up once a box: no
       reduction and no scalar tail per row. Rows under 16 bytes wide go by
       perception_row_stats. */
    static inline void perception_box_stats(const uint8_t* first, Py_ssize_t stride,
                                            Py_ssize_t rows, Py_ssize_t cols,
                                            uint64_t* s, uint64_t* sq) {
        const __m128i zero = _mm_setzero_si128();
        const Py_ssize_t tail = cols & 15, whole = cols - tail;
        /* Lane i of the last load is kept when i >= 16 - tail. */
        const __m128i keep = _mm_cmpgt_epi8(
            _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
            _mm_set1_epi8((char)(15 - tail)));
        __m128i acc_s = zero, acc_q64 = zero, acc_q, v, lo, hi;
        const uint8_t* row;
        Py_ssize_t x, y;
        uint32_t rs, rq;
        uint64_t a = 0, q = 0;
        if (cols < 16) {
            for (y = 0; y < rows; y++) {
                perception_row_stats(first + y * stride, cols, &rs, &rq);
                a += rs;
                q += rq;
            }
            *s = a;
            *sq = q;
            return;
        }
        for (y = 0; y < rows; y++) {
            row = first + y * stride;
            acc_q = zero;
            for (x = 0; x < whole; x += 16) {
                v = _mm_loadu_si128((const __m128i*)(row + x));
                acc_s = _mm_add_epi64(acc_s, _mm_sad_epu8(v, zero));
                lo = _mm_unpacklo_epi8(v, zero);
                hi = _mm_unpackhi_epi8(v, zero);
                acc_q = _mm_add_epi32(acc_q, _mm_madd_epi16(lo, lo));
                acc_q = _mm_add_epi32(acc_q, _mm_madd_epi16(hi, hi));
            }
            if (tail) {
                v = _mm_and_si128(_mm_loadu_si128((const __m128i*)(row + cols - 16)), keep);
                acc_s = _mm_add_epi64(acc_s, _mm_sad_epu8(v, zero));
                lo = _mm_unpacklo_epi8(v, zero);
                hi = _mm_unpackhi_epi8(v, zero);
                acc_q = _mm_add_epi32(acc_q, _mm_madd_epi16(lo, lo));
                acc_q = _mm_add_epi32(acc_q, _mm_madd_epi16(hi, hi));
            }
            acc_q64 = _mm_add_epi64(acc_q64, _mm_unpacklo_epi32(acc_q, zero));
            acc_q64 = _mm_add_epi64(acc_q64, _mm_unpackhi_epi32(acc_q, zero));
        }
        *s = (uint64_t)_mm_cvtsi128_si64(acc_s)
             + (uint64_t)_mm_cvtsi128_si64(_mm_srli_si128(acc_s, 8));
        *sq = (uint64_t)_mm_cvtsi128_si64(acc_q64)
              + (uint64_t)_mm_cvtsi128_si64(_mm_srli_si128(acc_q64, 8));
    }
    #else
    static inline void perception_row_stats(const uint8_t* row, Py_ssize_t n,
                                            uint32_t* s, uint32_t* sq) {
        uint32_t a = 0, q = 0;
        for (Py_ssize_t x = 0; x < n; x++) {
            uint32_t p = row[x];
            a += p;
            q += p * p;
        }
        *s = a;
        *sq = q;
    }
    static inline void perception_box_stats(const uint8_t* first, Py_ssize_t stride,
                                            Py_ssize_t rows, Py_ssize_t cols,
                                            uint64_t* s, uint64_t* sq) {
        uint32_t rs, rq;
        uint64_t a = 0, q = 0;
        for (Py_ssize_t y = 0; y < rows; y++) {
            perception_row_stats(first + y * stride, cols, &rs, &rq);
            a += rs;
            q += rq;
        }
        *s = a;
        *sq = q;
    }
    #endif

    /* Is a box flat: its grey variance `flat_var` or less, in float64 as
       perception.fusion.crossval._not_flat computes it from the pixel count, sum and sum of
       squares (an empty box is flat)? Step by step, the square stored through a volatile so
       that no compiler fuses it into the subtraction (an FMA rounds once): both twins round
       alike. */
    static inline int perception_flat(int64_t n, int64_t s, int64_t sq, double flat_var) {
        const double count = n > 1 ? (double)n : 1.0;
        const double mean = (double)s / count;
        volatile double square = mean * mean;
        const double var = (double)sq / count - square;
        return !(n > 0 && var > flat_var);
    }
    """
    void _fu_row_stats "perception_row_stats" (const uint8_t* row, Py_ssize_t n,
                                               uint32_t* s, uint32_t* sq) noexcept nogil
    void _fu_box_stats "perception_box_stats" (const uint8_t* first, Py_ssize_t stride,
                                               Py_ssize_t rows, Py_ssize_t cols,
                                               uint64_t* s, uint64_t* sq) noexcept nogil
    bint _fu_flat "perception_flat" (int64_t n, int64_t s, int64_t sq,
                                     double flat_var) noexcept nogil


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


def fusion_flag_bits(flags):
    """``int64[N]`` of a sequence of integer flags (``enum.IntFlag`` members or ints): each
    item's value as ``array("q", ...)`` reads it (``OverflowError`` past int64, ``TypeError``
    for what is no integer)."""
    cdef Py_ssize_t n = len(flags), k
    out = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] o = out
    for k in range(n):
        o[k] = PyLong_AsLongLong(flags[k])
    return out


cdef extern from "Python.h":
    ctypedef struct _FuMemberDef "PyMemberDef":
        int type
        Py_ssize_t offset
        int flags
    ctypedef struct _FuMemberDescr "PyMemberDescrObject":
        _FuMemberDef* d_member
    ctypedef struct _FuDescr "PyDescrObject":
        PyTypeObject* d_type
    PyTypeObject _FuMemberDescr_Type "PyMemberDescr_Type"
    int _FU_T_OBJECT_EX "T_OBJECT_EX"
    int _FU_READONLY "READONLY"
    int PyType_IsSubtype(PyTypeObject* a, PyTypeObject* b)


cdef Py_ssize_t _fu_slot_offset(object s, type cls):
    # Where a writable object slot of cls (a __slots__ member descriptor of cls or a base) keeps
    # its value, or -1 for any other data descriptor (written through its setter).
    cdef _FuMemberDef* m
    if Py_TYPE(s) is not &_FuMemberDescr_Type:
        return -1
    m = (<_FuMemberDescr*><PyObject*>s).d_member
    if m.type != _FU_T_OBJECT_EX or (m.flags & _FU_READONLY) or not PyType_IsSubtype(
        <PyTypeObject*>cls, (<_FuDescr*><PyObject*>s).d_type
    ):
        return -1
    return m.offset


cdef inline void _fu_slot_put(object obj, Py_ssize_t offset, object v) noexcept:
    # What member_set does for an object slot: the new value in, the old one (if any) out.
    cdef PyObject** addr = <PyObject**>(<char*><PyObject*>obj + offset)
    cdef PyObject* old = addr[0]
    Py_INCREF(v)
    addr[0] = <PyObject*>v
    Py_XDECREF(old)


def fusion_records(type cls, tuple slots, ids, rows):
    """New ``cls`` instances, filled through its slot descriptors: ``slots[0]`` gets the id,
    ``slots[1:]`` the row's values in order (each row has exactly ``len(slots) - 1`` values).

    The instances are those ``cls``'s own ``__init__`` would fill (frozen dataclasses included:
    the descriptors are the ones it writes through), built without a Python call per field. A
    plain object slot of ``cls`` (a ``__slots__`` member) is written where its descriptor
    writes it, in the fresh instance (empty until then), as its setter would; any other data
    descriptor through its setter."""
    cdef Py_ssize_t n = len(ids), m = len(slots) - 1, k, j
    cdef tuple tr
    cdef Py_ssize_t* offsets
    cdef bint direct = True
    if len(rows) != n:
        raise ValueError(f"records: {n} ids but {len(rows)} rows")
    if m < 0:
        raise ValueError("records: no slots")
    for s in slots:
        if Py_TYPE(s).tp_descr_set == NULL:
            raise TypeError(f"records: {s!r} is not a data descriptor")
    if issubclass(cls, tuple) or cls.__itemsize__:
        raise TypeError(f"records: {cls!r} is not a plain __slots__ class")
    offsets = <Py_ssize_t*>malloc((m + 1) * sizeof(Py_ssize_t))
    if offsets == NULL:
        raise MemoryError()
    try:
        for j in range(m + 1):
            offsets[j] = _fu_slot_offset(slots[j], cls)
            direct = direct and offsets[j] >= 0
        out = [None] * n
        for k in range(n):
            row = rows[k]
            if isinstance(row, tuple):
                tr = <tuple>row
            else:
                tr = tuple(row)
            if len(tr) != m:
                raise ValueError(f"records: row {k} has {len(tr)} values, expected {m}")
            obj = _fu_alloc(cls, 0)
            v = ids[k]
            if direct:
                _fu_slot_put(obj, offsets[0], v)
                for j in range(m):
                    _fu_slot_put(obj, offsets[j + 1], tr[j])
            else:
                s = slots[0]
                Py_TYPE(s).tp_descr_set(s, obj, v)
                for j in range(m):
                    s = slots[j + 1]
                    Py_TYPE(s).tp_descr_set(s, obj, tr[j])
            out[k] = obj
        return out
    finally:
        free(offsets)


def fusion_rows(type cls, tuple columns):
    """``[cls(*row) for row in zip(*columns)]`` for a tuple subclass ``cls`` (a NamedTuple):
    ``tuple.__new__(cls, row)`` per row, the rows read across the columns (equal lengths)."""
    cdef Py_ssize_t m = len(columns), n, k, j
    if not issubclass(cls, tuple):
        raise TypeError(f"rows: {cls!r} is not a tuple type")
    cols = [c if isinstance(c, list) else list(c) for c in columns]
    n = len(cols[0]) if m else 0
    for c in cols:
        if len(c) != n:
            raise ValueError("rows: columns of different lengths")
    cdef list lc
    out = [None] * n
    for k in range(n):
        row = _fu_alloc(cls, m)
        for j in range(m):
            lc = <list>cols[j]
            v = lc[k]
            Py_INCREF(v)
            PyTuple_SET_ITEM(row, j, v)
        out[k] = row
    return out


cdef inline int64_t _fu_floordiv(int64_t a, int64_t b) noexcept nogil:
    cdef int64_t q = a // b
    if (a % b != 0) and ((a < 0) != (b < 0)):
        q -= 1
    return q


cdef inline bint _fu_has_ink(str s):
    # s.strip() != "": some character is not whitespace (str.strip's own test).
    cdef Py_UCS4 ch
    for ch in s:
        if not Py_UNICODE_ISSPACE(ch):
            return True
    return False


def fusion_pixel_check(const uint8_t[:, ::1] gray, const uint8_t[:, ::1] content,
                       const int32_t[:, ::1] boxes, const int64_t[::1] flags, list texts,
                       int64_t hidden, int64_t scale, int64_t cell):
    """The tree's boxes against a frame probe, in one pass over the elements: the box sums
    :func:`fusion_flat_labels` makes its verdicts from, exported for the parity tests, which
    check those sums exact (the fusion calls fusion_flat_labels).

    Visible elements are those without any ``hidden`` flag bit. Returns ``(index int32[K],
    stats int64[K, 3], covered, content)``: the visible elements with a non-blank text and a
    non-empty box, with the pixel count, sum and sum of squares of ``gray`` inside their box
    floor-divided by ``scale`` (as :func:`fusion_box_gray_stats`); the content cells (non-zero in
    ``content``) whose centre some visible box covers, a box covering the cells
    ``floor((edge + cell // 2) / cell)`` (as :func:`fusion_paint`); and all content cells."""
    cdef Py_ssize_t n = boxes.shape[0], k, kk = 0, y, x
    cdef Py_ssize_t h = gray.shape[0], w = gray.shape[1]
    cdef Py_ssize_t rows = content.shape[0], cols = content.shape[1]
    cdef int64_t l, t, r, b, s, sq, half, covered = 0, total = 0
    cdef uint32_t rs, rq
    if scale <= 0 or cell <= 0:
        raise ValueError("pixel check: scale and cell must be positive")
    if flags.shape[0] != n or len(texts) != n:
        raise ValueError(f"pixel check: {n} boxes, {flags.shape[0]} flags, {len(texts)} texts")
    index = np.zeros(n, dtype=np.int32)
    stats = np.zeros((n, 3), dtype=np.int64)
    mask = np.zeros((rows, cols), dtype=np.uint8)
    cdef int32_t[::1] ix = index
    cdef int64_t[:, ::1] st = stats
    cdef uint8_t[:, ::1] m = mask
    cdef uint8_t* mp = NULL  # the mask's cells (none: an empty grid, never painted)
    if rows and cols:
        mp = &m[0, 0]
    half = cell // 2
    for k in range(n):
        if flags[k] & hidden:
            continue
        l = boxes[k, 0]
        t = boxes[k, 1]
        r = boxes[k, 2]
        b = boxes[k, 3]
        # Coverage: paint the cells the box covers.
        y = _fu_floordiv(t + half, cell)
        x = _fu_floordiv(l + half, cell)
        _fu_paint(mp, rows, cols, x, y,
                  _fu_floordiv(r + half, cell), _fu_floordiv(b + half, cell))
        if r <= l or b <= t:
            continue
        txt = texts[k]
        if not isinstance(txt, str):
            raise TypeError(f"pixel check: text {k} is not a str")
        if not _fu_has_ink(<str>txt):
            continue
        ix[kk] = <int32_t>k
        _fu_stats(gray, h, w, _fu_floordiv(l, scale), _fu_floordiv(t, scale),
                  _fu_floordiv(r, scale), _fu_floordiv(b, scale), &st[kk, 0])
        kk += 1
    with nogil:
        _fu_count_cells(content, mp, &covered, &total)
    return index[:kk].copy(), stats[:kk].copy(), covered, total


cdef inline void _fu_paint(uint8_t* m, Py_ssize_t rows, Py_ssize_t cols,
                           int64_t l, int64_t t, int64_t r, int64_t b) noexcept nogil:
    # Cells [t, b) x [l, r) of the C-order rows x cols mask set to 1 (clipped).
    cdef Py_ssize_t x, y
    if l < 0:
        l = 0
    if t < 0:
        t = 0
    if r > cols:
        r = cols
    if b > rows:
        b = rows
    for y in range(t, b):
        for x in range(l, r):
            m[y * cols + x] = 1


cdef inline void _fu_count_cells(const uint8_t[:, ::1] content, const uint8_t* m,
                                 int64_t* covered, int64_t* total) noexcept nogil:
    # The content cells (non-zero in ``content``), and those of them set in the same-sized
    # C-order mask ``m``.
    cdef Py_ssize_t rows = content.shape[0], cols = content.shape[1], x, y
    cdef int64_t c = 0, a = 0
    for y in range(rows):
        for x in range(cols):
            if content[y, x]:
                a += 1
                if m[y * cols + x]:
                    c += 1
    covered[0] = c
    total[0] = a


cdef inline void _fu_stats(const uint8_t[:, ::1] gray, Py_ssize_t h, Py_ssize_t w,
                           int64_t l, int64_t t, int64_t r, int64_t b,
                           int64_t* out) noexcept nogil:
    # Pixel count, sum and sum of squares inside the box, clipped (fusion_box_gray_stats).
    cdef Py_ssize_t y, x
    cdef int64_t s = 0, sq = 0, v
    cdef uint64_t bs, bq
    if l < 0:
        l = 0
    if t < 0:
        t = 0
    if r > w:
        r = w
    if b > h:
        b = h
    if r <= l or b <= t:
        return
    if r - l <= 65536:
        _fu_box_stats(&gray[t, l], gray.strides[0], b - t, r - l, &bs, &bq)
        s = <int64_t>bs
        sq = <int64_t>bq
    else:
        for y in range(t, b):
            for x in range(l, r):
                v = gray[y, x]
                s += v
                sq += v * v
    out[0] = (r - l) * (b - t)
    out[1] = s
    out[2] = sq


def fusion_keys(list drafts, const int32_t[:, ::1] boxes, list norms, int64_t width,
                int64_t height, int64_t grid, Py_ssize_t text_len):
    """Identity keys ``(kind, norm[:text_len], left, top, right, bottom)`` of the drafts, the
    kind being each draft's item 1 and the edges ``floor(edge * grid / extent)``, the extent
    (``width`` across, ``height`` down) at least 1."""
    cdef Py_ssize_t n = len(drafts), k
    cdef int64_t w = width if width > 1 else 1, h = height if height > 1 else 1
    if boxes.shape[0] != n or len(norms) != n:
        raise ValueError(f"keys: {n} drafts, {boxes.shape[0]} boxes, {len(norms)} texts")
    if text_len < 0:
        raise ValueError("keys: text_len must be >= 0")
    out = [None] * n
    for k in range(n):
        d = drafts[k]
        if not isinstance(d, tuple) or len(<tuple>d) < 2:
            raise TypeError(f"keys: draft {k} is not a draft tuple")
        t = norms[k]
        if not isinstance(t, str):
            raise TypeError(f"keys: text {k} is not a str")
        if len(<str>t) > text_len:
            t = (<str>t)[:text_len]
        out[k] = (
            (<tuple>d)[1],
            t,
            _fu_floordiv(<int64_t>boxes[k, 0] * grid, w),
            _fu_floordiv(<int64_t>boxes[k, 1] * grid, h),
            _fu_floordiv(<int64_t>boxes[k, 2] * grid, w),
            _fu_floordiv(<int64_t>boxes[k, 3] * grid, h),
        )
    return out


ctypedef struct _FuPlace:
    int32_t top
    int32_t left
    Py_ssize_t index


cdef int _fu_place_cmp(const void* a, const void* b) noexcept nogil:
    cdef const _FuPlace* p = <const _FuPlace*>a
    cdef const _FuPlace* q = <const _FuPlace*>b
    if p.top != q.top:
        return -1 if p.top < q.top else 1
    if p.left != q.left:
        return -1 if p.left < q.left else 1
    return -1 if p.index < q.index else (1 if p.index > q.index else 0)


cdef inline bint _fu_line_box(const int32_t[:, ::1] boxes, const int64_t[::1] flags,
                              Py_ssize_t k, int64_t unreadable, int64_t width, int64_t height,
                              int64_t low, int64_t high, int64_t* h) noexcept nogil:
    # Can box k hold one line of text (fusion_line_boxes)? Its height in h.
    cdef int64_t l = boxes[k, 0], t = boxes[k, 1], r = boxes[k, 2], b = boxes[k, 3]
    h[0] = b - t
    return (
        low <= h[0] <= high and l >= 0 and t >= 0 and r <= width and b <= height
        and (flags[k] & unreadable) == 0 and (r - l) * 2 >= h[0] * 3
    )


def fusion_line_boxes(const int32_t[:, ::1] boxes, const int64_t[::1] flags, int64_t unreadable,
                      int64_t width, int64_t height, int64_t low, int64_t high):
    """Indices of the boxes that can hold one line of text: inside ``[0, width] x [0,
    height]``, ``low`` to ``high`` tall, at least 3:2 wide for their height, no ``unreadable``
    flag bit; tallest first, ties in index order. Edges in int64 (no overflow).

    The heights such a box can have run from ``low`` to ``min(high, height)``; when they are
    not many more than the boxes (a frame's lines: a few hundred), the boxes are sorted by
    counting them a height, else by qsort."""
    cdef Py_ssize_t n = boxes.shape[0], k, m = 0, pos, heights
    cdef int64_t h, top = high if high < height else height
    cdef _FuPlace* places
    cdef int64_t* rank
    cdef Py_ssize_t* starts
    cdef object v  # an index as the list holds it (a Python int: its reference is the list's)
    if flags.shape[0] != n:
        raise ValueError(f"line boxes: {n} boxes, {flags.shape[0]} flags")
    if n == 0 or top < low:
        return []  # no boxes, or no height passes (a box is at most the frame's height tall)
    if <uint64_t>top - <uint64_t>low < <uint64_t>(4 * n + 1024):  # exact: top >= low
        heights = <Py_ssize_t>(<uint64_t>top - <uint64_t>low) + 1
        # Counting sort: each box's rank is how much shorter than the tallest it may be.
        rank = <int64_t*>malloc(n * sizeof(int64_t))
        starts = <Py_ssize_t*>calloc(heights + 1, sizeof(Py_ssize_t))
        try:
            if rank == NULL or starts == NULL:
                raise MemoryError()
            for k in range(n):
                if _fu_line_box(boxes, flags, k, unreadable, width, height, low, high, &h):
                    rank[k] = top - h
                    starts[rank[k] + 1] += 1
                    m += 1
                else:
                    rank[k] = -1
            for k in range(heights):
                starts[k + 1] += starts[k]
            out = PyList_New(m)
            for k in range(n):
                if rank[k] >= 0:
                    pos = starts[rank[k]]
                    starts[rank[k]] += 1
                    v = k
                    Py_INCREF(v)
                    PyList_SET_ITEM(out, pos, v)
            return out
        finally:
            free(rank)
            free(starts)
    places = <_FuPlace*>malloc(n * sizeof(_FuPlace))
    if places == NULL:
        raise MemoryError()
    try:
        for k in range(n):
            if _fu_line_box(boxes, flags, k, unreadable, width, height, low, high, &h):
                # Sorted as places: -height on top (tallest first; |h| <= b <= int32), then
                # index order.
                places[m].top = <int32_t>(-h)
                places[m].left = 0
                places[m].index = k
                m += 1
        qsort(places, m, sizeof(_FuPlace), _fu_place_cmp)
        return [places[j].index for j in range(m)]
    finally:
        free(places)


def fusion_flat_labels(const uint8_t[:, ::1] gray, const uint8_t[:, ::1] content,
                       const int32_t[:, ::1] boxes, const int64_t[::1] flags, list texts,
                       int64_t hidden, int64_t scale, int64_t cell, double flat_var):
    """:func:`fusion_pixel_check`'s pass with each box's verdict made in it, for
    ``perception.fusion.crossval.check_pixels``: ``(labelled, flat, covered, content)``, how
    many visible elements have a non-blank text and a non-empty box (the elements
    fusion_pixel_check indexes), those of them (indices, in order) whose grey is flat, and the
    content cells as fusion_pixel_check counts them. Flat: a grey variance of ``flat_var`` or
    less in float64 from the box's pixel count, sum and sum of squares, as
    ``crossval._not_flat`` computes it (an empty box is flat)."""
    cdef Py_ssize_t n = boxes.shape[0], k, labelled = 0
    cdef Py_ssize_t h = gray.shape[0], w = gray.shape[1]
    cdef Py_ssize_t rows = content.shape[0], cols = content.shape[1]
    cdef int64_t l, t, r, b, half, covered = 0, total = 0
    cdef int64_t st[3]
    cdef uint8_t* mask
    if scale <= 0 or cell <= 0:
        raise ValueError("flat labels: scale and cell must be positive")
    if flags.shape[0] != n or len(texts) != n:
        raise ValueError(f"flat labels: {n} boxes, {flags.shape[0]} flags, {len(texts)} texts")
    flat = []
    mask = <uint8_t*>calloc(rows * cols if rows * cols else 1, 1)
    if mask == NULL:
        raise MemoryError()
    half = cell // 2
    try:
        for k in range(n):
            if flags[k] & hidden:
                continue
            l = boxes[k, 0]
            t = boxes[k, 1]
            r = boxes[k, 2]
            b = boxes[k, 3]
            _fu_paint(mask, rows, cols, _fu_floordiv(l + half, cell), _fu_floordiv(t + half, cell),
                      _fu_floordiv(r + half, cell), _fu_floordiv(b + half, cell))
            if r <= l or b <= t:
                continue
            txt = texts[k]
            if not isinstance(txt, str):
                raise TypeError(f"flat labels: text {k} is not a str")
            if not _fu_has_ink(<str>txt):
                continue
            labelled += 1
            st[0] = st[1] = st[2] = 0
            _fu_stats(gray, h, w, _fu_floordiv(l, scale), _fu_floordiv(t, scale),
                      _fu_floordiv(r, scale), _fu_floordiv(b, scale), st)
            if _fu_flat(st[0], st[1], st[2], flat_var):
                flat.append(k)
        with nogil:
            _fu_count_cells(content, mask, &covered, &total)
    finally:
        free(mask)
    return labelled, flat, covered, total


def fusion_columns(type cls, tuple names, items):
    """``[[getattr(item, name) for item in items] for name in names]``: the items' attributes
    as columns, one list per name. An item of exactly ``cls`` (a class whose attribute lookup
    is ``object``'s) is read through ``cls``'s data descriptor for the name (a slot), the one
    its attribute lookup finds first: a plain object slot where that descriptor reads it (an
    empty one through the descriptor, which raises as getattr does), any other through its
    getter; any other item by ``getattr``."""
    cdef Py_ssize_t n, m = len(names), k, j, offset
    cdef PyObject** seq
    cdef PyObject* slot
    cdef PyTypeObject* direct = NULL
    cdef descrgetfunc get
    descriptors = []
    for name in names:
        d = None  # the first class in the MRO to hold the name, as attribute lookup finds it
        for b in cls.__mro__:
            if name in b.__dict__:
                d = b.__dict__[name]
                break
        if d is None or Py_TYPE(d).tp_descr_get == NULL or Py_TYPE(d).tp_descr_set == NULL:
            raise TypeError(f"columns: {cls.__name__}.{name} is not a data descriptor")
        descriptors.append(d)
    if cls.__getattribute__ is object.__getattribute__:
        direct = <PyTypeObject*>cls
    # A tuple's item array cannot move while a getattr runs Python code (a list's can).
    fast = items if type(items) is tuple else tuple(items)
    n = len(fast)
    seq = PySequence_Fast_ITEMS(fast)
    columns = []
    for j in range(m):
        d = descriptors[j]
        name = names[j]
        get = Py_TYPE(d).tp_descr_get
        offset = _fu_slot_offset(d, cls)
        column = PyList_New(n)
        for k in range(n):
            item = <object>seq[k]
            if Py_TYPE(item) == direct:
                slot = NULL
                if offset >= 0:
                    slot = (<PyObject**>(<char*><PyObject*>item + offset))[0]
                if slot != NULL:
                    v = <object>slot
                else:
                    v = get(d, item, cls)
            else:
                v = getattr(item, name)
            Py_INCREF(v)
            PyList_SET_ITEM(column, k, v)
        columns.append(column)
    return columns


cdef bint _fu_has_digits(str s, Py_ssize_t need):
    # At least ``need`` characters of ``s`` are digits (str.isdigit's own test).
    cdef Py_UCS4 ch
    cdef Py_ssize_t found = 0
    if need <= 0:
        return True
    for ch in s:
        if Py_UNICODE_ISDIGIT(ch):
            found += 1
            if found >= need:
                return True
    return False


def fusion_read_back_pick(list order, list kinds, list texts, hidden, worth,
                          Py_ssize_t shortest, Py_ssize_t longest, Py_ssize_t samples,
                          Py_ssize_t numbers_first, Py_ssize_t digits):
    """The labels to read back (``perception.fusion.crossval.read_back_sample``): up to
    ``samples`` of the indices in ``order`` whose text is ``shortest`` to ``longest``
    characters long, holds no " | ", is not in ``hidden``, is a label not picked yet and that
    ``worth(index)`` takes (asked last). Four passes over ``order``: the ``"text"`` kinds then
    the others among texts with at least ``digits`` digits (``str.isdigit``), until
    ``numbers_first`` are picked; then the ``"text"`` kinds, then the others, among any."""
    cdef Py_ssize_t n = len(texts), i, length
    cdef list picked = []
    cdef set labels = set()
    cdef int stage
    cdef bint numbers, static, is_text
    if len(kinds) != n:
        raise ValueError(f"read back pick: {len(kinds)} kinds, {n} texts")
    for stage in range(4):
        numbers = stage < 2
        static = stage % 2 == 0
        if numbers and len(picked) == numbers_first:
            continue
        for item in order:
            i = item
            if i < 0 or i >= n:
                raise IndexError(f"read back pick: index {i} out of {n}")
            is_text = kinds[i] == "text"
            if is_text != static or item in hidden:
                continue
            text = texts[i]
            if not isinstance(text, str):
                raise TypeError(f"read back pick: text {i} is not a str")
            length = len(<str>text)
            if (
                " | " in <str>text
                or length < shortest or length > longest
                or text in labels
                or (numbers and not _fu_has_digits(<str>text, digits))
                or not worth(item)
            ):
                continue
            labels.add(text)
            picked.append(item)
            if len(picked) == samples:
                return picked
            if numbers and len(picked) == numbers_first:
                break
    return picked


cdef extern from "Python.h":
    object PyUnicode_FromKindAndData(int kind, const void* buffer, Py_ssize_t size)
    int PyUnicode_4BYTE_KIND


cdef inline bint _fu_decimal(Py_UCS4 ch) noexcept:
    # Py_UNICODE_ISDECIMAL, with Latin-1 answered here: its only decimals are 0-9.
    if ch < 256:
        return 48 <= ch <= 57
    return Py_UNICODE_ISDECIMAL(ch)


cdef str _fu_mask_digits(str s):
    # re.sub(r"\d+", "#", s): \d in a str pattern is Py_UNICODE_ISDECIMAL (sre's own test).
    cdef Py_ssize_t n = len(s), i, m = 0
    cdef Py_UCS4 ch
    cdef Py_UCS4* buf
    cdef bint run = False
    for ch in s:
        if _fu_decimal(ch):
            break
    else:
        return s
    buf = <Py_UCS4*>malloc(n * sizeof(Py_UCS4))
    if buf == NULL:
        raise MemoryError()
    try:
        for ch in s:
            if _fu_decimal(ch):
                if not run:
                    buf[m] = 35  # "#"
                    m += 1
                    run = True
            else:
                buf[m] = ch
                m += 1
                run = False
        return PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, m)
    finally:
        free(buf)


cdef inline str _fu_strip(str s):
    # s.strip(), called only when an end is whitespace (str.strip's own test).
    cdef Py_ssize_t n = len(s)
    if n == 0 or not (Py_UNICODE_ISSPACE(s[0]) or Py_UNICODE_ISSPACE(s[n - 1])):
        return s
    return s.strip()


cdef inline bint _fu_before(const _FuPlace* p, const _FuPlace* q) noexcept nogil:
    # _fu_place_cmp(p, q) < 0.
    if p.top != q.top:
        return p.top < q.top
    if p.left != q.left:
        return p.left < q.left
    return p.index < q.index


cdef void _fu_sift_down(_FuPlace* heap, Py_ssize_t n, Py_ssize_t i) noexcept nogil:
    # Restore the min-heap (by _fu_before) below i.
    cdef _FuPlace x = heap[i]
    cdef Py_ssize_t c
    while True:
        c = 2 * i + 1
        if c >= n:
            break
        if c + 1 < n and _fu_before(&heap[c + 1], &heap[c]):
            c += 1
        if not _fu_before(&heap[c], &x):
            break
        heap[i] = heap[c]
        i = c
    heap[i] = x


def fusion_top_texts(list drafts, const int32_t[:, ::1] boxes, object pixel, str ocr,
                     Py_ssize_t limit, Py_ssize_t scan, Py_ssize_t width):
    """The first ``limit`` distinct texts top to bottom (then left, then draft order) among the
    first ``scan`` labelled drafts: a draft (source, kind, text, ..., origin at item 6) is
    labelled when its text is not empty and its source is not ``pixel`` or its origin is
    ``ocr``. Each text stripped, runs of decimal digits masked as ``#``, cut to ``width``."""
    cdef Py_ssize_t n = len(drafts), k, m = 0, j
    cdef _FuPlace* places
    if boxes.shape[0] != n:
        raise ValueError(f"top texts: {n} drafts, {boxes.shape[0]} boxes")
    if limit < 1 or scan < 0 or width < 0:
        raise ValueError("top texts: limit must be >= 1, scan and width >= 0")
    if n == 0:
        return ()
    places = <_FuPlace*>malloc(n * sizeof(_FuPlace))
    if places == NULL:
        raise MemoryError()
    try:
        for k in range(n):
            d = drafts[k]
            if not isinstance(d, tuple) or len(<tuple>d) < 7:
                raise TypeError(f"top texts: draft {k} is not a draft tuple")
            txt = (<tuple>d)[2]
            if not isinstance(txt, str):
                raise TypeError(f"top texts: text {k} is not a str")
            if len(<str>txt) == 0:
                continue
            if (<tuple>d)[0] is pixel and (<tuple>d)[6] != ocr:
                continue
            places[m].top = boxes[k, 1]
            places[m].left = boxes[k, 0]
            places[m].index = k
            m += 1
        # In order off a heap: the top few are read (a full sort of hundreds was most of it).
        for j in range(m // 2 - 1, -1, -1):
            _fu_sift_down(places, m, j)
        seen = []
        for j in range(m if m < scan else scan):
            k = places[0].index
            places[0] = places[m - 1 - j]
            _fu_sift_down(places, m - 1 - j, 0)
            t = _fu_mask_digits(_fu_strip(<str>(<tuple>drafts[k])[2]))
            if len(<str>t) > width:
                t = (<str>t)[:width]
            if len(<str>t) and t not in seen:
                seen.append(t)
                if len(seen) >= limit:
                    break
        return tuple(seen)
    finally:
        free(places)


def fusion_edit_distance(str a, str b):
    """Levenshtein distance between ``a`` and ``b``, by code point (insert, delete, substitute
    each cost 1): one row of the table, ``b`` read once into a code-point buffer."""
    if len(a) < len(b):
        a, b = b, a
    cdef Py_ssize_t n = len(a), m = len(b), i, j
    if m == 0:
        return n
    cdef Py_UCS4* cb = <Py_UCS4*>malloc(m * sizeof(Py_UCS4))
    cdef Py_ssize_t* row = <Py_ssize_t*>malloc((m + 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t diag, up, v
    cdef Py_UCS4 ca
    if cb == NULL or row == NULL:
        free(cb)
        free(row)
        raise MemoryError()
    try:
        for j in range(m):
            cb[j] = b[j]
        for j in range(m + 1):
            row[j] = j
        for i in range(n):
            ca = a[i]
            diag = row[0]
            row[0] = i + 1
            for j in range(1, m + 1):
                up = row[j]
                v = diag + (ca != cb[j - 1])
                if up + 1 < v:
                    v = up + 1
                if row[j - 1] + 1 < v:
                    v = row[j - 1] + 1
                row[j] = v
                diag = up
        return row[m]
    finally:
        free(cb)
        free(row)


def fusion_big_boxes(const int32_t[:, ::1] boxes, double least):
    """Indices of the boxes with a positive width and height whose area, in float64 (edges
    subtracted exactly, then multiplied), is at least ``least``; in index order."""
    cdef Py_ssize_t n = boxes.shape[0], k
    cdef double w, h
    out = []
    for k in range(n):
        w = <double>boxes[k, 2] - <double>boxes[k, 0]
        h = <double>boxes[k, 3] - <double>boxes[k, 1]
        if w > 0 and h > 0 and w * h >= least:
            out.append(k)
    return out
