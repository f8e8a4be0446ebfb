"""Write a session as a recording folder (format documented in :mod:`.recording`)."""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import shutil
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
from perception.sources.recording import FORMAT_NAME, FORMAT_VERSION, RecordedAction

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


class RecordingWriter:
    """Write a session into a new or empty folder, one step at a time.

    The folder is checked (and made) when the writer is created, so that a bad path fails
    before a phone is touched; ``meta.json`` comes with the first step. ``steps.jsonl`` is
    replaced whole (written beside it, then renamed) after every step and every
    :meth:`set_action`, so at any moment it holds every step stored so far and no half line:
    a recording killed at any point reads back. A writer closed without a step removes what it
    made, so a failed run leaves no folder that a rerun would refuse.
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
        self._lines: list[dict[str, Any]] = []
        self._closed = False

    @property
    def root(self) -> Path:
        return self._root

    @property
    def step_count(self) -> int:
        return len(self._lines)

    def add_step(
        self, tree: TreeCapture, frame: FrameCapture | None, facts: ScreenFacts | None = None
    ) -> int:
        """Store one screen (on disk when this returns); returns its step number."""
        if self._closed:
            raise RecordingError(f"{self._root}: the recording is closed")
        if not self._lines:
            self._write_meta(facts or self._facts)
        if self._t0_ns is None:
            self._t0_ns = min(tree.start_ns, frame.start_ns if frame else tree.start_ns)
        t0 = self._t0_ns
        step = len(self._lines)
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
            self._lines.append(line)
            self._write_steps()
        except BaseException:
            if self._lines and self._lines[-1] is line:
                self._lines.pop()
            shutil.rmtree(step_dir, ignore_errors=True)  # a step is stored whole or not at all
            raise
        return step

    def set_action(self, action: RecordedAction) -> None:
        """Attach the action taken from the last added step (stored at once)."""
        if not self._lines:
            raise RecordingError("set_action before any step")
        self._lines[-1]["action"] = action.to_json()
        self._write_steps()

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

    def _write_steps(self) -> None:
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in self._lines)
        _replace(self._root / "steps.jsonl", text)

    def close(self) -> None:
        """Finish the recording; without a step, remove what the writer made."""
        if self._closed:
            return
        self._closed = True
        if self._lines:
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
