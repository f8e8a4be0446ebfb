"""The façade: a tree dump and a frame in, one :class:`Observation` out.

:class:`Perceiver` is stateful (one per observed device): it keeps the alignment window, the
arbiter's state, the previous tree and frame, the candidate ids of the current page, the loop
detector and a page cache across observations. :func:`perceive` is the one-shot form.

Per observation: align the captures by time and action epoch (or ask for fresh ones); parse the
tree and decode the frame; score the tree from its health and cheap pixel checks (decode only);
let the hysteresis arbiter pick the state; run the pixel work that state pays for (``tree``:
none; ``unstable``: OCR and anchors where the tree is missing or doubtful; ``pixel``: the full
pixel channel, plus the vision model on crops if one is plugged in); cross-validate, merge into
one candidate list with stable ids, and describe the screen.
"""

from __future__ import annotations

import enum
import inspect
import logging
import math
import operator
import os
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.config import FusionConfig, PixelConfig, TreeConfig
from perception.errors import (
    CaptureTimeError,
    ConfigError,
    FrameError,
    InputError,
    ScreenMismatchError,
    TreeError,
    UnknownCandidateError,
)
from perception.fusion.align import Aligner, CaptureTime, PairVerdict, Timed
from perception.fusion.arbiter import Arbiter, ArbiterState
from perception.fusion.candidates import (
    COVER_SHARE_MAX,
    COVERED_SHARE,
    LABEL_SHARE_MAX,
    Candidate,
    Draft,
    IdAllocator,
    merge,
    own_labels,
    within_budget,
)
from perception.fusion.crossval import (
    CELL_PX,
    GLYPH_LABELS,
    PIXEL_LABELS,
    PROBE_SCALE,
    FrameProbe,
    TextBlock,
    boxes_array,
    check_pixels,
    label_pieces,
    match_text_blocks,
    normalise_text,
    normalise_texts,
    read_back_counted,
    read_back_lines,
    read_back_other,
    read_back_sample,
    read_back_tally,
    unlabelled_sample,
)
from perception.fusion.loop import LoopDetector, LoopReport, PageCache
from perception.fusion.score import (
    MODAL_HELD_OVERLAP,
    READ_BACK_MIN,
    Origin,
    TreeEvidence,
    canvas_share,
    consistent_with_pixels,
    pixel_confidence,
    read_back_failed,
    tree_confidence,
    window_read_back,
)
from perception.fusion.screen import (
    SPOT_BAND,
    TOP_TEXTS,
    Operation,
    OperationKind,
    ScreenInfo,
    fingerprint,
    loading_spot,
    recommend,
    system_error_dialog,
    top_texts,
)
from perception.fusion.table import ElementTable, flag_bits
from perception.geometry import box_arg, box_pm_text, box_px_to_pm, clip_box
from perception.pixel.flags import FrameFlags, StabilitySignature
from perception.pixel.frame import check_frame_size
from perception.pixel.glyphs import GLYPH_LOOKALIKES, read_glyphs
from perception.pixel.merge import line_rows
from perception.tree import compress
from perception.tree.clean import check_screen_size
from perception.tree.parse import dump_source
from perception.types import (
    FOCUSED_FIELD,
    BoxPx,
    Channel,
    ElementFlag,
    ScreenSize,
    TreeElement,
    TreeHealth,
)

if TYPE_CHECKING:
    from perception.pixel.read import PixelReader, Pixels

log = logging.getLogger(__name__)

U8 = npt.NDArray[np.uint8]

FRAME_UNCHANGED = 0.02
"""Share of probe cells that may change while the frame still counts as the same picture."""
FRAME_CHANGED = 0.05
FRAME_REPLACED = 0.5
"""Share of probe cells that change when the picture is replaced, not redrawn in part: a
modal's scrim dims the whole page (80-85% of the cells of Habitica's two corpus dialogs), a
new page replaces it; a carousel, a video in its player or a spinner moves a part."""
OPAQUE_STALE_SHARE = 0.25
"""A tree whose SurfaceViews and canvases cover this share of the screen draws what the dump
cannot see: its picture may change all over while the dump stays the same."""
TOGGLE_LEVELS = 24.0
"""A checkable element's cell whose mean grey moves by more than this has been redrawn: a
toggled checkbox moves its cells by 50-80 levels, noise and anti-aliasing by under 10."""
CHECKABLE = int(ElementFlag.CHECKABLE)
_FOCUSED_FIELD = int(FOCUSED_FIELD)
ROI_FULL_SHARE = 0.6
"""When the regions to OCR cover more than this share of the screen, read the whole frame."""
MAX_VISION_CROPS = 3
NOTE_CHARS = 200
"""How much of an outside error's message (a vision model's) a note quotes."""
DROPPED = frozenset({PairVerdict.TREE_STALE, PairVerdict.FRAME_STALE, PairVerdict.OLD_EPOCH})
"""Pairing verdicts for which alignment dropped a capture (the others fused what came)."""
OPAQUE_KINDS = frozenset({"web", "surface", "canvas"})


class TreeLike(Protocol):
    """What fusion needs from the tree channel's result (``perception.read_tree``)."""

    @property
    def elements(self) -> Sequence[TreeElement]: ...

    @property
    def health(self) -> TreeHealth: ...

    @property
    def screen(self) -> ScreenSize: ...

    @property
    def extent(self) -> ScreenSize:
        """Right and bottom edge of the dump's windows (a frame must hold at least this)."""
        ...

    @property
    def rotation(self) -> int: ...

    @property
    def package(self) -> str: ...


_EDITABLE = int(ElementFlag.EDITABLE)
PASSWORD_DOT = "\u2022"
"""What a password field's characters read as in ``Observation.field_texts``."""


def _field_texts(tree: TreeLike | None, candidates: Sequence[Candidate]) -> dict[int, str]:
    """What each input candidate's field holds, where the tree can tell (a tree of the tree
    channel: :meth:`perception.tree.Tree.field_text`; a tree of other making gives none). A
    password field gives one dot a character: its length is what replacing it must delete,
    and a dump that holds the password in clear must not hand it to a log or a model."""
    field_text = getattr(tree, "field_text", None)
    if field_text is None:
        return {}
    out: dict[int, str] = {}
    for c in candidates:
        if c.tree_id is not None and int(c.flags) & _EDITABLE:
            text = field_text(c.tree_id)
            if text is not None:
                out[c.id] = PASSWORD_DOT * len(text) if c.password else text
    return out


class FrameLike(Protocol):
    @property
    def pixels(self) -> U8: ...

    @property
    def size(self) -> ScreenSize: ...


class PixelBlocks(list[TextBlock]):
    """A pixel channel's blocks for one frame, and how many text lines OCR left unread there
    (:attr:`perception.config.PixelConfig.max_ocr_lines`). A channel may return any sequence
    from :meth:`PixelAnalyser.full` and :meth:`PixelAnalyser.regions`; one of these tells the
    observation what it could not read."""

    __slots__ = ("keyboard_px", "modal_box_px", "unread_lines")

    def __init__(
        self,
        blocks: Sequence[TextBlock] = (),
        unread_lines: int = 0,
        modal_box_px: BoxPx | None = None,
        keyboard_px: BoxPx | None = None,
    ) -> None:
        super().__init__(blocks)
        self.unread_lines = unread_lines
        self.modal_box_px = modal_box_px
        """A pop-up the pixels see over a dimmed page (``FrameFlags.modal_box_px``): only what
        lies on it was offered."""
        self.keyboard_px = keyboard_px
        """The on-screen keyboard the pixels see (``Pixels.keyboard_px``): where neither the
        tree nor the caller gives one, it counts as a reported one."""


class PixelAnalyser(Protocol):
    """The pixel channel as fusion uses it (it owns the OCR engine and its caches)."""

    def load(self, frame: object) -> FrameLike:
        """Decode bytes / a path / an array into a frame (raises ``FrameError``)."""
        ...

    def full(self, frame: FrameLike) -> Sequence[TextBlock]:
        """Every pixel candidate of the frame: OCR text blocks and anchors."""
        ...

    def regions(self, frame: FrameLike, regions: Sequence[BoxPx]) -> Sequence[TextBlock]:
        """OCR text blocks and anchors inside the given regions only."""
        ...

    # Optional: ``read_back(frame, boxes, *, detect) -> Sequence[str]``, the text the pixels
    # hold in each box (see :meth:`PixelChannel.read_back`). A channel without it gets no
    # read-back check (:func:`perception.fusion.crossval.read_back_sample`).
    # Optional: ``read_labels(frame, boxes) -> Sequence[str]``, a trustworthy label the pixels
    # show in each box or "" (see :meth:`PixelChannel.read_labels`). A channel without it
    # leaves the tree's unlabelled actions unlabelled.
    # Optional: ``config``, a PixelConfig whose ``black_luma_max`` and ``uniform_std_max`` the
    # fusion flags black and uniform frames by (see :meth:`Perceiver._probe`); the defaults
    # without it.


@dataclass(frozen=True, slots=True, kw_only=True)
class VisionBox:
    """One answer of a vision model: a label and a box in the crop's pixels."""

    label: str
    box_px: BoxPx
    confidence: float = 0.5
    kind: str = "button"

    @property
    def text(self) -> str:
        return self.label


VisionModel = Callable[[U8], Sequence[VisionBox]]
"""Takes a small BGR crop, returns labelled boxes in crop pixels."""
TreeReader = Callable[..., TreeLike]
"""Reads a dump: called as ``reader(xml)``, and as ``reader(xml, screen=size)`` when
:meth:`Perceiver.perceive` is given the screen (a reader without that keyword reads the dump on
its own windows, and the observation says so)."""


@enum.unique
class PixelWork(enum.StrEnum):
    NONE = "none"
    """Decoded and checked cheaply; not analysed."""
    ROI = "roi"
    """OCR and anchors where the tree is missing or doubtful."""
    FULL = "full"


@dataclass(frozen=True, slots=True, kw_only=True)
class Observation:
    """One fused look at the screen. Act on it only when :attr:`ready`."""

    state: ArbiterState
    tree_confidence: float
    pixel_confidence: float
    consistent: bool | None
    """Do tree and pixels agree? None when they could not be compared (no frame, black frame)."""
    screen: ScreenInfo | None
    candidates: tuple[Candidate, ...]
    operations: tuple[Operation, ...] = ()
    epoch: int = 0
    pairing: PairVerdict = PairVerdict.PAIRED
    refresh: frozenset[Channel] = frozenset()
    """Sources to capture again before deciding anything (empty: this observation is usable)."""
    pixel_work: PixelWork = PixelWork.NONE
    vision_used: bool = False
    notes: tuple[str, ...] = ()
    tree_error: TreeError | None = None
    """Why the dump given could not be read (a :class:`~perception.TreeError`: a dump that
    failed, cut short, unsafe), when the frame was fused alone in its place (state ``pixel``,
    ``tree_confidence`` 0; the observation may still be ready). None when the tree was read or
    none was given. Kept without its traceback (an observation held in a history keeps no
    stack frames alive)."""
    tree_factors: Mapping[str, float] = field(default_factory=dict)
    """The tree-confidence factors other than 1.0, by name: penalties below 1.0, and ``ocr`` up
    to 1.2 when OCR agrees with the tree (:func:`perception.fusion.score.tree_confidence`)."""
    loop: LoopReport | None = None
    revisit: bool = False
    """This page (fingerprint) was seen before; :meth:`Perceiver.page` returns its list."""
    timings_ms: Mapping[str, float] = field(default_factory=dict)
    field_texts: Mapping[int, str] = field(default_factory=dict)
    """For each input candidate of the tree: the text its field holds now (``""`` empty or
    showing its hint), whatever its label shows (cut, or the hint). What a ``type`` that
    replaces the text has to delete."""
    unread_lines: int = 0
    """Text lines the pixel channel found and did not recognise, past its cap on lines a
    frame (:attr:`~perception.config.PixelConfig.max_ocr_lines`): the lowest on the screen.
    The prompt's ``warn`` says so."""
    left_out: int = 0
    """How many rows the prompt leaves out for its size: past the tree's and the
    observation's row budgets (``max_rows`` of :class:`~perception.config.TreeConfig` and
    :class:`~perception.config.FusionConfig`); the prompt's ``"more"``. They stay in
    :attr:`candidates`, not :attr:`~Candidate.listed`."""

    @property
    def ready(self) -> bool:
        return not self.refresh

    def candidate(self, candidate_id: int, *, shown: bool = True) -> Candidate:
        """The candidate with this id, among those :meth:`to_prompt` lists with an id
        (:attr:`Candidate.shown`); :class:`~perception.UnknownCandidateError` (also a
        ``KeyError``) for any other id: one a model made up, or one its prompt never showed
        (a list item left out, an occluded view, static text). ``shown=False`` looks the id
        up among all :attr:`candidates`. An observation that is not :attr:`ready` shows
        none (its prompt asks for a recapture). Ids are ints: a model's ``true`` (which
        Python's ``==`` takes for 1) or ``7.0`` is no id."""
        if isinstance(candidate_id, bool) or not isinstance(candidate_id, int):
            raise UnknownCandidateError(candidate_id, self.shown_ids)
        for c in self.candidates:
            if c.id == candidate_id:
                if shown and not self.ready:
                    raise UnknownCandidateError(
                        candidate_id, (), hidden="the observation is not ready: recapture"
                    )
                if shown and not c.shown:
                    why = "occluded" if c.occluded else "static text" if c.static else "unlisted"
                    raise UnknownCandidateError(candidate_id, self.shown_ids, hidden=why)
                return c
        raise UnknownCandidateError(candidate_id, self.shown_ids)

    @property
    def shown_ids(self) -> tuple[int, ...]:
        """The ids :meth:`to_prompt` lists, in order (none when not :attr:`ready`)."""
        if not self.ready:
            return ()
        return tuple(c.id for c in self.candidates if c.shown)

    def to_prompt(self, *, coords: bool = True) -> str:
        """The compact JSON the decision model sees; ids match :attr:`candidates`.

        The rows are the tree channel's (:mod:`perception.tree.compress`): candidates grouped by
        kind as ``[id, label, "x y", flags]``, the centre on the 0-1000 grid (a list, a web view
        or anything scrollable gives its box ``"l t r b"``), static tree text as ``[label,
        "x y"]`` under ``text``; text lines only the pixels show, with an id, under
        ``ocr``. Besides the tree's flag words, ``px`` marks any other candidate seen only in
        the pixels (where some row is the tree's: in a prompt of the pixels' rows alone it
        says nothing and is left out) and ``c=0.42`` a confidence under 0.5. Above the rows:
        ``state``, ``screen`` (app, activity, rotation, secure), ``warn`` when tree and pixels
        disagree or OCR left lines unread, ``loop`` when the page keeps coming back, and
        ``ops`` (``[op, id]``: dismiss or accept a dialog button, wait, hand over, recapture).
        Occluded candidates and list items the tree channel truncated are left out (the last
        shown item says ``+N``), and so are rows past the row budget (:attr:`left_out`, the
        header's ``more``). An observation that is not :attr:`ready` is only ``state``,
        ``recapture`` (the sources to capture again) and ``why``: the pairing verdict when
        alignment dropped a capture (``tree_stale``, ``frame_stale``, ``old_epoch``), else
        ``low_confidence`` (neither channel is good enough).
        """
        out: dict[str, Any] = {"state": self.state.value}
        if not self.ready:
            out["recapture"] = sorted(c.value for c in self.refresh)
            out["why"] = self.pairing.value if self.pairing in DROPPED else "low_confidence"
            return compress.dumps(out)
        if self.screen is not None:
            s = self.screen
            scr: dict[str, Any] = {"app": s.package} if s.package else {}
            if s.activity:
                scr["act"] = s.activity
            if s.rotation:
                scr["rot"] = s.rotation
            if s.secure:
                scr["secure"] = True
            if s.keyboard_px is not None:
                scr[compress.KEYBOARD_KEY] = (
                    box_pm_text(box_px_to_pm(s.keyboard_px, s.size)) if coords else True
                )
            if scr:
                out["screen"] = scr
        warn = ["tree and pixels disagree"] if self.consistent is False else []
        if self.unread_lines:
            warn.append(f"{self.unread_lines} text lines too many to read, lowest left out")
        if warn:
            out["warn"] = "; ".join(warn)
        if self.loop is not None:
            out["loop"] = self.loop.count
        if self.operations:
            out["ops"] = [
                [o.kind.value, o.candidate_id] if o.candidate_id else [o.kind.value]
                for o in self.operations
            ]
        if self.left_out:
            out[compress.MORE_KEY] = self.left_out
        size = self.screen.size if self.screen is not None and coords else None
        # "px" tells the pixels' rows from the tree's: where every row is the pixels', it says
        # nothing (the state says "pixel"; about half of a pixel-only prompt's flags).
        mixed = any(
            c.source is not Channel.PIXEL for c in self.candidates if c.listed and not c.occluded
        )
        for c in self.candidates:
            if c.occluded or not c.listed:
                continue
            flags = int(c.flags)
            key = c.kind
            place = compress.place_text(c.box_px, size, key, flags) if size is not None else None
            if c.static:
                compress.add_row(
                    out,
                    compress.STATIC_KEY,
                    compress.make_row(None, c.text, place, compress.state_words(flags)),
                )
                continue
            extra = []
            if c.source is Channel.PIXEL:
                if key == compress.STATIC_KEY:
                    key = compress.PIXEL_TEXT_KEY  # the group says "pixels"; no "px" flag
                elif mixed:
                    extra.append("px")
            if c.confidence < 0.5:  # 0.497 is "c=0.49": the flag says under 0.5
                extra.append(f"c={min(c.confidence, 0.49):.2f}")
            words = compress.flag_words(flags, c.more, extra)
            compress.add_row(out, key, compress.make_row(c.id, c.text, place, words))
        return compress.dumps(out)


def _capture_time(name: str, value: object) -> CaptureTime | None:
    """``value`` as a capture interval: None, or ``(start_ns, end_ns)``, two whole numbers of
    ``time.monotonic_ns()`` (numpy integers too; a float has lost nanoseconds already)."""
    if value is None:
        return None
    pair: Any = value  # checked here: anything else is the caller's CaptureTimeError
    try:
        start_ns, end_ns = pair
        interval = CaptureTime(operator.index(start_ns), operator.index(end_ns))
    except (TypeError, ValueError) as exc:
        raise CaptureTimeError(
            f"{name} must be (start_ns, end_ns), two ints from time.monotonic_ns(), "
            f"got {value!r:.80}"
        ) from exc
    return interval


def _detached(exc: TreeError) -> TreeError:
    """``exc`` and the exceptions it came from without their tracebacks: they hold the stack
    frames, and the frames their locals (the dump's bytes, the parser)."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        e.__traceback__ = None
        e = e.__cause__ or e.__context__
    return exc


MAX_EPOCH = 2**63 - 1
"""Epochs count actions: past this one is no count (and every later real epoch would read as
older than it until ``reset()``)."""


def _epoch(value: object) -> int:
    number: Any = value
    if isinstance(value, bool):  # an int to Python, a mistake here (epoch=True)
        raise CaptureTimeError(f"epoch must be an int >= 0, got {value!r}")
    try:
        epoch = operator.index(number)
    except TypeError as exc:
        raise CaptureTimeError(f"epoch must be an int >= 0, got {value!r:.80}") from exc
    if not 0 <= epoch <= MAX_EPOCH:
        raise CaptureTimeError(f"epoch must be an int from 0 to 2**63 - 1, got {str(epoch):.40}")
    return int(epoch)


MAX_ACTIVITY_CHARS = 512
"""An activity name longer than this is no activity's (Android's class names run to a hundred
or so): it would go into every prompt whole."""


def _activity(value: object) -> str | None:
    """The caller's ``activity``: None, or a name of printable characters without spaces."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(f"activity must be a str or None, got {type(value).__name__}")
    if len(value) > MAX_ACTIVITY_CHARS or not value.isprintable() or any(
        c.isspace() for c in value
    ):
        raise InputError(
            f"activity must be a class name of at most {MAX_ACTIVITY_CHARS} printable "
            f"characters without spaces, got {len(value)} characters: {value[:40]!r}"
        )
    return value or None


@dataclass(frozen=True, slots=True)
class _Seen:
    """What the Perceiver remembers of the previous observation."""

    epoch: int
    digest: int | None
    element_count: int
    tree_confidence: float
    text_boxes: int
    coverage: float | None
    probe: FrameProbe | None
    ocr_agreement: float | None
    ocr_compared: int
    read_back: tuple[int, int, bool] | None = None
    """(labels sampled, labels the pixels said, other words where its one label should be)
    for this tree over this frame."""
    labels: Mapping[int, str] | None = None
    """Labels read off this frame for this tree's unlabelled actions, by element index."""
    stale: bool = False
    """The tree was the previous action's dump over a frame that changed since."""


def uncovered_bands(probe: FrameProbe, boxes: Sequence[BoxPx], screen: ScreenSize) -> list[BoxPx]:
    """Full-width bands of the frame with visible content that none of ``boxes`` covers."""
    cell = PROBE_SCALE * CELL_PX
    arr = boxes_array(boxes)
    if len(arr):
        arr = (arr + cell // 2) // cell
    rows, cols = probe.content.shape
    covered = fastpath.paint_boxes(rows, cols, arr).astype(bool)
    busy = (probe.content & ~covered).sum(axis=1) >= 2
    bands: list[BoxPx] = []
    start: int | None = None
    for r in range(rows + 1):
        on = r < rows and bool(busy[r])
        if on and start is None:
            start = r
        elif not on and start is not None:
            top, bottom = max(0, start - 1) * cell, min(rows, r + 1) * cell
            bands.append(clip_box(BoxPx(0, top, screen.width_px, bottom), screen.box_px))
            start = None
    return bands


LOADING_DRAWN_SHARE = 0.1
"""Share of the probe's cells around a loading indicator that show something, at and above
which the pixels have that part of the page drawn (0.00 and 0.03 of them around Yelp's two
spinners on a blank panel; 0.16 to 0.35 where the corpus's frames show the list the tree still
shows loading)."""


def _blocks(found: Sequence[TextBlock]) -> list[TextBlock]:
    """A channel's blocks as a list; a :class:`PixelBlocks` (and its unread count) as is."""
    return found if isinstance(found, list) else list(found)


def content_around(
    probe: FrameProbe,
    spot: BoxPx,
    explained: Sequence[BoxPx] | npt.NDArray[np.int32],
    within: BoxPx | None = None,
) -> float:
    """Share of the probe's cells within :data:`~perception.fusion.screen.SPOT_BAND` of the
    screen's height above and below ``spot``, across the whole width, that show something the
    tree does not explain: the indicator's own cells (and one around them) and those of the
    ``explained`` boxes (:meth:`perception.tree.Tree.drawn_px`: a "Loading..." label beside
    the spinner, the bars, a picture or a video under it) left out; only inside ``within``
    (:meth:`perception.tree.Tree.spot_area`: the panel the spinner stands for)."""
    cell = PROBE_SCALE * CELL_PX
    rows, cols = probe.content.shape
    band = SPOT_BAND * probe.size.height_px
    top, bottom = spot.top - band, spot.bottom + band
    c0, c1 = 0, cols
    if within is not None:
        top, bottom = max(top, within.top), min(bottom, within.bottom)
        c0, c1 = max(0, within.left // cell), min(cols, -(-within.right // cell))
    r0, r1 = max(0, int(top // cell)), min(rows, int(bottom // cell) + 1)
    if r1 <= r0 or c1 <= c0:
        return 0.0
    grown = (spot.left - cell, spot.top - cell, spot.right + cell, spot.bottom + cell)
    arr = (np.vstack([np.asarray([grown], np.int32), boxes_array(explained)]) + cell // 2) // cell
    free = fastpath.paint_boxes(rows, cols, arr)[r0:r1, c0:c1] == 0
    total = int(free.sum())
    return int((probe.content[r0:r1, c0:c1] & free).sum()) / total if total else 0.0


class Perceiver:
    """Fuses tree dumps and frames of one device into observations, keeping state across them.

    ``tree_reader`` defaults to :func:`perception.read_tree` with ``tree`` (a
    :class:`~perception.config.TreeConfig`: list truncation, label length; not both),
    ``pixels`` to the pixel channel's reader (which owns the OCR engine); ``vision`` is an
    optional model consulted on small crops in pixel-fallback (none by default, and the
    observation says so).
    """

    def __init__(
        self,
        config: FusionConfig | None = None,
        *,
        tree: TreeConfig | None = None,
        tree_reader: TreeReader | None = None,
        pixels: PixelAnalyser | None = None,
        vision: VisionModel | None = None,
    ) -> None:
        fastpath.check()  # a bad PERCEPTION_FASTPATH, typed, before anything is built
        if tree is not None and tree_reader is not None:
            raise ConfigError("give a TreeConfig (tree=) or a tree_reader, not both")
        if tree is not None and not isinstance(tree, TreeConfig):
            raise ConfigError(f"tree must be a TreeConfig, got {type(tree).__name__}")
        self.config = config or FusionConfig()
        self._read_tree = tree_reader if tree_reader is not None else _tree_reader(tree)
        # A dump named by its path is read up to the tree's own limit (a reader of the
        # caller's gets the default one).
        self._max_dump_bytes = tree.max_input_bytes if tree is not None else None
        self._reader_takes_screen = _takes_screen(self._read_tree)
        self._owned: PixelChannel | None = None
        if pixels is None:
            pixels = self._owned = _default_pixels()
        self._pixels = pixels
        self.vision = vision
        self.arbiter = Arbiter(self.config)
        self._aligner: Aligner[bytes | str, object] = Aligner(window_ms=self.config.pair_window_ms)
        self._ids = IdAllocator()
        self._loops = LoopDetector(window=self.config.loop_window, repeats=self.config.loop_repeats)
        self._pages: PageCache[tuple[Candidate, ...]] = PageCache(self.config.page_cache_size)
        self._seen: _Seen | None = None
        self._last_epoch_digest: int | None = None
        self._last_epoch_probe: FrameProbe | None = None
        self._fresh: tuple[int, FrameProbe] | None = None
        """The last dump (digest) found fresh and the frame it was fresh over, this epoch."""
        self._drafts_memo: tuple[list[Draft], tuple[str, ...], list[str], list[str]] | None = None

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        pixels: PixelAnalyser | None = None,
        vision: VisionModel | None = None,
    ) -> Perceiver:
        """A Perceiver tuned by ``PERCEPTION_FUSION_*``, ``PERCEPTION_TREE_*`` and
        ``PERCEPTION_PIXEL_*`` (``os.environ`` unless ``env`` is given), as the CLIs build it;
        ``pixels`` replaces the pixel channel it would build. ``Perceiver()`` uses the
        documented defaults whatever the environment says."""
        from perception.pixel.read import PixelReader

        owned = None if pixels is not None else PixelChannel(PixelReader(PixelConfig.from_env(env)))
        perceiver = cls(
            FusionConfig.from_env(env),
            tree=TreeConfig.from_env(env),
            pixels=pixels or owned,
            vision=vision,
        )
        perceiver._owned = owned
        return perceiver

    def close(self) -> None:
        """Stop the OCR workers of the pixel reader this Perceiver made (one passed in as
        ``pixels`` belongs to the caller). Using the Perceiver afterwards loads OCR again."""
        if self._owned is not None:
            self._owned.reader.close()

    def __enter__(self) -> Perceiver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def state(self) -> ArbiterState:
        return self.arbiter.state

    def page(self, fingerprint: str) -> tuple[Candidate, ...] | None:
        """The candidate list of a page seen before (by fingerprint), if still cached."""
        return self._pages.get(fingerprint)

    def reset(self) -> None:
        """Forget everything (a new task or another device): arbiter state, ids, the loop
        report, the pages seen (:meth:`page`) and the yardsticks of staleness. The pixel
        channel's caches stay: they are keyed on the frame's own content."""
        self.arbiter.reset()
        self._aligner = Aligner(window_ms=self.config.pair_window_ms)
        self._ids.reset()
        self._loops.reset()
        self._pages = PageCache(self.config.page_cache_size)  # ids restart: old lists would lie
        self._seen = None
        self._last_epoch_digest = None
        self._last_epoch_probe = None
        self._fresh = None
        self._drafts_memo = None

    def perceive(
        self,
        xml: bytes | str | os.PathLike[str] | None = None,
        frame: object = None,
        *,
        tree_time_ns: tuple[int, int] | None = None,
        frame_time_ns: tuple[int, int] | None = None,
        epoch: int = 0,
        activity: str | None = None,
        step: int | None = None,
        screen: ScreenSize | None = None,
        keyboard: BoxPx | None = None,
    ) -> Observation:
        """Fuse a dump (bytes, text or a path) and/or a frame (PNG, JPEG or raw ``screencap``
        bytes, a path, a ``Frame``, or a uint8 numpy array in OpenCV's order: gray, BGR or
        BGRA; wrap an RGB or RGBA array, PIL's, as ``Frame.from_array(arr, order="rgb")``) of
        ``epoch``.

        ``tree_time_ns`` and ``frame_time_ns`` are ``(start_ns, end_ns)`` of
        ``time.monotonic_ns()`` around each capture, ``epoch`` an int >= 0 (anything else is a
        :class:`~perception.CaptureTimeError`). A dump that cannot be read over a frame that can
        is fused from the frame alone, and :attr:`Observation.tree_error` says why; a frame that
        cannot be read, or whose size the tree's screen cannot have, raises its
        :class:`~perception.FrameError`.

        Captures whose intervals are more than ``pair_window_ms`` apart are not fused: the
        older one is dropped and the observation asks for a fresh one (:attr:`Observation.refresh`).
        A capture from an epoch before the newest seen is dropped the same way.

        ``step`` says which agent step the observation belongs to: loop detection counts a page
        once per step (an engine that fuses many observations between two actions passes the
        action epoch). Without it every call is a step of its own.

        ``screen`` is the device's screen in the dump's rotation, where the caller knows it
        (``adb shell wm size``): without a frame the dump's windows are the screen, and a dump
        that holds only a dialog's window places its boxes on a guess. A screen that cannot
        hold the dump (the phone turned) is noted and the dump read on its windows; a frame,
        when given, says the screen anyway (a ``screen`` that differs
        from it is noted and not used). Not a :class:`ScreenSize` of 1-65535 px a side:
        :class:`~perception.InputError`.

        ``keyboard`` is the on-screen keyboard's box (device pixels) where the phone reports it
        beside the captures (:attr:`~perception.sources.base.TreeCapture.keyboard_px`; most
        dumps do not hold the keyboard's window): the app's elements under it are not offered,
        nor the text the pixels read on its keys. Not four ints: :class:`~perception.InputError`.
        Without one, a keyboard the pixels see where they read the whole frame counts the same
        (:mod:`perception.pixel.keyboard`; over a dump, only while a field in it has the focus).
        """
        t0 = time.perf_counter_ns()
        if xml is None and frame is None:
            raise InputError("perceive needs a tree dump, a frame or both")
        epoch = _epoch(epoch)
        activity = _activity(activity)
        keyboard = box_arg("keyboard", keyboard)
        if screen is not None:
            screen = check_screen_size(screen)
        tree_time = _capture_time("tree_time_ns", tree_time_ns)
        frame_time = _capture_time("frame_time_ns", frame_time_ns)
        tree_in = (
            None if xml is None else Timed(dump_source(xml, self._max_dump_bytes), tree_time, epoch)
        )
        frame_in = None if frame is None else Timed(frame, frame_time, epoch)
        seen = self._seen
        if seen is not None and epoch > seen.epoch and not (
            seen.stale and seen.digest == self._last_epoch_digest
        ):
            # A dump found stale is still the one from before an earlier action: its yardstick
            # stays the frame it was last fused with as current, not the frame it was stale
            # over (else a dump stuck for two actions passes as fresh on the second).
            self._last_epoch_digest = seen.digest
            self._last_epoch_probe = seen.probe
        pairing = self._aligner.offer(tree_in, frame_in)
        if not pairing.usable:
            why = " and ".join(sorted(c.value for c in pairing.refresh))
            return Observation(
                state=self.arbiter.state,
                tree_confidence=0.0,
                pixel_confidence=0.0,
                consistent=None,
                screen=None,
                candidates=(),
                epoch=pairing.epoch,
                pairing=pairing.verdict,
                refresh=pairing.refresh,
                operations=(
                    Operation(
                        kind=OperationKind.RECAPTURE,
                        reason=f"{pairing.verdict.value}: capture {why} again",
                    ),
                ),
                notes=(f"alignment: {pairing.verdict.value}",),
            )
        notes: list[str] = []
        timings: dict[str, float] = {}
        # The frame first: where one is given it says the screen, not the caller's ``screen``
        # (the tree's sliver and size rules scale with the screen it is read on).
        t = time.perf_counter_ns()
        fr: FrameLike | None = None
        frame_exc: FrameError | None = None
        if pairing.frame is not None:
            try:
                fr = self._pixels.load(pairing.frame.payload)
            except FrameError as exc:
                frame_exc = exc
        probe = self._probe(fr.pixels) if fr is not None else None
        timings["decode"] = round((time.perf_counter_ns() - t) / 1e6, 3)
        if screen is not None and fr is not None and fr.size != screen:
            notes.append(
                f"screen {screen.width_px}x{screen.height_px} given; the frame is "
                f"{fr.size.width_px}x{fr.size.height_px}: the dump read without the given size"
            )
            screen = None
        t = time.perf_counter_ns()
        tree: TreeLike | None = None
        tree_exc: TreeError | None = None
        if pairing.tree is not None:
            try:
                tree = self._tree_of(pairing.tree.payload, screen, notes)
            except TreeError as exc:
                tree_exc = exc
                notes.append(f"tree channel failed: {type(exc).__name__}: {exc}")
        timings["tree"] = round((time.perf_counter_ns() - t) / 1e6, 3)
        if frame_exc is not None:
            # A frame that was given and cannot be read is the caller's to know about: fusing
            # the tree alone would quietly switch off every check the pixels make (a stale
            # tree, a dialog already gone). Perceive again without it to fuse the tree alone.
            if tree is None and tree_exc is not None:
                raise tree_exc from frame_exc
            raise frame_exc
        if tree is None and fr is None and tree_exc is not None:
            raise tree_exc
        obs = self.fuse(
            tree=tree,
            frame=fr,
            probe=probe,
            gap_ms=pairing.gap_ms,
            epoch=pairing.epoch,
            activity=activity,
            notes=notes,
            loop_step=step,
            keyboard=keyboard,
        )
        timings.update(obs.timings_ms)
        timings["total"] = round((time.perf_counter_ns() - t0) / 1e6, 3)
        return replace(
            obs,
            pairing=pairing.verdict,
            timings_ms=timings,
            tree_error=None if tree_exc is None else _detached(tree_exc),
        )

    def _probe(self, pixels: U8) -> FrameProbe:
        """The frame's probe, black and uniform by the pixel channel's own limits (its
        ``config``, a :class:`~perception.config.PixelConfig`, when it has one): a frame the
        pixel channel reads is never one the fusion skips as blank."""
        config = getattr(self._pixels, "config", None)
        return FrameProbe(pixels, config if isinstance(config, PixelConfig) else None)

    def _tree_of(
        self, xml: bytes | str, screen: ScreenSize | None, notes: list[str]
    ) -> TreeLike:
        """The dump read on ``screen`` where one is given and the reader takes it."""
        if screen is None:
            return self._read_tree(xml)
        size = f"{screen.width_px}x{screen.height_px}"
        if not self._reader_takes_screen:
            notes.append(f"screen {size} not used: the tree reader takes no screen=")
            return self._read_tree(xml)
        try:
            return self._read_tree(xml, screen=screen)
        except ScreenMismatchError as exc:
            notes.append(f"screen {size} given cannot hold the dump ({exc}): read on its windows")
            return self._read_tree(xml)

    # -- the fusion proper (the bench times it on its own) ---------------------------------------

    def _evidence(
        self,
        tree: TreeLike | None,
        table: ElementTable,
        probe: FrameProbe | None,
        gap_ms: float | None,
        epoch: int,
    ) -> tuple[TreeEvidence, tuple[int, ...], int | None]:
        if tree is None:
            return TreeEvidence(health=None), (), None
        digest = table.digest()
        keyboard = getattr(tree, "keyboard_px", None)
        if keyboard is not None:
            # The keyboard coming up or going down changes the screen, not the dump (most dumps
            # hold the app's window alone): the same dump with another keyboard is another
            # tree, not the one from before the action over a changed picture.
            digest = hash((digest, tuple(keyboard)))
        consistency = None
        if probe is not None and not probe.blank:
            consistency = check_pixels(table.elements, probe, table=table)
        seen = self._seen
        change = (
            probe.change(seen.probe)
            if seen is not None and seen.probe is not None and probe is not None
            else None
        )
        # The previous tree is a yardstick only if it was trusted and the picture is the same.
        same_frame = (
            seen is not None
            and seen.epoch == epoch
            and seen.tree_confidence >= self.config.tree_exit
            and change is not None
            and change <= FRAME_UNCHANGED
        )
        # The dump from before the last action, over a frame that has changed since (all over,
        # or where a checkbox or switch is drawn: a toggle the dump does not show yet): stale.
        # Where SurfaceViews draw a quarter of the screen or more (a game, a map, a camera, a
        # video), or a canvas where the tree offers next to nothing else, the picture changes
        # after an action while the dump stays the same: only the toggles' cells say so there.
        # (A big text-less leaf under a tree that offers more is a background or a picture,
        # which an action does not redraw: a splash ad's image.)
        last = self._last_epoch_probe
        stale = False
        if digest == self._last_epoch_digest and last is not None and probe is not None:
            h = tree.health
            opaque = h.surface_area_share + canvas_share(h) >= OPAQUE_STALE_SHARE
            stale = (not opaque and probe.change(last) >= FRAME_CHANGED) or probe.moved_in(
                last, table.box_array[(table.flag_array & CHECKABLE) != 0], TOGGLE_LEVELS
            )
            if (
                stale
                and bool(((table.flag_array & _FOCUSED_FIELD) == _FOCUSED_FIELD).any())
                and probe.keyboard_band(last)
            ):
                # A field has the focus and only a band along the bottom changed: the keyboard
                # came up or went down (BACK), which the dump does not show when nothing
                # reported it (see keyboard=): the same screen, not a dump from before.
                stale = False
        fresh = self._fresh
        if (
            not stale and fresh is not None and fresh[0] == digest and probe is not None
            and seen is not None and seen.epoch == epoch
        ):
            # The same dump again in this epoch (a caller that passes no epochs stays in one)
            # over a picture replaced since it was fresh: a modal came up or the page changed,
            # and the dump is the old one. Where SurfaceViews or canvases draw most of the
            # screen the picture changes without the dump: no verdict there.
            h = tree.health
            if h.surface_area_share + h.canvas_area_share < OPAQUE_STALE_SHARE:
                stale = probe.change(fresh[1]) >= FRAME_REPLACED
        if not stale and probe is not None and digest is not None:
            self._fresh = (digest, probe)
        ocr_agreement, ocr_compared = None, 0
        if seen is not None and seen.digest == digest:
            ocr_agreement, ocr_compared = seen.ocr_agreement, seen.ocr_compared
        evidence = TreeEvidence(
            health=tree.health,
            gap_ms=gap_ms,
            window_ms=self.config.pair_window_ms,
            text_on_pixels=None if consistency is None else consistency.text_on_pixels,
            text_boxes=0 if consistency is None else consistency.text_boxes,
            coverage=None if consistency is None else consistency.coverage,
            previous_coverage=seen.coverage if same_frame and seen is not None else None,
            previous_elements=seen.element_count if same_frame and seen is not None else None,
            previous_text_elements=seen.text_boxes if same_frame and seen is not None else None,
            stale=stale,
            ocr_agreement=ocr_agreement,
            ocr_compared=ocr_compared,
        )
        doubtful = () if consistency is None else consistency.doubtful
        inferred: frozenset[int] = getattr(tree, "inferred_ids", frozenset())
        if inferred:
            # Controls offered on a guess (a list's items no node says take taps): trusted less.
            doubtful = tuple(sorted(inferred.union(doubtful)))
        return evidence, doubtful, digest

    def fuse(
        self,
        *,
        tree: TreeLike | None,
        frame: FrameLike | None,
        probe: FrameProbe | None = None,
        gap_ms: float | None = None,
        epoch: int = 0,
        activity: str | None = None,
        notes: list[str] | None = None,
        loop_step: int | None = None,
        keyboard: BoxPx | None = None,
    ) -> Observation:
        """Fuse an already parsed tree and decoded frame (no alignment; the bench times this).

        ``loop_step``: the agent step for loop detection (see :meth:`perceive`'s ``step``);
        ``keyboard``: the on-screen keyboard the phone reports (see :meth:`perceive`)."""
        notes = [] if notes is None else notes
        if keyboard is not None and tree is not None:
            with_keyboard = getattr(tree, "with_keyboard", None)
            if with_keyboard is not None:
                tree = with_keyboard(keyboard)
            else:
                notes.append("keyboard box not used on the tree: its reader's trees take none")
        timings: dict[str, float] = {}
        t = time.perf_counter_ns()

        def lap(name: str, since: int) -> int:
            now = time.perf_counter_ns()
            timings[name] = round((now - since) / 1e6, 3)
            return now

        if tree is None and frame is None:
            raise InputError("nothing to fuse: neither a tree nor a frame")
        if probe is None and frame is not None:
            probe = self._probe(frame.pixels)
        # A screenshot scaled up or down, or of another device, would put every box in the wrong
        # place and still look "consistent": check_frame_size refuses it
        # (FrameSizeMismatchError). The tree's screen counts unless it is an estimate (a dialog
        # dumped alone): then only its windows must fit.
        transposed = bool(
            tree is not None
            and frame is not None
            and check_frame_size(
                frame.size,
                tree.extent,
                screen=None if getattr(tree, "screen_estimated", False) else tree.screen,
            )
        )
        if transposed:
            assert tree is not None and frame is not None
            notes.append(
                f"the tree's windows ({tree.extent.width_px}x{tree.extent.height_px}) are "
                f"transposed against the frame ({frame.size.width_px}x{frame.size.height_px}): "
                "the screen rotated between the captures, the tree does not describe this frame"
            )
        elements: Sequence[TreeElement] = tree.elements if tree is not None else ()
        # The elements' fields read once, for every stage below (nothing kept past this call).
        table = ElementTable(elements)
        evidence, doubtful, digest = self._evidence(tree, table, probe, gap_ms, epoch)
        if transposed:
            evidence = replace(evidence, transposed=True)
            # Its boxes are another orientation's: none of its elements is offered.
            elements, table, doubtful = (), ElementTable(()), ()
        read_back = None
        if tree is not None and frame is not None and probe is not None and not transposed:
            began = time.perf_counter_ns()
            read_back, fresh = self._read_back(tree, table, frame, probe, digest, notes)
            if read_back is not None:
                sampled, agreed, other = read_back
                evidence = replace(
                    evidence,
                    read_back_sampled=sampled,
                    read_back_agreed=agreed,
                    read_back_other=other,
                )
                window = getattr(tree, "window_box", None)
                if window is not None and window_read_back(evidence):
                    # A pop-up or dialog dumped alone, its labels on the pixels: its coverage
                    # is of its own window (see TreeEvidence.window_content).
                    evidence = replace(evidence, window_content=probe.coverage([window]))
            spent = time.perf_counter_ns() - began
            if fresh:
                timings["read_back"] = round(spent / 1e6, 3)
            t += spent  # the "score" lap is the fusion's own work
        # A pop-up the pixels see over a dimmed page that no node of the tree matches: the
        # dump is older than the pop-up (a dialog come up since), or lost its window.
        missing_modal: BoxPx | None = None
        overlap = getattr(tree, "best_overlap", None)
        if (
            overlap is not None and probe is not None and not probe.blank and not transposed
            and probe.flags.modal_box_px is not None
        ):
            pop_up_box = probe.flags.modal_box_px
            held = overlap(pop_up_box)
            if held < MODAL_HELD_OVERLAP:
                missing_modal = pop_up_box
                evidence = replace(evidence, modal_missing=True)
                notes.append(
                    f"the pixels show a pop-up over a dimmed page at {tuple(pop_up_box)} that no "
                    f"node of the tree matches (best overlap {held:.2f}): the dump is older "
                    "than the pop-up, or lost its window"
                )
        # Part of the page loading, as the tree tells: a wait where the pixels agree (or
        # cannot say), another moment's tree where they show that part drawn already.
        spot = None
        gone: BoxPx | None = None  # a loading spot the frame shows drawn: the tree's is gone
        spots = getattr(tree, "loading_spots", ()) if tree is not None and not transposed else ()
        if spots:
            assert tree is not None
            spot = loading_spot(
                spots, [(e.box_px, e.text, e.occluded) for e in elements], tree.screen
            )
            # A floating window dumped alone (a progress dialog) says nothing of the page
            # around it: the pixels there are no evidence either way.
            if (
                spot is not None and probe is not None and not probe.blank
                and not tree.health.floating_window
            ):
                drawn_px = getattr(tree, "drawn_px", None)
                explained = (
                    drawn_px(spot)
                    if drawn_px is not None
                    else [e.box_px for e in elements if not e.box_px.contains(spot.center)]
                )
                area = getattr(tree, "spot_area", None)
                drawn = content_around(
                    probe, spot, explained, area(spot) if area is not None else None
                )
                if drawn >= LOADING_DRAWN_SHARE:
                    evidence = replace(evidence, loading_drawn=True)
                    notes.append(
                        f"the tree shows part of the page loading (a loading indicator at "
                        f"{tuple(spot)}) where the pixels show it drawn ({drawn:.0%} of the "
                        "cells around it): the dump is older than the frame"
                    )
                    gone, spot = spot, None
        score = tree_confidence(evidence)
        step = self.arbiter.update(score.value)
        t = lap("score", t)
        if frame is not None:
            screen_size = frame.size
        else:
            assert tree is not None
            screen_size = tree.screen
            if getattr(tree, "screen_estimated", False):
                notes.append(
                    f"no frame and the dump holds only a floating window: the screen is "
                    f"estimated as {screen_size.width_px}x{screen_size.height_px}"
                )
        blank = probe is not None and probe.blank
        work = PixelWork.NONE
        blocks: list[TextBlock] = []
        vision_boxes: list[TextBlock] = []
        unseen: list[int] = []  # opaque elements (see _unseen), where pixels are read
        unread = 0  # text lines OCR left unread (its cap on lines a frame)
        pixel_modal = False  # the pixels see a pop-up over a dimmed page
        if frame is not None and not blank and step.state is not ArbiterState.TREE:
            unseen = _unseen(elements)
            work, blocks = self._pixel_work(
                step.state, frame, probe, elements, doubtful, unseen,
                elsewhen=consistent_with_pixels(evidence) is False,
            )
            unread = getattr(blocks, "unread_lines", 0)
            pixel_modal = getattr(blocks, "modal_box_px", None) is not None
            if unread:
                notes.append(
                    f"OCR left {unread} text lines unread (PixelConfig.max_ocr_lines): the "
                    "lowest on the screen are missing"
                )
            if step.state is ArbiterState.PIXEL:
                if self.vision is not None:
                    vision_boxes = self._ask_vision(frame, probe, elements, blocks, notes)
                else:
                    notes.append("no vision model plugged in: pixel-fallback uses OCR and anchors")
        if step.state is not ArbiterState.TREE and frame is None:
            notes.append(f"state {step.state.value} needs pixels but no frame was given")
        t = lap("pixels", t)
        keyboard = getattr(tree, "keyboard_px", None) or keyboard
        seen_keyboard = getattr(blocks, "keyboard_px", None)
        if keyboard is None and seen_keyboard is not None and (
            tree is None or transposed
            or bool(((table.flag_array & _FOCUSED_FIELD) == _FOCUSED_FIELD).any())
        ):
            # A keyboard only the pixels see (the dump does not hold its window, nothing
            # reported it, or no dump): the same as a reported one. Over a dump with no field
            # in focus nothing is being typed: a keyboard drawn there is the app's (a word
            # game's).
            keyboard = seen_keyboard
            with_keyboard = getattr(tree, "with_keyboard", None)
            if with_keyboard is not None and not transposed:
                tree = with_keyboard(keyboard)
        if keyboard is not None and blocks:
            # The keyboard's letters are keys, not the page's text or things to tap.
            blocks = [b for b in blocks if not keyboard.contains(b.box_px.center)]
        text_blocks = [b for b in blocks if b.text.strip()]
        anchors = [b for b in blocks if not b.text.strip()]
        # The tree's rows off a pop-up it does not hold are the page under it: the pop-up's
        # lines and icons are not theirs (a text-less row across a dialog took the dialog's
        # lines, "Refill Health & Try Again" among them, for its label).
        off_pop_up = (
            _off(table, missing_modal)
            if missing_modal is not None and work is not PixelWork.NONE
            else frozenset()
        )
        crosscheck = (
            # OCR inside a text-less one fills its label as before; inside one named after
            # content the dump does not hold (a page's title), it is that content; so is a line
            # no smaller element holds inside a page-wide one (a web view, a wrapper): its
            # label is not what each line inside it says.
            match_text_blocks(
                elements, text_blocks, table=table,
                unseen={i for i in unseen if elements[i].text.strip()}
                | _page_wide(table, screen_size) | off_pop_up,
            )
            if text_blocks
            else None
        )
        if crosscheck is not None and crosscheck.compared:
            evidence = replace(
                evidence, ocr_agreement=crosscheck.agreement, ocr_compared=crosscheck.compared
            )
            score = tree_confidence(evidence)
        consistent = consistent_with_pixels(evidence) if tree is not None else None
        # The tree's rows that stand only where OCR reads them (the tree shows another
        # moment): they hide no pixel candidate under them, as they are left out below.
        unconfirmed = (
            _unconfirmed(elements, getattr(tree, "text_labelled", None)) | off_pop_up
            if consistent is False and work is not PixelWork.NONE
            else frozenset()
        )
        drafts = merge(
            elements=elements,
            tree_confidence=score.value,
            doubtful=doubtful,
            text_blocks=text_blocks,
            crosscheck=crosscheck,
            anchors=anchors,
            vision=vision_boxes,
            screen=screen_size,
            hidden=getattr(tree, "hidden_ids", frozenset()),
            table=table,
            condemned=(
                frozenset(i for i, e in enumerate(elements) if gone.encloses(e.box_px))
                if gone is not None else frozenset()
            ),
            unconfirmed=unconfirmed,
        )
        labels: Mapping[int, str] | None = None  # kept for the next observation
        labelled = False  # some tree candidate got its label off the pixels here
        renamed: dict[int, str] = {}  # tree id -> the resource-id label a pixel label replaced
        if (
            tree is not None and frame is not None and probe is not None and not transposed
            and step.state is not ArbiterState.PIXEL  # the whole frame's OCR labelled them
        ):
            began = time.perf_counter_ns()
            labels, fresh = self._pixel_labels(tree, table, frame, probe, digest, drafts)
            for i, text in labels.items():
                # Not where this observation's OCR labelled it (the labels may be kept from
                # the observation before, of the same tree and picture).
                named = compress.label_of("", table.resource_ids[i])
                if drafts[i].text == named:
                    drafts[i] = drafts[i]._replace(text=text, source=Channel.BOTH)
                    labelled = True
                    if named:
                        renamed[table.ids[i]] = named
            spent = time.perf_counter_ns() - began
            if fresh:
                timings["labels"] = round(spent / 1e6, 3)
            t += spent  # the reading is not the fusion's own work
            if work is not PixelWork.NONE:
                labels = None  # read around this observation's OCR: not kept for the next
        tree_channel = Channel.TREE  # looked up once: an enum class attribute is a descriptor call
        analysed = work is not PixelWork.NONE
        pix_conf = pixel_confidence(
            frame=frame is not None,
            blank=blank,
            analysed=analysed,
            # Only an analysed frame's score reads them.
            candidate_confidences=(
                [d.confidence for d in drafts if d.source is not tree_channel] if analysed else []
            ),
        )
        package = tree.package if tree is not None else ""
        memo = self._drafts_memo
        draft_boxes = None
        stale = evidence.stale
        if memo is not None and not stale and memo[0] == drafts:
            # The same drafts as the last observation: the same top texts and normalised texts.
            texts, norms, key_norms = memo[1], memo[2], memo[3]
        else:
            # The drafts' boxes: the elements' (tree order first), then the pixel candidates'.
            n_tree = len(elements)
            pixel_drafts = drafts[n_tree:]
            draft_boxes = (
                np.concatenate([table.box_array, boxes_array([d.box_px for d in pixel_drafts])])
                if pixel_drafts
                else table.box_array
            )
            norms = normalise_texts([d.text for d in drafts])
            # The page and each tree candidate are named by what the tree says: an OCR line
            # that filled in an element's label, or one only the pixels show, comes and goes
            # with the arbiter's state, not with the page.
            key_norms = norms
            tree_drafts = drafts[:n_tree]
            if crosscheck is not None or labelled:
                own = own_labels(elements, table)
                pairs = enumerate(zip(tree_drafts, own, strict=True))
                filled = [i for i, (d, o) in pairs if d.text != o]
                if filled:
                    key_norms = list(norms)
                    for i in filled:
                        key_norms[i] = normalise_text(own[i])
                        tree_drafts[i] = tree_drafts[i]._replace(text=own[i])
            if stale and pixel_drafts:
                # The dump from before the action over a frame that changed since: its texts
                # name the page the action left. The page is what the pixels show (else every
                # stale dump is a "loop" and a "revisit" whose cached list is the old page's).
                texts = top_texts(pixel_drafts, boxes=draft_boxes[n_tree:])
            else:
                texts = top_texts(tree_drafts, boxes=table.box_array) if n_tree else ()
                if len(texts) < TOP_TEXTS // 2 and pixel_drafts:
                    # A tree that names next to nothing (a game, a canvas): the pixels' too.
                    texts = top_texts(tree_drafts + pixel_drafts, boxes=draft_boxes)
            self._drafts_memo = None if stale else (drafts, texts, norms, key_norms)
        page = fingerprint(package, activity, texts)
        candidates = tuple(
            self._ids.assign(
                drafts, page=page, screen=screen_size, boxes=draft_boxes, norms=key_norms
            )
        )
        assigned = candidates  # the drafts' order: draft_boxes and the table's flags hold
        fields = _field_texts(tree, candidates)
        # A frame the pixel channel flags black is FLAG_SECURE (a person should take over),
        # with a tree or without one; one flat colour of another kind (white, a theme's grey)
        # over a tree with things on it is an app that has not drawn yet.
        secure = blank and probe is not None and probe.secure
        drawing = blank and bool(elements) and probe is not None and not probe.black
        # Black with no tree that shows a screen (none given, the dump failed, nothing in it):
        # the frame alone says so, and recapturing gives the same black frame.
        secure_alone = secure and not elements
        if tree is not None and not transposed:
            rotation = tree.rotation
        else:
            # No tree, or one a quarter turn from the frame (its rotation attribute may say
            # either way): the frame's orientation, upright or the usual landscape.
            rotation = 1 if screen_size.width_px > screen_size.height_px else 0
        info = ScreenInfo(
            package=package,
            activity=activity,
            size=screen_size,
            rotation=rotation,
            secure=secure,
            fingerprint=page,
            top_texts=texts,
            keyboard_px=keyboard,
        )
        # Each distinct class and resource name once, space-separated: what recommend() looks
        # for are single words, so neither order nor repeats matter.
        hints = " ".join(set(table.class_names) | set(table.resource_ids)).lower()
        if getattr(tree, "over_dialog", False):
            hints += " dialog"  # a dialog over a barrier, named nowhere (Flutter's)
        if unconfirmed:
            candidates = _left_out_unseen(candidates, unconfirmed, screen_size, notes)
        elif work is not PixelWork.NONE and tree is not None and tree.health.floating_window:
            # A dump holding a floating window alone (a dialog, a sheet, a pop-up menu) is the
            # window with the focus: what the pixels show around it is the page under it, which
            # a tap does not reach (it dismisses the window, or nothing happens); a
            # "Loading...." dialog over a dimmed page offered the page's buttons.
            window = getattr(tree, "window_box", None)
            if window is not None and window.area > 0:
                candidates = _occluded_outside(candidates, window, only=Channel.PIXEL)
        if off_pop_up:
            # The tree's page lies under the pop-up: a tap there dismisses it (or does
            # nothing), whether under its scrim or under its panel (a page-wide web view whose
            # centre the panel covers); the pixel candidates are the pop-up's already.
            off_ids = {table.ids[i] for i in off_pop_up}
            candidates = tuple(
                replace(c, flags=c.flags | ElementFlag.OCCLUDED)
                if c.tree_id in off_ids and not c.occluded else c
                for c in candidates
            )
        # Android's own not-responding or crash dialog: its buttons by id, in any language
        # (not while the pixels disagree: it may be gone).
        ops: list[Operation] = []
        if consistent is not False and "aerr_" in hints:
            ids = {e.id: e.resource_id for e in elements if e.resource_id}
            ops, modal = system_error_dialog(candidates, ids)
            if modal is not None:
                # The app under it takes no tap while the dialog is up.
                candidates = _occluded_outside(candidates, modal)
        if not ops:
            # A dialog's buttons are not offered when the pixels do not show that dialog; nor
            # do the tree's rows left out as another moment's say what the screen offers.
            # The candidates still the drafts, one for one: their boxes and flag bits are at
            # hand as arrays.
            aligned = candidates is assigned and consistent is not False
            judged: Sequence[Candidate] = candidates
            judged_norms: Sequence[str] | None = norms
            if renamed:
                # An action renamed off the pixels is judged by its resource id, as before: the
                # id tells a page's own close ("home_drag_view_close", a floating widget's)
                # from a pop-up's ("iv_close"), the × both draw does not.
                judged = [
                    replace(c, text=renamed[c.tree_id]) if c.tree_id in renamed else c
                    for c in candidates
                ]
                judged_norms = None
            # A pop-up the pixels see that the tree does not hold: what is listed is on it
            # (the rest is occluded above), its buttons are on the screen now; the tree's
            # names are the page's under it, not the pop-up's.
            pop_up = missing_modal is not None and work is not PixelWork.NONE
            ops = recommend(
                judged if consistent is not False else [c for c in judged if c.listed],
                # recommend's hand-over says the tree shows a screen: not one to give here
                replace(info, secure=False) if secure_alone else info,
                hints="" if pop_up else hints,
                norms=judged_norms if consistent is not False else None,
                consistent=None if pop_up else consistent, drawing=drawing, modal=pixel_modal,
                boxes=draft_boxes if aligned else None,
                flags=_draft_flags(table, drafts) if aligned else None,
                locked=bool(getattr(tree, "asks_to_unlock", False)),
            )
        if secure_alone:
            ops.insert(0, Operation(
                kind=OperationKind.HAND_OVER,
                reason="the frame is black and no tree shows what is on the screen: "
                "FLAG_SECURE, unless the display is off (wake it); nothing can be read off it, "
                "a person should take over",
            ))
        if (
            work is not PixelWork.NONE
            and consistent is not False
            and not any(o.kind is OperationKind.WAIT for o in ops)
        ):
            loading = _page_loading(getattr(tree, "loading_pages", ()), candidates)
            if loading is not None:
                ops.insert(0, Operation(
                    kind=OperationKind.WAIT,
                    reason="a web page is loading: a progress bar shows and the pixels show "
                    f"nothing in the page at {tuple(loading)} yet",
                ))
        if (
            spot is not None
            and consistent is not False
            and not any(o.kind is OperationKind.WAIT for o in ops)
        ):
            ops.insert(0, Operation(
                kind=OperationKind.WAIT,
                reason=f"part of the page is loading: a loading indicator at {tuple(spot)} "
                "with no text around it",
            ))
        if drawing and probe is not None:
            notes.append(
                f"the frame is one flat colour (grey {probe.mean:.0f}), not black: the app has "
                "not drawn the screen yet; the tree cannot be checked against it"
            )
        # The app decides how many rows a screen has; the prompt's size must not follow.
        candidates, left_out = within_budget(
            candidates, self.config.max_rows,
            keep_ids={o.candidate_id for o in ops if o.candidate_id is not None},
            tree_left_out=getattr(tree, "over_budget_ids", frozenset()),
        )
        if left_out:  # an operation names a row the prompt shows, or is no operation
            shown = {c.id for c in candidates if c.listed and not c.occluded}
            ops = [o for o in ops if o.candidate_id is None or o.candidate_id in shown]
        refresh: frozenset[Channel] = frozenset()
        if (
            score.value < self.config.min_usable
            and pix_conf < self.config.min_usable
            and not secure_alone  # its hand-over is the verdict: a recapture is as black
        ):
            refresh = frozenset({Channel.TREE, Channel.PIXEL})
            ops.insert(
                0,
                Operation(
                    kind=OperationKind.RECAPTURE,
                    reason=f"neither channel is good enough (tree {score.value:.2f}, "
                    f"pixels {pix_conf:.2f})",
                ),
            )
        loop = self._loops.observe(page, loop_step)
        revisit = page in self._pages
        self._pages.put(page, candidates)
        self._seen = _Seen(
            epoch=epoch,
            digest=digest,
            element_count=len(elements),
            tree_confidence=score.value,
            text_boxes=evidence.text_boxes,
            coverage=evidence.coverage,
            probe=probe,
            ocr_agreement=evidence.ocr_agreement,
            ocr_compared=evidence.ocr_compared,
            read_back=read_back,
            labels=labels,
            stale=stale,
        )
        lap("fuse", t)
        return Observation(
            state=step.state,
            tree_confidence=score.value,
            pixel_confidence=pix_conf,
            consistent=consistent,
            screen=info,
            candidates=candidates,
            operations=tuple(ops),
            epoch=epoch,
            refresh=refresh,
            pixel_work=work,
            vision_used=bool(vision_boxes),
            notes=tuple(notes),
            tree_factors=dict(score.factors),
            loop=loop,
            revisit=revisit,
            timings_ms=timings,
            field_texts=fields,
            left_out=left_out,
            unread_lines=unread,
        )

    def _read_back(
        self,
        tree: TreeLike,
        table: ElementTable,
        frame: FrameLike,
        probe: FrameProbe,
        digest: int | None,
        notes: list[str],
    ) -> tuple[tuple[int, int, bool] | None, bool]:
        """Read a few of the tree's labels back off the frame: ``(sampled, agreed, other)``
        over the labels that count (below the app bar when two or more are:
        :func:`~perception.fusion.crossval.read_back_counted`), or None when the channel
        cannot read or the tree offers none; and whether the pixels were read now. ``other``:
        the tree offers one label, not said back, and the pixels read other words there
        (:func:`~perception.fusion.crossval.read_back_other`); one label alone is otherwise no
        verdict (:data:`~perception.fusion.score.READ_BACK_MIN`).

        The labels: one-piece labels, then single pieces of multi-piece labels (a list row's
        own lines, in their text nodes' boxes). Once per tree and picture: the same tree over
        a frame that has not changed keeps the last answer. Recognition first (one batch);
        only when it says too few of them (:func:`~perception.fusion.score.read_back_failed`),
        detection and recognition of the boxes it did not read, so a tree is called another
        moment's on OCR's best."""
        read = getattr(self._pixels, "read_back", None)
        if read is None or probe.blank:
            return None, False
        seen = self._same_picture(digest, probe)
        if seen is not None and seen.read_back is not None:
            return seen.read_back, False
        raw = getattr(tree, "raw", None)
        of = getattr(tree, "element_of_node", None)
        pieces = (
            label_pieces(
                table.texts,
                raw.strings[fastpath.F_TEXT :: fastpath.NFIELDS],
                raw.box_px,
                of,
            )
            if raw is not None and of is not None
            else ()
        )
        hidden: frozenset[int] = getattr(tree, "hidden_ids", frozenset())
        picked = read_back_sample(table, hidden=hidden, frame_size=frame.size)
        lines = read_back_lines(
            table, picked, hidden=hidden, frame_size=frame.size, pieces=pieces
        )
        counted = read_back_counted(lines)
        sampled = sum(counted)
        if not sampled:
            return None, False
        labels = [line.label for line in lines]
        boxes = [line.box for line in lines]
        said = read(frame, boxes, detect=False)
        ok, agreed = read_back_tally(labels, said, counted)
        # (With two labels or more, none said is too few said already.)
        if read_back_failed(sampled, agreed) or not agreed:
            # Recognition alone misses a label in a box much taller than its line or holding
            # an icon: the counted labels it did not say are read again with detection.
            again = [k for k, (o, c) in enumerate(zip(ok, counted, strict=True)) if c and not o]
            found = read(frame, [boxes[k] for k in again], detect=True)
            for k, text in zip(again, found, strict=True):
                said[k] = text
            ok, agreed = read_back_tally(labels, said, counted)
        if sampled < READ_BACK_MIN:
            # One label: not said, it is a verdict only where the pixels read other words.
            k = counted.index(True)
            other = not agreed and read_back_other(labels[k], said[k])
            if other:
                notes.append(
                    f"the tree's one label {labels[k]!r} does not read back off the pixels "
                    f"where the tree puts it; they say {said[k]!r} there: the tree and the "
                    "frame show different moments"
                )
            return (sampled, agreed, other), True
        if read_back_failed(sampled, agreed):
            shown = [k for k, c in enumerate(counted) if c and not ok[k]]
            notes.append(
                ("none of the tree's labels " if not agreed else
                 f"only {agreed} of the tree's {sampled} labels read back; not ")
                + ", ".join(repr(labels[k]) for k in shown)
                + (" reads back" if not agreed else ", which do not read back")
                + " off the pixels where the tree puts them (they say "
                + ", ".join(repr(said[k]) for k in shown)
                + "): the tree and the frame show different moments"
            )
        return (sampled, agreed, False), True

    def _same_picture(self, digest: int | None, probe: FrameProbe) -> _Seen | None:
        """The previous observation when it had this tree over a frame that has not changed
        since (what was read off the pixels for it still holds), else None."""
        seen = self._seen
        if (
            seen is not None
            and seen.digest == digest
            and seen.probe is not None
            and probe.change(seen.probe) <= FRAME_UNCHANGED
        ):
            return seen
        return None

    def _pixel_labels(
        self,
        tree: TreeLike,
        table: ElementTable,
        frame: FrameLike,
        probe: FrameProbe,
        digest: int | None,
        drafts: Sequence[Draft],
    ) -> tuple[Mapping[int, str], bool]:
        """Labels off the pixels for the tree's actions it names with nothing or only by a
        resource id (see :func:`perception.fusion.crossval.unlabelled_sample`), by element
        index; and whether the pixels were read now. Once per tree and picture, as the
        read-back: a custom-drawn button the tree leaves empty is offered with the text it
        shows (source ``both``), and so is one the tree names ``[detail_header_button]``
        where it shows "+Follow"; the page's fingerprint and the candidates' ids still follow
        the tree's own labels.
        Elements this observation's OCR labelled already (``drafts``) are not read again.

        The first :data:`~perception.fusion.crossval.PIXEL_LABELS` are read by OCR; those it
        reads nothing off (or one character a glyph reads as: "X", "+"), and the rest up to
        :data:`~perception.fusion.crossval.GLYPH_LABELS`, are looked at for an icon glyph
        (:func:`perception.pixel.glyphs.read_glyphs`: × ← → ‹ › + ⋮ ⋯ ☰ ▶ ⏸ ♡, "search",
        "settings", "share", "send", "mic")."""
        if probe.blank:
            return {}, False
        read = getattr(self._pixels, "read_labels", None)
        seen = self._same_picture(digest, probe)
        if seen is not None and seen.labels is not None:
            return seen.labels, False
        sample = unlabelled_sample(
            table,
            hidden=getattr(tree, "hidden_ids", frozenset()),
            frame_size=frame.size,
            limit=GLYPH_LABELS,
        )
        # Not those this observation's OCR labelled already.
        name, rids = compress.label_of, table.resource_ids
        picked = [i for i in sample if drafts[i].text == name("", rids[i])]
        if not picked:
            return {}, False
        labels: dict[int, str] = {}
        if read is not None:
            first = set(sample[:PIXEL_LABELS])
            ocr = [i for i in picked if i in first]
            if ocr:
                said = read(frame, [table.boxes[i] for i in ocr])
                labels = {i: text for i, text in zip(ocr, said, strict=True) if text}
        looked = [i for i in picked if labels.get(i, "") in GLYPH_LOOKALIKES]
        if looked:
            drawn = read_glyphs(frame.pixels, [table.boxes[i] for i in looked])
            labels.update((i, g) for i, g in zip(looked, drawn, strict=True) if g)
        return labels, True

    def _pixel_work(
        self,
        state: ArbiterState,
        frame: FrameLike,
        probe: FrameProbe | None,
        elements: Sequence[TreeElement],
        doubtful: Sequence[int],
        unseen: Sequence[int],
        *,
        elsewhen: bool = False,
    ) -> tuple[PixelWork, list[TextBlock]]:
        """OCR and anchors where the state asks: in tree-unstable the doubtful elements, the
        opaque ones whose content the tree does not describe (``unseen``) and the bands
        nothing covers but page-wide boxes (:data:`COVER_SHARE_MAX`), unless they add up to
        most of the frame; else the whole frame, also when the tree shows another moment
        (``elsewhen``: its labels do not read back, its boxes say nothing of this frame)."""
        size = frame.size
        if state is ArbiterState.UNSTABLE and probe is not None and not elsewhen:
            regions = [elements[i].box_px for i in doubtful]
            regions += [elements[i].box_px for i in unseen]
            most = COVER_SHARE_MAX * size.width_px * size.height_px
            live = [
                e.box_px for e in elements
                if not e.flags & ElementFlag.OCCLUDED and e.box_px.area <= most
            ]
            regions += uncovered_bands(probe, live, size)
            area = sum(r.area for r in regions)
            if area <= ROI_FULL_SHARE * size.width_px * size.height_px:
                if not regions:
                    return PixelWork.ROI, []
                return PixelWork.ROI, _blocks(self._read_pixels(frame, probe, regions))
        return PixelWork.FULL, _blocks(self._read_pixels(frame, probe))

    def _read_pixels(
        self, frame: FrameLike, probe: FrameProbe | None, regions: Sequence[BoxPx] | None = None
    ) -> Sequence[TextBlock]:
        """The pixel channel's blocks of ``frame`` (in ``regions`` only, when given). Our own
        channel is handed the flags the probe computed (by the reader's limits, of the same
        frame) rather than computing them again (2-10 ms); one whose method is overridden (it
        may take no ``flagged``) is not."""
        px = self._pixels
        method = "full" if regions is None else "regions"
        if not (
            isinstance(px, PixelChannel)
            and getattr(type(px), method) is getattr(PixelChannel, method)
            and probe is not None
            and probe.size == frame.size
            and probe.config == px.config
        ):
            return px.full(frame) if regions is None else px.regions(frame, regions)
        flagged = (probe.flags, probe.signature)
        if regions is None:
            return px.full(frame, flagged=flagged)
        return px.regions(frame, regions, flagged=flagged)

    def _ask_vision(
        self,
        frame: FrameLike,
        probe: FrameProbe | None,
        elements: Sequence[TreeElement],
        blocks: Sequence[TextBlock],
        notes: list[str],
    ) -> list[TextBlock]:
        """The vision model's boxes on the crops nothing labelled covers, in frame pixels.

        The model is outside code (a network call, a local net): a crop it fails on (any
        exception: a timeout, a transport error, a malformed answer) is noted and skipped, and
        so is an answer that is not a list of :class:`VisionBox`; of a list, a box that is not
        a VisionBox (a dict, a tuple, a non-finite confidence) or that lies outside the crop or
        has no area is dropped, the rest clipped to the crop. OCR and anchors still stand."""
        assert self.vision is not None
        # Text-less anchors (icons, images) are what a vision model can name: only elements
        # and text count as known.
        known = [e.box_px for e in elements] + [b.box_px for b in blocks if b.text.strip()]
        crops = uncovered_bands(probe, known, frame.size) if probe is not None else []
        out: list[TextBlock] = []
        for region in crops[:MAX_VISION_CROPS]:
            crop = np.ascontiguousarray(
                frame.pixels[region.top : region.bottom, region.left : region.right]
            )
            try:
                answer = self.vision(crop)
            except Exception as exc:  # outside code (see the docstring); Ctrl-C still stops
                notes.append(
                    f"vision model failed on the crop {tuple(region)}: {type(exc).__name__}: "
                    f"{str(exc)[:NOTE_CHARS]}"
                )
                continue
            if not isinstance(answer, list | tuple):
                notes.append(
                    f"vision model answered {type(answer).__name__} on the crop "
                    f"{tuple(region)}, not a list of VisionBox: skipped"
                )
                continue
            dropped: dict[str, int] = {}
            for box in answer:
                kept = _vision_box(box, region)
                if isinstance(kept, str):
                    dropped[kept] = dropped.get(kept, 0) + 1
                else:
                    out.append(kept)
            if dropped:
                notes.append(
                    f"vision model: dropped {sum(dropped.values())} of its {len(answer)} boxes "
                    f"on the crop {tuple(region)} ("
                    + ", ".join(f"{n} {why}" for why, n in dropped.items())
                    + ")"
                )
        return out


def _vision_box(box: object, region: BoxPx) -> VisionBox | str:
    """A vision model's box clipped to its crop and moved into frame pixels, or why not."""
    if not isinstance(box, VisionBox):
        return "not a VisionBox"
    try:
        left, top, right, bottom = map(operator.index, box.box_px)
        confidence = float(box.confidence)
    except (TypeError, ValueError):
        return "not a VisionBox"
    if not (isinstance(box.label, str) and isinstance(box.kind, str) and math.isfinite(confidence)):
        return "not a VisionBox"
    inside = clip_box(
        BoxPx(left, top, right, bottom), BoxPx(0, 0, region.width, region.height)
    )
    if inside.area == 0:
        return "outside the crop or empty"
    shifted = BoxPx(
        inside.left + region.left,
        inside.top + region.top,
        inside.right + region.left,
        inside.bottom + region.top,
    )
    return replace(box, box_px=shifted, confidence=min(1.0, max(0.0, confidence)))


def _page_loading(pages: Sequence[BoxPx], candidates: Sequence[Candidate]) -> BoxPx | None:
    """The first of the tree's loading pages (:attr:`perception.tree.Tree.loading_pages`: a web
    view with nothing in the dump while a progress bar shows) in which the pixels found
    nothing, no text and no shape: a blank page behind a browser's progress line (Firefox on
    adguard.com). A page drawn already, loading its last parts, is no wait: it can be read."""
    for page in pages:
        if not any(
            c.source is Channel.PIXEL and page.contains(c.box_px.center) for c in candidates
        ):
            return page
    return None


def _occluded_outside(
    candidates: tuple[Candidate, ...], box: BoxPx, *, only: Channel | None = None
) -> tuple[Candidate, ...]:
    """The candidates, those whose centre lies outside ``box`` (a modal dialog, the window
    with the focus) occluded; with ``only``, those of that channel alone."""
    return tuple(
        replace(c, flags=c.flags | ElementFlag.OCCLUDED)
        if (only is None or c.source is only)
        and not c.occluded and not box.contains(c.box_px.center)
        else c
        for c in candidates
    )


MODAL_SLACK_PX = 12
"""How far past a pop-up's box (found on a 4 px grid, its shadow and rounded corners aside) a
candidate may reach and still be on it."""


def _panel(modal: BoxPx) -> BoxPx:
    """A pop-up's box as the pixels found it, grown by :data:`MODAL_SLACK_PX`."""
    s = MODAL_SLACK_PX
    return BoxPx(modal.left - s, modal.top - s, modal.right + s, modal.bottom + s)


def _off(table: ElementTable, modal: BoxPx) -> frozenset[int]:
    """Indices of the elements whose box does not lie on ``modal`` (:func:`_panel`), a pop-up
    the pixels see that the tree does not hold: its page's, under the pop-up. One that lies
    on the panel stands where OCR reads its label there."""
    panel = _panel(modal)
    return frozenset(i for i, b in enumerate(table.boxes) if not panel.encloses(b))


def _draft_flags(table: ElementTable, drafts: Sequence[Draft]) -> npt.NDArray[np.int64]:
    """The flag bits of ``drafts`` (:func:`merge`'s: the table's elements in order, then the
    pixel candidates) as ``int64[N]``: the table's own array for the elements'."""
    n_tree = len(table)
    if len(drafts) == n_tree:
        return table.flag_array
    return np.concatenate([table.flag_array, flag_bits([d.flags for d in drafts[n_tree:]])])


def _page_wide(table: ElementTable, screen: ScreenSize) -> set[int]:
    """Indices of the elements over more of the screen than a label belongs to
    (:data:`~perception.fusion.candidates.LABEL_SHARE_MAX`)."""
    most = LABEL_SHARE_MAX * screen.width_px * screen.height_px
    return {i for i, b in enumerate(table.boxes) if b.area > most}


def _unconfirmed(elements: Sequence[TreeElement], drawn: Collection[int] | None) -> frozenset[int]:
    """The indices of the tree's rows that stand only where OCR reads them, when the pixels say
    the tree shows another moment (its labels do not read back): a dialog already gone, the
    page before a launch. Rows whose label is text the screen would draw (``drawn``: the
    tree's element ids, see :attr:`perception.Tree.text_labelled`; None: every row), and every
    row inside a web view but the view itself: an icon named by its description cannot be
    confirmed so, and outside a page it is often the app's own frame around a stale page
    (Firefox's toolbar around a page the dump still holds). A web view's content is the page,
    which is what goes stale: rows inside one count however they are named (a page's links
    and images carry descriptions)."""
    pages = [e.box_px for e in elements if e.kind == "web"]
    return frozenset(
        i for i, e in enumerate(elements)
        if e.kind != "web"
        and (
            drawn is None or e.id in drawn
            or any(p.contains(e.box_px.center) for p in pages)
        )
    )


def _left_out_unseen(
    candidates: tuple[Candidate, ...],
    unconfirmed: Collection[int],
    screen: ScreenSize,
    notes: list[str],
) -> tuple[Candidate, ...]:
    """The candidates, the tree's rows at ``unconfirmed`` (:func:`_unconfirmed`, indices of
    the drafts' order: the tree's elements first) that the pixels did not confirm left out of
    the prompt (kept, not :attr:`~Candidate.listed`): OCR did not read them where the tree
    puts them, nor were they labelled off the pixels there (source ``both``). The pixel
    candidates stand for them: :func:`~perception.fusion.candidates.merge` let none of those
    rows hide one, so an anchor under a row that stays (a × the pixels named on it) is that
    row's drawing, left out as merge leaves out one under any row. Unchanged when the pixels
    offer nothing: never an empty screen."""
    gone = [
        i for i in sorted(unconfirmed)
        if candidates[i].source is Channel.TREE and candidates[i].listed
        and not candidates[i].occluded
    ]
    if not any(c.source is Channel.PIXEL for c in candidates):
        return candidates
    out = list(candidates)
    if gone:
        for i in gone:
            out[i] = replace(out[i], listed=False)
        notes.append(
            f"{len(gone)} of the tree's rows are left out of the prompt: the pixels do not "
            "show them (the tree and the frame show different moments)"
        )
    most = COVER_SHARE_MAX * screen.width_px * screen.height_px
    kept = [
        out[i].box_px for i in unconfirmed
        if out[i].listed and out[i].source is Channel.BOTH and out[i].box_px.area <= most
    ]
    anchors = [
        i for i, c in enumerate(out)
        if c.source is Channel.PIXEL and c.origin == Origin.ANCHOR.value and c.listed
    ]
    if kept and anchors:
        _, share = fastpath.match_blocks(
            boxes_array(kept), boxes_array([out[i].box_px for i in anchors])
        )
        for i, s in zip(anchors, share.tolist(), strict=True):
            if s >= COVERED_SHARE:
                out[i] = replace(out[i], listed=False)
    return tuple(out)


def _unseen(elements: Sequence[TreeElement]) -> list[int]:
    """The indices of web views, surfaces and canvases whose content the tree does not
    describe: no label of their own, or nothing else inside them (a browser that keeps its page
    out of the dump still names the view after the page's title)."""
    out = []
    for i, e in enumerate(elements):
        if e.kind not in OPAQUE_KINDS:
            continue
        box = e.box_px
        if not e.text.strip() or not any(
            o is not e and box.contains(o.box_px.center) for o in elements
        ):
            out.append(i)
    return out


def _tree_reader(config: TreeConfig | None) -> TreeReader:
    """:func:`perception.read_tree` with ``config`` (None: the defaults), taking ``screen=``."""

    def reader(xml: bytes | str, *, screen: ScreenSize | None = None) -> TreeLike:
        from perception.tree import read_tree

        tree: TreeLike = read_tree(xml, screen=screen, config=config)
        return tree

    return reader


def _takes_screen(reader: TreeReader) -> bool:
    """Does ``reader`` take ``screen=`` (see :data:`TreeReader`)?"""
    try:
        params = inspect.signature(reader).parameters
    except (TypeError, ValueError):  # a builtin or C callable: no signature to read
        return False
    return "screen" in params or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()
    )


def _default_pixels() -> PixelChannel:
    from perception.pixel.read import PixelReader

    return PixelChannel(PixelReader())


def _pixel_blocks(px: Pixels) -> PixelBlocks:
    """What a pixel read hands the fusion: its candidates, and what it saw around them."""
    return PixelBlocks(px.candidates, px.unread_lines, px.flags.modal_box_px, px.keyboard_px)


class PixelChannel:
    """Adapts the pixel channel's :class:`~perception.pixel.read.PixelReader` to fusion.

    Pass your own reader (its OCR engine, its config) to share it or to tune it.
    """

    def __init__(self, reader: PixelReader) -> None:
        self.reader = reader

    @property
    def config(self) -> PixelConfig:
        """The reader's config: the fusion's probe flags black and uniform frames by its
        limits, as the reader does (see :meth:`Perceiver._probe`)."""
        return self.reader.config

    def load(self, frame: object) -> FrameLike:
        return self.reader.frame(frame)  # type: ignore[arg-type]

    def full(
        self, frame: FrameLike, *, flagged: tuple[FrameFlags, StabilitySignature] | None = None
    ) -> PixelBlocks:
        """``flagged``: the frame's flags computed already (see :meth:`PixelReader.read`)."""
        return _pixel_blocks(self.reader.read(frame, flagged=flagged))  # type: ignore[arg-type]

    def regions(
        self,
        frame: FrameLike,
        regions: Sequence[BoxPx],
        *,
        flagged: tuple[FrameFlags, StabilitySignature] | None = None,
    ) -> PixelBlocks:
        px = self.reader.read(frame, regions=regions, flagged=flagged)  # type: ignore[arg-type]
        return _pixel_blocks(px)

    def read_back(self, frame: FrameLike, boxes: Sequence[BoxPx], *, detect: bool) -> list[str]:
        """The text the pixels hold in each box (device px, inside the frame): the box
        recognised as one line, or with ``detect`` the OCR of the box (its lines found first,
        then recognised, joined by spaces in reading order: a label set on two lines, "STORED"
        over "LOCATION", reads as one). Both go through the reader's content caches."""
        if detect:
            return [self._lines_in(frame, box) for box in boxes]
        return [text for text, _score in self._recognise(frame, boxes)]

    def _recognise(self, frame: FrameLike, boxes: Sequence[BoxPx]) -> list[tuple[str, float]]:
        """Each box recognised as one line (one batch, through the reader's line cache)."""
        pixels = frame.pixels
        crops = [pixels[b.top : b.bottom, b.left : b.right] for b in boxes]
        return [(text.strip(), score) for text, score in self.reader.text.recognize(crops)]

    def _lines_in(self, frame: FrameLike, box: BoxPx) -> str:
        """The lines OCR finds in ``box``, joined by spaces in reading order."""
        lines = self.reader.ocr_regions(frame, [box])  # type: ignore[arg-type]
        rows = line_rows([line.box_px for line in lines])
        return " ".join(lines[i].text for row in rows for i in row)

    def read_labels(self, frame: FrameLike, boxes: Sequence[BoxPx]) -> list[str]:
        """A label for each box off the pixels, or "" where they show none worth trusting.

        Each box is recognised as one line (one batch, through the line cache); a reading
        scored :data:`LABEL_SCORE_MIN` or more that holds a letter and two characters is the
        label. A row-shaped box (three times as wide as tall, a twelfth of the frame's width
        tall or more: a task row, a card) that does not read so has its lines found first, for
        at most :data:`LABEL_DETECTIONS` boxes, and they are joined in reading order. Icons
        read as nothing: recognition scores its guesses on them low ("@", "⑧" at 0.5)."""
        width = frame.size.width_px
        said: list[str] = []
        detections = 0
        for box, (text, score) in zip(boxes, self._recognise(frame, boxes), strict=True):
            if score >= LABEL_SCORE_MIN and _worth_a_label(text):
                said.append(_cut(text))
                continue
            row = box.width >= 3 * box.height and box.height >= width // 12
            if row and detections < LABEL_DETECTIONS:
                detections += 1
                text = self._lines_in(frame, box)
                if _worth_a_label(text):
                    said.append(_cut(text))
                    continue
            said.append("")
        return said


LABEL_SCORE_MIN = 0.9
"""Recognition score a one-line reading needs to become an element's label."""
_LABEL_CHARS = TreeConfig().max_label_chars
"""A label off the pixels is cut as the tree cuts a label piece."""
LABEL_DETECTIONS = 2
"""Row-shaped boxes per new tree and picture whose lines are found (about 35-55 ms each)."""


def _worth_a_label(text: str) -> bool:
    """Two characters or more, one of them a letter (of any script): "8", "@", "88" and
    "--" are what recognition makes of icons."""
    return len(text.replace(" ", "")) >= 2 and any(c.isalpha() for c in text)


def _cut(text: str) -> str:
    return text if len(text) <= _LABEL_CHARS else text[:_LABEL_CHARS] + "…"


def perceive(
    xml: bytes | str | os.PathLike[str] | None = None,
    frame: object = None,
    *,
    tree_time_ns: tuple[int, int] | None = None,
    frame_time_ns: tuple[int, int] | None = None,
    activity: str | None = None,
    screen: ScreenSize | None = None,
    keyboard: BoxPx | None = None,
) -> Observation:
    """One-shot fusion of a dump and a frame (no history: a fresh :class:`Perceiver`).

    The arguments are :meth:`Perceiver.perceive`'s but ``epoch`` and ``step``, which count
    actions and steps across observations: one shot has none (a :class:`Perceiver` keeps
    them). A numpy ``frame`` is gray, BGR or BGRA (OpenCV's order); pass an RGB one as
    ``Frame.from_array(arr, order="rgb")``."""
    from perception.pixel.read import PixelReader

    reader = PixelReader()
    try:
        return Perceiver(pixels=PixelChannel(reader)).perceive(
            xml, frame, tree_time_ns=tree_time_ns, frame_time_ns=frame_time_ns, activity=activity,
            screen=screen, keyboard=keyboard,
        )
    finally:
        reader.close()  # nothing reuses it: its OCR threads stop here, not at collection
