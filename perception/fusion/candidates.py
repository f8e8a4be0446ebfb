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

from perception import fastpath
from perception.fusion.crossval import (
    Agreement,
    CrossCheck,
    TextBlock,
    boxes_array,
    normalise_text,
)
from perception.fusion.score import Origin, pixel_candidate_confidence
from perception.tree.compress import label_of
from perception.types import BoxPx, Channel, ElementFlag, ScreenSize, TreeElement

AGREE_BONUS = 0.15
CONFLICT_FACTOR = 0.6
DOUBTFUL_FACTOR = 0.5
NON_TAPPABLE_ANCHORS = frozenset({"bar", "text", "block"})
"""Anchor kinds that are structure, not targets (text lines come from OCR instead)."""
_DISABLED = int(ElementFlag.DISABLED)
_OCCLUDED = int(ElementFlag.OCCLUDED)
_PASSWORD = int(ElementFlag.PASSWORD)
_OFFSCREEN = int(ElementFlag.PARTLY_OFFSCREEN)
KEY_GRID = 50
"""Candidates count as "the same" across observations when their edges fall in the same cell
of a ``KEY_GRID`` x ``KEY_GRID`` grid over the screen (and kind and text match)."""
LABEL_SHARE_MAX = 0.25
"""An OCR line merges into an element only if the element covers at most this much screen."""


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


def _round(x: float) -> float:
    return round(min(1.0, max(0.0, x)), 4)


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
) -> list[Draft]:
    """Merge the channels into drafts (tree order first, then pixel-only top to bottom).

    ``hidden`` holds the ids of tree elements left out of the prompt (truncated list items).
    """
    screen_area = max(1, screen.width_px * screen.height_px)
    conf = [tree_confidence] * len(elements)
    label = [e.text for e in elements]
    source = [Channel.TREE] * len(elements)
    for i in doubtful:
        conf[i] *= DOUBTFUL_FACTOR
    pixel: list[Draft] = []
    if crosscheck is not None:
        for block, m in zip(text_blocks, crosscheck.matches, strict=True):
            ocr_conf = pixel_candidate_confidence(Origin.OCR, block.confidence)
            i = m.element
            small = i >= 0 and elements[i].box_px.area <= LABEL_SHARE_MAX * screen_area
            if m.agreement is Agreement.AGREE:
                conf[i] = min(1.0, max(conf[i], tree_confidence) + AGREE_BONUS)
                source[i] = Channel.BOTH
                continue
            if m.agreement is Agreement.FILLS and small:
                label[i] = block.text if not label[i] else f"{label[i]} | {block.text}"
                conf[i] = max(conf[i], pixel_candidate_confidence(Origin.OCR_MATCHED, 0.9))
                source[i] = Channel.BOTH
                continue
            if m.agreement is Agreement.CONFLICT:
                if conf[i] < ocr_conf:
                    conf[i] *= CONFLICT_FACTOR
                else:
                    ocr_conf *= CONFLICT_FACTOR
            pixel.append(
                Draft(
                    source=Channel.PIXEL,
                    kind="text",
                    text=block.text,
                    box_px=block.box_px,
                    confidence=_round(ocr_conf),
                    flags=ElementFlag.NONE,
                    origin=Origin.OCR.value,
                )
            )
    # An anchor a vision box names is that box (the vision answer carries the label).
    covered = [e.box_px for e in elements] + [d.box_px for d in pixel] + [v.box_px for v in vision]
    kept_anchors = [a for a in anchors if a.kind not in NON_TAPPABLE_ANCHORS]
    if kept_anchors:
        _, share = fastpath.match_blocks(
            boxes_array(covered), boxes_array([a.box_px for a in kept_anchors])
        )
        for a, s in zip(kept_anchors, share.tolist(), strict=True):
            if s >= 0.6:
                continue
            pixel.append(
                Draft(
                    source=Channel.PIXEL,
                    kind=a.kind,
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
                source=Channel.PIXEL,
                kind=v.kind,
                text=v.text,
                box_px=v.box_px,
                confidence=pixel_candidate_confidence(Origin.VISION, v.confidence),
                flags=ElementFlag.CLICKABLE,
                origin=Origin.VISION.value,
            )
        )
    rounded = {c: _round(c) for c in set(conf)}
    drafts = [
        Draft(
            source[i],
            e.kind,
            label[i] or label_of("", e.resource_id),
            e.box_px,
            rounded[conf[i]],
            e.flags,
            "tree",
            e.id,
            e.more,
            e.id not in hidden,
        )
        for i, e in enumerate(elements)
    ]
    pixel.sort(key=lambda d: (d.box_px.top, d.box_px.left, d.box_px.bottom, d.box_px.right))
    return drafts + pixel


Key = tuple[str, str, int, int, int, int]


def candidate_keys(drafts: Sequence[Draft], screen: ScreenSize) -> list[Key]:
    """What makes a candidate "the same" across observations: kind, text, place on a coarse grid."""
    if not drafts:
        return []
    boxes = boxes_array([d.box_px for d in drafts]).astype(np.int64) * KEY_GRID
    extent = np.array(
        [screen.width_px, screen.height_px, screen.width_px, screen.height_px], dtype=np.int64
    )
    cells = (boxes // np.maximum(extent, 1)).tolist()
    return [
        (d.kind, normalise_text(d.text)[:24], c[0], c[1], c[2], c[3])
        for d, c in zip(drafts, cells, strict=True)
    ]


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
_new = object.__new__
# The slots' own descriptors: calling them skips the attribute lookup of object.__setattr__.
(
    _set_id, _set_source, _set_kind, _set_text, _set_box, _set_confidence, _set_flags,
    _set_origin, _set_tree_id, _set_more, _set_listed,
) = (Candidate.__dict__[name].__set__ for name in ("id", *_FIELDS))


def _candidate(cid: int, d: Draft) -> Candidate:
    """``Candidate(id=cid, **d._asdict())`` at a third of the cost (hundreds per observation).

    It fills the same slots the frozen dataclass ``__init__`` fills; the record stays frozen.
    """
    c: Candidate = _new(Candidate)
    _set_id(c, cid)
    _set_source(c, d[0])
    _set_kind(c, d[1])
    _set_text(c, d[2])
    _set_box(c, d[3])
    _set_confidence(c, d[4])
    _set_flags(c, d[5])
    _set_origin(c, d[6])
    _set_tree_id(c, d[7])
    _set_more(c, d[8])
    _set_listed(c, d[9])
    return c


class IdAllocator:
    """Gives candidates ids that survive from one observation to the next on the same page."""

    def __init__(self) -> None:
        self._page: str | None = None
        self._ids: dict[Key, int] = {}
        self._built: dict[Key, tuple[Draft, Candidate]] = {}

    def assign(self, drafts: Sequence[Draft], *, page: str, screen: ScreenSize) -> list[Candidate]:
        keys = candidate_keys(drafts, screen)
        previous = self._ids if page == self._page else {}
        used: set[int] = set()
        ids: list[int | None] = []
        for key in keys:
            old = previous.get(key)
            if old is not None and old not in used:
                used.add(old)
                ids.append(old)
            else:
                ids.append(None)
        next_id = max(used, default=0) + 1
        fresh = max(previous.values(), default=0) + 1 if previous else 1
        next_id = max(next_id, fresh)
        out: list[Candidate] = []
        mapping: dict[Key, int] = {}
        built = self._built if previous else {}
        for d, key, cid in zip(drafts, keys, ids, strict=True):
            if cid is None:
                cid = next_id
                next_id += 1
            mapping.setdefault(key, cid)
            seen = built.get(key)
            if seen is not None and seen[1].id == cid and seen[0] == d:
                out.append(seen[1])  # unchanged since the last observation: reuse the record
                continue
            out.append(_candidate(cid, d))
        self._page = page
        self._ids = {**previous, **mapping} if previous else mapping
        self._built = {k: (d, c) for k, d, c in zip(keys, drafts, out, strict=True)}
        return out

    def reset(self) -> None:
        self._page = None
        self._ids = {}
        self._built = {}
