"""The anchors' faster paths give what the slower ones gave, bit for bit.

- ``pixel_spread_mask`` (the colour mask of the saturated tabs and buttons) in both twins, and
  the mask itself against ``inRange`` of OpenCV's HSV copy: on every 8-bit colour, on random
  images and on corpus frames;
- the 16-bit labelling of :func:`anchors._components` against OpenCV's 32-bit one, and its way
  back to 32 bits on a mask 16 bits cannot label;
- the toggles' margin median against ``np.median``.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import cv2
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from perception import fastpath
from perception.pixel import anchors, decode_frame

HSV_LOW = (0, anchors.SATURATION_MIN, anchors.VALUE_MIN)
HSV_HIGH = (180, 255, 255)


def _hsv_mask(bgr: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """What ``_saturated`` thresholded before: the HSV copy's saturation and value."""
    out: npt.NDArray[np.uint8] = cv2.inRange(
        cv2.cvtColor(bgr, cv2.COLOR_BGR2HSV), HSV_LOW, HSV_HIGH
    )
    return out


def _every_colour() -> npt.NDArray[np.uint8]:
    """All 2^24 BGR colours as one 4096 x 4096 image."""
    code = np.arange(1 << 24, dtype=np.uint32)
    planes = [(code >> 16) & 255, (code >> 8) & 255, code & 255]
    return np.stack(planes, axis=1).astype(np.uint8).reshape(4096, 4096, 3)


def test_spread_mask_is_the_hsv_mask_on_every_colour(fastpath_impl: ModuleType) -> None:
    bgr = _every_colour()
    floor = anchors._spread_floor(anchors.SATURATION_MIN, anchors.VALUE_MIN)
    got = fastpath_impl.pixel_spread_mask(bgr, floor)
    assert got.dtype == np.uint8 and got.shape == (4096, 4096)
    assert np.array_equal(got, _hsv_mask(bgr))


@pytest.mark.parametrize("saturation, value", [(1, 0), (60, 0), (90, 70), (200, 250), (255, 255)])
def test_spread_floor_matches_hsv_for_other_thresholds(saturation: int, value: int) -> None:
    """The table is read off OpenCV, not written for 90 and 70: any threshold holds."""
    rng = np.random.default_rng(saturation * 256 + value)
    bgr = rng.integers(0, 256, (300, 400, 3), dtype=np.uint8)
    floor = anchors._spread_floor(saturation, value)
    want = cv2.inRange(cv2.cvtColor(bgr, cv2.COLOR_BGR2HSV), (0, saturation, value), HSV_HIGH)
    for mod in fastpath.available().values():
        assert np.array_equal(mod.pixel_spread_mask(bgr, floor), want)


images = arrays(
    np.uint8,
    st.tuples(st.integers(0, 17), st.integers(0, 23), st.just(3)),
    elements=st.integers(0, 255),
)
floors = arrays(np.uint8, 256, elements=st.integers(0, 255))


@settings(max_examples=300, deadline=None)
@given(img=images, floor=floors)
def test_spread_mask_twins_agree(img: npt.NDArray[np.uint8], floor: npt.NDArray[np.uint8]) -> None:
    """Any image and any floor table, including empty images: both twins, the same mask."""
    got = [mod.pixel_spread_mask(img, floor) for mod in fastpath.available().values()]
    for mask in got:
        assert mask.dtype == np.uint8 and mask.shape == img.shape[:2]
        assert np.array_equal(mask, got[0])
    hi = img.max(axis=2, initial=0).astype(np.int16)
    spread = hi - img.min(axis=2, initial=255)
    assert np.array_equal(got[0] == 255, spread >= floor[hi])


@settings(max_examples=200, deadline=None)
@given(img=images)
def test_colour_mask_is_the_hsv_mask_on_random_images(img: npt.NDArray[np.uint8]) -> None:
    if not img.size:
        return  # cvtColor refuses an empty image
    assert np.array_equal(anchors._colour_mask(img), _hsv_mask(img))


def test_spread_mask_refuses_what_is_not_bgr(fastpath_impl: ModuleType) -> None:
    floor = anchors._spread_floor(anchors.SATURATION_MIN, anchors.VALUE_MIN)
    with pytest.raises(ValueError):
        fastpath_impl.pixel_spread_mask(np.zeros((4, 4, 4), np.uint8), floor)
    with pytest.raises(ValueError):
        fastpath_impl.pixel_spread_mask(np.zeros((4, 4, 3), np.uint8), floor[:255])


def test_colour_mask_on_a_strided_view() -> None:
    """A crop of a frame (rows not contiguous) is masked like the copy of it."""
    rng = np.random.default_rng(7)
    frame = rng.integers(0, 256, (60, 80, 3), dtype=np.uint8)
    view = frame[5:50, 10:70]
    assert np.array_equal(anchors._colour_mask(view), _hsv_mask(np.ascontiguousarray(view)))


def _corpus_frames(corpus: Path, n: int) -> list[Path]:
    """``n`` screens spread over the corpus index (the rows with an image on disk)."""
    rows = [json.loads(line) for line in (corpus / "index.jsonl").read_text().splitlines()]
    shots = [corpus / r["path"] / r["image"] for r in rows if r.get("image")]
    shots = sorted(p for p in shots if p.is_file())
    step = max(1, len(shots) // n)
    return shots[::step][:n]


def test_colour_mask_and_labels_on_corpus_frames(corpus_dir: Path) -> None:
    """On real screens (the half-size copy the anchors work on): the mask, its opened form's
    components in 16 and 32 bits, and the saturated anchors' stats."""
    frames = _corpus_frames(corpus_dir, 24)
    assert frames
    kernel = np.ones((3, 3), np.uint8)
    coloured = 0
    for path in frames:
        frame = decode_frame(path.read_bytes())
        small = anchors._small(frame, 0.5)
        mask = anchors._colour_mask(small)
        assert np.array_equal(mask, _hsv_mask(small)), path
        opened = cv2.morphologyEx(mask, cv2.MORPH_OPEN, kernel)
        coloured += bool(opened.any())
        labels, stats = anchors._components(opened)
        _, labels32, stats32, _ = cv2.connectedComponentsWithStats(opened, connectivity=8)
        assert np.array_equal(stats, stats32), path
        assert np.array_equal(labels.astype(np.int32), labels32), path
    assert coloured >= len(frames) // 2  # the comparison saw colour, not blank masks


def test_components_fall_back_to_32_bits() -> None:
    """A mask of isolated dots has more components than 16 bits number: still labelled."""
    mask = np.zeros((601, 541), np.uint8)
    mask[::2, ::2] = 255
    labels, stats = anchors._components(mask)
    assert len(stats) == 1 + 301 * 271
    assert labels.dtype == np.int32 and int(labels.max()) == 301 * 271
    _, _, stats32, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    assert np.array_equal(stats, stats32)


def _cv2_distance(patch: npt.NDArray[np.uint8], b: int, g: int, r: int) -> npt.NDArray[np.uint8]:
    """The toggles' distance as OpenCV computed it before the kernel."""
    planes = cv2.split(cv2.absdiff(patch, np.array([float(b), float(g), float(r), 0.0])))
    out: npt.NDArray[np.uint8] = cv2.max(cv2.max(planes[0], planes[1]), planes[2])
    return out


colours = st.tuples(st.integers(0, 255), st.integers(0, 255), st.integers(0, 255))


@settings(max_examples=300, deadline=None)
@given(img=images, colour=colours, crop=st.tuples(st.integers(0, 3), st.integers(0, 3)))
def test_colour_distance_twins_agree_with_opencv(
    img: npt.NDArray[np.uint8], colour: tuple[int, int, int], crop: tuple[int, int]
) -> None:
    """Both twins on a crop (strided rows, as a toggle's patch of the frame) and on a copy."""
    view = img[crop[0] :, crop[1] :]
    got = [mod.pixel_colour_distance(view, *colour) for mod in fastpath.available().values()]
    for dist in got:
        assert dist.dtype == np.uint8 and dist.shape == view.shape[:2]
        assert np.array_equal(dist, got[0])
    if view.size:
        assert np.array_equal(got[0], _cv2_distance(np.ascontiguousarray(view), *colour))


def test_colour_distance_refuses_bad_input(fastpath_impl: ModuleType) -> None:
    with pytest.raises(ValueError):
        fastpath_impl.pixel_colour_distance(np.zeros((4, 4, 3), np.uint8), 0, 256, 0)
    with pytest.raises(ValueError):
        fastpath_impl.pixel_colour_distance(np.zeros((4, 4, 4), np.uint8), 0, 0, 0)
