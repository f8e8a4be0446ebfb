"""Dumps of several windows from review 18: a dialog or a pop-up over its app, the notification
shade over an app in either listing order, a dialog dumped alone on a device whose natural
orientation is landscape. Every screen is written here (tests/_xml.py) after the layouts the
platform inflates (``alert_dialog.xml``, ``app_anr_dialog.xml``, a popup menu's list) and the
order ``UiAutomation.getWindows()`` lists windows in (top first)."""

from __future__ import annotations

import json

import pytest
from _xml import dump, node

import perception
from perception import ElementFlag, read_tree
from perception.tree import Tree

pytestmark = pytest.mark.usefixtures("pipeline_impl")

APP = "com.example.notes"
SYSUI = "com.android.systemui"
IME = "com.google.android.inputmethod.latin"
BTN = "android.widget.Button"
TXT = "android.widget.TextView"
W, H = 1080, 2400


def offered(tree: Tree) -> list[str]:
    return [e.text for e in tree.prompt_elements]


def occluded(tree: Tree) -> dict[str, bool]:
    return {e.text: bool(e.flags & ElementFlag.OCCLUDED) for e in tree.elements}


def _status_bar() -> str:
    return node(
        (0, 0, W, 96),
        node((40, 20, 200, 80), text="12:30", cls=TXT, package=SYSUI,
             resource_id=f"{SYSUI}:id/clock"),
        package=SYSUI, resource_id=f"{SYSUI}:id/status_bar",
    )


def _navigation_bar() -> str:
    return node(
        (0, 2280, W, H),
        node((100, 2280, 300, H), content_desc="Back", clickable=True, package=SYSUI,
             resource_id=f"{SYSUI}:id/back", cls="android.widget.ImageView"),
        node((440, 2280, 640, H), content_desc="Home", clickable=True, package=SYSUI,
             resource_id=f"{SYSUI}:id/home", cls="android.widget.ImageView"),
        package=SYSUI, resource_id=f"{SYSUI}:id/navigation_bar_frame",
    )


NOTES = [f"Note number {i}" for i in range(8)]


def _notes_app() -> str:
    """A notes list under a toolbar, a floating "New note" button: the app's full window."""
    rows = [
        node((0, 300 + i * 160, W, 460 + i * 160),
             node((40, 330 + i * 160, 1040, 430 + i * 160), text=t, cls=TXT, package=APP,
                  resource_id=f"{APP}:id/note_title"),
             cls="android.view.ViewGroup", clickable=True, focusable=True, package=APP)
        for i, t in enumerate(NOTES)
    ]
    return node(
        (0, 0, W, H),
        node((0, 96, W, 2280),
             node((0, 96, W, 250),
                  node((40, 130, 600, 210), text="Notes", cls=TXT, package=APP),
                  cls="android.view.ViewGroup", package=APP, resource_id=f"{APP}:id/toolbar"),
             node((0, 300, W, 2280), *rows, cls="androidx.recyclerview.widget.RecyclerView",
                  scrollable=True, package=APP, resource_id=f"{APP}:id/list"),
             node((880, 2100, 1040, 2260), content_desc="New note", clickable=True,
                  cls="android.widget.ImageButton", package=APP, resource_id=f"{APP}:id/fab"),
             package=APP, resource_id="android:id/content"),
        package=APP,
    )


def _alert_dialog(left: int = 90, top: int = 950, package: str = APP) -> str:
    """``AlertDialog`` as ``alert_dialog.xml`` inflates it: its window is its box."""
    r, b = left + 900, top + 560

    def rid(name: str) -> str:
        return f"android:id/{name}"

    return node(
        (left, top, r, b),
        node((left, top, r, b),
             node((left, top, r, top + 150),
                  node((left + 60, top + 50, r - 60, top + 130), text="Delete this note?",
                       cls=TXT, package=package, resource_id=rid("alertTitle")),
                  cls="android.widget.LinearLayout", package=package,
                  resource_id=rid("topPanel")),
             node((left, top + 150, r, top + 380),
                  node((left + 60, top + 170, r - 60, top + 260),
                       text="This cannot be undone.", cls=TXT, package=package,
                       resource_id=rid("message")),
                  cls="android.widget.FrameLayout", package=package,
                  resource_id=rid("contentPanel")),
             node((left, top + 380, r, b),
                  node((left + 380, top + 420, left + 610, top + 530), text="Cancel", cls=BTN,
                       clickable=True, focusable=True, package=package,
                       resource_id=rid("button2")),
                  node((left + 630, top + 420, left + 860, top + 530), text="Delete", cls=BTN,
                       clickable=True, focusable=True, package=package,
                       resource_id=rid("button1")),
                  cls="android.widget.LinearLayout", package=package,
                  resource_id=rid("buttonPanel")),
             cls="android.widget.LinearLayout", package=package,
             resource_id=rid("parentPanel")),
        package=package,
    )


def _anr_dialog() -> str:
    """Android's "isn't responding" dialog (package ``android``, ``app_anr_dialog.xml``)."""
    return node(
        (60, 900, 1020, 1500),
        node((120, 950, 960, 1050), text="Notes isn't responding", cls=TXT, package="android",
             resource_id="android:id/alertTitle"),
        node((120, 1150, 960, 1280), text="Close app", cls=BTN, clickable=True,
             package="android", resource_id="android:id/aerr_close"),
        node((120, 1300, 960, 1430), text="Wait", cls=BTN, clickable=True, package="android",
             resource_id="android:id/aerr_wait"),
        package="android",
    )


UIAUTOMATOR_LIST = "android.widget.ListView"
"""What ``uiautomator`` calls every pop-up's list (the accessibility class of a ``ListView``
subclass): a menu's, a spinner's drop-down's and an ``AutoCompleteTextView``'s alike."""
MENU_LIST = "androidx.appcompat.widget.MenuPopupWindow$MenuDropDownListView"
"""An overflow menu's list where a dump names views by their Java class."""


def _overflow_menu(list_class: str = MENU_LIST) -> str:
    """A toolbar's overflow menu: a list of titles in a pop-up window of its own at the top
    right (``MenuPopupWindow``, a focusable pop-up: a touch outside closes it)."""
    items = [
        node((480, 108 + i * 132, 1068, 240 + i * 132),
             node((522, 140 + i * 132, 1026, 208 + i * 132), text=t, cls=TXT, package=APP,
                  resource_id="android:id/title"),
             cls="android.widget.LinearLayout", clickable=True, focusable=True, package=APP)
        for i, t in enumerate(["Sort by date", "Settings"])
    ]
    return node(
        (480, 84, 1068, 396),
        node((480, 84, 1068, 396), *items, cls=list_class, package=APP),
        package=APP,
    )


# --- 1. a dialog or a pop-up over the app covers the app whole --------------------------------


@pytest.mark.parametrize("top_first", [True, False], ids=["top-first", "app-first"])
def test_a_dialog_over_its_app_covers_the_app_not_only_under_its_box(top_first: bool) -> None:
    windows = [_navigation_bar(), _status_bar(), _alert_dialog(), _notes_app()]
    tree = read_tree(dump(*(windows if top_first else windows[::-1])))
    # the dialog and the system's bars take the touches; no row of the app, above the dialog,
    # under it or below it, nor its title or its button
    assert sorted(offered(tree)) == sorted(
        ["Back", "Home", "Delete this note?", "This cannot be undone.", "Cancel", "Delete"]
    )
    hidden = occluded(tree)
    assert all(hidden[t] for t in (*NOTES, "New note"))
    assert not any(hidden[t] for t in ("Cancel", "Delete", "Back", "Home"))


def test_the_prompt_offers_the_dialog_alone() -> None:
    obs = perception.perceive(xml=dump(_alert_dialog(), _notes_app()))
    doc = json.loads(obs.to_prompt())
    assert [row[1] for row in doc["btn"]] == ["Cancel", "Delete"]
    assert "Note number 0" not in obs.to_prompt() and "New note" not in obs.to_prompt()


def test_androids_not_responding_dialog_covers_the_app() -> None:
    tree = read_tree(dump(_anr_dialog(), _notes_app()))
    assert offered(tree) == ["Notes isn't responding", "Close app", "Wait"]


@pytest.mark.parametrize(
    "list_class", [MENU_LIST, "android.widget.MenuPopupWindow$MenuDropDownListView"],
    ids=["appcompat", "platform"],
)
def test_a_popup_menu_covers_the_app_it_closes_on_a_touch_outside(list_class: str) -> None:
    tree = read_tree(dump(_overflow_menu(list_class), _notes_app()))
    assert offered(tree) == ["Sort by date", "Settings"]


def test_a_list_window_that_names_no_menu_covers_only_what_lies_under_it() -> None:
    # uiautomator names a menu's list as it names an AutoCompleteTextView's suggestions: a
    # floating list is no evidence of a modal window, so it covers its own box only.
    tree = read_tree(dump(_overflow_menu(UIAUTOMATOR_LIST), _notes_app()))
    labels = offered(tree)
    assert labels[:2] == ["Sort by date", "Settings"]
    assert {*NOTES[2:7], "New note"} <= set(labels)


def test_a_dialog_under_the_keyboard_keeps_its_field_the_app_stays_covered() -> None:
    left, top = 90, 700
    dialog = node(
        (left, top, left + 900, top + 520),
        node((left, top, left + 900, top + 520),
             node((left + 60, top + 40, left + 840, top + 120), text="Rename note", cls=TXT,
                  resource_id="android:id/alertTitle"),
             node((left + 60, top + 160, left + 840, top + 280), text="Shopping",
                  cls="android.widget.EditText", clickable=True, focusable=True,
                  focused=True, resource_id=f"{APP}:id/edit"),
             node((left + 630, top + 380, left + 860, top + 490), text="OK", cls=BTN,
                  clickable=True, resource_id="android:id/button1"),
             resource_id="android:id/parentPanel"),
        package=APP,
    )
    keys = [node((k * 108, 1600, (k + 1) * 108, 1750), content_desc=c, clickable=True,
                 package=IME) for k, c in enumerate("qwertyuiop")]
    keyboard = node((0, 1500, W, H), *keys, package=IME)
    tree = read_tree(dump(keyboard, dialog, _notes_app()))
    assert offered(tree) == ["Rename note", "Shopping", "OK"]
    assert tree.keyboard_px is not None


# What floats over the app and is no dialog takes no touch from the rest of the app.


def test_picture_in_picture_over_the_launcher_leaves_the_launcher_offered() -> None:
    launcher = node(
        (0, 0, W, H),
        *[node((40 + i * 250, 1800, 240 + i * 250, 2050), text=t, cls=TXT, clickable=True,
               package="com.google.android.apps.nexuslauncher")
          for i, t in enumerate(["Phone", "Messages", "Chrome", "Camera"])],
        package="com.google.android.apps.nexuslauncher",
    )
    pip = node((560, 1450, 1040, 1720),
               node((560, 1450, 1040, 1720), cls="android.view.SurfaceView",
                    package="com.google.android.youtube"),
               package="com.google.android.youtube")
    for windows in ((pip, launcher), (launcher, pip)):
        assert offered(read_tree(dump(*windows))) == ["Phone", "Messages", "Chrome", "Camera"]


def test_a_toast_leaves_the_app_offered() -> None:
    toast = node((240, 1960, 840, 2100),
                 node((270, 1985, 810, 2075), text="Note saved", cls=TXT, package=APP,
                      resource_id="android:id/message"),
                 package=APP)
    tree = read_tree(dump(toast, _notes_app()))
    assert set(NOTES[:5]) <= set(offered(tree)) and "Note saved" in offered(tree)


def test_a_split_screen_pane_holding_a_list_is_no_popup() -> None:
    rows = [node((0, 1230 + i * 150, W, 1380 + i * 150), text=f"Mail {i}", cls=TXT,
                 clickable=True, package="com.mail") for i in range(6)]
    top = node((0, 0, W, 1170),
               node((40, 300, 1040, 450), text="Top app", cls=BTN, clickable=True,
                    package="com.top"),
               package="com.top")
    bottom = node((0, 1230, W, H),
                  node((0, 1230, W, H), *rows, cls="android.widget.ListView",
                       scrollable=True, package="com.mail"),
                  package="com.mail")
    labels = offered(read_tree(dump(bottom, top)))
    assert "Top app" in labels and "Mail 0" in labels


def test_a_chat_bubble_leaves_the_app_offered() -> None:
    bubble = node((900, 700, 1060, 860),
                  node((900, 700, 1060, 860), content_desc="Anna", clickable=True,
                       cls="android.widget.ImageView", package="com.facebook.orca"),
                  package="com.facebook.orca")
    labels = offered(read_tree(dump(bubble, _notes_app())))
    assert "Anna" in labels and {"Note number 0", "New note"} <= set(labels)


def test_the_volume_panel_leaves_the_app_offered() -> None:
    # SystemUI's volume panel floats at the right edge; a touch outside it reaches the app.
    panel = node(
        (900, 600, 1060, 1400),
        node((900, 600, 1060, 1400),
             node((930, 650, 1030, 1250), cls="android.widget.SeekBar", content_desc="Media",
                  package=SYSUI, resource_id=f"{SYSUI}:id/volume_row_slider"),
             node((930, 1280, 1030, 1380), content_desc="Mute", clickable=True,
                  cls="android.widget.ImageButton", package=SYSUI,
                  resource_id=f"{SYSUI}:id/volume_row_icon"),
             package=SYSUI, resource_id=f"{SYSUI}:id/volume_dialog"),
        package=SYSUI,
    )
    labels = offered(read_tree(dump(panel, _notes_app())))
    assert "Mute" in labels and {"Note number 0", "New note"} <= set(labels)


def _flight_search(package: str = "com.example.flights") -> str:
    """An app with two address fields, the first one focused, and a Search button."""
    def field(box: tuple[int, int, int, int], text: str, name: str, **attrs: object) -> str:
        return node(box, text=text, cls="android.widget.AutoCompleteTextView", clickable=True,
                    focusable=True, package=package, resource_id=f"{package}:id/{name}",
                    **attrs)

    return node(
        (0, 0, W, H),
        node((0, 80, W, 230), text="Search flights", cls=TXT, package=package),
        field((42, 250, 1038, 380), "Paris", "from", focused=True),
        field((42, 420, 1038, 550), "", "to"),
        node((42, 2100, 1038, 2250), text="Search", cls=BTN, clickable=True, package=package,
             resource_id=f"{package}:id/go"),
        package=package, cls="android.widget.FrameLayout",
    )


def _suggestions(list_class: str, root_class: str, package: str = "com.example.flights") -> str:
    """An ``AutoCompleteTextView``'s drop-down under the "from" field, as a dump names it:
    a ``ListPopupWindow`` that is not focusable (items ``simple_dropdown_item_1line``)."""
    items = [
        node((42, 380 + i * 140, 1038, 520 + i * 140), text=t, cls=TXT, clickable=True,
             package=package, resource_id="android:id/text1")
        for i, t in enumerate(["Paris CDG", "Paris ORY", "Paris BVA"])
    ]
    return node(
        (42, 380, 1038, 800),
        node((42, 380, 1038, 800), *items, cls=list_class, package=package),
        cls=root_class, package=package,
    )


@pytest.mark.parametrize(
    ("list_class", "root_class"),
    [
        (UIAUTOMATOR_LIST, "android.widget.FrameLayout"),
        ("android.widget.ListPopupWindow$DropDownListView",
         "android.widget.PopupWindow$PopupDecorView"),
        ("androidx.appcompat.widget.DropDownListView",
         "android.widget.PopupWindow$PopupBackgroundView"),
    ],
    ids=["uiautomator", "java-classes", "appcompat-classes"],
)
@pytest.mark.parametrize("with_keyboard", [False, True], ids=["", "keyboard"])
def test_autocomplete_suggestions_leave_the_form_offered(
    list_class: str, root_class: str, with_keyboard: bool
) -> None:
    # A touch outside the drop-down reaches the app: the user keeps typing into "from", moves
    # to another field or taps Search. Only the field under the list is covered.
    windows = [_suggestions(list_class, root_class), _flight_search()]
    if with_keyboard:
        keys = [node((k * 108, 1600, (k + 1) * 108, 1750), content_desc=c, clickable=True,
                     package=IME) for k, c in enumerate("qwertyuiop")]
        windows.insert(0, node((0, 1500, W, H), *keys, package=IME))
    tree = read_tree(dump(*windows))
    hidden = occluded(tree)
    assert not any(hidden[t] for t in ("Paris CDG", "Paris ORY", "Paris BVA"))
    assert not hidden["Search flights"] and not hidden["Paris"]
    assert hidden[""]  # the "to" field, under the suggestions
    labels = offered(tree)
    assert {"Paris CDG", "Paris BVA", "Search flights", "Paris"} <= set(labels)
    if not with_keyboard:
        assert "Search" in labels


def test_a_material_exposed_dropdown_menu_leaves_the_form_offered() -> None:
    # MaterialAutoCompleteTextView in a TextInputLayout: its menu is an AutoCompleteTextView's
    # ListPopupWindow, items mtrl_auto_complete_simple_item (no resource id).
    package = "com.example.flights"
    items = [node((42, 380 + i * 140, 1038, 520 + i * 140), text=t, cls=TXT, clickable=True,
                  package=package)
             for i, t in enumerate(["Economy", "Business", "First"])]
    menu = node((42, 380, 1038, 800),
                node((42, 380, 1038, 800), *items, cls=UIAUTOMATOR_LIST, package=package),
                package=package)
    labels = offered(read_tree(dump(menu, _flight_search())))
    assert {"Economy", "First", "Search flights", "Paris", "Search"} <= set(labels)


# --- 2. the notification shade and the lock screen lie over the app, whatever the order -------


def _shade() -> str:
    """The pulled-down shade: SystemUI's notification panel over the whole screen."""
    def sysui(box: tuple[int, int, int, int], *children: str, **attrs: object) -> str:
        return node(box, *children, package=SYSUI, **attrs)

    tiles = [
        sysui((20 + i * 265, 160, 255 + i * 265, 480), content_desc=name, checkable=True,
              checked=on, clickable=True, cls="android.widget.LinearLayout")
        for i, (name, on) in enumerate(
            [("Wi-Fi", True), ("Bluetooth", False), ("Flashlight", True), ("Airplane mode", False)]
        )
    ]
    return sysui(
        (0, 0, W, H),
        sysui((0, 0, W, 1400),
              sysui((40, 30, 300, 110), text="12:30", cls=TXT,
                    resource_id=f"{SYSUI}:id/clock"),
              sysui((320, 40, 700, 100), text="Thu, Oct 19", cls=TXT,
                    resource_id=f"{SYSUI}:id/date"),
              sysui((0, 150, W, 500), *tiles, resource_id=f"{SYSUI}:id/quick_qs_panel"),
              sysui((20, 520, 1060, 760),
                    sysui((60, 540, 600, 620), text="WhatsApp", cls=TXT),
                    sysui((60, 640, 900, 720), text="Anna: see you at 5", cls=TXT),
                    clickable=True, resource_id=f"{SYSUI}:id/expandableNotificationRow"),
              sysui((730, 1300, 1040, 1390), text="Clear all", cls=BTN, clickable=True,
                    resource_id=f"{SYSUI}:id/clear_all")),
        resource_id=f"{SYSUI}:id/notification_panel",
    )


SHADE = ["12:30 Thu, Oct 19", "Wi-Fi", "Bluetooth", "Flashlight", "Airplane mode",
         "WhatsApp | Anna: see you at 5", "Clear all"]


def _app_above_navigation_bar() -> str:
    """The app's window stopping at the navigation bar: smaller than the shade."""
    return node((0, 0, W, 2280),
                node((40, 300, 1040, 450), text="Shopping list", cls=BTN, clickable=True,
                     package=APP),
                node((880, 2100, 1040, 2260), content_desc="New note", clickable=True,
                     cls="android.widget.ImageButton", package=APP),
                package=APP)


@pytest.mark.parametrize("shade_first", [True, False], ids=["shade-first", "app-first"])
@pytest.mark.parametrize("app", [_notes_app, _app_above_navigation_bar],
                         ids=["app-as-large", "app-smaller"])
def test_the_shade_lies_over_the_app_whatever_the_listing_order(
    shade_first: bool, app: object
) -> None:
    assert callable(app)
    windows = [_shade(), app()]
    tree = read_tree(dump(*(windows if shade_first else windows[::-1])))
    assert offered(tree) == SHADE


def test_the_navigation_bar_stays_over_the_shade() -> None:
    tree = read_tree(dump(_notes_app(), _shade(), _navigation_bar()))
    assert offered(tree) == [*SHADE, "Back", "Home"]


def test_the_lock_screen_lies_over_the_app_listed_first() -> None:
    keyguard = node(
        (0, 0, W, H),
        node((300, 400, 780, 600), text="12:30", cls=TXT, package=SYSUI,
             resource_id=f"{SYSUI}:id/keyguard_clock"),
        node((440, 2100, 640, 2260), content_desc="Unlock", clickable=True, package=SYSUI,
             cls="android.widget.ImageView", resource_id=f"{SYSUI}:id/lock_icon"),
        package=SYSUI, resource_id=f"{SYSUI}:id/keyguard_root",
    )
    tree = read_tree(dump(_notes_app(), keyguard))
    assert offered(tree) == ["12:30", "Unlock"]


def test_with_a_frame_the_shade_listed_after_the_app_agrees_with_the_pixels() -> None:
    import cv2
    import numpy as np
    from _frames import png

    img = np.full((H, W, 3), 30, np.uint8)
    cv2.putText(img, "12:30", (40, 90), 0, 2, (255, 255, 255), 4)
    cv2.putText(img, "Thu, Oct 19", (330, 90), 0, 1.6, (220, 220, 220), 3)
    for i, name in enumerate(["Wi-Fi", "Bluetooth", "Flashlight", "Airplane"]):
        cv2.rectangle(img, (20 + i * 265, 160), (255 + i * 265, 480),
                      (90, 90, 200) if i % 2 == 0 else (70, 70, 70), -1)
        cv2.putText(img, name, (35 + i * 265, 440), 0, 1.0, (255, 255, 255), 2)
    cv2.rectangle(img, (20, 520), (1060, 760), (60, 60, 60), -1)
    cv2.putText(img, "WhatsApp", (60, 590), 0, 1.4, (255, 255, 255), 3)
    cv2.putText(img, "Anna: see you at 5", (60, 690), 0, 1.4, (230, 230, 230), 3)
    cv2.putText(img, "Clear all", (730, 1360), 0, 1.4, (255, 255, 255), 3)
    cv2.rectangle(img, (0, 1400), (W, H), (120, 120, 120), -1)  # the app, dimmed below
    obs = perception.perceive(xml=dump(_notes_app(), _shade()), frame=png(img))
    assert obs.state == "tree" and obs.consistent is not False
    prompt = obs.to_prompt()
    assert "Clear all" in prompt and "Note number 0" not in prompt and "disagree" not in prompt


# --- 3. a dialog dumped alone on a device whose natural orientation is landscape ---------------


def _centred_dialog(width: int, height: int, *, rotation: int, drop_px: int = 0) -> bytes:
    """An AlertDialog alone (``uiautomator dump`` while it is up), centred on a screen
    ``width`` x ``height``, ``drop_px`` lower where bars shift the area it is centred on."""
    left, top = (width - 900) // 2, (height - 560) // 2 + drop_px
    return dump(_alert_dialog(left, top), rotation=rotation)


@pytest.mark.parametrize(
    ("width", "height", "drop_px"),
    [(2560, 1600, 0), (2560, 1600, 40), (1920, 1080, 0)],
    ids=["tablet", "tablet-under-its-status-bar", "tv-1080p"],
)
def test_rotation_0_on_a_landscape_device_estimates_a_landscape_screen(
    width: int, height: int, drop_px: int
) -> None:
    tree = read_tree(_centred_dialog(width, height, rotation=0, drop_px=drop_px))
    assert tree.screen_estimated and tree.rotation == 0
    assert (tree.screen.width_px, tree.screen.height_px) == (width, height)
    cancel = next(e for e in tree.elements if e.text == "Cancel")
    centre = cancel.box_px.center
    doc = json.loads(tree.to_prompt())
    row = next(r for r in doc["btn"] if r[1] == "Cancel")
    assert row[2] == f"{round(centre.x * 1000 / width)} {round(centre.y * 1000 / height)}"


def test_a_popup_at_the_right_of_a_tv_gets_a_landscape_screen() -> None:
    menu = node((1500, 100, 1900, 500),
                node((1500, 100, 1900, 500),
                     node((1500, 100, 1900, 230), text="Subtitles", cls=TXT, clickable=True),
                     cls="android.widget.ListView"))
    tree = read_tree(dump(menu, rotation=0))
    assert (tree.screen.width_px, tree.screen.height_px) == (1920, 1080)


@pytest.mark.parametrize(
    ("width", "height", "rotation", "estimate"),
    [(1080, 2400, 0, (1080, 2472)), (2400, 1080, 1, (2400, 1170)),
     (1600, 2560, 1, (1600, 2620))],
    ids=["phone-portrait", "phone-landscape", "tablet-turned-upright"],
)
def test_phone_estimates_stay_as_they_were(
    width: int, height: int, rotation: int, estimate: tuple[int, int]
) -> None:
    tree = read_tree(_centred_dialog(width, height, rotation=rotation))
    assert (tree.screen.width_px, tree.screen.height_px) == estimate


@pytest.mark.parametrize(
    "box", [(90, 300, 990, 700), (60, 150, 1020, 900), (140, 200, 940, 850)],
    ids=["high", "top", "pushed-up"],
)
def test_a_phone_dialog_high_on_the_screen_keeps_a_portrait_screen(
    box: tuple[int, int, int, int]
) -> None:
    # Centred across a phone's width and sitting high (pushed up by the keyboard, a top-gravity
    # dialog): its place says nothing at a phone's width, the screen stays 16:9 upright.
    left, top, right, bottom = box
    dialog = node(
        box,
        node((left + 40, top + 40, right - 40, top + 140), text="Rename", cls=TXT),
        node((right - 300, bottom - 140, right - 40, bottom - 40), text="OK", cls=BTN,
             clickable=True),
        cls="android.widget.FrameLayout", package=APP,
    )
    tree = read_tree(dump(dialog, rotation=0))
    assert tree.screen_estimated
    assert (tree.screen.width_px, tree.screen.height_px) == (1080, 1920)


def test_a_720p_tv_dialog_is_estimated_as_a_phone_and_exact_with_its_screen() -> None:
    # 1280 px lies within upright phones' widths (up to 1440): a centred dialog alone on a
    # 1280x720 TV is taken for a phone's; passing the screen places it.
    xml = _centred_dialog(1280, 720, rotation=0)
    tree = read_tree(xml)
    assert tree.screen_estimated and tree.screen.width_px == 1280
    assert tree.screen.height_px > tree.screen.width_px
    given = read_tree(xml, screen=perception.ScreenSize(1280, 720))
    assert not given.screen_estimated
    assert (given.screen.width_px, given.screen.height_px) == (1280, 720)


def test_neighbouring_display_widths_lie_beyond_each_others_tolerance() -> None:
    """What the floating window's estimate rests on (a bisection for the nearest width): the
    widths are sorted, and no span is within 0.5% of two of them."""
    from perception.tree.clean import _DISPLAY_WIDTHS as widths

    assert list(widths) == sorted(set(widths))
    assert all(b - a > 0.005 * (a + b) for a, b in zip(widths, widths[1:], strict=False))
