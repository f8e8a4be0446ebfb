"""Text fields the pixel channel missed (audit 19C, defect 3) and password fields (defect 9).

A form's fields stacked one under the other, or wide enough to be called cards, were dropped
before their hint was read; a field whose hint or value says password was not flagged. Frames
are drawn as in ``test_pixel_fields`` (OCR lines given as the boxes ``cv2.getTextSize``
reports); the corpus tests read real screens with OCR.
"""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
from _frames import png
from test_pixel_fields import _small_text

from perception import Perceiver, PixelReader
from perception.pipeline import PixelChannel
from perception.pixel import Frame, PixelKind, TextLine, build_candidates, find_anchors, frame_flags
from perception.pixel.merge import PixelCandidate
from perception.types import BoxPx, PointPx

FONT = cv2.FONT_HERSHEY_SIMPLEX
W, H = 1080, 2400
INK = (60, 60, 60)
GREY = (150, 150, 150)


def _screen() -> np.ndarray:
    return np.full((H, W, 3), 250, np.uint8)


def _text(
    img: np.ndarray, text: str, x: int, baseline: int, *, centre: bool = False, said: str = ""
) -> TextLine:
    """Draw ``text`` from ``x`` (or centred on it); its line box as OCR would give it, reading
    ``said`` when given (what OCR makes of dots Hershey cannot draw)."""
    (tw, th), base = cv2.getTextSize(text, FONT, 1.6, 3)
    if centre:
        x -= tw // 2
    cv2.putText(img, text, (x, baseline), FONT, 1.6, INK, 3, cv2.LINE_AA)
    pad = th // 4
    return TextLine(
        text=said or text,
        box_px=BoxPx(x - pad, baseline - th - pad, x + tw + pad, baseline + base + pad),
        confidence=0.95,
    )


def _candidates(img: np.ndarray, lines: list[TextLine]) -> list[PixelCandidate]:
    frame = Frame.from_array(img)
    return build_candidates(lines, find_anchors(frame, frame_flags(frame)[0]))


def _inputs(cands: list[PixelCandidate]) -> list[PixelCandidate]:
    return [c for c in cands if c.kind is PixelKind.INPUT]


def _stacked(first: str, second: str, *, centre: bool) -> list[PixelCandidate]:
    """Two outlined boxes of a form, the second 20 px under the first (list rows' spacing)."""
    img = _screen()
    lines = []
    for k, text in enumerate((first, second)):
        top = 600 + 160 * k
        cv2.rectangle(img, (80, top), (1000, top + 140), GREY, 3)
        x = 540 if centre else 120
        lines.append(_text(img, text, x, top + 92, centre=centre))
    return _candidates(img, lines)


def test_stacked_outlines_whose_lines_read_as_hints_are_fields() -> None:
    """A login form's two outlined fields, one against the next: they look like a list's rows
    and were dropped before their hints were read."""
    for centre in (False, True):
        fields = _inputs(_stacked("Enter Email", "Enter Password", centre=centre))
        assert [c.text for c in fields] == ["Enter Email", "Enter Password"], centre
        assert fields[0].box_px.contains(PointPx(900, 670))
        assert fields[1].box_px.contains(PointPx(900, 830))


def test_stacked_rows_that_say_no_hint_stay_rows() -> None:
    """A settings list drawn as stacked outlines: its rows are no fields."""
    for centre in (False, True):
        cands = _stacked("Bluetooth", "Display", centre=centre)
        assert not _inputs(cands), centre
        assert {c.text for c in cands} >= {"Bluetooth", "Display"}


def test_a_card_wide_outline_with_a_hint_is_a_field() -> None:
    """An outline wide and tall enough for a card (chatter's login fields): a field when its
    one line reads as a hint; a card saying anything else stays what it was."""
    img = _screen()
    cv2.rectangle(img, (60, 600), (1020, 800), GREY, 3)
    hint = _text(img, "Search the web", 540, 725, centre=True)
    cv2.rectangle(img, (60, 1200), (1020, 1400), GREY, 3)
    other = _text(img, "Daily summary", 540, 1325, centre=True)
    fields = _inputs(_candidates(img, [hint, other]))
    assert [c.text for c in fields] == ["Search the web"]
    assert fields[0].box_px.contains(PointPx(540, 700))


def test_a_field_over_a_photo_is_a_field() -> None:
    """A white outline over a photo's clouds (darker than its border, edges beside its hint):
    the outline is no flat dark fill, and its one line still reads as a hint."""
    img = _screen()
    rng = np.random.default_rng(7)
    sky = cv2.GaussianBlur(rng.integers(60, 200, (H // 40, W // 40), dtype=np.uint8), (3, 3), 0)
    img[:] = cv2.resize(sky, (W, H), interpolation=cv2.INTER_CUBIC)[..., None]
    cv2.line(img, (780, 700), (960, 730), (235, 235, 235), 3, cv2.LINE_AA)  # a cloud's rim
    cv2.rectangle(img, (60, 600), (1020, 800), (255, 255, 255), 5)
    hint = _text(img, "Enter Email", 540, 725, centre=True)
    fields = _inputs(_candidates(img, [hint]))
    assert [c.text for c in fields] == ["Enter Email"]


def test_a_field_whose_hint_or_value_says_password_is_flagged() -> None:
    """The hint "EnterPassword" (OCR's), "Passwort", 密码 (given as OCR would read it) and a
    value of dots flag their fields; "Enter Email" and "Pass the salt" do not."""
    img = _screen()
    said = ["EnterPassword", "Passwort", "请输入密码", "••••••••", "Enter Email", "Search passes"]
    lines = []
    for k, text in enumerate(said):
        top = 400 + 300 * k
        cv2.rectangle(img, (80, top), (1000, top + 140), GREY, 3)
        drawn = text if text.isascii() else "xxxxxxxx"
        lines.append(_text(img, drawn, 120, top + 92, said=text))
    cands = _inputs(_candidates(img, lines))
    assert [(c.text, c.password) for c in cands] == [
        ("EnterPassword", True),
        ("Passwort", True),
        ("请输入密码", True),
        ("••••••••", True),
        ("Enter Email", False),
        ("Search passes", False),
    ]


def test_chatter_login_fields_are_two_inputs_and_the_password_one_is_flagged(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """Chatter's login: two outlined fields over a photo ("Enter Email", "Enter Password")
    came out as one card and two plain lines; the second is a password field (the tree says
    ``password="true"``), and the prompt says ``pw`` for it."""
    for step in ("step_002", "step_013"):
        shot = next((corpus_dir / "testcube_transsion/chatter_2025-01-25" / step).glob("screen.*"))
        fields = _inputs(list(reader.read(shot).candidates))
        email = [c for c in fields if c.box_px.contains(PointPx(360, 635))]
        password = [c for c in fields if c.box_px.contains(PointPx(360, 810))]
        assert len(email) == 1 and len(password) == 1, (step, fields)
        assert not email[0].password and password[0].password, (step, fields)
    obs = Perceiver(pixels=PixelChannel(reader)).perceive(frame=png(cv2.imread(str(shot))))
    rows = json.loads(obs.to_prompt())["input"]
    assert [row[-1] == "pw" for row in rows] == [False, True], rows


def test_chatter_register_password_fields_are_flagged(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """The sign-up form's "Enter Password" and "Enter Password..." pills (``password="true"``
    in the tree) are flagged; its username and email pills are not."""
    shot = next((corpus_dir / "testcube_transsion/chatter_2025-01-25/step_003").glob("screen.*"))
    fields = _inputs(list(reader.read(shot).candidates))
    flagged = [
        c.password
        for centre in (PointPx(510, 842), PointPx(464, 985), PointPx(507, 1128), PointPx(541, 1271))
        for c in fields
        if c.box_px.contains(centre)
    ]
    assert flagged == [False, False, True, True], fields


ACCENT = (200, 150, 30)
"""A focused field's underline (Samsung Messages' blue)."""


def _cross(img: np.ndarray, cx: int, cy: int) -> None:
    cv2.line(img, (cx - 16, cy - 16), (cx + 16, cy + 16), INK, 4, cv2.LINE_AA)
    cv2.line(img, (cx - 16, cy + 16), (cx + 16, cy - 16), INK, 4, cv2.LINE_AA)


def test_a_focused_underline_with_its_clear_cross_is_a_field() -> None:
    """A value on an accent-coloured underline with a clear cross at its right end (a
    recipient field): the cross is the field's, not a row's action. On a grey rule the same
    drawing stays a row with its action (an accordion's +, see ``test_pixel_fields``)."""
    img = _screen()
    value = _text(img, "bdcc", 110, 1060)
    _cross(img, 960, 1045)
    cv2.line(img, (90, 1100), (990, 1100), ACCENT, 4)
    row = _text(img, "bdcc", 110, 1560)
    _cross(img, 960, 1545)
    cv2.line(img, (90, 1600), (990, 1600), GREY, 4)
    fields = _inputs(_candidates(img, [value, row]))
    assert [c.text for c in fields] == ["bdcc"]
    assert fields[0].box_px.contains(PointPx(540, 1060))


def test_samsung_recipient_field_with_its_clear_cross_is_an_input(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """Samsung Messages' recipient field ("bdcc" on a blue underline, a ✕ at its end) was a
    plain line."""
    shot = next((corpus_dir / "adb_oneoffs/samsung_messages_tablet").glob("screen.*"))
    fields = _inputs(list(reader.read(shot).candidates))
    assert [c.text for c in fields if c.box_px.contains(PointPx(1000, 247))] == ["bdcc"]


def test_a_tall_filled_field_under_its_floating_label_is_a_field() -> None:
    """A notes field: a filled box 0.27 of the width tall, its label over its hint and room
    for more lines under it. As tall a box with one line and no label is no field."""
    img = _screen()
    cv2.rectangle(img, (40, 600), (1040, 890), (215, 215, 215), -1)
    cv2.line(img, (40, 888), (1040, 888), INK, 3)
    label = _small_text(img, "Notes", 70, 650)
    hint = _text(img, "Either a Habit or a To Do", 70, 725)
    cv2.rectangle(img, (40, 1200), (1040, 1490), (215, 215, 215), -1)
    alone = _text(img, "Weekly report", 70, 1325)
    cands = _candidates(img, [label, hint, alone])
    fields = _inputs(cands)
    assert [c.text for c in fields] == ["Either a Habit or a To Do"]
    assert fields[0].box_px.contains(PointPx(540, 850))
    assert [c.kind for c in cands if c.text == "Notes"] == [PixelKind.TEXT]


def test_habitica_notes_field_is_an_input(corpus_dir: Path, reader: PixelReader) -> None:
    """Habitica's "Notes" field (a filled box taller than one line, its label floating over
    the hint) was two plain lines."""
    for step in ("step_002", "step_007"):
        shot = next((corpus_dir / "droidbot_habitica/habitica_2020-08-29" / step).glob("screen.*"))
        fields = _inputs(list(reader.read(shot).candidates))
        notes = [c.text for c in fields if c.box_px.contains(PointPx(540, 556))]
        assert len(notes) == 1 and notes[0].startswith("Either a Habit"), (step, fields)
