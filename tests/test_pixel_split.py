"""Splitting one detected line that spans two targets (no OCR needed: pixels and a box)."""

from __future__ import annotations

import cv2
import numpy as np

from perception.pixel.ocr import split_line
from perception.types import BoxPx

FONT = cv2.FONT_HERSHEY_SIMPLEX


def _canvas() -> np.ndarray:
    return np.full((120, 700), 240, np.uint8)


def test_wide_gap_splits() -> None:
    g = _canvas()
    cv2.putText(g, "Back", (20, 75), FONT, 1.2, 30, 3)
    cv2.putText(g, "Close", (480, 75), FONT, 1.2, 30, 3)
    pieces = split_line(g, BoxPx(10, 30, 640, 90), gap_ratio=1.0)
    assert len(pieces) == 2
    assert pieces[0].right < 480 and pieces[1].left > 120


def test_word_spaces_do_not_split() -> None:
    g = _canvas()
    cv2.putText(g, "Turn on location history", (20, 75), FONT, 1.2, 30, 3)
    assert split_line(g, BoxPx(10, 30, 560, 90), gap_ratio=1.0) == [BoxPx(10, 30, 560, 90)]


def test_outlined_pill_next_to_a_name_splits() -> None:
    g = _canvas()
    cv2.putText(g, "Anna", (20, 75), FONT, 1.2, 30, 3)
    # An outlined "Follow" pill 12 px after the name: far too close for the gap rule.
    cv2.rectangle(g, (148, 36), (330, 86), 30, 3)
    cv2.putText(g, "Follow", (165, 73), FONT, 1.0, 30, 2)
    pieces = split_line(g, BoxPx(10, 32, 336, 90), gap_ratio=1.0)
    assert len(pieces) == 2
    assert pieces[0].right <= 150 and pieces[1].left >= 140


def test_filled_pill_splits_and_tiny_boxes_pass_through() -> None:
    g = _canvas()
    cv2.putText(g, "Price", (20, 75), FONT, 1.2, 30, 3)
    cv2.rectangle(g, (160, 32), (330, 90), 120, -1)
    cv2.putText(g, "Buy", (200, 73), FONT, 1.0, 250, 2)
    assert len(split_line(g, BoxPx(10, 32, 336, 90), gap_ratio=1.0)) == 2
    assert split_line(g, BoxPx(10, 10, 12, 12), gap_ratio=1.0) == [BoxPx(10, 10, 12, 12)]


def test_a_line_that_reads_two_tabs_becomes_two_candidates() -> None:
    from perception.pixel.merge import split_separated
    from perception.pixel.ocr import TextLine
    from perception.types import BoxPx

    (line,) = [TextLine(text="歌曲·歌词", box_px=BoxPx(100, 0, 600, 40), confidence=0.9)]
    first, second = split_separated([line])
    assert (first.text, second.text) == ("歌曲", "歌词")
    assert first.box_px.right <= second.box_px.left
    assert first.box_px.left == 100 and second.box_px.right == 600
    # no separator, a separator at an end, or nothing around it: left as it is
    for text in ("Back Close", "a·", "·"):
        kept = TextLine(text=text, box_px=BoxPx(0, 0, 10, 10), confidence=0.5)
        assert split_separated([kept]) == [kept]
