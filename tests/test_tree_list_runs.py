"""Which homogeneous runs are cut to ``list_keep`` items plus "+N": only those the user can
scroll to. A keypad of same-size keys in a grid that does not scroll is shown whole (its keys
could not be reached by swiping). Every test runs on both kernel implementations.
"""

from __future__ import annotations

import json

import pytest
from _xml import node, screen

from perception import read_tree
from perception.tree import Tree

pytestmark = pytest.mark.usefixtures("pipeline_impl")

TXT = "android.widget.TextView"
BTN = "android.widget.Button"


def prompt(tree: Tree) -> dict[str, list[list[object]]]:
    doc: dict[str, list[list[object]]] = json.loads(tree.to_prompt())
    return doc


def keypad(*, in_scroll: str = "") -> bytes:
    """A timer's keypad: twelve same-size keys in one GridLayout, optionally inside a scrollable
    node (``"grid"``: the grid itself scrolls; ``"page"``: an ancestor does)."""
    keys = [
        node((100 + 300 * (k % 3), 900 + 300 * (k // 3), 380 + 300 * (k % 3),
              1180 + 300 * (k // 3)), text=label, cls=BTN, clickable=True,
             resource_id=f"com.android.deskclock:id/key_{k}")
        for k, label in enumerate("123456789<0>")
    ]
    grid = node((0, 900, 1080, 2100), *keys, cls="android.widget.GridLayout",
                scrollable=in_scroll == "grid")
    page = node((0, 0, 1080, 2400), node((0, 80, 1080, 240), text="Timer", cls=TXT), grid,
                scrollable=in_scroll == "page")
    return screen(page)


def test_a_keypad_that_does_not_scroll_is_shown_whole() -> None:
    tree = read_tree(keypad())
    keys = prompt(tree)["btn"]
    assert [r[1] for r in keys] == list("123456789<0>")
    assert not tree.hidden_ids and not any(str(r[-1]).startswith("+") for r in keys)


@pytest.mark.parametrize("where", ["grid", "page"])
def test_a_run_the_user_can_scroll_is_cut_short(where: str) -> None:
    tree = read_tree(keypad(in_scroll=where))
    keys = prompt(tree)["btn"]
    assert [r[1] for r in keys] == list("12345678")
    assert keys[-1][-1] == "+4" and len(tree.hidden_ids) == 4
