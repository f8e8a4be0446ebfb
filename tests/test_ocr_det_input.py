"""Text detection's input and session: RapidOCR's normalisation read from a table, and the
detection model run in a session that keeps its memory arena (``PixelConfig.det_mem_arena``).
Both are speed only: the model sees the same input and the boxes are the same."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

from perception.config import PixelConfig
from perception.pixel import RapidOcrEngine, decode_frame
from perception.pixel.ocr import I32, U8

FONT = cv2.FONT_HERSHEY_SIMPLEX


@pytest.fixture(scope="module")
def engine() -> Iterator[RapidOcrEngine]:
    eng = RapidOcrEngine()
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def plain() -> Iterator[RapidOcrEngine]:
    """RapidOCR's own detection session (no memory arena)."""
    eng = RapidOcrEngine(PixelConfig(det_mem_arena=False))
    yield eng
    eng.close()


def _page(h: int = 1247, w: int = 576) -> np.ndarray:
    """A page of a few lines on a tinted background, an odd number of rows (resized to 1248)."""
    img = np.full((h, w, 3), (250, 244, 236), np.uint8)
    for i, text in enumerate(("Settings", "Wi-Fi", "Bluetooth", "Display", "Sign out")):
        cv2.putText(img, text, (30, 80 + 200 * i), FONT, 1.2, (40, 30, 20), 3, cv2.LINE_AA)
    return img


def _rapidocr_boxes(eng: RapidOcrEngine, image: U8, limit: int) -> I32:
    """Boxes from RapidOCR's TextDetector called as it is (its own preprocessing), reduced to
    ``(l, t, r, b)`` as :meth:`RapidOcrEngine.detect` does."""
    quads, _ = eng._detector(limit)(image)
    if quads is None or len(quads) == 0:
        return np.zeros((0, 4), dtype=np.int32)
    q = np.asarray(quads, dtype=np.float32)
    return np.stack(
        [
            np.floor(q[:, :, 0].min(axis=1)),
            np.floor(q[:, :, 1].min(axis=1)),
            np.ceil(q[:, :, 0].max(axis=1)),
            np.ceil(q[:, :, 1].max(axis=1)),
        ],
        axis=1,
    ).astype(np.int32)


def _corpus_copies(corpus_dir: Path, n: int) -> list[np.ndarray]:
    """Full-screen detection copies (576 px wide) of ``n`` corpus screens spread over its index."""
    rows = [json.loads(line) for line in (corpus_dir / "index.jsonl").read_text().splitlines()]
    rows = [r for r in rows if r.get("pair_status") in ("match", "match_partial")]
    out = []
    for r in rows[:: max(1, len(rows) // n)][:n]:
        folder = corpus_dir / r["path"]
        path = folder / r.get("image", "screen.png")
        if not path.is_file():
            path = folder / "screen.jpg"
        px = decode_frame(path.read_bytes()).pixels
        h, w = px.shape[:2]
        scale = 576 / min(h, w)
        out.append(cv2.resize(px, (576, round(h * scale)), interpolation=cv2.INTER_AREA))
    return out


def test_the_table_gives_rapidocrs_input_bit_for_bit(engine: RapidOcrEngine) -> None:
    rng = np.random.default_rng(7)
    images = [
        _page(),
        rng.integers(0, 256, (301, 203, 3), dtype=np.uint8),  # resized both ways, every level
        rng.integers(0, 256, (64, 576, 3), dtype=np.uint8),
    ]
    for image in images:
        det = engine._detector(max(32, min(576, min(image.shape[:2]))))
        ours = engine._det_input(det, image)
        theirs = det.get_preprocess(max(image.shape[:2]))(image)
        assert ours is not None and ours.dtype == np.float32 and ours.shape == theirs.shape
        assert ours.flags.c_contiguous
        assert np.array_equal(ours.view(np.uint32), theirs.astype(np.float32).view(np.uint32))


def test_detect_finds_the_boxes_rapidocrs_detector_finds(engine: RapidOcrEngine) -> None:
    page = _page()
    ours = engine.detect(page, 576)
    assert len(ours) == 5
    assert np.array_equal(ours, _rapidocr_boxes(engine, page, 576))
    strip = np.ascontiguousarray(page[40:140, :300])  # a crop below 576: its own limit
    assert np.array_equal(engine.detect(strip, 100), _rapidocr_boxes(engine, strip, 100))


def test_detection_keeps_its_arena_unless_told_not_to(
    engine: RapidOcrEngine, plain: RapidOcrEngine
) -> None:
    engine.detect(_page(), 576)
    plain.detect(_page(), 576)
    ours = engine._engine().text_det.infer.session.get_session_options()
    theirs = plain._engine().text_det.infer.session.get_session_options()
    assert ours.enable_cpu_mem_arena is True
    assert theirs.enable_cpu_mem_arena is False  # RapidOCR's own session, untouched


def test_the_arena_session_finds_the_same_boxes_on_real_screens(
    engine: RapidOcrEngine, plain: RapidOcrEngine, corpus_dir: Path
) -> None:
    copies = _corpus_copies(corpus_dir, 6)
    assert len(copies) == 6
    found = 0
    for copy in copies:
        ours = engine.detect(copy, 576)
        assert np.array_equal(ours, plain.detect(copy, 576))
        assert np.array_equal(ours, _rapidocr_boxes(plain, copy, 576))
        found += len(ours)
    assert found > 20
