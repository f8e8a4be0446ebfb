"""A background capture loop that keeps only the newest frame (any :class:`FrameSource`).

``FrameLoop(source, interval_ms=200)`` captures at most every ``interval_ms`` on its own thread;
:meth:`FrameLoop.latest` returns the newest frame without waiting, :meth:`FrameLoop.wait_newer`
blocks (bounded) for a frame whose capture started after a given moment, e.g. after an
action. Older frames are dropped (counted in :attr:`FrameLoop.dropped`); a failing capture is
kept as :attr:`FrameLoop.error` and raised by ``wait_newer`` as soon as an attempt made during
the wait fails.
"""

from __future__ import annotations

import logging
import threading
import time

from perception.errors import DeviceTimeoutError, PerceptionError
from perception.sources.base import FrameCapture, FrameSource

log = logging.getLogger(__name__)


class FrameLoop:
    def __init__(
        self, source: FrameSource, *, interval_ms: int = 200, error_backoff_ms: int = 500
    ) -> None:
        if interval_ms < 0 or error_backoff_ms < 0:
            raise ValueError("intervals must be >= 0")
        self._source = source
        self._interval_s = interval_ms / 1000
        self._backoff_s = error_backoff_ms / 1000
        self._cond = threading.Condition()
        self._frame: FrameCapture | None = None
        self._taken = True
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.captured = 0
        self.dropped = 0
        self.error: PerceptionError | None = None
        self._error_ns = 0

    def start(self) -> FrameLoop:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="perception-frameloop", daemon=True
            )
            self._thread.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def __enter__(self) -> FrameLoop:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._stop.is_set():
            t0 = time.monotonic()
            try:
                frame = self._source.capture_frame()
            except PerceptionError as exc:
                with self._cond:
                    self.error = exc
                    self._error_ns = time.monotonic_ns()
                    self._cond.notify_all()
                log.info("frame capture failed: %s", exc)
                self._stop.wait(self._backoff_s)
                continue
            with self._cond:
                if not self._taken:
                    self.dropped += 1
                self._frame = frame
                self._taken = False
                self.captured += 1
                self.error = None
                self._cond.notify_all()
            self._stop.wait(max(0.0, self._interval_s - (time.monotonic() - t0)))

    def latest(self) -> FrameCapture | None:
        with self._cond:
            self._taken = True
            return self._frame

    def wait_newer(self, after_ns: int, timeout_s: float) -> FrameCapture:
        """The newest frame whose capture started at or after ``after_ns`` (bounded wait)."""
        deadline = time.monotonic() + timeout_s
        asked_ns = time.monotonic_ns()
        with self._cond:
            while True:
                frame = self._frame
                if frame is not None and frame.start_ns >= after_ns:
                    self._taken = True
                    return frame
                if self.error is not None and self._error_ns >= asked_ns:
                    raise self.error  # the newest attempt failed: say so now
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._stop.is_set():
                    if self.error is not None:
                        raise self.error
                    raise DeviceTimeoutError(f"no new frame within {timeout_s:.1f} s")
                self._cond.wait(min(remaining, 0.25))
