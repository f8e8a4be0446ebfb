"""Frozen configuration records with units in their names.

``from_env()`` is the only place that reads ``PERCEPTION_*`` environment variables (besides the
implementation switch in :mod:`perception.fastpath` and the build policy in ``setup.py``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Self

from perception.errors import ConfigError


def _env_overrides(cls: type[Any], prefix: str, env: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in fields(cls):
        key = f"{prefix}{f.name.upper()}"
        if key not in env:
            continue
        raw = env[key]
        kind = type(f.default)
        try:
            if kind is bool:
                out[f.name] = raw.strip().lower() in {"1", "true", "yes", "on"}
            else:
                out[f.name] = kind(raw)
        except ValueError as exc:
            raise ConfigError(f"{key}={raw!r}: expected {kind.__name__}") from exc
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class TreeConfig:
    """Limits and knobs of the tree channel."""

    max_input_bytes: int = 16 * 1024 * 1024
    max_depth: int = 256
    max_nodes: int = 50_000
    list_keep: int = 8
    """Homogeneous list runs show this many items, then say how many more there are."""
    min_list_run: int = 3
    """Runs shorter than this are never called a list."""
    max_label_chars: int = 40
    """Each text piece of a label is cut to this many characters (with an ellipsis)."""
    max_label_pieces: int = 4
    min_area_px: int = 1

    def __post_init__(self) -> None:
        if self.list_keep < 1:
            raise ConfigError("list_keep must be >= 1")
        if self.max_label_chars < 8:
            raise ConfigError("max_label_chars must be >= 8")
        if self.max_depth < 8 or self.max_input_bytes < 1024 or self.max_nodes < 1:
            raise ConfigError("tree limits are too small to read any real dump")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        return cls(**_env_overrides(cls, "PERCEPTION_TREE_", os.environ if env is None else env))

    def with_(self, **changes: Any) -> Self:
        return replace(self, **changes)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeviceConfig:
    """Timeouts and retries of a live phone (adbutils would otherwise wait up to 600 s)."""

    adb_host: str = "127.0.0.1"
    adb_port: int = 5037
    command_timeout_s: float = 10.0
    """Whole-command deadline for small shell commands (wm, dumpsys, input)."""
    dump_timeout_s: float = 15.0
    frame_timeout_s: float = 10.0
    idle_retries: int = 3
    """Extra dump attempts after ``could not get idle state`` before IdleStateError."""
    idle_backoff_ms: int = 250
    """Wait before the first retry; doubles each retry."""
    dump_dir: str = "/data/local/tmp"
    raw_frames: bool = True
    """Raw ``screencap`` over exec-out first (PNG encoding on the phone costs seconds)."""
    ready_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        if min(self.command_timeout_s, self.dump_timeout_s, self.frame_timeout_s) <= 0:
            raise ConfigError("device timeouts must be > 0")
        if self.idle_retries < 0 or self.idle_backoff_ms < 0:
            raise ConfigError("idle_retries and idle_backoff_ms must be >= 0")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        return cls(**_env_overrides(cls, "PERCEPTION_DEVICE_", os.environ if env is None else env))

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
        if self.frame_interval_ms < 0 or self.tree_interval_ms < 0 or self.pair_window_ms <= 0:
            raise ConfigError("engine intervals must be >= 0 and pair_window_ms > 0")
        if self.observe_timeout_s <= 0:
            raise ConfigError("observe_timeout_s must be > 0")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Self:
        return cls(**_env_overrides(cls, "PERCEPTION_ENGINE_", os.environ if env is None else env))

    def with_(self, **changes: Any) -> Self:
        return replace(self, **changes)
