"""The read-back's shortcuts say what the long way says: read_back_contradicted on a label said
word for word, against the function as it was; read_back_sample's passes in one kernel
(fusion_read_back_pick), both twins alike (tests/test_fusion_columns.py checks the choice
against read_back_sample as it was); fusion_line_boxes' two sorts."""

from __future__ import annotations

import gc
import re
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from perception import fastpath
from perception.fusion.crossval import (
    NUMBERS_CLEARLY_DIFFER,
    normalise_text,
    read_back_contradicted,
    read_back_tally,
)

_NUMBER_RUN = re.compile(r"\d+")
IMPLS = fastpath.available()
needs_both = pytest.mark.skipif(len(IMPLS) < 2, reason="compiled extension not built")


def _contradicted_before(labels: list[str], read: list[str]) -> list[bool]:
    """read_back_contradicted as it was: every pair normalised and its digits compared."""
    out: list[bool] = []
    for label, text in zip(labels, read, strict=True):
        ours, theirs = normalise_text(label), normalise_text(text)
        ours_digits = "".join(_NUMBER_RUN.findall(ours))
        theirs_digits = "".join(_NUMBER_RUN.findall(theirs))
        if (
            not ours_digits
            or not theirs_digits
            or _NUMBER_RUN.sub("", ours) != _NUMBER_RUN.sub("", theirs)
        ):
            out.append(False)
            continue
        differ = abs(len(ours_digits) - len(theirs_digits)) + sum(
            a != b for a, b in zip(ours_digits, theirs_digits, strict=False)
        )
        out.append(differ >= NUMBERS_CLEARLY_DIFFER)
    return out


_texts = st.text(
    st.sampled_from(list("ab Z7 0:./-") + ["²", "٣", "一", "①", "…", "Ｑ", "1", "9"]), max_size=16
)


@given(
    pairs=st.lists(
        st.one_of(
            _texts.map(lambda t: (t, t)),  # said word for word
            st.tuples(_texts, _texts),
        ),
        max_size=6,
    )
)
@settings(max_examples=400, deadline=None)
def test_read_back_contradicted_as_before(pairs: list[tuple[str, str]]) -> None:
    labels = [label for label, _ in pairs]
    read = [text for _, text in pairs]
    assert read_back_contradicted(labels, read) == _contradicted_before(labels, read)


def test_read_back_tally_of_labels_said_word_for_word() -> None:
    labels = ["Item 102 label", "Balance 128.98GB", "截至 2025/08/13 19:44", "…", "", "OK"]
    assert read_back_contradicted(labels, labels) == [False] * len(labels)
    ok, agreed = read_back_tally(labels, labels, [True] * len(labels))
    # A label with no letters or digits ("…") or none at all says nothing back.
    assert ok == [True, True, True, False, False, True] and agreed == 4
    said = ["Item 102 label", "Balance 130.38GB", "截至 2025/08/13 14:20", "…", "", "OK"]
    assert read_back_contradicted(labels, said) == [False, True, True, False, False, False]


_label = st.lists(
    st.sampled_from(list("ab Z7 0[|") + ["²", "٣", "一", "ℵ", "Ж", " | ", "①", "Ｑ"]),
    max_size=30,
).map("".join)


@needs_both
@given(
    rows=st.lists(st.tuples(st.sampled_from(["text", "btn", "tab", "img"]), _label), max_size=40),
    data=st.data(),
    samples=st.integers(0, 5),
    numbers_first=st.integers(0, 3),
    digits=st.integers(0, 4),
)
@settings(max_examples=300, deadline=None)
def test_read_back_pick_parity(
    rows: list[tuple[str, str]],
    data: st.DataObject,
    samples: int,
    numbers_first: int,
    digits: int,
) -> None:
    n = len(rows)
    kinds = [k for k, _ in rows]
    texts = [t for _, t in rows]
    order = data.draw(st.permutations(range(n))) if n else []
    order = order[: data.draw(st.integers(0, n))]
    hidden = frozenset(data.draw(st.sets(st.integers(0, max(n, 1)), max_size=4)))
    refused = frozenset(data.draw(st.sets(st.integers(0, max(n, 1)), max_size=4)))
    results = []
    for mod in IMPLS.values():
        asked: list[int] = []

        def worth(i: int, asked: list[int] = asked) -> bool:
            asked.append(i)  # which labels got this far, in what order
            return i not in refused

        got = mod.fusion_read_back_pick(
            list(order), kinds, texts, hidden, worth, 3, 24, samples, numbers_first, digits
        )
        results.append((got, asked))
    assert all(r == results[0] for r in results[1:])


def test_read_back_pick_inputs(fastpath_impl: ModuleType) -> None:
    pick = fastpath_impl.fusion_read_back_pick
    with pytest.raises(ValueError):
        pick([0], ["text"], ["a", "b"], (), bool, 1, 24, 4, 2, 3)
    with pytest.raises(IndexError):
        pick([2], ["text", "btn"], ["abc", "abd"], (), bool, 1, 24, 4, 2, 3)
    with pytest.raises(TypeError):
        pick([0], ["text"], [None], (), bool, 1, 24, 4, 2, 3)
    # Numbers first (static text, then the rest), then any: "Item 102" and "Call 1234" before
    # "Name", however tall; a repeated label once; a hidden one never.
    kinds = ["text", "btn", "text", "text", "btn", "text"]
    texts = ["Name", "Call 1234", "Item 102", "Item 102", "Help", "Total 300"]
    got = pick([0, 1, 2, 3, 4, 5], kinds, texts, frozenset({5}), lambda i: True, 3, 24, 4, 2, 3)
    assert got == [2, 1, 0, 4]


def _line_boxes_before(
    boxes: np.ndarray, flags: np.ndarray, width: int, height: int, low: int, high: int
) -> list[int]:
    """What read_back_sample took before the kernel: numpy over the rows, a stable argsort."""
    b = boxes.astype(np.int64)
    heights = b[:, 3] - b[:, 1]
    ok = (
        (heights >= low) & (heights <= high) & (b[:, 0] >= 0) & (b[:, 1] >= 0)
        & (b[:, 2] <= width) & (b[:, 3] <= height) & ((flags & 2) == 0)
        & ((b[:, 2] - b[:, 0]) * 2 >= heights * 3)
    )
    idx = np.flatnonzero(ok)
    out: list[int] = idx[np.argsort(-heights[idx], kind="stable")].tolist()
    return out


@given(
    boxes=hnp.arrays(
        np.int32,
        st.tuples(st.integers(0, 40), st.just(4)),
        elements=st.integers(min_value=-50, max_value=3000),
    ),
    bits=st.lists(st.integers(0, 3), min_size=40, max_size=40),
    height=st.sampled_from([0, 40, 2400, 3000, 2**31 - 1]),
    low=st.sampled_from([-(2**63), -3000, 0, 12, 15, 1200]),
    high=st.sampled_from([11, 270, 2000, 2**40, 2**63 - 1]),
)
@settings(max_examples=300, deadline=None)
def test_line_boxes_both_sorts(
    boxes: np.ndarray, bits: list[int], height: int, low: int, high: int
) -> None:
    # Heights from low to min(high, height) counted when they are few (a frame's lines), by
    # qsort when many (a huge frame or bounds): the same order either way, as before.
    flags = np.array(bits[: len(boxes)], dtype=np.int64)
    expected = _line_boxes_before(boxes, flags, 3000, height, low, high)
    for mod in IMPLS.values():
        assert mod.fusion_line_boxes(boxes, flags, 2, 3000, height, low, high) == expected


def test_line_boxes_of_a_long_list(fastpath_impl: ModuleType) -> None:
    # Two thousand rows (indices past the small ints Python keeps), a tall one first: the same
    # order as before, and the list's items its own (collected and used again afterwards).
    rows = [[0, 0, 1080, 80]] + [
        [(i % 20) * 54, 100 + (i // 20) * 22, (i % 20) * 54 + 50, 100 + (i // 20) * 22 + 16]
        for i in range(2000)
    ]
    boxes = np.array(rows, np.int32)
    flags = np.zeros(len(boxes), np.int64)
    flags[7] = 2
    expected = _line_boxes_before(boxes, flags, 1080, 2400, 15, 270)
    for _ in range(3):
        got = fastpath_impl.fusion_line_boxes(boxes, flags, 2, 1080, 2400, 15, 270)
        assert got == expected and len(got) == 2000
    del got
    gc.collect()
    assert sum(fastpath_impl.fusion_line_boxes(boxes, flags, 2, 1080, 2400, 15, 270)) == sum(
        expected
    )
