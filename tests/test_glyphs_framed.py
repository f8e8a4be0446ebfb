"""Icon glyphs of session 20 (perception.pixel.glyphs): a glyph inside a ring or inside a round
button that fills its box, the letter X that is no close (its strokes cut level), and what
must not read as one of the new glyphs (a chevron as share, a star as an arrow, a blurred ring
as a gear, letters as ⏸, triangles pointing elsewhere as ▶ or send); the corpus's buttons
that show them (the drawn glyphs at every size are in tests/test_glyphs.py)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from perception.pixel.glyphs import glyph_of
from tests.conftest import CORPUS_DIR, requires_corpus
from tests.test_glyphs import POLARITIES, U8, _button, _draw, _pt

DEJAVU = Path("/usr/share/fonts/truetype/dejavu")


def _ringed(glyph: str, side: int, polarity: tuple[int, ...]) -> U8:
    """The glyph drawn in a thin circle (QQ Music's play and pause buttons)."""
    img = _draw(glyph, side, 0.05, polarity)
    ink = 255 if len(polarity) == 3 else polarity[-1]
    t = max(1, round(0.03 * side))
    cv2.circle(img, _pt(side / 2, side / 2), round(0.42 * side * 16), (ink, ink, ink), t,
               cv2.LINE_AA, 4)
    return img


@pytest.mark.parametrize("glyph", ["▶", "⏸", "+", "×"])
@pytest.mark.parametrize("side", [72, 96, 144])
@pytest.mark.parametrize("polarity", POLARITIES)
def test_glyph_in_a_ring(glyph: str, side: int, polarity: tuple[int, ...]) -> None:
    assert glyph_of(_ringed(glyph, side, polarity)) == glyph


@pytest.mark.parametrize("glyph", ["▶", "send", "×", "share"])
@pytest.mark.parametrize("side", [64, 96, 144])
def test_glyph_in_a_round_button_filling_its_box(glyph: str, side: int) -> None:
    """A round button whose box is its disc (a chat's send button): the disc runs into every
    edge of the box, yet clear of its corners it is the button, and its glyph is read."""
    img = _draw(glyph, side, 0.05, POLARITIES[2])  # white on an accent colour
    disc = cv2.circle(np.zeros((side, side), np.uint8), _pt(side / 2 - 0.5, side / 2 - 0.5),
                      round(side / 2 * 16), 1, -1, cv2.LINE_8, 4)
    img[disc == 0] = 250
    assert glyph_of(img) == glyph


def test_picture_filling_a_round_box_is_no_glyph() -> None:
    """A round avatar: a disc of noise filling its box is looked into, and is nothing."""
    rng = np.random.default_rng(3)
    img = _button(96, 250)
    disc = cv2.circle(np.zeros((96, 96), np.uint8), (48, 48), 48, 1, -1) > 0
    img[disc] = rng.integers(0, 120, (int(disc.sum()), 3), dtype=np.uint8)
    assert glyph_of(img) == ""


def _letter_x(side: int, *, height: float, width: float, stroke: float) -> U8:
    """A sans-serif X (Roboto's, Arial's): two slanted strokes whose ends are cut level with
    the line of text, ``stroke`` of its height wide measured along the line."""
    img = _button(side, 250)
    c = side / 2
    h, w, s = height * side / 2, width * side / 2, stroke * side
    for sign in (1, -1):
        pts = [(c - sign * w, c - h), (c - sign * w + sign * s, c - h),
               (c + sign * w, c + h), (c + sign * w - sign * s, c + h)]
        cv2.fillPoly(img, [np.array([_pt(x, y) for x, y in pts])], (30, 30, 30), cv2.LINE_AA, 4)
    return img


@pytest.mark.parametrize("side", [48, 72, 96, 144])
@pytest.mark.parametrize(
    ("width", "stroke"),
    [(0.4, 0.09), (0.45, 0.11), (0.5, 0.13), (0.45, 0.15)],  # X's and x's, regular to bold
)
def test_letter_x_is_no_close(side: int, width: float, stroke: float) -> None:
    """Session 19 read a lone letter X (a text button "X", the X logo) as the close ×: the
    letter's strokes end cut level with the line, a close icon's cut square or round."""
    img = _letter_x(side, height=0.5, width=width, stroke=stroke)
    assert glyph_of(img) == "", (side, width, stroke)


def _font_text(text: str, font: str, side: int, size: int) -> U8:
    image_module = pytest.importorskip("PIL.Image")
    draw_module = pytest.importorskip("PIL.ImageDraw")
    font_module = pytest.importorskip("PIL.ImageFont")
    if not (DEJAVU / font).exists():
        pytest.skip(f"no {font} on this machine")
    im = image_module.new("RGB", (side, side), (250, 250, 250))
    draw_module.Draw(im).text(
        (side / 2, side / 2), text, font=font_module.truetype(str(DEJAVU / font), size),
        fill=(30, 30, 30), anchor="mm",
    )
    return np.ascontiguousarray(np.asarray(im)[:, :, ::-1])


@pytest.mark.parametrize("font", ["DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSansMono.ttf"])
def test_font_letters_x_are_no_close(font: str) -> None:
    """The letters X and x set in a real font, at four sizes in four buttons: none is ×
    (session 19 named 41 of these 64 ×)."""
    named = [
        (text, side, share)
        for text in "Xx"
        for side in (48, 72, 96, 144)
        for share in (0.4, 0.55, 0.7, 0.85)
        if glyph_of(_font_text(text, font, side, round(share * side))) == "×"
    ]
    assert not named


@pytest.mark.parametrize("text", ["ll", "II", "||", "11"])
def test_letters_are_no_pause(text: str) -> None:
    for side, share in ((72, 0.55), (96, 0.7), (144, 0.55)):
        assert glyph_of(_font_text(text, "DejaVuSans.ttf", side, round(share * side))) == ""


def test_new_lookalikes_are_no_glyph() -> None:
    ink = (40, 40, 40)
    # A thick chevron "<": the share glyph's lines without its dots is the chevron, no share.
    chevron = _button(96, 250)
    cv2.polylines(chevron, [np.array([[60, 26], [34, 48], [60, 70]])], False, ink, 9, cv2.LINE_AA)
    assert glyph_of(chevron) == "‹"
    # A star cut out of a filled tile (a favourite button): no arrow, however thick.
    tile = _button(96, 250)
    cv2.rectangle(tile, (10, 10), (86, 86), (90, 90, 230), -1)
    star = [(48 + 26 * np.sin(k * np.pi / 5) * (1 if k % 2 == 0 else 0.45),
             50 - 26 * np.cos(k * np.pi / 5) * (1 if k % 2 == 0 else 0.45)) for k in range(10)]
    cv2.fillPoly(tile, [np.array([_pt(x, y) for x, y in star])], (255, 255, 255), cv2.LINE_AA, 4)
    assert glyph_of(tile) == ""
    # A blurred ring (a camera shutter, a loading spinner): no gear.
    ring = _button(96, 120)
    cv2.circle(ring, (48, 48), 26, (250, 250, 250), -1)
    cv2.circle(ring, (48, 48), 7, (60, 60, 60), -1)
    ring = cv2.GaussianBlur(ring, (0, 0), 5)
    assert glyph_of(ring) == ""
    # A five-pointed star with a hole: too few teeth for a gear.
    holed = _button(96, 250)
    cv2.fillPoly(holed, [np.array([_pt(x, y) for x, y in star])], ink, cv2.LINE_AA, 4)
    cv2.circle(holed, (48, 50), 6, (250, 250, 250), -1)
    assert glyph_of(holed) == ""
    # Triangles pointing down or left: neither play nor send.
    for pts in ([(28, 34), (68, 34), (48, 66)], [(64, 28), (64, 68), (30, 48)]):
        tri = _button(96, 250)
        cv2.fillPoly(tri, [np.array([_pt(x, y) for x, y in pts])], ink, cv2.LINE_AA, 4)
        assert glyph_of(tri) == "", pts
    # Two bars of different heights (a signal meter), two wide bars (=): no pause.
    bars = _button(96, 250)
    cv2.rectangle(bars, (36, 30), (43, 66), ink, -1)
    cv2.rectangle(bars, (52, 48), (59, 66), ink, -1)
    assert glyph_of(bars) == ""
    equals = _button(96, 250)
    cv2.rectangle(equals, (30, 38), (66, 44), ink, -1)
    cv2.rectangle(equals, (30, 52), (66, 58), ink, -1)
    assert glyph_of(equals) == ""
    # A sun (brightness): a disc and its rays apart, no gear and no glyph.
    sun = _button(96, 250)
    cv2.circle(sun, (48, 48), 12, ink, -1)
    for k in range(8):
        a = k * np.pi / 4
        cv2.line(sun, (round(48 + 18 * np.cos(a)), round(48 + 18 * np.sin(a))),
                 (round(48 + 26 * np.cos(a)), round(48 + 26 * np.sin(a))), ink, 4, cv2.LINE_AA)
    assert glyph_of(sun) == ""



@pytest.mark.parametrize("side", [36, 48, 72, 96, 144])
@pytest.mark.parametrize("waist", [0.15, 0.25, 0.35, 0.45])
def test_four_pointed_star_is_no_plus(side: int, waist: float) -> None:
    """A four-pointed star (a sparkle, Habitica's difficulty), its arms tapering to points from
    a waist this share of its radius: no "+", whose strokes keep their width (session 26 named
    such stars "+" in the pixel channel's icons)."""
    for bg, ink in ((250, (40, 40, 40)), (40, (240, 240, 240)), (250, (80, 200, 120))):
        img = _button(side, bg)
        c, r = side / 2, 0.32 * side
        pts = [
            (c + (r if k % 2 == 0 else waist * r) * np.cos(k * np.pi / 4 - np.pi / 2),
             c + (r if k % 2 == 0 else waist * r) * np.sin(k * np.pi / 4 - np.pi / 2))
            for k in range(8)
        ]
        cv2.fillPoly(img, [np.array([_pt(x, y) for x, y in pts])], ink, cv2.LINE_AA, 4)
        assert glyph_of(img) != "+", (side, waist, bg)


def _outlined(points: list[tuple[float, float]], side: int = 96) -> U8:
    img = _button(side, 250)
    cv2.polylines(img, [np.array([_pt(x, y) for x, y in points])], True, (40, 40, 40), 5,
                  cv2.LINE_AA, 4)
    return img


def test_heart_look_alikes_are_no_heart() -> None:
    """Outlines a heart's template fits more or less, without its cleft between two lobes: a
    map pin, a shield, a fan (the Wi-Fi signal), a triangle pointing down, a ring; and the
    letters V, U, W and the digit 8 in a font."""
    turn = np.linspace(0, 2 * np.pi, 64, endpoint=False)
    pin = [(48 + 18 * np.sin(a), 40 - 18 * np.cos(a)) for a in np.linspace(-2.3, 2.3, 40)]
    pin.append((48, 76))
    shield = [(28, 24), (68, 24), (68, 48), *[(48 + 20 * np.cos(a), 48 + 26 * np.sin(a))
              for a in np.linspace(0, np.pi, 20)], (28, 48)]
    fan = [(48, 74), *[(48 + 36 * np.cos(a), 74 + 36 * np.sin(a))
           for a in np.linspace(-3 * np.pi / 4, -np.pi / 4, 24)]]
    down = [(26, 28), (70, 28), (48, 70)]
    ring = [(48 + 22 * np.cos(a), 48 + 20 * np.sin(a)) for a in turn]
    for name, points in (("pin", pin), ("shield", shield), ("fan", fan), ("down", down),
                         ("ring", ring)):
        assert glyph_of(_outlined(points)) != "♡", name
    for text in "VUW8":
        for side, share in ((72, 0.55), (96, 0.7), (144, 0.55)):
            img = _font_text(text, "DejaVuSans.ttf", side, round(share * side))
            assert glyph_of(img) != "♡", (text, side)

# --- corpus -------------------------------------------------------------------------------------

CORPUS_GLYPHS = [
    # (sample, the tree button's box, the glyph its pixels show; its description)
    ("droidbotexp_qqmusic/qqmusic_2021-11-23/step_004", (803, 1878, 886, 1961), "▶"),  # 播放
    ("droidbotexp_qqmusic/qqmusic_2021-11-23/step_041", (956, 643, 1017, 704), "▶"),  # 播放
    ("droidbotexp_qqmusic/qqmusic_2021-11-23/step_042", (848, 1057, 953, 1140), "▶"),  # 观看mv
    ("droidbotexp_qqmusic/qqmusic_2021-11-23/step_006", (803, 2029, 886, 2112), "⏸"),  # 暂停
    ("droidbotexp_qqmusic/qqmusic_2021-11-23/step_007", (399, 1256, 438, 1295), "⏸"),  # 暂停
    ("fdroidutg_apps/de.szalkowski.activitylauncher/step_002", (936, 84, 1080, 228), "settings"),
    ("droidbot_yelp/yelp_2017/step_014", (1132, 84, 1300, 280), "share"),  # Share
    ("fdroidutg_apps/us.achromaticmetaphor.agram/step_005", (936, 84, 1080, 228), "share"),
    ("llamatouch/trace_7/step_002", (923, 84, 1049, 210), "mic"),  # Voice search
    ("droidbot_admob_apps/com.tp.android.curezombie2nd/step_003", (912, 111, 1032, 231), "mic"),
    # An unlabelled close of QQ Music, its ends rounded at 2 px: a ×, not a letter.
    ("droidbotexp_qqmusic/qqmusic_2021-11-23/step_037", (942, 163, 1028, 249), "×"),
    # Weibo's list rows end in a chevron (an icon font's private-use glyph in the tree).
    ("fdroidutg_weibo/weibo_2023-10-24/step_036", (996, 1023, 1044, 1092), "›"),
    ("llamatouch/trace_7/step_005", (18, 947, 147, 1076), "‹"),  # Previous day
    # Yelp's sparkles and Habitica's difficulty stars, four-pointed: no "+" (the pixel
    # channel's icon boxes round them, which session 26's first try named "+").
    ("droidbot_yelp/yelp_2017/step_012", (853, 675, 929, 751), ""),
    ("droidbot_yelp/yelp_2017/step_012", (906, 784, 964, 842), ""),
    ("droidbot_habitica/habitica_2020-08-29/step_002", (85, 1121, 143, 1177), ""),
    # QQ Music's outlined hearts: its album's favourite (收藏) and "add to my favourites".
    ("droidbotexp_qqmusic/qqmusic_2021-11-23/step_005", (83, 611, 166, 694), "♡"),
    ("droidbotexp_qqmusic/qqmusic_2021-11-23/step_034", (888, 1279, 1018, 1409), "♡"),
    # The X logo on a web page: session 19's ×, a letter X cut level.
    ("fdroidutg_apps/ru.ikkui.achie/step_006", (328, 1446, 382, 1502), ""),
]


@requires_corpus
@pytest.mark.parametrize(("sample", "box", "glyph"), CORPUS_GLYPHS)
def test_corpus_buttons_show_their_glyph(
    sample: str, box: tuple[int, int, int, int], glyph: str
) -> None:
    image = next((Path(CORPUS_DIR) / sample).glob("screen.*[gG]"))
    pixels = cv2.imread(str(image))
    x0, y0, x1, y1 = box
    assert glyph_of(pixels[y0:y1, x0:x1]) == glyph
