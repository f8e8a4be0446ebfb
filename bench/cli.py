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

from perception.cli.main import run_command

SUBCOMMANDS = ("tree", "pixels", "device", "fusion", "agent")

DESCRIPTION = (
    "Measure perception on recorded screens and phones: tree, pixel and fusion latency and "
    "quality on a corpus, the agent's prompt tokens and per-step overhead, and capture latency, "
    "observation rate and memory on a phone (or a virtual phone). Each subcommand prints a "
    "summary and writes its full report as JSON with --json."
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="perception-bench", description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMANDS:
        importlib.import_module(f"bench.{name}").add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command("perception-bench", build_parser, argv)


if __name__ == "__main__":
    sys.exit(main())
