"""Arbitration overlays and dataset export (``perception.debug``, ``perception overlay`` and
``perception export``), on the demo screen and real corpus traces, with real OCR."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

from perception import FrameError, PerceptionError, perceive
from perception.cli.main import main
from perception.debug import SOURCE_COLOURS, STATE_COLOURS, draw_overlay, record
from perception.demo import demo_png, demo_xml
from perception.geometry import clip_box, point_px_to_pm
from perception.pipeline import Observation
from perception.tree.compress import iter_rows
from perception.types import BoxPx, Channel


@pytest.fixture(scope="module")
def demo() -> Observation:
    return perceive(demo_xml(), demo_png())


def _band_height(image: np.ndarray, frame_height: int) -> int:
    return int(image.shape[0] - frame_height)


def test_overlay_draws_each_listed_candidate_in_its_source_colour(demo: Observation) -> None:
    frame = cv2.imdecode(np.frombuffer(demo_png(), np.uint8), cv2.IMREAD_COLOR)
    image = draw_overlay(demo, demo_png())
    band = _band_height(image, frame.shape[0])
    assert band > 0 and image.shape[1:] == frame.shape[1:]
    # The band's stripe names the state; the frame below it is the screenshot.
    assert tuple(image[band // 2, 2]) == STATE_COLOURS[demo.state.value]
    target = next(c for c in demo.candidates if c.text == "Add network")
    b = target.box_px
    left_edge = image[band + (b.top + b.bottom) // 2, b.left]
    assert tuple(left_edge) == SOURCE_COLOURS[Channel.TREE]
    untouched = image[band + b.bottom + 30, b.left + 30 :][:5]
    np.testing.assert_array_equal(untouched, frame[b.bottom + 30, b.left + 30 :][:5])


def test_overlay_of_a_pixel_only_observation() -> None:
    obs = perceive(frame=demo_png())  # no tree: OCR and anchors are all there is
    # The one-shot reader's OCR threads are stopped when perceive returns.
    assert not [t for t in threading.enumerate() if t.name.startswith("perception-rec")]
    assert obs.candidates and {c.source for c in obs.candidates} == {Channel.PIXEL}
    image = draw_overlay(obs, demo_png())
    band = image.shape[0] - 2400
    c = max(obs.candidates, key=lambda c: c.box_px.area if c.confidence >= 0.5 else 0)
    mid = (c.box_px.top + c.box_px.bottom) // 2
    assert tuple(image[band + mid, c.box_px.left]) == SOURCE_COLOURS[Channel.PIXEL]


def test_overlay_rejects_a_frame_it_cannot_read(demo: Observation) -> None:
    with pytest.raises(FrameError):
        draw_overlay(demo, demo_png()[:500])


def test_record_matches_the_prompt(demo: Observation) -> None:
    row = record(demo, path="demo")
    assert list(row)[0] == "path"
    json.dumps(row)
    prompt_rows = {r.id: r for r in iter_rows(row["prompt"]) if r.id is not None}
    listed = {c["id"]: c for c in row["candidates"] if c["listed"]}
    assert set(prompt_rows) <= set(listed)
    for cid, r in prompt_rows.items():
        assert r.label == listed[cid]["text"]
        # the point a tap on the candidate lands on (its box clipped to the screen, centred)
        size = demo.screen.size  # type: ignore[union-attr]
        box = clip_box(BoxPx(*listed[cid]["box_px"]), size.box_px)
        assert list(r.point_pm or ()) == listed[cid]["point_pm"]
        assert r.point_pm == point_px_to_pm(box.center, size)
    assert row["screen"]["fingerprint"] == demo.screen.fingerprint  # type: ignore[union-attr]


def test_cli_overlay_writes_a_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.png").write_bytes(demo_png())
    (tmp_path / "s.xml").write_bytes(demo_xml())
    out = tmp_path / "o.png"
    code = main(["overlay", str(tmp_path / "s.png"), "--dump", str(tmp_path / "s.xml"),
                 "-o", str(out), "--json"])
    assert code == 0
    image = cv2.imread(str(out))
    assert image is not None and image.shape[1] == 1080 and image.shape[0] > 2400
    assert json.loads(capsys.readouterr().out)["state"] == "tree"
    assert main(["overlay", str(tmp_path / "missing.png"), "-o", str(out)]) == 2


def test_cli_overlay_of_a_broken_dump_fails_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "s.png").write_bytes(demo_png())
    broken = tmp_path / "broken.xml"
    broken.write_bytes(demo_xml()[:300])
    out = tmp_path / "o.png"
    code = main(["overlay", str(tmp_path / "s.png"), "--dump", str(broken), "-o", str(out),
                 "--json"])
    assert code == 2 and not out.exists()
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith(f"perception: TreeParseError: {broken}: truncated dump")


def _sample(folder: Path, xml: bytes) -> None:
    folder.mkdir(parents=True)
    (folder / "screen.xml").write_bytes(xml)
    (folder / "screen.png").write_bytes(demo_png())


def test_cli_export_walks_folders_and_reports_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _sample(tmp_path / "data" / "a", demo_xml())
    _sample(tmp_path / "data" / "b" / "c", demo_xml())
    _sample(tmp_path / "data" / "d", demo_xml()[:300])  # a truncated dump
    out = tmp_path / "out.jsonl"
    assert main(["export", str(tmp_path / "data"), "--no-frames", "-o", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [Path(r["path"]).name for r in lines] == ["a", "c"]
    assert all(r["candidates"] and r["state"] == "tree" for r in lines)
    err = capsys.readouterr().err
    assert "/d: " in err and "2 screens, 1 failed" in err
    # --strict stops at the bad dump with the error's exit code, and the file written before
    # stays as it was; so does it for a folder with no screens in it.
    before = out.read_bytes()
    assert main(["export", str(tmp_path / "data"), "--no-frames", "--strict", "-o", str(out)]) == 2
    (tmp_path / "empty").mkdir()
    assert main(["export", str(tmp_path / "empty"), "-o", str(out)]) == 2
    assert out.read_bytes() == before and not list(tmp_path.glob("*.part"))
    assert "no screens found" in capsys.readouterr().err
    # With the screenshot, a failed dump is pixel-fallback, and the record says why.
    assert main(["export", str(tmp_path / "data" / "d"), "-o", str(out)]) == 0
    (row,) = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert row["state"] == "pixel" and "TreeParseError" in row["notes"][0]


def test_cli_bad_arguments_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A malformed option is argparse's one-line usage error (exit 2), not a traceback."""
    for argv in (
        ["pixels", "--roi", "0,0,50", "x.png"],
        ["pixels", "--roi", "a,b,c,d", "x.png"],
        ["replay", "--realtime", "--speed", "0", str(tmp_path)],
        ["export", "--limit", "-1", str(tmp_path)],
    ):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 2, argv
        assert "Traceback" not in capsys.readouterr().err


def test_export_api_raises_typed_errors(tmp_path: Path) -> None:
    from perception.cli.export import export

    with pytest.raises(PerceptionError):
        list(export([tmp_path / "nowhere"], open(tmp_path / "x", "w")))  # noqa: SIM115


def test_export_of_a_corpus_trace_carries_the_actions(
    corpus_dir: Path, tmp_path: Path
) -> None:
    trace = corpus_dir / "llamatouch" / "trace_18"
    out = tmp_path / "t.jsonl"
    assert main(["export", str(trace), "--no-frames", "-o", str(out)]) == 0
    lines = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    steps = sorted(p for p in trace.iterdir() if (p / "screen.xml").is_file())
    assert len(lines) == len(steps)
    assert [r["step"] for r in lines] == sorted(r["step"] for r in lines)
    assert sum(r["action"] is not None for r in lines) >= len(lines) - 1
    assert all(r["ready"] for r in lines)


# ----- overlays on odd screens (review) ---------------------------------------------------


def _band_rows(image: np.ndarray, frame_height: int) -> np.ndarray:
    return image[: image.shape[0] - frame_height]


def test_long_notes_wrap_inside_the_band(demo: Observation) -> None:
    """A note wider than the frame ran off its right edge: the read-back note of a desync
    pair (the part that says why the tree lost) was cut. Lines now wrap, nothing dropped."""
    from dataclasses import replace

    from perception.debug import font_scales, wrap

    note = ("none of the tree's labels 'QQ音乐 让生活充满音乐', '音乐馆' reads back off the "
            "pixels where the tree puts them (they say '同意《用户许可协议》', ''): the tree "
            "and the frame show different moments")
    obs = replace(demo, notes=(note,) * 4)
    frame = cv2.imdecode(np.frombuffer(demo_png(), np.uint8), cv2.IMREAD_COLOR)
    for width in (480, 1080):
        small = cv2.resize(frame, (width, width * 20 // 9))
        image = draw_overlay(obs, small)
        band = _band_rows(image, small.shape[0])
        legend_bottom = 40 * max(0.5, width / 1080)
        right_edge = band[int(legend_bottom) :, width - 3 :]
        assert (right_edge == 32).all(), width  # nothing drawn to the edge below the legend
        fs = font_scales(width)[0]
        lines = wrap(note.replace("音乐", "?"), width - 40, fs)
        assert len(lines) > 1
        assert " ".join(ln.strip() for ln in lines) == note.replace("音乐", "?")
        assert all(cv2.getTextSize(ln, cv2.FONT_HERSHEY_SIMPLEX, fs, 1)[0][0] <= width - 40
                   for ln in lines)


def _a2dp_dialog(corpus_dir: Path) -> tuple[Observation, bytes]:
    step = corpus_dir / "droidbot_a2dpvol_lowres" / "a2dpvol_2018-06-05" / "step_000"
    png = (step / "screen.png").read_bytes()
    return perceive((step / "screen.xml").read_bytes(), png), png


def _tag_extent(image: np.ndarray, band: int, c: object, colour: tuple[int, int, int]) -> tuple[
        int, int]:
    """Height and width of the filled id tag at a candidate's top-left corner."""
    b = c.box_px  # type: ignore[attr-defined]
    x, y = b.left + 2, band + b.top + 2
    height = 0
    while tuple(image[y + height, x]) == colour:
        height += 1
    width = 0
    while tuple(image[y, x + width]) == colour:
        width += 1
    return height, width


def test_tags_are_readable_on_a_small_screen_and_carry_the_operation(corpus_dir: Path) -> None:
    """On A2DP Volume's 480x800 permission dialog the ids were drawn at scale 0.28 (tags 11
    px high) and nothing on the boxes said which button the engine recommends; the tag now
    reads '2 dismiss' / '3 accept' at a readable size."""
    from perception.debug import candidate_tags

    obs, png = _a2dp_dialog(corpus_dir)
    tags = candidate_tags(obs)
    ops = {o.candidate_id: o.kind.value for o in obs.operations if o.candidate_id}
    assert ops and all(tags[i] == f"{i} {op}" for i, op in ops.items())
    image = draw_overlay(obs, png)
    band = image.shape[0] - 800
    for i in ops:
        c = obs.candidate(i)
        height, width = _tag_extent(image, band, c, SOURCE_COLOURS[c.source])
        assert height >= 15, (i, height)
        assert width >= cv2.getTextSize(tags[i], cv2.FONT_HERSHEY_SIMPLEX, 0.45, 1)[0][0], i


def test_the_band_says_how_many_candidates_are_hidden(corpus_dir: Path) -> None:
    """On Yelp's open drawer 8 candidates are occluded: the overlay without --hidden showed
    25 candidates counted and fewer drawn, with nothing saying where the rest went."""
    from perception.debug import _band_lines

    step = corpus_dir / "droidbot_yelp" / "yelp_2017" / "step_015"
    obs = perceive((step / "screen.xml").read_bytes(), (step / "screen.png").read_bytes())
    occluded = sum(c.occluded for c in obs.candidates)
    unlisted = sum(not c.listed for c in obs.candidates)
    assert occluded
    text = "\n".join(_band_lines(obs))
    assert f"hidden: {occluded} occluded, {unlisted} unlisted (--hidden)" in text


def test_a_landscape_frame_gets_the_text_size_of_its_portrait(demo: Observation) -> None:
    """Text was sized by the frame's width: a 1920x1080 landscape screen got a band 1.8x as
    big as the same phone upright (236 of its 1080 rows on Habitica turned). The short side
    sizes it now."""
    frame = cv2.imdecode(np.frombuffer(demo_png(), np.uint8), cv2.IMREAD_COLOR)
    upright = draw_overlay(demo, frame)
    turned = draw_overlay(demo, cv2.rotate(frame, cv2.ROTATE_90_CLOCKWISE))
    assert turned.shape[0] - frame.shape[1] <= upright.shape[0] - frame.shape[0]
