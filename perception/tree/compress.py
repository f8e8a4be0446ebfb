"""Stage 5: compress. The compact JSON the decision model reads.

Schema (short keys, empty fields omitted), elements grouped by kind::

    {"app": "com.example",                        # package of the screen, when known
     "btn": [[id, "label", "l t r b", "flags"?], ...],
     "input": [...], "switch": [...], ...         # one key per kind present, in screen order
     "text": [["label", "l t r b"], ...]}         # static text: context, nothing to tap

Kinds: btn, input, check, switch, radio, tab, select, slider, list (scrollable), web, img,
view, text. An actionable row carries the integer ``id`` to tap by (stable within the screen),
its label (own and absorbed text, pieces joined by `` | ``; ``[resource_id]`` for an unlabelled
icon, unless the id was shrunk to under four characters), its box on the 0-1000 grid as one
string ``"left top right bottom"`` (half the tokens of a JSON array), and a flags string only
when some are set: ``off`` disabled, ``on`` checked, ``sel`` selected, ``foc`` focused,
``pw`` password, ``long`` long-clickable only, ``scroll`` scrollable, ``cut`` partly
off-screen, ``+N`` N more similar list items follow, not shown.
Static text rows have no id (nothing to tap) and no flags. Grouping by kind saves the kind on
every row. The id-only form (``coords=False``) drops the boxes. Occluded elements and hidden list
items are not offered.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from perception.geometry import box_px_to_pm
from perception.types import ACTIONABLE, ElementFlag, ScreenSize, TreeElement

MIN_RID_CHARS = 4

_FLAG_WORDS = tuple(
    (int(flag), word)
    for flag, word in (
        (ElementFlag.DISABLED, "off"),
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


def flag_words(element: TreeElement) -> str:
    """The flags string of a row ("" when none is set)."""
    flags = int(element.flags)
    if flags & _CLICKABLE:
        flags &= ~_LONG_CLICKABLE
    words = [word for flag, word in _FLAG_WORDS if flags & flag] if flags & _WORD_MASK else []
    if element.more:
        words.append(f"+{element.more}")
    return " ".join(words)


def label(element: TreeElement) -> str:
    if element.text:
        return element.text
    rid = element.resource_id
    # Shrunk resource names (R8 turns ids into two or three letters) tell the model nothing.
    return f"[{rid}]" if len(rid) >= MIN_RID_CHARS else ""


STATIC_KINDS = frozenset({"text", "img", "view"})


def is_static(element: TreeElement) -> bool:
    """Nothing to tap: shown as context without an id."""
    return element.kind in STATIC_KINDS and not int(element.flags) & _ACTIONABLE


def element_row(element: TreeElement, screen: ScreenSize, coords: bool) -> list[object]:
    static = is_static(element)
    row: list[object] = [] if static else [element.id]
    row.append(label(element))
    if coords:
        row.append("%d %d %d %d" % box_px_to_pm(element.box_px, screen))  # noqa: UP031
    if not static:
        words = flag_words(element)
        if words:
            row.append(words)
    return row


def to_prompt(
    elements: Iterable[TreeElement],
    *,
    screen: ScreenSize,
    package: str = "",
    coords: bool = True,
) -> str:
    doc: dict[str, object] = {}
    if package:
        doc["app"] = package
    for e in elements:
        rows = doc.setdefault("text" if is_static(e) else e.kind, [])
        rows.append(element_row(e, screen, coords))  # type: ignore[attr-defined]
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
