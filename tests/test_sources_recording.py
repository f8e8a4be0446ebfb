"""Recordings: our format, the corpus layout, the replay rules, the writer and raw frames."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import cv2
import numpy as np
import pytest

from perception.cli.main import main
from perception.demo import demo_png, demo_xml
from perception.errors import FrameError, RecordingError
from perception.geometry import point_scaled_to_px
from perception.sources import (
    ActionKind,
    FrameFormat,
    RecordedAction,
    RecordingWriter,
    ReplaySource,
    Timing,
    iter_steps,
    read_recording,
)
from perception.sources.base import (
    FrameCapture,
    ScreenSource,
    decode_raw_screencap,
    encode_raw_screencap,
    parse_raw_header,
    sniff_frame_format,
)
from perception.sources.recording import FORMAT_NAME, normalise_key, parse_bounds
from perception.sources.replay import Navigator
from perception.types import BoxPx, PointPx, ScreenSize

TINY = Path(__file__).parent / "data" / "sources" / "tiny"


# ----- raw screencap ----------------------------------------------------------------------


@pytest.mark.parametrize("header_bytes", [12, 16])
def test_raw_screencap_round_trip(header_bytes: int) -> None:
    rng = np.random.default_rng(7)
    bgr = rng.integers(0, 256, size=(9, 5, 3), dtype=np.uint8)
    raw = encode_raw_screencap(bgr, header_bytes=header_bytes)
    header = parse_raw_header(raw)
    assert (header.width_px, header.height_px, header.header_bytes) == (5, 9, header_bytes)
    assert header.total_bytes == len(raw)
    np.testing.assert_array_equal(decode_raw_screencap(raw), bgr)
    assert sniff_frame_format(raw) is FrameFormat.RAW


def test_raw_screencap_errors_say_what_they_got() -> None:
    raw = encode_raw_screencap(np.zeros((4, 4, 3), np.uint8))
    with pytest.raises(FrameError, match="truncated"):
        decode_raw_screencap(raw[:-3])
    with pytest.raises(FrameError, match="too short"):
        parse_raw_header(b"\x01\x00")
    with pytest.raises(FrameError, match="not a raw"):
        parse_raw_header(b"error: no devices/emulators found\n")
    with pytest.raises(FrameError, match="format=7"):
        parse_raw_header(struct.pack("<IIII", 4, 4, 7, 1) + bytes(64))


def test_sniff_png_and_jpeg() -> None:
    img = np.zeros((8, 8, 3), np.uint8)
    assert sniff_frame_format(cv2.imencode(".png", img)[1].tobytes()) is FrameFormat.PNG
    assert sniff_frame_format(cv2.imencode(".jpg", img)[1].tobytes()) is FrameFormat.JPEG


# ----- our format -------------------------------------------------------------------------


def test_read_our_format() -> None:
    rec = read_recording(TINY)
    assert rec.kind == "perception"
    assert [s.step for s in rec.steps] == [0, 1, 2]
    assert rec.screen == ScreenSize(360, 640)
    assert rec.density_dpi == 160
    first = rec.steps[0]
    assert first.action is not None and first.action.kind is ActionKind.TAP
    assert first.action.target_px == BoxPx(20, 100, 340, 180)
    assert first.insets.top_px == 40
    assert rec.steps[2].action == RecordedAction(kind=ActionKind.KEY, key="BACK", result_step=0)
    assert first.read_tree().startswith(b"<?xml")


def test_not_a_recording(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="neither"):
        read_recording(tmp_path)
    with pytest.raises(RecordingError, match="missing: no such folder"):
        read_recording(tmp_path / "missing")
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(RecordingError, match="a.txt: not a folder"):
        read_recording(tmp_path / "a.txt")


def test_bad_line_is_a_typed_error(tmp_path: Path) -> None:
    copy = tmp_path / "rec"
    shutil.copytree(TINY, copy)
    with (copy / "steps.jsonl").open("a") as fh:
        fh.write('{"step": 3, "tree": "x"}\n')
    with pytest.raises(RecordingError, match="line 4"):
        read_recording(copy)


def test_missing_step_files_are_named_when_opening(tmp_path: Path) -> None:
    copy = tmp_path / "rec"
    shutil.copytree(TINY, copy)
    (copy / "step_001" / "screen.xml").unlink()
    (copy / "step_002" / "screen.png").unlink()
    with pytest.raises(RecordingError, match=r"step_001/screen.xml, step_002/screen.png"):
        read_recording(copy)


def test_a_file_deleted_during_replay_is_a_typed_error(tmp_path: Path) -> None:
    copy = tmp_path / "rec"
    shutil.copytree(TINY, copy)
    source = ReplaySource(copy)
    (copy / "step_000" / "screen.xml").unlink()
    (copy / "step_000" / "screen.png").unlink()
    with pytest.raises(RecordingError, match="step 0: cannot read its tree"):
        source.capture_tree()
    with pytest.raises(RecordingError, match="step 0: cannot read its frame"):
        source.capture_frame()


def test_steps_out_of_order_are_replayed_by_step_number(tmp_path: Path) -> None:
    copy = tmp_path / "rec"
    shutil.copytree(TINY, copy)
    lines = (TINY / "steps.jsonl").read_text().splitlines()
    (copy / "steps.jsonl").write_text("\n".join([lines[1], lines[2], lines[0]]) + "\n")
    rec = read_recording(copy)
    assert [s.step for s in rec.steps] == [0, 1, 2]
    assert [s.step for s in iter_steps(rec)] == [0, 1, 2]
    source = ReplaySource(rec)
    assert source.capture_tree().step == 0
    assert source.advance().position == 1 and source.capture_tree().step == 1
    # Original timing follows the recorded times, in step order.
    now = [0]
    timed = ReplaySource(rec, timing=Timing.ORIGINAL, clock=lambda: now[0])
    now[0] = 450_000_000
    assert timed.capture_tree().step == 1


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda o: o | {"step": 0}, "step 0 appears twice"),
        (lambda o: o | {"tree_start_ns": 100}, "step 2 was captured before step 1"),
    ],
)
def test_repeated_steps_and_backward_times_are_refused(
    tmp_path: Path, edit: object, message: str
) -> None:
    copy = tmp_path / "rec"
    shutil.copytree(TINY, copy)
    lines = (TINY / "steps.jsonl").read_text().splitlines()
    last = json.loads(lines[2])
    lines[2] = json.dumps(edit(last))  # type: ignore[operator]
    (copy / "steps.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordingError, match=message):
        read_recording(copy)


def test_action_json_round_trip() -> None:
    action = RecordedAction(
        kind=ActionKind.SWIPE, point_px=PointPx(1, 2), end_px=PointPx(3, 400),
        target_px=BoxPx(0, 0, 10, 500), duration_ms=300, result_step=None,
    )
    assert RecordedAction.from_json(json.loads(json.dumps(action.to_json()))) == action
    with pytest.raises(RecordingError):
        RecordedAction.from_json({"kind": "teleport"})


def test_keys_and_bounds() -> None:
    assert normalise_key("4") == normalise_key("KEYCODE_BACK") == normalise_key("back") == "BACK"
    assert normalise_key("3") == "HOME"
    assert parse_bounds("[328,468][432,540]") == BoxPx(328, 468, 432, 540)
    assert parse_bounds("nonsense") is None


# ----- the replay rules -------------------------------------------------------------------


def test_navigator_follows_recorded_targets() -> None:
    nav = Navigator(read_recording(TINY))
    assert not nav.tap(PointPx(180, 500)).moved  # outside the target: stay
    assert nav.position == 0
    assert not nav.key("HOME").moved
    move = nav.tap(PointPx(30, 110))
    assert move.moved and nav.position == 1
    assert not nav.tap(PointPx(250, 140)).moved  # "Cancel", not the recorded "Save"
    assert nav.key("BACK").moved and nav.position == 0  # no recorded back: history
    nav.tap(PointPx(30, 110))
    nav.tap(PointPx(100, 150))
    assert nav.position == 2
    assert nav.key("KEYCODE_BACK").reason == "recorded BACK"
    assert nav.position == 0
    with pytest.raises(RecordingError):
        nav.goto(7)


def test_replay_source_is_a_screen_source() -> None:
    src = ReplaySource(TINY)
    assert isinstance(src, ScreenSource)
    tree = src.capture_tree()
    frame = src.capture_frame()
    assert tree.step == 0 and frame.step == 0 and frame.fmt is FrameFormat.PNG
    assert tree.start_ns <= tree.end_ns and frame.start_ns <= frame.end_ns
    facts = src.screen_facts()
    assert facts.size == ScreenSize(360, 640) and facts.package == "com.example.notes"
    move = src.perform(RecordedAction(kind=ActionKind.TAP, point_px=PointPx(50, 150)))
    assert move.moved and src.epoch == 1
    assert src.capture_tree().epoch == 1 and src.capture_tree().step == 1
    src.close()
    with pytest.raises(RecordingError, match="closed"):
        src.capture_tree()


def test_replay_original_timing_follows_the_clock() -> None:
    now = [0]
    src = ReplaySource(TINY, timing=Timing.ORIGINAL, speed=2.0, clock=lambda: now[0])
    src.start()
    assert src.capture_tree().step == 0
    now[0] = 210_000_000  # 420 ms of recording at 2x
    assert src.capture_tree().step == 1
    now[0] = 10_000_000_000
    assert src.capture_frame().step == 2
    assert src.epoch == 2


def test_iter_steps_with_original_timing() -> None:
    rec = read_recording(TINY)
    assert [s.step for s in iter_steps(rec)] == [0, 1, 2]
    import time

    t0 = time.monotonic()
    list(iter_steps(rec, timing="original", speed=8.0))  # 800 ms recorded -> ~100 ms
    assert 0.08 <= time.monotonic() - t0 < 2.0


# ----- the writer -------------------------------------------------------------------------


def test_writer_round_trip_with_raw_frames(tmp_path: Path) -> None:
    src = ReplaySource(TINY)
    out = tmp_path / "rec"
    with RecordingWriter(out, facts=src.screen_facts(), serial="tiny") as writer:
        for i in range(2):
            tree = src.capture_tree()
            frame = src.capture_frame()
            if i == 1:  # store a raw screencap: it must come back as the same pixels
                pixels = cv2.imdecode(np.frombuffer(frame.data, np.uint8), cv2.IMREAD_COLOR)
                frame = FrameCapture(
                    data=encode_raw_screencap(np.asarray(pixels, np.uint8)), fmt=FrameFormat.RAW,
                    start_ns=frame.start_ns, end_ns=frame.end_ns, epoch=frame.epoch,
                )
            writer.add_step(tree, frame, src.screen_facts())
            if i == 0:
                action = RecordedAction(
                    kind=ActionKind.TAP, point_px=PointPx(50, 150),
                    target_px=BoxPx(20, 100, 340, 180), result_step=1,
                )
                writer.set_action(action)
                src.perform(action)
    rec = read_recording(out)
    assert rec.kind == "perception" and len(rec.steps) == 2
    assert rec.steps[0].action is not None and rec.steps[0].action.result_step == 1
    assert rec.steps[1].action is None
    assert rec.steps[0].tree_start_ns == 0
    assert rec.steps[1].tree_start_ns > 0
    assert rec.steps[1].epoch == 1
    assert rec.steps[0].read_tree() == (TINY / "step_000" / "screen.xml").read_bytes()
    assert rec.steps[0].read_frame() == (TINY / "step_000" / "screen.png").read_bytes()
    stored = cv2.imread(str(rec.steps[1].frame_path), cv2.IMREAD_COLOR)
    original = cv2.imread(str(TINY / "step_001" / "screen.png"), cv2.IMREAD_COLOR)
    np.testing.assert_array_equal(stored, original)
    with pytest.raises(RecordingError, match="already"):
        RecordingWriter(out, facts=src.screen_facts())


# ----- the corpus layout ------------------------------------------------------------------


def test_corpus_droidbot_trace(corpus_dir: Path) -> None:
    rec = read_recording(corpus_dir / "droidbot_a2dpvol_lowres" / "a2dpvol_2018-06-05")
    assert rec.kind == "corpus-trace" and len(rec.steps) == 9
    first = rec.steps[0]
    assert first.screen == ScreenSize(480, 800)
    assert first.action is not None and first.action.kind is ActionKind.TAP
    assert first.action.target_px == BoxPx(328, 468, 432, 540)
    assert first.action.point_px == PointPx(380, 504)
    # DroidBot tags give the original timing: strictly increasing offsets.
    starts = [s.tree_start_ns for s in rec.steps]
    assert starts == sorted(starts) and starts[1] - starts[0] == 58_000_000_000
    nav = Navigator(rec)
    assert nav.tap(PointPx(380, 504)).moved and nav.position == 1


def test_corpus_removed_steps_are_skipped(corpus_dir: Path) -> None:
    rec = read_recording(corpus_dir / "droidbot_yelp" / "yelp_2017")
    numbers = [s.step for s in rec.steps]
    assert 3 not in numbers and len(numbers) == 15
    assert rec.position_of(4) == 3


def test_corpus_llamatouch_clicks_are_converted(corpus_dir: Path) -> None:
    rec = read_recording(corpus_dir / "llamatouch" / "trace_18")
    assert rec.steps[0].action is not None and rec.steps[0].action.key == "HOME"
    click = rec.steps[1].action
    assert click is not None and click.kind is ActionKind.TAP and click.target_px is None
    screen = rec.steps[1].screen
    assert screen is not None
    assert click.point_px == point_scaled_to_px(204, 170, ScreenSize(320, 720), screen)
    nav = Navigator(rec)
    assert nav.key("HOME").moved and nav.position == 1
    assert click.point_px is not None
    near = PointPx(click.point_px.x + 5, click.point_px.y - 5)
    assert nav.tap(near).moved and nav.position == 2


def test_corpus_keys_intents_and_samples(corpus_dir: Path) -> None:
    rec = read_recording(corpus_dir / "droidbot_admob_apps" / "com.tp.android.curezombie2nd")
    kinds = [s.action.kind for s in rec.steps if s.action is not None]
    assert ActionKind.KEY in kinds and ActionKind.INTENT in kinds
    samples = sorted(p for p in (corpus_dir / "adb_oneoffs").iterdir() if p.is_dir())
    one = read_recording(samples[0])
    assert one.kind == "corpus-sample" and len(one.steps) == 1
    src = ReplaySource(one)
    assert src.capture_frame().fmt in (FrameFormat.PNG, FrameFormat.JPEG)


@pytest.mark.parametrize(("fmt", "channels"), [(1, "RGBA"), (2, "RGBX"), (3, "RGB"), (5, "BGRA")])
def test_raw_screencap_formats(fmt: int, channels: str) -> None:
    rng = np.random.default_rng(fmt)
    bgr = rng.integers(0, 256, size=(6, 4, 3), dtype=np.uint8)
    order = {"R": 2, "G": 1, "B": 0}
    planes = [bgr[:, :, order[c]] if c in order else np.full((6, 4), 255, np.uint8)
              for c in channels]
    raw = struct.pack("<IIII", 4, 6, fmt, 1) + np.dstack(planes).astype(np.uint8).tobytes()
    np.testing.assert_array_equal(decode_raw_screencap(raw), bgr)


# ----- malformed recordings: RecordingError naming file and field (review finding r8) ---

STEP = {"step": 0, "tree": "t0.xml", "frame": "f0.png", "tree_start_ns": 1, "tree_end_ns": 2}


def _recording(folder: Path, meta: object, lines: list[object]) -> Path:
    folder.mkdir(parents=True)
    (folder / "t0.xml").write_bytes(demo_xml())
    (folder / "f0.png").write_bytes(demo_png())
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    text = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n"
    (folder / "steps.jsonl").write_text(text, encoding="utf-8")
    return folder


BAD_RECORDINGS = [
    ("meta_list", [1, 2], [STEP], "meta.json: expected a JSON object, got a list"),
    ("width", {"format": FORMAT_NAME, "screen": {"width_px": "abc", "height_px": 5}}, [STEP],
     "meta.json screen.width_px: expected a whole number, got 'abc'"),
    ("screen_str", {"format": FORMAT_NAME, "screen": "big"}, [STEP],
     "meta.json: 'screen' must be an object"),
    ("density", {"format": FORMAT_NAME, "screen": {"density_dpi": "hi"}}, [STEP],
     "meta.json screen.density_dpi: expected a whole number, got 'hi'"),
    ("insets", {"format": FORMAT_NAME, "insets": {"bogus": 1}}, [STEP],
     "meta.json: 'insets' must be an object of top_px"),
    ("inset_value", {"format": FORMAT_NAME, "insets": {"top_px": [3]}}, [STEP],
     "meta.json insets.top_px: expected a whole number"),
    ("step_list", {"format": FORMAT_NAME}, ["[1,2]"],
     "steps.jsonl line 1: expected a JSON object (a step), got '[1,2]'"),
    ("step_num", {"format": FORMAT_NAME}, ["5"], "steps.jsonl line 1: expected a JSON object"),
    ("action_list", {"format": FORMAT_NAME}, [dict(STEP, action=[1, 2])],
     "steps.jsonl line 1: bad action record [1, 2]"),
]


@pytest.mark.parametrize(("name", "meta", "lines", "needle"), BAD_RECORDINGS,
                         ids=[b[0] for b in BAD_RECORDINGS])
def test_malformed_recording_is_a_recording_error_naming_file_and_field(
    tmp_path: Path, name: str, meta: object, lines: list[object], needle: str
) -> None:
    folder = _recording(tmp_path / name, meta, lines)
    with pytest.raises(RecordingError) as caught:
        read_recording(folder)
    assert needle in str(caught.value) and str(folder) in str(caught.value)


def test_corpus_trace_of_another_shape_is_a_recording_error(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    (trace / "step_000").mkdir(parents=True)
    (trace / "step_000" / "screen.xml").write_bytes(demo_xml())
    (trace / "trace.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(RecordingError, match="trace.json: expected a JSON object, got a list"):
        read_recording(trace)
    (trace / "trace.json").write_text(json.dumps({"steps": [5]}), encoding="utf-8")
    with pytest.raises(RecordingError, match="unexpected shape"):
        read_recording(trace)


def test_export_counts_malformed_recordings_and_keeps_the_good_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs = tmp_path / "recs"
    _recording(recs / "good", {"format": FORMAT_NAME}, [STEP])
    for name, meta, lines, _ in BAD_RECORDINGS:
        _recording(recs / name, meta, lines)
    out = tmp_path / "rows.jsonl"
    assert main(["export", str(recs), "--no-frames", "-o", str(out)]) == 0
    (row,) = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert Path(row["path"]).name == "good"
    err = capsys.readouterr().err
    assert f"1 screen, {len(BAD_RECORDINGS)} failed ({len(BAD_RECORDINGS)} recordings " \
        "unreadable)" in err
    assert err.count("RecordingError") == len(BAD_RECORDINGS) and "Traceback" not in err
