"""``perception tree`` and ``perception demo`` as a user runs them."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from _xml import dump as xml_dump, node, screen

from perception.cli.main import main
from perception.demo import build_png, build_xml, demo_png, demo_xml


def test_tree_prints_the_compact_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dump = tmp_path / "dump.xml"
    dump.write_bytes(screen(node((0, 0, 540, 240), text="OK", clickable=True)))
    assert main(["tree", str(dump)]) == 0
    assert json.loads(capsys.readouterr().out) == {"btn": [[0, "OK", "250 50"]]}
    assert main(["tree", "--no-coords", str(dump)]) == 0
    assert json.loads(capsys.readouterr().out) == {"btn": [[0, "OK"]]}


def test_tree_elements_and_screen(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A window over the top of a 1080x960 screen: 0-1000 coordinates are the given screen's.
    dump = tmp_path / "dump.xml"
    dump.write_bytes(
        xml_dump(node((0, 0, 1080, 480), node((0, 0, 540, 240), text="OK", clickable=True)))
    )
    assert main(["tree", "--elements", "--screen", "1080x960", str(dump)]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["text"] == "OK" and row["box_px"] == [0, 0, 540, 240]
    assert row["box_pm"] == [0, 0, 500, 250] and "clickable" in row["flags"]


def test_tree_reads_stdin(monkeypatch: pytest.MonkeyPatch,
                         capsys: pytest.CaptureFixture[str]) -> None:
    data = screen(node((0, 0, 540, 240), text="OK", clickable=True))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    assert main(["tree", "-"]) == 0
    assert "OK" in capsys.readouterr().out


def _jpeg() -> bytes:
    import cv2
    import numpy as np

    return bytes(cv2.imencode(".jpg", np.zeros((8, 8, 3), np.uint8))[1].tobytes())


@pytest.mark.parametrize(
    ("payload", "error", "needle"),
    [(b"ERROR: could not get idle state.\n", "DumpFailedError", "could not get idle state"),
     (b"<!DOCTYPE x [<!ENTITY a 'b'>]><hierarchy/>", "UnsafeXmlError", "DOCTYPE"),
     # a file that is not a dump is named, its bytes never echoed
     (_jpeg(), "TreeParseError", "binary data (looks like a JPEG image), "),
     (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "TreeParseError",
      "binary data (looks like a PNG image), 16 bytes"),
     (bytes(range(256)) * 4, "TreeParseError", "binary data (holds NUL bytes), 1024 bytes"),
     (b"\xa0\xff" * 100, "TreeParseError", "binary data (is not UTF-8 text), 200 bytes"),
     ("garbage\x01\x1b[31m\u202e".encode() + b"x" * 500, "TreeParseError",
      "it starts with 'garbage\\x01\\x1b[31m\\u202exxx")],
    ids=["idle-state", "doctype", "jpeg", "png", "nul", "not-utf8", "text"],
)
def test_tree_errors_are_typed_with_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], payload: bytes, error: str, needle: str
) -> None:
    dump = tmp_path / "bad.xml"
    dump.write_bytes(payload)
    assert main(["tree", str(dump)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"perception: {error}: ") and needle in line
    assert line.isprintable() and "\ufffd" not in line and len(line) < 200


def test_missing_file_is_a_typed_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tree", str(tmp_path / "nope.xml")]) == 2
    assert "InputError" in capsys.readouterr().err


def test_shipped_demo_files_are_what_the_builder_writes() -> None:
    import cv2
    import numpy as np

    assert demo_xml() == build_xml()
    shipped = cv2.imdecode(np.frombuffer(demo_png(), np.uint8), cv2.IMREAD_COLOR)
    rebuilt = cv2.imdecode(np.frombuffer(build_png(), np.uint8), cv2.IMREAD_COLOR)
    assert shipped.shape == rebuilt.shape == (2400, 1080, 3)
    # Glyph rasterisation differs between OpenCV releases (5.0 vs 5.1: ~1% of pixels, on
    # letter edges); the picture itself may not.
    strong = np.abs(shipped.astype(int) - rebuilt.astype(int)).max(axis=2) > 128
    assert float(strong.mean()) < 0.03


def test_demo_command_runs_end_to_end() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "perception.cli.main", "demo"],
        check=True, capture_output=True, text=True, timeout=120,
    ).stdout
    lines = out.splitlines()
    assert lines[0].startswith("# tree channel: 16 elements")
    assert json.loads(lines[1])["switch"][0][1] == "Use Wi-Fi"
    assert any(line.startswith("# fused observation: state=tree") for line in lines)
