"""``perception replay DIR``: observations from a recording (ours or a corpus trace).

One block per step: the step, its recorded time (from the first capture) and the action taken
next, then the observation. ``--realtime`` keeps the recorded timing (``--speed`` scales it);
the default plays as fast as possible. Each step is fused in its recorded epoch (a step of a
watch-mode recording, where no action was sent, stays in the epoch before it). ``--json``
prints JSON lines: the step, epoch, time, action and the observation's compact JSON (what a
decision model sees).

A step that fails (a dump that does not parse and no frame to fall back on, a frame that
cannot be decoded) is reported, named by step and file, and the replay goes on, as a live
engine goes on after a failed capture; a trace step whose dump is missing is reported as
skipped. The exit status is 2 only when no step could be replayed.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perception.cli.options import plural, whole
from perception.errors import FrameError, PerceptionError, TreeError
from perception.sources.recording import RecordedStep, Recording, read_recording
from perception.sources.replay import MIN_SPEED, Timing, iter_steps
from perception.tree import compress

if TYPE_CHECKING:
    from perception.pipeline import Observation, PixelAnalyser


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
    p = sub.add_parser(
        "replay",
        help="print observations from a recording folder",
        description=(
            "Perceive a recording or a corpus trace step by step, each step in the epoch its action"
            " started, and print every candidate (shown or not) and the action taken next."
        ),
    )
    p.add_argument("recording", type=Path, help="a recording or a corpus trace folder")
    p.add_argument("--realtime", action="store_true", help="keep the recorded timing")
    p.add_argument(
        "--speed", type=_speed, default=None,
        help=f"with --realtime: timing factor ({MIN_SPEED} or more; default 1, as recorded; 2: "
        "twice as fast)"
    )
    p.add_argument("--limit", type=whole, default=0, help="stop after this many steps (0: all)")
    p.add_argument("--no-frames", action="store_true", help="tree channel only")
    p.add_argument("--json", action="store_true", help="JSON lines")
    p.set_defaults(run=run, parser=p)


def in_epochs(steps: Iterable[RecordedStep]) -> Iterator[tuple[int, RecordedStep]]:
    """Each step with the epoch to fuse it in: the recorded one, never going back (a step
    from an older epoch would be dropped as stale, which is no replay of what was seen)."""
    epoch = 0
    for step in steps:
        epoch = max(epoch, step.epoch)
        yield epoch, step


class StepPerceiver:
    """Recorded steps through one :class:`~perception.pipeline.Perceiver`, each as it was
    captured: its dump and frame (unless ``frames`` is false) with their recorded capture
    times and the on-screen keyboard the phone reported (the app's elements under it are not
    offered, as live), in the epoch given.

    Without frames the dump is placed on the screen the recording stored for the step: the
    tree channel alone takes the screen from the dump's windows, which on most corpus screens
    leave out a bar, the padding under an emulator's content or everything but a dialog, so
    the 0-1000 boxes were not those of the screenshot (230 of the 364 corpus screens, 2,739
    boxes, against an export with frames). A dump the stored screen cannot hold (one in the
    other orientation) is read on its own windows, and the observation notes it.
    """

    def __init__(self, pixels: PixelAnalyser, *, frames: bool = True) -> None:
        from perception.pipeline import Perceiver

        self.frames = frames
        self.perceiver = Perceiver.from_env(pixels=pixels)

    def perceive(self, step: RecordedStep, *, epoch: int) -> Observation:
        frame = step.read_frame() if self.frames and step.frame_path is not None else None
        return self.perceiver.perceive(
            xml=step.read_tree(),
            frame=frame,
            tree_time_ns=(step.tree_start_ns, step.tree_end_ns),
            frame_time_ns=None if frame is None else (step.frame_start_ns, step.frame_end_ns),
            epoch=epoch,
            activity=step.activity or None,
            screen=step.screen if frame is None else None,
            keyboard=step.keyboard_px,
        )


def culprit(step: RecordedStep, exc: PerceptionError) -> Path:
    """The file a step's error comes from (its folder when the error is not a file's)."""
    if isinstance(exc, TreeError):
        return step.tree_path
    if isinstance(exc, FrameError) and step.frame_path is not None:
        return step.frame_path
    return step.tree_path.parent


def report_skipped(command: str, recording: Recording) -> None:
    for why in recording.skipped:
        print(f"perception {command}: {recording.root}: step {why}; skipped", file=sys.stderr)


def _say_wait(step: RecordedStep, following: RecordedStep, speed: float) -> None:
    """A recorded gap over a second is said before it is waited (DroidBot's are minutes:
    a silent replay looked hung)."""
    gap_s = (following.tree_start_ns - step.tree_start_ns) / 1e9
    if gap_s / speed > 1:
        print(f"perception replay: waiting {gap_s / speed:.1f} s for step {following.step} "
              f"({gap_s:.1f} s recorded, --speed {speed:g})", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from perception.cli.observe import summary
    from perception.config import PixelConfig
    from perception.pipeline import PixelChannel
    from perception.pixel.read import PixelReader

    if args.speed is not None and not args.realtime:
        # Without --realtime the replay runs as fast as it can: a speed given was ignored.
        args.parser.error("--speed scales --realtime's timing; add --realtime")
    speed = 1.0 if args.speed is None else args.speed
    recording = read_recording(args.recording)
    report_skipped("replay", recording)
    timing = Timing.ORIGINAL if args.realtime else Timing.FAST
    base_ns = recording.steps[0].tree_start_ns
    played = failed = 0
    with PixelReader(PixelConfig.from_env()) as reader:
        player = StepPerceiver(PixelChannel(reader), frames=not args.no_frames)
        steps = in_epochs(iter_steps(recording, timing=timing, speed=speed))
        for index, (epoch, step) in enumerate(steps):
            t_s = (step.tree_start_ns - base_ns) / 1e9
            action = step.action.to_json() if step.action is not None else None
            try:
                obs = player.perceive(step, epoch=epoch)
                error = None
            except PerceptionError as exc:
                obs, error = None, exc
                failed += 1
                print(
                    f"perception replay: step {step.step} ({culprit(step, exc)}): "
                    f"{type(exc).__name__}: {exc}",
                    file=sys.stderr,
                )
            played += 1
            if args.json:
                line: dict[str, Any] = {
                    "step": step.step, "epoch": epoch, "t_ms": round(t_s * 1000, 3),
                    "action": action,
                }
                if obs is not None:
                    line["observation"] = json.loads(obs.to_prompt())
                else:
                    line["error"] = {"type": type(error).__name__, "message": str(error)}
                print(compress.dumps(line), flush=True)  # escaped as the model reads it
            else:
                shown = json.dumps(action, ensure_ascii=False)
                print(f"--- step {step.step} ({step.tree_path.parent.name}) at +{t_s:.3f} s "
                      f"next: {shown}")
                if obs is not None:
                    print(summary(obs), flush=True)
                else:
                    print(f"failed: {type(error).__name__}: {error}", flush=True)
            if args.limit and played >= args.limit:
                break
            if args.realtime and index + 1 < len(recording.steps):
                _say_wait(step, recording.steps[index + 1], speed)
    print(f"perception replay: {plural(played, 'step')}, {failed} failed", file=sys.stderr)
    return 2 if played and failed == played else 0
