"""The bound on OCR lines recognised per frame (``PixelConfig.max_ocr_lines``), with the real
RapidOCR models on small synthetic frames: the cap holds, keeps the top of the screen, says how
many lines it left unread, spans a frame's regions, and changes nothing under it."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import cv2
import numpy as np
import pytest

from perception.config import PixelConfig
from perception.errors import ConfigError
from perception.pixel import PixelReader, RapidOcrEngine
from perception.pixel.ocr import TextReader, reading_order_cap
from perception.types import BoxPx

WORDS = (
    "Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf",
    "Hotel", "India", "Juliett", "Kilo", "Lima", "Mike", "November",
)
"""One word a row: no word space that a split could cut."""
ROW_PX = 80
FIRST_ROW_PX = 160


def dense_frame() -> np.ndarray:
    """A 720x1280 screen of one word per row, 14 rows: a small stand-in for a screen of text."""
    img = np.full((1280, 720, 3), 250, np.uint8)
    for k, word in enumerate(WORDS):
        cv2.putText(
            img, word, (40, FIRST_ROW_PX + k * ROW_PX), cv2.FONT_HERSHEY_SIMPLEX, 1.2,
            (20, 20, 20), 3, cv2.LINE_AA,
        )
    return img


@pytest.fixture(scope="module")
def engine() -> Iterator[RapidOcrEngine]:
    """One engine (models loaded once) shared by readers with different caps."""
    eng = RapidOcrEngine()
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def uncapped(engine: RapidOcrEngine) -> tuple[tuple[str, ...], int]:
    """The frame read with the default cap: its words top to bottom and its line crops."""
    reader = PixelReader(PixelConfig(), engine)
    px = reader.read(dense_frame())
    got = reader.text.read_bounded(dense_frame(), BoxPx(0, 0, 720, 1280), 10_000)
    words = tuple(ln.text for ln in sorted(px.lines, key=lambda ln: ln.box_px.top))
    return words, got.recognised


def test_the_uncapped_frame_reads_every_row(uncapped: tuple[tuple[str, ...], int]) -> None:
    words, crops = uncapped
    assert [w.casefold() for w in words] == [w.casefold() for w in WORDS]
    assert crops == len(WORDS)


def test_cap_holds_keeps_the_top_rows_and_says_how_many_it_left(
    engine: RapidOcrEngine, uncapped: tuple[tuple[str, ...], int], pipeline_impl: str
) -> None:
    words, crops = uncapped
    reader = PixelReader(PixelConfig(max_ocr_lines=5), engine)
    px = reader.read(dense_frame())
    assert reader.text.recognised == 5  # the engine saw five crops, no more
    assert px.unread_lines == crops - 5
    assert tuple(ln.text for ln in sorted(px.lines, key=lambda ln: ln.box_px.top)) == words[:5]
    # Reading the same frame again is the cached result, with the same count.
    again = reader.read(dense_frame())
    assert again.ocr == "cached" and again.unread_lines == px.unread_lines


def test_frame_under_the_cap_reads_as_without_it(engine: RapidOcrEngine) -> None:
    exact = PixelReader(PixelConfig(max_ocr_lines=len(WORDS)), engine).read(dense_frame())
    default = PixelReader(PixelConfig(), engine).read(dense_frame())
    assert exact.unread_lines == default.unread_lines == 0
    assert exact.lines == default.lines
    assert exact.blocks == default.blocks
    assert exact.candidates == default.candidates


def test_one_budget_spans_the_regions_of_a_frame(
    engine: RapidOcrEngine, uncapped: tuple[tuple[str, ...], int]
) -> None:
    words, crops = uncapped
    middle = FIRST_ROW_PX + 6 * ROW_PX - 40  # six rows above, eight below
    regions = [BoxPx(0, 0, 720, middle), BoxPx(0, middle, 720, 1280)]
    px = PixelReader(PixelConfig(max_ocr_lines=8), engine).read(dense_frame(), regions=regions)
    assert px.ocr == "roi"
    assert px.unread_lines == crops - 8
    # The first region's six rows, then the second's first two (each region in its own order).
    assert px.lines[0].box_px.bottom <= middle < px.lines[-1].box_px.top
    assert tuple(ln.text for ln in sorted(px.lines, key=lambda ln: ln.box_px.top)) == words[:8]


def test_region_cache_never_serves_a_reading_another_budget_would_not_give(
    engine: RapidOcrEngine,
) -> None:
    text = TextReader(PixelConfig(), engine)
    frame, whole = dense_frame(), BoxPx(0, 0, 720, 1280)
    full = text.read_bounded(frame, whole, 100)
    assert (full.cached, full.unread) == (False, 0)
    assert text.read_bounded(frame, whole, len(WORDS)).cached  # the same reading
    cut = text.read_bounded(frame, whole, 3)
    assert (cut.cached, cut.recognised, cut.unread) == (False, 3, len(WORDS) - 3)
    top3 = sorted(full.lines, key=lambda ln: ln.box_px.top)[:3]
    assert cut.lines == [ln for ln in full.lines if ln in top3]  # kept in detection's order
    again = text.read_bounded(frame, whole, 3)
    assert again.cached and again.lines == cut.lines
    assert text.read_bounded(frame, whole, 4).unread == len(WORDS) - 4


def test_ocr_regions_logs_lines_left_unread(
    engine: RapidOcrEngine, caplog: pytest.LogCaptureFixture
) -> None:
    reader = PixelReader(PixelConfig(max_ocr_lines=2), engine)
    with caplog.at_level(logging.WARNING, logger="perception.pixel.read"):
        lines = reader.ocr_regions(dense_frame(), [BoxPx(0, 0, 720, 1280)])
    assert len(lines) == 2
    assert f"OCR left {len(WORDS) - 2} text lines unread" in caplog.text


def test_reading_order_cap_is_top_then_left_in_the_given_order() -> None:
    boxes = [BoxPx(0, 300, 50, 320), BoxPx(60, 100, 90, 120), BoxPx(0, 100, 50, 120)]
    assert reading_order_cap(boxes, 2) == [1, 2]
    assert reading_order_cap(boxes, 3) == [0, 1, 2]
    assert reading_order_cap(boxes, 0) == []


def test_max_ocr_lines_from_the_environment() -> None:
    assert PixelConfig.from_env({"PERCEPTION_PIXEL_MAX_OCR_LINES": "7"}).max_ocr_lines == 7
    assert PixelConfig().max_ocr_lines == 256
    with pytest.raises(ConfigError, match="PERCEPTION_PIXEL_MAX_OCR_LINES"):
        PixelConfig.from_env({"PERCEPTION_PIXEL_MAX_OCR_LINES": "0"})
