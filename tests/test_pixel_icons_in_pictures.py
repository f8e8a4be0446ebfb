"""Icon proposals inside pictures (audit of 2026-12-05, audC defect 8): the eyes and nose in a
photo, the parts of a game's art and a flame in a video frame were offered as icons, while the
picture itself (Weibo's video card) was not. An icon-sized shape on a textured region is the
picture's unless it is a button laid over it (a disc or rounded square, or a glyph on a flat
fill), and a sizeable textured outline is offered as one image. Real corpus screens, and drawn
frames where the rule's edge is clearer.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from perception.pixel import (
    Anchor,
    PixelKind,
    PixelReader,
    decode_frame,
    find_anchors,
    frame_flags,
)
from perception.types import BoxPx
from tests._frames import png

WEIBO = "fdroidutg_weibo/weibo_2023-10-24/step_013"
ZOMBIES = "droidbot_admob_apps/com.tp.android.curezombie2nd/step_001"
HEAVEN = "droidbot_admob_apps/com.heaven.assistant/step_008"


def _frame_bytes(corpus_dir: Path, sample: str) -> bytes:
    return next((corpus_dir / sample).glob("screen.*[gG]")).read_bytes()


def _anchors(data: bytes) -> list[Anchor]:
    frame = decode_frame(data)
    flags, _ = frame_flags(frame)
    return find_anchors(frame, flags)


def _shapes(anchors: list[Anchor]) -> list[Anchor]:
    return [a for a in anchors if a.kind in (PixelKind.ICON, PixelKind.IMAGE)]


def _near(box: BoxPx, want: tuple[int, int, int, int], slack: int) -> bool:
    return all(abs(a - b) <= slack for a, b in zip(box, want, strict=True))


def _photo(h: int, w: int) -> np.ndarray:
    """A photo-like block: smooth colour blobs with sensor noise, no flat pixel in it."""
    rng = np.random.default_rng(7)
    base = rng.integers(0, 256, (h // 40 + 2, w // 40 + 2, 3), dtype=np.uint8)
    img = cv2.resize(base, (w, h), interpolation=cv2.INTER_CUBIC).astype(np.int16)
    img += rng.integers(-12, 13, (h, w, 3), dtype=np.int16)
    return np.clip(img, 0, 255).astype(np.uint8)


def _star(img: np.ndarray, cx: int, cy: int, r: int) -> None:
    """A dark five-pointed star: a ragged shape (a third of its box), no button's outline."""
    angles = np.pi / 2 + np.arange(10) * np.pi / 5
    radii = np.where(np.arange(10) % 2 == 0, r, 0.4 * r)
    pts = np.stack([cx + radii * np.cos(angles), cy - radii * np.sin(angles)], axis=1)
    cv2.fillPoly(img, [pts.astype(np.int32)], (20, 20, 20))


BLOCK = (40, 400, 680, 1100)
STAR = (360, 750)
DISC = (200, 950)


def _page(*, photo: bool, play: bool = False) -> bytes:
    """A light page with a star at STAR, on a framed photo over BLOCK when ``photo``; ``play``
    adds a white play disc (a dark triangle on a flat fill) at DISC."""
    img = np.full((1600, 720, 3), 245, np.uint8)
    left, top, right, bottom = BLOCK
    if photo:
        img[top:bottom, left:right] = _photo(bottom - top, right - left)
        cv2.rectangle(img, (left, top), (right - 1, bottom - 1), (60, 60, 60), 2)
    _star(img, *STAR, 40)
    if play:
        cx, cy = DISC
        cv2.circle(img, DISC, 60, (250, 250, 250), -1)
        tri = np.array([(cx - 20, cy - 35), (cx - 20, cy + 35), (cx + 40, cy)], np.int32)
        cv2.fillPoly(img, [tri], (40, 40, 40))
    return png(img)


def test_a_shape_on_a_flat_page_is_an_icon() -> None:
    shapes = _shapes(_anchors(_page(photo=False)))
    assert [a.kind for a in shapes if a.box_px.contains(STAR)] == [PixelKind.ICON]


def test_a_shape_inside_a_photo_is_no_icon_and_the_photo_is_one_image() -> None:
    shapes = _shapes(_anchors(_page(photo=True)))
    block = BoxPx(*BLOCK)
    inside = [
        a for a in shapes if block.contains(a.box_px.center) and a.box_px.area < block.area // 2
    ]
    assert inside == []
    assert [a.kind for a in _anchors(_page(photo=True)) if _near(a.box_px, BLOCK, 8)] == [
        PixelKind.IMAGE
    ]


def test_a_play_disc_on_a_photo_is_kept() -> None:
    shapes = _shapes(_anchors(_page(photo=True, play=True)))
    assert any(a.box_px.contains(DISC) and a.box_px.width < 140 for a in shapes)
    assert not any(a.box_px.contains(STAR) and a.box_px.width < 140 for a in shapes)


def test_weibo_photo_features_are_no_icons(corpus_dir: Path) -> None:
    """The eyes and nose in the video frame (#17-#20 of the audit) are not proposed; the video
    card is an image."""
    anchors = _anchors(_frame_bytes(corpus_dir, WEIBO))
    face = BoxPx(240, 870, 490, 1110)
    assert [a.box_px for a in _shapes(anchors) if face.encloses(a.box_px)] == []
    assert [a.kind for a in anchors if _near(a.box_px, (32, 652, 708, 1550), 6)] == [
        PixelKind.IMAGE
    ]
    # The bottom navigation's icons over the flat bar stay.
    nav = [a for a in anchors if a.kind is PixelKind.ICON and a.box_px.top >= 1640]
    assert len([a for a in nav if a.box_px.bottom <= 1730]) >= 5


def test_weibo_video_card_is_offered_as_one_image(corpus_dir: Path) -> None:
    with PixelReader() as reader:
        pixels = reader.read(_frame_bytes(corpus_dir, WEIBO))
    video = [c for c in pixels.candidates if _near(c.box_px, (32, 652, 708, 1550), 6)]
    assert [(c.kind, c.text) for c in video] == [(PixelKind.IMAGE, "")]
    face = BoxPx(240, 870, 490, 1110)
    assert [c for c in pixels.candidates if face.encloses(c.box_px)] == []


@pytest.mark.parametrize(
    ("sample", "gone", "kept"),
    [
        # Cure Zombies: the zombie eye and the nose; the round Play button over the art stays.
        (ZOMBIES, [(653, 779), (565, 919)], [(388, 1090, 692, 1396)]),
        # Heaven: the portrait's nose; the Facebook, Twitter, help, store and call icons on
        # the flat grey above it stay.
        (
            HEAVEN,
            [(544, 826)],
            [
                (38, 102, 128, 190),
                (144, 102, 232, 190),
                (248, 102, 338, 190),
                (848, 106, 938, 190),
                (952, 100, 1044, 192),
            ],
        ),
    ],
)
def test_picture_parts_go_and_buttons_stay(
    corpus_dir: Path,
    sample: str,
    gone: list[tuple[int, int]],
    kept: list[tuple[int, int, int, int]],
) -> None:
    shapes = _shapes(_anchors(_frame_bytes(corpus_dir, sample)))
    for point in gone:
        assert [a.box_px for a in shapes if a.box_px.contains(point) and a.box_px.width < 200] == []
    for box in kept:
        assert any(_near(a.box_px, box, 6) for a in shapes), box


def test_a_video_players_toolbar_icon_stays(corpus_dir: Path) -> None:
    """Weibo's search button over a full-screen video, in the toolbar's band at the top."""
    shapes = _shapes(
        _anchors(_frame_bytes(corpus_dir, "fdroidutg_weibo/weibo_2023-10-24/step_043"))
    )
    assert any(_near(a.box_px, (972, 106, 1038, 170), 6) for a in shapes)
