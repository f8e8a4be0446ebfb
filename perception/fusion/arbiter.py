"""The hysteresis arbiter: how far the tree can be trusted decides how much pixel work runs.

Three states on one axis, tree confidence (0-1):

- ``tree``: tree-dominant; pixels are captured (and cheaply checked) but not analysed;
- ``unstable``: OCR and anchors run, only where the tree is missing or doubtful;
- ``pixel``: pixel-fallback; full pixel analysis, a vision model may be consulted on crops.

Each boundary has separate enter and exit thresholds (a Schmitt trigger) and a state is held
for at least ``min_dwell`` observations, unless confidence jumps by ``jump_margin`` or more since
the previous observation; so noise near a threshold does not flip the choice every round.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass

from perception.config import FusionConfig

log = logging.getLogger(__name__)


@enum.unique
class ArbiterState(enum.StrEnum):
    TREE = "tree"
    UNSTABLE = "unstable"
    PIXEL = "pixel"


@dataclass(frozen=True, slots=True, kw_only=True)
class ArbiterStep:
    """One decision: the state now, where it came from and why."""

    state: ArbiterState
    previous: ArbiterState
    wanted: ArbiterState
    """Where the thresholds alone point; differs from ``state`` while the dwell holds it back."""
    dwell: int
    """Observations spent in ``state`` including this one."""
    tree_confidence: float

    @property
    def changed(self) -> bool:
        return self.state is not self.previous


def target_state(
    current: ArbiterState, tree_confidence: float, config: FusionConfig
) -> ArbiterState:
    """The state the thresholds point to from ``current`` (no dwell applied)."""
    c = tree_confidence
    if current is ArbiterState.TREE:
        if c < config.pixel_enter:
            return ArbiterState.PIXEL
        return ArbiterState.UNSTABLE if c < config.tree_exit else ArbiterState.TREE
    if current is ArbiterState.UNSTABLE:
        if c >= config.tree_enter:
            return ArbiterState.TREE
        return ArbiterState.PIXEL if c < config.pixel_enter else ArbiterState.UNSTABLE
    if c >= config.tree_enter:
        return ArbiterState.TREE
    return ArbiterState.UNSTABLE if c >= config.pixel_exit else ArbiterState.PIXEL


class Arbiter:
    """Stateful Schmitt trigger with a minimum dwell; one per observed device."""

    def __init__(self, config: FusionConfig | None = None) -> None:
        self.config = config or FusionConfig()
        self.state = ArbiterState.TREE
        self.dwell = self.config.min_dwell
        self._last: float | None = None

    def reset(self) -> None:
        self.state = ArbiterState.TREE
        self.dwell = self.config.min_dwell
        self._last = None

    def update(self, tree_confidence: float) -> ArbiterStep:
        c = min(1.0, max(0.0, float(tree_confidence)))
        previous = self.state
        wanted = target_state(previous, c, self.config)
        if wanted is not previous:
            jumped = self._last is None or abs(c - self._last) >= self.config.jump_margin
            if self.dwell >= self.config.min_dwell or jumped:
                self.state = wanted
                self.dwell = 0
                log.debug("arbiter %s -> %s at tree confidence %.2f", previous, wanted, c)
        self.dwell += 1
        self._last = c
        return ArbiterStep(
            state=self.state,
            previous=previous,
            wanted=wanted,
            dwell=self.dwell,
            tree_confidence=c,
        )


class ThresholdArbiter:
    """The baseline without hysteresis: one threshold per boundary, no dwell (for the bench)."""

    def __init__(self, config: FusionConfig | None = None) -> None:
        cfg = config or FusionConfig()
        self._tree_at = (cfg.tree_exit + cfg.tree_enter) / 2
        self._pixel_at = (cfg.pixel_enter + cfg.pixel_exit) / 2
        self.state = ArbiterState.TREE

    def update(self, tree_confidence: float) -> ArbiterStep:
        previous = self.state
        if tree_confidence >= self._tree_at:
            self.state = ArbiterState.TREE
        elif tree_confidence >= self._pixel_at:
            self.state = ArbiterState.UNSTABLE
        else:
            self.state = ArbiterState.PIXEL
        return ArbiterStep(
            state=self.state,
            previous=previous,
            wanted=self.state,
            dwell=1,
            tree_confidence=tree_confidence,
        )
