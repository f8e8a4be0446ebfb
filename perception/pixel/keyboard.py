"""The on-screen keyboard seen in the pixels alone: its box, from what OCR already read.

Where the tree gives no keyboard box (the dump failed, a frame alone, most dumps that hold the
app's window only and nothing reported where the keyboard is), a frame with the keyboard up
offered its thirty-odd keys as one-letter candidates: some 300 tokens, and an invitation to
type by tapping letters when the ``type`` action types the whole text. The pixel channel finds
the keyboard instead, and the fusion takes its box as the phone's reported one
(:mod:`perception.tree.keyboard`: ``"kbd"`` in the prompt, the keys and what lies under them
not offered).

What makes a keyboard, and no calculator, dial pad, PIN pad or game grid: the letters of its
rows in their keyboard order. OCR reads a key's letter as a one-character line; the lines of
one row, left to right, spell a row of a QWERTY, AZERTY or QWERTZ keyboard (``qwertyuiop``,
``asdfghjkl``, ``zxcvbnm``; Gboard, Samsung's, SwiftKey and the Chinese 26-key pinyin layouts
all draw them), with letters OCR missed or misread (``i`` as ``:``, ``o`` as ``0``) left out.
Two such rows one above the other (:data:`KEY_ROWS_MIN`), spanning most of the screen's width,
whose lowest row ends near the bottom of the screen (above the navigation bar): a keyboard. The
Chinese 9-key layout is known by its keys' letter groups (``ABC`` ... ``WXYZ``) on their own,
without the digits a dial pad writes beside them. A number pad, a PIN pad or a calculator shows
digits alone: never taken for a keyboard (the keyboard that shows them cannot be told from the
app's own keypad; left as the app's). Its box spans the screen's width, from the top of the
keyboard's background (the suggestion strip above the keys included: the band above the first
row in the colour between the rows) down to the navigation bar or the screen's bottom edge.

It costs a pass over the OCR lines and, when rows are found, a look at a few pixel rows: no
OCR of its own. The fusion takes the box only where the tree gives none, and over a dump only
when a field in it has the focus (keys drawn over a page where nothing is being typed are the
app's: a word game's keyboard).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from perception.pixel.ocr import U8, TextLine
from perception.types import BoxPx, ScreenSize

LETTER_ROWS = (
    "qwertyuiop", "asdfghjkl", "zxcvbnm",  # QWERTY
    "azertyuiop", "qsdfghjklm", "wxcvbn",  # AZERTY
    "qwertzuiop", "yxcvbnm",  # QWERTZ
)
"""The letter rows of the keyboards drawn with one letter a key."""
NUMBER_ROW = "1234567890"
"""The row of digits some keyboards draw over the letters (Samsung's, SwiftKey's): a row of
the keyboard, not one of the two letter rows it needs."""

_MISREAD = str.maketrans({"0": "o", "1": "l", ":": "i", "|": "l", "!": "i", "¡": "i"})
"""What OCR makes of a thin or round key letter, read back as the letter."""

NINE_KEY_GROUPS = frozenset({"abc", "def", "ghi", "jkl", "mno", "pqrs", "tuv", "wxyz"})
"""The letter groups of a 9-key (T9) keyboard's keys, the Chinese pinyin 9-key layout's."""

KEY_ROWS_MIN = 2
"""Rows of keys, one above the other, that make a keyboard."""
ROW_MATCH_MIN = 4
"""Letters of one row that must follow a keyboard row's order."""
ROW_MATCH_SHARE = 0.7
"""Share of a row's one-character lines that must follow that order (the rest: misreadings)."""
ROW_SPAN_SHARE = 0.35
"""A row of keys read spans this share of the screen's width or more (its letters OCR read)."""
WIDEST_SHARE = 0.6
"""The widest row of keys read spans this share of the screen's width or more."""
NINE_KEY_MIN = 5
"""Letter groups of a 9-key keyboard that must be read."""
NINE_KEY_SPAN = 0.45
"""A 9-key keyboard's letter groups span this share of the screen's width or more (its middle
three columns of five)."""
TOP_SHARE_MIN = 0.25
"""The keys start below this share of the screen's height (the band along the bottom)."""
BOTTOM_PITCHES = 3.3
"""The centre of the lowest row of letters read lies within this many key pitches (centre to
centre) of the keyboard's bottom (the screen's, or the navigation bar's top): below it the
``zxcvbnm`` row when OCR read too little of it, and the space bar's row."""
ROW_PITCH_HEIGHTS = 5
"""Rows of keys lie at most this many letters' heights apart, centre to centre."""
KEY_HEIGHT_SHARE = 0.06
"""A key's letter is at most this share of the screen's height tall."""
BACKGROUND_SHARE = 0.5
"""A pixel row of the keyboard's background is this share in its colour, or more (the
suggestion strip's words take little of it)."""
BACKGROUND_TOLERANCE = 30
"""Sum of the three channels' differences to the background's colour that still counts as it."""


def find_keyboard(
    lines: Sequence[TextLine],
    pixels: U8,
    size: ScreenSize,
    *,
    nav_bar: BoxPx | None = None,
    status_bar: BoxPx | None = None,
) -> BoxPx | None:
    """The on-screen keyboard's box in a frame whose OCR read ``lines`` (the whole frame's),
    or None when the lines show no keyboard (see the module's docstring).

    ``nav_bar`` and ``status_bar`` are the frame's bars where the pixel channel found them: the
    keyboard ends above the first and starts below the second."""
    w, h = size.width_px, size.height_px
    bottom = nav_bar.top if nav_bar is not None and nav_bar.top > h // 2 else h
    keys = _key_lines(lines, size)
    rows = _letter_rows(keys, w) if len(keys) >= 2 * ROW_MATCH_MIN else []
    if len(rows) < KEY_ROWS_MIN:
        rows = _nine_key_rows(lines, keys, size)
        if not rows:
            return None
    first, last = rows[0], rows[-1]
    pitch = max(1, (last.center[1] - first.center[1]) // (len(rows) - 1))
    if first.top < TOP_SHARE_MIN * h or bottom - last.center[1] > BOTTOM_PITCHES * pitch:
        return None  # not a band along the bottom: a keyboard drawn by the app, a preview
    gap = _gap_below(rows, first)
    ceiling = status_bar.bottom if status_bar is not None else 0
    top = _background_top(pixels, first, gap, max(ceiling, first.top - 2 * pitch), h)
    return BoxPx(0, top, w, bottom)


def _key_lines(lines: Sequence[TextLine], size: ScreenSize) -> list[tuple[str, BoxPx]]:
    """The lines that may be one key's character, and that character: one character (or a
    letter with the small digit some keyboards write in a key's corner, read as one line),
    key-sized, below the top."""
    tallest = KEY_HEIGHT_SHARE * size.height_px
    low = TOP_SHARE_MIN * size.height_px
    keys: list[tuple[str, BoxPx]] = []
    for line in lines:
        box = line.box_px
        if box.height > tallest or box.top < low:
            continue
        text = line.text.strip()
        if len(text) == 2 and text[0].isdigit() != text[1].isdigit():
            text = text[1] if text[0].isdigit() else text[0]
        if len(text) == 1:
            keys.append((text.lower(), box))
    return keys


def _rows_of(boxes: Sequence[BoxPx]) -> list[list[int]]:
    """Indices of ``boxes`` by row (centres within half the median height), top to bottom,
    each left to right."""
    order = sorted(range(len(boxes)), key=lambda i: boxes[i].center[1])
    half = float(np.median([b.height for b in boxes])) / 2 if boxes else 0.0
    rows: list[list[int]] = []
    last_y = -1e9
    for i in order:
        y = boxes[i].center[1]
        if rows and y - last_y <= half:
            rows[-1].append(i)
        else:
            rows.append([i])
        last_y = y
    return [sorted(row, key=lambda i: boxes[i].left) for row in rows]


def _letter_rows(keys: Sequence[tuple[str, BoxPx]], width: int) -> list[BoxPx]:
    """The boxes of the key rows whose letters follow a keyboard row, top to bottom, when at
    least :data:`KEY_ROWS_MIN` of them lie one under the other (the next row starts within two
    key heights of the one above); else []."""
    boxes = [box for _text, box in keys]
    found: list[tuple[BoxPx, bool]] = []
    for row in _rows_of(boxes):
        if len(row) < ROW_MATCH_MIN:
            continue
        text = "".join(keys[i][0] for i in row)
        letters = max(_in_order(text.translate(_MISREAD), keys_row) for keys_row in LETTER_ROWS)
        digits = _in_order(text, NUMBER_ROW)
        best = max(letters, digits)
        if best < ROW_MATCH_MIN or best < ROW_MATCH_SHARE * len(row):
            continue
        left = min(boxes[i].left for i in row)
        right = max(boxes[i].right for i in row)
        if right - left < ROW_SPAN_SHARE * width:
            continue
        box = BoxPx(left, min(boxes[i].top for i in row), right, max(boxes[i].bottom for i in row))
        found.append((box, letters >= digits))
    rows = _stacked(found)
    if sum(letters for _box, letters in rows) < KEY_ROWS_MIN:
        return []
    if max(box.width for box, _letters in rows) < WIDEST_SHARE * width:
        return []
    return [box for box, _letters in rows]


def _stacked(rows: list[tuple[BoxPx, bool]]) -> list[tuple[BoxPx, bool]]:
    """The longest run of ``rows`` each centred within :data:`ROW_PITCH_HEIGHTS` of its
    letters' heights below the last (a key is some three letters tall)."""
    best: list[tuple[BoxPx, bool]] = []
    run: list[tuple[BoxPx, bool]] = []
    for row in rows:
        box = row[0]
        above = run[-1][0] if run else box
        if box.center[1] - above.center[1] > ROW_PITCH_HEIGHTS * max(above.height, box.height):
            run = []
        run.append(row)
        if len(run) > len(best):
            best = list(run)
    return best


def _in_order(text: str, letters: str) -> int:
    """How many characters of ``text`` follow ``letters``' order (their longest common
    subsequence; both a dozen characters at most)."""
    prev = [0] * (len(letters) + 1)
    for ch in text:
        cur = [0] * (len(letters) + 1)
        for j, key in enumerate(letters, 1):
            cur[j] = prev[j - 1] + 1 if ch == key else max(prev[j], cur[j - 1])
        prev = cur
    return prev[-1]


def _nine_key_rows(
    lines: Sequence[TextLine], keys: Sequence[tuple[str, BoxPx]], size: ScreenSize
) -> list[BoxPx]:
    """The rows of a 9-key keyboard's letter groups, top to bottom, when
    :data:`NINE_KEY_MIN` groups are read and no digit key beside them (a dial pad writes
    ``2 ABC``); else []."""
    low = TOP_SHARE_MIN * size.height_px
    groups = [
        line for line in lines
        if line.text.strip().lower() in NINE_KEY_GROUPS and line.box_px.top >= low
    ]
    if len({g.text.strip().lower() for g in groups}) < NINE_KEY_MIN:
        return []
    if any(text.isdigit() for text, _box in keys):
        return []  # a dial pad's digits
    boxes = [g.box_px for g in groups]
    rows = [
        BoxPx(
            min(boxes[i].left for i in row), min(boxes[i].top for i in row),
            max(boxes[i].right for i in row), max(boxes[i].bottom for i in row),
        )
        for row in _rows_of(boxes)
    ]
    if max(r.right for r in rows) - min(r.left for r in rows) < NINE_KEY_SPAN * size.width_px:
        return []
    return rows if len(rows) >= KEY_ROWS_MIN else []


def _gap_below(rows: Sequence[BoxPx], first: BoxPx) -> tuple[int, int]:
    """The pixel rows between the first row of letters and the next (the keyboard's
    background shows there, between the keys at least), or a band just above the first."""
    if len(rows) > 1 and rows[1].top > first.bottom:
        return first.bottom, rows[1].top
    return max(0, first.top - first.height // 2), first.top


def _background_top(
    pixels: U8, first: BoxPx, gap: tuple[int, int], limit: int, height: int
) -> int:
    """The top of the keyboard's background above its first row of letters: its colour (the
    most uniform pixel row of the gap between the rows: between the keys' faces) is followed up
    from the letters' row, past the keys' own faces (up to one and a half letters' height),
    while a pixel row is mostly that colour; ``limit`` is as high as it may go. Every
    :data:`_STEP` th column is looked at."""
    g0, g1 = max(0, min(gap[0], height - 1)), max(1, min(gap[1], height))
    start = first.top
    stop = max(0, limit)
    if g1 <= g0 or start <= stop:
        return first.top
    band = pixels[g0:g1, ::_STEP].astype(np.int16)
    strip = pixels[stop:start, ::_STEP].astype(np.int16)
    if band.ndim == 2:
        band, strip = band[:, :, None], strip[:, :, None]
    spread = band.std(axis=1).sum(axis=1)
    colour = np.median(band[int(np.argmin(spread))], axis=0)
    diff = np.abs(strip - colour).sum(axis=2)
    ok = (diff <= BACKGROUND_TOLERANCE).mean(axis=1) >= BACKGROUND_SHARE
    # Up from the letters: first past the keys' faces (no row of background yet), then while
    # the rows are the background's.
    i = len(ok) - 1
    faces = max(1, (first.height * 3) // 2)
    while i >= 0 and not ok[i] and len(ok) - 1 - i < faces:
        i -= 1
    if i < 0 or not ok[i]:
        return first.top
    while i >= 0 and ok[i]:
        i -= 1
    return stop + i + 1


_STEP = 8
"""Columns of the frame looked at when following the keyboard's background (every eighth)."""
