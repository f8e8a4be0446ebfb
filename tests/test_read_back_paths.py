"""The read-back's shortcuts say what the long way says: read_back_contradicted on a label said
word for word, against the function as it was."""

from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from perception.fusion.crossval import (
    NUMBERS_CLEARLY_DIFFER,
    normalise_text,
    read_back_contradicted,
    read_back_tally,
)

_NUMBER_RUN = re.compile(r"\d+")


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
