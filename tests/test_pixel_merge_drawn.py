"""The pixel-only merge on frames a reviewer drew (review 18): toggles' labels in large text
and after a one-letter word, a bar's tabs in reading order, a letter drawn in a round button.

Frames are drawn with cv2 and their anchors found by the real anchor code; the OCR lines are
given as boxes around the drawn text, so no OCR model is needed.
"""

from __future__ import annotations

import cv2
import numpy as np

from perception.pixel import (
    Frame,
    PixelKind,
    TextLine,
    build_candidates,
    find_anchors,
    frame_flags as flags_of,
)
from perception.pixel.anchors import TOGGLE_KINDS, Anchor
from perception.pixel.merge import PixelCandidate
from perception.types import BoxPx

FONT = cv2.FONT_HERSHEY_SIMPLEX
WHITE = (250, 250, 250)
INK = (40, 40, 40)
TEAL = (136, 150, 0)
LIGHT_TEAL = (196, 204, 128)


def _screen(width: int = 1080, height: int = 2340) -> np.ndarray:
    return np.full((height, width, 3), WHITE, np.uint8)


def _label(
    img: np.ndarray, text: str, x: int, baseline: int, scale: float = 1.4, pad: int = 4
) -> TextLine:
    """Draw ``text`` and return the line OCR would give for it (its box padded by ``pad``)."""
    (tw, th), base = cv2.getTextSize(text, FONT, scale, 3)
    cv2.putText(img, text, (x, baseline), FONT, scale, INK, 3, cv2.LINE_AA)
    return TextLine(
        text=text,
        box_px=BoxPx(x - pad, baseline - th - 6, x + tw + pad, baseline + base + 6),
        confidence=0.97,
    )


def _switch(img: np.ndarray, x: int, y: int, scale: float = 1.0) -> None:
    """AppCompat's switch, on, at 3x (``scale`` for a larger display size)."""
    r, t = round(21 * scale), round(30 * scale)
    x1, x2 = x + r, x + round(81 * scale)
    cv2.rectangle(img, (x1, y - r), (x2, y + r), LIGHT_TEAL, -1)
    cv2.circle(img, (x1, y), r, LIGHT_TEAL, -1, cv2.LINE_AA)
    cv2.circle(img, (x2, y), r, LIGHT_TEAL, -1, cv2.LINE_AA)
    cv2.circle(img, (x2, y + 3), t, (200, 200, 200), -1, cv2.LINE_AA)
    cv2.circle(img, (x2, y), t, TEAL, -1, cv2.LINE_AA)


def _anchors(img: np.ndarray) -> list[Anchor]:
    frame = Frame.from_array(img)
    return find_anchors(frame, flags_of(frame)[0])


def _toggles(cands: list[PixelCandidate]) -> list[PixelCandidate]:
    return [c for c in cands if c.kind in TOGGLE_KINDS]


# --- 1. toggle labels --------------------------------------------------------------------------


def test_large_text_the_screen_title_does_not_name_the_first_switch() -> None:
    """At the largest font size the screen's title comes within reach of the first row's
    switch, and the row's title sat a paragraph's line gap under it: the switch was named
    "Settings" (the title vanished from the prompt) and "Wi-Fi" stayed plain text. A taller
    line above is a heading, not the paragraph's line; the row's own title names the switch."""
    img = _screen()
    heading = _label(img, "Settings", 140, 220, scale=3.6)
    title = _label(img, "Wi-Fi", 60, 350, scale=2.4)
    summary = _label(img, "Tap to change", 60, 440, scale=2.2)
    _switch(img, 880, 370, scale=1.2)
    cands = build_candidates([heading, title, summary], _anchors(img))
    switches = _toggles(cands)
    assert [(c.kind, c.text) for c in switches] == [(PixelKind.SWITCH, "Wi-Fi")]
    texts = [c.text for c in cands if c.kind is PixelKind.TEXT]
    assert texts == ["Settings", "Tap to change"]


def test_two_titles_side_by_side_still_name_nothing() -> None:
    """The lowest title names a switch only when it stands alone on its row."""
    img = _screen()
    left = _label(img, "Wi-Fi", 60, 1020)
    right = _label(img, "Home", 500, 1020)
    _switch(img, 880, 1000)
    switches = _toggles(build_candidates([left, right], _anchors(img)))
    assert [(c.kind, c.text) for c in switches] == [(PixelKind.SWITCH, "")]


def _checkbox(img: np.ndarray, x: int, y: int) -> BoxPx:
    cv2.rectangle(img, (x, y), (x + 54, y + 54), (115, 115, 115), 6)
    return BoxPx(x, y, x + 54, y + 54)


def test_a_one_letter_first_word_after_a_checkbox_is_kept() -> None:
    """ "I accept the terms" was offered as "accept the terms": a one-letter first word was
    dropped as the letter OCR made of the checkbox whenever the line's padded box reached onto
    it. The word stands after the box, so it stays; a letter read off the box goes."""
    img = _screen()
    box = _checkbox(img, 60, 700)
    accept = _label(img, "I accept the terms", 140, 748, pad=28)
    assert accept.box_px.left < box.right  # OCR's padding reaches onto the checkbox
    _checkbox(img, 60, 900)
    # OCR read the second box's outline as "J" and the label after it as one line.
    cv2.putText(img, "I understand", (140, 948), FONT, 1.4, INK, 3, cv2.LINE_AA)
    misread = TextLine(text="J I understand", box_px=BoxPx(96, 900, 380, 956), confidence=0.9)
    checks = _toggles(build_candidates([accept, misread], _anchors(img)))
    assert [(c.kind, c.text) for c in checks] == [
        (PixelKind.CHECK, "I accept the terms"),
        (PixelKind.CHECK, "I understand"),
    ]


# --- 2. a bar's tabs in reading order ----------------------------------------------------------


def _bottom_bar(img: np.ndarray, labels: bool) -> list[TextLine]:
    """A bottom navigation bar over the system bar: four icons of slightly different ink heights
    (a house, a magnifier, a heart, a person), each over its caption when ``labels``."""
    height, width = img.shape[:2]
    top = height - 130 - 170
    cv2.rectangle(img, (0, top), (width, height - 130), (236, 236, 240), -1)
    cv2.line(img, (0, top), (width, top), (210, 210, 210), 2)
    cv2.rectangle(img, (0, height - 130), (width, height), (30, 30, 30), -1)  # system bar
    # Icon tops drawn 0-6 px apart, as vector icons' ink differs.
    drops = [2, 0, 6, 0]
    grey = (110, 110, 110)
    lines = []
    names = ["Home", "Search", "Likes", "Profile"]
    for k, (name, drop) in enumerate(zip(names, drops, strict=True)):
        cx = width * (2 * k + 1) // 8
        y = top + (30 if labels else 55) + drop
        cv2.rectangle(img, (cx - 30, y), (cx + 30, y + 64 - drop), grey, -1)
        if labels:
            lines.append(_label(img, name, cx - 45, top + 140 + drop // 2, scale=0.9, pad=2))
    return lines


def test_a_bars_tabs_come_left_to_right() -> None:
    """Tabs were offered by their own top edges: Search, Profile, Home, Likes (a few px apart
    in height). A bar's tabs read left to right, labelled or icon-only."""
    for labels in (True, False):
        img = _screen()
        lines = _bottom_bar(img, labels)
        frame = Frame.from_array(img)
        flags = flags_of(frame)[0]
        cands = build_candidates(
            lines,
            find_anchors(frame, flags),
            nav_bar=flags.nav_bar_box(frame.size),
            status_bar=flags.status_bar_box(frame.size),
        )
        tabs = [c for c in cands if c.kind is PixelKind.TAB]
        assert len(tabs) == 4, (labels, cands)
        assert [c.box_px.left for c in tabs] == sorted(c.box_px.left for c in tabs)
        if labels:
            assert [c.text for c in tabs] == ["Home", "Search", "Likes", "Profile"]
        assert cands[-4:] == tabs  # the bar is read last, after the screen above it


def test_reading_order_joins_only_tabs_into_rows() -> None:
    """Text lines keep the order of their tops (a list's rows, a title over its summary); tabs
    on one row read from the row's top, left to right."""
    from perception.pixel.merge import reading_order

    boxes = [
        BoxPx(600, 2072, 700, 2190),  # tab "Likes"
        BoxPx(100, 2068, 200, 2190),  # tab "Home"
        BoxPx(60, 300, 400, 350),  # a text line
        BoxPx(300, 2066, 400, 2190),  # tab "Search"
        BoxPx(500, 302, 900, 352),  # a text line beside it, 2 px lower
    ]
    tabs = [True, True, False, True, False]
    assert reading_order(boxes, tabs) == [2, 4, 1, 3, 0]


# --- 3. a letter in a round button -------------------------------------------------------------


def _game_hud() -> np.ndarray:
    """A landscape game: a textured field, a joystick ring, and red and blue action discs with
    "A" and "B" drawn in them (the reviewer's frame, in cv2)."""
    h, w = 1080, 2400
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack(
        [40 + 40 * np.cos(y / 150), 90 + 60 * np.sin(x / 200), 40 + 0 * x], axis=-1
    ).astype(np.uint8)
    cv2.circle(img, (270, h - 250), 150, (255, 255, 255), 6, cv2.LINE_AA)
    cv2.circle(img, (270, h - 250), 50, (200, 200, 200), -1, cv2.LINE_AA)
    cv2.circle(img, (w - 310, h - 210), 90, (50, 50, 220), -1, cv2.LINE_AA)
    cv2.circle(img, (w - 140, h - 380), 80, (220, 90, 50), -1, cv2.LINE_AA)
    return img


def _letter(img: np.ndarray, text: str, cx: int, cy: int, pad: int) -> TextLine:
    """Draw one letter centred on (cx, cy); OCR's box round it padded by ``pad``."""
    (tw, th), _ = cv2.getTextSize(text, FONT, 2.2, 6)
    cv2.putText(img, text, (cx - tw // 2, cy + th // 2), FONT, 2.2, WHITE, 6, cv2.LINE_AA)
    half_w, half_h = tw // 2 + pad, th // 2 + pad
    return TextLine(
        text=text, box_px=BoxPx(cx - half_w, cy - half_h, cx + half_w, cy + half_h), confidence=0.99
    )


def test_a_letter_in_a_round_button_is_that_button() -> None:
    """The game's "A" button was offered twice, an icon and an OCR line "A" at one centre (a
    tight box: the icon was not the line's), and "B" on the letter's box alone (a padded one:
    its disc was dropped as the line's). Each is now one button on its disc, named by its
    letter; the joystick stays an icon."""
    img = _game_hud()
    a = _letter(img, "A", 2090, 870, pad=2)
    b = _letter(img, "B", 2260, 700, pad=16)
    cands = build_candidates([a, b], _anchors(img))
    buttons = [(c.text, c.box_px.center) for c in cands if c.kind is PixelKind.BUTTON]
    assert sorted(t for t, _ in buttons) == ["A", "B"]
    for text, (cx, cy) in buttons:
        want = (2090, 870) if text == "A" else (2260, 700)
        assert abs(cx - want[0]) <= 4 and abs(cy - want[1]) <= 4
    big = {c.text: c.box_px for c in cands if c.kind is PixelKind.BUTTON}
    assert big["A"].width >= 170 and big["B"].width >= 150  # the discs, not the letters
    assert not [c for c in cands if c.kind is PixelKind.TEXT]
    # Nothing else at either centre: one target, one id.
    centres = [c.box_px.center for c in cands]
    assert sum(abs(x - 2090) <= 10 and abs(y - 870) <= 10 for x, y in centres) == 1
    icons = [c for c in cands if c.kind is PixelKind.ICON]
    assert any(abs(c.box_px.center[0] - 270) <= 6 for c in icons)  # the joystick


def test_a_letter_on_a_large_picture_stays_text() -> None:
    """A glyph on something far larger than a button (a photo, a banner) is a line of text."""
    img = _screen()
    cv2.rectangle(img, (100, 400), (980, 1200), (60, 120, 200), -1)
    x = _letter(img, "X", 540, 800, pad=4)
    cands = build_candidates([x], _anchors(img))
    assert [(c.kind, c.text) for c in cands if c.text] == [(PixelKind.TEXT, "X")]


# --- 4. a floating action button -----------------------------------------------------------------


def test_a_floating_action_buttons_sign_names_its_disc() -> None:
    """A floating action button was offered as OCR text "+" on the glyph's box, a third of the
    disc one taps (the disc, found as a filled picture, was dropped as the line's). It is now a
    button "+" on the disc."""
    img = _screen()
    cx, cy = 950, 1920
    cv2.circle(img, (cx, cy), 80, (198, 218, 3), -1, cv2.LINE_AA)
    cv2.line(img, (cx - 30, cy), (cx + 30, cy), (0, 0, 0), 8)
    cv2.line(img, (cx, cy - 30), (cx, cy + 30), (0, 0, 0), 8)
    plus = TextLine(text="+", box_px=BoxPx(cx - 41, cy - 43, cx + 42, cy + 46), confidence=1.0)
    cands = build_candidates([plus], _anchors(img))
    assert [(c.kind, c.text) for c in cands] == [(PixelKind.BUTTON, "+")]
    disc = cands[0].box_px
    assert disc.width >= 150 and disc.height >= 150
    assert abs(disc.center[0] - cx) <= 4 and abs(disc.center[1] - cy) <= 4
