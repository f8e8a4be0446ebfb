"""The on-screen keyboard seen in the pixels alone (:mod:`perception.pixel.keyboard`).

Keyboards drawn here (light with key faces, dark without, a number row over the letters, the
Chinese 9-key layout) are found, and a frame alone or a dump without the keyboard's window
treats the box found as a reported one: ``"kbd"`` in the prompt, no key offered. Keypads that
are the app's content (a calculator, a dial pad, a lock screen's PIN pad, a game's letter
grid, a keyboard drawn in the middle of a page) are not keyboards. The corpus holds no frame
with a keyboard up (DroidBot types through its own invisible one): its screens that come
closest (an emoji panel, an A-Z index, forms with a focused field) find none."""

from __future__ import annotations

import json
import random
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt
import pytest
from _frames import png
from _xml import dump, node

from perception import Observation, Perceiver
from perception.pipeline import PixelChannel
from perception.pixel import PixelReader
from perception.pixel.keyboard import find_keyboard
from perception.pixel.ocr import TextLine
from perception.types import BoxPx, ScreenSize

W, H = 1080, 2400
NAV = 126
FONT = cv2.FONT_HERSHEY_SIMPLEX
Img = npt.NDArray[np.uint8]
PAGE = ("Search places", "Results near you", "Blue Bottle Coffee", "Sightglass")


def page(dark: bool = False, nav: bool = True) -> Img:
    """A search page with a focused field (its caret drawn), a list under it, and the
    navigation bar."""
    img = np.full((H, W, 3), 18 if dark else 250, np.uint8)
    ink = (235, 235, 235) if dark else (20, 20, 20)
    cv2.putText(img, PAGE[0], (60, 240), FONT, 1.6, ink, 3)
    cv2.rectangle(img, (40, 300), (W - 40, 420), (120, 120, 120), 3)
    cv2.putText(img, "coffee", (70, 380), FONT, 1.5, ink, 3)
    cv2.line(img, (250, 330), (250, 395), (200, 100, 0), 4)
    for i, text in enumerate(PAGE[1:]):
        cv2.putText(img, text, (60, 560 + 130 * i), FONT, 1.4, ink, 3)
    cv2.putText(img, "Open now", (60, 1300), FONT, 1.4, ink, 3)
    cv2.putText(img, "Directions", (60, 1900), FONT, 1.4, ink, 3)
    if nav:
        img[H - NAV:] = 0
    return img


def keyboard(
    img: Img, *, dark: bool = False, faces: bool = True, number_row: bool = False,
    top: int = 1420, nav: bool = True,
) -> BoxPx:
    """Draw a QWERTY keyboard from ``top`` down to the navigation bar: a suggestion strip, the
    letter rows (over a row of digits with ``number_row``), the space bar's row. Its box."""
    bottom = H - NAV if nav else H
    bg = (36, 33, 32) if dark else (237, 234, 232)
    face = (67, 64, 60) if dark else (255, 255, 255)
    ink = (235, 235, 235) if dark else (20, 20, 20)
    img[top:bottom] = bg
    for j, word in enumerate(("coffee", "coffees", "cafe")):
        cv2.putText(img, word, (90 + 360 * j, top + 85), FONT, 1.3, ink, 3)
    rows = ("1234567890",) * number_row + ("qwertyuiop", "asdfghjkl", "zxcvbnm")
    pitch = (bottom - top - 150) // (len(rows) + 1)
    height = pitch - 25
    kw = W // 10
    for r, row in enumerate(rows):
        y = top + 150 + r * pitch
        off = (W - kw * len(row)) // 2
        for c, ch in enumerate(row):
            x = off + c * kw
            if faces:
                cv2.rectangle(img, (x + 6, y), (x + kw - 6, y + height), face, -1)
            cv2.putText(img, ch, (x + kw // 2 - 18, y + height // 2 + 25), FONT, 2.0, ink, 4)
    y = top + 150 + len(rows) * pitch
    cv2.rectangle(img, (6, y), (2 * kw - 6, y + height), face, -1)
    cv2.putText(img, "?123", (20, y + height // 2 + 20), FONT, 1.3, ink, 3)
    cv2.rectangle(img, (3 * kw + 6, y), (8 * kw - 6, y + height), face, -1)
    return BoxPx(0, top, W, bottom)


def nine_key(img: Img, top: int = 1500) -> BoxPx:
    """The Chinese 9-key pinyin keyboard: letter groups on a 3x3 grid beside a column of keys."""
    bottom = H - NAV
    img[top:bottom] = (237, 234, 232)
    cv2.putText(img, "ni hao", (80, top + 80), FONT, 1.3, (20, 20, 20), 3)
    groups = (("@/.", "ABC", "DEF"), ("GHI", "JKL", "MNO"), ("PQRS", "TUV", "WXYZ"))
    pitch = (bottom - top - 130) // 4
    for r, row in enumerate(groups):
        for c, text in enumerate(row):
            x, y = 216 + c * 216, top + 130 + r * pitch
            cv2.rectangle(img, (x + 8, y), (x + 208, y + pitch - 20), (255, 255, 255), -1)
            cv2.putText(img, text, (x + 40, y + pitch // 2 + 10), FONT, 1.6, (20, 20, 20), 3)
    return BoxPx(0, top, W, bottom)


def keypad(img: Img, rows: tuple[tuple[str, ...], ...], top: int, subs: bool = False) -> None:
    """A grid of round-cornered keys from ``top`` down to the navigation bar (a calculator's,
    a dial pad's: ``subs`` writes the letters a dial pad's digits carry)."""
    letters = {"2": "ABC", "3": "DEF", "4": "GHI", "5": "JKL", "6": "MNO", "7": "PQRS",
               "8": "TUV", "9": "WXYZ"}
    pitch = (H - NAV - top) // len(rows)
    for r, row in enumerate(rows):
        kw = W // len(row)
        for c, key in enumerate(row):
            x, y = c * kw, top + r * pitch
            cv2.rectangle(img, (x + 10, y + 10), (x + kw - 10, y + pitch - 10), (225, 225, 225), -1)
            cv2.putText(img, key, (x + kw // 2 - 25, y + pitch // 2 + 10), FONT, 2.2,
                        (20, 20, 20), 4)
            if subs and key in letters:
                cv2.putText(img, letters[key], (x + kw // 2 - 40, y + pitch // 2 + 65), FONT,
                            1.1, (90, 90, 90), 2)


@pytest.fixture(scope="module")
def perceiver_of(reader: PixelReader) -> PixelChannel:
    return PixelChannel(reader)


def observe(channel: PixelChannel, frame: Img, xml: bytes | None = None) -> Observation:
    return Perceiver(pixels=channel).perceive(xml, png(frame))


def assert_about(found: BoxPx | None, drawn: BoxPx) -> None:
    """The box found spans the width, ends at the navigation bar (found in 4 px cells) and
    starts within a third of a key's height of the one drawn."""
    assert found is not None
    assert (found.left, found.right) == (0, W)
    assert abs(found.bottom - drawn.bottom) <= 8, (found, drawn)
    assert abs(found.top - drawn.top) <= 40, (found, drawn)


@pytest.mark.parametrize(
    ("dark", "faces", "number_row"),
    [(False, True, False), (True, False, False), (True, True, False), (False, True, True)],
    ids=["light", "dark-borderless", "dark", "number-row"],
)
def test_a_keyboard_is_found_and_its_keys_are_not_offered(
    perceiver_of: PixelChannel, dark: bool, faces: bool, number_row: bool
) -> None:
    """A frame alone: the box is the prompt's ``"kbd"``, no key's letter nor the suggestion
    strip's words are candidates, the page above is."""
    img = page(dark)
    drawn = keyboard(img, dark=dark, faces=faces, number_row=number_row)
    obs = observe(perceiver_of, img)
    assert obs.screen is not None
    assert_about(obs.screen.keyboard_px, drawn)
    assert "kbd" in json.loads(obs.to_prompt())["screen"]
    texts = [c.text.strip() for c in obs.candidates if c.shown]
    assert "Blue Bottle Coffee" in texts
    assert not [t for t in texts if len(t) == 1], texts
    assert not {"coffees", "cafe", "Directions", "?123"} & set(texts), texts


def test_a_keyboard_without_a_navigation_bar_reaches_the_bottom(reader: PixelReader) -> None:
    img = page(nav=False)
    drawn = keyboard(img, nav=False)
    assert_about(reader.read(png(img)).keyboard_px, drawn)


def test_the_nine_key_layout_is_found(reader: PixelReader) -> None:
    img = page()
    drawn = nine_key(img)
    assert_about(reader.read(png(img)).keyboard_px, drawn)


def app_dump(focused: bool = True) -> bytes:
    """The page's dump (:func:`page`), its app's window alone: the search field (in focus or
    not) and buttons, four of them where the keyboard drawn from 1250 covers them."""
    fields = [
        node((40, 300, 1040, 420), cls="android.widget.EditText", clickable=True,
             focusable=True, focused=focused, text="coffee"),
        node((40, 1240, 1040, 1340), cls="android.widget.Button", clickable=True,
             text="Open now"),
        node((40, 1840, 1040, 1940), cls="android.widget.Button", clickable=True,
             text="Directions"),
        node((40, 2000, 1040, 2100), cls="android.widget.Button", clickable=True,
             text="Reserve a table"),
        node((40, 2120, 1040, 2220), cls="android.widget.Button", clickable=True,
             text="Order delivery"),
    ]
    return dump(node((0, 0, W, H), *fields))


def test_the_tree_without_the_keyboard_takes_the_pixels_box(perceiver_of: PixelChannel) -> None:
    """A dump of the app's window alone (what DroidBot and most dumps hold) whose elements the
    pixels do not all show (the keyboard covers them) is read off the whole frame: the box the
    pixels find hides the app's elements under it, as a reported box does."""
    img = page()
    drawn = keyboard(img, top=1250)
    obs = observe(perceiver_of, img, app_dump())
    assert obs.screen is not None
    if obs.screen.keyboard_px is None:
        pytest.fail(f"no keyboard seen; state {obs.state}, notes {obs.notes}")
    assert_about(obs.screen.keyboard_px, drawn)
    shown = {c.text for c in obs.candidates if c.shown}
    assert "coffee" in shown
    assert not {"Directions", "Reserve a table", "Order delivery"} & shown, shown


def test_a_keyboard_over_a_dump_with_no_field_in_focus_is_the_apps(
    perceiver_of: PixelChannel,
) -> None:
    """Nothing is being typed: keys drawn along the bottom are the app's (a word game's)."""
    img = page()
    keyboard(img, top=1250)
    obs = observe(perceiver_of, img, app_dump(focused=False))
    assert obs.screen is not None and obs.screen.keyboard_px is None
    assert "kbd" not in json.loads(obs.to_prompt()).get("screen", {})


def test_a_reported_keyboard_is_kept_over_the_pixels(perceiver_of: PixelChannel) -> None:
    img = page()
    keyboard(img)
    reported = BoxPx(0, 1500, W, H - NAV)
    obs = Perceiver(pixels=perceiver_of).perceive(frame=png(img), keyboard=reported)
    assert obs.screen is not None and obs.screen.keyboard_px == reported


CALCULATOR = (("C", "()", "%", "/"), ("7", "8", "9", "x"), ("4", "5", "6", "-"),
              ("1", "2", "3", "+"), ("0", ".", "<", "="))
DIAL_PAD = (("1", "2", "3"), ("4", "5", "6"), ("7", "8", "9"), ("*", "0", "#"))


def test_a_calculators_keypad_is_the_app(reader: PixelReader) -> None:
    img = np.full((H, W, 3), 250, np.uint8)
    cv2.putText(img, "12x7", (600, 500), FONT, 3, (20, 20, 20), 5)
    keypad(img, CALCULATOR, top=1000)
    img[H - NAV:] = 0
    assert reader.read(png(img)).keyboard_px is None


def test_a_dial_pad_is_the_app(reader: PixelReader) -> None:
    img = np.full((H, W, 3), 250, np.uint8)
    cv2.putText(img, "555 0123", (300, 500), FONT, 3, (20, 20, 20), 5)
    keypad(img, DIAL_PAD, top=1000, subs=True)
    img[H - NAV:] = 0
    assert reader.read(png(img)).keyboard_px is None


def test_a_lock_screens_pin_pad_is_the_app(reader: PixelReader) -> None:
    img = np.full((H, W, 3), 30, np.uint8)
    cv2.putText(img, "Enter PIN", (330, 500), FONT, 2, (240, 240, 240), 4)
    keypad(img, DIAL_PAD, top=1100)
    img[H - NAV:] = 0
    assert reader.read(png(img)).keyboard_px is None


def test_a_games_letter_grid_is_the_app(reader: PixelReader) -> None:
    """A word game's grid of letters at the bottom: rows of single letters in no keyboard's
    order."""
    rng = random.Random(7)
    rows = tuple(tuple(rng.choice("AEGHKMNPRSTUW") for _ in range(8)) for _ in range(4))
    img = np.full((H, W, 3), 250, np.uint8)
    cv2.putText(img, "Find the words", (200, 400), FONT, 2, (20, 20, 20), 4)
    keypad(img, rows, top=1300)
    img[H - NAV:] = 0
    assert reader.read(png(img)).keyboard_px is None


def test_a_keyboard_drawn_in_the_middle_of_a_page_is_content(reader: PixelReader) -> None:
    """A keyboard's theme picker or a typing lesson draws a keyboard mid-screen: no band
    along the bottom, not the phone's keyboard."""
    img = page()
    keyboard(img, top=700)
    img[1500:] = 250
    cv2.putText(img, "Choose this theme", (200, 1800), FONT, 2, (20, 20, 20), 4)
    img[H - NAV:] = 0
    assert reader.read(png(img)).keyboard_px is None


def line(text: str, box: tuple[int, int, int, int]) -> TextLine:
    return TextLine(text=text, box_px=BoxPx(*box), confidence=0.9)


def test_rows_are_read_in_keyboard_order_with_misread_letters() -> None:
    """OCR's lines alone: ``i`` read as ``:``, ``o`` as ``0``, ``l`` missed, still two rows of
    the keyboard; the same letters shuffled are no keyboard's."""
    size = ScreenSize(W, H)
    pixels = np.full((H, W, 3), 230, np.uint8)

    def rows(first: str | list[str], second: str) -> list[TextLine]:
        out = [line(c, (i * 108 + 30, 1900, i * 108 + 70, 1950)) for i, c in enumerate(first)]
        out += [line(c, (i * 108 + 84, 2060, i * 108 + 124, 2110)) for i, c in enumerate(second)]
        return out

    found = find_keyboard(rows("qwertyu:0p", "asdfghjk"), pixels, size)
    assert found is not None and found.bottom == H and found.left == 0 and found.right == W
    assert find_keyboard(rows("pyqtweuor:", "khsdfagj"), pixels, size) is None
    # SwiftKey's keys write a digit in their corner: "q1" read as one line is the key q
    hinted = [c + str((i + 1) % 10) for i, c in enumerate("qwertyuiop")]
    assert find_keyboard(rows(hinted, "asdfghjk"), pixels, size) == found
    # one row is a line of text, not a keyboard
    assert find_keyboard(rows("qwertyuiop", ""), pixels, size) is None


ALMOST = (
    "droidbotexp_qqmusic/qqmusic_2021-12-06/step_012",  # an emoji panel at the bottom
    "fdroidutg_weibo/weibo_2023-10-24/step_030",  # an A-Z index down the side
    "fdroidutg_weibo/weibo_2023-10-24/step_002",  # a form, its field focused
    "droidbot_habitica/habitica_2020-08-29/step_002",  # a task form
    "droidbot_yelp/yelp_2017/step_010",  # a search page
    "testcube_transsion/chatter_2025-01-25/step_003",  # a sign-up form
    "adb_oneoffs/samsung_messages_tablet",  # a new message, its field focused
)


@pytest.mark.parametrize("sample", ALMOST)
def test_corpus_screens_near_a_keyboard_have_none(
    corpus_dir: Path, reader: PixelReader, sample: str
) -> None:
    image = next(p for p in (corpus_dir / sample).iterdir() if p.stem == "screen")
    assert reader.read(image.read_bytes()).keyboard_px is None
