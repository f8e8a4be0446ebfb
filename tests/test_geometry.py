"""The one unit converter."""

from __future__ import annotations

from hypothesis import given, strategies as st

from perception.geometry import (
    box_pm_text,
    box_px_to_pm,
    clip_box,
    place_texts,
    point_norm_to_px,
    point_pm_to_px,
    point_px_to_pm,
    point_scaled_to_px,
    rotate_size,
)
from perception.types import BoxPm, BoxPx, PointPm, PointPx, ScreenSize

SCREEN = ScreenSize(1080, 2400)


def test_box_to_grid() -> None:
    assert box_px_to_pm(BoxPx(0, 0, 1080, 2400), SCREEN) == BoxPm(0, 0, 1000, 1000)
    assert box_px_to_pm(BoxPx(540, 1200, 541, 1201), SCREEN) == BoxPm(500, 500, 501, 500)
    assert box_px_to_pm(BoxPx(-10, -10, 5000, 5000), SCREEN) == BoxPm(0, 0, 1000, 1000)


_SIDE = st.integers(-50, 3000)


@given(
    st.lists(st.tuples(_SIDE, _SIDE, _SIDE, _SIDE), max_size=6),
    st.sampled_from([SCREEN, ScreenSize(720, 1608), ScreenSize(1, 1), ScreenSize(0, 2400)]),
)
def test_prompt_box_strings_round_as_box_px_to_pm(boxes: list, screen: ScreenSize) -> None:
    """The prompt's fast path (a list at a time) writes what the one converter gives, on the
    screen and off it (clamped)."""
    px = [BoxPx(*b) for b in boxes]
    texts = place_texts(px, screen, [True] * len(px))
    assert texts == [box_pm_text(box_px_to_pm(b, screen)) for b in px]
    if screen.width_px > 0:
        # A centre is where the executor taps (the centre of the box clipped to the screen).
        centres = place_texts(px, screen, [False] * len(px))
        tapped = [point_px_to_pm(clip_box(b, screen.box_px).center, screen) for b in px]
        assert centres == ["%d %d" % p for p in tapped]  # noqa: UP031


def test_grid_to_pixel_is_clamped_inside_the_screen() -> None:
    assert point_pm_to_px(PointPm(1000, 1000), SCREEN) == PointPx(1079, 2399)
    assert point_pm_to_px(PointPm(-5, 2000), SCREEN) == PointPx(0, 2399)
    assert point_norm_to_px(1.0, 0.5, SCREEN) == PointPx(1079, 1200)


@given(st.integers(0, 1079), st.integers(0, 2399))
def test_round_trip_stays_within_one_grid_cell(x: int, y: int) -> None:
    back = point_pm_to_px(point_px_to_pm(PointPx(x, y), SCREEN), SCREEN)
    assert abs(back.x - x) <= 2 and abs(back.y - y) <= 3


def test_scaled_click_space() -> None:
    # LlamaTouch records clicks in a 320x720 space
    assert point_scaled_to_px(160, 360, ScreenSize(320, 720), SCREEN) == PointPx(540, 1200)


def test_clip_and_rotate() -> None:
    assert clip_box(BoxPx(-5, 10, 2000, 20), SCREEN.box_px) == BoxPx(0, 10, 1080, 20)
    assert clip_box(BoxPx(2000, 10, 2100, 20), SCREEN.box_px).area == 0
    assert rotate_size(SCREEN, 1) == ScreenSize(2400, 1080)
