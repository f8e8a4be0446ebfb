"""Defects found by the review of 2026-12-05 (rfc): a dark-mode page's own grey text taken
for a scrim around a flat card (finding 3), and numbers that tick between the dump and the
frame read back as another moment (finding 8).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from perception import Observation, Perceiver
from perception.fusion.crossval import numbers_far_apart, read_back_tally
from perception.fusion.score import read_back_failed
from perception.pipeline import PixelChannel
from perception.pixel import PixelReader, decode_frame, frame_flags
from tests._frames import png

# --- 3. a flat card on a dark page ------------------------------------------------------------


def _dark_page(page_text: int) -> bytes:
    """A #121212 page of text rows at luma ``page_text`` around a #2C2C2C card holding white
    text (no dialog, unless the page text is what a scrim leaves of white)."""
    img = np.full((2400, 1080, 3), 18, np.uint8)
    for y in range(250, 2250, 120):
        if not 900 <= y <= 1500:
            cv2.putText(img, "Wi-Fi, mobile data, hotspot", (60, y), cv2.FONT_HERSHEY_SIMPLEX,
                        1.4, (page_text,) * 3, 2)
    cv2.rectangle(img, (40, 880), (1040, 1480), (44, 44, 44), -1)
    cv2.putText(img, "Your storage is almost full", (90, 1000), cv2.FONT_HERSHEY_SIMPLEX, 1.4,
                (255, 255, 255), 3)
    cv2.putText(img, "Free up space to keep using the app.", (90, 1120),
                cv2.FONT_HERSHEY_SIMPLEX, 1.1, (255, 255, 255), 2)
    return png(img)


@pytest.mark.parametrize("page_text", [153, 160, 200])
def test_a_dark_pages_secondary_text_is_no_scrim(page_text: int) -> None:
    """Material's secondary text on #121212 is about 0.6 of white (luma ~153-160)."""
    flags, _ = frame_flags(decode_frame(_dark_page(page_text)))
    assert flags.modal_box_px is None


def test_a_flat_card_over_a_scrim_stays_modal() -> None:
    """Android's dialog dim (0.6) leaves the page's white text at luma 102."""
    flags, _ = frame_flags(decode_frame(_dark_page(102)))
    box = flags.modal_box_px
    assert box is not None
    assert (box.left, box.top, box.right, box.bottom) == (40, 880, 1040, 1480)


def test_pixels_only_a_dark_page_keeps_its_rows_and_no_press_back() -> None:
    with PixelReader() as reader, Perceiver(pixels=PixelChannel(reader)) as perceiver:
        obs: Observation = perceiver.perceive(None, _dark_page(153))
    texts = [c.text for c in obs.candidates]
    assert "Your storage is almost full" in texts
    assert sum("mobile data" in t for t in texts) >= 10
    assert not any(op.kind.value == "dismiss" for op in obs.operations)


# --- 8. numbers that tick ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "said"),
    [
        # A download dialog read a moment after its dump.
        (["4.5 MB of 20.0 MB", "About 35 seconds left", "Downloading update"],
         ["5.8 MB of 20.0 MB", "About 28 seconds left", "Downloading update"]),
        # A stopwatch crossing a minute.
        (["Elapsed 00:12:59", "Lap 2 00:03:59", "Laps"],
         ["Elapsed 00:13:00", "Lap 2 00:04:00", "Laps"]),
        # A clock turning the minute, a percentage growing.
        (["Updated 19:44", "Downloaded 45%", "Storage"],
         ["Updated 19:45", "Downloaded 47%", "Storage"]),
    ],
)
def test_numbers_that_tick_read_back(labels: list[str], said: list[str]) -> None:
    ok, agreed = read_back_tally(labels, said, [True] * len(labels))
    assert ok == [True] * len(labels) and agreed == len(labels)
    assert not read_back_failed(len(labels), agreed)


@pytest.mark.parametrize(
    ("label", "said"),
    [
        ("截至 2025/08/13 19:44", "截至 2025/08/13 14:20"),  # five hours earlier
        ("132 8432 6985", "132 3025 1149"),  # another phone number
        ("13284326985", "13230251149"),
        ("Balance 128", "Balance 31"),  # a quarter of it
        ("Downloaded 5%", "Downloaded 45%"),
        ("00:12:59", "00:47:10"),  # half an hour on
    ],
)
def test_numbers_far_apart_say_another_moment(label: str, said: str) -> None:
    assert numbers_far_apart(label, said)
    ok, agreed = read_back_tally(["更多服务", "我的副卡", label], ["更多服务", "我的副卡", said],
                                 [True, True, True])
    assert ok == [True, True, False] and agreed == 1  # two said back, one against


def test_corpus_a_dump_five_hours_older_stays_another_moment(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """Unicom's home: its time, its phone number and its data differ from the frame's."""
    folder = corpus_dir / "adb_oneoffs/unicom_home"
    image = next(p for p in sorted(folder.glob("screen.*")) if p.suffix in (".png", ".jpg"))
    with Perceiver(pixels=PixelChannel(reader)) as perceiver:
        obs = perceiver.perceive((folder / "screen.xml").read_bytes(), image.read_bytes())
    assert obs.consistent is False
    assert "read_back" in obs.tree_factors
