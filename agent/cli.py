"""``perception-agent``: run the decision loop on a phone (or a recording) with any
OpenAI-compatible model server.

    perception-agent --serial 127.0.0.1:5555 --task "Turn on Wi-Fi" \\
        --base-url http://127.0.0.1:8000/v1 --model qwen2.5-vl-7b [--steps 20]

Each step is printed as one line on stderr while the loop runs; the whole transcript (JSON) is
printed to stdout at the end (alone: ``> t.json`` is valid JSON), or written to
``--transcript FILE`` (checked before the run: an unwritable path is a usage error; if writing
still fails, the transcript is printed and the exit code kept). Model and screen text is
printed with control characters escaped. ``--replay DIR`` drives a recording instead of a
phone (the replay moves on when the model hits the recorded target). The exit code says how
the loop ended: 0 finished, 1 an error, 2 bad arguments or settings, 3 budget spent / loop /
timeout, 4 handed over (a FLAG_SECURE screen or a captcha asks for a person; ``--no-hand-over``
leaves that to the model), 130 Ctrl-C (the transcript then holds the steps so far, stop
"interrupted").

OpenAI's o-series and gpt-5 models take ``max_completion_tokens`` and no temperature:
``--token-limit-param max_completion_tokens --no-temperature`` (a server that answers that the
one sent is unsupported is sent the other for the rest of the run anyway, with a warning).

``--marks`` sends a vision-language model the set-of-marks screenshot of each step's screen
(:func:`perception.draw_marks`, JPEG, longer side at most ``--marks-max-side``, 1280 by default)
before the same text; a step whose observation had no frame sends the text alone and its line
says so.

The model may type any text when ADB Keyboard is the phone's input method, printable ASCII
otherwise (all that ``input text`` types); ``--ime adbkeyboard`` selects ADB Keyboard for the
run and puts the phone's own input method back at the end.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from agent.executor import Executor, input_for
from agent.llm import TOKEN_LIMIT_PARAMS, ChatModel, LLMConfig
from agent.loop import MIN_MARKS_SIDE_PX, Agent, LoopConfig, StepRecord, StopReason, Transcript
from agent.prompt import MARKS_MAX_SIDE_PX
from perception import fastpath
from perception.cli.observe import device_config
from perception.cli.options import plural, port, seconds, whole, write_whole
from perception.config import DeviceConfig, EngineConfig
from perception.errors import InputError, PerceptionError
from perception.signals import interrupted, one_line, stop_signals

EXIT_CODES = {
    StopReason.FINISHED: 0,
    StopReason.ERROR: 1,
    StopReason.BUDGET: 3,
    StopReason.LOOP: 3,
    StopReason.TIMEOUT: 3,
    StopReason.HAND_OVER: 4,
    StopReason.GAVE_UP: 5,
    StopReason.INTERRUPTED: 130,
}


EXIT_MEANINGS = (
    (0, "finished: the model said the task is done"),
    (1, "an error: the phone or the model server failed"),
    (2, "bad arguments or settings"),
    (3, "stopped short: step budget spent, a loop, or no usable answer in time"),
    (4, "handed over: the screen asks for a person (FLAG_SECURE, a captcha)"),
    (5, "gave up: the model said the task cannot be done"),
    (130, "interrupted by Ctrl-C (the transcript holds the steps so far)"),
    (143, "stopped by SIGTERM (likewise; 129 for SIGHUP)"),
)
"""What ``--help`` lists; the stop reasons' codes are :data:`EXIT_CODES` (a test keeps the two
in step)."""

FLAGS = {
    "max_steps": "--steps",
    "step_timeout_s": "--step-timeout-s",
    "timeout_s": "--llm-timeout-s",
    "transport_retries": "--llm-retries",
    "max_tokens": "--max-tokens",
    "token_limit_param": "--token-limit-param",
    "temperature": "--temperature",
    "settle_ms": "--settle-ms",
    "loading_waits": "--loading-waits",
    "loading_wait_ms": "--loading-wait-ms",
    "marks_max_side_px": "--marks-max-side",
    "base_url": "--base-url",
}
"""The option behind each LLMConfig / LoopConfig field, for their errors: a user reads
"--llm-timeout-s", not "timeout_s"."""


def _as_flags(message: str) -> str:
    return re.sub(r"\b(" + "|".join(FLAGS) + r")\b", lambda m: FLAGS[m.group(1)], message)


def positive(text: str) -> int:
    """A whole number, 1 or more."""
    if not (text.isascii() and text.isdigit() and int(text) > 0):
        raise argparse.ArgumentTypeError(f"expects a whole number > 0, got {text!r}")
    return int(text)


def temperature(text: str) -> float:
    """A sampling temperature, 0 to 2."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 0 <= value <= 2):
        raise argparse.ArgumentTypeError(f"expects a number 0 to 2, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="perception-agent",
        description="Drive an Android phone with an OpenAI-compatible model and perception.",
        epilog="exit codes:\n" + "\n".join(f"  {code:<4} {what}" for code, what in EXIT_MEANINGS),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--serial", help="adb serial of the phone (e.g. 127.0.0.1:5555)")
    where.add_argument("--replay", type=Path, help="a recording folder to drive instead")
    p.add_argument("--task", required=True, help="what to do, in plain words")
    p.add_argument("--base-url", required=True, help="e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", required=True, help="model name on that server")
    p.add_argument("--api-key", default=None,
                   help="default: $OPENAI_API_KEY, else a placeholder local servers accept "
                        "(prefer the variable for a real key: a command line is visible to "
                        "every user of the machine in ps)")
    p.add_argument("--steps", type=positive, default=20, help="step budget (default 20)")
    p.add_argument("--step-timeout-s", type=seconds, default=120.0,
                   help="deadline of one observe+decide+act step (default 120)")
    p.add_argument("--llm-timeout-s", type=seconds, default=60.0,
                   help="deadline of one model request (default 60)")
    p.add_argument("--llm-retries", type=whole, default=2,
                   help="retries of a model request (connection errors, 408, 429, 5xx) while "
                   "the step's deadline allows, after the pause a 429/503 asks for "
                   "(Retry-After, at most 60 s) or a growing one (default 2); a timeout is not "
                   "retried")
    p.add_argument("--max-tokens", type=positive, default=400,
                   help="most tokens of one model answer (default 400); an answer cut off there "
                   "is rejected as such")
    p.add_argument("--token-limit-param", choices=TOKEN_LIMIT_PARAMS, default="max_tokens",
                   help="the request field carrying --max-tokens: max_tokens (default; what "
                   "OpenAI-compatible servers read) or max_completion_tokens (the only one "
                   "OpenAI's o-series and gpt-5 models take); a server that answers the one "
                   "sent is unsupported gets the other for the rest of the run")
    heat = p.add_mutually_exclusive_group()
    heat.add_argument("--temperature", type=temperature, default=0.0,
                      help="sampling temperature 0-2 (default 0)")
    heat.add_argument("--no-temperature", action="store_true",
                      help="send no temperature: the server's default (OpenAI's o-series and "
                      "gpt-5 take no other; a server that refuses one gets none anyway)")
    p.add_argument("--settle-ms", type=whole, default=300,
                   help="pause after an action before observing (default 300)")
    p.add_argument("--loading-waits", type=whole, default=2,
                   help="when the screen says it is loading, wait and observe again up to this "
                   "many times a step before asking the model (default 2; 0 asks at once)")
    p.add_argument("--loading-wait-ms", type=whole, default=1000,
                   help="how long each of those waits is (default 1000)")
    p.add_argument("--no-coords", action="store_true",
                   help="id-only prompt (no positions; fewer tokens); tap_at and point swipes are "
                   "neither offered nor accepted")
    p.add_argument("--marks", action="store_true",
                   help="send the model (vision-language) the screenshot with each actionable "
                   "id in a red label, before the text; off: text only")
    p.add_argument("--marks-max-side", type=positive, default=None, metavar="N",
                   help=f"with --marks: the screenshot's longer side at most N pixels "
                   f"(default {MARKS_MAX_SIDE_PX}; scaled down, never up)")
    p.add_argument("--no-hand-over", action="store_true",
                   help="go on where the screen asks for a person (a FLAG_SECURE screen, a "
                   "captcha); by default the run stops there, exit 4")
    p.add_argument("--ime", choices=["adbkeyboard"], default=None,
                   help="select ADB Keyboard (installed on the phone) for the run, so the model "
                   "may type any text, and restore the phone's input method at the end; "
                   "without it, any text only if ADB Keyboard is already selected, else "
                   "printable ASCII")
    p.add_argument("--adb-host", default=None,
                   help="adb server host (default 127.0.0.1); with --serial only")
    p.add_argument("--adb-port", type=port, default=None,
                   help="adb server port (default: $ANDROID_ADB_SERVER_PORT, else 5037); "
                   "with --serial only")
    p.add_argument("--transcript", type=Path, default=None,
                   help="write the transcript JSON here instead of printing it")
    p.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    return p


def _line(rec: StepRecord) -> str:
    action = "-" if rec.action is None else json.dumps(rec.action.to_json(), ensure_ascii=False)
    text_only = " [text only: no frame]" if rec.images == 0 else ""
    return terminal_safe(
        f"step {rec.step}: {action} -> {rec.outcome}{text_only} "
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
    # A file is written beside its target and renamed over it: the folder must take files.
    special = path.exists() and not path.is_file()
    if not os.access(path if special else parent, os.W_OK):
        return f"--transcript {path} is not writable"
    return None


def _check_url(url: str) -> str | None:
    """Why ``--base-url`` cannot be a model server's address (None when it can)."""
    parsed = urlsplit(url)
    if parsed.scheme not in {"http", "https"} or not parsed.hostname:
        return f"--base-url {url!r} is not an http:// or https:// address"
    try:
        parsed.port  # noqa: B018 - raises for a port that is not a number 0-65535
    except ValueError:
        return f"--base-url {url!r} has a bad port"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Parse, check everything that needs no phone, run the loop. Ctrl-C (or SIGTERM) ends
    the run: the steps so far are kept in the transcript, stop "interrupted", exit 130."""
    try:
        with stop_signals():
            return _main(argv)
    except KeyboardInterrupt as exc:  # before the loop ran (the loop's own is handled inside)
        what, code = interrupted(exc)
        _say(f"perception-agent: {what}")
        return code


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not args.task.strip():
        parser.error("--task is empty: say what to do")
    problem = _check_url(args.base_url)
    if problem is not None:
        parser.error(problem)
    if args.marks_max_side is not None and not args.marks:
        parser.error("--marks-max-side needs --marks")
    if args.marks_max_side is not None and args.marks_max_side < MIN_MARKS_SIDE_PX:
        parser.error(f"--marks-max-side must be at least {MIN_MARKS_SIDE_PX} pixels, "
                     f"got {args.marks_max_side}")
    if args.ime is not None and args.replay is not None:
        parser.error("--ime needs a phone (--serial): a replay takes any text")
    if args.replay is not None and (args.adb_host is not None or args.adb_port is not None):
        parser.error("--adb-host and --adb-port need a phone (--serial): --replay uses no adb")
    from perception.engine import Engine
    from perception.pipeline import Perceiver

    # Every setting (options and PERCEPTION_* variables) is checked before the phone is
    # reached: a bad one is a usage error, and no source is left open behind it.
    try:  # the options' own settings: an error names the option
        llm = LLMConfig(
            base_url=args.base_url,
            model=args.model,
            api_key=args.api_key,
            timeout_s=args.llm_timeout_s,
            transport_retries=args.llm_retries,
            max_tokens=args.max_tokens,
            token_limit_param=args.token_limit_param,
            temperature=None if args.no_temperature else args.temperature,
        )
        loop_cfg = LoopConfig(
            max_steps=args.steps,
            step_timeout_s=args.step_timeout_s,
            settle_ms=args.settle_ms,
            loading_waits=args.loading_waits,
            loading_wait_ms=args.loading_wait_ms,
            coords=not args.no_coords,
            hand_over=not args.no_hand_over,
            marks=args.marks,
            marks_max_side_px=(
                MARKS_MAX_SIDE_PX if args.marks_max_side is None else args.marks_max_side
            ),
        )
    except PerceptionError as exc:
        parser.error(_as_flags(str(exc)))
    try:
        fastpath.check()  # a bad PERCEPTION_FASTPATH: a usage error, after --help
        engine_cfg = EngineConfig.from_env()
        device_cfg = device_config(args) if args.replay is None else None
        perceiver = Perceiver.from_env()
    except PerceptionError as exc:
        parser.error(f"{type(exc).__name__}: {exc}")
    if args.transcript is not None:
        problem = _check_writable(args.transcript)
        if problem is not None:
            parser.error(problem)
    restore_ime: tuple[str, bool] | None = None
    try:
        source = _open_source(args, device_cfg)
        if args.ime is not None:
            restore_ime = _select_ime(source)
    except PerceptionError as exc:
        perceiver.close()
        _say(f"perception-agent: {type(exc).__name__}: {one_line(str(exc))}")
        # A --replay folder that is not a recording is a bad argument; a phone that does not
        # answer is an error.
        return 2 if isinstance(exc, InputError) else 1
    model: ChatModel | None = None
    engine = Engine(source, perceiver=perceiver, config=engine_cfg)
    steps: list[StepRecord] = []

    def on_step(rec: StepRecord) -> None:
        steps.append(rec)
        print(_line(rec), file=sys.stderr, flush=True)  # stdout is the transcript's alone

    code: int | None = None
    try:
        model = ChatModel(llm)
        agent = Agent(engine, model, Executor(input_for(source)), loop_cfg, on_step=on_step)
        transcript = agent.run(args.task)
    except PerceptionError as exc:
        _say(f"perception-agent: {type(exc).__name__}: {one_line(str(exc))}")
        return 1
    except KeyboardInterrupt as exc:
        what, code = interrupted(exc)
        transcript = Transcript(
            task=args.task, steps=tuple(steps), stop=StopReason.INTERRUPTED,
            error=None if what == "interrupted" else what,
        )
    finally:
        try:
            if restore_ime is not None:
                _restore_ime(source, restore_ime)
        finally:  # a second Ctrl-C during the restore still closes everything
            source.close()  # first: it aborts a capture in flight, so the engine stops at once
            engine.close()
            perceiver.close()
            if model is not None:
                model.close()
    _output(args, transcript)
    return EXIT_CODES[transcript.stop] if code is None else code


def _output(args: argparse.Namespace, transcript: Transcript) -> None:
    """The transcript to ``--transcript`` (written whole, or not at all) or stdout; then the
    summary line on stderr."""
    text = terminal_safe(transcript.dumps(), keep_newlines=True)
    written = False
    if args.transcript is not None:
        try:
            write_whole(args.transcript, (text + "\n").encode("utf-8"))
            written = True
        except OSError as exc:  # checked before the run; the disk may still fail
            _say(f"perception-agent: cannot write the transcript ({exc}); printing it instead")
    if not written:
        print(text, flush=True)
    summary = f"stopped: {transcript.stop.value} after {plural(len(transcript.steps), 'step')}"
    if transcript.answer is not None:
        summary += f"; answer: {transcript.answer}"
    if transcript.error is not None:
        summary += f"; {transcript.error}"
    _say(summary)


def _select_ime(source: Any) -> tuple[str, bool] | None:
    """Make ADB Keyboard the phone's input method; what to put back after the run (the input
    method it replaced, and whether ADB Keyboard was enabled before), None when it already was
    the input method. Closes the source when it cannot."""
    from perception.sources.device import ADB_KEYBOARD_IME

    try:
        enabled = ADB_KEYBOARD_IME in source.input_methods()
        before = str(source.select_input_method(ADB_KEYBOARD_IME))
    except BaseException:
        source.close()
        raise
    return None if before == ADB_KEYBOARD_IME else (before, enabled)


def _restore_ime(source: Any, restore: tuple[str, bool]) -> None:
    """Put the phone's input method back, and take ADB Keyboard off the phone's list of
    enabled keyboards when the run put it there."""
    from perception.sources.device import ADB_KEYBOARD_IME

    ime_id, was_enabled = restore
    try:
        if ime_id:
            source.select_input_method(ime_id)
        if not was_enabled:
            source.disable_input_method(ADB_KEYBOARD_IME)
    except PerceptionError as exc:
        _say(f"perception-agent: could not restore the input method {ime_id}: {one_line(str(exc))}")


def _open_source(args: argparse.Namespace, config: DeviceConfig | None) -> Any:
    if args.replay is not None:
        from perception.sources import ReplaySource

        return ReplaySource(args.replay)
    from perception.sources.device import DeviceSource

    source = DeviceSource(args.serial, config=config)
    try:
        source.wait_ready()
    except BaseException:
        source.close()
        raise
    return source


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
