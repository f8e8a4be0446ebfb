"""The screenshot review of the tree prompt (kinds, states and labels): what a row is called,
whether it reads as selected, and how its label's pieces are joined.

Each fix has a small screen written here and, where the reviewer found it, the corpus screen.
Every test runs on both kernel implementations.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _xml import SCREEN, node, screen
from conftest import requires_corpus

from perception import read_tree
from perception.geometry import point_pm_to_px
from perception.tree import Tree
from perception.types import PointPm, PointPx

pytestmark = pytest.mark.usefixtures("pipeline_impl")

TXT = "android.widget.TextView"
IMG = "android.widget.ImageView"
LIN = "android.widget.LinearLayout"
FRAME = "android.widget.FrameLayout"
VIEW = "android.view.View"


def rows(tree: Tree) -> list[tuple[str, list[object]]]:
    """(kind, row) of every prompt row, in prompt order."""
    doc = json.loads(tree.to_prompt())
    return [(kind, row) for kind, group in doc.items() for row in group]


def row_of(tree: Tree, label: str) -> tuple[str, list[object]]:
    for kind, row in rows(tree):
        if (row[0] if kind == "text" else row[1]) == label:
            return kind, row
    raise AssertionError(f"no row {label!r} in {tree.to_prompt()}")


def flags(row: list[object]) -> str:
    return str(row[-1]) if len(row) > 3 or (len(row) == 3 and isinstance(row[0], str)) else ""


def corpus(name: str) -> Tree:
    from conftest import CORPUS_DIR

    path = Path(CORPUS_DIR) / name
    if path.is_dir():
        path = path / "screen.xml"
    return read_tree(path.read_bytes())


# --- kinds -------------------------------------------------------------------------------------

def tapped(cls: str, label: str = "Item", **attrs: object) -> str:
    return node((0, 500, 1080, 650), node((40, 520, 1000, 630), text=label, cls=TXT),
                cls=cls, clickable=True, **attrs)


@pytest.mark.parametrize("cls", ["android.widget.TableLayout", "android.widget.TableRow"])
def test_a_table_is_not_a_tab(cls: str) -> None:
    assert row_of(read_tree(screen(tapped(cls))), "Item")[0] == "btn"


@pytest.mark.parametrize("cls", [
    "com.google.android.material.bottomnavigation.BottomNavigationItemView",
    "com.google.android.material.navigation.NavigationBarItemView",
    "com.google.android.material.tabs.TabLayout$TabView",
    "androidx.appcompat.app.ActionBar$Tab",
    "androidx.appcompat.app.ActionBar.Tab",  # "$" written as "." (a held-out dump, 2026-12-07)
])
def test_tab_items_are_tabs(cls: str) -> None:
    assert row_of(read_tree(screen(tapped(cls))), "Item")[0] == "tab"


def test_a_tab_bar_that_is_not_clicked_is_no_tab() -> None:
    """A class named like a tab that takes no tap (Futu's FtPrimaryTabView bar holding its
    tabs) is static text, as any label that takes no tap."""
    bar = node((0, 300, 1080, 400), cls="cn.futu.uikit.widget.tabview.FtPrimaryTabView",
               content_desc="Tabs")
    assert row_of(read_tree(screen(bar)), "Tabs")[0] == "text"


def test_the_controls_of_a_tab_widget_are_tabs() -> None:
    tabs = node((0, 200, 1080, 330), *(
        node((360 * k, 200, 360 * (k + 1), 330), text=name, cls="android.view.View",
             clickable=True, selected=k == 0)
        for k, name in enumerate(("Day", "Trips", "World"))
    ), cls="android.widget.TabWidget")
    tree = read_tree(screen(tabs))
    assert [kind for kind, _ in rows(tree)] == ["tab"] * 3
    assert flags(row_of(tree, "Day")[1]) == "sel"


@pytest.mark.parametrize("cls", [
    "android.widget.ListView", "android.widget.ExpandableListView",
    "androidx.recyclerview.widget.RecyclerView", "android.widget.GridView",
    "androidx.viewpager.widget.ViewPager", "android.widget.ScrollView",
])
@pytest.mark.parametrize("how", ["clickable", "long_clickable"])
def test_a_list_that_takes_taps_is_a_list(cls: str, how: str) -> None:
    items = [node((0, 300 + 100 * k, 1080, 400 + 100 * k), text=f"row {k}", cls=TXT,
                  clickable=True) for k in range(3)]
    tree = read_tree(screen(node((0, 300, 1080, 600), *items, cls=cls, scrollable=True,
                                 resource_id="com.app:id/rows", **{how: True})))
    kind, row = row_of(tree, "[rows]")
    assert kind == "list" and "scroll" in flags(row)


def test_a_clickable_view_that_scrolls_stays_a_button() -> None:
    """Flutter marks its tappable rows scrollable: a class that is no list keeps its kind."""
    tree = read_tree(screen(node((0, 300, 1080, 400), text="lib", cls="android.view.View",
                                 clickable=True, scrollable=True)))
    assert row_of(tree, "lib")[0] == "btn"


def spinner() -> bytes:
    """adfree's dropdown: a clickable, 'scrollable' Spinner drawing its value in a clickable
    item view."""
    value = node((75, 993, 504, 1143),
                 node((105, 1038, 414, 1109), text="mute audio", cls=TXT, clickable=True),
                 cls=LIN, clickable=True, resource_id="app:id/setting_spinner_item_container")
    return screen(node((75, 993, 907, 1143), value, cls="android.widget.Spinner",
                       clickable=True, scrollable=True, focusable=True,
                       resource_id="app:id/spinner"))


def test_a_spinner_shows_its_value_and_does_not_scroll() -> None:
    tree = read_tree(spinner())
    assert [(kind, row[1], flags(row)) for kind, row in rows(tree)] == [
        ("select", "mute audio", "")
    ]


@requires_corpus
def test_adfree_spinner() -> None:
    tree = corpus("fdroidutg_apps/ch.abertschi.adfree/step_003")
    selects = [row for kind, row in rows(tree) if kind == "select"]
    assert [(row[1], flags(row)) for row in selects] == [("mute audio", "")]
    assert all(row[1] != "mute audio" for kind, row in rows(tree) if kind == "btn")


@requires_corpus
def test_corpus_kinds() -> None:
    thermo = corpus("droidbot_admob_apps/com.heaven.thermo/step_000")
    assert not any(kind == "tab" for kind, _ in rows(thermo))
    assert row_of(corpus("droidbot_yelp/yelp_2017/step_014"), "[list]")[0] == "list"
    launcher = corpus("fdroidutg_apps/de.szalkowski.activitylauncher/step_004")
    kind, row = row_of(launcher, "[expandableListView1]")
    assert kind == "list" and flags(row) == "long scroll"
    assert row_of(corpus("llamatouch/trace_7/step_005"), "Day")[0] == "tab"


# --- selected ----------------------------------------------------------------------------------

def bottom_tab(label: str, *, icon_selected: bool = False, text_selected: bool = False) -> str:
    return node((0, 2200, 540, 2400),
                node((220, 2210, 320, 2310), cls=IMG, selected=icon_selected),
                node((200, 2320, 340, 2390), text=label, cls=TXT, selected=text_selected),
                cls=FRAME, clickable=True)


def test_a_tab_whose_icon_is_selected_reads_selected() -> None:
    tree = read_tree(screen(bottom_tab("Photos", icon_selected=True), node(
        (540, 2200, 1080, 2400), node((760, 2320, 880, 2390), text="Albums", cls=TXT),
        cls=FRAME, clickable=True)))
    assert flags(row_of(tree, "Photos")[1]) == "sel"
    assert flags(row_of(tree, "Albums")[1]) == ""


def test_a_scrolling_title_does_not_select_its_row() -> None:
    """A marquee TextView is selected to make it scroll (QQ Music's song titles): its row is
    not the selected one."""
    tree = read_tree(screen(bottom_tab("Song - Singer", text_selected=True)))
    assert flags(row_of(tree, "Song - Singer")[1]) == ""


@requires_corpus
def test_corpus_selected_tabs() -> None:
    assert flags(row_of(corpus("testcube_transsion/chatter_2025-01-25/step_010"),
                        "Photos")[1]) == "sel"
    assert flags(row_of(corpus("dumps/wework-auto-reply__ui_step2_contacts.xml"),
                        "1 | 通讯录")[1]) == "sel"
    assert flags(row_of(corpus("dumps/futu-graber__window_dump.xml"), "全部")[1]) == "sel"


@requires_corpus
def test_corpus_marquee_titles_are_not_selected() -> None:
    """QQ Music's mini player (the song title scrolls) and album page title, WhatsApp's
    status line: selected TextViews, rows not selected."""
    player = corpus("droidbotexp_qqmusic/qqmusic_2021-11-23/step_004")
    assert flags(row_of(player, "红玫瑰\xa0-\xa0陈奕迅")[1]) == ""
    album = corpus("droidbotexp_qqmusic/qqmusic_2021-11-23/step_016")
    assert all("sel" not in flags(row) for kind, row in rows(album) if row[1] == "专辑"
               and kind == "btn" and row[2].startswith("0 0 "))
    chat = corpus("dumps/auto-zap__window_dump.xml")
    assert all("sel" not in flags(row) for _, row in rows(chat) if "Mensagem" in str(row))


# --- label pieces ------------------------------------------------------------------------------

def digits(number: str, left: int, top: int, *, width: int = 27, step: int = 21,
           group_gap: int = 12) -> list[str]:
    """A number drawn one digit per node, as Unicom's number picker does: the boxes overlap
    within a group, groups are a space apart."""
    out, x = [], left
    for ch in number:
        if ch == " ":
            x += width - step + group_gap
            continue
        out.append(node((x, top, x + width, top + 51), text=ch, cls=TXT))
        x += step
    return out


def test_a_number_drawn_digit_by_digit_reads_as_one() -> None:
    kids = digits("132 8432 6985", 579, 1591)
    kids.append(node((880, 1570, 1026, 1663), text="重点大学", cls=TXT))
    tree = read_tree(screen(node((500, 1560, 1080, 1680), *kids, cls=LIN)))
    assert [row[0] for kind, row in rows(tree)] == ["132 8432 6985 | 重点大学"]


def test_a_reading_split_into_touching_texts_reads_as_one() -> None:
    """heaven.thermo's reading: "30.7", " °C ", " / ", "87.3", " F " side by side."""
    parts = ["30.7", " °C ", " / ", "87.3", " F "]
    lefts = [351, 451, 529, 576, 676, 730]
    kids = [node((lefts[k], 1554, lefts[k + 1], 1622), text=t, cls=TXT)
            for k, t in enumerate(parts)]
    tree = read_tree(screen(node((290, 1524, 790, 1648), *kids, cls="android.widget.TableRow",
                                 clickable=True)))
    assert [(kind, row[1]) for kind, row in rows(tree)] == [("btn", "30.7 °C / 87.3 F")]


def test_texts_apart_on_a_line_stay_pieces() -> None:
    kids = [node((40, 500, 300, 550), text="Price", cls=TXT),
            node((700, 500, 1000, 550), text="$3", cls=TXT)]
    tree = read_tree(screen(node((0, 480, 1080, 570), *kids, cls=LIN, clickable=True)))
    assert row_of(tree, "Price | $3")[0] == "btn"


def test_texts_on_two_lines_stay_pieces() -> None:
    kids = [node((40, 500, 300, 550), text="Title", cls=TXT),
            node((300, 550, 700, 600), text="Subtitle", cls=TXT)]
    tree = read_tree(screen(node((0, 480, 1080, 620), *kids, cls=LIN, clickable=True)))
    assert row_of(tree, "Title | Subtitle")[0] == "btn"


def test_chinese_texts_join_without_a_space() -> None:
    kids = [node((40, 500, 200, 550), text="全部播放", cls=TXT),
            node((200, 500, 330, 550), text="(808)", cls=TXT),
            node((40, 600, 200, 650), text="请先进行", cls=TXT),
            node((205, 600, 300, 650), text="账号", cls=TXT)]
    tree = read_tree(screen(node((0, 480, 1080, 700), *kids, cls=LIN, clickable=True)))
    assert row_of(tree, "全部播放 (808) | 请先进行账号")[0] == "btn"


def test_a_spelled_out_duplicate_is_dropped() -> None:
    row = node((0, 300, 1080, 400), node((171, 310, 369, 364), text="\u2068570532300\u2069",
                                         content_desc="5 7 0 5 3 2 3 0 0 ", cls=TXT),
               node((400, 310, 600, 364), text="28 Mar", cls=TXT), cls=LIN, clickable=True)
    assert row_of(read_tree(screen(row)), "570532300 | 28 Mar")[0] == "btn"


def test_a_piece_inside_a_cut_piece_stays() -> None:
    """activitylauncher's row: the title "Settings" is inside a class name that is cut."""
    kids = [node((306, 1026, 576, 1099), text="Settings", cls=TXT),
            node((306, 1099, 876, 1205),
                 text="de.szalkowski.activitylauncher.Settings.SettingsActivity.Legacy", cls=TXT)]
    tree = read_tree(screen(node((0, 1020, 1080, 1212), *kids, cls=LIN, clickable=True)))
    assert row_of(tree, "Settings | de.szalkowski.activitylauncher.Settings.…")[0] == "btn"


def test_a_piece_inside_a_whole_piece_still_goes() -> None:
    kids = [node((0, 0, 500, 100), text="Pictures", content_desc="Pictures, Tab 1 of 2.",
                 cls=TXT)]
    tree = read_tree(screen(node((0, 0, 500, 100), *kids, clickable=True)))
    assert row_of(tree, "Pictures, Tab 1 of 2.")[0] == "btn"


def dialog_in(barrier_box: tuple[int, int, int, int]) -> bytes:
    """Flutter's modal barrier ("Dismiss", it closes the dialog) around its dialog: the title,
    two choices (a held-out app's language picker)."""
    title = node((325, 754, 755, 826), content_desc="Select Language", cls=VIEW, focusable=True)
    english = node((189, 897, 891, 1056), content_desc="English", cls=VIEW, clickable=True)
    arabic = node((189, 1099, 891, 1258), content_desc="Arabic", cls=VIEW, clickable=True)
    return screen(node(barrier_box, node(barrier_box, title, english, arabic, cls=VIEW),
                       content_desc="Dismiss", cls=VIEW, clickable=True))


def test_a_page_sized_control_with_a_name_keeps_it() -> None:
    """A control of three quarters of the screen or more, named, around other controls, is a
    page or a barrier: the text inside is not its name (an agent asked to choose a language
    would have tapped "Dismiss | Select Language")."""
    tree = read_tree(dialog_in((0, 0, 1080, 2400)))
    assert row_of(tree, "Dismiss")[0] == "btn"
    assert row_of(tree, "Select Language")[0] == "text"
    assert row_of(tree, "English")[0] == "btn"


def test_a_smaller_named_control_around_controls_still_reads_its_text() -> None:
    """Under three quarters of the screen (a card with its own button) it is a row as before."""
    tree = read_tree(dialog_in((0, 600, 1080, 1500)))
    assert row_of(tree, "Dismiss | Select Language")[0] == "btn"


def place_of(tree: Tree, label: str) -> tuple[int, int]:
    """The grid point a row's tap lands on."""
    x, y = str(row_of(tree, label)[1][2]).split()
    return int(x), int(y)


def tap_px(tree: Tree, label: str) -> PointPx:
    """The pixel a row's tap lands on, as the executor maps the grid point back."""
    return point_pm_to_px(PointPm(*place_of(tree, label)), tree.screen)


CARD = (105, 885, 975, 1588)
"""The card of a held-out Flutter app's dialog (an overlay permission asked for first)."""


def card_then_barrier(**barrier: object) -> bytes:
    """Flutter's dialog route, then its barrier: Flutter lists the barrier after the route's
    content (a screen reader reads the dialog first) though it paints beneath it."""
    title = node((168, 948, 912, 1032), content_desc="Enable the floating pet", cls=VIEW,
                 focusable=True)
    body = node((168, 1074, 912, 1336), content_desc="It needs the overlay permission.",
                cls=VIEW, focusable=True)
    cancel = node((549, 1399, 717, 1525), content_desc="Cancel", cls="android.widget.Button",
                  clickable=True)
    go = node((738, 1399, 912, 1525), content_desc="Open", cls="android.widget.Button",
              clickable=True)
    attrs: dict[str, object] = {"content_desc": "Dismiss", "cls": VIEW, "clickable": True}
    attrs.update(barrier)
    full = (0, 0, 1080, 2337)
    route = node(full, node(CARD, title, body, cancel, go, cls=VIEW), cls=VIEW)
    return screen(node(full, route, node(full, **attrs), cls=VIEW))


def on_card(point: PointPx) -> bool:
    return CARD[0] <= point.x < CARD[2] and CARD[1] <= point.y < CARD[3]


def test_a_flutter_barrier_listed_after_its_dialog_lies_under_it() -> None:
    """The dialog is offered (it was occluded, the barrier alone offered), and "Dismiss" is
    tapped outside the card, where a tap closes the dialog."""
    tree = read_tree(card_then_barrier())
    assert row_of(tree, "Cancel")[0] == "btn" and flags(row_of(tree, "Cancel")[1]) == ""
    assert row_of(tree, "Open")[0] == "btn"
    assert row_of(tree, "Enable the floating pet | It needs the overlay permission.")[0] == "text"
    assert row_of(tree, "Dismiss")[0] == "btn"
    assert not on_card(tap_px(tree, "Dismiss"))
    assert len(tree.cleaned.barriers) == 1


def test_a_barrier_around_its_dialog_is_tapped_outside_it() -> None:
    tree = read_tree(dialog_in((0, 0, 1080, 2400)))
    assert not 754 <= tap_px(tree, "Dismiss").y < 1258  # the dialog's title to its last choice


@pytest.mark.parametrize(
    "barrier",
    [{"resource_id": "com.app:id/touch_blocker"}, {"cls": "android.widget.FrameLayout"},
     {"content_desc": ""}],
    ids=["resource-id", "class", "no-description"],
)
def test_a_full_screen_layer_that_is_no_flutter_barrier_still_covers(
    barrier: dict[str, object],
) -> None:
    """A touch blocker of a native app (a resource id, a layout class) or an unnamed layer
    drawn over the page takes its taps: what is under it stays covered."""
    tree = read_tree(card_then_barrier(**barrier))
    assert not tree.cleaned.barriers
    assert "Cancel" not in tree.to_prompt()  # occluded: not offered
    assert "Cancel" in json.dumps([e.text for e in tree.elements], ensure_ascii=False)


def test_a_barrier_over_a_page_keeps_its_middle() -> None:
    """Over a page (a coach mark's layer around the app's page) there is no outside to aim at:
    the barrier's elements span most of it, and its tap stays where it was."""
    rows_ = [node((0, y, 1080, y + 200), content_desc=f"Row {y}", cls=VIEW, clickable=True)
             for y in range(100, 2200, 300)]
    full = (0, 0, 1080, 2400)
    tree = read_tree(screen(node(full, node(full, *rows_, cls=VIEW), content_desc="Pin it",
                                 cls=VIEW, clickable=True)))
    assert len(tree.cleaned.barriers) == 1
    assert place_of(tree, "Pin it") == (500, 500)


def bottom_sheet_dialog(sheet_top: int) -> bytes:
    """A Material ``BottomSheetDialog``: the layer that closes it on a tap outside the sheet
    (``touch_outside``), then the sheet (``design_bottom_sheet``), which takes every touch on
    its box, with a title and two choices."""
    full = (0, 85, 1080, 2222)
    sheet = (0, sheet_top, 1080, 2222)
    choices = [
        node((40, y, 1040, y + 150), text=label, cls="android.widget.RadioButton",
             clickable=True, checkable=True)
        for y, label in ((sheet_top + 150, "Medina"), (sheet_top + 320, "Mecca"))
    ]
    return screen(node(
        full,
        node(full, resource_id="com.app:id/touch_outside", cls=VIEW, clickable=True),
        node(sheet, node((40, sheet_top + 40, 1040, sheet_top + 120), text="City", cls=TXT),
             *choices, resource_id="com.app:id/design_bottom_sheet", cls=FRAME),
        resource_id="com.app:id/coordinator", cls="androidx.coordinatorlayout.widget.Coordinator"
        "Layout",
    ))


def test_a_bottom_sheets_outside_is_tapped_above_the_sheet() -> None:
    """Its middle lay on the sheet, which takes the tap: the tap goes above the sheet."""
    tree = read_tree(bottom_sheet_dialog(sheet_top=900))
    assert 85 <= tap_px(tree, "[touch_outside]").y < 900
    assert row_of(tree, "Mecca")[0] == "radio"


def test_a_bottom_sheet_that_fills_the_screen_has_no_outside() -> None:
    tree = read_tree(bottom_sheet_dialog(sheet_top=85))
    assert "touch_outside" not in tree.to_prompt()
    assert row_of(tree, "Medina")[0] == "radio"


def test_a_page_sized_control_without_controls_inside_reads_its_text() -> None:
    """Tap anywhere to go on: a named page-sized control with nothing else to press in it."""
    hint = node((300, 1100, 780, 1160), text="Tap anywhere to continue", cls=TXT)
    tree = read_tree(screen(node(SCREEN, hint, content_desc="Welcome", cls=VIEW,
                                 clickable=True)))
    assert row_of(tree, "Welcome | Tap anywhere to continue")[0] == "btn"


@requires_corpus
def test_corpus_labels() -> None:
    unicom = corpus("adb_oneoffs/unicom_home")
    assert row_of(unicom, "132 8432 6985 | 重点大学")[0] == "text"
    thermo = corpus("droidbot_admob_apps/com.heaven.thermo/step_004")
    assert row_of(thermo, "30.7 °C / 87.3 F")[0] == "btn"
    samsung = corpus("adb_oneoffs/samsung_messages_tablet").to_prompt()
    assert "570532300" in samsung and "5 7 0 5" not in samsung
    launcher = corpus("fdroidutg_apps/de.szalkowski.activitylauncher/step_004")
    # the class name (48 characters) is whole, and says the title "Settings" in it
    assert row_of(launcher, "Icon | private | de.szalkowski.activitylauncher."
                            "SettingsActivity")[0] == "btn"
    # Android 12's permission dialog: the question is text, not a button.
    qq = corpus("droidbotexp_qqmusic/qqmusic_2021-11-23/step_025")
    assert row_of(qq, "Allow QQMusic to take pictures and record video?")[0] == "text"
    # A clickable web view is named by its page's title; the page's text stays text.
    firefox = corpus("fdroidutg_apps/mattecarra.accapp/step_006")
    assert row_of(firefox, "Mozilla Support")[0] == "web"
    assert row_of(firefox, "Search Support")[0] == "text"


# --- list items --------------------------------------------------------------------------------

def tiles(*, focusable: bool, labelled: bool = True, cls: str = "RecyclerView") -> bytes:
    """DocumentsUI's photo grid: focusable tiles described with the file's name, not
    clickable, each with a clickable preview button."""
    kids = [node((240 * k, 700, 240 * (k + 1), 900),
                 node((240 * k + 150, 700, 240 * k + 240, 790), content_desc=f"Preview {k}",
                      clickable=True),
                 content_desc=f"IMG_{k}.jpg" if labelled else "", focusable=focusable, cls=LIN)
            for k in range(3)]
    return screen(node((0, 680, 1080, 2400), *kids, cls=f"androidx.recyclerview.widget.{cls}"
                       if cls == "RecyclerView" else f"android.widget.{cls}", scrollable=True))


def test_focusable_items_of_a_list_can_be_tapped() -> None:
    tree = read_tree(tiles(focusable=True))
    assert [row[1] for kind, row in rows(tree) if kind == "btn"] == [
        "IMG_0.jpg", "Preview 0", "IMG_1.jpg", "Preview 1", "IMG_2.jpg", "Preview 2"
    ]


@pytest.mark.parametrize("case", ["not focusable", "unlabelled", "scroll view"])
def test_other_children_of_a_list_are_not_made_tappable(case: str) -> None:
    tree = read_tree(tiles(
        focusable=case != "not focusable", labelled=case != "unlabelled",
        cls="ScrollView" if case == "scroll view" else "RecyclerView",
    ))
    assert all(not str(row[1]).startswith("IMG") for kind, row in rows(tree) if kind == "btn")


def test_texts_of_sibling_list_items_do_not_merge() -> None:
    """OneList's chips: TextViews straight under a RecyclerView are items, one row each (and
    offered to tap: nothing in the dump takes their touches, see test_tree_labels_and_kinds)."""
    chips = [node((177 + 220 * k, 210, 383 + 220 * k, 297), text=t, cls=TXT)
             for k, t in enumerate(("Tuto", "TODO", "Hello World"))]
    tree = read_tree(screen(node((45, 204, 1035, 897), *chips,
                                 cls="androidx.recyclerview.widget.RecyclerView")))
    assert [row[1] for kind, row in rows(tree) if kind == "btn"] == ["Tuto", "TODO",
                                                                     "Hello World"]


def test_nested_scroll_areas_with_one_box_are_one_list_row() -> None:
    inner = node((0, 100, 1080, 2000), node((0, 100, 1080, 300), text="row", cls=TXT,
                                            clickable=True),
                 cls="androidx.recyclerview.widget.RecyclerView", scrollable=True,
                 resource_id="app:id/dir_list")
    outer = node((0, 100, 1080, 2000), inner, cls="androidx.viewpager.widget.ViewPager",
                 scrollable=True, long_clickable=True)
    lists = [row for kind, row in rows(read_tree(screen(outer))) if kind == "list"]
    assert [(row[1], flags(row)) for row in lists] == [("[dir_list]", "long scroll")]


def test_nested_scroll_areas_that_say_different_things_both_stay() -> None:
    """The outer's own label is not the inner's: dropping either row would lose what it says
    (a case hypothesis found for test_tree_absorb's no-piece-lost property)."""
    inner = node((0, 100, 1080, 2000), cls="android.widget.ListView", scrollable=True,
                 content_desc="Messages")
    outer = node((0, 100, 1080, 2000), inner, cls="android.widget.ScrollView", scrollable=True,
                 content_desc="Inbox")
    lists = [row[1] for kind, row in rows(read_tree(screen(outer))) if kind == "list"]
    assert lists == ["Inbox", "Messages"]


def test_a_lone_separator_is_not_a_row() -> None:
    kids = [node((40, 500, 300, 550), text="Vegan", cls=TXT),
            node((600, 500, 620, 550), text="·", cls=TXT)]
    tree = read_tree(screen(node((0, 400, 1080, 600), node((0, 400, 500, 600), kids[0]),
                                 node((500, 400, 1080, 600), kids[1]))))
    assert [row[0] for kind, row in rows(tree)] == ["Vegan"]


@requires_corpus
def test_corpus_lists() -> None:
    picker = corpus("testcube_transsion/chatter_2025-01-25/step_005")
    photos = [row for kind, row in rows(picker) if kind == "btn"
              and str(row[1]).startswith(("Screenshot_", "IMG"))]
    assert len(photos) >= 6
    assert len([row for kind, row in rows(picker) if kind == "list" and row[2] ==
                "0 49 1000 1000"]) == 1
    onelist = corpus("fdroidutg_apps/com.lolo.io.onelist/step_005").to_prompt()
    assert "Tuto ❓ | TODO" not in onelist
    weibo = corpus("fdroidutg_weibo/weibo_2023-10-24/step_008")
    assert len([row for kind, row in rows(weibo) if kind == "list"
                and row[2] == "0 0 1000 846"]) == 1
    maps = corpus("llamatouch/trace_7/step_002")
    assert not any(kind == "text" and row[0] == "·" for kind, row in rows(maps))


# --- empty wrappers of their own controls (a newcomer's walkthrough of Habitica's habit list) ---


def _habit_row(**wrapper: object) -> Tree:
    """Habitica's habit row: a clickable FrameLayout around a "+" button and a clickable title."""
    kids = [node((0, 577, 138, 730), content_desc="Positive", cls="android.widget.Button",
                 clickable=True),
            node((166, 610, 900, 680), text="Take a short break", cls=TXT, clickable=True)]
    attrs: dict[str, object] = {"cls": "android.widget.FrameLayout", "clickable": True, **wrapper}
    return read_tree(screen(node((0, 577, 1080, 730), *kids, **attrs)))


def test_an_empty_wrapper_whose_tap_lands_on_its_control_is_not_offered() -> None:
    tree = _habit_row()
    assert [r[1] for _, r in rows(tree)] == ["Positive", "Take a short break"]


@pytest.mark.parametrize(
    ("wrapper", "why"),
    [
        ({"resource_id": "com.app:id/habit_row"}, "an id to show names it"),
        ({"long_clickable": True}, "a long press the title does not take"),
    ],
)
def test_a_wrapper_that_offers_more_stays(wrapper: dict[str, object], why: str) -> None:
    labels = [r[1] for _, r in rows(_habit_row(**wrapper))]
    assert len(labels) == 3, why


def test_a_wrapper_whose_tap_misses_its_controls_stays() -> None:
    kids = [node((0, 577, 138, 730), content_desc="Positive", cls="android.widget.Button",
                 clickable=True)]
    tree = read_tree(screen(node((0, 577, 1080, 730), *kids, cls="android.widget.FrameLayout",
                                 clickable=True)))
    assert [r[1] for _, r in rows(tree)] == ["", "Positive"]


@requires_corpus
def test_habitica_habit_rows_are_their_titles_and_buttons() -> None:
    tree = corpus("droidbot_habitica/habitica_2020-08-29/step_001")
    labels = [r[1] for kind, r in rows(tree) if kind == "btn"]
    assert "" not in labels
    assert {"Take a short break", "Study/Procrastinate", "Positive", "Negative"} <= set(labels)


def test_a_folded_wrapper_maps_its_nodes_to_its_control() -> None:
    """A wrapper of a wrapper of a title: both fold into the title, whose element the wrappers'
    nodes belong to (their tap lands there: actionable survival counts them)."""
    title = node((166, 610, 900, 680), text="Take a short break", cls=TXT, clickable=True)
    inner = node((100, 590, 1000, 700), title, cls="android.widget.FrameLayout", clickable=True)
    tree = read_tree(screen(node((0, 577, 1080, 730), inner, cls="android.widget.FrameLayout",
                                 clickable=True)))
    assert [r[1] for _, r in rows(tree)] == ["Take a short break"]
    shown = tree.prompt_elements[0]
    assert set(tree.element_of_node[1:4].tolist()) == {shown.id}
