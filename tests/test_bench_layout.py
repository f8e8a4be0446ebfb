"""The pixel and fusion benches on a user's own folder: a layout they cannot use fails up front
in one line naming what is missing; optional parts (``_desync/``, ``meta.json``) may be absent."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from bench.cli import main

ROOT = Path(__file__).resolve().parents[1]
WIDTH, HEIGHT = 720, 1280
LABELS = ("Settings", "Wireless", "Bluetooth", "Display", "Sound", "Storage", "Battery", "About")
NODE = (
    '<node index="0" text="{t}" resource-id="" class="{c}" package="com.example" content-desc=""'
    ' checkable="false" checked="false" clickable="{k}" enabled="true" focusable="true"'
    ' focused="false" scrollable="false" long-clickable="false" password="false"'
    ' selected="false" bounds="[{l},{y}][{r},{b}]">{kids}</node>'
)


def _row_box(i: int) -> tuple[int, int, int, int]:
    return 40, 120 + 130 * i, 680, 230 + 130 * i


def screen(folder: Path, *, image: str = "screen.png") -> None:
    """A real pair in ``folder``: a dump of eight labelled buttons and a frame that shows them."""
    folder.mkdir(parents=True)
    kids = "".join(
        NODE.format(t=t, c="android.widget.Button", k="true", l=x0, y=y0, r=x1, b=y1, kids="")
        for t, (x0, y0, x1, y1) in ((t, _row_box(i)) for i, t in enumerate(LABELS))
    )
    root = NODE.format(
        t="", c="android.widget.FrameLayout", k="false", l=0, y=0, r=WIDTH, b=HEIGHT, kids=kids
    )
    (folder / "screen.xml").write_text(f'<hierarchy rotation="0">{root}</hierarchy>')
    img = np.full((HEIGHT, WIDTH, 3), 250, np.uint8)
    for i, text in enumerate(LABELS):
        left, top, right, bottom = _row_box(i)
        cv2.rectangle(img, (left, top), (right, bottom), (220, 220, 220), -1)
        cv2.putText(
            img, text, (left + 24, bottom - 36), cv2.FONT_HERSHEY_SIMPLEX, 1.4, (20,) * 3, 3
        )
    ok, data = cv2.imencode(Path(image).suffix, img)
    assert ok
    (folder / image).write_bytes(data.tobytes())


def index(corpus: Path, *rows: dict[str, object]) -> None:
    (corpus / "index.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def row(path: str, **extra: object) -> dict[str, object]:
    return {
        "path": path,
        "pair_status": "match",
        "node_count": 9,
        "width": WIDTH,
        "height": HEIGHT,
        **extra,
    }


def refused(*argv: str) -> str:
    """The message of the one line ``perception-bench`` exits 2 with (after its type, as
    ``perception`` prints an input it cannot use)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(list(argv)) == 2
    message = err.getvalue()
    prefix = "perception-bench: BenchInputError: "
    assert message.count("\n") == 1 and message.startswith(prefix), message
    return message[len(prefix) : -1]


@pytest.mark.parametrize("bench", ["pixels", "fusion"])
def test_a_missing_folder_is_one_line_and_exit_2(bench: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.cli", bench, "--corpus", str(tmp_path / "nope")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == (
        f"perception-bench: BenchInputError: --corpus {tmp_path / 'nope'}: not a directory\n"
    )


@pytest.mark.parametrize("bench", ["pixels", "fusion"])
def test_a_folder_of_captures_without_an_index_names_the_layout(bench: str, tmp_path: Path) -> None:
    for i in range(2):
        screen(tmp_path / f"s{i}")
    message = refused(bench, "--corpus", str(tmp_path))
    assert message.startswith(f"--corpus {tmp_path}: no index.jsonl; the {bench} bench needs")
    for field in ("path", "pair_status", "node_count", "screen.xml", f"perception-bench {bench}"):
        assert field in message


@pytest.mark.parametrize("bench", ["pixels", "fusion"])
def test_bad_index_rows_are_named_by_line(bench: str, tmp_path: Path) -> None:
    screen(tmp_path / "s0")
    (tmp_path / "index.jsonl").write_text(json.dumps(row("s0")) + "\n{not json\n")
    assert "index.jsonl line 2 is not JSON" in refused(bench, "--corpus", str(tmp_path))
    index(tmp_path, row("s0"), {"pair_status": "match"})
    assert "index.jsonl line 2 has no path" in refused(bench, "--corpus", str(tmp_path))
    (tmp_path / "index.jsonl").write_text("\n")
    assert "index.jsonl has no rows" in refused(bench, "--corpus", str(tmp_path))


@pytest.mark.parametrize("bench", ["pixels", "fusion"])
def test_a_row_without_its_files_is_named(bench: str, tmp_path: Path) -> None:
    screen(tmp_path / "s0")
    index(tmp_path, row("s0"), row("gone"))
    assert "row 'gone': no such folder" in refused(bench, "--corpus", str(tmp_path))
    (tmp_path / "s0" / "screen.png").unlink()
    index(tmp_path, row("s0"))
    assert "s0/ has no screen.png or screen.jpg" in refused(bench, "--corpus", str(tmp_path))
    index(tmp_path, row("s0", image="shot.webp"))
    assert "s0/ has no shot.webp" in refused(bench, "--corpus", str(tmp_path))


def test_pixels_says_when_no_row_is_a_reliable_pair(tmp_path: Path) -> None:
    screen(tmp_path / "s0")
    screen(tmp_path / "s1")
    index(tmp_path, row("s0", pair_status="rotation_mismatch"), row("s1", node_count=0))
    message = refused("pixels", "--corpus", str(tmp_path))
    assert "none of the 2 rows of index.jsonl is a reliable pair" in message
    assert "pair_status match or match_partial" in message


def test_fusion_needs_the_screen_size(tmp_path: Path) -> None:
    screen(tmp_path / "s0")
    index(tmp_path, {"path": "s0", "pair_status": "match", "node_count": 9})
    assert "index.jsonl line 1 has no width, height" in refused("fusion", "--corpus", str(tmp_path))


def test_fusion_refuses_a_meta_json_it_cannot_read_before_the_run(tmp_path: Path) -> None:
    screen(tmp_path / "s0")
    (tmp_path / "s0" / "meta.json").write_text("{trace")
    index(tmp_path, row("s0"))
    assert "meta.json is not JSON" in refused("fusion", "--corpus", str(tmp_path))


@pytest.mark.parametrize("bench", ["pixels", "fusion"])
def test_help_documents_the_index_fields(bench: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([bench, "--help"])
    out = capsys.readouterr().out
    assert "corpus layout: DIR/index.jsonl" in out
    for field in ("path", "pair_status", "node_count"):
        assert f"\n  {field}" in out or f"  {field}," in out, field
    assert ("tags" in out) == (bench == "pixels")
    assert ("_desync" in out and "meta.json" in out) == (bench == "fusion")


def test_fusion_runs_without_desync_folder_and_meta_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "mine"
    screen(corpus / "a")
    screen(corpus / "b", image="screen.jpg")
    index(corpus, row("a"), row("b"))
    out = tmp_path / "fusion.json"
    assert main(["fusion", "--corpus", str(corpus), "--limit", "1", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "desync: 0 pairs (no _desync/ folder); false alarms " in printed
    report = json.loads(out.read_text())
    assert report["desync"]["no_desync_folder"] is True
    assert report["desync"]["desync_pairs"] == 0
    assert report["desync"]["matched_pairs"] == 2
    assert report["taps"]["taps"] == 0  # no meta.json: no recorded action
    assert report["degraded"]["summary"]["all"]["screens"] == 1
    # No _desync/ folder and no taps: those targets are not measured, not met or missed.
    verdicts = {name.split(" >=")[0]: t["met"] for name, t in report["targets"].items()}
    assert verdicts["desync pairs flagged"] is None
    assert verdicts["recorded taps covered by fused candidates"] is None
    assert verdicts["fused taps above either channel alone"] is None
    assert "\ntargets\n" in printed and "  n/a    desync pairs flagged >= 5 of 6: n/a" in printed


def test_pixels_runs_on_a_minimal_index(tmp_path: Path) -> None:
    screen(tmp_path / "a", image="screen.jpg")
    index(tmp_path, {"path": "a", "pair_status": "match_partial", "node_count": 9})
    out = tmp_path / "pixels.json"
    argv = ["pixels", "--corpus", str(tmp_path), "--no-baseline", "--json", str(out)]
    assert main(argv) == 0
    report = json.loads(out.read_text())
    assert (report["screens"], report["reliable_pairs"]) == (1, 1)
    assert report["recall"]["ours"]["text_targets"] == len(LABELS)
    # Without the baseline the OCR targets are not measured; the anchors' is.
    met = {name: t["met"] for name, t in report["targets"].items()}
    assert [m is None for m in met.values()] == [False, True, True, True, True]
