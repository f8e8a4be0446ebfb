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


def _condensed(first: str, second: str, gap_ink_heights: float) -> tuple[np.ndarray, int]:
    """Two labels in a face as narrow as the corpus's (Hershey's glyphs are 0.7 ink heights
    wide, Roboto's lowercase about 0.4): drawn, then squeezed to 55% of their width, with
    ``gap_ink_heights`` ink heights between their inks. Returns the canvas and the gap's
    left end."""
    wide = np.full((120, 1400), 240, np.uint8)
    cv2.putText(wide, first, (20, 75), FONT, 1.2, 30, 2)
    ink_cols = np.flatnonzero((wide < 200).any(axis=0))
    rows = np.flatnonzero((wide < 200).any(axis=1))
    ink_h = int(rows[-1] - rows[0] + 1)
    end = int(ink_cols[-1]) + 1
    cv2.putText(wide, second, (end + round(gap_ink_heights * ink_h / 0.55), 75), FONT, 1.2, 30, 2)
    return cv2.resize(wide, (770, 120), interpolation=cv2.INTER_AREA), round(end * 0.55)


def test_two_labels_a_space_and_a_half_apart_split() -> None:
    # Weibo's header: "Back  Close" is two buttons whose labels sit closer than a line height
    # but clearly further apart than a word space.
    g, gap_left = _condensed("Back", "Close", 0.7)
    pieces = split_line(g, BoxPx(5, 30, 300, 90), gap_ratio=1.0)
    assert len(pieces) == 2 and pieces[0].right <= gap_left + 0.7 * 30


def _square_glyphs(g: np.ndarray, left: int, count: int, size: int = 40, top: int = 40) -> int:
    """``count`` CJK-like glyphs (as wide as they are high, strokes across the whole cell) from
    ``left``; returns the right end."""
    for k in range(count):
        x = left + k * (size + 6)
        cv2.rectangle(g, (x, top), (x + size, top + size), 30, 3)
        cv2.line(g, (x, top + size // 2), (x + size, top + size // 2), 30, 3)
    return left + count * (size + 6)


def test_a_cjk_comma_is_no_gap_between_labels() -> None:
    # "邓女士称，孩子目前仍处于昏迷" in a Weibo post: the full-width comma's ink sits at the
    # bottom left of its cell and leaves a blank 0.6 glyph heights wide before the next one.
    g = _canvas()
    x = _square_glyphs(g, 20, 4)
    cv2.circle(g, (x + 4, 76), 4, 30, -1)  # the comma
    _square_glyphs(g, x + 4 + 28, 6)
    assert split_line(g, BoxPx(10, 20, 660, 100), gap_ratio=1.0) == [BoxPx(10, 20, 660, 100)]
    # the same gap between narrow Latin glyphs is two labels
    h, _ = _condensed("Back", "Close", 0.6)
    assert len(split_line(h, BoxPx(5, 30, 300, 90), gap_ratio=1.0)) == 2
    # and between wide ones (capitals, Hershey's face) a word space may be that wide
    caps = _canvas()
    (w_deny, caps_h), _ = cv2.getTextSize("ONLY", FONT, 1.2, 2)
    cv2.putText(caps, "ONLY", (20, 75), FONT, 1.2, 30, 2)
    cv2.putText(caps, "THIS TIME", (20 + w_deny + int(0.6 * caps_h), 75), FONT, 1.2, 30, 2)
    assert split_line(caps, BoxPx(10, 30, 420, 90), gap_ratio=1.0) == [BoxPx(10, 30, 420, 90)]


def test_a_line_over_a_picture_is_not_split() -> None:
    # White text over a video frame or an ad: the border is no background, so no gap is blank
    # (a smooth picture passes for ink where it strays from the border's median).
    x = np.linspace(0, 1, 700)[None, :]
    y = np.linspace(0, 1, 120)[:, None]
    g = (90 + 70 * np.sin(9 * x + 3 * y) + 40 * np.cos(23 * x * y + 1)).clip(0, 255)
    g = g.astype(np.uint8)
    cv2.putText(g, "Download now", (20, 75), FONT, 1.2, 255, 3)
    assert split_line(g, BoxPx(10, 30, 400, 90), gap_ratio=1.0) == [BoxPx(10, 30, 400, 90)]
