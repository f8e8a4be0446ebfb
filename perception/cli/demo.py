"""``perception demo``: the whole engine on the shipped demo screen (no phone needed)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from perception.config import TreeConfig
from perception.demo import demo_png, demo_xml
from perception.pipeline import Perceiver
from perception.tree import read_tree


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "demo",
        help="run the engine on the shipped demo screen",
        description="Fuse the shipped demo dump and screenshot and print what the model sees.",
    )
    p.add_argument(
        "--ocr", action="store_true",
        help="also run the pixel channel on the full frame (loads the OCR models)",
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    xml, png = demo_xml(), demo_png()
    # Both configurations read before anything prints: a bad PERCEPTION_* value is one line,
    # not half a demo and then the error.
    tree_config = TreeConfig.from_env()
    fused = Perceiver.from_env()
    t0 = time.perf_counter_ns()
    tree = read_tree(xml, config=tree_config)
    tree_ms = (time.perf_counter_ns() - t0) / 1e6
    print(f"# tree channel: {len(tree.prompt_elements)} elements offered, {tree_ms:.2f} ms")
    print(tree.to_prompt())
    with fused as perceiver:
        t0 = time.perf_counter_ns()
        obs = perceiver.perceive(xml=xml, frame=png)
        fused_ms = (time.perf_counter_ns() - t0) / 1e6
    read_ms = obs.timings_ms.get("read_back")
    read = (
        f" (of which {read_ms:.0f} ms reading labels back off the frame; the first OCR use loads"
        " the models)" if read_ms else ""
    )
    unlisted = sum(not c.listed for c in obs.candidates)
    behind = f" ({unlisted} not in the prompt, such as list items behind a +N)" * bool(unlisted)
    print(
        f"# fused observation: state={obs.state}, tree confidence {obs.tree_confidence:.2f}, "
        f"consistent={obs.consistent}, {len(obs.candidates)} candidates{behind}, "
        f"{fused_ms:.1f} ms{read}"
    )
    print(obs.to_prompt())
    if args.ocr:
        from perception.pixel import read_pixels

        t0 = time.perf_counter_ns()
        pixels = read_pixels(png)
        ocr_ms = (time.perf_counter_ns() - t0) / 1e6
        print(f"# pixel channel: {len(pixels.candidates)} candidates, {ocr_ms:.0f} ms")
        shown = 40
        for c in pixels.candidates[:shown]:
            print(f"  {c.kind:<6} {c.confidence:.2f} {tuple(c.box_px)} {c.text!r}")
        if len(pixels.candidates) > shown:
            print(f"  ... {len(pixels.candidates) - shown} more")
    return 0
