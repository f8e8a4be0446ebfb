"""``perception-bench tree``: a smoke run on the corpus and the metrics on screens we write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

import pytest

from bench.cli import main
from bench.tree import STAGES, survival, text_retention
from perception import fastpath
from perception.config import TreeConfig
from perception.tree import read_tree

BANNER = b"UI hierchary dumped to: /dev/tty\n"
PKG = "com.example.bench"


def node(
    cls: str,
    bounds: tuple[int, int, int, int],
    children: str = "",
    *,
    text: str = "",
    desc: str = "",
    rid: str = "",
    clickable: bool = False,
    checkable: bool = False,
    scrollable: bool = False,
) -> str:
    left, top, right, bottom = bounds
    attrs = {
        "index": "0",
        "text": text,
        "resource-id": f"{PKG}:id/{rid}" if rid else "",
        "class": cls,
        "package": PKG,
        "content-desc": desc,
        "checkable": str(checkable).lower(),
        "checked": "false",
        "clickable": str(clickable).lower(),
        "enabled": "true",
        "focusable": str(clickable or checkable).lower(),
        "focused": "false",
        "scrollable": str(scrollable).lower(),
        "long-clickable": "false",
        "password": "false",
        "selected": "false",
        "bounds": f"[{left},{top}][{right},{bottom}]",
    }
    head = " ".join(f"{k}={quoteattr(v)}" for k, v in attrs.items())
    return f"<node {head}>{children}</node>"


LONG_LABEL = "A notice that is much longer than forty characters, so it gets cut"


def settings_screen(rows: int) -> bytes:
    """A toolbar, a long notice, a switch row and ``rows`` identical clickable list rows."""
    items = "".join(
        node(
            "android.widget.LinearLayout",
            (0, 600 + 100 * k, 1080, 700 + 100 * k),
            node(
                "android.widget.TextView",
                (40, 620 + 100 * k, 900, 680 + 100 * k),
                text=f"Network {k}",
            ),
            clickable=True,
        )
        for k in range(rows)
    )
    body = (
        node("android.widget.ImageButton", (0, 0, 150, 150), desc="Navigate up", clickable=True)
        + node("android.widget.TextView", (160, 0, 1000, 150), text="Wi-Fi")
        + node("android.widget.TextView", (0, 200, 1080, 300), text=LONG_LABEL)
        + node(
            "android.widget.LinearLayout",
            (0, 400, 1080, 500),
            node("android.widget.TextView", (40, 420, 800, 480), text="Use Wi-Fi")
            + node("android.widget.Switch", (900, 410, 1060, 490), checkable=True, clickable=True),
        )
        + node("android.widget.ListView", (0, 600, 1080, 2200), items, scrollable=True)
    )
    root = node("android.widget.FrameLayout", (0, 0, 1080, 2400), body)
    doc = (
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>"
        f'<hierarchy rotation="0">{root}</hierarchy>'
    )
    return doc.encode("utf-8")


def run_bench(corpus: Path, out: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code = main(["tree", "--corpus", str(corpus), "--json", str(out), *extra])
    return code, json.loads(out.read_text())


def check_report(report: dict[str, Any], pairs: int, dumps: int) -> None:
    impls = sorted(fastpath.available())
    assert report["files"] == {"pairs": pairs, "dumps": dumps, "timed": pairs + dumps, "errors": 0}
    env = report["environment"]
    assert env["implementations_timed"] == impls
    assert env["fastpath_implementation"] == fastpath.IMPLEMENTATION
    for key in ("python", "numpy", "lxml", "cpu_count"):
        assert env[key]
    s = report["summary"]
    assert s["latency_ms"]["lxml.fromstring"]["p50"] > 0
    for name in impls:
        for stage in STAGES:
            lat = s["latency_ms"][name][stage]
            assert 0 < lat["p50"] <= lat["p95"]
        assert s["pipeline_over_lxml"][name]["median"] > 0
        assert s["kernel_ms"][name]["files_calling"]["scan_hierarchy"] == pairs + dumps
    if "cython" in impls:
        assert {"scan_hierarchy", "tree_structure"} <= set(s["kernels"])
        for key in ("pipeline", *s["kernels"]):
            assert s["cython_speedup"][key] > 0
    else:
        assert s["cython_speedup"] is None
    assert s["prompt_mismatches"] == []
    for part, n in (("pairs", pairs), ("dumps", dumps)):
        q = s["quality"][part]
        assert q["screens"] == n
        if not n:
            continue
        assert q["tokens"]["prompt"]["median"] > q["tokens"]["ids_only"]["median"] > 0
        assert q["tokens"]["raw_xml"]["median"] > q["tokens"]["prompt"]["median"]
        for metric in ("survival", "text_retention"):
            for when in ("before", "after"):
                assert 0.0 <= q[metric][when]["micro"] <= 1.0
    assert len(report["targets"]) == 7
    assert len(report["per_file"]) == pairs + dumps


def test_bench_on_corpus(
    corpus_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, report = run_bench(corpus_dir, tmp_path / "tree.json", "--limit", "3", "--repeat", "1")
    assert code == 0, report["errors"]
    check_report(report, pairs=3, dumps=3)
    printed = capsys.readouterr().out
    assert "pipeline/lxml" in printed and "targets" in printed


def test_bench_on_own_screens(tmp_path: Path) -> None:
    """A pair and a dump with a banner and leading noise: lxml gets the <hierarchy> slice."""
    corpus = tmp_path / "corpus"
    (corpus / "app" / "step_000").mkdir(parents=True)
    (corpus / "dumps").mkdir()
    screen = settings_screen(rows=12)
    (corpus / "app" / "step_000" / "screen.xml").write_bytes(screen)
    (corpus / "dumps" / "banner.xml").write_bytes(b"adb: warning\n" + screen + b"\n" + BANNER)
    code, report = run_bench(corpus, tmp_path / "tree.json", "--repeat", "2")
    assert code == 0
    check_report(report, pairs=1, dumps=1)
    s = report["summary"]
    assert s["lxml_sliced"] == ["dumps/banner.xml"]
    assert any("<hierarchy>" in note for note in report["notes"])
    q = s["quality"]["all"]
    # Every actionable node maps to an element holding its centre; 4 of 12 rows are truncated.
    assert q["survival"]["before"]["micro"] == 1.0
    assert q["survival"]["after"]["micro"] < 1.0
    # The long notice is cut after its first 40 characters, which all reach the prompt.
    assert q["text_retention"]["before"]["missing_only_cut_short"] == 0
    assert q["text_retention"]["before"]["micro"] == 1.0


def test_failed_dump_is_an_error_not_a_screen(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    (corpus / "dumps").mkdir(parents=True)
    (corpus / "dumps" / "ok.xml").write_bytes(settings_screen(rows=2))
    (corpus / "dumps" / "idle.xml").write_bytes(b"ERROR: could not get idle state.\n")
    code, report = run_bench(corpus, tmp_path / "tree.json", "--repeat", "1")
    assert code == 1
    assert report["files"]["timed"] == 1
    [error] = report["errors"]
    assert error["file"] == "dumps/idle.xml" and "DumpFailedError" in error["error"]


def test_metrics_on_a_generated_screen() -> None:
    tree = read_tree(settings_screen(rows=12))
    surv = survival(tree)
    # Navigate up, the switch, the list and its 12 rows.
    assert surv.eligible == 15
    assert surv.before == 15
    hidden = [n for n in surv.lost if n["why"] == "hidden by list truncation"]
    assert surv.after == 15 - len(hidden) and len(hidden) == 12 - 8
    ret = text_retention(tree, TreeConfig())
    assert ret.labels == 12 + 4
    assert ret.missing_before == [] and ret.cut == 0
    assert ret.before == ret.labels
    assert ret.hidden_after == 12 - 8
    assert ret.capped == 0


def test_without_the_extension_the_ratios_are_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on a source install without a compiler: only the twins are timed, and it says so."""
    only_python = {"python": fastpath.available()["python"]}
    monkeypatch.setattr(fastpath, "available", lambda: only_python)
    corpus = tmp_path / "corpus"
    (corpus / "dumps").mkdir(parents=True)
    (corpus / "dumps" / "ok.xml").write_bytes(settings_screen(rows=2))
    code, report = run_bench(corpus, tmp_path / "tree.json", "--repeat", "1")
    assert code == 0
    check_report(report, pairs=0, dumps=1)
    assert report["summary"]["cython_speedup"] is None
    assert any("not built" in note for note in report["notes"])


def test_labels_beyond_the_piece_cap_are_kept_and_none_counted_capped() -> None:
    """A row with more lines than a label holds: the first make its label, the rest stay as
    static text, so retention sees all six and nothing is counted as lost to the cap."""
    texts = "".join(
        node("android.widget.TextView", (40, 100 + 60 * k, 1000, 150 + 60 * k), text=f"line {k}")
        for k in range(6)
    )
    card = node("android.widget.LinearLayout", (0, 80, 1080, 500), texts, clickable=True)
    root = node("android.widget.FrameLayout", (0, 0, 1080, 2400), card)
    tree = read_tree(f'<hierarchy rotation="0">{root}</hierarchy>')
    config = TreeConfig()
    ret = text_retention(tree, config)
    assert ret.labels == 6
    assert ret.before == 6
    assert ret.capped == 0 and ret.cut == 0


def test_a_no_break_space_is_whitespace_on_both_sides() -> None:
    song = node("android.widget.TextView", (0, 100, 1080, 200), text="红玫瑰\u00a0-\u00a0陈奕迅")
    root = node("android.widget.FrameLayout", (0, 0, 1080, 2400), song)
    ret = text_retention(read_tree(f'<hierarchy rotation="0">{root}</hierarchy>'), TreeConfig())
    assert (ret.labels, ret.before, ret.after) == (1, 1, 1)


def test_a_state_said_as_a_flag_is_no_lost_text() -> None:
    """Habitica's difficulty buttons are described "Easy, Selected" and "Hard, Not selected":
    the prompt says ``"Easy"`` with ``sel`` and ``"Hard"``; retention counts them as said. A
    description whose state the row's flags do not carry (a text's, absorbed) is looked for as
    it stands."""
    easy = node("android.widget.Button", (0, 100, 540, 200), desc="Easy, Selected", clickable=True)
    hard = node("android.widget.Button", (540, 100, 1080, 200), desc="Hard, Not selected",
                clickable=True)
    root = node("android.widget.FrameLayout", (0, 0, 1080, 2400), easy + hard)
    tree = read_tree(f'<hierarchy rotation="0">{root}</hierarchy>')
    assert '"Easy"' in tree.to_prompt() and '"Hard"' in tree.to_prompt()
    ret = text_retention(tree, TreeConfig())
    assert (ret.labels, ret.before, ret.missing_before) == (2, 2, [])
