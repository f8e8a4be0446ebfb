"""The on-screen keyboard the dump does not hold (most dumps hold the app's window alone): the
phone's window manager reports where it is (`dumpsys window displays`: the input method's
insets), and the tree and the observation treat that box as they treat a keyboard window."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _xml import dump, node
from test_tree_keyboard import APP, LINES, app_window, assert_reads_no_keys, frame_of

from perception import InputError, perceive, read_tree
from perception.sources.device import (
    insets_sources,
    parse_dumpsys_window,
    parse_keyboard,
    parse_keyboard_window,
    says_keyboard,
)
from perception.types import BoxPx

KEYBOARD = BoxPx(0, 1650, 1080, 2400)

# What phones print, one line each (leading spaces as in `dumpsys window displays`).
ANDROID_11 = (
    "      InsetsSource type=ITYPE_STATUS_BAR frame=[0,0][1080,66] visible=true\n"
    "      InsetsSource type=ITYPE_IME frame=[0,1398][1080,2220] visible=true\n"
)
ANDROID_13 = (
    "        InsetsSource type=ITYPE_STATUS_BAR frame=[0,0][1080,66] visible=true "
    "insetsRoundedCornerFrame=false\n"
    "        InsetsSource type=ITYPE_NAVIGATION_BAR frame=[0,2088][1080,2220] visible=true "
    "insetsRoundedCornerFrame=false\n"
    "        InsetsSource type=ITYPE_IME frame=[0,1398][1080,2220] "
    "visibleFrame=[0,1398][1080,2220] visible=true insetsRoundedCornerFrame=false\n"
)
ANDROID_14 = (
    "    InsetsSource id=ab460000 type=statusBars frame=[0,0][1080,66] visible=true flags= "
    "sideHint=TOP boundingRects=null\n"
    "    InsetsSource id=ab460001 type=navigationBars frame=[0,2274][1080,2400] visible=true "
    "flags= sideHint=BOTTOM\n"
    "    InsetsSource id=3 type=ime frame=[0,1517][1080,2400] visibleFrame=[0,1517][1080,2400] "
    "visible=true flags= sideHint=BOTTOM\n"
)
TO_STRING = "InsetsSource: {3 mType=ime mFrame=[0,1500][1080,2400] mVisible=true mFlags=}\n"
HIDDEN = (
    "        InsetsSource type=ITYPE_IME frame=[0,0][0,0] visibleFrame=[0,2088][1080,2220] "
    "visible=false insetsRoundedCornerFrame=false\n"
)


@pytest.mark.parametrize(
    ("text", "box"),
    [
        (ANDROID_11, BoxPx(0, 1398, 1080, 2220)),
        (ANDROID_13, BoxPx(0, 1398, 1080, 2220)),
        (ANDROID_14, BoxPx(0, 1517, 1080, 2400)),
        (TO_STRING, BoxPx(0, 1500, 1080, 2400)),
        (HIDDEN, None),
        # Shown but with no area (Android 16 while it slides in; a floating keyboard): none.
        ("InsetsSource id=3 type=ime frame=[0,1600][720,1600] visible=true flags=\n", None),
        # Older phones print no input method insets: they do not say.
        ("  mStableInsets=[0,63][0,126]\n", None),
        ("", None),
    ],
    ids=["android11", "android13", "android14", "tostring", "hidden", "no-area", "old", "empty"],
)
def test_the_keyboard_box_is_read_off_each_android_format(text: str, box: BoxPx | None) -> None:
    assert parse_keyboard(text) == box


def test_a_keyboard_on_another_display_is_not_over_this_screen() -> None:
    """Casting or a virtual display lists its own insets: only the default display's count."""
    second_up = (
        "  Display: mDisplayId=0\n" + HIDDEN
        + "  Display: mDisplayId=2\n"
        + "        InsetsSource type=ITYPE_IME frame=[0,800][720,1280] visible=true\n"
    )
    assert parse_keyboard(second_up) is None
    first_up = (
        "  Display: mDisplayId=0\n" + ANDROID_13
        + "  Display: mDisplayId=2\n" + HIDDEN
    )
    assert parse_keyboard(first_up) == BoxPx(0, 1398, 1080, 2220)


def test_which_phones_say_where_the_keyboard_is() -> None:
    """Android 11+ lists the input method's insets shown or not; older phones list none, and
    their keyboard is read off its window."""
    assert says_keyboard(HIDDEN) and says_keyboard(ANDROID_14)
    assert not says_keyboard("      InsetsSource type=ITYPE_STATUS_BAR frame=[0,0][1080,66] "
                             "visible=true\n")
    assert not says_keyboard("  mStableInsets=[0,63][0,126]\n")


# `dumpsys window InputMethod` on phones before Android 11: the input method's window block,
# between the other windows' (abridged; the fields are those phones print).
OLD_SHOWN = """\
WINDOW MANAGER WINDOWS (dumpsys window windows)
  Window #9 Window{4be2a1c u0 InputMethod}:
    mDisplayId=0 stackId=0 mSession=Session{ce80bcd 23447:u0a10205} mClient=android.os.BinderProxy@1
    mAttrs={(0,0)(fillxwrap) gr=BOTTOM CENTER_VERTICAL sim={adjust=pan} ty=INPUT_METHOD}
    Requested w=1080 h=1848 mLayoutSeq=310
    mIsImWindow=true mIsWallpaper=false mIsFloatingLayer=true mWallpaperVisible=false
    mHasSurface=true isReadyForDisplay()=true mWindowRemovalAllowed=false
    mViewVisibility=0x0 mHaveFrame=true mObscured=false
    mFrame=[0,72][1080,1920] last=[0,72][1080,1920]
    mGivenContentInsets=[0,1029][0,0] mGivenVisibleInsets=[0,1029][0,0]
    touchable region=SkRegion((0,1101,1080,1794))
    isOnScreen=true
  Window #8 Window{5a3178b u0 com.example.mail/com.example.mail.Compose}:
    mViewVisibility=0x0 mHaveFrame=true mObscured=false
    mFrame=[0,0][1080,1920] last=[0,0][1080,1920]
"""


@pytest.mark.parametrize(
    ("text", "box"),
    [
        (OLD_SHOWN, BoxPx(0, 1101, 1080, 1794)),
        # No touchable region: the frame below the content insets it gives the app.
        (OLD_SHOWN.replace("    touchable region=SkRegion((0,1101,1080,1794))\n", ""),
         BoxPx(0, 1101, 1080, 1920)),
        # Two rectangles (the keys and a raised suggestion strip): one box holding both.
        (OLD_SHOWN.replace("SkRegion((0,1101,1080,1794))",
                           "SkRegion((0,1101,1080,1200)(0,1200,1080,1794))"),
         BoxPx(0, 1101, 1080, 1794)),
        # Hidden: gone, off the screen, or without a surface.
        (OLD_SHOWN.replace("mViewVisibility=0x0 mHaveFrame=true mObscured=false\n    mFrame=[0,72]",
                           "mViewVisibility=0x8 mHaveFrame=true mObscured=false\n    mFrame=[0,72]",
                           1), None),
        (OLD_SHOWN.replace("isOnScreen=true", "isOnScreen=false"), None),
        (OLD_SHOWN.replace("mHasSurface=true", "mHasSurface=false"), None),
        ("WINDOW MANAGER WINDOWS (dumpsys window windows)\n", None),
    ],
    ids=["touchable", "frame-and-insets", "two-rects", "gone", "off-screen", "no-surface",
         "no-window"],
)
def test_an_older_phones_keyboard_is_read_off_its_window(text: str, box: BoxPx | None) -> None:
    assert parse_keyboard_window(text) == box


def test_another_windows_fields_are_not_the_keyboards() -> None:
    """The app's window below the input method's is shown: its fields say nothing of the
    keyboard's."""
    shown = "mViewVisibility=0x0 mHaveFrame=true mObscured=false\n    mFrame=[0,72]"
    hidden = OLD_SHOWN.replace(shown, shown.replace("0x0", "0x8"), 1)
    assert "mViewVisibility=0x0" in hidden
    assert parse_keyboard_window(hidden) is None


def test_a_providers_copy_is_not_the_displays_state() -> None:
    """InsetsSourceProviders repeat each source as ``mSource=InsetsSource ...``: a status bar's
    copy holds the expanded shade's frame, an input method's a frame from when it was up."""
    text = (
        HIDDEN
        + "    InsetsSourceProviders:\n"
        + "        mSource=InsetsSource type=ITYPE_STATUS_BAR frame=[0,0][1080,500] visible=true\n"
        + "        mSource=InsetsSource type=ITYPE_IME frame=[0,1398][1080,2220] visible=true\n"
    )
    assert parse_keyboard(text) is None
    assert [kind for kind, _ in insets_sources(text)] == []


def test_android_14_system_bars_are_read_as_insets() -> None:
    """Android 14 names the sources statusBars / navigationBars and puts an id first: the
    screen facts' insets read them as they read 11-13's ITYPE_ names."""
    insets = parse_dumpsys_window(ANDROID_14)["insets"]
    assert (insets.top_px, insets.bottom_px) == (66, 126)  # type: ignore[attr-defined]
    insets = parse_dumpsys_window(ANDROID_13)["insets"]
    assert (insets.top_px, insets.bottom_px) == (66, 132)  # type: ignore[attr-defined]


def test_a_reported_keyboard_hides_what_it_covers() -> None:
    """The dump holds the app alone; the box the phone reports covers Attach: not offered, the
    keyboard said once, the same as a dump holding the keyboard's window."""
    xml = dump(app_window())
    tree = read_tree(xml, keyboard=KEYBOARD)
    doc = json.loads(tree.to_prompt())
    assert doc["kbd"] == "0 688 1000 1000"
    assert [row[1] for row in doc["btn"]] == [*LINES, "Send"]
    attach = next(e for e in tree.elements if e.text == "Attach")
    assert attach.id in tree.keyboard_ids and attach.id in tree.hidden_ids
    # The same screen without a keyboard offers it; with_keyboard reads nothing again.
    bare = read_tree(xml)
    assert bare.keyboard_px is None and "Attach" in {e.text for e in bare.prompt_elements}
    again = bare.with_keyboard(KEYBOARD)
    assert again.to_prompt() == tree.to_prompt() and again.elements is bare.elements
    assert bare.with_keyboard(None) is bare


def test_a_box_from_json_or_numpy_is_taken() -> None:
    import numpy as np

    for given in ([0, 1650, 1080, 2400], tuple(np.array([0, 1650, 1080, 2400]))):
        assert read_tree(dump(app_window()), keyboard=given).keyboard_px == KEYBOARD  # type: ignore[arg-type]


def test_the_reported_box_is_clipped_to_the_screen() -> None:
    tree = read_tree(dump(app_window()), keyboard=BoxPx(-10, 1650, 1200, 2600))
    assert tree.keyboard_px == KEYBOARD
    off = read_tree(dump(app_window()), keyboard=BoxPx(0, 2400, 1080, 2600))
    assert off.keyboard_px is None and not off.keyboard_ids


def test_a_keyboard_window_and_a_reported_box_make_one_keyboard() -> None:
    """A dump holding the keyboard's window and the phone's box (its insets may reach the
    navigation bar under the keys): one box holding both."""
    from test_tree_keyboard import keyboard_window

    tree = read_tree(dump(app_window(), keyboard_window(top=1700)), keyboard=KEYBOARD)
    assert tree.keyboard_px == KEYBOARD


@pytest.mark.parametrize("bad", [(0, 1650, 1080), (0.0, 1650, 1080, 2400), "0 1650 1080 2400",
                                 (True, 1650, 1080, 2400), (1080, 2374, 0, 1500),
                                 (0, 1600, 720, 1600)])
def test_a_keyboard_that_is_no_box_is_refused(bad: object) -> None:
    with pytest.raises(InputError, match="keyboard must be a box"):
        read_tree(dump(app_window()), keyboard=bad)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="keyboard must be a box"):
        perceive(dump(app_window()), keyboard=bad)  # type: ignore[arg-type]


def test_perceive_hides_the_app_under_a_reported_keyboard() -> None:
    obs = perceive(dump(app_window()), frame_of(True), keyboard=KEYBOARD)
    assert obs.screen is not None and obs.screen.keyboard_px == KEYBOARD
    assert json.loads(obs.to_prompt())["screen"]["kbd"] == "0 688 1000 1000"
    shown = {c.text for c in obs.candidates if c.shown}
    assert "Send" in shown and "Attach" not in shown
    assert all(o.candidate_id is None or o.candidate_id in set(obs.shown_ids)
               for o in obs.operations)
    assert not any(o.kind.value == "dismiss" for o in obs.operations), obs.operations


def test_ocr_reads_no_keys_on_a_page_the_dump_cannot_see_into() -> None:
    """A page read by OCR (one SurfaceView) under a keyboard the dump does not hold: the
    letters on the keys are not offered as the page's text."""
    canvas = node((0, 0, 1080, 2400), cls="android.view.SurfaceView", package=APP)
    obs = perceive(dump(canvas), frame_of(True), keyboard=KEYBOARD)
    assert obs.state.value != "tree"
    assert_reads_no_keys(obs)


def test_a_frame_alone_drops_the_keys_too() -> None:
    """No dump (it failed, or the caller has none): the pixel channel's candidates inside the
    reported keyboard are its keys, not the page."""
    obs = perceive(frame=frame_of(True), keyboard=KEYBOARD)
    texts = [c.text for c in obs.candidates if c.shown]
    assert any("Send" in t for t in texts)
    assert all(not KEYBOARD.contains(c.box_px.center) for c in obs.candidates if c.shown)
    assert obs.screen is not None and obs.screen.keyboard_px == KEYBOARD


def test_datasets_and_overlays_say_what_the_keyboard_hides() -> None:
    """An exported row names the keyboard's box and tells an element under it from one left
    out otherwise; the overlay outlines it and its band says it."""
    from perception.debug import _band_lines, draw_overlay, record

    frame = frame_of(True)
    obs = perceive(dump(app_window()), frame, keyboard=KEYBOARD)
    row = record(obs)
    assert row["screen"]["keyboard_px"] == list(KEYBOARD)
    attach = next(c for c in row["candidates"] if c["text"] == "Attach")
    assert attach["hidden"] == ["keyboard"] and not attach["listed"]
    send = next(c for c in row["candidates"] if c["text"] == "Send")
    assert send["hidden"] == [] and send["listed"]
    assert any("kbd 0,1650,1080,2400" in line for line in _band_lines(obs))
    drawn = draw_overlay(obs, frame)
    bare = draw_overlay(perceive(dump(app_window()), frame), frame)
    assert drawn.shape == bare.shape and (drawn != bare).any()
    assert record(perceive(dump(app_window()), frame))["screen"]["keyboard_px"] is None


def test_the_clis_take_the_keyboard_box(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`perception tree --keyboard` and `perception overlay --keyboard`: a dump saved without
    the keyboard, and the box `dumpsys window displays` gave."""
    from perception.cli.main import main

    xml = tmp_path / "dump.xml"
    xml.write_bytes(dump(app_window()))
    assert main(["tree", str(xml), "--keyboard", "0,1650,1080,2400"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kbd"] == "0 688 1000 1000" and "Attach" not in json.dumps(doc)
    shot = tmp_path / "screen.png"
    shot.write_bytes(frame_of(True))
    out = tmp_path / "overlay.png"
    assert main(["overlay", str(shot), "--dump", str(xml), "-o", str(out), "--json",
                 "--keyboard", "0,1650,1080,2400"]) == 0
    assert json.loads(capsys.readouterr().out)["screen"]["keyboard_px"] == list(KEYBOARD)
    for bad in ("0,1650,1080", "0,2400,1080,1650", "a,b,c,d"):
        with pytest.raises(SystemExit) as caught:
            main(["tree", str(xml), "--keyboard", bad])
        assert caught.value.code == 2
        assert "LEFT,TOP,RIGHT,BOTTOM" in capsys.readouterr().err


def test_the_keyboard_going_down_is_no_stale_dump() -> None:
    """BACK closes the keyboard: the dump is the same, the picture changed. With the box the
    phone reported, that is a new screen, not the dump from before the action over a changed
    picture (which reads as stale and sends the arbiter to the pixels)."""
    from perception import Perceiver

    xml = dump(app_window())
    perceiver = Perceiver()
    up = perceiver.perceive(xml, frame_of(True), epoch=0, keyboard=KEYBOARD)
    down = perceiver.perceive(xml, frame_of(False), epoch=1)
    again = perceiver.perceive(xml, frame_of(True), epoch=2, keyboard=KEYBOARD)
    for obs in (up, down, again):
        assert obs.state.value == "tree" and "stale" not in obs.tree_factors, obs.tree_factors
    assert "Attach" in {c.text for c in down.candidates if c.shown}


def test_an_unreported_keyboard_going_down_over_a_focused_field_is_no_stale_dump() -> None:
    """Nobody reported the keyboard (a caller's own adb loop): a field has the focus and only a
    band along the bottom changed, so the same dump is the same screen, keyboard up or down. A
    dump without a focused field, or a picture changed higher up, is still stale."""
    import numpy as np

    from perception import Perceiver

    focused = dump(app_window())
    perceiver = Perceiver()
    perceiver.perceive(focused, frame_of(True), epoch=0)
    down = perceiver.perceive(focused, frame_of(False), epoch=1)
    assert down.state.value == "tree" and "stale" not in down.tree_factors, down.tree_factors

    unfocused = focused.replace(b'focused="true"', b'focused="false"')
    perceiver = Perceiver()
    perceiver.perceive(unfocused, frame_of(True), epoch=0)
    assert "stale" in perceiver.perceive(unfocused, frame_of(False), epoch=1).tree_factors

    import cv2

    page = cv2.imdecode(np.frombuffer(frame_of(False), np.uint8), cv2.IMREAD_COLOR)
    page[300:700] = 90  # the page above the keyboard's place changed too
    changed = cv2.imencode(".png", page)[1].tobytes()
    perceiver = Perceiver()
    perceiver.perceive(focused, frame_of(True), epoch=0)
    assert "stale" in perceiver.perceive(focused, changed, epoch=1).tree_factors
