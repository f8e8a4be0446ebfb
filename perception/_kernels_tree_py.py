"""Pure-Python twins of the tree-channel kernels (``_kernels_tree.pxi``).

These are the reference semantics. ``scan_hierarchy`` reads the document with lxml (hardened
parser: no DTD, no entities, no network); the compiled twin is a validating single-pass reader
that must give identical results, which ``tests/test_tree_parity.py`` checks on the real corpus
and on generated documents.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
from lxml import etree

from perception.errors import TreeParseError, UnsafeXmlError

I32 = npt.NDArray[np.int32]

# Raw node bits. The low ones are the values of perception.types.ElementFlag.
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
"""The class is a list or scroll container (ListView, GridView, RecyclerView, ScrollView, ...),
scrollable or not: its items are rows of their own, never one label."""

B_ROOT_MASK = B_CLICKABLE | B_LONG_CLICKABLE | B_CHECKABLE | B_EDITABLE
B_ACTION_MASK = B_ROOT_MASK | B_SCROLLABLE
B_CONTENT_MASK = B_HAS_TEXT | B_HAS_DESC | B_HAS_RID | B_HAS_HINT

NFIELDS = 6
F_TEXT, F_DESC, F_RID, F_CLASS, F_PKG, F_HINT = range(NFIELDS)

_TRUE_FLAGS = (
    ("checkable", B_CHECKABLE),
    ("checked", B_CHECKED),
    ("clickable", B_CLICKABLE),
    ("focusable", B_FOCUSABLE),
    ("focused", B_FOCUSED),
    ("scrollable", B_SCROLLABLE),
    ("long-clickable", B_LONG_CLICKABLE),
    ("password", B_PASSWORD),
    ("selected", B_SELECTED),
)
_LIST_CLASSES = ("ListView", "GridView", "RecyclerView", "ScrollView")
_SURFACE_IDS = ("urfaceView", "extureView", "urface_view", "exture_view")
_WS = " \t\n\r"  # XML white space: text made only of it is no text
_COLLAPSED_NAME = "(name removed)"
"""The name ``aapt2 optimize --collapse-resource-names`` gives every resource (Facebook's apps:
``com.facebook.katana:id/(name removed)``): an id that says nothing is read as none."""
_INT = re.compile(r"-?[0-9]+")
_BOUNDS = re.compile(r"\[(-?[0-9]+),(-?[0-9]+)\]\[(-?[0-9]+),(-?[0-9]+)\]")
_BOUND_LIMIT = 1_000_000_000


_MAX_DIGITS = 10
"""Significant digits of the largest number read (``_BOUND_LIMIT``); the compiled twin stops
past it, and ``int()`` refuses a string of over 4,300 digits with a ValueError."""


def _int(digits: str) -> int | None:
    """``digits`` (``-?[0-9]+``) as an int, or None past ``_MAX_DIGITS`` significant digits
    (leading zeros are read, however many, as the compiled twin does)."""
    negative = digits.startswith("-")
    significant = digits.lstrip("-").lstrip("0")
    if len(significant) > _MAX_DIGITS:
        return None
    number = int(significant or "0")
    return -number if negative else number


def _small_int(value: str | None, low: int, high: int) -> int | None:
    if value is None or not _INT.fullmatch(value):
        return None
    number = _int(value)
    return number if number is not None and low <= number <= high else None


# Any element or attribute in a namespace, or a namespace declared (the compiled scanner has no
# ':' in names and refuses an "xmlns" attribute).
_NAMESPACED = (
    "boolean(//*[namespace-uri()] | //@*[namespace-uri()] | //namespace::*[name() != 'xml'])"
)


def _parser() -> etree.XMLParser:
    """lxml as the compiled scanner reads: ``huge_tree`` lifts libxml2's 10 MB cap on one text
    (the compiled twin read a 15 MB attribute, this one refused it); what that cap guards
    against is bounded before this parser runs (the input's size, DOCTYPE and entities
    refused, nesting checked below)."""
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        huge_tree=True,
        remove_comments=True,
        remove_pis=True,
        recover=False,
    )


def scan_hierarchy(
    data: bytes, max_depth: int, max_nodes: int, class_tags: bool = False
) -> tuple[int, I32, I32, I32, I32, I32, list[str]]:
    """Read one ``<hierarchy>`` document (see the compiled twin for the contract)."""
    try:
        root = etree.fromstring(bytes(data), _parser())
    except etree.XMLSyntaxError as exc:
        message = str(exc)
        if "Excessive depth" in message:
            raise UnsafeXmlError(message) from None
        raise TreeParseError(message) from None

    if (b":" in data or b"xmlns" in data) and root.xpath(_NAMESPACED):
        raise TreeParseError("XML namespaces are not part of a uiautomator dump")
    rotation = 0
    if root.tag == "hierarchy":
        rotation = _small_int(root.get("rotation"), 0, 3) or 0

    index_of: dict[Any, int] = {}
    level_of: dict[Any, int] = {root: 0}
    parents: list[int] = []
    boxes: list[tuple[int, int, int, int]] = []
    bits_list: list[int] = []
    draws: list[int] = []
    strings: list[str] = []
    class_ids: dict[str, int] = {}
    classes: list[int] = []
    for el in root.iter():
        up = el.getparent()
        level = 0 if up is None else level_of[up] + 1
        level_of[el] = level
        if level >= max_depth:
            raise UnsafeXmlError("nesting deeper than the limit")
        if el.tag == "hierarchy" and level > 0:
            raise TreeParseError("a <hierarchy> inside the document's <hierarchy>")
        if el.tag != "node" and not (class_tags and el.tag != "hierarchy"):
            continue
        if len(parents) >= max_nodes:
            raise UnsafeXmlError("more nodes than the limit")
        parent = -1
        while up is not None:
            if up in index_of:
                parent = index_of[up]
                break
            up = up.getparent()
        index_of[el] = len(parents)
        parents.append(parent)

        get = el.get
        text = get("text") or ""
        desc = get("content-desc") or ""
        if desc == "null":  # String.valueOf(null): no description (see the Cython twin)
            desc = ""
        rid = get("resource-id") or ""
        if rid == _COLLAPSED_NAME or rid.endswith("/" + _COLLAPSED_NAME):
            rid = ""  # aapt2's collapsed resource name: no id (see the Cython twin)
        cls = get("class") or ""
        pkg = get("package") or ""
        hint = get("hint") or ""
        strings += (text, desc, rid, cls, pkg, hint)
        classes.append(class_ids.setdefault(cls, len(class_ids)))

        bits = B_WINDOW_ROOT if parent < 0 else 0
        if text.strip(_WS):
            bits |= B_HAS_TEXT
        if desc.strip(_WS):
            bits |= B_HAS_DESC
        if rid:
            bits |= B_HAS_RID
        if hint.strip(_WS):
            bits |= B_HAS_HINT
        if "EditText" in cls or "AutoCompleteTextView" in cls:
            bits |= B_EDITABLE
        if "WebView" in cls:
            bits |= B_WEBVIEW
        if "SurfaceView" in cls or "TextureView" in cls:
            bits |= B_SURFACE
        # A surface the class hides: Unity reports its SurfaceView as a plain android.view.View
        # with the id unitySurfaceView ("Game view"). Ids in either case of their first letter,
        # camel or snake: surfaceView, surface_view, TextureView, texture_view.
        if any(name in rid for name in _SURFACE_IDS):
            bits |= B_SURFACE
        if any(name in cls for name in _LIST_CLASSES):
            bits |= B_LIST
        for name, flag in _TRUE_FLAGS:
            if get(name) == "true":
                bits |= flag
        enabled = get("enabled")
        if enabled is not None and enabled != "true":
            bits |= B_DISABLED
        for name in ("visible-to-user", "displayed"):  # displayed: Appium's name for it
            visible = get(name)
            if visible is not None and visible != "true":
                bits |= B_INVISIBLE
        box = (0, 0, 0, 0)
        match = _BOUNDS.fullmatch(get("bounds") or "")
        if match:
            values = tuple(_int(v) for v in match.groups())
            if all(v is not None and abs(v) <= _BOUND_LIMIT for v in values):
                box = values  # type: ignore[assignment]
                bits |= B_HAS_BOUNDS
        boxes.append(box)
        bits_list.append(bits)
        draw = _small_int(get("drawing-order"), 0, 1_000_000)
        draws.append(-1 if draw is None else draw)

    n = len(parents)
    return (
        rotation,
        np.array(parents, dtype=np.int32),
        np.array(boxes, dtype=np.int32).reshape(n, 4),
        np.array(bits_list, dtype=np.int32),
        np.array(draws, dtype=np.int32),
        np.array(classes, dtype=np.int32),
        strings,
    )


B_DROPPED = 1 << 25
B_LAYOUT = 1 << 26
B_BLOCKER_MASK = B_CLICKABLE | B_LONG_CLICKABLE | B_WINDOW_ROOT


def tree_big_actions(
    box: I32, bits: I32, mask: int, width_px: int, height_px: int
) -> list[int]:
    """The nodes with any of ``mask`` in their bits and a box of at least half the screen's
    width and height, in document order (see the compiled twin)."""
    if len(box) != len(bits):
        raise ValueError("box and bits must have one row per node")
    rows = zip(bits.tolist(), box.tolist(), strict=True)
    return [
        i for i, (b, (left, top, right, bottom)) in enumerate(rows)
        if b & mask and 2 * (right - left) >= width_px and 2 * (bottom - top) >= height_px
    ]


def tree_structure(
    parent: I32, box: I32, bits: I32, draw: I32, width_px: int, height_px: int
) -> tuple[I32, I32, I32, I32, I32]:
    """Clip, classify and link the nodes of a RawTree (see the compiled twin)."""
    n = len(parent)
    parent_l = parent.tolist()
    box_l = box.tolist()
    bits_l = bits.tolist()
    draw_l = draw.tolist()
    clip: list[list[int]] = []
    out_bits = [0] * n
    owner = [-1] * n
    end = [0] * n
    for i in range(n):
        p = parent_l[i]
        v = bits_l[i]
        bl, bt, br, bb = box_l[i]
        left = max(bl, 0)
        top = max(bt, 0)
        right = max(min(br, width_px), left)
        bottom = max(min(bb, height_px), top)
        clip.append([left, top, right, bottom])
        if p >= 0 and out_bits[p] & B_INVISIBLE:
            v |= B_INVISIBLE
        if v & B_INVISIBLE or right - left <= 0 or bottom - top <= 0:
            v |= B_DROPPED
        else:
            if (left, top, right, bottom) != (bl, bt, br, bb):
                v |= B_PARTLY_OFFSCREEN
            if not v & (B_CONTENT_MASK | B_ACTION_MASK):
                v |= B_LAYOUT
        out_bits[i] = v
        if not v & B_DROPPED and v & B_ROOT_MASK:
            owner[i] = i
        elif p >= 0:
            owner[i] = owner[p]
        end[i] = i + 1
    for i in range(n - 1, -1, -1):
        p = parent_l[i]
        if p >= 0 and end[i] > end[p]:
            end[p] = end[i]
    children: dict[int, list[tuple[int, int]]] = {}
    for i in range(n):
        p = parent_l[i]
        siblings = children.setdefault(p, [])
        key = draw_l[i] if draw_l[i] >= 0 else len(siblings)
        siblings.append((key, i))
    rank = [0] * n
    stack = [i for _, i in reversed(sorted(children.get(-1, []), key=lambda kv: kv[0]))]
    k = 0
    while stack:
        i = stack.pop()
        rank[i] = k
        k += 1
        kids = sorted(children.get(i, []), key=lambda kv: kv[0])  # stable
        stack.extend(j for _, j in reversed(kids))
    return (
        np.array(clip, dtype=np.int32).reshape(n, 4),
        np.array(out_bits, dtype=np.int32),
        np.array(owner, dtype=np.int32),
        np.array(rank, dtype=np.int32),
        np.array(end, dtype=np.int32),
    )


B_LABEL_MASK = B_HAS_TEXT | B_HAS_DESC
B_BORROWER_MASK = B_CHECKABLE | B_EDITABLE
B_NAMED = 1 << 28
"""Set by the caller of :func:`tree_elements` on roots whose resource id is their label (see
``perception.tree.cluster``): such a control keeps its id rather than borrow a row's text."""
B_ITEM_ACTION_MASK = B_CLICKABLE | B_LONG_CLICKABLE
B_CHECK_STATE = B_CHECKABLE | B_CHECKED


def _named(strings: list[str], i: int, b: int, min_rid_chars: int) -> bool:
    """Is node ``i``'s label its resource id (no text, no description, an id whose part after
    the last "/" has ``min_rid_chars`` or more characters)? Such a list item's only action
    keeps its id rather than borrow the row's text."""
    if b & (B_HAS_RID | B_HAS_TEXT | B_HAS_DESC) != B_HAS_RID:
        return False
    rid = strings[i * NFIELDS + F_RID]
    return len(rid) - rid.rfind("/") - 1 >= min_rid_chars


def _pieces(b: int) -> int:
    """At most how many label pieces a node gives (its text and its description)."""
    if b & (B_DROPPED | B_PASSWORD):
        return 0
    return bool(b & B_HAS_TEXT) + bool(b & B_HAS_DESC)


def _text_only(b: int) -> bool:
    """A node whose one label piece is its text (no description), and that scrolls not: only
    such pieces join their neighbour on a line (see :func:`glued`)."""
    return (b & (B_LABEL_MASK | B_SCROLLABLE | B_DROPPED | B_PASSWORD)) == B_HAS_TEXT


def glued(a: list[int], c: list[int], leftward: bool = False) -> bool:
    """Does the text box ``c`` continue the text box ``a`` on its line: the same top and bottom
    (within a quarter of the lower box's height ``h``), ``c`` starting where ``a`` ends, from
    ``h / 2`` before it (glyph boxes overlap: a number drawn one digit per node) to ``h / 3``
    after it (a space: a quarter to a third of an em, an em most of a line's height)? Then the
    two are one label piece: ``perception.tree.cluster`` joins them, with a space unless they
    overlap. ``leftward``: the mirror case, ``c`` starting where ``a`` begins and running to
    the left (right-to-left text; see :func:`_continues`)."""
    h = min(a[3] - a[1], c[3] - c[1])
    if h <= 0:
        return False
    gap = a[0] - c[2] if leftward else c[0] - a[2]
    return (
        abs(a[1] - c[1]) * 4 <= h and abs(a[3] - c[3]) * 4 <= h
        and -h <= 2 * gap and 3 * gap <= h
    )


def _direction(text: str) -> int:
    """The direction of ``text``'s first strong character: 1 right to left (bidi class R or
    AL: Hebrew, Arabic, Syriac, Thaana, NKo, ...), 0 left to right (L), -1 none (digits,
    punctuation, symbols only)."""
    for ch in text:
        kind = unicodedata.bidirectional(ch)
        if kind == "L":
            return 0
        if kind == "R" or kind == "AL":
            return 1
    return -1


def _continues(box: list[list[int]], strings: list[str], glue: list[int], a: int, c: int) -> int:
    """Does the text of node ``c`` continue that of node ``a`` on its line (``a`` before it in
    document order, which is reading order): 1 to its right (:func:`glued`), 2 to its left,
    where the line is read right to left (``a`` itself continued a piece leftward, or the first
    strong character of ``a``'s text, else of ``c``'s, is right-to-left: "مرحبا" then "بكم" drawn
    at its left is one piece), 0 not. Left-to-right texts out of visual order stay apart. The
    text is looked at only when the boxes meet the mirror way, so LTR screens pay nothing."""
    if glued(box[a], box[c]):
        return 1
    if glued(box[a], box[c], True):
        if glue[a] == 2:
            return 2
        way = _direction(strings[a * NFIELDS + F_TEXT])
        if way < 0:
            way = _direction(strings[c * NFIELDS + F_TEXT])
        if way == 1:
            return 2
    return 0


ROW_SPAN = 4
"""A text whose middle is off a control's span is on its row only up to this many times as tall
as the control (three lines of summary beside a switch); a taller one is a page or a card
behind it (a WebView's node holds the page title and spans the page)."""


def _nearest_on_row(
    own: list[int], texts: list[int], box_of: list[list[int]], width_px: int
) -> int:
    """Of ``texts`` (candidate indices), the one on the row of the box ``own`` (the text's
    middle inside the control's vertical span, or the control's middle inside the span of a
    text at most ``ROW_SPAN`` times as tall) nearest to it across, within 60% of the screen's
    width; -1 if none. Where texts on the row stand over that one (across it, their middle
    above its top), the top one: a setting's title over its summary (the summary, wider, is
    nearer to a switch at the row's end)."""
    left, top, right, bottom = own
    best, best_gap = -1, width_px * 6 // 10
    row = []
    for t in texts:
        tl, tt, tr, tb = box_of[t]
        if not top <= (tt + tb) // 2 < bottom and not (
            tt <= (top + bottom) // 2 < tb and tb - tt <= ROW_SPAN * (bottom - top)
        ):
            continue
        row.append(t)
        gap = left - tr if tr <= left else (tl - right if tl >= right else 0)
        if gap < best_gap:
            best, best_gap = t, gap
    if best < 0:
        return best
    bl, bt, br, _ = box_of[best]
    title, title_top = best, bt
    for t in row:
        tl, tt, tr, tb = box_of[t]
        if tl < br and bl < tr and (tt + tb) // 2 < bt and tt < title_top:
            title, title_top = t, tt
    return title


LABEL_GAP = 3
"""A label over a field (:func:`_label_above`) ends at most the field's height divided by this
above it: 12-24 px over 130-170 px fields on the held-out forms, where a subtitle stood 66 px
over a 154 px field and a validation error 43 px over a 106 px one."""


def _label_above(own: list[int], texts: list[int], box_of: list[list[int]]) -> int:
    """Of ``texts`` (candidate indices), the label over the field ``own`` (a form's "Password"
    over its box): one line at most as tall as the field, its bottom at or above the field's
    top by at most :data:`LABEL_GAP` of the field's height (a label sits on its field; a
    form's subtitle or the error under the field before stands further off), its left edge
    (right-to-left: its right edge) within the field's height of the field's; the nearest up
    (the first of equals), -1 if none."""
    left, top, right, bottom = own
    height = bottom - top
    best, best_gap = -1, height // LABEL_GAP + 1
    for t in texts:
        tl, tt, tr, tb = box_of[t]
        if tb > top or tb - tt > height or (abs(tl - left) > height and abs(tr - right) > height):
            continue
        gap = top - tb
        if gap < best_gap:
            best, best_gap = t, gap
    return best


CAPTION_WIDTH = 3
"""A caption is at most this many times as wide as the icon above it (a quick menu's "Transfer"
under its circle; wider is a paragraph, not a name)."""


def _caption_below(own: list[int], texts: list[int], box_of: list[list[int]]) -> int:
    """Of ``texts`` (candidate indices), the caption under the box ``own`` (an icon over its
    name): its middle across inside the box's span, its top below the box's middle and at most
    the box's height under its bottom, at most ``CAPTION_WIDTH`` times as wide; the nearest
    down (the first of equals), -1 if none."""
    left, top, right, bottom = own
    height = bottom - top
    best, best_gap = -1, height + 1
    for t in texts:
        tl, tt, tr, tb = box_of[t]
        if not left <= (tl + tr) // 2 < right or 2 * tt < top + bottom:
            continue
        if tr - tl > CAPTION_WIDTH * (right - left):
            continue
        gap = max(0, tt - bottom)
        if gap < best_gap:
            best, best_gap = t, gap
    return best


def tree_elements(
    parent: I32,
    clip: I32,
    bits: I32,
    owner: I32,
    end: I32,
    width_px: int,
    max_pieces: int,
    container_area_px: int,
    page_area_px: int,
    strings: list[str],
    max_label_chars: int,
    min_rid_chars: int,
) -> tuple[I32, I32, I32, I32, I32, I32, list[str]]:
    """Choose the elements of a cleaned tree, what each absorbs and its label (see the compiled
    twin)."""
    n = len(parent)
    if len(strings) < n * NFIELDS:
        raise ValueError("strings needs NFIELDS entries per node")
    par = parent.tolist()
    box = clip.tolist()
    bit = bits.tolist()
    own = owner.tolist()
    ends = end.tolist()
    # Pieces each root would absorb (itself and the nodes it owns, nested roots left out).
    count = [0] * n
    # Nodes around a scroll area of a container's size (a page's list): a root around one is
    # a page, a container whatever its pieces.
    paged = [False] * n
    # Nodes around a root that takes presses (a control inside).
    holds = [False] * n
    for i in range(n - 1, -1, -1):
        b = bit[i]
        count[i] += _pieces(b)
        p = par[i]
        if p >= 0 and own[i] != i:
            count[p] += count[i]
        if p >= 0 and (holds[i] or (own[i] == i and b & B_ROOT_MASK and not b & B_DROPPED)):
            holds[p] = True
        if b & B_SCROLLABLE and not b & B_DROPPED:
            left, top, right, bottom = box[i]
            paged[i] = (right - left) * (bottom - top) >= container_area_px
        if p >= 0 and paged[i]:
            paged[p] = True
    # Who absorbs each node's text: a root that is no container; past its piece budget, none.
    absorber = [-1] * n  # the root the node's descendants feed
    elem_owner = [-1] * n  # the root whose element the node belongs to (-1: free)
    state = [0] * n  # the check state a row takes from its indicator
    last = [-1] * n  # per root: the last labelled node its label took (a glued text adds none)
    glue = [0] * n  # the node's text continues the label piece before it: 1 rightward, 2 leftward
    for i in range(n):
        p = par[i]
        up = absorber[p] if p >= 0 else -1
        b = bit[i]
        indicator = (
            own[i] == i and (b & B_ROOT_MASK) == B_CHECKABLE
            and up >= 0 and bit[up] & B_ITEM_ACTION_MASK
        )  # a check indicator inside a row that is clicked to toggle it: part of the row
        if indicator:
            state[up] |= b & B_CHECK_STATE
        elif own[i] == i:
            left, top, right, bottom = box[i]
            area = (right - left) * (bottom - top)
            container = bool(b & (B_SCROLLABLE | B_LIST)) or paged[i] or (
                count[i] > max_pieces and area >= container_area_px
            ) or (holds[i] and _pieces(b) > 0 and area >= page_area_px)
            elem_owner[i] = i
            absorber[i] = -1 if container else i
            count[i] = _pieces(b)  # from here on: the pieces absorbed so far
            last[i] = i if count[i] else -1
            continue
        elem_owner[i] = absorber[i] = up
        pieces = _pieces(b)
        if up >= 0 and pieces:
            prev = last[up]
            joins = (
                _continues(box, strings, glue, prev, i)
                if prev >= 0 and _text_only(b) and _text_only(bit[prev]) else 0
            )  # then the text goes on the last piece (a number drawn digit by digit)
            if not joins:
                count[up] += pieces
            if count[up] > max_pieces:
                elem_owner[i] = -1  # past the budget: static text of its own
            else:
                last[up] = i
                glue[i] = joins
    kind = [0] * n  # 1 root, 2 scrollable element, 4 free text (6: labelled free scrollable)
    index = [-1] * n
    window = [0] * n
    cand: list[int] = []
    for i in range(n):
        p = par[i]
        window[i] = i if p < 0 else window[p]
        b = bit[i]
        if b & B_DROPPED:
            continue
        o = elem_owner[i]
        if o == i:
            kind[i] = 1
        elif b & B_SCROLLABLE:
            if o < 0:
                kind[i] = 6 if b & B_LABEL_MASK else 2
            else:
                cx = (box[i][0] + box[i][2]) // 2
                cy = (box[i][1] + box[i][3]) // 2
                ol, ot, orr, ob = box[o]
                if cx < ol or cx >= orr or cy < ot or cy >= ob:
                    kind[i] = 2
        if kind[i] == 0 and o < 0 and b & B_LABEL_MASK and not b & B_LAYOUT:
            kind[i] = 4
        if kind[i]:
            index[i] = len(cand)
            cand.append(i)
    ncand = len(cand)
    remap = list(range(ncand))
    has_piece = [False] * ncand
    extra = [0] * ncand
    cbox = [list(box[i]) for i in cand]
    of_node = [-1] * n
    for i in range(n):
        if bit[i] & B_DROPPED:
            continue
        o = elem_owner[i]
        c = max(index[o] if o >= 0 else -1, index[i])
        of_node[i] = c
        if c >= 0 and bit[i] & B_LABEL_MASK and not bit[i] & B_PASSWORD:
            has_piece[c] = True
    texts = [k for k in range(ncand) if kind[cand[k]] == 4 and has_piece[k]]
    # 1. an unlabelled switch, checkbox or input borrows the static text on its row; an input
    # without a hint or a resource id, with none there, the label over it
    for k in range(ncand):
        i = cand[k]
        if kind[i] != 1 or has_piece[k] or not (bit[i] | state[i]) & B_BORROWER_MASK:
            continue
        free = [t for t in texts if remap[t] == t and window[cand[t]] == window[i]]
        best = _nearest_on_row(box[i], free, cbox, width_px)
        # no text has merged yet: cbox holds each candidate's own box
        if best < 0 and bit[i] & (B_EDITABLE | B_HAS_HINT | B_HAS_RID) == B_EDITABLE:
            best = _label_above(box[i], free, cbox)
        if best >= 0:
            remap[best] = k
            has_piece[k] = True
    # 2. an unlabelled wrapper with the box of a root inside it folds into that root
    for k in range(ncand):
        i = cand[k]
        if kind[i] != 1 or has_piece[k] or remap[k] != k:
            continue
        for j in range(i + 1, ends[i]):
            t = index[j]
            if t < 0 or kind[j] != 1 or remap[t] != t:
                continue
            if box[j] == box[i]:
                remap[k] = t
                extra[t] |= bit[i] | extra[k]
                extra[k] = 0
                break
    # 3. consecutive static texts of one container merge, up to the piece budget; the items of
    # a list view (its children: OneList's chips) never do, they are separate things, and a text
    # wholly above and to the right of the last one merged starts a new run (the next column of
    # a grid laid out column by column: a held-out horoscope's "❤️ | Aşk | %70 | 💼", the next
    # card's icon)
    head = -1
    head_pieces = 0
    tail = -1  # the node merged last
    for k in range(ncand):
        i = cand[k]
        if kind[i] != 4 or remap[k] != k or not has_piece[k]:
            head = -1
            continue
        pieces = _pieces(bit[i])
        p = par[i]
        if (
            head >= 0 and p >= 0 and p == par[cand[head]]
            and not bit[p] & B_LIST
            and (box[i][3] > box[tail][1] or box[i][0] < box[tail][2])
        ):
            joins = (
                _continues(box, strings, glue, tail, i)
                if _text_only(bit[i]) and _text_only(bit[tail]) else 0
            )
            if joins:
                pieces = 0
            if head_pieces + pieces > max_pieces:
                head = k
                head_pieces = pieces
                tail = i
                continue
            remap[k] = head
            head_pieces += pieces
            glue[i] = joins
            tail = i
            hb = cbox[head]
            hb[0], hb[1] = min(hb[0], box[i][0]), min(hb[1], box[i][1])
            hb[2], hb[3] = max(hb[2], box[i][2]), max(hb[3], box[i][3])
            continue
        head = k
        head_pieces = pieces
        tail = i
    # 4. the one unlabelled action of a list item borrows the static text on its row
    item = [-1] * n  # the list item a node is in: a child of a list that holds several
    children = [0] * n
    for i in range(n):
        p = par[i]
        if p >= 0:
            children[p] += 1
    for i in range(n):
        p = par[i]
        if p >= 0:
            item[i] = i if bit[p] & (B_SCROLLABLE | B_LIST) and children[p] > 1 else item[p]
    actions = [0] * n  # roots per list item (folded wrappers not counted)
    for k in range(ncand):
        i = cand[k]
        if kind[i] == 1 and remap[k] == k and item[i] >= 0:
            actions[item[i]] += 1
    # Named by a resource id that other items' actions share, an action's id tells it from
    # nothing (K PLUS's four "layout_quickBankingMenuCircle"): it borrows like an unnamed one.
    borrowers: list[tuple[int, bool]] = []
    shared: dict[str, int] = {}
    for k in range(ncand):
        i = cand[k]
        if (
            kind[i] != 1 or has_piece[k] or remap[k] != k or item[i] < 0
            or actions[item[i]] != 1 or not bit[i] & B_ITEM_ACTION_MASK
            or (bit[i] | state[i]) & (B_BORROWER_MASK | B_NAMED)
        ):
            continue
        named = _named(strings, i, bit[i], min_rid_chars)
        borrowers.append((k, named))
        if named:
            rid = strings[i * NFIELDS + F_RID]
            shared[rid] = shared.get(rid, 0) + 1
    for k, named in borrowers:
        i = cand[k]
        if named and shared[strings[i * NFIELDS + F_RID]] < 2:
            continue
        mine = [t for t in texts if remap[t] == t and item[cand[t]] == item[i]]
        best = _nearest_on_row(box[i], mine, cbox, width_px)
        if best < 0:
            best = _caption_below(box[i], mine, cbox)
        if best >= 0:
            remap[best] = k
            has_piece[k] = True
    new_id = [-1] * ncand
    keep = [k for k in range(ncand) if remap[k] == k and (kind[cand[k]] & 3 or has_piece[k])]
    for new, k in enumerate(keep):
        new_id[k] = new
    for k in range(ncand - 1, -1, -1):
        t = k
        while remap[t] != t:
            t = remap[t]
        if t != k:
            new_id[k] = new_id[t]
    m = len(keep)
    element_of_node = [new_id[c] if c >= 0 else -1 for c in of_node]
    labels: list[list[int]] = [[] for _ in range(m)]
    for i, e in enumerate(element_of_node):
        if e >= 0 and bit[i] & B_LABEL_MASK and not bit[i] & B_PASSWORD:
            labels[e].append(~i if glue[i] else i)
    start = [0]
    for group in labels:
        start.append(start[-1] + len(group))
    el_nodes = [cand[k] for k in keep]
    el_bits = [bit[cand[k]] | extra[k] | state[cand[k]] for k in keep]
    # A control not selected itself that absorbed a selected node without text (a tab's icon
    # or background) is selected; a selected text only runs its marquee.
    for i, e in enumerate(element_of_node):
        if (
            e >= 0 and bit[i] & (B_SELECTED | B_HAS_TEXT | B_DROPPED) == B_SELECTED
            and el_nodes[e] != i and el_bits[e] & B_ROOT_MASK
        ):
            el_bits[e] |= B_SELECTED
    return (
        np.array(el_nodes, dtype=np.int32),
        np.array(element_of_node, dtype=np.int32),
        np.array([cbox[k] for k in keep], dtype=np.int32).reshape(m, 4),
        np.array(el_bits, dtype=np.int32),
        np.array(start, dtype=np.int32),
        np.array([i for group in labels for i in group], dtype=np.int32),
        _labels(strings, el_nodes, el_bits, labels, box, max_label_chars, max_pieces),
    )


def _union_area(rects: list[tuple[int, int, int, int]]) -> int:
    """Area of the union of ``rects`` (non-empty ``left, top, right, bottom``), by vertical
    slabs between their left and right edges."""
    xs = sorted({x for r in rects for x in (r[0], r[2])})
    total = 0
    for x0, x1 in zip(xs, xs[1:], strict=False):
        spans = sorted((r[1], r[3]) for r in rects if r[0] <= x0 and r[2] >= x1)
        if not spans:
            continue
        covered = 0
        top, bottom = spans[0]
        for t, b in spans[1:]:
            if t > bottom:
                covered += bottom - top
                top, bottom = t, b
            elif b > bottom:
                bottom = b
        covered += bottom - top
        total += covered * (x1 - x0)
    return total


class _BlockerGrid:
    """The blockers in the cells of a grid, so that an element meets only those whose boxes
    reach its own (the compiled twin builds the same grid). Each cell lists its blockers latest
    drawn first, so ``around`` stops at the first drawn before the element: a Python loop per
    element and blocker took a minute on a dump of 50,000 sibling buttons. ``around`` gives each
    blocker drawn after the element that can overlap it once (the caller tests the overlap), in
    another order than the scan's: what the caller finds does not depend on the order."""

    PLAIN_SCAN_MAX = 64
    """Up to this many blockers (every real screen of the corpus) the plain scan is cheaper
    than building the grid."""
    MAX_SIDE = 256
    """At most this many cells a side."""
    WIDE_CELLS = 64
    """A blocker over more cells (and more than a grid row or column) is met by every element."""

    def __init__(self, blockers: list[tuple[int, list[int]]], rank: list[int]) -> None:
        self.blockers = blockers
        self.rank = rank
        areas = [j for j, (_, (bl, bt, br, bb)) in enumerate(blockers) if br > bl and bb > bt]
        self.all = len(blockers) <= self.PLAIN_SCAN_MAX or not areas
        if self.all:
            return
        self.x0 = x0 = min(blockers[j][1][0] for j in areas)
        self.y0 = y0 = min(blockers[j][1][1] for j in areas)
        width = max(blockers[j][1][2] for j in areas) - x0
        height = max(blockers[j][1][3] for j in areas) - y0
        side = 1  # square cells, a power of two a side: about one per blocker
        while side < 1 << 30 and side * side * len(blockers) < width * height:
            side *= 2
        self.cw = self.ch = side
        self.nx = -(-width // side)
        if self.nx > self.MAX_SIDE:
            self.cw = -(-width // self.MAX_SIDE)
            self.nx = -(-width // self.cw)
        self.ny = -(-height // side)
        if self.ny > self.MAX_SIDE:
            self.ch = -(-height // self.MAX_SIDE)
            self.ny = -(-height // self.ch)
        wide_max = max(self.WIDE_CELLS, self.nx, self.ny)
        self.cells: list[list[int]] = [[] for _ in range(self.nx * self.ny)]
        self.wide: list[int] = []
        for j in sorted(areas, key=lambda j: (rank[blockers[j][0]], j), reverse=True):
            xs, ys = self._span(blockers[j][1])
            if len(xs) * len(ys) > wide_max:
                self.wide.append(j)
                continue
            for gy in ys:
                for gx in xs:
                    self.cells[gy * self.nx + gx].append(j)

    def _span(self, box: list[int]) -> tuple[range, range]:
        """The cells (clamped to the grid) that the pixels of ``box`` (with an area) fall in."""
        def cell(v: int, origin: int, side: int, cells: int) -> int:
            return 0 if v <= origin else min((v - origin) // side, cells - 1)

        left, top, right, bottom = box
        x0, cw, nx, y0, ch, ny = self.x0, self.cw, self.nx, self.y0, self.ch, self.ny
        return (
            range(cell(left, x0, cw, nx), cell(right - 1, x0, cw, nx) + 1),
            range(cell(top, y0, ch, ny), cell(bottom - 1, y0, ch, ny) + 1),
        )

    def around(self, e: int, box: list[int]) -> Iterator[tuple[int, list[int]]]:
        """The blockers drawn after node ``e`` that can overlap ``box`` (with an area)."""
        rank, blockers, own = self.rank, self.blockers, self.rank[e]
        if self.all:
            yield from (bl for bl in blockers if rank[bl[0]] > own)
            return
        xs, ys = self._span(box)
        seen: set[int] = set()
        for run in (self.wide, *(self.cells[gy * self.nx + gx] for gy in ys for gx in xs)):
            for j in run:
                if rank[blockers[j][0]] <= own:
                    break
                if j not in seen:
                    seen.add(j)
                    yield blockers[j]


MAX_FREE_PARTS = 64
"""An action whose centre is covered gets a tap box (the largest free part of its box) only
when at most this many covers overlap it; with more it is occluded. The search is cubic in
the covers (802 nodes took 20 s in the pure-Python twin); a real screen has at most 25."""


def _largest_free(
    box: list[int], rects: list[tuple[int, int, int, int]]
) -> tuple[int, int, int, int]:
    """The largest rectangle of ``box`` that none of ``rects`` (inside it) overlaps: a histogram
    of free heights per column, row by row, over the grid their edges cut. Of equal areas the
    first found (the topmost of the lowest rows scanned first, then leftmost) wins."""
    left, top, right, bottom = box
    xs = sorted({left, right, *(x for r in rects for x in (r[0], r[2]))})
    ys = sorted({top, bottom, *(y for r in rects for y in (r[1], r[3]))})
    cols = len(xs) - 1
    column = {x: c for c, x in enumerate(xs)}
    # the columns a rect covers: from its left edge's to its right edge's (both grid lines)
    spans = [(r[1], r[3], column[r[0]], column[r[2]]) for r in rects]
    height = [0] * cols
    best = 0
    found = (left, top, left, top)
    for y0, y1 in zip(ys, ys[1:], strict=False):
        covered = [False] * cols
        for r_top, r_bottom, first_col, end_col in spans:
            if r_top <= y0 and r_bottom >= y1:
                covered[first_col:end_col] = [True] * (end_col - first_col)
        for c in range(cols):
            height[c] = 0 if covered[c] else height[c] + y1 - y0
        stack: list[tuple[int, int]] = []  # (first column, height), heights increasing
        for c in range(cols + 1):
            h = height[c] if c < cols else 0
            first = c
            while stack and stack[-1][1] >= h:
                s, sh = stack.pop()
                area = sh * (xs[c] - xs[s])
                if area > best:
                    best = area
                    found = (xs[s], y1 - sh, xs[c], y1)
                first = s
            stack.append((first, h))
    return found


def tree_tap_boxes(
    boxes: I32, takes: I32, search: I32, nodes: I32, rank: I32, end: I32, max_parts: int
) -> tuple[npt.NDArray[np.int8], I32]:
    """For each element ``search[q]`` (of the elements ``nodes``, in document order, with their
    ``boxes``), the largest part of its box clear of the actions over it: every element that
    takes presses (``takes``), drawn later (``rank`` of its node higher), not around it (its
    node's subtree, to ``end``, not holding the searched one's node) and overlapping its box,
    clipped to it. Returns ``(crowded int8[s], free int32[s, 4])``: crowded 1 when more than
    ``max_parts`` actions are over it (no part searched), else ``free`` holds the part, as
    :func:`_largest_free` finds it."""
    m, n = len(nodes), len(rank)
    if boxes.shape != (m, 4) or len(takes) != m:
        raise ValueError("boxes and takes need one entry per element")
    if len(end) != n:
        raise ValueError("rank and end need one entry per node")
    box_l, takes_l, search_l = boxes.tolist(), takes.tolist(), search.tolist()
    node_l, rank_l, end_l = nodes.tolist(), rank.tolist(), end.tolist()
    if any(not 0 <= v < n for v in node_l):
        raise ValueError("element nodes must be in [0, node count)")
    if any(not 0 <= v < m for v in search_l):
        raise ValueError("searched elements must be in [0, element count)")
    crowded = np.zeros(len(search_l), dtype=np.int8)
    free = np.zeros((len(search_l), 4), dtype=np.int32)
    for q, k in enumerate(search_l):
        ol, ot, o_r, ob = box_l[k]
        nk = node_l[k]
        rk = rank_l[nk]
        parts = []
        for j in range(m):
            if not takes_l[j]:
                continue
            nj = node_l[j]
            if rank_l[nj] <= rk or nj <= nk < end_l[nj]:
                continue
            left, top, right, bottom = box_l[j]
            if left < o_r and right > ol and top < ob and bottom > ot:
                parts.append(
                    (max(left, ol), max(top, ot), min(right, o_r), min(bottom, ob))
                )
        if len(parts) > max_parts:
            crowded[q] = 1
            continue
        free[q] = _largest_free(box_l[k], parts)
    return crowded, free


def _open_drawers(
    layouts: list[int], bits: list[int], rank: list[int], end: list[int], parent: list[int],
) -> list[tuple[int, int]]:
    """The open drawers of the DrawerLayouts ``layouts`` as ``(drawer, layout)``: a child of a
    layout that is kept other than its first drawn (the content; a closed drawer is invisible
    or off the screen, so dropped)."""
    n = len(bits)
    out: list[tuple[int, int]] = []
    seen: set[int] = set()  # a layout listed twice finds its drawers once
    for p in layouts:
        if not 0 <= p < n:
            raise ValueError("drawer layouts must be nodes: in [0, node count)")
        if bits[p] & B_DROPPED:
            continue
        kids = [i for i in range(p + 1, end[p]) if parent[i] == p]
        if len(kids) < 2:
            continue
        content = min(kids, key=rank.__getitem__)
        for i in kids:
            if i != content and not bits[i] & B_DROPPED and i not in seen:
                seen.add(i)
                out.append((i, p))
    return out


def tree_visibility(
    clip: I32,
    bits: I32,
    rank: I32,
    end: I32,
    parent: I32,
    class_id: I32,
    nodes: I32,
    boxes: I32,
    cover_num: int,
    cover_den: int,
    keep: int,
    min_run: int,
    slack_px: int,
    drawer_layouts: I32 | None = None,
    min_side_px: int = 0,
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.int8], I32, I32, I32]:
    """Occlusion, tap boxes, list-run truncation of the elements and the open drawers (see the
    compiled twin)."""
    clip_l = clip.tolist()
    rank_l = rank.tolist()
    end_l = end.tolist()
    par = parent.tolist()
    cls = class_id.tolist()
    bits_l = bits.tolist()
    node_l = nodes.tolist()
    box_l = boxes.tolist()
    scrim_l = [-1] * len(bits_l)
    drawers = []
    if drawer_layouts is not None:
        drawers = _open_drawers(drawer_layouts.tolist(), bits_l, rank_l, end_l, par)
        for d, p in drawers:
            scrim_l[d] = p
    # each blocker with the box it covers: its own, or an open drawer's DrawerLayout's (scrim)
    blockers = [
        (i, clip_l[s] if s >= 0 else clip_l[i])
        for i, (v, s) in enumerate(zip(bits_l, scrim_l, strict=True))
        if (v & B_BLOCKER_MASK or s >= 0) and not v & B_DROPPED
    ]
    m = len(node_l)
    occluded = [0] * m
    tap = [list(b) for b in box_l]
    near = _BlockerGrid(blockers, rank_l)
    for k, e in enumerate(node_l):
        el, et, er, eb = clip_l[e]
        area = (er - el) * (eb - et)
        if area <= 0:
            continue
        cx, cy = (el + er) // 2, (et + eb) // 2
        parts: list[tuple[int, int, int, int]] = []
        total = 0
        centre = False
        for b, (bl, bt, br, bb) in near.around(e, clip_l[e]):
            if e <= b < end_l[e] or b <= e < end_l[b]:
                continue
            part = (max(el, bl), max(et, bt), min(er, br), min(eb, bb))
            if part[2] <= part[0] or part[3] <= part[1]:
                continue
            covered = (part[2] - part[0]) * (part[3] - part[1])
            if covered * cover_den >= area * cover_num:
                occluded[k] = 1
                break
            parts.append(part)
            total += covered
            centre = centre or (bl <= cx < br and bt <= cy < bb)
        if occluded[k] or not parts:
            continue
        if total * cover_den >= area * cover_num and (
            _union_area(parts) * cover_den >= area * cover_num
        ):
            occluded[k] = 1
        elif centre and bits_l[e] & B_ROOT_MASK and len(parts) > MAX_FREE_PARTS:
            occluded[k] = 1
        elif centre and bits_l[e] & B_ROOT_MASK:
            fl, ft, fr, fb = _largest_free(clip_l[e], parts)
            if fr - fl >= max(min_side_px, 1) and fb - ft >= max(min_side_px, 1):
                tap[k] = [fl, ft, fr, fb]
            else:
                occluded[k] = 1
    visible = [k for k in range(m) if not occluded[k]]
    hidden = [0] * m
    more = [0] * m
    # Only a run the user can scroll is cut short: its container is scrollable or inside one.
    scrolls = [False] * len(par)
    for i, v in enumerate(bits_l):
        p = par[i]
        scrolls[i] = bool(v & B_SCROLLABLE) or (p >= 0 and scrolls[p])

    def key(k: int) -> tuple[int, int, int, int]:
        left, top, right, bottom = box_l[k]
        return par[node_l[k]], cls[node_l[k]], max(0, right - left), max(0, bottom - top)

    start = 0
    while start < len(visible):
        group, kind, width, height = key(visible[start])
        i = start + 1
        while i < len(visible):
            g, c, w, h = key(visible[i])
            if g != group or c != kind or abs(w - width) > slack_px or abs(h - height) > slack_px:
                break
            i += 1
        length = i - start
        if length > keep and length >= min_run and group >= 0 and scrolls[group]:
            for k in visible[start + keep : i]:
                hidden[k] = 1
            more[visible[start + keep - 1]] = length - keep
        start = i
    return (
        np.array(occluded, dtype=np.int8),
        np.array(hidden, dtype=np.int8),
        np.array(more, dtype=np.int32),
        np.array(tap, dtype=np.int32).reshape(m, 4),
        np.array(drawers, dtype=np.int32).reshape(len(drawers), 2),
    )


# --- labels --------------------------------------------------------------------------------------
# What ``tree_elements`` chose as each element's label nodes, turned into its label text (see
# perception.tree.cluster for the rules). Strings in, strings out: the compiled twin runs the same
# steps without the interpreter's per-call cost (the cluster stage's largest share).

LABEL_SEP = " | "
_XML_WS = re.compile("[ \t\n\r]+")
_EMPTY_FIELDS = re.compile(",(?: ,)+")
"""A run of empty fields in a comma-joined summary (Gmail's conversation row says ", , , Ann, ,
Subject, ..." for its unset flags): one comma."""
# Bidirectional formatting characters (LRM, RLM, ALM, embeddings, isolates): apps wrap numbers
# and names in them ("\u2068570532300\u2069"). Invisible, they only cost tokens and break text
# matching against OCR.
_BIDI = dict.fromkeys(
    (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)), None
)
# Tag characters (U+E0000-E007F) are invisible and spell ASCII: "ASCII smuggling" hides an
# instruction in a label that a person reading the screen or the transcript never sees, while a
# model reads it. Only an emoji tag sequence (a black flag, tags, CANCEL TAG: Scotland's flag)
# draws something; every other tag character is dropped.
_TAGS = re.compile("(\U0001F3F4[\U000E0020-\U000E007E]+\U000E007F)|[\U000E0000-\U000E007F]")
# C1 control characters (U+0080-U+009F: U+009B is the 8-bit CSI of a terminal's escape sequences,
# U+0085 a line break) and the line and paragraph separators: a space, as the C0 controls are
# (XML refuses those, the repair replaces them), never raw into the prompt or a terminal.
_CONTROLS = dict.fromkeys((*range(0x80, 0xA0), 0x2028, 0x2029), " ")
_CONTROL = re.compile("[\x80-\x9f\u2028\u2029]")
_PRIVATE = "\ue000-\uf8ff\U000f0000-\U000ffffd\U00100000-\U0010fffd"
_PRIVATE_USE = re.compile(f"[{_PRIVATE}]")
# An icon font's glyphs (private use) at a piece's ends, with the spaces beside them: Weibo's
# "找回密码 \ue000" (an arrow), a point-of-sale app's "\U000f11d5 Mang Về". A piece of glyphs
# alone is left whole: the junk rule drops it (perception.tree.cluster.junk_piece).
_PRIVATE_ENDS = re.compile(f"^[ {_PRIVATE}]+|[ {_PRIVATE}]+$")
_MARKS = ("Mn", "Me", "Mc")


def _flag_only(match: re.Match[str]) -> str:
    return match.group(1) or ""


def _said_once(text: str) -> str:
    """A text whose lines, blank ones aside, are one line said two times or more (Flutter
    merging a button's label with its own text's: ``"SCAN QR INSTEAD\\nSCAN QR INSTEAD"``) as
    that line once; any other text as it is (a dialog's ``"Car Dock\\nCar Dock\\n1"`` shows
    all three)."""
    said = [line for line in (part.strip(_WS) for part in text.split("\n")) if line]
    if len(said) < 2 or any(line != said[0] for line in said):
        return text
    return said[0]


def label_piece(text: str, limit: int) -> str:
    """Bidi marks and tag characters (but a flag's) dropped, a line repeated on every line said
    once (:func:`_said_once`), white space collapsed (XML's four characters, as the kernels
    count it), empty fields of a comma-joined summary dropped (", ,
    , Ann, , Subject" is "Ann, Subject"), icon-font glyphs at its ends dropped (private use,
    :data:`_PRIVATE_ENDS`, unless nothing else is left), then, when over half as long again as
    ``limit``, cut with an ellipsis: at the end of the word the limit falls in if it ends within
    a quarter of the limit, else after ``limit`` characters, which stay whole. A piece a little
    over the limit stays whole: cutting it would save a word and lose it ("Preview the file
    FB_IMG_1737214499032.jp…")."""
    private = False
    if not text.isascii():
        text = text.translate(_BIDI)
        if max(text, default="") >= "\U000E0000":
            text = _TAGS.sub(_flag_only, text)
        if _CONTROL.search(text):
            text = text.translate(_CONTROLS)
        private = _PRIVATE_USE.search(text) is not None
    if "\n" in text:
        text = _said_once(text)
    if "  " in text or "\n" in text or "\t" in text or "\r" in text:  # else nothing to collapse
        text = _XML_WS.sub(" ", text)
    if ", ," in text:
        text = _EMPTY_FIELDS.sub(",", text)
    text = text.strip(" ")
    if text[:1] == ",":
        text = text[1:].lstrip(" ")  # the summary's first field was empty
    if private:
        text = _PRIVATE_ENDS.sub("", text) or text
    if len(text) <= limit + limit // 2:
        return text
    cut = text.find(" ", limit, limit + limit // 4 + 1)
    if cut < 0:
        cut = limit
    while cut > 0 and _joined(text, cut):
        cut -= 1
    return text[: cut or limit] + "…"


def _is_regional(ch: str) -> bool:
    return "\U0001f1e6" <= ch <= "\U0001f1ff"


def _joined(text: str, at: int) -> bool:
    """Do ``text[at - 1]`` and ``text[at]`` belong to one character as drawn (a grapheme
    cluster)? A cut there would leave half of it: a woman for a family emoji (ZWJ sequences), a
    letter for a flag (regional indicators go in pairs), a letter without its accent
    (combining marks), a heart without its emoji style (variation selectors), a hand without
    its skin tone (modifiers), a flag's tag characters."""
    ch, before = text[at], text[at - 1]
    if before == "\u200d" or ch == "\u200d":
        return True
    code = ord(ch)
    if (
        0xFE00 <= code <= 0xFE0F or 0x1F3FB <= code <= 0x1F3FF or 0xE0020 <= code <= 0xE007F
        or 0xE0100 <= code <= 0xE01EF or unicodedata.category(ch) in _MARKS
    ):
        return True
    if _is_regional(ch) and _is_regional(before):
        run = 0  # regional indicators before the cut: an odd run leaves half a flag
        while at - run - 1 >= 0 and _is_regional(text[at - run - 1]):
            run += 1
        return run % 2 == 1
    return False


def unspelled(piece: str) -> str:
    """``piece`` without the spaces of a screen reader's letter-by-letter spelling ("5 7 0 5 3
    2 3 0 0", the description of a number shown as "570532300"), else ``piece`` itself."""
    if len(piece) < 5 or piece[1] != " " or piece[1::2].strip(" ") or " " in piece[::2]:
        return piece
    return piece[::2]


def _add_piece(pieces: list[str], piece: str) -> None:
    """Add a label piece unless another piece already says it; a longer piece that contains
    an earlier one replaces it ("Pictures" then "Pictures, Tab 1 of 2." keeps the latter). A
    piece spelled letter by letter is the piece it spells ("570532300" and "5 7 0 5 3 2 3 0
    0" are one piece); one in other capitals than another is that one ("Advanced" described,
    "ADVANCED" drawn all in capitals: the first is kept). A piece cut short (with an ellipsis)
    neither swallows nor is swallowed: "Settings" inside
    "de.szalkowski.activitylauncher.Settings.…" is still the visible title."""
    if not piece:
        return
    if not pieces:  # the first piece (most labels have one): nothing to compare
        pieces.append(piece)
        return
    key = unspelled(piece)
    cut = piece[-1] == "…"
    for k, have in enumerate(pieces):
        if cut or have[-1] == "…":
            if have == piece:
                return
            continue
        have_key = unspelled(have)
        if key in have_key:
            return
        if have_key in key:
            pieces[k] = key
            return
        if len(key) == len(have_key) and key.casefold() == have_key.casefold():
            return  # the same words in other capitals ("Advanced" and "ADVANCED")
    pieces.append(piece)


_XML_SPACE = frozenset(" \t\n\r")


def _unspaced(ch: str) -> bool:
    """A character of a script written without spaces between words: CJK punctuation, kana,
    ideographs and full-width forms (not Hangul: Korean puts spaces between words)."""
    return "\u3000" <= ch <= "\u9fff" or "\uf900" <= ch <= "\ufaff" or "\uff00" <= ch <= "\uffef"


def _join_glued(raw: str, prev_raw: str, overlap: bool) -> str:
    """The separator between a text and the one it continues on its line (see
    :func:`glued`): none when their boxes overlap (one number drawn digit by digit) or both
    sides are Chinese or Japanese (written without spaces: a link inside a sentence), else a
    space ("30.7" beside "°C", "MON" beside "TUE")."""
    before, after = prev_raw[-1:], raw[:1]
    if before in _XML_SPACE or after in _XML_SPACE:
        return " "
    if overlap or (_unspaced(before) and _unspaced(after)):
        return ""
    return " "


_WORD = re.compile(r"\w+")
SUMMARY_MAX_CHARS = 1000
"""A longer text or description is no summary of a row (Gmail's are 100-300 characters): the
rule's look for each part in it would cost a copy of it a part (a hostile 4 MB row text over
200 one-letter texts took 0.56 s)."""
SUMMARY_RESIDUE_CHARS = 2
"""A summary's words left over once its parts are taken out are connectors ("on" before Gmail's
date) when none is longer than this."""


def summarises(value: str, others: list[str]) -> bool:
    """Does ``value``, an element's own text or description, say the texts ``others`` of the
    nodes its label reads (two or more) and nothing else, but punctuation and words of at most
    :data:`SUMMARY_RESIDUE_CHARS` characters? Each is looked for once, case and white space
    aside. Gmail's conversation row's text is such a summary (``", , , Ann, , Lunch, See you at
    noon, ,  on Mar 10"`` over the sender, subject, snippet and date it holds): cut to a label
    piece it only repeated them. An unread row's (``"Unread, ..."``) says more and stays."""
    if len(others) < 2:
        return False
    rest = " ".join(value.split()).casefold()
    for other in others:
        key = " ".join(other.split()).casefold()
        at = rest.find(key)
        if at < 0:
            return False
        rest = rest[:at] + " " + rest[at + len(key) :]
    return all(len(word) <= SUMMARY_RESIDUE_CHARS for word in _WORD.findall(rest))


def _summary_fields(
    strings: list[str], node: int, group: list[int], limit: int
) -> tuple[bool, bool]:
    """Whether the element's own node ``node``, first of its label nodes ``group`` and not
    continued on its line, has a text and a description that only summarise the others
    (:func:`summarises`) and are cut as label pieces (``limit``), at most
    :data:`SUMMARY_MAX_CHARS` long: those are left out of the label, their parts said whole
    after them. (A summary the label holds whole says its parts already: they are left out as
    pieces it contains.)"""
    if len(group) < 3 or group[0] != node or group[1] < 0:
        return False, False
    at = node * NFIELDS
    text, desc = strings[at + F_TEXT], strings[at + F_DESC]
    most = limit + limit // 2  # no shorter value is cut (label_piece)
    long_text = most < len(text) <= SUMMARY_MAX_CHARS
    long_desc = most < len(desc) <= SUMMARY_MAX_CHARS
    if not long_text and not long_desc:
        return False, False
    others = [
        value
        for label_node in group[1:]
        for value in (
            strings[(label_node if label_node >= 0 else ~label_node) * NFIELDS + F_TEXT],
            strings[label_node * NFIELDS + F_DESC] if label_node >= 0 else "",
        )
        if value.split()
    ]
    return (
        long_text and summarises(text, others) and label_piece(text, limit)[-1:] == "\u2026",
        long_desc and summarises(desc, others) and label_piece(desc, limit)[-1:] == "\u2026",
    )


def _labels(
    strings: list[str], nodes: list[int], bits: list[int], groups: list[list[int]],
    box: list[list[int]], limit: int, cap: int,
) -> list[str]:
    """The label of each element (its node, bits and label nodes ``groups`` as
    :func:`tree_elements` chose them; ``box`` the nodes' boxes; ``strings`` the dump's,
    ``NFIELDS`` a node): the text and description of its label nodes as pieces, each cut at
    ``limit`` characters (:func:`label_piece`), a piece another already says left out, at most
    ``cap`` pieces joined by ``" | "``. A label node ``~node`` continues the piece before it on
    its line and joins it (:func:`_join_glued`). An input with no label shows its hint."""
    out: list[str] = []
    for node, b, group in zip(nodes, bits, groups, strict=True):
        own: list[str] = []
        drop = _summary_fields(strings, node, group, limit)
        if group and min(group) < 0:
            _add_glued(own, group, strings, box, limit, drop)
        else:
            for label_node in group:
                at = label_node * NFIELDS
                text, desc = strings[at + F_TEXT], strings[at + F_DESC]
                if label_node == node:
                    text, desc = ("" if drop[0] else text), ("" if drop[1] else desc)
                for value in (text, desc):
                    if value:
                        _add_piece(own, label_piece(value, limit))
        if not own and b & B_EDITABLE and b & B_HAS_HINT:
            own.append(label_piece(strings[node * NFIELDS + F_HINT], limit))
        # tree_elements gives at most ``cap`` label nodes, but a node's own text and
        # description make two pieces when the cap is 1: the cut holds the cap to its word.
        out.append(LABEL_SEP.join(own[:cap]) if len(own) > 1 else (own[0] if own else ""))
    return out


def _add_glued(
    own: list[str], group: list[int], strings: list[str], box: list[list[int]], limit: int,
    drop: tuple[bool, bool] = (False, False),
) -> None:
    """The label pieces of ``group``, where ``~node`` marks a node whose text continues the one
    before it on its line: such texts join that piece, each cut on its own. A joined piece is
    then held to ``limit`` as one text is (:func:`label_piece`): it takes no more parts once
    over half as long again as the limit (what follows could not outlast the cut) or once it
    has that many parts (a thousand digits side by side are one row of at most 60 characters,
    not of 5,000)."""
    most = limit + limit // 2
    values: list[str] = []
    parts = 0  # the parts of values[-1]
    prev, prev_raw = -1, ""
    for k, label_node in enumerate(group):
        if label_node < 0:
            node = ~label_node
            raw = strings[node * NFIELDS + F_TEXT]
            if not values:  # nothing before it to continue (strings that say less than the bits)
                values.append(label_piece(raw, limit))
                parts = 1
            elif parts < most and len(values[-1]) <= most:
                a, c = box[prev], box[node]
                overlap = c[0] < a[2] if glued(a, c) else c[2] > a[0]  # else it runs leftward
                values[-1] += _join_glued(raw, prev_raw, overlap) + label_piece(raw, limit)
                parts += 1
            prev, prev_raw = node, raw
            continue
        at = label_node * NFIELDS
        text, desc = strings[at + F_TEXT], strings[at + F_DESC]
        if k == 0:  # the element's own node, when it summarises the rest (_summary_fields)
            text, desc = ("" if drop[0] else text), ("" if drop[1] else desc)
        for value in (text, desc):
            if value:
                values.append(label_piece(value, limit))
                parts = 1
        prev, prev_raw = label_node, text
    for value in values:
        _add_piece(own, label_piece(value, limit) if len(value) > most else value)
