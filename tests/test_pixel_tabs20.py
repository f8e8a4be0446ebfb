"""Pixel-only tabs (session 20, audit audC defect 10): a toolbar's title and an ad banner's
lines not taken for tabs, an icon and its caption one tab, and a bottom navigation bar's items
tabs whether or not its bar was found. Real corpus screens (skipped without the corpus).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perception.pixel import PixelKind, PixelReader


def _frame_bytes(corpus_dir: Path, sample: str) -> bytes:
    return next((corpus_dir / sample).glob("screen.*[gG]")).read_bytes()


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
