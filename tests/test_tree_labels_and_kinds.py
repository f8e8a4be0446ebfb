"""The tree-channel defects left from the 2026-12-05 audits (session 20): paragraphs of old
Chromium pages offered as buttons, encoded image data as labels, list chips shown as static
text, controls with one description, resource integers in labels, toggles with their state in
the description, bottom navigation as buttons."""

from __future__ import annotations

import json

import pytest
from _xml import node, screen
from conftest import CORPUS_DIR, requires_corpus

from perception import perceive, read_tree
from perception.tree import Tree
from perception.tree.cluster import without_junk, without_resource_ints

WEB = "android.webkit.WebView"
VIEW = "android.view.View"
TXT = "android.widget.TextView"
BTN = "android.widget.Button"
IMG = "android.widget.Image"


def _rows(tree: Tree) -> dict[str, list[list[object]]]:
    rows: dict[str, list[list[object]]] = json.loads(tree.to_prompt())
    return rows


def _labels(tree: Tree, kind: str) -> list[object]:
    """The labels of the prompt's rows of ``kind`` (static text rows have no id)."""
    at = 0 if kind == "text" else 1
    return [row[at] for row in _rows(tree).get(kind, [])]


# --- 1: an old Chromium page marks every node clickable ----------------------------------------


def _chromium_55_page(*, focusable: bool = False) -> bytes:
    """a2dpvol's "Webpage not available" as Chromium 55 reports it: every node clickable."""
    def leaf(box: tuple[int, int, int, int], said: str, cls: str = VIEW) -> str:
        return node(box, cls=cls, clickable=True, focusable=focusable, content_desc=said)

    return screen(node(
        (0, 200, 1080, 2400),
        node(
            (0, 200, 1080, 2400),
            leaf((100, 300, 300, 400), "x+AAAAAElFTkSuQmCC", IMG),
            leaf((100, 500, 980, 600), "Webpage not available"),
            leaf((100, 650, 980, 900), "The webpage at https://example.org could not be loaded"),
            leaf((100, 950, 980, 1050), "net::ERR_NAME_NOT_RESOLVED"),
            leaf((100, 1100, 400, 1200), "Reload"),
            leaf((500, 1100, 800, 1200), "Details"),
            node((100, 1300, 980, 1400), cls=BTN, clickable=True, text="Go back to the start"),
        ),
        cls=WEB, focusable=True, content_desc="Webpage not available",
    ))


def test_paragraphs_of_a_blanket_clickable_page_are_text() -> None:
    tree = read_tree(_chromium_55_page())
    buttons = _labels(tree, "btn")
    assert "Reload" in buttons and "Details" in buttons  # short: links, buttons
    assert "Go back to the start" in buttons  # a Button stays one
    for said in ("Webpage not available", "net::ERR_NAME_NOT_RESOLVED"):
        assert said not in buttons
        assert any(said in str(text) for text in _labels(tree, "text"))


def test_a_blanket_clickable_page_of_short_lines_keeps_them_as_links() -> None:
    # no prose on the page: "Sign up for free" and the rest may be its links
    lines = ["Sign up for free", "Download the app", "Read the documentation"]
    tree = read_tree(screen(node(
        (0, 200, 1080, 2400),
        *(
            node((60, 300 + 300 * k, 1020, 420 + 300 * k), cls=VIEW, clickable=True, text=line)
            for k, line in enumerate(lines)
        ),
        cls=WEB, focusable=True, text="Example - the page title",
    )))
    assert set(lines) <= set(_labels(tree, "btn"))


def test_focusable_web_nodes_are_links_not_paragraphs() -> None:
    # a page whose links the keyboard reaches (newer Chromium): clickability means something
    tree = read_tree(_chromium_55_page(focusable=True))
    assert "Webpage not available" in _labels(tree, "btn")


def test_a_page_with_few_clickables_keeps_them() -> None:
    # adfree's table of contents: links among plain text, not every node clickable
    tree = read_tree(screen(node(
        (0, 200, 1080, 2400),
        node((100, 300, 980, 400), cls=VIEW, text="Troubleshooting the app"),
        node((100, 450, 980, 550), cls=VIEW, text="Some words of a paragraph here"),
        node(
            (100, 600, 980, 700), cls=VIEW, clickable=True, content_desc="5. Enable notifications"
        ),
        cls=WEB, focusable=True,
    )))
    assert "5. Enable notifications" in _labels(tree, "btn")


@pytest.mark.parametrize(("label", "said"), [
    ("x+AAAAAElFTkSuQmCC", ""),
    ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA…", ""),
    ("data:image/png;base64,iVBORw0KGgo…", ""),
    ("Logo | QUJDREVGR0hJSktMTU5PUA==", "Logo"),
    ("Notifications", "Notifications"),
    ("jcardenasc93", "jcardenasc93"),
    ("whatis1plus1", "whatis1plus1"),
    ("/storage/emulated/0/Android", "/storage/emulated/0/Android"),
    ("C++", "C++"),
    ("1+1=2", "1+1=2"),
])
def test_encoded_image_data_is_no_label(label: str, said: str) -> None:
    assert without_junk(label) == said


def test_an_image_described_by_its_data_is_unlabelled() -> None:
    assert "x+AAAAAElFTkSuQmCC" not in read_tree(_chromium_55_page()).to_prompt()


@requires_corpus
def test_a2dpvol_webpage_not_available_offers_no_paragraph() -> None:
    tree = read_tree(CORPUS_DIR / "droidbot_a2dpvol_lowres/a2dpvol_2018-06-05/step_007/screen.xml")
    buttons = [str(b) for b in _labels(tree, "btn")]
    assert not any("webpage" in b.lower() or "ERR_" in b for b in buttons)
    assert "Load URL" in buttons  # the app's own controls outside the page
    assert "AAAA" not in tree.to_prompt()


@requires_corpus
def test_heaven_assistant_help_page_is_read_not_tapped() -> None:
    tree = read_tree(CORPUS_DIR / "droidbot_admob_apps/com.heaven.assistant/step_008/screen.xml")
    buttons = [str(b) for b in _labels(tree, "btn")]
    assert not any(b.startswith("Say ") for b in buttons)
    assert "OK" in buttons and "Done" in buttons


@requires_corpus
def test_adfree_table_of_contents_links_stay() -> None:
    tree = read_tree(CORPUS_DIR / "fdroidutg_apps/ch.abertschi.adfree/step_004/screen.xml")
    buttons = [str(b) for b in _labels(tree, "btn")]
    assert "1. About" in buttons and "6. Avoiding false-positives" in buttons


# --- 2: list items nothing in the dump makes tappable; controls with one description ----------

RECYCLER = "androidx.recyclerview.widget.RecyclerView"
IMGBTN = "android.widget.ImageButton"


def _chips(*, around: str = "", clickable_item: bool = False) -> bytes:
    chips = node(
        (45, 200, 1035, 500),
        node((100, 210, 380, 300), cls=TXT, text="Tuto", resource_id="app:id/textView"),
        node((400, 210, 620, 300), cls=TXT, text="TODO", resource_id="app:id/textView"),
        node(
            (640, 210, 900, 300), cls=TXT, text="Groceries", resource_id="app:id/textView",
            clickable=clickable_item,
        ),
        cls=RECYCLER, focusable=True, resource_id="app:id/listsRecyclerView",
    )
    if around == "web":
        chips = node((0, 100, 1080, 2400), chips, cls=WEB, focusable=True)
    elif around == "clickable":
        chips = node((0, 100, 1080, 2400), chips, clickable=True, content_desc="Card")
    return screen(chips)


def test_untouched_list_chips_are_offered_as_guesses() -> None:
    tree = read_tree(_chips())
    assert _labels(tree, "btn") == ["Tuto", "TODO", "Groceries"]
    chips = {e.id for e in tree.prompt_elements if e.kind == "btn"}
    assert tree.inferred_ids == chips


def test_guessed_chips_are_trusted_less_than_what_the_dump_says() -> None:
    xml = _chips().replace(
        b"</hierarchy>",
        b'<node index="9" text="Save" resource-id="app:id/save" class="android.widget.Button" '
        b'package="com.example" content-desc="" checkable="false" checked="false" '
        b'clickable="true" enabled="true" focusable="true" focused="false" scrollable="false" '
        b'long-clickable="false" password="false" selected="false" visible-to-user="true" '
        b'bounds="[100,600][400,700]" /></hierarchy>',
    )
    obs = perceive(xml=xml)
    conf = {c.text: c.confidence for c in obs.candidates}
    assert conf["Tuto"] < conf["Save"] and conf["TODO"] < conf["Save"]


@pytest.mark.parametrize("around", ["web", "clickable"])
def test_list_chips_in_a_page_or_a_control_stay_as_they_were(around: str) -> None:
    tree = read_tree(_chips(around=around))
    assert "Tuto" not in _labels(tree, "btn")
    assert tree.inferred_ids == frozenset()


def test_a_list_with_a_clickable_item_is_read_as_the_dump_says() -> None:
    tree = read_tree(_chips(clickable_item=True))
    assert _labels(tree, "btn") == ["Groceries"]
    assert tree.inferred_ids == frozenset()


def test_two_controls_with_one_description_show_their_ids() -> None:
    tree = read_tree(screen(
        node((800, 100, 900, 200), cls=IMGBTN, clickable=True, content_desc="Add List",
             resource_id="app:id/buttonShareList"),
        node((900, 100, 1000, 200), cls=IMGBTN, clickable=True, content_desc="Add List",
             resource_id="app:id/buttonAddList"),
        node((100, 300, 200, 400), cls=IMGBTN, clickable=True, content_desc="More",
             resource_id="app:id/c3"),
        node((300, 300, 400, 400), cls=IMGBTN, clickable=True, content_desc="More",
             resource_id="app:id/cc7"),
    ))
    assert _labels(tree, "btn") == [
        "Add List | [buttonShareList]", "Add List | [buttonAddList]", "More", "More",
    ]


def test_list_items_sharing_an_id_and_a_description_are_left_alone() -> None:
    tree = read_tree(screen(node(
        (0, 100, 1080, 2400),
        *(
            node((0, 100 + 200 * i, 1080, 300 + 200 * i), cls=IMGBTN, clickable=True,
                 content_desc="Play", resource_id="app:id/play")
            for i in range(3)
        ),
        cls=RECYCLER, scrollable=True,
    )))
    assert _labels(tree, "btn") == ["Play", "Play", "Play"]


@requires_corpus
@pytest.mark.parametrize("step", [f"step_00{i}" for i in range(3, 8)])
def test_onelist_chips_and_its_two_add_list_buttons(step: str) -> None:
    tree = read_tree(CORPUS_DIR / "fdroidutg_apps/com.lolo.io.onelist" / step / "screen.xml")
    buttons = _labels(tree, "btn")
    assert "Tuto ❓" in buttons and "TODO🗒️" in buttons
    assert "Tuto ❓" not in _labels(tree, "text")
    assert "Add List | [buttonShareList]" in buttons and "Add List | [buttonAddList]" in buttons
    assert len(tree.inferred_ids) >= 2


@requires_corpus
@pytest.mark.parametrize("step", [
    "fdroidutg_apps/com.uberspot.a2048/step_001", "fdroidutg_weibo/weibo_2023-10-24/step_036",
])
def test_lists_of_a_web_page_stay_text(step: str) -> None:
    assert read_tree(CORPUS_DIR / step / "screen.xml").inferred_ids == frozenset()


# --- 3: resource integers in labels; a state said in the description --------------------------


@pytest.mark.parametrize(("label", "said"), [
    ("Learning 2131888976", "Learning"),
    ("2131888976 | Learning", "2131888976 | Learning"),  # a number alone may be shown
    ("Order 2100000000", "Order 2100000000"),  # under 0x7f000000: no resource id
    ("Call 2131888976.5", "Call 2131888976.5"),
    ("Balance 12131888976", "Balance 12131888976"),
])
def test_resource_integers_are_cut_from_labels(label: str, said: str) -> None:
    assert without_resource_ints(label) == said


def test_a_language_button_showing_its_resource_id_is_named_without_it() -> None:
    tree = read_tree(screen(node(
        (0, 60, 160, 190), cls="android.view.ViewGroup", clickable=True,
        content_desc="Learning 2131888976", resource_id="com.duolingo:id/menuLanguage",
    )))
    assert _labels(tree, "btn") == ["Learning"]


def _toggle(said: str, text: str = "") -> Tree:
    return read_tree(screen(node(
        (300, 700, 500, 900), cls="android.widget.LinearLayout", clickable=True,
        focusable=True, content_desc=said, text=text,
    )))


@pytest.mark.parametrize(("said", "kind", "row"), [
    ("Positive, On", "switch", [0, "Positive", "370 333", "on"]),
    ("Negative, Off", "switch", [0, "Negative", "370 333"]),
    ("Easy, Selected", "btn", [0, "Easy", "370 333", "sel"]),
    ("Hard, Not selected", "btn", [0, "Hard", "370 333"]),
    ("Turn it On", "btn", [0, "Turn it On", "370 333"]),  # not the ", On" form
    ("Music, Only", "btn", [0, "Music, Only", "370 333"]),
])
def test_a_state_in_the_description_is_a_flag(said: str, kind: str, row: list[object]) -> None:
    assert _rows(_toggle(said))[kind] == [row]


def test_a_state_in_a_description_beside_the_text_is_a_flag() -> None:
    # Habitica's "Daily" tab: text "Daily", description "Daily, Selected"
    rows = _rows(_toggle("Daily, Selected", text="Daily"))
    assert rows["btn"] == [[0, "Daily", "370 333", "sel"]]


@requires_corpus
def test_habitica_toggles_and_duolingo_language() -> None:
    habitica = CORPUS_DIR / "droidbot_habitica/habitica_2020-08-29/step_002/screen.xml"
    rows = _rows(read_tree(habitica))
    assert [r[1:] for r in rows["switch"]] == [
        ["Positive", "396 440", "on"], ["Negative", "598 440"],
    ]
    assert ["Easy", "368 617", "sel"] in [r[1:] for r in rows["btn"]]
    assert not any("selected" in str(r[1]).lower() for r in rows["btn"])
    duo = read_tree(CORPUS_DIR / "llamatouch/trace_18/step_002/screen.xml")
    assert "2131888976" not in duo.to_prompt() and "Learning" in _labels(duo, "btn")
