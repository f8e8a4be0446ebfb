"""Text fields seen by the pixel channel (kind ``input``): underlines and boxed fields.

Synthetic 1080x2400 frames drawn with cv2 give the anchors; the OCR lines are given as boxes (the
boxes ``cv2.getTextSize`` reports), so no OCR model is needed except in the corpus tests.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import cv2
import numpy as np

from perception.pixel import (
    Frame,
    PixelKind,
    PixelReader,
    TextLine,
    anchors,
    build_candidates,
    find_anchors,
    frame_flags,
)
from perception.pixel.anchors import Anchor
from perception.types import BoxPx, PointPx

FONT = cv2.FONT_HERSHEY_SIMPLEX
W, H = 1080, 2400
INK = (60, 60, 60)
GREY = (150, 150, 150)
ACCENT = (200, 180, 80)
"""A focused field's underline (teal, as in the agram dialog)."""


def _screen() -> np.ndarray:
    return np.full((H, W, 3), 250, np.uint8)


def _text(img: np.ndarray, text: str, x: int, baseline: int, *, centre: bool = False) -> TextLine:
    """Draw ``text`` from ``x`` (or centred on it); its line box as OCR would give it."""
    (tw, th), base = cv2.getTextSize(text, FONT, 1.6, 3)
    if centre:
        x -= tw // 2
    cv2.putText(img, text, (x, baseline), FONT, 1.6, INK, 3, cv2.LINE_AA)
    pad = th // 4
    return TextLine(
        text=text,
        box_px=BoxPx(x - pad, baseline - th - pad, x + tw + pad, baseline + base + pad),
        confidence=0.95,
    )


def _read(
    img: np.ndarray, lines: list[TextLine], modal: BoxPx | None = None
) -> tuple[list[Anchor], list[tuple[str, PixelKind, BoxPx]]]:
    frame = Frame.from_array(img)
    anchors = find_anchors(frame, frame_flags(frame)[0])
    cands = build_candidates(lines, anchors, modal=modal)
    return anchors, [(c.text, c.kind, c.box_px) for c in cands]


def _inputs(cands: list[tuple[str, PixelKind, BoxPx]]) -> list[tuple[str, BoxPx]]:
    return [(text, box) for text, kind, box in cands if kind is PixelKind.INPUT]


def test_an_empty_underline_under_a_title_is_a_field() -> None:
    img = _screen()
    title = _text(img, "Choose characters", 150, 800)
    cv2.line(img, (90, 950), (990, 950), ACCENT, 4)
    _, cands = _read(img, [title])
    (field,) = _inputs(cands)
    assert field[0] == ""
    assert field[1].left <= 100 and field[1].right >= 980
    assert field[1].top > 800 and field[1].bottom >= 950  # below the title, down to the line
    assert ("Choose characters", PixelKind.TEXT, title.box_px) in cands


def test_a_hint_on_an_underline_is_the_fields_label() -> None:
    img = _screen()
    hint = _text(img, "Enter Username", 110, 1060)
    cv2.line(img, (90, 1100), (990, 1100), GREY, 3)
    _, cands = _read(img, [hint])
    (field,) = _inputs(cands)
    assert field[0] == "Enter Username"
    assert field[1].contains(PointPx(540, 1080)) and field[1].contains(hint.box_px.center)
    assert not [c for c in cands if c[0] == "Enter Username" and c[1] is not PixelKind.INPUT]


def test_an_outlined_box_with_a_left_hint_is_a_field_and_a_centred_label_a_button() -> None:
    img = _screen()
    cv2.rectangle(img, (80, 600), (1000, 744), GREY, 3)
    hint = _text(img, "Email", 130, 690)
    cv2.rectangle(img, (80, 1000), (1000, 1144), GREY, 3)
    label = _text(img, "SIGN IN", 540, 1090, centre=True)
    cv2.rectangle(img, (80, 1400), (1000, 1544), GREY, 3)  # empty
    _, cands = _read(img, [hint, label])
    fields = _inputs(cands)
    assert [t for t, _ in fields] == ["Email", ""]
    assert fields[0][1].contains(PointPx(900, 672)) and fields[1][1].contains(PointPx(540, 1472))
    assert [k for t, k, _ in cands if t == "SIGN IN"] == [PixelKind.BUTTON]


def test_list_dividers_are_no_fields() -> None:
    img = _screen()
    lines = []
    for k in range(5):
        y = 500 + 180 * k
        lines.append(_text(img, f"Item {k}", 110, y - 60))
        cv2.line(img, (90, y), (1000, y), GREY, 2)
    anchors, cands = _read(img, lines)
    assert not _inputs(cands)
    assert not [a for a in anchors if a.kind is PixelKind.INPUT]


def test_an_empty_grey_rule_is_no_field() -> None:
    """Only a focused (accent-coloured) underline with nothing on it is taken for a field."""
    img = _screen()
    cv2.line(img, (90, 950), (990, 950), GREY, 3)
    _, cands = _read(img, [])
    assert not _inputs(cands)


def test_an_accordion_row_is_no_field() -> None:
    """A left-aligned title on a rule, with the row's + at the rule's right end."""
    img = _screen()
    title = _text(img, "Get Help", 110, 1060)
    cv2.line(img, (930, 1040), (980, 1040), INK, 4)
    cv2.line(img, (955, 1015), (955, 1065), INK, 4)
    cv2.line(img, (90, 1100), (990, 1100), GREY, 3)
    _, cands = _read(img, [title])
    assert not _inputs(cands)


def test_a_slider_track_is_no_field() -> None:
    img = _screen()
    cv2.line(img, (120, 1200), (960, 1200), GREY, 4)
    cv2.circle(img, (400, 1200), 28, (200, 120, 40), -1)
    _, cands = _read(img, [])
    assert not _inputs(cands)


def test_a_rule_under_a_paragraph_is_no_field() -> None:
    img = _screen()
    lines = [_text(img, f"Line {k} of a paragraph", 110, 900 + 60 * k) for k in range(3)]
    cv2.line(img, (90, 1050), (990, 1050), GREY, 3)
    _, cands = _read(img, lines)
    assert not _inputs(cands)


def test_a_field_under_the_dim_layer_is_not_offered() -> None:
    img = _screen()
    cv2.line(img, (90, 700), (990, 700), ACCENT, 3)  # behind the dim layer
    cv2.line(img, (90, 1500), (990, 1500), ACCENT, 3)  # on the dialog
    _, cands = _read(img, [], modal=BoxPx(40, 1200, 1040, 1800))
    fields = _inputs(cands)
    assert len(fields) == 1 and fields[0][1].bottom >= 1500


def _corpus_fields(shot: Path) -> list[tuple[str, BoxPx]]:
    with PixelReader() as reader:
        pixels = reader.read(shot)
    return [(c.text, c.box_px) for c in pixels.candidates if c.kind is PixelKind.INPUT]


def test_agram_dialog_field_is_an_input(corpus_dir: Path) -> None:
    """A "Choose characters" dialog whose field is a bare underline (the EditText's centre is
    (540, 903), (540, 759) once the keyboard is up): it had no candidate at all."""
    for step, centre in (("step_003", PointPx(540, 903)), ("step_004", PointPx(540, 759))):
        shot = corpus_dir / "fdroidutg_apps/us.achromaticmetaphor.agram" / step / "screen.jpg"
        fields = _corpus_fields(shot)
        assert [text for text, b in fields if b.contains(centre)] == [""], (step, fields)


def test_bitbar_boxed_field_with_its_hint_is_an_input(corpus_dir: Path) -> None:
    """An outlined field whose hint starts at its left padding: it was offered as a button."""
    shot = corpus_dir / "droidbot_bitbar/bitbar_2024-03-20/step_001/screen.png"
    fields = _corpus_fields(shot)
    assert [text for text, b in fields if b.contains(PointPx(540, 1244))] == [
        "Please type your name to proceed"
    ]


def _pill(
    img: np.ndarray, x0: int, y0: int, x1: int, y1: int, colour: tuple[int, int, int]
) -> None:
    """An outline with fully rounded ends (chatter's sign-up fields, Google's search bars)."""
    r = (y1 - y0) // 2
    cv2.line(img, (x0 + r, y0), (x1 - r, y0), colour, 3, cv2.LINE_AA)
    cv2.line(img, (x0 + r, y1), (x1 - r, y1), colour, 3, cv2.LINE_AA)
    cv2.ellipse(img, (x0 + r, y0 + r), (r, r), 0, 90, 270, colour, 3, cv2.LINE_AA)
    cv2.ellipse(img, (x1 - r, y0 + r), (r, r), 0, -90, 90, colour, 3, cv2.LINE_AA)


def _small_text(img: np.ndarray, text: str, x: int, baseline: int) -> TextLine:
    """A floating label's smaller line, and its box as OCR would give it."""
    (tw, th), base = cv2.getTextSize(text, FONT, 0.9, 2)
    cv2.putText(img, text, (x, baseline), FONT, 0.9, INK, 2, cv2.LINE_AA)
    pad = th // 4
    return TextLine(
        text=text,
        box_px=BoxPx(x - pad, baseline - th - pad, x + tw + pad, baseline + base + pad),
        confidence=0.95,
    )


def _two_pills(upper: str, lower: str) -> list[tuple[str, PixelKind, BoxPx]]:
    """Two pill outlines, one above the other, each with its line centred in it."""
    img = _screen()
    _pill(img, 100, 600, 980, 720, GREY)
    first = _text(img, upper, 540, 678, centre=True)
    _pill(img, 100, 1000, 980, 1120, GREY)
    second = _text(img, lower, 540, 1078, centre=True)
    return _read(img, [first, second])[1]


def test_a_pill_with_a_centred_hint_is_a_field_and_one_with_an_action_a_button() -> None:
    """A centred line in an outline is a button's label unless it reads as a hint."""
    cands = _two_pills("Enter Email", "Login")
    fields = _inputs(cands)
    assert [t for t, _ in fields] == ["Enter Email"]
    assert fields[0][1].contains(PointPx(540, 660)) and fields[0][1].contains(PointPx(200, 660))
    assert [k for t, k, _ in cands if t == "Login"] == [PixelKind.BUTTON]


def test_a_hint_glued_by_ocr_still_reads_as_a_hint() -> None:
    """OCR drops the space of "Enter Password"; "Entertainment" is no hint."""
    cands = _two_pills("EnterPassword", "Entertainment")
    assert [t for t, _ in _inputs(cands)] == ["EnterPassword"]


def _magnifier(img: np.ndarray, cx: int, cy: int) -> None:
    cv2.circle(img, (cx - 6, cy - 6), 18, INK, 4, cv2.LINE_AA)
    cv2.line(img, (cx + 7, cy + 7), (cx + 22, cy + 22), INK, 4, cv2.LINE_AA)


def test_a_search_box_with_its_magnifier_is_a_field_and_a_dropdown_is_not() -> None:
    """A left hint with an icon at the right end is a search box when the hint says so; a
    dropdown (its value, its arrow) looks the same but says no hint."""
    img = _screen()
    cv2.rectangle(img, (60, 600), (1020, 730), GREY, 3)
    hint = _text(img, "Find help...", 100, 685)
    _magnifier(img, 950, 665)
    cv2.rectangle(img, (60, 1000), (1020, 1130), GREY, 3)
    value = _text(img, "AdGuard for Android", 100, 1085)
    cv2.line(img, (930, 1050), (955, 1075), INK, 4, cv2.LINE_AA)
    cv2.line(img, (955, 1075), (980, 1050), INK, 4, cv2.LINE_AA)
    _, cands = _read(img, [hint, value])
    fields = _inputs(cands)
    assert [t for t, _ in fields] == ["Find help"]  # the merge drops a truncation's ".."
    assert fields[0][1].contains(PointPx(540, 665))
    assert not [k for t, k, _ in cands if t == "AdGuard for Android" and k is PixelKind.INPUT]


def test_a_search_bar_between_its_icons_is_a_field() -> None:
    """A pill with a logo at its left, the hint, and a microphone and an avatar at its right."""
    img = _screen()
    _pill(img, 40, 600, 1040, 740, GREY)
    cv2.circle(img, (120, 670), 22, (60, 60, 200), -1)
    hint = _text(img, "Search here", 180, 690)
    cv2.rectangle(img, (820, 645), (840, 690), INK, -1)  # the microphone
    cv2.circle(img, (940, 670), 28, (120, 120, 120), -1)  # the account's avatar
    _, cands = _read(img, [hint])
    fields = _inputs(cands)
    assert [t for t, _ in fields] == ["Search here"]
    assert fields[0][1].left <= 60 and fields[0][1].right >= 1020


def _clipped(img: np.ndarray, text: str, x: int, baseline: int, right: int) -> TextLine:
    """A line cut off at ``right`` (an address bar's URL that runs on past its box)."""
    line = _text(img, text, x, baseline)
    img[line.box_px.top - 10 : line.box_px.bottom + 10, right:] = 250
    return TextLine(
        text=text,
        box_px=BoxPx(line.box_px.left, line.box_px.top, right, line.box_px.bottom),
        confidence=0.95,
    )


def test_an_address_bar_cutting_off_its_url_is_a_field() -> None:
    """A URL that runs on to the box's right edge is an address bar's; a label that does so
    and reads as no address or hint stays what it was."""
    img = _screen()
    url = _clipped(img, "https://github.com/jroal/a2dpvolume/issues", 80, 685, 700)
    cv2.rectangle(img, (40, 610), (710, 740), GREY, 3)
    words = _clipped(img, "Destroy and create new webviews now", 80, 1085, 700)
    cv2.rectangle(img, (40, 1010), (710, 1140), GREY, 3)
    _, cands = _read(img, [url, words])
    assert [t for t, _ in _inputs(cands)] == ["https://github.com/jroal/a2dpvolume/issues"]


def test_a_filled_field_with_a_floating_label_is_a_field() -> None:
    """A tinted box holding a small label over its value: the value labels the field and the
    label stays a line of its own. Two lines of one size in a box are no field."""
    img = _screen()
    cv2.rectangle(img, (40, 600), (1040, 760), (215, 215, 215), -1)
    cv2.line(img, (40, 758), (1040, 758), INK, 3)
    label = _small_text(img, "Task Title", 70, 650)
    value = _text(img, "Buy milk", 70, 725)
    cv2.rectangle(img, (40, 1000), (1040, 1160), (215, 215, 215), -1)
    one = _text(img, "First line", 70, 1060)
    two = _text(img, "Second line", 70, 1130)
    _, cands = _read(img, [label, value, one, two])
    fields = _inputs(cands)
    assert [t for t, _ in fields] == ["Buy milk"]
    assert fields[0][1].contains(PointPx(540, 640)) and fields[0][1].contains(PointPx(540, 740))
    assert ("Task Title", PixelKind.TEXT, label.box_px) in cands


def test_chatter_pill_fields_with_centred_hints_are_inputs(corpus_dir: Path) -> None:
    """Four pill-shaped fields whose hints are centred ("Enter Username" ...): they were
    offered as buttons."""
    shot = next((corpus_dir / "testcube_transsion/chatter_2025-01-25/step_003").glob("screen.*"))
    fields = _corpus_fields(shot)
    for centre in (PointPx(510, 842), PointPx(464, 985), PointPx(507, 1128), PointPx(541, 1271)):
        assert len([t for t, b in fields if b.contains(centre)]) == 1, (centre, fields)


def test_search_box_with_a_magnifier_and_an_address_bar_are_inputs(corpus_dir: Path) -> None:
    """Firefox's "Find help..." box (a magnifier at its right end) and a WebView tester's
    address bar (its URL cut off at the box's edge): they were buttons."""
    for path, centre in (
        ("fdroidutg_apps/mattecarra.accapp/step_004", PointPx(540, 654)),
        ("droidbot_a2dpvol_lowres/a2dpvol_2018-06-05/step_004", PointPx(153, 110)),
    ):
        shot = next((corpus_dir / path).glob("screen.*"))
        fields = _corpus_fields(shot)
        assert len([t for t, b in fields if b.contains(centre)]) == 1, (path, fields)


def test_habitica_filled_field_under_its_floating_label_is_an_input(corpus_dir: Path) -> None:
    """A filled field whose label "Task Title" floats over its value: it was plain text."""
    shot = next((corpus_dir / "droidbot_habitica/habitica_2020-08-29/step_007").glob("screen.*"))
    fields = _corpus_fields(shot)
    assert [t for t, b in fields if b.contains(PointPx(540, 320))] == ["Add a task to Habitica"]


def test_a_box_too_thin_to_have_an_inside_is_no_field_and_no_warning() -> None:
    """A 6-pixel outline in a tiny frame's scaled copy has no inside past its 3-pixel borders:
    its median was taken of nothing (numpy's "Mean of empty slice" on every such frame; random
    frames through ``perceive`` found it)."""
    gray = np.full((60, 56), 200, np.uint8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        found = anchors._boxed_fields(
            gray, np.zeros_like(gray), [(PixelKind.BUTTON, BoxPx(2, 20, 54, 26), 0.9)], 56
        )
    assert found == []
