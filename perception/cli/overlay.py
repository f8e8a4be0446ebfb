"""``perception overlay SCREEN.png [--dump DUMP.xml] -o OUT.png|.jpg``: what the arbiter decided.

Draws the fused observation over the screenshot (``perception.debug.draw_overlay``): candidate
boxes coloured by source with the prompt's ids, and a band with the state, the confidences and
the factors behind them. Without ``--dump`` the observation is the pixel channel's alone; a
dump that does not parse is an error (exit 2), not a pixel-only overlay. Either SCREEN or the
dump (not both) may be ``-``, standard input, as ``tree -`` and ``pixels -`` read it.

``--marks [--max-side N]`` writes the set-of-marks image a vision-language model is sent instead
(``perception.debug.draw_marks``): the screen's own pixels, no band, the prompt's ids only on
what an agent may act on, scaled down so the longer side is at most N pixels.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from perception.cli.options import box, same_file, write_whole
from perception.config import TreeConfig
from perception.errors import InputError, TreeError


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "overlay",
        help="draw an observation over its screenshot (PNG or JPEG out)",
        description=(
            "Fuse a screenshot (and its dump, if given) and draw every candidate over it: its "
            "id as the prompt shows it, coloured by source, with the arbiter's state."
        ),
    )
    p.add_argument("screen", type=Path, help="PNG, JPEG or raw screencap file ('-': stdin)")
    p.add_argument("--dump", type=Path, default=None,
                   help="the uiautomator dump of that moment ('-': stdin, when SCREEN is a file)")
    p.add_argument("-o", "--out", type=_image_path, required=True,
                   help="where to write the image: .png, .jpg or .jpeg (encoded by the suffix)")
    p.add_argument("--hidden", action="store_true",
                   help="also draw what the prompt leaves out: occluded and unlisted (grey)")
    p.add_argument(
        "--marks", action="store_true",
        help="write the set-of-marks image for a vision-language model instead: the screen's "
        "own size, no band, the prompt's ids on what an agent may act on",
    )
    p.add_argument(
        "--max-side", type=_max_side, metavar="N", default=None,
        help="with --marks: scale the image down so its longer side is at most N px (1280 "
        "for most models)",
    )
    p.add_argument("--json", action="store_true", help="also print the observation's record")
    p.add_argument(
        "--keyboard", type=box, metavar="L,T,R,B",
        help="the on-screen keyboard's box in pixels, where the dump does not hold it",
    )
    p.set_defaults(run=run, parser=p)


_SUFFIXES = (".png", ".jpg", ".jpeg")


def _image_path(text: str) -> Path:
    """``-o``: a name whose suffix says the format (PNG bytes under .jpg fooled viewers)."""
    path = Path(text)
    if path.suffix.lower() not in _SUFFIXES:
        raise argparse.ArgumentTypeError(
            f"expects a file name ending in {', '.join(_SUFFIXES)}, got {text!r}"
        )
    return path


def _max_side(text: str) -> int:
    """``--max-side``: a whole number of pixels, no smaller than a mark's label needs."""
    from perception.debug import MIN_MAX_SIDE_PX

    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < MIN_MAX_SIDE_PX:
        raise argparse.ArgumentTypeError(
            f"expects a whole number of pixels, at least {MIN_MAX_SIDE_PX}, got {text!r}"
        )
    return value


_STDIN = Path("-")


def _check_dump(path: Path, xml: bytes, config: TreeConfig) -> None:
    """A dump that does not parse is the user's error, not a pixel-only overlay: fusion would
    only note it ("tree channel failed"), so its typed error surfaces here, naming the file."""
    from perception.tree import read_tree

    try:
        read_tree(xml, config=config)
    except TreeError as exc:
        where = "standard input" if path == _STDIN else str(path)
        raise type(exc)(f"{where}: {exc}") from exc


def run(args: argparse.Namespace) -> int:
    import cv2

    from perception.cli.tree import read_dump_file
    from perception.config import PixelConfig
    from perception.debug import draw_marks, draw_overlay, record
    from perception.pipeline import Perceiver, PixelChannel
    from perception.pixel import PixelReader
    from perception.pixel.frame import read_frame_file

    if args.max_side is not None and not args.marks:
        args.parser.error("--max-side scales the --marks image; add --marks")
    if args.marks and args.hidden:
        args.parser.error("--marks draws only what an agent may act on; drop --hidden")
    if args.screen == _STDIN and args.dump == _STDIN:
        args.parser.error("SCREEN and --dump cannot both be '-' (standard input): give one "
                          "of them as a file")
    for given, name in ((args.screen, "SCREEN"), (args.dump, "--dump")):
        if given is not None and given != _STDIN and same_file(args.out, given):
            args.parser.error(
                f"-o {args.out} is the {name} file: it would be overwritten; write the "
                "overlay to another file"
            )
    # Both read to their size limits: /dev/zero is refused, not read until memory runs out.
    # '-' is standard input, for one of them (as `tree -` and `pixels -` read it).
    pixel_config = PixelConfig.from_env()
    frame = read_frame_file(
        sys.stdin.buffer if args.screen == _STDIN else args.screen, config=pixel_config
    )
    tree_config = TreeConfig.from_env()
    xml = None
    if args.dump is not None:
        xml = read_dump_file(sys.stdin.buffer if args.dump == _STDIN else args.dump, tree_config)
    if xml is not None:
        _check_dump(args.dump, xml, tree_config)
    with PixelReader(pixel_config) as reader:
        obs = Perceiver.from_env(pixels=PixelChannel(reader)).perceive(
            xml=xml, frame=frame, keyboard=args.keyboard
        )
    if args.marks:
        image = draw_marks(obs, frame, max_side_px=args.max_side)
    else:
        image = draw_overlay(obs, frame, hidden=args.hidden)
    ok, encoded = cv2.imencode(args.out.suffix.lower(), image)
    if not ok:
        raise InputError(f"could not encode the overlay for {args.out}")
    try:
        write_whole(args.out, encoded.tobytes())  # no half image left by a failed write
    except OSError as exc:
        raise InputError(f"cannot write {args.out}: {exc.strerror}") from exc
    if args.json:
        print(json.dumps(record(obs, screen_file=str(args.screen)), ensure_ascii=False))
    return 0
