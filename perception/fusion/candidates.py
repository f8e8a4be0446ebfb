"""The unified candidate list: tree elements and pixel candidates, merged, scored, with ids.

Tree elements come first in tree order; OCR blocks that agree with (or label) an element merge
into it (``source`` both); the rest of the pixel candidates (OCR lines no element holds,
anchors no element or line covers, vision-model boxes) follow top to bottom, left to right.
Ids are stable (:class:`IdAllocator`): a candidate keeps its id from one observation to the next
while it stays on the screen, also when it moves (a scrolled row); a new page numbers from 1.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.fusion.crossval import (
    Agreement,
    CrossCheck,
    TextBlock,
    boxes_array,
    normalise_text,
    normalise_texts,
)
from perception.fusion.score import Origin, pixel_candidate_confidence, unit4
from perception.fusion.table import ElementTable
from perception.pixel.merge import box_areas, reading_order
from perception.tree.compress import is_static_kind, label_of, over_budget
from perception.types import BoxPx, Channel, ElementFlag, ScreenSize, TreeElement

AGREE_BONUS = 0.15
CONFLICT_FACTOR = 0.6
DOUBTFUL_FACTOR = 0.5
NON_TAPPABLE_ANCHORS = frozenset({"bar", "text", "block"})
"""Anchor kinds that are structure, not targets (text lines come from OCR instead)."""
PIXEL_KINDS: dict[str, str] = {"button": "btn", "image": "img", "toggle": "switch"}
"""Pixel and vision kinds spelled in the tree's vocabulary (the prompt groups rows by kind, and
one screen should not show a "btn" group and a "button" group). Kinds the tree has no word
for keep their own: ``text`` (a line read off the pixels), ``icon``, ``card``, ``tab``."""


def pixel_kind(kind: str) -> str:
    """A pixel or vision kind in the candidates' vocabulary (a plain str, not the enum)."""
    return PIXEL_KINDS.get(kind) or str(kind)


TOGGLE_KINDS = frozenset({"switch", "check", "radio"})
"""Pixel kinds that are toggles (:mod:`perception.pixel.toggles`): flagged as the tree flags its
own, so the prompt says ``on`` for a pixel switch that is on, as for a tree one."""
_TOGGLE = ElementFlag.CLICKABLE | ElementFlag.CHECKABLE


def pixel_flags(kind: str, block: object, base: ElementFlag) -> ElementFlag:
    """The flags of a pixel candidate of ``kind`` (in the candidates' vocabulary): a toggle's
    are CHECKABLE, and CHECKED when the pixels say it is on (``checked`` True); an unknown
    state (None) sets no CHECKED. A password field (``password`` True) is PASSWORD too, and
    a tab the pixels say is its row's selected one (``selected``) is SELECTED. Other kinds
    keep ``base``."""
    if kind not in TOGGLE_KINDS:
        if getattr(block, "password", False):
            base |= ElementFlag.PASSWORD
        return base | ElementFlag.SELECTED if getattr(block, "selected", False) else base
    return _TOGGLE | ElementFlag.CHECKED if getattr(block, "checked", None) else _TOGGLE

_DISABLED = int(ElementFlag.DISABLED)
_OCCLUDED = int(ElementFlag.OCCLUDED)
_PASSWORD = int(ElementFlag.PASSWORD)
_OFFSCREEN = int(ElementFlag.PARTLY_OFFSCREEN)
KEY_GRID = 50
"""Candidates count as "the same" across observations when their edges fall in the same cell
of a ``KEY_GRID`` x ``KEY_GRID`` grid over the screen (and kind and text match)."""
KEY_TEXT = 24
"""How much of the normalised text the key holds (a long label's tail may scroll or elide)."""
LABEL_SHARE_MAX = 0.25
"""An OCR line merges into an element only if the element covers at most this much screen."""
COVER_SHARE_MAX = 0.3
"""A tree box over more of the screen than this (a page-wide wrapper, a web view, a
full-screen button) does not stand for what the pixels show inside it: an anchor under it is
offered (a music player whose dump is one unlabelled full-screen button: 1 of 21 controls
offered before), and in tree-unstable its bands are read."""
COVERED_SHARE = 0.6
"""An anchor with this share of its area inside a tree box (or an OCR line's, or a vision
answer's) is that box's drawing: not offered again (:func:`merge`)."""
LOOSE_ROW_AREAS = 4.0
"""A row a tree of another moment keeps (no text the pixels could read back) hides an anchor
inside it only when its box is at most this many times the anchor's area: the icon it names,
not a band or a panel that the screen now draws other things in (a music player's action row
under the previous page's rows)."""
OWN_GLYPHS = frozenset(
    {"×", "←", "‹", "⋮", "⋯", "☰", "▶", "⏸", "settings", "share", "send", "mic", "♡"}
)
"""Icons named by these glyphs do something of their own wherever they are drawn: inside a
pill or bar the pixels read a label in (a search bar's ← × and mic, a mini player's ⏸, a
browser bar's × and ⋮, a notification's ×) they are not the label's drawing, so no OCR
candidate hides them; the tree's boxes still do. The pixel channel offers them on their own
already (its icons under no text line). The rest stay the label's: a field's magnifier, a
button's leading + or logo, a row's chevron; and a tab holds its icon, whatever it draws
(corpus: 23 named icons inside a labelled pixel candidate, 10 of them the magnifier of a
search field)."""
# Enum members looked up once (a class attribute of an enum costs a descriptor call each time).
_TREE = Channel.TREE
_BOTH = Channel.BOTH
_PIXEL = Channel.PIXEL
_AGREE, _CONFLICT, _FILLS, _CONTINUES = (
    Agreement.AGREE,
    Agreement.CONFLICT,
    Agreement.FILLS,
    Agreement.CONTINUES,
)
_OCR, _OCR_MATCHED = Origin.OCR, Origin.OCR_MATCHED
_OCR_VALUE = Origin.OCR.value
_NO_FLAGS = ElementFlag.NONE


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """One thing on the screen a decision model may tap, type into or read."""

    id: int
    source: Channel
    kind: str
    text: str
    box_px: BoxPx
    confidence: float
    flags: ElementFlag
    origin: str
    """``tree``, or the pixel origin (``ocr_matched``, ``ocr``, ``anchor``, ``vision``)."""
    tree_id: int | None = None
    """The tree element's id, when the candidate comes from (or merged into) one."""
    more: int = 0
    """On the last shown item of a truncated list run: how many similar items follow."""
    listed: bool = True
    """False for list items the tree channel truncated, for rows past the prompt's row budget
    (:func:`within_budget`), and for the tree's rows the pixels do not show when they say the
    tree is from another moment: kept here, left out of the prompt."""

    @property
    def disabled(self) -> bool:
        return bool(int(self.flags) & _DISABLED)

    @property
    def occluded(self) -> bool:
        return bool(int(self.flags) & _OCCLUDED)

    @property
    def password(self) -> bool:
        return bool(int(self.flags) & _PASSWORD)

    @property
    def partly_offscreen(self) -> bool:
        return bool(int(self.flags) & _OFFSCREEN)

    @property
    def actionable(self) -> bool:
        """Tree candidates: by their flags; pixel candidates: anything not text-only."""
        if self.source is Channel.PIXEL:
            return not self.occluded
        return self.flags.actionable

    @property
    def static(self) -> bool:
        """Static text of the tree: context for the model, a ``text`` row without an id."""
        return self.source is not Channel.PIXEL and is_static_kind(self.kind, int(self.flags))

    @property
    def shown(self) -> bool:
        """The prompt lists it with its id: listed, not occluded, not static text. Only these
        ids are the model's to name (:meth:`perception.Observation.candidate`)."""
        return self.listed and not self.occluded and not self.static


class Draft(NamedTuple):
    """A candidate before its id is known (internal; a tuple, cheap to build by the hundred)."""

    source: Channel
    kind: str
    text: str
    box_px: BoxPx
    confidence: float
    flags: ElementFlag
    origin: str
    tree_id: int | None = None
    more: int = 0
    listed: bool = True


_tuple_new = tuple.__new__




def merge(
    *,
    elements: Sequence[TreeElement],
    tree_confidence: float,
    doubtful: Sequence[int] = (),
    text_blocks: Sequence[TextBlock] = (),
    crosscheck: CrossCheck | None = None,
    anchors: Sequence[TextBlock] = (),
    vision: Sequence[TextBlock] = (),
    screen: ScreenSize,
    hidden: frozenset[int] = frozenset(),
    table: ElementTable | None = None,
    condemned: Collection[int] = frozenset(),
    unconfirmed: Collection[int] = frozenset(),
) -> list[Draft]:
    """Merge the channels into drafts (tree order first, then pixel-only top to bottom).

    ``hidden`` holds the ids of tree elements left out of the prompt (truncated list items);
    ``table`` the columns of ``elements`` when the caller has them already; ``condemned`` the
    indices of elements the pixels say are gone (a loading panel the frame shows drawn): OCR
    inside them fills no label of theirs (see :func:`filling` for the others);
    ``unconfirmed`` the indices of elements that stand only where OCR reads them (the tree
    shows another moment: the caller leaves the others out of the prompt): OCR agrees with
    one only where it reads a whole piece of its label (:func:`reads_whole`); else it hides no
    anchor under it, and the OCR lines in its box are lines of their own, not the rest of its
    cut label nor a part of it. With ``unconfirmed`` given, the rows outside it (icons named by
    a description, text-less rows) hide only an anchor of about their size
    (:data:`LOOSE_ROW_AREAS`).
    """
    t = ElementTable(elements) if table is None else table
    n = len(t)
    screen_area = max(1, screen.width_px * screen.height_px)
    conf = [tree_confidence] * n
    label = list(t.texts)
    source = [_TREE] * n
    for i in doubtful:
        conf[i] *= DOUBTFUL_FACTOR
    pixel: list[Draft] = []
    fills: dict[int, list[TextBlock]] = {}
    continuing: dict[int, list[TextBlock]] = {}
    agreeing: dict[int, list[TextBlock]] = {}
    if crosscheck is not None:
        matched = pixel_candidate_confidence(_OCR_MATCHED, 0.9)
        for block, m in zip(text_blocks, crosscheck.matches, strict=True):
            i = m.element
            agreement = m.agreement
            if agreement is _AGREE:
                if i in unconfirmed:
                    agreeing.setdefault(i, []).append(block)  # judged below, when all are in
                    continue
                conf[i] = min(1.0, max(conf[i], tree_confidence) + AGREE_BONUS)
                source[i] = _BOTH
                continue
            if agreement is _CONTINUES:
                # The text past the cut of the element's label: its own text (but for one
                # that stands only where OCR reads it: below, unless it reads).
                if i in unconfirmed:
                    continuing.setdefault(i, []).append(block)
                continue
            if (
                agreement is _FILLS
                and i >= 0
                and i not in condemned
                and t.boxes[i].area <= LABEL_SHARE_MAX * screen_area  # small enough to label
            ):
                fills.setdefault(i, []).append(block)
                continue
            # Already rounded to 4 places and in [0, 1]; rounded again only when scaled.
            ocr_conf = pixel_candidate_confidence(_OCR, block.confidence)
            if agreement is _CONFLICT:
                if conf[i] < ocr_conf:
                    conf[i] *= CONFLICT_FACTOR
                else:
                    ocr_conf = unit4(ocr_conf * CONFLICT_FACTOR)
            pixel.append(_ocr_draft(block, ocr_conf))
        for i, blocks in fills.items():
            used = filling(t.boxes[i], blocks)
            for block in used:
                label[i] = block.text if not label[i] else f"{label[i]} | {block.text}"
                conf[i] = max(conf[i], matched)
                source[i] = _BOTH
            for block in blocks:
                if not any(block is u for u in used):
                    # A line that is none of the element's label is text of its own.
                    pixel.append(
                        _ocr_draft(block, pixel_candidate_confidence(_OCR, block.confidence))
                    )
    for i, blocks in agreeing.items():
        if reads_whole(label[i], [b.text for b in blocks]):
            for _ in blocks:  # as each agreeing line raises an element's confidence above
                conf[i] = min(1.0, max(conf[i], tree_confidence) + AGREE_BONUS)
            source[i] = _BOTH
        else:
            # Part of a row's label said where a tree of another moment puts it ("me" in
            # "Recommend", "Hair Salons" in "Men's Hair Salons"): no proof the row is there,
            # and the line is the screen's own text.
            pixel.extend(
                _ocr_draft(b, pixel_candidate_confidence(_OCR, b.confidence)) for b in blocks
            )
    for i, blocks in continuing.items():
        if source[i] is not _BOTH:
            # A cut label no line reads, of a row left out as another moment's: the lines
            # inside its box are what the screen shows there now, not the rest of its label.
            pixel.extend(
                _ocr_draft(b, pixel_candidate_confidence(_OCR, b.confidence)) for b in blocks
            )
    # An anchor a vision box names is that box (the vision answer carries the label).
    kept_anchors = [a for a in anchors if a.kind not in NON_TAPPABLE_ANCHORS]
    pictures = [a.box_px for a in kept_anchors if pixel_kind(a.kind) == "img"]
    if pictures:
        # A shape inside a picture is part of it (a sticker on an album cover, a face), not a
        # control: with page-wide tree boxes no longer hiding anchors, they were offered.
        kept_anchors = [
            a for a in kept_anchors
            if pixel_kind(a.kind) == "img"
            or not any(p.contains(a.box_px.center) and p.area > 2 * a.box_px.area
                       for p in pictures)
        ]
    if kept_anchors:
        most = COVER_SHARE_MAX * screen_area
        # On a tree of another moment (``unconfirmed`` holds its text rows), a row it keeps
        # (an icon named by its description, a text-less row) is no proof of what is drawn
        # there now: it hides only an anchor of about its own size, not what lies inside it.
        loose = (
            [b for i, b in enumerate(t.boxes) if i not in unconfirmed and b.area <= most]
            if unconfirmed
            else []
        )
        covered = [
            b for i, b in enumerate(t.boxes)
            if b.area <= most
            and (source[i] is _BOTH if i in unconfirmed else not unconfirmed)
        ]
        covered += [v.box_px for v in vision]
        # A read pill or bar hides what is drawn in it but the icons that act on their own
        # (OWN_GLYPHS); a tab is one target, icon and all.
        read = [d.box_px for d in pixel if d.kind != "tab"]
        covered += [d.box_px for d in pixel if d.kind == "tab"]
        anchor_boxes = boxes_array([a.box_px for a in kept_anchors])
        _, share = fastpath.match_blocks(boxes_array(covered + read), anchor_boxes)
        own = [k for k, a in enumerate(kept_anchors) if getattr(a, "glyph", "") in OWN_GLYPHS]
        if own and read:
            _, alone = fastpath.match_blocks(boxes_array(covered), anchor_boxes[own])
            share[own] = alone
        if loose:
            loose_boxes = boxes_array(loose)
            inside = fastpath.intersections(anchor_boxes, loose_boxes)
            areas = box_areas(anchor_boxes)
            spot = (inside >= COVERED_SHARE * areas[:, None]) & (
                box_areas(loose_boxes)[None, :] <= LOOSE_ROW_AREAS * areas[:, None]
            )
            share = np.where(spot.any(axis=1), 1.0, share)
        for a, s in zip(kept_anchors, share.tolist(), strict=True):
            if s >= COVERED_SHARE:
                continue
            kind = pixel_kind(a.kind)
            pixel.append(
                Draft(
                    source=_PIXEL,
                    kind=kind,
                    # The glyph the pixel channel recognised (⋮, ×, ←, search...) names it;
                    # not OCR text, so it was kept out of the cross-check above.
                    text=a.text or getattr(a, "glyph", ""),
                    box_px=a.box_px,
                    confidence=pixel_candidate_confidence(Origin.ANCHOR, a.confidence),
                    flags=pixel_flags(kind, a, ElementFlag.CLICKABLE),
                    origin=Origin.ANCHOR.value,
                )
            )
    for v in vision:
        pixel.append(
            Draft(
                source=_PIXEL,
                kind=pixel_kind(v.kind),
                text=v.text,
                box_px=v.box_px,
                confidence=pixel_candidate_confidence(Origin.VISION, v.confidence),
                flags=ElementFlag.CLICKABLE,
                origin=Origin.VISION.value,
            )
        )
    if not doubtful and crosscheck is None:
        # Nothing changed an element's confidence (the usual case): the tree's for all, with
        # no hashing of each element's value.
        confs = [unit4(tree_confidence)] * n
    else:
        rounded = {c: unit4(c) for c in set(conf)}
        if len(rounded) == 1:
            confs = [rounded[conf[0]]] * n  # one value: no lookup per element
        else:
            confs = list(map(rounded.__getitem__, conf))
    labels = _named(label, elements)
    tree_ids = t.ids
    listed = [i not in hidden for i in tree_ids] if hidden else [True] * n
    # Built column-wise, without a Python call per draft.
    drafts = fastpath.rows(
        Draft,
        (
            source,
            t.kinds,
            labels,
            t.boxes,
            confs,
            t.flags,
            ["tree"] * n,
            tree_ids,
            t.mores,
            listed,
        ),
    )
    # Top to bottom, a bar's tabs left to right (by their own tops, a few px apart, a bar read
    # Search, Profile, Home, Likes).
    order = reading_order([d.box_px for d in pixel], [d.kind == "tab" for d in pixel])
    return drafts + [pixel[i] for i in order]


WHOLE_SHARE = 0.8
"""The share of a label piece's letters and digits the OCR lines agreeing with it must hold
for :func:`reads_whole`."""


def reads_whole(label: str, texts: Sequence[str]) -> bool:
    """Do the OCR ``texts`` that agree with an element read one piece of its ``label`` (its
    ``" | "`` pieces, a cut label's ``…`` left off) whole: one of them is that piece or holds
    it, or reads like it without lying inside it (a misread), or those lying inside it hold
    :data:`WHOLE_SHARE` of its letters and digits between them (a label on two lines, read
    as two)? A few letters of a long label ("me" in "Recommend") prove little."""
    said = {normalise_text(t) for t in texts} - {""}
    pieces = [normalise_text(p.rstrip("…")) for p in label.split(" | ")]
    pieces = [p for p in pieces if p]
    if not said or not pieces:
        return False
    for o in said:
        if not any(o in p and o != p for p in pieces):
            return True  # the piece itself, one holding it, or a misread of it
    return any(
        sum(len(o) for o in said if o in p) >= WHOLE_SHARE * len(p) for p in pieces
    )


FILL_LINES = 3
"""A text-less element takes several OCR lines as its label only when they share a row or
the element is at most this many of them tall (a two-line button, a card's title over its
subtitle)."""


def filling(box: BoxPx, blocks: Sequence[TextBlock]) -> list[TextBlock]:
    """The OCR lines (``blocks``, each matched as filling the text-less element at ``box``)
    that make its label: a lone line; of several, those wholly inside the box when they share
    one row or the box is at most :data:`FILL_LINES` of them tall (with its padding). Lines in
    separate rows of a box much taller than they are make none of its label: a stale column
    through a list (Yelp's loading panel over four results read "]5 Reviews | 44 Reviews | 93
    Reviews | 34 Reviews"). The lines left out are the pixels' text of their own."""
    if len(blocks) == 1:
        return list(blocks)
    inside = [b for b in blocks if box.encloses(b.box_px)]
    if len(inside) < 2:
        return inside
    first = inside[0].box_px
    one_row = all(
        min(b.box_px.bottom, first.bottom) - max(b.box_px.top, first.top)
        >= min(b.box_px.height, first.height) / 2
        for b in inside[1:]
    )
    tallest = max(b.box_px.height for b in inside)
    if one_row or box.height <= (FILL_LINES + 1) * tallest:
        return inside
    return []


def _ocr_draft(block: TextBlock, confidence: float) -> Draft:
    """An OCR line as a pixel draft of its own."""
    kind = pixel_kind(block.kind)
    return _tuple_new(
        Draft,
        (
            _PIXEL,
            kind,
            block.text,
            block.box_px,
            confidence,
            # A toggle that took its label off the pixels is a toggle still.
            pixel_flags(kind, block, _NO_FLAGS),
            _OCR_VALUE,
            None,
            0,
            True,
        ),
    )


def _named(labels: Sequence[str], elements: Sequence[TreeElement]) -> list[str]:
    # A text-less element is named by its resource id (label_of), looked up only for those.
    if all(labels):
        return list(labels)
    return [lb or label_of("", e.resource_id) for lb, e in zip(labels, elements, strict=True)]


def own_labels(elements: Sequence[TreeElement], table: ElementTable | None = None) -> list[str]:
    """The tree elements' labels as :func:`merge` gives them before OCR fills any in."""
    t = ElementTable(elements) if table is None else table
    return _named(t.texts, elements)


Key = tuple[str, str, int, int, int, int]


def candidate_keys(
    drafts: Sequence[Draft],
    screen: ScreenSize,
    *,
    boxes: npt.NDArray[np.int32] | None = None,
    norms: Sequence[str] | None = None,
) -> list[Key]:
    """What makes a candidate "the same" across observations: kind, text, place on a coarse grid.

    ``boxes`` (the drafts' boxes as ``int32[N, 4]``) and ``norms`` (their texts through
    :func:`normalise_text`): when the caller has them already."""
    if not drafts:
        return []
    arr = boxes_array([d.box_px for d in drafts]) if boxes is None else boxes
    if norms is None:
        norms = normalise_texts([d.text for d in drafts])
    return fastpath.keys(
        drafts,
        arr,
        norms,
        width=screen.width_px,
        height=screen.height_px,
        grid=KEY_GRID,
        text_len=KEY_TEXT,
    )


_FIELDS = (
    "source",
    "kind",
    "text",
    "box_px",
    "confidence",
    "flags",
    "origin",
    "tree_id",
    "more",
    "listed",
)
assert _FIELDS == Draft._fields and set(_FIELDS) | {"id"} == set(Candidate.__dataclass_fields__)
# The slots' own descriptors, id first then the draft's fields in order: what the frozen
# dataclass __init__ writes through, without a Python call per field (hundreds per observation).
_SLOTS = tuple(Candidate.__dict__[name] for name in ("id", *_FIELDS))


def _candidates(ids: Sequence[int], drafts: Sequence[Draft]) -> list[Candidate]:
    """``[Candidate(id=i, **d._asdict()) for i, d in zip(ids, drafts)]``, at a fraction of the
    cost; the records are the same frozen dataclass instances."""
    return fastpath.records(Candidate, _SLOTS, ids, drafts)


IDS_KEPT_MAX = 4096
"""Keys an :class:`IdAllocator` remembers for one id space before it forgets all but the last
observation's (a long scroll through a feed adds keys at every step)."""


class IdAllocator:
    """Gives candidates ids that survive from one observation to the next.

    Within one id space a candidate keeps its id while its kind, text and grid cell stay the
    same (:func:`candidate_keys`); one whose cell changed keeps it too when its kind and text are
    unique on both screens (a row that scrolled, a button that moved). A key seen twice (two
    "OK" buttons in one cell) gives its occurrences the ids they had, in order, so the same
    input always gets the same ids. A new id is one past the largest given in the id space:
    an id never names another element within it. The id space carries over to the next
    observation when it is on the same page (fingerprint) or when at least half of its
    candidates were on the last screen (a scroll that changed the page's top texts); otherwise
    a new one numbers from 1.
    """

    def __init__(self) -> None:
        self._page: str | None = None
        self._ids: dict[Key, int] = {}  # each key's id (a repeated key: its first occurrence's)
        self._extra: dict[Key, list[int]] = {}  # a repeated key: the later occurrences' ids
        self._loose: dict[tuple[str, str], int] | None = None  # see _unique_on_last_screen
        self._last_ids: list[int] = []  # the last call's ids, in the order of its drafts
        self._top = 0  # the largest id given in this id space
        self._keys: list[Key] = []  # the last call's keys, in the order of its drafts
        # The last call's inputs and answer, to tell an unchanged page cheaply.
        self._screen: ScreenSize | None = None
        self._drafts: list[Draft] = []
        self._out: list[Candidate] = []

    def _unique_on_last_screen(self) -> dict[tuple[str, str], int]:
        """``(kind, text)`` -> id for the last screen's labelled candidates whose kind and text
        occur once on it (built when a call first needs it)."""
        if self._loose is None:
            self._loose = _unique_texts(self._keys, self._last_ids)
        return self._loose

    def _carries_over(self, keys: Sequence[Key]) -> bool:
        """At least half of ``keys`` are known in this id space (by key, or by a kind and text
        unique on the last screen)."""
        if not self._keys or not keys:
            return False
        last = self._ids
        loose = self._unique_on_last_screen()
        hits = 0
        for k in keys:
            if k in last or (k[1] and (k[0], k[1]) in loose):
                hits += 1
        return 2 * hits >= len(keys)

    def assign(
        self,
        drafts: Sequence[Draft],
        *,
        page: str,
        screen: ScreenSize,
        boxes: npt.NDArray[np.int32] | None = None,
        norms: Sequence[str] | None = None,
    ) -> list[Candidate]:
        """Candidates for ``drafts`` (``boxes``, ``norms``: see :func:`candidate_keys`)."""
        drafts = list(drafts)
        same_page = page == self._page
        if same_page and self._out and screen == self._screen and drafts == self._drafts:
            # The same drafts as last time on this page: the same keys, so every key finds
            # the ids it got then (repeats in order), every record is reused, and the maps
            # stay as they are.
            return list(self._out)
        keys = candidate_keys(drafts, screen, boxes=boxes, norms=norms)
        n = len(keys)
        carry = same_page or self._carries_over(keys)
        previous = self._ids if carry else {}
        ids: list[int]
        if not previous:
            ids = list(range(1, n + 1))
        else:
            olds: list[int | None] = list(map(previous.get, keys))
            if None not in olds and len(set(olds)) == n:
                ids = olds  # type: ignore[assignment]  # every key seen before, each id once
            else:
                ids = self._match(keys, olds)
        mapping = dict(zip(reversed(keys), reversed(ids), strict=True))  # a repeat: its first
        unique = len(mapping) == n
        extra: dict[Key, list[int]] = {}
        if not unique:
            firsts: set[Key] = set()
            for key, cid in zip(keys, ids, strict=True):
                if key in firsts:
                    extra.setdefault(key, []).append(cid)
                else:
                    firsts.add(key)
        out: list[Candidate]
        if carry and self._out:
            # Records of the last call reused where key, id and draft are unchanged (its index
            # built only now: a first sight never needs it).
            last = dict(zip(self._keys, range(len(self._keys)), strict=True))  # a key twice: last
            old_drafts, old_out = self._drafts, self._out
            out = []
            todo: list[int] = []
            for j, (d, key, cid) in enumerate(zip(drafts, keys, ids, strict=True)):
                k = last.get(key)
                if k is not None and old_out[k].id == cid and old_drafts[k] == d:
                    out.append(old_out[k])
                else:
                    out.append(None)  # type: ignore[arg-type]  # filled just below
                    todo.append(j)
            made = _candidates([ids[j] for j in todo], [drafts[j] for j in todo])
            for j, c in zip(todo, made, strict=True):
                out[j] = c
        else:
            out = _candidates(ids, drafts)
        top = max(ids, default=0)
        if carry and len(previous) + n <= IDS_KEPT_MAX:
            self._ids = {**previous, **mapping}
            self._extra = {**self._extra, **extra} if extra else self._extra
            self._top = max(self._top, top)
        else:
            self._ids = mapping
            self._extra = extra
            self._top = max(self._top, top) if carry else top
        self._loose = None
        self._last_ids = ids
        self._page = page
        self._keys = keys
        self._screen = screen
        self._drafts = drafts
        self._out = out
        return list(out)

    def _match(self, keys: Sequence[Key], olds: list[int | None]) -> list[int]:
        """Ids for ``keys`` when some are new or repeated (``olds``: each key's remembered id)."""
        used: set[int] = set()
        seen: dict[Key, int] = {}  # occurrences of each key so far
        for j, (key, old) in enumerate(zip(keys, olds, strict=True)):
            k = seen.get(key, 0)
            seen[key] = k + 1
            if k:  # a later occurrence of a repeated key: the id that occurrence had
                more = self._extra.get(key, ())
                old = more[k - 1] if k - 1 < len(more) else None
            if old is not None and old not in used:
                used.add(old)
                olds[j] = old
            else:
                olds[j] = None
        if None in olds:
            loose = self._unique_on_last_screen()
            # Moved: kind and text unique on this screen and on the last one.
            counts: dict[tuple[str, str], int] = {}
            for key in keys:
                counts[key[0], key[1]] = counts.get((key[0], key[1]), 0) + 1
            for j, key in enumerate(keys):
                if olds[j] is None and key[1] and counts[key[0], key[1]] == 1:
                    old = loose.get((key[0], key[1]))
                    if old is not None and old not in used:
                        used.add(old)
                        olds[j] = old
        next_id = max(self._top, max(used, default=0)) + 1
        ids: list[int] = []
        for old in olds:
            if old is None:
                old = next_id
                next_id += 1
            ids.append(old)
        return ids

    def reset(self) -> None:
        self._page = None
        self._ids = {}
        self._extra = {}
        self._loose = None
        self._last_ids = []
        self._top = 0
        self._keys = []
        self._screen = None
        self._drafts = []
        self._out = []


def _unique_texts(keys: Sequence[Key], ids: Sequence[int]) -> dict[tuple[str, str], int]:
    """``(kind, text)`` -> id for the labelled candidates whose kind and text occur once."""
    out: dict[tuple[str, str], int] = {}
    twice: set[tuple[str, str]] = set()
    for key, cid in zip(keys, ids, strict=True):
        if not key[1]:
            continue
        loose = (key[0], key[1])
        if loose in out:
            twice.add(loose)
        else:
            out[loose] = cid
    for loose in twice:
        del out[loose]
    return out


def within_budget(
    candidates: Sequence[Candidate],
    max_rows: int,
    *,
    keep_ids: Collection[int] = (),
    tree_left_out: Collection[int] = (),
) -> tuple[tuple[Candidate, ...], int]:
    """The candidates with at most ``max_rows`` of them in the prompt (the others kept, not
    :attr:`~Candidate.listed`), and how many rows the budgets left out: these and the tree's
    (``tree_left_out``: :attr:`perception.Tree.over_budget_ids`, element ids). The tree caps
    its own rows; the pixels add theirs, which an app decides the number of as well. Which
    go: :func:`perception.tree.compress.over_budget`, the candidates of ``keep_ids`` (those an
    operation names) last."""
    gone = sum(
        1 for c in candidates
        if not c.listed and c.tree_id is not None and c.source is not _PIXEL
        and c.tree_id in tree_left_out
    ) if tree_left_out else 0
    if len(candidates) <= max_rows:
        return tuple(candidates), gone  # the prompt's rows are some of these: all fit
    # The flag bit read in place, not through ``Candidate.occluded`` (a call a row).
    rows = [i for i, c in enumerate(candidates) if c.listed and not int(c.flags) & _OCCLUDED]
    if len(rows) <= max_rows:
        return tuple(candidates), gone
    picked = [candidates[i] for i in rows]
    keep = frozenset(keep_ids)
    cut = over_budget(
        [c.kind for c in picked], [int(c.flags) for c in picked], [c.box_px for c in picked],
        max_rows, keep=[k for k, c in enumerate(picked) if c.id in keep],
    )
    out = list(candidates)
    for k in cut:
        out[rows[k]] = replace(out[rows[k]], listed=False)
    return tuple(out), gone + len(cut)
