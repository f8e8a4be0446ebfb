"""Loop helpers: a page seen repeatedly within a few steps, and reuse of a seen page's list."""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

V = TypeVar("V")


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopReport:
    fingerprint: str
    count: int
    """How often the page was seen within the last ``window`` steps (this one included)."""
    window: int


class LoopDetector:
    """Counts page fingerprints over the last ``window`` steps; reports ``repeats`` or more.

    Several observations of one step (same ``step``) count once: the newest replaces the rest.
    """

    def __init__(self, *, window: int = 6, repeats: int = 3) -> None:
        self.window = window
        self.repeats = repeats
        self._recent: deque[str] = deque(maxlen=window)
        self._step: int | None = None

    def observe(self, fingerprint: str, step: int | None = None) -> LoopReport | None:
        if step is not None and step == self._step and self._recent:
            self._recent[-1] = fingerprint
        else:
            self._recent.append(fingerprint)
        self._step = step
        count = sum(1 for f in self._recent if f == fingerprint)
        if count >= self.repeats:
            return LoopReport(fingerprint=fingerprint, count=count, window=self.window)
        return None

    @property
    def recent(self) -> Sequence[str]:
        return tuple(self._recent)

    def reset(self) -> None:
        self._recent.clear()
        self._step = None


class PageCache(Generic[V]):
    """The last ``size`` pages' element lists by fingerprint (least recently used goes first)."""

    def __init__(self, size: int = 64) -> None:
        self.size = size
        self._pages: OrderedDict[str, V] = OrderedDict()

    def get(self, fingerprint: str) -> V | None:
        value = self._pages.get(fingerprint)
        if value is not None:
            self._pages.move_to_end(fingerprint)
        return value

    def put(self, fingerprint: str, value: V) -> None:
        self._pages[fingerprint] = value
        self._pages.move_to_end(fingerprint)
        while len(self._pages) > self.size:
            self._pages.popitem(last=False)

    def __contains__(self, fingerprint: object) -> bool:
        return fingerprint in self._pages

    def __len__(self) -> int:
        return len(self._pages)
