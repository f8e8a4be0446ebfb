"""Labels stay bounded and printable however a dump's texts are laid out, the same way in both
twins (fuzz audit of session 21): texts glued on one line are held to the label limit as one
text is, C1 control characters and line separators become spaces as C0 controls do, and a
dump in a legacy encoding its XML declaration names is read in that encoding."""

from __future__ import annotations

import re

import pytest

from perception import TreeParseError, read_tree
from perception.config import TreeConfig

pytestmark = pytest.mark.usefixtures("pipeline_impl")

LIMIT = TreeConfig().max_label_chars


def _glued(n: int) -> bytes:
    """``n`` texts "w0".."w{n-1}" drawn side by side on one line, 1 px apart."""
    nodes = "".join(
        f'<node class="android.widget.TextView" text="w{i}" package="a.b" clickable="false" '
        f'bounds="[{i % 1080},100][{i % 1080 + 1},140]"/>' for i in range(n))
    return (f'<hierarchy rotation="0"><node class="android.widget.FrameLayout" package="a.b" '
            f'bounds="[0,0][1080,2400]">{nodes}</node></hierarchy>').encode()


@pytest.mark.parametrize("n", [200, 1000])
def test_texts_glued_on_one_line_are_cut_as_one_text(n: int) -> None:
    tree = read_tree(_glued(n))
    texts = [e.text for e in tree.elements]
    assert texts and max(len(t) for t in texts) <= LIMIT + LIMIT // 2
    assert len(tree.to_prompt()) < 4000
    first = next(t for t in texts if t.startswith("w0"))
    assert first.endswith("…") and first.startswith("w0 w1 w2 ")


def test_a_short_glued_run_is_whole() -> None:
    tree = read_tree(_glued(5))
    assert [e.text for e in tree.elements] == ["w0 w1 w2 w3 w4"]


C1 = re.compile("[\x80-\x9f\u2028\u2029]")


def test_c1_controls_and_line_separators_are_spaces() -> None:
    xml = ('<hierarchy rotation="0"><node class="android.widget.FrameLayout" package="a.b" '
           'bounds="[0,0][1080,2400]"><node class="android.widget.Button" '
           'text="A\u009b31mRED\u009b0m B\u0085C\u2028D\u2029" package="a.b" clickable="true" '
           'bounds="[0,100][1080,300]"/><node class="android.widget.TextView" '
           'text="x&#27;[2Jy" package="a.b" bounds="[0,400][1080,500]"/>'
           '<node class="android.widget.EditText" hint="\u0085Name\u009b" package="a.b" '
           'clickable="true" bounds="[0,600][1080,700]"/></node></hierarchy>')
    tree = read_tree(xml.encode())
    assert [e.text for e in tree.elements] == ["A 31mRED 0m B C D", "x [2Jy", "Name"]
    assert not C1.search(tree.to_prompt())


def _declared(encoding: str, text: str) -> bytes:
    return (f'<?xml version="1.0" encoding="{encoding}"?><hierarchy rotation="0">'
            f'<node class="android.widget.Button" text="{text}" package="a.b" clickable="true" '
            f'bounds="[0,0][1080,2400]"/></hierarchy>').encode(encoding)


@pytest.mark.parametrize(
    ("encoding", "text"),
    [("ISO-8859-1", "Café ouvert"), ("GBK", "设置"), ("Shift_JIS", "設定"), ("cp1252", "€ 5")],
)
def test_a_declared_legacy_encoding_is_read(encoding: str, text: str) -> None:
    assert [e.text for e in read_tree(_declared(encoding, text)).elements] == [text]


@pytest.mark.parametrize("encoding", ["x-no-such-code", "base64"])
def test_an_unknown_declared_encoding_is_a_parse_error(encoding: str) -> None:
    with pytest.raises(TreeParseError, match="unknown encoding"):
        read_tree(_declared("ascii", "Save").replace(b'"ascii"', f'"{encoding}"'.encode()))


def test_a_declaration_ascii_could_not_spell_is_not_the_files() -> None:
    """An ASCII file that says UTF-16 is read as it is (the declaration cannot be its own)."""
    xml = _declared("ascii", "Save").replace(b'"ascii"', b'"UTF-16"')
    assert [e.text for e in read_tree(xml).elements] == ["Save"]
