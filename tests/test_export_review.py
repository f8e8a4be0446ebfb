"""``perception export`` used as a dataset builder would: on the real corpus, with broken
recordings among good ones, and reading back every field a training row needs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_cli_review import _usage_error

from perception.cli.main import main
from perception.debug import record
from perception.demo import demo_png, demo_xml
from perception.geometry import clip_box, point_px_to_pm
from perception.pipeline import Perceiver
from perception.tree.compress import iter_rows
from perception.types import BoxPx


def _rows(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _sample(folder: Path, xml: bytes = b"", png: bytes = b"") -> Path:
    folder.mkdir(parents=True)
    (folder / "screen.xml").write_bytes(xml or demo_xml())
    (folder / "screen.png").write_bytes(png or demo_png())
    return folder


def test_one_unreadable_recording_does_not_stop_the_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A broken trace.json among good samples aborted the whole export (exit 2, nothing
    written); it is reported with its folder, counted, and the rest is exported."""
    data = tmp_path / "data"
    _sample(data / "a")
    broken = data / "b_trace"
    (broken / "step_000").mkdir(parents=True)
    (broken / "trace.json").write_text("{broken", encoding="utf-8")
    _sample(data / "c")
    out = tmp_path / "out.jsonl"
    assert main(["export", str(data), "--no-frames", "-o", str(out)]) == 0
    assert [Path(str(r["path"])).name for r in _rows(out)] == ["a", "c"]
    err = capsys.readouterr().err
    assert f"{broken}: RecordingError" in err
    assert "2 screens, 1 failed (1 recording unreadable)" in err
    # --strict stops there, naming it, and leaves no output behind.
    out.unlink()
    assert main(["export", str(data), "--no-frames", "--strict", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "RecordingError" in err and str(broken) in err and not out.exists()


def test_a_path_that_does_not_exist_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _sample(tmp_path / "a")
    code = main(["export", str(tmp_path / "a"), str(tmp_path / "typo"), "-o", "-"])
    assert code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "typo: no such file or folder" in captured.err
    (tmp_path / "notes.txt").write_text("x")
    assert main(["export", str(tmp_path / "notes.txt"), "-o", "-"]) == 2
    assert "notes.txt: neither a folder nor a dump file (.xml)" in capsys.readouterr().err


def test_each_line_names_its_dump_and_screenshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A training row needs the image it pairs with: the screenshot's path (also with
    --no-frames, which only skips the pixel work) and the dump's."""
    folder = _sample(tmp_path / "s")
    out = tmp_path / "out.jsonl"
    for extra in ([], ["--no-frames"]):
        assert main(["export", str(folder), "-o", str(out), *extra]) == 0
        (row,) = _rows(out)
        assert row["screenshot"] == str(folder / "screen.png")
        assert row["dump"] == str(folder / "screen.xml")
        assert list(row)[:6] == ["path", "step", "dump", "screenshot", "task", "action"]


def test_hidden_candidates_say_why_they_are_hidden(corpus_dir: Path) -> None:
    """Occluded and unlisted candidates (list items past the ones shown, among others) were one
    ``listed: false``: a dataset could not keep the list items (real, reachable by scrolling)
    and drop what lies under a dialog. QQ Music step 43 has both, and items that are both."""
    xml = corpus_dir / "droidbotexp_qqmusic/qqmusic_2021-11-23/step_043/screen.xml"
    obs = Perceiver().perceive(xml=xml.read_bytes())
    row = record(obs)
    by_id = {c.id: c for c in obs.candidates}
    hidden = {c["id"]: c["hidden"] for c in row["candidates"]}
    assert {by_id[i].occluded for i, h in hidden.items() if h and "occluded" in h} == {True}
    assert sorted({tuple(h) for h in hidden.values() if h}) == [
        ("occluded",), ("occluded", "unlisted"), ("unlisted",)
    ]
    for c in row["candidates"]:
        assert c["listed"] == (not c["hidden"])
        assert c["tree_id"] == by_id[c["id"]].tree_id


def test_listed_means_the_prompt_shows_it(corpus_dir: Path) -> None:
    """``listed`` is what the prompt shows: every id in the prompt is a listed, tappable
    candidate with the prompt's label and box; static rows are listed without an id; and a
    not-ready observation, whose prompt shows nothing, lists nothing."""
    for rel in ("droidbot_habitica/habitica_2020-08-29/step_000",
                "droidbotexp_qqmusic/qqmusic_2021-11-23/step_043"):
        obs = Perceiver().perceive(xml=(corpus_dir / rel / "screen.xml").read_bytes())
        row = record(obs)
        prompt = {r.id: r for r in iter_rows(row["prompt"]) if r.id is not None}
        cands = {c["id"]: c for c in row["candidates"]}
        listed = {i for i, c in cands.items() if c["listed"]}
        assert set(prompt) == {i for i in listed if not cands[i]["static"]}
        for i, r in prompt.items():
            size = obs.screen.size  # type: ignore[union-attr]
            box = clip_box(BoxPx(*cands[i]["box_px"]), size.box_px)
            assert (r.label, r.point_pm) == (cands[i]["text"], point_px_to_pm(box.center, size))
            assert list(r.point_pm or ()) == cands[i]["point_pm"]
    not_ready = corpus_dir / "droidbot_admob_apps/com.tp.android.curezombie2nd/step_001"
    obs = Perceiver().perceive(xml=(not_ready / "screen.xml").read_bytes())
    assert not obs.ready
    assert not any(c["listed"] for c in record(obs)["candidates"])


def test_export_of_the_corpus_is_deterministic_and_complete(
    corpus_dir: Path, tmp_path: Path
) -> None:
    """Tree only (seconds): every sample and desync pair is one line, twice the same bytes,
    on the screenshot's screen: without frames the screen was the dump's windows' extent
    (bars, emulator padding and the page under a dialog left out, 0x0 for an empty dump), so
    the 0-1000 boxes of 230 of the 364 screens were not those of the screenshot."""
    first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
    assert main(["export", str(corpus_dir), "--no-frames", "-o", str(first)]) == 0
    assert main(["export", str(corpus_dir), "--no-frames", "-o", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()
    rows = _rows(first)
    expected = sum(1 for _ in open(corpus_dir / "index.jsonl", encoding="utf-8"))
    desync = len([p for p in (corpus_dir / "_desync").iterdir() if p.is_dir()])
    assert len(rows) == expected + desync
    index = {
        json.loads(line)["path"]: json.loads(line)
        for line in open(corpus_dir / "index.jsonl", encoding="utf-8")
    }
    for r in rows:
        assert isinstance(r["screen"], dict) and r["screen"]["width"] > 0
        sample = index.get(str(Path(str(r["path"])).relative_to(corpus_dir)))
        if sample is not None and "geometry_rotation_mismatch" not in sample["tags"]:
            size = (r["screen"]["width"], r["screen"]["height"])
            assert size == (sample["width"], sample["height"]), r["path"]
        assert Path(str(r["dump"])).is_file()
        assert r["screenshot"] is None or Path(str(r["screenshot"])).is_file()


def test_a_missing_step_of_a_trace_is_reported(
    corpus_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A trace step whose folder lost its dump was skipped without a word."""
    trace = tmp_path / "bitbar"
    shutil.copytree(corpus_dir / "droidbot_bitbar" / "bitbar_2024-03-20", trace)
    (trace / "step_002" / "screen.xml").unlink()
    out = tmp_path / "out.jsonl"
    assert main(["export", str(trace), "--no-frames", "-o", str(out)]) == 0
    assert [r["step"] for r in _rows(out)] == [0, 1, 3]
    err = capsys.readouterr().err
    assert "step_002" in err and "screen.xml" in err


def test_loose_dumps_are_said_and_can_be_given_as_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The corpus' 80 ``dumps/*.xml`` were left out of a folder's export without a word, and
    a dump file given as a PATH was 'not a directory'. A walk now says what it left out; a
    file given is one screen (no screenshot)."""
    data = tmp_path / "data"
    _sample(data / "a")
    (data / "dumps").mkdir()
    for name in ("x.xml", "y.xml"):
        (data / "dumps" / name).write_bytes(demo_xml())
    out = tmp_path / "out.jsonl"
    assert main(["export", str(data), "--no-frames", "-o", str(out)]) == 0
    assert len(_rows(out)) == 1
    err = capsys.readouterr().err
    assert f"2 dumps in {data / 'dumps'} are not in sample folders" in err
    files = sorted(str(p) for p in (data / "dumps").glob("*.xml"))
    assert main(["export", *files, "-o", str(out)]) == 0
    rows = _rows(out)
    assert [r["dump"] for r in rows] == files
    assert all(r["screenshot"] is None and r["step"] == 0 and r["candidates"] for r in rows)


def test_a_trace_with_a_task_exports_it(corpus_dir: Path, tmp_path: Path) -> None:
    """LlamaTouch traces say what their actions accomplish ("Practice pronunciation in French
    in Duolingo."); the screen-to-action rows left the goal out. Exploration traces have none."""
    out = tmp_path / "t.jsonl"
    trace = corpus_dir / "llamatouch" / "trace_18"
    bitbar = corpus_dir / "droidbot_bitbar" / "bitbar_2024-03-20"
    assert main(["export", str(trace), str(bitbar), "--no-frames", "-o", str(out)]) == 0
    tasks = {(Path(str(r["path"])).parent.name, r["task"]) for r in _rows(out)}
    assert tasks == {("trace_18", "Practice pronunciation in French in Duolingo."),
                     ("bitbar_2024-03-20", None)}


def test_an_interrupted_export_resumes_where_it_stopped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C after hours of a big export threw every line away (the .part was removed).
    It is kept now, and --resume copies the recordings it holds instead of perceiving them
    again: the result is the bytes a run without the interruption writes."""
    from perception.cli import replay

    data = tmp_path / "data"
    for name in "abcd":
        _sample(data / name)
    fresh = tmp_path / "fresh.jsonl"
    assert main(["export", str(data), "--no-frames", "-o", str(fresh)]) == 0
    real = replay.StepPerceiver.perceive
    calls: list[str] = []

    def counting(self: replay.StepPerceiver, step: object, *, epoch: int) -> object:
        calls.append(step.tree_path.parent.name)  # type: ignore[attr-defined]
        if stop_at and len(calls) == stop_at:
            raise KeyboardInterrupt
        return real(self, step, epoch=epoch)  # type: ignore[arg-type]

    monkeypatch.setattr(replay.StepPerceiver, "perceive", counting)
    out = tmp_path / "out.jsonl"
    stop_at = 3
    assert main(["export", str(data), "--no-frames", "-o", str(out)]) == 130
    part = tmp_path / "out.jsonl.part"
    assert not out.exists() and len(_rows(part)) == 2
    assert "--resume" in capsys.readouterr().err
    calls.clear()
    stop_at = 0
    assert main(["export", str(data), "--no-frames", "-o", str(out), "--resume"]) == 0
    assert calls == ["c", "d"]
    assert out.read_bytes() == fresh.read_bytes() and not part.exists()
    assert "4 screens (2 from the earlier run), 0 failed" in capsys.readouterr().err
    # A finished file resumes too (a corpus that grew): nothing is perceived again.
    calls.clear()
    assert main(["export", str(data), "--no-frames", "-o", str(out), "--resume"]) == 0
    assert calls == [] and out.read_bytes() == fresh.read_bytes()


def test_resume_needs_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["export", str(tmp_path), "--resume"])
    assert stop.value.code == 2 and "--resume" in capsys.readouterr().err


# ----- -o names an input: refused, nothing written (review finding r3) -----------------


def test_export_refuses_to_write_over_its_dump_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dump = tmp_path / "b.xml"
    dump.write_bytes(demo_xml())
    err = _usage_error(["export", str(dump), "--no-frames", "-o", str(dump)], capsys)
    assert f"-o {dump} is an input of this export" in err
    assert dump.read_bytes() == demo_xml()
    assert not list(tmp_path.glob("*.part"))


def test_export_refuses_a_file_a_recording_reads_but_not_a_new_file_beside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = tmp_path / "data" / "a"
    sample.mkdir(parents=True)
    (sample / "screen.xml").write_bytes(demo_xml())
    (sample / "screen.png").write_bytes(demo_png())
    (sample / "notes.txt").write_text("mine\n", encoding="utf-8")
    data = str(tmp_path / "data")
    for own in ("screen.xml", "screen.png"):
        err = _usage_error(["export", data, "--no-frames", "-o", str(sample / own)], capsys)
        assert "is an input of this export" in err
    assert (sample / "screen.xml").read_bytes() == demo_xml()
    assert (sample / "screen.png").read_bytes() == demo_png()
    # A new file named as a recording's own, inside an input folder: a corpus trace with a
    # steps.jsonl beside its trace.json no longer reads.
    for name in ("steps.jsonl", "meta.json"):
        err = _usage_error(["export", data, "--no-frames", "-o", str(sample / name)], capsys)
        assert "a recording's own file name there would break that recording" in err
        assert not (sample / name).exists()
    # A file export does not read, even inside an input folder, and a new file there are fine.
    for out in (sample / "notes.txt", tmp_path / "data" / "rows.jsonl"):
        assert main(["export", data, "--no-frames", "-o", str(out)]) == 0
        (row,) = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
        assert row["candidates"]


def test_overlay_refuses_to_write_over_its_screenshot_or_dump(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "s.png"
    png.write_bytes(demo_png())
    dump = tmp_path / "d.xml"
    dump.write_bytes(demo_xml())
    err = _usage_error(["overlay", str(png), "--dump", str(dump), "-o", str(png)], capsys)
    assert f"-o {png} is the SCREEN file" in err
    link = tmp_path / "link.png"
    link.symlink_to(png)  # another name of the same file is the same file
    err = _usage_error(["overlay", str(png), "-o", str(link)], capsys)
    assert "is the SCREEN file" in err
    assert png.read_bytes() == demo_png() and dump.read_bytes() == demo_xml()
