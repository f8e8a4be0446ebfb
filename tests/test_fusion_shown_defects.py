"""Fusion defects two audits of what the agent is shown found (2026-12-05), mended: a splash or
a blank web view the tree reads says wait; a full-screen ad's close is recommended; OCR lines
fill a text-less element's label only from what lies inside it; a dump whose numbers the
pixels say otherwise is another moment's.

Unit tests on built screens, and the corpus screens the audits named (skipped without the
corpus)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from perception import Observation, Perceiver
from perception.fusion.candidates import Candidate, filling, merge
from perception.fusion.crossval import (
    Agreement,
    match_text_blocks,
    read_back_contradicted,
    read_back_sample,
    read_back_tally,
)
from perception.fusion.screen import OperationKind
from perception.fusion.table import ElementTable
from perception.pipeline import PixelChannel
from perception.pixel import PixelReader
from perception.tree.compress import iter_rows
from perception.types import BoxPx, Channel, ElementFlag
from tests._candidates import (
    INFO,
    SCREEN,
    ad_page,
    element as _el,
    ops as _ops,
    tree_candidates as _tree,
)

_CLICK = ElementFlag.CLICKABLE


class Block:
    """An OCR line as the pixel channel hands it over."""

    def __init__(self, text: str, box: tuple[int, int, int, int]) -> None:
        self.text, self.box_px, self.confidence, self.kind = text, BoxPx(*box), 0.9, "text"


def _observe(corpus: Path, pair: str, reader: PixelReader) -> Observation:
    folder = corpus / pair
    image = next(p for p in sorted(folder.glob("screen.*")) if p.suffix in (".png", ".jpg"))
    with Perceiver(pixels=PixelChannel(reader)) as perceiver:
        return perceiver.perceive((folder / "screen.xml").read_bytes(), image.read_bytes())


# --- 1. splash and blank web views the tree reads: wait ---------------------------------------


def test_a_splash_the_tree_reads_says_wait() -> None:
    """Chatter starting: one image, its description and the text beside it short lines, nothing
    to tap (the loading dots are drawn, not in the tree)."""
    logo = _el(0, "img", "Logo | Chatter | © Saimon", (0, 600, 720, 1574))
    assert _ops(_tree(logo)) == [("wait", None)]


def test_a_page_with_nothing_to_tap_is_no_splash() -> None:
    """Bitbar's results page says sentences; a clock screen has no picture; a splash with a
    button to tap, or a tap word, is no wait."""
    results = _el(0, "img", "Bitbar logo | You are right! | Congratulations Hello World",
                  (0, 0, 1080, 1288))
    assert _ops(_tree(results)) == []
    wrong = _el(0, "img", "Bitbar logo | Wrong Answer! | Haven't you heard about Testdroid "
                "Cloud?", (0, 0, 1080, 1216))
    assert _ops(_tree(wrong)) == []
    assert _ops(_tree(_el(0, "text", "01:41 | Screen Always On Indicator",
                          (0, 0, 1080, 1920)))) == []
    logo = _el(0, "img", "Logo | Chatter", (0, 600, 720, 1574))
    assert _ops(_tree(logo, _el(1, "btn", "Sign up", (100, 1700, 600, 1800), _CLICK))) == []
    assert _ops(_tree(_el(0, "img", "Logo | Tap to start", (0, 600, 720, 1574)))) == []
    many = _el(0, "img", "Logo | Chatter | © Saimon | v1.2 | beta", (0, 600, 720, 1574))
    assert _ops(_tree(many)) == []


def _confirmed(c: Candidate) -> Candidate:
    """A tree candidate the pixels confirmed (as OCR agreeing with it makes it)."""
    return replace(c, source=Channel.BOTH)


def test_a_blank_web_view_the_pixels_read_says_wait() -> None:
    """WebView Browser Tester before its page draws: the tree's web view holds nothing, and
    the pixels, read around it, found nothing in it."""
    bar = _el(0, "text", "WebView Browser Tester", (0, 80, 1080, 160))
    url = _el(1, "input", "https://example.org", (0, 160, 700, 300), ElementFlag.EDITABLE)
    web = _el(2, "web", "", (0, 300, 1080, 2400), ElementFlag.SCROLLABLE)
    title, field, page = _tree(bar, url, web)
    said = _ops([_confirmed(title), _confirmed(field), page])
    assert said == [("wait", None)]
    # Text the pixels read inside the page: loaded.
    line = Candidate(id=9, source=Channel.PIXEL, kind="text", text="Welcome",
                     box_px=BoxPx(40, 400, 600, 460), confidence=0.7, flags=ElementFlag.NONE,
                     origin="ocr")
    assert _ops([_confirmed(title), _confirmed(field), page, line]) == []
    # The pixels not read at all (tree state): nothing says the page is blank.
    assert _ops([title, field, page]) == []
    # The tree holds the page's rows, or the view is small or labelled: no wait.
    row = _tree(_el(3, "btn", "Sign in", (40, 400, 600, 500), _CLICK))[0]
    assert _ops([_confirmed(title), _confirmed(field), page, row]) == []
    small = _tree(_el(2, "web", "", (0, 1800, 1080, 2400)))[0]
    assert _ops([_confirmed(title), _confirmed(field), small]) == []
    named = _tree(_el(2, "web", "Games", (0, 300, 1080, 2400), ElementFlag.SCROLLABLE))[0]
    assert _ops([_confirmed(title), _confirmed(field), named]) == []


def test_corpus_splash_and_blank_web_views_say_wait(
    corpus_dir: Path, reader: PixelReader
) -> None:
    for pair in (
        "testcube_transsion/chatter_2025-01-25/step_001",
        "testcube_transsion/chatter_2025-01-25/step_011",
        "droidbot_a2dpvol_lowres/a2dpvol_2018-06-05/step_004",
        "droidbotexp_qqmusic/qqmusic_2021-12-06/step_018",
    ):
        obs = _observe(corpus_dir, pair, reader)
        assert [o.kind for o in obs.operations] == [OperationKind.WAIT], pair
    for pair in (
        "droidbot_bitbar/bitbar_2024-03-20/step_002",
        "droidbot_bitbar/bitbar_2024-03-20/step_003",
        "fdroidutg_apps/com.chancehorizon.just24hoursplus/step_002",
    ):
        obs = _observe(corpus_dir, pair, reader)
        assert obs.operations == (), pair


# --- 2. a full-screen ad's close ----------------------------------------------------------------


def test_a_full_screen_ads_close_is_recommended() -> None:
    assert _ops(ad_page("StartApp")) == [("dismiss", "X")]
    # The ad's own activity says so too.
    ad = replace(INFO, activity="com.google.android.gms.ads.AdActivity")
    assert _ops(ad_page("Page"), ad) == [("dismiss", "X")]


def test_a_pages_top_bar_close_is_no_ad_close() -> None:
    """The same layout without an ad's name, or with an ad banner on it: a page of its own,
    whose close in the top bar leaves the page."""
    assert _ops(ad_page("Page")) == []
    banner = _tree(_el(9, "view", "[adView]", (0, 2200, 1080, 2400)))[0]
    assert _ops([*ad_page("Page"), replace(banner, id=99)]) == []


def test_corpus_interstitials_close_is_recommended(
    corpus_dir: Path, reader: PixelReader
) -> None:
    obs = _observe(corpus_dir, "droidbot_admob_apps/com.HomeCleaningGames/step_006", reader)
    said = [(o.kind, obs.candidate(o.candidate_id).text) for o in obs.operations
            if o.candidate_id is not None]
    assert said == [(OperationKind.DISMISS, "X")]


# --- 3. OCR lines fill a text-less element from what lies inside it ---------------------------


def test_lines_in_separate_rows_of_a_tall_column_fill_no_label() -> None:
    """Yelp's stale loading panel, a column through four results: their "N Reviews" lines
    were joined into its label."""
    column = _el(0, "btn", "", (580, 382, 860, 2196), _CLICK)
    blocks = [
        Block("]5 Reviews", (560, 560, 760, 610)),
        Block("44 Reviews", (600, 1040, 800, 1090)),
        Block("93 Reviews", (600, 1470, 800, 1520)),
        Block("34 Reviews", (600, 1900, 800, 1950)),
    ]
    check = match_text_blocks([column], blocks)
    assert check is not None
    assert {m.agreement for m in check.matches} == {Agreement.FILLS}
    drafts = merge(elements=[column], tree_confidence=0.8, text_blocks=blocks,
                   crosscheck=check, screen=SCREEN)
    assert drafts[0].text == "" and drafts[0].source is Channel.TREE
    assert sorted(d.text for d in drafts[1:]) == sorted(b.text for b in blocks)


def test_lines_inside_a_button_fill_its_label() -> None:
    """A two-line button, a lone line, and a line past the edge beside one inside."""
    button = BoxPx(100, 100, 900, 300)
    two = [Block("Get started", (150, 120, 850, 180)), Block("It's free", (150, 200, 850, 260))]
    assert filling(button, two) == two
    row = [Block("Play", (150, 150, 400, 200)), Block("now", (450, 150, 600, 200))]
    assert filling(BoxPx(100, 100, 900, 900), row) == row
    lone = [Block("]5 Reviews", (80, 500, 300, 550))]
    assert filling(BoxPx(100, 100, 900, 2000), lone) == lone
    edge = [Block("]5 Reviews", (80, 500, 300, 550)), Block("44 Reviews", (150, 900, 400, 950))]
    assert filling(BoxPx(100, 100, 900, 2000), edge) == edge[1:]
    element = _el(0, "btn", "", (100, 100, 900, 300), _CLICK)
    check = match_text_blocks([element], two)
    drafts = merge(elements=[element], tree_confidence=0.8, text_blocks=two, crosscheck=check,
                   screen=SCREEN)
    assert [d.text for d in drafts] == ["Get started | It's free"]


def test_a_condemned_element_takes_no_label_off_the_pixels() -> None:
    element = _el(0, "btn", "", (100, 100, 900, 300), _CLICK)
    line = [Block("Get started", (150, 120, 850, 180))]
    check = match_text_blocks([element], line)
    drafts = merge(elements=[element], tree_confidence=0.8, text_blocks=line, crosscheck=check,
                   screen=SCREEN, condemned={0})
    assert [(d.text, d.source) for d in drafts] == [("", Channel.TREE),
                                                   ("Get started", Channel.PIXEL)]


def test_corpus_a_stale_columns_label_joins_no_rows(corpus_dir: Path, reader: PixelReader) -> None:
    obs = _observe(corpus_dir, "droidbot_yelp/yelp_2017/step_004", reader)
    labels = [r.label for r in iter_rows(json.loads(obs.to_prompt()))]
    assert not any(" | " in lb and "Reviews" in lb for lb in labels)
    assert "44 Reviews" in labels


# --- 4. numbers read back -----------------------------------------------------------------------


def test_a_number_said_otherwise_is_a_contradiction() -> None:
    labels = ["截至 2025/08/13 19:44", "128.98GB", "1721", "66.60元", "Settings", "Price 12"]
    read = ["截至2025/08/1314:20", "130.38GB", "1727", "66.60元", "Settings", "Cost 19"]
    assert read_back_contradicted(labels, read) == [True, True, False, False, False, False]
    # Two labels said back and one said with another time: one net, of three, fails.
    ok, agreed = read_back_tally(["更多服务", "我的副卡", labels[0]],
                                 ["更多服务", "我的副卡", read[0]], [True, True, True])
    assert ok == [True, True, False] and agreed == 1


def test_labels_with_numbers_are_read_back_first() -> None:
    """Unicom's home: four wordy labels were sampled, none of its balances."""
    rows = [_el(i, "text", f"服务项目{i}", (40, 300 + 200 * i, 600, 400 + 200 * i))
            for i in range(5)]
    rows += [_el(5, "text", "128.98GB", (600, 1500, 1000, 1560)),
             _el(6, "text", "1721", (600, 1700, 1000, 1760)),
             _el(7, "text", "截至 2025/08/13 19:44", (40, 1900, 1000, 1960))]
    table = ElementTable(rows)
    picked = read_back_sample(table, hidden=frozenset(), frame_size=SCREEN)
    assert len(picked) == 4
    assert sum(table.texts[i] in ("128.98GB", "1721", "截至 2025/08/13 19:44")
               for i in picked) == 2


def test_corpus_a_dump_with_other_numbers_is_another_moment(
    corpus_dir: Path, reader: PixelReader
) -> None:
    obs = _observe(corpus_dir, "adb_oneoffs/unicom_home", reader)
    assert obs.consistent is False
    assert "read_back" in obs.tree_factors
