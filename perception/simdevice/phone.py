"""The simulated phone behind the adb transport: a recording, a tiny shell and fault switches.

Commands understood (enough for adbutils, uiautomator2-style tools and our device source):
``uiautomator dump [--compressed] [PATH|/dev/tty]``, ``screencap [-p] [PATH]``, ``wm size``,
``wm density``, ``dumpsys window [...]``, ``dumpsys display``, ``dumpsys activity ...``,
``getprop [NAME]``, ``input [SOURCE] tap X Y | swipe X1 Y1 X2 Y2 [MS] | text T | keyevent K..``,
``am start ...``, ``monkey -p PKG ...``, ``cat``, ``rm``, ``ls``, ``echo``, ``sleep``, ``true``,
``false``, ``settings get``, joined with ``;``, ``&&``, ``||``, ``|`` (``grep``/``head``) and
``>``/``2>&1`` redirects. Unknown commands answer like ``sh``: ``X: not found``, exit 127.

Control command (the simulator's own, not Android): ``simctl fault NAME=VALUE ...``,
``simctl clear``, ``simctl state``, ``simctl goto POSITION``. Faults (see :class:`Faults`):
``slow_ms=N`` (every command waits N ms), ``dump_slow_ms=N`` (only dumps), ``idle=N|always``
(the next N dumps print ``ERROR: could not get idle state.``), ``drop=screencap|dump|any``
(the next such transfer drops the TCP connection half-way), ``secure=1`` (black frames, as
FLAG_SECURE windows give), ``unauthorized=1`` (new connections are refused authorisation),
``multi_display=1`` (``screencap`` without ``-d`` first warns on stderr that several displays
exist, as on foldables and Android 12+ emulators; ``exec:`` merges it into the image bytes),
``capture_fail=1`` (``screencap`` prints ``Screen capture failed`` and no image).
"""

from __future__ import annotations

import io
import logging
import shlex
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field

import cv2
import numpy as np
import numpy.typing as npt

from perception.errors import RecordingError
from perception.sources.base import encode_raw_screencap
from perception.sources.recording import RecordedStep, Recording
from perception.sources.replay import Navigator
from perception.types import PointPx, ScreenSize

log = logging.getLogger(__name__)

IDLE_ERROR = b"ERROR: could not get idle state.\n"
MULTI_DISPLAY_WARNING = (
    b"[Warning] Multiple displays were found, but no display id was specified! Defaulting to "
    b"the first display found, however this default is not guaranteed to be consistent across "
    b"captures. A display id should be specified.\n"
    b"A display ID can be specified with the [-d display-id] option.\n"
    b'See "dumpsys SurfaceFlinger --display-id" for valid display IDs.\n'
)
CAPTURE_FAILED = b"Screen capture failed: -1\n"
DEFAULT_DUMP_PATH = "/sdcard/window_dump.xml"
MAX_SLEEP_S = 5.0


def _count(name: str, value: str, alternatives: str = "") -> int:
    """A fault's count or duration: a whole number, 0 or more (ValueError naming the fault;
    a negative one is refused, not clamped to 0)."""
    text = value.strip()
    if not (text.isascii() and text.isdigit()):
        extra = f" {alternatives}" if alternatives else ""
        raise ValueError(f"{name}={value!r}: expected a whole number >= 0{extra}")
    return int(text)


@dataclass(slots=True)
class Faults:
    """Mutable fault switches, shared by every connection of one simulated phone."""

    slow_ms: int = 0
    dump_slow_ms: int = 0
    """Extra delay of ``uiautomator dump`` only (a dump stuck on an animation)."""
    idle_failures: int = 0
    """Dumps left to fail with the idle-state error; -1 means always."""
    drop: str = ""
    """``screencap``, ``dump`` or ``any``: the next such transfer drops the connection."""
    secure: bool = False
    unauthorized: bool = False
    multi_display: bool = False
    """``screencap`` without ``-d`` warns on stderr before the image (several displays)."""
    capture_fail: bool = False
    """``screencap`` fails with a message and no image."""

    def apply(self, name: str, value: str) -> None:
        """Set one fault from ``simctl fault NAME=VALUE`` (ValueError for an unknown one)."""
        if name == "slow_ms":
            self.slow_ms = _count(name, value)
        elif name == "dump_slow_ms":
            self.dump_slow_ms = _count(name, value)
        elif name == "idle":
            self.idle_failures = -1 if value == "always" else _count(name, value, "or 'always'")
        elif name == "drop":
            if value not in {"", "screencap", "dump", "any"}:
                raise ValueError(f"drop={value!r}: expected screencap, dump or any")
            self.drop = value
        elif name in _SWITCHES:
            setattr(self, name, value.lower() in {"1", "true", "yes", "on"})
        else:
            raise ValueError(f"unknown fault {name!r}")

    def describe(self) -> str:
        return (
            f"slow_ms={self.slow_ms} dump_slow_ms={self.dump_slow_ms} idle={self.idle_failures} "
            f"drop={self.drop or '-'} "
            f"secure={int(self.secure)} unauthorized={int(self.unauthorized)} "
            f"multi_display={int(self.multi_display)} capture_fail={int(self.capture_fail)}"
        )


_SWITCHES = frozenset({"secure", "unauthorized", "multi_display", "capture_fail"})
"""The faults that are on or off (``1``, ``true``, ``yes`` or ``on`` is on)."""


@dataclass(slots=True)
class Result:
    stdout: bytes = b""
    stderr: bytes = b""
    code: int = 0
    drop_after: int | None = None
    """Drop the connection after this many output bytes (the ``drop`` fault)."""
    stderr_first: bool = False
    """stderr was written before stdout (their order where a stream merges them)."""


@dataclass(slots=True)
class _Files:
    data: dict[str, bytes] = field(default_factory=dict)
    mtime: dict[str, int] = field(default_factory=dict)

    def write(self, path: str, content: bytes) -> None:
        self.data[path] = content
        self.mtime[path] = int(time.time())


class Phone:
    """One simulated phone: a recording walked by input events, a file store and faults."""

    def __init__(
        self,
        recording: Recording,
        *,
        serial: str = "perception-sim",
        model: str = "PerceptionSim",
        faults: Faults | None = None,
    ) -> None:
        self.recording = recording
        self.navigator = Navigator(recording)
        self.serial = serial
        self.model = model
        self.faults = faults or Faults()
        self.files = _Files()
        self._lock = threading.Lock()
        self._frames: OrderedDict[tuple[int, bool], npt.NDArray[np.uint8]] = OrderedDict()
        self._raw: OrderedDict[tuple[int, bool], bytes] = OrderedDict()
        self._dump_paths: set[str] = set()
        self.events: list[str] = []
        """Every input event received, in order (tests and the bench read it)."""
        self.stopping = threading.Event()
        """Set when the server stops: simulated delays end at once (commands finish)."""

    # ----- screen state -------------------------------------------------------------------

    @property
    def step(self) -> RecordedStep:
        return self.navigator.current

    @property
    def screen(self) -> ScreenSize:
        step = self.step
        if step.screen is not None:
            return step.screen
        return ScreenSize(*self._pixels(step, False).shape[1::-1])

    def _pixels(self, step: RecordedStep, secure: bool) -> npt.NDArray[np.uint8]:
        key = (self.navigator.position, secure)
        with self._lock:
            cached = self._frames.get(key)
            if cached is not None:
                self._frames.move_to_end(key)
                return cached
        if step.frame_path is None:
            raise RecordingError(f"step {step.step} has no frame to serve")
        image = cv2.imread(str(step.frame_path), cv2.IMREAD_COLOR)
        if image is None:
            raise RecordingError(f"{step.frame_path}: cannot decode")
        pixels: npt.NDArray[np.uint8] = (
            np.zeros_like(image) if secure else np.asarray(image, dtype=np.uint8)
        )
        with self._lock:
            self._frames[key] = pixels
            while len(self._frames) > 4:
                self._frames.popitem(last=False)
        return pixels

    def frame_png(self) -> bytes:
        step = self.step
        if (
            not self.faults.secure
            and step.frame_path is not None
            and step.frame_path.suffix.lower() == ".png"
        ):
            return step.frame_path.read_bytes()
        ok, buf = cv2.imencode(".png", self._pixels(step, self.faults.secure))
        if not ok:
            raise RecordingError("PNG encoding failed")
        return buf.tobytes()

    def frame_raw(self) -> bytes:
        key = (self.navigator.position, self.faults.secure)
        with self._lock:
            cached = self._raw.get(key)
        if cached is None:
            cached = encode_raw_screencap(self._pixels(self.step, self.faults.secure))
            with self._lock:
                self._raw[key] = cached
                while len(self._raw) > 2:
                    self._raw.popitem(last=False)
        return cached

    # ----- the shell ----------------------------------------------------------------------

    def run(self, command_line: str) -> Result:
        """Run a shell command line; returns merged-ready stdout/stderr and the exit code."""
        if self.faults.slow_ms:
            self.stopping.wait(self.faults.slow_ms / 1000)
        try:
            tokens = list(_lex(command_line))
        except ValueError as exc:
            return Result(stderr=f"/system/bin/sh: syntax error: {exc}\n".encode(), code=2)
        out = Result()
        last_code = 0
        chain: list[list[str]] = []
        connector = ";"
        i = 0
        while i <= len(tokens):
            tok = tokens[i] if i < len(tokens) else ";"
            if tok in {";", "&&", "||"}:
                run_it = (
                    connector == ";"
                    or (connector == "&&" and last_code == 0)
                    or (connector == "||" and last_code != 0)
                )
                if chain and run_it:
                    piece = self._pipeline(chain, last_code)
                    out.stdout += piece.stdout
                    out.stderr += piece.stderr
                    if piece.drop_after is not None and out.drop_after is None:
                        out.drop_after = len(out.stdout) - len(piece.stdout) + piece.drop_after
                    last_code = piece.code
                    out.stderr_first = out.stderr_first or piece.stderr_first
                chain = []
                connector = tok
            elif tok == "|":
                chain.append([])
            else:
                if not chain:
                    chain.append([])
                chain[-1].append(tok)
            i += 1
        out.code = last_code
        return out

    def _pipeline(self, chain: list[list[str]], last_code: int) -> Result:
        data_in = b""
        result = Result()
        for argv in chain:
            argv, target, merge_err, quiet_err = _redirects(argv)
            argv = [a.replace("$?", str(last_code)) for a in argv]
            result = self._command(argv, data_in) if argv else Result()
            if merge_err:
                result.stdout += result.stderr
                result.stderr = b""
            if quiet_err:
                result.stderr = b""
            if target is not None:
                if target != "/dev/null":
                    self.files.write(target, result.stdout)
                result.stdout = b""
                result.drop_after = None
            data_in = result.stdout
        return result

    def _command(self, argv: list[str], data_in: bytes) -> Result:
        name, args = argv[0], argv[1:]
        handler = getattr(self, f"_cmd_{name.replace('-', '_')}", None)
        if handler is None:
            return Result(stderr=f"/system/bin/sh: {name}: not found\n".encode(), code=127)
        try:
            result: Result = handler(args, data_in)
        except (ValueError, IndexError, ArithmeticError) as exc:  # bad arguments
            return Result(stderr=f"{name}: {exc}\n".encode(), code=1)
        return result

    # simple utilities

    def _cmd_echo(self, args: list[str], data_in: bytes) -> Result:
        if args[:1] == ["-n"]:
            return Result(stdout=" ".join(args[1:]).encode())
        return Result(stdout=(" ".join(args) + "\n").encode())

    def _cmd_true(self, args: list[str], data_in: bytes) -> Result:
        return Result()

    def _cmd_false(self, args: list[str], data_in: bytes) -> Result:
        return Result(code=1)

    def _cmd_sleep(self, args: list[str], data_in: bytes) -> Result:
        seconds = float(args[0])
        if not 0 <= seconds < float("inf"):
            raise ValueError(f"invalid number '{args[0]}'")
        self.stopping.wait(min(MAX_SLEEP_S, seconds))
        return Result()

    def _cmd_cat(self, args: list[str], data_in: bytes) -> Result:
        if not args:
            return Result(stdout=data_in)
        out = Result()
        for path in args:
            if path in self.files.data:
                if path in self._dump_paths and self._take_drop("dump"):
                    out.drop_after = len(out.stdout) + max(1, len(self.files.data[path]) // 2)
                out.stdout += self.files.data[path]
            else:
                out.stderr += f"cat: {path}: No such file or directory\n".encode()
                out.code = 1
        return out

    def _cmd_rm(self, args: list[str], data_in: bytes) -> Result:
        force = any(a.startswith("-") and "f" in a for a in args)
        out = Result()
        for path in (a for a in args if not a.startswith("-")):
            if self.files.data.pop(path, None) is None and not force:
                out.stderr += f"rm: {path}: No such file or directory\n".encode()
                out.code = 1
            self.files.mtime.pop(path, None)
            self._dump_paths.discard(path)
        return out

    def _cmd_ls(self, args: list[str], data_in: bytes) -> Result:
        paths = [a for a in args if not a.startswith("-")]
        if not paths:
            return Result(stdout="".join(f"{p}\n" for p in sorted(self.files.data)).encode())
        out = Result()
        for path in paths:
            hits = sorted(p for p in self.files.data if p == path or p.startswith(path + "/"))
            if not hits:
                out.stderr += f"ls: {path}: No such file or directory\n".encode()
                out.code = 1
            out.stdout += "".join(f"{p}\n" for p in hits).encode()
        return out

    def _cmd_grep(self, args: list[str], data_in: bytes) -> Result:
        pattern = next((a for a in args if not a.startswith("-")), "").encode()
        lines = [ln for ln in data_in.splitlines(keepends=True) if pattern in ln]
        return Result(stdout=b"".join(lines), code=0 if lines else 1)

    def _cmd_head(self, args: list[str], data_in: bytes) -> Result:
        count = 10
        if args[:1] == ["-n"] and len(args) > 1:
            count = int(args[1])
        elif args and args[0].startswith("-") and args[0][1:].isdigit():
            count = int(args[0][1:])
        return Result(stdout=b"".join(data_in.splitlines(keepends=True)[:count]))

    def _cmd_settings(self, args: list[str], data_in: bytes) -> Result:
        return Result(stdout=b"null\n") if args[:1] == ["get"] else Result()

    # Android tools

    def _cmd_getprop(self, args: list[str], data_in: bytes) -> Result:
        props = self.props()
        if args:
            return Result(stdout=(props.get(args[0], "") + "\n").encode())
        return Result(stdout="".join(f"[{k}]: [{v}]\n" for k, v in props.items()).encode())

    def props(self) -> dict[str, str]:
        return {
            "ro.build.version.sdk": "30",
            "ro.build.version.release": "11",
            "ro.product.model": self.model,
            "ro.product.name": "perception_sim",
            "ro.product.device": "perception_sim",
            "ro.product.manufacturer": "perception",
            "ro.product.brand": "perception",
            "ro.product.cpu.abi": "x86_64",
            "ro.serialno": self.serial,
            "ro.sf.lcd_density": str(self.recording.density_dpi),
            "sys.boot_completed": "1",
        }

    def _cmd_uiautomator(self, args: list[str], data_in: bytes) -> Result:
        if not args or args[0] != "dump":
            return Result(stderr=b"Usage: uiautomator dump [--compressed] [file]\n", code=1)
        path = next((a for a in args[1:] if not a.startswith("-")), DEFAULT_DUMP_PATH)
        faults = self.faults
        if faults.dump_slow_ms:
            self.stopping.wait(faults.dump_slow_ms / 1000)
        if faults.idle_failures:
            if faults.idle_failures > 0:
                faults.idle_failures -= 1
            return Result(stdout=IDLE_ERROR)
        xml = self.step.read_tree()
        done = f"UI hierchary dumped to: {path}\n".encode()
        if path in {"/dev/tty", "/dev/stdout"}:
            result = Result(stdout=xml + done)
            if self._take_drop("dump"):
                result.drop_after = max(1, len(xml) // 2)
            return result
        self.files.write(path, xml)
        self._dump_paths.add(path)
        return Result(stdout=done)

    def _cmd_screencap(self, args: list[str], data_in: bytes) -> Result:
        faults = self.faults
        warning = MULTI_DISPLAY_WARNING if faults.multi_display and "-d" not in args else b""
        if faults.capture_fail:
            return Result(stderr=warning + CAPTURE_FAILED, code=1, stderr_first=True)
        png = "-p" in args
        path = next((a for a in args if not a.startswith("-") and a.startswith("/")), None)
        if path is not None:
            data = self.frame_png() if (png or path.endswith(".png")) else self.frame_raw()
            self.files.write(path, data)
            return Result(stderr=warning, stderr_first=True)
        data = self.frame_png() if png else self.frame_raw()
        result = Result(stdout=data, stderr=warning, stderr_first=True)
        if self._take_drop("screencap"):
            result.drop_after = max(1, len(data) // 2)
        return result

    def _take_drop(self, kind: str) -> bool:
        if self.faults.drop in {kind, "any"}:
            self.faults.drop = ""
            return True
        return False

    def physical_size(self) -> ScreenSize:
        screen = self.screen
        if self.step.rotation % 2:
            return ScreenSize(screen.height_px, screen.width_px)
        return screen

    def _cmd_wm(self, args: list[str], data_in: bytes) -> Result:
        if args[:1] == ["size"]:
            size = self.physical_size()
            return Result(stdout=f"Physical size: {size.width_px}x{size.height_px}\n".encode())
        if args[:1] == ["density"]:
            return Result(stdout=f"Physical density: {self.recording.density_dpi}\n".encode())
        return Result(stderr=b"usage: wm [size|density]\n", code=1)

    def _focus(self) -> tuple[str, str]:
        step = self.step
        activity = step.activity or f"{step.package or 'com.android.launcher'}/.Main"
        package = step.package or activity.split("/")[0]
        if "/" not in activity:
            activity = f"{package}/{activity}"
        return package, activity

    def _cmd_dumpsys(self, args: list[str], data_in: bytes) -> Result:
        what = args[0] if args else ""
        package, activity = self._focus()
        screen = self.screen
        size = self.physical_size()
        density = self.recording.density_dpi
        rotation = self.step.rotation
        if what == "window":
            ins = self.step.insets
            lines = [
                "WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)",
                "  Display: mDisplayId=0",
                f"    init={size.width_px}x{size.height_px} {density}dpi "
                f"cur={screen.width_px}x{screen.height_px} "
                f"app={screen.width_px}x{screen.height_px - ins.bottom_px}",
                f"    mCurrentRotation=ROTATION_{rotation * 90}",
                f"    mRotation={rotation}",
                f"    InsetsSource type=ITYPE_STATUS_BAR frame=[0,0][{screen.width_px},"
                f"{ins.top_px}] visible={str(ins.top_px > 0).lower()}",
                f"    InsetsSource type=ITYPE_NAVIGATION_BAR frame=[0,"
                f"{screen.height_px - ins.bottom_px}][{screen.width_px},{screen.height_px}] "
                f"visible={str(ins.bottom_px > 0).lower()}",
                "WINDOW MANAGER WINDOWS (dumpsys window windows)",
                f"  mCurrentFocus=Window{{5f3e2a1 u0 {activity}}}",
                f"  mFocusedApp=ActivityRecord{{8c1d0e2 u0 {activity} t12}}",
                "",
            ]
            return Result(stdout="\n".join(lines).encode())
        if what == "display":
            lines = [
                "DISPLAY MANAGER (dumpsys display)",
                f"  mDefaultViewport=DisplayViewport{{valid=true, displayId=0, "
                f"orientation={rotation}, deviceWidth={size.width_px}, "
                f"deviceHeight={size.height_px}}}",
                f'  DisplayDeviceInfo{{"Built-in Screen": {size.width_px} x {size.height_px}, '
                f"density {density}}}",
                "",
            ]
            return Result(stdout="\n".join(lines).encode())
        if what == "activity":
            return Result(
                stdout=f"  mResumedActivity: ActivityRecord{{8c1d0e2 u0 {activity} t12}}\n"
                f"  mFocusedApp={package}\n".encode()
            )
        return Result(stdout=f"Can't find service: {what}\n".encode())

    def _cmd_input(self, args: list[str], data_in: bytes) -> Result:
        if args and args[0] in {"touchscreen", "keyboard", "mouse", "touchpad", "dpad"}:
            args = args[1:]
        if not args:
            return Result(stderr=b"usage: input ...\n", code=1)
        verb, rest = args[0], args[1:]
        nav = self.navigator
        if verb == "tap":
            move = nav.tap(PointPx(int(float(rest[0])), int(float(rest[1]))))
        elif verb in {"swipe", "draganddrop"}:
            x1, y1, x2, y2 = (int(float(v)) for v in rest[:4])
            duration = int(rest[4]) if len(rest) > 4 else 300
            if abs(x2 - x1) < 10 and abs(y2 - y1) < 10:
                move = nav.tap(PointPx(x1, y1), long=duration >= 500)
            else:
                move = nav.swipe(PointPx(x1, y1), PointPx(x2, y2))
        elif verb == "text":
            move = nav.text(" ".join(rest).replace("%s", " "))
        elif verb == "keyevent":
            keys = [k for k in rest if not k.startswith("--")]
            move = nav.key(keys[0]) if keys else nav.key("")
            for key in keys[1:]:
                move = nav.key(key)
        else:
            return Result(stderr=f"Error: Unknown command: {verb}\n".encode(), code=1)
        self.events.append(f"{' '.join(args)} -> {move.position} ({move.reason})")
        log.info("input %s -> position %d (%s)", " ".join(args), move.position, move.reason)
        return Result()

    def _cmd_am(self, args: list[str], data_in: bytes) -> Result:
        if args[:1] in (["start"], ["start-activity"]):
            move = self.navigator.intent(" ".join(args))
            self.events.append(f"am {' '.join(args)} -> {move.position} ({move.reason})")
            return Result(stdout=f"Starting: Intent {{ {' '.join(args[1:])} }}\n".encode())
        if args[:1] == ["force-stop"]:
            return Result()
        return Result(stderr=b"am: unsupported in the simulator\n", code=1)

    def _cmd_monkey(self, args: list[str], data_in: bytes) -> Result:
        move = self.navigator.intent(" ".join(args))
        self.events.append(f"monkey {' '.join(args)} -> {move.position} ({move.reason})")
        return Result(stdout=b"Events injected: 1\n")

    def _cmd_simctl(self, args: list[str], data_in: bytes) -> Result:
        if args[:1] == ["fault"]:
            for item in args[1:]:
                name, _, value = item.partition("=")
                self.faults.apply(name, value)
            return Result(stdout=(self.faults.describe() + "\n").encode())
        if args[:1] == ["clear"]:
            self.faults.__init__()  # type: ignore[misc]
            return Result(stdout=(self.faults.describe() + "\n").encode())
        if args[:1] == ["goto"]:
            self.navigator.goto(int(args[1]))
            return self._cmd_simctl(["state"], data_in)
        if args[:1] == ["state"]:
            return Result(
                stdout=(
                    f"position={self.navigator.position} step={self.step.step} "
                    f"steps={len(self.recording.steps)} {self.faults.describe()}\n"
                ).encode()
            )
        return Result(stderr=b"usage: simctl fault K=V.. | clear | goto N | state\n", code=1)


def _lex(command_line: str) -> list[str]:
    lexer = shlex.shlex(io.StringIO(command_line), posix=True, punctuation_chars=";&|>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def _redirects(argv: list[str]) -> tuple[list[str], str | None, bool, bool]:
    """Strip ``> FILE``, ``2>&1``, ``2>/dev/null`` from argv."""
    out: list[str] = []
    target: str | None = None
    merge_err = False
    quiet_err = False
    i = 0
    while i < len(argv):
        tok = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        if tok == "2" and nxt == ">&" and i + 2 < len(argv):
            merge_err = True
            i += 3
            continue
        if tok == "2" and nxt in {">", ">>"} and i + 2 < len(argv):
            quiet_err = quiet_err or argv[i + 2] == "/dev/null"
            i += 3
            continue
        if tok in {">", ">>", "1"} and (tok != "1" or nxt in {">", ">>"}):
            skip = 2 if tok != "1" else 3
            if i + skip - 1 < len(argv):
                target = argv[i + skip - 1]
            i += skip
            continue
        out.append(tok)
        i += 1
    return out, target, merge_err, quiet_err
