"""The tree channel on odd but real screens a phone agent meets: several windows in one dump,
landscape and tablet layouts, settings rows whose checkbox is only an indicator, WebViews, long
and composed text. Every screen is written here (tests/_xml.py), after patterns seen in real
dumps."""

from __future__ import annotations

import json

import pytest
from _xml import dump, node, screen

from perception import ElementFlag, ScreenSize, read_tree
from perception.tree import Tree

pytestmark = pytest.mark.usefixtures("pipeline_impl")

BTN = "android.widget.Button"
TXT = "android.widget.TextView"
EDIT = "android.widget.EditText"
APP = "com.chat"
IME = "com.google.android.inputmethod.latin"
SYSUI = "com.android.systemui"
PERMS = "com.google.android.permissioncontroller"


def occluded(tree: Tree) -> dict[str, bool]:
    return {e.text: bool(e.flags & ElementFlag.OCCLUDED) for e in tree.elements}


def prompt_labels(tree: Tree) -> set[str]:
    doc = json.loads(tree.to_prompt())
    return {row[1] if isinstance(row[0], int) else row[0] for rows in doc.values()
            for row in rows}


# --- several windows in one dump ---------------------------------------------------------------

# uiautomator2 and every tool built on UiDevice.dumpWindowHierarchy write the windows of
# UiAutomation.getWindows(), which lists them "in descending layer order": the top one first, the
# app last (as in the corpus's two multi-window dumps). A synthetic dump may list them the other
# way round; either way a keyboard, a bar or a dialog sits over the app window it lies inside.


def _app() -> str:
    return node(
        (0, 0, 1080, 2400),
        node((0, 0, 1080, 200), text="Chat", package=APP),
        node((0, 1200, 1080, 1400), text="Hello there", clickable=True, package=APP),
        node((40, 2000, 900, 2150), cls=EDIT, hint="Message", clickable=True, focused=True,
             package=APP),
        node((920, 2000, 1060, 2150), cls="android.widget.ImageButton", content_desc="Send",
             clickable=True, package=APP),
        package=APP,
    )


def _keyboard() -> str:
    keys = [
        node((k * 108, 1600, (k + 1) * 108, 1750), content_desc=c, clickable=True, package=IME)
        for k, c in enumerate("qwertyuiop")
    ]
    return node((0, 1500, 1080, 2400), *keys, package=IME)


def _permission_dialog() -> str:
    return node(
        (100, 900, 980, 1400),
        node((150, 950, 900, 1050), text="Allow Chat to record audio?", package=PERMS),
        node((150, 1250, 500, 1350), text="Allow", cls=BTN, clickable=True, package=PERMS),
        node((550, 1250, 900, 1350), text="Don't allow", cls=BTN, clickable=True, package=PERMS),
        package=PERMS,
    )


def _grant_dialog(package: str = PERMS) -> bytes:
    """Android 12's permission dialog dumped alone: its panels (``grant_singleton``,
    ``grant_dialog``) clickable round the question and the buttons (corpus: QQ Music's
    step_025)."""
    rid = "com.android.permissioncontroller:id/"
    question = node((133, 761, 947, 930), text="Allow Chat to record audio?",
                    resource_id=rid + "permission_message", cls=TXT, package=package)
    allow = node((133, 1447, 947, 1573), text="While using the app", cls=BTN, clickable=True,
                 resource_id=rid + "permission_allow_foreground_only_button", package=package)
    deny = node((133, 1594, 947, 1720), text="Don't allow", cls=BTN, clickable=True,
                resource_id=rid + "permission_deny_button", package=package)
    panel = node((28, 540, 1052, 1962), question, allow, deny, resource_id=rid + "grant_dialog",
                 clickable=True, package=package)
    return dump(node((28, 540, 1052, 1962), node((28, 540, 1052, 1962), panel, clickable=True,
                                                 resource_id=rid + "grant_singleton",
                                                 package=package), package=package))


def test_the_permission_dialogs_panels_are_no_buttons() -> None:
    """The panels cancel on a touch outside the dialog and swallow one on it: the question is
    text, the buttons are the buttons."""
    rows = json.loads(read_tree(_grant_dialog(), screen=ScreenSize(1080, 2400)).to_prompt(
        coords=False))
    assert rows["text"] == ["Allow Chat to record audio?"]
    assert [row[1] for row in rows["btn"]] == ["While using the app", "Don't allow"]


def test_an_apps_own_panel_of_that_name_still_takes_taps() -> None:
    rows = json.loads(read_tree(_grant_dialog(APP), screen=ScreenSize(1080, 2400)).to_prompt(
        coords=False))
    assert "Allow Chat to record audio?" in [row[1] for row in rows["btn"]]


def _status_bar() -> str:
    return node((0, 0, 1080, 100), node((30, 0, 150, 100), text="12:30", package=SYSUI),
                package=SYSUI)


def _navigation_bar() -> str:
    return node(
        (0, 2280, 1080, 2400),
        node((100, 2280, 300, 2400), content_desc="Back", clickable=True, package=SYSUI),
        node((440, 2280, 640, 2400), content_desc="Home", clickable=True, package=SYSUI),
        package=SYSUI,
    )


@pytest.mark.parametrize("top_first", [True, False], ids=["top-first", "app-first"])
def test_windows_over_the_app_stay_on_top_in_either_order(top_first: bool) -> None:
    windows = [_permission_dialog(), _keyboard(), _status_bar(), _navigation_bar(), _app()]
    tree = read_tree(dump(*(windows if top_first else windows[::-1])))
    hidden = occluded(tree)
    # the dialog, the keyboard and the bars take the touches where they are
    assert not any(hidden[label] for label in ("Allow", "Don't allow", "Back", "Home"))
    # the app's row under the dialog and its input under the keyboard do not
    assert hidden["Hello there"]
    under_keyboard = {e.text for e in tree.elements if e.id in tree.keyboard_ids}
    assert {"Message", "Send"} <= under_keyboard
    assert not hidden["Chat"]  # half under the status bar is not under it
    labels = prompt_labels(tree)
    assert {"Allow", "Don't allow", "Back", "Home", "Chat"} <= labels
    assert not {"Hello there", "Message", "Send"} & labels
    # the keyboard's keys are not offered one by one: its box is (perception.tree.keyboard)
    assert not {"q", "p"} & labels and tree.keyboard_px is not None


def test_the_package_is_the_app_not_the_keyboard_or_the_system_bars() -> None:
    # The keyboard has more nodes than the app: it is still not the app on screen.
    windows = [_keyboard(), _status_bar(), _navigation_bar(), _app()]
    assert read_tree(dump(*windows)).package == APP
    assert read_tree(dump(*windows[::-1])).package == APP


def test_the_status_bar_is_not_part_of_the_screen_the_agent_acts_on() -> None:
    """A multi-window dump carries SystemUI's status bar: the clock, the battery and one
    description per notification icon (300 tokens of "Instagram notification: ..." on a
    corpus dump). Nothing there takes a tap; the navigation bar's buttons do and stay."""
    icons = [
        node((200 + 40 * k, 0, 240 + 40 * k, 100), content_desc=f"App {k} notification: hi",
             package=SYSUI)
        for k in range(6)
    ]
    status = node((0, 0, 1080, 100), node((30, 0, 150, 100), text="12:30", package=SYSUI),
                  *icons, node((900, 0, 1060, 100), content_desc="Battery 80 percent.",
                               package=SYSUI), package=SYSUI)
    tree = read_tree(dump(status, _navigation_bar(), _app()))
    labels = prompt_labels(tree)
    assert {"Back", "Home", "Chat", "Hello there", "Send"} <= labels
    assert not any("notification" in label or "12:30" in label or "Battery" in label
                   for label in labels)
    assert tree.package == APP
    # The shade or the lock screen alone is the screen: kept whole.
    alone = read_tree(dump(status, _navigation_bar()))
    assert any("12:30" in label for label in prompt_labels(alone))


def test_an_unlabelled_chip_in_the_status_bar_does_not_keep_it() -> None:
    """inDriver's phone draws a clickable chip without a name in its status bar (an OEM's
    floating-call or recording chip): no control an agent can choose by name, so the clock
    and the notification icons still go; a named one (a clickable clock) keeps the bar."""
    icons = [node((200 + 40 * k, 0, 240 + 40 * k, 100), content_desc=f"App {k} notification: hi",
                  package=SYSUI) for k in range(4)]
    chip = node((500, 20, 580, 90), node((510, 30, 570, 80), package=SYSUI),
                clickable=True, package=SYSUI)
    clock = node((30, 0, 150, 100), text="12:30", package=SYSUI)
    tree = read_tree(dump(node((0, 0, 1080, 100), clock, *icons, chip, package=SYSUI), _app()))
    labels = prompt_labels(tree)
    assert not any("notification" in label or "12:30" in label for label in labels)
    assert "" not in [e.text for e in tree.prompt_elements]
    assert {"Chat", "Hello there", "Send"} <= labels
    named = node((30, 0, 150, 100), text="12:30", clickable=True, package=SYSUI)
    kept = read_tree(dump(node((0, 0, 1080, 100), named, *icons, package=SYSUI), _app()))
    assert "12:30" in prompt_labels(kept)
    # A chip whose name is a text inside it names it too; a thousand nameless ones do not.
    nameless = [node((k % 1000, 20, k % 1000 + 1, 90), clickable=True, package=SYSUI)
                for k in range(1000)]
    inside = node((500, 20, 700, 90), node((510, 30, 690, 80), text="Recording", package=SYSUI),
                  clickable=True, package=SYSUI)
    for chips, offered in ((nameless, False), ([*nameless, inside], True)):
        tree = read_tree(dump(node((0, 0, 1080, 100), clock, *chips, package=SYSUI), _app()))
        assert ("12:30" in prompt_labels(tree)) is offered


def test_landscape_navigation_bar_on_the_right_is_offered() -> None:
    # Landscape phone: the navigation bar is a column at the right edge, its own window,
    # listed before the app as UiDevice lists windows.
    nav = node((2280, 0, 2400, 1080),
               node((2280, 100, 2400, 300), content_desc="Back", clickable=True, package=SYSUI),
               node((2280, 440, 2400, 640), content_desc="Home", clickable=True, package=SYSUI),
               package=SYSUI)
    game = node((0, 0, 2280, 1080),
                node((100, 100, 600, 300), text="Play", clickable=True, package="com.game"),
                package="com.game")
    tree = read_tree(dump(nav, game, rotation=1))
    assert tree.screen == ScreenSize(2400, 1080) and tree.rotation == 1
    assert not any(occluded(tree).values())
    doc = json.loads(tree.to_prompt())
    assert [row[1] for row in doc["btn"]] == ["Back", "Home", "Play"]
    assert doc["btn"][0][2] == "975 185"
    assert tree.package == "com.game"


def test_split_screen_apps_do_not_hide_each_other() -> None:
    top = node((0, 0, 1080, 1180),
               node((0, 100, 1080, 300), text="Top app", clickable=True, package="a"),
               package="a")
    bottom = node((0, 1220, 1080, 2400),
                  node((0, 1300, 1080, 1500), text="Bottom app", clickable=True, package="b"),
                  package="b")
    tree = read_tree(dump(top, bottom))
    assert [e.text for e in tree.prompt_elements] == ["Top app", "Bottom app"]


# --- settings rows: the checkbox is an indicator of the clickable row --------------------------


def _preference(top: int, title: str, summary: str, cls: str, checked: bool) -> str:
    """A CheckBoxPreference / SwitchPreference row as the platform draws it: the row is
    clickable and holds the title and summary; the checkbox in its widget frame is checkable
    but not clickable (the row toggles it)."""
    return node(
        (0, top, 1080, top + 300),
        node((48, top, 888, top + 300),
             node((48, top + 40, 600, top + 110), text=title, cls=TXT),
             node((48, top + 110, 880, top + 260), text=summary, cls=TXT)),
        node((888, top, 1032, top + 300),
             node((936, top + 100, 1032, top + 196), cls=cls, checkable=True, checked=checked,
                  resource_id="android:id/checkbox"),
             resource_id="android:id/widget_frame"),
        clickable=True, cls="android.widget.LinearLayout",
    )


def test_a_rows_checkbox_indicator_gives_the_row_its_state() -> None:
    tree = read_tree(screen(
        _preference(300, "Show usage toasts?", "Shown when a field is hidden",
                    "android.widget.CheckBox", True),
        _preference(600, "Dark theme", "Restart to apply", "android.widget.Switch", False),
    ))
    rows = [(e.kind, e.text, bool(e.flags & ElementFlag.CHECKED)) for e in tree.elements]
    assert rows == [
        ("check", "Show usage toasts? | Shown when a field is hidden", True),
        ("switch", "Dark theme | Restart to apply", False),
    ]
    assert all(e.flags & ElementFlag.CHECKABLE and e.flags & ElementFlag.CLICKABLE
               for e in tree.elements)
    doc = json.loads(tree.to_prompt(coords=False))
    assert doc == {"check": [[0, "Show usage toasts? | Shown when a field is hidden", "on"]],
                   "switch": [[1, "Dark theme | Restart to apply"]]}


def test_a_clickable_switch_inside_a_clickable_row_stays_its_own_element() -> None:
    # Two actions, two elements (tests/test_tree_pipeline.py has the labelled twin).
    tree = read_tree(screen(node(
        (0, 0, 1080, 200), node((20, 20, 500, 180), text="Wi-Fi", cls=TXT),
        node((900, 50, 1000, 150), cls="android.widget.Switch", checkable=True, clickable=True),
        clickable=True,
    )))
    assert [e.kind for e in tree.elements] == ["btn", "switch"]


# --- WebView -----------------------------------------------------------------------------------


def test_a_web_input_does_not_borrow_the_page_title() -> None:
    # Firefox's WebView node carries the page title as its text and spans the page; the search
    # field in it has only its DOM id (corpus: fdroidutg_apps/ru.ikkui.achie/step_009).
    title = "Firefox accounts renamed Mozilla accounts | Firefox Accounts Help"
    tree = read_tree(screen(node(
        (0, 72, 1080, 1608),
        node((48, 300, 1032, 420), text="Search Support", cls="android.view.View"),
        node((48, 1254, 1032, 1374), cls=EDIT, resource_id="search-q", clickable=True,
             focusable=True),
        cls="android.webkit.WebView", text=title, focusable=True,
    )))
    field = next(e for e in tree.elements if e.kind == "input")
    assert field.text == "" and field.resource_id == "search-q"
    assert json.loads(tree.to_prompt(coords=False))["input"] == [[field.id, "[search-q]"]]


def login_form(gap_px: int, **field: object) -> bytes:
    """A form's labels sit on their fields: "User ID" and "Password" 24 px over 168 px boxes
    (a held-out school app), under a subtitle 66 px off the first field."""
    kids = [node((72, 700, 1008, 760), text="Login to your account", cls=TXT)]
    for top, label in ((826, "User ID"), (1200, "Password")):
        kids.append(node((72, top - gap_px - 57, 300, top - gap_px), text=label, cls=TXT))
        kids.append(node((72, top, 1008, top + 168), cls=EDIT, clickable=True, focusable=True,
                         password=label == "Password", **field))
    return screen(node((0, 0, 1080, 2400), *kids, cls="android.view.View"))


def test_an_unlabelled_field_takes_the_label_over_it() -> None:
    rows = json.loads(read_tree(login_form(24)).to_prompt(coords=False))
    assert [row[1] for row in rows["input"]] == ["User ID", "Password"]
    assert rows["text"] == ["Login to your account"]


@pytest.mark.parametrize(
    ("gap_px", "field"),
    [(66, {}), (24, {"resource_id": "com.app:id/etUser"}), (24, {"hint": "Your user ID"})],
    ids=["a-subtitle-further-off", "a-resource-id", "a-hint"],
)
def test_a_field_takes_no_label_from_further_off_nor_over_its_own_name(
    gap_px: int, field: dict[str, object],
) -> None:
    """A text further than a third of the field's height over it is the form's subtitle or the
    error under the field before; a field with a resource id or a hint is shown by that (the
    held-out forms' "[apiKeyInput]" stood under the app's subtitle, "[etPassword]" under the
    e-mail field's error)."""
    tree = read_tree(login_form(gap_px, **field))
    statics = " | ".join(e.text for e in tree.elements if e.kind == "text")
    assert "User ID" in statics and "Password" in statics  # left to read, as text
    assert not {e.text for e in tree.elements if e.kind == "input"} & {"User ID", "Password"}


def test_a_switch_still_borrows_a_tall_summary_beside_it() -> None:
    # A label may be taller than its switch (three lines of summary): still its row.
    tree = read_tree(screen(node(
        (0, 300, 1080, 700),
        node((40, 320, 800, 680), text="Send usage data", cls=TXT),
        node((900, 450, 1040, 550), cls="android.widget.Switch", checkable=True, clickable=True),
    )))
    assert [(e.kind, e.text) for e in tree.elements] == [
        ("switch", "Send usage data")
    ]


def tab_bar(**title_attrs: object) -> bytes:
    """WeChat's bottom tabs: an icon and, clipped under it, a name the dump places nowhere
    (``[0,0][0,0]``)."""
    tabs = [
        node((270 * k, 2249, 270 * (k + 1), 2310),
             node((270 * k + 105, 2255, 270 * k + 165, 2310), cls="android.widget.ImageView"),
             node((0, 0, 0, 0), text=name, cls=TXT, **title_attrs),
             cls="android.widget.RelativeLayout", clickable=True, focusable=True)
        for k, name in enumerate(("Chats", "Contacts", "Discover", "Me"))
    ]
    return screen(node((0, 2249, 1080, 2310), *tabs, cls="android.widget.LinearLayout"))


def test_a_control_is_named_by_the_text_the_dump_places_nowhere() -> None:
    rows = json.loads(read_tree(tab_bar()).to_prompt(coords=False))
    assert [row[1] for row in rows["btn"]] == ["Chats", "Contacts", "Discover", "Me"]
    assert "text" not in rows  # the names are the tabs', not text of their own


def test_text_marked_invisible_names_nothing() -> None:
    rows = json.loads(read_tree(tab_bar(visible_to_user=False)).to_prompt(coords=False))
    assert rows == {"btn": [[0], [1], [2], [3]]}  # unlabelled: their ids alone


def test_a_wrapper_of_a_control_takes_no_name_placed_nowhere() -> None:
    """DingTalk's tabs: a clickable around a button with the name and a copy placed nowhere;
    the wrapper still folds away, the button alone is offered."""
    tab = node((0, 2196, 270, 2265),
               node((99, 2217, 171, 2265), text="Clock in", cls=BTN, clickable=True),
               node((0, 0, 0, 0), text="Clock in", cls="android.view.View"),
               cls="android.view.View", clickable=True)
    rows = json.loads(read_tree(screen(tab)).to_prompt(coords=False))
    assert rows["btn"] == [[1, "Clock in"]]


def test_a_gap_between_a_lists_sections_is_not_offered() -> None:
    """WeChat's Discover page: clickable 22 px gaps between its groups, with no text."""
    def row(top: int, name: str) -> str:
        return node((0, top, 1080, top + 151), node((151, top + 49, 289, top + 103), text=name,
                                                   cls=TXT), clickable=True)
    gap = node((0, 379, 1080, 401), cls=TXT, clickable=True, resource_id="com.tencent.mm:id/jn6")
    page = node((0, 227, 1080, 2249), row(227, "Moments"), gap, row(401, "Channels"),
                cls="android.widget.ListView", focusable=True)
    rows = json.loads(read_tree(screen(page)).to_prompt(coords=False))
    assert [row[1:] for row in rows["btn"]] == [["Moments"], ["Channels"]]


def test_a_small_unlabelled_button_is_still_offered() -> None:
    """Low but not a gap: an icon button a tenth of the screen wide stays."""
    rows = json.loads(read_tree(screen(node((900, 300, 1008, 320), cls=BTN, clickable=True)))
                      .to_prompt(coords=False))
    assert rows == {"btn": [[0]]}


def settings_row(top: int) -> str:
    """A Compose settings row: a title over a wider summary, a switch at the row's end (a
    held-out VPN app's "Kill Switch"); the summary's edge is the nearer to the switch."""
    return node(
        (0, top, 1080, top + 140),
        node((207, top + 14, 405, top + 72), content_desc="Kill Switch", cls="android.view.View",
             focusable=True),
        node((207, top + 72, 739, top + 118), content_desc="Your IP stays hidden on a drop",
             cls="android.view.View", focusable=True),
        node((813, top, 978, top + 132), cls="android.widget.Switch", checkable=True,
             clickable=True, checked=True),
    )


def test_a_switch_borrows_the_title_over_its_summary() -> None:
    tree = read_tree(screen(settings_row(1323)))
    rows = json.loads(tree.to_prompt(coords=False))
    assert [row[1] for row in rows["switch"]] == ["Kill Switch"]
    assert rows["text"] == ["Your IP stays hidden on a drop"]


# --- text --------------------------------------------------------------------------------------


RUN_ON = "Q" * 30  # no word ends near the limit: the cut falls after 40 characters


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("x" * 38 + "\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466" + RUN_ON,
         "x" * 38),  # a ZWJ family emoji is one character on screen
        ("y" * 39 + "\U0001f1eb\U0001f1f7\U0001f1e9\U0001f1ea" + RUN_ON, "y" * 39),  # flags: pairs
        ("z" * 39 + "e\u0301tait" + RUN_ON, "z" * 39),  # a combining accent stays with its letter
        ("w" * 39 + "\u2764\ufe0f" + RUN_ON, "w" * 39),  # a variation selector too
        ("v" * 38 + "\U0001f1eb\U0001f1f7\U0001f1e9\U0001f1ea" + RUN_ON,
         "v" * 38 + "\U0001f1eb\U0001f1f7"),
        ("a" * 61, "a" * 40),
        # the end of the word the limit falls in, within a quarter of the limit
        ("word " * 20, ("word " * 8) + "word"),
        ("x" * 38 + "\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466 family " * 3,
         "x" * 38 + "\U0001f469\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"),
    ],
)
def test_a_long_label_is_cut_between_characters_as_drawn(text: str, kept: str) -> None:
    tree = read_tree(screen(node((0, 100, 1080, 300), text=text, clickable=True)))
    assert tree.elements[0].text == kept + "…"


@pytest.mark.parametrize("length", [41, 55, 60])
def test_a_label_a_little_over_the_limit_stays_whole(length: int) -> None:
    """Cutting "Preview the file FB_IMG_1737214499032.jpg" (41) would save one character and
    lose the file's type: up to half as long again as the limit, a piece stays whole."""
    text = ("Preview the file FB_IMG_1737214499032.jpg" + " and more" * 3)[:length]
    tree = read_tree(screen(node((0, 100, 1080, 300), text=text, clickable=True)))
    assert tree.elements[0].text == text.strip(" ")


def test_emoji_written_as_surrogate_pairs_survive() -> None:
    xml = screen(node((0, 100, 1080, 300), text="X", clickable=True)).replace(
        b'text="X"', b'text="&#55357;&#56832; ok"'
    )
    assert read_tree(xml).elements[0].text == "\U0001f600 ok"


def test_a_disabled_switch_that_is_on_does_not_read_off() -> None:
    # The flag for a disabled row was "off": a disabled switch that is on read "off on", and a
    # model reads "off" on a switch as its state.
    sw = node((800, 300, 1000, 400), cls="android.widget.Switch", text="Airplane mode",
              clickable=True, checkable=True, checked=True, enabled=False)
    doc = json.loads(read_tree(screen(sw)).to_prompt())
    assert doc["switch"][0][-1] == "disabled on"
