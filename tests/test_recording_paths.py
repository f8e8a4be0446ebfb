"""Recordings and export read and write only what they were given (security review, paths).

A shared recording named any file of the host (``"tree": "/etc/passwd"``, ``"../x.png"``, a
step file linked out of the folder) and replay, export and the virtual phone read it; a huge
dump was read whole before its size was checked; ``export -o`` replaced devices, FIFOs and
symlinks with a regular file, and wrote over the files of a recording it could not open."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from perception.cli.main import main
from perception.config import PixelConfig
from perception.errors import ImplausibleFrameSizeError, RecordingError, UnsafeXmlError
from perception.pixel.frame import max_frame_bytes as pixel_max_frame_bytes
from perception.sources import read_recording
from perception.sources.recording import max_frame_bytes

TINY = Path(__file__).parent / "data" / "sources" / "tiny"
SECRET = b"PRIVATE-BANK-PIN-1234"


def _tiny(folder: Path) -> Path:
    shutil.copytree(TINY, folder)
    return folder


def _secret_dump(path: Path) -> Path:
    """A dump that parses, holding a text that must never reach an export line."""
    xml = (TINY / "step_000" / "screen.xml").read_bytes().replace(b"New note", SECRET)
    assert SECRET in xml
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(xml)
    return path


def _rewrite_step(root: Path, index: int, **fields: object) -> None:
    lines = (root / "steps.jsonl").read_text(encoding="utf-8").splitlines()
    step = json.loads(lines[index])
    step.update(fields)
    lines[index] = json.dumps(step)
    (root / "steps.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


# ----- a recording names only its own files ---------------------------------------------


@pytest.mark.parametrize("field", ["tree", "frame"])
@pytest.mark.parametrize("kind", ["parent", "absolute"])
def test_a_step_naming_a_file_outside_its_recording_is_refused(
    tmp_path: Path, field: str, kind: str
) -> None:
    rec = _tiny(tmp_path / "shared")
    outside = _secret_dump(tmp_path / "private" / "screen.xml")
    named = "../private/screen.xml" if kind == "parent" else str(outside)
    _rewrite_step(rec, 1, **{field: named})
    with pytest.raises(RecordingError) as caught:
        read_recording(rec)
    message = str(caught.value)
    assert f"{rec}/steps.jsonl line 2 (step 1)" in message
    assert f"its {field}" in message and str(outside) in message
    assert "outside the recording folder" in message


def test_a_step_file_symlinked_out_of_its_recording_is_refused(tmp_path: Path) -> None:
    rec = _tiny(tmp_path / "shared")
    outside = _secret_dump(tmp_path / "private" / "screen.xml")
    dump = rec / "step_002" / "screen.xml"
    dump.unlink()
    dump.symlink_to(outside)
    with pytest.raises(RecordingError, match=r"line 3 \(step 2\): its tree .* leads to "):
        read_recording(rec)
    # A whole step folder linked out, and steps.jsonl itself: the same.
    dump.unlink()
    shutil.rmtree(rec / "step_002")
    (rec / "step_002").symlink_to(outside.parent, target_is_directory=True)
    with pytest.raises(RecordingError, match="outside the recording folder"):
        read_recording(rec)
    fresh = _tiny(tmp_path / "fresh")
    (tmp_path / "elsewhere.jsonl").write_bytes((fresh / "steps.jsonl").read_bytes())
    (fresh / "steps.jsonl").unlink()
    (fresh / "steps.jsonl").symlink_to(tmp_path / "elsewhere.jsonl")
    with pytest.raises(RecordingError, match="its steps.jsonl .* outside the recording"):
        read_recording(fresh)


def test_links_and_dots_that_stay_inside_the_recording_still_read(tmp_path: Path) -> None:
    """A recording opened through a symlink, a ``..`` that comes back inside and a step file
    linked to another file of the same recording are no escape."""
    rec = _tiny(tmp_path / "rec")
    _rewrite_step(rec, 0, tree="step_001/../step_000/screen.xml")
    dump = rec / "step_002" / "screen.png"
    dump.unlink()
    dump.symlink_to(rec / "step_001" / "screen.png")
    link = tmp_path / "link"
    link.symlink_to(rec, target_is_directory=True)
    recording = read_recording(link)
    assert len(recording.steps) == 3
    assert recording.steps[0].read_tree() == (TINY / "step_000" / "screen.xml").read_bytes()
    assert recording.steps[2].read_frame() == (TINY / "step_001" / "screen.png").read_bytes()


def _trace(root: Path, dirs: list[str]) -> Path:
    root.mkdir(parents=True)
    steps = [{"step": i, "dir": d} for i, d in enumerate(dirs)]
    (root / "trace.json").write_text(json.dumps({"steps": steps}), encoding="utf-8")
    return root


def test_a_corpus_trace_folder_outside_the_trace_is_refused(tmp_path: Path) -> None:
    """Corpus traces name their own ``step_NNN`` folders (all 32 traces of the corpus do):
    a ``dir`` with ``..`` is refused before anything in it is looked at."""
    outside = _secret_dump(tmp_path / "private" / "screen.xml")
    shutil.copy(TINY / "step_000" / "screen.png", outside.parent / "screen.png")
    trace = _trace(tmp_path / "trace", ["step_000", "../private"])
    shutil.copytree(TINY / "step_000", trace / "step_000")
    with pytest.raises(RecordingError) as caught:
        read_recording(trace)
    assert f"{trace}/trace.json step 1" in str(caught.value)
    assert str(outside.parent) in str(caught.value)
    # A screenshot linked out of a sample folder.
    sample = tmp_path / "sample"
    sample.mkdir()
    shutil.copy(TINY / "step_000" / "screen.xml", sample / "screen.xml")
    (sample / "screen.png").symlink_to(outside.parent / "screen.png")
    with pytest.raises(RecordingError, match="its frame .* outside the recording folder"):
        read_recording(sample)


def test_export_of_an_escaping_recording_leaks_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reviewer's repro: ``"tree": "../private/screen.xml"`` put the private dump's
    texts into the export lines; the recording is reported unreadable and the rest goes on."""
    data = tmp_path / "data"
    rec = _tiny(data / "a_shared")
    _secret_dump(tmp_path / "private" / "screen.xml")
    _rewrite_step(rec, 0, tree="../../private/screen.xml")
    _tiny(data / "b_good")
    out = tmp_path / "out.jsonl"
    assert main(["export", str(data), "--no-frames", "-o", str(out)]) == 0
    text = out.read_bytes()
    assert SECRET not in text and b"private" not in text
    assert [json.loads(x)["path"].split("/")[-2] for x in text.splitlines()] == ["b_good"] * 3
    err = capsys.readouterr().err
    assert f"{rec}: RecordingError" in err and "outside the recording folder" in err


# ----- dumps and frames are read to a limit -----------------------------------------------


def test_the_recordings_frame_limit_is_the_pixel_channels() -> None:
    for side in (64, 1080, 8192):
        config = PixelConfig(max_side_px=side, min_side_px=32)
        assert max_frame_bytes(config) == pixel_max_frame_bytes(config)


_PEAK = """
import resource, sys
from perception.sources import read_recording
rec = read_recording(sys.argv[1])
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    getattr(rec.steps[0], sys.argv[2])()
except Exception as exc:
    print(type(exc).__name__, exc)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(before, after)
"""


@pytest.mark.parametrize(("field", "error"), [("tree", UnsafeXmlError),
                                              ("frame", ImplausibleFrameSizeError)])
def test_a_huge_step_file_is_refused_before_it_is_read(
    tmp_path: Path, field: str, error: type[Exception]
) -> None:
    """A sparse 1 GiB screen.xml cost 1.1 GB of memory before the 16 MiB limit refused it;
    it is refused by its size now, and the peak memory does not move."""
    rec = _tiny(tmp_path / "huge")
    name = "screen.xml" if field == "tree" else "screen.png"
    with open(rec / "step_000" / name, "r+b") as f:
        f.truncate(1 << 30)
    out = subprocess.run(
        [sys.executable, "-c", _PEAK, str(rec), f"read_{field}"],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout.splitlines()
    assert out[0].startswith(error.__name__) and "step 0" in out[0] and name in out[0]
    before_kb, after_kb = map(int, out[1].split())
    assert after_kb - before_kb < 20_000, out
    # In process too (either fastpath mode), and through replay's CLI.
    with pytest.raises(error):
        getattr(read_recording(rec).steps[0], f"read_{field}")()


def test_a_huge_corpus_sample_dump_costs_no_memory_to_open(tmp_path: Path) -> None:
    """Opening a sample folder reads its dump's rotation from the first 400 bytes only."""
    sample = tmp_path / "sample"
    sample.mkdir()
    shutil.copy(TINY / "step_000" / "screen.xml", sample / "screen.xml")
    with open(sample / "screen.xml", "r+b") as f:
        f.truncate(1 << 30)
    script = ("import resource, sys\nfrom perception.sources import read_recording\n"
              "a = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
              "read_recording(sys.argv[1])\n"
              "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - a)")
    grew_kb = subprocess.run([sys.executable, "-c", script, str(sample)], capture_output=True,
                             text=True, timeout=120, check=True).stdout
    assert int(grew_kb) < 20_000


# ----- export -o writes what it is given, never replaces it ------------------------------


def test_export_into_a_fifo_streams_and_keeps_the_fifo(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "rows"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert main(["export", str(TINY), "--no-frames", "-o", str(fifo)]) == 0
    reader.join(30)
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert len(got[0].splitlines()) == 3
    assert not list(tmp_path.glob("*.part"))
    with pytest.raises(SystemExit) as stop:
        main(["export", str(TINY), "--no-frames", "-o", str(fifo), "--resume"])
    assert stop.value.code == 2
    assert "--resume needs -o FILE, a regular file" in capsys.readouterr().err


def test_export_into_a_device_keeps_the_device(tmp_path: Path) -> None:
    """A stand-in for ``/dev/null`` (the same device numbers), never the real one."""
    null = tmp_path / "null"
    try:
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs root")
    assert main(["export", str(TINY), "--no-frames", "-o", str(null)]) == 0
    assert stat.S_ISCHR(null.lstat().st_mode) and null.lstat().st_rdev == os.makedev(1, 3)


def test_export_through_a_symlink_replaces_the_file_and_keeps_the_link(tmp_path: Path) -> None:
    target = tmp_path / "runs" / "today.jsonl"
    target.parent.mkdir()
    target.write_text("keep me? no: replaced whole\n", encoding="utf-8")
    link = tmp_path / "latest.jsonl"
    link.symlink_to(target)
    assert main(["export", str(TINY), "--no-frames", "-o", str(link)]) == 0
    assert link.is_symlink() and link.resolve() == target.resolve()
    rows = target.read_text(encoding="utf-8").splitlines()
    assert len(rows) == 3 and all(json.loads(r)["candidates"] for r in rows)
    assert not list(tmp_path.rglob("*.part"))
    # A dangling link: the file it names is made, as the shell's > makes it.
    target.unlink()
    assert main(["export", str(TINY), "--no-frames", "-o", str(link)]) == 0
    assert link.is_symlink() and len(target.read_text(encoding="utf-8").splitlines()) == 3


def test_export_to_dev_stdout_appends_to_what_stdout_is(tmp_path: Path) -> None:
    """``-o /dev/stdout`` into a log extended with ``>>``: the log keeps its lines, the rows
    follow them, and /dev/stdout is no regular file of its own afterwards."""
    log = tmp_path / "log.jsonl"
    log.write_text("earlier\n", encoding="utf-8")
    with log.open("a") as out:
        subprocess.run(
            [sys.executable, "-m", "perception.cli.main", "export", str(TINY), "--no-frames",
             "-o", "/dev/stdout"],
            stdout=out, stderr=subprocess.PIPE, timeout=300, check=True,
        )
    lines = log.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "earlier" and len(lines) == 4
    assert Path("/dev/stdout").is_symlink()


def test_an_existing_file_in_an_unreadable_recording_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A recording with a screenshot missing cannot be opened, so none of its files were
    protected and ``-o rec/step_000/screen.xml`` truncated that dump."""
    rec = _tiny(tmp_path / "rec")
    (rec / "step_001" / "screen.png").unlink()
    dump = rec / "step_000" / "screen.xml"
    kept = dump.read_bytes()
    for out in (dump, rec / "step_000" / "screen.png", rec / "notes.txt"):
        if not out.exists():
            out.write_text("mine\n", encoding="utf-8")
        before = out.read_bytes()
        with pytest.raises(SystemExit) as stop:
            main(["export", str(tmp_path), "--no-frames", "-o", str(out)])
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert (
            f"-o {out} is an input of this export ({rec}; in a recording that cannot be "
            "opened, whose every file is kept)"
        ) in err
        assert out.read_bytes() == before
    assert dump.read_bytes() == kept
    # Through a symlink outside the input folder that leads in: refused the same.
    link = tmp_path.parent / f"{tmp_path.name}-link.xml"
    link.symlink_to(dump)
    try:
        with pytest.raises(SystemExit):
            main(["export", str(rec), "--no-frames", "-o", str(link)])
    finally:
        link.unlink()
    assert dump.read_bytes() == kept
    # A new file in the input folder is fine (the recording is reported, as before), and so
    # is writing it again: last run's lines beside the recordings are no recording's file.
    fresh = tmp_path / "rows.jsonl"
    for _ in range(2):
        assert main(["export", str(tmp_path), "--no-frames", "-o", str(fresh)]) == 2
        assert "RecordingError" in capsys.readouterr().err
