"""``perception-simdevice RECORDING --port PORT``: serve a recording as an adb device.

Then ``adb connect 127.0.0.1:PORT`` and use it like a phone. Faults can be set at start
(``--slow-ms``, ``--idle N|always``, ``--drop screencap|dump|any``, ``--secure``,
``--unauthorized``) or at any time with ``adb -s 127.0.0.1:PORT shell simctl fault K=V``.
The phone can start asleep (``--asleep``: its screen timed out while a model was thinking)
or locked (``--locked``: a swipe lock screen), as ``simctl fault asleep=1 locked=1`` does.
``--keyboard`` brings the on-screen keyboard up on every focused text field (``simctl fault
keyboard=1``): ``dumpsys window displays`` says where, taps on it do not reach the app, BACK
closes it.
``--adb-keyboard installed|active`` gives the phone ADB Keyboard (listed only, or also the
current input method), so typing any text through its broadcasts can be tried without a phone.
"""

from __future__ import annotations

import argparse
import logging
import math
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from perception import fastpath
from perception.errors import PerceptionError
from perception.signals import interrupted, one_line, stop_signals
from perception.simdevice.phone import STORAGE_BYTES, AdbKeyboard, Faults
from perception.simdevice.server import HANDSHAKE_TIMEOUT_S, SimDevice

_DESCRIPTION = """\
Serve a recording (ours or a corpus trace) as an Android phone over the adb protocol.
Then: adb connect 127.0.0.1:PORT, and use it like a phone.

Faults can be set at start (--slow-ms, --idle N|always, --drop screencap|dump|any, --secure,
--unauthorized) or at any time with: adb -s 127.0.0.1:PORT shell simctl fault NAME=VALUE
(simctl clear, simctl state, simctl goto POSITION).

--asleep: the screen is off (black frames, input ignored) until `input keyevent KEYCODE_WAKEUP`;
--locked: a swipe lock screen (input ignored) until `wm dismiss-keyguard`
(or: simctl fault asleep=1 locked=1).

--keyboard: the on-screen keyboard comes up on a focused text field (the bottom 40% of the
screen; a step recorded with a keyboard has it anyway): `dumpsys window displays` says where,
a tap on it does not reach the app, `input keyevent KEYCODE_BACK` closes it
(or: simctl fault keyboard=1).

--adb-keyboard installed: ADB Keyboard is listed by `ime list -a -s` (ime enable + ime set
select it); active: it is already the current input method, so
`am broadcast -a ADB_INPUT_B64 --es msg BASE64` types any text.

Stop it with Ctrl-C, SIGTERM or SIGHUP: its connections are closed, one line on stderr says so
and the exit status is 0, a server's normal end (a signal while the recording is still being
read: 130, 143 or 129, as perception's commands). Exit 2: the recording, a fault or the port
was refused."""


def _port(text: str) -> int:
    """``--port``: 0 (pick a free one) to 65535."""
    if not (text.isascii() and text.isdigit() and int(text) <= 65535):
        raise argparse.ArgumentTypeError(f"expects a port number 0 to 65535, got {text!r}")
    return int(text)


def _storage_mib(text: str) -> int:
    """``--storage-mib``: a whole number of MiB, 0 or more."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"expects a whole number of MiB >= 0, got {text!r}")
    return int(text)


def _ms(text: str) -> int:
    """``--slow-ms``: a whole number of milliseconds, 0 or more."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"expects a whole number of ms >= 0, got {text!r}")
    return int(text)


def _seconds(text: str) -> float:
    """``--handshake-timeout-s``: a finite number of seconds above 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expects a number of seconds > 0, got {text!r}")
    return value


_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def banner(recording: str, steps: int, serial: str) -> str:
    """The line printed once serving (tests read the serial from it)."""
    count = f"{steps} step" if steps == 1 else f"{steps} steps"
    return (
        f"perception-simdevice: serving {recording} ({count}) on {serial}; "
        f"run: adb connect {serial}"
    )


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
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("recording", help="a recording folder or a corpus trace folder")
    parser.add_argument(
        "--host", default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 lets other "
        "machines connect)",
    )
    parser.add_argument(
        "--port", type=_port, default=5555,
        help="TCP port (default 5555; 0 picks a free one). Every adb server on this machine "
        "probes the odd ports 5555-5585 for emulators, so a phone on one of them also shows "
        "up in each by itself, as emulator-<port-1> (emulator-5554 on 5555); pick another "
        "port, or 0, to keep it to the adb server you connect it to",
    )
    parser.add_argument(
        "--model", default="PerceptionSim",
        help="the model the phone reports (ro.product.model, `adb devices -l`; default "
        "PerceptionSim)",
    )
    parser.add_argument("--slow-ms", type=_ms, default=0, help="delay every command (ms)")
    parser.add_argument(
        "--idle", default="0", type=_idle, metavar="N|always",
        help="dumps that fail with the idle error (or: always)",
    )
    parser.add_argument(
        "--drop",
        default="",
        choices=["screencap", "dump", "any"],
        help="drop the connection in the middle of the next such transfer (default: none)",
    )
    parser.add_argument("--secure", action="store_true", help="serve black (FLAG_SECURE) frames")
    parser.add_argument("--unauthorized", action="store_true", help="never authorise the host")
    parser.add_argument(
        "--asleep", action="store_true", help="start with the screen off (a wake key turns it on)"
    )
    parser.add_argument(
        "--locked", action="store_true", help="start on a lock screen (wm dismiss-keyguard)"
    )
    parser.add_argument(
        "--keyboard", action="store_true",
        help="the on-screen keyboard comes up on a focused text field (simctl fault keyboard=1)",
    )
    parser.add_argument(
        "--adb-keyboard",
        default=AdbKeyboard.ABSENT.value,
        choices=[mode.value for mode in AdbKeyboard],
        help="ADB Keyboard: absent (default), installed (not enabled) or active (current IME)",
    )
    parser.add_argument(
        "--storage-mib", type=_storage_mib, default=STORAGE_BYTES // (1024 * 1024),
        metavar="MIB",
        help="room for the files clients write (dumps, screenshots, redirects, pushes; kept "
        f"in memory; default {STORAGE_BYTES // (1024 * 1024)}): beyond it writes fail with "
        "'No space left on device'",
    )
    parser.add_argument(
        "--handshake-timeout-s", type=_seconds, default=HANDSHAKE_TIMEOUT_S, metavar="S",
        help="close a connection that has not sent adb's CNXN within S seconds (default "
        f"{HANDSHAKE_TIMEOUT_S:g}; an adb server sends it at once)",
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Serve until Ctrl-C, SIGTERM or SIGHUP: the normal end of a server, so one line and exit
    0, after the phone is stopped (its connections closed). A signal while the recording is
    still read ends it as perception's commands end: one line, 128 + the signal."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    previous = signal.getsignal(signal.SIGINT)
    try:
        # SIGTERM and SIGHUP raise as Ctrl-C does while the recording is read (perception's
        # commands do the same); their handlers are as they were after it, Ctrl-C's too
        # (main() called in-process, by a test, returns).
        with stop_signals():
            return _serve(args)
    finally:
        signal.signal(signal.SIGINT, previous)


def _serve(args: argparse.Namespace) -> int:
    faults = Faults()
    stop = threading.Event()
    received: list[signal.Signals] = []

    def _on_signal(signum: int, frame: FrameType | None) -> None:
        received.append(signal.Signals(signum))
        stop.set()

    try:
        fastpath.check()  # a bad PERCEPTION_FASTPATH: one line, after --help
        faults.apply("slow_ms", str(args.slow_ms))
        faults.apply("idle", args.idle)
        faults.apply("drop", args.drop)
        faults.secure = args.secure
        faults.unauthorized = args.unauthorized
        faults.asleep = args.asleep
        faults.locked = args.locked
        faults.keyboard = args.keyboard
        device = SimDevice(
            args.recording, host=args.host, port=args.port, faults=faults, model=args.model,
            adb_keyboard=args.adb_keyboard, storage_bytes=args.storage_mib * 1024 * 1024,
            handshake_timeout_s=args.handshake_timeout_s,
        )
        for sig in _STOP_SIGNALS:  # from here a signal only asks the serving loop to stop
            signal.signal(sig, _on_signal)
    except (PerceptionError, ValueError, OSError) as exc:  # a recording, a fault, the port
        print(f"perception-simdevice: {type(exc).__name__}: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # while reading a large recording: nothing served yet
        what, code = interrupted(exc)
        print(f"perception-simdevice: {what}", file=sys.stderr)
        return code
    try:
        device.start()
        steps = len(device.phone.recording.steps)
        print(banner(args.recording, steps, device.serial), flush=True)
        stop.wait()
    finally:
        device.stop()
    print(f"perception-simdevice: stopped by {received[0].name}; no longer serving "
          f"{device.serial}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
