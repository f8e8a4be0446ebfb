"""Stage 3: cluster. Turn cleaned nodes into elements.

An aggregation root (clickable, long-clickable, checkable, or editable node) absorbs the text
and descriptions of its descendants that are not roots themselves, so one "Save" button is one
element, not three. Icon-only roots keep their content-desc or resource id as a label. Text
nodes without a root above them become static text; scrollable containers become list elements
so the model knows it can scroll (inside a root only when the root's box misses their centre).

No text is dropped to fit a label. A label holds at most ``max_label_pieces`` pieces (the text
and the description of a node count as one each, before duplicates are merged), and:

- a root that is a container absorbs nothing: it stays an element with its own text, its
  description or its resource id, and what is inside stays static text and elements of its own
  (rows keep their identity). A container is a scrollable root, a list or scroll class
  (ListView, GridView, RecyclerView, ScrollView; long-clickable lists often are not
  scrollable), a root with more pieces than a label holds covering at least a quarter of
  the screen (a clickable page, card stack or dialog body: on the corpus these cover 28-100%
  of the screen, while rows with that much text, such as a search result with six lines,
  cover 3-23%), or a root around a scroll area of at least a quarter of the screen, whatever
  its pieces (a page: Futu's history list inside a full-screen clickable root read its four
  section dates as one label at the middle of the screen, and the list, whose middle the root
  held, was no element);
- a smaller root with more pieces (a row) keeps the first ones, in document order, as its
  label; the nodes after them are static text inside it;
- a checkbox, switch or radio button that is not clickable itself, inside a clickable root
  that absorbs, is that row's indicator (a CheckBoxPreference or SwitchPreference, a choice in
  a list dialog: the row is clicked to toggle it): no element of its own, the row absorbs its
  text and takes its checkable and checked state and its kind (``check "Dark theme | Restart
  to apply" on`` rather than a row without a state beside an unnamed ``[checkbox]``);
- a text that continues the last piece on its line (``fastpath.tree_elements``' ``glued``:
  the same top and bottom, starting from half its height before that piece's end to a third
  after it, or on a right-to-left line the mirror of that, to its left) is part of that piece
  and counts as none: a number drawn one digit per node is
  one piece, "132 8432 6985", joined as drawn (nothing between overlapping boxes or Chinese
  and Japanese text, else a space), not four of "1 | 3 | 2 | 8".

A piece over half as long again as ``max_label_chars`` is cut at the end of the word that
limit falls in (within a quarter of it; else at the limit, never inside a character as drawn),
with an ellipsis. A piece another piece of the label says is dropped ("Pictures" beside
"Pictures, Tab 1 of 2."), but not when either was cut (what was cut may not say it: the
title "Settings" beside a class name cut to "de.szalkowski.activitylauncher.Settings.…"), and a
screen reader's letter-by-letter spelling is the piece it spells. A root's own text or
description that only summarises the texts it absorbed, and is cut, is left out: its parts say
it whole (Gmail's conversation row; ``summarises`` in the kernels' twin).

A root that is not selected itself but absorbed a selected node without text (a tab bar
selects the tab's icon or background) is selected. A selected text is not enough: TextViews are
selected to run their marquee (QQ Music's song and page titles, WhatsApp's status line).

Then, in one kernel (``fastpath.tree_elements``, with the dump's strings):

1. an unlabelled switch, checkbox or input borrows the static text on its row (settings rows
   often put the title in a plain TextView and the switch in a clickable of its own);
2. an unlabelled clickable wrapper with the same box as a root inside it folds into that root,
   which keeps the wrapper's flags;
3. consecutive static texts of one container (a card's title and body) merge, boxes united,
   while the merged label stays within ``max_label_pieces`` pieces (then a new one starts),
   texts on one line as above; the items of a list view (its children: OneList's chips) never
   merge, they are separate things;
4. the one action of a list item (a child of a list or scrollable node that holds several),
   clickable, unlabelled and without a resource id to show, borrows the (merged) static text
   on its row: a contact list whose rows are a select icon and a name in a plain TextView
   (WeWork) offers "Alice" where the icon is, instead of an empty button beside a text that
   the id-only prompt cannot place. A row with two actions lends nothing (which is "Alice"?).
   When nothing is on its row, the caption under it is lent (an icon over its name: its middle
   inside the icon's span, its top below the icon's middle and at most the icon's height
   below, at most three times as wide). A resource id that the other items' actions share
   tells the model nothing (K PLUS's four "layout_quickBankingMenuCircle"): such an action
   borrows as an unnamed one does;
5. each element's label text is built from its pieces as above, and its selected state from a
   quiet selected node inside (compiled: the interpreter's per-call cost was a third of the
   pipeline while this loop ran in Python).

Homogeneous runs of list items (same container, class and size) inside a scrollable node are
truncated to the first ``list_keep`` items plus a count of the rest (in
``fastpath.tree_visibility``, see occlusion). A keypad or grid that does not scroll is shown
whole: the items cut from it could not be scrolled to.

Not offered either: a static row of punctuation alone (a "·" between a place's price and its
address, list bullets, an icon font's glyph), and the outer of two scrollable lists with the
same box, one inside the other (:func:`_one_row_per_scroll_area`).

Kinds come from the class name (:func:`kind_of`): a tab item is ``tab`` (``ActionBar$Tab``,
``TabLayout$TabView``, bottom-navigation items, and the controls inside a ``TabWidget``), a
table is not; a list or pager class that takes taps or long presses is a ``list``, not a
``btn``: what it offers is scrolling, its rows are what to tap.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import cache, lru_cache, partial, reduce
from operator import or_

import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.config import TreeConfig
from perception.memo import MAX_KEY_CHARS
from perception.tree.clean import CleanTree
from perception.tree.compress import MIN_RID_CHARS, STATIC_KINDS
from perception.tree.occlusion import clear_of_controls, outside_routes, visibility
from perception.tree.parse import RawTree
from perception.types import ACTIONABLE, BoxPx, ElementFlag, TreeElement, new_tree_element

I32 = npt.NDArray[np.int32]
_FLAG_MASK = (1 << 13) - 1
_OCCLUDED = int(ElementFlag.OCCLUDED)
_ACTIONABLE = int(ACTIONABLE)
_DISABLED = int(ElementFlag.DISABLED)
SLIVER_SIDE_SHARE = (5, 360)
"""Elements narrower or lower than this share of the screen's shorter side are not offered
(5 dp on a 360 dp wide phone: 15 px at 1080, 20 px at 1440; numerator, denominator; see
:func:`cluster`). At 7 dp QQ Music's 17 px wide "更多" buttons and its player's 20 px high
time line would go; what is under 5 dp on the corpus is a row scrolled out to its last pixels,
a divider or Weibo's 10 px high "*&*" placeholders."""
GAP_SIDE_SHARE = (8, 360)
"""An unlabelled element (no text, no resource id of :data:`MIN_RID_CHARS`) lower than this
share of the screen's shorter side and at least half the screen wide is not offered either (8 dp
on a 360 dp wide phone; numerator, denominator): a gap between a list's sections that takes
taps (WeChat's Discover page offered five 22 px `""` buttons between its groups), a row
scrolled out to its last pixels. Nothing names it, and nothing there is to aim at."""
CONTAINER_SCREEN_SHARE = (1, 4)
"""A root with more label pieces than a label holds is a container, not a row, from this share
of the screen's area (numerator, denominator)."""
PAGE_SCREEN_SHARE = (3, 4)
"""A root with a label of its own around another control is a page, not a row, from this share
of the screen's area: its label is its own, the text inside stays text (a clickable web view
named by its page's title; Flutter's modal barrier, "Dismiss", around the dialog it closes,
which took the dialog's title "Select Language" on a held-out app, where an agent asked to
choose a language would have tapped it)."""

# Short kind names, by class-name fragment, checked in order.
_KINDS = (
    ("EditText", "input"),
    ("AutoCompleteTextView", "input"),
    ("Switch", "switch"),
    ("ToggleButton", "switch"),
    ("CheckBox", "check"),
    ("CheckedTextView", "check"),
    ("RadioButton", "radio"),
    ("SeekBar", "slider"),
    ("RatingBar", "slider"),
    ("ProgressBar", "progress"),
    ("Spinner", "select"),
    ("WebView", "web"),
    ("ImageButton", "btn"),
    ("Button", "btn"),
    ("Image", "img"),
)
# Tab items by class name: ActionBar$Tab (what TabLayout's tabs report; ActionBar.Tab where a
# dumper wrote the nested class's "$" as a ".", a class named "Tab"), TabLayout$TabView, the
# bottom navigation's items. Not "Tab" anywhere in the name: TableLayout and TableRow are
# tables, TabHost, TabWidget and TabLayout hold the tabs (a TabWidget's controls are its tabs,
# see cluster()), and a non-clickable class named so is a bar, not a tab.
_TAB_SUFFIXES = ("$Tab", "TabView", "NavigationItemView", "NavigationBarItemView",
                 "NavigationRailItemView")
# A list or a pager is a list even when it is also clickable or long-clickable (a chat list
# with a long-press menu): it is something to scroll, its rows are the things to tap.
_LIST_CLASSES = ("ListView", "GridView", "RecyclerView", "ScrollView", "ViewPager")


def kind_of(class_name: str, bits: int) -> str:
    """The short type name the model sees: cached (:func:`_kind_cached`) for class names of
    at most :data:`~perception.memo.MAX_KEY_CHARS` characters, worked out each time for longer
    ones, which an app chooses and a process-wide cache would keep (see perception.memo)."""
    bits &= _KIND_BITS
    if len(class_name) <= MAX_KEY_CHARS:
        return _kind_cached(class_name, bits)
    return _kind_of(class_name, bits)


_KIND_BITS = int(
    fastpath.B_ROOT_MASK | fastpath.B_EDITABLE | ElementFlag.CHECKABLE | ElementFlag.SCROLLABLE
    | fastpath.B_WEBVIEW | fastpath.B_HAS_TEXT
)
"""A plain int: ``&`` with an ``IntFlag`` goes through ``enum`` (1 us a call)."""

_flag_of = cache(ElementFlag)
"""``ElementFlag(bits)``, built once per value (``enum`` takes 0.5 us a call; the flags are
13 bits, so at most 8,192 values)."""

_box_px = partial(tuple.__new__, BoxPx)
"""``BoxPx(*box)`` for a list of four ints, without the named tuple's Python-level
``__new__``."""


def _kind_of(class_name: str, bits: int) -> str:
    short = class_name.rsplit(".", 1)[-1]
    for fragment, kind in _KINDS:
        if fragment in short:
            if kind == "img" and bits & fastpath.B_ROOT_MASK:
                return "btn"
            return kind
    if bits & fastpath.B_ROOT_MASK:
        if short.endswith(_TAB_SUFFIXES) or short == "Tab":
            return "tab"
        if any(name in short for name in _LIST_CLASSES):
            return "list"
    if bits & fastpath.B_EDITABLE:
        return "input"
    if bits & (ElementFlag.CHECKABLE):
        return "check"
    if bits & fastpath.B_ROOT_MASK:
        return "btn"
    if bits & ElementFlag.SCROLLABLE:
        return "list"
    if bits & fastpath.B_WEBVIEW:
        return "web"
    return "text" if bits & fastpath.B_HAS_TEXT else "view"


_kind_cached = lru_cache(maxsize=4096)(_kind_of)


def _punctuation_only(text: str) -> bool:
    """A text of punctuation, bullets or icon-font glyphs (private use) alone: a separator
    ("·" between a place's price and its address), a list bullet. A row of it says nothing."""
    if text[:1].isalnum():
        return False  # most label pieces: a word first (no generator to start)
    return not any(
        ch.isalnum() or (unicodedata.category(ch)[0] == "S" and ch not in _BULLETS)
        for ch in text
    )


_BULLETS = frozenset("◦▪▫∙●○")
_KEYPAD = frozenset("*#.,%()-?…")
"""The punctuation a dial pad's or a calculator's keys show."""
_SEP = " | "
"""What joins a label's pieces (``fastpath``'s labels)."""
_ENCODED_URL = re.compile(r"%(?:2F|3A)", re.IGNORECASE)
_BASE64 = re.compile(r"[A-Za-z0-9+/]{12,}={0,2}")
_MIN_DATA_CHARS = 12
"""The shortest label :func:`_encoded_data` looks at (the base64 it takes has 12 characters
or more, a data URI more)."""
BASE64_LONG_CHARS = 32
"""Base64 without a ``+`` or padding is data from this length on, with an upper-case and a
lower-case letter and a digit (no word, name or identifier on the corpus is so)."""
_DATA_URI = re.compile(r"data:[\w.+-]+/[\w.+-]+(?:;[^,\s]*)?;base64,", re.IGNORECASE)


def _encoded_data(piece: str) -> bool:
    """A data URI (``data:image/png;base64,...``) or the base64 tail of one
    (``x+AAAAAElFTkSuQmCC``, an image's description in an old Chromium page): twelve base64
    characters or more, nothing else (but the ellipsis of a cut piece), with a ``+`` or the
    ``=`` padding (a plain long word, "Notifications", or a user name, "jcardenasc93", has
    neither) or of :data:`BASE64_LONG_CHARS` and mixed (``iVBORw0KGgoAAAANSUhEUg…``), not a
    path."""
    if _DATA_URI.match(piece):
        return True
    piece = piece.removesuffix("…")
    if piece.startswith("/") or _BASE64.fullmatch(piece) is None:
        return False
    return "+" in piece or piece.endswith("=") or (
        len(piece) >= BASE64_LONG_CHARS and not piece.isalpha() and not piece.isdigit()
        and not piece.islower() and not piece.isupper()
    )


def junk_piece(piece: str) -> bool:
    """A label piece that tells the model nothing to choose by: a percent-encoded URL or path
    (``http%3A%2F%2Fstatic.akamai.startappexcha…``, an ad's image address in its description:
    decoded it is still an address no one sees), encoded data (:func:`_encoded_data`), or a
    piece without a letter, a digit or a symbol (Weibo's ``*&*`` template placeholder, an icon
    font's private-use glyph), unless it names a path (``../``, a file chooser's parent
    folder)."""
    if "%" in piece and not any(ch.isspace() for ch in piece) and _ENCODED_URL.search(piece):
        return True
    if (
        "+" in piece or "=" in piece or ":" in piece or len(piece) >= BASE64_LONG_CHARS
    ) and _encoded_data(piece):
        return True
    return "/" not in piece and _punctuation_only(piece)


def _keypad_key(label: str) -> bool:
    """A label of one punctuation character or of a keypad's ("#", ".", "…", "( )"), no icon
    glyph (private use): a dial pad's or a calculator's key, a help or an overflow button."""
    glyphs = label.replace(" ", "")
    return (
        bool(glyphs)
        and (len(glyphs) == 1 or frozenset(glyphs) <= _KEYPAD)
        and not any(unicodedata.category(ch) == "Co" for ch in glyphs)
    )


def without_junk(label: str) -> str:
    """``label`` without its junk pieces (:func:`junk_piece`): "" when nothing else is left (an
    unlabelled control is then shown as the prompt shows any: by its resource id, or
    nothing). A keypad key's label alone (:func:`_keypad_key`) is its label, not junk."""
    if _SEP not in label and _keypad_key(label):
        return label
    pieces = label.split(_SEP)
    kept = [p for p in pieces if not junk_piece(p)]
    return label if len(kept) == len(pieces) else _SEP.join(kept)


_RESOURCE_INT = re.compile(r"(?<![\w.,])21[0-9]{8}(?![\w.,])")
RESOURCE_INTS = (0x7F000000, 0x7FFFFFFF)
"""An app's resource ids, as integers (package 0x7f): 2130706432-2147483647. A label piece
holding one holds an id the app printed by mistake, not text (Duolingo's "Learning
2131888976" description: the language's name resource, not its name). Looked for in the labels
of elements with a description (where apps print them: ``setContentDescription(R.string.x +
...)``)."""


def without_resource_ints(label: str) -> str:
    """``label`` without the resource integers in its pieces (:data:`RESOURCE_INTS`; a piece
    that is one alone stays: it may be a number the screen shows)."""
    low, high = RESOURCE_INTS

    def cut(piece: str) -> str:
        said = _RESOURCE_INT.sub(
            lambda m: "" if low <= int(m.group(0)) <= high else m.group(0), piece
        )
        said = " ".join(said.split())
        return said or piece

    return _SEP.join(cut(p) for p in label.split(_SEP))


_STATE_SUFFIXES = (
    (", On", int(ElementFlag.CHECKABLE | ElementFlag.CHECKED)),
    (", Off", int(ElementFlag.CHECKABLE)),
    (", Selected", int(ElementFlag.SELECTED)),
    (", Not selected", 0),
)
"""A description that ends with its control's state (Habitica's "Positive, On", "Easy,
Selected"): the state word, in these exact forms only, and the flags it sets (on or off: a
toggle, a ``switch`` where it was a ``btn``)."""


def without_state(piece: str) -> tuple[str, int]:
    """``piece`` without the state it ends with (:data:`_STATE_SUFFIXES`) and the flags that
    state sets; ``(piece, 0)`` when it ends with none."""
    for suffix, flag in _STATE_SUFFIXES:
        if piece.endswith(suffix) and len(piece) > len(suffix):
            return piece[: -len(suffix)], flag
    return piece, 0


def _state_said(text: str, desc: str, flags: int) -> tuple[str, int]:
    """``text`` without the state its node's own description ends with (a piece that is the
    description), and ``flags`` with the state's flags: ``btn "Positive, On"`` is ``switch
    "Positive" on``, ``btn "Easy, Selected"`` is ``btn "Easy" sel``. Anything else is left as
    it is."""
    desc = desc.strip()
    name, flag = without_state(desc)
    if name == desc:
        return text, flags
    pieces = text.split(_SEP)
    if desc not in pieces:
        return text, flags
    return _SEP.join(name if p == desc else p for p in pieces), flags | flag


@dataclass(frozen=True, slots=True, kw_only=True)
class Clusters:
    elements: tuple[TreeElement, ...]
    element_of_node: I32
    """For each raw node, the index of the element it belongs to (absorbed or itself), or -1."""
    hidden: frozenset[int]
    """Ids of elements not offered though not occluded (see :attr:`Tree.hidden_ids`)."""
    outside_taps: tuple[int, ...] = ()
    """Ids of the layers that close a dialog, offered with a tap outside it (Flutter's barrier,
    a bottom sheet's outside: :func:`perception.tree.occlusion.outside_routes`): the screen
    shows a dialog, a sheet or a menu over the page."""


def cluster(tree: CleanTree, config: TreeConfig) -> Clusters:
    raw = tree.raw
    strings = raw.strings
    nf = fastpath.NFIELDS
    num, den = CONTAINER_SCREEN_SHARE
    screen_area_px = tree.screen.width_px * tree.screen.height_px
    container_area_px = (screen_area_px * num + den - 1) // den
    num, den = PAGE_SCREEN_SHARE
    nodes, element_of_node, boxes, el_bits, _, _, texts = fastpath.tree_elements(
        raw.parent, tree.clip_px, tree.bits, tree.owner, tree.end, tree.screen.width_px,
        max_pieces=config.max_label_pieces,
        container_area_px=container_area_px,
        page_area_px=(screen_area_px * num + den - 1) // den,
        strings=strings, max_label_chars=config.max_label_chars, min_rid_chars=MIN_RID_CHARS,
    )
    bits_of = el_bits.tolist()
    # A row that took an indicator's check state is checkable: without one, no indicator.
    indicator_class = (
        _indicator_classes(raw, nodes, element_of_node)
        if reduce(or_, bits_of, 0) & _CHECKABLE else {}  # any(b & _CHECKABLE ...), in C
    )
    seen = visibility(tree, nodes, boxes, config)
    blocked = seen.occluded.tolist()
    more = seen.more.tolist()
    scroll_lists: list[int] = []  # scrollable list elements, for nested scroll areas
    tab_bars = tree.tab_bars

    elements: list[TreeElement] = []
    statics: dict[str, list[TreeElement]] = {}  # static elements by label, for repeats
    empty: list[TreeElement] = []  # unlabelled clickables, wrappers maybe
    dead: list[int] = []  # unlabelled disabled controls
    named: list[int] = []  # controls labelled by a description, with a resource id
    hidden = set(seen.hidden.nonzero()[0].tolist())  # np.flatnonzero, without its wrappers
    f_class, f_rid = fastpath.F_CLASS, fastpath.F_RID
    s_num, s_den = SLIVER_SIDE_SHARE
    width_px, short_side_px = tree.screen.width_px, min(tree.screen.width_px, tree.screen.height_px)
    sliver_px = max(short_side_px * s_num // s_den, 1)
    g_num, g_den = GAP_SIDE_SHARE
    gap_px = max(short_side_px * g_num // g_den, 1)
    boxes_l = seen.boxes_px.tolist()
    for idx, (node, b, box, text) in enumerate(
        zip(nodes.tolist(), bits_of, boxes_l, texts, strict=True)
    ):
        base = node * nf
        flags = b & _FLAG_MASK
        if text and (
            "%" in text or not text[0].isalnum() or _SEP in text
            or len(text) >= _MIN_DATA_CHARS and (
                "+" in text or "=" in text or text.startswith("data:")
                or len(text) >= BASE64_LONG_CHARS
            )
        ):
            said = without_junk(text)
            if said or b & fastpath.B_ROOT_MASK:
                text = said  # a control without a label is still a control
            else:
                hidden.add(idx)  # a static of junk alone: nothing to read
        if b & _HAS_DESC:  # the rules below read a description
            if "21" in text and _RESOURCE_INT.search(text):
                text = without_resource_ints(text)
            if ", " in text:
                text, flags = _state_said(text, strings[base + fastpath.F_DESC], flags)
            if b & _NAMED == _NAMED and b & _TAP_ACTIONS and not b & _HAS_TEXT:
                named.append(idx)  # labelled by its description: see _told_apart
        if blocked[idx]:
            flags |= _OCCLUDED
        if not text and b & _TAP_ACTIONS and (stop := int(tree.end[node])) - node <= NOWHERE_SCAN:
            text = _placed_nowhere(tree, node, stop, config)  # WeChat's tabs' names
        cls = strings[base + f_class]
        name = indicator_class.get(idx, cls) if indicator_class else cls
        # kind_of inlined: the loop's largest share after the kernels
        if len(name) <= MAX_KEY_CHARS:
            kind = _kind_cached(name, b & _KIND_BITS)
        else:
            kind = _kind_of(name, b & _KIND_BITS)
        if kind == "btn" and tab_bars and any(t < node < tree.end[t] for t in tab_bars):
            kind = "tab"  # a control inside a TabWidget is one of its tabs
        elif kind == "btn" and flags & _CHECKABLE and not b & _CHECKABLE:
            kind = "switch"  # its description says it is on or off (_state_said)
        element = new_tree_element(
            idx, kind, text, _box_px(box), _flag_of(flags),
            strings[base + f_rid].rpartition("/")[2],  # com.app:id/btn_save -> btn_save
            cls, node, more[idx],
        )
        elements.append(element)
        if text and kind in STATIC_KINDS and not flags & _ACTIONABLE:  # is_static_kind
            statics.setdefault(text.casefold(), []).append(element)  # "Basic" is "BASIC"
            if not text[0].isalnum() and _punctuation_only(text):
                hidden.add(idx)  # a lone separator, bullet or icon glyph says nothing
        elif kind == "list" and flags & _SCROLL:
            scroll_lists.append(idx)
        elif not text and b & _TAP_ACTIONS:
            if flags & _DISABLED and len(element.resource_id) < MIN_RID_CHARS:
                dead.append(idx)
            else:
                empty.append(element)
        # Slivers: under 5 dp across (a list row scrolled out to its last pixels, which
        # uiautomator reports as the visible part; a divider; Weibo's 10 px high "*&*"
        # placeholders). Nothing to read, nothing a tap can aim at.
        if box[2] - box[0] < sliver_px or box[3] - box[1] < sliver_px:
            hidden.add(idx)
        elif (
            not text and box[3] - box[1] < gap_px and 2 * (box[2] - box[0]) >= width_px
            and len(element.resource_id) < MIN_RID_CHARS
        ):
            hidden.add(idx)  # a gap between a list's sections, a row scrolled to its edge
    # Nothing to tap and nothing to read: a disabled control without a name (the dividers of
    # DocumentsUI's drawer list), unless an enabled view that acts folded into it (a wrapper
    # around a disabled button still takes the tap).
    if dead:
        live = ((raw.bits & _DISABLED) == 0) & ((raw.bits & fastpath.B_ACTION_MASK) != 0)
        hidden.update(i for i in dead if not live[element_of_node == i].any())
    if empty and (
        folded := _wrappers_of_their_controls(
            empty, elements, hidden, tree.end, container_area_px
        )
    ):
        # The wrapper's nodes whose middle lies on the control are the control's now: a tap
        # there is the control's (the wrapper's own node among them).
        element_of_node = element_of_node.copy()
        for wrapper, control in reversed(folded):  # a wrapper of a wrapper: to the last one
            hidden.add(wrapper)
            mine = np.flatnonzero(element_of_node == wrapper)
            clip = tree.clip_px[mine]
            cx, cy = (clip[:, 0] + clip[:, 2]) // 2, (clip[:, 1] + clip[:, 3]) // 2
            left, top, right, bottom = elements[control].box_px
            on = (left <= cx) & (cx < right) & (top <= cy) & (cy < bottom)
            element_of_node[mine[on]] = element_of_node[elements[control].node]
    past = np.searchsorted(nodes, tree.end[nodes]).tolist()  # past each element's subtree
    takes = [bool(b & _TWIN_TAKERS) and not k for b, k in zip(bits_of, blocked, strict=True)]
    live = [t and not b & _SCROLL for t, b in zip(takes, bits_of, strict=True)]
    if twins := _nested_twins(elements, hidden, tree.end, past, live, container_area_px):
        element_of_node = element_of_node.copy()
        for keep, drop in twins:
            hidden.add(drop)
            element_of_node[element_of_node == drop] = keep
            takes[drop] = False  # folded: no control of its own
            boxes_l[keep] = list(elements[keep].box_px)
    # A container whose tap point is on a control inside it: its tap box, clear of them.
    # With nothing clear of them left, it is no target: its label stays to read, as text.
    moved, slivers = clear_of_controls(elements, hidden, tree, takes, boxes_l, past, nodes)
    if tree.barriers:  # the layers that close a dialog: a tap outside it
        barriers = [
            i for i in element_of_node[list(tree.barriers)].tolist()
            if i >= 0 and elements[i].node in tree.barriers
        ]
        slivers.difference_update(barriers)
        outside, no_target = outside_routes(elements, hidden, tree, barriers)
        moved.update(outside)
        hidden.update(no_target)
        outside_taps = tuple(sorted(outside))
    else:
        outside_taps = ()
    for idx, free in moved.items():
        e = elements[idx]
        elements[idx] = new_tree_element(
            idx, e.kind, e.text, free, e.flags, e.resource_id, e.class_name, e.node, e.more
        )
    for idx in slivers:
        e = elements[idx]
        if e.text:
            elements[idx] = new_tree_element(
                idx, "text", e.text, e.box_px,
                _flag_of(int(e.flags) & ~_CONTROL_BITS & _FLAG_MASK),
                e.resource_id, e.class_name, e.node, e.more,
            )
        else:
            hidden.add(idx)
    if len(seen.open_drawers):
        elements.extend(_drawer_scrims(tree, seen.open_drawers.tolist(), len(elements)))
    hidden.update(_repeated_statics(statics))
    described = [
        e for e in map(elements.__getitem__, named)
        if e.text and e.id not in hidden and int(e.flags) & _TAP_ACTIONS
        and not int(e.flags) & _OCCLUDED and len(e.resource_id) >= MIN_RID_CHARS
    ] if len(named) > 1 else []
    for idx, rid in _told_apart(described).items():
        e = elements[idx]
        elements[idx] = new_tree_element(
            idx, e.kind, f"{e.text}{_SEP}[{rid}]", e.box_px, e.flags, e.resource_id,
            e.class_name, e.node, e.more,
        )
    if len(scroll_lists) > 1:
        element_of_node = _one_row_per_scroll_area(
            elements, scroll_lists, hidden, tree.end, element_of_node
        )
    return Clusters(
        elements=tuple(elements), element_of_node=element_of_node, hidden=frozenset(hidden),
        outside_taps=outside_taps,
    )


_TAP_ACTIONS = int(ElementFlag.CLICKABLE | ElementFlag.LONG_CLICKABLE)
_NAMED = fastpath.B_HAS_DESC | fastpath.B_HAS_RID
_HAS_DESC = fastpath.B_HAS_DESC
_HAS_TEXT = fastpath.B_HAS_TEXT


NOWHERE_SCAN = 12
"""How many nodes at most an unlabelled control's subtree holds for :func:`_placed_nowhere` to
read it: a tab or an icon button with its caption, not a card or a page."""
_LABEL_BITS = fastpath.B_HAS_TEXT | fastpath.B_HAS_DESC


def _placed_nowhere(tree: CleanTree, node: int, stop: int, config: TreeConfig) -> str:
    """The label of the nodes of ``node``'s element (up to ``stop``, its subtree's end) that
    the dump places nowhere (``[0,0][0,0]``: uiautomator's box for a view it finds no visible
    part of) and does not mark invisible, where the element holds no control of its own:
    WeChat's and Douban's bottom tabs, whose names are clipped under their icons, are
    unlabelled without them."""
    raw = tree.raw
    bits, owner, box = tree.bits, tree.owner, raw.box_px
    strings, nf = raw.strings, fastpath.NFIELDS
    pieces: list[str] = []
    for j in range(node + 1, stop):
        held_by = int(owner[j])
        if held_by == j:
            return ""  # it holds a control: a wrapper maybe (see _wrappers_of_their_controls)
        b = int(bits[j])
        if not b & _LABEL_BITS or b & fastpath.B_INVISIBLE or not b & fastpath.B_DROPPED:
            continue
        left, top, right, bottom = box[j].tolist()
        if (right > left and bottom > top) or held_by != node:
            continue
        for field in (fastpath.F_TEXT, fastpath.F_DESC):
            piece = fastpath.label_piece(strings[j * nf + field], config.max_label_chars)
            if piece and piece not in pieces and len(pieces) < config.max_label_pieces:
                pieces.append(piece)
    return _SEP.join(pieces)


def _told_apart(described: list[TreeElement]) -> dict[int, str]:
    """Shown controls labelled by their description alone whose description another one has
    too, with another resource id: the resource id each adds to its label, by element id
    (OneList's share and add buttons are both "Add List": ``Add List | [buttonShareList]``
    and ``Add List | [buttonAddList]``). Ids of fewer than ``MIN_RID_CHARS`` characters say
    nothing (QQ Music's two "更多", ``c3`` and ``cc7``) and are not counted; items of one list
    with one id and one description stay as they are."""
    by_text: dict[str, list[TreeElement]] = {}
    for e in described:
        by_text.setdefault(e.text, []).append(e)
    out: dict[int, str] = {}
    for group in by_text.values():
        if len(group) > 1 and len({e.resource_id for e in group}) > 1:
            out.update((e.id, e.resource_id) for e in group)
    return out
_TWIN_TAKERS = int(
    ElementFlag.CLICKABLE | ElementFlag.LONG_CLICKABLE | ElementFlag.CHECKABLE
    | ElementFlag.EDITABLE
)
_CONTROL_BITS = _TWIN_TAKERS
_NOT_A_WRAPPER = int(
    ElementFlag.SCROLLABLE | ElementFlag.EDITABLE | ElementFlag.CHECKABLE | ElementFlag.OCCLUDED
)


def _wrappers_of_their_controls(
    empty: list[TreeElement], elements: list[TreeElement], hidden: set[int], end: I32,
    container_area_px: int,
) -> list[tuple[int, int]]:
    """Unlabelled clickables whose tap point lies on a control inside them that takes every
    press they take (a clickable one when they are clickable, a long-clickable one when they
    are): a tap there is that control's, drawn over the wrapper, so the wrapper offers nothing
    the control does not, and its row only asked the model what an empty button was (Habitica's
    habit rows: ``[16,"","500 340"]`` beside "Take a short break", the row's own text
    button). A wrapper with an id to show, a field, a toggle or a scroll area is kept, and so
    is one whose tap point misses its controls (a tap there reaches the wrapper) and one of a
    container's size (``container_area_px``: a clickable page is more than a row around a
    control, whatever its middle lands on). Returns
    (wrapper, control) id pairs: the wrapper folds into the control, as a wrapper with the
    control's box does in ``tree_elements``."""
    out: list[tuple[int, int]] = []
    for e in empty:
        flags = int(e.flags)
        if (
            e.id in hidden or flags & _NOT_A_WRAPPER or len(e.resource_id) >= MIN_RID_CHARS
            or e.box_px.area >= container_area_px
        ):
            continue
        takes = flags & _TAP_ACTIONS
        point, inside = e.box_px.center, int(end[e.node])
        for inner in elements[e.id + 1 :]:
            if inner.node >= inside:
                break
            if (
                int(inner.flags) & takes == takes and not int(inner.flags) & _OCCLUDED
                and inner.id not in hidden and inner.box_px.contains(point)
            ):
                out.append((e.id, inner.id))
                break
    return out


TWIN_AREA_SHARE = (1, 2)
"""An action inside another that holds its centre and at least this share of its area
(numerator, denominator) is the same target when the pair says nothing different (see
:func:`_nested_twins`)."""
SAME_TWIN_AREA_SHARE = (1, 4)
"""The share for a pair whose labels are the same: Douyin's share targets, a cell and the
avatar in it both named after the contact (the avatar 48% of the cell), were offered twice."""
_STATE_BITS = int(ElementFlag.CHECKABLE | ElementFlag.EDITABLE)


def _nested_twins(
    elements: list[TreeElement], hidden: set[int], end: I32, past: list[int],
    live: list[bool], container_area_px: int,
) -> list[tuple[int, int]]:
    """Two offered actions, one inside the other and the only one there (with what is inside
    it), where the inner holds the outer's centre and at least :data:`TWIN_AREA_SHARE` of its
    box, and one of them is unlabelled (a resource id is no label) or both say the same: one
    target offered twice (Weibo's terms checkbox as a frame and its icon, a QQ Music playlist
    tile and an empty twin inside it). An option row around its unlabelled radio button is
    one target too (:func:`_names_its_radio`). They fold into one element, changed in
    ``elements``: the labelled one (else the inner), on the outer's box (where both take the
    tap), with both's flags, and the kind of the one that is checkable or editable (its state
    is the target's). Returns (kept, folded) id pairs; the folded one is to be hidden.
    ``elements`` is in document order, so a pair is (outer, inner); ``past[k]``: the first
    element after element ``k``'s subtree; ``live[k]``: element ``k`` is an action, not
    occluded and not scrollable. Scroll areas, lists and web views are no twins (what is in
    them is something else)."""
    num, den = TWIN_AREA_SHARE
    outers = [k for k, after in enumerate(past) if after > k + 1]
    if not outers:
        return []

    def twin(j: int) -> bool:
        return live[j] and j not in hidden and elements[j].kind not in ("list", "web")

    out: list[tuple[int, int]] = []
    gone: set[int] = set()
    for k in outers:
        outer = elements[k]
        if outer.id in gone or not twin(k):
            continue
        held = [elements[j] for j in range(k + 1, past[k]) if twin(j)]
        if not held or any(e.node >= end[held[0].node] for e in held):
            continue  # no action inside, or more than one with what is inside it
        inner, point, area = held[0], outer.box_px.center, outer.box_px.area
        if inner.id in gone or not outer.box_px.encloses(inner.box_px):
            continue
        same = bool(outer.text) and outer.text == inner.text
        n, d = SAME_TWIN_AREA_SHARE if same else (num, den)
        if (
            not inner.box_px.contains(point) or inner.box_px.area * d < area * n
            or (outer.text and inner.text and outer.text != inner.text)
        ) and not _names_its_radio(outer, inner, container_area_px):
            continue
        keep, drop = (outer, inner) if outer.text and not inner.text else (inner, outer)
        kind = keep.kind
        if int(drop.flags) & _STATE_BITS and not int(keep.flags) & _STATE_BITS:
            kind = drop.kind
        elements[keep.id] = new_tree_element(
            keep.id, kind, keep.text, outer.box_px,
            _flag_of((int(outer.flags) | int(inner.flags)) & _FLAG_MASK),
            keep.resource_id, keep.class_name, keep.node, keep.more,
        )
        out.append((keep.id, drop.id))
        gone.update((keep.id, drop.id))
    return out


def _names_its_radio(outer: TreeElement, inner: TreeElement, container_area_px: int) -> bool:
    """Is ``outer`` an option row naming ``inner``, the one unlabelled radio button inside it
    (a resource id is no label)? A row under a container's size (``container_area_px``) with
    a label, neither checkable nor a field: Compose's selectable rows, where the radio takes
    its own taps too (E7's engine picker: ``[6,"内置识别（稳定默认）"]`` beside
    ``[7,"","60 528"]``, the model left to guess which option the empty radio is and which one
    is chosen). A tap on an option's row chooses it. Only a radio: a row around a checkbox or
    a switch may do something else than toggle it (Settings' Wi-Fi row opens its page, a
    mail's row opens the mail, a terms line its link)."""
    return (
        inner.kind == "radio" and not inner.text and bool(outer.text)
        and not int(outer.flags) & _STATE_BITS and outer.box_px.area < container_area_px
    )


SCRIM_RESOURCE_ID = "close_drawer"
"""The label (``[close_drawer]``) of the strip beside an open navigation drawer."""
_SCRIM_FLAGS = ElementFlag.CLICKABLE


def _drawer_scrims(
    tree: CleanTree, open_drawers: list[list[int]], first_id: int
) -> list[TreeElement]:
    """A button over the strip beside each open navigation drawer, ids from ``first_id``.

    The DrawerLayout draws a scrim over its page while a drawer is open and closes the drawer
    on a tap there; the scrim is no node of the dump, and the page under it is occluded. The
    open drawers, ``(drawer, layout)`` node pairs, are the ones occlusion found (see
    :mod:`perception.tree.occlusion`). A recorded tap on the page behind an open drawer closes
    the drawer: this is what it lands on. A drawer is anchored to the layout's left or right
    edge; one as wide as the layout leaves no strip.
    """
    strings, nf = tree.raw.strings, fastpath.NFIELDS
    out: list[TreeElement] = []
    for d, p in open_drawers:
        left, top, right, bottom = tree.clip_px[p].tolist()
        d_left, _, d_right, _ = tree.clip_px[d].tolist()
        if d_left <= left and d_right < right:  # from the left edge
            box = BoxPx(d_right, top, right, bottom)
        elif d_right >= right and d_left > left:  # from the right edge
            box = BoxPx(left, top, d_left, bottom)
        else:
            continue
        out.append(new_tree_element(
            first_id + len(out), "btn", "", box, _SCRIM_FLAGS, SCRIM_RESOURCE_ID,
            strings[p * nf + fastpath.F_CLASS], p, 0,
        ))
    return out


_SCROLL = int(ElementFlag.SCROLLABLE)


def _one_row_per_scroll_area(
    elements: list[TreeElement], scroll_lists: list[int], hidden: set[int], end: I32,
    element_of_node: I32,
) -> I32:
    """Of two scrollable list elements with the same box, one inside the other (a pager around
    its list, a scroll view around a RecyclerView: DocumentsUI, Weibo), only one is offered: a
    swipe there moves whichever can, and two rows for one area cost tokens and say no more. The
    inner one stays (the list itself) unless only the outer has a label; it takes the outer's
    flags (a long-clickable pager) and its nodes (``element_of_node``, a copy if changed). Two
    with labels of their own, the outer's not inside the inner's, both stay."""
    lists = [elements[k] for k in scroll_lists if k not in hidden]
    for k, outer in enumerate(lists):
        for inner in lists[k + 1 :]:
            if inner.box_px != outer.box_px or not outer.node < inner.node < end[outer.node]:
                continue
            if outer.text and inner.text and outer.text not in inner.text:
                continue  # each says something of its own: both stay, no label is lost
            keep, drop = (outer, inner) if outer.text and not inner.text else (inner, outer)
            hidden.add(drop.id)
            elements[keep.id] = new_tree_element(
                keep.id, keep.kind, keep.text, keep.box_px,
                _flag_of(int(keep.flags) | (int(drop.flags) & _FLAG_MASK & ~_OCCLUDED)),
                keep.resource_id, keep.class_name, keep.node, keep.more,
            )
            element_of_node = np.where(element_of_node == drop.id, keep.id, element_of_node)
            break
    return element_of_node.astype(np.int32, copy=False)


_CHECKABLE = int(ElementFlag.CHECKABLE)
_INDICATOR_KINDS = frozenset({"check", "switch", "radio"})


def _indicator_classes(raw: RawTree, nodes: I32, element_of_node: I32) -> dict[int, str]:
    """For each element that took the check state of an indicator inside it (see the module
    docstring), the class its kind comes from: the indicator's (a Switch makes the row a
    switch), or a CheckBox's when the indicator's class names no check kind."""
    inside = np.flatnonzero(
        ((raw.bits & fastpath.B_ROOT_MASK) == _CHECKABLE) & (element_of_node >= 0)
    )
    out: dict[int, str] = {}
    for i in inside.tolist():
        e = int(element_of_node[i])
        if nodes[e] == i or e in out:
            continue
        cls = raw.strings[i * fastpath.NFIELDS + fastpath.F_CLASS]
        out[e] = cls if kind_of(cls, _CHECKABLE) in _INDICATOR_KINDS else "CheckBox"
    return out


def _repeated_statics(by_text: dict[str, list[TreeElement]]) -> list[int]:
    """A static element inside a static element that says the same, in any capitals (the text
    "Sources" in a container described "Sources"; an ad's label on the ad image described with
    it; a tab described "Basic" around its text "BASIC"): the outer one stays, its box is what
    the words describe and where a tap lands."""
    out = []
    for same in by_text.values():
        if len(same) < 2:
            continue
        for inner in same:
            i = inner.box_px
            # Inside another, or the same box earlier in the document (one of two equal boxes).
            if any(
                outer is not inner and (outer.box_px != i or outer.id < inner.id)
                and outer.box_px.encloses(i)
                for outer in same
            ):
                out.append(inner.id)
    return out
