"""``perception replay DIR``: observations from a recording (ours or a corpus trace).

One line per step. ``--realtime`` keeps the recorded timing (``--speed`` scales it); the default
plays as fast as possible. ``--json`` prints JSON lines: the step, the action taken next and the
observation's compact JSON (what a decision model sees).
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from perception.cli.options import whole
from perception.sources.recording import read_recording
from perception.sources.replay import MIN_SPEED, Timing, iter_steps
from perception.tree import compress


def _speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not (math.isfinite(value) and value >= MIN_SPEED):  # also refuses nan
        raise argparse.ArgumentTypeError(
            f"expects a number from {MIN_SPEED} up (1: as recorded), got {text!r}"
        )
    return value


def add_parser(sub: Any) -> None:
    p = sub.add_parser("replay", help="print observations from a recording folder")
    p.add_argument("recording", type=Path, help="a recording or a corpus trace folder")
    p.add_argument("--realtime", action="store_true", help="keep the recorded timing")
    p.add_argument(
        "--speed", type=_speed, default=1.0,
        help=f"timing factor with --realtime ({MIN_SPEED} or more; 2: twice as fast)"
    )
    p.add_argument("--limit", type=whole, default=0, help="stop after this many steps (0: all)")
    p.add_argument("--no-frames", action="store_true", help="tree channel only")
    p.add_argument("--json", action="store_true", help="JSON lines")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from perception.cli.observe import summary
    from perception.pipeline import Perceiver

    recording = read_recording(args.recording)
    perceiver = Perceiver.from_env()
    timing = Timing.ORIGINAL if args.realtime else Timing.FAST
    for count, step in enumerate(iter_steps(recording, timing=timing, speed=args.speed), 1):
        frame = None if args.no_frames or step.frame_path is None else step.read_frame()
        obs = perceiver.perceive(
            xml=step.read_tree(),
            frame=frame,
            tree_time_ns=(step.tree_start_ns, step.tree_end_ns),
            frame_time_ns=None if frame is None else (step.frame_start_ns, step.frame_end_ns),
            epoch=count - 1,
            activity=step.activity or None,
        )
        action = step.action.to_json() if step.action is not None else None
        if args.json:
            line = {"step": step.step, "action": action, "observation": json.loads(obs.to_prompt())}
            print(compress.dumps(line), flush=True)  # escaped as the model reads it
        else:
            shown = json.dumps(action, ensure_ascii=False)
            print(f"--- step {step.step} ({step.tree_path.parent.name}) next: {shown}")
            print(summary(obs), flush=True)
        if args.limit and count >= args.limit:
            break
    return 0
