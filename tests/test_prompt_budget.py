"""The prompt has a row budget the app cannot blow: a screen of 1,620 buttons (a grid of 40 px
cells, the security review's case) is offered as at most ``max_rows`` rows, the rest kept but
not listed (their ids refused), and the prompt says how many were left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _xml import dump, node

from agent.actions import ActionTargetError, parse_action
from perception import Perceiver, fastpath, read_tree
from perception.config import FusionConfig, TreeConfig
from perception.errors import ConfigError
from perception.fusion.candidates import within_budget
from perception.tree.compress import MORE_KEY, iter_rows, over_budget
from perception.types import BoxPx

COLS, ROWS, CELL_W, CELL_H, TOP = 27, 60, 40, 35, 160
CELLS = COLS * ROWS  # 1620
EXTRA = 1 + 1 + 4  # the search field, the title, the navigation bar's four tabs


def grid_screen() -> bytes:
    """A search field, a title, a grid of 1,620 small buttons, a navigation bar of four."""
    cells = [
        node(
            (c * CELL_W, TOP + r * CELL_H, (c + 1) * CELL_W, TOP + (r + 1) * CELL_H),
            text=f"cell {r}.{c}", cls="android.widget.Button", clickable=True,
        )
        for r in range(ROWS) for c in range(COLS)
    ]
    nav_top = TOP + ROWS * CELL_H
    nav = [
        node((k * 270, nav_top, (k + 1) * 270, 2400), text=name,
             cls="android.widget.Button", clickable=True)
        for k, name in enumerate(("Home", "Search", "Library", "Settings"))
    ]
    return dump(
        node(
            (0, 0, 1080, 2400),
            node((0, 0, 1080, 80), text="", cls="android.widget.EditText", clickable=True,
                 focusable=True, focused=True, resource_id="com.example.app:id/search"),
            node((0, 80, 1080, 160), text="Pick a cell", cls="android.widget.TextView"),
            node((0, TOP, 1080, nav_top), *cells),
            *nav,
        )
    )


@pytest.fixture(scope="module")
def grid_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("budget") / "grid.xml"
    path.write_bytes(grid_screen())
    return path


def labels(doc: dict[str, object]) -> list[str]:
    return [row.label for row in iter_rows(doc)]


def test_tree_prompt_keeps_max_rows(grid_path: Path, pipeline_impl: str) -> None:
    tree = read_tree(grid_path)
    assert len(tree.elements) >= CELLS + EXTRA  # every element kept for overlays and exports
    shown = tree.prompt_elements
    assert len(shown) == TreeConfig().max_rows == 400
    left_out = CELLS + EXTRA - 400
    assert len(tree.over_budget_ids) == left_out
    assert tree.over_budget_ids <= tree.hidden_ids
    for coords in (True, False):
        doc = json.loads(tree.to_prompt(coords=coords))
        assert doc[MORE_KEY] == left_out
        rows = labels(doc)
        assert len(rows) == 400
        # what an agent needs stays: the focused field, the title, the navigation bar
        for name in ("[search]", "Pick a cell", "Home", "Search", "Library", "Settings"):
            assert name in rows, name
        # the grid keeps its first cells in reading order and loses its tail
        cells = [r for r in rows if r.startswith("cell ")]
        assert cells == [f"cell {k // COLS}.{k % COLS}" for k in range(400 - EXTRA)]
    assert len(tree.to_prompt()) < 12_000  # 87 KB before the budget


def test_prompt_identical_in_both_modes(grid_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prompts = set()
    for impl in fastpath.available().values():
        monkeypatch.setattr(fastpath, "_impl", impl)
        tree = read_tree(grid_path)
        prompts.add((tree.to_prompt(), tree.to_prompt(coords=False), tree.over_budget_ids))
    assert len(prompts) == 1


def test_fused_prompt_refuses_left_out_ids(grid_path: Path, pipeline_impl: str) -> None:
    with Perceiver() as perceiver:
        obs = perceiver.perceive(grid_path)
    left_out = CELLS + EXTRA - 400
    assert obs.left_out == left_out
    doc = json.loads(obs.to_prompt())
    assert doc[MORE_KEY] == left_out
    assert json.loads(obs.to_prompt(coords=False))[MORE_KEY] == left_out
    rows = list(iter_rows(doc))
    assert len(rows) == 400
    shown = {r.id for r in rows if r.id is not None}
    assert shown == set(obs.shown_ids)
    hidden = [c for c in obs.candidates if not c.listed]
    assert len(hidden) == left_out  # kept in the candidates, not listed
    for c in (hidden[0], hidden[-1]):
        with pytest.raises(ActionTargetError):
            parse_action(json.dumps({"action": "tap", "id": c.id}), obs)
    first = min(shown)
    assert parse_action(json.dumps({"action": "tap", "id": first}), obs).to_json()["id"] == first


def test_observation_budget_counts_both(grid_path: Path, pipeline_impl: str) -> None:
    """The observation's own budget cuts further; ``more`` counts the tree's and its own."""
    with Perceiver(config=FusionConfig(max_rows=50)) as perceiver:
        obs = perceiver.perceive(grid_path)
    doc = json.loads(obs.to_prompt())
    assert len(list(iter_rows(doc))) == 50
    assert doc[MORE_KEY] == obs.left_out == CELLS + EXTRA - 50
    names = labels(doc)
    for name in ("[search]", "Pick a cell", "Home", "Settings"):
        assert name in names, name


def test_screens_within_budget_unchanged(pipeline_impl: str) -> None:
    xml = dump(node((0, 0, 1080, 2400), node((0, 0, 1080, 200), text="OK",
                                              cls="android.widget.Button", clickable=True)))
    tree = read_tree(xml)
    assert tree.over_budget_ids == frozenset()
    assert MORE_KEY not in json.loads(tree.to_prompt())
    with Perceiver() as perceiver:
        obs = perceiver.perceive(xml)
    assert obs.left_out == 0 and MORE_KEY not in json.loads(obs.to_prompt())
    assert within_budget(obs.candidates, 400) == (obs.candidates, 0)


def test_over_budget_order() -> None:
    """The densest shape's tail goes first, then the smaller of rows as far down their shape;
    kept flags and ``keep`` go last."""
    small = BoxPx(0, 0, 40, 40)
    big = BoxPx(0, 0, 400, 200)
    kinds = ["btn"] * 6 + ["input", "btn"]
    boxes = [small, small, small, big, big, small, small, small]
    flags = [0] * 8
    assert over_budget(kinds, flags, boxes, 8) == []
    # small btn ranks: 0,1,2,-,-,3,-,4 ; big: 0,1 ; input: 0
    assert over_budget(kinds, flags, boxes, 6) == [5, 7]
    assert over_budget(kinds, flags, boxes, 5) == [2, 5, 7]
    assert over_budget(kinds, flags, boxes, 5, keep=[7]) == [1, 2, 5]
    assert over_budget(kinds, flags, boxes, 2) == [0, 1, 2, 4, 5, 7]  # the input and the big one
    assert over_budget(kinds, flags, boxes, 0) == list(range(8))


def test_max_rows_setting() -> None:
    assert TreeConfig.from_env({"PERCEPTION_TREE_MAX_ROWS": "120"}).max_rows == 120
    assert FusionConfig.from_env({"PERCEPTION_FUSION_MAX_ROWS": "90"}).max_rows == 90
    with pytest.raises(ConfigError, match="max_rows must be >= 1"):
        TreeConfig(max_rows=0)
    with pytest.raises(ConfigError, match="max_rows must be >= 1"):
        FusionConfig(max_rows=0)


def test_an_operation_never_names_a_row_the_prompt_leaves_out(corpus_dir: Path) -> None:
    """A2DP Volume's permission dialog: "accept" names its allow button. A tree budget that
    cuts the button leaves no operation naming it; a fusion budget keeps the rows operations
    name while it can, and an operation whose row it still cuts is dropped (with two
    operations and room for one row, "dismiss" named an id the agent would refuse)."""
    step = corpus_dir / "droidbot_a2dpvol_lowres" / "a2dpvol_2018-06-05"
    for name, config in (
        ("step_002", {}),
        ("step_002", {"tree": TreeConfig(max_rows=3)}),
        ("step_002", {"config": FusionConfig(max_rows=3)}),
        ("step_000", {"config": FusionConfig(max_rows=1)}),
    ):
        obs = Perceiver(**config).perceive((step / name / "screen.xml").read_bytes())
        shown = {c.id for c in obs.candidates if c.listed and not c.occluded}
        named = [o.candidate_id for o in obs.operations if o.candidate_id is not None]
        assert all(i in shown for i in named), (name, config, named, shown)
        if name == "step_002" and "tree" not in config:
            assert [o.kind.value for o in obs.operations] == ["accept"]
