"""The content caches' key (perception.pixel.ocr.content_digest): what it hashes, in what order."""

from __future__ import annotations

import struct

import blake3
import numpy as np

from perception.pixel.ocr import content_digest


def test_content_digest_hashes_the_pixels_then_the_shape() -> None:
    # The pixels from the first byte (BLAKE3's chunks in step: its SIMD hashes them many at a
    # time), then each dimension and how many there are, little-endian int64.
    rng = np.random.default_rng(11)
    frame = rng.integers(0, 255, (120, 300, 3), dtype=np.uint8)
    crop = frame[20:64, 40:212]  # a 172x44 label crop, a strided view
    expected = blake3.blake3(np.ascontiguousarray(crop).tobytes())
    expected.update(struct.pack("<4q", 44, 172, 3, 3))
    assert content_digest(crop) == expected.digest(length=16)


def test_content_digest_tells_the_shapes_of_the_same_bytes_apart() -> None:
    rng = np.random.default_rng(12)
    gray = rng.integers(0, 255, (20, 40), dtype=np.uint8)
    keys = {
        content_digest(gray),
        content_digest(gray.reshape(20, 40, 1)),  # one channel more: another image
        content_digest(gray.reshape(40, 20)),
        content_digest(gray.reshape(800)),
        content_digest(gray.reshape(10, 20, 4)),
    }
    assert len(keys) == 5
    # The pixels alone, or with the shape in front as before, are other keys too.
    assert blake3.blake3(gray.tobytes()).digest(length=16) not in keys
    empty = np.zeros((0, 7, 3), np.uint8)
    assert content_digest(empty) != content_digest(np.zeros((7, 0, 3), np.uint8))
