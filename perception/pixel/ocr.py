"""OCR for the pixel channel: a small engine interface, RapidOCR behind it, ROI reading and a
content cache.

Speed comes from doing less, not from a different model:

- detection runs on a copy about 540 px wide, with ``det_limit_side_len`` no larger than that
  copy's short side (RapidOCR never upscales it again);
- recognition runs on full-resolution crops, in small batches padded only to the batch's own
  widest crop (RapidOCR pads every crop to at least 320 px at height 48);
- detection's input is normalised by a table of RapidOCR's own float64 normalisation (the same
  bits, a quarter of the time), and the detection model keeps its memory arena between frames
  (``PixelConfig.det_mem_arena``; RapidOCR's session maps its buffers afresh each run);
- no angle classifier: screens are upright;
- a line that spans two buttons is split at wide blank gaps (:func:`perception.fastpath.split_runs`)
  before recognition, so "Back    Close" becomes two lines;
- recognised text is cached by crop content, per region and per line: an unchanged region is
  never recognised twice;
- at most ``max_ocr_lines`` line crops are recognised per frame (:func:`reading_order_cap`):
  recognition costs about 6 ms a crop, and a screen of text-like rows offered 506 crops (over
  3 s); the rest are counted and reported, never dropped silently.

:class:`TextReader` owns one engine and its caches; nothing here is module-global.
"""

from __future__ import annotations

import copy
import logging
import math
import os
import struct
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

import blake3
import cv2
import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.config import PixelConfig
from perception.errors import OcrError
from perception.types import BoxPx

log = logging.getLogger(__name__)

U8: TypeAlias = npt.NDArray[Any]
"""A uint8 image (OpenCV's stubs type its results loosely, so this is not narrowed)."""
I32: TypeAlias = npt.NDArray[np.int32]

REC_HEIGHT_PX = 48
"""Input height of the PP-OCR recognition model."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TextLine:
    """One recognised line (or line piece) in device pixels."""

    text: str
    box_px: BoxPx
    confidence: float


@dataclass(frozen=True, slots=True, kw_only=True)
class RegionText:
    """What reading one region gave, under a budget of line crops to recognise."""

    lines: list[TextLine]
    cached: bool
    """The whole region came from the region cache."""
    recognised: int
    """Line crops taken for recognition (line-cache hits included): what the budget paid."""
    unread: int
    """Line crops found but left unread: the budget ran out (see :func:`reading_order_cap`)."""


def reading_order_cap(boxes: Sequence[BoxPx], budget: int) -> list[int]:
    """Indices of the ``budget`` boxes to read, in their given order: the first in reading
    order (top edge, then left edge, then index), so the lines left unread are one band at the
    bottom of the regions, the part of a page a scroll brings up next, and the screen's top
    (title, toolbar, tabs, the first items of a list) is always read. Larger text first would
    keep headings but leave gaps anywhere on the page, with no one place to say was skipped.
    All indices when they fit: a frame under the budget is read exactly as without one."""
    if len(boxes) <= budget:
        return list(range(len(boxes)))
    order = sorted(range(len(boxes)), key=lambda i: (boxes[i].top, boxes[i].left, i))
    return sorted(order[: max(0, budget)])


class OcrEngine(Protocol):
    """What the pixel channel needs from an OCR engine (so a newer RapidOCR can drop in)."""

    name: str

    def detect(self, image: U8, limit_side_len: int) -> I32:
        """Text boxes ``int32[N, 4]`` ``(l, t, r, b)`` in ``image`` pixels."""
        ...

    def recognize(self, crops: Sequence[U8]) -> list[tuple[str, float]]:
        """Text and confidence (0-1) of each BGR crop, in order."""
        ...


class RapidOcrEngine:
    """rapidocr-onnxruntime 1.x, loaded on first use; models come from the wheel."""

    name = "rapidocr-onnxruntime"

    def __init__(self, config: PixelConfig | None = None) -> None:
        self._config = config or PixelConfig()
        self._ocr: Any = None
        self._rec_run: Any = None
        """Recognition's own single-threaded session, run on ``rec_workers`` threads at once."""
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._det_table: npt.NDArray[np.float32] | None = None
        """:meth:`_normaliser`'s table (built on first detection)."""
        self._detectors: dict[int, Any] = {}
        """:meth:`_detector`'s copies by limit (a frame's few crop heights: a handful)."""

    @property
    def loaded(self) -> bool:
        return self._ocr is not None

    def _engine(self) -> Any:
        if self._ocr is None:
            with self._lock:
                if self._ocr is None:
                    self._ocr = self._load()
        return self._ocr

    def _load(self) -> Any:
        # onnxruntime 1.29+ keeps a telemetry queue and a device id under ~/.cache and uploads
        # from it unless told not to before its first session: what a phone shows is the user's
        # business. An explicit ORT_DISABLE_TELEMETRY of the user's stands.
        os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
        try:
            from rapidocr_onnxruntime import RapidOCR
        except ImportError as exc:  # pragma: no cover - a declared dependency
            raise OcrError(f"rapidocr-onnxruntime is not importable: {exc}") from exc
        cfg = self._config
        kwargs: dict[str, Any] = {
            "use_cls": cfg.use_cls,
            "det_limit_type": "min",
            "det_limit_side_len": cfg.det_limit_side_len,
            "det_box_thresh": cfg.det_box_thresh,
            "rec_batch_num": cfg.rec_batch_num,
            "text_score": cfg.text_score_min,
        }
        if cfg.ocr_threads > 0:
            kwargs["intra_op_num_threads"] = cfg.ocr_threads
        try:
            engine = RapidOCR(**kwargs)
        except Exception as exc:  # onnxruntime raises its own types
            raise OcrError(f"cannot load the RapidOCR models: {exc}") from exc
        if cfg.det_mem_arena:
            engine.text_det.infer.session = self._arena_session(
                engine.text_det.infer.session._model_path, cfg.ocr_threads
            )
        if cfg.rec_workers > 1:
            self._rec_run, self._pool = self._parallel_recognition(engine, cfg.rec_workers)
            engine.text_rec.session = None  # never run: our own session reads (13 MB with cls)
        if not cfg.use_cls:
            engine.text_cls = None  # RapidOCR loads the angle classifier even with it off
        log.info(
            "loaded %s (cls=%s, rec batch %d, %d rec workers)",
            self.name, cfg.use_cls, cfg.rec_batch_num, cfg.rec_workers,
        )
        return engine

    @staticmethod
    def _arena_session(model: str, threads: int) -> Any:
        """A session for the detection model as RapidOCR opens it (its options and provider
        settings) but with the memory arena on (see ``PixelConfig.det_mem_arena``)."""
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.log_severity_level = 4
        opts.enable_cpu_mem_arena = True
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads > 0:
            opts.intra_op_num_threads = threads
        providers = [("CPUExecutionProvider", {"arena_extend_strategy": "kSameAsRequested"})]
        try:
            return ort.InferenceSession(model, opts, providers=providers)
        except Exception as exc:  # onnxruntime raises its own types
            raise OcrError(f"cannot load the detection model {model}: {exc}") from exc

    def _parallel_recognition(self, engine: Any, workers: int) -> tuple[Any, ThreadPoolExecutor]:
        """A second session for the recognition model with one intra-op thread, shared by a pool
        of ``workers`` threads: a screen's crops are small, and on two cores two single-threaded
        runs side by side take about 0.57 of the time one two-threaded session takes for them
        in turn (onnxruntime's per-run thread hand-off costs more than a small crop's compute)."""
        import onnxruntime as ort

        model = engine.text_rec.session.session._model_path
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            session = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime raises its own types
            raise OcrError(f"cannot load the recognition model {model}: {exc}") from exc
        name = session.get_inputs()[0].name
        outputs = [o.name for o in session.get_outputs()]

        def run(batch: npt.NDArray[np.float32]) -> Any:
            return session.run(outputs, {name: batch})[0]

        return run, ThreadPoolExecutor(workers, thread_name_prefix="perception-rec")

    def _detector(self, limit_side_len: int) -> Any:
        """RapidOCR's detector for one ``limit_side_len``: a shallow copy per limit sharing the
        one onnxruntime session. The detector reads its limit inside its call; set on the
        shared one, another thread's (a phone sharing this engine) could land between the
        setting and the call, and a 120 px strip was detected at 576's scale."""
        limit = int(limit_side_len)
        det = self._detectors.get(limit)
        if det is None:
            base = self._engine().text_det
            with self._lock:
                det = self._detectors.get(limit)
                if det is None:
                    det = copy.copy(base)
                    det.limit_side_len = limit
                    det.limit_type = "min"
                    self._detectors[limit] = det
        return det

    def _normaliser(self, pre: Any) -> npt.NDArray[np.float32]:
        """RapidOCR's detection normalisation as a table, ``float32[3, 256]``: its own
        ``normalize`` run once on every grey level, so each channel's value of a pixel is what
        it computes for that pixel (in float64, over the whole copy, each call: 4x the time)."""
        table = self._det_table
        if table is None:
            levels = np.arange(256, dtype=np.uint8).reshape(1, 256, 1).repeat(3, axis=2)
            table = np.ascontiguousarray(pre.normalize(levels)[0].T, dtype=np.float32)
            self._det_table = table
        return table

    def _det_input(self, det: Any, image: U8) -> npt.NDArray[np.float32] | None:
        """What RapidOCR's detector feeds its model for ``image`` (its resize, then its
        normalisation read from :meth:`_normaliser`'s table, channels first), or None where
        its resize gives up."""
        pre = det.get_preprocess(max(image.shape[0], image.shape[1]))
        resized = pre.resize(image)
        if resized is None:
            return None
        table = self._normaliser(pre)
        out = np.empty((1, 3, *resized.shape[:2]), dtype=np.float32)
        for c in range(3):
            np.take(table[c], resized[:, :, c], out=out[0, c])
        return out

    def detect(self, image: U8, limit_side_len: int) -> I32:
        det = self._detector(limit_side_len)
        try:
            # TextDetector.__call__'s steps, its float64 normalisation done by table.
            shape = image.shape[0], image.shape[1]
            batch = self._det_input(det, image)
            quads = None
            if batch is not None:
                quads, _ = det.postprocess_op(det.infer(batch)[0], shape)
                quads = det.filter_tag_det_res(quads, shape)
        except Exception as exc:
            raise OcrError(f"text detection failed on a {image.shape} image: {exc}") from exc
        if quads is None or len(quads) == 0:
            return np.zeros((0, 4), dtype=np.int32)
        q = np.asarray(quads, dtype=np.float32)
        boxes = np.stack(
            [
                np.floor(q[:, :, 0].min(axis=1)),
                np.floor(q[:, :, 1].min(axis=1)),
                np.ceil(q[:, :, 0].max(axis=1)),
                np.ceil(q[:, :, 1].max(axis=1)),
            ],
            axis=1,
        )
        return np.ascontiguousarray(boxes, dtype=np.int32)

    def recognize(self, crops: Sequence[U8]) -> list[tuple[str, float]]:
        if not crops:
            return []
        engine = self._engine()
        rec = engine.text_rec
        if engine.text_cls is not None:
            try:  # lines upside down (use_cls) turned upright before they are read
                crops, _, _ = engine.text_cls(list(crops))
            except Exception as exc:
                raise OcrError(f"the angle classifier failed on {len(crops)} crops: {exc}") from exc
        batch_num = self._config.rec_batch_num
        ratios = [c.shape[1] / max(1, c.shape[0]) for c in crops]
        order = np.argsort(np.asarray(ratios), kind="stable")
        out: list[tuple[str, float]] = [("", 0.0)] * len(crops)
        run = self._rec_run or (lambda batch: rec.session(batch)[0])

        def one(begin: int) -> None:
            idx = [int(i) for i in order[begin : begin + batch_num]]
            widths = [max(8, math.ceil(REC_HEIGHT_PX * ratios[i])) for i in idx]
            width = max(widths)
            batch = np.zeros((len(idx), 3, REC_HEIGHT_PX, width), dtype=np.float32)
            for k, i in enumerate(idx):
                resized = cv2.resize(crops[i], (widths[k], REC_HEIGHT_PX))
                batch[k, :, :, : widths[k]] = resized.transpose(2, 0, 1) / 127.5 - 1.0
            try:
                decoded = rec.postprocess_op(
                    run(batch),
                    False,
                    wh_ratio_list=[width / REC_HEIGHT_PX] * len(idx),
                    max_wh_ratio=width / REC_HEIGHT_PX,
                )
            except Exception as exc:
                raise OcrError(f"text recognition failed on {len(idx)} crops: {exc}") from exc
            for k, i in enumerate(idx):
                out[i] = (str(decoded[k][0]), float(decoded[k][1]))

        starts = range(0, len(crops), batch_num)
        if self._pool is not None and len(starts) > 1:
            # Widest first, so the pool does not end on one long line while a worker idles.
            list(self._pool.map(one, reversed(starts)))
        else:
            for begin in starts:
                one(begin)
        return out

    def close(self) -> None:
        """Stop the recognition workers (the engine loads again on next use)."""
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True)
            self._pool = None
            self._rec_run = None
            self._ocr = None


def content_digest(image: U8) -> bytes:
    """A key for an image's content (shape and pixels), for the content caches.

    BLAKE3, 16 bytes: a cryptographic hash, so a screen cannot be drawn to reuse another
    crop's reading, and the fastest such here (its SIMD code on one thread): 1.5 ms for a
    1080x2400 frame against OpenSSL's SHA-256 at 5.8 ms even with the CPU's SHA instructions,
    9 us against 18 for a 172x44 label crop (the read-back reads four a fusion).

    The pixels are hashed first, then the shape: each dimension and how many there are, as
    little-endian int64. Read from its end, that suffix says where the pixels stop, so no two
    images hash the same bytes. Pixels from the first byte fill BLAKE3's 1 KiB chunks in step,
    which its SIMD code compresses many at a time; behind a prefix they fall into small
    power-of-two subtrees (the chunk counter's alignment) and a label crop hashes at half
    the speed."""
    h = blake3.blake3(np.ascontiguousarray(image).data)
    h.update(struct.pack(f"<{image.ndim + 1}q", *image.shape, image.ndim))
    return h.digest(length=16)


_INK_MIN = 40
"""Grey levels from the background that count as ink at least (see :func:`split_line`)."""
_FLAT_STD = 12.0
"""Grey levels of spread below which a border's far pixels are one flat colour."""


def _on_a_picture(border: U8, bg: int, share: float) -> bool:
    """Is a line's box on a picture: more than ``share`` of its border far from the border's
    median (``_INK_MIN`` grey levels), and those far pixels of no one colour (their standard
    deviation over :data:`_FLAT_STD`)? A button's flat fill under part of the border is far
    but one colour (a filled pill stays a cue); a video frame or an ad is neither."""
    far = border[np.abs(border.astype(np.int16) - bg) >= _INK_MIN]
    return far.size > share * border.size and float(far.std()) > _FLAT_STD


def split_line(
    gray: U8,
    box: BoxPx,
    gap_ratio: float,
    *,
    word_gap_ink: float = 0.45,
    word_gap_median: float = 4.0,
    word_glyph_max: float = 0.45,
    busy_border: float = 0.2,
) -> list[BoxPx]:
    """Split one detected line where it spans two targets.

    Three cues, all on the box's own pixels (ink is what differs clearly from the box's border
    colour):

    - a blank gap at least ``gap_ratio`` line heights wide ("Back      Close");
    - a gap at least ``word_gap_ink`` ink heights wide that is also ``word_gap_median`` times
      the line's median gap between glyphs: two labels set one space-and-a-half apart
      ("Back  Close"; a word space is about a third of the ink height). On the corpus's lines
      that lie inside tap targets this cuts 39 of the 57 gaps between two targets, and about
      1.6% of the gaps inside one target (mostly an icon next to its label, sometimes a word
      space). Cutting a label in two keeps a tap on its pieces inside the label's target;
      leaving two labels joined puts the tap between them, so the rule leans to cutting;
    - a pill (a button's own fill on the box's top and bottom rows, or its outline near both
      edges) next to other text ("Name (Follow)").

    The second cue is trusted only where the line's glyphs are narrow against its ink height
    (median run of ink columns under ``word_glyph_max`` ink heights): lowercase with ascenders
    and descenders, whose ink height is about the em, so 0.45 of it clears a word space. Where
    glyphs are wide against it (capitals, CJK, bold or touching letters, Hershey's face) the
    ink height is a smaller share of the em and a word space, or the blank a full-width comma
    leaves mid-sentence, reaches 0.45 of it. A line on a picture (see :func:`_on_a_picture`)
    is not split at all: no gap is blank there.

    Measured on the 340 reliable corpus pairs (the pixel bench's targets and recognition of
    the pieces; simulation with detection cached): the unguarded second cue gave 23 more text
    targets hit than no such cue (9 of them one Weibo header, "Back  Close", on five steps),
    713 more candidates, and 53 fewer labels read whole ("Search." + "here", "Do" + "wnloa" +
    "d" over an ad, Weibo posts cut at their commas). With the guards: 16 of the 23 stay (text
    recall 0.8059 against 0.8089), labels read whole 0.602 of the text targets against 0.579
    (more in every source), 669 fewer candidates (8,573), and 3 of 901 icon-only targets lost
    (0.786 against 0.789).

    Returns the original box when there is nothing to split.
    """
    sub = gray[box.top : box.bottom, box.left : box.right]
    h, w = sub.shape[:2]
    if h < 4 or w < 2 * h:
        return [box]
    border = np.concatenate([sub[0], sub[-1], sub[:, 0], sub[:, -1]])
    bg = int(round(float(np.median(border))))
    if _on_a_picture(border, bg, busy_border):
        return [box]
    diff = np.abs(sub.astype(np.int16) - bg)
    thresh = max(_INK_MIN, int(0.4 * int(diff.max())))
    ink = diff >= thresh
    profile = np.count_nonzero(ink, axis=0)
    gap_min = max(4, round(gap_ratio * h))
    ink_rows = np.flatnonzero(ink.any(axis=1))
    cols = np.flatnonzero(profile)
    if ink_rows.size and cols.size > 2:
        inner = np.diff(cols) - 1
        inner = inner[inner > 0]
        if inner.size >= 2:
            ink_h = int(ink_rows[-1] - ink_rows[0] + 1)
            # Glyph widths: the runs of ink columns (as many runs as gaps, plus one).
            ends = np.flatnonzero(np.diff(np.concatenate(([0], profile > 0, [0]))))
            if float(np.median(np.diff(ends)[::2])) < word_glyph_max * ink_h:
                word_gap = max(word_gap_ink * ink_h, word_gap_median * float(np.median(inner)))
                gap_min = min(gap_min, max(4, math.ceil(word_gap)))
    # Columns whose top and bottom rows both leave the background (a filled pill), or that
    # have ink near both the top and the bottom edge (an outlined pill's rim).
    k = max(2, h // 5)
    rim = ink[:k].any(axis=0) & ink[h - k :].any(axis=0)
    filled = ((diff[0] >= 30) & (diff[-1] >= 30)) | rim
    cuts = {0, w}
    for start, end in fastpath.split_runs(filled, ink_min=1, gap_min_px=max(2, h // 8)).tolist():
        if end - start >= h and end - start <= 0.9 * w:
            cuts.update((start, end))
    edges = sorted(cuts)
    pad = max(2, h // 4)
    pieces: list[BoxPx] = []
    for lo, hi in zip(edges, edges[1:], strict=False):
        if hi - lo < 4:
            continue
        segs = fastpath.split_runs(profile[lo:hi], ink_min=1, gap_min_px=gap_min)
        for start, end in segs.tolist():
            left = max(lo, lo + start - pad)
            right = min(hi, lo + end + pad)
            if right - left >= 4:
                pieces.append(BoxPx(box.left + left, box.top, box.left + right, box.bottom))
    if len(pieces) <= 1:
        return [box]
    return pieces


@dataclass(frozen=True, slots=True)
class _Scan:
    """What the region cache keeps of a crop: its line pieces (crop px, detection order) and
    the text of each piece recognised so far (None: not read yet, the budget ran out)."""

    found: tuple[BoxPx, ...]
    texts: tuple[tuple[str, float] | None, ...]


class TextReader:
    """Reads text in regions of a frame with one lazily-loaded engine and a content cache."""

    def __init__(self, config: PixelConfig | None = None, engine: OcrEngine | None = None) -> None:
        self.config = config or PixelConfig()
        self.engine: OcrEngine = engine or RapidOcrEngine(self.config)
        self._regions: OrderedDict[bytes, _Scan] = OrderedDict()
        self._lines: OrderedDict[bytes, tuple[str, float]] = OrderedDict()
        # Look-up-and-touch and insert-and-evict are one step each: two threads reading with
        # one reader could otherwise touch an entry the other has just evicted (KeyError).
        self._cache_lock = threading.Lock()
        self.region_hits = 0
        self.line_hits = 0
        self.recognised = 0

    def clear_cache(self) -> None:
        with self._cache_lock:
            self._regions.clear()
            self._lines.clear()

    def _recall(self, cache: OrderedDict[bytes, Any], key: bytes) -> Any:
        with self._cache_lock:
            value = cache.get(key)
            if value is not None:
                cache.move_to_end(key)
            return value

    def _remember(self, cache: OrderedDict[bytes, Any], key: bytes, value: Any) -> None:
        if self.config.cache_entries <= 0:
            return
        with self._cache_lock:
            cache[key] = value
            cache.move_to_end(key)
            while len(cache) > self.config.cache_entries:
                cache.popitem(last=False)

    def detect(self, crop: U8, frame_short: int | None = None) -> list[BoxPx]:
        """Line boxes in ``crop`` pixels: detection on a copy shrunk so that its width, or the
        frame's short side ``frame_short`` when the crop is wider than that, becomes
        ``det_width_px`` at most. ``det_width_px`` is sized for a portrait frame's width; a
        landscape or tablet frame's full-width crop shrunk to it (2400 px to 0.24) lost text
        of 16-24 px its portrait twin reads. Shrinking by the short side detects a landscape
        frame as its portrait twin; a portrait frame's crops (never wider than its short
        side) detect as before. ``None``: the crop is the frame."""
        h, w = crop.shape[:2]
        span = min(w, h if frame_short is None else frame_short)
        scale = min(1.0, self.config.det_width_px / span)
        small = crop
        if scale < 1.0:
            size = (max(1, round(w * scale)), max(1, round(h * scale)))
            small = cv2.resize(crop, size, interpolation=cv2.INTER_AREA)
        sh, sw = small.shape[:2]
        pad_b, pad_r = max(0, 64 - sh), max(0, 64 - sw)
        if pad_b or pad_r:
            small = cv2.copyMakeBorder(small, 0, pad_b, 0, pad_r, cv2.BORDER_REPLICATE)
        limit = max(32, min(self.config.det_limit_side_len, min(small.shape[:2])))
        boxes = self.engine.detect(small, limit)
        out: list[BoxPx] = []
        for left, top, right, bottom in boxes.tolist():
            box = BoxPx(
                max(0, math.floor(left / scale)),
                max(0, math.floor(top / scale)),
                min(w, math.ceil(right / scale)),
                min(h, math.ceil(bottom / scale)),
            )
            if box.width >= 4 and box.height >= 4:
                out.append(box)
        return out

    def read_region(self, image: U8, region: BoxPx) -> tuple[list[TextLine], bool]:
        """Text lines inside ``region`` of a full-resolution BGR image (device px), at most
        ``max_ocr_lines`` of them recognised (:meth:`read_bounded` says how many were not;
        here they are logged).

        Returns the lines and whether the whole region came from the cache.
        """
        got = self.read_bounded(image, region, self.config.max_ocr_lines)
        if got.unread:
            log.warning(
                "OCR left %d of %d text lines in %s unread (max_ocr_lines=%d)",
                got.unread, got.recognised + got.unread, tuple(region), self.config.max_ocr_lines,
            )
        return got.lines, got.cached

    def read_bounded(self, image: U8, region: BoxPx, budget: int) -> RegionText:
        """Text lines inside ``region`` of a full-resolution BGR image (device px), recognising
        at most ``budget`` line crops (:meth:`read_regions` with one region)."""
        return self.read_regions(image, [region], budget)

    def recognize(self, crops: Sequence[U8]) -> list[tuple[str, float]]:
        """Each crop recognised as one line, ``(text, score)``, through the line cache: a crop
        whose pixels were recognised before is not recognised again."""
        keys = [content_digest(c) for c in crops]
        results: list[tuple[str, float] | None] = [self._recall(self._lines, k) for k in keys]
        todo = [i for i, hit in enumerate(results) if hit is None]
        self.line_hits += len(keys) - len(todo)
        if todo:
            recognised = self.engine.recognize([crops[i] for i in todo])
            self.recognised += len(todo)
            for i, rec in zip(todo, recognised, strict=True):
                results[i] = rec
                self._remember(self._lines, keys[i], rec)
        return [hit for hit in results if hit is not None]

    def read_regions(self, image: U8, regions: Sequence[BoxPx], budget: int) -> RegionText:
        """Text lines inside ``regions`` of a full-resolution BGR image (device px), region by
        region in the given order, recognising at most ``budget`` line crops over them all.

        When the regions' line crops fit the budget every region is read whole, as without
        one (a region inside another too: detection on its smaller crop finds text the larger
        one's shrunk copy misses). Past it, each line is counted once: a region inside another
        (or equal to an earlier one) is that one's, and a line whose centre lies in an earlier
        region is that region's. Of those lines, the ``budget`` first in reading order over all
        the regions are read (:func:`reading_order_cap`), so what is left unread is the bottom
        of the screen, not the end of whichever region came last; budget left over reads the
        lines counted elsewhere. ``cached`` is True when no region needed detection or
        recognition."""
        h, w = image.shape[:2]
        short = min(h, w)
        boxes = [
            box
            for box in (
                BoxPx(max(0, r.left), max(0, r.top), min(w, r.right), min(h, r.bottom))
                for r in regions
            )
            if box.right - box.left >= 4 and box.bottom - box.top >= 4
        ]
        scans: list[tuple[bytes, _Scan, bool]] = []
        detected: dict[bytes, _Scan] = {}  # regions of one content in this call: detected once
        for box in boxes:
            crop = image[box.top : box.bottom, box.left : box.right]
            # The detection copy's scale depends on the frame's short side when the crop is
            # wider than it (landscape): the same pixels in a shorter frame are another scan.
            span = min(box.right - box.left, short)
            key = content_digest(crop) + span.to_bytes(4, "little")
            scan: _Scan | None = self._recall(self._regions, key) or detected.get(key)
            hit = scan is not None
            if scan is None:
                found = self._find(np.ascontiguousarray(crop), short)
                scan = detected[key] = _Scan(found=found, texts=(None,) * len(found))
            scans.append((key, scan, hit))
        chosen, unread = _choose(boxes, [scan.found for _key, scan, _hit in scans], budget)
        lines: list[TextLine] = []
        recognised = 0
        cached = bool(scans)
        for box, (key, scan, hit), picked in zip(boxes, scans, chosen, strict=True):
            todo = [i for i in picked if scan.texts[i] is None]
            texts = list(scan.texts)
            if todo:
                crop = image[box.top : box.bottom, box.left : box.right]
                pieces = [scan.found[i] for i in todo]
                crops = [crop[b.top : b.bottom, b.left : b.right] for b in pieces]
                for i, rec in zip(todo, self.recognize(crops), strict=True):
                    texts[i] = rec
            if todo or not hit:
                cached = False
                self._merge_scan(key, _Scan(found=scan.found, texts=tuple(texts)))
            else:
                self.region_hits += 1
            recognised += len(picked)
            for i in picked:
                text, score = texts[i] or ("", 0.0)
                text = text.strip()
                if text and score >= self.config.text_score_min:
                    lines.append(
                        TextLine(
                            text=text,
                            box_px=_on_screen(scan.found[i], box),
                            confidence=round(score, 4),
                        )
                    )
        return RegionText(lines=lines, cached=cached, recognised=recognised, unread=unread)

    def _merge_scan(self, key: bytes, scan: _Scan) -> None:
        """Store ``scan``, keeping every text a cached reading of the same crop already had:
        a reading cut short by the budget never replaces a fuller one."""
        if self.config.cache_entries <= 0:
            return
        with self._cache_lock:
            old: _Scan | None = self._regions.get(key)
            if old is not None and old.found == scan.found:
                scan = _Scan(
                    found=scan.found,
                    texts=tuple(
                        new if new is not None else was
                        for new, was in zip(scan.texts, old.texts, strict=True)
                    ),
                )
            self._regions[key] = scan
            self._regions.move_to_end(key)
            while len(self._regions) > self.config.cache_entries:
                self._regions.popitem(last=False)

    def _find(self, crop: U8, frame_short: int) -> tuple[BoxPx, ...]:
        """The line pieces of a crop (crop px): detection, then each line split where it spans
        two targets. Splitting runs on every box: it is linear in the boxes' pixels (about
        0.1 ms a box) and RapidOCR's detection returns at most 1,000 boxes; the budget is paid
        in pieces, what recognition costs."""
        boxes = self.detect(crop, frame_short)
        if not boxes:
            return ()
        gray = cv2.cvtColor(crop, cv2.COLOR_BGR2GRAY)
        found: list[BoxPx] = []
        for box in boxes:
            found.extend(
                split_line(
                    gray,
                    box,
                    self.config.split_gap_ratio,
                    word_gap_ink=self.config.split_word_gap_ink,
                    word_gap_median=self.config.split_word_gap_median,
                    word_glyph_max=self.config.split_word_glyph_max,
                    busy_border=self.config.split_busy_border,
                )
            )
        return tuple(found)


def outer_regions(regions: Sequence[BoxPx]) -> list[int]:
    """Indices of the ``regions`` inside no other (of equal ones, the first): what OCR counts
    once when the budget runs out."""
    kept: list[int] = []
    for i, r in enumerate(regions):
        inside = any(
            j != i and o.encloses(r) and (o != r or j < i) for j, o in enumerate(regions)
        )
        if not inside:
            kept.append(i)
    return kept


def _choose(
    boxes: Sequence[BoxPx], found: Sequence[tuple[BoxPx, ...]], budget: int
) -> tuple[list[list[int]], int]:
    """The pieces of each region to read (each region's in detection order) under one budget
    for them all, and how many lines that leaves unread, each line counted once (see
    :meth:`TextReader.read_regions`)."""
    if sum(len(f) for f in found) <= budget:
        return [list(range(len(f))) for f in found], 0
    outer = outer_regions(boxes)
    owned: list[tuple[int, int, BoxPx]] = []
    others: list[tuple[int, int, BoxPx]] = []
    for r, (box, pieces) in enumerate(zip(boxes, found, strict=True)):
        earlier = [boxes[o] for o in outer if o < r] if r in outer else None
        for i, b in enumerate(pieces):
            piece = _on_screen(b, box)
            counted = earlier is not None and not any(o.contains(piece.center) for o in earlier)
            (owned if counted else others).append((r, i, piece))
    chosen: list[list[int]] = [[] for _ in found]
    keep = reading_order_cap([piece for _r, _i, piece in owned], budget)
    extra = reading_order_cap([piece for _r, _i, piece in others], budget - len(keep))
    picked = [owned[k] for k in keep] + [others[k] for k in extra]
    for r, i, _piece in sorted(picked, key=lambda p: (p[0], p[1])):
        chosen[r].append(i)
    return chosen, len(owned) - len(keep)


def _on_screen(piece: BoxPx, region: BoxPx) -> BoxPx:
    """A piece found in ``region``'s crop (crop px), in device px."""
    return BoxPx(
        piece.left + region.left, piece.top + region.top,
        piece.right + region.left, piece.bottom + region.top,
    )
