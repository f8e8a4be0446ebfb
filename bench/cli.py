"""``perception-bench``: performance and quality figures, measured as ratios in one run.

Subcommands live in ``bench.<name>`` modules, each exposing ``add_parser(subparsers)`` and
``run(args) -> int``. Errors follow ``perception``'s command line: a failure is one line (its
type and message) and exit 2, Ctrl-C one line and 130, a usage error argparse's exit 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from perception import fastpath
from perception.cli.main import utf8_streams
from perception.cli.options import interrupted, one_line, stop_signals
from perception.errors import PerceptionError

SUBCOMMANDS = ("tree", "pixels", "device", "fusion", "agent")

DESCRIPTION = (
    "Measure perception on recorded screens and phones: tree, pixel and fusion latency and "
    "quality on a corpus, the agent's prompt tokens and per-step overhead, and capture latency, "
    "observation rate and memory on a phone (or a virtual phone). Each subcommand prints a "
    "summary and writes its full report as JSON with --json."
)


def main(argv: Sequence[str] | None = None) -> int:
    utf8_streams()
    try:
        with stop_signals():
            parser = argparse.ArgumentParser(prog="perception-bench", description=DESCRIPTION)
            sub = parser.add_subparsers(dest="command", required=True)
            for name in SUBCOMMANDS:
                importlib.import_module(f"bench.{name}").add_parser(sub)
            args = parser.parse_args(argv)
            fastpath.check()  # a bad PERCEPTION_FASTPATH: one line, after --help
            code: int = args.run(args)
    except PerceptionError as exc:
        print(f"perception-bench: {type(exc).__name__}: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        what, code = interrupted(exc)
        print(f"perception-bench: {what}", file=sys.stderr)
        return code
    except BrokenPipeError:
        return 0
    return code


if __name__ == "__main__":
    sys.exit(main())
