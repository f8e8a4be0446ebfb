"""Recordings of a phone that starts an app (the launcher's home screen, then the app), for
the tests of listing and opening apps."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
from _xml import dump, node

NOTES = "com.example.notes"
NOTES_MAIN = f"{NOTES}/{NOTES}.MainActivity"
"""As DroidBot records it (the class in full)."""
NOTES_SHOWN = f"{NOTES}/.MainActivity"
"""As a phone prints it (``ComponentName.flattenToShortString``)."""
LAUNCHER = "com.android.launcher3"
START_FLAGS = "-a android.intent.action.MAIN -c android.intent.category.LAUNCHER -f 0x10200000"


def png() -> bytes:
    ok, buf = cv2.imencode(".png", np.full((640, 360, 3), 250, np.uint8))
    assert ok
    return buf.tobytes()


def write_recording(root: Path, screens: list[tuple[str, bytes]], actions: list[object]) -> Path:
    root.mkdir()
    lines = []
    for step, ((package, xml), action) in enumerate(zip(screens, actions, strict=True)):
        folder = root / f"step_{step:03d}"
        folder.mkdir()
        (folder / "screen.xml").write_bytes(xml)
        (folder / "screen.png").write_bytes(png())
        lines.append({
            "step": step, "tree": f"step_{step:03d}/screen.xml",
            "frame": f"step_{step:03d}/screen.png", "tree_start_ns": step * 400_000_000,
            "tree_end_ns": step * 400_000_000 + 1, "package": package, "screen": [360, 640],
            "action": action,
        })
    (root / "steps.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (root / "meta.json").write_text(json.dumps({
        "format": "perception-recording", "version": 1, "serial": root.name,
        "screen": {"width_px": 360, "height_px": 640, "density_dpi": 160, "rotation": 0},
    }))
    return root


def home() -> tuple[str, bytes]:
    return LAUNCHER, dump(node(
        (0, 0, 360, 640),
        node((20, 500, 100, 580), cls="android.widget.TextView", text="Clock", clickable=True,
             package=LAUNCHER),
        package=LAUNCHER,
    ))


def notes_screen() -> tuple[str, bytes]:
    return NOTES, dump(node(
        (0, 0, 360, 640),
        node((20, 100, 340, 180), cls="android.widget.Button", text="New note", clickable=True,
             package=NOTES),
        package=NOTES,
    ))


def notes_recording(root: Path) -> Path:
    """Step 0: a home screen whose recorded action starts Notes (DroidBot's form); step 1:
    Notes."""
    start = {"kind": "intent", "intent": f"am start {NOTES_MAIN}"}
    return write_recording(root, [home(), notes_screen()], [start, None])
