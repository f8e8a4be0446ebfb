# Tree-channel kernels (included into _fastpath.pyx). Twins: perception/_kernels_tree_py.py.
#
# scan_hierarchy: a single-pass, validating reader of one `<hierarchy>` document as uiautomator
# writes it (UTF-8, no DTD). It checks well-formedness the way libxml2 does for everything
# uiautomator can emit (tag nesting, attribute syntax, duplicate attributes, character and entity
# references, UTF-8, XML character ranges, comments, PIs) and extracts, per <node>, the fields the
# pipeline needs. The twin reads the same document with lxml.

from libc.stdint cimport int32_t, int64_t, uint32_t
from libc.string cimport memchr, memcmp, memcpy
from libc.stdlib cimport calloc, free, malloc, realloc
from cpython.bytearray cimport PyByteArray_FromStringAndSize
from cpython.unicode cimport PyUnicode_DecodeUTF8

import numpy as np

from perception.errors import TreeParseError, UnsafeXmlError

cdef enum:
    B_CLICKABLE = 1 << 0
    B_LONG_CLICKABLE = 1 << 1
    B_CHECKABLE = 1 << 2
    B_CHECKED = 1 << 3
    B_EDITABLE = 1 << 4
    B_SCROLLABLE = 1 << 5
    B_FOCUSABLE = 1 << 6
    B_FOCUSED = 1 << 7
    B_SELECTED = 1 << 8
    B_DISABLED = 1 << 9
    B_PASSWORD = 1 << 10
    B_OCCLUDED = 1 << 11
    B_PARTLY_OFFSCREEN = 1 << 12
    B_INVISIBLE = 1 << 16
    B_HAS_TEXT = 1 << 17
    B_HAS_DESC = 1 << 18
    B_HAS_RID = 1 << 19
    B_HAS_HINT = 1 << 20
    B_WEBVIEW = 1 << 21
    B_SURFACE = 1 << 22
    B_HAS_BOUNDS = 1 << 23
    B_WINDOW_ROOT = 1 << 24
    B_LIST = 1 << 27

    B_ROOT_MASK = B_CLICKABLE | B_LONG_CLICKABLE | B_CHECKABLE | B_EDITABLE
    B_ACTION_MASK = B_ROOT_MASK | B_SCROLLABLE
    B_CONTENT_MASK = B_HAS_TEXT | B_HAS_DESC | B_HAS_RID | B_HAS_HINT

    NFIELDS = 6
    F_TEXT = 0
    F_DESC = 1
    F_RID = 2
    F_CLASS = 3
    F_PKG = 4
    F_HINT = 5

    MAX_ATTRS = 64
    CLASS_CACHE = 64
    BOUND_LIMIT = 1000000000
    MAX_FREE_PARTS = 64     # the twin's MAX_FREE_PARTS: more covers, no tap box (occluded)


cdef struct Scanner:
    const unsigned char* p
    Py_ssize_t n
    Py_ssize_t pos
    const char* msg
    Py_ssize_t err_pos
    int unsafe
    unsigned char* scratch


cdef inline bint is_ws(unsigned char c) noexcept nogil:
    return c == 0x20 or c == 0x09 or c == 0x0A or c == 0x0D


cdef inline bint is_name_start(unsigned char c) noexcept nogil:
    # No ':': a uiautomator dump has no namespaces, and lxml refuses undeclared prefixes.
    return (c >= 97 and c <= 122) or (c >= 65 and c <= 90) or c == 95


cdef inline bint is_name_char(unsigned char c) noexcept nogil:
    return is_name_start(c) or (c >= 48 and c <= 57) or c == 45 or c == 46


cdef bint NAME_CHARS[128]  # is_name_char of each ASCII byte, looked up where names are skipped
cdef bint PLAIN_VALUE[256]  # bytes an attribute value holds as they are: ASCII from space, not & <


cdef void _fill_tables() noexcept nogil:
    cdef int c
    for c in range(128):
        NAME_CHARS[c] = is_name_char(<unsigned char>c)
    for c in range(256):
        PLAIN_VALUE[c] = 0x20 <= c < 0x80 and c != 38 and c != 60


_fill_tables()


cdef inline bint is_xml_char(int64_t cp) noexcept nogil:
    if cp < 0x20:
        return cp == 0x09 or cp == 0x0A or cp == 0x0D
    if cp <= 0xD7FF:
        return True
    if cp < 0xE000:
        return False
    if cp <= 0xFFFD:
        return True
    return cp >= 0x10000 and cp <= 0x10FFFF


cdef inline int fail(Scanner* s, const char* msg, Py_ssize_t at) noexcept nogil:
    if s.msg == NULL:
        s.msg = msg
        s.err_pos = at
    return -1


cdef class NodeColumns:
    """The scanner's per-node columns while it reads: C buffers grown by ``realloc`` (numpy's
    ``resize`` cost 3 us a column at every doubling, a quarter of a 200-node parse), and its
    element stack (:meth:`open_stack`), freed with this object whatever way the scan ends."""
    cdef int32_t* parent
    cdef int32_t* box
    cdef int32_t* bits
    cdef int32_t* draw
    cdef int32_t* cls
    cdef int64_t* stack
    cdef Py_ssize_t cap

    def __dealloc__(self):
        free(self.parent)
        free(self.box)
        free(self.bits)
        free(self.draw)
        free(self.cls)
        free(self.stack)

    cdef int64_t* open_stack(self, Py_ssize_t rows) except NULL:
        """A zeroed ``int64[rows, 3]`` (row-major) element stack, as ``np.zeros`` makes one (a
        negative count refused alike)."""
        if rows < 0:
            raise ValueError("negative dimensions are not allowed")
        self.stack = <int64_t*>calloc(<size_t>(rows if rows > 0 else 1) * 3, sizeof(int64_t))
        if self.stack == NULL:
            raise MemoryError()
        return self.stack

    cdef int reserve(self, Py_ssize_t cap) except -1:
        cdef size_t one = <size_t>cap * sizeof(int32_t)
        cdef void* q
        q = realloc(self.parent, one)
        if q == NULL:
            raise MemoryError()
        self.parent = <int32_t*>q
        q = realloc(self.box, 4 * one)
        if q == NULL:
            raise MemoryError()
        self.box = <int32_t*>q
        q = realloc(self.bits, one)
        if q == NULL:
            raise MemoryError()
        self.bits = <int32_t*>q
        q = realloc(self.draw, one)
        if q == NULL:
            raise MemoryError()
        self.draw = <int32_t*>q
        q = realloc(self.cls, one)
        if q == NULL:
            raise MemoryError()
        self.cls = <int32_t*>q
        self.cap = cap
        return 0


cdef tuple columns(NodeColumns cols, Py_ssize_t count):
    """The columns' first ``count`` rows, copied into one new int32 array: ``(parent, box[count,
    4], bits, draw, class_id)``, views of it (five arrays and their memoryviews apart cost
    more than a median scan's copying)."""
    out_a = np.empty(8 * count, dtype=np.int32)
    cdef int32_t[::1] out = out_a
    cdef size_t one = <size_t>count * sizeof(int32_t)
    if count:
        memcpy(&out[0], cols.parent, one)
        memcpy(&out[count], cols.box, 4 * one)
        memcpy(&out[5 * count], cols.bits, one)
        memcpy(&out[6 * count], cols.draw, one)
        memcpy(&out[7 * count], cols.cls, one)
    return (out_a[:count], out_a[count:5 * count].reshape(count, 4), out_a[5 * count:6 * count],
            out_a[6 * count:7 * count], out_a[7 * count:])


cdef int64_t utf8_char(Scanner* s, Py_ssize_t i, Py_ssize_t end, Py_ssize_t* width) noexcept nogil:
    """Decode one UTF-8 sequence at i (first byte >= 0x80); -1 if invalid or not an XML char."""
    cdef const unsigned char* p = s.p
    cdef unsigned char c = p[i]
    cdef int64_t cp
    cdef Py_ssize_t k, need
    if c >= 0xC2 and c <= 0xDF:
        need = 1
        cp = c & 0x1F
    elif c >= 0xE0 and c <= 0xEF:
        need = 2
        cp = c & 0x0F
    elif c >= 0xF0 and c <= 0xF4:
        need = 3
        cp = c & 0x07
    else:
        return -1
    for k in range(1, need + 1):
        if i + k >= end:
            return -1
        c = p[i + k]
        if (c & 0xC0) != 0x80:
            return -1
        cp = (cp << 6) | (c & 0x3F)
    if (need == 2 and cp < 0x800) or (need == 3 and cp < 0x10000):
        return -1
    if not is_xml_char(cp):
        return -1
    width[0] = need + 1
    return cp


cdef inline bint is_wide_name_start(int64_t cp) noexcept nogil:
    """XML 1.0 (fifth edition) NameStartChar above ASCII, as libxml2 checks it."""
    return ((0xC0 <= cp <= 0xD6) or (0xD8 <= cp <= 0xF6) or (0xF8 <= cp <= 0x2FF)
            or (0x370 <= cp <= 0x37D) or (0x37F <= cp <= 0x1FFF) or (0x200C <= cp <= 0x200D)
            or (0x2070 <= cp <= 0x218F) or (0x2C00 <= cp <= 0x2FEF) or (0x3001 <= cp <= 0xD7FF)
            or (0xF900 <= cp <= 0xFDCF) or (0xFDF0 <= cp <= 0xFFFD) or (0x10000 <= cp <= 0xEFFFF))


cdef Py_ssize_t name_char(Scanner* s, Py_ssize_t i, Py_ssize_t end, bint start) noexcept nogil:
    """Bytes of the name character at i (a start character if ``start``), 0 if there is none:
    names may hold any letter XML allows, not only ASCII (lxml accepts ``<n\ufffdde>``)."""
    cdef unsigned char c = s.p[i]
    cdef Py_ssize_t width = 0
    cdef int64_t cp
    if c < 0x80:
        return 1 if (is_name_start(c) if start else is_name_char(c)) else 0
    cp = utf8_char(s, i, end, &width)
    if cp < 0:
        return 0
    if is_wide_name_start(cp) or (not start and (
            cp == 0xB7 or (0x300 <= cp <= 0x36F) or (0x203F <= cp <= 0x2040))):
        return width
    return 0


cdef inline bint name_start_at(Scanner* s, Py_ssize_t i, Py_ssize_t end) noexcept nogil:
    """Does a name start at i? ``name_char(s, i, end, True) != 0``, ASCII checked inline."""
    cdef unsigned char c = s.p[i]
    if c < 0x80:
        return is_name_start(c)
    return name_char(s, i, end, True) != 0


cdef inline Py_ssize_t skip_name(Scanner* s, Py_ssize_t j, Py_ssize_t end) noexcept nogil:
    """The end of the run of name characters from j (ASCII ones checked inline: nearly every
    name is ASCII, and a call a byte was a sixth of the scan)."""
    cdef const unsigned char* p = s.p
    cdef Py_ssize_t w
    while j < end:
        if p[j] < 0x80:
            if not NAME_CHARS[p[j]]:
                break
            j += 1
            continue
        w = name_char(s, j, end, False)
        if w == 0:
            break
        j += w
    return j


cdef int64_t char_ref(Scanner* s, Py_ssize_t i, Py_ssize_t end, Py_ssize_t* consumed) noexcept nogil:
    """Decode a reference starting at '&' (i). Returns the code point, or -1 on error."""
    cdef const unsigned char* p = s.p
    cdef Py_ssize_t j = i + 1
    cdef int64_t cp = 0
    cdef unsigned char c
    cdef int digits = 0
    if j < end and p[j] == 35:  # '#'
        j += 1
        if j < end and p[j] == 120:  # 'x'
            j += 1
            while j < end and p[j] != 59:
                c = p[j]
                if 48 <= c <= 57:
                    cp = cp * 16 + (c - 48)
                elif 97 <= c <= 102:
                    cp = cp * 16 + (c - 87)
                elif 65 <= c <= 70:
                    cp = cp * 16 + (c - 55)
                else:
                    return -1
                if cp > 0x10FFFF:
                    return -1
                digits += 1
                j += 1
        else:
            while j < end and p[j] != 59:
                c = p[j]
                if 48 <= c <= 57:
                    cp = cp * 10 + (c - 48)
                else:
                    return -1
                if cp > 0x10FFFF:
                    return -1
                digits += 1
                j += 1
        if j >= end or digits == 0 or not is_xml_char(cp):
            return -1
        consumed[0] = j - i + 1
        return cp
    # named entities: lt gt amp quot apos
    if j + 2 < end and p[j] == 108 and p[j + 1] == 116 and p[j + 2] == 59:
        consumed[0] = 4
        return 60
    if j + 2 < end and p[j] == 103 and p[j + 1] == 116 and p[j + 2] == 59:
        consumed[0] = 4
        return 62
    if j + 3 < end and p[j] == 97 and p[j + 1] == 109 and p[j + 2] == 112 and p[j + 3] == 59:
        consumed[0] = 5
        return 38
    if j + 4 < end and memcmp(p + j, b"quot;", 5) == 0:
        consumed[0] = 6
        return 34
    if j + 4 < end and memcmp(p + j, b"apos;", 5) == 0:
        consumed[0] = 6
        return 39
    return -1


cdef inline Py_ssize_t put_utf8(unsigned char* out, Py_ssize_t o, int64_t cp) noexcept nogil:
    if cp < 0x80:
        out[o] = <unsigned char>cp
        return o + 1
    if cp < 0x800:
        out[o] = <unsigned char>(0xC0 | (cp >> 6))
        out[o + 1] = <unsigned char>(0x80 | (cp & 0x3F))
        return o + 2
    if cp < 0x10000:
        out[o] = <unsigned char>(0xE0 | (cp >> 12))
        out[o + 1] = <unsigned char>(0x80 | ((cp >> 6) & 0x3F))
        out[o + 2] = <unsigned char>(0x80 | (cp & 0x3F))
        return o + 3
    out[o] = <unsigned char>(0xF0 | (cp >> 18))
    out[o + 1] = <unsigned char>(0x80 | ((cp >> 12) & 0x3F))
    out[o + 2] = <unsigned char>(0x80 | ((cp >> 6) & 0x3F))
    out[o + 3] = <unsigned char>(0x80 | (cp & 0x3F))
    return o + 4


cdef int value_span(Scanner* s, Py_ssize_t start, Py_ssize_t end,
                    const unsigned char** out_ptr, Py_ssize_t* out_len) noexcept nogil:
    """Validate an attribute value [start, end) and give its normalised bytes.

    Returns the raw span when nothing needs decoding, else the decoded copy in s.scratch.
    """
    cdef const unsigned char* p = s.p
    cdef Py_ssize_t i = start
    cdef Py_ssize_t w = 0
    cdef bint special = False
    cdef unsigned char c
    cdef int64_t cp
    cdef Py_ssize_t o
    while i < end:
        c = p[i]
        if PLAIN_VALUE[c]:
            i += 1
            continue
        if c < 0x80:
            if c == 38:  # '&'
                if char_ref(s, i, end, &w) < 0:
                    return fail(s, "invalid character or entity reference", i)
                special = True
                i += w
                continue
            if c == 60:
                return fail(s, "'<' in an attribute value", i)
            if c < 0x20:
                if c == 0x09 or c == 0x0A or c == 0x0D:
                    special = True
                else:
                    return fail(s, "control character in an attribute value", i)
            i += 1
        else:
            if utf8_char(s, i, end, &w) < 0:
                return fail(s, "invalid UTF-8 or a character XML does not allow", i)
            i += w
    if not special:
        out_ptr[0] = p + start
        out_len[0] = end - start
        return 0
    o = 0
    i = start
    while i < end:
        c = p[i]
        if c == 38:
            cp = char_ref(s, i, end, &w)
            o = put_utf8(s.scratch, o, cp)
            i += w
        elif c == 0x0D:
            s.scratch[o] = 0x20
            o += 1
            i += 1
            if i < end and p[i] == 0x0A:
                i += 1
        elif c == 0x09 or c == 0x0A:
            s.scratch[o] = 0x20
            o += 1
            i += 1
        else:
            s.scratch[o] = c
            o += 1
            i += 1
    out_ptr[0] = s.scratch
    out_len[0] = o
    return 0


cdef int skip_chars(Scanner* s, Py_ssize_t* pos_io, unsigned char stop, bint* nonspace) noexcept nogil:
    """Validate character data from pos up to the next `stop` byte; pos ends on it."""
    cdef const unsigned char* p = s.p
    cdef Py_ssize_t i = pos_io[0]
    cdef Py_ssize_t w = 0
    cdef unsigned char c
    while i < s.n:
        c = p[i]
        if c == stop:
            pos_io[0] = i
            return 0
        if c < 0x80:
            if c == 38:
                if char_ref(s, i, s.n, &w) < 0:
                    return fail(s, "invalid character or entity reference", i)
                nonspace[0] = True
                i += w
                continue
            if c < 0x20 and not (c == 0x09 or c == 0x0A or c == 0x0D):
                return fail(s, "control character in the document", i)
            if c == 93 and i + 2 < s.n and p[i + 1] == 93 and p[i + 2] == 62:
                return fail(s, "']]>' in character data", i)
            if not is_ws(c):
                nonspace[0] = True
            i += 1
        else:
            if utf8_char(s, i, s.n, &w) < 0:
                return fail(s, "invalid UTF-8 or a character XML does not allow", i)
            nonspace[0] = True
            i += w
    pos_io[0] = i
    return 0


cdef inline bint span_is(const unsigned char* p, Py_ssize_t length, const char* lit, Py_ssize_t n) noexcept nogil:
    return length == n and memcmp(p, lit, n) == 0


cdef inline bint collapsed_name(const unsigned char* p, Py_ssize_t length) noexcept nogil:
    """A resource id ``(name removed)`` or ``pkg:id/(name removed)``."""
    cdef Py_ssize_t n = 14  # len(b"(name removed)")
    if length < n or memcmp(p + length - n, b"(name removed)", n) != 0:
        return False
    return length == n or p[length - n - 1] == <unsigned char>b"/"


cdef inline bint span_contains(const unsigned char* p, Py_ssize_t length, const char* lit, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    if n > length:
        return False
    for i in range(length - n + 1):
        if p[i] == <unsigned char>lit[0] and memcmp(p + i, lit, n) == 0:
            return True
    return False


cdef int parse_int(const unsigned char* p, Py_ssize_t length, Py_ssize_t* i, int64_t* out) noexcept nogil:
    cdef Py_ssize_t j = i[0]
    cdef bint neg = False
    cdef int64_t v = 0
    cdef int digits = 0
    if j < length and p[j] == 45:
        neg = True
        j += 1
    while j < length and 48 <= p[j] <= 57:
        v = v * 10 + (p[j] - 48)
        if v > BOUND_LIMIT:
            return -1
        digits += 1
        j += 1
    if digits == 0:
        return -1
    out[0] = -v if neg else v
    i[0] = j
    return 0


cdef bint parse_bounds(const unsigned char* p, Py_ssize_t length, int32_t* box) noexcept nogil:
    """`[l,t][r,b]` exactly, integers possibly negative, |v| <= 1e9."""
    cdef Py_ssize_t i = 0
    cdef int64_t v[4]
    cdef int k
    for k in range(4):
        if k % 2 == 0:
            if i >= length or p[i] != 91:
                return False
            i += 1
        if parse_int(p, length, &i, &v[k]) < 0:
            return False
        if k % 2 == 0:
            if i >= length or p[i] != 44:
                return False
        else:
            if i >= length or p[i] != 93:
                return False
        i += 1
    if i != length:
        return False
    for k in range(4):
        box[k] = <int32_t>v[k]
    return True


cdef inline bint has_ink(const unsigned char* p, Py_ssize_t length) noexcept nogil:
    """Anything but ASCII white space."""
    cdef Py_ssize_t i
    for i in range(length):
        if not is_ws(p[i]):
            return True
    return False


cdef object make_str(const unsigned char* p, Py_ssize_t length):
    if length == 0:
        return ""
    return PyUnicode_DecodeUTF8(<const char*>p, length, NULL)


def scan_hierarchy(const unsigned char[::1] data, int max_depth, int max_nodes,
                   bint class_tags=False):
    """Read one `<hierarchy>` document.

    With ``class_tags`` every element but ``<hierarchy>`` is a node, whatever its name: Appium's
    page source names each element after its class (``<android.widget.Button class=...>``).

    Returns ``(rotation, parent int32[n], box int32[n, 4], bits int32[n], draw int32[n],
    class_id int32[n], strings list[str] of n * 6: text, content-desc, resource-id, class,
    package, hint)``. ``draw`` is the node's ``drawing-order`` or -1; ``class_id`` numbers the
    distinct class names in order of first appearance. Raises TreeParseError / UnsafeXmlError.
    """
    cdef Scanner s
    cdef Py_ssize_t n = data.shape[0]
    # value_span writes the decoded bytes before it reads them: no zeroed buffer (its memset
    # was 1% of the pipeline's instructions, a page fault a page on a large dump)
    cdef bytearray scratch_buf = PyByteArray_FromStringAndSize(NULL, n + 8)
    cdef unsigned char* scratch = scratch_buf
    s.p = &data[0] if n > 0 else <const unsigned char*>b""
    s.n = n
    s.pos = 0
    s.msg = NULL
    s.err_pos = 0
    s.unsafe = 0
    s.scratch = scratch

    cdef NodeColumns cols = NodeColumns()
    cols.reserve(64)
    cdef int32_t* parent = cols.parent
    cdef int32_t* box = cols.box
    cdef int32_t* bits = cols.bits
    cdef int32_t* draw = cols.draw
    cdef int32_t* cls = cols.cls
    strings = []
    cdef dict class_ids = {}
    cdef const unsigned char* cache_ptr[CLASS_CACHE]
    cdef Py_ssize_t cache_len[CLASS_CACHE]
    cdef int32_t cache_bits[CLASS_CACHE]
    cdef int32_t cache_cid[CLASS_CACHE]
    cdef list cache_str = []
    cdef int ncache = 0, ci, hit
    cdef int32_t cur_cid = -1
    cdef object sv, cid, last_pkg = ""
    cdef const unsigned char* last_pkg_ptr = NULL
    cdef Py_ssize_t last_pkg_len = -1

    # element stack: name start/len and node index (-1 for non-node elements)
    cdef Py_ssize_t stack_cap = max_depth + 2
    cdef int64_t* stack = cols.open_stack(stack_cap)  # row k: stack[3 * k], [3 * k + 1], [3 * k + 2]
    cdef Py_ssize_t depth = 0
    cdef Py_ssize_t count = 0
    cdef int rotation = 0
    cdef bint seen_root = False
    cdef bint root_closed = False
    cdef bint nonspace
    cdef const unsigned char* p = s.p
    cdef Py_ssize_t i = 0, j, name_start, name_len, aname_start, aname_len, vstart, vend
    cdef Py_ssize_t k
    cdef const unsigned char* vp
    cdef const unsigned char* vq
    cdef Py_ssize_t vlen
    cdef unsigned char q, c
    cdef int32_t b
    cdef int32_t tmpbox[4]
    cdef int64_t iv
    cdef Py_ssize_t ii
    cdef Py_ssize_t w = 0
    cdef bint is_node, is_hier, self_closing, had_ws
    cdef uint32_t seen_known
    cdef Py_ssize_t unknown_start[MAX_ATTRS]
    cdef Py_ssize_t unknown_len[MAX_ATTRS]
    cdef int n_unknown
    cdef int known_id
    cdef int32_t cur_parent
    cdef Py_ssize_t idx
    cdef list fields = None

    while True:
        nonspace = False
        if skip_chars(&s, &i, 60, &nonspace) < 0:
            break
        if nonspace and (not seen_root or root_closed):
            fail(&s, "text outside the root element", i)
            break
        if i >= n:
            break
        # at '<'
        if i + 1 >= n:
            fail(&s, "unexpected end of input", i)
            break
        c = p[i + 1]
        if c == 33:  # '!'
            if i + 3 < n and p[i + 2] == 45 and p[i + 3] == 45:
                j = i + 4
                while j + 1 < n and not (p[j] == 45 and p[j + 1] == 45):
                    if p[j] < 0x80:
                        if p[j] < 0x20 and not is_ws(p[j]):
                            fail(&s, "control character in a comment", j)
                            break
                        j += 1
                    else:
                        if utf8_char(&s, j, n, &w) < 0:
                            fail(&s, "invalid UTF-8 or a character XML does not allow", j)
                            break
                        j += w
                if s.msg != NULL:
                    break
                if j + 2 >= n or p[j + 2] != 62:
                    fail(&s, "'--' inside a comment or unterminated comment", j)
                    break
                i = j + 3
                continue
            if i + 8 < n and memcmp(p + i, b"<![CDATA[", 9) == 0:
                if depth == 0:
                    fail(&s, "CDATA outside the root element", i)
                    break
                j = i + 9
                while j + 2 < n and not (p[j] == 93 and p[j + 1] == 93 and p[j + 2] == 62):
                    if p[j] < 0x80:
                        if p[j] < 0x20 and not is_ws(p[j]):
                            fail(&s, "control character in CDATA", j)
                            break
                        j += 1
                    else:
                        if utf8_char(&s, j, n, &w) < 0:
                            fail(&s, "invalid UTF-8 or a character XML does not allow", j)
                            break
                        j += w
                if s.msg != NULL:
                    break
                if j + 2 >= n:
                    fail(&s, "unterminated CDATA section", i)
                    break
                i = j + 3
                continue
            if i + 8 < n and (memcmp(p + i, b"<!DOCTYPE", 9) == 0 or memcmp(p + i, b"<!ENTITY", 8) == 0):
                s.unsafe = 1
                fail(&s, "DOCTYPE/ENTITY declarations are refused", i)
                break
            fail(&s, "unsupported markup ('<!' other than a comment)", i)
            break
        if c == 63:  # '?'
            j = i + 2
            name_start = j
            j = skip_name(&s, j, n)
            if j == name_start:
                fail(&s, "processing instruction without a target", i)
                break
            if j - name_start == 3 and (p[name_start] | 32) == 120 and (p[name_start + 1] | 32) == 109 and (p[name_start + 2] | 32) == 108:
                fail(&s, "XML declaration not at the start of the document", i)
                break
            if j < n and not is_ws(p[j]) and not (p[j] == 63 and j + 1 < n and p[j + 1] == 62):
                fail(&s, "space expected after a processing instruction target", j)
                break
            while j + 1 < n and not (p[j] == 63 and p[j + 1] == 62):
                if p[j] < 0x80:
                    if p[j] < 0x20 and not is_ws(p[j]):
                        fail(&s, "control character in a processing instruction", j)
                        break
                    j += 1
                else:
                    if utf8_char(&s, j, n, &w) < 0:
                        fail(&s, "invalid UTF-8 or a character XML does not allow", j)
                        break
                    j += w
            if s.msg != NULL:
                break
            if j + 1 >= n:
                fail(&s, "unterminated processing instruction", i)
                break
            i = j + 2
            continue
        if c == 47:  # '/': end tag
            j = i + 2
            name_start = j
            j = skip_name(&s, j, n)
            name_len = j - name_start
            if depth == 0:
                fail(&s, "end tag without a start tag", i)
                break
            if name_len != stack[3 * depth - 2] or memcmp(p + name_start, p + stack[3 * depth - 3], name_len) != 0:
                fail(&s, "mismatched end tag", i)
                break
            while j < n and is_ws(p[j]):
                j += 1
            if j >= n or p[j] != 62:
                fail(&s, "unterminated end tag", i)
                break
            depth -= 1
            if depth == 0:
                root_closed = True
            i = j + 1
            continue
        # start tag
        if root_closed:
            fail(&s, "extra content after the root element", i)
            break
        j = i + 1
        name_start = j
        if j >= n or not name_start_at(&s, j, n):
            fail(&s, "invalid element name", i)
            break
        j = skip_name(&s, j, n)
        name_len = j - name_start
        is_hier = span_is(p + name_start, name_len, b"hierarchy", 9)
        is_node = span_is(p + name_start, name_len, b"node", 4) or (class_tags and not is_hier)
        if depth == 0:
            if seen_root:
                fail(&s, "extra content after the root element", i)
                break
            seen_root = True
        if depth >= max_depth:
            s.unsafe = 1
            fail(&s, "nesting deeper than the limit", i)
            break
        if is_hier and depth > 0:
            # No dump nests one; two run together are framed apart before (parse.py).
            fail(&s, "a <hierarchy> inside the document's <hierarchy>", i)
            break
        idx = -1
        cur_parent = -1
        for k in range(depth - 1, -1, -1):
            if stack[3 * k + 2] >= 0:
                cur_parent = <int32_t>stack[3 * k + 2]
                break
        if is_node:
            if count >= max_nodes:
                s.unsafe = 1
                fail(&s, "more nodes than the limit", i)
                break
            if count >= cols.cap:
                cols.reserve(2 * cols.cap)
                parent = cols.parent
                box = cols.box
                bits = cols.bits
                draw = cols.draw
                cls = cols.cls
            idx = count
            count += 1
            parent[idx] = cur_parent
            box[4 * idx] = 0
            box[4 * idx + 1] = 0
            box[4 * idx + 2] = 0
            box[4 * idx + 3] = 0
            bits[idx] = B_WINDOW_ROOT if cur_parent < 0 else 0
            draw[idx] = -1
            fields = ["", "", "", "", "", ""]
            cur_cid = -1
        # attributes
        seen_known = 0
        n_unknown = 0
        self_closing = False
        while True:
            had_ws = False
            while j < n and is_ws(p[j]):
                j += 1
                had_ws = True
            if j >= n:
                fail(&s, "unexpected end of input inside a tag", j)
                break
            if p[j] == 62:
                j += 1
                break
            if p[j] == 47:
                if j + 1 < n and p[j + 1] == 62:
                    self_closing = True
                    j += 2
                    break
                fail(&s, "invalid '/' in a tag", j)
                break
            if not had_ws or not name_start_at(&s, j, n):
                fail(&s, "attributes construct error", j)
                break
            aname_start = j
            j = skip_name(&s, j, n)
            aname_len = j - aname_start
            if span_is(p + aname_start, aname_len, b"xmlns", 5):
                fail(&s, "XML namespaces are not part of a uiautomator dump", aname_start)
                break
            while j < n and is_ws(p[j]):
                j += 1
            if j >= n or p[j] != 61:
                fail(&s, "attribute without a value", j)
                break
            j += 1
            while j < n and is_ws(p[j]):
                j += 1
            if j >= n or (p[j] != 34 and p[j] != 39):
                fail(&s, "attribute value not quoted", j)
                break
            q = p[j]
            vstart = j + 1
            vq = <const unsigned char*>memchr(p + vstart, q, <size_t>(n - vstart))
            if vq == NULL:
                fail(&s, "unterminated attribute value", vstart)
                break
            j = vq - p
            vend = j
            j += 1
            if value_span(&s, vstart, vend, &vp, &vlen) < 0:
                break
            # which attribute is it (known ones get a bit for duplicate detection)
            known_id = -1
            if aname_len == 4 and memcmp(p + aname_start, b"text", 4) == 0:
                known_id = 0
            elif aname_len == 11 and memcmp(p + aname_start, b"resource-id", 11) == 0:
                known_id = 1
            elif aname_len == 5 and memcmp(p + aname_start, b"class", 5) == 0:
                known_id = 2
            elif aname_len == 7 and memcmp(p + aname_start, b"package", 7) == 0:
                known_id = 3
            elif aname_len == 12 and memcmp(p + aname_start, b"content-desc", 12) == 0:
                known_id = 4
            elif aname_len == 9 and memcmp(p + aname_start, b"checkable", 9) == 0:
                known_id = 5
            elif aname_len == 7 and memcmp(p + aname_start, b"checked", 7) == 0:
                known_id = 6
            elif aname_len == 9 and memcmp(p + aname_start, b"clickable", 9) == 0:
                known_id = 7
            elif aname_len == 7 and memcmp(p + aname_start, b"enabled", 7) == 0:
                known_id = 8
            elif aname_len == 9 and memcmp(p + aname_start, b"focusable", 9) == 0:
                known_id = 9
            elif aname_len == 7 and memcmp(p + aname_start, b"focused", 7) == 0:
                known_id = 10
            elif aname_len == 10 and memcmp(p + aname_start, b"scrollable", 10) == 0:
                known_id = 11
            elif aname_len == 14 and memcmp(p + aname_start, b"long-clickable", 14) == 0:
                known_id = 12
            elif aname_len == 8 and memcmp(p + aname_start, b"password", 8) == 0:
                known_id = 13
            elif aname_len == 8 and memcmp(p + aname_start, b"selected", 8) == 0:
                known_id = 14
            elif aname_len == 6 and memcmp(p + aname_start, b"bounds", 6) == 0:
                known_id = 15
            elif aname_len == 15 and memcmp(p + aname_start, b"visible-to-user", 15) == 0:
                known_id = 16
            elif aname_len == 4 and memcmp(p + aname_start, b"hint", 4) == 0:
                known_id = 17
            elif aname_len == 13 and memcmp(p + aname_start, b"drawing-order", 13) == 0:
                known_id = 18
            elif aname_len == 8 and memcmp(p + aname_start, b"rotation", 8) == 0:
                known_id = 19
            elif aname_len == 9 and memcmp(p + aname_start, b"displayed", 9) == 0:
                known_id = 20  # Appium's name for visible-to-user
            if known_id >= 0:
                if seen_known & (1u << known_id):
                    fail(&s, "duplicate attribute", aname_start)
                    break
                seen_known |= (1u << known_id)
            else:
                for k in range(n_unknown):
                    if unknown_len[k] == aname_len and memcmp(p + unknown_start[k], p + aname_start, aname_len) == 0:
                        fail(&s, "duplicate attribute", aname_start)
                        break
                if s.msg != NULL:
                    break
                if n_unknown < MAX_ATTRS:
                    unknown_start[n_unknown] = aname_start
                    unknown_len[n_unknown] = aname_len
                    n_unknown += 1
            if is_hier:
                if known_id == 19 and depth == 0:
                    ii = 0
                    if parse_int(vp, vlen, &ii, &iv) == 0 and ii == vlen and 0 <= iv <= 3:
                        rotation = <int>iv
                continue
            if idx < 0:
                continue
            b = 0
            if known_id == 0:
                fields[F_TEXT] = make_str(vp, vlen)
                if has_ink(vp, vlen):
                    bits[idx] |= B_HAS_TEXT
            elif known_id == 1:
                # "com.app:id/(name removed)": aapt2 --collapse-resource-names (Facebook's
                # apps) leaves every id this name, which says nothing: no id at all.
                if not collapsed_name(vp, vlen):
                    fields[F_RID] = make_str(vp, vlen)
                    if vlen:
                        bits[idx] |= B_HAS_RID
                        # A surface the class hides: Unity reports its SurfaceView as a plain
                        # android.view.View with the id unitySurfaceView ("Game view"). Ids in
                        # either case of their first letter, camel or snake: surfaceView,
                        # surface_view, TextureView, texture_view.
                        if (span_contains(vp, vlen, b"urfaceView", 10) or span_contains(vp, vlen, b"extureView", 10)
                                or span_contains(vp, vlen, b"urface_view", 11) or span_contains(vp, vlen, b"exture_view", 11)):
                            bits[idx] |= B_SURFACE
            elif known_id == 2:
                # Few distinct classes per screen: reuse their strings, bits and ids.
                hit = -1
                if vp != s.scratch:
                    for ci in range(ncache):
                        if cache_len[ci] == vlen and memcmp(cache_ptr[ci], vp, vlen) == 0:
                            hit = ci
                            break
                if hit >= 0:
                    fields[F_CLASS] = cache_str[hit]
                    bits[idx] |= cache_bits[hit]
                    cur_cid = cache_cid[hit]
                else:
                    sv = make_str(vp, vlen)
                    fields[F_CLASS] = sv
                    b = 0
                    if span_contains(vp, vlen, b"EditText", 8) or span_contains(vp, vlen, b"AutoCompleteTextView", 20):
                        b |= B_EDITABLE
                    if span_contains(vp, vlen, b"WebView", 7):
                        b |= B_WEBVIEW
                    if span_contains(vp, vlen, b"SurfaceView", 11) or span_contains(vp, vlen, b"TextureView", 11):
                        b |= B_SURFACE
                    if (span_contains(vp, vlen, b"ListView", 8) or span_contains(vp, vlen, b"GridView", 8)
                            or span_contains(vp, vlen, b"RecyclerView", 12)
                            or span_contains(vp, vlen, b"ScrollView", 10)):
                        b |= B_LIST
                    bits[idx] |= b
                    cid = class_ids.get(sv)
                    if cid is None:
                        cid = len(class_ids)
                        class_ids[sv] = cid
                    cur_cid = cid
                    if vp != s.scratch and ncache < CLASS_CACHE:
                        cache_ptr[ncache] = vp
                        cache_len[ncache] = vlen
                        cache_bits[ncache] = b
                        cache_cid[ncache] = cur_cid
                        cache_str.append(sv)
                        ncache += 1
                b = 0
            elif known_id == 3:
                if vp != s.scratch and vlen == last_pkg_len and last_pkg_ptr != NULL and memcmp(last_pkg_ptr, vp, vlen) == 0:
                    fields[F_PKG] = last_pkg
                else:
                    last_pkg = make_str(vp, vlen)
                    fields[F_PKG] = last_pkg
                    if vp != s.scratch:
                        last_pkg_ptr = vp
                        last_pkg_len = vlen
                    else:
                        # A decoded value ("&#13;") has no place in the document to compare
                        # with: forget the cached one, or an equal raw span would get it.
                        last_pkg_ptr = NULL
                        last_pkg_len = -1
            elif known_id == 4:
                # content-desc="null": an app's setContentDescription(String.valueOf(null)),
                # no description at all (a full-screen static "null" otherwise).
                if not span_is(vp, vlen, b"null", 4):
                    fields[F_DESC] = make_str(vp, vlen)
                    if has_ink(vp, vlen):
                        bits[idx] |= B_HAS_DESC
            elif known_id == 17:
                fields[F_HINT] = make_str(vp, vlen)
                if has_ink(vp, vlen):
                    bits[idx] |= B_HAS_HINT
            elif known_id == 15:
                if parse_bounds(vp, vlen, tmpbox):
                    box[4 * idx] = tmpbox[0]
                    box[4 * idx + 1] = tmpbox[1]
                    box[4 * idx + 2] = tmpbox[2]
                    box[4 * idx + 3] = tmpbox[3]
                    bits[idx] |= B_HAS_BOUNDS
            elif known_id == 18:
                ii = 0
                if parse_int(vp, vlen, &ii, &iv) == 0 and ii == vlen and 0 <= iv <= 1000000:
                    draw[idx] = <int32_t>iv
            elif known_id == 8:
                if not span_is(vp, vlen, b"true", 4):
                    bits[idx] |= B_DISABLED
            elif known_id == 16 or known_id == 20:
                if not span_is(vp, vlen, b"true", 4):
                    bits[idx] |= B_INVISIBLE
            elif 5 <= known_id <= 14:
                if span_is(vp, vlen, b"true", 4):
                    if known_id == 5:
                        b = B_CHECKABLE
                    elif known_id == 6:
                        b = B_CHECKED
                    elif known_id == 7:
                        b = B_CLICKABLE
                    elif known_id == 9:
                        b = B_FOCUSABLE
                    elif known_id == 10:
                        b = B_FOCUSED
                    elif known_id == 11:
                        b = B_SCROLLABLE
                    elif known_id == 12:
                        b = B_LONG_CLICKABLE
                    elif known_id == 13:
                        b = B_PASSWORD
                    elif known_id == 14:
                        b = B_SELECTED
                    bits[idx] |= b
        if s.msg != NULL:
            break
        if idx >= 0:
            strings.extend(fields)
            if cur_cid < 0:
                cid = class_ids.get("")
                if cid is None:
                    cid = len(class_ids)
                    class_ids[""] = cid
                cur_cid = cid
            cls[idx] = <int32_t>cur_cid
        if self_closing:
            if depth == 0:
                root_closed = True
        else:
            stack[3 * depth] = name_start
            stack[3 * depth + 1] = name_len
            stack[3 * depth + 2] = idx
            depth += 1
        i = j

    if s.msg == NULL:
        if not seen_root:
            fail(&s, "no root element", 0)
        elif not root_closed:
            fail(&s, "unexpected end of input: the document is truncated", n)
    if s.msg != NULL:
        message = (<bytes>s.msg).decode()
        if s.unsafe:
            raise UnsafeXmlError(message)
        raise TreeParseError(message, offset=s.err_pos)
    return (rotation, *columns(cols, count), strings)


cdef enum:
    B_DROPPED = 1 << 25
    B_LAYOUT = 1 << 26
    B_BLOCKER_MASK = B_CLICKABLE | B_LONG_CLICKABLE | B_WINDOW_ROOT


def tree_big_actions(const int32_t[:, ::1] box, const int32_t[::1] bits, int32_t mask,
                     int32_t width_px, int32_t height_px):
    """The nodes whose ``bits`` hold any of ``mask`` and whose box spans at least half the
    screen's width and half its height (twice a side at least the screen's), in document
    order, as a list: the page-sized actions among a screen's nodes, in one pass (the numpy
    masks it replaces cost a microsecond and more each on a median screen)."""
    cdef Py_ssize_t n = bits.shape[0], i
    if box.shape[0] != n:
        raise ValueError("box and bits must have one row per node")
    out = []
    for i in range(n):
        if (bits[i] & mask and 2 * (<int64_t>box[i, 2] - box[i, 0]) >= width_px
                and 2 * (<int64_t>box[i, 3] - box[i, 1]) >= height_px):
            out.append(i)
    return out


def tree_structure(const int32_t[::1] parent, const int32_t[:, ::1] box,
                   const int32_t[::1] bits, const int32_t[::1] draw,
                   int32_t width_px, int32_t height_px):
    """Clip, classify and link the nodes of a RawTree.

    Returns ``(clip int32[n, 4], bits int32[n], owner int32[n], rank int32[n], end int32[n])``:
    boxes clipped to the screen; bits plus PARTLY_OFFSCREEN / DROPPED (invisible, or no area on
    screen) / LAYOUT (pure layout container); the aggregation root owning each node (nearest
    ancestor-or-self clickable, long-clickable, checkable or editable node that is not dropped),
    -1 if none; the draw rank (pre-order with siblings, window roots included, sorted by
    ``draw`` where it is set, stable); and the subtree end (exclusive) in document order.
    """
    cdef Py_ssize_t n = parent.shape[0]
    # The five results in one numpy array, the work arrays in one calloc'd block (on a median
    # screen, ten arrays allocated apart and their memoryviews cost more than the work).
    out_a = np.zeros(8 * n, dtype=np.int32)  # clip[n, 4], bits[n], owner[n], rank[n], end[n]
    cdef int32_t[::1] out = out_a
    cdef Py_ssize_t w = n + 2
    cdef int32_t* block = <int32_t*>calloc(5 * w, sizeof(int32_t))
    if block == NULL:
        raise MemoryError()
    cdef int32_t* clip = &out[0] if n else NULL
    cdef int32_t* out_bits = clip + 4 * n
    cdef int32_t* owner = clip + 5 * n
    cdef int32_t* rank = clip + 6 * n
    cdef int32_t* end = clip + 7 * n
    cdef int32_t* kids_start = block          # n + 2
    cdef int32_t* kids = block + w            # n + 1
    cdef int32_t* keys = block + 2 * w        # n + 1
    cdef int32_t* stack = block + 3 * w       # n + 1
    cdef int32_t* fill = block + 4 * w        # n + 2
    cdef Py_ssize_t i, j, k, a, b, top, slot, lo, hi
    cdef int32_t p, l, t, r, bo, v, key, kid
    with nogil:
        for i in range(n):
            p = parent[i]
            v = bits[i]
            l = box[i, 0] if box[i, 0] > 0 else 0
            t = box[i, 1] if box[i, 1] > 0 else 0
            r = box[i, 2] if box[i, 2] < width_px else width_px
            bo = box[i, 3] if box[i, 3] < height_px else height_px
            if r < l:
                r = l
            if bo < t:
                bo = t
            clip[4 * i] = l
            clip[4 * i + 1] = t
            clip[4 * i + 2] = r
            clip[4 * i + 3] = bo
            if p >= 0 and (out_bits[p] & B_INVISIBLE):
                v = v | B_INVISIBLE
            if (v & B_INVISIBLE) or r - l <= 0 or bo - t <= 0:
                v = v | B_DROPPED
            else:
                if l != box[i, 0] or t != box[i, 1] or r != box[i, 2] or bo != box[i, 3]:
                    v = v | B_PARTLY_OFFSCREEN
                if not (v & (B_CONTENT_MASK | B_ACTION_MASK)):
                    v = v | B_LAYOUT
            out_bits[i] = v
            if not (v & B_DROPPED) and (v & B_ROOT_MASK):
                owner[i] = <int32_t>i
            elif p >= 0:
                owner[i] = owner[p]
            else:
                owner[i] = -1
            end[i] = <int32_t>(i + 1)
        for i in range(n - 1, -1, -1):
            p = parent[i]
            if p >= 0 and end[i] > end[p]:
                end[p] = end[i]
        # children lists (CSR; slot n holds the top-level nodes), in document order
        for i in range(n):
            p = parent[i]
            slot = p if p >= 0 else n
            kids_start[slot + 1] += 1
        for i in range(n + 1):
            kids_start[i + 1] += kids_start[i]
        for i in range(n):
            p = parent[i]
            slot = p if p >= 0 else n
            k = kids_start[slot] + fill[slot]
            kids[k] = <int32_t>i
            keys[k] = draw[i] if draw[i] >= 0 else fill[slot]
            fill[slot] += 1
        # stable insertion sort of each child list by key
        for slot in range(n + 1):
            lo = kids_start[slot]
            hi = kids_start[slot + 1]
            for a in range(lo + 1, hi):
                key = keys[a]
                kid = kids[a]
                b = a - 1
                while b >= lo and keys[b] > key:
                    keys[b + 1] = keys[b]
                    kids[b + 1] = kids[b]
                    b -= 1
                keys[b + 1] = key
                kids[b + 1] = kid
        # pre-order walk in draw order
        top = 0
        for a in range(kids_start[n + 1] - 1, kids_start[n] - 1, -1):
            stack[top] = kids[a]
            top += 1
        k = 0
        while top > 0:
            top -= 1
            i = stack[top]
            rank[i] = <int32_t>k
            k += 1
            for a in range(kids_start[i + 1] - 1, kids_start[i] - 1, -1):
                stack[top] = kids[a]
                top += 1
    free(block)
    return (out_a[:4 * n].reshape(n, 4), out_a[4 * n:5 * n], out_a[5 * n:6 * n],
            out_a[6 * n:7 * n], out_a[7 * n:])



cdef enum:
    B_LABEL_MASK = B_HAS_TEXT | B_HAS_DESC
    B_BORROWER_MASK = B_CHECKABLE | B_EDITABLE
    B_SCROLLABLE_ = B_SCROLLABLE
    B_NAMED = 1 << 28
    B_ITEM_ACTION_MASK = B_CLICKABLE | B_LONG_CLICKABLE
    ROW_SPAN = 4  # see _kernels_tree_py.ROW_SPAN
    LABEL_GAP = 3  # see _kernels_tree_py.LABEL_GAP
    CAPTION_WIDTH = 3  # see _kernels_tree_py.CAPTION_WIDTH
    B_CHECK_STATE = B_CHECKABLE | B_CHECKED


cdef inline bint row_gap(const int32_t[:, ::1] clip, Py_ssize_t k, const int32_t* t,
                         int64_t* gap) noexcept nogil:
    """Is the text box t (left, top, right, bottom) on the row of control k (its middle in the
    control's span, or the control's middle in the span of a text at most ROW_SPAN times as
    tall); if so, the horizontal gap between them."""
    cdef int32_t top = clip[k, 1], bottom = clip[k, 3]
    cdef int32_t tt = t[1], tb = t[3]
    cdef int32_t centre = (tt + tb) // 2
    cdef int32_t own_centre = (top + bottom) // 2
    if not (top <= centre < bottom) and not (
        tt <= own_centre < tb
        and <int64_t>tb - tt <= ROW_SPAN * (<int64_t>bottom - top)
    ):
        return False
    if t[2] <= clip[k, 0]:
        gap[0] = clip[k, 0] - t[2]
    elif t[0] >= clip[k, 2]:
        gap[0] = t[0] - clip[k, 2]
    else:
        gap[0] = 0
    return True


cdef Py_ssize_t title_over(const int32_t[:, ::1] clip, Py_ssize_t i, const int32_t* cbox,
                           const int32_t* texts, Py_ssize_t ntexts, const int32_t* remap,
                           const int32_t* cand, const int32_t* group, Py_ssize_t best
                           ) noexcept nogil:
    """Of the free texts of control i's group (``group[cand[t]] == group[i]``) on its row that
    stand over the text ``best`` (across it, their middle above its top), the top one (the
    first of equals); ``best`` if none: a setting's title over its summary (see
    _kernels_tree_py._nearest_on_row)."""
    cdef Py_ssize_t j, t, title = best
    cdef int64_t gap
    cdef int32_t bl = cbox[4 * best], bt = cbox[4 * best + 1], br = cbox[4 * best + 2]
    cdef int32_t title_top = bt
    for j in range(ntexts):
        t = texts[j]
        if remap[t] != t or group[cand[t]] != group[i]:
            continue
        if not row_gap(clip, i, cbox + 4 * t, &gap):
            continue
        if (cbox[4 * t] < br and bl < cbox[4 * t + 2]
                and (cbox[4 * t + 1] + cbox[4 * t + 3]) // 2 < bt
                and cbox[4 * t + 1] < title_top):
            title = t
            title_top = cbox[4 * t + 1]
    return title


cdef Py_ssize_t label_above(const int32_t[:, ::1] clip, Py_ssize_t i, const int32_t* cbox,
                            const int32_t* texts, Py_ssize_t ntexts, const int32_t* remap,
                            const int32_t* cand, const int32_t* group) noexcept nogil:
    """Of the free texts of field i's group, the label over it: one line at most as tall as the
    field, its bottom at or above the field's top by at most the field's height // LABEL_GAP,
    its left (or right) edge within the field's height of the field's; the nearest up (the
    first of equals), -1 if none (see _kernels_tree_py._label_above)."""
    cdef Py_ssize_t j, t, best = -1
    cdef int64_t left = clip[i, 0], top = clip[i, 1], right = clip[i, 2]
    cdef int64_t height = <int64_t>clip[i, 3] - top
    cdef int64_t best_gap = height // LABEL_GAP + 1, gap, dl, dr
    for j in range(ntexts):
        t = texts[j]
        if remap[t] != t or group[cand[t]] != group[i]:
            continue
        if cbox[4 * t + 3] > top or <int64_t>cbox[4 * t + 3] - cbox[4 * t + 1] > height:
            continue
        dl = cbox[4 * t] - left
        dr = cbox[4 * t + 2] - right
        if dl < 0:
            dl = -dl
        if dr < 0:
            dr = -dr
        if dl > height and dr > height:
            continue
        gap = top - cbox[4 * t + 3]
        if gap < best_gap:
            best = t
            best_gap = gap
    return best


cdef inline int32_t node_pieces(int32_t b) noexcept nogil:
    """At most how many label pieces a node gives (its text and its description)."""
    if b & (B_DROPPED | B_PASSWORD):
        return 0
    return (1 if b & B_HAS_TEXT else 0) + (1 if b & B_HAS_DESC else 0)


cdef inline bint text_only(int32_t b) noexcept nogil:
    """A node whose one label piece is its text and that does not scroll (see _kernels_tree_py)."""
    return (b & (B_LABEL_MASK | B_SCROLLABLE_ | B_DROPPED | B_PASSWORD)) == B_HAS_TEXT


cdef inline bint glued(const int32_t[:, ::1] clip, Py_ssize_t a, Py_ssize_t c,
                       bint leftward=False) noexcept nogil:
    """Does the text box of node c continue that of node a on its line, to its right (to its
    left: ``leftward``, right-to-left text) (see _kernels_tree_py)."""
    cdef int64_t ha = <int64_t>clip[a, 3] - clip[a, 1]
    cdef int64_t hc = <int64_t>clip[c, 3] - clip[c, 1]
    cdef int64_t h = ha if ha < hc else hc
    cdef int64_t gap
    cdef int64_t dt = <int64_t>clip[a, 1] - clip[c, 1]
    cdef int64_t db = <int64_t>clip[a, 3] - clip[c, 3]
    if h <= 0:
        return False
    if leftward:
        gap = <int64_t>clip[a, 0] - clip[c, 2]
    else:
        gap = <int64_t>clip[c, 0] - clip[a, 2]
    if dt < 0:
        dt = -dt
    if db < 0:
        db = -db
    return dt * 4 <= h and db * 4 <= h and -h <= 2 * gap and 3 * gap <= h


cdef int _te_direction(str text) except -2:
    """The direction of text's first strong character: 1 right to left (bidi class R or AL),
    0 left to right (L), -1 none (twin: _direction). ASCII letters are the only strong ASCII
    characters, so most texts are settled without unicodedata."""
    cdef Py_UCS4 ch
    cdef str kind
    for ch in text:
        if ch < 0x80:
            if 0x41 <= ch <= 0x5a or 0x61 <= ch <= 0x7a:
                return 0
            continue
        kind = _tl_unicodedata.bidirectional(ch)
        if kind == "L":
            return 0
        if kind == "R" or kind == "AL":
            return 1
    return -1


cdef int _te_right_to_left(list strings, Py_ssize_t a, Py_ssize_t c) except -1:
    """Is the first strong character of node a's text, else of node c's, right-to-left (twin:
    the text half of _continues)."""
    cdef int way = _te_direction(strings[a * NFIELDS + F_TEXT])
    if way < 0:
        way = _te_direction(strings[c * NFIELDS + F_TEXT])
    return 1 if way == 1 else 0


def tree_elements(const int32_t[::1] parent, const int32_t[:, ::1] clip,
                  const int32_t[::1] bits, const int32_t[::1] owner,
                  const int32_t[::1] end, int32_t width_px,
                  int32_t max_pieces, int64_t container_area_px, int64_t page_area_px,
                  list strings, Py_ssize_t max_label_chars, Py_ssize_t min_rid_chars):
    """Choose the elements of a cleaned tree, what each absorbs and its label (see
    perception.tree.cluster).

    A root (``owner[i] == i``) absorbs the text of the nodes it owns unless it is a container:
    scrollable, a list or scroll class, over ``max_pieces`` label pieces (text and description
    of a node, at most) on an area of at least ``container_area_px``, around a scrollable node
    of that area (a page around its list), or with a label of its own around a root that takes
    presses on an area of at least ``page_area_px`` (a web page named by its title, a modal
    barrier around its dialog: its name is not the text inside). A container is an element
    of its own whose descendants are free (static text, their own roots). A node that is
    checkable only (not clickable, long-clickable or editable) under a clickable root that
    absorbs is no root: it is that row's indicator, absorbed like text, and the row takes its
    check state. A root that absorbs
    takes pieces in document order up to ``max_pieces``; the nodes past that are free text. A
    text that continues the last piece on its line (``glued``; to its left where the line reads
    right to left, ``_continues`` in the twin) adds no piece. Consecutive
    static texts of one parent merge up to ``max_pieces`` too (not the children of a list
    view), so no label ever needs more pieces than that.

    Returns ``(node int32[m], element_of_node int32[n], box int32[m, 4], bits int32[m],
    label_start int32[m + 1], label_nodes int32[k], labels list[str])``: the node behind each
    element, the element every raw node belongs to (-1 if none), merged boxes, bits (plus those
    of folded wrappers, and SELECTED where a node it absorbed without text is), per element the nodes whose text and description make its label, in
    order (``~node`` for a node whose text continues the piece before it), and the label text
    those make from ``strings`` (the dump's, ``NFIELDS`` a node; pieces cut at
    ``max_label_chars``, at most ``max_pieces`` of them, see ``_tl_labels``). A list item's
    one action whose label is its resource id (``_te_named``: ``min_rid_chars`` or more, or
    ``B_NAMED`` set by the caller) borrows no text.
    """
    cdef Py_ssize_t n = parent.shape[0]
    cdef bint named
    if len(strings) < n * NFIELDS:
        raise ValueError("strings needs NFIELDS entries per node")
    cdef Py_ssize_t i, k, j, t, c, m, p, o, best, cnt, pos, e
    cdef int32_t b
    cdef int64_t gap, best_gap, cx, cy, area
    # Work arrays live in one malloc'd block, and the six results in one numpy array (on a
    # median screen, allocating them apart cost more than the work).
    cdef Py_ssize_t w = n + 1
    cdef int32_t* block = <int32_t*>malloc(sizeof(int32_t) * w * 26)
    if block == NULL:
        raise MemoryError()
    cdef int32_t* kind = block
    cdef int32_t* index = block + w
    cdef int32_t* window = block + 2 * w
    cdef int32_t* cand = block + 3 * w
    cdef int32_t* remap = block + 4 * w
    cdef int32_t* has_piece = block + 5 * w
    cdef int32_t* extra = block + 6 * w
    cdef int32_t* new_id = block + 7 * w
    cdef int32_t* texts = block + 8 * w
    cdef int32_t* cbox = block + 9 * w          # 4 * w: left, top, right, bottom per candidate
    cdef int32_t* of_node = block + 13 * w
    cdef int32_t* count = block + 14 * w        # pieces a root would absorb, then has absorbed
    cdef int32_t* absorber = block + 15 * w     # the root a node's descendants feed, or -1
    cdef int32_t* elem_owner = block + 16 * w   # the root whose element a node is part of, or -1
    cdef int32_t* item = block + 17 * w         # the list item a node is in, or -1
    cdef int32_t* children = block + 18 * w
    cdef int32_t* actions = block + 19 * w      # roots per list item
    cdef int32_t* state = block + 20 * w        # check state a row takes from its indicator
    cdef int32_t* borrow = block + 23 * w       # rule 4: 1 may borrow, 2 named (resolved to 0/1)
    cdef Py_ssize_t nnamed
    cdef int32_t* last = block + 21 * w         # per root: the last labelled node its label took
    cdef int32_t* glue = block + 22 * w         # continues the piece before: 1 rightward, 2 leftward
    cdef int32_t* paged = block + 24 * w        # around a scroll area of a container's size
    cdef int32_t* holds = block + 25 * w        # around a root that takes presses
    cdef Py_ssize_t tail = -1                   # the static text merged last
    cdef int head_pieces = 0, pieces
    cdef bint container
    cdef int32_t joins                          # 0, or 1/2: continues the piece rightward/leftward
    cdef Py_ssize_t ncand, ntexts
    cdef int head
    cdef int32_t[::1] out
    cdef int32_t* enode
    cdef int32_t* ebox
    cdef int32_t* ebits
    cdef int32_t* start
    cdef int32_t* labels
    cdef int32_t* fill
    try:
        for i in range(n):
            kind[i] = 0
            index[i] = -1
            of_node[i] = -1
            has_piece[i] = 0
            extra[i] = 0
            state[i] = 0
            new_id[i] = -1
            count[i] = 0
            last[i] = -1
            glue[i] = 0
            paged[i] = 0
            holds[i] = 0
        ncand = 0
        ntexts = 0
        with nogil:
            # pieces each root would absorb (itself and the nodes it owns, nested roots left out)
            # and which nodes are around a scroll area of a container's size (a page's list):
            # a root around one is a page, a container whatever its pieces
            for i in range(n - 1, -1, -1):
                b = bits[i]
                count[i] += node_pieces(b)
                p = parent[i]
                if p >= 0 and owner[i] != i:
                    count[p] += count[i]
                if p >= 0 and (holds[i] or (owner[i] == i and (b & B_ROOT_MASK)
                                             and not (b & B_DROPPED))):
                    holds[p] = 1
                if (b & B_SCROLLABLE_) and not (b & B_DROPPED) and (
                        <int64_t>(clip[i, 2] - clip[i, 0]) * (clip[i, 3] - clip[i, 1])
                        >= container_area_px):
                    paged[i] = 1
                if p >= 0 and paged[i]:
                    paged[p] = 1
            # who absorbs each node's text: a root that is no container; past its budget, none
            for i in range(n):
                p = parent[i]
                o = absorber[p] if p >= 0 else -1
                b = bits[i]
                if owner[i] == i and (b & B_ROOT_MASK) == B_CHECKABLE \
                        and o >= 0 and (bits[o] & B_ITEM_ACTION_MASK):
                    # a check indicator inside a row that is clicked to toggle it: part of the row
                    state[o] = state[o] | (b & B_CHECK_STATE)
                elif owner[i] == i:
                    area = <int64_t>(clip[i, 2] - clip[i, 0]) * (clip[i, 3] - clip[i, 1])
                    container = (b & (B_SCROLLABLE_ | B_LIST)) != 0 or paged[i] != 0 or (
                        count[i] > max_pieces and area >= container_area_px) or (
                        holds[i] != 0 and node_pieces(b) > 0 and area >= page_area_px)
                    elem_owner[i] = <int32_t>i
                    absorber[i] = -1 if container else <int32_t>i
                    count[i] = node_pieces(b)
                    last[i] = <int32_t>i if count[i] else -1
                    continue
                elem_owner[i] = <int32_t>o
                absorber[i] = <int32_t>o
                pieces = node_pieces(b)
                if o >= 0 and pieces:
                    j = last[o]
                    # a text that continues the last piece on its line goes on it (see glued)
                    # (to its left where the line reads right to left; see _continues)
                    joins = 0
                    if j >= 0 and text_only(b) and text_only(bits[j]):
                        if glued(clip, j, i):
                            joins = 1
                        elif glued(clip, j, i, True):
                            if glue[j] == 2:
                                joins = 2
                            else:
                                with gil:
                                    if _te_right_to_left(strings, j, i):
                                        joins = 2
                    if not joins:
                        count[o] += pieces
                    if count[o] > max_pieces:
                        elem_owner[i] = -1
                    else:
                        last[o] = <int32_t>i
                        glue[i] = joins
            for i in range(n):
                p = parent[i]
                window[i] = <int32_t>i if p < 0 else window[p]
                b = bits[i]
                if b & B_DROPPED:
                    continue
                o = elem_owner[i]
                if o == i:
                    kind[i] = 1
                elif b & B_SCROLLABLE_:
                    if o < 0:
                        kind[i] = 2 if not (b & B_LABEL_MASK) else 6
                    else:
                        cx = (<int64_t>clip[i, 0] + clip[i, 2]) // 2
                        cy = (<int64_t>clip[i, 1] + clip[i, 3]) // 2
                        if cx < clip[o, 0] or cx >= clip[o, 2] or cy < clip[o, 1] or cy >= clip[o, 3]:
                            kind[i] = 2
                if kind[i] == 0 and o < 0 and (b & B_LABEL_MASK) and not (b & B_LAYOUT):
                    kind[i] = 4
                if kind[i] != 0:
                    index[i] = <int32_t>ncand
                    cand[ncand] = <int32_t>i
                    remap[ncand] = <int32_t>ncand
                    cbox[4 * ncand + 0] = clip[i, 0]
                    cbox[4 * ncand + 1] = clip[i, 1]
                    cbox[4 * ncand + 2] = clip[i, 2]
                    cbox[4 * ncand + 3] = clip[i, 3]
                    ncand += 1
            for i in range(n):
                if bits[i] & B_DROPPED:
                    continue
                o = elem_owner[i]
                c = index[o] if o >= 0 else -1
                if index[i] > c:
                    c = index[i]
                of_node[i] = <int32_t>c
                if c >= 0 and (bits[i] & B_LABEL_MASK) and not (bits[i] & B_PASSWORD):
                    has_piece[c] = 1
            # texts a control may borrow: labelled candidates that are not actionable
            for k in range(ncand):
                if kind[cand[k]] == 4 and has_piece[k]:
                    texts[ntexts] = <int32_t>k
                    ntexts += 1
            # 1. an unlabelled switch, checkbox or input borrows the static text on its row
            for k in range(ncand):
                i = cand[k]
                if kind[i] != 1 or has_piece[k] or not ((bits[i] | state[i]) & B_BORROWER_MASK):
                    continue
                best = -1
                best_gap = (<int64_t>width_px * 6) // 10
                for j in range(ntexts):
                    t = texts[j]
                    if remap[t] != t:
                        continue
                    # no text has merged yet: cbox holds each candidate's own box
                    if not row_gap(clip, i, cbox + 4 * t, &gap):
                        continue
                    if window[cand[t]] != window[i]:
                        continue
                    if gap < best_gap:
                        best = t
                        best_gap = gap
                if best >= 0:
                    best = title_over(clip, i, cbox, texts, ntexts, remap, cand, window, best)
                elif (bits[i] & (B_EDITABLE | B_HAS_HINT | B_HAS_RID)) == B_EDITABLE:
                    best = label_above(clip, i, cbox, texts, ntexts, remap, cand, window)
                if best >= 0:
                    remap[best] = <int32_t>k
                    has_piece[k] = 1
            # 2. an unlabelled wrapper with the box of a root inside it folds into that root
            for k in range(ncand):
                i = cand[k]
                if kind[i] != 1 or has_piece[k] or remap[k] != k:
                    continue
                for j in range(i + 1, end[i]):
                    t = index[j]
                    if t < 0 or kind[j] != 1 or remap[t] != t:
                        continue
                    if (clip[j, 0] == clip[i, 0] and clip[j, 1] == clip[i, 1]
                            and clip[j, 2] == clip[i, 2] and clip[j, 3] == clip[i, 3]):
                        remap[k] = <int32_t>t
                        extra[t] = extra[t] | bits[i] | extra[k]
                        extra[k] = 0
                        break
            # 3. consecutive static texts of one container merge, up to the piece budget; the
            # items of a list view (its children) never do, and a text wholly above and to the
            # right of the last one merged starts a new run (a grid's next column)
            head = -1
            for k in range(ncand):
                i = cand[k]
                if kind[i] != 4 or remap[k] != k or not has_piece[k]:
                    head = -1
                    continue
                pieces = node_pieces(bits[i])
                p = parent[i]
                if (head >= 0 and p >= 0 and p == parent[cand[head]]
                        and not (bits[p] & B_LIST)
                        and (clip[i, 3] > clip[tail, 1] or clip[i, 0] < clip[tail, 2])):
                    joins = 0
                    if text_only(bits[i]) and text_only(bits[tail]):
                        if glued(clip, tail, i):
                            joins = 1
                        elif glued(clip, tail, i, True):
                            if glue[tail] == 2:
                                joins = 2
                            else:
                                with gil:
                                    if _te_right_to_left(strings, tail, i):
                                        joins = 2
                    if joins:
                        pieces = 0
                    if head_pieces + pieces > max_pieces:
                        head = <int>k
                        head_pieces = pieces
                        tail = i
                        continue
                    remap[k] = head
                    head_pieces += pieces
                    glue[i] = joins
                    tail = i
                    if clip[i, 0] < cbox[4 * head + 0]:
                        cbox[4 * head + 0] = clip[i, 0]
                    if clip[i, 1] < cbox[4 * head + 1]:
                        cbox[4 * head + 1] = clip[i, 1]
                    if clip[i, 2] > cbox[4 * head + 2]:
                        cbox[4 * head + 2] = clip[i, 2]
                    if clip[i, 3] > cbox[4 * head + 3]:
                        cbox[4 * head + 3] = clip[i, 3]
                    continue
                head = <int>k
                head_pieces = pieces
                tail = i
            # 4. the one unlabelled action of a list item borrows the static text on its row
            for i in range(n):
                children[i] = 0
                actions[i] = 0
            for i in range(n):
                p = parent[i]
                if p >= 0:
                    children[p] += 1
            for i in range(n):
                p = parent[i]
                item[i] = -1
                if p >= 0:
                    if (bits[p] & (B_SCROLLABLE_ | B_LIST)) and children[p] > 1:
                        item[i] = <int32_t>i
                    else:
                        item[i] = item[p]
            for k in range(ncand):
                i = cand[k]
                if kind[i] == 1 and remap[k] == k and item[i] >= 0:
                    actions[item[i]] += 1
            nnamed = 0
            for k in range(ncand):
                i = cand[k]
                borrow[k] = 0
                if (kind[i] != 1 or has_piece[k] or remap[k] != k or item[i] < 0
                        or actions[item[i]] != 1 or not (bits[i] & B_ITEM_ACTION_MASK)
                        or ((bits[i] | state[i]) & (B_BORROWER_MASK | B_NAMED))):
                    continue
                borrow[k] = 1
                if (bits[i] & (B_HAS_RID | B_HAS_TEXT | B_HAS_DESC)) == B_HAS_RID:
                    with gil:  # a few nodes a screen get here
                        named = _te_named(strings, i, bits[i], min_rid_chars)
                    if named:
                        borrow[k] = 2
                        nnamed += 1
            if nnamed:
                # Named by a resource id other items' actions share, an action's id tells it
                # from nothing (K PLUS's four "layout_quickBankingMenuCircle"): it borrows.
                with gil:
                    _te_shared_rids(strings, cand, borrow, ncand)
            for k in range(ncand):
                if borrow[k] != 1:
                    continue
                i = cand[k]
                best = -1
                best_gap = (<int64_t>width_px * 6) // 10
                for j in range(ntexts):
                    t = texts[j]
                    if remap[t] != t or item[cand[t]] != item[i]:
                        continue
                    if not row_gap(clip, i, cbox + 4 * t, &gap):
                        continue
                    if gap < best_gap:
                        best = t
                        best_gap = gap
                if best >= 0:
                    best = title_over(clip, i, cbox, texts, ntexts, remap, cand, item, best)
                else:
                    # an icon over its caption (see _kernels_tree_py._caption_below)
                    best_gap = <int64_t>clip[i, 3] - clip[i, 1] + 1
                    for j in range(ntexts):
                        t = texts[j]
                        if remap[t] != t or item[cand[t]] != item[i]:
                            continue
                        cx = (<int64_t>cbox[4 * t] + cbox[4 * t + 2]) // 2
                        if not (clip[i, 0] <= cx < clip[i, 2]) or (
                            2 * <int64_t>cbox[4 * t + 1] < <int64_t>clip[i, 1] + clip[i, 3]
                        ):
                            continue
                        if (<int64_t>cbox[4 * t + 2] - cbox[4 * t]
                                > CAPTION_WIDTH * (<int64_t>clip[i, 2] - clip[i, 0])):
                            continue
                        gap = <int64_t>cbox[4 * t + 1] - clip[i, 3]
                        if gap < 0:
                            gap = 0
                        if gap < best_gap:
                            best = t
                            best_gap = gap
                if best >= 0:
                    remap[best] = <int32_t>k
                    has_piece[k] = 1
            # keep roots and scrollables always, text only when it says something
            m = 0
            for k in range(ncand):
                i = cand[k]
                if remap[k] == k and (kind[i] & 3 or has_piece[k]):
                    new_id[k] = <int32_t>m
                    m += 1
            for k in range(ncand - 1, -1, -1):
                t = k
                while remap[t] != t:
                    t = remap[t]
                if t != k:
                    new_id[k] = new_id[t]
            cnt = 0
            for i in range(n):
                c = of_node[i]
                if c >= 0:
                    of_node[i] = new_id[c]
                    if of_node[i] >= 0 and (bits[i] & B_LABEL_MASK) and not (bits[i] & B_PASSWORD):
                        cnt += 1
        # out: of_node[n], node[m], box[m, 4], bits[m], label_start[m + 1], label_nodes[cnt]
        out_a = np.zeros(n + 7 * m + 1 + cnt, dtype=np.int32)
        out = out_a
        enode = &out[0] + n
        ebox = enode + m
        ebits = ebox + 4 * m
        start = ebits + m
        labels = start + m + 1
        with nogil:
            if n > 0:
                memcpy(&out[0], of_node, sizeof(int32_t) * n)
            for k in range(ncand):
                if remap[k] == k and new_id[k] >= 0:
                    t = new_id[k]
                    enode[t] = cand[k]
                    memcpy(ebox + 4 * t, cbox + 4 * k, sizeof(int32_t) * 4)
                    ebits[t] = bits[cand[k]] | extra[k] | state[cand[k]]
            # A control not selected itself that absorbed a selected node without text (a
            # tab's icon or background) is selected; a selected text only runs its marquee.
            for i in range(n):
                c = of_node[i]
                if (c >= 0 and (bits[i] & (B_SELECTED | B_HAS_TEXT | B_DROPPED)) == B_SELECTED
                        and enode[c] != i and ebits[c] & B_ROOT_MASK):
                    ebits[c] |= B_SELECTED
            for i in range(n):
                c = of_node[i]
                if c >= 0 and (bits[i] & B_LABEL_MASK) and not (bits[i] & B_PASSWORD):
                    start[c + 1] += 1
            for k in range(m):
                start[k + 1] += start[k]
            fill = texts
            for k in range(m + 1):
                fill[k] = 0
            for i in range(n):
                c = of_node[i]
                if c >= 0 and (bits[i] & B_LABEL_MASK) and not (bits[i] & B_PASSWORD):
                    pos = start[c] + fill[c]
                    labels[pos] = <int32_t>(~i) if glue[i] else <int32_t>i
                    fill[c] += 1
        e = n + m
        return (out_a[n:e], out_a[:n], out_a[e:e + 4 * m].reshape(m, 4),
                out_a[e + 4 * m:e + 5 * m], out_a[e + 5 * m:e + 6 * m + 1], out_a[e + 6 * m + 1:],
                _tl_labels(strings, enode, ebits, start, labels, clip, m, max_label_chars,
                           max_pieces))
    finally:
        free(block)


from libc.stdlib cimport qsort


cdef int _tv_cmp_i64(const void* a, const void* b) noexcept nogil:
    cdef int64_t x = (<const int64_t*>a)[0]
    cdef int64_t y = (<const int64_t*>b)[0]
    return (x > y) - (x < y)


cdef Py_ssize_t _tv_sorted_unique(int64_t* v, Py_ssize_t n) noexcept nogil:
    """Sort ``v[:n]`` and drop repeats in place; the count left."""
    cdef Py_ssize_t i, u = 0
    if n == 0:
        return 0
    qsort(v, n, sizeof(int64_t), _tv_cmp_i64)
    for i in range(1, n):
        if v[i] != v[u]:
            u += 1
            v[u] = v[i]
    return u + 1


cdef int64_t _tv_union_area(const int32_t* parts, Py_ssize_t k, int64_t* xs,
                            int64_t* spans) noexcept nogil:
    """Area of the union of the ``k`` rectangles ``parts`` (4 ints each), by vertical slabs
    between their left and right edges (the twin's ``_union_area``). Scratch: ``xs`` holds
    ``2 k``, ``spans`` ``k`` values."""
    cdef Py_ssize_t i, j, nx, ns
    cdef int64_t total = 0, covered, top, bottom, t, b, x0, x1
    cdef int64_t high = (<int64_t>1) << 32, half = (<int64_t>1) << 31, low_mask = high - 1
    for i in range(k):
        xs[2 * i] = parts[4 * i]
        xs[2 * i + 1] = parts[4 * i + 2]
    nx = _tv_sorted_unique(xs, 2 * k)
    for i in range(nx - 1):
        x0 = xs[i]
        x1 = xs[i + 1]
        ns = 0
        for j in range(k):
            if parts[4 * j] <= x0 and parts[4 * j + 2] >= x1:
                # (top, bottom) as one key that sorts as the pair does
                spans[ns] = <int64_t>parts[4 * j + 1] * high + (<int64_t>parts[4 * j + 3] + half)
                ns += 1
        if ns == 0:
            continue
        qsort(spans, ns, sizeof(int64_t), _tv_cmp_i64)
        covered = 0
        top = (spans[0] - (spans[0] & low_mask)) // high
        bottom = (spans[0] & low_mask) - half
        for j in range(1, ns):
            t = (spans[j] - (spans[j] & low_mask)) // high
            b = (spans[j] & low_mask) - half
            if t > bottom:
                covered += bottom - top
                top = t
                bottom = b
            elif b > bottom:
                bottom = b
        covered += bottom - top
        total += covered * (x1 - x0)
    return total


cdef void _tv_largest_free(int32_t left, int32_t top, int32_t right, int32_t bottom,
                           const int32_t* parts, Py_ssize_t k, int64_t* xs, int64_t* ys,
                           int64_t* height, int32_t* covered, int32_t* stack_s,
                           int64_t* stack_h, int32_t* out) noexcept nogil:
    """The largest rectangle of the box that none of the ``k`` rectangles ``parts`` (inside it)
    overlaps, into ``out`` (the twin's ``_largest_free``: the same scan, the same ties).
    Scratch: ``xs``, ``ys`` hold ``2 k + 2`` values, the others ``2 k + 2``."""
    cdef Py_ssize_t i, j, c, s, nx, ny, cols, depth
    cdef int64_t best = 0, area, h, sh, y0, y1
    xs[0] = left
    xs[1] = right
    ys[0] = top
    ys[1] = bottom
    for i in range(k):
        xs[2 + 2 * i] = parts[4 * i]
        xs[3 + 2 * i] = parts[4 * i + 2]
        ys[2 + 2 * i] = parts[4 * i + 1]
        ys[3 + 2 * i] = parts[4 * i + 3]
    nx = _tv_sorted_unique(xs, 2 * k + 2)
    ny = _tv_sorted_unique(ys, 2 * k + 2)
    cols = nx - 1
    out[0] = left
    out[1] = top
    out[2] = left
    out[3] = top
    for c in range(cols):
        height[c] = 0
    for j in range(ny - 1):
        y0 = ys[j]
        y1 = ys[j + 1]
        for c in range(cols):
            covered[c] = 0
        for i in range(k):
            if parts[4 * i + 1] <= y0 and parts[4 * i + 3] >= y1:
                for c in range(cols):
                    if xs[c] >= parts[4 * i] and xs[c + 1] <= parts[4 * i + 2]:
                        covered[c] = 1
        for c in range(cols):
            height[c] = 0 if covered[c] else height[c] + y1 - y0
        depth = 0
        for c in range(cols + 1):
            h = height[c] if c < cols else 0
            s = c
            while depth > 0 and stack_h[depth - 1] >= h:
                depth -= 1
                sh = stack_h[depth]
                area = sh * (xs[c] - xs[stack_s[depth]])
                if area > best:
                    best = area
                    out[0] = <int32_t>xs[stack_s[depth]]
                    out[1] = <int32_t>(y1 - sh)
                    out[2] = <int32_t>xs[c]
                    out[3] = <int32_t>y1
                s = stack_s[depth]
            stack_s[depth] = <int32_t>s
            stack_h[depth] = h
            depth += 1



def tree_tap_boxes(const int32_t[:, ::1] boxes, const int32_t[::1] takes,
                   const int32_t[::1] search, const int32_t[::1] nodes,
                   const int32_t[::1] rank, const int32_t[::1] end, int32_t max_parts):
    """For each element ``search[q]`` (of the elements ``nodes``, in document order, with their
    ``boxes``), the largest part of its box clear of the actions over it: every element that
    takes presses (``takes``), drawn later (``rank`` of its node higher), not around it (its
    node's subtree, to ``end``, not holding the searched one's node) and overlapping its box,
    clipped to it. Returns ``(crowded int8[s], free int32[s, 4])``: crowded 1 when more than
    ``max_parts`` actions are over it (no part searched), else ``free`` holds the part, as
    ``tree_visibility``'s tap-box search finds it (the twin's ``_largest_free``)."""
    cdef Py_ssize_t m = nodes.shape[0], n = rank.shape[0], ns = search.shape[0]
    cdef Py_ssize_t q, k, j, count, w = 2 * nodes.shape[0] + 2
    cdef int32_t ol, ot, o_r, ob, nk, nj, rk, l, t, r, b
    if boxes.shape[0] != m or boxes.shape[1] != 4 or takes.shape[0] != m:
        raise ValueError("boxes and takes need one entry per element")
    if end.shape[0] != n:
        raise ValueError("rank and end need one entry per node")
    for k in range(m):
        if nodes[k] < 0 or nodes[k] >= n:
            raise ValueError("element nodes must be in [0, node count)")
    for q in range(ns):
        if search[q] < 0 or search[q] >= m:
            raise ValueError("searched elements must be in [0, element count)")
    crowded_a = np.zeros(ns, dtype=np.int8)
    free_a = np.zeros((ns, 4), dtype=np.int32)
    if ns == 0:
        return crowded_a, free_a
    cdef signed char[::1] crowded = crowded_a
    cdef int32_t[:, ::1] free_v = free_a
    cdef int32_t* parts = <int32_t*>malloc(sizeof(int32_t) * 4 * m)
    cdef int64_t* wide = <int64_t*>malloc(sizeof(int64_t) * 4 * w)
    cdef int32_t* work = <int32_t*>malloc(sizeof(int32_t) * 2 * w)
    if parts == NULL or wide == NULL or work == NULL:
        free(parts)
        free(wide)
        free(work)
        raise MemoryError()
    try:
        for q in range(ns):
            k = search[q]
            ol = boxes[k, 0]
            ot = boxes[k, 1]
            o_r = boxes[k, 2]
            ob = boxes[k, 3]
            nk = nodes[k]
            rk = rank[nk]
            count = 0
            for j in range(m):
                if not takes[j]:
                    continue
                nj = nodes[j]
                if rank[nj] <= rk or (nj <= nk and nk < end[nj]):
                    continue
                l = boxes[j, 0]
                t = boxes[j, 1]
                r = boxes[j, 2]
                b = boxes[j, 3]
                if l < o_r and r > ol and t < ob and b > ot:
                    parts[4 * count] = l if l > ol else ol
                    parts[4 * count + 1] = t if t > ot else ot
                    parts[4 * count + 2] = r if r < o_r else o_r
                    parts[4 * count + 3] = b if b < ob else ob
                    count += 1
            if count > max_parts:
                crowded[q] = 1
                continue
            _tv_largest_free(ol, ot, o_r, ob, parts, count, wide, wide + w, wide + 2 * w,
                             work, work + w, wide + 3 * w, &free_v[q, 0])
    finally:
        free(parts)
        free(wide)
        free(work)
    return crowded_a, free_a

cdef enum:
    TV_PLAIN_SCAN_MAX = 64   # up to this many covers (every corpus screen) each element scans them all
    TV_GRID_MAX_SIDE = 256   # the cover grid has at most this many cells a side
    TV_WIDE_CELLS = 64       # a cover over more cells (and more than a grid row or column) is met by all


cdef inline int _tv_meet(Py_ssize_t i, const int32_t* cover, int32_t el, int32_t et,
                         int32_t er, int32_t eb, int32_t cx, int32_t cy, int64_t area,
                         int32_t cover_num, int32_t cover_den, int32_t* parts,
                         Py_ssize_t* nparts, int64_t* total, bint* centre) noexcept nogil:
    """Meet the element's box with cover ``i`` (an eligible one: drawn later, outside its
    subtree and ancestors): 1 when that cover alone occludes it, else its overlap (if any) is
    added to ``parts``, ``total`` and ``centre``."""
    cdef int32_t bl = cover[4 * i], bt = cover[4 * i + 1], br = cover[4 * i + 2], bb = cover[4 * i + 3]
    cdef int32_t pl = el if el > bl else bl
    cdef int32_t pt = et if et > bt else bt
    cdef int32_t pr = er if er < br else br
    cdef int32_t pb = eb if eb < bb else bb
    cdef int64_t part_area
    if pr <= pl or pb <= pt:
        return 0
    part_area = <int64_t>(pr - pl) * (pb - pt)
    if part_area * cover_den >= area * cover_num:
        return 1
    parts[4 * nparts[0]] = pl
    parts[4 * nparts[0] + 1] = pt
    parts[4 * nparts[0] + 2] = pr
    parts[4 * nparts[0] + 3] = pb
    nparts[0] += 1
    total[0] += part_area
    if bl <= cx < br and bt <= cy < bb:
        centre[0] = True
    return 0


cdef inline int64_t _tv_cell(int64_t v, int64_t origin, int64_t side, int64_t cells) noexcept nogil:
    """The grid cell (clamped into ``[0, cells)``) that coordinate ``v`` falls in."""
    cdef int64_t c
    if v <= origin:
        return 0
    c = (v - origin) // side
    return c if c < cells else cells - 1


cdef inline void _tv_span(int64_t left, int64_t top, int64_t right, int64_t bottom,
                          int64_t gx0, int64_t cw, int64_t gnx, int64_t gy0, int64_t ch,
                          int64_t gny, int64_t* span) noexcept nogil:
    """The cells the pixels of a box (with an area) fall in, clamped to the grid: ``span`` gets
    the first and last column, then the first and last row (twin: ``_BlockerGrid._span``)."""
    span[0] = _tv_cell(left, gx0, cw, gnx)
    span[1] = _tv_cell(right - 1, gx0, cw, gnx)
    span[2] = _tv_cell(top, gy0, ch, gny)
    span[3] = _tv_cell(bottom - 1, gy0, ch, gny)


cdef inline bint _tv_related(Py_ssize_t b, Py_ssize_t e, const int32_t* end) noexcept nogil:
    """Whether node ``b`` lies in ``e``'s subtree or ``e`` in ``b``'s (no cover of each other)."""
    return (b >= e and b < end[e]) or (e >= b and e < end[b])



def tree_visibility(const int32_t[:, ::1] clip, const int32_t[::1] bits,
                    const int32_t[::1] rank, const int32_t[::1] end,
                    const int32_t[::1] parent, const int32_t[::1] class_id,
                    const int32_t[::1] nodes, const int32_t[:, ::1] boxes,
                    int32_t cover_num, int32_t cover_den,
                    int32_t keep, int32_t min_run, int32_t slack_px,
                    drawer_layouts=None, int32_t min_side_px=0):
    """What of the elements (``nodes``, with their ``boxes``) the model is offered, and where
    to tap them.

    Covers of an element: the blockers drawn after it outside its subtree and its ancestors
    (a clickable or long-clickable node, a window root, or an open drawer, whose box is then
    its DrawerLayout's: a child of one of the nodes ``drawer_layouts`` (int32, given), other
    than its first drawn, that is not dropped). An element is occluded when its covers
    together overlap at least ``cover_num / cover_den`` of its node's area. Of an action (a clickable, long-clickable, checkable or editable node) whose centre a cover
    holds, the tap box is the largest part of its box no cover overlaps, if both sides are at
    least ``min_side_px`` (and 1); else it is occluded. List runs: among the elements that are
    not occluded, consecutive ones with the same parent and class and a width and height
    within ``slack_px`` form a run; in a run longer than ``keep`` (and at least ``min_run``)
    whose parent scrolls or is inside a node that does (what is cut can be scrolled to), the
    items after the first ``keep`` are hidden and ``more`` on the last shown item counts them.
    Returns ``(occluded int8[m], hidden int8[m], more int32[m], tap boxes int32[m, 4], open
    drawers int32[d, 2])``, the last as (drawer, its layout) pairs.
    """
    cdef Py_ssize_t n = bits.shape[0]
    cdef Py_ssize_t m = nodes.shape[0]
    cdef const int32_t[::1] layouts
    cdef int32_t[:, ::1] pairs
    cdef Py_ssize_t nl = 0, nd = 0, q
    if drawer_layouts is not None:
        layouts = drawer_layouts
        nl = layouts.shape[0]
        for q in range(nl):
            if layouts[q] < 0 or layouts[q] >= n:
                raise ValueError("drawer layouts must be nodes: in [0, node count)")
    occluded_a = np.zeros(m, dtype=np.int8)
    hidden_a = np.zeros(m, dtype=np.int8)
    out_a = np.zeros(5 * m, dtype=np.int32)     # more[m], then the tap boxes[m, 4]
    cdef signed char[::1] occluded = occluded_a
    cdef signed char[::1] hidden = hidden_a
    cdef int32_t[::1] out = out_a
    cdef int32_t* more = &out[0] if m > 0 else NULL
    cdef int32_t* tap = more + m if m > 0 else NULL
    cdef const int32_t* ends = &end[0] if n > 0 else NULL  # each node's subtree end
    # int32: blockers[n], cover[4 n], parts[4 n], visible[m + 1], scrolls[n], covered[2 n + 2],
    # stack_s[2 n + 2], scrim[n], drawer pairs[2 n]; int64: xs, ys, height, stack_h [2 n + 2 each],
    # spans[n]
    cdef Py_ssize_t w32 = 17 * n + m + 5, w64 = 9 * n + 8
    cdef int64_t* wide = <int64_t*>malloc(sizeof(int64_t) * w64 + sizeof(int32_t) * w32)
    if wide == NULL:
        raise MemoryError()
    cdef int32_t* work = <int32_t*>(wide + w64)
    cdef int32_t* blockers = work
    cdef int32_t* cover = work + n
    cdef int32_t* parts = work + 5 * n
    cdef int32_t* visible = work + 9 * n
    cdef int32_t* scrolls = work + 9 * n + m + 1    # 1: the node scrolls or is inside one
    cdef int32_t* covered = work + 10 * n + m + 1
    cdef int32_t* stack_s = work + 12 * n + m + 3
    cdef int32_t* scrim = work + 14 * n + m + 5     # the DrawerLayout an open drawer covers
    cdef int32_t* drawer = work + 15 * n + m + 5    # open drawers found: drawer, layout
    cdef int64_t* xs = wide
    cdef int64_t* ys = wide + 2 * n + 2
    cdef int64_t* height = wide + 4 * n + 4
    cdef int64_t* stack_h = wide + 6 * n + 6
    cdef int64_t* spans = wide + 8 * n + 8
    cdef int32_t g, s, el, et, er, eb, cx, cy
    cdef int32_t free_box[4]
    cdef Py_ssize_t nb = 0, nv = 0, i, k, e, b, start, length, a, nparts
    cdef int64_t area, total, w0, h0, wk, hk
    cdef bint centre, side_ok
    cdef int32_t min_side = min_side_px if min_side_px > 1 else 1
    cdef int32_t content
    cdef Py_ssize_t kids
    # the cover grid (more than TV_PLAIN_SCAN_MAX covers): each cell lists the covers reaching
    # it, latest drawn first, so an element meets only the covers that can overlap it and stops
    # at the first drawn before it; covers too wide for the grid are listed apart (``gwide``)
    cdef bint grid = False
    cdef int64_t* gstart = NULL     # the cells' first entries, then the end: [cells + 1]
    cdef int32_t* gent = NULL       # the covers of each cell in turn (indexes into blockers)
    cdef int32_t* gwide = NULL      # the wide covers, latest drawn first
    cdef int32_t* stamp = NULL      # the last element that met each cover (met once each)
    cdef int64_t* order = NULL      # the covers by draw rank
    cdef int64_t gx0 = 0, gy0 = 0, gx1 = 0, gy1 = 0, cw = 1, ch = 1, gnx = 1, gny = 1
    cdef int64_t span[4]             # a box's first and last grid column, then row
    cdef int64_t gx, gy, o, gcells, nw = 0, wide_max, side
    cdef int32_t re_
    try:
        if m > 0:
            memcpy(tap, &boxes[0, 0], sizeof(int32_t) * 4 * m)
        for i in range(n):
            scrim[i] = -1
        for q in range(nl):
            i = layouts[q]
            if bits[i] & B_DROPPED:
                continue
            kids = 0
            content = -1
            for k in range(i + 1, end[i]):
                if parent[k] == i:
                    kids += 1
                    if content < 0 or rank[k] < rank[content]:
                        content = <int32_t>k
            if kids < 2:
                continue
            for k in range(i + 1, end[i]):
                if parent[k] == i and k != content and not (bits[k] & B_DROPPED):
                    if scrim[k] < 0 and nd < n:  # a layout listed twice finds its drawers once
                        drawer[2 * nd] = <int32_t>k
                        drawer[2 * nd + 1] = <int32_t>i
                        nd += 1
                    scrim[k] = <int32_t>i
        with nogil:
            for i in range(n):
                scrolls[i] = 0
            for i in range(n):
                s = scrim[i]
                if ((bits[i] & B_BLOCKER_MASK) or s >= 0) and not (bits[i] & B_DROPPED):
                    blockers[nb] = <int32_t>i
                    if s < 0:
                        s = <int32_t>i
                    cover[4 * nb] = clip[s, 0]
                    cover[4 * nb + 1] = clip[s, 1]
                    cover[4 * nb + 2] = clip[s, 2]
                    cover[4 * nb + 3] = clip[s, 3]
                    nb += 1
                g = parent[i]
                scrolls[i] = 1 if (bits[i] & B_SCROLLABLE_) or (g >= 0 and scrolls[g]) else 0
            if nb > TV_PLAIN_SCAN_MAX:
                # the grid's extent: the covers with an area
                for i in range(nb):
                    if cover[4 * i + 2] <= cover[4 * i] or cover[4 * i + 3] <= cover[4 * i + 1]:
                        continue
                    if not grid or cover[4 * i] < gx0:
                        gx0 = cover[4 * i]
                    if not grid or cover[4 * i + 1] < gy0:
                        gy0 = cover[4 * i + 1]
                    if not grid or cover[4 * i + 2] > gx1:
                        gx1 = cover[4 * i + 2]
                    if not grid or cover[4 * i + 3] > gy1:
                        gy1 = cover[4 * i + 3]
                    grid = True
            if grid:
                # square cells (a power of two a side), about one per cover, at most
                # TV_GRID_MAX_SIDE a side
                side = 1
                while side < (1 << 30) and <double>side * side * nb < <double>(gx1 - gx0) * (gy1 - gy0):
                    side *= 2
                cw = side
                ch = side
                gnx = (gx1 - gx0 + cw - 1) // cw
                if gnx > TV_GRID_MAX_SIDE:
                    gnx = TV_GRID_MAX_SIDE
                    cw = (gx1 - gx0 + gnx - 1) // gnx
                    gnx = (gx1 - gx0 + cw - 1) // cw
                gny = (gy1 - gy0 + ch - 1) // ch
                if gny > TV_GRID_MAX_SIDE:
                    gny = TV_GRID_MAX_SIDE
                    ch = (gy1 - gy0 + gny - 1) // gny
                    gny = (gy1 - gy0 + ch - 1) // ch
                gcells = gnx * gny
                wide_max = TV_WIDE_CELLS
                if gnx > wide_max:
                    wide_max = gnx
                if gny > wide_max:
                    wide_max = gny
                gstart = <int64_t*>calloc(gcells + 1, sizeof(int64_t))
                order = <int64_t*>malloc(sizeof(int64_t) * nb)
                stamp = <int32_t*>malloc(sizeof(int32_t) * nb)
                gwide = <int32_t*>malloc(sizeof(int32_t) * nb)
                if gstart == NULL or order == NULL or stamp == NULL or gwide == NULL:
                    with gil:
                        raise MemoryError()
                for i in range(nb):
                    order[i] = <int64_t>rank[blockers[i]] * ((<int64_t>1) << 32) + i
                qsort(order, nb, sizeof(int64_t), _tv_cmp_i64)
                for o in range(nb):
                    order[o] = order[o] & (((<int64_t>1) << 32) - 1)
                # count each cell's covers (stamp: 1 for a cover the cells list), latest first
                o = nb - 1
                while o >= 0:
                    i = order[o]
                    o -= 1
                    stamp[i] = 0
                    if cover[4 * i + 2] <= cover[4 * i] or cover[4 * i + 3] <= cover[4 * i + 1]:
                        continue  # no area: overlaps nothing
                    _tv_span(cover[4 * i], cover[4 * i + 1], cover[4 * i + 2], cover[4 * i + 3],
                             gx0, cw, gnx, gy0, ch, gny, span)
                    if (span[1] - span[0] + 1) * (span[3] - span[2] + 1) > wide_max:
                        gwide[nw] = <int32_t>i
                        nw += 1
                        continue
                    stamp[i] = 1
                    for gy in range(span[2], span[3] + 1):
                        for gx in range(span[0], span[1] + 1):
                            gstart[gy * gnx + gx + 1] += 1
                for o in range(gcells):
                    gstart[o + 1] += gstart[o]
                gent = <int32_t*>malloc(sizeof(int32_t) * (gstart[gcells] + 1))
                if gent == NULL:
                    with gil:
                        raise MemoryError()
                # fill, latest drawn first; gstart[c] runs ahead and is moved back after
                o = nb - 1
                while o >= 0:
                    i = order[o]
                    o -= 1
                    if stamp[i] != 1:
                        continue
                    _tv_span(cover[4 * i], cover[4 * i + 1], cover[4 * i + 2], cover[4 * i + 3],
                             gx0, cw, gnx, gy0, ch, gny, span)
                    for gy in range(span[2], span[3] + 1):
                        for gx in range(span[0], span[1] + 1):
                            gent[gstart[gy * gnx + gx]] = <int32_t>i
                            gstart[gy * gnx + gx] += 1
                o = gcells
                while o > 0:
                    gstart[o] = gstart[o - 1]
                    o -= 1
                gstart[0] = 0
                for i in range(nb):
                    stamp[i] = -1
            for k in range(m):
                e = nodes[k]
                el = clip[e, 0]
                et = clip[e, 1]
                er = clip[e, 2]
                eb = clip[e, 3]
                area = <int64_t>(er - el) * (eb - et)
                if area > 0:
                    # the centre as BoxPx.center has it (floor division; C's truncates)
                    w0 = <int64_t>el + er
                    h0 = <int64_t>et + eb
                    cx = <int32_t>((w0 - (w0 < 0)) // 2)
                    cy = <int32_t>((h0 - (h0 < 0)) // 2)
                    nparts = 0
                    total = 0
                    centre = False
                    re_ = rank[e]
                    if not grid:
                        for i in range(nb):
                            b = blockers[i]
                            if rank[b] <= re_ or _tv_related(b, e, ends):
                                continue
                            if _tv_meet(i, cover, el, et, er, eb, cx, cy, area, cover_num,
                                        cover_den, parts, &nparts, &total, &centre):
                                occluded[k] = 1
                                break
                    else:
                        # the same covers as the scan (those that can overlap), in another order:
                        # what is found does not depend on the order
                        for o in range(nw):
                            i = gwide[o]
                            b = blockers[i]
                            if rank[b] <= re_:
                                break
                            if stamp[i] == k or _tv_related(b, e, ends):
                                continue
                            stamp[i] = <int32_t>k
                            if _tv_meet(i, cover, el, et, er, eb, cx, cy, area, cover_num,
                                        cover_den, parts, &nparts, &total, &centre):
                                occluded[k] = 1
                                break
                        _tv_span(el, et, er, eb, gx0, cw, gnx, gy0, ch, gny, span)
                        gy = span[2]
                        while gy <= span[3] and not occluded[k]:
                            gx = span[0]
                            while gx <= span[1] and not occluded[k]:
                                for o in range(gstart[gy * gnx + gx], gstart[gy * gnx + gx + 1]):
                                    i = gent[o]
                                    b = blockers[i]
                                    if rank[b] <= re_:
                                        break
                                    if stamp[i] == k or _tv_related(b, e, ends):
                                        continue
                                    stamp[i] = <int32_t>k
                                    if _tv_meet(i, cover, el, et, er, eb, cx, cy, area,
                                                cover_num, cover_den, parts, &nparts, &total,
                                                &centre):
                                        occluded[k] = 1
                                        break
                                gx += 1
                            gy += 1
                    if not occluded[k] and nparts > 0:
                        if total * cover_den >= area * cover_num and \
                                _tv_union_area(parts, nparts, xs, spans) * cover_den \
                                >= area * cover_num:
                            occluded[k] = 1
                        elif centre and (bits[e] & B_ROOT_MASK) and nparts > MAX_FREE_PARTS:
                            occluded[k] = 1
                        elif centre and (bits[e] & B_ROOT_MASK):
                            _tv_largest_free(el, et, er, eb, parts, nparts, xs, ys, height,
                                             covered, stack_s, stack_h, free_box)
                            side_ok = (free_box[2] - free_box[0] >= min_side
                                       and free_box[3] - free_box[1] >= min_side)
                            if side_ok:
                                memcpy(tap + 4 * k, free_box, sizeof(int32_t) * 4)
                            else:
                                occluded[k] = 1
                if not occluded[k]:
                    visible[nv] = <int32_t>k
                    nv += 1
            start = 0
            while start < nv:
                a = visible[start]
                w0 = max(<int64_t>0, <int64_t>boxes[a, 2] - boxes[a, 0])
                h0 = max(<int64_t>0, <int64_t>boxes[a, 3] - boxes[a, 1])
                i = start + 1
                while i < nv:
                    k = visible[i]
                    if parent[nodes[k]] != parent[nodes[a]] or class_id[nodes[k]] != class_id[nodes[a]]:
                        break
                    wk = max(<int64_t>0, <int64_t>boxes[k, 2] - boxes[k, 0])
                    hk = max(<int64_t>0, <int64_t>boxes[k, 3] - boxes[k, 1])
                    if wk - w0 > slack_px or w0 - wk > slack_px or hk - h0 > slack_px or h0 - hk > slack_px:
                        break
                    i += 1
                length = i - start
                g = parent[nodes[a]]
                if length > keep and length >= min_run and g >= 0 and scrolls[g]:
                    for k in range(start + keep, i):
                        hidden[visible[k]] = 1
                    more[visible[start + keep - 1]] = <int32_t>(length - keep)
                start = i
        drawers_a = np.empty((nd, 2), dtype=np.int32)
        if nd > 0:
            pairs = drawers_a
            memcpy(&pairs[0, 0], drawer, sizeof(int32_t) * 2 * nd)
    finally:
        free(wide)
        free(gstart)
        free(gent)
        free(gwide)
        free(stamp)
        free(order)
    return occluded_a, hidden_a, out_a[:m], out_a[m:].reshape(m, 4), drawers_a


# --- labels (tree_elements' last step; twin: perception._kernels_tree_py._labels) ----------------
# The same steps as the twin, on typed locals and characters: the strings stay Python strings,
# the interpreter's per-call cost goes.

import re as _tl_re
import unicodedata as _tl_unicodedata

cdef object _TL_WS = _tl_re.compile("[ \t\n\r]+")
cdef object _TL_EMPTY_FIELDS = _tl_re.compile(",(?: ,)+")  # a summary's empty fields: one comma
cdef dict _TL_BIDI = dict.fromkeys(
    [0x061C, 0x200E, 0x200F] + list(range(0x202A, 0x202F)) + list(range(0x2066, 0x206A)), None
)
cdef object _TL_TAGS = _tl_re.compile(
    "(\U0001F3F4[\U000E0020-\U000E007E]+\U000E007F)|[\U000E0000-\U000E007F]"
)
cdef tuple _TL_MARKS = ("Mn", "Me", "Mc")
cdef dict _TL_CONTROLS = dict.fromkeys((*range(0x80, 0xA0), 0x2028, 0x2029), " ")
cdef str _TL_SEP = " | "
cdef str _TL_ELLIPSIS = "\u2026"


cdef int _te_shared_rids(list strings, const int32_t* cand, int32_t* borrow,
                         Py_ssize_t ncand) except -1:
    """Rule 4's named actions (``borrow`` 2): 1 (may borrow) where another one has the same
    resource id, else 0 (keeps its id)."""
    cdef dict seen = {}
    cdef Py_ssize_t k
    for k in range(ncand):
        if borrow[k] == 2:
            rid = strings[cand[k] * NFIELDS + F_RID]
            seen[rid] = seen.get(rid, 0) + 1
    for k in range(ncand):
        if borrow[k] == 2:
            borrow[k] = 1 if seen[strings[cand[k] * NFIELDS + F_RID]] >= 2 else 0
    return 0


cdef bint _te_named(list strings, Py_ssize_t i, int32_t b, Py_ssize_t min_rid_chars) except -1:
    """Is node ``i``'s label its resource id (no text, no description, an id whose part after
    the last "/" has ``min_rid_chars`` or more characters)? Such a list item's only action keeps
    its id rather than borrow the row's text."""
    cdef str rid
    if (b & (B_HAS_RID | B_HAS_TEXT | B_HAS_DESC)) != B_HAS_RID:
        return False
    rid = strings[i * NFIELDS + F_RID]
    return len(rid) - rid.rfind("/") - 1 >= min_rid_chars


cdef extern from "Python.h":
    bint PyUnicode_IS_ASCII(object text)


cdef inline bint _tl_space(Py_UCS4 ch) noexcept:
    return ch == 0x20 or ch == 0x09 or ch == 0x0A or ch == 0x0D


cdef inline bint _tl_regional(Py_UCS4 ch) noexcept:
    return 0x1F1E6 <= ch <= 0x1F1FF


cdef inline bint _tl_unspaced(Py_UCS4 ch) noexcept:
    return 0x3000 <= ch <= 0x9FFF or 0xF900 <= ch <= 0xFAFF or 0xFF00 <= ch <= 0xFFEF


cdef bint _tl_joined(str text, Py_ssize_t at) except -1:
    cdef Py_UCS4 ch = text[at]
    cdef Py_UCS4 before = text[at - 1]
    cdef Py_ssize_t run = 0
    if before == 0x200D or ch == 0x200D:
        return True
    if (0xFE00 <= ch <= 0xFE0F or 0x1F3FB <= ch <= 0x1F3FF or 0xE0020 <= ch <= 0xE007F
            or 0xE0100 <= ch <= 0xE01EF or _tl_unicodedata.category(ch) in _TL_MARKS):
        return True
    if _tl_regional(ch) and _tl_regional(before):
        while at - run - 1 >= 0 and _tl_regional(text[at - run - 1]):
            run += 1
        return run % 2 == 1
    return False


cdef inline bint _tl_bidi(Py_UCS4 ch) noexcept:
    return ch == 0x061C or 0x200E <= ch <= 0x200F or 0x202A <= ch <= 0x202E or 0x2066 <= ch <= 0x2069


cdef bint _tl_collapses(str text) noexcept:
    """Does ``text`` hold XML white space other than single spaces?"""
    cdef Py_UCS4 ch
    cdef bint space = False
    for ch in text:
        if ch == 0x20:
            if space:
                return True
            space = True
        elif ch == 0x0A or ch == 0x09 or ch == 0x0D:
            return True
        else:
            space = False
    return False


def _tl_flag_only(match):
    return match.group(1) or ""


cdef str _tl_said_once(str text):
    """A text whose lines, blank ones aside, are one line said two times or more, as that line
    once (the twin's ``_said_once``: Flutter's merged label and text, ``SCAN QR INSTEAD``
    twice)."""
    cdef str first = None, line
    cdef Py_ssize_t said = 0
    for part in text.split("\n"):
        line = part.strip(" \t\n\r")
        if not line:
            continue
        if first is None:
            first = line
        elif line != first:
            return text
        said += 1
    return first if said >= 2 else text


cdef inline bint _tl_private(Py_UCS4 ch) noexcept:
    """A private-use character: an icon font's glyph (twin: _PRIVATE)."""
    return 0xE000 <= ch <= 0xF8FF or 0xF0000 <= ch <= 0xFFFFD or 0x100000 <= ch <= 0x10FFFD


cdef str _tl_private_ends(str text):
    """``text`` without the icon-font glyphs and spaces at its ends; itself when nothing else
    is left (twin: _PRIVATE_ENDS)."""
    cdef Py_ssize_t a = 0, b = len(text)
    while a < b and (text[a] == 0x20 or _tl_private(text[a])):
        a += 1
    while b > a and (text[b - 1] == 0x20 or _tl_private(text[b - 1])):
        b -= 1
    if a == b:
        return text
    return text[a:b] if a or b < len(text) else text


cdef str _tl_piece(str text, Py_ssize_t limit):
    cdef Py_ssize_t n, cut
    cdef Py_UCS4 ch
    cdef bint bidi = False, tags = False, controls = False, private = False
    if not PyUnicode_IS_ASCII(text):
        for ch in text:  # translate() looks every character up: only when there is a mark
            if _tl_bidi(ch):
                bidi = True
            elif 0xE0000 <= ch <= 0xE007F:
                tags = True
            elif 0x80 <= ch <= 0x9F or ch == 0x2028 or ch == 0x2029:
                controls = True  # C1 controls and line separators: a space (twin: _CONTROLS)
            elif _tl_private(ch):
                private = True
        if bidi:
            text = text.translate(_TL_BIDI)
        if tags:
            text = _TL_TAGS.sub(_tl_flag_only, text)
        if controls:
            text = text.translate(_TL_CONTROLS)
    if "\n" in text:
        text = _tl_said_once(text)
    if _tl_collapses(text):
        text = _TL_WS.sub(" ", text)
    if ", ," in text:
        text = _TL_EMPTY_FIELDS.sub(",", text)
    n = len(text)
    if n and (text[0] == 0x20 or text[n - 1] == 0x20):
        text = text.strip(" ")
        n = len(text)
    if n and text[0] == 0x2C:  # the summary's first field was empty
        text = text[1:].lstrip(" ")
        n = len(text)
    if private:
        text = _tl_private_ends(text)
        n = len(text)
    if n <= limit + limit // 2:
        return text
    cut = text.find(" ", limit, limit + limit // 4 + 1)
    if cut < 0:
        cut = limit
    while cut > 0 and _tl_joined(text, cut):
        cut -= 1
    return text[: cut or limit] + _TL_ELLIPSIS


cdef str _tl_unspelled(str piece):
    cdef Py_ssize_t n = len(piece), i
    if n < 5:
        return piece
    for i in range(1, n, 2):
        if piece[i] != 0x20:
            return piece
    for i in range(0, n, 2):
        if piece[i] == 0x20:
            return piece
    return piece[::2]


cdef int _tl_add_piece(list pieces, str piece) except -1:
    cdef Py_ssize_t k
    cdef str key, have, have_key
    cdef bint cut
    if not piece:
        return 0
    if not pieces:
        pieces.append(piece)
        return 0
    key = _tl_unspelled(piece)
    cut = piece[len(piece) - 1] == 0x2026
    for k in range(len(pieces)):
        have = pieces[k]
        if cut or have[len(have) - 1] == 0x2026:
            if have == piece:
                return 0
            continue
        have_key = _tl_unspelled(have)
        if key in have_key:
            return 0
        if have_key in key:
            pieces[k] = key
            return 0
        if len(key) == len(have_key) and key.casefold() == have_key.casefold():
            return 0  # the same words in other capitals ("Advanced" and "ADVANCED")
    pieces.append(piece)
    return 0


cdef str _tl_join_glued(str raw, str prev_raw, bint overlap):
    cdef Py_ssize_t nb = len(prev_raw), na = len(raw)
    if (nb and _tl_space(prev_raw[nb - 1])) or (na and _tl_space(raw[0])):
        return " "
    if overlap or (nb and na and _tl_unspaced(prev_raw[nb - 1]) and _tl_unspaced(raw[0])):
        return ""
    return " "


cdef object _TL_WORD = _tl_re.compile(r"\w+")
cdef Py_ssize_t _TL_RESIDUE_CHARS = 2  # twin: SUMMARY_RESIDUE_CHARS
cdef Py_ssize_t _TL_SUMMARY_MAX_CHARS = 1000  # twin: SUMMARY_MAX_CHARS


cdef bint _tl_summarises(str value, list others) except -1:
    """twin: summarises"""
    cdef str rest, key, other, word
    cdef Py_ssize_t at
    if len(others) < 2:
        return False
    rest = " ".join(value.split()).casefold()
    for other in others:
        key = " ".join(other.split()).casefold()
        at = rest.find(key)
        if at < 0:
            return False
        rest = rest[:at] + " " + rest[at + len(key):]
    for word in _TL_WORD.findall(rest):
        if len(word) > _TL_RESIDUE_CHARS:
            return False
    return True


cdef int _tl_summary_fields(list strings, Py_ssize_t node, const int32_t* labels,
                            Py_ssize_t s, Py_ssize_t e, Py_ssize_t limit) except -1:
    """twin: _summary_fields, as bits: 1 the own node's text, 2 its description."""
    cdef Py_ssize_t j, ln
    cdef Py_ssize_t most = limit + limit // 2  # no shorter value is cut (_tl_piece)
    cdef str text, desc, value
    cdef list others
    cdef bint long_text, long_desc
    if e - s < 3 or labels[s] != node or labels[s + 1] < 0:
        return 0
    text = strings[node * NFIELDS + F_TEXT]
    desc = strings[node * NFIELDS + F_DESC]
    long_text = most < len(text) <= _TL_SUMMARY_MAX_CHARS
    long_desc = most < len(desc) <= _TL_SUMMARY_MAX_CHARS
    if not long_text and not long_desc:
        return 0
    others = []
    for j in range(s + 1, e):
        ln = labels[j]
        value = strings[(ln if ln >= 0 else ~ln) * NFIELDS + F_TEXT]
        if value.split():
            others.append(value)
        if ln >= 0:
            value = strings[ln * NFIELDS + F_DESC]
            if value.split():
                others.append(value)
    return ((1 if long_text and _tl_summarises(text, others)
             and _tl_piece(text, limit)[-1:] == _TL_ELLIPSIS else 0)
            | (2 if long_desc and _tl_summarises(desc, others)
               and _tl_piece(desc, limit)[-1:] == _TL_ELLIPSIS else 0))


cdef list _tl_labels(list strings, const int32_t* enode, const int32_t* ebits,
                     const int32_t* start, const int32_t* labels, const int32_t[:, ::1] clip,
                     Py_ssize_t m, Py_ssize_t limit, Py_ssize_t cap):
    """The label of each of the ``m`` elements tree_elements chose (twin: ``_labels``)."""
    cdef Py_ssize_t idx, j, s, e, at, node, prev, parts
    cdef Py_ssize_t most = limit + limit // 2
    cdef int32_t ln
    cdef int drop
    cdef bint any_glued
    cdef list out = [], own, values
    cdef str value, raw, prev_raw, text, desc
    for idx in range(m):
        s = start[idx]
        e = start[idx + 1]
        any_glued = False
        for j in range(s, e):
            if labels[j] < 0:
                any_glued = True
                break
        if e == s + 1 and not any_glued:  # most labels: one node, its text or its description
            at = labels[s] * NFIELDS
            text = strings[at + F_TEXT]
            desc = strings[at + F_DESC]
            if not (text and desc):
                value = _tl_piece(text or desc, limit)
                if not value and ebits[idx] & B_EDITABLE and ebits[idx] & B_HAS_HINT:
                    value = _tl_piece(strings[enode[idx] * NFIELDS + F_HINT], limit)
                out.append(value)
                continue
        own = []
        drop = _tl_summary_fields(strings, enode[idx], labels, s, e, limit)
        if any_glued:
            # a joined piece is held to ``limit`` as one text is (twin: _add_glued): no more
            # parts once over ``most`` characters or with ``most`` parts, then cut
            values = []
            parts = 0
            prev = -1
            prev_raw = ""
            for j in range(s, e):
                ln = labels[j]
                if ln < 0:
                    node = ~ln
                    raw = strings[node * NFIELDS + F_TEXT]
                    if not values:
                        values.append(_tl_piece(raw, limit))
                        parts = 1
                    else:
                        value = values[len(values) - 1]
                        if parts < most and len(value) <= most:
                            values[len(values) - 1] = (
                                value + _tl_join_glued(
                                    raw, prev_raw,
                                    clip[node, 0] < clip[prev, 2] if glued(clip, prev, node)
                                    else clip[node, 2] > clip[prev, 0])  # else it runs leftward
                                + _tl_piece(raw, limit)
                            )
                            parts += 1
                    prev = node
                    prev_raw = raw
                    continue
                at = ln * NFIELDS
                text = strings[at + F_TEXT]
                desc = strings[at + F_DESC]
                if j == s and drop:  # the own node summarising the rest (_tl_summary_fields)
                    text = "" if drop & 1 else text
                    desc = "" if drop & 2 else desc
                if text:
                    values.append(_tl_piece(text, limit))
                    parts = 1
                if desc:
                    values.append(_tl_piece(desc, limit))
                    parts = 1
                prev = ln
                prev_raw = text
            for value in values:
                _tl_add_piece(own, _tl_piece(value, limit) if len(value) > most else value)
        else:
            for j in range(s, e):
                at = labels[j] * NFIELDS
                text = strings[at + F_TEXT]
                desc = strings[at + F_DESC]
                if labels[j] == enode[idx] and drop:
                    text = "" if drop & 1 else text
                    desc = "" if drop & 2 else desc
                if text:
                    _tl_add_piece(own, _tl_piece(text, limit))
                if desc:
                    _tl_add_piece(own, _tl_piece(desc, limit))
        if not own and ebits[idx] & B_EDITABLE and ebits[idx] & B_HAS_HINT:
            own.append(_tl_piece(strings[enode[idx] * NFIELDS + F_HINT], limit))
        if len(own) > 1:
            out.append(_TL_SEP.join(own[:cap]))
        elif own:
            out.append(own[0])
        else:
            out.append("")
    return out
