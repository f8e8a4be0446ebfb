"""The unified candidate list: tree elements and pixel candidates, merged, scored, with ids.

Tree elements come first in tree order; OCR blocks that agree with (or label) an element merge
into it (``source`` both); the rest of the pixel candidates (OCR lines no element holds,
anchors no element or line covers, vision-model boxes) follow top to bottom, left to right.
Ids are stable: on the same page a candidate with the same kind, text and place keeps its id
from one observation to the next; a new page numbers from 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
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
)
from perception.fusion.score import Origin, pixel_candidate_confidence, unit4
from perception.fusion.table import ElementTable
from perception.tree.compress import label_of
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
# Enum members looked up once (a class attribute of an enum costs a descriptor call each time).
_TREE = Channel.TREE
_BOTH = Channel.BOTH
_PIXEL = Channel.PIXEL
_AGREE, _CONFLICT, _FILLS = Agreement.AGREE, Agreement.CONFLICT, Agreement.FILLS
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
    """False for list items the tree channel truncated: kept here, left out of the prompt."""

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
) -> list[Draft]:
    """Merge the channels into drafts (tree order first, then pixel-only top to bottom).

    ``hidden`` holds the ids of tree elements left out of the prompt (truncated list items);
    ``table`` the columns of ``elements`` when the caller has them already.
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
    if crosscheck is not None:
        matched = pixel_candidate_confidence(_OCR_MATCHED, 0.9)
        for block, m in zip(text_blocks, crosscheck.matches, strict=True):
            i = m.element
            agreement = m.agreement
            if agreement is _AGREE:
                conf[i] = min(1.0, max(conf[i], tree_confidence) + AGREE_BONUS)
                source[i] = _BOTH
                continue
            if (
                agreement is _FILLS
                and i >= 0
                and t.boxes[i].area <= LABEL_SHARE_MAX * screen_area  # small enough to label
            ):
                label[i] = block.text if not label[i] else f"{label[i]} | {block.text}"
                conf[i] = max(conf[i], matched)
                source[i] = _BOTH
                continue
            # Already rounded to 4 places and in [0, 1]; rounded again only when scaled.
            ocr_conf = pixel_candidate_confidence(_OCR, block.confidence)
            if agreement is _CONFLICT:
                if conf[i] < ocr_conf:
                    conf[i] *= CONFLICT_FACTOR
                else:
                    ocr_conf = unit4(ocr_conf * CONFLICT_FACTOR)
            pixel.append(
                _tuple_new(
                    Draft,
                    (
                        _PIXEL,
                        pixel_kind(block.kind),
                        block.text,
                        block.box_px,
                        ocr_conf,
                        _NO_FLAGS,
                        _OCR_VALUE,
                        None,
                        0,
                        True,
                    ),
                )
            )
    # An anchor a vision box names is that box (the vision answer carries the label).
    kept_anchors = [a for a in anchors if a.kind not in NON_TAPPABLE_ANCHORS]
    if kept_anchors:
        covered = t.boxes + [d.box_px for d in pixel] + [v.box_px for v in vision]
        _, share = fastpath.match_blocks(
            boxes_array(covered), boxes_array([a.box_px for a in kept_anchors])
        )
        for a, s in zip(kept_anchors, share.tolist(), strict=True):
            if s >= 0.6:
                continue
            pixel.append(
                Draft(
                    source=_PIXEL,
                    kind=pixel_kind(a.kind),
                    text=a.text,
                    box_px=a.box_px,
                    confidence=pixel_candidate_confidence(Origin.ANCHOR, a.confidence),
                    flags=ElementFlag.CLICKABLE,
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
    rounded = {c: unit4(c) for c in set(conf)}
    if len(rounded) == 1:
        confs = [rounded[conf[0]]] * n  # one value (the usual case): no lookup per element
    else:
        confs = list(map(rounded.__getitem__, conf))
    # A text-less element is named by its resource id (label_of), looked up only for those.
    labels = [lb or label_of("", e.resource_id) for lb, e in zip(label, elements, strict=True)]
    tree_ids = [e.id for e in elements]
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
            [e.more for e in elements],
            listed,
        ),
    )
    pixel.sort(key=lambda d: (d.box_px.top, d.box_px.left, d.box_px.bottom, d.box_px.right))
    return drafts + pixel


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
        norms = list(map(normalise_text, [d.text for d in drafts]))
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


class IdAllocator:
    """Gives candidates ids that survive from one observation to the next on the same page."""

    def __init__(self) -> None:
        self._page: str | None = None
        self._ids: dict[Key, int] = {}
        self._keys: list[Key] = []  # the last call's keys, in the order of its drafts
        # The last call's inputs and answer, to tell an unchanged page cheaply.
        self._screen: ScreenSize | None = None
        self._drafts: list[Draft] = []
        self._unique = False
        self._out: list[Candidate] = []

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
        previous = self._ids if page == self._page else {}
        if previous and self._unique and screen == self._screen and drafts == self._drafts:
            # The same drafts as last time on this page, their keys (which depend on nothing
            # else) each once: every key finds the id it got then, every record is reused,
            # and the maps stay as they are.
            return list(self._out)
        keys = candidate_keys(drafts, screen, boxes=boxes, norms=norms)
        n = len(keys)
        ids: list[int]
        if not previous:
            ids = list(range(1, n + 1))
        else:
            olds = list(map(previous.get, keys))
            if None not in olds and len(set(olds)) == n:
                ids = olds  # type: ignore[assignment]  # every key seen before, each id once
            else:
                used: set[int] = set()
                for j, old in enumerate(olds):
                    if old is not None and old not in used:
                        used.add(old)
                    else:
                        olds[j] = None
                next_id = max(max(used, default=0), max(previous.values())) + 1
                ids = []
                for old in olds:
                    if old is None:
                        old = next_id
                        next_id += 1
                    ids.append(old)
        mapping = dict(zip(keys, ids, strict=True))
        unique = len(mapping) == n
        if not unique:  # a key twice: it maps to the id of its first occurrence
            mapping = dict(zip(reversed(keys), reversed(ids), strict=True))
        out: list[Candidate]
        if previous and self._out:
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
        self._page = page
        self._ids = {**previous, **mapping} if previous else mapping
        self._keys = keys
        self._screen = screen
        self._drafts = drafts
        self._unique = unique
        self._out = out
        return list(out)

    def reset(self) -> None:
        self._page = None
        self._ids = {}
        self._keys = []
        self._screen = None
        self._drafts = []
        self._unique = False
        self._out = []
