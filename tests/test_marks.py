"""The set-of-marks image for vision-language models (``perception.draw_marks`` and
``perception overlay --marks``), on the demo screen and a real corpus screen: a mark on every id
the prompt offers an agent, none anywhere else, and the screen's own pixels underneath."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import combinations
from pathlib import Path

import cv2
import numpy as np
import pytest

from agent.actions import ActionError, parse_action
from perception import ConfigError, FrameError, Observation, draw_marks, perceive
from perception.cli.main import main
from perception.debug import MARK_COLOUR, draw_overlay, mark_layout, markable
from perception.demo import demo_png, demo_xml
from perception.fusion.candidates import Candidate
from perception.tree.compress import iter_rows
from perception.types import BoxPx, Channel, ElementFlag


@pytest.fixture(scope="module")
def demo() -> Observation:
    return perceive(demo_xml(), demo_png())


@pytest.fixture(scope="module")
def yelp_drawer(corpus_dir: Path) -> tuple[Observation, bytes]:
    """Yelp with its navigation drawer open: 8 candidates occluded under it."""
    step = corpus_dir / "droidbot_yelp" / "yelp_2017" / "step_015"
    png = (step / "screen.png").read_bytes()
    return perceive((step / "screen.xml").read_bytes(), png), png


def _prompt_ids(obs: Observation) -> set[int]:
    return {r.id for r in iter_rows(json.loads(obs.to_prompt())) if r.id is not None}


def _accepted(obs: Observation, cid: int) -> bool:
    """Does the agent's validator take some action on this id?"""
    for action in (
        {"action": "tap", "id": cid},
        {"action": "long_press", "id": cid},
        {"action": "type", "id": cid, "text": "x"},
        {"action": "swipe", "id": cid, "direction": "up"},
    ):
        try:
            parse_action(json.dumps(action), obs)
        except ActionError:
            continue
        return True
    return False


def _frame(png: bytes) -> np.ndarray:
    image = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR)
    assert image is not None
    return image


def _check_marks(obs: Observation, png: bytes) -> None:
    """Each id the prompt lists and the validator accepts has exactly one mark; no other id
    has one; on a blank frame every label is drawn where the layout placed it."""
    h, w = _frame(png).shape[:2]
    marks = mark_layout(obs, w, h)
    ids = [m.id for m in marks]
    assert len(ids) == len(set(ids))
    listed = _prompt_ids(obs)
    actionable = {i for i in listed if _accepted(obs, i)}
    assert set(ids) == actionable
    by_id = {c.id: c for c in obs.candidates}
    assert not [i for i in ids if by_id[i].occluded or not by_id[i].listed or by_id[i].static]
    # Drawn on black: the label's fill sits in each placed rectangle (labels do not overlap
    # here, so none hides another) and all labels lie inside the image.
    blank = np.zeros((h, w, 3), np.uint8)
    image = draw_marks(obs, blank)
    assert image.shape == (h, w, 3) and image.dtype == np.uint8
    for a, b in combinations([m.label_px for m in marks], 2):
        assert not (a.left < b.right and b.left < a.right and a.top < b.bottom
                    and b.top < a.bottom), (a, b)
    for m in marks:
        lb = m.label_px
        assert 0 <= lb.left < lb.right <= w and 0 <= lb.top < lb.bottom <= h
        assert tuple(image[lb.top + 1, lb.left + 1]) == MARK_COLOUR, m
        assert tuple(image[lb.bottom - 2, lb.right - 2]) == MARK_COLOUR, m
        label = image[lb.top : lb.bottom, lb.left : lb.right]
        assert (label == 255).all(axis=2).any(), m  # white digits inside


def test_demo_marks_every_actionable_listed_id_once(demo: Observation) -> None:
    """Demo: static title (no id), four truncated list rows (unlisted) and the disabled Save
    button (listed, but every action on it is refused) carry no mark."""
    _check_marks(demo, demo_png())
    marked = {m.id for m in mark_layout(demo, 1080, 2400)}
    save = next(c for c in demo.candidates if c.text == "Save")
    assert save.disabled and save.id in _prompt_ids(demo) and save.id not in marked
    assert any(not c.listed for c in demo.candidates)
    assert not marked & {c.id for c in demo.candidates if not c.listed or c.static}


def test_corpus_screen_marks_nothing_under_the_drawer(
    yelp_drawer: tuple[Observation, bytes],
) -> None:
    obs, png = yelp_drawer
    assert any(c.occluded for c in obs.candidates)
    _check_marks(obs, png)


def _only_marks_changed(obs: Observation, frame: np.ndarray, image: np.ndarray) -> None:
    """The image is the frame (same size, no band: a point on the image is a point on the
    screen), changed only inside the marks' boxes and labels."""
    assert image.shape == frame.shape and image.dtype == np.uint8
    changed = (image != frame).any(axis=2)
    inside = np.zeros_like(changed)
    for m in mark_layout(obs, frame.shape[1], frame.shape[0]):
        for b in (m.box_px, m.label_px):
            inside[b.top : b.bottom, b.left : b.right] = True
    assert changed.any() and not (changed & ~inside).any()


def test_marks_keep_the_screens_pixels_and_size(demo: Observation) -> None:
    _only_marks_changed(demo, _frame(demo_png()), draw_marks(demo, demo_png()))


def test_a_secure_black_corpus_frame_is_drawn_as_it_is(corpus_dir: Path) -> None:
    """A banking app's FLAG_SECURE screen: black but for the status bar; its tree's controls
    are marked on the black frame, which is not refused."""
    step = corpus_dir / "adb_oneoffs" / "kbank_secure_black"
    png = (step / "screen.png").read_bytes()
    obs = perceive((step / "screen.xml").read_bytes(), png)
    assert obs.screen is not None and obs.screen.secure and obs.ready
    _check_marks(obs, png)
    _only_marks_changed(obs, _frame(png), draw_marks(obs, png))
    assert draw_marks(obs, png, max_side_px=1280).shape == (1280, 591, 3)


def test_max_side_scales_down_keeping_aspect(demo: Observation) -> None:
    image = draw_marks(demo, demo_png(), max_side_px=1280)
    assert image.shape == (1280, 576, 3)
    landscape = cv2.rotate(_frame(demo_png()), cv2.ROTATE_90_CLOCKWISE)
    assert draw_marks(demo, landscape, max_side_px=1000).shape == (450, 1000, 3)
    # Never scaled up; the boxes follow the scale.
    assert draw_marks(demo, demo_png(), max_side_px=4000).shape == (2400, 1080, 3)
    scaled = {m.id: m for m in mark_layout(demo, 576, 1280, scale=576 / 1080)}
    full = {m.id: m for m in mark_layout(demo, 1080, 2400)}
    assert scaled.keys() == full.keys()
    for i, m in scaled.items():
        assert abs(m.box_px.left - full[i].box_px.left * 576 / 1080) <= 1
        assert abs(m.box_px.bottom - full[i].box_px.bottom * 576 / 1080) <= 1
    # Labels drawn at 1280 are as tall as full-size labels scaled down to 1280 (readable).
    small = next(iter(scaled.values())).label_px.height
    big = next(iter(full.values())).label_px.height
    assert small >= 16 and small >= big * 576 / 1080 - 1


def test_bad_inputs_raise_typed_errors(demo: Observation) -> None:
    with pytest.raises(FrameError):
        draw_marks(demo, demo_png()[:500])
    for bad in (0, 10, -5, 12.5, True, "1280"):
        with pytest.raises(ConfigError):
            draw_marks(demo, demo_png(), max_side_px=bad)  # type: ignore[arg-type]


def test_a_black_secure_frame_is_drawn_as_it_is(demo: Observation) -> None:
    black = np.zeros((2400, 1080, 3), np.uint8)
    image = draw_marks(demo, black)
    inside = np.zeros((2400, 1080), bool)
    for m in mark_layout(demo, 1080, 2400):
        for b in (m.box_px, m.label_px):
            inside[b.top : b.bottom, b.left : b.right] = True
    assert (image[~inside] == 0).all()


def test_an_observation_that_is_not_ready_gets_no_marks(demo: Observation) -> None:
    stale = replace(demo, refresh=frozenset({Channel.TREE}))
    assert not markable(stale)
    np.testing.assert_array_equal(draw_marks(stale, demo_png()), _frame(demo_png()))


def test_draw_overlay_is_unchanged(demo: Observation) -> None:
    """draw_marks shares the loader and the font with draw_overlay but not its output: the
    overlay keeps its band, and drawing marks first changes nothing it draws."""
    frame = _frame(demo_png())
    before = draw_overlay(demo, frame)
    draw_marks(demo, frame)
    np.testing.assert_array_equal(frame, _frame(demo_png()))  # the caller's array untouched
    after = draw_overlay(demo, frame)
    np.testing.assert_array_equal(before, after)
    assert after.shape[0] > 2400 and after.shape[1] == 1080


def _sixty(demo: Observation) -> Observation:
    """The demo observation with 60 tappable candidates in a 6 x 10 grid of small buttons."""
    cands = []
    for i in range(60):
        col, row = i % 6, i // 6
        box = BoxPx(20 + col * 175, 200 + row * 210, 20 + col * 175 + 150, 200 + row * 210 + 120)
        cands.append(Candidate(
            id=i + 1, source=Channel.TREE, kind="btn", text=f"b{i}", box_px=box,
            confidence=0.9, flags=ElementFlag.CLICKABLE, origin="tree",
        ))
    return replace(demo, candidates=tuple(cands), operations=())


def test_sixty_candidates_are_all_marked(demo: Observation) -> None:
    # What drawing them costs is perception-bench agent --marks' figure, not a test's.
    obs = _sixty(demo)
    frame = _frame(demo_png())
    image = draw_marks(obs, frame)
    assert len(mark_layout(obs, 1080, 2400)) == 60
    assert image.shape == frame.shape
    assert not np.array_equal(image, frame)


def test_cli_writes_the_marks_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.png").write_bytes(demo_png())
    (tmp_path / "s.xml").write_bytes(demo_xml())
    out = tmp_path / "m.png"
    code = main(["overlay", str(tmp_path / "s.png"), "--dump", str(tmp_path / "s.xml"),
                 "--marks", "--max-side", "1280", "-o", str(out)])
    assert code == 0
    image = cv2.imread(str(out))
    assert image is not None and image.shape == (1280, 576, 3)
    jpg = tmp_path / "m.jpg"
    assert main(["overlay", str(tmp_path / "s.png"), "--dump", str(tmp_path / "s.xml"),
                 "--marks", "-o", str(jpg)]) == 0
    assert cv2.imread(str(jpg)).shape == (2400, 1080, 3)  # type: ignore[union-attr]
    capsys.readouterr()
    for argv in (
        ["overlay", "s.png", "--max-side", "1280", "-o", str(out)],
        ["overlay", "s.png", "--marks", "--hidden", "-o", str(out)],
        ["overlay", "s.png", "--marks", "--max-side", "0", "-o", str(out)],
        ["overlay", "s.png", "--marks", "--max-side", "big", "-o", str(out)],
    ):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2, argv
        assert "Traceback" not in capsys.readouterr().err



def test_draw_marks_is_exported_without_loading_debug_on_import() -> None:
    """``import perception`` does not load the drawing module (the README says so);
    ``perception.draw_marks`` does, on first use."""
    import subprocess
    import sys

    code = (
        "import sys, perception; assert 'perception.debug' not in sys.modules; "
        "assert 'draw_marks' in perception.__all__; "
        "from perception import draw_marks; import perception.debug as d; "
        "assert draw_marks is d.draw_marks"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
