"""What a root absorbs: no text is lost to a label's cap.

A clickable container that covers a page or a list does not swallow its rows' text; a row with
more text than a label holds keeps the first pieces and shows the rest as static text. Every
test runs on both kernel implementations.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _xml import node, screen
from conftest import requires_corpus
from hypothesis import given, settings, strategies as st

from perception import ElementFlag, fastpath, read_tree
from perception._kernels_tree_py import (
    SUMMARY_MAX_CHARS,
    label_piece as _piece,
    summarises,
    unspelled as _unspelled,
)
from perception.config import TreeConfig
from perception.tree import Tree
from perception.tree.cluster import junk_piece, without_resource_ints, without_state

pytestmark = pytest.mark.usefixtures("pipeline_impl")

TXT = "android.widget.TextView"
BTN = "android.widget.Button"
IMG = "android.widget.ImageView"
SEP = " | "
CAP = TreeConfig().max_label_pieces


def prompt(tree: Tree) -> dict[str, list[list[object]]]:
    doc: dict[str, list[list[object]]] = json.loads(tree.to_prompt())
    return doc


def prompt_text(tree: Tree) -> str:
    return SEP.join(e.text for e in tree.prompt_elements)


def lost_pieces(tree: Tree) -> int:
    """Label pieces the nodes of each element give (each text and description, cut as the
    cluster stage cuts them) that its label does not say: pieces another piece contains, texts
    joined on their line, a letter-by-letter spelling of another piece and a piece in other
    capitals than another ("ADVANCED" beside "Advanced") are said. A junk
    piece (a percent-encoded address, punctuation alone: ``cluster.junk_piece``) says
    nothing, so it need not be said; a resource integer and a state said as a flag
    (``cluster.without_resource_ints``, ``cluster.without_state``) need not be either, nor an
    element's own text or description that only summarises the others of its nodes
    (``summarises``: its parts say it)."""
    raw, of_node = tree.raw, tree.element_of_node
    labelled = (raw.bits & (fastpath.B_HAS_TEXT | fastpath.B_HAS_DESC)) != 0
    unsecret = (raw.bits & int(ElementFlag.PASSWORD)) == 0
    lost = 0
    nodes = np.flatnonzero((of_node >= 0) & labelled & unsecret).tolist()
    for i in nodes:
        element = tree.elements[of_node[i]]
        label = element.text
        others = [
            value for j in nodes if j != i and of_node[j] == of_node[i]
            for value in (raw.string(j, fastpath.F_TEXT), raw.string(j, fastpath.F_DESC))
            if value.split()
        ] if element.node == i else []
        for field in (fastpath.F_TEXT, fastpath.F_DESC):
            value = raw.strings[i * fastpath.NFIELDS + field]
            piece = _piece(value, TreeConfig().max_label_chars) if value else ""
            if (
                piece and not (others and summarises(value, others))
                and piece not in label and _unspelled(piece) not in label
                and piece.casefold() not in label.casefold()
                and not junk_piece(piece)
                and without_state(without_resource_ints(piece))[0] not in label
            ):
                lost += 1
    return lost


NAMES = ("Alice", "Bob", "Carol", "Dave", "Eve", "Frank")


def clickable_page() -> bytes:
    """The reviewer's screen: a full-screen clickable FrameLayout holding six names, four of
    them beside an avatar button."""
    kids = []
    for k, name in enumerate(NAMES):
        top = 300 + 200 * k
        kids.append(node((200, top, 600, top + 60), text=name, cls=TXT))
        if k < 4:
            kids.append(node((40, top, 120, top + 80), cls=IMG, clickable=True))
    return screen(node((0, 0, 1080, 2400), *kids, clickable=True))


def test_a_clickable_page_does_not_swallow_its_text() -> None:
    tree = read_tree(clickable_page())
    shown = prompt_text(tree)
    assert all(name in shown for name in NAMES)
    page = tree.elements[0]
    assert page.kind == "btn" and page.text == "" and tuple(page.box_px) == (0, 0, 1080, 2400)
    assert not any(name in page.text for name in NAMES)
    assert lost_pieces(tree) == 0


def test_a_small_clickable_page_still_absorbs_what_fits() -> None:
    """A full-screen clickable with a few words is still one button ("Tap to continue")."""
    tree = read_tree(screen(node(
        (0, 0, 1080, 2400),
        node((100, 1000, 980, 1100), text="Welcome", cls=TXT),
        node((100, 1200, 980, 1300), text="Tap to continue", cls=TXT),
        clickable=True,
    )))
    assert [(e.kind, e.text) for e in tree.elements] == [("btn", "Welcome | Tap to continue")]


def page_around_a_list() -> bytes:
    """Futu's history page, drawn again: a full-screen clickable root (an app's "tap anywhere
    to hide the keyboard") around a title and a scrolling list whose section dates are plain
    texts between clickable rows; the title is a button of its own, so the four dates would
    fit one label."""
    rows = []
    for k in range(4):
        top = 300 + 450 * k
        rows.append(node((0, top, 1080, top + 80), text=f"2025/10/1{k} 01:34:27", cls=TXT))
        rows.append(node((0, top + 100, 1080, top + 400),
                         node((40, top + 120, 700, top + 200), text=f"Stock {k}", cls=TXT),
                         cls="android.view.ViewGroup", clickable=True))
    history = node((0, 240, 1080, 2400), *rows, cls="androidx.recyclerview.widget.RecyclerView",
                   scrollable=True, resource_id="com.app:id/history")
    title = node((156, 100, 600, 200), node((156, 100, 600, 200), text="History", cls=TXT),
                 cls="android.widget.FrameLayout", clickable=True)
    return screen(node((0, 0, 1080, 2400), title, history, cls="android.widget.LinearLayout",
                       clickable=True))


def test_a_clickable_page_around_a_list_is_a_page() -> None:
    """A root around a scroll area of a quarter of the screen or more absorbs nothing, whatever
    its piece count: the list is offered (the model can scroll it), the dates are static text
    where they are drawn, not one label at the middle of the screen."""
    tree = read_tree(page_around_a_list())
    doc = prompt(tree)
    assert [r[1] for r in doc["list"]] == ["[history]"]
    dates = {e.text: e.box_px for e in tree.prompt_elements if e.text.startswith("2025/")}
    assert len(dates) == 4
    assert all(box.height == 80 for box in dates.values())
    assert [r[1] for r in doc["btn"] if r[1]] == ["History"] + [f"Stock {k}" for k in range(4)]
    page = tree.elements[0]
    assert page.kind == "btn" and page.text == "" and tuple(page.box_px) == (0, 0, 1080, 2400)
    assert lost_pieces(tree) == 0


def test_a_card_around_a_small_scroller_still_absorbs() -> None:
    """A scroll area smaller than that (a card's chip row, a marquee) makes no page: the card
    is still one button labelled by its text."""
    chips = node((40, 1300, 1040, 1400), node((40, 1300, 300, 1400), text="Jazz", cls=TXT),
                 cls="android.widget.HorizontalScrollView", scrollable=True)
    card = node((0, 1000, 1080, 1500), node((40, 1020, 1040, 1100), text="Playlist", cls=TXT),
                chips, cls="android.widget.FrameLayout", clickable=True)
    tree = read_tree(screen(card))
    assert [(e.kind, e.text) for e in tree.prompt_elements] == [("btn", "Playlist | Jazz")]


def list_rows(cls: str, *, scrollable: bool, long_clickable: bool = True) -> bytes:
    """A list whose container takes long presses (as WeWork's member list does) and whose rows
    hold a name and a button of their own."""
    rows = [
        node((0, 300 + 150 * k, 1080, 450 + 150 * k),
             node((200, 320 + 150 * k, 700, 380 + 150 * k), text=f"Member {k}", cls=TXT),
             node((800, 320 + 150 * k, 1000, 380 + 150 * k), text="View", cls=BTN,
                  clickable=True),
             cls="android.widget.LinearLayout")
        for k in range(3)
    ]
    return screen(node((0, 300, 1080, 750), *rows, cls=cls, long_clickable=long_clickable,
                       scrollable=scrollable, resource_id="com.app:id/members"))


@pytest.mark.parametrize("cls, scrollable", [
    ("android.widget.ListView", False),
    ("androidx.recyclerview.widget.RecyclerView", False),
    ("android.widget.FrameLayout", True),
])
def test_a_list_keeps_its_rows_apart(cls: str, scrollable: bool) -> None:
    """A list or scroll container absorbs nothing, however little text it holds: each name is
    its own row next to its button, and the list is an element labelled by its id."""
    tree = read_tree(list_rows(cls, scrollable=scrollable))
    doc = prompt(tree)
    assert [r[0] for r in doc["text"]] == ["Member 0", "Member 1", "Member 2"]
    assert [r[1] for r in doc["btn"] if r[1] == "View"] == ["View"] * 3
    container = tree.elements[0]
    assert container.text == "" and container.resource_id == "members"
    assert "[members]" in tree.to_prompt()


def test_a_row_over_the_cap_keeps_its_first_pieces_and_shows_the_rest() -> None:
    lines = [f"line {k}" for k in range(7)]
    row = node((0, 200, 1080, 620), *(
        node((40, 210 + 60 * k, 1000, 260 + 60 * k), text=line, cls=TXT)
        for k, line in enumerate(lines)
    ), clickable=True, cls="android.widget.LinearLayout")
    tree = read_tree(screen(row))
    button, *rest = tree.elements
    assert button.kind == "btn" and button.text == SEP.join(lines[:CAP])
    assert [e.kind for e in rest] == ["text"]  # the rest: one static text (same parent, merged)
    assert rest[0].text == SEP.join(lines[CAP:])
    assert lost_pieces(tree) == 0


def test_text_and_description_of_one_node_count_as_two_pieces() -> None:
    row = node((0, 200, 1080, 500), *(
        node((40, 210 + 60 * k, 1000, 260 + 60 * k), text=f"t{k}", content_desc=f"d{k}", cls=TXT)
        for k in range(3)
    ), clickable=True)
    tree = read_tree(screen(row))
    assert tree.elements[0].text == "t0 | d0 | t1 | d1"
    assert "t2 | d2" in prompt_text(tree)


def test_static_texts_merge_only_up_to_the_cap() -> None:
    texts = [f"word {k}" for k in range(10)]
    tree = read_tree(screen(node((0, 0, 1080, 2400), *(
        node((40, 100 + 60 * k, 1000, 150 + 60 * k), text=t, cls=TXT) for k, t in enumerate(texts)
    ))))
    labels = [e.text for e in tree.elements]
    assert labels == [SEP.join(texts[k:k + CAP]) for k in range(0, 10, CAP)]


def test_a_grid_laid_out_column_by_column_merges_by_column() -> None:
    """Compose writes a card row's texts one card after the other: each card's icon, name and
    share, then the next card's, up at the top again. A text wholly above and to the right of
    the last one starts the next card's label (a held-out horoscope read "❤️ | Aşk | %70 | 💼",
    the next card's icon; then "Kariyer | %95 | 🌿 | Sağlık")."""
    cards = [
        ("\u2764", "Love", "70%"), ("\U0001f4bc", "Career", "95%"), ("\U0001f33f", "Health", "78%"),
    ]
    kids = [
        node((100 + 330 * c, top, 380 + 330 * c, top + 60), text=t, cls=TXT)
        for c, card in enumerate(cards)
        for top, t in zip((1500, 1600, 1700), card, strict=True)
    ]
    tree = read_tree(screen(node((0, 1400, 1080, 1800), *kids)))
    assert [e.text for e in tree.elements] == [" | ".join(card) for card in cards]


def test_a_value_over_its_label_in_the_next_column_still_starts_a_run_of_its_own() -> None:
    """A stat grid written row by row: the second cell's value stands over its label, above the
    first cell's last text; it is not lost as a repeat of the first cell's equal value."""
    kids = [
        node((150, 1124, 730, 1190), text="Credits next run", cls=TXT),
        node((286, 1218, 337, 1284), text="21", cls=TXT),
        node((196, 1284, 428, 1350), text="Matched", cls=TXT),
        node((743, 1218, 794, 1284), text="21", cls=TXT),
        node((633, 1284, 905, 1350), text="SMS credits", cls=TXT),
    ]
    tree = read_tree(screen(node((0, 1100, 1080, 1400), *kids)))
    labels = [e.text for e in tree.elements]
    assert labels == ["Credits next run | 21 | Matched", "21 | SMS credits"]


def test_the_cap_is_configurable_and_nothing_is_lost_at_any_value() -> None:
    data = clickable_page()
    for cap in (1, 2, 3, 8):
        tree = read_tree(data, config=TreeConfig(max_label_pieces=cap))
        assert all(len(e.text.split(SEP)) <= cap for e in tree.elements if e.text)
        assert all(name in prompt_text(tree) for name in NAMES)
        assert lost_pieces(tree) == 0


# --- any tree: labels fit the cap, and every piece is in some label -----------------------------

LEAF = st.fixed_dictionaries({
    "text": st.sampled_from(["", "a", "b", "c", "long words here", "a"]),
    "content_desc": st.sampled_from(["", "", "d", "e"]),
    "clickable": st.booleans(),
    "scrollable": st.sampled_from([False, False, False, True]),
    "cls": st.sampled_from([TXT, BTN, "android.widget.LinearLayout", "android.widget.ListView"]),
})


@st.composite
def forests(draw: st.DrawFn, depth: int = 3) -> str:
    attrs = draw(LEAF)
    left, top = draw(st.integers(0, 900)), draw(st.integers(0, 2200))
    box = (left, top, left + draw(st.integers(1, 1080)), top + draw(st.integers(1, 1200)))
    kids = draw(st.lists(forests(depth - 1), max_size=4)) if depth > 0 else []
    return node(box, *kids, **attrs)


@settings(max_examples=150, deadline=None)
@given(st.lists(forests(), min_size=1, max_size=3), st.integers(1, 6))
def test_no_label_exceeds_the_cap_and_no_piece_is_lost(roots: list[str], cap: int) -> None:
    tree = read_tree(screen(*roots), config=TreeConfig(max_label_pieces=max(cap, 2)))
    limit = max(cap, 2)
    assert all(len(e.text.split(SEP)) <= limit for e in tree.elements if e.text)
    assert lost_pieces(tree) == 0


@requires_corpus
def test_no_corpus_screen_loses_a_label_piece() -> None:
    from conftest import CORPUS_DIR

    files = sorted(Path(CORPUS_DIR).rglob("screen.xml")) + sorted(
        (Path(CORPUS_DIR) / "dumps").glob("*.xml")
    )
    assert len(files) > 400
    lost = {}
    for path in files:
        try:
            tree = read_tree(path.read_bytes())
        except Exception:  # noqa: BLE001  (a dump that does not parse has no labels to lose)
            continue
        if n := lost_pieces(tree):
            lost[path.name] = n
    assert lost == {}


def _conversation(top: int, summary: str, sender: str, date: str, subject: str,
                  snippet: str) -> str:
    """A mail row as Gmail draws it: its own text a summary of the texts inside it."""
    return node(
        (0, top, 1080, top + 250),
        node((189, top + 42, 919, top + 95), text=sender, cls=TXT),
        node((919, top + 52, 1038, top + 92), text=date, cls=TXT),  # on the sender's line
        node((190, top + 100, 950, top + 150), text=subject, cls=TXT),
        node((190, top + 155, 950, top + 205), text=snippet, cls=TXT),
        text=summary, clickable=True, long_clickable=True, cls="android.view.ViewGroup",
    )


NOON = "Are you free at noon? The usual place"


def test_a_rows_cut_summary_of_its_texts_is_left_out() -> None:
    """Gmail's conversation row: its text ", , , Test C. User, , Zimbra Test Email, Hi, ...,
    ,  on Mar 10" says the sender, subject, snippet and date drawn inside it. Cut as a label
    piece, it only began what the label said again after it (a held-out inbox: ``Test C. User,
    Zimbra Test Email, Hi, This… | Test C. User Mar 10 | Zimbra Test Email | Hi, This is a test
    email…``). A summary that says more than its parts stays ("Unread": the model is told the
    row is unread), and so does one held whole (the label leaves out the parts it holds)."""
    tree = read_tree(screen(
        _conversation(600, f", , , Ann Lee, , Lunch on Friday, {NOON}, ,  on Mar 10",
                      "Ann Lee", "Mar 10", "Lunch on Friday", NOON),
        _conversation(900, f"Unread, , , Bo Li, , Hi there, {NOON}, ,  on Mar 9",
                      "Bo Li", "Mar 9", "Hi there", NOON),
        _conversation(1200, ", , , Cy, , Hi, Soon, ,  on Mar 8", "Cy", "Mar 8", "Hi", "Soon"),
    ))
    read, unread, short = (e.text for e in tree.prompt_elements if e.kind == "btn")
    assert read == f"Ann Lee Mar 10{SEP}Lunch on Friday{SEP}{NOON}"
    assert unread.startswith("Unread, Bo Li, Hi there, Are you free at… | Bo Li Mar 9")
    assert short.startswith("Cy, Hi, Soon, on Mar 8 | ")  # whole: it stays, first
    assert lost_pieces(tree) == 0


def test_a_summary_past_the_longest_is_no_summary() -> None:
    """A row text of more than ``SUMMARY_MAX_CHARS`` is not looked at as a summary: each part
    looked for in it cost a copy of it (a hostile 4 MB row text over 200 one-letter texts took
    0.56 s). Its label is made as before the rule, the cut text first."""
    lunch = " ".join(["Lunch"] * 200)
    tree = read_tree(screen(_conversation(600, f"Ann, {lunch}, Soon, on Mar 10", "Ann", "Mar 10",
                                          lunch, "Soon")))
    [row] = [e.text for e in tree.prompt_elements if e.kind == "btn"]
    assert len(f"Ann, {lunch}, Soon, on Mar 10") > SUMMARY_MAX_CHARS
    assert row.startswith("Ann, Lunch Lunch")


@pytest.mark.parametrize(("value", "others", "said"), [
    (", , , Ann, , Lunch, See you, ,  on Mar 10", ["Ann", "Mar 10", "Lunch", "See you"], True),
    ("Unread, Ann, Lunch", ["Ann", "Lunch"], False),  # a word of its own
    ("Ann, Lunch", ["Ann"], False),  # one part: nothing to gain (and a label keeps both)
    ("Ann, Lunch", ["Ann", "Dinner"], False),  # a part it does not say
    ("ann,  LUNCH", ["Ann", "Lunch"], True),  # case and white space aside
    ("Ann Ann", ["Ann", "Ann"], True),  # each part once
    ("Ann", ["Ann", "Ann"], False),
    ("张三，会议，明天见", ["张三", "会议", "明天见"], True),
])
def test_summarises(value: str, others: list[str], said: bool) -> None:
    assert summarises(value, others) is said


def test_a_label_in_other_capitals_is_said_once() -> None:
    """A tab described "Advanced" whose text is drawn all in capitals, "ADVANCED": one piece,
    the first; beside a tab that is selected and not clickable, its description and its
    text are one static. Other words stay ("Save" and "Save as" are two)."""
    tree = read_tree(screen(
        node((0, 200, 360, 300), node((20, 220, 340, 280), text="BASIC", cls=TXT),
             content_desc="Basic", selected=True),
        node((360, 200, 720, 300), node((380, 220, 700, 280), text="ADVANCED", cls=TXT),
             content_desc="Advanced", clickable=True),
        node((720, 200, 1080, 300), node((740, 220, 1060, 280), text="Save as", cls=TXT),
             content_desc="SAVE", clickable=True),
    ))
    labels = sorted(e.text for e in tree.prompt_elements)
    assert labels == ["Advanced", "Basic", f"SAVE{SEP}Save as"]


def test_a_summarys_empty_fields_are_dropped() -> None:
    """Gmail's conversation row reads its fields joined by commas, the unset ones empty (", , ,
    Ann, , Subject, ..."); Google Messages' bubble ends "., , Delivered". The empty fields say
    nothing: the label keeps the words and one comma between them. A set flag stays ("Unread");
    commas in a text ("a,,b") are the text's."""
    row = ", , , Ann Lee, , Lunch on Friday, Are you free at noon?, ,  on Mar 10"
    tree = read_tree(screen(
        node((0, 300, 1080, 500), node((200, 320, 900, 380), text="Ann Lee", cls=TXT),
             text=row, clickable=True, long_clickable=True),
        node((0, 600, 1080, 800), text="Unread, , , Bo, , Hi", clickable=True),
        node((0, 900, 1080, 1000), text="a,,b", clickable=True),
    ))
    labels = [e.text for e in tree.prompt_elements]
    # one piece, which also says the sender's name drawn inside the row
    assert labels == ["Ann Lee, Lunch on Friday, Are you free at noon?, on Mar 10",
                      "Unread, Bo, Hi", "a,,b"]
    assert _piece(", , ,", 40) == ""
    assert lost_pieces(tree) == 0
