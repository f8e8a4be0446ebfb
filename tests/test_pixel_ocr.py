"""The pixel channel end to end with the real RapidOCR models (a handful of small images)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import pytest

from perception import read_pixels
from perception.cli import pixels as pixels_cli
from perception.config import PixelConfig
from perception.errors import ConfigError
from perception.pixel import (
    Frame,
    PixelKind,
    PixelReader,
    RapidOcrEngine,
    TextReader,
    crop_for_vision,
    decode_frame,
    find_anchors,
    frame_flags,
    repeated_icons,
)
from perception.types import BoxPx

FONT = cv2.FONT_HERSHEY_SIMPLEX


def _text(img: np.ndarray, text: str, x: int, y: int, scale: float = 1.4) -> None:
    cv2.putText(img, text, (x, y), FONT, scale, (20, 20, 20), 3, cv2.LINE_AA)


def dialog() -> np.ndarray:
    """A 720x1280 screen: a title, one paragraph line, and "Back ... Close" on one row."""
    img = np.full((1280, 720, 3), 250, np.uint8)
    _text(img, "Delete photo", 40, 300)
    _text(img, "This cannot be undone", 40, 420, 1.1)
    _text(img, "Back", 60, 700)
    _text(img, "Close", 480, 700)
    return img


@pytest.fixture(scope="module")
def engine() -> Iterator[RapidOcrEngine]:
    yield RapidOcrEngine()


def _norm(s: str) -> str:
    return s.replace(" ", "").casefold()


def test_reads_text_and_splits_a_line_at_a_wide_gap(engine: RapidOcrEngine) -> None:
    reader = PixelReader(engine=engine)
    pixels = reader.read(dialog())
    assert engine.loaded and pixels.ocr == "full"
    texts = {_norm(c.text): c for c in pixels.candidates if c.text}
    assert "deletephoto" in texts
    # The default OCR sees "Back    Close" as one line; the channel must give two candidates.
    assert "back" in texts and "close" in texts
    back, close = texts["back"], texts["close"]
    assert back.box_px.right < close.box_px.left
    assert back.box_px.contains((100, 690)) and close.box_px.contains((540, 690))
    for c in pixels.candidates:
        assert 0.0 <= c.confidence <= 1.0
        assert isinstance(c.kind, PixelKind)


def test_unchanged_frame_and_region_come_from_the_cache(engine: RapidOcrEngine) -> None:
    reader = PixelReader(engine=engine)
    img = dialog()
    first = reader.read(img)
    again = reader.read(img.copy())
    assert again.ocr == "cached" and again.flags.stable is True
    assert again.candidates == first.candidates
    lines = reader.ocr_regions(img, [BoxPx(0, 600, 720, 760)])
    assert {_norm(ln.text) for ln in lines} >= {"back", "close"}
    before = reader.text.recognised
    # The same region again, and the same pixels moved 300 px down: no recognition runs.
    again_lines = reader.ocr_regions(img, [BoxPx(0, 600, 720, 760)])
    moved = np.full_like(img, 250)
    moved[900:1060] = img[600:760]
    moved_lines = reader.ocr_regions(moved, [BoxPx(0, 900, 720, 1060)])
    assert reader.text.recognised == before
    assert reader.text.region_hits >= 2
    assert again_lines == lines
    assert [ln.box_px.top - 300 for ln in moved_lines] == [ln.box_px.top for ln in lines]


def test_roi_reads_only_the_region(engine: RapidOcrEngine) -> None:
    reader = PixelReader(engine=engine)
    pixels = reader.read(dialog(), regions=[BoxPx(0, 220, 720, 340)])
    assert pixels.ocr == "roi"
    assert [_norm(ln.text) for ln in pixels.lines] == ["deletephoto"]
    assert all(220 <= ln.box_px.top and ln.box_px.bottom <= 340 for ln in pixels.lines)


def test_small_text_survives_downscaled_detection(engine: RapidOcrEngine) -> None:
    img = np.full((2400, 1080, 3), 255, np.uint8)
    cv2.putText(img, "Terms of service", (60, 1200), FONT, 0.9, (30, 30, 30), 2, cv2.LINE_AA)
    reader = TextReader(PixelConfig(), engine)
    lines, cached = reader.read_region(img, BoxPx(0, 0, 1080, 2400))
    assert not cached
    assert any("terms" in _norm(ln.text) for ln in lines)


def test_black_frame_gives_flags_not_candidates(engine: RapidOcrEngine) -> None:
    pixels = PixelReader(engine=engine).read(np.zeros((1280, 720, 3), np.uint8))
    assert pixels.flags.secure and pixels.ocr == "skipped" and pixels.candidates == ()
    assert not engine.recognize([])


def test_read_pixels_one_shot_and_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "screen.png"
    cv2.imwrite(str(path), dialog())
    pixels = read_pixels(path)
    assert any(_norm(c.text) == "close" for c in pixels.candidates)
    parser_args = type(
        "A", (), {"screen": path, "roi": [], "no_ocr": False, "anchors": True, "indent": 0}
    )
    assert pixels_cli.run(parser_args) == 0  # type: ignore[arg-type]
    out = json.loads(capsys.readouterr().out)
    assert out["size"] == [720, 1280]
    assert {"black", "secure", "rotation", "status_bar_px", "stable"} <= set(out["flags"])
    assert any(_norm(c["text"]) == "back" for c in out["candidates"])


def test_vision_crop_has_margin_and_is_small() -> None:
    frame = Frame.from_array(dialog())
    crop = crop_for_vision(frame, BoxPx(40, 640, 200, 720), margin_px=60, max_side_px=128)
    assert crop.box_px == BoxPx(0, 580, 260, 780)
    img = decode_frame(crop.jpeg).pixels
    assert max(img.shape[:2]) <= 128 and crop.scale < 1.0


def test_repeated_icons_only_inside_roi() -> None:
    img = np.full((1280, 720, 3), 255, np.uint8)
    for x in (40, 220, 400, 580):
        cv2.circle(img, (x + 30, 1200), 22, (60, 60, 200), 4)
        cv2.line(img, (x + 18, 1200), (x + 42, 1200), (60, 60, 200), 4)
    cv2.circle(img, (70, 300), 22, (60, 60, 200), 4)  # same icon, outside the ROI
    cv2.line(img, (58, 300), (82, 300), (60, 60, 200), 4)
    frame = Frame.from_array(img)
    found = repeated_icons(frame, BoxPx(40, 1170, 100, 1230), BoxPx(0, 1140, 720, 1280))
    assert [a.box_px.left for a in found] == [40, 220, 400, 580]
    assert all(a.kind is PixelKind.ICON for a in found)


def test_a_bottom_bar_runs_edge_to_edge_dialog_buttons_do_not() -> None:
    """Yelp's permission screen: two buttons above the navigation bar, inset from the sides;
    their edges cross most of the width but are not a bottom bar, so they are not tabs."""
    img = np.full((1280, 720, 3), 255, np.uint8)
    img[1200:] = 0  # the system navigation bar
    cv2.rectangle(img, (27, 1060), (350, 1140), (120, 120, 120), 2)
    cv2.rectangle(img, (370, 1060), (693, 1140), (230, 160, 0), -1)

    def bottom_bars() -> list[int]:
        frame = Frame.from_array(img)
        found = find_anchors(frame, frame_flags(frame)[0])
        return [a.box_px.top for a in found
                if a.kind is PixelKind.BAR and 1000 < a.box_px.top < 1200]

    assert bottom_bars() == []
    cv2.line(img, (0, 1052), (719, 1052), (120, 120, 120), 2)  # a bottom bar's separator
    tops = bottom_bars()
    assert len(tops) == 1 and abs(tops[0] - 1052) <= 4, tops


def test_a_logo_on_a_splash_screen_is_an_image_candidate() -> None:
    # QQ Music's splash: no tree to speak of, one large graphic; a tap on it must land on a
    # candidate. Icons stay icons; a graphic past the icon size is an image.
    img = np.full((1280, 720, 3), 255, np.uint8)
    cv2.circle(img, (360, 560), 120, (0, 200, 250), -1)
    cv2.circle(img, (100, 1100), 24, (80, 80, 80), 4)
    frame = Frame.from_array(img)
    kinds = {a.kind for a in find_anchors(frame, frame_flags(frame)[0])}
    assert {PixelKind.IMAGE, PixelKind.ICON} <= kinds
    pixels = PixelReader().read(img, ocr=False)
    image = [c for c in pixels.candidates if c.kind is PixelKind.IMAGE]
    assert len(image) == 1 and image[0].box_px.contains((360, 560))
    assert any(c.kind is PixelKind.ICON and c.box_px.contains((100, 1100))
               for c in pixels.candidates)


def test_parallel_recognition_reads_what_one_session_reads(engine: RapidOcrEngine) -> None:
    img = dialog()
    crops = [img[y : y + 60, 20:700] for y in range(560, 760, 40)]
    serial = RapidOcrEngine(PixelConfig(rec_workers=1))
    try:
        assert engine.recognize(crops) and [t for t, _ in engine.recognize(crops)] == [
            t for t, _ in serial.recognize(crops)
        ]
    finally:
        serial.close()
    with pytest.raises(ConfigError):
        PixelConfig(rec_workers=0)


def test_threads_sharing_an_engine_detect_each_at_its_own_scale(engine: RapidOcrEngine) -> None:
    """Phones sharing one engine (README: a phone farm): the detector read its limit inside its
    call, set on the one shared detector, so a thread's small strip could be detected at
    another's scale. Each limit now has its detector; the shared one is never changed."""
    from concurrent.futures import ThreadPoolExecutor

    img = dialog()
    jobs = [(img[y : y + h], min(576, h)) for y, h in ((0, 120), (500, 300), (900, 576))] * 8
    alone = [engine.detect(crop, limit).tolist() for crop, limit in jobs]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda job: engine.detect(*job).tolist(), jobs))
    assert together == alone
    base = engine._engine().text_det
    assert engine._detector(120) is engine._detector(120) is not engine._detector(300)
    assert engine._detector(120).limit_side_len == 120 and engine._detector(120).infer is base.infer
    assert base.limit_side_len == PixelConfig().det_limit_side_len


def test_content_digest_keys_pixels_and_shape_not_layout() -> None:
    from perception.pixel.ocr import content_digest

    rng = np.random.default_rng(7)
    frame = rng.integers(0, 255, (60, 80, 3), dtype=np.uint8)
    crop = frame[10:30, 5:45]  # a strided view: the same key as its contiguous copy
    assert content_digest(crop) == content_digest(np.ascontiguousarray(crop))
    assert content_digest(crop.reshape(-1)[: crop.size].reshape(40, 20, 3)) != content_digest(
        crop.copy()
    )  # the same bytes in another shape
    changed = crop.copy()
    changed[19, 39, 2] ^= 1  # one bit of one pixel
    assert content_digest(changed) != content_digest(crop)
    assert len(content_digest(crop)) == 16


def _line_image(text: str) -> np.ndarray:
    img = np.full((60, 400, 3), 255, np.uint8)
    cv2.putText(img, text, (10, 45), cv2.FONT_HERSHEY_SIMPLEX, 1.4, (0, 0, 0), 3)
    return img


def test_use_cls_turns_an_upside_down_line_before_reading_it() -> None:
    """``use_cls`` was handed to RapidOCR and never ran: detection and recognition are called
    one by one here, so the classifier RapidOCR loaded was idle whatever the setting. It now
    turns lines that read upside down, and is not loaded when off (the default)."""
    upright = _line_image("Settings page")
    flipped = np.ascontiguousarray(upright[::-1, ::-1])
    with_cls = RapidOcrEngine(PixelConfig(use_cls=True))
    without = RapidOcrEngine(PixelConfig())
    try:
        assert [t.strip() for t, _ in with_cls.recognize([upright, flipped])] == [
            "Settings page", "Settings page"
        ]
        assert without.recognize([flipped])[0][0].strip() != "Settings page"
    finally:
        with_cls.close()
        without.close()


def test_loading_ocr_leaves_no_onnxruntime_telemetry_behind(tmp_path: Path) -> None:
    """onnxruntime 1.29+ writes a device id and an event queue under ~/.cache (and uploads
    them) unless told not to before its first session."""
    code = (
        "import os, numpy as np\n"
        "os.environ.pop('ORT_DISABLE_TELEMETRY', None)\n"
        "from perception.pixel import RapidOcrEngine\n"
        "e = RapidOcrEngine()\n"
        "e.detect(np.full((64, 64, 3), 255, np.uint8), 64)\n"
        "e.close()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    env["HOME"] = str(tmp_path)
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    assert not (tmp_path / ".cache" / "Microsoft").exists()
