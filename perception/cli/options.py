"""Option types and the exit conventions shared by ``perception`` and ``perception-agent``.

A number that cannot be right is refused while parsing (usage error, exit 2) instead of being
replaced by a default (``--adb-port 0`` reached the default server), crashing later
(``--adb-port 70000``: OverflowError) or running forever (``--timeout-s nan``). How a command
stops on a signal (SIGTERM and SIGHUP raised like Ctrl-C, one line, 128 + the signal) is
:mod:`perception.signals`, which ``perception-simdevice`` and ``perception-agent`` share.
"""

from __future__ import annotations

import argparse
import errno
import math
import os
from pathlib import Path

from perception.types import BoxPx, ScreenSize


def port(text: str) -> int:
    """A TCP port of a server to reach: 1 to 65535."""
    if not (text.isascii() and text.isdigit() and 1 <= int(text) <= 65535):
        raise argparse.ArgumentTypeError(f"expects a port number 1 to 65535, got {text!r}")
    return int(text)


def whole(text: str) -> int:
    """A whole number, 0 or more."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"expects a whole number >= 0, got {text!r}")
    return int(text)


def box(text: str) -> BoxPx:
    """A box in device pixels, ``LEFT,TOP,RIGHT,BOTTOM`` (whole numbers, right of left and
    below top): the on-screen keyboard's, as ``dumpsys window displays`` gives it."""
    parts = text.replace(" ", "").split(",")
    if len(parts) == 4 and all(p.isascii() and p.lstrip("-").isdigit() for p in parts):
        left, top, right, bottom = (int(p) for p in parts)
        if right > left and bottom > top:
            return BoxPx(left, top, right, bottom)
    raise argparse.ArgumentTypeError(
        f"expects LEFT,TOP,RIGHT,BOTTOM in pixels (e.g. 0,1500,1080,2400), got {text!r}"
    )


def screen_size(text: str) -> ScreenSize:
    """A screen size in device pixels, ``WIDTHxHEIGHT`` (whole numbers, each 1 to the largest
    side a dump may give), checked while parsing as ``--keyboard`` is."""
    from perception.tree.clean import MAX_SCREEN_SIDE_PX

    parts = text.strip().lower().split("x")
    if len(parts) == 2 and all(p.isascii() and p.isdigit() for p in parts):
        width, height = (int(p) for p in parts)
        if 0 < width <= MAX_SCREEN_SIDE_PX and 0 < height <= MAX_SCREEN_SIDE_PX:
            return ScreenSize(width, height)
    raise argparse.ArgumentTypeError(
        f"expects WIDTHxHEIGHT in pixels, each 1 to {MAX_SCREEN_SIDE_PX} (e.g. 1080x2400), "
        f"got {text!r}"
    )


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    return value


def seconds(text: str) -> float:
    """A duration in seconds, finite and > 0."""
    value = _number(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expects a number of seconds > 0, got {text!r}")
    return value


def seconds_or_zero(text: str) -> float:
    """A duration in seconds, finite and >= 0 (0: no limit)."""
    value = _number(text)
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expects a number of seconds >= 0, got {text!r}")
    return value


def plural(count: int, word: str) -> str:
    """``1 step``, ``2 steps``."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def same_file(a: Path, b: Path) -> bool:
    """Do ``a`` and ``b`` name one file (a symlink to it too)? One that does not exist (yet),
    or cannot be looked at, is not the same file: an output path checked against the inputs
    before it is written."""
    try:
        return a.samefile(b)
    except OSError:
        return False


def writes_directly(path: Path) -> bool:
    """Is ``path`` written in place (appended to), not beside it and renamed over it? A path
    that exists and is not a regular file (a device, a FIFO, a terminal), and one that leads
    through ``/proc`` (``/dev/stdout``, ``/dev/fd/1``: standard output, a file opened with
    ``>>`` too): renaming would replace the node (``/dev/null`` became a file of JSON lines)
    or another file than the one meant, and truncating would cut a log that ``>>`` appends
    to. A regular file elsewhere under ``/dev`` (``/dev/shm``) is an ordinary file."""
    if path.exists() and not path.is_file():
        return True
    hop = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit of links followed
        hop = os.path.join(os.path.realpath(os.path.dirname(hop)), os.path.basename(hop))
        if hop.startswith("/proc/"):
            return True
        if not os.path.islink(hop):
            return False
        hop = os.path.join(os.path.dirname(hop), os.readlink(hop))
    return False


def replaced_file(path: Path) -> Path:
    """The file a whole-file write of ``path`` replaces: ``path``, or where the symlink
    ``path`` leads. A symlink is written through, as the shell's ``>`` writes, and kept:
    renaming over the link turned it into a file of its own and left the file it named (a
    ``latest.jsonl`` link to the day's run) as it was. Refusing it would only make the user
    name the same file by its other name."""
    if not path.is_symlink():
        return path
    try:
        return path.resolve()
    except RuntimeError as exc:  # a symlink loop (Python 3.11): what opening it would say
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path)) from exc


def write_whole(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all: beside it, then renamed over it (a failed or killed
    write leaves no half file, and an existing file as it was). What :func:`writes_directly`
    (``/dev/stdout``, a pipe) is written in place: renaming would replace it; a symlink is
    written through (:func:`replaced_file`)."""
    if writes_directly(path):
        with path.open("ab") as f:
            f.write(data)
        return
    path = replaced_file(path)
    part = path.with_name(path.name + ".part")
    try:
        part.write_bytes(data)
        part.replace(path)
    finally:
        part.unlink(missing_ok=True)
