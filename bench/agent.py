"""``perception-bench agent``: what the agent layer costs and covers on replayed corpus traces.

For every step of every corpus trace (one :class:`perception.Perceiver` per trace, as in a
session) it measures, in one run:

- tokens (o200k_base) of the system prompt and of one screen turn (history + screen), and how
  much the turn adds beyond the observation's own JSON (with ``--marks`` the turn also carries
  the set-of-marks screenshot: its text parts are counted, the images reported apart, and
  building the messages includes drawing and encoding it);
- the agent's CPU per step: building the messages, parsing and validating an answer, planning
  the device point; and that overhead as a share of the observation (``perceive``) time;
- the recorded taps: how many the action space can express as ``tap`` on a listed, tappable
  candidate whose tap point (the executor's, through ``perception.geometry``) lands inside the
  recorded target (or, for a recorded point without a target, within the replay's own
  tolerance), how many land on a candidate enclosing the target (a clickable row holding the
  tapped label), how many of the taps recorded as a point only (LlamaTouch) tap the candidate
  under that point at its own tap point, away from the point, how many need ``tap_at`` (and
  whether the 0-1000 round trip still lands inside), and how many miss;
- the recorded app starts (DroidBot's ``am start pkg/cls``): how many ``open_app`` with the
  package replays through the agent's own executor on the recording (the step moves on along
  the recorded start).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from agent.actions import ActionError, LongPress, OpenApp, Tap, TapAt, parse_action
from agent.executor import ExecutionError, Executor, ReplayInput
from agent.prompt import MARKS_MAX_SIDE_PX, HistoryItem, build_messages, content_text
from bench import BenchInputError
from bench.stats import p50_p95
from bench.tree import token_counter
from perception import fastpath
from perception.cli.options import whole
from perception.errors import PerceptionError
from perception.fusion.candidates import Candidate
from perception.geometry import point_pm_to_px, point_px_to_pm
from perception.pipeline import Observation, Perceiver
from perception.sources import ActionKind, read_recording
from perception.sources.replay import TAP_TOLERANCE_NORM, ReplaySource, intent_target
from perception.types import BoxPx, PointPx

TASK = "Reproduce the recorded session: tap what the user tapped next."


def add_parser(sub: Any) -> None:
    p = sub.add_parser("agent", help="agent: prompt tokens, per-step overhead, tap coverage")
    p.add_argument("--corpus", type=Path, required=True, help="corpus dir (traces with trace.json)")
    p.add_argument("--limit", type=whole, default=0, help="at most this many traces (0 = all)")
    p.add_argument("--json", type=Path, default=None, help="write the full report here")
    p.add_argument("--marks", action="store_true",
                   help="build each turn with the set-of-marks screenshot (as perception-agent "
                   f"--marks, longer side {MARKS_MAX_SIDE_PX})")
    p.set_defaults(run=run)


def _listed(c: Candidate) -> bool:
    return bool(getattr(c, "listed", True))


def _pick(obs: Observation, point: PointPx, press: type[Tap | LongPress]) -> Candidate | None:
    """The smallest listed candidate under ``point`` that takes ``press`` (what a careful model
    would choose: the validator refuses a tap on a long-press-only view, and the reverse)."""
    hits = sorted(
        (
            c
            for c in obs.candidates
            if _listed(c) and c.actionable and not c.occluded and c.box_px.contains(point)
        ),
        key=lambda c: (c.box_px.area, c.id),
    )
    for c in hits:
        try:
            parse_action(json.dumps(press(c.id).to_json()), obs)
        except ActionError:
            continue
        return c
    return None


def run(args: argparse.Namespace) -> int:
    if not args.corpus.is_dir():
        raise BenchInputError(f"--corpus {args.corpus}: not a directory")
    count = token_counter("agent")
    traces = sorted(p.parent for p in args.corpus.glob("*/*/trace.json"))
    if not traces:
        raise BenchInputError(
            f"--corpus {args.corpus}: no traces (DIR/SOURCE/TRACE/trace.json: the corpus's own "
            "folder, not one of its sources)"
        )
    if args.limit > 0:
        traces = traces[: args.limit]
    system_tokens = count(build_messages_system(marks=bool(getattr(args, "marks", False))))
    turn_tokens: list[float] = []
    extra_tokens: list[float] = []
    perceive_ms: list[float] = []
    build_ms: list[float] = []
    parse_ms: list[float] = []
    plan_ms: list[float] = []
    # A tap on a view DroidBot logged off the screen (empty or inverted bounds, or a centre past
    # the screen's edge: a view scrolled away) has nothing on the screen to tap: counted apart,
    # as the fusion bench does, not as a tap the action space cannot express.
    off_screen = 0
    taps = {"recorded": 0, "tap_id_inside": 0, "tap_id_encloses": 0, "tap_id_under_point": 0,
            "tap_id_outside": 0, "tap_at_inside": 0, "tap_at_outside": 0}
    starts = {"recorded": 0, "open_app_replays": 0}
    steps = not_ready = errors = images = 0
    marks = bool(getattr(args, "marks", False))
    t_start = time.perf_counter()
    for trace in traces:
        try:
            recording = read_recording(trace)
        except PerceptionError as exc:
            print(f"skip {trace.name}: {exc}")
            continue
        perceiver = Perceiver()
        history: list[HistoryItem] = []
        for epoch, step in enumerate(recording.steps):
            if step.frame_path is None:
                continue
            try:
                t0 = time.perf_counter_ns()
                raw = step.read_frame()
                obs = perceiver.perceive(step.read_tree(), raw, epoch=epoch)
                perceive_ms.append((time.perf_counter_ns() - t0) / 1e6)
            except PerceptionError:
                errors += 1
                continue
            steps += 1
            if not obs.ready or obs.screen is None:
                not_ready += 1
                continue
            t0 = time.perf_counter_ns()
            messages = build_messages(
                obs, TASK, history, step=epoch + 1, steps_left=20, frame=raw if marks else None
            )
            build_ms.append((time.perf_counter_ns() - t0) / 1e6)
            text, sent = content_text(messages[1]["content"])
            images += sent
            turn = count(text)
            turn_tokens.append(turn)
            extra_tokens.append(turn - count(obs.to_prompt()))
            action = step.action
            if action is not None and action.kind is ActionKind.INTENT:
                package = intent_target(action.intent).package
                if package:
                    starts["recorded"] += 1
                    starts["open_app_replays"] += _open_app_replays(trace, epoch, package, obs)
            if action is None or action.kind not in (ActionKind.TAP, ActionKind.LONG_TAP):
                continue
            target = action.target_px
            point = action.point_px or (target.center if target is not None else None)
            if point is None:
                continue
            size = step.screen or recording.screen
            if (target is not None and target.area <= 0) or not (
                0 <= point.x < size.width_px and 0 <= point.y < size.height_px
            ):
                off_screen += 1
                continue
            taps["recorded"] += 1
            if target is not None:
                region = target
            else:  # the replay's own rule for a tap without a recorded target
                r = max(8, int(size.width_px * TAP_TOLERANCE_NORM))
                region = BoxPx(point.x - r, point.y - r, point.x + r + 1, point.y + r + 1)
            press = LongPress if action.kind is ActionKind.LONG_TAP else Tap
            chosen = _pick(obs, point, press)
            if chosen is not None:
                answer = json.dumps(press(chosen.id).to_json())
                t0 = time.perf_counter_ns()
                parsed = parse_action(answer, obs)
                parse_ms.append((time.perf_counter_ns() - t0) / 1e6)
                t0 = time.perf_counter_ns()
                assert isinstance(parsed, Tap | LongPress)
                landed = Executor.candidate_point(obs, parsed.candidate_id)
                plan_ms.append((time.perf_counter_ns() - t0) / 1e6)
                box = chosen.box_px
                if region.contains(landed):
                    key = "tap_id_inside"
                elif target is not None and box.encloses(target):
                    key = "tap_id_encloses"  # a clickable row holding the tapped label
                elif target is None and box.contains(landed):
                    # Only a point was recorded: the smallest tappable candidate under it, tapped
                    # at its own point (a button's centre, not where the finger was).
                    key = "tap_id_under_point"
                else:
                    key = "tap_id_outside"
                history.append(HistoryItem(step=epoch + 1, action=parsed, outcome="page changed"))
            else:
                size = obs.screen.size
                pm = point_px_to_pm(point, size)
                parsed_at = parse_action(json.dumps(TapAt(pm).to_json()), obs)
                assert isinstance(parsed_at, TapAt)
                landed = point_pm_to_px(parsed_at.point_pm, size)
                key = "tap_at_inside" if region.contains(landed) else "tap_at_outside"
            taps[key] += 1
    wall_s = time.perf_counter() - t_start
    recorded = max(1, taps["recorded"])
    p_perceive = p50_p95(perceive_ms)["p50"]
    overhead = [b + p for b, p in zip(build_ms, parse_ms, strict=False)]
    report: dict[str, Any] = {
        "implementation": fastpath.IMPLEMENTATION,
        "traces": len(traces),
        "steps": steps,
        "not_ready": not_ready,
        "errors": errors,
        "tokens": {
            "system": system_tokens,
            "turn": p50_p95(turn_tokens),
            "turn_beyond_screen": p50_p95(extra_tokens),
            **({"images": images} if marks else {}),
        },
        "ms": {
            "perceive": p50_p95(perceive_ms),
            "build_messages": p50_p95(build_ms),
            "parse_validate": p50_p95(parse_ms),
            "plan_point": p50_p95(plan_ms),
        },
        "agent_overhead_vs_perceive": round(
            p50_p95(overhead)["p50"] / p_perceive, 4
        ) if p_perceive else None,
        "taps": taps,
        "taps_off_screen": off_screen,
        "app_starts": starts,
        "taps_share": {
            k: round(v / recorded, 4) for k, v in taps.items() if k != "recorded"
        },
        "wall_s": round(wall_s, 1),
    }
    print(f"implementation {report['implementation']}; {report['traces']} traces, "
          f"{steps} steps ({not_ready} not ready, {errors} errors), {report['wall_s']} s")
    print(f"tokens (o200k): system {system_tokens}; turn p50 {report['tokens']['turn']['p50']:.0f}"
          f" p95 {report['tokens']['turn']['p95']:.0f}; turn beyond the screen JSON p50 "
          f"{report['tokens']['turn_beyond_screen']['p50']:.0f}"
          + (f"; {images} marked screenshots (not counted: the server prices images)"
             if marks else ""))
    ms = report["ms"]
    print(f"ms p50/p95: perceive {ms['perceive']['p50']:.3f}/{ms['perceive']['p95']:.3f}; "
          f"build messages {ms['build_messages']['p50']:.3f}/{ms['build_messages']['p95']:.3f}; "
          f"parse+validate {ms['parse_validate']['p50']:.3f}/{ms['parse_validate']['p95']:.3f};"
          f" plan point {ms['plan_point']['p50']:.4f}")
    print(f"agent overhead / perceive (p50): {report['agent_overhead_vs_perceive']}")
    share = report["taps_share"]
    print(f"recorded taps {taps['recorded']}: tap(id) lands in target {share['tap_id_inside']:.1%}"
          f", tap(id) on a candidate enclosing the target {share['tap_id_encloses']:.1%}, "
          f"tap(id) on the candidate under a recorded point (no target) "
          f"{share['tap_id_under_point']:.1%}, tap(id) elsewhere {share['tap_id_outside']:.1%}, "
          f"tap_at needed and lands {share['tap_at_inside']:.1%}, "
          f"tap_at misses {share['tap_at_outside']:.1%}; {off_screen} more on views off the"
          " screen (not counted)")
    print(f"recorded app starts {starts['recorded']}: open_app(package) replays "
          f"{starts['open_app_replays']}")
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    return 0


def _open_app_replays(trace: Path, position: int, package: str, obs: Observation) -> bool:
    """Does ``open_app`` of ``package``, carried out by the agent's executor on a replay of
    ``trace`` at ``position``, move on along the recorded start?"""
    with ReplaySource(trace) as source:
        source.navigator.goto(position)
        try:
            done = Executor(ReplayInput(source), sleep=False).execute(OpenApp(package), obs)
        except ExecutionError:
            return False
        # "recorded intent", or "recorded intent: end of the recording" at a trace's last step
        return "(recorded intent" in done.commands[0]


def build_messages_system(*, marks: bool = False) -> str:
    from agent.prompt import system_prompt

    return system_prompt(TASK, marks=marks)
