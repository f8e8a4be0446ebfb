"""Text detection cuts long runs of blank rows out of its copy (``PixelConfig.det_flat_run``)
and maps the boxes it finds back to the frame's rows."""

from __future__ import annotations

from collections.abc import Iterator

import cv2
import numpy as np
import pytest

from perception.config import PixelConfig
from perception.errors import ConfigError
from perception.pixel import RapidOcrEngine, TextReader
from perception.pixel.ocr import FLAT_ROW_MARGIN, I32, U8, flat_rows_kept

FONT = cv2.FONT_HERSHEY_SIMPLEX


class _Seen:
    """The real engine, noting the height of every image it detects on."""

    name = "rapidocr-onnxruntime"

    def __init__(self, engine: RapidOcrEngine) -> None:
        self.engine = engine
        self.heights: list[int] = []

    def detect(self, image: U8, limit_side_len: int) -> I32:
        self.heights.append(int(image.shape[0]))
        return self.engine.detect(image, limit_side_len)

    def recognize(self, crops: list[U8]) -> list[tuple[str, float]]:
        return self.engine.recognize(crops)


@pytest.fixture(scope="module")
def engine() -> Iterator[RapidOcrEngine]:
    eng = RapidOcrEngine()
    yield eng
    eng.close()


def _page() -> np.ndarray:
    """A 576x1280 page: a title at the top, blank space, one line near the bottom."""
    img = np.full((1280, 576, 3), 245, np.uint8)
    cv2.putText(img, "Settings", (30, 90), FONT, 1.4, (30, 30, 30), 3, cv2.LINE_AA)
    cv2.putText(img, "Sign out", (30, 1150), FONT, 1.2, (30, 30, 30), 3, cv2.LINE_AA)
    return img


def test_long_flat_runs_keep_a_margin_each_side_and_short_ones_stay() -> None:
    img = np.full((200, 50, 3), 240, np.uint8)
    img[40:60, 10:30] = 0  # ink: rows 40-59
    img[70:80, 5:9] = 0  # ink: rows 70-79, 10 flat rows apart from the first
    kept = flat_rows_kept(img, 24)
    assert kept is not None
    keep = set(kept.tolist())
    # Rows 0-39 (40 flat rows) keep 8 each end; rows 60-69 (10) all stay; rows 80-199 (120)
    # keep 8 each end.
    expected = (
        set(range(FLAT_ROW_MARGIN)) | set(range(40 - FLAT_ROW_MARGIN, 80 + FLAT_ROW_MARGIN))
        | set(range(200 - FLAT_ROW_MARGIN, 200))
    )
    assert keep == expected


def test_a_vertical_gradient_is_flat_and_a_coloured_dot_is_not() -> None:
    img = np.zeros((120, 64, 3), np.uint8)
    img[:] = np.linspace(0, 240, 120, dtype=np.uint8)[:, None, None]  # rows differ, each flat
    kept = flat_rows_kept(img, 24)
    assert kept is not None and len(kept) == 2 * FLAT_ROW_MARGIN
    img[60, 30] = (img[60, 31, 0], img[60, 31, 1], 255)  # one pixel off in one channel only
    kept = flat_rows_kept(img, 24)
    assert kept is not None and 60 in kept.tolist()


def test_nothing_to_cut_detects_on_the_copy_as_it_is() -> None:
    img = np.random.default_rng(3).integers(0, 255, (300, 80, 3), dtype=np.uint8)
    assert flat_rows_kept(img, 24) is None
    assert flat_rows_kept(np.full((300, 80, 3), 9, np.uint8), 0) is None


def test_detection_sees_fewer_rows_and_boxes_land_on_the_text(engine: RapidOcrEngine) -> None:
    seen = _Seen(engine)
    reader = TextReader(PixelConfig(), seen)
    boxes = reader.detect(_page())
    assert seen.heights and seen.heights[-1] < 400  # 1280 rows, most of them blank
    # The line near the bottom is found where it is drawn, not where the cut copy had it.
    assert any(b.top <= 1140 <= b.bottom and b.left <= 60 for b in boxes)
    assert any(b.top <= 80 <= b.bottom and b.left <= 60 for b in boxes)
    for b in boxes:
        assert b.bottom <= 1180 and (b.bottom <= 130 or b.top >= 1100)


def test_cut_copy_finds_the_lines_the_whole_copy_finds(engine: RapidOcrEngine) -> None:
    whole = TextReader(PixelConfig(det_flat_run=0), engine).detect(_page())
    cut = TextReader(PixelConfig(), engine).detect(_page())
    assert len(whole) == len(cut) == 2
    for a, b in zip(sorted(whole), sorted(cut), strict=True):
        assert abs(a.top - b.top) <= 4 and abs(a.bottom - b.bottom) <= 4
        assert abs(a.left - b.left) <= 4 and abs(a.right - b.right) <= 4


def test_det_flat_run_must_not_be_negative() -> None:
    with pytest.raises(ConfigError, match="det_flat_run"):
        PixelConfig(det_flat_run=-1)
