"""The first-sight fusion's shortcuts give what the long way gives: recommend() fed the drafts'
box and flag arrays, the splash test that rules out a screen with a button first, and
read_back_sample's choice (digits counted first, the script regex skipped on ASCII, the line
boxes found by one kernel) against the choice as it was made before."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import given, settings, strategies as st

from perception.fusion.crossval import (
    NUMBER_DIGITS,
    READ_BACK_CHARS,
    READ_BACK_HEIGHT,
    READ_BACK_NUMBERS,
    READ_BACK_SAMPLES,
    read_back_sample,
)
from perception.fusion.screen import recommend
from perception.fusion.table import ElementTable, boxes_array, flag_bits
from perception.types import BoxPx, ElementFlag, ScreenSize, TreeElement
from tests._candidates import INFO, ad_page, element, tree_candidates

CLICK = ElementFlag.CLICKABLE


def _with_columns(candidates: list, **kw: object) -> list:
    boxes = boxes_array([c.box_px for c in candidates])
    flags = flag_bits([c.flags for c in candidates])
    return recommend(candidates, INFO, boxes=boxes, flags=flags, **kw)


def test_recommend_with_the_drafts_columns_says_the_same() -> None:
    # A long page (fifty rows to tap) part of which a panel with a close covers.
    covered = tree_candidates(
        element(1, "text", "Your feed", (0, 300, 1080, 400), ElementFlag.OCCLUDED),
        *(
            element(i, "btn", f"Row {i}", (0, 30 * i + 200, 1080, 30 * i + 225), CLICK)
            for i in range(10, 60)
        ),
        element(2, "btn", "Close", (900, 2100, 1040, 2200), CLICK),
    )
    splash = tree_candidates(
        element(1, "img", "", (300, 800, 780, 1200)),
        element(2, "text", "Chatter", (300, 1300, 780, 1400)),
    )
    pages = [ad_page("startapp"), ad_page("Help Center"), covered, splash]
    for candidates in pages:
        for hints in ("", "com.startapp:id/splash"):
            assert _with_columns(candidates, hints=hints) == recommend(
                candidates, INFO, hints=hints
            )
    # The columns are read: flags that say "covered" make the close below the bar obvious.
    assert [op.kind.value for op in recommend(covered, INFO)] == ["dismiss"]
    no_cover = flag_bits([int(c.flags) & ~int(ElementFlag.OCCLUDED) for c in covered])
    assert recommend(covered, INFO, flags=no_cover) == []


def test_a_splash_with_a_button_is_no_splash() -> None:
    splash = tree_candidates(
        element(1, "img", "Logo", (300, 800, 780, 1200)),
        element(2, "text", "Chatter", (300, 1300, 780, 1400)),
    )
    with_button = tree_candidates(
        element(1, "img", "Logo", (300, 800, 780, 1200)),
        element(2, "text", "Chatter", (300, 1300, 780, 1400)),
        element(3, "btn", "Start", (300, 1500, 780, 1600), CLICK),
    )
    assert [op.kind.value for op in recommend(splash, INFO)] == ["wait"]
    assert [op.kind.value for op in recommend(with_button, INFO)] == []


# --- read_back_sample against its earlier self ---------------------------------------------

_SCRIPT = re.compile(
    "[\u0000-\u024f\u1e00-\u1eff\u2000-\u206f\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]*"
)
_UNREADABLE = int(ElementFlag.OCCLUDED | ElementFlag.PASSWORD)


def _sample_before(
    table: ElementTable, hidden: frozenset[int], frame: ScreenSize
) -> list[int]:
    """read_back_sample as it was before the kernel and the reordered tests."""
    if len(table) == 0:
        return []
    boxes = table.box_array
    heights = boxes[:, 3] - boxes[:, 1]
    width = frame.width_px
    ok = (
        (heights >= max(12, width // READ_BACK_HEIGHT[0]))
        & (heights <= width // READ_BACK_HEIGHT[1])
        & (boxes[:, 0] >= 0) & (boxes[:, 1] >= 0)
        & (boxes[:, 2] <= width) & (boxes[:, 3] <= frame.height_px)
        & ((table.flag_array & _UNREADABLE) == 0)
    )
    ok &= (boxes[:, 2] - boxes[:, 0]) * 2 >= heights * 3
    idx = np.flatnonzero(ok)
    tallest_first = idx[np.argsort(-heights[idx], kind="stable")].tolist()

    def worth(kind: str, text: str, class_name: str) -> bool:
        shortest, longest = READ_BACK_CHARS
        return (
            kind in {"text", "btn", "tab"}
            and shortest <= len(text) <= longest
            and text[0] != "["
            and _SCRIPT.fullmatch(text) is not None
            and "Image" not in class_name
            and "Edit" not in class_name
        )

    picked: list[int] = []
    labels: set[str] = set()
    for numbers, static in ((True, True), (True, False), (False, True), (False, False)):
        if numbers and len(picked) == READ_BACK_NUMBERS:
            continue
        for i in tallest_first:
            if (table.kinds[i] == "text") is not static or i in hidden:
                continue
            text = table.texts[i]
            if (
                " | " in text
                or text in labels
                or not worth(table.kinds[i], text, table.elements[i].class_name)
                or (numbers and sum(map(str.isdigit, text)) < NUMBER_DIGITS)
            ):
                continue
            labels.add(text)
            picked.append(i)
            if len(picked) == READ_BACK_SAMPLES:
                return picked
            if numbers and len(picked) == READ_BACK_NUMBERS:
                break
    return picked


_texts = st.lists(
    st.sampled_from(list("ab Z7 0[|") + ["²", "٣", "一", "ℵ", "Ж", " | ", "①", "Ｑ"]),
    max_size=30,
).map("".join)
_element = st.tuples(
    st.sampled_from(["text", "btn", "tab", "img", "input"]),
    _texts,
    st.integers(-20, 1100),
    st.integers(-20, 2400),
    st.integers(0, 600),
    st.integers(0, 300),
    st.sampled_from([0, int(CLICK), int(ElementFlag.OCCLUDED), int(ElementFlag.PASSWORD)]),
    st.sampled_from(["", "android.widget.ImageView", "android.widget.EditText", "TextView"]),
)


@given(rows=st.lists(_element, max_size=40), hidden=st.sets(st.integers(0, 40), max_size=5))
@settings(max_examples=300, deadline=None)
def test_read_back_sample_picks_what_it_picked_before(rows: list, hidden: set[int]) -> None:
    elements = [
        TreeElement(
            id=i, kind=kind, text=text, box_px=BoxPx(x, y, x + w, y + h),
            flags=ElementFlag(flags), class_name=cls,
        )
        for i, (kind, text, x, y, w, h, flags, cls) in enumerate(rows)
    ]
    frame = ScreenSize(1080, 2400)
    table = ElementTable(elements)
    expected = _sample_before(ElementTable(elements), frozenset(hidden), frame)
    assert read_back_sample(table, hidden=frozenset(hidden), frame_size=frame) == expected
