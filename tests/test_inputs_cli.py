"""The command line: a bad option is one line and exit 2, never a traceback or an empty answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _xml import node, screen

from perception.cli.main import main
from perception.demo import demo_png, demo_xml
from perception.pixel import decode_frame

DUMP = screen(node((100, 200, 500, 300), text="Save", clickable=True))


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert "Traceback" not in line
    return line


@pytest.mark.parametrize(
    ("size", "needle"),
    [
        ("540x1200", "ScreenMismatchError: the given screen is 540x1200 px"),
        ("2400x1080", "they fit 1080x2400, the size transposed"),
        ("10x10", "ScreenMismatchError"),
    ],
)
def test_tree_screen_that_cannot_be_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], size: str, needle: str
) -> None:
    dump = tmp_path / "dump.xml"
    dump.write_bytes(DUMP)
    assert main(["tree", str(dump), "--screen", size]) == 2
    line = _one_error_line(capsys)
    assert line.startswith("perception: ") and needle in line


@pytest.mark.parametrize("size", ["0x0", "99999999999999999999x2", "65536x2400"])
def test_a_screen_no_phone_has_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], size: str
) -> None:
    dump = tmp_path / "dump.xml"
    dump.write_bytes(DUMP)
    with pytest.raises(SystemExit) as info:
        main(["tree", str(dump), "--screen", size])
    assert info.value.code == 2
    assert "argument --screen: expects WIDTHxHEIGHT" in capsys.readouterr().err


def test_tree_reads_a_utf16_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dump = tmp_path / "dump.xml"
    dump.write_bytes(DUMP.decode("utf-8").encode("utf-16"))
    assert main(["tree", str(dump)]) == 0
    assert "Save" in capsys.readouterr().out


@pytest.mark.parametrize("roi", ["500,500,100,100", "0,0,0,10", "-5,0,10,10", "0,10,10,10"])
def test_pixels_roi_must_be_a_box(roi: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["pixels", f"--roi={roi}", "x.png"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "L < R and 0 <= T < B" in err and roi in err and "Traceback" not in err


def test_export_dash_is_stdout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = tmp_path / "data" / "a"
    sample.mkdir(parents=True)
    (sample / "screen.xml").write_bytes(demo_xml())
    (sample / "screen.png").write_bytes(demo_png())
    monkeypatch.chdir(tmp_path)
    assert main(["export", str(tmp_path / "data"), "--no-frames", "-o", "-"]) == 0
    (row,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert Path(row["path"]).name == "a" and row["candidates"]
    assert not (tmp_path / "-").exists() and not list(tmp_path.glob("*.part"))
    # A real file is still written whole, through a .part beside it.
    out = tmp_path / "out.jsonl"
    assert main(["export", str(tmp_path / "data"), "--no-frames", "-o", str(out)]) == 0
    assert len(out.read_text(encoding="utf-8").splitlines()) == 1
    assert not list(tmp_path.glob("*.part"))


# ----- endless inputs: read to the limit, then refused (review finding r4) -------------

CLI = str(Path(sys.executable).with_name("perception"))


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize(
    ("argv", "stdin", "needle"),
    [
        (["tree", "/dev/zero"], None, "UnsafeXmlError: the dump '/dev/zero' holds more than"),
        (["tree", "-"], "/dev/zero", "UnsafeXmlError: the dump standard input holds more"),
        (["pixels", "--no-ocr", "/dev/zero"], None, "ImplausibleFrameSizeError: frame"),
        (["pixels", "--no-ocr", "-"], "/dev/zero", "ImplausibleFrameSizeError: frame"),
        (["overlay", "/dev/zero", "-o", "o.png"], None, "ImplausibleFrameSizeError: frame"),
    ],
)
def test_endless_input_is_refused_at_the_limit(
    tmp_path: Path, argv: list[str], stdin: str | None, needle: str
) -> None:
    env = dict(os.environ, PERCEPTION_TREE_MAX_INPUT_BYTES="4096",
               PERCEPTION_PIXEL_MAX_SIDE_PX="512")
    with open(stdin or os.devnull, "rb") as source:
        done = subprocess.run([CLI, *argv], stdin=source, capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 2, done.stderr
    assert needle in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "o.png").exists()


def test_cli_pixels_reads_a_file_copy(tmp_path: Path) -> None:
    """The bounded read gives the CLI the whole file, as the unbounded one did."""
    (tmp_path / "s.png").write_bytes(demo_png())
    done = subprocess.run([CLI, "pixels", "--no-ocr", str(tmp_path / "s.png")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    size = decode_frame(demo_png()).size
    assert json.loads(done.stdout)["size"] == [size.width_px, size.height_px]


def test_cli_pixels_says_how_many_lines_it_left_unread(tmp_path: Path) -> None:
    (tmp_path / "s.png").write_bytes(demo_png())
    env = {**os.environ, "PERCEPTION_PIXEL_MAX_OCR_LINES": "2"}
    done = subprocess.run([CLI, "pixels", str(tmp_path / "s.png")], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    capped = json.loads(done.stdout)
    whole = json.loads(subprocess.run([CLI, "pixels", str(tmp_path / "s.png")],
                                      capture_output=True, text=True, timeout=120).stdout)
    assert whole["unread_lines"] == 0 and whole["ocr"] == capped["ocr"] == "full"
    assert capped["unread_lines"] > 0
