"""Pixel-only tabs (session 20, audit audC defects 9 and 10): the selected tab of a row, a
toolbar's title and an ad banner's lines not taken for tabs, an icon and its caption one tab,
and a bottom navigation bar's items tabs whether or not its bar was found.

Real corpus screens (skipped without the corpus), and drawn frames where a rule's edge is
clearer so: their OCR lines are given as boxes around the drawn text, no OCR model needed.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from perception.fusion.candidates import pixel_flags
from perception.pixel import PixelKind, PixelReader
from perception.pixel.merge import PixelCandidate, selected_tabs
from perception.types import BoxPx, ElementFlag

FONT = cv2.FONT_HERSHEY_SIMPLEX
WHITE = (250, 250, 250)
GREY = (150, 150, 150)
DARK = (40, 40, 40)
ORANGE = (0, 140, 250)


def _frame_bytes(corpus_dir: Path, sample: str) -> bytes:
    return next((corpus_dir / sample).glob("screen.*[gG]")).read_bytes()


# --- 1. the selected tab ----------------------------------------------------------------------


def _tab_row(
    words: list[str],
    inks: list[tuple[int, int, int]],
    *,
    underline: int | None = None,
    divider: bool = False,
    fills: list[tuple[int, int, int]] | None = None,
) -> tuple[np.ndarray, list[PixelCandidate]]:
    """A row of text tabs across a 1080 px toolbar: each word in its ink (on its fill, when
    given: a chip), the ``underline``-th one with an indicator line under it, and a divider
    under the whole bar when ``divider``."""
    img = np.full((600, 1080, 3), WHITE, np.uint8)
    cands = []
    width = 1080 // len(words)
    for k, (word, ink) in enumerate(zip(words, inks, strict=True)):
        (tw, th), base = cv2.getTextSize(word, FONT, 1.4, 3)
        x = k * width + (width - tw) // 2
        box = BoxPx(x - 6, 200 - th - 8, x + tw + 6, 200 + base + 8)
        if fills is not None:
            cv2.rectangle(img, (box.left, box.top), (box.right, box.bottom), fills[k], -1)
        cv2.putText(img, word, (x, 200), FONT, 1.4, ink, 3, cv2.LINE_AA)
        if underline == k:
            cv2.rectangle(img, (x, box.bottom + 4), (x + tw, box.bottom + 10), ORANGE, -1)
        cands.append(PixelCandidate(text=word, kind=PixelKind.TAB, box_px=box, confidence=0.9))
    if divider:
        cv2.line(img, (0, 250), (1080, 250), (200, 200, 200), 2)
    return img, cands


def _selected(cands: list[PixelCandidate]) -> list[str]:
    return [c.text for c in cands if c.selected]


def test_the_one_underlined_tab_is_selected() -> None:
    """Weibo's "Following" (an orange line under the word) beside an orange "Login" and a grey
    "Hot": the inks all differ, so only the line tells, and a divider under the whole bar does
    not count."""
    img, cands = _tab_row(
        ["Login", "Following", "Hot"], [ORANGE, DARK, GREY], underline=1, divider=True
    )
    assert _selected(selected_tabs(cands, img)) == ["Following"]


def test_the_one_tab_in_another_ink_is_selected() -> None:
    """Yelp's red "Nearby" among grey captions, Habitica's white "Habits" among lilac ones."""
    img, cands = _tab_row(["Nearby", "Search", "Me", "Activity"], [(40, 40, 210)] + [GREY] * 3)
    assert _selected(selected_tabs(cands, img)) == ["Nearby"]


def test_the_one_filled_chip_is_selected() -> None:
    """A chip row whose selected chip has a filled pill behind it (Maps' "Explore")."""
    fills = [WHITE, (230, 200, 160), WHITE, WHITE]
    img, cands = _tab_row(["Food", "Explore", "Saved", "Go"], [DARK] * 4, fills=fills)
    assert _selected(selected_tabs(cands, img)) == ["Explore"]


@pytest.mark.parametrize(
    ("inks", "underline"),
    [
        ([DARK, DARK, DARK], None),  # all alike: nothing tells
        ([(40, 40, 210), (200, 120, 0), GREY], None),  # all differ: no one stands apart
        ([(40, 40, 210), DARK, DARK], 1),  # a red tab and an underlined one: two stand apart
        ([DARK, (60, 60, 60), (75, 75, 75)], None),  # a title a shade lighter is no selection
    ],
)
def test_no_tab_is_selected_unless_exactly_one_stands_apart(
    inks: list[tuple[int, int, int]], underline: int | None
) -> None:
    img, cands = _tab_row(["Chats", "Calls", "Status"], inks, underline=underline)
    assert _selected(selected_tabs(cands, img)) == []


def test_a_pixel_tab_selected_is_flagged_selected() -> None:
    img, cands = _tab_row(["Login", "Following", "Hot"], [ORANGE, DARK, GREY], underline=1)
    flags = [pixel_flags("tab", c, ElementFlag.NONE) for c in selected_tabs(cands, img)]
    assert [bool(f & ElementFlag.SELECTED) for f in flags] == [False, True, False]


@pytest.mark.parametrize(
    ("sample", "selected"),
    [
        ("droidbot_yelp/yelp_2017/step_012", "Nearby"),  # the tree agrees (selected="true")
        ("droidbot_yelp/yelp_2017/step_007", "Me"),
        ("fdroidutg_weibo/weibo_2023-10-24/step_015", "Following"),  # the underline
        ("fdroidutg_weibo/weibo_2023-10-24/step_041", "Hot"),
        ("fdroidutg_apps/com.lolo.io.onelist/step_004", "TODO"),  # the red chip
        ("droidbot_habitica/habitica_2020-08-29/step_001", "Habits"),  # the white caption
    ],
)
def test_the_selected_tab_of_a_corpus_screen(
    corpus_dir: Path, reader: PixelReader, sample: str, selected: str
) -> None:
    pixels = reader.read(_frame_bytes(corpus_dir, sample))
    assert [c.text for c in pixels.candidates if c.selected] == [selected]


@pytest.mark.parametrize(
    "sample",
    [
        # A browser's toolbar of icons (back, forward, menu, home, the tab count).
        "droidbot_admob_apps/com.heaven.assistant/step_002",
        # A web view's header: Back, Close and the page title a shade lighter.
        "fdroidutg_weibo/weibo_2023-10-24/step_034",
        # "Chat", a wide blue "+ Follow" pill and "Recommend" under a post.
        "fdroidutg_weibo/weibo_2023-10-24/step_010",
    ],
)
def test_no_tab_is_selected_on_a_corpus_screen(
    corpus_dir: Path, reader: PixelReader, sample: str
) -> None:
    pixels = reader.read(_frame_bytes(corpus_dir, sample))
    assert [c.text for c in pixels.candidates if c.selected] == []


# --- 2.-5. what is a tab ----------------------------------------------------------------------


def test_a_toolbar_title_and_two_text_actions_are_no_tabs(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """AJShA's toolbar: its title "AJShA Android Java Sh…" beside SAVE and LOAD made the three
    lines a toolbar needs to hold tabs."""
    pixels = reader.read(_frame_bytes(corpus_dir, "fdroidutg_apps/org.ligi.ajsha/step_004"))
    top = [c for c in pixels.candidates if c.box_px.bottom < 250]
    assert {"SAVE", "LOAD"} <= {c.text for c in top}
    assert [c.text for c in top if c.kind is PixelKind.TAB] == []


def test_an_ad_banners_title_over_its_url_is_no_tab_row(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """Eye exam's bottom ad banner: its title over its URL were offered as two tabs."""
    sample = "droidbot_admob_apps/andrei.brusentcov.eyecheck.free/step_011"
    pixels = reader.read(_frame_bytes(corpus_dir, sample))
    banner = [c for c in pixels.candidates if c.box_px.top > 1080]
    assert any("Hypnosis" in c.text for c in banner)
    assert [c.text for c in pixels.candidates if c.kind is PixelKind.TAB] == []


def test_an_icon_read_as_a_sign_over_its_caption_is_one_tab(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """Yelp's bookmark icon, read by OCR as "★", was a tab of its own on top of "Bookmarks"."""
    pixels = reader.read(_frame_bytes(corpus_dir, "droidbot_yelp/yelp_2017/step_012"))
    tabs = [c.text for c in pixels.candidates if c.kind is PixelKind.TAB]
    assert tabs == ["Nearby", "Search", "Me", "Activity", "Bookmarks"]


@pytest.mark.parametrize(
    ("sample", "names"),
    [
        # A white bar on a white page: no bar was found, and the items were buttons.
        (
            "fdroidutg_weibo/weibo_2023-10-24/step_015",
            ["HOME", "Super Group", "Discover", "Message", "Me"],
        ),
        # A badge ("8") on "Me" stands beside the row, not below it.
        (
            "fdroidutg_weibo/weibo_2023-10-24/step_038",
            ["HOME", "Super Group", "Discover", "Message", "Me"],
        ),
        ("droidbotexp_qqmusic/qqmusic_2021-11-23/step_004", ["首页", "视频", "扑通", "我的"]),
    ],
)
def test_a_bottom_row_of_captioned_icons_is_tabs(
    corpus_dir: Path, reader: PixelReader, sample: str, names: list[str]
) -> None:
    pixels = reader.read(_frame_bytes(corpus_dir, sample))
    kinds = {c.text: c.kind for c in pixels.candidates if c.text in names}
    assert kinds == dict.fromkeys(names, PixelKind.TAB)


def test_a_share_sheets_last_row_stays_buttons(corpus_dir: Path, reader: PixelReader) -> None:
    """QQ Music's share sheet: rows of icon-and-caption items with the sheet's cancel below."""
    sample = "droidbotexp_qqmusic/qqmusic_2021-12-06/step_005"
    pixels = reader.read(_frame_bytes(corpus_dir, sample))
    row = [c for c in pixels.candidates if c.text in ("新浪微博", "私信", "复制链接")]
    assert len(row) == 3
    assert {c.kind for c in row} == {PixelKind.BUTTON}
