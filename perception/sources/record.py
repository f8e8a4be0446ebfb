"""Write a session as a recording folder (format documented in :mod:`.recording`)."""

from __future__ import annotations

import datetime as _dt
import errno
import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from perception.errors import FrameError, RecordingError
from perception.sources.base import (
    FrameCapture,
    FrameFormat,
    ScreenFacts,
    TreeCapture,
    decode_raw_screencap,
)
from perception.sources.recording import (
    FORMAT_NAME,
    FORMAT_VERSION,
    MAX_STEP_LINE_BYTES,
    MAX_STEPS,
    MAX_STEPS_FILE_BYTES,
    RecordedAction,
)

log = logging.getLogger(__name__)


def encode_frame_file(frame: FrameCapture) -> tuple[bytes, str]:
    """The bytes to store for a frame and their file suffix (PNG/JPEG kept byte-identical)."""
    if frame.fmt is FrameFormat.PNG and isinstance(frame.data, bytes):
        return frame.data, ".png"
    if frame.fmt is FrameFormat.JPEG and isinstance(frame.data, bytes):
        return frame.data, ".jpg"
    if frame.fmt is FrameFormat.RAW and isinstance(frame.data, bytes):
        pixels = decode_raw_screencap(frame.data)
    elif isinstance(frame.data, np.ndarray):
        pixels = frame.data
    else:
        raise FrameError(f"cannot store a {frame.fmt} frame of type {type(frame.data).__name__}")
    ok, buf = cv2.imencode(".png", pixels)
    if not ok:
        raise FrameError(f"PNG encoding failed for a {pixels.shape} frame")
    return buf.tobytes(), ".png"


@dataclass(frozen=True, slots=True)
class _Stored:
    """What ``steps.jsonl`` holds: ``count`` steps, the last one's line (as a dict, and as the
    bytes written at ``last_at``). One object, replaced in one assignment, so that a Ctrl-C
    landing in :meth:`RecordingWriter.add_step` sees a step either stored or not."""

    count: int = 0
    last: dict[str, Any] | None = None
    last_at: int = 0
    last_bytes: bytes = b""

    @property
    def size(self) -> int:
        return self.last_at + len(self.last_bytes)


class RecordingWriter:
    """Write a session into a new or empty folder, one step at a time.

    The folder is checked (and made) when the writer is created, so that a bad path fails
    before a phone is touched; ``meta.json`` comes with the first step. Each step appends one
    line to ``steps.jsonl`` and :meth:`set_action` rewrites that last line in place (padded
    with spaces when the new one is shorter), each in one write to the open file: a session's
    cost stays the same at every step (rewriting the whole file after each step wrote the
    square of the step count). The first line comes with the file (written beside it, then
    renamed), a write that fails (a full disk) is undone before the error is raised, and a
    Ctrl-C or a handled SIGTERM lands between writes (the system finishes a file write it has
    begun): a recording stopped at any point holds every step stored so far, and no half line.
    Only a kill -9 inside the one write of a line that crosses a page could cut it: the reader
    then leaves that torn last line out, with a warning. As before, nothing is forced to the
    disk (no fsync): a step is stored once the system holds it, which outlives the process, not
    a power cut.

    A recording stops at what :func:`perception.sources.recording.read_recording` reads back:
    :data:`MAX_STEPS` steps, :data:`MAX_STEPS_FILE_BYTES` in ``steps.jsonl`` and
    :data:`MAX_STEP_LINE_BYTES` a line; past them :class:`RecordingError` says to start a new
    one. A writer closed without a step removes what it made, so a failed run leaves no folder
    that a rerun would refuse.
    """

    def __init__(
        self,
        out_dir: str | Path,
        *,
        facts: ScreenFacts | None = None,
        serial: str = "",
        extra_meta: dict[str, Any] | None = None,
    ) -> None:
        self._root = Path(out_dir)
        self._made = _prepare_folder(self._root)
        self._facts = facts
        self._serial = serial
        self._extra_meta = dict(extra_meta or {})
        self._t0_ns: int | None = None
        self._stored = _Stored()
        self._fd: int | None = None
        self._closed = False

    @property
    def root(self) -> Path:
        return self._root

    @property
    def step_count(self) -> int:
        return self._stored.count

    def add_step(
        self, tree: TreeCapture, frame: FrameCapture | None, facts: ScreenFacts | None = None
    ) -> int:
        """Store one screen (on disk when this returns); returns its step number."""
        if self._closed:
            raise RecordingError(f"{self._root}: the recording is closed")
        stored = self._stored
        step = stored.count
        if step >= MAX_STEPS:
            raise RecordingError(
                f"{self._root}: the recording holds {MAX_STEPS} steps, the most one recording "
                "may (a longer one could not be read back): start a new recording in another "
                "folder"
            )
        if not step:
            self._write_meta(facts or self._facts)
        if self._t0_ns is None:
            self._t0_ns = min(tree.start_ns, frame.start_ns if frame else tree.start_ns)
        t0 = self._t0_ns
        rel_dir = f"step_{step:03d}"
        step_dir = self._root / rel_dir
        line: dict[str, Any] = {
            "step": step,
            "tree": f"{rel_dir}/screen.xml",
            "tree_start_ns": tree.start_ns - t0,
            "tree_end_ns": tree.end_ns - t0,
            "epoch": tree.epoch,
        }
        if tree.keyboard_px is not None:  # left out otherwise: older readers see no change
            line["keyboard"] = list(tree.keyboard_px)
        try:
            step_dir.mkdir(exist_ok=True)
            (step_dir / "screen.xml").write_bytes(tree.xml)
            if frame is not None:
                data, suffix = encode_frame_file(frame)
                (step_dir / f"screen{suffix}").write_bytes(data)
                line["frame"] = f"{rel_dir}/screen{suffix}"
                line["frame_start_ns"] = frame.start_ns - t0
                line["frame_end_ns"] = frame.end_ns - t0
            if facts is not None:
                line["package"] = facts.package
                line["activity"] = facts.activity
                line["rotation"] = facts.rotation
                line["screen"] = [facts.size.width_px, facts.size.height_px]
            line["action"] = None
            encoded = _encode(line)
            self._check_room(step, stored.size, encoded, "step")
            self._write_at(stored.size, encoded)
            self._stored = _Stored(step + 1, line, stored.size, encoded)
        except BaseException:
            if self._stored is stored:  # not stored: a step is stored whole or not at all
                self._take_back(stored)
                shutil.rmtree(step_dir, ignore_errors=True)
            raise
        return step

    def set_action(self, action: RecordedAction) -> None:
        """Attach the action taken from the last added step (stored at once)."""
        if self._closed:
            raise RecordingError(f"{self._root}: the recording is closed")
        stored = self._stored
        if stored.last is None:
            raise RecordingError("set_action before any step")
        line = {**stored.last, "action": action.to_json()}
        encoded = _encode(line)
        short = len(stored.last_bytes) - len(encoded)
        if short > 0:  # JSON allows the spaces; no shorter write leaves the old line's tail
            encoded = encoded[:-1] + b" " * short + b"\n"
        self._check_room(stored.count - 1, stored.last_at, encoded, "action")
        try:
            self._write_at(stored.last_at, encoded)
            self._stored = _Stored(stored.count, line, stored.last_at, encoded)
        except BaseException:
            if self._stored is stored:
                self._take_back(stored)
            raise

    def _check_room(self, step: int, at: int, encoded: bytes, what: str) -> None:
        """RecordingError unless ``encoded``, written at ``at``, stays within what the reader
        takes (nothing is written then)."""
        if len(encoded) > MAX_STEP_LINE_BYTES:
            raise RecordingError(
                f"{self._root}: step {step} with this {what} takes {len(encoded)} bytes in "
                f"steps.jsonl, more than the {MAX_STEP_LINE_BYTES} bytes a step's line may hold "
                "(it could not be read back): not recorded; send text this long in smaller "
                "pieces"
            )
        if at + len(encoded) > MAX_STEPS_FILE_BYTES:
            raise RecordingError(
                f"{self._root}: steps.jsonl would grow past {MAX_STEPS_FILE_BYTES} bytes, the "
                f"most one recording may hold (it could not be read back): the {what} of step "
                f"{step} is not recorded; start a new recording in another folder"
            )

    def _write_at(self, at: int, data: bytes) -> None:
        """``data`` written at offset ``at`` of ``steps.jsonl``; the first write makes the file
        (beside it, then renamed: it never exists empty or half written)."""
        path = self._root / "steps.jsonl"
        try:
            if self._fd is not None:
                _write_all(self._fd, data, at)
                return
            part = path.with_name(path.name + ".part")
            fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
            self._fd = fd
            _write_all(fd, data, 0)
            os.replace(part, path)
        except OSError as exc:
            raise RecordingError(f"cannot write {path}: {exc.strerror}") from exc

    def _take_back(self, stored: _Stored) -> None:
        """Undo a write that did not finish: ``steps.jsonl`` as ``stored`` says it is (its
        last line rewritten, the file cut to its size; without a step, no file)."""
        if self._fd is None:
            return
        try:
            if not stored.count:
                os.close(self._fd)
                self._fd = None
                for name in ("steps.jsonl", "steps.jsonl.part"):
                    (self._root / name).unlink(missing_ok=True)
                return
            os.ftruncate(self._fd, stored.size)
            _write_all(self._fd, stored.last_bytes, stored.last_at)
        except OSError as exc:  # the error being raised says more; this one is logged
            log.warning("%s/steps.jsonl: cannot undo a failed write: %s", self._root, exc)

    def _write_meta(self, facts: ScreenFacts | None) -> None:
        if facts is None:
            raise RecordingError("the first step of a recording needs its screen facts")
        meta: dict[str, Any] = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "serial": self._serial,
            "created_utc": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "clock": "ns offsets from the first capture (time.monotonic_ns)",
            "screen": {
                "width_px": facts.size.width_px,
                "height_px": facts.size.height_px,
                "density_dpi": facts.density_dpi,
                "rotation": facts.rotation,
            },
            "insets": {
                "top_px": facts.insets.top_px,
                "bottom_px": facts.insets.bottom_px,
                "left_px": facts.insets.left_px,
                "right_px": facts.insets.right_px,
            },
            "package": facts.package,
        }
        meta.update(self._extra_meta)
        _replace(self._root / "meta.json", json.dumps(meta, indent=1))

    def close(self) -> None:
        """Finish the recording; without a step, remove what the writer made."""
        if self._closed:
            return
        self._closed = True
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._stored.count:
            return
        for name in ("meta.json", "meta.json.part", "steps.jsonl.part"):
            (self._root / name).unlink(missing_ok=True)
        shutil.rmtree(self._root / "step_000", ignore_errors=True)
        for folder in self._made:  # innermost first; a folder someone else filled stays
            try:
                folder.rmdir()
            except OSError:
                break

    def __enter__(self) -> RecordingWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _encode(line: dict[str, Any]) -> bytes:
    """One ``steps.jsonl`` line."""
    return (json.dumps(line, ensure_ascii=False) + "\n").encode("utf-8")


def _write_all(fd: int, data: bytes, at: int) -> None:
    """``data`` written at offset ``at`` (a short write, as a filling disk gives, continued
    until the system says why it stopped)."""
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, at)
        if n <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        at += n
        view = view[n:]


def _prepare_folder(root: Path) -> list[Path]:
    """Check that ``root`` is a new or empty folder and make it; returns the folders made
    (innermost first), which :meth:`RecordingWriter.close` removes when no step came."""
    if root.exists() or root.is_symlink():
        if not root.is_dir():
            raise RecordingError(f"{root}: not a folder")
        if (root / "steps.jsonl").exists():
            raise RecordingError(f"{root}: already holds a recording (not empty)")
        try:
            entries = sorted(p.name for p in root.iterdir())
        except OSError as exc:
            raise RecordingError(f"{root}: cannot read the folder: {exc.strerror}") from exc
        if entries:
            shown = ", ".join(entries[:3]) + (", ..." if len(entries) > 3 else "")
            raise RecordingError(
                f"{root}: not empty ({shown}); a recording goes into a new or empty folder"
            )
        made: list[Path] = []
    else:
        made = [p for p in (root, *root.parents) if not p.exists()]
        try:
            root.mkdir(parents=True)
        except OSError as exc:
            raise RecordingError(f"{root}: cannot make the folder: {exc.strerror}") from exc
    if not os.access(root, os.W_OK | os.X_OK):
        raise RecordingError(f"{root}: the folder is not writable")
    return made


def _replace(path: Path, text: str) -> None:
    """Write ``path`` whole: beside it, then renamed over it."""
    part = path.with_name(path.name + ".part")
    try:
        part.write_text(text, encoding="utf-8")
        os.replace(part, path)
    except OSError as exc:
        part.unlink(missing_ok=True)
        raise RecordingError(f"cannot write {path}: {exc.strerror}") from exc
