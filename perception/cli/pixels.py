"""``perception pixels SCREEN.png``: the pixel channel's candidates and frame flags as JSON."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from perception.cli.options import whole
from perception.config import PixelConfig
from perception.pixel import PixelReader, Pixels
from perception.pixel.anchors import TOGGLE_KINDS
from perception.pixel.frame import read_frame_file
from perception.types import BoxPx


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "pixels",
        help="read a screenshot: OCR + OpenCV anchors -> JSON",
        description=(
            "Read a screenshot without its tree: frame flags, OCR lines and the candidates the "
            "pixel channel offers, as JSON."
        ),
    )
    p.add_argument("screen", type=Path, help="PNG, JPEG or raw screencap file ('-' for stdin)")
    p.add_argument(
        "--roi",
        action="append",
        type=_box,
        default=[],
        metavar="L,T,R,B",
        help="OCR only this region in device px (repeatable)",
    )
    p.add_argument("--no-ocr", action="store_true", help="flags and anchors only")
    p.add_argument("--anchors", action="store_true", help="also print every anchor")
    p.add_argument("--indent", type=whole, default=1,
                   help="spaces of JSON indent per level (default 1; 0: one line)")
    p.set_defaults(run=run)


def _box(text: str) -> BoxPx:
    try:
        parts = [int(v) for v in text.split(",")]
    except ValueError:
        parts = []
    if len(parts) != 4:
        raise argparse.ArgumentTypeError(f"expects L,T,R,B, got {text!r}")
    left, top, right, bottom = parts
    if not (0 <= left < right and 0 <= top < bottom):
        raise argparse.ArgumentTypeError(
            f"expects L,T,R,B with 0 <= L < R and 0 <= T < B (device px), got {text!r}"
        )
    return BoxPx(left, top, right, bottom)


def to_json(pixels: Pixels, *, anchors: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "size": [pixels.size.width_px, pixels.size.height_px],
        "flags": asdict(pixels.flags),
        "ocr": pixels.ocr,
        # Text lines found and not read, past PixelConfig.max_ocr_lines (the lowest).
        "unread_lines": pixels.unread_lines,
        "candidates": [
            {
                "id": i,
                "kind": c.kind.value,
                "text": c.text,
                "box_px": list(c.box_px),
                "confidence": c.confidence,
                "block": c.block,
                **({"glyph": c.glyph} if c.glyph else {}),  # the icon it draws: ×, ←, ⋮, search
                # a switch, checkbox or radio whose state the pixels tell (null: they do not)
                **({"checked": c.checked} if c.kind in TOGGLE_KINDS else {}),
            }
            for i, c in enumerate(pixels.candidates)
        ],
        "blocks": [
            {"text": b.text, "box_px": list(b.box_px), "lines": list(b.lines)}
            for b in pixels.blocks
            if len(b.lines) > 1
        ],
        "timings_ms": dict(pixels.timings_ms),
    }
    if anchors:
        out["anchors"] = [
            {
                "kind": a.kind.value, "box_px": list(a.box_px), "score": a.score,
                **({"checked": a.checked} if a.kind in TOGGLE_KINDS else {}),
            }
            for a in pixels.anchors
        ]
    return out


def run(args: argparse.Namespace) -> int:
    config = PixelConfig.from_env()
    # Read here, to at most the largest capture: /dev/zero or an endless pipe is refused.
    data = read_frame_file(sys.stdin.buffer if str(args.screen) == "-" else args.screen,
                           config=config)
    reader = PixelReader(config)
    regions = args.roi or None
    pixels = reader.read(data, regions=regions, ocr=not args.no_ocr)
    json.dump(
        to_json(pixels, anchors=args.anchors),
        sys.stdout,
        ensure_ascii=False,
        indent=args.indent or None,
    )
    sys.stdout.write("\n")
    return 0
