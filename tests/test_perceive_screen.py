"""``perceive(screen=...)``: without a frame, a dump of a dialog's window alone says nothing of
the screen's size; the caller who knows it (``adb shell wm size``) gets boxes on the right grid.
A newcomer's walkthrough found Habitica's Cancel at y 541-588 on the tree-only grid and 582-632
in the fused observation of the same screen."""

from __future__ import annotations

from pathlib import Path

import pytest
from _xml import dump, node
from conftest import requires_corpus

from perception import InputError, Perceiver, ScreenSize, perceive
from perception.tree import compress

DIALOG = dump(node(
    (60, 700, 1020, 1300),
    node((100, 1150, 500, 1280), text="Cancel", clickable=True),
    node((560, 1150, 980, 1280), text="OK", clickable=True),
    cls="android.widget.FrameLayout",
))


def _boxes(obs: object) -> dict[str, str]:
    import json

    doc = json.loads(obs.to_prompt())  # type: ignore[attr-defined]
    return {r.label: f"{r.point_pm}" for r in compress.iter_rows(doc) if r.point_pm is not None}


def test_a_dialog_alone_is_placed_on_the_screen_given() -> None:
    guessed = Perceiver().perceive(xml=DIALOG)
    assert any("estimated" in n for n in guessed.notes)
    obs = Perceiver().perceive(xml=DIALOG, screen=ScreenSize(1080, 2400))
    assert obs.screen is not None and obs.screen.size == ScreenSize(1080, 2400)
    assert not obs.notes
    cancel = obs.candidate(1)
    assert cancel.text == "Cancel" and tuple(cancel.box_px) == (100, 1150, 500, 1280)
    # 1150 / 2400 of the screen's height, not of the guessed one
    assert _boxes(obs)["Cancel"] != _boxes(guessed)["Cancel"]
    assert _boxes(obs)["Cancel"] == "PointPm(x=278, y=506)"  # the centre of 93 479 463 533


def test_the_one_shot_perceive_takes_the_screen_too() -> None:
    obs = perceive(DIALOG, screen=ScreenSize(1080, 2400))
    assert obs.screen is not None and obs.screen.size == ScreenSize(1080, 2400)


def test_a_screen_that_cannot_hold_the_dump_is_noted_not_fatal() -> None:
    obs = Perceiver().perceive(xml=DIALOG, screen=ScreenSize(500, 500))
    assert obs.candidates and any("cannot hold the dump" in n for n in obs.notes)


@pytest.mark.parametrize(
    "bad", [(1080, 2400), ScreenSize(0, 2400), "1080x2400", ScreenSize(True, True)]
)
def test_a_screen_that_is_no_screen_size_is_an_input_error(bad: object) -> None:
    with pytest.raises(InputError, match="screen"):
        Perceiver().perceive(xml=DIALOG, screen=bad)  # type: ignore[arg-type]


def test_a_tree_reader_without_screen_is_said_not_broken() -> None:
    from perception.tree import read_tree

    def mine(xml: bytes | str) -> object:
        return read_tree(xml)

    obs = Perceiver(tree_reader=mine).perceive(xml=DIALOG, screen=ScreenSize(1080, 2400))
    assert any("takes no screen=" in n for n in obs.notes)


@requires_corpus
def test_habitica_dialog_tree_alone_matches_the_fused_grid(corpus_dir: Path) -> None:
    step = corpus_dir / "droidbot_habitica/habitica_2020-08-29/step_008"
    xml = (step / "screen.xml").read_bytes()
    fused = _boxes(perceive(xml, (step / "screen.jpg").read_bytes()))
    alone = _boxes(Perceiver().perceive(xml=xml, screen=ScreenSize(1080, 1920)))
    assert alone["Cancel"] == fused["Cancel"]


def test_a_frame_says_the_screen_over_the_one_given() -> None:
    """A frame, when given, says the screen: a ``screen=`` that differs from it is noted and
    not used (the tree's sliver and size rules scale with the screen it is read on: the demo's
    dump read on 8192x8192 lost "Use Wi-Fi", on 65535x65535 14 of its 15 rows, silently)."""
    from importlib.resources import files

    data = files("perception") / "data"
    xml, png = (data / "demo_screen.xml").read_bytes(), (data / "demo_screen.png").read_bytes()
    base = Perceiver().perceive(xml=xml, frame=png)
    same = Perceiver().perceive(xml=xml, frame=png, screen=ScreenSize(1080, 2400))
    assert same.to_prompt() == base.to_prompt() and not any("given" in n for n in same.notes)
    for size in (ScreenSize(8192, 8192), ScreenSize(65535, 65535), ScreenSize(720, 1600)):
        obs = Perceiver().perceive(xml=xml, frame=png, screen=size)
        assert obs.to_prompt() == base.to_prompt()
        assert obs.shown_ids == base.shown_ids
        assert any(f"screen {size.width_px}x{size.height_px} given" in n for n in obs.notes)
