"""``perception-bench device``: capture latencies, observation rate and memory on one phone.

``--serial SERIAL`` measures a phone already known to the adb server (``--adb-port``);
``--sim RECORDING`` starts the virtual phone on a recording, a private adb server on a free port
(HOME in a temporary folder) and connects them, so the numbers need no hardware. One run gives:

- ``uiautomator dump`` (fresh file, cat, rm, then where the keyboard is), the keyboard's query
  alone, raw ``screencap`` over exec-out and
  ``screencap -p`` latencies (p50/p95 ms, bytes) and the PNG/raw ratio of medians;
- ``wm``/``dumpsys`` screen facts latency;
- the Engine for ``--duration-s``: observations per second, frames captured/dropped, fusion
  time per observation (p50/p95), and resident memory sampled every 50 observations (start,
  end, max, slope per 1000 observations after the first quarter);
- with ``--sim``, before the phone starts: what reading a recorded dump costs with the check
  the virtual phone and a replay make at each read (the file opened lies in the recording's
  folder) and without it, against parsing that dump, as ``check_over_parse`` (the check's
  microseconds over the parse's, p50 over the recording's steps).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import BenchInputError
from bench.stats import at_least_one, p50_p95
from perception import IMPLEMENTATION
from perception.cli.options import port, seconds, whole
from perception.config import DeviceConfig, EngineConfig
from perception.errors import DeviceError


def add_parser(sub: Any) -> None:
    p = sub.add_parser("device", help="capture latency, observation rate and memory on a phone")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--serial", help="a phone known to the adb server")
    target.add_argument("--sim", type=Path, help="serve this recording as a virtual phone")
    p.add_argument("--adb-port", type=port, default=None,
                   help="adb server port (default: $ANDROID_ADB_SERVER_PORT, else 5037)")
    p.add_argument("--samples", type=at_least_one, default=15, help="captures per latency figure")
    p.add_argument("--duration-s", type=seconds, default=20.0, help="engine run length")
    p.add_argument("--tree-interval-ms", type=whole, default=None,
                   help="engine tree throttle (default: EngineConfig, 500)")
    p.add_argument("--frame-interval-ms", type=whole, default=None,
                   help="engine frame interval (default: EngineConfig, 200)")
    p.add_argument("--json", type=Path, default=None, help="write the report here")
    p.set_defaults(run=run)


def _rss_kb() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _virtual_phone(recording: Path) -> Iterator[tuple[str, int]]:
    """The virtual phone on ``recording`` and a private adb server connected to it. The
    recording is read before anything starts (a bad one leaves no process and no folder
    behind); once the server is started, everything runs under the ``finally`` that kills it."""
    from perception.simdevice import SimDevice

    adb = shutil.which("adb")
    if adb is None:
        raise BenchInputError(
            "perception-bench device --sim needs the 'adb' binary (apt install adb)"
        )
    sim = SimDevice(recording)  # RecordingError for a recording it cannot serve
    port = _free_port()
    home = tempfile.mkdtemp(prefix="perception-bench-adb-")
    env = dict(os.environ, HOME=home)

    def adb_run(*args: str) -> None:
        done = subprocess.run([adb, "-P", str(port), *args], env=env, capture_output=True,
                              text=True, timeout=30, check=False)
        if done.returncode:
            said = " ".join((done.stdout + done.stderr).split())
            raise DeviceError(f"adb -P {port} {' '.join(args)} failed (exit "
                              f"{done.returncode}): {said or 'no output'}")

    try:
        adb_run("start-server")
        sim.start()
        adb_run("connect", sim.serial)
        yield sim.serial, port
    finally:
        subprocess.run([adb, "-P", str(port), "kill-server"], env=env, capture_output=True,
                       timeout=30)
        sim.stop()
        shutil.rmtree(home, ignore_errors=True)


READS_PER_SAMPLE = 200
"""Reads of one recorded dump timed together (one read takes microseconds)."""
PARSES_PER_SAMPLE = 10


def recording_reads(recording: Path, max_steps: int = 20) -> dict[str, Any]:
    """Per-read cost of a recorded dump with the folder check (``RecordedStep.read_tree`` of a
    recording) and without it (the same step, ``root`` None), and a parse of that dump, over
    the first ``max_steps`` steps with a dump; each figure the best of three samples.
    :class:`~perception.errors.RecordingError` for a recording that cannot be read."""
    from dataclasses import replace
    from functools import partial

    from perception.sources import read_recording
    from perception.tree import read_tree

    def per_call_us(fn: Callable[[], Any], n: int) -> float:
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter_ns()
            for _ in range(n):
                fn()
            best = min(best, (time.perf_counter_ns() - t0) / n / 1e3)
        return best

    checked_us: list[float] = []
    unchecked_us: list[float] = []
    check_us: list[float] = []
    parse_us: list[float] = []
    for step in read_recording(recording).steps[:max_steps]:
        unchecked = replace(step, root=None)
        checked_us.append(per_call_us(step.read_tree, READS_PER_SAMPLE))
        unchecked_us.append(per_call_us(unchecked.read_tree, READS_PER_SAMPLE))
        check_us.append(checked_us[-1] - unchecked_us[-1])
        xml = step.read_tree()
        parse_us.append(per_call_us(partial(read_tree, xml), PARSES_PER_SAMPLE))
    parse_p50 = p50_p95(parse_us)["p50"] if parse_us else 0.0
    return {
        "steps": len(parse_us),
        "read_us": p50_p95(unchecked_us),
        "checked_read_us": p50_p95(checked_us),
        "check_us": p50_p95(check_us),
        "parse_us": p50_p95(parse_us),
        "check_over_parse": round(p50_p95(check_us)["p50"] / parse_p50, 4) if parse_p50 else None,
    }


def _timed(fn: Callable[[], Any], n: int) -> tuple[list[float], Any]:
    samples: list[float] = []
    last: Any = None
    for _ in range(n):
        t0 = time.perf_counter_ns()
        last = fn()
        samples.append((time.perf_counter_ns() - t0) / 1e6)
    return samples, last


def measure(
    serial: str, adb_port: int | None, samples: int, duration_s: float, engine_cfg: EngineConfig
) -> dict[str, Any]:
    from perception.engine import Engine
    from perception.pipeline import Perceiver
    from perception.sources.device import DeviceSource

    cfg = DeviceConfig.from_env()  # PERCEPTION_DEVICE_*, adb's ANDROID_ADB_SERVER_PORT
    if adb_port is not None:
        cfg = cfg.with_(adb_port=adb_port)
    report: dict[str, Any] = {"serial": serial, "implementation": IMPLEMENTATION}
    with DeviceSource(serial, config=cfg) as source:
        source.wait_ready()
        facts_ms, facts = _timed(lambda: source.screen_facts(refresh=True), max(3, samples // 3))
        report["screen"] = {
            "size": [facts.size.width_px, facts.size.height_px],
            "density_dpi": facts.density_dpi,
            "rotation": facts.rotation,
            "package": facts.package,
        }
        dump_ms, tree = _timed(source.capture_tree, samples)  # with the keyboard's query
        keyboard_ms, _ = _timed(source.keyboard, samples)
        raw_ms, raw = _timed(source.capture_frame, samples)
        png_ms, png = _timed(source.capture_png, max(3, samples // 2))
        report["latency_ms"] = {
            "dump": p50_p95(dump_ms),
            "keyboard_query": p50_p95(keyboard_ms),
            "screencap_raw": p50_p95(raw_ms),
            "screencap_png": p50_p95(png_ms),
            "screen_facts": p50_p95(facts_ms),
        }
        report["bytes"] = {"dump": len(tree.xml), "raw": raw.nbytes, "png": png.nbytes}
        raw_p50 = report["latency_ms"]["screencap_raw"]["p50"]
        report["png_over_raw_p50"] = round(
            report["latency_ms"]["screencap_png"]["p50"] / raw_p50, 2
        ) if raw_p50 else None

        memory: list[tuple[float, int]] = []  # (observations so far, RSS kB)
        fuse_ms: list[float] = []
        engine = Engine(source, perceiver=Perceiver(), config=engine_cfg)
        count = 0
        try:
            engine.observe()  # warm-up (OCR/model loading is not part of the rate)
            memory.append((0, _rss_kb()))
            t_start = time.monotonic()
            while time.monotonic() - t_start < duration_s:
                obs = engine.observe()
                count += 1
                total = obs.timings_ms.get("total")
                if total is not None:
                    fuse_ms.append(float(total))
                if count % 50 == 0:
                    memory.append((count, _rss_kb()))
            elapsed = time.monotonic() - t_start
            memory.append((count, _rss_kb()))
            stats = engine.stats()
        finally:
            engine.close()
    report["engine"] = {
        "tree_interval_ms": engine_cfg.tree_interval_ms,
        "frame_interval_ms": engine_cfg.frame_interval_ms,
        "duration_s": round(elapsed, 2),
        "observations": count,
        "observations_per_s": round(count / elapsed, 2) if elapsed else 0.0,
        "fusion_ms": p50_p95(fuse_ms),
        "trees_captured": stats.trees_captured,
        "frames_captured": stats.frames_captured,
        "frames_dropped": stats.frames_dropped,
        "errors": {"tree": stats.tree_errors, "frame": stats.frame_errors,
                   "fuse": stats.fuse_errors, "unaligned": stats.unaligned},
    }
    report["memory_kb"] = _memory_summary(memory)
    return report


def _memory_summary(points: list[tuple[float, int]]) -> dict[str, Any]:
    """RSS start/end/max and the least-squares slope per 1000 observations after the first
    quarter of the run (allocator warm-up)."""
    if not points:
        return {}
    rss = [kb for _, kb in points]
    tail = points[len(points) // 4 :]
    slope: float | None = None
    if len(tail) >= 8:  # fewer points say nothing about a trend
        n = len(tail)
        mean_t = sum(t for t, _ in tail) / n
        mean_m = sum(m for _, m in tail) / n
        var = sum((t - mean_t) ** 2 for t, _ in tail)
        if var > 0:
            slope = sum((t - mean_t) * (m - mean_m) for t, m in tail) / var * 1000
    return {"start": rss[0], "end": rss[-1], "max": max(rss), "samples": len(rss),
            "slope_kb_per_1000_obs_after_warmup": None if slope is None else round(slope, 1)}


def run(args: argparse.Namespace) -> int:
    engine_cfg = EngineConfig.from_env()
    if args.tree_interval_ms is not None:
        engine_cfg = engine_cfg.with_(tree_interval_ms=args.tree_interval_ms)
    if args.frame_interval_ms is not None:
        engine_cfg = engine_cfg.with_(frame_interval_ms=args.frame_interval_ms)
    if args.sim is not None:
        reads = recording_reads(args.sim)  # in this process, before anything starts
        with _virtual_phone(args.sim) as (serial, port):
            report = measure(serial, port, args.samples, args.duration_s, engine_cfg)
        report["virtual_phone"] = str(args.sim)
        report["recording_reads"] = reads
    else:
        report = measure(args.serial, args.adb_port, args.samples, args.duration_s, engine_cfg)
    text = json.dumps(report, indent=1)
    if args.json is not None:
        args.json.write_text(text + "\n", encoding="utf-8")
    print(text)
    lat = report["latency_ms"]
    eng = report["engine"]
    print(
        f"dump p50 {lat['dump']['p50']:.0f} ms (of which the keyboard's query "
        f"{lat['keyboard_query']['p50']:.0f}) | raw screencap p50 "
        f"{lat['screencap_raw']['p50']:.0f} ms | PNG screencap p50 "
        f"{lat['screencap_png']['p50']:.0f} ms (x{report['png_over_raw_p50']}) | "
        f"{eng['observations_per_s']} obs/s | RSS slope "
        f"{report['memory_kb'].get('slope_kb_per_1000_obs_after_warmup')} kB/1000 obs",
        file=sys.stderr,
    )
    read = report.get("recording_reads")
    if read is not None and read["steps"]:
        print(
            f"a recorded dump read p50 {read['read_us']['p50']:.1f} us, with the folder check "
            f"{read['checked_read_us']['p50']:.1f} us; a parse of it "
            f"{read['parse_us']['p50']:.0f} us (check / parse {read['check_over_parse']})",
            file=sys.stderr,
        )
    return 0
