"""``perception tree DUMP.xml``: print the compact JSON of a uiautomator dump."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, BinaryIO

from perception.cli.options import box, screen_size
from perception.config import TreeConfig
from perception.geometry import box_px_to_pm
from perception.tree import read_tree
from perception.tree.parse import read_dump


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "tree",
        help="print the compact element list of a uiautomator dump",
        description="Read a uiautomator dump and print the compact JSON the model reads.",
    )
    p.add_argument("dump", help="path of the dump XML, or - for standard input")
    p.add_argument("--no-coords", action="store_true", help="id-only form, without positions")
    p.add_argument(
        "--elements", action="store_true",
        help="print every element with all its fields (including occluded and hidden ones)",
    )
    p.add_argument("--health", action="store_true", help="also print the tree health signals")
    p.add_argument("--screen", type=screen_size, metavar="WxH",
                   help="device screen size in pixels (default: from the dump)")
    p.add_argument(
        "--keyboard", type=box, metavar="L,T,R,B",
        help="the on-screen keyboard's box in pixels, where the dump does not hold it (dumpsys "
        "window displays: the ime InsetsSource's frame); what it covers is left out",
    )
    p.set_defaults(run=run)


def read_dump_file(source: Path | BinaryIO, config: TreeConfig) -> bytes:
    """A dump's bytes from a file or a stream (standard input), read to at most what the
    parser accepts (:func:`perception.tree.parse.read_dump`)."""
    return read_dump(str(source) if isinstance(source, Path) else source, config.max_input_bytes)


def run(args: argparse.Namespace) -> int:
    config = TreeConfig.from_env()
    data = read_dump_file(sys.stdin.buffer if args.dump == "-" else Path(args.dump), config)
    tree = read_tree(data, screen=args.screen, config=config, keyboard=args.keyboard)
    if tree.screen_estimated:
        s = tree.screen
        print(
            f"perception: the dump holds only a floating window; coordinates assume a "
            f"{s.width_px}x{s.height_px} screen (pass --screen WxH for the real one)",
            file=sys.stderr,
        )
    if tree.raw.unbounded:
        print(
            f"perception: {tree.raw.unbounded} of {tree.raw.count} nodes of the dump have no "
            "usable bounds ('[left,top][right,bottom]' in whole pixels) and are left out",
            file=sys.stderr,
        )
    if args.elements:
        hidden = tree.hidden_ids
        rows = [
            {
                "id": e.id,
                "kind": e.kind,
                "text": e.text,
                "box_px": list(e.box_px),
                "box_pm": list(box_px_to_pm(e.box_px, tree.screen)),
                "flags": [f.name.lower() for f in type(e.flags) if f.name and f in e.flags],
                "resource_id": e.resource_id,
                "class": e.class_name,
                "more": e.more,
                "hidden": e.id in hidden,
            }
            for e in tree.elements
        ]
        print(json.dumps(rows, ensure_ascii=False, indent=1))
    else:
        print(tree.to_prompt(coords=not args.no_coords))
    if args.health:
        from dataclasses import asdict

        print(json.dumps(asdict(tree.health)), file=sys.stderr)
    return 0
