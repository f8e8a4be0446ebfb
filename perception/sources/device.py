"""A live phone over adb (the only module of ``perception`` that imports adbutils).

Every command runs over its own adb stream with a whole-command deadline (adbutils would wait
up to 600 s), and every failure becomes a typed :class:`~perception.errors.DeviceError` that
carries the serial:

- :class:`DeviceOfflineError`: offline or not attached, or the adb server was never reached
  (nothing listens at ``adb_host:adb_port``); :class:`DeviceUnauthorizedError`: the
  RSA prompt was not accepted; :class:`DeviceTimeoutError`: the deadline passed;
  :class:`DeviceDisconnectedError`: the stream ended before the transfer was complete;
- trees: ``uiautomator dump`` to a fresh path each time (``cat`` + ``rm`` in the same command,
  so a stale file can never be returned), or straight to stdout (``/dev/tty``) with
  ``DeviceConfig(dump_to_stdout=True)`` on phones that support it; ``could not get idle state``
  is retried with exponential backoff, then :class:`IdleStateError` (the arbiter falls back to
  pixels); any other non-XML answer is a :class:`DumpFailedError`;
- frames: raw ``screencap`` over ``exec:`` (no PNG encoding on the phone), PNG as a fallback
  when the phone's raw output is not understood;
- screen facts from ``wm size``, ``wm density`` and ``dumpsys window``; they are re-read when a
  dump reports a different rotation.

Several phones: one :class:`DeviceSource` per serial, each with its own adb client.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from perception.config import DeviceConfig
from perception.errors import (
    DEVICE_GONE,
    AppStartError,
    DeviceDisconnectedError,
    DeviceError,
    DeviceOfflineError,
    DeviceTimeoutError,
    DeviceUnauthorizedError,
    DumpFailedError,
    FrameError,
    IdleStateError,
    InputMethodError,
    NotAnImageError,
)
from perception.geometry import union_box
from perception.sources.base import (
    ADB_KEYBOARD_IME as ADB_KEYBOARD_IME,  # the device source's to name (README, agent)
    COMPONENT,
    EpochCounter,
    FrameCapture,
    FrameFormat,
    Insets,
    ScreenFacts,
    TreeCapture,
    now_ns,
    parse_raw_header,
    sh_quote,
)
from perception.types import BoxPx, ScreenSize


def _checked_adb_environment() -> None:
    """Refuse a bad ``ANDROID_ADB_SERVER_PORT`` before adbutils is imported: its import builds
    a client (``adbutils.adb``, never used here: each source builds its own, with its port)
    that parses the variable with a bare ``int()``, a ``ValueError`` traceback for ``abc``.
    Here that is the :class:`ConfigError` that names the variable (:meth:`DeviceConfig.from_env`).
    A blank value, adb's default port for adb and for us, is what ``int()`` refuses too: it is
    left out while adbutils is imported."""
    raw = os.environ.get("ANDROID_ADB_SERVER_PORT")
    if raw is None:
        return
    DeviceConfig.from_env({"ANDROID_ADB_SERVER_PORT": raw})  # ConfigError for a bad value
    if not raw.strip():
        del os.environ["ANDROID_ADB_SERVER_PORT"]
        try:
            import adbutils  # noqa: F401 - imported once, without the blank value
        finally:
            os.environ["ANDROID_ADB_SERVER_PORT"] = raw


_checked_adb_environment()

import adbutils  # noqa: E402 - after the check of its environment
from adbutils.errors import AdbConnectionError, AdbError, AdbTimeout  # noqa: E402

log = logging.getLogger(__name__)

IDLE_MARKER = b"could not get idle state"
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_PNG_END = b"IEND\xaeB`\x82"
_ROTATION_XML = re.compile(rb'<hierarchy[^>]*rotation="(\d)"')
_TEXT_SCAN_BYTES = 4096
_MIN_TEXT_LINE = 4
"""A raw screencap header has a zero byte within its first 4 bytes, a PNG starts with 0x89:
neither can open with a printable line this long."""


def _printable(line: bytes) -> bool:
    return all(0x20 <= b < 0x7F or b in (0x09, 0x0D) for b in line)


def split_text_prefix(data: bytes) -> tuple[bytes, bytes]:
    """``(text, image)``: the printable lines ``screencap`` wrote before its image.

    ``exec:`` has no separate stderr, so the phone's warnings land in front of the image (on
    phones with several displays: ``[Warning] Multiple displays were found ...``). Output that
    is text only (``Screen capture failed: -1``) comes back as ``(text, b"")``.
    """
    pos = 0
    limit = min(len(data), _TEXT_SCAN_BYTES)
    while pos < limit:
        newline = data.find(b"\n", pos, limit)
        if newline < 0 or newline - pos < _MIN_TEXT_LINE or not _printable(data[pos:newline]):
            break
        pos = newline + 1
    rest = data[pos:]
    if rest and len(rest) < _TEXT_SCAN_BYTES and _printable(rest.rstrip(b"\n")):
        return data, b""
    return data[:pos], rest


def classify_adb_error(message: str, serial: str) -> DeviceError:
    """Map an adb server answer to our typed errors, in one line.

    Only the server's first line is kept: its advice that follows (``Try 'adb kill-server'``,
    ``$ADB_VENDOR_KEYS is not set``) is written for the ``adb`` command line and is wrong for a
    server on another port; and a category the first line already says is not said twice."""
    first = message.strip().splitlines()[0].strip().rstrip(".") if message.strip() else ""
    text = first.lower()
    if "unauthorized" in text:
        return DeviceUnauthorizedError(
            "device unauthorized: accept the USB debugging prompt on the phone", serial=serial
        )
    if "offline" in text:
        detail = "" if text in {"offline", "device offline"} else f" ({first})"
        return DeviceOfflineError(f"device offline{detail}", serial=serial)
    if "not found" in text or "no devices" in text:
        # adb's "device 'SERIAL' not found" would repeat the serial the message starts with;
        # and the phone is not offline: the server does not know it at all.
        return DeviceOfflineError(
            "device not found: `adb devices` does not list it", serial=serial
        )
    if "closed" in text or "connection" in text or "broken pipe" in text:
        return DeviceDisconnectedError(f"connection lost ({first})", serial=serial)
    return DeviceError(first or "adb failed without a message", serial=serial)


def parse_wm_size(text: str) -> ScreenSize | None:
    """``Physical size: WxH`` (an ``Override size`` wins)."""
    override = re.search(r"Override size:\s*(\d+)x(\d+)", text)
    m = override or re.search(r"Physical size:\s*(\d+)x(\d+)", text)
    return ScreenSize(int(m.group(1)), int(m.group(2))) if m else None


def parse_wm_density(text: str) -> int | None:
    override = re.search(r"Override density:\s*(\d+)", text)
    m = override or re.search(r"Physical density:\s*(\d+)", text)
    return int(m.group(1)) if m else None


_INSETS_SOURCE = re.compile(
    # Android 11-13: "InsetsSource type=ITYPE_IME frame=[0,1398][1080,2220] visibleFrame=[..]
    # visible=true"; 14+: "InsetsSource id=3 type=ime frame=[..] visibleFrame=[..] visible=true
    # flags= sideHint=BOTTOM"; its toString: "InsetsSource: {3 mType=ime mFrame=[..]
    # mVisible=true". A provider's "mSource=InsetsSource ..." copy is not the display's state
    # (a status bar's holds the expanded shade's frame).
    r"(?<!mSource=)InsetsSource:?\s\{?(?:\S+\s)?m?[Tt]ype=(\w+)\s+m?[Ff]rame="
    r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\](?:\s+visibleFrame=\S+)?\s+m?[Vv]isible=(\w+)"
)


def insets_sources(text: str, *, hidden: bool = False) -> list[tuple[str, BoxPx]]:
    """The visible inset sources of ``dumpsys window [displays]``, as (type, frame): the type
    in lower case as the phone names it (``itype_status_bar``, ``statusbars``, ``ime``), the
    frame in the screen's current rotation, those with no area left out; ``hidden``: every
    source listed, whatever its state and frame."""
    out = []
    for kind, l_, t_, r_, b_, visible in _INSETS_SOURCE.findall(text):
        box = BoxPx(int(l_), int(t_), int(r_), int(b_))
        if hidden or (visible == "true" and box.width > 0 and box.height > 0):
            out.append((kind.lower(), box))
    return out


_DISPLAY = re.compile(r"^\s*Display: mDisplayId=(\d+)", re.MULTILINE)


def default_display(text: str) -> str:
    """The default display's section of ``dumpsys window displays`` (``Display: mDisplayId=0``
    up to the next display), or all of ``text`` when it names no display: a keyboard up on a
    second display (casting, a virtual display) is not over the screen we dump."""
    heads = list(_DISPLAY.finditer(text))
    for at, head in enumerate(heads):
        if head.group(1) == "0":
            end = heads[at + 1].start() if at + 1 < len(heads) else len(text)
            return text[head.start() : end]
    return text if not heads else ""


def parse_keyboard(text: str) -> BoxPx | None:
    """The on-screen keyboard's box from ``dumpsys window displays``: the first visible input
    method inset with an area on the default display (Android 11+; a floating keyboard insets
    nothing), else None (none up, or an older phone that does not say:
    :func:`says_keyboard`)."""
    return next(
        (box for kind, box in insets_sources(default_display(text)) if kind in _IME_INSETS),
        None,
    )


def says_keyboard(text: str) -> bool:
    """Does ``dumpsys window displays`` list the input method's insets at all (Android 11+),
    shown or not? Older phones do not: their keyboard is read off its window
    (:func:`parse_keyboard_window`)."""
    return any(kind in _IME_INSETS for kind, _ in insets_sources(text, hidden=True))


_IME_INSETS = frozenset({"ime", "itype_ime"})
_IME_WINDOW = re.compile(r"Window\{[0-9a-f]+ (?:u\d+ )?InputMethod\}:")
_NEXT_WINDOW = re.compile(r"^\s*Window #\d+", re.MULTILINE)
_TOUCHABLE = re.compile(r"touchable region=SkRegion\(((?:\(-?\d+,-?\d+,-?\d+,-?\d+\))+)\)")
_RECT = re.compile(r"\((-?\d+),(-?\d+),(-?\d+),(-?\d+)\)")
_WINDOW_FRAME = re.compile(r"\b(?:mFrame|frame)=\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")
_CONTENT_INSETS = re.compile(r"mGivenContentInsets=\[(\d+),(\d+)\]\[(\d+),(\d+)\]")


def parse_keyboard_window(text: str) -> BoxPx | None:
    """The on-screen keyboard's box from ``dumpsys window InputMethod`` (the input method's
    window, for phones before Android 11, which list no input method insets): None unless
    the window is shown (``mViewVisibility=0x0``, on screen, with a surface). Its box is the
    region it takes touches in (the keys and the suggestion strip), else its frame below the
    content insets it gives the app (an input method's window may span the screen)."""
    m = _IME_WINDOW.search(text)
    if m is None:
        return None
    end = _NEXT_WINDOW.search(text, m.end())
    block = text[m.end() : end.start() if end else len(text)]
    if (
        "mViewVisibility=0x0" not in block
        or "isOnScreen=false" in block
        or "mHasSurface=false" in block
    ):
        return None
    touchable = _TOUCHABLE.search(block)
    if touchable:
        rects = [BoxPx(*(int(v) for v in r)) for r in _RECT.findall(touchable.group(1))]
        box = union_box(rects)
    else:
        frame = _WINDOW_FRAME.search(block)
        if frame is None:
            return None
        box = BoxPx(*(int(v) for v in frame.groups()))
        insets = _CONTENT_INSETS.search(block)
        if insets:
            box = box._replace(top=min(box.bottom, box.top + int(insets.group(2))))
    return box if box.width > 0 and box.height > 0 else None


KEYBOARD_TIMEOUT_S = 3.0
"""At most this long for each question about the keyboard after a dump (the dump is kept
without a keyboard box when it runs out)."""
KEYBOARD_RECHECK = 20
"""A phone answered by its keyboard's window is asked for the insets again every this many
captures (some list them only once a keyboard has come up)."""
LAUNCHER_QUERY = (
    "cmd package query-activities --brief -a android.intent.action.MAIN "
    "-c android.intent.category.LAUNCHER"
)
"""The shell command that lists the activities a launcher shows (Android 7+)."""


def parse_components(text: str) -> tuple[str, ...]:
    """The ``package/activity`` lines of ``cmd package query-activities --brief`` (between
    them a phone prints ``priority=0 preferredOrder=0 ...`` lines and a count), each once, in
    the phone's order."""
    out: dict[str, None] = {}
    for line in text.splitlines():
        line = line.strip()
        if COMPONENT.fullmatch(line):
            out.setdefault(line)
    return tuple(out)


def parse_dumpsys_window(text: str) -> dict[str, object]:
    """Focus, rotation, current display size and insets from ``dumpsys window`` (any era)."""
    out: dict[str, object] = {}
    m = re.search(r"mCurrentRotation=ROTATION_(\d+)", text)
    if m:
        out["rotation"] = int(m.group(1)) // 90 % 4
    else:
        m = re.search(r"mCurrentRotation=(\d)", text) or re.search(r"\bmRotation=(\d)", text)
        if m:
            out["rotation"] = int(m.group(1)) % 4
    m = re.search(r"\bcur=(\d+)x(\d+)", text)
    if m:
        out["size"] = ScreenSize(int(m.group(1)), int(m.group(2)))
    m = re.search(r"mCurrentFocus=Window\{\S+ \S+ ([^\s/}]+)/([^\s}]+)\}", text)
    if not m:
        m = re.search(r"mFocusedApp=.*?\s([\w.]+)/([\w.$]+)", text)
    if m:
        package, activity = m.group(1), m.group(2)
        out["package"] = package
        out["activity"] = f"{package}/{activity}"
    top = bottom = left = right = 0
    for kind, box in insets_sources(text):
        width, height = box.width, box.height
        if "status" in kind:
            top = max(top, height)
        elif "navigation" in kind:
            if width < height:  # a vertical bar on a side (landscape)
                if box.left == 0:
                    left = max(left, width)
                else:
                    right = max(right, width)
            else:
                bottom = max(bottom, height)
    if not (top or bottom or left or right):
        m = re.search(r"mStableInsets=\[(\d+),(\d+)\]\[(\d+),(\d+)\]", text)
        if m:
            left, top, right, bottom = (int(g) for g in m.groups())
    out["insets"] = Insets(top_px=top, bottom_px=bottom, left_px=left, right_px=right)
    return out


@dataclass(frozen=True, slots=True)
class PowerState:
    """Is the phone's screen on, and is the lock screen up (a person must unlock it)?"""

    awake: bool
    locked: bool
    secure_lock: bool | None = None
    """The lock screen asks for a PIN, pattern or password (True), or is a swipe that
    ``wm dismiss-keyguard`` opens (False); None when the phone does not say."""


_WAKEFULNESS = re.compile(r"\bmWakefulness=(\w+)")
_SCREEN_ON = re.compile(r"\bmScreenOn=(\w+)")
_DISPLAY_POWER = re.compile(r"Display Power: state=(\w+)")
_SHOWING = re.compile(r"^\s+showingAndNotOccluded=(\w+)", re.MULTILINE)
_KEYGUARD = re.compile(
    r"(?:\bmShowingLockscreen|\bmDreamingLockscreen|\bisStatusBarKeyguard|^\s+showing)=(\w+)",
    re.MULTILINE,
)
_SECURE = re.compile(r"^\s+secure=(\w+)", re.MULTILINE)


def parse_power_state(power: str, window: str) -> PowerState:
    """Awake from ``dumpsys power`` (``mWakefulness=Awake``; Dozing and Asleep are not, nor is
    ``Display Power: state=OFF``; Android 4's ``mScreenOn``), locked from ``dumpsys window
    policy`` (Android 11-14's ``KeyguardServiceDelegate``: ``showingAndNotOccluded``, since an
    alarm or a call shown over the lock screen is usable, else ``showing``; the older
    ``mShowingLockscreen`` / ``mDreamingLockscreen`` / ``isStatusBarKeyguard``) with its
    ``secure``. What a phone does not print counts as awake and unlocked: the agent then goes
    on as before."""
    m = _WAKEFULNESS.search(power)
    if m:
        awake = m.group(1) == "Awake"
    else:
        on = _SCREEN_ON.search(power)
        awake = on is None or on.group(1) == "true"
    display = _DISPLAY_POWER.search(power)
    if display is not None and display.group(1) == "OFF":
        awake = False
    shown = _SHOWING.search(window)
    if shown is not None:
        locked = shown.group(1) == "true"
    else:
        locked = any(value == "true" for value in _KEYGUARD.findall(window))
    secure = _SECURE.search(window)
    return PowerState(
        awake=awake,
        locked=locked,
        secure_lock=None if secure is None else secure.group(1) == "true",
    )


def extract_dump_xml(output: bytes, serial: str) -> bytes:
    """The hierarchy inside a ``dump; cat; rm`` answer, or the typed failure it shows."""
    start = output.find(b"<?xml")
    if start < 0:
        start = output.find(b"<hierarchy")
    if start < 0:
        if IDLE_MARKER in output:
            raise IdleStateError("uiautomator: could not get idle state", serial=serial)
        text = output.decode("utf-8", "replace").strip()[:300] or "(no output)"
        raise DumpFailedError(f"[{serial}] uiautomator dump failed: {text}")
    end = output.rfind(b"</hierarchy>")
    if end < 0:
        raise DeviceDisconnectedError(
            f"dump ended after {len(output) - start} bytes without </hierarchy>", serial=serial
        )
    return output[start : end + len(b"</hierarchy>")]


_LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost"})
START_SERVER_TIMEOUT_S = 20.0
"""At most this long for ``adb start-server`` (adbutils' wait too)."""


class _ServerRefused(AdbConnectionError):  # type: ignore[misc]
    """Nothing listens at the adb server's address (connection refused), and no server is
    started there: waiting will not change that."""


def start_adb_server(port: int) -> None:
    """``adb -P PORT start-server``, as ``adb`` does when its server does not answer (it
    returns once the server is up). A failure is logged: the connection that follows says
    the server cannot be reached."""
    flags = 0
    if sys.platform == "win32":
        flags = subprocess.CREATE_NO_WINDOW  # no console window flashing up (adbutils' flag)
    try:
        command = [adbutils.adb_path(), "-P", str(port), "start-server"]
        proc = subprocess.run(
            command, capture_output=True, text=True, timeout=START_SERVER_TIMEOUT_S,
            creationflags=flags, check=False,
        )
    except (AdbError, OSError, subprocess.SubprocessError) as exc:
        log.warning("could not start an adb server on port %d: %s", port, exc)
        return
    said = " ".join((proc.stdout + proc.stderr).split())
    if proc.returncode:
        log.warning("adb -P %d start-server failed (exit %d): %s", port, proc.returncode, said)
    else:
        log.info("adb -P %d start-server: %s", port, said or "ok")


class _Connection(adbutils.AdbConnection):  # type: ignore[misc]
    """adbutils' connection with another fallback when nothing answers. adbutils runs
    ``adb start-server``, which starts a server on adb's default port whatever host and port
    were asked for (and waits up to 20 s for it): for any other server a stray process and a
    stall. Here only adb's own server on this machine is started, on its port
    (``DeviceConfig.adb_default_port``); for any other server a refused connection is
    :class:`_ServerRefused`, at once."""

    def __init__(self, host: str, port: int, *, start_server: bool) -> None:
        self._start_server = start_server
        self._adb_port = port
        super().__init__(host, port)

    def _safe_connect(self) -> Any:
        try:
            return self._create_socket()
        except (AdbTimeout, AdbConnectionError) as exc:
            if not self._start_server:
                if isinstance(exc.__context__, ConnectionRefusedError):
                    raise _ServerRefused(str(exc)) from exc.__context__
                raise
        start_adb_server(self._adb_port)
        return self._create_socket()


class _Client(adbutils.AdbClient):  # type: ignore[misc]
    """An ``AdbClient`` whose connections are :class:`_Connection`: ``start_server`` for adb's
    own server on this machine only."""

    def __init__(
        self, host: str, port: int, socket_timeout: float | None = None, *, start_server: bool
    ) -> None:
        super().__init__(host=host, port=port, socket_timeout=socket_timeout)
        self._timeout = socket_timeout
        self.start_server = start_server

    def make_connection(self, timeout: float | None = None) -> Any:
        conn = _Connection(self.host, self.port, start_server=self.start_server)
        if timeout or self._timeout:
            conn.conn.settimeout(timeout or self._timeout)
        return conn


class DeviceSource(EpochCounter):
    """One live phone as a :class:`~perception.sources.base.ScreenSource`.

    Without a ``config`` it reads the environment (:meth:`DeviceConfig.from_env`): adb's own
    ``ANDROID_ADB_SERVER_PORT`` picks the adb server, as every adb tool and our CLIs do, so
    code that works with ``adb`` in a shell works here too.
    """

    def __init__(
        self,
        serial: str,
        *,
        config: DeviceConfig | None = None,
        client: adbutils.AdbClient | None = None,
    ) -> None:
        self._config = config or DeviceConfig.from_env()
        self._serial = serial
        if client is None:
            cfg = self._config
            client = _Client(
                cfg.adb_host, cfg.adb_port, cfg.command_timeout_s,
                start_server=cfg.adb_host in _LOCAL_HOSTS and cfg.adb_port == cfg.adb_default_port,
            )
        self._client = client
        self._device = self._client.device(serial)
        self._epoch = 0
        self._lock = threading.Lock()
        self._facts: ScreenFacts | None = None
        self._raw_frames: bool | None = None if self._config.raw_frames else False
        self._closed = False
        self._reached = False  # the adb server has answered this source at least once
        self._warned_text = False  # screencap printed text before its image (logged once)
        self._keyboard_calls = 0
        self._keyboard_query: str | None = None
        """Which question the phone answers about its keyboard: "insets", "window" (keyboard())."""
        self._warned_keyboard = False
        self._open: set[Any] = set()  # adb streams in flight (close() shuts them)

    # ----- identity and epochs -----------------------------------------------------------

    @property
    def config(self) -> DeviceConfig:
        return self._config

    # ----- connection state --------------------------------------------------------------

    def state(self) -> str:
        """``device``, ``offline``, ``unauthorized`` ... as the adb server reports it."""
        try:
            state = str(self._device.get_state())
        except AdbTimeout as exc:
            raise DeviceTimeoutError(
                f"adb server did not answer: {exc}", serial=self._serial
            ) from exc
        except AdbError as exc:
            raise self._adb_error(exc) from exc
        self._reached = True
        return state

    def _adb_error(self, exc: AdbError) -> DeviceError:
        """:func:`classify_adb_error`, except that a server this source never reached is named
        as such: adbutils' "connect to adb server failed" would read as "connection lost", which
        stays for a server (and so a device) that answered before and went away."""
        if isinstance(exc, AdbConnectionError) and not self._reached:
            host, port = self._client.host, self._client.port
            own = port == self._config.adb_default_port  # adb start-server starts that one
            start = "adb start-server" if own else f"adb -P {port} start-server"
            return DeviceOfflineError(
                f"cannot reach the adb server at {host}:{port} (is it running? `{start}`): {exc}",
                serial=self._serial,
            )
        return classify_adb_error(str(exc), self._serial)

    def wait_ready(self, timeout_s: float | None = None) -> None:
        """Wait until the phone is ``device``; typed error for unauthorized/offline at the end.

        What heals is waited for: a phone ``offline`` or ``connecting``, ``unauthorized`` while
        its user accepts the prompt, adb's own server being started. A server that refuses the
        connection, and that no one starts (any but adb's own on this machine), does not: its
        error is raised at once (:class:`DeviceOfflineError` naming host and port; for a
        server that answered before, :class:`DeviceDisconnectedError`)."""
        deadline = time.monotonic() + (timeout_s or self._config.ready_timeout_s)
        last: DeviceError | None = None
        while True:
            try:
                state = self.state()
                if state == "device":
                    return
                last = classify_adb_error(f"device {state}", self._serial)
            except DeviceError as exc:
                if isinstance(exc.__cause__, _ServerRefused):
                    raise
                last = exc
            if time.monotonic() >= deadline:
                raise last
            time.sleep(0.1)

    def reconnect(self, timeout_s: float | None = None) -> None:
        """For network phones (``host:port``): ``adb connect`` again and wait until ready."""
        if ":" in self._serial:
            try:
                self._client.connect(self._serial, timeout=self._config.command_timeout_s)
            except AdbError as exc:
                raise self._adb_error(exc) from exc
        self.wait_ready(timeout_s)

    # ----- raw commands ------------------------------------------------------------------

    def run(self, command: str, *, timeout_s: float | None = None) -> bytes:
        """Run ``command`` over ``exec:`` (stdout only, binary-safe) within a deadline."""
        return self._exec(command, timeout_s or self._config.command_timeout_s)

    def _exec(self, command: str, timeout_s: float) -> bytes:
        if self._closed:
            raise DeviceError("source is closed", serial=self._serial)
        deadline = time.monotonic() + timeout_s
        conn = None
        try:
            conn = self._device.open_transport(timeout=timeout_s)
            self._reached = True
            with self._lock:
                if self._closed:
                    raise DeviceError("source is closed", serial=self._serial)
                self._open.add(conn)
            conn.send_command(f"exec:{command}")
            conn.check_okay()
            sock = conn.conn
            chunks: list[bytes] = []
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise DeviceTimeoutError(
                        f"{command!r} did not finish within {timeout_s:.1f} s", serial=self._serial
                    )
                sock.settimeout(remaining)
                data = sock.recv(1 << 20)
                if not data:
                    break
                chunks.append(data)
            if self._closed:  # shut by close(): what came is not the whole answer
                raise DeviceError(f"{command!r}: the source was closed", serial=self._serial)
            return b"".join(chunks)
        except DeviceError:
            raise
        except (TimeoutError, AdbTimeout) as exc:
            raise DeviceTimeoutError(
                f"{command!r} did not finish within {timeout_s:.1f} s", serial=self._serial
            ) from exc
        except AdbError as exc:
            raise self._adb_error(exc) from exc
        except (ConnectionError, EOFError, OSError) as exc:
            if self._closed:
                raise DeviceError(
                    f"{command!r}: the source was closed", serial=self._serial
                ) from exc
            raise DeviceDisconnectedError(f"{command!r}: {exc}", serial=self._serial) from exc
        finally:
            if conn is not None:
                with self._lock:
                    self._open.discard(conn)
                conn.close()

    def _truncated(self, what: str, got: int, expected: int | str) -> DeviceError:
        """A transfer ended early: say whether the phone is gone (disconnected) or not.
        ``expected`` is a byte count or what was missing (``"IEND"``, ``"a header"``)."""
        try:
            state = self.state()
        except DeviceError:
            state = "gone"
        short = (
            f"after {got} of {expected} bytes" if isinstance(expected, int)
            else f"after {got} bytes without {expected}"
        )
        return DeviceDisconnectedError(
            f"{what} ended {short} (device state now: {state})", serial=self._serial
        )

    # ----- trees -------------------------------------------------------------------------

    def capture_tree(self) -> TreeCapture:
        cfg = self._config
        backoff_s = cfg.idle_backoff_ms / 1000
        attempts = cfg.idle_retries + 1
        for attempt in range(attempts):
            path = f"{cfg.dump_dir}/perception-{uuid.uuid4().hex[:12]}.xml"
            epoch = self._epoch
            start = now_ns()
            command = (
                "uiautomator dump /dev/tty"
                if cfg.dump_to_stdout
                else f"uiautomator dump {path}; cat {path}; rm -f {path}"
            )
            output = self._exec(command, cfg.dump_timeout_s)
            end = now_ns()
            try:
                xml = extract_dump_xml(output, self._serial)
            except IdleStateError:
                if attempt + 1 >= attempts:
                    raise IdleStateError(
                        f"uiautomator could not get idle state after {attempts} attempts",
                        serial=self._serial,
                    ) from None
                log.info("[%s] idle state error, retry in %.2f s", self._serial, backoff_s)
                time.sleep(backoff_s)
                backoff_s *= 2
                continue
            except DeviceDisconnectedError:
                raise self._truncated("dump", len(output), "a complete hierarchy") from None
            self._note_rotation(xml)
            return TreeCapture(
                xml=xml, start_ns=start, end_ns=end, epoch=epoch, serial=self._serial,
                keyboard_px=self._keyboard_or_none() if cfg.read_keyboard else None,
            )
        raise AssertionError("unreachable")  # pragma: no cover

    def keyboard(self) -> BoxPx | None:
        """The on-screen keyboard's box now, else None (none is up, or the phone does not say):
        as the window manager insets the apps for it (Android 11+), else as its window shows
        (phones before 11, and newer ones that list no input method insets until a keyboard
        first came up): which question a phone answers is learnt on the first call, so each
        later one asks one (the insets again every :data:`KEYBOARD_RECHECK` calls). A dump of
        the app's window does not hold the keyboard (see :attr:`TreeCapture.keyboard_px`).
        Each question has :data:`KEYBOARD_TIMEOUT_S` at most (:class:`DeviceTimeoutError`)."""
        timeout_s = min(self._config.command_timeout_s, KEYBOARD_TIMEOUT_S)
        self._keyboard_calls += 1
        # A newer phone lists no insets until a keyboard first came up: asked again now and then.
        if self._keyboard_query != "window" or self._keyboard_calls % KEYBOARD_RECHECK == 0:
            text = self.run("dumpsys window displays", timeout_s=timeout_s)
            displays = text.decode("utf-8", "replace")
            if self._keyboard_query == "insets" or says_keyboard(displays):
                self._keyboard_query = "insets"
                return parse_keyboard(displays)
            self._keyboard_query = "window"
        text = self.run("dumpsys window InputMethod", timeout_s=timeout_s)
        return parse_keyboard_window(text.decode("utf-8", "replace"))

    def _keyboard_or_none(self) -> BoxPx | None:
        """:meth:`keyboard` for a capture: a phone that does not answer in time (a busy window
        manager) costs the capture its keyboard, not its dump (logged once); a phone gone is
        still an error."""
        try:
            return self.keyboard()
        except DEVICE_GONE:
            raise
        except DeviceError as exc:
            if self._closed:
                raise
            if not self._warned_keyboard:
                self._warned_keyboard = True
                log.warning("[%s] the keyboard's query failed (%s): captures carry no keyboard "
                            "box while it fails", self._serial, exc)
            return None

    def _note_rotation(self, xml: bytes) -> None:
        m = _ROTATION_XML.search(xml[:512])
        facts = self._facts
        if m and facts is not None and int(m.group(1)) != facts.rotation:
            log.info("[%s] rotation changed to %s: screen facts invalidated", self._serial,
                     m.group(1).decode())
            self._facts = None

    # ----- frames ------------------------------------------------------------------------

    def _image_output(self, command: str) -> bytes:
        """``command``'s output without the text the phone printed before the image; text
        alone is :class:`NotAnImageError` (the phone answered, so it is not a disconnect)."""
        data = self._exec(command, self._config.frame_timeout_s)
        text, image = split_text_prefix(data)
        if text:
            message = text.decode("utf-8", "replace").strip()
            if not image:
                raise NotAnImageError(
                    f"[{self._serial}] {command} printed {message[:300]!r} instead of an image"
                )
            if not self._warned_text:
                # Harmless once stripped (the multi-display notice of foldables and Android 12+
                # emulators): said once, on one line, at INFO.
                lines = message.splitlines()
                more = f" (+{len(lines) - 1} more lines)" if len(lines) > 1 else ""
                log.info("[%s] %s printed text before its image (ignored): %s%s", self._serial,
                         command, lines[0][:200], more)
                self._warned_text = True
        return image

    def capture_frame(self) -> FrameCapture:
        if self._raw_frames is not False:
            epoch = self._epoch
            start = now_ns()
            data = self._image_output("screencap")
            end = now_ns()
            try:
                header = parse_raw_header(data)
            except FrameError:
                if self._raw_frames is None and len(data) >= 64:
                    log.warning("[%s] raw screencap not understood; using PNG", self._serial)
                    self._raw_frames = False
                    return self.capture_frame()
                raise self._truncated("raw screencap", len(data), "a header") from None
            if len(data) < header.total_bytes:
                raise self._truncated("raw screencap", len(data), header.total_bytes)
            self._raw_frames = True
            return FrameCapture(
                data=data, fmt=FrameFormat.RAW, start_ns=start, end_ns=end, epoch=epoch,
                serial=self._serial,
            )
        return self.capture_png()

    def capture_png(self) -> FrameCapture:
        epoch = self._epoch
        start = now_ns()
        data = self._image_output("screencap -p")
        end = now_ns()
        if not data.startswith(_PNG_MAGIC):
            if len(data) < 64:
                raise self._truncated("PNG screencap", len(data), "a PNG")
            raise NotAnImageError(f"[{self._serial}] screencap -p returned {data[:60]!r}")
        if _PNG_END not in data[-16:]:
            raise self._truncated("PNG screencap", len(data), "IEND")
        return FrameCapture(
            data=data, fmt=FrameFormat.PNG, start_ns=start, end_ns=end, epoch=epoch,
            serial=self._serial,
        )

    # ----- screen facts ------------------------------------------------------------------

    def screen_facts(self, *, refresh: bool = False) -> ScreenFacts:
        facts = self._facts
        if facts is not None and not refresh:
            return facts
        size_text = self.run("wm size").decode("utf-8", "replace")
        density_text = self.run("wm density").decode("utf-8", "replace")
        window_text = self.run("dumpsys window").decode("utf-8", "replace")
        physical = parse_wm_size(size_text)
        if physical is None:
            raise DeviceError(f"cannot read 'wm size': {size_text[:120]!r}", serial=self._serial)
        window = parse_dumpsys_window(window_text)
        rotation = int(window.get("rotation", 0))  # type: ignore[call-overload]
        size = window.get("size")
        if not isinstance(size, ScreenSize):
            size = (
                ScreenSize(physical.height_px, physical.width_px) if rotation % 2 else physical
            )
        insets = window.get("insets")
        facts = ScreenFacts(
            size=size,
            density_dpi=parse_wm_density(density_text) or 0,
            rotation=rotation,
            package=str(window.get("package", "")),
            activity=str(window.get("activity", "")),
            insets=insets if isinstance(insets, Insets) else Insets(),
            captured_ns=now_ns(),
        )
        self._facts = facts
        return facts

    # ----- input (used by the recorder and tests; agents use their own executor) ----------

    def input(self, *args: str | int) -> None:
        """``input ARGS`` (``tap X Y``, ``swipe ...``, ``keyevent BACK``); starts a new epoch."""
        self.new_epoch()
        self.run("input " + " ".join(sh_quote(a) for a in args))

    # ----- the screen's power: asleep, locked ------------------------------------------

    def power_state(self) -> PowerState:
        """Is the screen on, and the lock screen up? A phone whose screen went off while a
        model was thinking gives black frames, which read as a FLAG_SECURE screen."""
        power = self.run("dumpsys power").decode("utf-8", "replace")
        # The policy section alone: the whole of `dumpsys window` is hundreds of KB on a phone.
        window = self.run("dumpsys window policy").decode("utf-8", "replace")
        return parse_power_state(power, window)

    # ----- apps -----------------------------------------------------------------------------

    def launchable_apps(self) -> tuple[str, ...]:
        """The activities a launcher shows, as ``package/activity`` components (the phone's
        order; :data:`LAUNCHER_QUERY`, Android 7+). :class:`DeviceError` when the phone cannot
        say (it printed no component: an older Android, or an error)."""
        text = self.run(LAUNCHER_QUERY).decode("utf-8", "replace")
        apps = parse_components(text)
        if not apps:
            raise DeviceError(
                f"the phone listed no launcher activity ({LAUNCHER_QUERY!r} printed "
                f"{text.strip()[:160]!r})",
                serial=self._serial,
            )
        return apps

    def start_app(self, component: str) -> None:
        """Start ``component`` (``package/activity``, one :meth:`launchable_apps` lists) as the
        launcher does: an app already running comes back where it was (``am start`` of MAIN,
        LAUNCHER with NEW_TASK and RESET_TASK_IF_NEEDED). Starts a new epoch;
        :class:`AppStartError` when the phone refuses (no such activity, not exported)."""
        if not COMPONENT.fullmatch(component):
            raise AppStartError(f"{component!r} is not a package/activity", serial=self._serial)
        self.new_epoch()
        out = self.run(
            "am start -a android.intent.action.MAIN -c android.intent.category.LAUNCHER "
            f"-f 0x10200000 -n {sh_quote(component)}"
        ).decode("utf-8", "replace")
        # am prints "Error: Activity class {...} does not exist." or "Error type 3" and still
        # exits 0; "Warning: Activity not started, its current task has been brought to the
        # front" is a start (the app was already on top).
        lines = [ln.strip() for ln in out.splitlines()]
        errors = [ln for ln in lines if ln.startswith(("Error", "java."))]
        if errors:
            raise AppStartError(
                f"the phone did not start {component}: {' '.join(errors)[:200]}",
                serial=self._serial,
            )

    def dismiss_keyguard(self) -> None:
        """Open a lock screen that asks for nothing (a swipe: ``wm dismiss-keyguard``; one with
        a PIN stays); starts a new epoch."""
        self.new_epoch()
        self.run("wm dismiss-keyguard")

    def wake(self) -> None:
        """Turn the screen on (``KEYCODE_WAKEUP``: does nothing to a screen that is on);
        starts a new epoch. A lock screen stays: a person unlocks it."""
        self.input("keyevent", "KEYCODE_WAKEUP")

    # ----- input methods: typing what ``input text`` cannot ------------------------------

    def input_method(self) -> str:
        """The id of the current input method (``settings get secure default_input_method``),
        ``""`` when the phone names none."""
        text = self.run("settings get secure default_input_method").decode("utf-8", "replace")
        text = text.strip()
        return "" if text == "null" else text

    def input_methods(self, *, installed: bool = False) -> tuple[str, ...]:
        """Ids of the enabled input methods (``ime list -s``), or with ``installed`` of every
        installed one (``ime list -a -s``)."""
        out = self.run("ime list -a -s" if installed else "ime list -s")
        ids = (line.strip() for line in out.decode("utf-8", "replace").splitlines())
        return tuple(i for i in ids if COMPONENT.fullmatch(i))

    def select_input_method(self, ime_id: str) -> str:
        """Enable ``ime_id`` and make it the current input method; returns the one it replaced
        (to put back with this same call). :class:`InputMethodError` when the phone kept
        another one (not installed, or refused)."""
        if not COMPONENT.fullmatch(ime_id):
            raise InputMethodError(f"{ime_id!r} is not an input method id", serial=self._serial)
        before = self.input_method()
        if before == ime_id:
            return before
        self.run(f"ime enable {ime_id}")
        self.run(f"ime set {ime_id}")
        now = self.input_method()
        if now != ime_id:
            hint = (
                " (install ADB Keyboard: https://github.com/senzhk/ADBKeyBoard, also on F-Droid)"
                if ime_id == ADB_KEYBOARD_IME and ime_id not in self.input_methods(installed=True)
                else ""
            )
            raise InputMethodError(
                f"could not select the input method {ime_id}: the phone kept {now or 'none'}"
                + hint,
                serial=self._serial,
            )
        log.info("[%s] input method %s (was %s)", self._serial, ime_id, before or "none")
        return before

    def disable_input_method(self, ime_id: str) -> None:
        """Take ``ime_id`` off the enabled input methods (``ime disable``; the phone picks
        another when it was the current one)."""
        if not COMPONENT.fullmatch(ime_id):
            raise InputMethodError(f"{ime_id!r} is not an input method id", serial=self._serial)
        self.run(f"ime disable {ime_id}")

    def type_text(self, text: str) -> None:
        """Type ``text``, any characters, into the focused field through ADB Keyboard; starts a
        new epoch. :class:`InputMethodError` when ADB Keyboard is not the current input method:
        its broadcast would be delivered to nobody, and the phone would say it was."""
        self._broadcast_text(
            f"-a ADB_INPUT_B64 --es msg {_b64(text)}", "typing text that is not printable ASCII"
        )

    def clear_text(self) -> None:
        """Delete all the focused field holds, through ADB Keyboard (one broadcast, whatever
        its length); starts a new epoch. :class:`InputMethodError` when ADB Keyboard is not the
        current input method."""
        self._broadcast_text("-a ADB_CLEAR_TEXT", "clearing a field in one command")

    def _broadcast_text(self, intent: str, what: str) -> None:
        current = self.input_method()
        if current != ADB_KEYBOARD_IME:
            raise InputMethodError(
                f"{what} needs ADB Keyboard as the input method "
                f"(current: {current or 'none'}); install it "
                "(https://github.com/senzhk/ADBKeyBoard, also on F-Droid) and select it: "
                f"`adb shell ime enable {ADB_KEYBOARD_IME} && adb shell ime set "
                f"{ADB_KEYBOARD_IME}`, or `perception-agent --ime adbkeyboard`",
                serial=self._serial,
            )
        self.new_epoch()
        out = self.run(f"am broadcast {intent}")
        if b"Broadcast completed" not in out:
            raise InputMethodError(
                f"the phone did not deliver the broadcast to ADB Keyboard: {out[:160]!r}",
                serial=self._serial,
            )

    def close(self) -> None:
        """Refuse new commands and abort those in flight (a dump can take its whole deadline:
        an engine stopping on Ctrl-C would wait for it)."""
        with self._lock:
            self._closed = True
            streams = list(self._open)
        for conn in streams:
            try:
                conn.conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed by its thread

    def __enter__(self) -> DeviceSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()




def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


