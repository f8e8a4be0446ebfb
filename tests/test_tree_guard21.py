"""Labels stay bounded however a dump's texts are laid out, the same way in both twins (fuzz
audit of session 21): texts glued on one line are held to the label limit as one text is."""

from __future__ import annotations

import pytest

from perception import read_tree
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

