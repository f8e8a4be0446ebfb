"""Confidence of each channel, from the evidence at hand.

Tree confidence (0-1) is a product of factors, each 1.0 when its signal is healthy, so the
observation can say which signal pulled it down: structure (element count), text share,
opaque area (SurfaceView / canvas-like / WebView), partial dump, freshness, consistency with the
previous tree of the same action epoch, consistency with the frame (text on flat pixels, visible
content no element covers -- of its own window for a pop-up or dialog dumped alone whose labels
read back --, labels that do not read back off the pixels, a pop-up the pixels show that the
dump does not hold) and agreement with OCR where OCR ran.

Pixel confidence per candidate follows its origin: OCR text that matches a layout element high,
unmatched OCR medium-high, geometric anchors medium, an isolated vision-model answer low.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from math import floor as _floor

from perception.types import TreeHealth

TEXT_ON_PIXELS_MIN = 0.6
"""Below this share of labelled element boxes on non-flat pixels the tree does not describe the
frame (calibrated on the corpus: the six desync pairs score 0.00-0.57, matched pairs >= 0.64 but
one at 0.40)."""


FEW_ELEMENTS = 2
"""A tree offering at most this many elements offers next to nothing else: a big text-less leaf
under it is a canvas (custom-drawn), a surface under it is the whole screen."""


def canvas_share(h: TreeHealth) -> float:
    """The screen's share a canvas draws, as it counts: a big text-less leaf (a background
    image, a dim layer) is common under a good tree, and only means "custom-drawn" when the
    tree offers next to nothing else (:data:`FEW_ELEMENTS`)."""
    return h.canvas_area_share if h.element_count <= FEW_ELEMENTS else 0.0


SURFACE_UNDER_CONTROLS = 0.5
"""How much of the tree's confidence a surface covering the whole screen takes when the tree
offers more than :data:`FEW_ELEMENTS` elements (0.85 when it offers no more): 0.5 puts a
full-screen camera, video or map under its controls in tree-unstable, a game with nothing else
in its dump in pixel-fallback."""


READ_BACK_MIN = 2
"""Labels read back before their silence says anything (one unread label may be an OCR miss)."""
READ_BACK_SHARE = 3
"""A tree reads back when at least one in this many of its sampled labels does: one of two or
three, two of four (a label both screens show, a tab strip's, does not pass a tree whose other
labels read as something else; an OCR miss or two does not fail one). A label the pixels say
with other numbers counts against the others (see ``read_back_agreed``): Unicom's home, two
labels read back and its date read with another time, fails."""


def read_back_failed(sampled: int, agreed: int) -> bool:
    """Do ``agreed`` of ``sampled`` labels read back too few to be this frame's tree?"""
    return sampled >= READ_BACK_MIN and agreed * READ_BACK_SHARE < sampled


def _clamp(x: float, lo: float = 0.0, hi: float = 1.0) -> float:
    return min(hi, max(lo, x))


def unit4(x: float) -> float:
    """``x`` clamped to [0, 1] and rounded to 4 places, half up. ``round(x, 4)`` finds the
    correctly rounded decimal, which costs about 1 us a call, ten times this; the two differ
    only on exact binary ties (none in a million random values), and a fusion rounds a score
    per pixel candidate."""
    return _floor(min(1.0, max(0.0, x)) * 10000.0 + 0.5) / 10000.0


@dataclass(frozen=True, slots=True, kw_only=True)
class TreeEvidence:
    """Everything known about one tree when it is scored (None: not measured)."""

    health: TreeHealth | None
    """None when there is no usable tree (missing, or the dump failed)."""
    gap_ms: float | None = None
    """Time between the tree's and the frame's capture intervals."""
    window_ms: float = 300.0
    text_on_pixels: float | None = None
    text_boxes: int = 0
    coverage: float | None = None
    previous_coverage: float | None = None
    """Coverage of the previous tree of this epoch on a frame that has not changed since."""
    previous_elements: int | None = None
    """Element count of the previous tree of this epoch when the frame has not changed."""
    previous_text_elements: int | None = None
    """Visible labelled elements of that previous tree (``text_boxes`` of its pixel check)."""
    stale: bool = False
    """The tree is the same as before the last action while the frame changed: a stale dump."""
    ocr_agreement: float | None = None
    ocr_compared: int = 0
    read_back_sampled: int = 0
    """Labels the tree puts on the frame that were read back off the pixels (0: not checked)."""
    read_back_agreed: int = 0
    """How many of them the pixels say, less those they say with other numbers (see
    ``perception.fusion.crossval.read_back_tally``): a balance or a date that differs is the
    pixels saying another moment, not an OCR miss."""
    read_back_other: bool = False
    """The tree has one label to read back, the pixels do not say it and read a line of other
    words there (``perception.fusion.crossval.read_back_other``): another moment's tree. (One
    label not said, nothing else read, is an OCR miss as likely, and says nothing.)"""
    window_content: float | None = None
    """For a dump that is one window floating over the screen (``TreeHealth.floating_window``:
    a pop-up menu, a dialog dumped alone), the share of the frame's content cells inside its
    window (None: not measured). The rest of the frame is the page under the window, which
    such a dump does not hold: where its labels read back, ``coverage`` is counted against its
    own window (``coverage / window_content``), not the screen."""
    transposed: bool = False
    """The tree's windows fit the frame only turned a quarter: the screen rotated between the
    two captures, and the tree does not describe this frame."""
    loading_drawn: bool = False
    """The tree shows part of the page loading (:func:`perception.fusion.screen.loading_spot`)
    where the frame shows that part drawn: the dump is older than the frame (the page loaded
    between the two captures)."""
    modal_missing: bool = False
    """The pixels show a pop-up over a dimmed page (the pixel channel's modal surface) that no
    node of the tree matches (:data:`MODAL_HELD_OVERLAP`): the dump is older than the pop-up
    (a dialog come up since), or lost its window."""


MODAL_HELD_OVERLAP = 0.6
"""A tree holds the pop-up the pixels see when one of its nodes overlaps the pop-up's box by
at least this intersection over union (``Tree.best_overlap``). On the corpus's 45 matched pairs
whose frame shows one, the dialog, sheet, drawer or menu's node overlaps it by 0.70-1.00 (a
sheet cut at a DroidBot dump's 1920 px bottom, a dialog's box a little larger than the drawn
panel); the trace steps' dumps of the page before it, by 0.18-0.58 on 33 of 43 such frames."""


@dataclass(frozen=True, slots=True)
class Score:
    value: float
    factors: Mapping[str, float] = field(default_factory=dict)
    """The factors other than 1.0, by name (what pulled the score down, or OCR agreement up)."""


def window_read_back(e: TreeEvidence) -> bool:
    """Is ``e`` a pop-up or dialog window dumped alone whose labels read back off the pixels
    (enough of them sampled, not too few said)? Then the frame shows that window, and what
    lies around it is the page under it, not something the dump lost."""
    return (
        e.health is not None
        and e.health.floating_window
        and e.read_back_sampled >= READ_BACK_MIN
        and not read_back_failed(e.read_back_sampled, e.read_back_agreed)
    )


def _own_coverage(e: TreeEvidence) -> float:
    """``e.coverage`` over what the dump can cover: its own window where
    :func:`window_read_back` holds and the window's content was measured, else the screen."""
    assert e.coverage is not None
    if e.window_content and window_read_back(e):
        return min(1.0, e.coverage / e.window_content)
    return e.coverage


def tree_confidence(e: TreeEvidence) -> Score:
    if e.health is None:
        return Score(0.0, {"no_tree": 0.0})
    h = e.health
    f: dict[str, float] = {}
    if h.empty or h.element_count == 0:
        f["empty"] = 0.05
    else:
        n = h.element_count
        f["structure"] = _clamp(0.5 + 0.2 * n)
        f["text"] = 0.5 + 0.5 * _clamp(h.text_share / 0.3)
        opaque = _clamp(max(h.surface_area_share, canvas_share(h)))
        # A surface (a game, a video, a camera, a map) draws what the dump cannot see. Under a
        # tree that offers next to nothing else the screen is the surface's: pixel-fallback. A
        # tree with controls of its own around it (a camera's shutter, a player's buttons, a
        # story editor's tools) still describes those: the surface is a region it misses,
        # enough to leave tree-dominant for OCR there, not to give the tree up.
        opaque_weight = 0.85 if n <= FEW_ELEMENTS else SURFACE_UNDER_CONTROLS
        # A WebView with nothing inside it in the dump (Firefox keeps its pages out) shows a
        # page the tree cannot see; the browser around it the tree still describes: enough to
        # leave tree-dominant for OCR where the page is, not to give the tree up.
        blank = _clamp(h.blank_web_area_share)
        web = _clamp(h.webview_area_share - blank) * (0.25 if n < 10 else 0.1)
        f["opaque"] = (1.0 - opaque_weight * opaque) * (1.0 - 0.6 * blank) * (1.0 - web)
        if h.looks_partial:
            f["partial"] = 0.7
    if e.gap_ms is not None and e.gap_ms > e.window_ms:
        f["fresh"] = 0.5
    if e.stale:
        f["stale"] = 0.35
    if e.transposed:
        f["transposed"] = 0.2
    if e.loading_drawn:
        f["loading_drawn"] = 0.4  # as a failed read-back: another moment's tree
    if e.modal_missing:
        f["modal_missing"] = 0.4  # likewise
    if e.previous_elements and h.element_count < 0.8 * e.previous_elements:
        # Same picture, fewer elements than a moment ago: this dump lost part of the screen.
        f["shrunk"] = (h.element_count / e.previous_elements) ** 2
    if e.previous_text_elements and e.text_boxes < 0.5 * e.previous_text_elements:
        f["text_lost"] = 0.4
    if e.text_on_pixels is not None and e.text_boxes >= 1:
        t = e.text_on_pixels
        f["text_on_pixels"] = 0.3 if t < TEXT_ON_PIXELS_MIN else 0.7 + 0.3 * _clamp((t - 0.6) / 0.3)
    if e.coverage is not None:
        f["coverage"] = 0.6 + 0.4 * _clamp(_own_coverage(e) / 0.4)
        if e.previous_coverage is not None and e.coverage < e.previous_coverage - 0.2:
            f["coverage_drop"] = _clamp(0.3 + e.coverage / max(e.previous_coverage, 1e-9))
    if read_back_failed(e.read_back_sampled, e.read_back_agreed) or e.read_back_other:
        # Two to four of its labels, and the pixels say too few of them (or its one label,
        # and they say other words there): another moment's tree.
        f["read_back"] = 0.4
    if e.ocr_agreement is not None and e.ocr_compared >= 3:
        # Agreement raises the score (up to x1.2 at full agreement), conflict lowers it.
        f["ocr"] = min(1.2, 0.5 + 0.7 * e.ocr_agreement)
    value = 1.0
    for v in f.values():
        value *= v
    return Score(round(_clamp(value), 4), {k: round(v, 3) for k, v in f.items() if v != 1.0})


def consistent_with_pixels(e: TreeEvidence) -> bool | None:
    """Do tree and frame describe the same screen? None when nothing could be compared."""
    votes: list[bool] = []
    if e.text_on_pixels is not None and e.text_boxes >= 1:
        votes.append(e.text_on_pixels >= TEXT_ON_PIXELS_MIN)
    if e.ocr_agreement is not None and e.ocr_compared >= 3:
        votes.append(e.ocr_agreement >= 0.4)
    if e.read_back_sampled >= READ_BACK_MIN:
        votes.append(not read_back_failed(e.read_back_sampled, e.read_back_agreed))
    if e.stale or e.transposed or e.loading_drawn or e.modal_missing or e.read_back_other:
        votes.append(False)
    if not votes:
        return None
    return all(votes)


@enum.unique
class Origin(enum.StrEnum):
    """Where a pixel candidate came from; fixes its base confidence."""

    OCR_MATCHED = "ocr_matched"
    OCR = "ocr"
    ANCHOR = "anchor"
    VISION = "vision"


ORIGIN_WEIGHT: Mapping[Origin, float] = {
    Origin.OCR_MATCHED: 0.95,
    Origin.OCR: 0.75,
    Origin.ANCHOR: 0.5,
    Origin.VISION: 0.3,
}


def pixel_candidate_confidence(origin: Origin, raw_confidence: float) -> float:
    """The origin's weight times the producer's own confidence (OCR score, anchor score)."""
    return unit4(ORIGIN_WEIGHT[origin] * _clamp(raw_confidence))


def pixel_confidence(
    *, frame: bool, blank: bool, analysed: bool, candidate_confidences: list[float]
) -> float:
    """How far the pixels alone can be trusted to show what is tappable.

    No frame or a black / uniform one: 0. A frame that was captured but not analysed: 0.5 (the
    screen is there, nothing was read from it). Analysed: the mean of the best ten candidates.
    """
    if not frame or blank:
        return 0.0
    if not analysed:
        return 0.5
    if not candidate_confidences:
        return 0.1
    best = sorted(candidate_confidences, reverse=True)[:10]
    return round(sum(best) / len(best), 4)
