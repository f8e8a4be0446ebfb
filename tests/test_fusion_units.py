"""Alignment, arbiter, scoring, cross-validation, candidates, screen and loop helpers."""

from __future__ import annotations

import dataclasses
import random

import cv2
import numpy as np
import pytest

from perception.config import FusionConfig
from perception.errors import CaptureTimeError, ConfigError, PerceptionError
from perception.fusion.align import Aligner, CaptureTime, PairVerdict, Timed
from perception.fusion.arbiter import Arbiter, ArbiterState, ThresholdArbiter
from perception.fusion.candidates import Draft, IdAllocator, merge, reads_whole
from perception.fusion.crossval import (
    Agreement,
    FrameProbe,
    check_pixels,
    match_text_blocks,
    read_back_other,
    text_similarity,
)
from perception.fusion.loop import LoopDetector, PageCache
from perception.fusion.score import TreeEvidence, consistent_with_pixels, tree_confidence
from perception.fusion.screen import OperationKind, ScreenInfo, fingerprint, recommend
from perception.types import BoxPx, Channel, ElementFlag, ScreenSize, TreeElement, TreeHealth

MS = 1_000_000
SCREEN = ScreenSize(1080, 2400)


def el(
    i: int,
    text: str,
    box: tuple[int, int, int, int],
    flags: ElementFlag = ElementFlag.CLICKABLE,
    kind: str = "btn",
) -> TreeElement:
    return TreeElement(id=i, kind=kind, text=text, box_px=BoxPx(*box), flags=flags)


class Block:
    """A pixel candidate as the pixel channel hands it over (text, kind, box_px, confidence)."""

    def __init__(
        self,
        text: str,
        box: tuple[int, int, int, int],
        conf: float = 0.9,
        kind: str = "text",
        glyph: str = "",
    ) -> None:
        self.text, self.box_px, self.confidence, self.kind = text, BoxPx(*box), conf, kind
        self.glyph = glyph


def health(**kw: object) -> TreeHealth:
    base: dict[str, object] = dict(
        node_count=60,
        kept_count=40,
        element_count=20,
        nodes_per_mpx=15.0,
        text_share=0.6,
        webview_area_share=0.0,
        surface_area_share=0.0,
        canvas_area_share=0.0,
        covered_area_share=1.0,
        looks_partial=False,
        empty=False,
    )
    base.update(kw)
    return TreeHealth(**base)  # type: ignore[arg-type]


# --- alignment ----------------------------------------------------------------------------------


def test_pairs_within_window_and_drops_the_older_outside() -> None:
    a: Aligner[str, str] = Aligner(window_ms=300)
    p = a.offer(Timed("t", CaptureTime(0, 900 * MS)), Timed("f", CaptureTime(1000 * MS, 1050 * MS)))
    assert p.verdict is PairVerdict.PAIRED and p.usable and p.gap_ms == pytest.approx(100)
    p = a.offer(Timed("t", CaptureTime(0, 100 * MS)), Timed("f", CaptureTime(500 * MS, 520 * MS)))
    assert p.verdict is PairVerdict.TREE_STALE and p.refresh == {Channel.TREE}
    # The frame was kept: a fresh tree completes the pair.
    p = a.offer(Timed("t2", CaptureTime(510 * MS, 700 * MS)))
    assert p.verdict is PairVerdict.PAIRED and p.tree is not None and p.tree.payload == "t2"
    p = a.offer(Timed("t", CaptureTime(2000 * MS, 2100 * MS)), Timed("f", CaptureTime(0, MS)))
    assert p.verdict is PairVerdict.FRAME_STALE and p.refresh == {Channel.PIXEL}


def test_new_epoch_invalidates_older_captures() -> None:
    a: Aligner[str, str] = Aligner()
    assert a.offer(Timed("t", None, 0)).verdict is PairVerdict.TREE_ONLY
    # An action happened (epoch 1): a tree dumped before it is refused, the frame waits.
    p = a.offer(Timed("old tree", None, 0), Timed("f1", None, 1))
    assert p.verdict is PairVerdict.OLD_EPOCH and p.refresh == {Channel.TREE}
    p = a.offer(Timed("t1", None, 1))
    assert p.verdict is PairVerdict.PAIRED and p.frame is not None and p.frame.payload == "f1"
    with pytest.raises(CaptureTimeError):
        a.begin_epoch(0)


def test_capture_time_errors_are_typed() -> None:
    with pytest.raises(CaptureTimeError):
        CaptureTime(10, 5)
    with pytest.raises(PerceptionError):
        Timed("x", None, -1)
    with pytest.raises(CaptureTimeError):
        Aligner().offer()
    assert CaptureTime(0, 10 * MS).gap_ms(CaptureTime(5 * MS, 6 * MS)) == 0.0


# --- arbiter ------------------------------------------------------------------------------------


def test_arbiter_leaves_at_once_and_returns_after_recovery() -> None:
    arb = Arbiter()
    assert arb.update(0.95).state is ArbiterState.TREE
    step = arb.update(0.2)
    assert step.changed and step.state is ArbiterState.PIXEL
    assert arb.update(0.95).state is ArbiterState.TREE  # a big jump overrides the dwell


def test_arbiter_hysteresis_and_dwell_damp_noise() -> None:
    cfg = FusionConfig()
    rng = random.Random(7)
    values = [0.675 + rng.uniform(-0.15, 0.15) for _ in range(400)]
    arb, plain = Arbiter(cfg), ThresholdArbiter(cfg)
    flips = sum(arb.update(v).changed for v in values)
    plain_flips = sum(plain.update(v).changed for v in values)
    assert flips <= len(values) / 2
    assert flips < plain_flips / 2


def test_arbiter_needs_enter_threshold_to_return() -> None:
    arb = Arbiter()
    config = arb.config
    arb.update(0.5)
    assert arb.state is ArbiterState.UNSTABLE
    between = (config.tree_exit + config.tree_enter) / 2
    for _ in range(3):
        assert arb.update(between).state is ArbiterState.UNSTABLE  # above exit, below enter
    assert arb.update(config.tree_enter + 0.05).state is ArbiterState.TREE


def test_config_validates_thresholds() -> None:
    with pytest.raises(ConfigError):
        FusionConfig(tree_exit=0.9, tree_enter=0.8)
    assert FusionConfig.from_env({"PERCEPTION_FUSION_MIN_DWELL": "3"}).min_dwell == 3


# --- scoring ------------------------------------------------------------------------------------


def test_tree_confidence_factors() -> None:
    good = tree_confidence(
        TreeEvidence(health=health(), text_on_pixels=0.9, text_boxes=10, coverage=0.8)
    )
    assert good.value >= 0.9 and not good.factors
    surface = tree_confidence(
        TreeEvidence(health=health(surface_area_share=1.0, element_count=1, text_share=0.0))
    )
    assert surface.value < 0.3 and "opaque" in surface.factors
    # The same surface under a tree with controls of its own (a camera's, a player's): the
    # surface is a region the tree misses, tree-unstable, not pixel-fallback.
    controls = tree_confidence(
        TreeEvidence(health=health(surface_area_share=1.0, element_count=12, text_share=0.8))
    )
    assert 0.3 <= controls.value < 0.6 and controls.factors["opaque"] == 0.5
    desync = TreeEvidence(health=health(), text_on_pixels=0.2, text_boxes=8, coverage=0.8)
    assert tree_confidence(desync).value < 0.6
    assert consistent_with_pixels(desync) is False
    assert tree_confidence(TreeEvidence(health=None)).value == 0.0
    stale = TreeEvidence(health=health(), stale=True)
    assert tree_confidence(stale).value < 0.6 and consistent_with_pixels(stale) is False
    assert consistent_with_pixels(TreeEvidence(health=health())) is None
    # A pop-up on the pixels that the tree does not hold, its page's labels read back all the
    # same (dimmed under the scrim): another moment's tree.
    no_popup = TreeEvidence(
        health=health(), text_on_pixels=1.0, text_boxes=8, coverage=0.8,
        read_back_sampled=4, read_back_agreed=4, modal_missing=True,
    )
    assert tree_confidence(no_popup).factors == {"modal_missing": 0.4}
    assert tree_confidence(no_popup).value < 0.6 and consistent_with_pixels(no_popup) is False
    # One label to read back: not said is no verdict; other words where it should be are.
    one = TreeEvidence(
        health=health(), text_on_pixels=1.0, text_boxes=1, coverage=0.8,
        read_back_sampled=1, read_back_agreed=0,
    )
    assert tree_confidence(one).factors == {} and consistent_with_pixels(one) is True
    other = dataclasses.replace(one, read_back_other=True)
    assert tree_confidence(other).factors == {"read_back": 0.4}
    assert consistent_with_pixels(other) is False


@pytest.mark.parametrize(
    ("label", "said", "other"),
    [
        ("Search", "Recent apps, default apps", True),  # a launcher's box over the app
        ("About WebView", "get false getAllowContentAcce", True),
        ("春节", "春楠 Follow", True),  # CJK letters count
        ("Search", "S earch", False),  # said back
        ("Apps list", "入", False),  # a glyph: an OCR miss, not other words
        ("全部播放 (1)", "-ARoi", False),  # four letters: too few to say
        ("Search", "", False),
    ],
)
def test_read_back_other(label: str, said: str, other: bool) -> None:
    assert read_back_other(label, said) is other


# --- cross-validation ---------------------------------------------------------------------------


def test_text_similarity() -> None:
    assert text_similarity("Sign in | Forgot password?", "Forgot Password") == 1.0
    assert text_similarity("设置", "设置") == 1.0
    assert text_similarity("Settings", "Setlings") >= 0.8
    assert text_similarity("Settings", "Loading") < 0.6
    assert text_similarity("x", "") == 0.0


def test_match_text_blocks_agree_conflict_fill() -> None:
    elements = [
        el(0, "Sign in", (100, 100, 500, 200)),
        el(1, "", (600, 100, 900, 200)),
        el(2, "Cancel", (100, 300, 500, 400)),
    ]
    blocks = [
        Block("Sign in", (150, 120, 400, 180)),
        Block("Search", (620, 120, 880, 180)),
        Block("Delete", (150, 320, 400, 380)),
        Block("Promo", (100, 900, 400, 950)),
    ]
    check = match_text_blocks(elements, blocks)
    kinds = [m.agreement for m in check.matches]
    assert kinds == [Agreement.AGREE, Agreement.FILLS, Agreement.CONFLICT, Agreement.UNMATCHED]
    assert check.compared == 2 and check.agreement == 0.5
    drafts = merge(
        elements=elements, tree_confidence=0.8, text_blocks=blocks, crosscheck=check, screen=SCREEN
    )
    by_text = {d.text: d for d in drafts}
    assert by_text["Sign in"].source is Channel.BOTH and by_text["Sign in"].confidence > 0.8
    assert by_text["Search"].source is Channel.BOTH  # OCR labels the text-less element
    assert by_text["Promo"].source is Channel.PIXEL
    assert by_text["Delete"].source is Channel.PIXEL
    assert [d.source for d in drafts[:3]] == [Channel.BOTH, Channel.BOTH, Channel.TREE]


def test_a_bars_tabs_get_their_ids_left_to_right() -> None:
    """Pixel drafts were sorted by their own top edges: a bar's tabs, a few px apart in height
    (an icon's ink, a caption's descenders), were numbered Search, Profile, Home, Likes."""
    tabs = [
        Block("Likes", (600, 2072, 700, 2190), kind="tab"),
        Block("Home", (100, 2068, 200, 2190), kind="tab"),
        Block("Search", (300, 2066, 400, 2190), kind="tab"),
        Block("Profile", (800, 2066, 900, 2190), kind="tab"),
        Block("Title", (60, 300, 400, 350), kind="btn"),
    ]
    drafts = merge(elements=[], tree_confidence=0.0, anchors=tabs, screen=SCREEN)
    assert [d.text for d in drafts] == ["Title", "Home", "Search", "Likes", "Profile"]


def _anchors_offered(
    elements: list[TreeElement],
    blocks: list[Block],
    anchors: list[Block],
    unconfirmed: frozenset[int] = frozenset(),
) -> list[Draft]:
    """The pixel anchors :func:`merge` offers beside ``elements`` and the OCR ``blocks``."""
    drafts = merge(
        elements=elements,
        tree_confidence=0.4,
        text_blocks=blocks,
        crosscheck=match_text_blocks(elements, blocks),
        anchors=anchors,
        screen=SCREEN,
        unconfirmed=unconfirmed,
    )
    return [d for d in drafts if d.origin == "anchor"]


def test_named_icons_in_a_pill_the_pixels_read_are_targets_of_their_own() -> None:
    """A search bar the pixels read as one pill holding its text: its ←, × and mic were left
    out under the pill's OCR candidate, though the pixel channel offers them on their own (Maps'
    search bar under a stale launcher dump: the ← the next step tapped was not in the prompt).
    A field's magnifier, a button's logo and a tab's icon stay the label's drawing, and a tree
    box still hides what is drawn in it."""
    blocks = [
        Block("vegetarian restaurant", (28, 80, 1052, 214), kind="btn"),
        Block("Search here", (32, 300, 1048, 420), kind="input"),
        Block("SIGN UP WITH GOOGLE", (100, 600, 1000, 760), kind="btn"),
        Block("Settings", (800, 2200, 1000, 2380), kind="tab"),
    ]
    anchors = [
        Block("", (70, 124, 118, 170), kind="icon", glyph="←"),
        Block("", (840, 126, 880, 166), kind="icon", glyph="×"),
        Block("", (964, 120, 1006, 176), kind="icon", glyph="mic"),
        Block("", (72, 330, 126, 390), kind="icon", glyph="search"),
        Block("", (158, 650, 226, 718), kind="icon"),
        Block("", (870, 2220, 930, 2280), kind="icon", glyph="settings"),  # the tab's own icon
    ]

    def offered(elements: list[TreeElement]) -> list[str]:
        return sorted(d.text for d in _anchors_offered(elements, blocks, anchors))

    assert offered([]) == sorted(["←", "×", "mic"])
    assert offered([el(0, "Clear query", (820, 106, 900, 186))]) == sorted(["←", "mic"])


def test_a_stale_trees_band_does_not_hide_the_icons_drawn_in_it_now() -> None:
    """On a tree of another moment (its text rows ``unconfirmed``), a row it keeps without text
    hid every anchor inside its box: a music player's ♡, ⋯ and skip buttons under the previous
    page's text-less rows, so the ⋯ the next step tapped was not offered. Such a row now hides
    only an anchor of about its own size (the icon its description names); a tree of this
    moment still hides what is drawn in its rows."""
    elements = [
        el(0, "Recommended", (60, 300, 600, 380)),
        el(1, "", (0, 1800, 1080, 2000)),  # a band the previous page had there
        el(2, "More options", (960, 120, 1060, 220)),  # an icon named by its description
    ]
    anchors = [
        Block("", (890, 1860, 970, 1940), kind="icon"),  # inside the band
        # the described icon's own drawing (named: a pill would not hide it, the row does)
        Block("", (975, 135, 1045, 205), kind="icon", glyph="⋮"),
    ]

    blocks = [Block("Now playing", (300, 1000, 780, 1060))]  # the screen's own text

    def offered(unconfirmed: frozenset[int]) -> list[BoxPx]:
        return [d.box_px for d in _anchors_offered(elements, blocks, anchors, unconfirmed)]

    assert offered(frozenset({0})) == [BoxPx(890, 1860, 970, 1940)]
    assert offered(frozenset()) == []


def test_frame_probe_flags_text_on_flat_pixels() -> None:
    img = np.full((800, 400, 3), 255, np.uint8)
    rng = np.random.default_rng(1)
    img[100:160, 40:360] = rng.integers(0, 255, (60, 320, 3), dtype=np.uint8)  # "text" here
    probe = FrameProbe(img)
    assert not probe.blank
    elements = [el(0, "Title", (40, 100, 360, 160)), el(1, "Gone", (40, 400, 360, 460))]
    c = check_pixels(elements, probe)
    assert c.text_on_pixels == 0.5 and c.doubtful == (1,)
    assert c.coverage is not None and c.coverage > 0.85
    assert FrameProbe(np.zeros((800, 400, 3), np.uint8)).blank
    assert probe.change(FrameProbe(img)) == 0.0


def test_a_small_glyph_in_a_big_box_is_not_flat() -> None:
    """QQ Music's "more" buttons: three 10 px dots in a 127 px square, a grey variance under the
    flat line, were doubtful (c=0.46 on six visible buttons). A faint smudge stays flat."""
    img = np.full((800, 400, 3), 250, np.uint8)
    for dy in (-30, 0, 30):
        cv2.circle(img, (100, 164 + dy), 6, (60, 60, 60), -1)  # the dots, in (36, 100, 164, 228)
    img[450:454, 80:84] = 238  # a smudge of 12 grey levels, in (36, 400, 164, 528)
    elements = [el(0, "More", (36, 100, 164, 228)), el(1, "Gone", (36, 400, 164, 528))]
    c = check_pixels(elements, FrameProbe(img))
    assert c.doubtful == (1,) and c.text_on_pixels == 0.5


def test_the_lines_past_a_cut_label_are_its_text_not_a_conflict() -> None:
    """A paragraph cut at 40 characters ("This is a preview of the homescreen widget…") over
    OCR's later lines of it: no conflict (no "disagree"), and no OCR candidate of their own.
    An uncut label against other words still conflicts."""
    elements = [
        el(0, "This is a preview of the homescreen widget…", (0, 600, 1080, 900)),
        el(1, "Cancel", (100, 1000, 500, 1100)),
    ]
    blocks = [
        Block("widget which displays a 12-at-the-top 24", (40, 640, 1000, 690)),
        Block("hour analog clock. Noon is at the top so", (40, 700, 1000, 750)),
        Block("Delete", (150, 1020, 400, 1080)),
    ]
    check = match_text_blocks(elements, blocks)
    kinds = [m.agreement for m in check.matches]
    assert kinds == [Agreement.CONTINUES, Agreement.CONTINUES, Agreement.CONFLICT]
    assert check.compared == 1
    drafts = merge(
        elements=elements, tree_confidence=0.8, text_blocks=blocks, crosscheck=check, screen=SCREEN
    )
    assert [d.text for d in drafts if d.source is Channel.PIXEL] == ["Delete"]


def test_the_start_of_a_longer_label_agrees() -> None:
    """A URL field drawn scrolled ("https://github.com/jroz" of ".../jroal/a2dpvolume/wiki",
    the last letters misread) is that field's text, not a second candidate beside it; a short
    word that merely starts the same does not agree."""
    url = "https://github.com/jroal/a2dpvolume/wiki"
    assert text_similarity(url, "https://github.com/jroz") >= 0.9
    assert text_similarity("Settings and privacy", "Setlings") >= 0.8  # a title ellipsised
    assert text_similarity("Set alarm", "Settings") < 0.6
    # A changed text is no start of the old one: other words, other digits.
    for label, ocr in (
        ("Download paused - tap to resume", "Download failed"),
        ("Cancel subscription", "Cancelled"),
        ("Payment of $1,250.00 to John Smith completed", "Payment of $1,950"),
        ("Delete 12 photos from this device permanently", "Delete 1 photo"),
    ):
        assert text_similarity(label, ocr) < 0.6, (label, ocr)


def test_a_line_over_a_wrapper_that_another_element_says_is_that_elements() -> None:
    """Firefox's URL read off the pixels straddles the URL bar's box: the unlabelled toolbar
    around it holds most of the line, but the line is the URL bar's label, not the toolbar's."""
    elements = [
        el(0, "", (0, 1608, 1080, 1776)),  # the toolbar, no label of its own
        el(1, "github.com/aghontpi/Ad-silence", (264, 1632, 828, 1751)),
    ]
    blocks = [Block("github.com/aghontpi/Ad-sil", (200, 1650, 820, 1730))]
    check = match_text_blocks(elements, blocks)
    assert [(m.element, m.agreement) for m in check.matches] == [(1, Agreement.AGREE)]
    drafts = merge(
        elements=elements, tree_confidence=0.8, text_blocks=blocks, crosscheck=check, screen=SCREEN
    )
    assert [d.text for d in drafts] == ["", "github.com/aghontpi/Ad-silence"]


# --- candidates, screen, loop -------------------------------------------------------------------


def test_ids_are_stable_on_the_same_page() -> None:
    elements = [el(0, "A", (0, 0, 100, 100)), el(1, "B", (0, 200, 100, 300))]
    ids = IdAllocator()
    first = ids.assign(
        merge(elements=elements, tree_confidence=0.9, screen=SCREEN), page="p", screen=SCREEN
    )
    assert [c.id for c in first] == [1, 2]
    again = ids.assign(
        merge(
            elements=[elements[1], el(5, "C", (0, 400, 100, 500))],
            tree_confidence=0.9,
            screen=SCREEN,
        ),
        page="p",
        screen=SCREEN,
    )
    assert [(c.text, c.id) for c in again] == [("B", 2), ("C", 3)]
    other = ids.assign(
        merge(
            elements=[el(7, "X", (0, 0, 100, 100)), el(8, "Y", (0, 200, 100, 300)), elements[1]],
            tree_confidence=0.9,
            screen=SCREEN,
        ),
        page="q",
        screen=SCREEN,
    )
    assert [c.id for c in other] == [1, 2, 3]  # a new page, mostly new elements: from 1


def _rows(names: list[str], top: int, kind: str = "btn") -> list[TreeElement]:
    return [el(i, n, (0, top + 150 * i, 1080, top + 150 * (i + 1)), kind=kind) for i, n in
            enumerate(names)]


def test_ids_follow_elements_that_move() -> None:
    """A scroll moves every row by more than a grid cell, and a scroll that changes the page's
    top texts changes its fingerprint: the rows still on screen keep their ids, and no id
    names another element."""
    names = [f"Message from {n}" for n in "ABCDEFGHIJ"]
    ids = IdAllocator()
    before = ids.assign(
        merge(elements=_rows(names[:8], 200), tree_confidence=0.9, screen=SCREEN),
        page="p",
        screen=SCREEN,
    )
    after = ids.assign(
        merge(elements=_rows(names[1:9], 200), tree_confidence=0.9, screen=SCREEN),
        page="p2",
        screen=SCREEN,
    )
    was = {c.text: c.id for c in before}
    assert all(was[c.text] == c.id for c in after if c.text in was)
    assert after[-1].id == 9 and len({c.id for c in after}) == 8  # the new row: a new id
    swapped = names[1:9]
    swapped[2], swapped[3] = swapped[3], swapped[2]
    again = ids.assign(
        merge(elements=_rows(swapped, 200), tree_confidence=0.9, screen=SCREEN),
        page="p2",
        screen=SCREEN,
    )
    assert {c.text: c.id for c in again} == {c.text: c.id for c in after}


def test_repeated_keys_get_the_same_ids_every_time() -> None:
    """Two "OK" buttons in one grid cell: the same input gives the same ids, first time too."""
    elements = [
        el(0, "Title", (0, 0, 1080, 100), kind="text", flags=ElementFlag.NONE),
        el(1, "OK", (100, 500, 300, 600)),
        el(2, "OK", (102, 502, 302, 602)),
        el(3, "Cancel", (500, 500, 700, 600)),
    ]
    ids = IdAllocator()
    runs = [
        [c.id for c in ids.assign(
            merge(elements=elements, tree_confidence=0.9, screen=SCREEN), page="d", screen=SCREEN
        )]
        for _ in range(3)
    ]
    assert runs == [[1, 2, 3, 4]] * 3
    # Not the same drafts (another confidence), the same keys: still the same ids.
    other = ids.assign(
        merge(elements=elements, tree_confidence=0.7, screen=SCREEN), page="d", screen=SCREEN
    )
    assert [c.id for c in other] == [1, 2, 3, 4]


def _info(secure: bool = False) -> ScreenInfo:
    return ScreenInfo(
        package="com.app",
        activity=None,
        size=SCREEN,
        rotation=0,
        secure=secure,
        fingerprint="f",
        top_texts=(),
    )


def test_recommendations() -> None:
    ids = IdAllocator()
    dialog = [
        el(
            0,
            "Allow Maps to access this device's location?",
            (80, 900, 1000, 1100),
            ElementFlag.NONE,
            "text",
        ),
        el(1, "While using the app", (80, 1100, 1000, 1200)),
        el(2, "Don't allow", (80, 1200, 1000, 1300)),
    ]
    cands = ids.assign(
        merge(elements=dialog, tree_confidence=0.9, screen=SCREEN), page="d", screen=SCREEN
    )
    ops = recommend(cands, _info())
    assert [(o.kind, o.candidate_id) for o in ops] == [
        (OperationKind.ACCEPT, 2),
        (OperationKind.DISMISS, 3),
    ]
    loading = ids.assign(
        merge(
            elements=[el(0, "Loading…", (0, 0, 1080, 2400), kind="text")],
            tree_confidence=0.9,
            screen=SCREEN,
        ),
        page="l",
        screen=SCREEN,
    )
    assert OperationKind.WAIT in [o.kind for o in recommend(loading, _info())]
    assert OperationKind.HAND_OVER in [o.kind for o in recommend(cands, _info(secure=True))]


def test_fingerprint_ignores_digits_through_top_texts() -> None:
    assert fingerprint("a", None, ["x"]) != fingerprint("a", "act", ["x"])
    assert len(fingerprint("a", None, [])) == 16


def test_loop_detector_and_page_cache() -> None:
    loops = LoopDetector(window=5, repeats=3)
    seq = ["a", "b", "a", "c", "a"]
    reports = [loops.observe(f) for f in seq]
    assert reports[:4] == [None] * 4 and reports[4] is not None and reports[4].count == 3
    cache: PageCache[int] = PageCache(2)
    cache.put("a", 1)
    cache.put("b", 2)
    cache.get("a")
    cache.put("c", 3)
    assert "a" in cache and "b" not in cache and len(cache) == 2


def test_loop_detector_counts_a_step_once() -> None:
    from perception.fusion.loop import LoopDetector

    loops = LoopDetector(window=6, repeats=3)
    # many observations of one step (an engine between two actions) are one entry
    assert all(loops.observe("home", step=0) is None for _ in range(10))
    assert loops.observe("home", step=1) is None
    report = loops.observe("home", step=2)
    assert report is not None and report.count == 3
    # without steps, every call is a step
    plain = LoopDetector(window=6, repeats=3)
    assert [plain.observe("a") is None for _ in range(3)] == [True, True, False]


@pytest.mark.parametrize(
    ("label", "texts", "whole"),
    [
        ("Recommend", ["Me"], False),  # a few letters of a long label
        ("Men's Hair Salons", ["Hair Salons"], False),
        ("Men's Hair Salons", ["Men's Hair Salons"], True),
        ("Men's Hair Salons", ["Mens Hair Saions"], True),  # a misread of the whole
        ("SAVE | save", ["save"], True),  # one piece whole
        ("QQ音乐 让生活充满音乐", ["QQ音乐", "让生活充满音乐"], True),  # two lines, read as two
        ("Terms of Service and Privacy", ["Terms of Service"], False),  # half of one line
        ("Search…", ["Search"], True),  # a cut label's visible part
        ("Save", ["Save changes"], True),  # the line holds the label
        ("", ["Save"], False),
        ("Save", ["", "  "], False),
    ],
)
def test_reads_whole_takes_a_piece_read_whole_not_a_part(
    label: str, texts: list[str], whole: bool
) -> None:
    assert reads_whole(label, texts) is whole
