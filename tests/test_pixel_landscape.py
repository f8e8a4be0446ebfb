"""Landscape and tablet frames read as their portrait twins (review 18 of the pixel path)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import cv2
import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from perception.config import PixelConfig
from perception.pixel import PixelKind, PixelReader, RapidOcrEngine, TextReader
from perception.types import BoxPx

DEJAVU = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"


@pytest.fixture(scope="module")
def engine() -> Iterator[RapidOcrEngine]:
    yield RapidOcrEngine()


class ShapeRecorder:
    """The real engine, noting the shape of every detection copy it is given."""

    name = "recorder"

    def __init__(self, inner: RapidOcrEngine) -> None:
        self.inner = inner
        self.shapes: list[tuple[int, int]] = []

    def detect(self, image: np.ndarray, limit_side_len: int) -> np.ndarray:
        self.shapes.append((image.shape[1], image.shape[0]))
        return self.inner.detect(image, limit_side_len)

    def recognize(self, crops: Sequence[np.ndarray]) -> list[tuple[str, float]]:
        return self.inner.recognize(crops)


def _text_rows(w: int, h: int) -> np.ndarray:
    """A white frame with one sample line at each of 16-32 px (DejaVu, as a phone draws)."""
    im = Image.new("RGB", (w, h), (255, 255, 255))
    d = ImageDraw.Draw(im)
    for i, size in enumerate((16, 20, 24, 28, 32)):
        d.text((60, 200 + i * 120), f"Size {size} px sample line",
               font=ImageFont.truetype(DEJAVU, size), fill=(40, 40, 40))
    return cv2.cvtColor(np.asarray(im), cv2.COLOR_RGB2BGR)


def _sizes_read(reader: TextReader, img: np.ndarray) -> set[int]:
    h, w = img.shape[:2]
    lines, _ = reader.read_region(img, BoxPx(0, 0, w, h))
    got = set()
    for ln in lines:
        words = ln.text.split()
        if len(words) == 5 and words[0] == "Size" and words[1].isdigit():
            got.add(int(words[1]))
    return got


def test_a_landscape_frame_detects_at_its_portrait_twins_scale(engine: RapidOcrEngine) -> None:
    rec = ShapeRecorder(engine)
    reader = TextReader(PixelConfig(), rec)  # type: ignore[arg-type]
    reader.read_region(_text_rows(1080, 2340), BoxPx(0, 0, 1080, 2340))
    reader.read_region(_text_rows(2400, 1080), BoxPx(0, 0, 2400, 1080))
    # A crop narrower than the detection width is not shrunk (the same pixels in a landscape
    # frame are the same scan: a cache hit, no detection).
    reader.read_region(_text_rows(1080, 2340), BoxPx(0, 150, 500, 800))
    landscape = _text_rows(2400, 1080)
    reader.read_region(landscape, BoxPx(0, 150, 500, 800))
    assert reader.region_hits == 1
    # A landscape crop wider than the frame is tall shrinks as the frame's short side does.
    reader.read_region(landscape, BoxPx(0, 100, 2400, 400))
    assert rec.shapes == [(576, 1248), (1280, 576), (500, 650), (1280, 160)]


def test_landscape_reads_the_small_text_its_portrait_twin_reads(engine: RapidOcrEngine) -> None:
    reader = TextReader(PixelConfig(), engine)
    assert _sizes_read(reader, _text_rows(1080, 2340)) == {16, 20, 24, 28, 32}
    # 2400 wide was shrunk to 576 (0.24): only the 24-32 px rows, damaged, were read.
    assert _sizes_read(reader, _text_rows(2400, 1080)) == {16, 20, 24, 28, 32}


def test_one_crop_in_frames_of_two_heights_is_detected_at_each_scale(
    engine: RapidOcrEngine,
) -> None:
    """The region cache keys on the scale too: the same 2400 px wide strip in a 1080 and a
    1600 px tall frame is shrunk differently, so the second is not the first's cached scan."""
    rec = ShapeRecorder(engine)
    reader = TextReader(PixelConfig(), rec)  # type: ignore[arg-type]
    short = _text_rows(2400, 1080)
    tall = np.full((1600, 2400, 3), 255, np.uint8)
    tall[:1080] = short
    reader.read_region(short, BoxPx(0, 150, 2400, 450))
    reader.read_region(tall, BoxPx(0, 150, 2400, 450))
    reader.read_region(short, BoxPx(0, 150, 2400, 450))
    assert rec.shapes == [(1280, 160), (864, 108)]
    assert reader.region_hits == 1


def _settings(w: int, h: int) -> np.ndarray:
    """Four settings rows with a switch at the right end of each, on and off in turn."""
    im = Image.new("RGB", (w, h), (255, 255, 255))
    d = ImageDraw.Draw(im)
    font, small = ImageFont.truetype(DEJAVU, 44), ImageFont.truetype(DEJAVU, 32)
    for i, row in enumerate(("Wi-Fi", "Bluetooth", "Airplane mode", "Dark theme")):
        y = 280 + i * 170
        d.text((60, y), row, font=font, fill=(20, 20, 20))
        d.text((60, y + 58), "Tap to change", font=small, fill=(100, 100, 100))
        on = i % 2 == 0
        cx, cy = w - 130, y + 45
        d.rounded_rectangle([cx - 60, cy - 22, cx + 60, cy + 22], radius=22,
                            fill=(170, 200, 250) if on else (200, 200, 200))
        tx = cx + 38 if on else cx - 38
        d.ellipse([tx - 32, cy - 32, tx + 32, cy + 32],
                  fill=(26, 115, 232) if on else (245, 245, 245),
                  outline=None if on else (150, 150, 150))
    return cv2.cvtColor(np.asarray(im), cv2.COLOR_RGB2BGR)


@pytest.mark.parametrize("size", [(1080, 2340), (2400, 1080), (1440, 3120), (3120, 1440)])
def test_switches_are_found_in_portrait_and_landscape_frames(
    engine: RapidOcrEngine, size: tuple[int, int]
) -> None:
    """Toggle sizes are dp of the frame's short side: taken from a landscape frame's width they
    were 2.2x too large and none of these switches was found (all of them in portrait)."""
    pixels = PixelReader(engine=engine).read(_settings(*size))
    switches = [c for c in pixels.candidates if c.kind == PixelKind.SWITCH]
    assert [(c.text, c.checked) for c in switches] == [
        ("Wi-Fi", True), ("Bluetooth", False), ("Airplane mode", True), ("Dark theme", False),
    ]
    assert all(c.box_px.left > size[0] - 240 for c in switches)


def _dialog_over_dimmed_page(undimmed_bottom: int) -> np.ndarray:
    """A card list under a 0.4 scrim with a light navigation bar left undimmed
    ``undimmed_bottom`` px tall, and a white dialog over it."""
    w, h = 1080, 2340
    im = Image.new("RGB", (w, h), (255, 255, 255))
    d = ImageDraw.Draw(im)
    font = ImageFont.truetype(DEJAVU, 44)
    d.text((40, 15), "12:45", font=ImageFont.truetype(DEJAVU, 36), fill=(0, 0, 0))
    for i in range(5):
        y = 280 + i * 340
        d.rounded_rectangle([40, y, w - 40, y + 300], radius=24, fill=(245, 245, 245),
                            outline=(220, 220, 220))
        d.text((200, y + 40), f"Post number {i + 1}", font=font, fill=(20, 20, 20))
    nav = h - undimmed_bottom
    d.rectangle([0, h - 130, w, h], fill=(240, 240, 240))
    cy = h - 65
    d.polygon([(w // 4 - 20, cy), (w // 4 + 15, cy - 22), (w // 4 + 15, cy + 22)],
              outline=(0, 0, 0))
    d.ellipse([w // 2 - 22, cy - 22, w // 2 + 22, cy + 22], outline=(0, 0, 0), width=4)
    d.rectangle([3 * w // 4 - 20, cy - 20, 3 * w // 4 + 20, cy + 20], outline=(0, 0, 0), width=4)
    page = np.asarray(im).astype(np.float32)
    page[70:nav] *= 0.4
    im = Image.fromarray(page.astype(np.uint8))
    d = ImageDraw.Draw(im)
    d.rounded_rectangle([90, 850, w - 90, 1400], radius=40, fill=(255, 255, 255))
    bold = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf", 52)
    d.text((150, 910), "Delete this post?", font=bold, fill=(20, 20, 20))
    d.text((560, 1300), "CANCEL", font=font, fill=(98, 0, 238), anchor="mm")
    d.text((840, 1300), "DELETE", font=font, fill=(98, 0, 238), anchor="mm")
    return cv2.cvtColor(np.asarray(im), cv2.COLOR_RGB2BGR)


@pytest.mark.parametrize("undimmed_bottom", [128, 130, 134, 138])
def test_a_dialog_is_modal_when_the_bar_is_found_a_few_rows_short(
    engine: RapidOcrEngine, undimmed_bottom: int
) -> None:
    """The navigation bar is found to the cell (4 px): drawn 130 px and found 128, the 2 px
    light sliver left in the rest was brighter than the dimmed white, the dialog was no modal
    and the cards under the scrim were offered (here 6 candidates instead of 3)."""
    pixels = PixelReader(engine=engine).read(_dialog_over_dimmed_page(undimmed_bottom))
    modal = pixels.flags.modal_box_px
    assert modal is not None and modal.contains((540, 1100))
    assert modal.top >= 840 and modal.bottom <= 1410
    assert pixels.candidates and all(modal.contains(c.box_px.center) for c in pixels.candidates)


def _flags(img: np.ndarray) -> tuple[int, str]:
    from perception.pixel import decode_frame, frame_flags

    flags, _ = frame_flags(decode_frame(cv2.imencode(".png", img)[1].tobytes()))
    return flags.nav_bar_px, flags.nav_bar_side


def _right_bar_page(bar: tuple[int, int, int] | None, ink: tuple[int, int, int]) -> np.ndarray:
    """A 2400x1080 page with a title and a battery at the top right; with ``bar``, a 168 px
    navigation bar of that colour down the right edge holding recents, home and back."""
    w, h, nb = 2400, 1080, 168
    im = Image.new("RGB", (w, h), (255, 255, 255))
    d = ImageDraw.Draw(im)
    d.text((60, 200), "Inbox", font=ImageFont.truetype(DEJAVU, 56), fill=(20, 20, 20))
    right = w - nb if bar else w
    d.rectangle([right - 110, 22, right - 60, 48], outline=(0, 0, 0), width=3)
    if bar:
        d.rectangle([w - nb, 0, w, h], fill=bar)
        cx = w - nb // 2
        d.rectangle([cx - 20, h // 4 - 20, cx + 20, h // 4 + 20], outline=ink, width=4)
        d.ellipse([cx - 22, h // 2 - 22, cx + 22, h // 2 + 22], outline=ink, width=4)
        cy = 3 * h // 4
        d.polygon([(cx, cy - 20), (cx - 22, cy + 15), (cx + 22, cy + 15)], outline=ink)
    return cv2.cvtColor(np.asarray(im), cv2.COLOR_RGB2BGR)


def test_marks_near_a_landscape_frames_right_edge_are_no_navigation_bar() -> None:
    """A battery icon or a column of switches near the right edge was taken for a navigation
    bar (168 and 248 px), and what lay in it was dropped."""
    assert _flags(_right_bar_page(None, (0, 0, 0))) == (0, "none")
    assert _flags(_settings(3120, 1440)) == (0, "none")
    assert _flags(_right_bar_page((0, 0, 0), (255, 255, 255))) == (168, "right")
    assert _flags(_right_bar_page((240, 240, 240), (60, 60, 60))) == (168, "right")
    assert _flags(_right_bar_page((255, 255, 255), (60, 60, 60))) == (168, "right")
