"""The threaded Engine on a replayed recording with the real Perceiver."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from perception.config import EngineConfig
from perception.engine import Engine
from perception.errors import DeviceTimeoutError, PerceptionError, RecordingError
from perception.sources import ActionKind, RecordedAction, ReplaySource, TreeCapture
from perception.types import PointPx

TINY = Path(__file__).parent / "data" / "sources" / "tiny"
FAST = EngineConfig(frame_interval_ms=20, tree_interval_ms=20, observe_timeout_s=10.0)


def _texts(obs: object) -> set[str]:
    return {c.text for c in getattr(obs, "candidates", ())}


def _engine_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("perception-")]


def test_observe_returns_aligned_observations() -> None:
    source = ReplaySource(TINY)
    with Engine(source, config=FAST) as engine:
        obs = engine.observe()
        assert {"New note", "Settings", "About"} <= _texts(obs)
        assert obs.ready and obs.pairing.value == "paired"
        second = engine.observe()
        assert second is not obs  # the *next* observation, never the same one twice
        stats = engine.stats()
        assert stats.trees_captured >= 2 and stats.frames_captured >= 2
        assert stats.observations >= 2 and stats.fuse_errors == 0
    assert not _engine_threads()


def test_after_action_waits_for_post_action_data() -> None:
    source = ReplaySource(TINY)
    engine = Engine(source, config=FAST)
    try:
        assert "New note" in _texts(engine.observe())
        source.perform(RecordedAction(kind=ActionKind.TAP, point_px=PointPx(50, 150)))
        engine.mark_action()  # right after sending the action
        for _ in range(5):
            obs = engine.observe()
            assert "Save" in _texts(obs) and "New note" not in _texts(obs)
            assert obs.epoch >= 1
        source.perform(RecordedAction(kind=ActionKind.TAP, point_px=PointPx(60, 130)))
        obs = engine.observe(after_action=True)
        assert "Dark mode" in _texts(obs)
    finally:
        engine.close()
    assert not engine.running and not _engine_threads()


def test_after_action_twice_in_a_row_without_mark_action() -> None:
    """Each observe(after_action=True) sets its own barrier, even when the worker fused more
    observations since the last one was returned (regression: the second one showed the old
    screen)."""
    source = ReplaySource(TINY)
    with Engine(source, config=FAST) as engine:
        assert "New note" in _texts(engine.observe())
        source.perform(RecordedAction(kind=ActionKind.TAP, point_px=PointPx(50, 150)))
        assert "Save" in _texts(engine.observe(after_action=True))
        time.sleep(0.2)  # the worker keeps fusing the same screen meanwhile
        source.perform(RecordedAction(kind=ActionKind.TAP, point_px=PointPx(60, 130)))
        obs = engine.observe(after_action=True)
        assert "Dark mode" in _texts(obs) and obs.epoch >= 2


def test_observe_never_hangs() -> None:
    source = ReplaySource(TINY)
    slow = FAST.with_(tree_interval_ms=5_000)
    with Engine(source, config=slow) as engine:
        engine.observe()
        t0 = time.monotonic()
        with pytest.raises(DeviceTimeoutError, match="no observation within"):
            engine.observe(timeout_s=0.3)
        assert time.monotonic() - t0 < 1.5


def test_memory_is_flat_over_many_observations() -> None:
    source = ReplaySource(TINY)
    fast = FAST.with_(frame_interval_ms=0, tree_interval_ms=0)

    def rss_kb() -> int:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * 4

    with Engine(source, config=fast) as engine:
        for _ in range(60):
            engine.observe()
        base = rss_kb()
        for i in range(300):
            obs = engine.observe()
            if i % 100 == 0:  # move along the recording and back
                source.perform(RecordedAction(kind=ActionKind.KEY, key="BACK"))
        growth_kb = rss_kb() - base
        stats = engine.stats()
    assert obs is not None
    assert stats.observations >= 360
    assert stats.frames_dropped >= 0
    assert growth_kb < 16_000, f"RSS grew by {growth_kb} kB over 300 observations"
    assert not _engine_threads()


def test_the_engine_closes_only_the_perceiver_it_made() -> None:
    from perception.pipeline import Perceiver

    class Counting(Perceiver):
        closed = 0

        def close(self) -> None:
            self.closed += 1
            super().close()

    yours = Counting()
    with Engine(ReplaySource(TINY), perceiver=yours, config=FAST) as engine:
        engine.observe()
    assert yours.closed == 0  # passed in: the caller closes it
    yours.close()
    with Counting() as scoped:
        assert scoped.closed == 0
    assert scoped.closed == 1


def test_an_unreadable_frame_is_fused_without(tmp_path: Path) -> None:
    """A screencap cut short (the phone went away mid-transfer): perceive() raises the frame's
    error (test_pipeline), and the Engine, which captures its own frames, fuses the tree alone
    and counts no fusion error."""
    import shutil

    rec = tmp_path / "tiny"
    shutil.copytree(TINY, rec)
    for png in rec.rglob("*.png"):
        data = png.read_bytes()
        png.write_bytes(data[: len(data) // 3])
    with Engine(ReplaySource(rec), config=FAST) as engine:
        obs = engine.observe()
        assert {"New note", "Settings", "About"} <= _texts(obs)
        assert obs.pixel_confidence == 0.0 and obs.consistent is None
        assert engine.stats().fuse_errors == 0
    assert not _engine_threads()


def test_a_recording_file_lost_mid_session_is_raised_not_a_timeout(tmp_path: Path) -> None:
    """The tree thread used to die on the untyped FileNotFoundError; observe() then waited out
    its whole timeout and said only "no observation"."""
    import shutil

    rec = tmp_path / "tiny"
    shutil.copytree(TINY, rec)
    source = ReplaySource(rec)
    with Engine(source, config=FAST.with_(observe_timeout_s=5.0)) as engine:
        engine.observe()
        (rec / "step_001" / "screen.xml").unlink()
        source.advance()
        t0 = time.monotonic()
        with pytest.raises(RecordingError, match="step 1: cannot read its tree"):
            engine.observe(after_action=True)
        assert time.monotonic() - t0 < 2.0
        assert all(t.is_alive() for t in _engine_threads())


class _BrokenTrees(ReplaySource):
    """A source with a bug: its dumps raise an untyped error."""

    def capture_tree(self) -> TreeCapture:
        raise OSError("source bug")


def test_an_untyped_source_error_is_typed_and_keeps_the_threads() -> None:
    with Engine(_BrokenTrees(TINY), config=FAST.with_(observe_timeout_s=5.0)) as engine:
        t0 = time.monotonic()
        with pytest.raises(PerceptionError, match="tree capture failed unexpectedly") as info:
            engine.observe()
        assert isinstance(info.value.__cause__, OSError)
        assert time.monotonic() - t0 < 2.0
        assert len(_engine_threads()) == 3
    assert not _engine_threads()


def test_observe_after_close_says_closed() -> None:
    engine = Engine(ReplaySource(TINY), config=FAST)
    with engine:
        engine.observe()
    with pytest.raises(DeviceTimeoutError, match="closed"):
        engine.observe()
    assert not _engine_threads()


def test_an_untyped_fusion_error_is_raised_typed_not_a_timeout() -> None:
    """A plugged-in tree reader (or a bug) raising something untyped killed the fusion worker:
    observe() waited out its timeout and blamed the phone (DeviceTimeoutError)."""
    from perception.pipeline import Perceiver

    def reader(xml: bytes | str) -> object:
        raise ZeroDivisionError("reader bug")

    with Perceiver(tree_reader=reader) as perceiver, Engine(
        ReplaySource(TINY), perceiver=perceiver, config=FAST.with_(observe_timeout_s=5.0)
    ) as engine:
        t0 = time.monotonic()
        with pytest.raises(PerceptionError, match="fusion failed unexpectedly") as info:
            engine.observe()
        assert not isinstance(info.value, DeviceTimeoutError)
        assert isinstance(info.value.__cause__, ZeroDivisionError)
        assert time.monotonic() - t0 < 2.0
        assert len(_engine_threads()) == 3  # the worker lives on
    assert not _engine_threads()
