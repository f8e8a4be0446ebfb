"""``perception-bench``: performance and quality figures, measured as ratios in one run.

Subcommands live in ``bench.<name>`` modules, each exposing ``add_parser(subparsers)`` and
``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

SUBCOMMANDS = ("tree", "pixels", "device", "fusion", "agent")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="perception-bench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in SUBCOMMANDS:
        importlib.import_module(f"bench.{name}").add_parser(sub)
    args = parser.parse_args(argv)
    code: int = args.run(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
