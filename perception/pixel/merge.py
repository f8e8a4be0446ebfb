"""From OCR lines and OpenCV anchors to pixel candidates.

1. Text lines merge into blocks by the Mobile-Agent-v2 rule (vertically adjacent, left-aligned,
   similar height) in the fast path; thresholds scale with the screen's median line height.
   Candidates stay one per line and carry their block number: on the corpus, emitting whole
   blocks as candidates cost about 4 points of tap recall (a list row's title and subtitle are
   often separate targets), so the blocks are offered next to the candidates instead.
2. A line alone inside a button or tab outline takes that outline's box and kind; so do lines
   side by side and a word space apart inside one (a label OCR read in pieces), joined.
3. An icon with its caption right below it (bottom navigation, app grids, share sheets) is one
   item: the caption's text on the union of both boxes, so a tap on the icon, the caption or
   the gap between them lands on it (:func:`pair_captions`); an icon that is a letter of a
   longer line is no caption's (:data:`ICON_IN_LINE_SHARE`).
4. Text and icons inside a bar (toolbar, bottom navigation) become tabs; an icon-and-caption
   item outside a bar is a button.
5. Icons under a text line are dropped (the text names the target), unless OCR read the icon
   itself as a glyph or two (:func:`_icons_read_as_text`: then the line goes); cards, buttons
   and tabs without text are kept as text-less candidates.
6. Everything on the status bar and the navigation bar is left out (but a notification
   shade's clock), and so is everything under the dim layer around a dialog, sheet, drawer
   or menu (:attr:`FrameFlags.modal_box_px`).
7. An icon inside a candidate of about its size (its tile, a round button) is that candidate,
   so is any text-less candidate inside a text-less one centred on it (one spot, one row: a ring
   and the picture in it), and a row or a group of repeated icons side by side (a star rating,
   the stars of a tile) is one icon.
8. A final NMS removes duplicates; candidates come out in reading order, a bar's tabs left to
   right (:func:`reading_order`).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

import cv2
import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.config import PixelConfig
from perception.geometry import union_box
from perception.pixel.anchors import FIELD_SCORE, TOGGLE_KINDS, Anchor, PixelKind
from perception.pixel.ocr import TextLine
from perception.types import BoxPx, ScreenSize


@dataclass(frozen=True, slots=True, kw_only=True)
class PixelCandidate:
    """One tappable-looking thing the pixels offer."""

    text: str
    kind: PixelKind
    box_px: BoxPx
    confidence: float
    """0-1: the OCR score for text, the anchor score for text-less candidates."""
    block: int = -1
    """The text block (:func:`merge_lines`) this line belongs to; -1 for text-less candidates."""
    glyph: str = ""
    """What a text-less icon's shape is, where a glyph rule knows it: ⋮ or ⋯ (the overflow
    menu) or ☰ (the navigation drawer), see :data:`~perception.pixel.anchors.MENU_GLYPHS`; or,
    on an icon, button, tab or picture read after, any glyph of
    :data:`~perception.pixel.glyphs.GLYPHS` (:func:`~perception.pixel.glyphs.name_candidates`).
    Kept apart from :attr:`text`, which is only ever what OCR read: fusion takes a candidate
    with text for an OCR line (compared with the tree's labels, kept beside a tree element
    that covers it) and one without for an anchor (left out where the tree covers it)."""
    checked: bool | None = None
    """A toggle's state (kinds ``switch``, ``check``, ``radio``: on or off), None when the
    pixels cannot say it or the candidate is no toggle."""
    password: bool = False
    """A text field (kind ``input``) for a password: its hint or floating label says so, or its
    value is a run of dots (:func:`_fields`). Flagged as the tree flags its own (``pw``)."""
    selected: bool = False
    """The tab of its row that is drawn apart from the others (:func:`selected_tabs`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TextBlock:
    """Lines that belong together (a wrapped paragraph, a title over its subtitle)."""

    text: str
    box_px: BoxPx
    confidence: float
    lines: tuple[int, ...]
    """Indices of the member lines, top to bottom."""


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x2E80 <= code <= 0x9FFF
        or 0xAC00 <= code <= 0xD7AF
        or 0xF900 <= code <= 0xFAFF
        or 0xFF00 <= code <= 0xFFEF
    )


def join_lines(texts: Sequence[str]) -> str:
    """Join wrapped lines: a space between words, nothing between CJK characters."""
    out = ""
    for text in texts:
        if out and text and not (_is_cjk(out[-1]) or _is_cjk(text[0])):
            out += " "
        out += text
    return out


def merge_groups(lines: Sequence[TextLine], config: PixelConfig | None = None) -> list[int]:
    """The block number of each line (Mobile-Agent-v2 rule, in the fast path); a negative
    ``merge_gap_max_ratio`` turns merging off."""
    cfg = config or PixelConfig()
    if not lines:
        return []
    boxes = np.array([ln.box_px for ln in lines], dtype=np.int32)
    if cfg.merge_gap_max_ratio < 0:
        groups = np.arange(len(lines), dtype=np.int32)
    else:
        line_h = float(np.median(boxes[:, 3] - boxes[:, 1]))
        groups = fastpath.merge_text_blocks(
            boxes,
            align_px=round(cfg.merge_align_ratio * line_h),
            gap_min_px=-round(0.25 * line_h),
            gap_max_px=round(cfg.merge_gap_max_ratio * line_h),
            height_diff_px=round(cfg.merge_height_ratio * line_h),
        )
    return [int(g) for g in groups.tolist()]


def merge_lines(lines: Sequence[TextLine], config: PixelConfig | None = None) -> list[TextBlock]:
    """Text blocks of the lines, numbered as :func:`merge_groups` numbers them."""
    members: dict[int, list[int]] = {}
    for i, g in enumerate(merge_groups(lines, config)):
        members.setdefault(g, []).append(i)
    blocks: list[TextBlock] = []
    for g in sorted(members):
        idx = sorted(members[g], key=lambda i: (lines[i].box_px.top, lines[i].box_px.left))
        blocks.append(
            TextBlock(
                text=join_lines([lines[i].text for i in idx]),
                box_px=union_box([lines[i].box_px for i in idx]),
                confidence=round(float(np.mean([lines[i].confidence for i in idx])), 4),
                lines=tuple(idx),
            )
        )
    return blocks


_boxes = fastpath.box_rows
"""``int32[N, 4]`` from boxes (the fusion layer's converter, one kernel for both channels)."""

SEPARATORS = frozenset("·•|｜丨")
EDGE_MARKS = frozenset("·•‣◦|｜丨<>‹›«»…⋯")
"""Marks OCR reads at a line's ends that are not part of its label: bullets, chevrons drawn next
to the text ("< AUG 20 >", "Settings ›") and the ellipsis of a truncated label (the hierarchy
never holds it: Android ellipsizes when drawing)."""


def _char_units(ch: str) -> int:
    """Rough glyph width: wide (CJK, full-width) characters take two units, others one."""
    return 2 if unicodedata.east_asian_width(ch) in "WF" else 1


def _label_span(text: str, start: int, end: int) -> tuple[int, int]:
    """``text[start:end]`` without blanks and edge marks at either end (nor trailing dots of an
    ellipsis written as "..")."""
    while start < end and (text[start].isspace() or text[start] in EDGE_MARKS):
        start += 1
    while start < end:
        ch = text[end - 1]
        if ch.isspace() or ch in EDGE_MARKS:
            end -= 1
        elif ch == "." and end - start >= 3 and text[end - 2] == ".":
            while end > start and text[end - 1] == ".":
                end -= 1
        else:
            break
    return start, end


def _cjk_gap(text: str, k: int) -> bool:
    """A blank between two wide (CJK) characters: Chinese and Japanese labels hold no spaces, so
    the recogniser's blank there is the gap between two tabs ("套餐　手机　宽带")."""
    if not text[k].isspace() or k == 0 or k + 1 >= len(text):
        return False
    end = k
    while end < len(text) and text[end].isspace():
        end += 1
    return end < len(text) and _char_units(text[k - 1]) == 2 and _char_units(text[end]) == 2


def split_separated(lines: Sequence[TextLine]) -> list[TextLine]:
    """Cut recognised lines at separator characters ("歌曲·歌词", "Home | Search") and at blanks
    between CJK characters ("套餐　手机"), and trim the marks at their ends (:data:`EDGE_MARKS`):
    one OCR line that reads two tabs becomes two candidates, and "· 1. About" reads "1. About".
    Each piece gets the part of the line's box that its characters take (wide characters count
    double), so its centre falls on its own tab. A line that is nothing but marks is left as it
    is."""
    out: list[TextLine] = []
    for line in lines:
        text = line.text
        spans: list[tuple[int, int]] = []
        start = 0
        for k in range(len(text) + 1):
            if k < len(text) and text[k] not in SEPARATORS and not _cjk_gap(text, k):
                continue
            first, last = _label_span(text, start, k)
            if last > first:
                spans.append((first, last))
            start = k + 1
        if not spans or spans == [(0, len(text))]:
            out.append(line)
            continue
        units = [_char_units(ch) for ch in text]
        total = sum(units)
        width = line.box_px.right - line.box_px.left
        for first, last in spans:
            left = line.box_px.left + width * sum(units[:first]) // total
            right = line.box_px.left + width * sum(units[:last]) // total
            out.append(
                TextLine(
                    text=text[first:last],
                    box_px=BoxPx(left, line.box_px.top, max(right, left + 1), line.box_px.bottom),
                    confidence=line.confidence,
                )
            )
    return out


CAPTION_GAP_LINES = (-0.25, 0.6)
"""How far below an icon its caption starts, in caption line heights. Bottom navigation, app
grids and share sheets set the label a few dp under the icon, well under one line of its 12-14sp
text: 0.1-0.6 lines on the corpus once OCR's padding is counted (median 0.26). Pairs further
apart were mostly a logo over a card's title or a count under an icon, whose union's centre
leaves the view that is tapped. A slight overlap is OCR's box reaching into the icon."""
CAPTION_ROW_GAP_LINES = 1.6
"""The caption of an icon in a row of :data:`CAPTION_ROW_MIN` or more like icons (tops and sizes
within :data:`CAPTION_ROW_SLACK`), each with a caption below it, starts at most this many of its
line heights below the icon: launcher, category and share grids and bottom navigation set it
0.6-1.5 lines down (measured by the 2026-12-05 audit; most about 1.4)."""
CAPTION_ROW_MIN = 3
CAPTION_ROW_SLACK = 0.25
CAPTION_OFFSET_MAX = 0.25
"""Icon and caption are centred on the same x: the caption's centre lies over the middle half of
the icon (within this share of the icon's width, or of the caption's height for an icon
narrower than one line, of the icon's centre)."""
CAPTION_HEIGHT_MAX = 1.25
"""A caption is smaller than what it names: its line is at most this many times the icon's
longer side (an icon's ink can be flatter than its square, a pulse line or a menu's bars: Yelp's
80x58 px "Activity" icon over its 73 px line failed a test against its height by half a pixel,
and the tab was offered as an unlabelled icon and a text beside it)."""
CAPTION_WIDTH_MAX = 5.0
"""... and a short label: at most this many icon widths wide ("Bookmarks" under a 24dp icon is
about 4; a paragraph under an avatar is far wider)."""


def pair_captions(
    icon_boxes: npt.NDArray[np.int32], line_boxes: npt.NDArray[np.int32]
) -> list[int]:
    """For each icon, the index of the text line that captions it (directly below, centred on
    the same x, short and smaller than the icon), or -1. Each line captions at most one icon and
    each icon has at most one caption: pairs are taken closest first (vertical gap plus
    horizontal offset, ties by index)."""
    n_icons, n_lines = len(icon_boxes), len(line_boxes)
    out = [-1] * n_icons
    if not n_icons or not n_lines:
        return out
    icons = icon_boxes.astype(np.int64)[:, None, :]
    lines = line_boxes.astype(np.int64)[None, :, :]
    icon_w = icons[..., 2] - icons[..., 0]
    icon_h = icons[..., 3] - icons[..., 1]
    line_w = lines[..., 2] - lines[..., 0]
    line_h = lines[..., 3] - lines[..., 1]
    gap = lines[..., 1] - icons[..., 3]
    offset = np.abs((lines[..., 0] + lines[..., 2]) - (icons[..., 0] + icons[..., 2])) / 2.0
    placed = (  # below the icon, centred on it, a caption's size: all but how far below
        (gap >= CAPTION_GAP_LINES[0] * line_h)
        & (offset <= CAPTION_OFFSET_MAX * np.maximum(icon_w, line_h))
        & (line_h <= CAPTION_HEIGHT_MAX * np.maximum(icon_h, icon_w))
        & (line_w <= CAPTION_WIDTH_MAX * icon_w)
    )
    ok = placed & (gap <= CAPTION_GAP_LINES[1] * line_h)
    # An icon in a row of like icons (an app grid, a category grid, a bottom navigation) whose
    # members each have a centred caption below may stand further above its caption.
    row_ok = placed & (gap <= CAPTION_ROW_GAP_LINES * line_h)
    captioned = row_ok.any(axis=1)
    if int(captioned.sum()) >= CAPTION_ROW_MIN:
        box = icon_boxes.astype(np.int64)
        h = box[:, 3] - box[:, 1]
        w = box[:, 2] - box[:, 0]
        mates = (
            (np.abs(box[:, None, 1] - box[None, :, 1]) <= CAPTION_ROW_SLACK * h[:, None])
            & (np.abs(h[:, None] - h[None, :]) <= CAPTION_ROW_SLACK * h[:, None])
            & (np.abs(w[:, None] - w[None, :]) <= CAPTION_ROW_SLACK * w[:, None])
            & captioned[None, :]
        )
        in_row = captioned & (mates.sum(axis=1) >= CAPTION_ROW_MIN)
        ok |= row_ok & in_row[:, None]
    cost = np.where(ok, np.abs(gap) + offset, np.inf)
    flat = np.argsort(cost, axis=None, kind="stable")
    taken = np.zeros(n_lines, dtype=bool)
    for k in flat[: int(ok.sum())].tolist():
        j, i = divmod(k, n_lines)
        if out[j] < 0 and not taken[i]:
            out[j] = i
            taken[i] = True
    return out


_PIECE_GAP = 0.6
"""Pieces of one label are at most this many line heights apart (a word space is about 0.3;
the tabs of a bar, or two values in one outline, stand further apart)."""
_LABEL_ROWS = 3
"""A label wraps onto this many lines at most; more is a paragraph, not a button's label."""
_HUG_IOU = 0.6
"""An outline whose box is a text line's own (IoU at least this) is the edge of its letters
(bold capitals of a button's label), not a button."""


def _glyph(text: str) -> bool:
    """One letter or sign that is not a CJK character or a digit (a count beside a label is
    part of it): what OCR makes of an icon."""
    text = text.strip()
    return len(text) == 1 and not (_is_cjk(text) or text.isdigit())


def _beside(a: BoxPx, b: BoxPx) -> bool:
    """Do two line boxes stand on one row: overlapping vertically by half the lower one's
    height?"""
    height = min(a.bottom - a.top, b.bottom - b.top)
    return min(a.bottom, b.bottom) - max(a.top, b.top) >= 0.5 * height


def line_rows(boxes: Sequence[BoxPx]) -> list[list[int]]:
    """Text line boxes in reading order, as rows of indices: top to bottom, a line joining the
    row of the line before it when the two overlap vertically by half the lower one's height,
    each row left to right."""
    rows: list[list[int]] = []
    for i in sorted(range(len(boxes)), key=lambda i: (boxes[i].top, boxes[i].left)):
        b = boxes[i]
        if rows and _beside(boxes[rows[-1][-1]], b):
            rows[-1].append(i)
            continue
        rows.append([i])
    for row in rows:
        row.sort(key=lambda i: boxes[i].left)
    return rows


def _label_order(boxes: Sequence[BoxPx], outline: BoxPx) -> list[int] | None:
    """The reading order of these line boxes inside ``outline`` if they read as one label OCR
    cut in pieces, else None. Pieces sit side by side on a row, a word space apart at most
    ("YES, TURN" + "IT ON"); a label wrapped onto two or three lines has its rows one under the
    other a line gap apart, each centred in the outline ("STORED" over "LOCATION" in a button;
    a card's title over its body starts at the card's left padding instead)."""
    rows = line_rows(boxes)
    spans = []
    for row in rows:
        pieces = [boxes[i] for i in row]
        for left, right in zip(pieces, pieces[1:], strict=False):
            height = min(left.bottom - left.top, right.bottom - right.top)
            if right.left - left.right > _PIECE_GAP * height:
                return None
        spans.append(union_box(pieces))
    if len(spans) > _LABEL_ROWS:
        return None
    if len(spans) > 1:
        middle = (outline.left + outline.right) / 2
        slack = 0.1 * (outline.right - outline.left)
        if any(abs((span.left + span.right) / 2 - middle) > slack for span in spans):
            return None
        for upper, lower in zip(spans, spans[1:], strict=False):
            height = min(upper.bottom - upper.top, lower.bottom - lower.top)
            if lower.top - upper.bottom > _PIECE_GAP * height:
                return None
    return [i for row in rows for i in row]


_TOOLBAR_TABS = 3
"""The toolbar holds tabs when it holds this many text lines or more besides its title (Weibo's
关注 / 推荐 / 热门); fewer are its title (and a subtitle or a text action such as "SAVE")."""
_TITLE_WIDTH = 2.0
"""A toolbar's widest line is its title when it is this many times as wide as each other line
of the bar ("AJShA Android Java Sh" beside SAVE and LOAD): it is no tab, and does not count."""
_STACK_CHARS = 3
"""Two lines of a bar this long at least, one above the other, are a block of text (an ad
banner's title over its URL), not a row of tabs: a tab bar's labels stand side by side. A
shorter line over another is an icon OCR read ("★") or a count over its caption."""


def _tab_bars(
    anchors: Sequence[Anchor],
    line_boxes: npt.NDArray[np.int32],
    status_bar: BoxPx | None,
    texts: Sequence[str] = (),
) -> list[Anchor]:
    """The bars whose items are tabs: a bottom navigation bar, and the toolbar (the bar just
    under the status bar, or at the top of a frame without one) only when it holds a row of
    labels besides its title (:data:`_TOOLBAR_TABS`, :data:`_TITLE_WIDTH`). A toolbar's title
    and action icons (search, ⋮, ☰) are text and icons, not tabs. A bar holding two lines one
    above the other (:data:`_STACK_CHARS`: an ad banner) holds no tabs. ``texts`` are the
    lines' texts (for the stacking test; none given, no bar is taken for stacked text)."""
    under = 0 if status_bar is None else status_bar.bottom
    bars = [
        a
        for a in anchors
        if a.kind is PixelKind.BAR and a.box_px.bottom > under + _BAR_SLACK_PX
    ]
    if not bars:
        return bars
    in_bar = fastpath.containing(line_boxes, _boxes([a.box_px for a in bars]), slack_px=2)
    out = []
    for j, a in enumerate(bars):
        idx = np.flatnonzero(in_bar == j).tolist()
        held = len(idx)
        # A bar from the frame's top holds the status bar's clock and battery level too.
        idx = [i for i in idx if line_boxes[i, 1] >= under]
        boxes = [BoxPx(*line_boxes[i].tolist()) for i in idx]
        if _stacked(boxes, [texts[i] for i in idx] if texts else []):
            continue
        widths = sorted((b.right - b.left for b in boxes), reverse=True)
        if len(widths) > 1 and widths[0] >= _TITLE_WIDTH * widths[1]:
            held -= 1  # the title
        if a.box_px.top > under + _BAR_SLACK_PX or held >= _TOOLBAR_TABS:
            out.append(a)
    return out


def _stacked(boxes: Sequence[BoxPx], texts: Sequence[str]) -> bool:
    """Do two of these lines (:data:`_STACK_CHARS` long at least) stand one above the other,
    overlapping across half the narrower one's width, and no two of them side by side?"""
    long = [b for b, t in zip(boxes, texts, strict=True) if len(t.strip()) >= _STACK_CHARS]
    if any(len(row) > 1 for row in line_rows(long)):
        return False  # a row of labels (OneList's chips under its title)
    for k, a in enumerate(long):
        for b in long[k + 1 :]:
            across = min(a.right, b.right) - max(a.left, b.left)
            if not _beside(a, b) and 2 * across >= min(a.right - a.left, b.right - b.left):
                return True
    return False


_BAR_SLACK_PX = 2
"""A bar starting this close under the status bar (or the frame's top) is the toolbar."""

_CLOCK = re.compile(
    r"\D{0,3}(\d{1,3}\s?%\s?)?\d{1,2}[:：]\d{2}(?!\d)(?:\s?[AaPp]\.?[Mm]\b\.?)?(?!.*[^\W\d_]{2})"
)
"""The status bar's clock as OCR reads it ("9:45", "4:12PM", "14:20"), at the start of its line:
OCR joins it to the notification icons after it ("16:10 0 00  D") or to the battery level before
it ("39%23:22"). A word after the time (two letters in a row) makes it a page's line ("10:30
Meeting with Bob" atop a full-screen page), not the clock."""
_CLOCK_TOP_SHARE = 0.06
"""The clock sits in the top 6% of a portrait frame (12% of a landscape one's height)."""


def status_clock(lines: Sequence[TextLine], size: ScreenSize) -> BoxPx | None:
    """The box of the status bar's clock: the highest clock-like line near the top, or None
    (a full-screen app shows no status bar)."""
    limit = _CLOCK_TOP_SHARE * size.height_px * (2 if size.width_px > size.height_px else 1)
    clocks = [
        ln.box_px for ln in lines if ln.box_px.bottom <= limit and _CLOCK.match(ln.text.strip())
    ]
    return min(clocks, key=lambda b: b.top) if clocks else None


def bar_around_clock(clock: BoxPx, size: ScreenSize, *, tight: bool = False) -> BoxPx:
    """The status bar around its clock (:func:`status_clock`): centred on it, reaching as far
    below it as the frame's edge is above it (``tight``: half the clock's height below it,
    where a toolbar may start right under the bar)."""
    below = clock.height // 2 if tight else clock.top
    return BoxPx(0, 0, size.width_px, min(size.height_px, clock.bottom + below))


def clock_status_bar(
    lines: Sequence[TextLine], size: ScreenSize, *, tight: bool = False
) -> BoxPx | None:
    """The status bar told by its clock, for frames whose bar the luma profile missed (drawn
    over a picture, or in the toolbar's colour): :func:`bar_around_clock` of
    :func:`status_clock`, None when no clock is there."""
    clock = status_clock(lines, size)
    return None if clock is None else bar_around_clock(clock, size, tight=tight)


_SHADE_DATE = re.compile(
    r"(?i)(mon|tue|wed|thu|fri|sat|sun)[a-z]*\.?,?\s.*"
    r"|.*(星期|周)[一二三四五六日天].*|.*\d{1,2}\s?月\s?\d{1,2}\s?日.*"
)
"""A date as a notification shade's header shows it ("Thu, Oct 19", "10月19日 周四")."""


def notification_shade(lines: Sequence[TextLine], status_bar: BoxPx) -> bool:
    """Is the frame a pulled-down notification shade: a date line (:data:`_SHADE_DATE`) at
    most two status-bar heights under the status bar, where the shade's header shows it
    under or beside the clock? An app's toolbar sits there instead."""
    below = status_bar.bottom + 2 * status_bar.height
    return any(
        ln.box_px.top < below and _SHADE_DATE.fullmatch(ln.text.strip()) for ln in lines
    )


def _without_icon_pairs(lines: list[TextLine], anchors: Sequence[Anchor]) -> list[TextLine]:
    """Leave out a lone glyph that OCR read off two icons or more side by side (one detection
    box over OneList's ⚙ and +, read "+"): it names neither, and as text it would hide both
    icons (an icon under a line is dropped as the line's). The icons stay candidates."""
    glyphs = [i for i, ln in enumerate(lines) if _glyph(ln.text)]
    icons = [a.box_px for a in anchors if a.kind is PixelKind.ICON]
    if not glyphs or len(icons) < 2:
        return lines
    holder = fastpath.containing(icons, [lines[i].box_px for i in glyphs], slack_px=4)
    held = np.bincount(holder[holder >= 0], minlength=len(glyphs))
    drop = {glyphs[k] for k, n in enumerate(held.tolist()) if n >= 2}
    return [ln for i, ln in enumerate(lines) if i not in drop] if drop else lines


ICON_TEXT_CHARS = 3
"""A line of at most this many characters (blanks aside) may be OCR's reading of an icon."""
ICON_TEXT_SCORE = 0.8
"""Below this recognition score, such a line on an icon is the icon misread ("用", "D", "0",
"Y!"): a short word or count drawn as text scores higher (on the corpus "OK", "No", "Me", a
badge's "45" score 0.98-1.0)."""
ICON_TEXT_COVER = 0.5
"""A line lies on an icon when their overlap is at least this share of the line or of the
icon (OCR's box around the icon, or the icon rule's box around part of the line)."""
ICON_UNDER_SHARE = 0.1
"""An icon more than this share of which lies under a text line is the line's (the line names
the target); less is OCR's box grazing it (QQ Music's ⋮ touched by the title's box below it,
an album cover by its caption's)."""
ICON_IN_LINE_SHARE = 0.5
"""An icon at least this share of which lies under one text line at least
:data:`ICON_IN_LINE_WIDTH` times its width is part of that line's ink (a letter the icon rule
boxed), not an icon over a caption."""
ICON_IN_LINE_WIDTH = 2
"""... a line this many times the icon's width: a narrower one on it is OCR's reading of the
icon itself (Weibo's "Me" tab icon read "8"), and the icon still heads its caption."""
GARBLED_SCORE = 0.6
"""Below this score, a short line is noise wherever it lies (".", "K", "***" read off
thumbnails and textures)."""


def box_areas(boxes: npt.NDArray[np.int32]) -> npt.NDArray[np.int64]:
    """Each box's area in px (at least 1: a share of an empty box is no division by zero)."""
    wide = boxes.astype(np.int64)
    return np.maximum(1, (wide[:, 2] - wide[:, 0]) * (wide[:, 3] - wide[:, 1]))


def _icons_read_as_text(lines: list[TextLine], anchors: Sequence[Anchor]) -> list[TextLine]:
    """Leave out the short lines (:data:`ICON_TEXT_CHARS`) that are OCR's reading of an icon:
    any on a menu glyph (⋮ read ":", ☰ read "三", ⋯ read ".."), and those scored below
    :data:`ICON_TEXT_SCORE` on another icon (the icon stays a candidate: an icon under a line
    is dropped as the line's), and any scored below :data:`GARBLED_SCORE`. A real short label
    (a count, "OK", "+") scores high and stays, also on an icon the icon rule made of its
    letters."""
    short = [
        i for i, ln in enumerate(lines) if 1 <= len("".join(ln.text.split())) <= ICON_TEXT_CHARS
    ]
    if not short:
        return lines
    drop = {i for i in short if lines[i].confidence < GARBLED_SCORE}
    icons = [a for a in anchors if a.kind is PixelKind.ICON]
    if icons:
        line_boxes = _boxes([lines[i].box_px for i in short])
        icon_boxes = _boxes([a.box_px for a in icons])
        inter = fastpath.intersections(line_boxes, icon_boxes).astype(np.float64)
        cover = np.maximum(inter / box_areas(line_boxes)[:, None], inter / box_areas(icon_boxes))
        named = np.array([bool(a.glyph) for a in icons])
        on_icon = cover >= ICON_TEXT_COVER
        for k, i in enumerate(short):
            if (on_icon[k] & named).any() or (
                on_icon[k].any() and lines[i].confidence < ICON_TEXT_SCORE
            ):
                drop.add(i)
    return [ln for i, ln in enumerate(lines) if i not in drop] if drop else lines


TILE_SIDES_MAX = 4.0
"""An icon inside another candidate at most this many times as wide and as tall is that one's
own (a settings icon's coloured circle, a quick-settings tile, a floating button, the icon
rule's outline around a glyph's inner part): of 322 such pairs on the corpus's reliable
screens, 320 lie in one clickable of the tree. In a wider one (a search field's clear button,
a row's action icons) an icon is a target of its own."""
ROW_GAP_MAX = 0.25
"""Icons of one size side by side at most this share of their size apart are one thing (the
stars of a rating); toolbar actions and tabs stand an icon's width or more apart."""
ROW_SIZE_SLACK = 0.15
"""... of one size and on one line: sides and edges within this share of the size."""
ROW_ICONS_MIN = 3


_SPOT_KINDS = (
    PixelKind.TAB,
    PixelKind.BUTTON,
    PixelKind.ICON,
    PixelKind.CARD,
    PixelKind.IMAGE,
)
"""The text-less kinds one spot may hold several of, best supported first: a bar's item, an
outline drawn as a button, an icon-sized shape, a card, a picture. Toggles and text fields say
what they are and are never folded into another candidate."""


SPOT_OFFSET = 0.15
"""Two text-less candidates, one inside the other, are one spot when their centres lie at most
this share of the inner one's width and height apart: a tap at either centre lands well inside
the inner one. The duplicates the corpus shows (a ring and the picture in it, an outline and
its glyph) lie 0-5 px apart, 0.0-0.15 of the inner box; a card's centre a fifth of a picture
away from it is another point to tap."""


GLYPH_HOLDER_SIDES = (1.5, 6.0)
"""A one-glyph line (:func:`_glyph`) sits in a component that is this many times its width and
its height, at least and at most: a game's "A" button (a 188 px disc round a 38-81 px letter), a
floating action button's "+" (a 168 px disc round an 83 px glyph). The icon rule's box round the
glyph's own ink is about the line's size; a picture a glyph lies on is far larger."""
GLYPH_OFFSET = 0.2
"""... centred in it: the centres at most this share of the component's width and height apart
(a letter drawn on a button is centred on it)."""
GLYPH_HOLDER_KINDS = (PixelKind.ICON, PixelKind.IMAGE)
"""The anchors that hold a glyph as their label: an icon-sized round or filled shape (a
floating action button's disc is found as a filled picture)."""


def _glyph_holders(
    lines: Sequence[TextLine],
    icons: Sequence[Anchor],
    icon_boxes: npt.NDArray[np.int32],
    skip: Collection[int],
) -> dict[int, int]:
    """For each one-glyph line (:func:`_glyph`, not in ``skip``) that sits centred in an icon
    of :data:`GLYPH_HOLDER_KINDS` (:data:`GLYPH_HOLDER_SIDES`, :data:`GLYPH_OFFSET`), the index
    of the smallest such icon: the two are one button, named by the glyph, on the icon's box.
    Apart, the model saw an icon and an OCR line "A" at one centre (two ids for one target),
    or the "+" on the glyph's box, a third of the disc one taps. An icon holds one glyph."""
    held: dict[int, int] = {}
    if not len(icon_boxes):
        return held
    lo, hi = GLYPH_HOLDER_SIDES
    for i, ln in enumerate(lines):
        if i in skip or not _glyph(ln.text):
            continue
        box = ln.box_px
        (gx, gy) = box.center
        fits = [
            j
            for j, a in enumerate(icons)
            if a.kind in GLYPH_HOLDER_KINDS
            and j not in held.values()
            and lo * box.width <= a.box_px.width <= hi * box.width
            and lo * box.height <= a.box_px.height <= hi * box.height
            and a.box_px.left - 4 <= box.left
            and a.box_px.top - 4 <= box.top
            and box.right <= a.box_px.right + 4
            and box.bottom <= a.box_px.bottom + 4
            and abs(a.box_px.center[0] - gx) <= GLYPH_OFFSET * a.box_px.width
            and abs(a.box_px.center[1] - gy) <= GLYPH_OFFSET * a.box_px.height
        ]
        if fits:
            held[i] = min(fits, key=lambda j: icons[j].box_px.width * icons[j].box_px.height)
    return held


def _same_spot(inner: BoxPx, holder: BoxPx) -> bool:
    """Is ``holder`` (a box around ``inner``) centred on ``inner`` (:data:`SPOT_OFFSET`)?"""
    (ix, iy), (hx, hy) = inner.center, holder.center
    return abs(ix - hx) <= SPOT_OFFSET * inner.width and abs(iy - hy) <= SPOT_OFFSET * inner.height


def _without_nested_icons(cands: list[PixelCandidate]) -> list[PixelCandidate]:
    """One candidate per spot. Leave out each text-less icon that lies inside another candidate
    (not a text line) of about its size (:data:`TILE_SIDES_MAX`), and each text-less candidate
    of :data:`_SPOT_KINDS` inside a text-less one centred on it (:func:`_same_spot`): a tap at
    either centre lands on the same view, and the model saw two rows it could not tell apart
    (Duolingo's lesson node: the ring as an image, the picture in it as an image or a button
    outline). The holder takes the inner one's glyph if it has none; on one spot it also takes
    the better supported kind of the two (the ring around a button outline is a button)."""
    folded = set(_SPOT_KINDS)
    inners = [i for i, c in enumerate(cands) if not c.text and c.kind in folded]
    if not inners:
        return cands
    boxes = _boxes([c.box_px for c in cands])
    areas = box_areas(boxes)
    inter = fastpath.intersections(boxes[inners], boxes)
    out = list(cands)
    drop: set[int] = set()
    for row in sorted(range(len(inners)), key=lambda r: int(areas[inners[r]])):
        i = inners[row]
        inner = cands[i].box_px
        icon = cands[i].kind in (PixelKind.ICON, PixelKind.TAB)
        holders = [
            j
            for j in np.flatnonzero(inter[row] >= 0.95 * areas[i]).tolist()
            if j != i
            and j not in drop
            and areas[j] > areas[i]
            and cands[j].kind is not PixelKind.TEXT
            and (
                (
                    icon
                    and cands[j].box_px.width <= TILE_SIDES_MAX * inner.width
                    and cands[j].box_px.height <= TILE_SIDES_MAX * inner.height
                )
                or (not cands[j].text and _same_spot(inner, cands[j].box_px))
            )
        ]
        if not holders:
            continue
        holder = min(holders, key=lambda j: int(areas[j]))
        drop.add(i)
        if out[holder].text:
            continue
        if out[i].glyph and not out[holder].glyph:
            out[holder] = replace(out[holder], glyph=out[i].glyph)
        kind = out[holder].kind
        if (
            kind in folded
            and _SPOT_KINDS.index(out[i].kind) < _SPOT_KINDS.index(kind)
            and _same_spot(inner, out[holder].box_px)
        ):
            out[holder] = replace(out[holder], kind=out[i].kind)
    return [c for i, c in enumerate(out) if i not in drop] if drop else out


def _icon_rows(cands: list[PixelCandidate]) -> list[PixelCandidate]:
    """Runs of :data:`ROW_ICONS_MIN` or more text-less icons of one size on one line, each
    at most :data:`ROW_GAP_MAX` of its size from the next (a star rating: five tiles, not
    five targets), become one icon over the run."""
    icons = sorted(
        (i for i, c in enumerate(cands) if not c.text and c.kind is PixelKind.ICON),
        key=lambda i: (cands[i].box_px.left, cands[i].box_px.top),
    )
    if len(icons) < ROW_ICONS_MIN:
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
            if box.left - last.right > ROW_GAP_MAX * size:
                # Icons are in left order: none after this one is nearer, and the run's last
                # icon changes only when one joins. Without this stop the scan went through
                # every icon for each icon: 2.1 s for 967 icons on a screen of them.
                break
            slack = ROW_SIZE_SLACK * size
            if (
                i not in used
                and abs(box.width - last.width) <= slack
                and abs(box.height - last.height) <= slack
                and abs(box.top - last.top) <= slack
                and abs(box.bottom - last.bottom) <= slack
                and -2 <= box.left - last.right <= ROW_GAP_MAX * size
            ):
                run.append(i)
        if len(run) >= ROW_ICONS_MIN:
            run.extend(_run_ends(cands, run, [i for i in icons if i not in used]))
            used.update(run)
            runs.append(run)
    if not runs:
        return cands
    return _one_icon_each(cands, runs)


def _one_icon_each(cands: list[PixelCandidate], runs: list[list[int]]) -> list[PixelCandidate]:
    """``cands`` with each run of icons (indices) replaced by one icon over the run, at the
    lowest confidence of its icons."""
    used = {i for run in runs for i in run}
    out = [c for i, c in enumerate(cands) if i not in used]
    for run in runs:
        out.append(
            PixelCandidate(
                text="",
                kind=PixelKind.ICON,
                box_px=union_box([cands[i].box_px for i in run]),
                confidence=min(cands[i].confidence for i in run),
            )
        )
    return out


CLUSTER_OVERLAP_MAX = 0.25
"""Icons of a cluster are distinct shapes: two boxes that share more than this share of one's
area are one shape found twice, not neighbours."""


def _icon_clusters(cands: list[PixelCandidate]) -> list[PixelCandidate]:
    """Groups of :data:`ROW_ICONS_MIN` or more text-less icons of one size, each at most
    :data:`ROW_GAP_MAX` of its size from the next across or down (in any arrangement: the
    three or four stars of Habitica's difficulty tiles, drawn as a triangle or a square), become
    one icon over the group: they decorate one tile, and the model saw rows it could not tell
    apart. The group spans rows and columns both (half an icon more than one icon each way):
    :func:`_icon_rows` has joined the runs on one line already, and a column is a list's rows."""
    icons = [i for i, c in enumerate(cands) if not c.text and c.kind is PixelKind.ICON]
    if len(icons) < ROW_ICONS_MIN:
        return cands
    parent = list(range(len(icons)))

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    # Each icon is paired only with the icons whose left edge lies where a neighbour's can: its
    # own left less the gap allowed and the widest a like-sized icon is, up to its right plus
    # the gap (bisected in left order). Every pair in that window is tested as before, and no
    # pair outside it can join, so the groups are the all-pairs loop's: that loop (and its
    # N x N intersection matrix) took 1.0 s for 967 icons on a screen of them.
    shapes = [cands[i].box_px for i in icons]
    areas = box_areas(_boxes(shapes)).tolist()
    by_left = sorted(range(len(icons)), key=lambda k: shapes[k].left)
    lefts = [shapes[k].left for k in by_left]
    for a, one in enumerate(shapes):
        size = max(one.width, one.height)
        slack = ROW_SIZE_SLACK * size
        reach = ROW_GAP_MAX * size
        lo = bisect.bisect_left(lefts, one.left - reach - one.width - slack)
        hi = bisect.bisect_right(lefts, one.right + reach)
        for b in sorted(k for k in by_left[lo:hi] if k > a):
            other = shapes[b]
            gap = max(
                other.left - one.right,
                one.left - other.right,
                other.top - one.bottom,
                one.top - other.bottom,
            )
            if (
                abs(other.width - one.width) <= slack
                and abs(other.height - one.height) <= slack
                and gap <= reach
                and _overlap(one, other) <= CLUSTER_OVERLAP_MAX * min(areas[a], areas[b])
            ):
                parent[root(b)] = root(a)
    groups: dict[int, list[int]] = {}
    for k, i in enumerate(icons):
        groups.setdefault(root(k), []).append(i)
    runs = []
    for group in groups.values():
        box = union_box([cands[i].box_px for i in group])
        first = cands[group[0]].box_px
        # Across and down: a column of icons one over the other is a list's rows (icons of
        # list items a row's padding apart), each a target.
        if (
            len(group) >= ROW_ICONS_MIN
            and 2 * box.width >= 3 * first.width
            and 2 * box.height >= 3 * first.height
        ):
            runs.append(group)
    if not runs:
        return cands
    return _one_icon_each(cands, runs)


def _overlap(a: BoxPx, b: BoxPx) -> int:
    """The exact area two boxes share in px (``fastpath.intersections`` for one pair)."""
    w = min(a.right, b.right) - max(a.left, b.left)
    h = min(a.bottom, b.bottom) - max(a.top, b.top)
    return w * h if w > 0 and h > 0 else 0


def _run_ends(cands: list[PixelCandidate], run: list[int], others: list[int]) -> list[int]:
    """Icons just before or after a run, inside its band and at least half its height (a
    rating's last star drawn without its tile, only the star found), that belong to it."""
    band = union_box([cands[i].box_px for i in run])
    size = max(cands[run[0]].box_px.width, cands[run[0]].box_px.height)
    slack = ROW_SIZE_SLACK * size
    out = []
    for i in others:
        box = cands[i].box_px
        gap = box.left - band.right if box.left >= band.left else band.left - box.right
        if (
            i not in run
            and box.top >= band.top - slack
            and box.bottom <= band.bottom + slack
            and 2 * box.height >= band.height
            and -2 <= gap <= ROW_GAP_MAX * size
        ):
            out.append(i)
    return out


TOGGLE_COVER = 0.5
"""Another candidate is the toggle's own when at least this share of the smaller of the two
lies on the other (the icon rule's box around a checkbox, OCR reading a tick as "V")."""
TOGGLE_HOLDER_SIDES = 4.0
"""... and it is at most this many times as wide and as tall as the toggle (a row's card or
a dialog holding it is a target of its own)."""
LABEL_GAP_SIDES = 3.0
"""A label after a toggle (a CheckBox's or RadioButton's own text) starts within this many
toggle widths of it."""


PARAGRAPH_HEIGHT_RATIO = 1.3
"""Lines of one paragraph are of one size: OCR's boxes of a title and its summary differ by
less than this factor (ascenders, descenders, 16 over 14 sp). A taller line right above is a
heading over the paragraph (a screen title in large text over a row's title), not its line."""


def _continues(box: BoxPx, cands: Sequence[PixelCandidate], free: Sequence[int]) -> bool:
    """Does a line right above ``box`` (a paragraph's line gap at most, overlapping it across,
    of about its height: :data:`PARAGRAPH_HEIGHT_RATIO`) lie among ``free``: is ``box`` inside
    a paragraph, not its first line?"""
    lh = box.bottom - box.top
    for i in free:
        other = cands[i].box_px
        oh = other.bottom - other.top
        if (
            other != box
            and -2 <= box.top - other.bottom <= 0.6 * lh
            and other.left < box.right
            and box.left < other.right
            and max(oh, lh) < PARAGRAPH_HEIGHT_RATIO * min(oh, lh)
        ):
            return True
    return False


def _toggle_label(toggle: BoxPx, cands: Sequence[PixelCandidate], free: Sequence[int]) -> int:
    """The text line that names ``toggle``, or -1. A checkbox's or radio's own text follows it
    on its line (within :data:`LABEL_GAP_SIDES` of its width; a label wrapped onto two lines
    starts about half a line above the toggle's middle; OCR's box may start on the toggle,
    reading its outline as a letter): the first such line. Else a settings row's title stands
    to its left: the first line of a paragraph left of it whose middle lies level with the
    toggle or up to a line and a half above its middle (the title over its summary, the toggle
    centred on both), the lowest such line where they stand one over another (large text brings
    a heading above into reach: the screen's title over the first row's). Two such lines side by
    side (two columns of text) name nothing: a row is one toggle and one title, or the label is
    not the pixels' to guess."""
    cy = (toggle.top + toggle.bottom) / 2
    middle_x = (toggle.left + toggle.right) / 2
    after = []
    before = []
    for i in free:
        box = cands[i].box_px
        lh = box.bottom - box.top
        mid = (box.top + box.bottom) / 2
        if box.left >= middle_x:
            near = box.left - toggle.right <= LABEL_GAP_SIDES * toggle.width
            if near and abs(mid - cy) <= 0.6 * max(lh, toggle.height):
                after.append(i)
        elif box.right <= toggle.left + 2 and cy - 1.6 * lh <= mid <= cy + 0.25 * lh:
            before.append(i)
    if after:
        first = min(cands[i].box_px.left for i in after)
        return min(
            (i for i in after if cands[i].box_px.left - first <= toggle.width),
            key=lambda i: cands[i].box_px.top,
        )
    titles = [i for i in before if not _continues(cands[i].box_px, cands, free)]
    if not titles:
        return -1
    lowest = max(titles, key=lambda i: cands[i].box_px.top)
    row = [i for i in titles if _beside(cands[i].box_px, cands[lowest].box_px)]
    return lowest if len(row) == 1 else -1


def _label_text(line: PixelCandidate, toggle: BoxPx) -> str:
    """A label's text without the letter OCR made of the toggle ("J I understand and want to
    delete.": the checkbox's outline read as "J"): a one-letter first word whose place in the
    line's box (its share of the characters, as :func:`split_separated` places pieces) has its
    middle on the toggle. A real one-letter word ("I accept the terms", "A new file") stands
    after the toggle, even where OCR's padded box reaches onto it."""
    head, _, rest = line.text.partition(" ")
    if len(head) != 1 or not rest:
        return line.text
    units = [_char_units(ch) for ch in line.text]
    width = line.box_px.right - line.box_px.left
    middle = line.box_px.left + width * units[0] / (2 * sum(units))
    return rest if toggle.left <= middle <= toggle.right else line.text


def _with_toggles(cands: list[PixelCandidate], anchors: Sequence[Anchor]) -> list[PixelCandidate]:
    """Each toggle anchor as one candidate, with its state. One candidate per target: what lies
    on a toggle (:data:`TOGGLE_COVER`: the icon rule's box around a checkbox, a button outline
    around a switch, OCR reading a tick) is the toggle. A toggle takes the text line that names
    it (:func:`_toggle_label`): its own text after it, on the union of both (the widget's box:
    a tap on the text toggles it), or a settings row's title before it, on the toggle's own box
    (where a tap surely lands on it). A radio without a label is an icon."""
    toggles = [a for a in anchors if a.kind in TOGGLE_KINDS]
    if not toggles:
        return cands
    boxes = _boxes([c.box_px for c in cands])
    tboxes = _boxes([a.box_px for a in toggles])
    drop: set[int] = set()
    if len(boxes):
        inter = fastpath.intersections(boxes, tboxes).astype(np.float64)
        smaller = np.minimum(box_areas(boxes)[:, None], box_areas(tboxes)[None, :])
        on = inter >= TOGGLE_COVER * smaller
        for i, c in enumerate(cands):
            for j in np.flatnonzero(on[i]).tolist():
                t = toggles[j].box_px
                if (
                    c.box_px.width <= TOGGLE_HOLDER_SIDES * t.width
                    and c.box_px.height <= TOGGLE_HOLDER_SIDES * t.height
                    and (not c.text or cands[i].kind is PixelKind.TEXT)
                ):
                    drop.add(i)
    out: list[PixelCandidate] = []
    for a in sorted(toggles, key=lambda a: (a.box_px.top, a.box_px.left)):
        free = [
            i for i, c in enumerate(cands) if i not in drop and c.kind is PixelKind.TEXT and c.text
        ]
        k = _toggle_label(a.box_px, cands, free)
        if k < 0 and a.kind is PixelKind.RADIO:
            # A radio is one choice among labelled ones: a ring alone is an icon (a status
            # light, an empty avatar frame).
            out.append(
                PixelCandidate(text="", kind=PixelKind.ICON, box_px=a.box_px, confidence=0.6)
            )
            continue
        if k < 0:
            out.append(
                PixelCandidate(
                    text="", kind=a.kind, box_px=a.box_px, confidence=a.score, checked=a.checked
                )
            )
            continue
        line = cands[k]
        drop.add(k)
        after = line.box_px.left >= (a.box_px.left + a.box_px.right) / 2
        out.append(
            PixelCandidate(
                text=_label_text(line, a.box_px),
                kind=a.kind,
                box_px=union_box([a.box_px, line.box_px]) if after else a.box_px,
                confidence=line.confidence,
                block=line.block,
                checked=a.checked,
            )
        )
    return [c for i, c in enumerate(cands) if i not in drop] + out


def _pass_glyphs(
    cands: list[PixelCandidate],
    boxes: npt.NDArray[np.int32],
    keep: npt.NDArray[np.bool_],
    iou_min: float,
) -> list[PixelCandidate]:
    """A named icon dropped as the duplicate of a text-less, unnamed candidate on about its box
    names that one instead (the glyph rule's square and the icon rule's box around the dots)."""
    named = [i for i, c in enumerate(cands) if c.glyph and not keep[i]]
    if not named:
        return cands
    iou = fastpath.pixel_iou(boxes[named], boxes)
    iou[:, ~keep] = -1.0
    out = list(cands)
    for row, i in enumerate(named):
        best = int(np.argmax(iou[row]))
        if iou[row, best] >= iou_min and not out[best].text and not out[best].glyph:
            out[best] = replace(out[best], glyph=cands[i].glyph)
    return out


_FIELD_TEXT_LEFT = 0.15
"""A field's text starts at its left padding: within this share of the field's width."""
_FIELD_OUTLINE_IOU = 0.6
"""An outline on about a field's box is the field's own border, not a button."""
_HINT = re.compile(
    r"^\s*(?i:enter|type|search|find|write)(\b|(?=[A-Z]))|^\s*(?i:https?://|www\.)|请输入|搜索"
)
"""What a field's hint says ("Enter Email", "Search here", "Type a message", 请输入…; OCR
may drop the space: "EnterPassword") or an address bar's URL; a button says what it does
("SIGN IN", "Login")."""
_PASSWORD = re.compile(
    r"(?i:pass\s*word|passwort|mot\s+de\s+passe|contrase[ñn]a|senha|пароль)|密码|비밀번호|パスワード"
    r"|^\s*[•·●∙⋅*・.]{3,}\s*$"
)
"""What a password field's hint or label says ("Enter Password", "Passwort", 密码…; OCR may
drop the space: "EnterPassword"), or its value: a run of dots or stars (OCR reads "•••••"
as "·····", "*****")."""
_FIELD_LABEL_HEIGHT = 0.9
"""A floating label over a field's value (two lines in one field, the upper one at most this
share of the lower one's height) stays a line of its own; the value labels the field."""


def _fields(
    anchors: Sequence[Anchor], line_boxes: npt.NDArray[np.int32], texts: Sequence[str]
) -> tuple[list[Anchor], dict[int, int], set[int]]:
    """The text fields (:attr:`PixelKind.INPUT` anchors) that hold no text line or one starting
    at their left padding, which field each such line labels (its hint or value), and which
    fields are for a password (their line or floating label reads so, :data:`_PASSWORD`). A field
    with two lines or more in it, or one line centred in it, is no field (a list row, a
    button), unless the upper of two is a floating label (:data:`_FIELD_LABEL_HEIGHT`) or the
    line reads as a hint (:data:`_HINT`): an anchor scored under ``anchors.FIELD_SCORE``
    (``FIELD_HINT_SCORE``: a centred line, or one cut off at the box's right edge) is a field
    only then."""
    found = [a for a in anchors if a.kind is PixelKind.INPUT]
    if not found:
        return [], {}, set()
    # By the line's centre: OCR pads a line's box, an underline field's top is its text's ink.
    centres = (line_boxes[:, :2] + line_boxes[:, 2:]) // 2
    holder = (
        fastpath.containing(np.hstack([centres, centres + 1]), _boxes([a.box_px for a in found]))
        if len(line_boxes)
        else np.zeros(0, dtype=np.int32)
    )
    members: dict[int, list[int]] = {}
    for i, j in enumerate(holder.tolist()):
        if j >= 0:
            members.setdefault(j, []).append(i)
    fields: list[Anchor] = []
    label: dict[int, int] = {}
    secret: set[int] = set()
    for j, a in enumerate(found):
        idx = sorted(members.get(j, []), key=lambda i: int(line_boxes[i][1]))
        said = [texts[i] for i in idx]  # the hint or value, and a floating label over it
        box = a.box_px
        left = _FIELD_TEXT_LEFT * (box.right - box.left)
        if len(idx) == 2:
            upper, lower = line_boxes[idx[0]], line_boxes[idx[1]]
            if (
                a.score < FIELD_SCORE
                or upper[3] > (lower[1] + lower[3]) // 2
                or upper[3] - upper[1] > _FIELD_LABEL_HEIGHT * (lower[3] - lower[1])
                or max(upper[0], lower[0]) - box.left > left
            ):
                continue
            idx = idx[1:]  # the value; the floating label stays a line
        elif len(idx) > 1:
            continue
        if a.score < FIELD_SCORE and not (idx and _HINT.search(texts[idx[0]])):
            continue
        if idx:
            if a.score >= FIELD_SCORE and line_boxes[idx[0]][0] - box.left > left:
                continue
            label[idx[0]] = len(fields)
        if any(_PASSWORD.search(t) for t in said):
            secret.add(len(fields))
        fields.append(a)
    return fields, label, secret


def build_candidates(
    lines: Sequence[TextLine],
    anchors: Sequence[Anchor],
    config: PixelConfig | None = None,
    *,
    nav_bar: BoxPx | None = None,
    status_bar: BoxPx | None = None,
    modal: BoxPx | None = None,
) -> list[PixelCandidate]:
    """Merge text lines and anchors into de-duplicated candidates in reading order.

    ``nav_bar`` is the system navigation bar's inset (:class:`FrameFlags`): its unlabelled
    buttons are left out, the agent presses back / home / recents as keys (their order on
    screen differs between vendors, so the pixels cannot name them), and so is what OCR reads
    off them. ``status_bar`` is the status bar's (:meth:`FrameFlags.status_bar_box`, else
    :func:`clock_status_bar`): its clock, battery level and notification icons are left out
    too, except in a notification shade (:func:`notification_shade`), whose clock is a button.
    A frame without one (a full-screen app) passes None, and the icons of a toolbar at its
    top edge are kept. ``modal`` is a light surface over a dimmed screen
    (:attr:`FrameFlags.modal_box_px`): only what lies on it is offered; a tap under the dim
    layer dismisses the dialog, sheet or menu, and reaches nothing (the agent presses back).
    A text field (:attr:`PixelKind.INPUT` anchor, :func:`_fields`) is one candidate of kind
    ``input`` on the field's box, its hint or value as its text (empty when none)."""
    cfg = config or PixelConfig()
    lines = _icons_read_as_text(_without_icon_pairs(split_separated(lines), anchors), anchors)
    groups = merge_groups(lines, cfg)
    line_boxes = _boxes([ln.box_px for ln in lines])
    bars = _tab_bars(anchors, line_boxes, status_bar, [ln.text for ln in lines])
    fields, field_of, secret = _fields(anchors, line_boxes, [ln.text for ln in lines])
    outlines = [a for a in anchors if a.kind in (PixelKind.BUTTON, PixelKind.TAB)]
    if fields and outlines:
        own = fastpath.pixel_iou(
            _boxes([a.box_px for a in outlines]), _boxes([a.box_px for a in fields])
        ).max(axis=1)
        outlines = [
            a for a, v in zip(outlines, own.tolist(), strict=True) if v < _FIELD_OUTLINE_IOU
        ]
    if outlines and len(line_boxes):
        hug = fastpath.pixel_iou(_boxes([a.box_px for a in outlines]), line_boxes).max(axis=1)
        outlines = [a for a, v in zip(outlines, hug.tolist(), strict=True) if v < _HUG_IOU]
    cards = [a for a in anchors if a.kind is PixelKind.CARD]
    icons = [a for a in anchors if a.kind in (PixelKind.ICON, PixelKind.IMAGE)]
    icon_boxes = _boxes([a.box_px for a in icons])
    bar_boxes = _boxes([a.box_px for a in bars])
    icon_in_bar = fastpath.containing(icon_boxes, bar_boxes, slack_px=2)
    # An icon over its caption (bottom navigation, app grids, share sheets) is one item.
    # Only icon-sized ones: a larger graphic over a line is a splash logo, an empty-state
    # illustration or a thumbnail over its title (on the corpus, grouping those cost text hits).
    # Not a letter of another line the icon rule boxed (the "h" of "Haven't you heard about
    # Testdroid" over the wrapped sentence's end "Cloud?": the end was offered as a button).
    in_line = np.zeros(len(icons))
    if len(icon_boxes) and len(line_boxes):
        wide = (line_boxes[None, :, 2] - line_boxes[None, :, 0]) >= ICON_IN_LINE_WIDTH * (
            icon_boxes[:, 2:3] - icon_boxes[:, 0:1]
        )
        inter = np.where(wide, fastpath.intersections(icon_boxes, line_boxes), 0)
        in_line = inter.max(axis=1) / box_areas(icon_boxes)
    small = [
        j
        for j, a in enumerate(icons)
        if a.kind is PixelKind.ICON and float(in_line[j]) < ICON_IN_LINE_SHARE
    ]
    caption_of = [-1] * len(icons)
    for j, i in zip(small, pair_captions(icon_boxes[small], line_boxes), strict=True):
        caption_of[j] = i
    icon_of = {i: j for j, i in enumerate(caption_of) if i >= 0}
    # A letter or sign drawn in a round button (a game's "A", a floating "+") is that button.
    holder_of = _glyph_holders(lines, icons, icon_boxes, icon_of)
    held: set[int] = set()  # the icons that became their glyph's button

    out: list[PixelCandidate] = []
    # Text lines, promoted to their outline (button/tab) when alone inside it, or when the
    # lines inside it are one label OCR read in pieces ("YES, TURN" + "It ON").
    in_outline = fastpath.containing(line_boxes, _boxes([a.box_px for a in outlines]), slack_px=4)
    members: dict[int, list[int]] = {}
    for i, j in enumerate(in_outline.tolist()):
        if j >= 0:
            members.setdefault(j, []).append(i)
    # outline -> (its label's lines, text, confidence)
    label_of: dict[int, tuple[list[int], str, float]] = {}
    for j, idx in members.items():
        # A lone letter beside a label is an icon OCR read as one (a magnifier as "Q"): it
        # stays a line of its own, and the label is the rest.
        idx = [i for i in idx if not _glyph(lines[i].text)] or idx
        order = _label_order([lines[i].box_px for i in idx], outlines[j].box_px)
        if order is not None:
            idx = [idx[n] for n in order]
            label_of[j] = (
                idx,
                join_lines([lines[i].text for i in idx]),
                min(lines[i].confidence for i in idx),
            )
    in_bar = fastpath.containing(line_boxes, bar_boxes, slack_px=2)
    used_outline = np.zeros(len(outlines), dtype=bool)
    paired: list[int] = []  # the icon-and-caption items in out
    for i, line in enumerate(lines):
        if i in field_of:
            field = fields[field_of[i]]
            out.append(
                PixelCandidate(
                    text=line.text,
                    kind=PixelKind.INPUT,
                    box_px=field.box_px,
                    confidence=line.confidence,
                    block=groups[i],
                    password=field_of[i] in secret,
                )
            )
            continue
        j = int(in_outline[i])
        kind = PixelKind.TAB if in_bar[i] >= 0 else PixelKind.TEXT
        box = line.box_px
        text, confidence = line.text, line.confidence
        promoted = j in label_of and i in label_of[j][0]
        if promoted:
            label, text, confidence = label_of[j]
            if label[0] != i:
                continue  # said by the label's first line
            kind = (
                PixelKind.TAB
                if outlines[j].kind is PixelKind.TAB or in_bar[i] >= 0
                else (PixelKind.BUTTON)
            )
            box = outlines[j].box_px
            used_outline[j] = True
        disc = holder_of.get(i, -1)
        if disc >= 0 and not promoted:  # an outline's label keeps the outline's box
            box = icons[disc].box_px
            kind = PixelKind.TAB if icon_in_bar[disc] >= 0 else PixelKind.BUTTON
            held.add(disc)
        icon = icon_of.get(i, -1)
        if icon >= 0:
            box = union_box([box, icons[icon].box_px])
            if kind is not PixelKind.TAB:
                kind = PixelKind.TAB if icon_in_bar[icon] >= 0 else PixelKind.BUTTON
            paired.append(len(out))
        out.append(
            PixelCandidate(
                text=text,
                kind=kind,
                box_px=box,
                confidence=confidence,
                block=groups[i],
            )
        )
    labelled = set(field_of.values())
    for k, a in enumerate(fields):
        if k not in labelled:
            out.append(PixelCandidate(text="", kind=a.kind, box_px=a.box_px, confidence=a.score))
    # Outlines and cards that hold no text.
    text_in_outline = set(in_outline[in_outline >= 0].tolist())
    for j, a in enumerate(outlines):
        if not used_outline[j] and j not in text_in_outline:
            out.append(PixelCandidate(text="", kind=a.kind, box_px=a.box_px, confidence=a.score))
    if cards:
        holder = fastpath.containing(line_boxes, _boxes([a.box_px for a in cards]), slack_px=4)
        with_text = set(holder[holder >= 0].tolist())
        for j, a in enumerate(cards):
            if j not in with_text:
                out.append(
                    PixelCandidate(text="", kind=a.kind, box_px=a.box_px, confidence=a.score)
                )
    # Icons that no text line covers (ICON_UNDER_SHARE).
    if icons:
        under = fastpath.intersections(icon_boxes, line_boxes) / box_areas(icon_boxes)[:, None]
        for j, a in enumerate(icons):
            if (
                caption_of[j] >= 0
                or j in held
                or (under.shape[1] and float(under[j].max()) > ICON_UNDER_SHARE)
            ):
                continue
            kind = PixelKind.TAB if icon_in_bar[j] >= 0 else a.kind
            out.append(
                PixelCandidate(
                    text="", kind=kind, box_px=a.box_px, confidence=a.score, glyph=a.glyph
                )
            )
    # One candidate per target: an icon inside its tile is the tile, two text-less candidates
    # on one spot are one, a row or group of repeated icons one icon.
    out = _one_tab_each(_bottom_nav(out, paired, [b for b in (status_bar, nav_bar) if b]))
    out = _icon_clusters(_icon_rows(_without_nested_icons(_with_toggles(out, anchors))))
    # Nothing on the system bars is a tap target for the agent: the status bar's clock,
    # battery level and notification icons do nothing in an app, and back / home / recents
    # are keys. The clock of a notification shade is a button (it opens the clock app).
    if status_bar is not None and notification_shade(lines, status_bar):
        status_bar = modal = None  # the shade's own cards and buttons lie on its dim layer
    system = [b for b in (status_bar, nav_bar) if b is not None]
    if system:
        out = [c for c in out if not any(s.contains(c.box_px.center) for s in system)]
    if status_bar is not None:
        # A status icon or a clock line that reaches a little below a bar found short.
        out = [c for c in out if 2 * _overlap(c.box_px, status_bar) <= c.box_px.area]
    if modal is not None:
        out = [c for c in out if modal.contains(c.box_px.center)]
    if not out:
        return []
    # Text first, then by confidence: duplicates of a text candidate lose to it.
    scores = np.array([c.confidence + (1.0 if c.text else 0.0) for c in out], dtype=np.float64)
    boxes = _boxes([c.box_px for c in out])
    keep = fastpath.pixel_nms(boxes, scores, 0.7)
    out = _pass_glyphs(out, boxes, keep, 0.7)
    kept = [c for c, k in zip(out, keep.tolist(), strict=True) if k]
    order = reading_order([c.box_px for c in kept], [c.kind is PixelKind.TAB for c in kept])
    return [kept[i] for i in order]


_NAV_ITEMS = (3, 5)
"""A bottom navigation bar holds this many icon-and-caption items (fewest, most)."""
_NAV_SPAN = 0.6
"""... spread across this share of the width the screen's candidates span at least."""


def _bottom_nav(
    cands: list[PixelCandidate], paired: Sequence[int], system: Sequence[BoxPx]
) -> list[PixelCandidate]:
    """The candidates with a bottom navigation bar's items as tabs, whether or not its bar was
    found as a :attr:`PixelKind.BAR` (Weibo's white bar on a white page was not, and its items
    were buttons where Maps' were tabs). The bar is a row of :data:`_NAV_ITEMS` icon-and-caption
    items (``paired`` indexes them in ``cands``) spread across the screen (:data:`_NAV_SPAN`),
    with nothing below it but the system bars (``system``); a badge on an item, or an item the
    pairing missed, may stand beside them."""
    items = [i for i in paired if cands[i].kind is PixelKind.BUTTON]
    if len(items) < _NAV_ITEMS[0]:
        return cands
    rows = line_rows([cands[i].box_px for i in items])
    row = [items[k] for k in rows[-1]]
    if not _NAV_ITEMS[0] <= len(row) <= _NAV_ITEMS[1]:
        return cands
    bottom = max(cands[i].box_px.bottom for i in row)
    rest = [
        c.box_px
        for k, c in enumerate(cands)
        if k not in row and not any(s.contains(c.box_px.center) for s in system)
    ]
    if any(b.center.y > bottom for b in rest):
        return cands
    left = min(c.box_px.left for c in cands)
    right = max(c.box_px.right for c in cands)
    boxes = [cands[i].box_px for i in row]
    if max(b.right for b in boxes) - min(b.left for b in boxes) < _NAV_SPAN * (right - left):
        return cands
    out = list(cands)
    for i in row:
        out[i] = replace(out[i], kind=PixelKind.TAB)
    return out


_TAB_INSIDE = 0.9
"""A tab lies in another when this share of its box does."""
_TAB_ICON_WIDTHS = 4
"""A text-less tab in a labelled one at most this many times its width is that tab's icon; in
a wider one (a browser's address bar and the lock in it) it is a target of its own."""


def _one_tab_each(cands: list[PixelCandidate]) -> list[PixelCandidate]:
    """An icon and its caption in a tab are one tab: a tab without a label of its own (one
    letter or sign OCR read off the icon: Yelp's "★" over "Bookmarks"; or no text, in a tab
    :data:`_TAB_ICON_WIDTHS` times as wide at most) that lies in a labelled tab is that tab,
    and goes."""
    tabs = [i for i, c in enumerate(cands) if c.kind is PixelKind.TAB]
    if len(tabs) < 2:
        return cands
    labelled = [i for i in tabs if cands[i].text and not _glyph(cands[i].text)]
    bare = [i for i in tabs if i not in labelled]
    if not labelled or not bare:
        return cands
    inner = _boxes([cands[i].box_px for i in bare])
    outer = _boxes([cands[i].box_px for i in labelled])
    share = fastpath.intersections(inner, outer) / box_areas(inner)[:, None]
    narrow = (outer[None, :, 2] - outer[None, :, 0]) <= _TAB_ICON_WIDTHS * (
        inner[:, 2:3] - inner[:, 0:1]
    )
    glyph = np.array([bool(cands[i].text) for i in bare])[:, None]
    inside = (share >= _TAB_INSIDE) & (narrow | glyph)
    gone = {i for i, v in zip(bare, inside.any(axis=1).tolist(), strict=True) if v}
    return [c for k, c in enumerate(cands) if k not in gone]


def reading_order(boxes: Sequence[BoxPx], tabs: Sequence[bool]) -> list[int]:
    """The indices of ``boxes`` in reading order: by top edge, then left edge; the tabs among
    them (``tabs``) that stand on one row (:func:`line_rows`) read left to right from the row's
    top. A bar's tabs sit a few px apart in height (an icon's ink, a caption's descenders: Search
    at 2066, Profile 2066, Home 2068, Likes 2072), and sorted by their own tops they were offered
    out of order."""
    key = [(b.top, b.left, b.bottom, b.right) for b in boxes]
    tab_idx = [i for i, t in enumerate(tabs) if t]
    if len(tab_idx) > 1:
        for row in line_rows([boxes[i] for i in tab_idx]):
            top = min(boxes[tab_idx[k]].top for k in row)
            for k in row:
                b = boxes[tab_idx[k]]
                key[tab_idx[k]] = (top, b.left, b.bottom, b.right)
    return sorted(range(len(boxes)), key=key.__getitem__)


_INK_DIFF = 60.0
"""A pixel is ink (text, icon, indicator) when its colour lies this far (Euclidean, 0-255 per
channel) from its item's fill."""
_INK_QUANTILE = 0.5
"""A tab's ink is the median colour of its inked pixels this far up their distances from the
fill: the letters' cores, mostly (a red emoji in a grey chip's label sways no median)."""
_SAME_COLOUR = 8.0
"""Two tabs' fills or inks alike: at most this far apart (CIE76 delta E: anti-aliasing and
JPEG noise)."""
_APART_COLOUR = 20.0
"""A tab drawn apart: its fill or ink this far at least (delta E) from every sibling's; a
title's grey a shade lighter than its toolbar's words (Weibo's 安全设置 beside Back, Close:
delta E 14) is not."""
_UNDERLINE_DEPTH = 0.8
"""How far under a tab's box an indicator line is looked for, in the box's heights (Material
puts it at the bar's bottom edge, Weibo's just under the word)."""
_UNDERLINE_FILL = 0.9
"""A pixel row under a tab is an indicator line when this share of the middle of the tab's
width is ink against the tab's fill (a solid bar: a row of letters has gaps)."""
_UNDERLINE_GROUND = 0.1
"""... with a row of ground (at most this share of ink) right below it, ..."""
_UNDERLINE_EDGE = 3
"""... this many rows away at most (anti-aliased edges)."""


def _colour_apart(colours: npt.NDArray[np.float64]) -> int:
    """The index of the one colour (BGR) far from all the others, the others alike; -1 if
    none."""
    if len(colours) < 3:
        return -1
    lab = cv2.cvtColor((colours / 255.0).astype(np.float32)[None], cv2.COLOR_BGR2LAB)[0]
    lab = lab.astype(np.float64)
    dist = np.sqrt(((lab[:, None, :] - lab[None, :, :]) ** 2).sum(axis=2))
    np.fill_diagonal(dist, np.inf)
    apart = [i for i in range(len(colours)) if float(dist[i].min()) >= _APART_COLOUR]
    if len(apart) != 1:
        return -1
    rest = [i for i in range(len(colours)) if i != apart[0]]
    sub = dist[np.ix_(rest, rest)]
    np.fill_diagonal(sub, 0.0)
    return apart[0] if float(sub.max()) <= _SAME_COLOUR else -1


def _tab_look(pixels: npt.NDArray[np.uint8], box: BoxPx) -> tuple[
    npt.NDArray[np.float64], npt.NDArray[np.float64], list[int], tuple[int, int]
]:
    """A tab's fill (its median colour), ink (the colour of its pixels farthest from the fill),
    the rows (frame y, each line's top) where a line runs under it (:data:`_UNDERLINE_DEPTH`,
    :data:`_UNDERLINE_FILL`) and the rows looked at (first, end)."""
    h, w = pixels.shape[:2]
    left, top = max(0, box.left), max(0, box.top)
    right, bottom = min(w, box.right), min(h, box.bottom)
    crop = pixels[top:bottom, left:right].reshape(-1, 3).astype(np.float64)
    fill = np.median(crop, axis=0)
    dist = np.sqrt(((crop - fill) ** 2).sum(axis=1))
    inked = dist >= _INK_DIFF
    if inked.sum() < max(4, 0.02 * len(dist)):
        ink = fill
    else:
        far = dist >= np.quantile(dist[inked], _INK_QUANTILE)
        ink = np.median(crop[far], axis=0)
    height = bottom - top
    span = (right - left) // 4
    first = max(top, bottom - height // 8)
    end = min(h, bottom + round(_UNDERLINE_DEPTH * height))
    strip = pixels[first:end, left + span : right - span].astype(np.float64)
    lines: list[int] = []
    if strip.size:
        # Against the tab's own fill: a line is a solid run of a few rows with ground right
        # below it (a run reaching the strip's end, or one with no ground after it, is the edge
        # of something below: the navigation bar, a picture). Above it may be the letters
        # (Weibo's indicator runs under the word's descenders, inside OCR's box).
        away = np.sqrt(((strip - fill) ** 2).sum(axis=2)) >= _INK_DIFF
        share = away.mean(axis=1)
        on = (share >= _UNDERLINE_FILL).tolist()
        off = (share <= _UNDERLINE_GROUND).tolist()
        start = -1
        for y, v in enumerate([*on, False]):
            if v and start < 0:
                start = y
            elif not v and start >= 0:
                if y - start <= max(2, height // 4) and any(off[y : y + _UNDERLINE_EDGE]):
                    lines.append(first + start)
                start = -1
    return fill, ink, lines, (first, end)


_LINE_SLACK_PX = 3
"""Lines under two tabs within this many px in height are one line (a divider under them)."""
_ROW_HEIGHTS = 1.75
"""The labelled tabs of a row are about one height: the tallest at most this many times the
lowest (a chip's outline beside a chip read as its text only: 94 and 59 px)."""
_TAB_SIZE = 1.5
"""A tab selected by its fill is at most this many times as wide (and as tall) as its widest
sibling."""


def _worded(text: str) -> bool:
    """Is this a label: two letters (or CJK characters) or more? A count or a sign OCR read off
    an icon is not."""
    return sum(ch.isalpha() for ch in text) >= 2


def selected_tabs(
    cands: Sequence[PixelCandidate], pixels: npt.NDArray[np.uint8]
) -> list[PixelCandidate]:
    """The candidates with the selected tab of each row of tabs flagged (:attr:`selected`).

    A row is two tabs or more on one line (:func:`line_rows`). Its selected tab is the one drawn
    apart from all its siblings: the only one with a line under it (Weibo's "Following", a
    Material tab indicator), or, among three labelled tabs or more whose others look alike, the
    one whose fill (a pill behind it, OneList's outlined chip) or ink (its text and icon colour:
    Habitica's white "Habits" among lilac ones) differs from every other's. When no tab or more
    than one stands apart, none is flagged: a row whose tabs all differ (a coloured "Login"
    beside the tabs) says nothing. In a row with labels, only a labelled tab is flagged."""
    tabs = [i for i, c in enumerate(cands) if c.kind is PixelKind.TAB]
    if len(tabs) < 2:
        return list(cands)
    out = list(cands)
    for row in line_rows([cands[i].box_px for i in tabs]):
        if len(row) < 2:
            continue
        idx = [tabs[k] for k in row]
        # Only labels are compared and selected: an icon beside them (a toolbar's share or "+")
        # is drawn in its own colours, and its strip may end above a divider under the labels.
        named = [k for k, i in enumerate(idx) if _worded(cands[i].text)]
        if len(named) < 2:
            continue  # icons, or one label among them: a toolbar's title, a browser's address
        heights = [cands[idx[k]].box_px.height for k in named]
        if max(heights) > _ROW_HEIGHTS * min(heights):
            continue  # a small button beside the labels (Unicom's 签到), not a row of tabs
        looks = {k: _tab_look(pixels, cands[idx[k]].box_px) for k in named}
        # A line under every labelled tab of the row is a divider under the bar, not an
        # indicator. Only rows every strip reaches down to count: a taller tab's strip reaches
        # further down (the next row of chips).
        end = min(looks[k][3][1] for k in named)
        ys = [[y for y in looks[k][2] if y < end] for k in named]
        lined = [
            named[n]
            for n, mine in enumerate(ys)
            if any(
                not all(any(abs(y - z) <= _LINE_SLACK_PX for z in theirs) for theirs in ys)
                for y in mine
            )
        ]
        picks = set()
        if len(lined) == 1:
            picks.add(lined[0])
        elif lined:
            continue  # several underlined: no one indicator
        filled = _colour_apart(np.array([looks[k][0] for k in named]))
        if filled >= 0:
            # A pill is about its siblings' size: a wide one among them is a button ("+ Follow"
            # between Weibo's "Chat" and "Recommend").
            box = cands[idx[named[filled]]].box_px
            others = [cands[idx[k]].box_px for k in named if k != named[filled]]
            wide = box.width > _TAB_SIZE * max(b.width for b in others)
            if wide or box.height > _TAB_SIZE * max(b.height for b in others):
                continue
            picks.add(named[filled])
        inked = _colour_apart(np.array([looks[k][1] for k in named]))
        if inked >= 0:
            picks.add(named[inked])
        if len(picks) == 1 and (pick := picks.pop()) in named:
            out[idx[pick]] = replace(out[idx[pick]], selected=True)
    return out
