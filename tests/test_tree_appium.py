"""Appium's page source is read as the uiautomator dump it was made from.

Appium's UiAutomator2 driver (``driver.page_source``) writes the same attributes as
``uiautomator dump`` but names every element after its class, with ``$ @ # &`` turned into
dots (``XMLHierarchy.cleanTagName`` / ``AccessibilityNodeInfoDumper.toXmlNodeName`` in
appium-uiautomator2-server), calls visibility ``displayed``, adds ``index`` and ``instance``
and puts the display's ``width`` and ``height`` on ``<hierarchy>``; a toast is an
``<android.widget.Toast>`` without bounds. :func:`appium_page_source` writes that form from a
real dump, so every corpus screen is checked both ways: the same prompt, element for element.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import CORPUS_DIR, requires_corpus
from lxml import etree

from perception import TreeParseError, UnsafeXmlError, fastpath, read_tree
from perception.cli.main import main
from perception.config import TreeConfig
from perception.tree.parse import class_tags, frame_documents, parse_dump, repair

pytestmark = pytest.mark.usefixtures("pipeline_impl")

# The order appium-uiautomator2-server writes a node's attributes in (SUPPORTED_ATTRIBUTES),
# each with the dump attribute it comes from.
_ATTRIBUTES = (
    ("index", "index"), ("package", "package"), ("class", "class"), ("text", "text"),
    ("content-desc", "content-desc"), ("resource-id", "resource-id"),
    ("checkable", "checkable"), ("checked", "checked"), ("clickable", "clickable"),
    ("enabled", "enabled"), ("focusable", "focusable"), ("focused", "focused"),
    ("long-clickable", "long-clickable"), ("password", "password"),
    ("scrollable", "scrollable"), ("selected", "selected"), ("bounds", "bounds"),
    ("displayed", "visible-to-user"), ("hint", "hint"), ("drawing-order", "drawing-order"),
)


def _tag(cls: str) -> str:
    """Appium's element name for a class name (toXmlNodeName without tag normalisation)."""
    name = re.sub(r"\.+", ".", re.sub(r"[$@#&]", ".", cls)).strip(".")
    return name or "android.view.View"


def appium_page_source(
    dump: bytes, *, width: int = 1080, height: int = 2400, invisible: bool = True,
    toast: str | None = None,
) -> bytes:
    """The page source Appium would give for the screen of ``dump`` (every window under one
    ``<hierarchy>``). ``invisible``: keep nodes that are not visible to the user with
    ``displayed="false"`` (the ``allowInvisibleElements`` setting), else leave them and what
    is under them out (the default)."""
    docs = [etree.fromstring(repair(d)) for d in frame_documents(dump)]
    out = etree.Element("hierarchy")
    for name, value in (("index", "0"), ("class", "hierarchy"),
                        ("rotation", docs[0].get("rotation", "0")),
                        ("width", str(width)), ("height", str(height))):
        out.set(name, value)
    instances: dict[str, int] = {}

    def copy(node: etree._Element, parent: etree._Element) -> None:
        if not invisible and node.get("visible-to-user") == "false":
            return
        tag = _tag(node.get("class") or "")
        el = etree.SubElement(parent, tag)
        for name, source in _ATTRIBUTES:
            value = node.get(source)
            if name == "displayed" and value is None:
                value = "true"
            if value is not None:
                el.set(name, value)
        el.set("instance", str(instances.get(tag, 0)))
        instances[tag] = instances.get(tag, 0) + 1
        for child in node:
            if child.tag == "node":
                copy(child, el)

    for doc in docs:
        for window in doc:
            if window.tag == "node":
                copy(window, out)
    if toast is not None:
        el = etree.SubElement(out, "android.widget.Toast")
        for name, value in (("index", str(len(out) - 1)), ("package", "com.android.settings"),
                            ("class", "android.widget.Toast"), ("text", toast),
                            ("displayed", "true")):
            el.set(name, value)
    return etree.tostring(
        out, xml_declaration=True, encoding="UTF-8", standalone=True, pretty_print=True
    )


SIGN_IN = b"""<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
<hierarchy index="0" class="hierarchy" rotation="0" width="1080" height="2400">
  <android.widget.FrameLayout index="0" package="com.example" class="android.widget.FrameLayout"
      text="" clickable="false" enabled="true" bounds="[0,0][1080,2400]" displayed="true">
    <android.widget.Button index="0" package="com.example" class="android.widget.Button"
        text="Sign in" clickable="true" enabled="true" bounds="[100,200][980,320]"
        displayed="true" instance="0" />
    <android.widget.Button index="1" package="com.example" class="android.widget.Button"
        text="Hidden" clickable="true" enabled="true" bounds="[100,400][980,520]"
        displayed="false" instance="1" />
    <androidx.appcompat.app.ActionBar.Tab index="2" package="com.example"
        class="androidx.appcompat.app.ActionBar$Tab" text="Albums" clickable="true"
        enabled="true" selected="true" bounds="[0,2200][540,2400]" displayed="true" />
  </android.widget.FrameLayout>
  <android.widget.Toast index="1" package="com.android.settings" class="android.widget.Toast"
      text="Saved" displayed="true" />
</hierarchy>
"""


def test_a_page_source_reads_as_its_dump() -> None:
    tree = read_tree(SIGN_IN)
    assert [(e.kind, e.text, e.class_name) for e in tree.prompt_elements] == [
        ("btn", "Sign in", "android.widget.Button"),
        # the class attribute, not the element's name, says what it is: a tab
        ("tab", "Albums", "androidx.appcompat.app.ActionBar$Tab"),
    ]
    assert tree.screen.width_px == 1080
    assert tree.raw.unbounded == 1  # the toast: no bounds, dropped and counted
    assert tree.package == "com.example"


def test_displayed_false_is_not_visible() -> None:
    assert "Hidden" not in read_tree(SIGN_IN).to_prompt()
    shown = SIGN_IN.replace(b'displayed="false"', b'displayed="true"')
    assert "Hidden" in read_tree(shown).to_prompt()


def test_only_documents_without_node_elements_are_read_by_class() -> None:
    assert class_tags(SIGN_IN)
    assert not class_tags(b'<hierarchy rotation="0"><node class="a.b" bounds="[0,0][1,1]"/>'
                          b"</hierarchy>")
    # Undotted foreign names stay foreign: refused, named.
    with pytest.raises(TreeParseError, match=r"<view> where <node> was expected"):
        read_tree(b'<hierarchy rotation="0"><view bounds="[0,0][10,10]"/></hierarchy>')


def test_the_node_limit_counts_a_page_source_elements() -> None:
    many = SIGN_IN.replace(b"</android.widget.FrameLayout>", b"<a.B bounds='[0,0][5,5]'/>" * 20
                           + b"<view bounds='[0,0][5,5]'/>" * 5
                           + b"</android.widget.FrameLayout>")
    # Every element but <hierarchy>, dotted or not: 5 + 20 + 5.
    with pytest.raises(UnsafeXmlError, match=r"30 elements in the dump, the limit is 10"):
        parse_dump(many, TreeConfig(max_nodes=10))


def test_both_twins_scan_a_page_source_alike() -> None:
    (doc,) = frame_documents(SIGN_IN)
    outs = [impl.scan_hierarchy(doc, 200, 100, True) for impl in fastpath.available().values()]
    assert len(outs) == 2 or fastpath.IMPLEMENTATION == "python"
    for out in outs[1:]:
        assert out[0] == outs[0][0] and out[6] == outs[0][6]
        for a, b in zip(out[1:6], outs[0][1:6], strict=True):
            assert a.tolist() == b.tolist()


def test_perception_tree_reads_a_page_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "page_source.xml"
    path.write_bytes(SIGN_IN)
    assert main(["tree", str(path)]) == 0
    out, err = capsys.readouterr()
    assert '"Sign in"' in out and '"Albums"' in out


# --- every corpus screen, both ways ------------------------------------------------------------


def _corpus_dumps() -> list[Path]:
    if not CORPUS_DIR.is_dir():
        return []
    return sorted(CORPUS_DIR.rglob("screen.xml")) + sorted((CORPUS_DIR / "dumps").glob("*.xml"))


@requires_corpus
@pytest.mark.parametrize("invisible", [True, False], ids=["displayed-false", "left-out"])
def test_every_corpus_screen_reads_the_same_as_a_page_source(invisible: bool) -> None:
    checked = 0
    for path in _corpus_dumps():
        data = path.read_bytes()
        try:
            tree = read_tree(data)
        except TreeParseError:
            continue  # the corpus's broken dumps: no page source to make from them
        size = tree.screen
        source = appium_page_source(
            data, width=size.width_px, height=size.height_px, invisible=invisible
        )
        again = read_tree(source, screen=size if tree.screen_estimated else None)
        assert again.to_prompt() == tree.to_prompt(), path
        assert again.to_prompt(coords=False) == tree.to_prompt(coords=False), path
        assert again.package == tree.package and again.screen == tree.screen, path
        checked += 1
    assert checked > 400
