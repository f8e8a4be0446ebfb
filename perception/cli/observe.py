"""``perception observe --serial SERIAL [--json]``: one observation from a live phone."""

from __future__ import annotations

import argparse
from typing import Any

from perception.cli.options import port, seconds
from perception.config import DeviceConfig, EngineConfig


def add_device_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--serial", required=True, help="adb serial (e.g. 127.0.0.1:5555)")
    p.add_argument("--adb-host", default=None, help="adb server host (default 127.0.0.1)")
    p.add_argument("--adb-port", type=port, default=None,
                   help="adb server port (default: $ANDROID_ADB_SERVER_PORT, else 5037)")
    p.add_argument("--timeout-s", type=seconds, default=None,
                   help="deadline of every adb command and of the wait for the phone to be "
                   "ready (default: 10 s, dumps 15 s)")


def device_config(args: argparse.Namespace) -> DeviceConfig:
    """``PERCEPTION_DEVICE_*`` with the options given (checked by their types: a port 1 to
    65535, a finite timeout > 0; ``None`` is "not given", never a falsy value dropped). A
    command without ``--timeout-s`` (perception-agent) keeps the settings' deadlines."""
    cfg = DeviceConfig.from_env()
    changes: dict[str, Any] = {}
    if args.adb_host:
        changes["adb_host"] = args.adb_host
    if args.adb_port is not None:
        changes["adb_port"] = args.adb_port
    timeout_s = getattr(args, "timeout_s", None)
    if timeout_s is not None:
        changes.update(
            command_timeout_s=timeout_s,
            dump_timeout_s=timeout_s,
            frame_timeout_s=timeout_s,
            ready_timeout_s=timeout_s,
        )
    return cfg.with_(**changes) if changes else cfg


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "observe",
        help="print one observation from a live phone",
        description=(
            "Capture the tree and the screen of a phone over adb, fuse them and print the "
            "candidates and the prompt the model reads (--json: the prompt alone, the compact "
            "JSON the model reads)."
        ),
    )
    add_device_args(p)
    p.add_argument("--json", action="store_true", help="print the model's compact JSON")
    p.add_argument("--after-action", action="store_true",
                   help="wait for data captured after this moment (a new epoch)")
    p.set_defaults(run=run)


def summary(obs: Any) -> str:
    """A human-readable view of an observation."""
    lines = [
        f"state={obs.state.value} tree={obs.tree_confidence:.2f} pixel={obs.pixel_confidence:.2f}"
        f" consistent={obs.consistent} ready={obs.ready} epoch={obs.epoch}"
    ]
    if obs.screen is not None:
        s = obs.screen
        keyboard = getattr(s, "keyboard_px", None)
        lines.append(
            f"screen: {s.package} {s.activity or ''} {s.size.width_px}x{s.size.height_px} "
            f"rot={s.rotation} secure={s.secure}"
            + (f" keyboard={tuple(keyboard)}" if keyboard is not None else "")
        )
    for op in obs.operations:
        lines.append(f"op: {op.kind.value} {op.reason}")
    for c in obs.candidates:
        # What the model's prompt leaves out, and why (its ids are not the model's to name).
        hidden = (
            " (not shown: occluded)" if c.occluded
            else " (not shown: left out)" if not c.listed
            else " (static text)" if c.static
            else ""
        )
        lines.append(
            f"  [{c.id}] {c.kind:<7} {c.source.value:<5} {c.confidence:.2f} "
            f"{tuple(c.box_px)} {c.text!r}{hidden}"
        )
    for note in obs.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from perception.engine import Engine
    from perception.pipeline import Perceiver
    from perception.sources.device import DeviceSource

    cfg = device_config(args)
    perceiver = Perceiver.from_env()
    engine_cfg = EngineConfig.from_env()
    with DeviceSource(args.serial, config=cfg) as source:
        source.wait_ready()
        engine = Engine(source, perceiver=perceiver, config=engine_cfg)
        try:
            obs = engine.observe(after_action=args.after_action)
        finally:
            # The source first: it aborts a dump or screencap in flight, so the capture
            # threads stop at once (else close() waits for it: up to the dump's deadline).
            source.close()
            engine.close()
            perceiver.close()
    if args.json:
        print(obs.to_prompt())  # exactly what the model reads (escaped, compact)
    else:
        print(summary(obs))
    return 0
