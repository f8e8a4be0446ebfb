"""``perception-simdevice RECORDING --port PORT``: serve a recording as an adb device.

Then ``adb connect 127.0.0.1:PORT`` and use it like a phone. Faults can be set at start
(``--slow-ms``, ``--idle N|always``, ``--drop screencap|dump|any``, ``--secure``,
``--unauthorized``) or at any time with ``adb -s 127.0.0.1:PORT shell simctl fault K=V``.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from perception.errors import PerceptionError
from perception.simdevice.phone import Faults
from perception.simdevice.server import SimDevice


def _idle(text: str) -> str:
    """``--idle``: a count of dumps (0 or more) or ``always``, checked while parsing."""
    if text != "always" and not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(
            f"expected a number of dumps (0 or more) or 'always', got {text!r}"
        )
    return text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="perception-simdevice",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("recording", help="a recording folder or a corpus trace folder")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5555, help="TCP port (0: pick a free one)")
    parser.add_argument("--model", default="PerceptionSim")
    parser.add_argument("--slow-ms", type=int, default=0, help="delay every command")
    parser.add_argument(
        "--idle", default="0", type=_idle, metavar="N|always",
        help="dumps that fail with the idle error (or: always)",
    )
    parser.add_argument(
        "--drop",
        default="",
        choices=["", "screencap", "dump", "any"],
        help="drop the connection in the middle of the next such transfer",
    )
    parser.add_argument("--secure", action="store_true", help="serve black (FLAG_SECURE) frames")
    parser.add_argument("--unauthorized", action="store_true", help="never authorise the host")
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    faults = Faults()
    try:
        faults.apply("slow_ms", str(args.slow_ms))
        faults.apply("idle", args.idle)
        faults.apply("drop", args.drop)
        faults.secure = args.secure
        faults.unauthorized = args.unauthorized
        device = SimDevice(
            args.recording, host=args.host, port=args.port, faults=faults, model=args.model
        )
    except (PerceptionError, ValueError) as exc:
        print(f"perception-simdevice: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    device.start()
    steps = len(device.phone.recording.steps)
    print(
        f"perception-simdevice: serving {args.recording} ({steps} steps) on {device.serial}; "
        f"run: adb connect {device.serial}",
        flush=True,
    )
    stop.wait()
    device.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
