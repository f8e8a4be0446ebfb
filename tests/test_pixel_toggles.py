"""Switches, checkboxes and radio buttons in the pixels, with their state (on / off / unknown).

Real corpus screens (read by path, never copied) for the controls apps draw, and synthetic
frames drawn with cv2 for what must not be taken for one: a pill-shaped button with text in it,
a progress bar, an avatar. The OCR lines of the synthetic frames are given as boxes, so no OCR
model is needed.
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from perception.fusion.candidates import merge
from perception.fusion.crossval import match_text_blocks
from perception.pixel import (
    Frame,
    PixelKind,
    TextLine,
    build_candidates,
    find_anchors,
    frame_flags as flags_of,
)
from perception.pixel.anchors import TOGGLE_KINDS, Anchor
from perception.pixel.frame import decode_frame
from perception.pixel.merge import PixelCandidate
from perception.tree.compress import flag_words
from perception.types import BoxPx, ElementFlag, ScreenSize

FONT = cv2.FONT_HERSHEY_SIMPLEX
WHITE = (250, 250, 250)
TEAL = (136, 150, 0)  # BGR of Material's teal accent
LIGHT_TEAL = (196, 204, 128)
GREY_TRACK = (185, 185, 185)
OFF_THUMB = (236, 236, 236)


def _toggles(img: np.ndarray) -> list[Anchor]:
    frame = Frame.from_array(img)
    return [a for a in find_anchors(frame, flags_of(frame)[0]) if a.kind in TOGGLE_KINDS]


def _screen() -> np.ndarray:
    return np.full((2340, 1080, 3), WHITE, np.uint8)


def _switch(img: np.ndarray, x: int, y: int, *, right: bool, thumb: tuple, track: tuple) -> None:
    """AppCompat's switch at 3x: a 34x14 dp track, a 20 dp thumb over one end (with a shadow)."""
    cv2.rectangle(img, (x + 21, y - 21), (x + 81, y + 21), track, -1)
    cv2.circle(img, (x + 21, y), 21, track, -1, cv2.LINE_AA)
    cv2.circle(img, (x + 81, y), 21, track, -1, cv2.LINE_AA)
    cx = x + 81 if right else x + 21
    cv2.circle(img, (cx, y + 3), 30, (200, 200, 200), -1, cv2.LINE_AA)  # the shadow
    cv2.circle(img, (cx, y), 30, thumb, -1, cv2.LINE_AA)


def _label(img: np.ndarray, text: str, x: int, baseline: int) -> TextLine:
    (tw, th), base = cv2.getTextSize(text, FONT, 1.4, 3)
    cv2.putText(img, text, (x, baseline), FONT, 1.4, (40, 40, 40), 3, cv2.LINE_AA)
    return TextLine(
        text=text, box_px=BoxPx(x - 4, baseline - th - 6, x + tw + 4, baseline + base + 6),
        confidence=0.97,
    )


# --- synthetic frames ------------------------------------------------------------------------


def test_a_switch_says_its_state_by_thumb_side_and_colour() -> None:
    img = _screen()
    _switch(img, 900, 400, right=False, thumb=OFF_THUMB, track=GREY_TRACK)
    _switch(img, 900, 700, right=True, thumb=TEAL, track=LIGHT_TEAL)
    # Thumb at the right but grey: a right-to-left layout's off, or a monochrome theme's on.
    _switch(img, 900, 1000, right=True, thumb=OFF_THUMB, track=GREY_TRACK)
    found = sorted(_toggles(img), key=lambda a: a.box_px.top)
    assert [(a.kind, a.checked) for a in found] == [
        (PixelKind.SWITCH, False),
        (PixelKind.SWITCH, True),
        (PixelKind.SWITCH, None),
    ]


def test_checkboxes_and_radios_on_and_off() -> None:
    img = _screen()
    # Checkboxes: 18 dp, a 2 dp outline (off), filled with a white tick (on).
    cv2.rectangle(img, (100, 400), (154, 454), (115, 115, 115), 6)
    cv2.rectangle(img, (100, 700), (154, 754), TEAL, -1)
    tick = np.array([[110, 728], [122, 740], [145, 712]], np.int32)
    cv2.polylines(img, [tick], False, (255, 255, 255), 6, cv2.LINE_AA)
    # Radios: a 20 dp ring, with a 10 dp dot when on.
    cv2.circle(img, (128, 1000), 28, (115, 115, 115), 6, cv2.LINE_AA)
    cv2.circle(img, (128, 1300), 28, TEAL, 6, cv2.LINE_AA)
    cv2.circle(img, (128, 1300), 14, TEAL, -1, cv2.LINE_AA)
    found = sorted(_toggles(img), key=lambda a: a.box_px.top)
    assert [(a.kind, a.checked) for a in found] == [
        (PixelKind.CHECK, False),
        (PixelKind.CHECK, True),
        (PixelKind.RADIO, False),
        (PixelKind.RADIO, True),
    ]


def test_pills_bars_avatars_and_icons_are_no_toggles() -> None:
    img = _screen()
    # A pill-shaped button with text in it ("+ Follow"), outlined and filled.
    cv2.rectangle(img, (600, 380), (760, 440), (60, 60, 230), 3)
    cv2.circle(img, (600, 410), 30, (60, 60, 230), 3)
    cv2.circle(img, (760, 410), 30, (60, 60, 230), 3)
    cv2.putText(img, "+ Follow", (585, 422), FONT, 1.0, (60, 60, 230), 2, cv2.LINE_AA)
    cv2.rectangle(img, (600, 580), (760, 640), TEAL, -1)
    cv2.circle(img, (600, 610), 30, TEAL, -1)
    cv2.circle(img, (760, 610), 30, TEAL, -1)
    cv2.putText(img, "Join", (640, 622), FONT, 1.0, (255, 255, 255), 2, cv2.LINE_AA)
    # A progress bar and a seek bar with its knob.
    cv2.rectangle(img, (100, 800), (980, 812), GREY_TRACK, -1)
    cv2.rectangle(img, (100, 800), (500, 812), TEAL, -1)
    cv2.rectangle(img, (100, 1000), (980, 1010), GREY_TRACK, -1)
    cv2.circle(img, (300, 1005), 24, TEAL, -1, cv2.LINE_AA)
    # A short bar with a knob, switch-sized: a volume slider is long, this one is not, but the
    # knob is not a thumb over a track's end.
    cv2.rectangle(img, (560, 1200), (720, 1212), GREY_TRACK, -1)
    cv2.circle(img, (640, 1206), 24, TEAL, -1, cv2.LINE_AA)
    # Avatars: a filled disc with a face drawn on it, a photo-like textured disc.
    cv2.circle(img, (150, 1400), 50, (90, 140, 200), -1, cv2.LINE_AA)
    cv2.circle(img, (133, 1388), 7, (30, 30, 30), -1)
    cv2.circle(img, (167, 1388), 7, (30, 30, 30), -1)
    cv2.ellipse(img, (150, 1412), (20, 10), 0, 0, 180, (30, 30, 30), 3)
    rng = np.random.default_rng(7)
    disc = np.zeros((2340, 1080), np.uint8)
    cv2.circle(disc, (150, 1700), 30, 255, -1)
    noise = rng.integers(0, 255, (2340, 1080, 3), dtype=np.uint8)
    img[disc > 0] = noise[disc > 0]
    # Icons: a clock (a ring with hands), an info sign, a close sign in a ring.
    cv2.circle(img, (600, 1700), 28, (90, 90, 90), 5, cv2.LINE_AA)
    cv2.line(img, (600, 1700), (600, 1682), (90, 90, 90), 5)
    cv2.line(img, (600, 1700), (614, 1700), (90, 90, 90), 5)
    cv2.circle(img, (800, 1700), 28, (90, 90, 90), 5, cv2.LINE_AA)
    cv2.line(img, (788, 1688), (812, 1712), (90, 90, 90), 5)
    cv2.line(img, (812, 1688), (788, 1712), (90, 90, 90), 5)
    # A rounded-square app icon with a glyph in it.
    cv2.rectangle(img, (100, 1900), (160, 1960), (200, 120, 30), -1)
    cv2.putText(img, "C", (112, 1948), FONT, 1.5, (255, 255, 255), 4, cv2.LINE_AA)
    assert _toggles(img) == []


def test_an_outlined_square_in_a_toolbar_is_an_icon() -> None:
    img = _screen()
    img[:168] = (96, 200, 60)
    cv2.rectangle(img, (730, 54), (790, 114), (255, 255, 255), 6)
    assert _toggles(img) == []


def test_a_toggle_takes_its_row_title_or_its_own_text_and_is_one_candidate() -> None:
    img = _screen()
    title = _label(img, "Dark theme", 60, 420)
    summary = _label(img, "Easier on the eyes at night", 60, 480)
    _switch(img, 900, 420, right=True, thumb=TEAL, track=LIGHT_TEAL)
    cv2.rectangle(img, (60, 700), (114, 754), (115, 115, 115), 6)
    own = _label(img, "Remember me", 150, 748)
    # Two columns of text on one row: which one names the switch is not the pixels' to say.
    left = _label(img, "Wi-Fi", 60, 1020)
    right = _label(img, "Home", 500, 1020)
    _switch(img, 900, 1000, right=False, thumb=OFF_THUMB, track=GREY_TRACK)
    frame = Frame.from_array(img)
    anchors = find_anchors(frame, flags_of(frame)[0])
    cands = build_candidates([title, summary, own, left, right], anchors)
    toggles = [c for c in cands if c.kind in TOGGLE_KINDS]
    assert [(c.kind, c.text, c.checked) for c in toggles] == [
        (PixelKind.SWITCH, "Dark theme", True),
        (PixelKind.CHECK, "Remember me", False),
        (PixelKind.SWITCH, "", False),
    ]
    # The row's title names the switch on the switch's own box; a checkbox's own text makes
    # one box with it (the widget's, where a tap on the text toggles it).
    assert toggles[0].box_px.left >= 870 and toggles[1].box_px.right == own.box_px.right
    texts = sorted(c.text for c in cands if c.kind is PixelKind.TEXT)
    assert texts == ["Easier on the eyes at night", "Home", "Wi-Fi"]
    # One candidate per target: nothing else on a toggle.
    assert not [c for c in cands if c.kind is PixelKind.ICON]


# --- fusion ----------------------------------------------------------------------------------


def test_fusion_flags_pixel_toggles_as_the_tree_flags_its_own() -> None:
    on = PixelCandidate(
        text="Dark theme", kind=PixelKind.SWITCH, box_px=BoxPx(900, 380, 1020, 460),
        confidence=0.97, checked=True,
    )
    off = PixelCandidate(
        text="", kind=PixelKind.CHECK, box_px=BoxPx(60, 700, 114, 754), confidence=0.7,
        checked=False,
    )
    unknown = PixelCandidate(
        text="", kind=PixelKind.SWITCH, box_px=BoxPx(900, 980, 1020, 1040), confidence=0.7,
    )


    check = match_text_blocks([], [on])
    drafts = merge(
        elements=[], tree_confidence=0.0, text_blocks=[on], crosscheck=check,
        anchors=[off, unknown], screen=ScreenSize(1080, 2340),
    )
    by_kind = {(d.kind, d.text): d.flags for d in drafts}
    checkable = ElementFlag.CHECKABLE | ElementFlag.CLICKABLE
    assert by_kind[("switch", "Dark theme")] == checkable | ElementFlag.CHECKED
    assert by_kind[("check", "")] == checkable
    assert by_kind[("switch", "")] == checkable
    assert flag_words(int(by_kind[("switch", "Dark theme")])) == "on"


# --- real screens ----------------------------------------------------------------------------


def _corpus_toggles(corpus_dir: Path, path: str) -> list[tuple[str, int, bool | None]]:
    folder = corpus_dir / path
    shot = next(p for p in folder.iterdir() if p.stem == "screen" and p.suffix != ".xml")
    frame = decode_frame(shot.read_bytes())
    found = sorted(_toggles(frame.pixels), key=lambda a: (a.box_px.top, a.box_px.left))
    return [(a.kind.value, a.box_px.center.y, a.checked) for a in found]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        # Notification access: AppCompat switches, off / on / off (the tree says the same).
        (
            "fdroidutg_apps/ch.abertschi.adfree/step_001",
            [("switch", 351, False), ("switch", 569, True), ("switch", 787, False)],
        ),
        # Material switches off, a white thumb on white drawn by its shadow (Google's settings).
        (
            "llamatouch/trace_7/step_007",
            [("switch", 447, False), ("switch", 639, False)],
        ),
        # A switch on in a coloured toolbar: white thumb on a light track.
        ("fdroidutg_apps/tw.qtlin.mac.airunlocker/step_004", [("switch", 325, True)]),
        # Preference checkboxes on a dark theme (JPEG), off / on / off.
        (
            "fdroidutg_apps/io.github.phora.aeondroid/step_006",
            [("check", 496, False), ("check", 972, True), ("check", 1600, False)],
        ),
        # A permission dialog's single-choice list: radios off / off / on.
        (
            "fdroidutg_apps/info.staticfree.android.twentyfourhour/step_001",
            [("radio", 875, False), ("radio", 1018, False), ("radio", 1163, True)],
        ),
    ],
)
def test_real_toggles_and_their_state(
    corpus_dir: Path, path: str, expected: list[tuple[str, int, bool]]
) -> None:
    got = _corpus_toggles(corpus_dir, path)
    assert [(k, c) for k, _, c in got] == [(k, c) for k, _, c in expected]
    assert all(abs(y - want) <= 8 for (_, y, _), (_, want, _) in zip(got, expected, strict=True))


@pytest.mark.parametrize(
    "path",
    [
        "adb_oneoffs/unicom_home",  # an (i) beside a date
        "droidbot_admob_apps/com.heaven.assistant/step_001",  # a close (x) in a ring
        "droidbot_admob_apps/com.heaven.assistant/step_002",  # app icons with a glyph
        "droidbotexp_qqmusic/qqmusic_2021-12-06/step_005",  # a "+关注" pill
        "fdroidutg_weibo/weibo_2023-10-24/step_039",  # badges beside names
        "droidbot_yelp/yelp_2017/step_004",
    ],
)
def test_screens_without_toggles_show_none(corpus_dir: Path, path: str) -> None:
    assert _corpus_toggles(corpus_dir, path) == []


def test_a_settings_screen_read_whole(corpus_dir: Path) -> None:
    """Notification access, OCR and all: each switch named by its row's title (not by the
    summary under it), with the state the tree gives, and the title is no text line of its own."""
    from perception.pixel import PixelReader

    shot = corpus_dir / "fdroidutg_apps/ch.abertschi.adfree/step_001/screen.jpg"
    pixels = PixelReader().read(shot.read_bytes())
    switches = [c for c in pixels.candidates if c.kind is PixelKind.SWITCH]
    assert [(c.text, c.checked) for c in switches] == [
        ("ad-free", False),
        ("Quickstep", True),
        ("Scene4", False),
    ]
    texts = {c.text for c in pixels.candidates if c.kind is PixelKind.TEXT}
    assert "Quickstep" not in texts and "Show notification dots" in texts


def test_perception_pixels_prints_a_toggles_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``perception pixels --no-ocr --anchors`` says which switch is on and which is off."""
    from perception.cli.main import main

    img = _screen()
    _switch(img, 900, 400, right=False, thumb=OFF_THUMB, track=GREY_TRACK)
    _switch(img, 900, 700, right=True, thumb=TEAL, track=LIGHT_TEAL)
    shot = tmp_path / "switches.png"
    cv2.imwrite(str(shot), img)
    assert main(["pixels", str(shot), "--no-ocr", "--anchors"]) == 0
    doc = json.loads(capsys.readouterr().out)
    states = sorted((c["box_px"][1], c["kind"], c["checked"]) for c in doc["candidates"]
                    if "checked" in c)
    assert [(k, on) for _, k, on in states] == [("switch", False), ("switch", True)]
    assert sum("checked" in a for a in doc["anchors"]) == 2
    assert all("checked" not in c for c in doc["candidates"] if c["kind"] not in TOGGLE_KINDS)
