"""The virtual phone against a hostile recording and shell options it does not emulate (fuzz
audit, session 21, findings 2 and 3), through the real adb server.

A recorded frame whose PNG or JPEG header declares a size no screen has (a 390 KB PNG of
20000 x 20000 px) is refused from its header, with the pixel channel's own rule, before
anything decodes it: ``screencap`` fails as a phone's capture fails (``Screen capture
failed``, exit 1), ``wm size`` on a step that does not say its screen fails as it does for a
frame that is no image. ``head`` and ``grep`` options the phone does not emulate are refused
(exit 2, a line on stderr), not answered as something else with exit 0."""

from __future__ import annotations

import json
import logging
import struct
import subprocess
import zlib
from pathlib import Path

import cv2
import numpy as np
import pytest
from _adb import ADB, AdbServer, requires_adb, serving, shell

from perception.demo import demo_xml
from perception.simdevice.phone import CAPTURE_FAILED

pytestmark = requires_adb


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS in /proc/self/status")


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def _grey_png(width: int, height: int) -> bytes:
    """A whole, valid black PNG of ``width`` x ``height`` px, compressed row by row (a few KB
    however large it says it is: what a decompression bomb is)."""
    pack = zlib.compressobj(9)
    row = b"\0" * (width + 1)  # filter byte, then the row
    data = b"".join(pack.compress(row) for _ in range(height)) + pack.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", data)
            + _chunk(b"IEND", b""))


def _jpeg_saying(width: int, height: int) -> bytes:
    """A small JPEG whose start-of-frame says ``width`` x ``height`` px (libjpeg decodes it at
    that size, filling what its data does not cover)."""
    ok, buf = cv2.imencode(".jpg", np.zeros((64, 64, 3), np.uint8))
    assert ok
    data = bytearray(buf.tobytes())
    i = 2
    while data[i + 1] not in (0xC0, 0xC1, 0xC2):
        i += 2 + struct.unpack_from(">H", data, i + 2)[0]
    struct.pack_into(">HH", data, i + 5, height, width)
    return bytes(data)


def _recording(root: Path, frame_name: str, frame: bytes) -> Path:
    """A one-step recording whose step does not say its screen (so ``wm size`` reads the
    frame) and whose frame is ``frame``."""
    (root / "step_000").mkdir(parents=True)
    (root / "step_000" / "screen.xml").write_bytes(demo_xml())
    (root / "step_000" / frame_name).write_bytes(frame)
    step = {"step": 0, "tree": "step_000/screen.xml", "frame": f"step_000/{frame_name}",
            "tree_start_ns": 0, "tree_end_ns": 1}
    (root / "steps.jsonl").write_text(json.dumps(step) + "\n", encoding="utf-8")
    return root


def _exec_out(adb_server: AdbServer, serial: str, line: str) -> bytes:
    done = subprocess.run(
        [ADB or "adb", "-P", str(adb_server.port), "-s", serial, "exec-out", line],
        env=adb_server.env, capture_output=True, timeout=60,
    )
    return done.stdout


@pytest.mark.parametrize(
    ("name", "frame", "size"),
    [
        ("screen.png", _grey_png(8200, 2100), "8200x2100"),
        ("screen.jpg", _jpeg_saying(12000, 9000), "12000x9000"),
    ],
    ids=["png", "jpeg"],
)
def test_a_frame_too_large_for_any_screen_is_refused_from_its_header(
    adb_server: AdbServer, tmp_path: Path, caplog: pytest.LogCaptureFixture,
    name: str, frame: bytes, size: str,
) -> None:
    root = _recording(tmp_path / "bomb", name, frame)
    with serving(adb_server, root) as sim, caplog.at_level(logging.ERROR):
        before = _rss_kib()
        assert _exec_out(adb_server, sim.serial, "screencap -p") == CAPTURE_FAILED
        assert _exec_out(adb_server, sim.serial, "screencap") == CAPTURE_FAILED
        wm = shell(adb_server, sim.serial, "wm size")
        assert _rss_kib() - before < 40_000  # never decoded: 52 MB and more were
    assert (wm.returncode, wm.stdout) == (1, "")
    assert "is not a screenshot" in wm.stderr and size in wm.stderr
    assert str(root / "step_000" / name) in caplog.text and size in caplog.text


def test_a_truncated_frame_answers_the_same(adb_server: AdbServer, tmp_path: Path) -> None:
    """What the phone did already for a broken capture, that the refusal above matches."""
    whole = _grey_png(360, 640)
    root = _recording(tmp_path / "cut", "screen.png", whole[: len(whole) // 2])
    with serving(adb_server, root) as sim:
        assert _exec_out(adb_server, sim.serial, "screencap -p") == CAPTURE_FAILED
        wm = shell(adb_server, sim.serial, "wm size")
    assert (wm.returncode, wm.stdout) == (1, "") and "is not an image" in wm.stderr


def test_a_plausible_frame_is_still_served(adb_server: AdbServer, tmp_path: Path) -> None:
    frame = _grey_png(360, 640)
    root = _recording(tmp_path / "fine", "screen.png", frame)
    with serving(adb_server, root) as sim:
        assert _exec_out(adb_server, sim.serial, "screencap -p") == frame
        wm = shell(adb_server, sim.serial, "wm size")
    assert (wm.returncode, wm.stdout) == (0, "Physical size: 360x640\n")


# ----- head and grep: what is not emulated is refused -------------------------------------

REFUSED = [
    "echo hello | head -c 2",
    "echo hello | head -q",
    "echo hello | head -n 1 /sdcard/x",
    "echo hello | head -n abc",
    "echo hello | head -nx",
    "echo a | grep -c a",
    "echo a | grep -v a",
    "echo a | grep -i A",
    "echo a | grep a /sdcard/x",
    "echo a | grep",
]


def test_unemulated_head_and_grep_options_are_refused(adb_server: AdbServer) -> None:
    with serving(adb_server) as sim:
        answers = {line: shell(adb_server, sim.serial, line) for line in REFUSED}
        lines = "echo a > /sdcard/l; echo b >> /sdcard/l; echo ab >> /sdcard/l"
        assert shell(adb_server, sim.serial, lines).returncode == 0
        served = {
            line: shell(adb_server, sim.serial, f"cat /sdcard/l | {line}")
            for line in ("head -n 1", "head -n2", "head -2", "head", "grep b", "grep -F b")
        }
    for line, done in answers.items():
        assert (done.returncode, done.stdout) == (2, ""), line
        assert "is not emulated by the virtual phone" in done.stderr, line
    assert {line: (d.returncode, d.stdout) for line, d in served.items()} == {
        "head -n 1": (0, "a\n"), "head -n2": (0, "a\nb\n"), "head -2": (0, "a\nb\n"),
        "head": (0, "a\nb\nab\n"), "grep b": (0, "b\nab\n"), "grep -F b": (0, "b\nab\n"),
    }
