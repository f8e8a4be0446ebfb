"""Defects found by the review of 2026-12-05 in the audit's fixes: keypad keys that lost their
one-character labels as junk, a page's top line that starts with a time taken for the status
bar's clock, and a tablet's toolbar title under a status-bar floor sized for a phone."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from _xml import node, screen

from perception import read_tree
from perception.pixel import PixelReader
from perception.pixel.merge import status_clock
from perception.pixel.ocr import TextLine
from perception.tree.cluster import without_junk
from perception.types import BoxPx, ScreenSize
from tests._frames import png

BTN = "android.widget.Button"

# --- keypad keys keep their labels --------------------------------------------------------------

KEYS = ["7", "*", "0", "#", ".", "%", "(", ")", "-", "+", "=", "?", "…", "( )", "..."]


def test_keypad_keys_keep_their_labels() -> None:
    tree = read_tree(screen(*(
        node(
            ((i % 4) * 270, 1000 + (i // 4) * 250, (i % 4) * 270 + 270, 1250 + (i // 4) * 250),
            text=key, cls=BTN, clickable=True,
        )
        for i, key in enumerate(KEYS)
    )))
    assert [e.text for e in tree.elements if e.kind == "btn"] == KEYS


@pytest.mark.parametrize(
    ("label", "said"),
    [
        ("#", "#"),
        ("…", "…"),
        ("*&*", ""),  # Weibo's template placeholder, alone or beside a label
        ("Save | *&*", "Save"),
        ("• | Added Czech translation", "Added Czech translation"),  # a bullet beside its text
        ("\uf053", ""),  # an icon font's glyph
        ("\uf053\uf054", ""),
        ("", ""),
    ],
)
def test_a_keypad_key_alone_is_its_label(label: str, said: str) -> None:
    assert without_junk(label) == said


# --- a top line that starts with a time is no clock ---------------------------------------------


@pytest.mark.parametrize(
    ("text", "clock"),
    [
        ("10:30 Meeting with Bob", False),
        ("10:30 会议", False),
        ("4:12 AM Standup", False),
        ("4:12PM", True),
        ("4:12 p.m.", True),
        ("16:10 0 00  D", True),
        ("39%23:22", True),
        ("下午4:12", True),
    ],
)
def test_a_time_followed_by_words_is_no_clock(text: str, clock: bool) -> None:
    line = TextLine(text=text, box_px=BoxPx(30, 14, 500, 50), confidence=0.9)
    assert (status_clock([line], ScreenSize(1080, 2280)) is not None) is clock


def test_a_full_screen_page_keeps_its_first_line_that_starts_with_a_time(
    reader: PixelReader,
) -> None:
    img = np.full((2400, 1080, 3), 255, np.uint8)
    font = cv2.FONT_HERSHEY_SIMPLEX
    cv2.putText(img, "10:30 Meeting with Bob", (40, 95), font, 1.5, (20,) * 3, 3)
    for i, y in enumerate(range(300, 2300, 140)):
        cv2.putText(
            img, f"Agenda item number {i}", (40, y), cv2.FONT_HERSHEY_SIMPLEX, 1.4, (20,) * 3, 2
        )
    pixels = reader.read(png(img))
    assert any("Meeting" in c.text for c in pixels.candidates)


# --- a tablet's status bar floor ---------------------------------------------------------------


def test_a_tablet_toolbar_title_under_the_status_bar_is_offered(reader: PixelReader) -> None:
    # 1600x2560 at xhdpi (800 dp wide): a 24 dp bar is 48 px, not 24 * 1600 / 360 = 107 px.
    img = np.full((2560, 1600, 3), 250, np.uint8)
    img[:48] = (40, 40, 40)
    cv2.putText(img, "12:30", (20, 36), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (255,) * 3, 2)
    img[48:160] = (180, 120, 30)  # a 56 dp toolbar
    cv2.putText(img, "Inbox", (40, 88), cv2.FONT_HERSHEY_SIMPLEX, 1.4, (255,) * 3, 3)
    for i, y in enumerate(range(300, 2400, 160)):
        cv2.putText(
            img, f"Message number {i} from Alice", (40, y), cv2.FONT_HERSHEY_SIMPLEX, 1.4,
            (20,) * 3, 2,
        )
    pixels = reader.read(png(img))
    assert pixels.flags.status_bar_px == 48
    assert any(c.text == "Inbox" for c in pixels.candidates)
