"""Frozen configuration records with units in their names.

``from_env()`` is the only place that reads ``PERCEPTION_*`` environment variables (besides the
implementation switch in :mod:`perception.fastpath` and the build policy in ``setup.py``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Self, TypeVar

from perception.errors import ConfigError

_C = TypeVar("_C")
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


def _env_overrides(cls: type[Any], prefix: str, env: Mapping[str, str]) -> dict[str, Any]:
    known = {f"{prefix}{f.name.upper()}": f for f in fields(cls)}
    unknown = sorted(key for key in env if key.startswith(prefix) and key not in known)
    if unknown:
        raise ConfigError(
            f"unknown setting {', '.join(unknown)}: {cls.__name__} reads "
            f"{', '.join(sorted(known))}"
        )
    out: dict[str, Any] = {}
    for key, f in known.items():
        if key not in env:
            continue
        raw = env[key]
        kind: type[Any] = type(f.default)
        try:
            if kind is bool:
                word = raw.strip().lower()
                if word not in _TRUE | _FALSE:
                    raise ValueError(word)
                out[f.name] = word in _TRUE
            else:
                out[f.name] = kind(raw)
        except ValueError as exc:
            raise ConfigError(f"{key}={raw!r}: expected {kind.__name__}") from exc
    return out


def _check_finite(record: object) -> None:
    """Every float setting is a number: nan passes every ``<`` and ``>`` check, and inf reached
    a socket timeout or ``time.sleep`` as an OverflowError."""
    for f in fields(record):  # type: ignore[arg-type]
        value = getattr(record, f.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{f.name} must be a finite number (got {value})")


def _from_env(cls: type[_C], prefix: str, env: Mapping[str, str] | None) -> _C:
    """``cls`` with the ``prefix`` settings of ``env`` (``os.environ`` unless given); a value
    the record refuses is a :class:`ConfigError` that names the variables it came from."""
    source = os.environ if env is None else env
    overrides = _env_overrides(cls, prefix, source)
    try:
        return cls(**overrides)
    except ConfigError as exc:
        keys = [f"{prefix}{name.upper()}" for name in overrides]
        given = ", ".join(f"{key}={source[key]!r}" for key in keys)
        raise ConfigError(f"{exc} (from the environment: {given})") from exc


@dataclass(frozen=True, slots=True, kw_only=True)
class TreeConfig:
    """Limits and knobs of the tree channel."""

    max_input_bytes: int = 16 * 1024 * 1024
    max_depth: int = 200
    """Element nesting limit (at most 250: libxml2, the twin's parser, stops at 256)."""
    max_nodes: int = 50_000
    """Node limit of the whole dump, over all its ``<hierarchy>`` documents."""
    max_documents: int = 64
    """Limit on the ``<hierarchy>`` documents of a dump: a dump has one, tools that concatenate
    windows a handful."""
    list_keep: int = 8
    """Homogeneous list runs show this many items, then say how many more there are."""
    min_list_run: int = 3
    """Runs shorter than this are never called a list."""
    max_label_chars: int = 40
    """A text piece of a label over half as long again is cut (with an ellipsis) at the end of
    the word this many characters fall in, or after them when that word runs on."""
    max_label_pieces: int = 4
    """A label joins at most this many text pieces (>= 1)."""
    min_area_px: int = 1
    max_rows: int = 400
    """The prompt shows at most this many rows; the rest are left out (``"more": N``; see
    :func:`perception.tree.compress.over_budget`). The app decides how many elements a screen
    has (a grid of 48,000 tiny buttons was a 1.3 MB prompt); the corpus's screens show at most
    83."""

    def __post_init__(self) -> None:
        _check_finite(self)
        if self.max_rows < 1:
            raise ConfigError(f"max_rows must be >= 1 (got {self.max_rows})")
        if self.list_keep < 1:
            raise ConfigError(f"list_keep must be >= 1 (got {self.list_keep})")
        if self.max_label_chars < 8:
            raise ConfigError(f"max_label_chars must be >= 8 (got {self.max_label_chars})")
        if self.max_label_pieces < 1:
            raise ConfigError(f"max_label_pieces must be >= 1 (got {self.max_label_pieces})")
        if self.max_depth < 8:
            raise ConfigError(
                f"max_depth must be >= 8 (got {self.max_depth}): too small to read any real dump"
            )
        if self.max_depth > 250:
            raise ConfigError(
                f"max_depth must be <= 250 (got {self.max_depth}): libxml2, the parser of the "
                "pure-Python twin, stops at 256 levels"
            )
        if self.max_input_bytes < 1024:
            raise ConfigError(
                f"max_input_bytes must be >= 1024 (got {self.max_input_bytes}): too small to "
                "read any real dump"
            )
        if self.max_nodes < 1:
            raise ConfigError(f"max_nodes must be >= 1 (got {self.max_nodes})")
        if self.max_documents < 1:
            raise ConfigError(f"max_documents must be >= 1 (got {self.max_documents})")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        return _from_env(cls, "PERCEPTION_TREE_", env)

    def with_(self, **changes: Any) -> Self:
        return replace(self, **changes)


@dataclass(frozen=True, slots=True, kw_only=True)
class FusionConfig:
    """Alignment window and arbiter thresholds of the fusion layer (tree confidence, 0-1).

    The arbiter is a Schmitt trigger on tree confidence: it leaves tree-dominant below
    ``tree_exit`` and comes back only at ``tree_enter`` or above; likewise for pixel-fallback
    (enter below ``pixel_enter``, leave at ``pixel_exit``). A state is held for at least
    ``min_dwell`` observations unless confidence jumps by ``jump_margin`` or more.
    """

    pair_window_ms: float = 300.0
    """A tree and a frame describe the same moment when their capture intervals are this close."""
    tree_exit: float = 0.6
    tree_enter: float = 0.7
    pixel_enter: float = 0.3
    pixel_exit: float = 0.45
    min_dwell: int = 2
    jump_margin: float = 0.35
    min_usable: float = 0.25
    """Below this for both channels the observation asks for a fresh capture instead of guessing."""
    loop_window: int = 6
    loop_repeats: int = 3
    """The same page fingerprint seen this many times within ``loop_window`` steps is a loop."""
    page_cache_size: int = 64
    max_rows: int = 400
    """An observation's prompt shows at most this many rows, the tree's and the pixels'
    together; the rest are left out (``"more": N``; see
    :func:`perception.tree.compress.over_budget`). The tree's own are already at most
    :attr:`TreeConfig.max_rows`."""

    def __post_init__(self) -> None:
        _check_finite(self)
        if self.max_rows < 1:
            raise ConfigError(f"max_rows must be >= 1 (got {self.max_rows})")
        if self.pair_window_ms <= 0:
            raise ConfigError("pair_window_ms must be > 0")
        if not 0.0 <= self.pixel_enter < self.pixel_exit <= self.tree_exit < self.tree_enter <= 1:
            raise ConfigError(
                "need 0 <= pixel_enter < pixel_exit <= tree_exit < tree_enter <= 1 "
                f"(got {self.pixel_enter}, {self.pixel_exit}, {self.tree_exit}, {self.tree_enter})"
            )
        if self.min_dwell < 1 or self.jump_margin <= 0:
            raise ConfigError("min_dwell must be >= 1 and jump_margin > 0")
        if self.loop_repeats < 2 or self.loop_window < self.loop_repeats:
            raise ConfigError("need 2 <= loop_repeats <= loop_window")
        if self.page_cache_size < 1:
            raise ConfigError("page_cache_size must be >= 1")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        return _from_env(cls, "PERCEPTION_FUSION_", env)

    def with_(self, **changes: Any) -> Self:
        return replace(self, **changes)


@dataclass(frozen=True, slots=True, kw_only=True)
class PixelConfig:
    """Knobs of the pixel channel (frames, OCR, anchors); env prefix ``PERCEPTION_PIXEL_``."""

    min_side_px: int = 64
    """Frames with a side shorter than this cannot be a phone screen."""
    max_side_px: int = 8192
    max_aspect: float = 4.0
    det_width_px: int = 576
    """Text detection runs on a copy this wide (never upscaled; 18 x 32, so RapidOCR does not
    round it again); recognition runs on full-resolution crops."""
    det_limit_side_len: int = 576
    """Upper bound for RapidOCR's ``det_limit_side_len``; the crop's short side caps it further."""
    det_box_thresh: float = 0.3
    """Detection box score threshold (RapidOCR: 0.5); lower keeps small text on the small copy."""
    rec_batch_num: int = 1
    """Recognition batch size; each batch is padded only to its own widest crop."""
    use_cls: bool = False
    """Screens are upright: the angle classifier only costs time."""
    text_score_min: float = 0.5
    ocr_threads: int = 0
    """onnxruntime intra-op threads for detection (and recognition when ``rec_workers`` is 1);
    0 lets onnxruntime decide."""
    det_mem_arena: bool = True
    """Text detection runs in its own onnxruntime session that keeps its memory arena between
    frames (RapidOCR turns the arena off): each run of a full screen's copy otherwise maps its
    buffers afresh and pays their page faults, about a fifth of detection's time. The same
    boxes either way; the arena holds about 110 MB after a few full screens (False: RapidOCR's
    own session)."""
    rec_workers: int = 2
    """Recognition runs this many single-threaded model runs side by side (1: one session with
    ``ocr_threads`` threads, crop after crop)."""
    skip_status_bar: bool = True
    """Do not OCR the status bar inset (clock and icons are never tap targets)."""
    split_gap_ratio: float = 1.0
    """A line splits where a blank gap is at least this many line heights wide."""
    split_word_gap_ink: float = 0.45
    split_word_gap_median: float = 4.0
    """... or where a gap is at least this many ink heights wide and this many times the line's
    median gap between glyphs (two labels set apart by more than a word space)."""
    split_word_glyph_max: float = 0.45
    """... only on lines whose glyphs are narrower than this many ink heights (median): where
    they are wider (capitals, CJK, bold letters) a word space, or the blank after a full-width
    comma, reaches the word gap too (see ``perception.pixel.ocr.split_line``)."""
    split_busy_border: float = 0.2
    """A line on a picture (more than this share of its box's border far from the border's
    median, and of no one colour: text over a video or an ad) is not split at all."""
    merge_align_ratio: float = 0.3
    merge_gap_max_ratio: float = 0.6
    merge_height_ratio: float = 0.25
    """Block merge (Mobile-Agent-v2): left alignment, vertical gap and height difference, each as
    a share of the upper line's height."""
    cache_entries: int = 2048
    """Recognised crops kept per reader (LRU), keyed by crop content."""
    max_ocr_lines: int = 256
    """Most line crops recognised per frame read (over all its regions); the rest are counted,
    not read (``Pixels.unread_lines``). A frame full of text-like rows had 506 and took
    seconds in recognition alone; the corpus's densest screen has 108 crops (88 lines read)."""
    glyph_max: int = 48
    """Text-less icons, buttons, tabs and pictures looked at for the glyph they draw per frame
    read (:func:`perception.pixel.glyphs.name_candidates`, about 0.2 ms each); 0: none."""
    anchor_scale: float = 0.5
    """Anchors are computed on a copy scaled by this factor."""
    anchor_max_side_px: int = 1600
    """... and no longer than this on its long side (a 2560-px phone screen's copy is 1280:
    only frames beyond a phone's or a tablet's are scaled further)."""
    black_luma_max: float = 8.0
    uniform_std_max: float = 3.0
    stable_diff_min: int = 24
    """A downscaled cell changed when its luma differs by at least this much."""
    vision_margin_px: int = 60
    vision_max_side_px: int = 768
    vision_jpeg_quality: int = 80

    def __post_init__(self) -> None:
        _check_finite(self)
        if self.det_width_px < 64 or self.det_limit_side_len < 32:
            raise ConfigError("det_width_px must be >= 64 and det_limit_side_len >= 32")
        if self.rec_batch_num < 1 or self.cache_entries < 0 or self.rec_workers < 1:
            raise ConfigError("rec_batch_num and rec_workers must be >= 1, cache_entries >= 0")
        if self.max_ocr_lines < 1:
            raise ConfigError(f"max_ocr_lines must be >= 1 (got {self.max_ocr_lines})")
        if self.glyph_max < 0:
            raise ConfigError(f"glyph_max must be >= 0 (got {self.glyph_max})")
        if not 0.05 <= self.anchor_scale <= 1.0:
            raise ConfigError("anchor_scale must be in [0.05, 1]")
        if self.anchor_max_side_px < self.min_side_px:
            raise ConfigError("anchor_max_side_px must be at least min_side_px")
        if not 0 < self.min_side_px < self.max_side_px:
            raise ConfigError("min_side_px must be positive and below max_side_px")
        if not 1 <= self.vision_jpeg_quality <= 100:
            raise ConfigError("vision_jpeg_quality must be in [1, 100]")
        if not (0.0 <= self.split_busy_border <= 1.0 and self.split_word_glyph_max > 0):
            raise ConfigError("split_busy_border must be in [0, 1], split_word_glyph_max > 0")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        return _from_env(cls, "PERCEPTION_PIXEL_", env)

    def with_(self, **changes: Any) -> Self:
        return replace(self, **changes)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceConfig:
    """Timeouts and retries of a live phone (adbutils would otherwise wait up to 600 s)."""

    adb_host: str = "127.0.0.1"
    adb_port: int = 5037
    """The adb server's port. :meth:`from_env` takes ``PERCEPTION_DEVICE_ADB_PORT``, else
    :attr:`adb_default_port`, as ``adb`` without ``-P`` does."""
    adb_default_port: int = 5037
    """The port of adb's own server (:meth:`from_env`: adb's ``ANDROID_ADB_SERVER_PORT``, else
    5037). When nothing answers there on this machine a source starts that server
    (``adb -P PORT start-server``), as ``adb`` does; a server on any other port or host is never
    started: it would be a stray process, and the wait for it a stall."""
    command_timeout_s: float = 10.0
    """Whole-command deadline for small shell commands (wm, dumpsys, input)."""
    dump_timeout_s: float = 15.0
    frame_timeout_s: float = 10.0
    idle_retries: int = 3
    """Extra dump attempts after ``could not get idle state`` before IdleStateError."""
    idle_backoff_ms: int = 250
    """Wait before the first retry; doubles each retry."""
    dump_dir: str = "/data/local/tmp"
    dump_to_stdout: bool = False
    """``uiautomator dump /dev/tty`` (one round trip, no file) on phones that support it."""
    read_keyboard: bool = True
    """After each dump, ask the window manager whether the on-screen keyboard is up and where
    (``dumpsys window displays``, Android 11+, or ``dumpsys window InputMethod``): one shell
    round trip more a tree capture.
    See :attr:`perception.sources.base.TreeCapture.keyboard_px`."""
    raw_frames: bool = True
    """Raw ``screencap`` over exec-out first (PNG encoding on the phone costs seconds)."""
    ready_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        _check_finite(self)
        if min(self.command_timeout_s, self.dump_timeout_s, self.frame_timeout_s) <= 0:
            raise ConfigError("device timeouts must be > 0")
        if self.ready_timeout_s <= 0:
            raise ConfigError(f"ready_timeout_s must be > 0 (got {self.ready_timeout_s})")
        for name in ("adb_port", "adb_default_port"):
            value = getattr(self, name)
            if not 1 <= value <= 65535:
                raise ConfigError(f"{name} must be 1 to 65535 (got {value})")
        if self.idle_retries < 0 or self.idle_backoff_ms < 0:
            raise ConfigError("idle_retries and idle_backoff_ms must be >= 0")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        """``PERCEPTION_DEVICE_*``, and adb's own ``ANDROID_ADB_SERVER_PORT`` for the port of
        adb's server (a ``PERCEPTION_DEVICE_`` setting wins): the server ``adb`` and
        ``adb start-server`` use in this environment is the one reached unless a port is
        named. A bad value is refused whatever else is set, as adb refuses it."""
        source = os.environ if env is None else env
        config = _from_env(cls, "PERCEPTION_DEVICE_", source)
        changes: dict[str, int] = {}
        raw = source.get("ANDROID_ADB_SERVER_PORT", "")
        text = raw.strip()  # unset or empty: adb's 5037
        if text:
            if not (text.isascii() and text.isdigit() and 1 <= int(text) <= 65535):
                raise ConfigError(
                    f"ANDROID_ADB_SERVER_PORT={raw!r}: expected the adb server's port, 1 to "
                    "65535 (adb refuses it too): set it to a port or unset it"
                )
            if "PERCEPTION_DEVICE_ADB_DEFAULT_PORT" not in source:
                changes["adb_default_port"] = int(text)
        if "PERCEPTION_DEVICE_ADB_PORT" not in source:
            changes["adb_port"] = changes.get("adb_default_port", config.adb_default_port)
        return config.with_(**changes)

    def with_(self, **changes: Any) -> Self:
        return replace(self, **changes)


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineConfig:
    """Rates and windows of :class:`perception.Engine`."""

    frame_interval_ms: int = 200
    """The frame thread captures at most this often (it keeps only the newest frame)."""
    tree_interval_ms: int = 500
    """Tree dumps are throttled to at most one per this interval."""
    observe_timeout_s: float = 30.0
    pair_window_ms: int = 1500
    """A tree and a frame are fused together only when their captures are this close."""
    error_backoff_ms: int = 500

    def __post_init__(self) -> None:
        _check_finite(self)
        if self.frame_interval_ms < 0 or self.tree_interval_ms < 0 or self.pair_window_ms <= 0:
            raise ConfigError("engine intervals must be >= 0 and pair_window_ms > 0")
        if self.observe_timeout_s <= 0:
            raise ConfigError("observe_timeout_s must be > 0")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        return _from_env(cls, "PERCEPTION_ENGINE_", env)

    def with_(self, **changes: Any) -> Self:
        return replace(self, **changes)


def max_frame_bytes(config: PixelConfig) -> int:
    """The most bytes a frame file may hold before it is read (by the pixel channel's
    ``read_frame_file`` and by a recording's steps: here, below both): past it no capture
    within ``config``'s limits can be in it, and reading on (``/dev/zero``, a disk image, a
    video) would only exhaust memory. The largest capture allowed is a raw ``screencap`` of a square
    ``max_side_px`` screen (4 bytes a pixel and a 16-byte header: 256 MiB at the default 8192
    px); PNG of incompressible pixels adds about 0.1 % to raw (a filter byte a row, zlib's
    5 bytes a 64 KiB stored block, 12 bytes an IDAT chunk) and JPEG stays below raw's 4 bytes
    a pixel, so 1 % and 1 MiB on top leave room for trailers after the image."""
    raw = 16 + 4 * config.max_side_px * config.max_side_px
    return raw + raw // 100 + (1 << 20)
