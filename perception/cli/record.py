"""``perception record --serial SERIAL OUT_DIR``: record a session from a live phone.

Two ways to record:

- watch (default): every ``--interval-ms`` the tree is dumped; a step (tree + frame + facts) is
  written whenever the hierarchy changed, until ``--steps`` or ``--duration-s`` or Ctrl-C. The
  user drives the phone by hand; actions are not observable over adb and stay ``null``.
- ``--actions FILE`` (``-`` for stdin): one action per line (``tap X Y``, ``long X Y``,
  ``swipe X1 Y1 X2 Y2 [MS]``, ``text WORDS``, ``key NAME``, ``back``, ``home``, ``open
  PACKAGE[/ACTIVITY]``); each step is captured, the action is sent with ``adb shell input``
  (text that is not printable ASCII through ADB Keyboard; an app started as its launcher icon
  would, :meth:`~perception.sources.device.DeviceSource.start_app`) and recorded as that step's
  action, with the tapped view's bounds as its target (so a replay or the virtual phone can
  follow it).
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from perception.cli.observe import add_device_args, device_config
from perception.cli.options import plural, seconds_or_zero, whole
from perception.errors import DEVICE_GONE, DeviceError, InputError
from perception.sources.base import COMPONENT, PACKAGE, package_of
from perception.sources.recording import (
    ActionKind,
    RecordedAction,
    known_key,
    normalise_key,
    parse_bounds,
)
from perception.types import BoxPx, PointPx

_NODE = re.compile(rb"<node\b[^>]*>")
_ATTR = re.compile(rb'([\w-]+)="([^"]*)"')


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "record",
        help="record a session from a live phone into a folder",
        description=(
            "Record dumps, screenshots and the actions taken between them from a phone over adb "
            "into a folder that replay, export and the virtual phone read."
        ),
    )
    add_device_args(p)
    p.add_argument("out_dir", type=Path,
                   help="the folder to record into: new, or empty (made if missing)")
    p.add_argument("--actions", default=None, help="file of actions to send ('-': stdin)")
    p.add_argument("--steps", type=whole, default=0,
                   help="stop after this many steps (0: no cap); with --actions, the action "
                   "from the last of them is not sent")
    p.add_argument("--duration-s", type=seconds_or_zero, default=0.0,
                   help="watch mode: stop after this many seconds (0: no limit)")
    p.add_argument("--interval-ms", type=whole, default=1000,
                   help="watch mode: dump the tree every this many ms (default 1000)")
    p.add_argument("--settle-ms", type=whole, default=800,
                   help="with --actions: wait this many ms after each sent action before the "
                   "next capture (default 800)")
    p.set_defaults(run=run)


def target_of(xml: bytes, point: PointPx) -> BoxPx | None:
    """The smallest clickable node containing ``point`` (else the smallest node), if any."""
    best: tuple[int, BoxPx] | None = None
    best_any: tuple[int, BoxPx] | None = None
    for m in _NODE.finditer(xml):
        attrs = dict(_ATTR.findall(m.group(0)))
        box = parse_bounds(attrs.get(b"bounds", b"").decode())
        if box is None or box.area <= 0 or not box.contains(point):
            continue
        if best_any is None or box.area < best_any[0]:
            best_any = (box.area, box)
        if attrs.get(b"clickable") == b"true" and (best is None or box.area < best[0]):
            best = (box.area, box)
    chosen = best or best_any
    return chosen[1] if chosen else None


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")

_USAGE = {
    "tap": "tap X Y",
    "long": "long X Y",
    "swipe": "swipe X1 Y1 X2 Y2 [MS]",
    "text": "text WORDS",
    "key": "key NAME",
    "open": "open PACKAGE[/ACTIVITY]",
}


def parse_action(line: str, xml: bytes) -> tuple[RecordedAction, list[str]] | None:
    """An action line -> the recorded action and the ``input`` arguments that perform it
    (None for a blank or ``#`` comment line; :class:`InputError` for a line that is neither).
    No arguments for text that ``input text`` cannot type (anything but printable ASCII): it
    goes through ADB Keyboard (:meth:`~perception.sources.device.DeviceSource.type_text`),
    which refuses when the phone has not selected it."""
    line = line.strip()
    parts = line.split()
    if not parts or parts[0].startswith("#"):
        return None
    verb = parts[0].lower()
    try:
        return _parse_action(verb, line, parts, xml)
    except InputError:
        raise
    except (IndexError, ValueError) as exc:
        usage = _USAGE.get(verb)
        if usage is None:
            raise InputError(
                f"unknown action {line!r} (expected {', '.join(_USAGE.values())}, back or home)"
            ) from exc
        raise InputError(f"{line!r}: expected {usage}") from exc


def _px(text: str) -> int:
    """A coordinate or a duration: a whole number, 0 or more (ValueError otherwise)."""
    if not (text.isascii() and text.isdigit()):
        raise ValueError(text)
    return int(text)


def _parse_action(
    verb: str, line: str, parts: list[str], xml: bytes
) -> tuple[RecordedAction, list[str]]:
    # The checks the agent makes on a model's action (agent.actions), for what a script sends:
    # points on the screen (no negatives), text without control characters, key names Android
    # knows (an unknown one is sent and silently does nothing).
    if len(parts) > {"tap": 3, "long": 3, "swipe": 6, "key": 2, "open": 2}.get(verb, len(parts)):
        raise ValueError(line)
    if verb in {"tap", "long"}:
        point = PointPx(_px(parts[1]), _px(parts[2]))
        kind = ActionKind.TAP if verb == "tap" else ActionKind.LONG_TAP
        action = RecordedAction(kind=kind, point_px=point, target_px=target_of(xml, point),
                                duration_ms=0 if verb == "tap" else 1000)
        if verb == "tap":
            return action, ["tap", str(point.x), str(point.y)]
        x, y = str(point.x), str(point.y)
        return action, ["swipe", x, y, x, y, "1000"]
    if verb == "swipe":
        if len(parts) < 5:
            raise ValueError(line)
        x1, y1, x2, y2 = (_px(v) for v in parts[1:5])
        duration = _px(parts[5]) if len(parts) > 5 else 300
        start = PointPx(x1, y1)
        action = RecordedAction(kind=ActionKind.SWIPE, point_px=start, end_px=PointPx(x2, y2),
                                target_px=target_of(xml, start), duration_ms=duration)
        return action, ["swipe", str(x1), str(y1), str(x2), str(y2), str(duration)]
    if verb == "text":
        text = line.split(None, 1)[1]
        if _CONTROL.search(text):
            raise InputError(f"{line!r}: text holds control characters (enter is `key ENTER`)")
        action = RecordedAction(kind=ActionKind.TEXT, text=text)
        if not (text.isascii() and text.isprintable()):
            return action, []  # typed through ADB Keyboard
        return action, ["text", text.replace(" ", "%s")]
    if verb == "open":
        app = parts[1]
        if not (COMPONENT.fullmatch(app) or PACKAGE.fullmatch(app)):
            raise InputError(f"{line!r}: expected a package (com.android.settings) or a "
                             "package/activity")
        # The component is found on the phone when the line is run (_launcher_component).
        return RecordedAction(kind=ActionKind.INTENT, intent=app), []
    if verb in {"key", "back", "home"}:
        key = normalise_key(parts[1] if verb == "key" else verb)
        if not known_key(key):
            raise InputError(
                f"{line!r}: unknown key {parts[1]!r} (an Android key name such as BACK, HOME, "
                "ENTER, DEL, TAB, VOLUME_UP, with or without KEYCODE_)"
            )
        return RecordedAction(kind=ActionKind.KEY, key=key), ["keyevent", f"KEYCODE_{key}"]
    raise ValueError(verb)


def _read_actions(path: str) -> list[tuple[int, str]] | None:
    """The numbered lines of an ``--actions`` file, each checked before the phone is touched
    (None for ``-``: standard input is read as it comes)."""
    if path == "-":
        return None
    try:
        with open(path, encoding="utf-8") as f:
            lines = list(enumerate(f, 1))
    except OSError as exc:
        raise InputError(f"cannot read --actions {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"cannot read --actions {path}: not UTF-8 text") from exc
    for number, line in lines:
        _checked(path, number, line, b"")
    return lines


def _checked(
    path: str, number: int, line: str, xml: bytes
) -> tuple[RecordedAction, list[str]] | None:
    try:
        return parse_action(line, xml)
    except InputError as exc:
        where = "standard input" if path == "-" else path
        raise InputError(f"--actions {where} line {number}: {exc}") from exc


def run(args: argparse.Namespace) -> int:
    from perception.sources.device import DeviceSource
    from perception.sources.record import RecordingWriter

    # A script that cannot be read or parsed, and a folder that is not new or empty, are
    # refused before the phone is touched. The writer removes the folder again when no step
    # was stored (a failed run would leave a folder that a rerun refuses and nothing reads).
    script = _read_actions(args.actions) if args.actions is not None else None
    config = device_config(args)
    writer = RecordingWriter(args.out_dir, serial=args.serial)
    try:
        with writer:
            with DeviceSource(args.serial, config=config) as source:
                source.wait_ready()
                if args.actions is not None:
                    lines = enumerate(sys.stdin, 1) if script is None else iter(script)
                    _scripted(source, writer, args.actions, lines, args)
                else:
                    _watch(source, writer, args)
    except KeyboardInterrupt as exc:  # --actions, or before watching began: still exit 130
        count = writer.step_count  # the steps stored whole (one in flight is removed)
        exc.add_note(
            f"the partial recording is kept: {plural(count, 'step')} in {args.out_dir}"
            if count else "no step was recorded"
        )
        raise
    count = writer.step_count
    print(f"perception record: {plural(count, 'step')} in {args.out_dir}", file=sys.stderr)
    return 0


def _capture_step(source: Any, writer: Any) -> bytes:
    tree = source.capture_tree()
    frame = source.capture_frame()
    writer.add_step(tree, frame, source.screen_facts(refresh=True))
    xml: bytes = tree.xml
    return xml


def _scripted(
    source: Any, writer: Any, path: str, lines: Iterator[tuple[int, str]],
    args: argparse.Namespace,
) -> None:
    xml = _capture_step(source, writer)
    if args.steps and writer.step_count >= args.steps:
        return  # before the next line is read: no action is sent whose screen is not recorded
    for number, line in lines:
        parsed = _checked(path, number, line, xml)
        if parsed is None:
            continue
        action, input_args = parsed
        if action.kind is ActionKind.INTENT:
            try:
                component = _launcher_component(source, action.intent)
            except InputError as exc:
                where = "standard input" if path == "-" else path
                raise InputError(f"--actions {where} line {number}: {exc}") from exc
            source.start_app(component)
            writer.set_action(replace(action, intent=f"am start -n {component}"))
        else:
            if input_args:
                source.input(*input_args)
            else:
                source.type_text(action.text)
            # Recorded once sent: an action the phone refused (text without ADB Keyboard,
            # an app that would not start) is no "action taken next".
            writer.set_action(action)
        time.sleep(args.settle_ms / 1000)
        xml = _capture_step(source, writer)
        if args.steps and writer.step_count >= args.steps:
            return


def _launcher_component(source: Any, app: str) -> str:
    """``app`` as the component to start: given whole, or the first launcher activity of the
    package (:class:`InputError` when the phone's launcher shows none)."""
    if "/" in app:
        return app
    try:
        listed = source.launchable_apps()
    except DEVICE_GONE:
        raise
    except DeviceError as exc:
        raise InputError(
            f"open {app}: the phone does not list its launcher's apps ({exc}); name the "
            "activity: open PACKAGE/ACTIVITY"
        ) from exc
    found = [c for c in listed if package_of(c) == app]
    if not found:
        raise InputError(
            f"open {app}: the phone's launcher shows no activity of that package (installed? "
            "`adb shell pm list packages` lists what is); name one: open PACKAGE/ACTIVITY"
        )
    component: str = found[0]
    return component


def _watch(source: Any, writer: Any, args: argparse.Namespace) -> None:
    deadline = time.monotonic() + args.duration_s if args.duration_s else None
    last_digest = b""
    try:
        while True:
            t0 = time.monotonic()
            tree = source.capture_tree()
            # The keyboard coming up changes the screen, not the app's hierarchy.
            keyboard = repr(tree.keyboard_px).encode()
            digest = hashlib.blake2b(tree.xml + keyboard, digest_size=16).digest()
            if digest != last_digest:
                frame = source.capture_frame()
                writer.add_step(tree, frame, source.screen_facts(refresh=True))
                last_digest = digest
                print(f"step {writer.step_count - 1}", file=sys.stderr)
            if args.steps and writer.step_count >= args.steps:
                return
            if deadline is not None and time.monotonic() >= deadline:
                return
            time.sleep(max(0.0, args.interval_ms / 1000 - (time.monotonic() - t0)))
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM or SIGHUP: the way to stop watching
        return
