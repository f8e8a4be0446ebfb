"""The tree-channel defects left from the 2026-12-05 audits (session 20): paragraphs of old
Chromium pages offered as buttons, encoded image data as labels, list chips shown as static
text, controls with one description, resource integers in labels, toggles with their state in
the description, bottom navigation as buttons."""

from __future__ import annotations

import json

import pytest
from _xml import node, screen
from conftest import CORPUS_DIR, requires_corpus

from perception import read_tree
from perception.tree import Tree
from perception.tree.cluster import without_junk

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
