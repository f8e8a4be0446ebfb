"""Every number a recording holds is read by one checked reader: ``Infinity``, ``1e999``,
``NaN``, a fraction, text or a zero click space is a :class:`RecordingError` naming the file
and the field (exit 2, one recording skipped by an export), never an OverflowError,
ZeroDivisionError or ValueError traceback, and never a value read as something else
(``"1080x2400"`` as a 1x0 screen, step 1.5 as step 1, a click off its space as a tap at the
screen's edge). Fuzz audit, session 21, finding 1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from perception.cli.main import main
from perception.demo import demo_xml
from perception.errors import RecordingError
from perception.simdevice.cli import main as simdevice_main
from perception.sources import ActionKind, read_recording
from perception.types import PointPx, ScreenSize

STEP: dict[str, Any] = {
    "step": 0, "tree": "step_000/screen.xml", "tree_start_ns": 0, "tree_end_ns": 1,
}
INF = float("inf")


def _ours(folder: Path, **fields: Any) -> Path:
    """A one-step recording of our format whose step line holds ``fields`` (json writes
    float inf as ``Infinity``, as a hand-edited or foreign file may hold)."""
    (folder / "step_000").mkdir(parents=True)
    (folder / "step_000" / "screen.xml").write_bytes(demo_xml())
    (folder / "steps.jsonl").write_text(json.dumps({**STEP, **fields}) + "\n", encoding="utf-8")
    return folder


BAD_STEPS: list[tuple[str, dict[str, Any], str]] = [
    ("tree_start_inf", {"tree_start_ns": INF}, "tree_start_ns: expected a whole number, got inf"),
    ("tree_end_1e999", {"tree_end_ns": 1e999}, "tree_end_ns: expected a whole number, got inf"),
    ("frame_start_inf", {"frame_start_ns": -INF}, "frame_start_ns: expected a whole number"),
    ("epoch_inf", {"epoch": INF}, "epoch: expected a whole number, got inf"),
    ("epoch_nan", {"epoch": float("nan")}, "epoch: expected a whole number, got nan"),
    ("rotation_inf", {"rotation": INF}, "rotation: expected a whole number, got inf"),
    ("step_inf", {"step": INF}, "step: expected a whole number, got inf"),
    ("step_fraction", {"step": 1.5}, "step: expected a whole number, got 1.5"),
    ("step_bool", {"step": True}, "step: expected a whole number, got True"),
    ("screen_inf", {"screen": [INF, 1]}, "screen[0]: expected a whole number, got inf"),
    ("screen_text", {"screen": "1080x2400"},
     "screen: expected a list of 2 whole numbers, got '1080x2400'"),
    ("screen_zero", {"screen": [0, 0]}, "screen[0]: expected a whole number of at least 1"),
    ("screen_negative", {"screen": [1080, -5]}, "screen[1]: expected a whole number of at least"),
    ("screen_three", {"screen": [1080, 2400, 3]}, "screen: expected a list of 2 whole numbers"),
    ("point_inf", {"action": {"kind": "tap", "point_px": [INF, 1]}},
     "point_px[0]: expected a whole number, got inf"),
    ("point_text", {"action": {"kind": "tap", "point_px": "12"}},
     "point_px: expected a list of 2 whole numbers, got '12'"),
    ("end_fraction", {"action": {"kind": "swipe", "point_px": [1, 1], "end_px": [2, 2.5]}},
     "end_px[1]: expected a whole number, got 2.5"),
    ("target_inf", {"action": {"kind": "tap", "point_px": [1, 1], "target_px": [0, 0, INF, 9]}},
     "target_px[2]: expected a whole number, got inf"),
    ("duration_inf",
     {"action": {"kind": "swipe", "point_px": [1, 1], "end_px": [2, 2], "duration_ms": INF}},
     "duration_ms: expected a whole number, got inf"),
    ("result_inf", {"action": {"kind": "key", "key": "BACK", "result_step": INF}},
     "result_step: expected a whole number, got inf"),
    ("tree_nul", {"tree": "step_000/scr\x00een.xml"}, "cannot resolve its tree"),
    ("frame_nul", {"frame": "step_000/scr\x00een.png"}, "cannot resolve its frame"),
]


@pytest.mark.parametrize(("name", "fields", "needle"), BAD_STEPS, ids=[b[0] for b in BAD_STEPS])
def test_a_bad_number_in_a_step_is_a_recording_error_naming_the_field(
    tmp_path: Path, name: str, fields: dict[str, Any], needle: str
) -> None:
    folder = _ours(tmp_path / name, **fields)
    with pytest.raises(RecordingError) as caught:
        read_recording(folder)
    assert needle in str(caught.value)
    assert f"{folder}/steps.jsonl line 1" in str(caught.value)


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("width_px", 1e999, "screen.width_px: expected a whole number, got inf"),
        ("width_px", 0, "screen.width_px: expected a whole number of at least 1, got 0"),
        ("height_px", 1080.5, "screen.height_px: expected a whole number, got 1080.5"),
        ("density_dpi", -INF, "screen.density_dpi: expected a whole number, got -inf"),
    ],
)
def test_a_bad_number_in_meta_json_is_a_recording_error(
    tmp_path: Path, field: str, value: float, needle: str
) -> None:
    folder = _ours(tmp_path / "rec")
    screen: dict[str, Any] = {"width_px": 1080, "height_px": 2400, field: value}
    meta = {"format": "perception-recording", "screen": screen}
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(RecordingError, match="meta.json") as caught:
        read_recording(folder)
    assert needle in str(caught.value)


def test_whole_numbers_written_otherwise_still_read(tmp_path: Path) -> None:
    """What the reader took before and means the same number still reads: text of digits
    and a float without a fraction (a tool that writes every number as a double)."""
    folder = _ours(
        tmp_path / "rec", step="3", tree_start_ns=5.0, screen=[1080.0, "2400"],
        action={"kind": "swipe", "point_px": [1.0, 2], "end_px": ["3", 4], "duration_ms": 300.0},
    )
    (step,) = read_recording(folder).steps
    assert (step.step, step.tree_start_ns, step.screen) == (3, 5, ScreenSize(1080, 2400))
    assert step.action is not None
    assert (step.action.point_px, step.action.end_px) == (PointPx(1, 2), PointPx(3, 4))
    assert step.action.duration_ms == 300


# ----- the corpus layout (trace.json + step_NNN/meta.json) ---------------------------------


def _trace(folder: Path, entry: dict[str, Any], meta: dict[str, Any] | None = None) -> Path:
    (folder / "step_000").mkdir(parents=True)
    (folder / "step_000" / "screen.xml").write_bytes(demo_xml())
    (folder / "trace.json").write_text(json.dumps({"steps": [entry]}), encoding="utf-8")
    if meta is not None:
        (folder / "step_000" / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return folder


def _click(**fields: Any) -> dict[str, Any]:
    click = {"type": "click", "coord_space": [400, 720], "x": 200, "y": 360, **fields}
    return {"step": 0, "action": click}


IMAGE = {"image": {"width": 1080, "height": 1920}}
BAD_TRACES: list[tuple[str, dict[str, Any], dict[str, Any] | None, str]] = [
    ("step_inf", {"step": INF}, None, "step: expected a whole number, got inf"),
    ("result_inf", {"step": 0, "action": {"type": "back", "result_step": INF}}, None,
     "result_step: expected a whole number, got inf"),
    ("width_1e999", {"step": 0}, {"image": {"width": 1e999, "height": 2400}},
     "meta.json image.width: expected a whole number, got inf"),
    ("height_zero", {"step": 0}, {"image": {"width": 1080, "height": 0}},
     "meta.json image.height: expected a whole number of at least 1, got 0"),
    ("bounds_inf", {"step": 0}, {**IMAGE, "top_level_bounds": [[0, INF, 1080, 1920]]},
     "top_level_bounds[1]: expected a whole number, got inf"),
    ("space_zero", _click(coord_space=[0, 0]), IMAGE,
     "click coord_space[0]: expected a whole number of at least 1, got 0"),
    ("space_text", _click(coord_space="400x720"), IMAGE,
     "click coord_space: expected a list of 2 whole numbers"),
    ("x_nan", _click(x=float("nan")), IMAGE, "click x: expected a number, got nan"),
    ("x_negative", _click(x=-3), IMAGE, "click x: expected a number 0 to 400, got -3"),
    ("y_huge", _click(y=1e308), IMAGE, "click y: expected a number 0 to 720, got 1e+308"),
    ("dir_nul", {"step": 0, "dir": "step_\x00000"}, None, "cannot resolve its folder"),
]


@pytest.mark.parametrize(("name", "entry", "meta", "needle"), BAD_TRACES,
                         ids=[b[0] for b in BAD_TRACES])
def test_a_bad_number_in_a_corpus_trace_is_a_recording_error(
    tmp_path: Path, name: str, entry: dict[str, Any], meta: dict[str, Any] | None, needle: str
) -> None:
    folder = _trace(tmp_path / name, entry, meta)
    with pytest.raises(RecordingError) as caught:
        read_recording(folder)
    assert needle in str(caught.value)


def test_a_click_on_the_edge_of_its_space_is_still_a_tap(tmp_path: Path) -> None:
    folder = _trace(tmp_path / "edge", _click(x=400, y=0), IMAGE)
    (step,) = read_recording(folder).steps
    assert step.action is not None and step.action.kind is ActionKind.TAP
    assert step.action.point_px == PointPx(1079, 0)


# ----- the commands: exit 2, and an export keeps the good recordings -----------------------


def test_replay_and_the_virtual_phone_exit_2_on_infinity(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _ours(tmp_path / "rec", epoch=INF)
    assert main(["replay", "--no-frames", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "RecordingError" in err and "epoch: expected a whole number" in err
    assert "Traceback" not in err
    assert simdevice_main([str(folder), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "RecordingError" in err and "epoch: expected a whole number" in err


def test_export_skips_only_the_recording_with_infinity(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs = tmp_path / "recs"
    _ours(recs / "a_good")
    _ours(recs / "b_bad", epoch=INF)
    _trace(recs / "c_bad", _click(coord_space=[0, 0]), IMAGE)
    _ours(recs / "d_good")
    out = tmp_path / "rows.jsonl"
    assert main(["export", str(recs), "--no-frames", "-o", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert sorted(Path(row["path"]).parent.name for row in rows) == ["a_good", "d_good"]
    err = capsys.readouterr().err
    assert "2 failed (2 recordings unreadable)" in err and "Traceback" not in err


# ----- each folder resolved once per recording (fuzz audit, session 21: 100,000 steps) -----


def test_each_step_folder_is_resolved_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A recording's steps sharing one folder resolve it once (and the recording folder once),
    not each file's whole path twice a step: a 100,000-step recording took 14 s of CPU, most
    of it there. Counted, not timed (timings belong to perception-bench)."""
    folder = _ours(tmp_path / "rec")
    lines = [json.dumps({**STEP, "step": i, "tree_start_ns": i, "tree_end_ns": i + 1})
             for i in range(50)]
    (folder / "steps.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    calls: list[Path] = []
    resolve = Path.resolve

    def counted(self: Path, strict: bool = False) -> Path:
        calls.append(self)
        return resolve(self, strict=strict)

    monkeypatch.setattr(Path, "resolve", counted)
    assert len(read_recording(folder).steps) == 50
    assert len(calls) <= 4, calls


def test_a_file_in_a_folder_already_resolved_is_still_checked(tmp_path: Path) -> None:
    """Resolving a folder once changes nothing of what is refused: a later step's file in the
    same folder that is a symlink out of the recording, or that climbs out with ``..``."""
    outside = tmp_path / "secret.xml"
    outside.write_bytes(demo_xml())
    for name, tree in (("link", "step_000/link.xml"), ("climb", "step_000/../../secret.xml")):
        folder = _ours(tmp_path / name)
        (folder / "step_000" / "link.xml").symlink_to(outside)
        second = {**STEP, "step": 1, "tree": tree, "tree_start_ns": 2, "tree_end_ns": 3}
        with (folder / "steps.jsonl").open("a", encoding="utf-8") as f:
            f.write(json.dumps(second) + "\n")
        with pytest.raises(RecordingError, match="outside the recording folder") as caught:
            read_recording(folder)
        assert "line 2" in str(caught.value) and str(outside) in str(caught.value)
