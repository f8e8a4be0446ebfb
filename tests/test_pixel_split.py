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
    # no separator, or nothing but marks: left as it is
    for text in ("Back Close", "·", "< >", "..."):
        kept = TextLine(text=text, box_px=BoxPx(0, 0, 10, 10), confidence=0.5)
        assert split_separated([kept]) == [kept]


def test_marks_at_a_lines_ends_are_not_its_label() -> None:
    from perception.pixel.merge import split_separated
    from perception.pixel.ocr import TextLine
    from perception.types import BoxPx

    def trimmed(text: str) -> tuple[str, BoxPx]:
        line = TextLine(text=text, box_px=BoxPx(0, 0, 100, 20), confidence=0.9)
        (out,) = split_separated([line])
        return out.text, out.box_px

    assert trimmed("· 1.About") == ("1.About", BoxPx(22, 0, 100, 20))
    assert trimmed("<AUG20>")[0] == "AUG20"
    assert trimmed("Hair Salons Current Loca...")[0] == "Hair Salons Current Loca"
    assert trimmed("Hair Salons Current Loca..")[0] == "Hair Salons Current Loca"
    assert trimmed("下一首…")[0] == "下一首"
    # a blank between CJK characters is a gap between tabs; between words it is a word gap
    line = TextLine(text="套餐　手机 宽带", box_px=BoxPx(0, 0, 160, 20), confidence=0.9)
    assert [p.text for p in split_separated([line])] == ["套餐", "手机", "宽带"]
    assert trimmed("Sign in")[0] == "Sign in" and trimmed("微信 8.0")[0] == "微信 8.0"
    # one dot ends a sentence or an abbreviation: kept
    assert trimmed("U.S.A.")[0] == "U.S.A." and trimmed("v1.2")[0] == "v1.2"


def test_two_labels_a_space_and_a_half_apart_split() -> None:
    # Weibo's header: "Back  Close" is two buttons whose labels sit closer than a line height
    # but clearly further apart than a word space.
    g = _canvas()
    (w_back, h_text), _ = cv2.getTextSize("Back", FONT, 1.2, 3)
    cv2.putText(g, "Back", (20, 75), FONT, 1.2, 30, 3)
    cv2.putText(g, "Close", (20 + w_back + int(0.7 * h_text), 75), FONT, 1.2, 30, 3)
    pieces = split_line(g, BoxPx(10, 30, 360, 90), gap_ratio=1.0)
    assert len(pieces) == 2 and pieces[0].right <= 20 + w_back + int(0.7 * h_text)
