"""The threaded engine: capture off the caller's thread, fuse in one worker, observe on demand.

``Engine(source)`` runs three daemon threads per phone:

- a *frame* thread captures frames at most every ``frame_interval_ms`` and keeps only the newest
  one (an unconsumed older frame is dropped and counted);
- a *tree* thread dumps the hierarchy at most every ``tree_interval_ms`` (dumps are slow and
  disturb the phone, so they are throttled) and keeps only the newest one;
- one *worker* pairs each new tree with a frame of the same moment and epoch and fuses them with
  a :class:`perception.Perceiver`; it publishes only the newest observation.

``observe()`` returns the next observation the caller has not seen; ``observe(after_action=True)``
(or :meth:`Engine.mark_action` right after sending an action) waits for one built only from data
captured after the action, in a new epoch. When the tree channel fails with
:class:`IdleStateError`, :class:`DumpFailedError` or a dump timeout while frames still arrive,
frames are fused alone (pixel fallback).
When both channels fail with device errors, ``observe`` raises the typed device error instead of
waiting; it never returns an observation built from mismatched or pre-action data, and never
blocks longer than its timeout. Memory is flat: one slot per channel, no queues.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from perception.config import EngineConfig
from perception.errors import (
    DeviceError,
    DeviceTimeoutError,
    DumpFailedError,
    FrameError,
    IdleStateError,
    PerceptionError,
    RecordingError,
    TreeError,
)
from perception.sources.base import FrameCapture, ScreenSource, TreeCapture, now_ns
from perception.types import BoxPx

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from perception.pipeline import Observation, Perceiver

log = logging.getLogger(__name__)

_ROTATION_XML = re.compile(rb'<hierarchy[^>]*rotation="(\d)"')
_UNALIGNED = frozenset({"tree_stale", "frame_stale", "old_epoch"})
FACTS_MAX_AGE_NS = 2_000_000_000
"""The focused activity is re-read after an action or when older than this."""


class PerceiverLike(Protocol):
    def perceive(
        self,
        xml: bytes | None = None,
        frame: Any = None,
        *,
        tree_time_ns: tuple[int, int] | None = None,
        frame_time_ns: tuple[int, int] | None = None,
        epoch: int = 0,
        activity: str | None = None,
        step: int | None = None,
        keyboard: Any = None,
    ) -> Any: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineStats:
    frames_captured: int
    frames_dropped: int
    """Frames replaced by a newer one before the worker used them."""
    trees_captured: int
    observations: int
    tree_errors: int
    frame_errors: int
    fuse_errors: int
    unaligned: int
    """Pairs the fusion layer refused as not describing the same moment."""
    last_fuse_ms: float


@dataclass(slots=True)
class _Slot:
    """The newest capture of one channel and the newest error (if it came after it)."""

    item: Any = None
    seq: int = 0
    error: PerceptionError | None = None
    error_ns: int = 0
    captured: int = 0
    errors: int = 0


class Engine:
    """Capture and fusion for one phone (a live device, a replay, the virtual phone)."""

    def __init__(
        self,
        source: ScreenSource,
        *,
        perceiver: PerceiverLike | None = None,
        config: EngineConfig | None = None,
    ) -> None:
        self._source = source
        self._config = config or EngineConfig()
        self._owned_perceiver: Perceiver | None = None
        if perceiver is None:
            from perception.pipeline import Perceiver

            perceiver = self._owned_perceiver = Perceiver()
        self._perceiver = perceiver
        fusion_window_ms = getattr(getattr(perceiver, "config", None), "pair_window_ms", None)
        self._window_ms = float(self._config.pair_window_ms)
        if isinstance(fusion_window_ms, int | float) and fusion_window_ms > 0:
            self._window_ms = min(self._window_ms, float(fusion_window_ms))
        self._cond = threading.Condition()
        self._frame = _Slot()
        self._tree = _Slot()
        self._frames_dropped = 0
        self._frame_used_seq = 0
        self._tree_used_seq = 0
        self._obs: Observation | None = None
        self._obs_seq = 0
        self._obs_data_start_ns = 0
        self._obs_epoch = 0
        self._obs_frame: bytes | npt.NDArray[np.uint8] | None = None
        self._returned_seq = 0
        self._returned_frame: bytes | npt.NDArray[np.uint8] | None = None
        self._fuse_error: PerceptionError | None = None
        self._fuse_errors = 0
        self._unaligned = 0
        self._last_fuse_ms = 0.0
        self._barrier_ns = 0
        self._barrier_epoch = 0
        self._barrier_met = True
        self._rotation: int | None = None
        self._activity: str | None = None
        self._activity_epoch = -1
        self._activity_ns = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # ----- lifecycle ---------------------------------------------------------------------

    @property
    def source(self) -> ScreenSource:
        return self._source

    def start(self) -> Engine:
        if self._threads or self._stop.is_set():
            return self  # running, or closed (observe() then says so)
        serial = self._source.serial
        for name, target in (
            ("frames", self._frame_loop),
            ("trees", self._tree_loop),
            ("fuse", self._fuse_loop),
        ):
            thread = threading.Thread(
                target=target, name=f"perception-{name}-{serial}", daemon=True
            )
            self._threads.append(thread)
            thread.start()
        return self

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop the threads and wait for them (a capture in flight finishes first)."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        alive = [t.name for t in self._threads if t.is_alive()]
        if alive:
            log.warning("engine threads still running after %.1f s: %s", timeout_s, alive)
        self._threads = [t for t in self._threads if t.is_alive()]
        if self._owned_perceiver is not None and not alive:
            self._owned_perceiver.close()  # its OCR workers (a perceiver passed in is yours)

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)

    def __enter__(self) -> Engine:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- the caller's side -------------------------------------------------------------

    def mark_action(self) -> int:
        """Say an action was just sent: data captured before now is invalid from here on."""
        epoch = self._source.new_epoch()
        with self._cond:
            self._barrier_ns = now_ns()
            self._barrier_epoch = epoch
            self._barrier_met = False
            self._cond.notify_all()
        return epoch

    def observe(
        self, after_action: bool = False, *, timeout_s: float | None = None
    ) -> Observation:
        """The next observation not yet returned (post-action data only with ``after_action``)."""
        self.start()
        if after_action and not self._barrier_pending():
            self.mark_action()
        timeout = timeout_s if timeout_s is not None else self._config.observe_timeout_s
        deadline = time.monotonic() + timeout
        asked_ns = now_ns()
        with self._cond:
            while True:
                # Closed first: an observation fused before close() is not served after it.
                if not self._stop.is_set() and self._obs is not None and self._fresh():
                    self._returned_seq = self._obs_seq
                    self._returned_frame = self._obs_frame
                    self._barrier_met = True
                    return self._obs
                failure = self._failure_since(asked_ns)
                if failure is not None:
                    raise failure
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stop.is_set():
                    why = "the engine is closed" if self._stop.is_set() else (
                        f"no observation within {timeout:.1f} s"
                    )
                    last = "".join(
                        f"; last {kind} error: {slot.error}"
                        for kind, slot in (("tree", self._tree), ("frame", self._frame))
                        if slot.error is not None
                    )
                    raise DeviceTimeoutError(
                        f"{why} (trees: {self._tree.captured}, frames: {self._frame.captured})"
                        f"{last}",
                        serial=self._source.serial,
                    )
                self._cond.wait(min(remaining, 0.25))

    def peek(self) -> Observation | None:
        """The newest observation fused since the one :meth:`observe` returned last, without
        taking it (``observe`` still returns it next), or None when none is newer or it
        predates the last action. What the screen shows now, to check a decision made on an
        older observation before acting on it (the capture threads run while a model thinks)."""
        with self._cond:
            return self._obs if self._fresh() else None

    def _fresh(self) -> bool:
        """An observation not returned yet and from after the last action (hold ``_cond``)."""
        return (
            self._obs is not None
            and self._obs_seq > self._returned_seq
            and self._obs_data_start_ns >= self._barrier_ns
            and self._obs_epoch >= self._barrier_epoch
        )

    def last_frame(self) -> bytes | npt.NDArray[np.uint8] | None:
        """The frame (as captured: encoded bytes or an array) the observation :meth:`observe`
        returned last was fused from; None before the first one, or when it was fused without
        pixels (a tree alone: no frame came, or it could not be decoded). A black FLAG_SECURE
        frame is a frame. Kept per engine, not in the Observation, so an observation stays
        small and a caller that wants the pixels (a vision-language model's screenshot) asks."""
        with self._cond:
            return self._returned_frame

    def stats(self) -> EngineStats:
        with self._cond:
            return EngineStats(
                frames_captured=self._frame.captured,
                frames_dropped=self._frames_dropped,
                trees_captured=self._tree.captured,
                observations=self._obs_seq,
                tree_errors=self._tree.errors,
                frame_errors=self._frame.errors,
                fuse_errors=self._fuse_errors,
                unaligned=self._unaligned,
                last_fuse_ms=self._last_fuse_ms,
            )

    def _barrier_pending(self) -> bool:
        """An action was marked and no observation after it was returned yet (observations the
        worker fused after that one do not make the barrier pending again)."""
        return self._barrier_ns > 0 and not self._barrier_met

    def _failure_since(self, asked_ns: int) -> PerceptionError | None:
        """A typed error when neither channel can deliver (device errors on both)."""
        tree_err, frame_err = self._tree.error, self._frame.error
        fuse_err = self._fuse_error
        if fuse_err is not None and (
            type(fuse_err) is PerceptionError or (tree_err is None and frame_err is None)
        ):
            return fuse_err
        for slot in (self._tree, self._frame):
            # Errors that waiting cannot cure: a broken recording (a tree or frame file that
            # cannot be read) and untyped source failures (kept as a plain PerceptionError).
            err = slot.error
            if slot.error_ns >= asked_ns and (
                isinstance(err, RecordingError) or type(err) is PerceptionError
            ):
                if slot is self._frame and isinstance(err, RecordingError):
                    continue  # a step without a frame: the tree is fused alone
                return err
        if (
            isinstance(tree_err, DeviceError)
            and not isinstance(tree_err, IdleStateError)
            and isinstance(frame_err, DeviceError)
            and self._tree.error_ns >= asked_ns
            and self._frame.error_ns >= asked_ns
        ):
            return tree_err
        if isinstance(tree_err, IdleStateError) and frame_err is not None:
            return frame_err if isinstance(frame_err, DeviceError) else tree_err
        return None

    # ----- capture threads ---------------------------------------------------------------

    def _capture_loop(
        self, slot: _Slot, capture: Callable[[], Any], interval_ms: int, kind: str
    ) -> None:
        backoff_s = self._config.error_backoff_ms / 1000
        while not self._stop.is_set():
            t0 = time.monotonic()
            try:
                item = capture()
            except Exception as exc:  # noqa: BLE001 - the thread must outlive any capture bug
                if not isinstance(exc, PerceptionError):
                    # A source bug or an untyped library error: keep it (typed) for observe()
                    # instead of letting the thread die and observe() time out saying nothing.
                    log.error("[%s] %s capture raised %r", self._source.serial, kind, exc)
                    wrapped = PerceptionError(f"{kind} capture failed unexpectedly: {exc!r}")
                    wrapped.__cause__ = exc
                    exc = wrapped
                with self._cond:
                    slot.error = exc
                    slot.error_ns = now_ns()
                    slot.errors += 1
                    self._cond.notify_all()
                log.info("[%s] %s capture failed: %s", self._source.serial, kind, exc)
                self._stop.wait(backoff_s)
                continue
            with self._cond:
                if kind == "frame" and slot.seq > self._frame_used_seq:
                    self._frames_dropped += 1
                slot.item = item
                slot.seq += 1
                slot.captured += 1
                slot.error = None
                self._cond.notify_all()
            wait_s = interval_ms / 1000 - (time.monotonic() - t0)
            if wait_s > 0:
                self._stop.wait(wait_s)

    def _frame_loop(self) -> None:
        self._capture_loop(
            self._frame, self._source.capture_frame, self._config.frame_interval_ms, "frame"
        )

    def _tree_loop(self) -> None:
        self._capture_loop(
            self._tree, self._capture_tree, self._config.tree_interval_ms, "tree"
        )

    def _capture_tree(self) -> TreeCapture:
        """A dump, then the focused activity when the epoch changed or it is old."""
        tree = self._source.capture_tree()
        stale = now_ns() - self._activity_ns > FACTS_MAX_AGE_NS
        if tree.epoch != self._activity_epoch or stale:
            try:
                facts = self._source.screen_facts(refresh=True)
            except PerceptionError as exc:
                log.info("[%s] screen facts unavailable: %s", self._source.serial, exc)
                self._activity = None
            else:
                self._activity = facts.activity or None
            self._activity_epoch = tree.epoch
            self._activity_ns = now_ns()
        return tree

    # ----- the worker --------------------------------------------------------------------

    def _pick(self) -> tuple[TreeCapture | None, FrameCapture | None] | None:
        """The next pair to fuse, or None to keep waiting (called with the lock held)."""
        tree: TreeCapture | None = self._tree.item
        frame: FrameCapture | None = self._frame.item
        window_ns = int(self._window_ms * 1_000_000)
        barrier = self._barrier_ns
        fresh_tree = tree is not None and self._tree.seq > self._tree_used_seq
        if tree is not None and tree.start_ns < barrier:
            tree, fresh_tree = None, False
        if frame is not None and (frame.start_ns < barrier or self._frame.seq == 0):
            frame = None
        # The dump is failing while frames still come (idle-state errors, a dump that hangs on
        # an animation): fuse frames alone rather than wait.
        tree_failing = isinstance(
            self._tree.error, IdleStateError | DumpFailedError | DeviceTimeoutError
        ) and self._frame.error is None
        frame_failing = self._frame.error is not None and not isinstance(
            self._frame.error, DeviceError
        )
        if fresh_tree and tree is not None:
            if frame is None:
                return (tree, None) if frame_failing else None
            if frame.epoch != tree.epoch:
                return None
            if frame.end_ns + window_ns < tree.start_ns:
                return None  # the frame is older than the tree: wait for a newer one
            if frame.start_ns > tree.end_ns + window_ns:
                # The frame moved on; the tree may be stale: wait for a newer tree.
                return None
            rotation = _rotation_of(tree.xml)
            if self._rotation is not None and rotation != self._rotation:
                if frame.start_ns < tree.start_ns:
                    return None  # rotation changed: frames from before the new tree are void
            return tree, frame
        if tree_failing and frame is not None and self._frame.seq > self._frame_used_seq:
            return None, frame
        return None

    def _fuse_loop(self) -> None:
        while not self._stop.is_set():
            with self._cond:
                picked = self._pick()
                while picked is None and not self._stop.is_set():
                    self._cond.wait(0.25)
                    picked = self._pick()
                if picked is None:
                    return
                tree, frame = picked
                if tree is not None:
                    self._tree_used_seq = self._tree.seq
                    self._rotation = _rotation_of(tree.xml)
                self._frame_used_seq = self._frame.seq
            self._fuse(tree, frame)

    def _fuse(
        self,
        tree: TreeCapture | None,
        frame: FrameCapture | None,
        keyboard: BoxPx | None = None,
    ) -> None:
        """Fuse the pair; ``keyboard``: the on-screen keyboard reported with a dump that could
        not be read (the frame alone is fused, its keys still are not the page's text)."""
        if tree is not None:
            keyboard = tree.keyboard_px
        epoch = min(c.epoch for c in (tree, frame) if c is not None)
        data_start = min(c.start_ns for c in (tree, frame) if c is not None)
        t0 = time.perf_counter_ns()
        try:
            obs = self._perceiver.perceive(
                xml=tree.xml if tree is not None else None,
                frame=frame.data if frame is not None else None,
                tree_time_ns=(tree.start_ns, tree.end_ns) if tree is not None else None,
                frame_time_ns=(frame.start_ns, frame.end_ns) if frame is not None else None,
                epoch=epoch,
                activity=self._activity if tree is not None else None,
                step=epoch,
                keyboard=keyboard,
            )
        except (TreeError, FrameError) as exc:
            # One capture is unusable: fuse the other alone, if there is one.
            bad, other = ("tree", "frame") if isinstance(exc, TreeError) else ("frame", "tree")
            rest = (None, frame) if bad == "tree" else (tree, None)
            serial = self._source.serial
            log.info("[%s] %s unusable (%s): fusing the %s alone", serial, bad, exc, other)
            if rest == (None, None):
                self._record_fuse_error(exc)
                return
            self._fuse(rest[0], rest[1], keyboard)
            return
        except PerceptionError as exc:
            self._record_fuse_error(exc)
            return
        except Exception as exc:
            # A bug, or a plugged-in tree reader, pixel analyser or vision model that raised
            # something untyped: observe() raises it at once, typed, and the worker goes on
            # (it had died, and observe() waited out its timeout to blame the phone).
            failure = PerceptionError(f"fusion failed unexpectedly: {exc!r}")
            failure.__cause__ = exc
            self._record_fuse_error(failure)
            return
        verdict = str(getattr(getattr(obs, "pairing", None), "value", "paired"))
        if tree is not None and frame is not None and verdict in _UNALIGNED:
            log.info("[%s] fusion refused the pair (%s): waiting", self._source.serial, verdict)
            with self._cond:
                self._unaligned += 1
            return
        with self._cond:
            self._last_fuse_ms = (time.perf_counter_ns() - t0) / 1e6
            self._obs = obs
            self._obs_seq += 1
            self._obs_data_start_ns = data_start
            self._obs_epoch = epoch
            self._obs_frame = frame.data if frame is not None else None
            self._fuse_error = None
            self._cond.notify_all()

    def _record_fuse_error(self, exc: PerceptionError) -> None:
        log.warning("[%s] fusion failed: %s", self._source.serial, exc)
        with self._cond:
            self._fuse_error = exc
            self._fuse_errors += 1
            self._cond.notify_all()


def _rotation_of(xml: bytes) -> int:
    m = _ROTATION_XML.search(xml[:512])
    return int(m.group(1)) if m else 0
