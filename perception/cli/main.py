"""``perception``: the command-line face of the package.

Subcommands live in their own modules (``perception.cli.<name>``), each exposing
``add_parser(subparsers)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import codecs
import importlib
import logging
import sys
from collections.abc import Callable, Sequence

from perception import fastpath
from perception.errors import PerceptionError
from perception.signals import interrupted, one_line, stop_signals

SUBCOMMANDS = ("tree", "pixels", "observe", "record", "replay", "overlay", "export", "demo")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perception",
        description="Turn an Android screen into one list of tappable candidates.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log to stderr")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMANDS:
        module = importlib.import_module(f"perception.cli.{name}")
        module.add_parser(sub)
        # -v after the subcommand too (perception tree X -v), as perception-agent takes it.
        # SUPPRESS: a subcommand without it keeps what was given before it.
        sub.choices[name].add_argument(
            "-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
            help="log to stderr",
        )
    return parser


def utf8_streams() -> None:
    """Standard output and error in UTF-8 where they would not be (``PYTHONIOENCODING=latin-1``,
    a legacy locale, a file on Windows): an element's text, a path or a phone's message may
    hold any character, and a stream that cannot encode one crashed the command with
    UnicodeEncodeError in the middle of its output. A lone surrogate (a file name that is not
    UTF-8) is written as a backslash escape."""
    for stream in (sys.stdout, sys.stderr):
        encoding = getattr(stream, "encoding", None)
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is None or not encoding:
            continue
        try:
            utf8 = codecs.lookup(encoding).name == "utf-8"
        except LookupError:
            utf8 = False
        if not utf8:
            stream.flush()
            reconfigure(encoding="utf-8", errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand (:func:`run_command`)."""
    return run_command("perception", build_parser, argv)


def run_command(
    prog: str,
    build: Callable[[], argparse.ArgumentParser],
    argv: Sequence[str] | None = None,
) -> int:
    """Parse ``argv`` with the parser ``build`` makes and run ``args.run(args)``: a failure is
    one line (its type and message) and exit 2, Ctrl-C one line and 130 (SIGTERM and SIGHUP:
    128 + the signal), a usage error argparse's exit 2, a closed pipe 0. A bad
    ``PERCEPTION_FASTPATH`` is such a failure, found after ``--help``. Output is UTF-8
    whatever the locale says (:func:`utf8_streams`). ``perception`` and ``perception-bench``
    run through it."""
    utf8_streams()
    try:
        with stop_signals():
            args = build().parse_args(argv)
            fastpath.check()
            verbose = getattr(args, "verbose", False)
            logging.basicConfig(level=logging.INFO if verbose else logging.WARNING)
            code: int = args.run(args)
    except PerceptionError as exc:
        print(f"{prog}: {type(exc).__name__}: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        what, code = interrupted(exc)
        print(f"{prog}: {what}", file=sys.stderr)
        return code
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
