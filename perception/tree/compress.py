"""Stage 5: compress. The compact JSON the decision model reads.

Schema (short keys, empty fields omitted), elements grouped by kind::

    {"app": "com.example",                        # package of the screen, when known
     "kbd": "l t r b",                            # the on-screen keyboard, when it is up
     "btn": [[id, "label", "x y", "flags"?], ...],
     "list": [[id, "label", "l t r b", "scroll"]], # lists, web views, scrollables: the box
     "slider": [[id, "label", "l t r b"]],        # sliders: the box too
     "input": [...], "switch": [...], ...         # one key per kind present, in screen order
     "text": [["label", "x y", "sel"?], ...],     # static text: context, nothing to tap
     "ocr": [[id, "label", "x y"], ...]}          # observations: text only the pixels show

Kinds: btn, input, check, switch, radio, tab (a tab item), select, slider, list (scrollable,
or a list class that takes taps), web, img, view, text. An actionable row carries the integer
``id`` to tap by (stable within the screen), its label (own and absorbed text, pieces joined by
`` | ``; ``[resource_id]`` for an unlabelled icon, unless the id was shrunk to under four
characters), where it is on the 0-1000 grid as one string, and a flags string only when some
are set: ``disabled``, ``on`` checked, ``sel`` selected, ``foc`` focused,
``pw`` password, ``long`` long-clickable only, ``scroll`` scrollable, ``cut`` partly
off-screen, ``+N`` N more similar list items follow, not shown.
A screen holds at most ``max_rows`` rows (:class:`perception.config.TreeConfig`; the app decides
how many it draws, a 48,000-cell grid would be a 1.3 MB prompt): past it the rows
:func:`over_budget` picks are left out like truncated list items and ``"more": N`` above the
rows says how many.
Where: the centre ``"x y"`` (the point a tap on it lands on), or for a list, a web view and
anything scrollable the whole box ``"left top right bottom"`` (swipes go inside it, and what
lies in it belongs to it), and for a slider its box (where along it to tap or drag). A centre
costs 3 tokens against a box's 7; on the original dumps of the corpus that is a quarter of
the prompt (median 250 -> 191 tokens). One string, not a JSON array: half the tokens.
Static text rows have no id (nothing to tap) and only the state flags ``sel`` and ``on`` (the
current tab of a bar whose selected tab is not clickable). Grouping by kind saves the kind on
every row. The id-only form (``coords=False``) drops the places, writes a static row without
flags as its bare label and an unlabelled row without flags as ``[id]``. Occluded elements,
hidden list items, slivers of rows scrolled almost out of their list, a static element inside a
static element that says the same, static rows of punctuation alone and the outer of two
scrollable lists with one box are not offered (see :mod:`perception.tree.cluster`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import NamedTuple

from perception.geometry import box_pm_text, box_px_to_pm, place_texts
from perception.types import (
    ACTIONABLE,
    BoxPm,
    BoxPx,
    ElementFlag,
    PointPm,
    ScreenSize,
    TreeElement,
)

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
_SCROLLABLE = int(ElementFlag.SCROLLABLE)
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
BOX_KINDS = frozenset({"list", "web", "slider"})
STATIC_KEY = "text"
PIXEL_TEXT_KEY = "ocr"
"""The group of text lines read off the pixels that no tree element holds (observations only):
rows with an id like any candidate's, since without a tree nothing says they are static."""


def is_static_kind(kind: str, flags: int) -> bool:
    """Nothing to tap: shown as context without an id."""
    return kind in STATIC_KINDS and not flags & _ACTIONABLE


def shows_box(kind: str, flags: int) -> bool:
    """Does the row give its whole box (a list, a web view, anything that scrolls: the model
    picks swipe points inside it and reads what lies in it), not just its centre?"""
    return kind in BOX_KINDS or bool(flags & _SCROLLABLE)


def place_text(box: BoxPx, screen: ScreenSize, kind: str, flags: int) -> str:
    """Where a row sits on the 0-1000 grid: its box or the point a tap on it lands on
    (:func:`shows_box`, :func:`perception.geometry.place_texts`)."""
    return place_texts([box], screen, [shows_box(kind, flags)])[0]


def state_words(flags: int) -> str:
    """The flags a static row still shows: ``sel`` and ``on`` (which tab or item is the
    current one), "" when neither is set."""
    state = flags & _STATE
    return flag_words(state) if state else ""


def make_row(
    element_id: int | None, text: str, place: str | None, words: str = ""
) -> object:
    """One prompt row: ``[id, label, place, flags]``, id left out for static text, flags when
    none is set. ``place`` (:func:`place_text`) is None in the id-only form, which also leaves
    out an empty label when no flag follows (``[id]``) and writes a static row without flags as
    its bare label. The one place that lays a row out."""
    if place is None and not words:
        if element_id is None:
            return text
        if not text:
            return [element_id]
    row: list[object] = [] if element_id is None else [element_id]
    row.append(text)
    if place is not None:
        row.append(place)
    if words:
        row.append(words)
    return row


def add_row(doc: dict[str, object], key: str, row: object) -> None:
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


_ENCODE = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), check_circular=False
).encode
"""``json.dumps(doc, ensure_ascii=False, separators=(",", ":"))`` without building an encoder
for every prompt, and without the check for circular references (a fifth of the encoding:
an id kept and dropped for every row): a prompt's document is built fresh by
:func:`to_prompt`, rows of strings and ints, and refers to nothing twice."""


def dumps(doc: dict[str, object], brackets: bool = True) -> str:
    """Compact JSON for a model: control-token spellings in the text neutralised, losslessly.
    ``brackets=False``: the caller knows no text of ``doc`` holds a ``[`` (no bracket word to
    look for: the regex's pass over the whole prompt is left out)."""
    encoded = _ENCODE(doc)
    if "<" in encoded:
        encoded = encoded.replace("<", "\\u003c")
    return _CONTROL_BRACKET.sub("\\\\u005b", encoded) if brackets else encoded


def to_prompt(
    elements: Iterable[TreeElement],
    *,
    screen: ScreenSize,
    package: str = "",
    coords: bool = True,
    keyboard: BoxPx | None = None,
    left_out: int = 0,
) -> str:
    """The prompt of ``elements`` (all shown); ``left_out`` rows past the row budget are
    counted under ``"more"``."""
    doc: dict[str, object] = {}
    if package:
        doc["app"] = package
    if keyboard is not None:
        doc[KEYBOARD_KEY] = box_pm_text(box_px_to_pm(keyboard, screen)) if coords else True
    if left_out:
        doc[MORE_KEY] = left_out
    items = tuple(elements)
    flags = [int(e.flags) for e in items]
    places: Sequence[str | None] = (
        place_texts(
            [e.box_px for e in items],
            screen,
            [
                e.kind in BOX_KINDS or bool(f & _SCROLLABLE)  # shows_box
                for e, f in zip(items, flags, strict=True)
            ],
        )
        if coords
        else [None] * len(items)
    )
    # Each row grouped as add_row does, with is_static_kind, label and state_words inlined:
    # this runs for every row of every prompt.
    brackets = "[" in package  # a "[" in some text: the bracket words are looked for (dumps)
    for e, f, place in zip(items, flags, places, strict=True):
        kind = e.kind
        text = e.text or label_of("", e.resource_id)
        if "[" in text:
            brackets = True
        if kind in STATIC_KINDS and not f & _ACTIONABLE:
            key = STATIC_KEY
            row = make_row(None, text, place, flag_words(f & _STATE) if f & _STATE else "")
        else:
            key = kind
            more = e.more
            row = make_row(e.id, text, place, flag_words(f, more) if f & _WORD_MASK or more else "")
        rows = doc.get(key)
        if rows is None:
            doc[key] = [row]
        else:
            rows.append(row)  # type: ignore[attr-defined]
    return dumps(doc, brackets)


_KEEP_FLAGS = int(
    ElementFlag.FOCUSED | ElementFlag.SELECTED | ElementFlag.CHECKED | ElementFlag.EDITABLE
    | ElementFlag.SCROLLABLE
)
_KEEP_KINDS = frozenset({"input", "list", "web", "tab"})
SHAPE_PX = 8
"""Rows of one kind whose width and height fall in the same steps of this many pixels have one
shape (the cells of a grid, the items of a list)."""


def over_budget(
    kinds: Sequence[str],
    flags: Sequence[int],
    boxes: Sequence[BoxPx],
    max_rows: int,
    keep: Collection[int] = (),
) -> list[int]:
    """The positions of the rows to leave out so that ``max_rows`` remain (none when they fit),
    in ascending order.

    What an agent needs stays: rows that hold state or take text (focused, selected, checked,
    inputs), what scrolls (lists, web views), tabs and the positions in ``keep`` go last. The
    rest go by shape (kind and size in :data:`SHAPE_PX` steps): the row that is the k-th of its
    shape in screen order goes before any that is the (k-1)-th of its own, so the densest
    repeated shape loses its tail first and a shape with few rows (a title, a dialog's buttons,
    a navigation bar, a large target) keeps them all. Among rows as far down their shapes, the
    smaller box goes first, then the later one. Pure Python over plain values: the same in both
    fastpath modes."""
    n = len(kinds)
    if n <= max_rows:
        return []
    keep = frozenset(keep)
    seen: dict[tuple[str, int, int], int] = {}
    order = []
    for i, (kind, f, b) in enumerate(zip(kinds, flags, boxes, strict=True)):
        w, h = b.right - b.left, b.bottom - b.top
        shape = (kind, w // SHAPE_PX, h // SHAPE_PX)
        rank = seen.get(shape, 0)
        seen[shape] = rank + 1
        kept = kind in _KEEP_KINDS or bool(f & _KEEP_FLAGS) or i in keep
        order.append((kept, -rank, w * h, -i))
    order.sort()
    return sorted(-key[3] for key in order[: n - max_rows])


class PromptRow(NamedTuple):
    """A row read back from a prompt (for agents and tests that inspect what the model saw)."""

    kind: str
    id: int | None
    label: str
    point_pm: PointPm | None
    """The row's centre on the grid (None in the id-only form)."""
    box_pm: BoxPm | None
    """Its whole box, for the rows that give it (:func:`shows_box`)."""
    flags: str


def iter_rows(doc: dict[str, object]) -> Iterator[PromptRow]:
    """The element rows of a decoded prompt (tree or observation), group by group."""
    for key, rows in doc.items():
        if not isinstance(rows, list) or key in HEADER_KEYS:
            continue
        for row in rows:
            items = [row] if isinstance(row, str) else list(row)
            element_id = None if key == STATIC_KEY else int(items.pop(0))
            text = str(items.pop(0)) if items else ""
            point = box = None
            if items and _PLACE.fullmatch(str(items[0])):
                v = [int(n) for n in str(items.pop(0)).split()]
                if len(v) == 4:
                    box = BoxPm(*v)
                    point = PointPm((v[0] + v[2]) // 2, (v[1] + v[3]) // 2)
                else:
                    point = PointPm(*v)
            yield PromptRow(key, element_id, text, point, box, str(items[0]) if items else "")


MORE_KEY = "more"
"""How many rows the screen has past the prompt's row budget, not shown (:func:`over_budget`)."""
KEYBOARD_KEY = "kbd"
"""The on-screen keyboard's box (``true`` in the id-only form), when the dump holds it: its
keys are not rows (see :mod:`perception.tree.keyboard`)."""
HEADER_KEYS = frozenset(
    {"state", "screen", "warn", "loop", "ops", "recapture", "why", "app", KEYBOARD_KEY, MORE_KEY}
)
_PLACE = re.compile(r"\d+ \d+(?: \d+ \d+)?")
