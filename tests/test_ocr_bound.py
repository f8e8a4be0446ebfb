"""Bounded work on a frame full of text or icons. The cap on OCR lines recognised per frame
(``PixelConfig.max_ocr_lines``), with the real RapidOCR models on small synthetic frames: it
holds, keeps the top of the screen, says how many lines it left unread, spans a frame's regions,
and changes nothing under it. And the merge's icon grouping, no longer all pairs, groups as
all pairs did."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import cv2
import numpy as np
import pytest

from perception.config import PixelConfig
from perception.errors import ConfigError
from perception.geometry import union_box
from perception.pixel import PixelKind, PixelReader, RapidOcrEngine, merge
from perception.pixel.ocr import TextReader, reading_order_cap
from perception.types import BoxPx

WORDS = (
    "Alpha", "Bravo", "Charlie", "Delta", "Echo", "Foxtrot", "Golf",
    "Hotel", "India", "Juliett", "Kilo", "Lima", "Mike", "November",
)
"""One word a row: no word space that a split could cut."""
ROW_PX = 80
FIRST_ROW_PX = 160


def dense_frame() -> np.ndarray:
    """A 720x1280 screen of one word per row, 14 rows: a small stand-in for a screen of text."""
    img = np.full((1280, 720, 3), 250, np.uint8)
    for k, word in enumerate(WORDS):
        cv2.putText(
            img, word, (40, FIRST_ROW_PX + k * ROW_PX), cv2.FONT_HERSHEY_SIMPLEX, 1.2,
            (20, 20, 20), 3, cv2.LINE_AA,
        )
    return img


@pytest.fixture(scope="module")
def engine() -> Iterator[RapidOcrEngine]:
    """One engine (models loaded once) shared by readers with different caps."""
    eng = RapidOcrEngine()
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def uncapped(engine: RapidOcrEngine) -> tuple[tuple[str, ...], int]:
    """The frame read with the default cap: its words top to bottom and its line crops."""
    reader = PixelReader(PixelConfig(), engine)
    px = reader.read(dense_frame())
    got = reader.text.read_bounded(dense_frame(), BoxPx(0, 0, 720, 1280), 10_000)
    words = tuple(ln.text for ln in sorted(px.lines, key=lambda ln: ln.box_px.top))
    return words, got.recognised


def test_the_uncapped_frame_reads_every_row(uncapped: tuple[tuple[str, ...], int]) -> None:
    words, crops = uncapped
    assert [w.casefold() for w in words] == [w.casefold() for w in WORDS]
    assert crops == len(WORDS)


def test_cap_holds_keeps_the_top_rows_and_says_how_many_it_left(
    engine: RapidOcrEngine, uncapped: tuple[tuple[str, ...], int], pipeline_impl: str
) -> None:
    words, crops = uncapped
    reader = PixelReader(PixelConfig(max_ocr_lines=5), engine)
    px = reader.read(dense_frame())
    assert reader.text.recognised == 5  # the engine saw five crops, no more
    assert px.unread_lines == crops - 5
    assert tuple(ln.text for ln in sorted(px.lines, key=lambda ln: ln.box_px.top)) == words[:5]
    # Reading the same frame again is the cached result, with the same count.
    again = reader.read(dense_frame())
    assert again.ocr == "cached" and again.unread_lines == px.unread_lines


def test_frame_under_the_cap_reads_as_without_it(engine: RapidOcrEngine) -> None:
    exact = PixelReader(PixelConfig(max_ocr_lines=len(WORDS)), engine).read(dense_frame())
    default = PixelReader(PixelConfig(), engine).read(dense_frame())
    assert exact.unread_lines == default.unread_lines == 0
    assert exact.lines == default.lines
    assert exact.blocks == default.blocks
    assert exact.candidates == default.candidates


def test_one_budget_spans_the_regions_of_a_frame(
    engine: RapidOcrEngine, uncapped: tuple[tuple[str, ...], int]
) -> None:
    words, crops = uncapped
    middle = FIRST_ROW_PX + 6 * ROW_PX - 40  # six rows above, eight below
    regions = [BoxPx(0, 0, 720, middle), BoxPx(0, middle, 720, 1280)]
    px = PixelReader(PixelConfig(max_ocr_lines=8), engine).read(dense_frame(), regions=regions)
    assert px.ocr == "roi"
    assert px.unread_lines == crops - 8
    # The first region's six rows, then the second's first two (each region in its own order).
    assert px.lines[0].box_px.bottom <= middle < px.lines[-1].box_px.top
    assert tuple(ln.text for ln in sorted(px.lines, key=lambda ln: ln.box_px.top)) == words[:8]


def test_region_cache_never_serves_a_reading_another_budget_would_not_give(
    engine: RapidOcrEngine,
) -> None:
    """The cache keeps a region's lines and each line's text read so far: a cut reading
    first, then the whole region reads only the lines the cut left, and a cut after the whole
    comes from the cache, cut the same."""
    text = TextReader(PixelConfig(), engine)
    frame, whole = dense_frame(), BoxPx(0, 0, 720, 1280)
    cut = text.read_bounded(frame, whole, 3)
    assert (cut.cached, cut.recognised, cut.unread) == (False, 3, len(WORDS) - 3)
    full = text.read_bounded(frame, whole, 100)
    assert (full.cached, full.unread) == (False, 0)
    assert text.recognised == len(WORDS)  # the cut's three lines were not read again
    top3 = sorted(full.lines, key=lambda ln: ln.box_px.top)[:3]
    assert cut.lines == [ln for ln in full.lines if ln in top3]  # kept in detection's order
    assert text.read_bounded(frame, whole, len(WORDS)).cached  # the same reading
    again = text.read_bounded(frame, whole, 3)
    assert again.cached and again.lines == cut.lines and again.unread == len(WORDS) - 3
    assert text.read_bounded(frame, whole, 4).unread == len(WORDS) - 4
    assert text.recognised == len(WORDS)


def test_a_reading_the_budget_left_empty_never_replaces_a_fuller_one(
    engine: RapidOcrEngine,
) -> None:
    """A region read after the budget ran out stored its empty reading over the whole one, so
    the next frame read it all again."""
    text = TextReader(PixelConfig(), engine)
    frame, whole = dense_frame(), BoxPx(0, 0, 720, 1280)
    full = text.read_bounded(frame, whole, 100)
    spent = text.read_regions(frame, [whole], 0)
    assert (spent.lines, spent.recognised, spent.unread) == ([], 0, len(WORDS))
    again = text.read_bounded(frame, whole, 100)
    assert again.cached and again.lines == full.lines
    assert text.recognised == len(WORDS)


def _words(px_lines: tuple[object, ...] | list[object]) -> list[str]:
    return [ln.text for ln in sorted(px_lines, key=lambda ln: ln.box_px.top)]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "regions",
    [
        [BoxPx(0, 0, 720, 1280), BoxPx(0, 0, 720, 1280)],
        [BoxPx(0, 0, 720, 1280), BoxPx(0, 0, 720, 600)],
        [BoxPx(0, 700, 720, 1280), BoxPx(0, 0, 720, 1280)],
    ],
    ids=["repeated", "nested", "inside-first"],
)
def test_a_region_inside_another_is_read_once(
    engine: RapidOcrEngine, uncapped: tuple[tuple[str, ...], int], regions: list[BoxPx]
) -> None:
    """[A, A] said 2 x 14 - 8 lines were left unread, and [A, top of A] 14 although all of
    A's top was read: past the cap, a region inside another is that one's."""
    words, crops = uncapped
    whole = [BoxPx(0, 0, 720, 1280)]
    capped = PixelReader(PixelConfig(max_ocr_lines=8), engine)
    px = capped.read(dense_frame(), regions=regions)
    alone = PixelReader(PixelConfig(max_ocr_lines=8), engine).read(dense_frame(), regions=whole)
    assert px.unread_lines == alone.unread_lines == crops - 8
    assert px.lines == alone.lines and _words(px.lines) == list(words[:8])
    # Under the cap every region is read whole, as without one (an inner region's own
    # detection can find what the outer one's shrunk copy misses), and nothing is unread.
    free = PixelReader(PixelConfig(), engine).read(dense_frame(), regions=regions)
    assert free.unread_lines == 0
    assert {w.casefold() for w in _words(free.lines)} == {w.casefold() for w in words}


def test_the_budget_goes_top_down_over_regions_given_bottom_first(
    engine: RapidOcrEngine, uncapped: tuple[tuple[str, ...], int]
) -> None:
    """[bottom, top] read the bottom region whole and left the upper middle of the screen
    unread, while the observation said the lowest lines were left out."""
    words, crops = uncapped
    middle = FIRST_ROW_PX + 6 * ROW_PX - 40
    regions = [BoxPx(0, middle, 720, 1280), BoxPx(0, 0, 720, middle)]
    px = PixelReader(PixelConfig(max_ocr_lines=8), engine).read(dense_frame(), regions=regions)
    assert px.unread_lines == crops - 8
    assert _words(px.lines) == list(words[:8])
    # Lines stay in the regions' order: the bottom region's two rows, then the top's six.
    assert sorted(ln.text for ln in px.lines[:2]) == sorted(words[6:8])


def test_lines_where_regions_overlap_count_once(
    engine: RapidOcrEngine, uncapped: tuple[tuple[str, ...], int]
) -> None:
    """Two regions sharing three rows: past the cap those rows are read and counted once."""
    words, crops = uncapped
    upper = BoxPx(0, 0, 720, FIRST_ROW_PX + 8 * ROW_PX - 40)  # rows 0-7
    lower = BoxPx(0, FIRST_ROW_PX + 5 * ROW_PX - 40, 720, 1280)  # rows 5-13
    px = PixelReader(PixelConfig(max_ocr_lines=10), engine).read(
        dense_frame(), regions=[upper, lower]
    )
    assert px.unread_lines == crops - 10
    assert _words(px.lines) == list(words[:10])


def test_ocr_regions_logs_lines_left_unread(
    engine: RapidOcrEngine, caplog: pytest.LogCaptureFixture
) -> None:
    reader = PixelReader(PixelConfig(max_ocr_lines=2), engine)
    with caplog.at_level(logging.WARNING, logger="perception.pixel.read"):
        lines = reader.ocr_regions(dense_frame(), [BoxPx(0, 0, 720, 1280)])
    assert len(lines) == 2
    assert f"OCR left {len(WORDS) - 2} text lines unread" in caplog.text


def test_an_observation_says_lines_were_left_unread(engine: RapidOcrEngine) -> None:
    from perception import Perceiver
    from perception.pipeline import PixelChannel

    capped = Perceiver(pixels=PixelChannel(PixelReader(PixelConfig(max_ocr_lines=5), engine)))
    obs = capped.perceive(frame=dense_frame())  # no tree: the whole frame is read
    assert obs.unread_lines == len(WORDS) - 5
    assert any("unread" in n for n in obs.notes)
    assert f'"warn":"{len(WORDS) - 5} text lines too many to read' in obs.to_prompt()
    whole = Perceiver(pixels=PixelChannel(PixelReader(PixelConfig(), engine)))
    full = whole.perceive(frame=dense_frame())
    assert full.unread_lines == 0 and '"warn"' not in full.to_prompt()


def test_reading_order_cap_is_top_then_left_in_the_given_order() -> None:
    boxes = [BoxPx(0, 300, 50, 320), BoxPx(60, 100, 90, 120), BoxPx(0, 100, 50, 120)]
    assert reading_order_cap(boxes, 2) == [1, 2]
    assert reading_order_cap(boxes, 3) == [0, 1, 2]
    assert reading_order_cap(boxes, 0) == []


def test_max_ocr_lines_from_the_environment() -> None:
    assert PixelConfig.from_env({"PERCEPTION_PIXEL_MAX_OCR_LINES": "7"}).max_ocr_lines == 7
    assert PixelConfig().max_ocr_lines == 256
    with pytest.raises(ConfigError, match="PERCEPTION_PIXEL_MAX_OCR_LINES"):
        PixelConfig.from_env({"PERCEPTION_PIXEL_MAX_OCR_LINES": "0"})


# The merge's icon grouping visited every pair of icons (2.1 + 1.0 s for 967 icons on a screen
# of them); it now visits only the icons whose left edge can lie near. The references below are
# the all-pairs loops as they were: the groups must be theirs on any layout.


def _all_pairs_clusters(cands: list[merge.PixelCandidate]) -> list[merge.PixelCandidate]:
    icons = [i for i, c in enumerate(cands) if not c.text and c.kind is PixelKind.ICON]
    if len(icons) < merge.ROW_ICONS_MIN:
        return cands
    parent = list(range(len(icons)))

    def root(k: int) -> int:
        while parent[k] != k:
            k = parent[k]
        return k

    boxes = [cands[i].box_px for i in icons]
    for a, one in enumerate(boxes):
        size = max(one.width, one.height)
        slack = merge.ROW_SIZE_SLACK * size
        for b in range(a + 1, len(icons)):
            other = boxes[b]
            gap = max(
                other.left - one.right, one.left - other.right,
                other.top - one.bottom, one.top - other.bottom,
            )
            w = min(one.right, other.right) - max(one.left, other.left)
            h = min(one.bottom, other.bottom) - max(one.top, other.top)
            shared = w * h if w > 0 and h > 0 else 0
            if (
                abs(other.width - one.width) <= slack
                and abs(other.height - one.height) <= slack
                and gap <= merge.ROW_GAP_MAX * size
                and shared <= merge.CLUSTER_OVERLAP_MAX * min(max(1, one.area), max(1, other.area))
            ):
                parent[root(b)] = root(a)
    groups: dict[int, list[int]] = {}
    for k, i in enumerate(icons):
        groups.setdefault(root(k), []).append(i)
    runs = []
    for group in groups.values():
        box = union_box([cands[i].box_px for i in group])
        first = cands[group[0]].box_px
        if (
            len(group) >= merge.ROW_ICONS_MIN
            and 2 * box.width >= 3 * first.width
            and 2 * box.height >= 3 * first.height
        ):
            runs.append(group)
    return merge._one_icon_each(cands, runs) if runs else cands


def _all_pairs_rows(cands: list[merge.PixelCandidate]) -> list[merge.PixelCandidate]:
    icons = sorted(
        (i for i, c in enumerate(cands) if not c.text and c.kind is PixelKind.ICON),
        key=lambda i: (cands[i].box_px.left, cands[i].box_px.top),
    )
    if len(icons) < merge.ROW_ICONS_MIN:
        return cands
    used: set[int] = set()
    runs: list[list[int]] = []
    for n, first in enumerate(icons):
        if first in used:
            continue
        run = [first]
        for i in icons[n + 1 :]:
            last, box = cands[run[-1]].box_px, cands[i].box_px
            size = max(last.width, last.height)
            slack = merge.ROW_SIZE_SLACK * size
            if (
                i not in used
                and abs(box.width - last.width) <= slack
                and abs(box.height - last.height) <= slack
                and abs(box.top - last.top) <= slack
                and abs(box.bottom - last.bottom) <= slack
                and -2 <= box.left - last.right <= merge.ROW_GAP_MAX * size
            ):
                run.append(i)
        if len(run) >= merge.ROW_ICONS_MIN:
            run.extend(merge._run_ends(cands, run, [i for i in icons if i not in used]))
            used.update(run)
            runs.append(run)
    return merge._one_icon_each(cands, runs) if runs else cands


def _icons(seed: int, n: int) -> list[merge.PixelCandidate]:
    """Icons of a few sizes: some in tight rows, columns and blocks, some scattered, some
    overlapping, with a text line and a non-icon among them."""
    rng = np.random.default_rng(seed)
    out = [
        merge.PixelCandidate(text="Title", kind=PixelKind.TEXT, box_px=BoxPx(0, 0, 300, 40),
                             confidence=0.9),
        merge.PixelCandidate(text="", kind=PixelKind.IMAGE, box_px=BoxPx(0, 50, 500, 400),
                             confidence=0.5),
    ]
    while len(out) < n:
        size = int(rng.choice([16, 18, 24, 32, 48]))
        x, y = int(rng.integers(0, 1000)), int(rng.integers(0, 2000))
        count = int(rng.integers(1, 6))
        step = size + int(rng.integers(-2, size // 2 + 3))
        across, down = (1, 0) if rng.random() < 0.5 else (0, 1)
        for k in range(count):
            jitter = int(rng.integers(-2, 3))
            left, top = x + k * step * across + jitter, y + k * step * down - jitter
            side = size + int(rng.integers(-2, 3))
            out.append(
                merge.PixelCandidate(
                    text="", kind=PixelKind.ICON, box_px=BoxPx(left, top, left + side, top + side),
                    confidence=round(float(rng.random()), 3),
                )
            )
    return out


@pytest.mark.parametrize("seed", range(12))
def test_icon_grouping_visits_fewer_pairs_and_groups_as_all_pairs(seed: int) -> None:
    cands = _icons(seed, 60 + 40 * seed)
    assert merge._icon_clusters(cands) == _all_pairs_clusters(cands)
    assert merge._icon_rows(cands) == _all_pairs_rows(cands)


def _buttons_frame(k: int) -> np.ndarray:
    """A 1080x2400 screen with three filled buttons, every side ``k`` times as long."""
    img = np.full((2400 * k, 1080 * k, 3), 250, np.uint8)
    for top in (600, 1000, 1400):
        cv2.rectangle(img, (140 * k, top * k), (940 * k, (top + 160) * k), (200, 120, 30), -1)
    return img


def test_anchors_on_a_frame_beyond_a_phones_are_found_on_a_bounded_copy() -> None:
    from perception.pixel import Frame, PixelKind
    from perception.pixel.anchors import find_anchors
    from perception.pixel.flags import frame_flags

    def boxes(k: int) -> list[BoxPx]:
        frame = Frame.from_array(_buttons_frame(k))
        found = find_anchors(frame, frame_flags(frame)[0])
        return sorted((a.box_px for a in found if a.kind is PixelKind.BUTTON), key=lambda b: b.top)

    phone, big = boxes(1), boxes(3)  # 3240x7200: its copy is 720x1600, not 1620x3600
    assert len(phone) == len(big) == 3
    for p, b in zip(phone, big, strict=True):
        assert all(abs(3 * u - v) <= 3 * 8 for u, v in zip(p, b, strict=True)), (p, b)


def test_anchor_max_side_is_checked_and_read_from_the_environment() -> None:
    assert PixelConfig().anchor_max_side_px == 1600
    env = {"PERCEPTION_PIXEL_ANCHOR_MAX_SIDE_PX": "900"}
    assert PixelConfig.from_env(env).anchor_max_side_px == 900
    with pytest.raises(ConfigError, match="anchor_max_side_px"):
        PixelConfig(anchor_max_side_px=10)
