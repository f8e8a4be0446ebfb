"""Regions (ROI boxes) as users pass them to the pixel channel: floats, tuples and numpy ints
read like the int box they cover; anything else is a typed error naming the region."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from perception.errors import InputError, PerceptionError
from perception.pixel import PixelReader
from perception.types import BoxPx

FONT = cv2.FONT_HERSHEY_SIMPLEX


def _dialog() -> np.ndarray:
    img = np.full((1280, 720, 3), 250, np.uint8)
    cv2.putText(img, "Delete photo", (40, 300), FONT, 1.4, (20, 20, 20), 3, cv2.LINE_AA)
    cv2.putText(img, "Close", (480, 700), FONT, 1.4, (20, 20, 20), 3, cv2.LINE_AA)
    return img


def test_regions_given_as_floats_tuples_or_numpy_ints(reader: PixelReader) -> None:
    img = _dialog()
    want = reader.read(img, regions=[BoxPx(0, 220, 720, 340)]).lines
    assert [ln.text.replace(" ", "").casefold() for ln in want] == ["deletephoto"]
    for region in (
        (0, 220, 720, 340),
        (0.0, 220.4, 719.6, 340.0),
        np.array([0, 220, 720, 340], np.int64),
    ):
        got = reader.read(img, regions=[region])  # type: ignore[list-item]
        assert got.lines == want, region
        assert reader.ocr_regions(img, [region]) == list(want)  # type: ignore[list-item]
    crop = reader.crop_for_vision(img, (40.5, 640.2, 200.0, 720.0))  # type: ignore[arg-type]
    assert crop.box_px == BoxPx(0, 580, 260, 780)


@pytest.mark.parametrize(
    "region", [(0, 220, 720), "0,220,720,340", (0, float("nan"), 720, 340), None]
)
def test_a_region_that_is_not_a_box_is_a_typed_error(reader: PixelReader, region: object) -> None:
    with pytest.raises(InputError, match="region"):
        reader.read(_dialog(), regions=[region])  # type: ignore[list-item]
    with pytest.raises(PerceptionError):
        reader.ocr_regions(_dialog(), [region])  # type: ignore[list-item]


def test_one_box_for_regions_says_pass_a_list(reader: PixelReader) -> None:
    with pytest.raises(InputError, match=r"pass \[box\]"):
        reader.read(_dialog(), regions=BoxPx(0, 220, 720, 340))  # type: ignore[arg-type]
