"""Stage 5: compress. The compact JSON the decision model reads.

Schema (short keys, empty fields omitted), elements grouped by kind::

    {"app": "com.example",                        # package of the screen, when known
     "kbd": "l t r b",                            # the on-screen keyboard, when it is up
     "btn": [[id, "label", "l t r b", "flags"?], ...],
     "input": [...], "switch": [...], ...         # one key per kind present, in screen order
     "text": [["label", "l t r b", "sel"?], ...], # static text: context, nothing to tap
     "ocr": [[id, "label", "l t r b"], ...]}      # observations: text only the pixels show

Kinds: btn, input, check, switch, radio, tab (a tab item), select, slider, list (scrollable,
or a list class that takes taps), web, img, view, text. An actionable row carries the integer
``id`` to tap by (stable within the screen), its label (own and absorbed text, pieces joined by
`` | ``; ``[resource_id]`` for an unlabelled icon, unless the id was shrunk to under four
characters), its box on the 0-1000 grid as one string ``"left top right bottom"`` (half the
tokens of a JSON array), and a flags string only when some are set: ``disabled``, ``on``
checked, ``sel`` selected, ``foc`` focused,
``pw`` password, ``long`` long-clickable only, ``scroll`` scrollable, ``cut`` partly
off-screen, ``+N`` N more similar list items follow, not shown.
Static text rows have no id (nothing to tap) and only the state flags ``sel`` and ``on`` (the
current tab of a bar whose selected tab is not clickable). Grouping by kind saves the kind on
every row. The id-only form (``coords=False``) drops the boxes. Occluded elements, hidden list
items, slivers of rows scrolled almost out of their list, a static element inside a static
element that says the same, static rows of punctuation alone and the outer of two scrollable
lists with one box are not offered (see :mod:`perception.tree.cluster`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from perception.geometry import box_pm_texts
from perception.types import ACTIONABLE, BoxPm, BoxPx, ElementFlag, ScreenSize, TreeElement

MIN_RID_CHARS = 4

_FLAG_WORDS = tuple(
    (int(flag), word)
    for flag, word in (
        (ElementFlag.DISABLED, "disabled"),
        (ElementFlag.CHECKED, "on"),
        (ElementFlag.SELECTED, "sel"),
        (ElementFlag.FOCUSED, "foc"),
        (ElementFlag.PASSWORD, "pw"),
        (ElementFlag.LONG_CLICKABLE, "long"),
        (ElementFlag.SCROLLABLE, "scroll"),
        (ElementFlag.PARTLY_OFFSCREEN, "cut"),
    )
)
_WORD_MASK = sum(flag for flag, _ in _FLAG_WORDS)
_CLICKABLE = int(ElementFlag.CLICKABLE)
_LONG_CLICKABLE = int(ElementFlag.LONG_CLICKABLE)
_ACTIONABLE = int(ACTIONABLE)
# What a static row still says: which tab or item is the current one.
_STATE = int(ElementFlag.SELECTED | ElementFlag.CHECKED)


def flag_words(flags: int, more: int = 0, extra: Iterable[str] = ()) -> str:
    """The flags string of a row ("" when none is set)."""
    if flags & _CLICKABLE:
        flags &= ~_LONG_CLICKABLE
    words = [word for flag, word in _FLAG_WORDS if flags & flag] if flags & _WORD_MASK else []
    if more:
        words.append(f"+{more}")
    words.extend(extra)
    return " ".join(words)


def label(element: TreeElement) -> str:
    return label_of(element.text, element.resource_id)


def label_of(text: str, resource_id: str) -> str:
    if text:
        return text
    # Shrunk resource names (R8 turns ids into two or three letters) tell the model nothing.
    return f"[{resource_id}]" if len(resource_id) >= MIN_RID_CHARS else ""


STATIC_KINDS = frozenset({"text", "img", "view"})
STATIC_KEY = "text"
PIXEL_TEXT_KEY = "ocr"
"""The group of text lines read off the pixels that no tree element holds (observations only):
rows with an id like any candidate's, since without a tree nothing says they are static."""


def is_static_kind(kind: str, flags: int) -> bool:
    """Nothing to tap: shown as context without an id."""
    return kind in STATIC_KINDS and not flags & _ACTIONABLE


def make_row(
    element_id: int | None, text: str, box: BoxPm | str | None, words: str = ""
) -> list[object]:
    """One prompt row: ``[id, label, "l t r b", flags]``, id left out for static text, box for
    the id-only form, flags when empty. The one place that lays a row out. ``box`` is a grid
    box or its string (:func:`perception.geometry.box_pm_texts`)."""
    row: list[object] = [] if element_id is None else [element_id]
    row.append(text)
    if box is not None:
        row.append(box if isinstance(box, str) else "%d %d %d %d" % box)  # noqa: UP031
    if words:
        row.append(words)
    return row


def _row(
    element: TreeElement, flags: int, box: str | None
) -> tuple[str, list[object]]:
    """The group key and the row of one element."""
    if is_static_kind(element.kind, flags):
        state = flags & _STATE
        return STATIC_KEY, make_row(None, label(element), box, flag_words(state) if state else "")
    return element.kind, make_row(
        element.id,
        label(element),
        box,
        flag_words(flags, element.more) if flags & _WORD_MASK or element.more else "",
    )


def add_row(doc: dict[str, object], key: str, row: list[object]) -> None:
    """Append a row to its kind's group (groups keep screen order of first appearance)."""
    rows = doc.get(key)
    if rows is None:
        doc[key] = [row]
    else:
        rows.append(row)  # type: ignore[attr-defined]


# Chat templates mark turns with tokens spelled as text: "<|im_end|>", "<|eot_id|>", "</s>",
# "<start_of_turn>", "[INST]". A server that applies the template to user text with a Hugging Face
# tokenizer (vLLM, TGI, llama.cpp and others behind an OpenAI-compatible API) may read those as
# the real control tokens, and a screen could then end the user's turn and write one of its own
# (a chat app showing model output does exactly that: ../shared/corpus/dumps/Nora__chat_dump.xml).
# JSON may write any character as a \u escape and reads it back the same, so the prompt writes
# every "<", and the "[" of an all-caps bracket word, escaped: no tokenizer sees a control token
# and json.loads returns the screen's text unchanged. Outside strings our JSON has neither.
_CONTROL_BRACKET = re.compile(r"\[(?=/?[A-Z][A-Z0-9_]{2,}\])")


def dumps(doc: dict[str, object]) -> str:
    """Compact JSON for a model: control-token spellings in the text neutralised, losslessly."""
    encoded = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
    if "<" in encoded:
        encoded = encoded.replace("<", "\\u003c")
    return _CONTROL_BRACKET.sub("\\\\u005b", encoded)


def to_prompt(
    elements: Iterable[TreeElement],
    *,
    screen: ScreenSize,
    package: str = "",
    coords: bool = True,
    keyboard: BoxPx | None = None,
) -> str:
    doc: dict[str, object] = {}
    if package:
        doc["app"] = package
    if keyboard is not None:
        doc[KEYBOARD_KEY] = box_pm_texts([keyboard], screen)[0] if coords else True
    items = tuple(elements)
    boxes = box_pm_texts([e.box_px for e in items], screen) if coords else [None] * len(items)
    for e, box in zip(items, boxes, strict=True):
        add_row(doc, *_row(e, int(e.flags), box))
    return dumps(doc)


class PromptRow(NamedTuple):
    """A row read back from a prompt (for agents and tests that inspect what the model saw)."""

    kind: str
    id: int | None
    label: str
    box_pm: BoxPm | None
    flags: str


def iter_rows(doc: dict[str, object]) -> Iterator[PromptRow]:
    """The element rows of a decoded prompt (tree or observation), group by group."""
    for key, rows in doc.items():
        if not isinstance(rows, list) or key in HEADER_KEYS:
            continue
        for row in rows:
            items = list(row)
            element_id = None if key == STATIC_KEY else int(items.pop(0))
            text = str(items.pop(0))
            box = None
            if items and _BOX.fullmatch(str(items[0])):
                box = BoxPm(*(int(v) for v in str(items.pop(0)).split()))
            yield PromptRow(key, element_id, text, box, str(items[0]) if items else "")


KEYBOARD_KEY = "kbd"
"""The on-screen keyboard's box (``true`` in the id-only form), when the dump holds it: its
keys are not rows (see :mod:`perception.tree.keyboard`)."""
HEADER_KEYS = frozenset(
    {"state", "screen", "warn", "loop", "ops", "recapture", "why", "app", KEYBOARD_KEY}
)
_BOX = re.compile(r"-?\d+ -?\d+ -?\d+ -?\d+")
