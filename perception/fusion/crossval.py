"""Cross-validation of the tree against the pixels.

Three checks, from cheap to dear:

- :class:`FrameProbe` (decode only): a quarter-size grey copy and a grid of "content" cells. A
  tree whose text boxes sit on flat pixels, or that leaves much visible content uncovered, does
  not describe this frame (a dialog already gone, a loading splash against a loaded tree).
- :func:`read_back_sample` and :func:`read_back_lines` (a new tree over a new frame, in every
  state): up to four of the tree's labels, or single pieces of its list rows' labels, are read
  back off the pixels where the tree puts them (recognition only, then detection too for the
  labels that did not read back). A tree of the screen before, or after, the one the frame
  shows puts text on pixels that hold something else; ink is there by chance, words are not
  (see :func:`read_back_agreed`).
- :func:`match_text_blocks` (where OCR ran): each OCR block is matched to the tree element that
  holds it (box overlap and centre, in the fast path) and the texts are compared; agreement
  raises both, conflict lowers the weaker.
"""

from __future__ import annotations

import enum
import re
import unicodedata
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

import cv2
import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.config import PixelConfig
from perception.fusion.table import ElementTable, boxes_array
from perception.memo import short_key_cache
from perception.pixel.flags import (
    SIGNATURE_SCALE,
    FrameFlags,
    StabilitySignature,
    frame_flags,
    gray_small,
)
from perception.pixel.frame import Frame
from perception.tree.compress import label_of
from perception.types import ACTIONABLE, BoxPx, ElementFlag, ScreenSize, TreeElement

__all__ = [
    "Agreement",
    "BlockMatch",
    "CrossCheck",
    "FrameProbe",
    "PixelConsistency",
    "TextBlock",
    "boxes_array",
    "check_pixels",
    "match_text_blocks",
    "normalise_text",
    "normalise_texts",
    "numbers_far_apart",
    "ReadBackLine",
    "label_pieces",
    "read_back_agreed",
    "read_back_counted",
    "read_back_lines",
    "read_back_other",
    "read_back_contradicted",
    "read_back_said",
    "read_back_sample",
    "read_back_tally",
    "text_similarity",
    "unlabelled_sample",
]

PROBE_SCALE = SIGNATURE_SCALE
"""The probe works on a grey copy this many times smaller on each side: the pixel flags' own
(:func:`~perception.pixel.flags.gray_small`, computed once for both)."""
CELL_PX = 8
"""Content cells are this many probe pixels square (32 device px at scale 4)."""
FLAT_STD = 6.0
"""A region whose grey standard deviation is at most this is flat (no text can be on it)."""
CUT_MARK = "…"
"""Ends a label piece the tree channel cut short."""
GLYPH_RANGE = 40
GLYPH_DEVIATION = 24
GLYPH_MIN_PIXELS = 4
"""A box flat by its variance still holds a small glyph (a "more" button's three dots in a
square four times their size) when at least ``GLYPH_MIN_PIXELS`` probe pixels differ from the
box's median grey by more than ``GLYPH_DEVIATION`` and its range is ``GLYPH_RANGE`` or more."""
MIN_SHARE_IN = 0.6
"""An OCR block belongs to an element when at least this share of it lies inside."""
AGREE_SIMILARITY = 0.6
PREFIX_CHARS = 8
"""OCR text this long or longer is compared with the start of a longer label as well (what
is drawn of a field that scrolls, or of a title cut with an ellipsis)."""
PREFIX_SIMILARITY = 0.875
"""...and agrees with it only this close (a letter in eight), its digits the same."""
_DIGITS = re.compile(r"\d+")
OCCLUDED = int(ElementFlag.OCCLUDED)
_UNREADABLE = int(ElementFlag.OCCLUDED | ElementFlag.PASSWORD)

READ_BACK_SAMPLES = 4
"""Labels read back per new tree (one recognition batch, about 10 ms on CPU)."""
READ_BACK_SIMILARITY = AGREE_SIMILARITY
"""A label reads back when what the pixels say there is at least this similar to it (as an OCR
block agrees with its element)."""
READ_BACK_HEIGHT = (68, 4)
"""Box heights that hold a readable label: from the frame's width / 68 (16 px at 1080) to its
width / 4 (a dialog button, a launcher icon over its caption: detection finds the line)."""
READ_BACK_CHARS = (3, 24)
"""Label lengths worth reading: long enough not to match by chance, short enough for one line."""
READ_BACK_NUMBERS = 2
"""Of the labels read back, this many are taken first among those holding a number (at least
:data:`NUMBER_DIGITS` digits) when the tree has some: a balance, a date, a phone number is what
changes between two moments of one layout (Unicom's home: its words read back, its data
left, points and phone number were another moment's), and what an agent reads off it."""
NUMBER_DIGITS = 3
READ_BACK_OTHER_CHARS = 6
"""A tree with one label to read back says nothing when the pixels do not say it (an icon's
description, a logo OCR reads as a glyph: an OCR miss), but where they read a line of other
words there, at least this many letters or digits, the frame shows another moment. On the
corpus's pairs with one such label: of 58 matched, 5 not said back, OCR reading 0-4 letters or
digits there ("入", "-ARoi", "8"); of 42 trace steps' labels over the next step's frame, 11
where it reads 7 or more ("Recent apps, default apps" where a launcher's "Search" was, "Change
Log", "Storage")."""


def read_back_other(label: str, said: str) -> bool:
    """Do the pixels say other words (:data:`READ_BACK_OTHER_CHARS` letters or digits, and not
    ``label``: :func:`read_back_said`) where the tree's one label to read back should be?"""
    return (
        sum(ch.isalnum() for ch in said) >= READ_BACK_OTHER_CHARS
        and not read_back_said([label], [said])[0]
    )


_READ_BACK_KINDS = frozenset({"text", "btn", "tab"})
_READ_BACK_SCRIPT = re.compile(
    "[\u0000-\u024f\u1e00-\u1eff\u2000-\u206f\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]*"
)
"""Labels the recogniser (Chinese and Latin) can say: Latin letters, Han, digits, punctuation.
A Korean, Arabic or Cyrillic label reads as nothing or as Latin look-alikes ("Русский" as
"PyccKn") on the very screen it names, so it says nothing about the moment."""


class TextBlock(Protocol):
    """What fusion needs from a pixel candidate (OCR line, anchor, vision answer)."""

    @property
    def text(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def box_px(self) -> BoxPx: ...

    @property
    def confidence(self) -> float: ...


def _not_flat(stats: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
    """From pixel count, sum and sum of squares per box: is the grey variance above flat
    (:data:`FLAT_STD` squared; the rule check_pixels' kernel applies in its pass)?"""
    return fastpath.box_not_flat(stats, FLAT_STD * FLAT_STD)


def _holds_glyph(gray: npt.NDArray[np.uint8], box: npt.NDArray[np.int32]) -> bool:
    """Does a box that is flat by its variance hold a small glyph (see ``GLYPH_RANGE``)? A
    handful of boxes per frame reach this."""
    left, top, right, bottom = (int(v) // PROBE_SCALE for v in box)
    region = gray[max(0, top) : max(top + 1, bottom), max(0, left) : max(left + 1, right)]
    if region.size == 0 or int(region.max()) - int(region.min()) < GLYPH_RANGE:
        return False
    ink = np.abs(region.astype(np.int16) - int(np.median(region))) > GLYPH_DEVIATION
    return int(np.count_nonzero(ink)) >= GLYPH_MIN_PIXELS


MOVED_LEVELS = 12.0
"""A probe cell whose mean grey moves by more than this has changed (noise stays under it)."""
KEYBOARD_BAND_TOP = 0.35
"""A keyboard's change starts below this share of the screen's height (it covers 30-50% of a
phone in portrait, up to 60% in landscape with its suggestion strip)."""
KEYBOARD_BAND_WIDTH = 0.8
"""...and spans at least this share of the screen's width."""


def _cell_sums(
    gray: npt.NDArray[np.uint8],
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float64]]:
    """The sums of grey and of grey squared over each whole :data:`CELL_PX`-square cell of
    ``gray`` (a ragged last row or column of cells left out), from integral images: a tenth of
    the time of reductions over a reshaped copy, and exact."""
    rows, cols = gray.shape[0] // CELL_PX, gray.shape[1] // CELL_PX
    if not rows or not cols:
        return np.zeros((rows, cols), np.int32), np.zeros((rows, cols), np.float64)
    whole = gray[: rows * CELL_PX, : cols * CELL_PX]
    s, q = cv2.integral2(whole, sdepth=cv2.CV_32S, sqdepth=cv2.CV_64F)
    c = CELL_PX
    sums = s[c::c, c::c] - s[:-c:c, c::c] - s[c::c, :-c:c] + s[:-c:c, :-c:c]
    squares = q[c::c, c::c] - q[:-c:c, c::c] - q[c::c, :-c:c] + q[:-c:c, :-c:c]
    return np.asarray(sums, dtype=np.int32), np.asarray(squares, dtype=np.float64)


class FrameProbe:
    """Cheap pixel facts of one frame, computed once and shared by every check."""

    def __init__(
        self, pixels: npt.NDArray[np.uint8], config: PixelConfig | None = None
    ) -> None:
        """``config``: the pixel channel's, whose black and uniform limits the probe's
        :attr:`blank`, :attr:`black` and :attr:`secure` follow (default: ``PixelConfig()``)."""
        h, w = pixels.shape[:2]
        self.size = ScreenSize(int(w), int(h))
        self.gray: npt.NDArray[np.uint8] = gray_small(pixels)
        sums, squares = _cell_sums(self.gray)
        n = CELL_PX * CELL_PX
        # Exact: integer sums, a variance of whole numbers over a power of two.
        variance = (squares - sums.astype(np.float64) ** 2 / n) / n
        self.content: npt.NDArray[np.bool_] = variance > FLAT_STD**2
        """``bool[rows, cols]``: cells with visible structure (grey standard deviation above
        :data:`FLAT_STD`)."""
        self.thumb: npt.NDArray[np.float32] = (sums / n).astype(np.float32)
        """``float32[rows, cols]``: each cell's mean grey."""
        self.mean = float(self.gray.mean()) if self.gray.size else 0.0
        cfg = config or PixelConfig()
        self.config = cfg
        """The limits :attr:`flags` follow."""
        # The pixel channel's flags, for every frame: black and uniform, and the pop-up over
        # a dimmed page the tree is checked against (2-5 ms on a phone's frame, on the grey
        # copy above; the pixel channel takes them from here instead of computing them again).
        flags, signature = frame_flags(Frame.from_array(pixels), cfg, gray=self.gray)
        self.flags: FrameFlags = flags
        """The pixel channel's flags of this frame (by :attr:`config`'s limits)."""
        self.signature: StabilitySignature = signature
        """The stability signature computed with :attr:`flags`: what a
        :class:`~perception.pixel.read.PixelReader` of this ``config`` takes for this frame
        instead of computing both again (``read(flagged=...)``)."""

    @property
    def blank(self) -> bool:
        """Black or one colour as the pixel channel flags it (bars and screen edges aside,
        nothing drawn): nothing to read. A true-black dark theme with labels on it is neither,
        and is read."""
        return self.flags.black or self.flags.uniform

    @property
    def black(self) -> bool:
        """Black as the pixel channel flags it: what a FLAG_SECURE window's capture looks like
        (or a display that is off). A blank frame of another colour (white, a theme's grey) is
        an app that has not drawn yet."""
        return self.flags.black

    @property
    def secure(self) -> bool:
        """The pixel channel takes this frame for a FLAG_SECURE capture (see
        :attr:`perception.pixel.flags.FrameFlags.secure`)."""
        return self.flags.secure

    def _probe_boxes(self, boxes: Sequence[BoxPx] | npt.NDArray[np.int32]) -> npt.NDArray[np.int32]:
        arr = boxes_array(boxes)
        return arr // PROBE_SCALE

    def nonflat(self, boxes: Sequence[BoxPx] | npt.NDArray[np.int32]) -> npt.NDArray[np.bool_]:
        """For each box (or ``int32[N, 4]`` row), whether its pixels are not flat."""
        return _not_flat(fastpath.box_gray_stats(self.gray, self._probe_boxes(boxes)))

    def coverage(self, boxes: Sequence[BoxPx] | npt.NDArray[np.int32]) -> float | None:
        """Share of content cells that some box covers (None when the frame has no content)."""
        total = int(self.content.sum())
        if total == 0:
            return None
        cell = PROBE_SCALE * CELL_PX
        arr = boxes_array(boxes)
        if len(arr):
            # A box covers a cell when it covers the cell's centre.
            arr = (arr + cell // 2) // cell
        mask = fastpath.paint_boxes(self.content.shape[0], self.content.shape[1], arr)
        return int((mask.astype(bool) & self.content).sum()) / total

    def _moved(self, other: FrameProbe) -> npt.NDArray[np.bool_]:
        """The cells whose mean grey moved by more than :data:`MOVED_LEVELS` (same size)."""
        moved: npt.NDArray[np.bool_] = np.abs(self.thumb - other.thumb) > MOVED_LEVELS
        return moved

    def change(self, other: FrameProbe) -> float:
        """Share of cells whose mean grey moved by more than :data:`MOVED_LEVELS` (1.0:
        different size)."""
        if self.thumb.shape != other.thumb.shape:
            return 1.0
        if self.thumb.size == 0:
            return 0.0
        return float(self._moved(other).mean())

    def keyboard_band(self, other: FrameProbe) -> bool:
        """Whether what changed between ``other`` and this frame is a band along the bottom
        edge, across the screen, below the top third: an on-screen keyboard come up or gone
        (the page above it the same picture)."""
        if self.thumb.shape != other.thumb.shape or self.thumb.size == 0:
            return False
        moved = self._moved(other)
        rows_moved = np.asarray(moved.any(axis=1))
        if not rows_moved.any():
            return False
        rows = moved.shape[0]
        first = int(np.argmax(rows_moved))
        band = moved[first:]
        return bool(
            first >= rows * KEYBOARD_BAND_TOP
            and rows_moved[-max(1, rows // 8) :].any()
            and band.any(axis=0).mean() >= KEYBOARD_BAND_WIDTH
        )

    def moved_in(
        self, other: FrameProbe, boxes: Sequence[BoxPx] | npt.NDArray[np.int32], levels: float
    ) -> bool:
        """Whether a cell whose centre one of ``boxes`` covers moved by more than ``levels``
        grey levels between ``other`` and this frame (True when the sizes differ)."""
        if self.thumb.shape != other.thumb.shape:
            return True
        arr = boxes_array(boxes)
        if not len(arr):
            return False
        cell = PROBE_SCALE * CELL_PX
        moved = np.abs(self.thumb - other.thumb) > levels
        rows, cols = moved.shape
        for x0, y0, x1, y1 in ((arr + cell // 2) // cell).tolist():
            if moved[max(0, y0) : min(rows, y1), max(0, x0) : min(cols, x1)].any():
                return True
        return False


@dataclass(frozen=True, slots=True, kw_only=True)
class PixelConsistency:
    """How well a tree matches the frame it was paired with (decode-only checks)."""

    text_on_pixels: float | None
    """Share of the tree's visible text boxes that are not flat (None: no such boxes)."""
    text_boxes: int
    coverage: float | None
    """Share of the frame's content cells covered by tree elements (None: a blank frame)."""
    doubtful: tuple[int, ...]
    """Indices of elements whose text box is flat: where the tree is doubtful."""


def check_pixels(
    elements: Sequence[TreeElement], probe: FrameProbe, *, table: ElementTable | None = None
) -> PixelConsistency:
    """Tree against frame: visible labelled boxes on flat pixels, content no element covers.

    ``table``: the columns of ``elements`` when the caller has them already."""
    t = ElementTable(elements) if table is None else table
    # One pass over the elements (fast path): the visible labelled boxes, those on flat
    # pixels (by _not_flat's variance), and the content cells the visible boxes cover.
    labelled, flat, covered, total = fastpath.flat_labels(
        probe.gray,
        probe.content,
        t.box_array,
        t.flag_array,
        t.texts,
        hidden=OCCLUDED,
        scale=PROBE_SCALE,
        cell=PROBE_SCALE * CELL_PX,
        flat_var=FLAT_STD * FLAT_STD,
    )
    # A box flat by its variance that holds a small glyph is text on pixels all the same.
    doubtful = tuple(i for i in flat if not _holds_glyph(probe.gray, t.box_array[i]))
    return PixelConsistency(
        text_on_pixels=(labelled - len(doubtful)) / labelled if labelled else None,
        text_boxes=labelled,
        coverage=covered / total if total else None,
        doubtful=doubtful,
    )


# --- text comparison ---------------------------------------------------------------------------


_NOT_ALNUM = re.compile(r"[\W_]+")


@short_key_cache(maxsize=8192)
def normalise_text(text: str) -> str:
    """NFKC, case-folded, letters and digits only (what OCR and the tree can agree on)."""
    if text.isascii():
        # NFKC leaves ASCII alone, casefold is lower(), and [\W_] is "not [A-Za-z0-9]".
        low = text.lower()
        return low if low.isalnum() else _NOT_ALNUM.sub("", low)
    return _NOT_ALNUM.sub("", unicodedata.normalize("NFKC", text).casefold())


def normalise_texts(texts: Iterable[str]) -> list[str]:
    """:func:`normalise_text` of each text, through its cache in one call (a candidate list's
    texts: a Python call a text cost a fusion of 300 candidates 30 us)."""
    return cast(list[str], normalise_text.many(texts))  # type: ignore[attr-defined]


def text_similarity(tree_text: str, ocr_text: str) -> float:
    """1.0 when one contains the other (pieces of a ``" | "`` label count), else 1 - CER."""
    return _similarity(tree_text, normalise_text(ocr_text))


def _similarity(tree_text: str, o: str) -> float:
    """:func:`text_similarity` against OCR text already through :func:`normalise_text`."""
    if not o:
        return 0.0
    best = 0.0
    # The whole label, then its pieces when it has several (a one-piece label only once).
    pieces = [tree_text, *tree_text.split(" | ")] if " | " in tree_text else (tree_text,)
    for piece in pieces:
        t = normalise_text(piece.rstrip("…"))
        if not t:
            continue
        if (len(o) >= 2 and o in t) or (len(t) >= 2 and t in o) or o == t:
            return 1.0
        if PREFIX_CHARS <= len(o) < len(t):
            # The start of a longer label, the rest cut off where it is drawn (a field's
            # URL scrolled, a title ellipsised), with at most a letter in eight misread and
            # the same digits ("Payment of $1,950" is no start of "Payment of $1,250.00").
            head, o64 = t[: len(o)], o[:64]
            near = 1.0 - fastpath.edit_distance(head[:64], o64) / len(o64)
            if near >= PREFIX_SIMILARITY and _DIGITS.findall(head) == _DIGITS.findall(o):
                best = max(best, near)
        t, o64 = t[:64], o[:64]
        best = max(best, 1.0 - fastpath.edit_distance(t, o64) / max(len(t), len(o64)))
    return best


@enum.unique
class Agreement(enum.StrEnum):
    AGREE = "agree"
    CONFLICT = "conflict"
    FILLS = "fills"
    """The block lies in an element without text: OCR supplies the label."""
    CONTINUES = "continues"
    """The block lies in an element whose label was cut ("…") and is not its visible part: it
    may well be the text past the cut (a paragraph's later lines), so it neither agrees nor
    conflicts, and it is the element's text, not a candidate of its own."""
    UNMATCHED = "unmatched"


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockMatch:
    element: int
    """Index into the tree elements, -1 when no element holds the block."""
    share: float
    agreement: Agreement
    similarity: float


_MATCH_FIELDS = ("element", "share", "agreement", "similarity")
assert tuple(BlockMatch.__dataclass_fields__) == _MATCH_FIELDS
_MATCH_SLOTS = tuple(BlockMatch.__dict__[f] for f in _MATCH_FIELDS)
_AGREE, _CONFLICT, _FILLS, _CONTINUES, _UNMATCHED = (
    Agreement.AGREE,
    Agreement.CONFLICT,
    Agreement.FILLS,
    Agreement.CONTINUES,
    Agreement.UNMATCHED,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class CrossCheck:
    matches: tuple[BlockMatch, ...]
    """One per text block, in block order."""
    agreement: float | None
    """Share of blocks matched to a labelled element whose texts agree (None: none compared)."""
    compared: int


def match_text_blocks(
    elements: Sequence[TreeElement],
    blocks: Sequence[TextBlock],
    *,
    table: ElementTable | None = None,
    unseen: Collection[int] = (),
) -> CrossCheck:
    """Match OCR text blocks to tree elements and compare their texts (``table``: the columns
    of ``elements`` when the caller has them already). A block whose element is in ``unseen``
    (the indices of web views and canvases whose content the tree does not describe: a page
    the browser kept out of the dump, named after its title) is unmatched: it is content the
    tree lacks, not a word against the element's label."""
    tree_boxes = table.box_array if table is not None else boxes_array([e.box_px for e in elements])
    best, share = fastpath.match_blocks(tree_boxes, boxes_array([b.box_px for b in blocks]))
    # Each match as (element, (share, agreement, similarity)), made into records at the end.
    held: list[int] = []
    found: list[tuple[float, Agreement, float]] = []
    agree = compared = 0
    texts = table.texts if table is not None else [e.text for e in elements]
    for block, i, s in zip(blocks, best.tolist(), share.tolist(), strict=True):
        o = normalise_text(block.text) if i >= 0 and s >= MIN_SHARE_IN and i not in unseen else ""
        if not o:
            held.append(-1)
            found.append((s, _UNMATCHED, 0.0))
            continue
        label = texts[i]
        if not normalise_text(label):
            said = _said_beside(i, block.box_px, o, tree_boxes, texts)
            if said >= 0:
                # The line straddles the labelled element it reads (a browser's URL bar
                # inside its unlabelled toolbar): that element's, not the wrapper's label.
                held.append(said)
                compared += 1
                agree += 1
                found.append((s, _AGREE, 1.0))
                continue
            held.append(i)
            found.append((s, _FILLS, 0))
            continue
        held.append(i)
        sim = _similarity(label, o)
        ok = sim >= AGREE_SIMILARITY
        if not ok and CUT_MARK in label:
            found.append((s, _CONTINUES, sim))
            continue
        compared += 1
        agree += ok
        found.append((s, _AGREE if ok else _CONFLICT, sim))
    matches = fastpath.records(BlockMatch, _MATCH_SLOTS, held, found)
    return CrossCheck(
        matches=tuple(matches), agreement=agree / compared if compared else None, compared=compared
    )


def _said_beside(
    i: int, box: BoxPx, o: str, tree_boxes: npt.NDArray[np.int32], texts: Sequence[str]
) -> int:
    """An element inside element ``i`` (the unlabelled wrapper holding most of the block at
    ``box``) that the block overlaps and whose label it says (OCR text ``o``), or -1."""
    b = tree_boxes
    wl, wt, wr, wb = (int(v) for v in b[i])
    inside = (b[:, 0] >= wl) & (b[:, 1] >= wt) & (b[:, 2] <= wr) & (b[:, 3] <= wb)
    overlaps = inside & (
        (b[:, 0] < box.right) & (b[:, 2] > box.left) & (b[:, 1] < box.bottom) & (b[:, 3] > box.top)
    )
    for j in np.flatnonzero(overlaps).tolist():
        if j != i and texts[j] and _similarity(texts[j], o) >= AGREE_SIMILARITY:
            return int(j)
    return -1


# --- reading labels back -------------------------------------------------------------------


def _line_heights(frame_size: ScreenSize, high_div: int) -> tuple[int, int]:
    """The heights a box holding a line of text can have: from the frame's width / 68 (at
    least 12 px) to its width / ``high_div``."""
    width = frame_size.width_px
    return max(12, width // READ_BACK_HEIGHT[0]), width // high_div


def _readable_boxes(
    table: ElementTable, frame_size: ScreenSize, high_div: int
) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.bool_]]:
    """The elements' boxes, their heights, and which could hold a line of text the pixels
    show: inside the frame, from the frame's width / 68 (at least 12 px) to its width /
    ``high_div`` tall, offered (not occluded) and no password."""
    boxes = table.box_array
    heights = boxes[:, 3] - boxes[:, 1]
    width = frame_size.width_px
    low, high = _line_heights(frame_size, high_div)
    ok = (
        (heights >= low) & (heights <= high)
        & (boxes[:, 0] >= 0) & (boxes[:, 1] >= 0)
        & (boxes[:, 2] <= width) & (boxes[:, 3] <= frame_size.height_px)
        & ((table.flag_array & _UNREADABLE) == 0)
    )
    return boxes, heights, ok


def _worth_reading(kind: str, text: str, class_name: str) -> bool:
    """A label recognition can say back: :data:`READ_BACK_CHARS` long, not a resource name, in
    a script the recogniser reads (``_READ_BACK_SCRIPT``), on a text, button or tab that is not
    an image (its description is not drawn) or an input (its text is the user's)."""
    shortest, longest = READ_BACK_CHARS
    return (
        kind in _READ_BACK_KINDS
        and shortest <= len(text) <= longest
        and text[0] != "["
        # ASCII is inside the script's first range: no regex pass needed for it.
        and (text.isascii() or _READ_BACK_SCRIPT.fullmatch(text) is not None)
        and "Image" not in class_name
        and "Edit" not in class_name
    )


def read_back_sample(
    table: ElementTable, *, hidden: frozenset[int] | set[int], frame_size: ScreenSize
) -> list[int]:
    """Indices of up to :data:`READ_BACK_SAMPLES` elements whose label should read back off the
    pixels: one-piece text labels of 3-24 characters (not a resource id, not a description on
    an image or an input's text, in a script the recogniser reads: see
    ``_READ_BACK_SCRIPT``) in a box inside the frame that can hold it (see
    :data:`READ_BACK_HEIGHT`), offered (not occluded, not a password, not a hidden list item),
    distinct labels; static text first (its box fits its line, which recognition alone reads),
    then tallest first (OCR reads large text best)."""
    if len(table) == 0:
        return []
    # The boxes _readable_boxes takes (READ_BACK_HEIGHT[1]) that are also 3:2 wide at least.
    low, high = _line_heights(frame_size, READ_BACK_HEIGHT[1])
    tallest_first = fastpath.line_boxes(
        table.box_array,
        table.flag_array,
        unreadable=_UNREADABLE,
        width=frame_size.width_px,
        height=frame_size.height_px,
        low=low,
        high=high,
    )
    kinds, texts, elements = table.kinds, table.texts, table.elements
    shortest, longest = READ_BACK_CHARS
    # Over the line boxes four times: labels with numbers (static text, then the rest) up to
    # READ_BACK_NUMBERS, then any (static text, then the rest); the recogniser's script and the
    # element's class (_worth_reading) asked last, of the few labels every other test passes.
    return fastpath.read_back_pick(
        tallest_first,
        kinds,
        texts,
        hidden,
        lambda i: _worth_reading(kinds[i], texts[i], elements[i].class_name),
        shortest=shortest,
        longest=longest,
        samples=READ_BACK_SAMPLES,
        numbers_first=READ_BACK_NUMBERS,
        digits=NUMBER_DIGITS,
    )


READ_BACK_TOP_BAR = 0.12
"""A label whose box ends above this share of the frame's height sits in the app bar, where an
app's pages put the same title: read back alone, it does not say which page the frame shows."""


@dataclass(frozen=True, slots=True)
class ReadBackLine:
    """A label the pixels should say where the tree puts it: an element's one-piece label in
    the element's box, or one piece of a multi-piece label in its own text node's box."""

    label: str
    box: BoxPx
    title: bool
    """In the app bar (see :data:`READ_BACK_TOP_BAR`)."""


def label_pieces(
    texts: Sequence[str],
    node_texts: Sequence[str],
    node_boxes: npt.NDArray[np.int32],
    node_element: npt.NDArray[np.int32],
) -> list[tuple[int, str, BoxPx]]:
    """``(element, piece, box)`` for each text node a multi-piece label absorbed (a list row's
    "Launch activity as root" over its activity's name): the piece as its node says it, in the
    node's own box, which holds its line alone. ``node_texts``/``node_boxes``/``node_element``:
    each raw node's text, box and covering element (-1: none), in document order."""
    out: list[tuple[int, str, BoxPx]] = []
    for n in np.flatnonzero(node_element >= 0).tolist():
        text = node_texts[n].strip()
        i = int(node_element[n])
        if text and " | " in texts[i]:
            left, top, right, bottom = (int(v) for v in node_boxes[n])
            if right > left and bottom > top:
                out.append((i, text, BoxPx(left, top, right, bottom)))
    return out


def read_back_lines(
    table: ElementTable,
    picked: Sequence[int],
    *,
    hidden: frozenset[int] | set[int],
    frame_size: ScreenSize,
    pieces: Sequence[tuple[int, str, BoxPx]] = (),
) -> list[ReadBackLine]:
    """The labels to read back: the elements ``picked`` by :func:`read_back_sample`, then, up
    to :data:`READ_BACK_SAMPLES` below the app bar, pieces of multi-piece labels (``pieces``,
    see :func:`label_pieces`) of offered elements, one a row, in their own node's box that can
    hold a line (see :data:`READ_BACK_HEIGHT`), tallest first, labels not yet taken.

    A screen of list rows ("Icona: | Launch activity as root") offers no one-piece label but
    its title, which the app's other pages share: its rows' own lines say which page it is."""
    top_bar = frame_size.height_px * READ_BACK_TOP_BAR
    lines = [
        ReadBackLine(table.texts[i], table.boxes[i], table.boxes[i].bottom <= top_bar)
        for i in picked
    ]
    body = sum(1 for line in lines if not line.title)
    if body >= READ_BACK_SAMPLES or not pieces:
        return lines
    width, height = frame_size.width_px, frame_size.height_px
    low, high = _line_heights(frame_size, READ_BACK_HEIGHT[1])
    shortest = READ_BACK_CHARS[0]
    flags, kinds, elements = table.flag_array, table.kinds, table.elements
    taken = {normalise_text(line.label) for line in lines}
    rows: set[int] = set()
    for i, text, box in sorted(pieces, key=lambda p: p[2].top - p[2].bottom):
        if (
            i in rows or i in hidden
            or int(flags[i]) & _UNREADABLE
            or not _worth_reading(kinds[i], text, elements[i].class_name)
            or not low <= box.bottom - box.top <= high
            or (box.right - box.left) * 2 < (box.bottom - box.top) * 3
            or box.left < 0 or box.top < 0 or box.right > width or box.bottom > height
            or box.bottom <= top_bar
            or not elements[i].box_px.contains(box.center)
        ):
            continue
        norm = normalise_text(text)
        if len(norm) < shortest or norm in taken:
            continue
        taken.add(norm)
        rows.add(i)
        lines.append(ReadBackLine(text, box, False))
        body += 1
        if body == READ_BACK_SAMPLES:
            break
    return lines


def read_back_agreed(labels: Sequence[str], read: Sequence[str]) -> int:
    """How many labels the pixels say back (:data:`READ_BACK_SIMILARITY` or more similar).

    On the corpus (``perception-bench fusion``, one-shot, so no history helps): of 344 pairs
    the corpus marks matched, 4 read back too few, and on their screenshots each shows another
    moment than its tree (a dialog already gone, twice; a web page moved under banners; the
    launcher under an app's tree); a trace step's tree over the next step's frame is flagged
    in 206 of 268 pairs (180 with one-piece labels only, any one agreeing passing the tree; 60
    without this check). Recognition alone misses labels in boxes much taller than their line
    or holding an icon, so when it reads too few of them the rest are read again with
    detection before the tree fails (see :func:`perception.fusion.score.read_back_failed`).
    """
    return sum(read_back_said(labels, read))


def read_back_said(labels: Sequence[str], read: Sequence[str]) -> list[bool]:
    """For each label, whether the pixels say it back (:data:`READ_BACK_SIMILARITY` or more
    similar; :func:`read_back_agreed` counts them)."""
    return [
        bool(text) and text_similarity(label, text) >= READ_BACK_SIMILARITY
        for label, text in zip(labels, read, strict=True)
    ]


NUMBERS_CLEARLY_DIFFER = 2
"""Digits two numbers differ in (place by place, or a digit more or fewer) before they say
another moment rather than a misread digit."""
_NUMBER_RUN = re.compile(r"\d+")


def read_back_contradicted(labels: Sequence[str], read: Sequence[str]) -> list[bool]:
    """For each label, whether the pixels say it with other numbers: the same words (its
    text without digits, normalised, the same), numbers that differ in at least
    :data:`NUMBERS_CLEARLY_DIFFER` digits ("128.98GB" read as "130.38GB", "截至 2025/08/13
    19:44" as "截至 2025/08/13 14:20"). A misread digit or two numbers of one value agree."""
    out: list[bool] = []
    for label, text in zip(labels, read, strict=True):
        if text == label:
            out.append(False)  # said word for word (what a label read back mostly is)
            continue
        ours, theirs = normalise_text(label), normalise_text(text)
        ours_digits = "".join(_NUMBER_RUN.findall(ours))
        theirs_digits = "".join(_NUMBER_RUN.findall(theirs))
        if (
            not ours_digits
            or not theirs_digits
            or _NUMBER_RUN.sub("", ours) != _NUMBER_RUN.sub("", theirs)
        ):
            out.append(False)
            continue
        differ = abs(len(ours_digits) - len(theirs_digits)) + sum(
            a != b for a, b in zip(ours_digits, theirs_digits, strict=False)
        )
        out.append(differ >= NUMBERS_CLEARLY_DIFFER)
    return out


NUMBERS_TICK_MINUTES = 5
"""Two times of day (or a stopwatch's readings) this many minutes apart or fewer are the same
moment ticking on between the dump and the frame (a clock turning the minute, a stopwatch)."""
NUMBERS_TICK_SHARE = 0.5
"""Two other numbers differing by less than this share of the larger (of 10 at least) are one
value ticking on (a download's size or percentage growing, its seconds left falling)."""
IDENTIFIER_DIGITS = 7
"""A run of this many digits or more (spaces or dashes between them allowed) is an identifier
(a phone or account number): any other digits in it say another moment."""
_IDENTIFIER = re.compile(rf"\d(?:[ -]?\d){{{IDENTIFIER_DIGITS - 1},}}")
_VALUE = re.compile(r"\d+(?:[.:]\d+)*")


def numbers_far_apart(label: str, text: str) -> bool:
    """Whether ``text`` says ``label``'s numbers with values no ticking explains: identifiers
    (:data:`IDENTIFIER_DIGITS`) that differ, times more than :data:`NUMBERS_TICK_MINUTES`
    apart ("19:44" read as "14:20"), other numbers at least :data:`NUMBERS_TICK_SHARE` apart,
    or numbers that do not pair up one for one. "4.5 MB" read as "5.8 MB", "00:12:59" as
    "00:13:00" or "About 35 seconds left" as "About 28 seconds left" are one screen ticking."""
    ours = [re.sub(r"\D", "", m) for m in _IDENTIFIER.findall(label)]
    theirs = [re.sub(r"\D", "", m) for m in _IDENTIFIER.findall(text)]
    if ours != theirs:
        return True
    values = _VALUE.findall(_IDENTIFIER.sub(" ", label))
    said = _VALUE.findall(_IDENTIFIER.sub(" ", text))
    if len(values) != len(said):
        return True
    return any(a != b and _values_far_apart(a, b) for a, b in zip(values, said, strict=True))


def _values_far_apart(a: str, b: str) -> bool:
    """Two numbers of :func:`numbers_far_apart` paired up (``\\d+`` joined by ``.`` or ``:``)."""
    if ":" in a or ":" in b:
        ours, theirs = a.split(":"), b.split(":")
        if len(ours) != len(theirs):
            return True
        gap = abs(_sexagesimal(ours) - _sexagesimal(theirs))
        # hh:mm (or mm:ss) ticks in minutes, hh:mm:ss in seconds.
        return gap > NUMBERS_TICK_MINUTES * (60 if len(ours) > 2 else 1)
    if a.count(".") > 1 or b.count(".") > 1:
        return True  # a date or a version: no value to tick
    x, y = float(a), float(b)
    return abs(x - y) >= NUMBERS_TICK_SHARE * max(x, y, 10.0)


def _sexagesimal(groups: Sequence[str]) -> float:
    value = 0.0
    for group in groups:
        value = value * 60 + (float(group) if group.count(".") <= 1 else 0.0)
    return value


def read_back_tally(
    labels: Sequence[str], read: Sequence[str], counted: Sequence[bool]
) -> tuple[list[bool], int]:
    """Which labels the pixels say back (:func:`read_back_said`, not with other numbers far
    apart), and how many of the counted ones agree net: those said back, less those said with
    other numbers (:func:`read_back_contradicted`) far apart (:func:`numbers_far_apart`),
    which are the pixels saying another moment, not an OCR miss (at least 0). Numbers that
    tick (a clock, a stopwatch, a download's progress) differ without contradicting: the
    label counts as said back when it is similar enough, as any label."""
    wrong = [
        w and numbers_far_apart(label, text)
        for w, label, text in zip(read_back_contradicted(labels, read), labels, read, strict=True)
    ]
    ok = [o and not w for o, w in zip(read_back_said(labels, read), wrong, strict=True)]
    agreed = sum(o and c for o, c in zip(ok, counted, strict=True))
    against = sum(w and c for w, c in zip(wrong, counted, strict=True))
    return ok, max(0, agreed - against)


def read_back_counted(lines: Sequence[ReadBackLine]) -> list[bool]:
    """Which lines the verdict counts: those below the app bar when there are at least two
    (an app's pages share the title there: it reading back does not pass a tree whose other
    labels read as something else), else all of them."""
    body = [not line.title for line in lines]
    return body if sum(body) >= 2 else [True] * len(lines)


# --- labels off the pixels -----------------------------------------------------------------


PIXEL_LABELS = 8
"""Unlabelled actions a new tree and picture get read for (see :func:`unlabelled_sample`)."""
GLYPH_LABELS = 32
"""Unlabelled actions a new tree and picture get looked at for an icon glyph (see
:func:`perception.pixel.glyphs.read_glyphs`: a fraction of a millisecond each, where OCR of one
costs several)."""
_LABEL_KINDS = frozenset({"btn", "img", "tab", "view"})
_ACTIONABLE = int(ACTIONABLE)


def unlabelled_sample(
    table: ElementTable,
    *,
    hidden: frozenset[int] | set[int],
    frame_size: ScreenSize,
    limit: int = PIXEL_LABELS,
) -> list[int]:
    """Indices of up to ``limit`` (:data:`PIXEL_LABELS`) actions the tree gives the model no
    label for, or only a resource id, in document order: first those with no label at all (no
    text, no description, no resource id to show), then those named only by their resource
    id. Offered (not occluded, not a hidden list item), a button, image, tab or plain view, in
    a box inside the frame as tall as a line of text can be (the frame's width / 68 to / 3)
    and at most a fifth of it.

    A box around a labelled element's centre is left out: its text is that element's
    (Habitica's task row around the task's name, a clickable of its own). On the corpus (120
    pairs, before that rule), 70 of 158 such boxes held text the pixels show: a custom-drawn
    "使用" button repeated down a list, QQ Music's nav buttons, Weibo's post headers; the rest
    were icons.

    A resource id is the developer's name, not what the user sees, and often says nothing
    (Weibo's "+Follow" is ``detail_activity_header_common_button``, its "⋯" ``titleRight``,
    the "×" of its login page ``iv_title_back``): on the corpus's 358 pairs the pixels name 29
    such actions in 26 pairs (checked by eye): 22 glyphs (× ⋯ ‹ search) and 5 words as shown,
    "+关注" read "十关注", and a video's vote card as its lines with a few characters wrong.
    """
    n = len(table)
    if n == 0 or all(table.texts):
        return []  # no element, or every one has a text of its own
    width, height = frame_size.width_px, frame_size.height_px
    boxes, heights, ok = _readable_boxes(table, frame_size, 3)
    ok &= (
        (boxes[:, 2] - boxes[:, 0] >= heights // 2)  # room for a glyph or two
        & ((boxes[:, 2] - boxes[:, 0]).astype(np.int64) * heights * 5 <= width * height)
        & ((table.flag_array & _ACTIONABLE) != 0)
    )
    nameless: list[int] = []
    named_by_id: list[int] = []
    texts, kinds, rids = table.texts, table.kinds, table.resource_ids
    for i in np.flatnonzero(ok).tolist():
        if texts[i] or kinds[i] not in _LABEL_KINDS or i in hidden:
            continue
        (named_by_id if label_of("", rids[i]) else nameless).append(i)
    if not nameless and not named_by_id:
        return []
    # Centres of the labelled elements: a box around one holds its text, not a label of its
    # own (Habitica's task row around the task's name).
    keep = np.fromiter((bool(t) for t in texts), bool, n)
    labelled = ((boxes[keep, :2] + boxes[keep, 2:]) // 2).astype(np.int32)
    picked: list[int] = []
    for i in nameless + named_by_id:
        left, top, right, bottom = boxes[i].tolist()
        if np.any(
            (labelled[:, 0] >= left) & (labelled[:, 0] < right)
            & (labelled[:, 1] >= top) & (labelled[:, 1] < bottom)
        ):
            continue
        picked.append(i)
        if len(picked) == limit:
            break
    return picked
