"""The on-screen keyboard in a dump (our own screens): its keys are not offered, its box is
said once, the app under it is covered, and an app about keyboards stays an app."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest
from _xml import dump, node

from perception import Observation, perceive, read_tree
from perception.tree.keyboard import is_input_method

GBOARD = "com.google.android.inputmethod.latin"
APP = "com.example.mail"


LINES = ("To: Ann", "Subject: Lunch", "Friday works", "See you at noon", "Bring the map",
         "Call me", "Best, Bo", "Sent from a phone")


def app_window(package: str = APP) -> str:
    return node(
        (0, 0, 1080, 2400),
        node((40, 200, 1040, 330), cls="android.widget.EditText", clickable=True,
             focusable=True, focused=True, text="Dear Ann,", hint="Message", package=package),
        *(node((40, 340 + 120 * i, 1040, 440 + 120 * i), cls="android.widget.Button",
               clickable=True, text=line, package=package) for i, line in enumerate(LINES)),
        node((40, 1400, 1040, 1530), cls="android.widget.Button", clickable=True, text="Send",
             package=package),
        node((40, 2000, 1040, 2130), cls="android.widget.Button", clickable=True,
             text="Attach", package=package),
        package=package,
    )


def keyboard_window(package: str = GBOARD, top: int = 1650) -> str:
    rows = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
    keys = [
        node((i * 108, top + 60 + r * 150, (i + 1) * 108, top + 210 + r * 150),
             cls="android.widget.Button", content_desc=c, clickable=True, package=package)
        for r, row in enumerate(rows) for i, c in enumerate(row)
    ]
    keys.append(node((300, 2260, 800, 2390), cls="android.widget.Button", content_desc="space",
                     clickable=True, package=package))
    return node((0, top, 1080, 2400),
                node((0, top, 1080, 2400), *keys, cls="android.widget.FrameLayout",
                     package=package),
                cls="android.widget.FrameLayout", package=package)


def test_the_keys_are_not_offered_and_the_keyboard_is_said_once() -> None:
    tree = read_tree(dump(app_window(), keyboard_window()))
    doc = json.loads(tree.to_prompt())
    assert doc["kbd"] == "0 688 1000 1000"
    assert [row[1] for row in doc["btn"]] == [*LINES, "Send"]  # Attach is under the keyboard
    assert doc["input"][0][1] == "Dear Ann,"
    assert json.loads(tree.to_prompt(coords=False))["kbd"] is True
    assert not any(len(e.text) == 1 for e in tree.elements)  # the keys are no elements
    assert tree.package == APP and tree.keyboard_px is not None
    assert tree.keyboard_px.top == 1650
    attach = next(e for e in tree.elements if e.text == "Attach")
    assert attach.id in tree.keyboard_ids and attach.id in tree.hidden_ids


def test_a_dump_of_the_keyboard_alone_names_no_app() -> None:
    """When the keyboard's window is the active one, a dump of the active window holds it
    alone: no app, no candidates, the keyboard's box."""
    tree = read_tree(dump(keyboard_window()), screen=None)
    assert tree.package == "" and not tree.prompt_elements
    assert set(json.loads(tree.to_prompt())) == {"kbd"}


@pytest.mark.parametrize(
    "package", ["com.example.keyboardtrainer", "com.touchtype.swiftkey"]
)
def test_an_app_about_keyboards_is_an_app(package: str) -> None:
    """A window of a keyboard's package that starts at the top of the screen is an app (a
    typing trainer, a keyboard's own settings), not a keyboard."""
    tree = read_tree(dump(keyboard_window(package, top=0)))
    assert tree.keyboard_px is None and "kbd" not in json.loads(tree.to_prompt())
    assert len(tree.prompt_elements) >= 27


@pytest.mark.parametrize(
    ("package", "ime"),
    [
        (GBOARD, True), ("com.samsung.android.honeyboard", True),
        ("com.baidu.input_huawei", True), ("com.sohu.inputmethod.sogou.xiaomi", True),
        ("com.iflytek.inputmethodx", True), ("org.example.SuperKeyboard", True),
        (APP, False), ("com.android.systemui", False), ("", False),
        ("com.baidu.searchbox", False),
    ],
)
def test_input_method_packages(package: str, ime: bool) -> None:
    assert is_input_method(package) is ime


def frame_of(keyboard: bool) -> bytes:
    frame = np.full((2400, 1080, 3), 240, np.uint8)
    ink = (20, 20, 20)
    lines = [(line, 420 + 120 * i) for i, line in enumerate(LINES)]
    for text, y in (("Dear Ann,", 280), *lines, ("Send", 1480), ("Attach", 2080)):
        cv2.putText(frame, text, (80, y), cv2.FONT_HERSHEY_SIMPLEX, 2, ink, 3)
    if keyboard:
        frame[1650:] = 200
        # the suggestion strip: words the keyboard draws above its keys
        for word, x in (("Thanks", 60), ("Hello", 420), ("Great", 780)):
            cv2.putText(frame, word, (x, 1700), cv2.FONT_HERSHEY_SIMPLEX, 1.6, ink, 3)
        for r, row in enumerate(("qwertyuiop", "asdfghjkl", "zxcvbnm")):
            for i, c in enumerate(row):
                cv2.putText(frame, c, (i * 108 + 35, 1800 + r * 150),
                            cv2.FONT_HERSHEY_SIMPLEX, 2, ink, 3)
    return cv2.imencode(".png", frame)[1].tobytes()


def test_the_observation_says_the_keyboard_is_up() -> None:
    up = perceive(dump(app_window(), keyboard_window()), frame_of(True))
    down = perceive(dump(app_window()), frame_of(False))
    assert up.screen is not None and up.screen.keyboard_px is not None
    assert json.loads(up.to_prompt())["screen"]["kbd"] == "0 688 1000 1000"
    assert "kbd" not in json.loads(down.to_prompt()).get("screen", {})
    shown = {c.text for c in up.candidates if c.shown}
    assert "Send" in shown and "Attach" not in shown and not shown & set("qwertyuiop")
    # the keyboard coming up does not make the page another one (its first texts are the
    # same; the keys are not among them)
    assert up.screen.fingerprint == down.screen.fingerprint


def test_ocr_does_not_read_the_keys_as_the_page() -> None:
    """A page the dump cannot see into (one SurfaceView: a game, a map, Flutter) is read by
    OCR; the letters on the keyboard's keys are not offered as the page's text."""
    canvas = node((0, 0, 1080, 2400), cls="android.view.SurfaceView", package=APP)
    obs = perceive(dump(canvas, keyboard_window()), frame_of(True))
    assert obs.state.value != "tree"
    assert_reads_no_keys(obs)
    assert obs.screen is not None and obs.screen.keyboard_px is not None


def assert_reads_no_keys(obs: Observation) -> None:
    """The page's text (Send) is offered; the keys' letters and the suggestion strip's words
    (:func:`frame_of`) are not."""
    texts = [c.text for c in obs.candidates if c.shown]
    assert any("Send" in t for t in texts)
    single = {t.strip().lower() for t in texts if len(t.strip()) == 1}
    assert not single & set("qwertyuiopasdfghjklzxcvbnm"), texts
    assert not any(word in t for t in texts for word in ("Thanks", "Hello", "Great")), texts


def full_screen_keyboard(top_of_keys: int = 1650) -> str:
    """An input method's window over the whole screen, its keys at ``top_of_keys`` and below
    (landscape's full-screen mode, some floating keyboards)."""
    inner = keyboard_window(top=top_of_keys)
    return node((0, 0, 1080, 2400), inner, cls="android.widget.FrameLayout", package=GBOARD)


@pytest.mark.parametrize("keyboard_first", [True, False], ids=["keyboard-first", "app-first"])
def test_a_keyboard_window_over_the_whole_screen_is_what_its_keys_cover(
    keyboard_first: bool,
) -> None:
    """Its box is its keys' (not the whole screen), and the app's views under the keys are not
    offered, whichever window the dump lists first."""
    windows = [full_screen_keyboard(), app_window()]
    tree = read_tree(dump(*(windows if keyboard_first else windows[::-1])))
    assert tree.keyboard_px is not None and tree.keyboard_px.top >= 1650
    labels = {e.text for e in tree.prompt_elements}
    assert "Send" in labels and "Attach" not in labels
    assert not labels & set("qwertyuiop") and tree.package == APP


def test_a_floating_keyboard_high_on_the_screen_is_a_keyboard() -> None:
    """Dragged to the top fifth over an app: still the keyboard (an app is there to type into)."""
    tree = read_tree(dump(app_window(), full_screen_keyboard(top_of_keys=500)))
    assert tree.keyboard_px is not None and tree.keyboard_px.top < 600
    assert not {e.text for e in tree.prompt_elements} & set("qwertyuiop")
    assert tree.package == APP


def test_no_op_names_a_key_of_the_keyboard() -> None:
    """The keyboard covering the bottom of the page is no pop-up, and its "x" key no close
    button: an op names only ids the prompt shows."""
    up = perceive(dump(app_window(), keyboard_window()), frame_of(True))
    shown = set(up.shown_ids)
    assert all(o.candidate_id is None or o.candidate_id in shown for o in up.operations)
    assert not any(o.kind.value == "dismiss" for o in up.operations), up.operations


def test_a_focused_field_under_the_keyboard_still_takes_typed_text() -> None:
    """The keyboard hides the app's field that has the focus: a type without an id goes there."""
    from agent.actions import Type, parse_action

    field = node((40, 2000, 1040, 2130), cls="android.widget.EditText", clickable=True,
                 focusable=True, focused=True, hint="Message", package=APP)
    # The button's label is what the frame draws in its box: a tree whose one label reads as
    # other words there is another moment's.
    app = node((0, 0, 1080, 2400), node((40, 200, 1040, 330), cls="android.widget.Button",
                                        clickable=True, text="Dear Ann,", package=APP),
               field, package=APP)
    obs = perceive(dump(keyboard_window(), app), frame_of(True))
    assert obs.state.value == "tree" and not any(
        c.shown and c.kind == "input" for c in obs.candidates
    )
    assert parse_action('{"action":"type","text":"hi"}', obs) == Type("hi")
