"""recommend's word search over a page's labels (screen._READ): the prefix-tree pattern finds
exactly the labels a plain alternation of the vocabulary finds."""

from __future__ import annotations

import re

from hypothesis import given, settings, strategies as st

from perception.fusion import screen
from perception.fusion.crossval import normalise_texts

WORDS = sorted(w for w in screen._READ_WORDS if len(w) > 1)
PLAIN = re.compile("|".join(map(re.escape, sorted(WORDS, key=len, reverse=True))))


def test_any_of_keeps_the_shortest_of_words_sharing_a_start() -> None:
    pattern = re.compile(screen._any_of(["okay", "ok", "cancel", "can", "a.b", "a+b", "ok"]))
    assert pattern.pattern == "(?:a(?:\\+b|\\.b)|can|ok)"
    for text, found in (("okay", True), ("tok", True), ("scan", True), ("a.b", True),
                        ("axb", False), ("o k", False), ("", False)):
        assert (pattern.search(text) is not None) is found, text


label = st.lists(
    st.one_of(st.sampled_from(WORDS), st.text(max_size=6)), max_size=4
).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(label, max_size=30))
def test_the_labels_found_are_those_a_plain_alternation_finds(texts: list[str]) -> None:
    norms = normalise_texts(texts)
    assert screen._indices(screen._READ, norms) == screen._indices(PLAIN, norms)
