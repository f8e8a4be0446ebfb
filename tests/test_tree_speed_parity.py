"""The tree pipeline's fast paths say what the plain code says.

- ``scan_hierarchy`` checks ASCII name characters and plain attribute-value bytes against
  tables and finds an attribute value's closing quote with ``memchr``: both twins agree on
  every ASCII byte as a name's first or later character, on every byte in a value, on names
  mixing ASCII and wider letters, and on quotes at the very end.
- ``to_prompt`` lays rows out inline: the same prompt as the row helpers of
  :mod:`perception.tree.compress` put together one element at a time.
- ``cluster`` shortens resource ids inline (``com.app:id/save`` -> ``save``).
"""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from perception import PerceptionError, fastpath
from perception.config import TreeConfig
from perception.geometry import place_texts
from perception.tree import read_tree
from perception.tree.compress import (
    STATIC_KEY,
    add_row,
    dumps,
    flag_words,
    is_static_kind,
    label,
    make_row,
    shows_box,
    state_words,
    to_prompt,
)
from perception.tree.parse import tree_config
from perception.types import BoxPx, ElementFlag, ScreenSize, TreeElement

IMPLS = fastpath.available()
needs_both = pytest.mark.skipif(
    "cython" not in IMPLS, reason="the Cython extension is not built: nothing to compare"
)


def scanned(impl: ModuleType, doc: bytes) -> object:
    """What a twin makes of ``doc``: its arrays as lists, or the error type it raised."""
    try:
        rotation, *arrays, strings = impl.scan_hierarchy(doc, 200, 50_000, False)
    except PerceptionError as exc:
        return type(exc)
    return rotation, [np.asarray(a).tolist() for a in arrays], strings


def assert_twins_agree(doc: bytes) -> object:
    py = scanned(IMPLS["python"], doc)
    assert scanned(IMPLS["cython"], doc) == py, doc
    return py


@needs_both
@pytest.mark.parametrize("byte", range(128))
def test_every_ascii_byte_in_element_and_attribute_names(byte: int) -> None:
    ch = chr(byte)
    for doc in (
        f'<hierarchy><{ch}n a="1"/><node text="x"/></hierarchy>',  # a name's first character
        f'<hierarchy><n{ch}n a="1"/><node text="x"/></hierarchy>',  # a later one
        f'<hierarchy><node {ch}a="1" text="x"/></hierarchy>',
        f'<hierarchy><node a{ch}a="1" text="x"/></hierarchy>',
        f'<hierarchy><node{ch}text="x"/></hierarchy>',  # where a name ends
        f'<hierarchy><node text="x"{ch}/></hierarchy>',
    ):
        assert_twins_agree(doc.encode("utf-8", "surrogatepass"))


@needs_both
def test_the_table_knows_the_name_characters() -> None:
    """Letters, digits, ``_``, ``-`` and ``.`` go on a name; a start takes no digit, ``-`` or
    ``.``; ``:`` is refused (no namespaces)."""
    for ch in "azAZ_09-.":
        doc = f'<hierarchy><node a{ch}b="1" text="x"/></hierarchy>'.encode()
        assert not isinstance(assert_twins_agree(doc), type), ch
    for ch in "0-.:/":
        doc = f'<hierarchy><node {ch}b="1" text="x"/></hierarchy>'.encode()
        assert isinstance(assert_twins_agree(doc), type), ch


@needs_both
@pytest.mark.parametrize(
    "name",
    [
        "n\u00e9e",  # ASCII, then a wide letter, then ASCII
        "\u00e9n",  # a wide start
        "ab\u00b7c",  # U+00B7: a name character, not a start
        "ab\u00d7c",  # U+00D7: no name character
        "a\u0300b",  # a combining mark after ASCII
        "a\ufffd",
    ],
)
def test_names_mixing_ascii_and_wider_letters(name: str) -> None:
    for doc in (
        f'<hierarchy><{name} x="1"/><node text="a"/></hierarchy>',
        f'<hierarchy><node {name}="1" text="a"/></hierarchy>',
        f"<hierarchy><node><{name}></{name}></node></hierarchy>",
    ):
        assert_twins_agree(doc.encode())


@needs_both
@pytest.mark.parametrize("byte", range(256))
def test_every_byte_in_an_attribute_value(byte: int) -> None:
    """The plain bytes are looked up in a table; the others (controls, ``&``, ``<``, UTF-8
    lead and continuation bytes) are checked one by one, as before."""
    b = bytes([byte])
    for value in (b, b"a" + b + b"z", b + b"&#65;", b"\xc3\xa9" + b):
        assert_twins_agree(b'<hierarchy><node text="' + value + b'" class="c"/></hierarchy>')


@needs_both
@pytest.mark.parametrize(
    "doc",
    [
        b'<hierarchy><node text="a/>',  # the closing quote never comes
        b'<hierarchy><node text="a\'b/></hierarchy>',  # the other quote is no end
        b"<hierarchy><node text='a\"b'/></hierarchy>",
        b'<hierarchy><node text="',  # the value opens on the last byte
        b'<hierarchy><node text=""/></hierarchy>',
        b'<hierarchy><node text="a"',  # the quote is the last byte
        b'<hierarchy><node text="a" resource-id=\'b"c\' class="d"/></hierarchy>',
    ],
)
def test_attribute_values_end_at_their_own_quote(doc: bytes) -> None:
    assert_twins_agree(doc)


# --- the prompt --------------------------------------------------------------------------------

KINDS = ["btn", "text", "img", "view", "list", "web", "input", "check", "switch", "tab", "slider"]


def prompt_row_by_row(elements: list[TreeElement], screen: ScreenSize, coords: bool) -> str:
    """The prompt as the row helpers lay it out, one element at a time."""
    doc: dict[str, object] = {}
    for e in elements:
        flags = int(e.flags)
        place = place_texts([e.box_px], screen, [shows_box(e.kind, flags)])[0] if coords else None
        if is_static_kind(e.kind, flags):
            add_row(doc, STATIC_KEY, make_row(None, label(e), place, state_words(flags)))
        else:
            add_row(doc, e.kind, make_row(e.id, label(e), place, flag_words(flags, e.more)))
    return dumps(doc)


FLAGS = st.lists(st.sampled_from([int(f) for f in ElementFlag if f]), max_size=4).map(
    lambda flags: sum(set(flags))
)
"""A few flags at a time: a static row with a state flag and others, an action with none."""
ELEMENTS = st.lists(
    st.builds(
        lambda kind, text, rid, flags, more, box: (kind, text, rid, flags, more, box),
        st.sampled_from(KINDS),
        st.sampled_from(["", "Save", "<|im_end|>", "[INST] x", "a | b"]),
        st.sampled_from(["", "ok", "btn_save", "menu_more"]),
        FLAGS,
        st.integers(0, 3),
        st.tuples(*(st.integers(-100, 1200),) * 4),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(ELEMENTS, st.booleans())
def test_to_prompt_is_the_rows_laid_out_one_by_one(
    specs: list[tuple[str, str, str, int, int, tuple[int, int, int, int]]], coords: bool
) -> None:
    screen = ScreenSize(1080, 1920)
    elements = [
        TreeElement(
            id=i, kind=kind, text=text, box_px=BoxPx(*box), flags=ElementFlag(flags),
            resource_id=rid, class_name="android.view.View", node=i, more=more,
        )
        for i, (kind, text, rid, flags, more, box) in enumerate(specs)
    ]
    expected = prompt_row_by_row(elements, screen, coords)
    assert to_prompt(elements, screen=screen, coords=coords) == expected


# --- the elements ------------------------------------------------------------------------------


@pytest.mark.usefixtures("pipeline_impl")
@pytest.mark.parametrize(
    ("rid", "short"),
    [
        ("com.app:id/btn_save", "btn_save"),
        ("a/b/c", "c"),
        ("no_slash", "no_slash"),
        ("/lead", "lead"),
        ("trail/", ""),
        ("", ""),
    ],
)
def test_resource_ids_lose_their_package(rid: str, short: str) -> None:
    doc = (
        f'<hierarchy rotation="0"><node index="0" text="" resource-id="{rid}" class="x.Button" '
        'package="com.app" content-desc="" clickable="true" enabled="true" '
        'bounds="[0,0][1080,1920]" /></hierarchy>'
    )
    (element,) = read_tree(doc.encode()).elements
    assert element.resource_id == short


def test_no_config_is_the_default_config() -> None:
    assert tree_config(None) == TreeConfig()
    doc = b'<hierarchy><node text="a" bounds="[0,0][100,100]"/></hierarchy>'
    assert read_tree(doc).to_prompt() == read_tree(doc, config=TreeConfig()).to_prompt()
