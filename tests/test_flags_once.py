"""A frame's pixel flags are computed once per perceive: the fusion's probe computes them for
every frame (it reads black, blank and the pop-up over a dimmed page off them) and hands them to
the pixel reader, which computed them again (3-20 ms a frame). Observations stay what they were;
the reader's stability (stable, changed_cells) stays its own, against the frame it read last.
The pages are dark ones, where black and blank are close calls."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import numpy.typing as npt
import pytest
from _frames import png
from test_pixel_only_black import dark_page, dark_page_xml

import perception.fusion.crossval as crossval
import perception.pixel.read as pixel_read
from perception import InputError, Observation, Perceiver
from perception.config import PixelConfig
from perception.fusion.arbiter import Arbiter, ArbiterState, ArbiterStep
from perception.fusion.crossval import FrameProbe
from perception.pipeline import PixelChannel, PixelWork
from perception.pixel import Frame, PixelReader, frame_flags
from perception.pixel.flags import gray_small
from perception.pixel.read import Pixels

U8 = npt.NDArray[np.uint8]
Case = tuple[bytes, bytes | None]

# The corpus's darkest screens (mean grey of the probe): the FLAG_SECURE one (0.9), then a dark
# clock app (11.9) and a dark login page (15.8); the last two darkened (x0.8, x0.6) to within 2
# levels of black_luma_max (8), their labels still showing, so that the pixel reader reads them.
SECURE = "adb_oneoffs/kbank_secure_black"
CLOCK = "fdroidutg_apps/com.chancehorizon.just24hoursplus/step_002"
LOGIN = "testcube_transsion/chatter_2025-01-25/step_001"
CORPUS_CASES = [(SECURE, 1.0), (CLOCK, 1.0), (CLOCK, 0.8), (LOGIN, 1.0), (LOGIN, 0.6)]


class Unstable(Arbiter):
    """Tree-unstable whatever the scores: the pixels are read in regions (ROI), or whole."""

    def update(self, tree_confidence: float) -> ArbiterStep:
        return dataclasses.replace(super().update(tree_confidence), state=ArbiterState.UNSTABLE)


class ComputesItsOwn(PixelChannel):
    """The channel as it was: its methods overridden, so the fusion hands it no flags and the
    reader computes them again (the reference the observations are compared with)."""

    def full(self, frame: Any, **_: object) -> Any:
        return super().full(frame)

    def regions(self, frame: Any, regions: Any, **_: object) -> Any:
        return super().regions(frame, regions)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each call of the real frame_flags, wherever the fusion and the reader call it."""
    seen: list[int] = []
    real = pixel_read.frame_flags

    def counting(*args: Any, **kwargs: Any) -> Any:
        seen.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(crossval, "frame_flags", counting)
    monkeypatch.setattr(pixel_read, "frame_flags", counting)
    return seen


@pytest.fixture(scope="module")
def make(reader: PixelReader) -> Iterator[Callable[..., Perceiver]]:
    """Perceivers whose readers share the module's OCR engine."""

    def build(channel: type[PixelChannel] = PixelChannel, unstable: bool = False) -> Perceiver:
        p = Perceiver(pixels=channel(PixelReader(reader.config, reader.text.engine)))
        if unstable:
            p.arbiter = Unstable(p.config)
        return p

    yield build


def _screen(step: Path, scale: float) -> Case:
    img = cv2.imread(str(next(step.glob("screen.*"))), cv2.IMREAD_COLOR)
    if scale != 1.0:
        img = np.round(img.astype(np.float32) * scale).astype(np.uint8)
    return png(img), (step / "screen.xml").read_bytes()


def _dark_cases(corpus_dir: Path) -> dict[str, Case]:
    cases = {f"{rel} x{scale}": _screen(corpus_dir / rel, scale) for rel, scale in CORPUS_CASES}
    cases["drawn AMOLED settings page"] = (png(dark_page()), dark_page_xml())
    return cases


def _facts(obs: Observation) -> dict[str, Any]:
    """An observation as data, without its timings."""
    d = dataclasses.asdict(obs)
    d.pop("timings_ms")
    return d


def _runs(make: Callable[..., Perceiver], case: Case, calls: list[int], **kw: Any) -> Iterator[
    tuple[str, Observation, int]
]:
    """Each way the page is perceived (frame only; with its tree; with its tree in
    tree-unstable), three times over (the reader's cache, its stability), with the calls made."""
    frame, xml = case
    for name, tree, unstable in (("frame", None, False), ("tree", xml, False), ("roi", xml, True)):
        p = make(unstable=unstable, **kw)
        for epoch in range(3):
            calls.clear()
            obs = p.perceive(tree, frame, epoch=epoch)
            yield f"{name} #{epoch}", obs, len(calls)


def test_a_frame_is_flagged_once_per_perceive(
    make: Callable[..., Perceiver], corpus_dir: Path, calls: list[int]
) -> None:
    """A page the pixels read was flagged by the probe, then by the reader (2 calls)."""
    read = 0  # frames the reader read too, with the probe's flags
    for label, case in _dark_cases(corpus_dir).items():
        for how, obs, n in _runs(make, case, calls):
            assert n == 1, f"{label}, {how}: frame_flags called {n} times"
            if obs.pixel_work is not PixelWork.NONE:
                read += 1
    # All but the black one, frame only and in ROI, 3 times each.
    assert read == 30


def test_observations_are_what_the_reader_flagging_again_gave(
    make: Callable[..., Perceiver], corpus_dir: Path, calls: list[int]
) -> None:
    for label, case in _dark_cases(corpus_dir).items():
        now = list(_runs(make, case, calls))
        before = list(_runs(make, case, calls, channel=ComputesItsOwn))
        assert [h for h, _, _ in now] == [h for h, _, _ in before]
        for (how, a, _), (_, b, _) in zip(now, before, strict=True):
            assert _facts(a) == _facts(b), f"{label}, {how}"


def _as_read(px: Pixels) -> Pixels:
    return dataclasses.replace(px, timings_ms={})


def test_the_reader_takes_the_flags_and_keeps_its_own_stability(reader: PixelReader) -> None:
    """Frames in turn (dark, light, dark again, moved): the flags handed over give the reader
    the same result as the flags it computes, stable and changed_cells included."""
    dark = dark_page()
    light = 255 - dark
    moved = np.roll(dark, 400, axis=0)
    frames = [dark, dark, light, dark, moved, moved]
    given = PixelReader(reader.config, reader.text.engine)
    own = PixelReader(reader.config, reader.text.engine)
    seen = []
    for img in frames:
        f = Frame.from_array(img)
        a = given.read(f, flagged=frame_flags(f, reader.config), ocr=False)
        b = own.read(f, ocr=False)
        assert _as_read(a) == _as_read(b)
        seen.append((a.flags.stable, a.flags.changed_cells > 0))
    assert seen == [
        (None, False), (True, False), (False, True), (False, True), (False, True), (True, False)
    ]


def test_flags_of_another_frame_are_refused(reader: PixelReader) -> None:
    small = Frame.from_array(dark_page()[:1200])
    with pytest.raises(InputError, match="another frame"):
        reader.read(Frame.from_array(dark_page()), flagged=frame_flags(small), ocr=False)


def test_a_probe_of_other_limits_hands_no_flags(reader: PixelReader, calls: list[int]) -> None:
    """A caller's probe (Perceiver.fuse(probe=...)) made with other limits than the reader's:
    the reader flags the frame by its own limits."""
    own = PixelReader(reader.config, reader.text.engine)
    p = Perceiver(pixels=PixelChannel(own))
    frame = own.frame(png(dark_page()))
    probe = FrameProbe(frame.pixels, PixelConfig(black_luma_max=9.0))
    assert probe.flags is not None
    calls.clear()
    obs = p.fuse(tree=None, frame=frame, probe=probe)
    assert obs.pixel_work is PixelWork.FULL and len(calls) == 1  # the reader's own


def test_the_probe_and_the_flags_share_one_grey_copy() -> None:
    """The probe's grey copy is the flags' own: computed once, and the flags off it are those
    the pixel reader computes from the frame. A copy of another size is refused."""
    frame = Frame.from_array(dark_page())
    probe = FrameProbe(frame.pixels)
    assert np.array_equal(probe.gray, gray_small(frame.pixels))
    assert probe.flags == frame_flags(frame)[0]
    with pytest.raises(InputError, match="gray_small"):
        frame_flags(frame, gray=probe.gray[:-1])
