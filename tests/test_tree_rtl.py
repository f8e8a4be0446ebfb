"""Right-to-left text drawn one node per word on a line is one label piece, joined in document
(reading) order, as the mirrored left-to-right layout is; left-to-right text out of visual order
stays as it was (separate pieces). Both twins agree on it (explicit screens through each, and
generated right-to-left lines through the kernels side by side)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _xml import node, screen
from hypothesis import given, settings, strategies as st
from test_tree_parity import both

from perception import ElementFlag, fastpath, read_tree
from perception.tree import Tree

TXT = "android.widget.TextView"
LIN = "android.widget.LinearLayout"


def labels(tree: Tree) -> list[str]:
    """The label of every prompt row, in prompt order."""
    doc = json.loads(tree.to_prompt())
    return [str(row[0] if kind == "text" else row[1]) for kind, group in doc.items()
            for row in group]


def words(*placed: tuple[str, int, int], top: int = 660, bottom: int = 740) -> list[str]:
    """Text nodes in document order, each ``(text, left, right)`` on one line."""
    return [node((left, top, right, bottom), text=text, cls=TXT) for text, left, right in placed]


def line(*kids: str, clickable: bool = False) -> bytes:
    return screen(node((0, 636, 1080, 760), *kids, cls=LIN, clickable=clickable))


# The reviewer's screen (review 18, r5): an Arabic greeting and a Hebrew total, laid out right to
# left, one node per word; and the same words laid out left to right.
ARABIC = (("مرحبا", 700, 1040), ("بكم", 560, 690), ("جميعا", 300, 550))
HEBREW = (("סה״כ:", 760, 1040), ("₪120", 560, 750))


def mirrored(placed: tuple[tuple[str, int, int], ...]) -> tuple[tuple[str, int, int], ...]:
    return tuple((text, 1080 - right, 1080 - left) for text, left, right in placed)


@pytest.mark.parametrize("clickable", [False, True], ids=["static", "in-a-button"])
def test_rtl_words_on_a_line_are_one_piece(pipeline_impl: str, clickable: bool) -> None:
    for placed, joined in ((ARABIC, "مرحبا بكم جميعا"), (HEBREW, "סה״כ: ₪120")):
        assert labels(read_tree(line(*words(*placed), clickable=clickable))) == [joined]
        # the same words laid out left to right read the same (as they did before)
        assert labels(read_tree(line(*words(*mirrored(placed)), clickable=clickable))) == [joined]


def test_ltr_words_out_of_visual_order_stay_apart(pipeline_impl: str) -> None:
    """Left-to-right words placed the mirror way are not a sentence read right to left: they
    stay pieces, as before."""
    placed = (("Hello", 700, 1040), ("to", 560, 690), ("you", 300, 550))
    assert labels(read_tree(line(*words(*placed)))) == ["Hello | to | you"]
    assert labels(read_tree(line(*words(*placed), clickable=True))) == ["Hello | to | you"]


def test_the_first_strong_character_decides(pipeline_impl: str) -> None:
    """A line whose first strong character is left-to-right is read left to right even with
    Hebrew after it; a number alone has no direction, the Hebrew after it gives one; a line
    that is right to left so far keeps going so through an English word and a number."""
    latin_first = (("Total", 700, 1040), ("סה״כ", 560, 690))
    assert labels(read_tree(line(*words(*latin_first)))) == ["Total | סה״כ"]
    number_first = (("120", 700, 1040), ("שקל", 560, 690))
    assert labels(read_tree(line(*words(*number_first)))) == ["120 שקל"]
    numbers_only = (("120", 700, 1040), ("450", 560, 690))
    assert labels(read_tree(line(*words(*numbers_only)))) == ["120 | 450"]
    run = (("شبكة", 800, 1040), ("Wi-Fi", 600, 790), ("HomeNet", 350, 590), ("5", 300, 340))
    assert labels(read_tree(line(*words(*run)))) == ["شبكة Wi-Fi HomeNet 5"]


def test_syriac_thaana_and_nko_read_right_to_left(pipeline_impl: str) -> None:
    for first, second in (("ܫܠܡܐ", "ܥܠܡܐ"), ("ދިވެހި", "ބަސް"), ("ߒߞߏ", "ߞߊ߲")):
        placed = ((first, 700, 1040), (second, 560, 690))
        assert labels(read_tree(line(*words(*placed)))) == [f"{first} {second}"]


def test_overlapping_rtl_boxes_join_without_a_space(pipeline_impl: str) -> None:
    """Glyph boxes that overlap (a word drawn in parts) join as drawn, the mirror of a number
    drawn digit by digit; apart by a space's width they join with a space."""
    touching = (("مر", 900, 1040), ("حبا", 780, 920))
    assert labels(read_tree(line(*words(*touching)))) == ["مرحبا"]
    spaced = (("مر", 900, 1040), ("حبا", 780, 880))
    assert labels(read_tree(line(*words(*spaced)))) == ["مر حبا"]


def test_rtl_words_on_two_lines_or_far_apart_stay_pieces(pipeline_impl: str) -> None:
    two_lines = [node((700, 660, 1040, 740), text="مرحبا", cls=TXT),
                 node((560, 760, 690, 840), text="بكم", cls=TXT)]
    assert labels(read_tree(screen(node((0, 636, 1080, 860), *two_lines, cls=LIN)))) == [
        "مرحبا | بكم"]
    far = (("مرحبا", 700, 1040), ("بكم", 300, 430))
    assert labels(read_tree(line(*words(*far)))) == ["مرحبا | بكم"]


# --- the twins side by side --------------------------------------------------------------------

IMPLS = fastpath.available()
needs_both = pytest.mark.skipif(
    "cython" not in IMPLS, reason="the Cython extension is not built: nothing to compare"
)

# Words of each direction, none, and text of mixed or surprising kinds (bidi marks, combining
# marks, a right-to-left mark before Latin, Arabic-Indic digits, empty).
RTL_TEXT = st.one_of(
    st.sampled_from(["مرحبا", "بكم", "שלום", "סה״כ:", "₪120", "120", "Wi-Fi", "ok", "", " ",
                     "\u200fabc", "\u200eשלום", "١٢٣", "ܫܠܡܐ", "ߒߞߏ", "ދިވެހި", "…", "a\u0301"]),
    st.text(alphabet=st.sampled_from(list("ab 1.") + ["ש", "م", "\u200f", "\u200e", "\u0301",
                                                      "\u4e2d", "\u0660"]), max_size=6),
)


@needs_both
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(RTL_TEXT, st.integers(-30, 20) | st.integers(-40, 40),
                          st.integers(-3, 3), st.sampled_from([False, False, False, True])),
                min_size=1, max_size=8),
       st.integers(1, 5), st.integers(1, 45), st.booleans(), st.booleans())
def test_twins_agree_on_lines_laid_out_right_to_left(
    texts: list[tuple[str, int, int, bool]], pieces: int, chars: int, clickable: bool,
    leftward: bool,
) -> None:
    """Texts side by side on a line, laid out to the left (or to the right) with gaps,
    overlaps and slight offsets, under a clickable row or free: the same elements, label
    nodes (which continue the piece before them) and labels in both twins."""
    n = len(texts) + 1
    parent = np.array([-1] + [0] * len(texts), dtype=np.int32)
    boxes, edge = [[0, 0, 1080, 200]], 1070 if leftward else 10
    for _, gap, dy, _ in texts:
        if leftward:
            boxes.append([edge - 60, 50 + dy, edge, 110 + dy])
            edge -= 60 + gap
        else:
            boxes.append([edge, 50 + dy, edge + 60, 110 + dy])
            edge += 60 + gap
    bits = [(int(ElementFlag.CLICKABLE) if clickable else 0) | fastpath.B_HAS_BOUNDS]
    strings = ["", "", "", LIN, "app", ""]
    for text, _, _, described in texts:
        bits.append(fastpath.B_HAS_BOUNDS | (fastpath.B_HAS_TEXT if text.strip() else 0)
                    | (fastpath.B_HAS_DESC if described else 0))
        strings += [text, "desc" if described else "", "", TXT, "app", ""]
    clip, out_bits, owner, _, end = both(  # type: ignore[misc]
        "tree_structure", parent, np.array(boxes, dtype=np.int32),
        np.array(bits, dtype=np.int32), np.full(n, -1, np.int32), 1080, 2400
    )
    both("tree_elements", parent, clip, out_bits, owner, end, 1080, pieces, 1 << 40, 1 << 40,
         strings, chars, 4)
