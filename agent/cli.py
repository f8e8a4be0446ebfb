"""``perception-agent``: run the decision loop on a phone (or a recording) with any
OpenAI-compatible model server.

    perception-agent --serial 127.0.0.1:5555 --task "Turn on Wi-Fi" \\
        --base-url http://127.0.0.1:8000/v1 --model qwen2.5-vl-7b [--steps 20]

Each step is printed as one line while the loop runs; the whole transcript (JSON) is printed
at the end, or written to ``--transcript FILE`` (checked before the run: an unwritable path is
a usage error; if writing still fails, the transcript is printed and the exit code kept). Model
and screen text is printed with control characters escaped. ``--replay DIR`` drives a
recording instead of a phone (the replay moves on when the model hits the recorded target).
The exit code says how the loop ended: 0 finished, 1 an error, 2 bad arguments, 3 budget
spent / loop / timeout.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent.executor import Executor, input_for
from agent.llm import ChatModel, LLMConfig
from agent.loop import Agent, LoopConfig, StepRecord, StopReason
from perception.config import DeviceConfig, EngineConfig
from perception.errors import InputError, PerceptionError

EXIT_CODES = {
    StopReason.FINISHED: 0,
    StopReason.ERROR: 1,
    StopReason.BUDGET: 3,
    StopReason.LOOP: 3,
    StopReason.TIMEOUT: 3,
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="perception-agent",
        description="Drive an Android phone with an OpenAI-compatible model and perception.",
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--serial", help="adb serial of the phone (e.g. 127.0.0.1:5555)")
    where.add_argument("--replay", type=Path, help="a recording folder to drive instead")
    p.add_argument("--task", required=True, help="what to do, in plain words")
    p.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", required=True, help="model name on that server")
    p.add_argument("--api-key", default=None,
                   help="default: $OPENAI_API_KEY, else a placeholder local servers accept")
    p.add_argument("--steps", type=int, default=20, help="step budget (default 20)")
    p.add_argument("--step-timeout-s", type=float, default=120.0,
                   help="deadline of one observe+decide+act step (default 120)")
    p.add_argument("--llm-timeout-s", type=float, default=60.0,
                   help="deadline of one model request (default 60)")
    p.add_argument("--llm-retries", type=int, default=2,
                   help="retries of a model request (connection errors, 408, 429, 5xx) while "
                   "the step's deadline allows; a timeout is not retried")
    p.add_argument("--max-tokens", type=int, default=400,
                   help="most tokens of one model answer (default 400); an answer cut off there "
                   "is rejected as such")
    p.add_argument("--settle-ms", type=int, default=300,
                   help="pause after an action before observing (default 300)")
    p.add_argument("--no-coords", action="store_true",
                   help="id-only prompt (no boxes; fewer tokens); tap_at and point swipes are "
                   "neither offered nor accepted")
    p.add_argument("--adb-host", default=None, help="adb server host (default 127.0.0.1)")
    p.add_argument("--adb-port", type=int, default=None, help="adb server port (default 5037)")
    p.add_argument("--transcript", type=Path, default=None,
                   help="write the transcript JSON here instead of printing it")
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    return p


def _line(rec: StepRecord) -> str:
    action = "-" if rec.action is None else json.dumps(rec.action.to_json(), ensure_ascii=False)
    return terminal_safe(
        f"step {rec.step}: {action} -> {rec.outcome} "
        f"(observe {rec.observe_ms:.0f} ms, model {rec.decide_ms:.0f} ms, act {rec.act_ms:.0f} ms)"
    )


def terminal_safe(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control or format character (ESC, CSI \\x9b, bidi overrides, line
    breaks unless ``keep_newlines``) written as a ``\\uXXXX`` escape: model and screen text
    cannot drive the terminal. Inside JSON strings (where json.dumps leaves C1 and format
    characters raw) the escape reads back the same, so a JSON document stays valid and equal."""
    if text.isprintable():
        return text
    out = []
    for ch in text:
        if ch.isprintable() or (keep_newlines and ch == "\n"):
            out.append(ch)
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append("\\u{:04x}\\u{:04x}".format(*_surrogates(ord(ch))))
    return "".join(out)


def _surrogates(code: int) -> tuple[int, int]:
    code -= 0x10000
    return 0xD800 + (code >> 10), 0xDC00 + (code & 0x3FF)


def _say(text: str) -> None:
    print(terminal_safe(text), file=sys.stderr)


def _check_writable(path: Path) -> str | None:
    """Why the transcript cannot be written to ``path`` (None when it can), checked up front."""
    if path.is_dir():
        return f"--transcript {path} is a directory"
    parent = path.parent
    if not parent.is_dir():
        return f"--transcript {path}: the folder {parent} does not exist"
    if not os.access(path if path.exists() else parent, os.W_OK):
        return f"--transcript {path} is not writable"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        llm = LLMConfig(
            base_url=args.base_url,
            model=args.model,
            api_key=args.api_key,
            timeout_s=args.llm_timeout_s,
            transport_retries=args.llm_retries,
            max_tokens=args.max_tokens,
        )
        loop_cfg = LoopConfig(
            max_steps=args.steps,
            step_timeout_s=args.step_timeout_s,
            settle_ms=args.settle_ms,
            coords=not args.no_coords,
        )
    except PerceptionError as exc:
        parser.error(str(exc))
    if args.transcript is not None:
        problem = _check_writable(args.transcript)
        if problem is not None:
            parser.error(problem)
    try:
        source = _open_source(args)
    except PerceptionError as exc:
        _say(f"perception-agent: {type(exc).__name__}: {exc}")
        # A --replay folder that is not a recording is a bad argument; a phone that does not
        # answer is an error.
        return 2 if isinstance(exc, InputError) else 1
    from perception.engine import Engine
    from perception.pipeline import Perceiver

    model: ChatModel | None = None
    engine = Engine(source, perceiver=Perceiver.from_env(), config=EngineConfig.from_env())
    try:
        model = ChatModel(llm)
        agent = Agent(
            engine,
            model,
            Executor(input_for(source)),
            loop_cfg,
            on_step=lambda rec: print(_line(rec), flush=True),
        )
        transcript = agent.run(args.task)
    except PerceptionError as exc:
        _say(f"perception-agent: {type(exc).__name__}: {exc}")
        return 1
    finally:
        engine.close()
        source.close()
        if model is not None:
            model.close()
    text = terminal_safe(transcript.dumps(), keep_newlines=True)
    written = False
    if args.transcript is not None:
        try:
            args.transcript.write_text(text + "\n", encoding="utf-8")
            written = True
        except OSError as exc:  # checked before the run; the disk may still fail
            _say(f"perception-agent: cannot write the transcript ({exc}); printing it instead")
    if not written:
        print(text)
    summary = f"stopped: {transcript.stop.value} after {len(transcript.steps)} step(s)"
    if transcript.answer is not None:
        summary += f"; answer: {transcript.answer}"
    if transcript.error is not None:
        summary += f"; {transcript.error}"
    _say(summary)
    return EXIT_CODES[transcript.stop]


def _open_source(args: argparse.Namespace) -> Any:
    if args.replay is not None:
        from perception.sources import ReplaySource

        return ReplaySource(args.replay)
    from perception.sources.device import DeviceSource

    cfg = DeviceConfig.from_env()
    changes: dict[str, Any] = {}
    if args.adb_host:
        changes["adb_host"] = args.adb_host
    if args.adb_port:
        changes["adb_port"] = args.adb_port
    if changes:
        cfg = cfg.with_(**changes)
    source = DeviceSource(args.serial, config=cfg)
    try:
        source.wait_ready()
    except PerceptionError:
        source.close()
        raise
    return source


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
