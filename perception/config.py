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
