"""The pixel bench's ground truth and scoring, and one real run on two corpus screens."""

from __future__ import annotations

import json
from pathlib import Path

from bench.pixels import Target, readable, score, texts_match
from perception.types import BoxPx


def test_matching_follows_the_issue_rule() -> None:
    assert texts_match("Ｓｅｔｔｉｎｇｓ", "settings")  # NFKC + casefold
    assert texts_match("Hair Salons Current Loca", "hair salons current location")  # contained
    assert texts_match("Setings", "settings")  # CER 0.125
    assert not texts_match("Sound", "settings") and not texts_match("", "a")


def test_score_and_readable() -> None:
    button = Target(BoxPx(0, 0, 100, 50), ("back",), icon_only=False)
    icon = Target(BoxPx(200, 0, 260, 50), (), icon_only=True)
    found = [("Back", BoxPx(10, 10, 60, 40)), ("", BoxPx(210, 10, 250, 40))]
    s = score(found, [button, icon], [button.box_px, icon.box_px])
    assert (s.text_hits, s.text_targets, s.icon_hits, s.precise, s.candidates) == (1, 1, 1, 2, 2)
    # text read elsewhere on the screen counts as readable, not as a hit
    moved = [("Back", BoxPx(500, 500, 560, 540))]
    assert score(moved, [button], []).text_hits == 0
    assert readable([button, icon], moved) == 1 and readable([button], []) == 0


def test_a_piece_of_a_label_is_a_hit_but_not_a_whole_read() -> None:
    field = Target(BoxPx(0, 0, 400, 60), ("search here", "search here"), icon_only=False)
    pieces = [("Search.", BoxPx(10, 10, 150, 50)), ("here", BoxPx(170, 10, 260, 50))]
    s = score(pieces, [field], [field.box_px])
    assert (s.text_hits, s.text_whole) == (1, 0)
    s = score([("Search here", BoxPx(10, 10, 260, 50))], [field], [field.box_px])
    assert (s.text_hits, s.text_whole) == (1, 1)


def test_bench_runs_on_real_screens(corpus_dir: Path, tmp_path: Path) -> None:
    from bench.cli import main

    out = tmp_path / "pixels.json"
    assert main(["pixels", "--corpus", str(corpus_dir), "--limit", "2", "--json", str(out)]) == 0
    report = json.loads(out.read_text())
    assert report["screens"] == 2
    ratios = set(report["ratios_vs_baseline"])
    assert ratios == {"ocr_full", "ocr_roi_1080x400", "ocr_cached_repeat"}
    ours, read = report["recall"]["ours"], report["readable_text_targets"]
    assert 0 < ours["text_targets"] and read["targets"] <= ours["text_targets"]
    assert 0.0 <= read["ours_recall"] <= 1.0
