"""Write a session as a recording folder (format documented in :mod:`.recording`)."""

from __future__ import annotations

import datetime as _dt
import json
import logging
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
    """Append steps to a recording folder; the action of a step is known only afterwards.

    ``add_step`` buffers the step's line until the next step (or :meth:`close`), so
    :meth:`set_action` can attach the action taken from it.
    """

    def __init__(
        self,
        out_dir: str | Path,
        *,
        facts: ScreenFacts,
        serial: str = "",
        extra_meta: dict[str, Any] | None = None,
    ) -> None:
        self._root = Path(out_dir)
        if (self._root / "steps.jsonl").exists():
            raise RecordingError(f"{self._root}: already holds a recording")
        self._root.mkdir(parents=True, exist_ok=True)
        self._t0_ns: int | None = None
        self._pending: dict[str, Any] | None = None
        self._count = 0
        self._steps_file = (self._root / "steps.jsonl").open("a", encoding="utf-8")
        meta: dict[str, Any] = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "serial": serial,
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
        if extra_meta:
            meta.update(extra_meta)
        (self._root / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")

    @property
    def root(self) -> Path:
        return self._root

    @property
    def step_count(self) -> int:
        return self._count

    def add_step(
        self, tree: TreeCapture, frame: FrameCapture | None, facts: ScreenFacts | None = None
    ) -> int:
        """Store one screen; returns its step number."""
        self._flush()
        if self._t0_ns is None:
            self._t0_ns = min(tree.start_ns, frame.start_ns if frame else tree.start_ns)
        t0 = self._t0_ns
        step = self._count
        rel_dir = f"step_{step:03d}"
        step_dir = self._root / rel_dir
        step_dir.mkdir(exist_ok=True)
        (step_dir / "screen.xml").write_bytes(tree.xml)
        line: dict[str, Any] = {
            "step": step,
            "tree": f"{rel_dir}/screen.xml",
            "tree_start_ns": tree.start_ns - t0,
            "tree_end_ns": tree.end_ns - t0,
            "epoch": tree.epoch,
        }
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
        self._pending = line
        self._count += 1
        return step

    def set_action(self, action: RecordedAction) -> None:
        """Attach the action taken from the last added step."""
        if self._pending is None:
            raise RecordingError("set_action before any step")
        self._pending["action"] = action.to_json()

    def _flush(self) -> None:
        if self._pending is not None:
            self._steps_file.write(json.dumps(self._pending, ensure_ascii=False) + "\n")
            self._steps_file.flush()
            self._pending = None

    def close(self) -> None:
        self._flush()
        self._steps_file.close()

    def __enter__(self) -> RecordingWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
