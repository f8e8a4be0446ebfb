"""How perception's commands stop on a signal: one rule for ``perception``, ``perception-bench``,
``perception-agent`` and ``perception-simdevice``.

SIGTERM and SIGHUP are raised like Ctrl-C (:class:`Interrupted`, a KeyboardInterrupt), so that a
killed command cleans up as an interrupted one does; it then prints one line and exits with
128 + the signal (:func:`interrupted`: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP). The
standard library only: every layer that has a command line may import it.
"""

from __future__ import annotations

import re
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""The signals :func:`stop_signals` raises :class:`Interrupted` for (Ctrl-C raises its own)."""


def one_line(message: str) -> str:
    """A message on one line: what a phone or a tool printed over several lines is joined."""
    return re.sub(r"\s*\n\s*", " ", message.strip())


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Ctrl-C raises KeyboardInterrupt."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def interrupted(exc: KeyboardInterrupt) -> tuple[str, int]:
    """What to print and the exit code (128 + the signal: 130 for Ctrl-C). What the command
    kept (``exc.add_note``: a partial recording and where) is said on the same line."""
    signum = exc.signum if isinstance(exc, Interrupted) else int(signal.SIGINT)
    what = "interrupted" if signum == signal.SIGINT else f"stopped by {signal.Signals(signum).name}"
    notes = [one_line(note) for note in getattr(exc, "__notes__", ())]
    if notes:
        what += f" ({'; '.join(notes)})"
    return what, 128 + signum


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signum)


@contextmanager
def stop_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP raise :class:`Interrupted` while the block runs (main thread only);
    their handlers are as they were after it, whatever the block set them to."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[signal.Signals, Callable[..., object] | int | None] = {}
    for sig in STOP_SIGNALS:
        previous[sig] = signal.signal(sig, _raise)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
