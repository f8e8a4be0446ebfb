"""Text fields seen by the pixel channel (kind ``input``): underlines and boxed fields.

Synthetic 1080x2400 frames drawn with cv2 give the anchors; the OCR lines are given as boxes (the
boxes ``cv2.getTextSize`` reports), so no OCR model is needed except in the corpus tests.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from perception.pixel import (
    Frame,
    PixelKind,
    PixelReader,
    TextLine,
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
