"""Pair a tree snapshot with a frame only when both describe the same moment.

Every capture carries its interval on one monotonic clock (``time.monotonic_ns()``) and the
action epoch it belongs to. Two captures describe the same moment when the gap between their
intervals is within the window (300 ms by default); otherwise the older one is dropped and its
source is asked for a fresh one. An action starts a new epoch: anything captured before it is
invalid for decisions after it, so the next pairing waits for post-action captures.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import Generic, TypeVar

from perception.errors import CaptureTimeError
from perception.types import Channel

log = logging.getLogger(__name__)

T = TypeVar("T")
F = TypeVar("F")


@dataclass(frozen=True, slots=True)
class CaptureTime:
    """When a capture started and ended, on the monotonic clock (``time.monotonic_ns()``)."""

    start_ns: int
    end_ns: int

    def __post_init__(self) -> None:
        if self.end_ns < self.start_ns:
            raise CaptureTimeError(
                f"capture ends before it starts: start_ns={self.start_ns} end_ns={self.end_ns}"
            )

    @property
    def duration_ms(self) -> float:
        return (self.end_ns - self.start_ns) / 1e6

    def gap_ms(self, other: CaptureTime) -> float:
        """The time between two capture intervals (0 when they overlap), in ms."""
        gap_ns = max(0, max(self.start_ns, other.start_ns) - min(self.end_ns, other.end_ns))
        return gap_ns / 1e6


@enum.unique
class PairVerdict(enum.StrEnum):
    PAIRED = "paired"
    """Both captures describe the same moment (or carry no times, the caller vouches)."""
    TREE_ONLY = "tree_only"
    """No frame was offered: the tree stands alone."""
    FRAME_ONLY = "frame_only"
    """No tree was offered: the frame stands alone."""
    TREE_STALE = "tree_stale"
    """The tree is older than the frame by more than the window: dropped, fresh tree needed."""
    FRAME_STALE = "frame_stale"
    """The frame is older than the tree by more than the window: dropped, fresh frame needed."""
    OLD_EPOCH = "old_epoch"
    """What was offered predates the current action epoch: dropped, fresh captures needed."""


@dataclass(frozen=True, slots=True)
class Timed(Generic[T]):
    """A payload, when it was captured (``None``: the caller did not say) and its action epoch."""

    payload: T
    time: CaptureTime | None = None
    epoch: int = 0

    def __post_init__(self) -> None:
        if self.epoch < 0:
            raise CaptureTimeError(f"epoch must be >= 0, got {self.epoch}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Pairing(Generic[T, F]):
    """The outcome of one alignment step."""

    verdict: PairVerdict
    tree: Timed[T] | None
    frame: Timed[F] | None
    gap_ms: float | None
    refresh: frozenset[Channel]
    """The sources to ask for a fresh capture before fusing (empty when the pair is usable)."""
    epoch: int

    @property
    def usable(self) -> bool:
        return not self.refresh


class Aligner(Generic[T, F]):
    """Keeps the newest tree and frame of the current epoch and pairs them by time.

    ``offer`` takes whatever arrived (a tree, a frame or both); a capture that cannot be paired
    yet is kept, so the next offer of the other channel can complete the pair.
    """

    def __init__(self, *, window_ms: float = 300.0) -> None:
        if window_ms <= 0:
            raise CaptureTimeError(f"window_ms must be > 0, got {window_ms}")
        self.window_ms = window_ms
        self.epoch = 0
        self._tree: Timed[T] | None = None
        self._frame: Timed[F] | None = None

    def begin_epoch(self, epoch: int) -> None:
        """An action happened: forget every capture made before it."""
        if epoch < self.epoch:
            raise CaptureTimeError(f"epoch went back from {self.epoch} to {epoch}")
        if epoch > self.epoch:
            self.epoch = epoch
            self._tree = None
            self._frame = None

    def _current(self, item: Timed[T] | Timed[F] | None) -> bool:
        return item is not None and item.epoch >= self.epoch

    def offer(self, tree: Timed[T] | None = None, frame: Timed[F] | None = None) -> Pairing[T, F]:
        stale_epoch = False
        for item in (tree, frame):
            if item is not None and item.epoch > self.epoch:
                self.begin_epoch(item.epoch)
        if tree is not None:
            if self._current(tree):
                self._tree = tree
            else:
                stale_epoch = True
        if frame is not None:
            if self._current(frame):
                self._frame = frame
            else:
                stale_epoch = True
        t, f = self._tree, self._frame
        if stale_epoch and (t is None or f is None):
            refresh = frozenset(
                c for c, have in ((Channel.TREE, t), (Channel.PIXEL, f)) if have is None
            )
            log.debug("dropped captures from before epoch %d", self.epoch)
            return Pairing(
                verdict=PairVerdict.OLD_EPOCH,
                tree=None,
                frame=None,
                gap_ms=None,
                refresh=refresh,
                epoch=self.epoch,
            )
        if t is None and f is None:
            raise CaptureTimeError("nothing to align: neither a tree nor a frame was offered")
        if f is None:
            self._tree = None
            return Pairing(
                verdict=PairVerdict.TREE_ONLY,
                tree=t,
                frame=None,
                gap_ms=None,
                refresh=frozenset(),
                epoch=self.epoch,
            )
        if t is None:
            self._frame = None
            return Pairing(
                verdict=PairVerdict.FRAME_ONLY,
                tree=None,
                frame=f,
                gap_ms=None,
                refresh=frozenset(),
                epoch=self.epoch,
            )
        gap_ms: float | None = None
        if t.time is not None and f.time is not None:
            gap_ms = t.time.gap_ms(f.time)
            if gap_ms > self.window_ms:
                if t.time.end_ns < f.time.end_ns:
                    self._tree = None
                    verdict, stale = PairVerdict.TREE_STALE, Channel.TREE
                else:
                    self._frame = None
                    verdict, stale = PairVerdict.FRAME_STALE, Channel.PIXEL
                log.info(
                    "%s: captures %.0f ms apart (window %.0f ms)", verdict, gap_ms, self.window_ms
                )
                return Pairing(
                    verdict=verdict,
                    tree=None,
                    frame=None,
                    gap_ms=gap_ms,
                    refresh=frozenset({stale}),
                    epoch=self.epoch,
                )
        self._tree = None
        self._frame = None
        return Pairing(
            verdict=PairVerdict.PAIRED,
            tree=t,
            frame=f,
            gap_ms=gap_ms,
            refresh=frozenset(),
            epoch=self.epoch,
        )
