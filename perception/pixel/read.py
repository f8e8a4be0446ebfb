"""The pixel channel's façade: :class:`PixelReader` and the one-shot :func:`read_pixels`.

A reader owns everything with state: its OCR engine (loaded on first use), the crop-content
caches, the previous frame's stability signature and the last result. Use one reader per phone;
several readers may share one engine (pass ``engine=``) when memory matters more than locking.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import cv2

from perception.config import PixelConfig
from perception.errors import FrameError, InputError
from perception.geometry import clip_box
from perception.pixel.anchors import Anchor, find_anchors
from perception.pixel.flags import SIGNATURE_SCALE, FrameFlags, StabilitySignature, frame_flags
from perception.pixel.frame import Frame, FrameLike, check_frame_size, load_frame
from perception.pixel.glyphs import name_candidates
from perception.pixel.keyboard import find_keyboard
from perception.pixel.merge import (
    PixelCandidate,
    TextBlock,
    bar_around_clock,
    build_candidates,
    merge_lines,
    selected_tabs,
    status_clock,
)
from perception.pixel.ocr import OcrEngine, TextLine, TextReader, content_digest
from perception.types import BoxPx, ScreenSize

log = logging.getLogger(__name__)

STATUS_BAR_MIN_DP = 24
"""A status bar found (by the luma profile or its clock) is at least this tall, in dp of a
frame whose short side is 360 dp: over a light bar the profile ended at 60 px of a 2280 px
frame whose status icons reach 88 px."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Pixels:
    """What the pixels of one frame offer."""

    size: ScreenSize
    flags: FrameFlags
    candidates: tuple[PixelCandidate, ...]
    anchors: tuple[Anchor, ...]
    lines: tuple[TextLine, ...]
    """OCR lines after gap splitting, before block merging."""
    blocks: tuple[TextBlock, ...] = ()
    """Lines merged into blocks (Mobile-Agent-v2 rule); ``TextBlock.lines`` indexes ``lines``."""
    ocr: str
    """How text was read: ``full``, ``roi``, ``cached`` (unchanged frame), ``off`` or ``skipped``
    (black or uniform frame)."""
    rotation_mismatch: int = 0
    """1 when the hierarchy's screen is the frame's transposed (landscape tree, portrait image)."""
    unread_lines: int = 0
    """Text lines OCR found but did not read: past ``PixelConfig.max_ocr_lines`` line crops a
    frame (over all its regions, each line counted once where regions overlap or nest), those
    lowest on the screen are left unread, so a frame full of text costs bounded time. 0 on
    every corpus screen; over 0, ``lines``, ``blocks`` and ``candidates`` miss text that is
    there (see :meth:`perception.pixel.ocr.TextReader.read_regions`)."""
    keyboard_px: BoxPx | None = None
    """The on-screen keyboard the pixels show (:func:`perception.pixel.keyboard.find_keyboard`,
    off the whole frame's OCR: None when OCR read regions only, or was off)."""
    timings_ms: Mapping[str, float]


@dataclass(frozen=True, slots=True, kw_only=True)
class VisionCrop:
    """A region cut for a vision model: JPEG bytes and where they come from."""

    jpeg: bytes
    box_px: BoxPx
    """The cut box in device pixels (region plus margin, clipped to the screen)."""
    scale: float
    """JPEG pixels per device pixel (<= 1; the crop is only ever shrunk)."""


def _ms(t0_ns: int) -> float:
    return round((time.perf_counter_ns() - t0_ns) / 1e6, 3)


def as_box_px(box: object, what: str = "region") -> BoxPx:
    """``box`` as an int :class:`BoxPx`: a BoxPx, or any four finite numbers ``(l, t, r, b)``
    in device px (floats widen to the whole pixels they touch); else :class:`InputError`."""
    if type(box) is BoxPx and all(type(v) is int for v in box):
        return box
    try:
        if isinstance(box, str | bytes):
            raise TypeError("text")
        left, top, right, bottom = (float(v) for v in box)  # type: ignore[attr-defined]
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"{what} must be a BoxPx or four numbers (left, top, right, bottom) in device px, "
            f"got {box!r}"
        ) from exc
    if not all(math.isfinite(v) for v in (left, top, right, bottom)):
        raise InputError(f"{what} must have finite edges in device px, got {box!r}")
    return BoxPx(math.floor(left), math.floor(top), math.ceil(right), math.ceil(bottom))


def _as_boxes(regions: Sequence[BoxPx]) -> list[BoxPx]:
    if isinstance(regions, BoxPx):
        raise InputError(f"regions is a list of boxes, got one box {tuple(regions)}: pass [box]")
    return [as_box_px(r) for r in regions]


class PixelReader:
    """Reads frames of one phone: flags, anchors, OCR (full or ROI) and candidates."""

    def __init__(self, config: PixelConfig | None = None, engine: OcrEngine | None = None) -> None:
        self.config = config or PixelConfig()
        self.text = TextReader(self.config, engine)
        self._signature: StabilitySignature | None = None
        self._last_digest: bytes | None = None
        self._last: Pixels | None = None

    def close(self) -> None:
        """Stop the OCR engine's recognition workers now rather than at garbage collection
        (the engine loads again if the reader is used after this)."""
        close = getattr(self.text.engine, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> PixelReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def frame(self, frame: FrameLike) -> Frame:
        """Decode and validate anything frame-like with this reader's limits."""
        return load_frame(frame, config=self.config)

    def flags(self, frame: FrameLike) -> FrameFlags:
        """Flags of a frame; also advances the stability baseline to it."""
        flags, self._signature = frame_flags(self.frame(frame), self.config, self._signature)
        return flags

    def ocr_regions(self, frame: FrameLike, regions: Sequence[BoxPx]) -> list[TextLine]:
        """OCR only ``regions`` (device px) of a frame; unchanged regions come from the cache.

        The call reads at most ``max_ocr_lines`` line crops over all ``regions``, as
        :meth:`read` does; lines left unread are logged (a warning), since the list returned
        has no place to say so: use :meth:`read` with ``regions=`` to get the count."""
        f = self.frame(frame)
        lines, unread = self._ocr(f, _as_boxes(regions))
        if unread:
            log.warning(
                "OCR left %d text lines unread in %d regions (max_ocr_lines=%d)",
                unread, len(regions), self.config.max_ocr_lines,
            )
        return lines

    def _ocr(self, f: Frame, regions: Sequence[BoxPx]) -> tuple[list[TextLine], int]:
        """The lines of ``regions`` in order, under one budget of ``max_ocr_lines`` line crops
        for them all, and how many lines were left unread (see
        :meth:`~perception.pixel.ocr.TextReader.read_regions`: past the budget a line where
        regions nest or overlap counts once, and what is left is the bottom of the screen
        whatever the regions' order)."""
        got = self.text.read_regions(f.pixels, regions, self.config.max_ocr_lines)
        return got.lines, got.unread

    def _flags(
        self, f: Frame, given: tuple[FrameFlags, StabilitySignature] | None
    ) -> tuple[FrameFlags, StabilitySignature]:
        """``f``'s flags and signature against this reader's last signature: ``given`` (see
        :meth:`read`'s ``flagged``) with its stability restamped, or computed."""
        if given is None:
            return frame_flags(f, self.config, self._signature)
        flags, signature = given
        h, w = f.pixels.shape[:2]
        if signature.cells.shape != (max(1, h // SIGNATURE_SCALE), max(1, w // SIGNATURE_SCALE)):
            raise InputError(
                f"flagged= was computed for another frame than this {w}x{h} one "
                f"(signature {signature.cells.shape[1]}x{signature.cells.shape[0]} cells)"
            )
        previous = self._signature
        if previous is None:
            return replace(flags, stable=None, changed_cells=-1), signature
        changed = previous.changed_cells(signature, self.config.stable_diff_min)
        return replace(flags, stable=changed == 0, changed_cells=changed), signature

    def read(
        self,
        frame: FrameLike,
        *,
        regions: Sequence[BoxPx] | None = None,
        ocr: bool = True,
        tree_screen: ScreenSize | None = None,
        flagged: tuple[FrameFlags, StabilitySignature] | None = None,
    ) -> Pixels:
        """Read one frame.

        ``regions`` limits OCR to those boxes (ROI mode); without them the whole screen below
        the status bar is read. ``tree_screen`` checks the frame against the hierarchy's screen
        (:class:`~perception.errors.FrameSizeMismatchError` when they cannot be the same).
        A frame identical to the previous one returns the previous result (``ocr="cached"``).
        ``flagged``: what ``frame_flags(frame, self.config)`` returned for this frame, computed
        already (the fusion's probe of every frame), taken instead of computing them again;
        ``stable`` and ``changed_cells`` are still this reader's, against the frame it read last.
        """
        timings: dict[str, float] = {}
        t0 = time.perf_counter_ns()
        boxes = None if regions is None else _as_boxes(regions)
        f = self.frame(frame)
        timings["decode"] = _ms(t0)
        rotation_mismatch = 0 if tree_screen is None else check_frame_size(f.size, tree_screen)

        t = time.perf_counter_ns()
        flags, signature = self._flags(f, flagged)
        self._signature = signature
        timings["flags"] = _ms(t)

        digest = content_digest(f.pixels)
        last = self._last
        if (
            last is not None
            and digest == self._last_digest
            and boxes is None
            and ocr
            and last.ocr in ("full", "cached")
        ):
            timings["total"] = _ms(t0)
            return replace(
                last,
                flags=flags,
                ocr="cached",
                rotation_mismatch=rotation_mismatch,
                timings_ms=timings,
            )

        if flags.uniform or flags.black:
            timings["total"] = _ms(t0)
            result = Pixels(
                size=f.size,
                flags=flags,
                candidates=(),
                anchors=(),
                lines=(),
                ocr="skipped",
                rotation_mismatch=rotation_mismatch,
                timings_ms=timings,
            )
            self._remember(digest, result)
            return result

        t = time.perf_counter_ns()
        anchors = find_anchors(f, flags, self.config)
        timings["anchors"] = _ms(t)

        t = time.perf_counter_ns()
        lines: list[TextLine] = []
        unread = 0
        mode = "off"
        if ocr:
            if boxes is None:
                top = flags.status_bar_px if self.config.skip_status_bar else 0
                targets = [BoxPx(0, top, f.size.width_px, f.size.height_px)]
                mode = "full"
            else:
                targets = [clip_box(r, f.size.box_px) for r in boxes]
                mode = "roi"
            lines, unread = self._ocr(f, targets)
            if unread:
                log.warning(
                    "OCR left %d text lines of a %dx%d frame unread (max_ocr_lines=%d)",
                    unread, f.size.width_px, f.size.height_px, self.config.max_ocr_lines,
                )
        timings["ocr"] = _ms(t)

        t = time.perf_counter_ns()
        status_bar = flags.status_bar_box(f.size)
        clock = status_clock(lines, f.size)
        if clock is not None:
            clock_bar = bar_around_clock(clock, f.size)
            if status_bar is None:
                status_bar = clock_bar
            elif 2 * status_bar.bottom < clock_bar.bottom:
                # The bar holds its clock: a luma profile that ended above the clock's middle
                # (the clock bar's is half its height) stopped at something else (a page's 8 px
                # loading line across the top over a bar in the toolbar's colour: the clock and
                # the status icons were offered). The bar then ends just under the clock: the
                # toolbar's icons start close below it. One that ends a little short of the
                # clock's bar stands.
                status_bar = bar_around_clock(clock, f.size, tight=True)
        if status_bar is not None:
            # A bar is at least 24 dp tall: the luma profile ends early over a light bar. The dp
            # are guessed from a 360 dp short side (a tablet's is wider): the floor reaches no
            # lower than the clock's bar (where the clock was read) nor past the first line of
            # the page (a toolbar's title), one that starts below all that starts in the bar
            # (its status icons, which the profile may cut, and the text beside them).
            floor = round(STATUS_BAR_MIN_DP * min(f.size.width_px, f.size.height_px) / 360)
            in_bar = status_bar.bottom
            if clock is not None:
                floor = min(floor, bar_around_clock(clock, f.size, tight=True).bottom)
                in_bar = max(in_bar, clock.bottom)
            boxes = [ln.box_px for ln in lines] + [a.box_px for a in anchors]
            in_bar = max([in_bar, *(b.bottom for b in boxes if b.top < status_bar.bottom)])
            floor = min([floor, *(ln.box_px.top for ln in lines if ln.box_px.top >= in_bar)])
            if status_bar.bottom < floor:
                status_bar = BoxPx(0, 0, f.size.width_px, min(f.size.height_px, floor))
        candidates = build_candidates(
            lines,
            anchors,
            self.config,
            nav_bar=flags.nav_bar_box(f.size),
            status_bar=status_bar,
            modal=flags.modal_box_px,
        )
        candidates = selected_tabs(candidates, f.pixels)
        blocks = merge_lines(lines, self.config)
        timings["merge"] = _ms(t)
        t = time.perf_counter_ns()
        candidates = name_candidates(f.pixels, candidates, self.config.glyph_max)
        timings["glyphs"] = _ms(t)
        t = time.perf_counter_ns()
        keyboard = (
            find_keyboard(
                lines, f.pixels, f.size, nav_bar=flags.nav_bar_box(f.size), status_bar=status_bar
            )
            if mode == "full"
            else None
        )
        timings["keyboard"] = _ms(t)
        timings["total"] = _ms(t0)
        result = Pixels(
            size=f.size,
            flags=flags,
            candidates=tuple(candidates),
            anchors=tuple(anchors),
            lines=tuple(lines),
            blocks=tuple(blocks),
            ocr=mode,
            rotation_mismatch=rotation_mismatch,
            unread_lines=unread,
            keyboard_px=keyboard,
            timings_ms=timings,
        )
        self._remember(digest, result)
        return result

    def _remember(self, digest: bytes, result: Pixels) -> None:
        self._last_digest = digest
        self._last = result

    def crop_for_vision(
        self, frame: FrameLike, box: BoxPx, *, margin_px: int | None = None
    ) -> VisionCrop:
        """Cut ``box`` plus a margin as a small JPEG for a vision model (the last resort)."""
        cfg = self.config
        return crop_for_vision(
            self.frame(frame),
            box,
            margin_px=cfg.vision_margin_px if margin_px is None else margin_px,
            max_side_px=cfg.vision_max_side_px,
            quality=cfg.vision_jpeg_quality,
        )


def crop_for_vision(
    frame: Frame,
    box: BoxPx,
    *,
    margin_px: int = 60,
    max_side_px: int = 768,
    quality: int = 80,
) -> VisionCrop:
    """Cut ``box`` plus ``margin_px`` on every side (clipped to the screen) as a JPEG whose
    longer side is at most ``max_side_px``."""
    if margin_px < 0 or max_side_px < 16:
        raise FrameError(f"crop_for_vision: margin {margin_px} px / max side {max_side_px} px")
    box = as_box_px(box, "crop_for_vision: box")
    grown = BoxPx(
        box.left - margin_px, box.top - margin_px, box.right + margin_px, box.bottom + margin_px
    )
    cut = clip_box(grown, frame.size.box_px)
    if cut.width == 0 or cut.height == 0:
        raise FrameError(f"crop_for_vision: box {tuple(box)} lies outside the {frame.size} frame")
    crop = frame.pixels[cut.top : cut.bottom, cut.left : cut.right]
    scale = min(1.0, max_side_px / max(cut.width, cut.height))
    if scale < 1.0:
        size = (max(1, round(cut.width * scale)), max(1, round(cut.height * scale)))
        crop = cv2.resize(crop, size, interpolation=cv2.INTER_AREA)
    ok, buf = cv2.imencode(".jpg", crop, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:  # pragma: no cover - OpenCV always encodes a valid uint8 image
        raise FrameError(f"cannot encode a {crop.shape} crop as JPEG")
    return VisionCrop(jpeg=buf.tobytes(), box_px=cut, scale=round(scale, 6))


def read_pixels(
    frame: FrameLike,
    *,
    config: PixelConfig | None = None,
    regions: Sequence[BoxPx] | None = None,
    tree_screen: ScreenSize | None = None,
) -> Pixels:
    """One-shot convenience: a fresh :class:`PixelReader` reads ``frame`` (loads OCR each call;
    keep a reader for repeated use)."""
    return PixelReader(config).read(frame, regions=regions, tree_screen=tree_screen)
