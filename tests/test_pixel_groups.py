"""Icons and their captions become one candidate (bottom navigation, app grids, share sheets).

Synthetic frames drawn with cv2 give the anchors; the OCR lines are given as boxes (the caption
boxes ``cv2.getTextSize`` reports), so no OCR model is needed except in the corpus test.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from perception.pixel import (
    Anchor,
    Frame,
    PixelKind,
    PixelReader,
    TextLine,
    build_candidates,
    find_anchors,
    frame_flags,
)
from perception.pixel.merge import clock_status_bar, pair_captions
from perception.types import BoxPx, PointPx

FONT = cv2.FONT_HERSHEY_SIMPLEX


def _caption(img: np.ndarray, text: str, cx: int, baseline: int, scale: float = 0.9) -> TextLine:
    """Draw ``text`` centred on ``cx``; its line box as OCR would give it (a little padding)."""
    (tw, th), base = cv2.getTextSize(text, FONT, scale, 2)
    x = cx - tw // 2
    cv2.putText(img, text, (x, baseline), FONT, scale, (70, 70, 70), 2, cv2.LINE_AA)
    pad = th // 4
    box = BoxPx(x - pad, baseline - th - pad, x + tw + pad, baseline + base + pad)
    return TextLine(text=text, box_px=box, confidence=0.95)


def bottom_navigation() -> tuple[np.ndarray, list[TextLine], list[int]]:
    """A 720x1280 screen whose bottom bar holds four icon-over-caption items."""
    img = np.full((1280, 720, 3), 250, np.uint8)
    cv2.line(img, (0, 1130), (720, 1130), (200, 200, 200), 2)  # the bar's top edge
    lines = []
    centres = [90, 270, 450, 630]
    for cx, label in zip(centres, ["Nearby", "Search", "Me", "Bookmarks"], strict=True):
        cv2.circle(img, (cx, 1170), 20, (90, 90, 90), 3)
        cv2.line(img, (cx - 8, 1170), (cx + 8, 1170), (90, 90, 90), 3)
        lines.append(_caption(img, label, cx, 1232))
    return img, lines, centres


def test_an_icon_over_its_caption_is_one_tab() -> None:
    img, lines, centres = bottom_navigation()
    frame = Frame.from_array(img)
    anchors = find_anchors(frame, frame_flags(frame)[0])
    icons = [a for a in anchors if a.kind is PixelKind.ICON and 1130 < a.box_px.top < 1200]
    assert len(icons) == 4
    cands = build_candidates(lines, anchors)
    items = [c for c in cands if c.box_px.top > 1130]
    assert [c.text for c in items] == ["Nearby", "Search", "Me", "Bookmarks"]
    assert all(c.kind is PixelKind.TAB for c in items)
    for c, cx in zip(items, centres, strict=True):
        # the box spans icon and caption: a tap on the icon, the caption or between them hits
        for y in (1155, 1192, 1225):
            assert c.box_px.contains(PointPx(cx, y)), (c, y)
    assert not any(c.kind is PixelKind.TAB and not c.text for c in cands)


def _line(text: str, box: tuple[int, int, int, int]) -> TextLine:
    return TextLine(text=text, box_px=BoxPx(*box), confidence=0.9)


def _icon(box: tuple[int, int, int, int], kind: PixelKind = PixelKind.ICON) -> Anchor:
    return Anchor(kind=kind, box_px=BoxPx(*box), score=0.8)


def test_outside_a_bar_the_item_is_a_button() -> None:
    # An app grid: a 60 px icon, its label 12 px below.
    cands = build_candidates([_line("Camera", (60, 172, 160, 204))], [_icon((80, 100, 140, 160))])
    assert [(c.text, c.kind, c.box_px) for c in cands] == [
        ("Camera", PixelKind.BUTTON, BoxPx(60, 100, 160, 204))
    ]


def test_what_is_not_a_caption_stays_apart() -> None:
    icon = _icon((80, 100, 140, 160))
    not_captions = [
        _line("Camera", (60, 215, 160, 247)),  # more than a line below the icon
        _line("Camera", (130, 172, 230, 204)),  # centred off the icon
        _line("A paragraph of text under an avatar", (-200, 172, 420, 204)),  # far too wide
        _line("Big", (80, 172, 140, 252)),  # taller than the icon: a heading, not a caption
        _line("Above", (60, 40, 160, 80)),  # above the icon
    ]
    for line in not_captions:
        cands = build_candidates([line], [icon])
        assert sorted(c.kind for c in cands) == sorted([PixelKind.TEXT, PixelKind.ICON]), line


def test_a_label_read_in_pieces_inside_one_outline_is_one_button() -> None:
    # OCR reads "YES, TURN IT ON" as two lines on one row inside the button's outline.
    outline = _icon((510, 840, 965, 915), PixelKind.BUTTON)
    row = [_line("It ON", (774, 865, 874, 891)), _line("YES, TURN", (604, 865, 782, 891))]
    cands = build_candidates(row, [outline])
    assert [(c.text, c.kind, c.box_px) for c in cands] == [
        ("YES, TURN It ON", PixelKind.BUTTON, BoxPx(510, 840, 965, 915))
    ]
    # CJK pieces join without a space.
    cjk = [_line("信软", (545, 860, 615, 900)), _line("件许可", (615, 860, 730, 900))]
    assert [c.text for c in build_candidates(cjk, [outline])] == ["信软件许可"]
    # The tabs of a bar drawn as one outline stand further apart than a word space: apart.
    bar = _icon((0, 1762, 1080, 1920), PixelKind.TAB)
    tabs = [_line("Habits", (63, 1798, 177, 1910)), _line("Dailies", (298, 1796, 417, 1910))]
    assert sorted(c.text for c in build_candidates(tabs, [bar])) == ["Dailies", "Habits"]
    # A magnifier OCR read as "Q" is not part of the search field's label; a count is.
    field = _icon((40, 200, 1040, 320), PixelKind.BUTTON)
    search = [_line("Q", (80, 240, 110, 280)), _line("Search for burgers", (130, 240, 520, 280))]
    assert sorted((c.text, c.kind) for c in build_candidates(search, [field])) == [
        ("Q", PixelKind.TEXT), ("Search for burgers", PixelKind.BUTTON)
    ]
    inbox = [_line("Inbox", (545, 860, 680, 900)), _line("3", (700, 860, 725, 900))]
    assert [c.text for c in build_candidates(inbox, [outline])] == ["Inbox 3"]
    # Two rows inside one outline (a card's title and body) stay two lines.
    card = [_line("Title", (530, 845, 700, 870)), _line("Body", (530, 880, 700, 905))]
    assert [c.text for c in build_candidates(card, [outline])] == ["Title", "Body"]


def test_a_label_wrapped_onto_two_lines_is_one_button() -> None:
    """droidbot_a2dpvol_lowres: "STORED" over "LOCATION", centred in one button, and the edges
    of the bold capitals make outlines of their own that hug each word."""
    button = _icon((16, 140, 194, 214), PixelKind.BUTTON)
    words = [_line("LOCATION", (53, 178, 159, 202)), _line("STORED", (63, 153, 148, 177))]
    hugging = [_icon(b, PixelKind.BUTTON) for b in ((64, 154, 148, 176), (52, 178, 158, 200))]
    cands = build_candidates(words, [button, *hugging])
    assert [(c.text, c.kind, c.box_px) for c in cands] == [
        ("STORED LOCATION", PixelKind.BUTTON, button.box_px)
    ]
    # Lines stacked but not centred in the outline are a title and its body: apart.
    left = [_line("Wi-Fi", (30, 150, 90, 172)), _line("Connected", (30, 180, 150, 202))]
    assert [c.text for c in build_candidates(left, [button])] == ["Wi-Fi", "Connected"]
    # Four lines are a paragraph, not a label.
    para = [_line(f"line {k}", (60, 142 + 17 * k, 150, 156 + 17 * k)) for k in range(4)]
    assert len(build_candidates(para, [button])) == 4


def test_the_system_navigation_bar_offers_no_buttons() -> None:
    """Back, home and recents are keys for the agent; the pixels cannot tell which is which
    (vendors order them differently), so their unlabelled icons are left out."""
    nav = BoxPx(0, 2272, 1080, 2400)
    anchors = [_icon((204, 2314, 246, 2360)), _icon((518, 2316, 562, 2358)),
               _icon((100, 2000, 160, 2060))]
    kept = build_candidates([], anchors, nav_bar=nav)
    assert [c.box_px for c in kept] == [BoxPx(100, 2000, 160, 2060)]
    assert len(build_candidates([], anchors)) == 3


def test_each_icon_takes_its_nearest_caption_once() -> None:
    icons = np.array([[80, 100, 140, 160], [80, 30, 140, 90]], dtype=np.int32)
    lines = np.array([[60, 172, 160, 204], [60, 210, 160, 242]], dtype=np.int32)
    # the lower icon takes the line right under it; the upper one has none (a line and an icon
    # lie between), and the second line is nobody's caption
    assert pair_captions(icons, lines) == [0, -1]
    assert pair_captions(icons[:0], lines) == [] and pair_captions(icons, lines[:0]) == [-1, -1]


def test_a_flat_icon_takes_a_caption_as_tall_as_its_width() -> None:
    """Yelp's "Activity" icon is a pulse line, 80x58 px, over a 73 px caption line: measured
    against the icon's height (1.25 x 58) the caption was half a pixel too tall."""
    icons = np.array([[960, 2220, 1040, 2278]], dtype=np.int32)
    lines = np.array([[940, 2290, 1060, 2363]], dtype=np.int32)
    assert pair_captions(icons, lines) == [0]
    # a line taller than 1.25 times the icon's longer side names something else
    assert pair_captions(icons, np.array([[940, 2290, 1060, 2392]], dtype=np.int32)) == [-1]


def test_yelp_bottom_navigation_item_is_one_candidate(corpus_dir: Path) -> None:
    # The tap on "Bookmarks" lands between the icon and its caption (DroidBot's recorded tap).
    shot = corpus_dir / "droidbot_yelp/yelp_2017/step_004/screen.png"
    pixels = PixelReader().read(shot.read_bytes())
    tap = PointPx(1296, 2294)
    (hit,) = [c for c in pixels.candidates if c.box_px.contains(tap)]
    assert hit.text == "Bookmarks" and hit.kind is PixelKind.TAB
    # one candidate per item, each spanning its icon and its caption
    bar = [c for c in pixels.candidates if c.box_px.top >= 2200 and c.box_px.bottom <= 2380]
    bar.sort(key=lambda c: c.box_px.left)
    assert [c.text for c in bar] == ["Nearby", "Search", "Me", "Activity", "Bookmarks"]
    assert all(c.kind is PixelKind.TAB and c.box_px.height > 120 for c in bar)


def test_yelp_activity_tab_is_its_icon_and_caption(corpus_dir: Path) -> None:
    """DroidBot's tap on "Activity" lands on the flat pulse-line icon over the caption."""
    shot = corpus_dir / "droidbot_yelp/yelp_2017/step_009/screen.png"
    pixels = PixelReader().read(shot.read_bytes())
    (hit,) = [c for c in pixels.candidates if c.box_px.contains(PointPx(1008, 2294))]
    assert hit.text == "Activity" and hit.kind is PixelKind.TAB


def coloured_toolbar(status_bar: bool) -> tuple[np.ndarray, list[TextLine]]:
    """A 1080x2340 screen under a green toolbar holding a title and two action icons, with a
    status bar of the same green above it (clock and battery) or none (a full-screen app)."""
    img = np.full((2340, 1080, 3), 250, np.uint8)
    top = 96 if status_bar else 0
    img[: top + 168] = (96, 200, 60)
    lines = [_caption(img, "Paint", 160, top + 104, scale=1.6)]
    for cx in (760, 900):
        cv2.rectangle(img, (cx - 30, top + 54), (cx + 30, top + 114), (255, 255, 255), 6)
    if status_bar:
        lines.append(_caption(img, "9:45", 80, 64))
        cv2.rectangle(img, (980, 30), (1040, 66), (255, 255, 255), -1)  # the battery
    return img, lines


def test_a_full_screen_app_keeps_the_icons_of_the_toolbar_at_its_top_edge() -> None:
    """anupam.acrylic hides the status bar: its toolbar starts at the frame's top edge, where
    the status bar would be. Its icons were left out as status-bar icons, and the coloured bar
    was taken for a highlighted tab that the title took the whole box of."""
    img, lines = coloured_toolbar(status_bar=False)
    frame = Frame.from_array(img)
    flags = frame_flags(frame)[0]
    assert flags.status_bar_box(frame.size) is None
    assert clock_status_bar(lines, frame.size) is None
    cands = build_candidates(lines, find_anchors(frame, flags))
    (title,) = [c for c in cands if c.text]
    assert title.kind is PixelKind.TEXT and title.box_px == lines[0].box_px
    icons = [c for c in cands if c.kind is PixelKind.ICON]
    assert sorted(c.box_px.center.x // 10 for c in icons) == [76, 90]


def test_the_clock_tells_a_status_bar_the_luma_profile_missed() -> None:
    """The same green from the frame's top edge to the toolbar's lower edge: the profile sees
    one band. The clock places the status bar; the clock and the battery are left out (as
    where the profile finds the bar and OCR skips it), the toolbar kept."""
    img, lines = coloured_toolbar(status_bar=True)
    frame = Frame.from_array(img)
    flags = frame_flags(frame)[0]
    status = clock_status_bar(lines, frame.size)
    assert status is not None and 90 <= status.bottom <= 130
    cands = build_candidates(lines, find_anchors(frame, flags), status_bar=status)
    assert sorted(c.text for c in cands if c.text) == ["Paint"]
    icons = [c for c in cands if not c.text]
    assert sorted(c.box_px.center.x // 10 for c in icons) == [76, 90]
    # A time in the content is not a clock: not near the top, or not alone on its line.
    size = frame.size
    assert clock_status_bar([_line("10:30", (40, 900, 200, 960))], size) is None
    assert clock_status_bar([_line("Meet at 10:30 today", (40, 30, 500, 80))], size) is None
    assert clock_status_bar([_line("4:12PM", (110, 23, 334, 57))], size) == BoxPx(0, 0, 1080, 80)


def test_acrylic_toolbar_icons_are_candidates(corpus_dir: Path) -> None:
    # DroidBot's recorded tap on the brush icon of a toolbar drawn where the status bar would be.
    shot = corpus_dir / "fdroidutg_apps/anupam.acrylic/step_002/screen.jpg"
    pixels = PixelReader().read(shot.read_bytes())
    (hit,) = [c for c in pixels.candidates if c.box_px.contains(PointPx(744, 84))]
    assert hit.kind is PixelKind.ICON and hit.box_px.width < 100
    (title,) = [c for c in pixels.candidates if c.text == "Acrylic Paint"]
    assert title.kind is PixelKind.TEXT and title.box_px.width < 500


def test_a_glyph_read_off_two_icons_leaves_both_icons() -> None:
    """OneList's toolbar: one detection box over ⚙ and +, read "+". The glyph names neither
    icon, and as a line it hid both (an icon under a line is dropped as the line's)."""
    pair = [_icon((864, 126, 912, 180)), _icon((958, 128, 1010, 178))]
    cands = build_candidates([_line("+", (856, 117, 1020, 191))], pair)
    assert [(c.text, c.box_px) for c in cands] == [("", a.box_px) for a in pair]
    # A glyph over one icon is that icon's reading, and a word over letters taken for icons
    # is a word: both stay lines.
    one = build_candidates([_line("+", (950, 117, 1020, 191))], pair[1:])
    assert [c.text for c in one] == ["+"]
    word = build_candidates([_line("Hello", (856, 117, 1020, 191))], pair)
    assert [c.text for c in word] == ["Hello"]
