"""The system bars offer nothing to tap: no clock, battery or notification text from the status
bar and no back / home / recents from the navigation bar, also where the luma profile misses
them (a status bar in the toolbar's colour, a frame padded below the screen). A notification
shade is the exception: its clock is a button. Real corpus screens, read by path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perception.pixel import PixelReader, decode_frame, frame_flags
from perception.types import BoxPx, PointPx


def _shot(corpus_dir: Path, sample: str) -> Path:
    return next(
        p for p in (corpus_dir / sample).iterdir()
        if p.stem == "screen" and p.suffix in (".png", ".jpg")
    )


@pytest.mark.parametrize(
    ("sample", "status_bottom_px"),
    [
        # The status bar in the toolbar's colour: only the clock tells it.
        ("droidbotexp_qqmusic/qqmusic_2021-11-23/step_003", 100),
        ("droidbotexp_qqmusic/qqmusic_2021-11-23/step_010", 100),
        ("adb_oneoffs/unicom_home", 100),
        ("testcube_transsion/chatter_2025-01-25/step_003", 70),
    ],
)
def test_status_bar_text_is_not_a_candidate(
    corpus_dir: Path, reader: PixelReader, sample: str, status_bottom_px: int
) -> None:
    pixels = reader.read(_shot(corpus_dir, sample).read_bytes())
    assert pixels.flags.status_bar_px == 0  # the profile misses it: the clock places it
    leaked = [c for c in pixels.candidates if c.box_px.center.y < status_bottom_px]
    assert leaked == []


def test_a_bar_that_ends_above_the_clock_is_not_the_status_bar(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """QQ Music's web page loading: an 8 px progress line across the top, the status bar in the
    toolbar's colour under it. The luma profile ended at the line; the clock and three status
    icons were offered (and the page's "正在加载中" not read)."""
    sample = "_desync/droidbotexp_qqmusic__qqmusic_2021-11-23__step_038"
    pixels = reader.read(_shot(corpus_dir, sample).read_bytes())
    assert 0 < pixels.flags.status_bar_px < 20  # the profile's reading: the line
    assert [c for c in pixels.candidates if c.box_px.center.y < 100] == []
    assert "正在加载中" in {c.text for c in pixels.candidates}


def test_unicom_navigation_bar_text_is_not_a_tab(corpus_dir: Path, reader: PixelReader) -> None:
    # The recents button's ≡ read as "三": a glyph on a system bar is not a tab either.
    pixels = reader.read(_shot(corpus_dir, "adb_oneoffs/unicom_home").read_bytes())
    nav = pixels.flags.nav_bar_box(pixels.size)
    assert nav is not None
    assert [c for c in pixels.candidates if nav.contains(c.box_px.center)] == []
    # The app's own bottom navigation, right above it, stays.
    assert {"首页", "服务", "权益", "我的"} <= {c.text for c in pixels.candidates}


@pytest.mark.parametrize(
    "sample", ["fdroidutg_apps/ir.hsn6.tpb/step_004", "fdroidutg_weibo/weibo_2023-10-24/step_006"]
)
def test_a_notification_shade_keeps_its_clock(
    corpus_dir: Path, reader: PixelReader, sample: str
) -> None:
    """In the shade the clock is a button (SystemUI's clickable clock): kept."""
    pixels = reader.read(_shot(corpus_dir, sample).read_bytes())
    clocks = [c for c in pixels.candidates if c.box_px.bottom < 120 and ":" in c.text]
    assert len(clocks) == 1


# The 1080x1920 screens of the fdroid recordings sit in 1080x2340 frames, black below 1920;
# the navigation bar (light, or black down to its buttons) lies right above the padding.
PADDED = [
    "fdroidutg_apps/tw.qtlin.mac.airunlocker/step_002",  # light bar
    "fdroidutg_apps/ir.hsn6.tpb/step_003",  # black bar: the padding starts under its buttons
    "fdroidutg_apps/anupam.acrylic/step_000",  # the launcher
    "fdroidutg_weibo/weibo_2023-10-24/step_016",
]
NAV_BUTTONS = [PointPx(268, 1848), PointPx(540, 1848), PointPx(810, 1848)]


@pytest.mark.parametrize("sample", PADDED)
def test_navigation_bar_above_black_padding_is_found(corpus_dir: Path, sample: str) -> None:
    frame = decode_frame(_shot(corpus_dir, sample).read_bytes())
    flags, _ = frame_flags(frame)
    nav = flags.nav_bar_box(frame.size)
    assert nav is not None and flags.nav_bar_side == "bottom"
    assert all(nav.contains(p) for p in NAV_BUTTONS)
    assert nav.top >= 1760  # the app's own content above it is not cut off


@pytest.mark.parametrize("sample", PADDED[:2])
def test_back_home_recents_are_not_candidates_above_padding(
    corpus_dir: Path, reader: PixelReader, sample: str
) -> None:
    pixels = reader.read(_shot(corpus_dir, sample).read_bytes())
    buttons = [c for c in pixels.candidates if any(c.box_px.contains(p) for p in NAV_BUTTONS)]
    assert buttons == []


@pytest.mark.parametrize(
    "sample",
    [
        # A video over a black lower half: its controls row is no navigation bar.
        "fdroidutg_weibo/weibo_2023-10-24/step_026",
        # A game whose lower sixth is black, with no navigation bar at all.
        "droidbot_admob_apps/com.HomeCleaningGames/step_000",
    ],
)
def test_black_below_content_is_not_taken_for_padding(corpus_dir: Path, sample: str) -> None:
    frame = decode_frame(_shot(corpus_dir, sample).read_bytes())
    flags, _ = frame_flags(frame)
    assert flags.nav_bar_box(frame.size) is None


def test_a_frame_without_padding_keeps_its_navigation_bar(corpus_dir: Path) -> None:
    frame = decode_frame(_shot(corpus_dir, "droidbot_yelp/yelp_2017/step_004").read_bytes())
    flags, _ = frame_flags(frame)
    assert flags.nav_bar_box(frame.size) == BoxPx(0, 2560 - 168, 1440, 2560)
