"""Recordings: a session saved as a folder, and the corpus trace layout read as one.

Our format (written by :class:`perception.sources.record.RecordingWriter`)::

    OUT_DIR/
      meta.json        {"format": "perception-recording", "version": 1, "serial": ...,
                        "created_utc": ..., "screen": {"width_px", "height_px", "density_dpi",
                        "rotation"}, "insets": {"top_px", ...}, "package": ...,
                        "clock": "ns offsets from the first capture (time.monotonic_ns)"}
      steps.jsonl      one JSON object per step, in order:
                       {"step": 0, "tree": "step_000/screen.xml", "frame": "step_000/screen.png",
                        "tree_start_ns": 0, "tree_end_ns": 812000000,
                        "frame_start_ns": 5000000, "frame_end_ns": 90000000,
                        "epoch": 0, "package": "...", "activity": "...", "rotation": 0,
                        "keyboard": [l, t, r, b],
                        "action": {"kind": "tap", "point_px": [x, y], "target_px": [l, t, r, b],
                                   "result_step": 1} | null}
      step_NNN/screen.xml, step_NNN/screen.png|jpg

``keyboard`` is the on-screen keyboard's box (device pixels, in the step's rotation) as the
phone's window manager reported it right after the dump; the key is left out when none was up
or the phone did not say (recordings made before it was kept read the same way). Most dumps
hold the app's window only, so without it a replay would offer the app's elements under the
keyboard.

``action`` is the action taken *next*, from this step's screen. Kinds: ``tap``, ``long_tap``,
``swipe`` (``point_px`` -> ``end_px``, ``duration_ms``), ``text`` (``text``), ``key`` (``key``:
``BACK``, ``HOME``, ``ENTER`` ...), ``intent`` (``intent``), ``none``. ``result_step`` is the
step the action led to when known (else the following step is assumed).

The corpus layout (``<source>/<trace>/trace.json`` + ``step_NNN/{screen.xml, screen.png|jpg,
meta.json}``) reads as a recording too: DroidBot actions come from the step's
``meta.json`` ``trace.action_to_next`` (or ``trace.json``), whose ``target.bounds`` is the tapped
view; LlamaTouch clicks are given in a downscaled ``coord_space`` and are converted to device
pixels with :func:`perception.geometry.point_scaled_to_px`. Steps removed by verification are
skipped. DroidBot state tags (``2018-06-05_105841``) give the original timing (1 s resolution);
traces without times are spaced :data:`DEFAULT_STEP_INTERVAL_NS` apart. A single sample folder
(``screen.xml`` + image, no ``trace.json``) is a one-step recording.

Every file a recording names (``tree``, ``frame``, a trace's ``dir``) must lie inside the
recording folder once resolved, symlinks included: a shared recording is someone else's
data, and ``"tree": "/etc/passwd"``, ``"../private/x.xml"`` or a step file linked out of the
folder would have replay, export and the virtual phone (which hands dumps to any adb client)
read and serve a file of this host. Our recorder and the corpus only ever name files inside
the folder. The check is made again at each read of a dump or frame (on the file opened, so
a file swapped for a link out of the folder while a replay or the virtual phone runs is
refused as at open). Every file is read to a limit: dumps and frames to the tree and pixel
channels' own, ``meta.json`` and ``action.droidbot.json`` to :data:`MAX_META_BYTES`,
``trace.json`` to :data:`MAX_TRACE_BYTES`, and ``steps.jsonl`` line by line to
:data:`MAX_STEP_LINE_BYTES` a line, :data:`MAX_STEPS` steps and :data:`MAX_STEPS_FILE_BYTES`
in all: a huge or endlessly nested file is a :class:`RecordingError` before it fills the memory.
"""

from __future__ import annotations

import datetime as _dt
import enum
import json
import logging
import math
import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from perception.config import PixelConfig, TreeConfig, max_frame_bytes
from perception.errors import (
    ImplausibleFrameSizeError,
    InputError,
    RecordingError,
    UnsafeXmlError,
)
from perception.geometry import box_arg, point_scaled_to_px
from perception.sources.base import FrameFormat, Insets
from perception.types import BoxPx, PointPx, ScreenSize

log = logging.getLogger(__name__)

FORMAT_NAME = "perception-recording"
FORMAT_VERSION = 1
DEFAULT_STEP_INTERVAL_NS = 1_000_000_000
_BOUNDS_RE = re.compile(r"\[(-?\d+),(-?\d+)\]\[(-?\d+),(-?\d+)\]")
_TAG_RE = re.compile(r"^(\d{4}-\d{2}-\d{2}_\d{6})")
MAX_STEPS = 100_000
"""Steps one recording may list: ten times a 10,000-step session (hours of recording at a
step every few seconds). Each step kept costs about a kilobyte of memory."""
MAX_STEP_LINE_BYTES = 1 << 20
"""Bytes one ``steps.jsonl`` line may hold: a recorded step takes about 400, its typed text
at most a few more thousand; parsing a line holds some twenty times its size."""
MAX_STEPS_FILE_BYTES = 128 << 20
"""Bytes ``steps.jsonl`` may hold: :data:`MAX_STEPS` steps of 1,300 bytes (a real
10,000-step recording takes about 5 MB); what the steps keep of it stays in memory."""
MAX_TRACE_BYTES = 16 << 20
"""Bytes a corpus ``trace.json`` may hold: the corpus's largest takes 22 KB for 45 steps."""
MAX_META_BYTES = 1 << 20
"""Bytes a ``meta.json`` or ``action.droidbot.json`` may hold: the corpus's largest take 4 KB."""


@enum.unique
class ActionKind(enum.StrEnum):
    TAP = "tap"
    LONG_TAP = "long_tap"
    SWIPE = "swipe"
    TEXT = "text"
    KEY = "key"
    INTENT = "intent"
    NONE = "none"


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedAction:
    """The action taken from a step's screen, in device pixels."""

    kind: ActionKind
    point_px: PointPx | None = None
    end_px: PointPx | None = None
    target_px: BoxPx | None = None
    """The view the action was aimed at, when recorded."""
    text: str = ""
    key: str = ""
    intent: str = ""
    duration_ms: int = 0
    result_step: int | None = None
    raw: str = ""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind.value}
        if self.point_px is not None:
            out["point_px"] = list(self.point_px)
        if self.end_px is not None:
            out["end_px"] = list(self.end_px)
        if self.target_px is not None:
            out["target_px"] = list(self.target_px)
        for name in ("text", "key", "intent", "raw"):
            value = getattr(self, name)
            if value:
                out[name] = value
        if self.duration_ms:
            out["duration_ms"] = self.duration_ms
        out["result_step"] = self.result_step
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> RecordedAction:
        try:
            kind = ActionKind(obj["kind"])
            point = obj.get("point_px")
            end = obj.get("end_px")
            target = obj.get("target_px")
            result = obj.get("result_step")
            return cls(
                kind=kind,
                point_px=PointPx(*_wholes(point, 2, "point_px")) if point else None,
                end_px=PointPx(*_wholes(end, 2, "end_px")) if end else None,
                target_px=BoxPx(*_wholes(target, 4, "target_px")) if target else None,
                text=str(obj.get("text", "")),
                key=str(obj.get("key", "")),
                intent=str(obj.get("intent", "")),
                duration_ms=_whole(obj.get("duration_ms", 0), "duration_ms"),
                result_step=None if result is None else _whole(result, "result_step"),
                raw=str(obj.get("raw", "")),
            )
        except (KeyError, ValueError, TypeError, IndexError) as exc:  # RecordingError too
            raise RecordingError(f"bad action record {obj!r}: {exc}") from exc


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedStep:
    """One recorded screen: file paths, capture times (ns offsets) and the action taken next."""

    step: int
    """The step number as recorded (corpus numbers may have gaps where steps were removed)."""
    tree_path: Path
    frame_path: Path | None
    frame_fmt: FrameFormat | None
    tree_start_ns: int
    tree_end_ns: int
    frame_start_ns: int
    frame_end_ns: int
    epoch: int = 0
    package: str = ""
    activity: str = ""
    rotation: int = 0
    screen: ScreenSize | None = None
    insets: Insets = Insets()
    action: RecordedAction | None = None
    keyboard_px: BoxPx | None = None
    """The on-screen keyboard the phone reported with the dump (``"keyboard"``), else None."""
    root: Path | None = None
    """The recording folder, resolved, that each read checks the opened file lies in (its
    files may be swapped for links out of it after it was opened); None for a dump given
    alone, which is read where it leads."""

    def read_tree(self) -> bytes:
        """The dump's bytes, at most twice ``TreeConfig.max_input_bytes`` (UTF-16 shrinks by up
        to half, as :func:`perception.tree.parse.read_dump` allows): a larger file is an
        :class:`UnsafeXmlError` before it is read."""
        limit = 2 * TreeConfig.from_env().max_input_bytes
        data = _read_file(self.root, self.tree_path, self.step, "tree", limit)
        if data is None:
            raise UnsafeXmlError(
                f"step {self.step}: the dump {self.tree_path} holds more than {limit} bytes: "
                "over the limit even as UTF-16 (PERCEPTION_TREE_MAX_INPUT_BYTES)"
            )
        return data

    def read_frame(self) -> bytes:
        """The screenshot's bytes, at most :func:`max_frame_bytes`: a larger file is an
        :class:`ImplausibleFrameSizeError` before it is read."""
        if self.frame_path is None:
            raise RecordingError(f"step {self.step} has no frame")
        limit = max_frame_bytes(PixelConfig.from_env())
        data = _read_file(self.root, self.frame_path, self.step, "frame", limit)
        if data is None:
            raise ImplausibleFrameSizeError(
                f"step {self.step}: the frame {self.frame_path} holds more than {limit} bytes, "
                "more than any screen capture takes (PERCEPTION_PIXEL_MAX_SIDE_PX): not a "
                "screenshot"
            )
        return data


def _read_file(root: Path | None, path: Path, step: int, what: str, limit: int) -> bytes | None:
    """A step's file, None when it holds more than ``limit`` bytes (a regular file is
    measured before anything is read; a dump given alone, ``root`` None, may be a pipe and is
    read to ``limit + 1``), or :class:`RecordingError` (deleted, unreadable, not a regular
    file, or now outside ``root``) naming step and path."""
    try:
        with _open_inside(root, path, f"step {step}", what) as f:
            return _read_to(f, limit)
    except OSError as exc:
        raise RecordingError(f"step {step}: cannot read its {what} {path}: {exc}") from exc


def _read_to(f: BinaryIO, limit: int) -> bytes | None:
    """An open file's bytes, None when it holds more than ``limit`` (a regular file measured
    before anything is read, anything else read to ``limit + 1``)."""
    info = os.fstat(f.fileno())
    if stat.S_ISREG(info.st_mode) and info.st_size > limit:
        return None
    data = f.read(limit + 1)
    return None if len(data) > limit else data


def _open_inside(root: Path | None, path: Path, where: str, what: str) -> BinaryIO:
    """``path`` opened for reading, once the file opened is known to be a regular file lying
    inside the resolved recording folder ``root`` (no check when None), else
    :class:`RecordingError` as :func:`_inside` says it, or naming what the path is instead.
    The file opened is the one checked, so a file swapped for a symlink out of the folder after
    the recording was opened (or between a check and the open) is refused, not followed. The
    open does not wait (``O_NONBLOCK``, cleared once checked): a FIFO swapped in would block a
    plain open until something writes to it. Symlinks inside the folder stay allowed (no
    ``O_NOFOLLOW``): where the descriptor leads is what is checked. OSError passes (the caller
    names the file)."""
    if root is None:
        return open(path, "rb")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        try:
            real = _real_path(fd, path)
            mode = os.fstat(fd).st_mode
        except OSError as exc:
            raise RecordingError(f"{where}: cannot resolve its {what} {path}: {exc}") from exc
        top = str(root).rstrip(os.sep) + os.sep  # strings: a Path per read costs more
        if real is None or not (real + os.sep).startswith(top):
            raise RecordingError(
                f"{where}: its {what} {path} leads to {real or 'another file'}, outside the "
                f"recording folder {root}: a recording reads only its own files; copy the file "
                "into the folder"
            )
        if not stat.S_ISREG(mode):
            raise RecordingError(
                f"{where}: its {what} {path} is {_file_kind(mode)}, not a regular file: a "
                "recording reads only files it holds whole; put the file itself there"
            )
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    # Outside the try: once fdopen has made the file, the file alone closes the descriptor. An
    # interruption inside fdopen (Ctrl-C, SIGTERM) must not close the number a second time: by
    # then it may be another phone's socket's.
    return os.fdopen(fd, "rb")


def _file_kind(mode: int) -> str:
    """What a file that is not a regular file is, for a message."""
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a regular file"


def _real_path(fd: int, path: Path) -> str | None:
    """Where the open file ``fd`` lies: the kernel's own word (``/proc/self/fd``, one system
    call) where there is one; else ``path`` resolved, when the file there is still ``fd``'s
    (None when another file has taken its place since the open)."""
    try:
        link = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        real = os.path.realpath(path)
        opened, there = os.fstat(fd), os.stat(real)
        same = (opened.st_dev, opened.st_ino) == (there.st_dev, there.st_ino)
        return real if same else None
    return link.removesuffix(" (deleted)")


def _inside(
    root: Path, path: Path, where: str, what: str, *, folders: dict[str, str] | None = None
) -> Path:
    """``path`` when it lies inside the recording folder ``root`` once resolved (``..``,
    an absolute path and symlinks followed), else :class:`RecordingError` naming the
    recording (``where``: its file and line or step), the file and where it leads.

    ``folders`` (a reader's own, for one recording) keeps each folder resolved once, the
    recording folder's too: a step's file is then its folder's resolution and its name,
    resolved further only when the name is a symlink (one ``lstat``), where resolving it
    whole took a system call per component of the path and the folder's again."""
    try:
        if folders is None:
            resolved, top = str(path.resolve()), str(root.resolve())
        else:
            key = os.fspath(root)
            top = folders.get(key) or folders.setdefault(key, str(root.resolve()))
            folder, name = os.path.split(os.fspath(path))
            base = folders.get(folder) or folders.setdefault(folder, str(Path(folder).resolve()))
            resolved = os.path.join(base, name)
            if name in ("", ".", "..") or "\0" in name or os.path.islink(resolved):
                resolved = str(path.resolve())
        inside = resolved == top or resolved.startswith(top.rstrip(os.sep) + os.sep)
    except (OSError, RuntimeError, ValueError) as exc:
        # RuntimeError: a symlink loop (Python 3.11); ValueError: a NUL in the name
        raise RecordingError(f"{where}: cannot resolve its {what} {path}: {exc}") from exc
    if not inside:
        raise RecordingError(
            f"{where}: its {what} {path} leads to {resolved}, outside the recording folder "
            f"{root}: a recording reads only its own files; copy the file into the folder"
        )
    return path


@dataclass(frozen=True, slots=True, kw_only=True)
class Recording:
    root: Path
    kind: str
    """``perception`` (our format), ``corpus-trace`` or ``corpus-sample``."""
    steps: tuple[RecordedStep, ...]
    meta: Mapping[str, Any]
    density_dpi: int
    serial: str
    skipped: tuple[str, ...] = ()
    """Steps a corpus trace lists but that could not be kept, each ``"<dir>: why"`` (a step
    folder without its dump); steps the trace marks ``removed`` are not counted."""

    def position_of(self, step: int) -> int | None:
        """The index in :attr:`steps` of the recorded step number ``step``."""
        for i, s in enumerate(self.steps):
            if s.step == step:
                return i
        return None

    @property
    def screen(self) -> ScreenSize:
        for s in self.steps:
            if s.screen is not None:
                return s.screen
        raise RecordingError(f"{self.root}: no step says its screen size")


def parse_bounds(text: str) -> BoxPx | None:
    m = _BOUNDS_RE.search(text or "")
    if not m:
        return None
    return BoxPx(int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)))


def guess_density_dpi(screen: ScreenSize) -> int:
    """A plausible density for a recording that did not store one (by the short side)."""
    short = min(screen.width_px, screen.height_px)
    if short <= 480:
        return 240
    if short <= 720:
        return 320
    if short <= 1080:
        return 420
    return 560


def read_recording(path: str | Path) -> Recording:
    """Open a recording folder (our format, a corpus trace or a corpus sample)."""
    root = Path(path)
    if not root.is_dir():
        what = "not a folder" if root.exists() else "no such folder"
        raise RecordingError(f"{root}: {what}")
    # exists(), not is_file(): a steps.jsonl, trace.json or screen.xml that is a FIFO, a
    # device or a folder says which layout was meant, and its read names what it is instead.
    if (root / "steps.jsonl").exists():
        return _read_ours(root)
    layout = (
        _read_corpus_trace if (root / "trace.json").exists()
        else _read_corpus_sample if (root / "screen.xml").exists()
        else None
    )
    if layout is not None:
        try:
            return layout(root)
        except RecordingError:
            raise
        except (AttributeError, KeyError, TypeError, ValueError, IndexError) as exc:
            # A corpus file of another shape (a list for an object, text for a number): one
            # unreadable recording, not a traceback that ends an export of the whole corpus.
            raise RecordingError(
                f"{root}: a trace.json or meta.json field has an unexpected shape "
                f"({type(exc).__name__}: {exc})"
            ) from exc
    raise RecordingError(
        f"{root}: neither a perception recording (steps.jsonl), a corpus trace (trace.json) "
        "nor a sample folder (screen.xml)"
    )


def _load_json(root: Path, path: Path, limit: int) -> Any:
    """A JSON file of the recording folder (resolved ``root``), read to ``limit`` bytes, or
    RecordingError naming the file: too big, nested too deep, not JSON, unreadable."""
    try:
        with _open_inside(root, path, str(path.parent), path.name) as f:
            data = _read_to(f, limit)
    except OSError as exc:
        raise RecordingError(f"{path}: {exc}") from exc
    if data is None:
        raise RecordingError(
            f"{path}: holds more than {limit} bytes, far more than any recording's "
            f"{path.name} takes: not a recording's file; remove or replace it"
        )
    return _json_value(data, str(path))


def _json_value(data: bytes | str, where: str) -> Any:
    """``data`` parsed, or RecordingError naming ``where`` (a file, or a file and line)."""
    try:
        return json.loads(data)
    except RecursionError:
        raise RecordingError(
            f"{where}: JSON nested deeper than Python's parser follows: not a recording's file"
        ) from None
    except ValueError as exc:  # UnicodeDecodeError included
        raise RecordingError(f"{where}: {exc}") from exc


def _frame_fmt(path: Path) -> FrameFormat:
    return FrameFormat.JPEG if path.suffix.lower() in {".jpg", ".jpeg"} else FrameFormat.PNG


def _meta_object(root: Path, path: Path, limit: int = MAX_META_BYTES) -> dict[str, Any]:
    """A JSON file that must hold an object (``meta.json``, ``trace.json``)."""
    obj = _load_json(root, path, limit)
    if not isinstance(obj, dict):
        raise RecordingError(
            f"{path}: expected a JSON object, got a {type(obj).__name__}: rewrite or remove it"
        )
    return obj


def _number(
    value: Any, where: str, *, least: float | None = None, most: float | None = None
) -> int | float:
    """A numeric field of a recording's JSON (``1080``, ``"1080"``, ``5.5``), finite and within
    ``least`` .. ``most`` when given, or RecordingError naming the file and the field: the one
    reader of every number a recording holds, so a hand-edited or foreign file (``Infinity``,
    ``1e999``, ``NaN``, ``true``, a list, a zero click space) fails as one unreadable
    recording, never as an overflow or a division by zero deeper in."""
    number: int | float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):  # int(True) is 1
        number = value
    elif isinstance(value, str):
        for kind in (int, float):
            try:
                number = kind(value)
                break
            except ValueError:
                continue
    if number is None or not math.isfinite(number):
        raise RecordingError(f"{where}: expected a number, got {value!r}")
    if (least is not None and number < least) or (most is not None and number > most):
        span = f"{least:g} to {most:g}" if least is not None and most is not None else (
            f"at least {least:g}" if least is not None else f"at most {most:g}"
        )
        raise RecordingError(f"{where}: expected a number {span}, got {value!r}")
    return number


def _whole(value: Any, where: str, *, least: int | None = None) -> int:
    """An integer field of a recording's JSON (``1080``, ``"1080"``, ``1080.0``): a
    :func:`_number` without a fraction (``"step": 1.5`` is no step), else RecordingError
    naming the file and the field."""
    if type(value) is int and (least is None or value >= least):
        return value  # what recordings hold: the checks below are for anything else
    number: int | float | None
    try:
        number = _number(value, where)
    except RecordingError:
        number = None
    if number is None or (isinstance(number, float) and not number.is_integer()):
        raise RecordingError(f"{where}: expected a whole number, got {value!r}")
    if least is not None and number < least:
        raise RecordingError(
            f"{where}: expected a whole number of at least {least}, got {value!r}"
        )
    return int(number)


def _wholes(value: Any, count: int, where: str, *, least: int | None = None) -> list[int]:
    """A list field of ``count`` whole numbers (``"screen": [1080, 2400]``), else
    RecordingError: text (``"1080x2400"``), another length or a bad number."""
    if not isinstance(value, list | tuple) or len(value) != count:
        raise RecordingError(f"{where}: expected a list of {count} whole numbers, got {value!r}")
    return [_whole(v, f"{where}[{i}]", least=least) for i, v in enumerate(value)]


def _screen(value: Any, where: str) -> ScreenSize:
    """A screen size field, ``[width, height]``, both at least 1 px."""
    width, height = _wholes(value, 2, where, least=1)
    return ScreenSize(width, height)


_INSET_FIELDS = ("top_px", "bottom_px", "left_px", "right_px")


def _keyboard_box(value: Any, where: str) -> BoxPx | None:
    """A step's ``"keyboard"`` (:func:`perception.geometry.box_arg`'s rules: four whole numbers
    with an area; ``null`` or no key: none up), or RecordingError naming the file and line."""
    try:
        return box_arg("'keyboard'", value)
    except InputError as exc:
        raise RecordingError(f"{where}: {exc}: fix or remove it") from exc


def _step_object(line: str, where: str) -> Any:
    """One line of ``steps.jsonl`` as a JSON object, or RecordingError saying what it is."""
    obj = _json_value(line, where)
    if not isinstance(obj, dict):
        raise RecordingError(
            f"{where}: expected a JSON object (a step), got {line.strip()[:80]!r}"
        )
    return obj


def _real_root(root: Path) -> Path:
    """The recording folder resolved once: what each read checks its file against."""
    try:
        return root.resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python 3.11)
        raise RecordingError(f"{root}: cannot resolve the folder: {exc}") from exc


def _step_lines(real_root: Path, path: Path) -> Iterator[tuple[int, str | RecordingError]]:
    """``steps.jsonl``'s lines with their numbers, read one at a time: a line over
    :data:`MAX_STEP_LINE_BYTES` or a file over :data:`MAX_STEPS_FILE_BYTES` is a
    :class:`RecordingError` once that much is read (a regular file's size before anything),
    so a file without line breaks or without end never fills the memory. A line that is not
    UTF-8 comes as its error (the caller decides: the last one may be a write cut short)."""
    too_big = RecordingError(
        f"{path}: holds more than {MAX_STEPS_FILE_BYTES} bytes, more than {MAX_STEPS} "
        "recorded steps take: not a recording's steps.jsonl; split the recording"
    )
    try:
        with _open_inside(real_root, path, str(path.parent), "steps.jsonl") as f:
            info = os.fstat(f.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_size > MAX_STEPS_FILE_BYTES:
                raise too_big
            total = lineno = 0
            while raw := f.readline(MAX_STEP_LINE_BYTES + 1):
                lineno += 1
                total += len(raw)
                if len(raw) > MAX_STEP_LINE_BYTES:
                    raise RecordingError(
                        f"{path} line {lineno}: longer than {MAX_STEP_LINE_BYTES} bytes, "
                        "far more than a recorded step takes: not a recording's steps.jsonl"
                    )
                if total > MAX_STEPS_FILE_BYTES:
                    raise too_big
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    yield lineno, RecordingError(f"{path} line {lineno}: {exc}")
                    continue
                yield lineno, line
    except OSError as exc:
        raise RecordingError(f"{path}: {exc}") from exc


def _step_objects(real_root: Path, path: Path) -> Iterator[tuple[int, Any]]:
    """The step objects of ``steps.jsonl`` with their line numbers. A last line cut
    short, after whole steps, is dropped with a warning: the writer appends a step's line and
    rewrites it in place for its action (:class:`perception.sources.record.RecordingWriter`),
    so a process killed inside that one write (SIGKILL, a power cut) leaves the start of a
    JSON object that does not parse (or a UTF-8 character cut in two), and the steps before
    it whole. Any other bad line (valid JSON that is no step, nesting past the parser, or a
    bad line before the last) is an error."""
    pending: tuple[int, str | RecordingError] | None = None
    whole = 0
    for lineno, line in _step_lines(real_root, path):
        if isinstance(line, str) and not line.strip():
            continue
        if pending is not None:
            yield _parsed(path, *pending)
            whole += 1
        pending = (lineno, line)
    if pending is None:
        return
    try:
        last = _parsed(path, *pending)
    except RecordingError as exc:
        line = pending[1]
        torn = isinstance(line, RecordingError) or (
            line.lstrip().startswith("{") and isinstance(exc.__cause__, json.JSONDecodeError)
        )
        if not (torn and whole):
            raise
        log.warning(
            "%s: the last line is not a whole step (%s): left out, as a write the recording "
            "process did not finish", path, exc,
        )
        return
    yield last


def _parsed(path: Path, lineno: int, line: str | RecordingError) -> tuple[int, Any]:
    if isinstance(line, RecordingError):
        raise line
    return lineno, _step_object(line, f"{path.parent}/steps.jsonl line {lineno}")


def _read_ours(root: Path) -> Recording:
    folders: dict[str, str] = {}
    meta_path = _inside(root, root / "meta.json", str(root), "meta.json", folders=folders)
    _inside(root, root / "steps.jsonl", str(root), "steps.jsonl", folders=folders)
    real_root = _real_root(root)
    meta = _meta_object(real_root, meta_path) if meta_path.exists() else {}
    if meta and meta.get("format") != FORMAT_NAME:
        raise RecordingError(f"{meta_path}: format is {meta.get('format')!r}")
    screen_meta = meta.get("screen") or {}
    if not isinstance(screen_meta, dict):
        raise RecordingError(f"{meta_path}: 'screen' must be an object, got {screen_meta!r}")
    default_screen = (
        ScreenSize(
            _whole(screen_meta["width_px"], f"{meta_path} screen.width_px", least=1),
            _whole(screen_meta.get("height_px"), f"{meta_path} screen.height_px", least=1),
        )
        if "width_px" in screen_meta
        else None
    )
    insets_meta = meta.get("insets") or {}
    if not isinstance(insets_meta, dict) or not set(insets_meta) <= set(_INSET_FIELDS):
        raise RecordingError(
            f"{meta_path}: 'insets' must be an object of {', '.join(_INSET_FIELDS)}, "
            f"got {insets_meta!r}"
        )
    insets = Insets(**{k: _whole(v, f"{meta_path} insets.{k}") for k, v in insets_meta.items()})
    density_given = screen_meta.get("density_dpi")
    density_dpi = (
        _whole(density_given, f"{meta_path} screen.density_dpi", least=1) if density_given else 0
    )
    steps: list[RecordedStep] = []
    for lineno, obj in _step_objects(real_root, root / "steps.jsonl"):
        where = f"{root}/steps.jsonl line {lineno}"
        if len(steps) >= MAX_STEPS:
            raise RecordingError(
                f"{where}: more than {MAX_STEPS} steps, more than any recorded session "
                "holds: split the recording"
            )
        keyboard = _keyboard_box(obj.get("keyboard"), where)
        try:
            frame_rel = obj.get("frame")
            frame_path = root / frame_rel if frame_rel else None
            tree_path = root / obj["tree"]
        except (KeyError, TypeError) as exc:
            raise RecordingError(f"{where}: {exc}") from exc
        step_where = f"{where} (step {obj.get('step')})"
        _inside(root, tree_path, step_where, "tree", folders=folders)
        if frame_path is not None:
            _inside(root, frame_path, step_where, "frame", folders=folders)
        try:
            size = obj.get("screen")
            steps.append(
                RecordedStep(
                    step=_whole(obj["step"], "step"),
                    tree_path=tree_path,
                    frame_path=frame_path,
                    frame_fmt=_frame_fmt(frame_path) if frame_path else None,
                    tree_start_ns=_whole(obj["tree_start_ns"], "tree_start_ns"),
                    tree_end_ns=_whole(obj["tree_end_ns"], "tree_end_ns"),
                    frame_start_ns=_whole(
                        obj.get("frame_start_ns", obj["tree_start_ns"]), "frame_start_ns"
                    ),
                    frame_end_ns=_whole(
                        obj.get("frame_end_ns", obj["tree_end_ns"]), "frame_end_ns"
                    ),
                    epoch=_whole(obj.get("epoch", 0), "epoch"),
                    package=str(obj.get("package", "")),
                    activity=str(obj.get("activity", "")),
                    rotation=_whole(obj.get("rotation", 0), "rotation"),
                    screen=_screen(size, "screen") if size else default_screen,
                    insets=insets,
                    action=RecordedAction.from_json(obj["action"]) if obj.get("action") else None,
                    keyboard_px=keyboard,
                    root=real_root,
                )
            )
        except (KeyError, ValueError, TypeError, IndexError) as exc:
            raise RecordingError(f"{where}: {exc}") from exc
    if not steps:
        raise RecordingError(f"{root}/steps.jsonl: no steps")
    steps = _in_step_order(root, steps)
    screen = default_screen or next((s.screen for s in steps if s.screen), None)
    density = density_dpi or (guess_density_dpi(screen) if screen else 420)
    return Recording(
        root=root,
        kind="perception",
        steps=tuple(steps),
        meta=meta,
        density_dpi=density,
        serial=str(meta.get("serial", "")),
    )


def _in_step_order(root: Path, steps: list[RecordedStep]) -> list[RecordedStep]:
    """The steps sorted by step number (lines may have been appended or merged out of order),
    or :class:`RecordingError` for a repeated step number, capture times that go backwards
    in step order (original-timing replay could not follow them) or files that are missing."""
    ordered = sorted(steps, key=lambda s: s.step)
    if ordered != steps:
        log.warning("%s/steps.jsonl: steps are out of order; replaying them by step number", root)
    for before, after in zip(ordered, ordered[1:], strict=False):
        if before.step == after.step:
            raise RecordingError(f"{root}/steps.jsonl: step {after.step} appears twice")
        if after.tree_start_ns < before.tree_start_ns:
            raise RecordingError(
                f"{root}/steps.jsonl: step {after.step} was captured before step {before.step} "
                f"(tree_start_ns {after.tree_start_ns} < {before.tree_start_ns})"
            )
    missing = [
        str(path.relative_to(root) if path.is_relative_to(root) else path)
        for s in ordered
        for path in (s.tree_path, s.frame_path)
        if path is not None and not path.is_file()
    ]
    if missing:
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise RecordingError(f"{root}: missing step files: {', '.join(missing[:5])}{more}")
    return ordered


def _image_of(step_dir: Path, root: Path, where: str) -> Path | None:
    """The step's screenshot, which must lie inside the recording folder ``root``."""
    for name in ("screen.png", "screen.jpg", "screen.jpeg"):
        if (step_dir / name).is_file():
            return _inside(root, step_dir / name, where, "frame")
    return None


def _insets_from_meta(meta: Mapping[str, Any], screen: ScreenSize, where: Path) -> Insets:
    """Status/navigation bars as the gaps the top-level windows leave (when plausible)."""
    bounds = meta.get("top_level_bounds") or []
    if not bounds:
        return Insets()
    boxes = [_wholes(b, 4, f"{where} top_level_bounds") for b in bounds]
    top = min(b[1] for b in boxes)
    bottom = max(b[3] for b in boxes)
    top_px = top if 0 < top <= screen.height_px // 10 else 0
    gap = screen.height_px - bottom
    bottom_px = gap if 0 < gap <= screen.height_px // 8 else 0
    return Insets(top_px=top_px, bottom_px=bottom_px)


def _rotation_from_xml(root: Path, xml_path: Path, where: str) -> int:
    """The ``rotation`` of the dump's ``<hierarchy>``, from its first 400 bytes only (opened
    as every file of the recording folder ``root`` is: :func:`_open_inside`)."""
    try:
        with _open_inside(root, xml_path, where, "dump") as f:
            head = f.read(400)
    except OSError as exc:
        raise RecordingError(f"cannot read the dump {xml_path}: {exc}") from exc
    m = re.search(rb'<hierarchy[^>]*rotation="(\d)"', head)
    return int(m.group(1)) if m else 0


def _corpus_action(
    obj: Mapping[str, Any] | None, screen: ScreenSize, where: str
) -> RecordedAction | None:
    if not obj:
        return None
    result = obj.get("result_step")
    result_step = None if result is None else _whole(result, f"{where} result_step")
    event = obj.get("event_type") or obj.get("type")
    target_obj = obj.get("target") or {}
    target = parse_bounds(str(target_obj.get("bounds") or ""))
    point = target.center if target is not None else None
    raw = str(obj.get("event_str") or obj.get("raw") or "")
    if event == "touch":
        return RecordedAction(
            kind=ActionKind.TAP, point_px=point, target_px=target, result_step=result_step, raw=raw
        )
    if event == "long_touch":
        return RecordedAction(
            kind=ActionKind.LONG_TAP, point_px=point, target_px=target,
            duration_ms=1000, result_step=result_step, raw=raw,
        )
    if event == "set_text":
        return RecordedAction(
            kind=ActionKind.TEXT, point_px=point, target_px=target,
            text=str(obj.get("text") or ""), result_step=result_step, raw=raw,
        )
    if event == "scroll":
        box = target or screen.box_px
        direction = str(obj.get("direction") or "down").lower()
        c = box.center
        dy = box.height // 3
        dx = box.width // 3
        # DroidBot's direction names where the content moves; the finger moves the other way.
        ends = {
            "down": PointPx(c.x, c.y - dy),
            "up": PointPx(c.x, c.y + dy),
            "right": PointPx(c.x - dx, c.y),
            "left": PointPx(c.x + dx, c.y),
        }
        return RecordedAction(
            kind=ActionKind.SWIPE, point_px=c, end_px=ends.get(direction, ends["down"]),
            target_px=target, duration_ms=300, result_step=result_step, raw=raw,
        )
    if event == "key":
        return RecordedAction(
            kind=ActionKind.KEY, key=normalise_key(str(obj.get("name") or "")),
            result_step=result_step, raw=raw,
        )
    if event == "home":
        return RecordedAction(kind=ActionKind.KEY, key="HOME", result_step=result_step, raw=raw)
    if event == "back":
        return RecordedAction(kind=ActionKind.KEY, key="BACK", result_step=result_step, raw=raw)
    if event == "intent":
        return RecordedAction(
            kind=ActionKind.INTENT, intent=str(obj.get("intent") or ""),
            result_step=result_step, raw=raw,
        )
    if event == "click" and "coord_space" in obj:
        # Refused, not clamped, when off the click space: a made-up tap at the screen's edge
        # would be a ground-truth action no one took.
        space = _screen(obj["coord_space"], f"{where} click coord_space")
        x = _number(obj["x"], f"{where} click x", least=0, most=space.width_px)
        y = _number(obj["y"], f"{where} click y", least=0, most=space.height_px)
        tap = point_scaled_to_px(float(x), float(y), space, screen)
        return RecordedAction(kind=ActionKind.TAP, point_px=tap, result_step=result_step, raw=raw)
    log.debug("unknown corpus action %r kept as 'none'", event)
    return RecordedAction(kind=ActionKind.NONE, result_step=result_step, raw=raw)


_KEY_ALIASES = {
    "3": "HOME", "4": "BACK", "66": "ENTER", "82": "MENU", "187": "APP_SWITCH",
    "24": "VOLUME_UP", "25": "VOLUME_DOWN", "26": "POWER", "67": "DEL",
}


def normalise_key(name: str) -> str:
    """``4`` / ``KEYCODE_BACK`` / ``back`` -> ``BACK``."""
    key = name.strip().upper()
    key = key.removeprefix("KEYCODE_")
    return _KEY_ALIASES.get(key, key)


ANDROID_KEYS = frozenset(
    [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    + [str(d) for d in range(10)]
    + [f"NUMPAD_{d}" for d in range(10)]
    + [f"F{n}" for n in range(1, 13)]
    + """HOME BACK CALL ENDCALL STAR POUND DPAD_UP DPAD_DOWN DPAD_LEFT DPAD_RIGHT DPAD_CENTER
    VOLUME_UP VOLUME_DOWN VOLUME_MUTE POWER CAMERA CLEAR COMMA PERIOD ALT_LEFT ALT_RIGHT
    SHIFT_LEFT SHIFT_RIGHT TAB SPACE SYM EXPLORER ENVELOPE ENTER DEL FORWARD_DEL GRAVE MINUS
    EQUALS LEFT_BRACKET RIGHT_BRACKET BACKSLASH SEMICOLON APOSTROPHE SLASH AT NUM HEADSETHOOK
    FOCUS PLUS MENU NOTIFICATION SEARCH MEDIA_PLAY_PAUSE MEDIA_PLAY MEDIA_PAUSE MEDIA_STOP
    MEDIA_NEXT MEDIA_PREVIOUS MEDIA_REWIND MEDIA_FAST_FORWARD MUTE PAGE_UP PAGE_DOWN ESCAPE
    CTRL_LEFT CTRL_RIGHT CAPS_LOCK SCROLL_LOCK NUM_LOCK META_LEFT META_RIGHT FUNCTION SYSRQ
    BREAK MOVE_HOME MOVE_END INSERT FORWARD NUMPAD_DIVIDE NUMPAD_MULTIPLY NUMPAD_SUBTRACT
    NUMPAD_ADD NUMPAD_DOT NUMPAD_COMMA NUMPAD_ENTER NUMPAD_EQUALS SETTINGS APP_SWITCH ASSIST
    VOICE_ASSIST BRIGHTNESS_DOWN BRIGHTNESS_UP SLEEP WAKEUP SOFT_SLEEP CUT COPY PASTE
    ALL_APPS REFRESH CONTACTS CALENDAR MUSIC CALCULATOR ZOOM_IN ZOOM_OUT LANGUAGE_SWITCH
    MANNER_MODE SYSTEM_NAVIGATION_UP SYSTEM_NAVIGATION_DOWN SYSTEM_NAVIGATION_LEFT
    SYSTEM_NAVIGATION_RIGHT DPAD_UP_LEFT DPAD_DOWN_LEFT DPAD_UP_RIGHT DPAD_DOWN_RIGHT
    HELP NAVIGATE_PREVIOUS NAVIGATE_NEXT NAVIGATE_IN NAVIGATE_OUT""".split()
)
"""Android ``KeyEvent`` names (without ``KEYCODE_``) a script may send: ``input keyevent``
with a name Android does not know sends nothing and says nothing."""


def known_key(key: str) -> bool:
    """Whether a :func:`normalise_key` name is an Android key."""
    return key in ANDROID_KEYS


def _tag_seconds(tag: str) -> float | None:
    m = _TAG_RE.match(tag or "")
    if not m:
        return None
    try:
        stamp = _dt.datetime.strptime(m.group(1), "%Y-%m-%d_%H%M%S")
    except ValueError:
        return None
    return stamp.replace(tzinfo=_dt.UTC).timestamp()


def _read_corpus_trace(root: Path) -> Recording:
    real_root = _real_root(root)
    trace_path = _inside(root, root / "trace.json", str(root), "trace.json")
    trace = _meta_object(real_root, trace_path, MAX_TRACE_BYTES)
    steps: list[RecordedStep] = []
    skipped: list[str] = []
    first_s: float | None = None
    for pos_hint, entry in enumerate(trace.get("steps") or []):
        if entry.get("removed"):
            continue
        if len(steps) >= MAX_STEPS:
            raise RecordingError(
                f"{trace_path}: more than {MAX_STEPS} steps, more than any recorded session "
                "holds: split the trace"
            )
        where = f"{root}/trace.json step {entry.get('step', pos_hint)}"
        number = _whole(entry.get("step", pos_hint), f"{where}: step")
        step_dir = root / str(entry.get("dir") or f"step_{_whole(entry['step'], where):03d}")
        _inside(root, step_dir, where, "folder")
        if not _inside(root, step_dir / "screen.xml", where, "dump").is_file():
            # Said, not raised: the other steps replay, and the gap is visible.
            skipped.append(f"{step_dir.name}: no screen.xml in {step_dir}")
            log.info("%s: step %s skipped: no screen.xml", root, step_dir.name)
            continue
        meta_path = _inside(root, step_dir / "meta.json", where, "meta.json")
        meta = _meta_object(real_root, meta_path) if meta_path.exists() else {}
        image = _image_of(step_dir, root, where)
        img = meta.get("image") or {}
        screen = (
            ScreenSize(
                _whole(img["width"], f"{meta_path} image.width", least=1),
                _whole(img["height"], f"{meta_path} image.height", least=1),
            )
            if "width" in img else None
        )
        action_obj = (meta.get("trace") or {}).get("action_to_next") or entry.get("action")
        droidbot = _inside(root, step_dir / "action.droidbot.json", where, "action")
        if not action_obj and droidbot.is_file():
            action_obj = _droidbot_event(_load_json(real_root, droidbot, MAX_META_BYTES))
        seconds = _tag_seconds(str(entry.get("tag") or ""))
        if seconds is not None and first_s is None:
            first_s = seconds
        if seconds is not None and first_s is not None:
            t_ns = int((seconds - first_s) * 1e9)
        else:
            t_ns = len(steps) * DEFAULT_STEP_INTERVAL_NS
        if steps and t_ns <= steps[-1].tree_start_ns:
            t_ns = steps[-1].tree_start_ns + DEFAULT_STEP_INTERVAL_NS
        activity = str(meta.get("foreground_activity") or entry.get("activity") or "")
        size = screen or ScreenSize(1080, 1920)
        steps.append(
            RecordedStep(
                step=number,
                tree_path=step_dir / "screen.xml",
                frame_path=image,
                frame_fmt=_frame_fmt(image) if image else None,
                tree_start_ns=t_ns,
                tree_end_ns=t_ns,
                frame_start_ns=t_ns,
                frame_end_ns=t_ns,
                epoch=len(steps),
                package=str(meta.get("app_package") or activity.split("/")[0]),
                activity=activity,
                rotation=_rotation_from_xml(real_root, step_dir / "screen.xml", where),
                screen=screen,
                insets=_insets_from_meta(meta, size, meta_path),
                action=_corpus_action(action_obj, size, where),
                root=real_root,
            )
        )
    if not steps:
        raise RecordingError(f"{root}: trace has no readable steps")
    screen = next((s.screen for s in steps if s.screen), ScreenSize(1080, 1920))
    return Recording(
        root=root,
        kind="corpus-trace",
        steps=tuple(steps),
        meta=trace,
        density_dpi=guess_density_dpi(screen),
        serial=f"{trace.get('source', 'corpus')}-{trace.get('trace_id', root.name)}",
        skipped=tuple(skipped),
    )


def _droidbot_event(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    event = obj.get("event") or {}
    kind = event.get("event_type")
    if not kind:
        return None
    out: dict[str, Any] = {"event_type": kind, "event_str": obj.get("event_str", "")}
    view = event.get("view") or {}
    bounds = view.get("bounds")
    if bounds:
        (left, top), (right, bottom) = bounds
        out["target"] = {"bounds": f"[{left},{top}][{right},{bottom}]"}
    for name in ("name", "intent", "text", "direction"):
        if event.get(name) is not None:
            out[name] = event[name]
    return out


def _read_corpus_sample(root: Path) -> Recording:
    where = f"{root} (a sample folder)"
    real_root = _real_root(root)
    meta_path = _inside(root, root / "meta.json", where, "meta.json")
    meta = _meta_object(real_root, meta_path) if meta_path.exists() else {}
    _inside(root, root / "screen.xml", where, "dump")
    image = _image_of(root, root, where)
    img = meta.get("image") or {}
    screen = (
        ScreenSize(
            _whole(img["width"], f"{meta_path} image.width", least=1),
            _whole(img["height"], f"{meta_path} image.height", least=1),
        )
        if "width" in img else None
    )
    activity = str(meta.get("foreground_activity") or "")
    step = RecordedStep(
        step=0,
        tree_path=root / "screen.xml",
        frame_path=image,
        frame_fmt=_frame_fmt(image) if image else None,
        tree_start_ns=0,
        tree_end_ns=0,
        frame_start_ns=0,
        frame_end_ns=0,
        package=str(meta.get("app_package") or activity.split("/")[0]),
        activity=activity,
        rotation=_rotation_from_xml(real_root, root / "screen.xml", where),
        screen=screen,
        insets=_insets_from_meta(meta, screen or ScreenSize(1080, 1920), meta_path),
        root=real_root,
    )
    size = screen or ScreenSize(1080, 1920)
    return Recording(
        root=root,
        kind="corpus-sample",
        steps=(step,),
        meta=meta,
        density_dpi=guess_density_dpi(size),
        serial=f"{meta.get('source', 'sample')}-{root.name}",
    )
