"""The pixel channel on a few real screens of the corpus (read by path, never copied).

The ``corpus_dir`` fixture skips these, with the reason, where the corpus is absent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perception.errors import FrameSizeMismatchError
from perception.pixel import PixelReader, check_frame_size, decode_frame, frame_flags
from perception.types import BoxPx, ScreenSize


def test_flag_secure_screen_is_flagged_not_refused(corpus_dir: Path) -> None:
    frame = decode_frame((corpus_dir / "adb_oneoffs/kbank_secure_black/screen.png").read_bytes())
    assert frame.size == ScreenSize(1440, 3120)
    flags, _ = frame_flags(frame)
    assert flags.black and flags.secure
    pixels = PixelReader().read(frame)
    assert pixels.ocr == "skipped" and pixels.candidates == ()


def test_partial_and_mismatched_tree_sizes(corpus_dir: Path) -> None:
    frame = decode_frame((corpus_dir / "llamatouch/trace_18/step_000/screen.png").read_bytes())
    assert check_frame_size(frame.size, ScreenSize(1080, 2274)) == 0  # the dump's extent
    with pytest.raises(FrameSizeMismatchError):
        check_frame_size(frame.size, ScreenSize(1440, 2560))


def test_roi_ocr_on_a_real_screen(corpus_dir: Path) -> None:
    frame = decode_frame((corpus_dir / "llamatouch/trace_18/step_000/screen.png").read_bytes())
    with PixelReader() as reader:
        lines = reader.ocr_regions(frame, [BoxPx(0, 480, 1080, 880)])
    texts = [ln.text.casefold() for ln in lines]
    assert "sources" in texts
    assert all(480 <= ln.box_px.top and ln.box_px.bottom <= 880 for ln in lines)
