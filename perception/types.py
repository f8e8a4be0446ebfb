"""Frozen, slotted records shared by every stage.

Units are part of the names: ``_px`` device pixels (top-left origin, boxes are
``(left, top, right, bottom)`` as in uiautomator ``bounds``), ``_norm`` floats in 0-1,
``_pm`` integers on the 0-1000 grid the models see, ``_ns`` ``time.monotonic_ns()``
timestamps, ``_ms`` durations. Conversions between them live only in :mod:`perception.geometry`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import NamedTuple


class PointPx(NamedTuple):
    """A point in device pixels."""

    x: int
    y: int


class PointPm(NamedTuple):
    """A point on the 0-1000 grid."""

    x: int
    y: int


class BoxPx(NamedTuple):
    """A box in device pixels, ``(left, top, right, bottom)``; right/bottom exclusive."""

    left: int
    top: int
    right: int
    bottom: int

    @property
    def width(self) -> int:
        return max(0, self.right - self.left)

    @property
    def height(self) -> int:
        return max(0, self.bottom - self.top)

    @property
    def area(self) -> int:
        return self.width * self.height

    @property
    def center(self) -> PointPx:
        return PointPx((self.left + self.right) // 2, (self.top + self.bottom) // 2)

    def contains(self, point: PointPx | PointPm | tuple[int, int]) -> bool:
        x, y = point
        return self.left <= x < self.right and self.top <= y < self.bottom

    def encloses(self, other: BoxPx) -> bool:
        """``other`` lies inside this box (edges may touch; an equal box is enclosed)."""
        return (
            self.left <= other.left
            and self.top <= other.top
            and other.right <= self.right
            and other.bottom <= self.bottom
        )


class BoxPm(NamedTuple):
    """A box on the 0-1000 grid, ``(left, top, right, bottom)``."""

    left: int
    top: int
    right: int
    bottom: int


@dataclass(frozen=True, slots=True)
class ScreenSize:
    """Screen size in device pixels, as the current rotation shows it."""

    width_px: int
    height_px: int

    @property
    def box_px(self) -> BoxPx:
        return BoxPx(0, 0, self.width_px, self.height_px)


class ElementFlag(enum.IntFlag):
    """Facts about an element; only the set ones reach the prompt."""

    NONE = 0
    CLICKABLE = 1 << 0
    LONG_CLICKABLE = 1 << 1
    CHECKABLE = 1 << 2
    CHECKED = 1 << 3
    EDITABLE = 1 << 4
    SCROLLABLE = 1 << 5
    FOCUSABLE = 1 << 6
    FOCUSED = 1 << 7
    SELECTED = 1 << 8
    DISABLED = 1 << 9
    PASSWORD = 1 << 10
    OCCLUDED = 1 << 11
    PARTLY_OFFSCREEN = 1 << 12

    @property
    def actionable(self) -> bool:
        return bool(self & ACTIONABLE) and not self & (ElementFlag.DISABLED | ElementFlag.OCCLUDED)


ACTIONABLE = (
    ElementFlag.CLICKABLE
    | ElementFlag.LONG_CLICKABLE
    | ElementFlag.CHECKABLE
    | ElementFlag.EDITABLE
    | ElementFlag.SCROLLABLE
)
FOCUSED_FIELD = ElementFlag.EDITABLE | ElementFlag.FOCUSED
"""Both set: the input field that has the focus (where typed text goes)."""


@enum.unique
class Channel(enum.StrEnum):
    TREE = "tree"
    PIXEL = "pixel"
    BOTH = "both"


@dataclass(frozen=True, slots=True, kw_only=True)
class TreeElement:
    """One element of the tree channel: an aggregation root with its absorbed label.

    ``id`` is stable within one screen (document order of the emitted elements); ``node`` is the
    raw node's index in document order of the dump.
    """

    id: int
    kind: str
    """Short type name: btn, text, input, img, check, switch, radio, tab, list, web, view ..."""
    text: str
    """The label: own text/description plus absorbed descendants' text, pieces joined by " | "."""
    box_px: BoxPx
    flags: ElementFlag
    resource_id: str = ""
    """The resource id without its package prefix (``com.app:id/save`` -> ``save``)."""
    class_name: str = ""
    node: int = -1
    more: int = 0
    """Set on the last shown item of a truncated list run: how many similar items follow."""

    @property
    def clickable(self) -> bool:
        return bool(self.flags & ElementFlag.CLICKABLE)

    @property
    def enabled(self) -> bool:
        return not self.flags & ElementFlag.DISABLED

    @property
    def occluded(self) -> bool:
        return bool(self.flags & ElementFlag.OCCLUDED)

    @property
    def actionable(self) -> bool:
        return self.flags.actionable


_SET_ID, _SET_KIND, _SET_TEXT, _SET_BOX, _SET_FLAGS, _SET_RID, _SET_CLASS, _SET_NODE, _SET_MORE = (
    getattr(TreeElement, name).__set__
    for name in (
        "id", "kind", "text", "box_px", "flags", "resource_id", "class_name", "node", "more"
    )
)


def new_tree_element(
    id: int,  # noqa: A002  (the field's name)
    kind: str,
    text: str,
    box_px: BoxPx,
    flags: ElementFlag,
    resource_id: str,
    class_name: str,
    node: int,
    more: int,
) -> TreeElement:
    """``TreeElement(...)`` with every field given, at a quarter of the cost (0.6 us, not 2.1).

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``; the
    cluster stage builds an element for every element of every screen, so it sets the slots
    directly. The same object: equal to the one ``TreeElement(...)`` builds (a test holds the
    field list to this signature).
    """
    element = object.__new__(TreeElement)
    _SET_ID(element, id)
    _SET_KIND(element, kind)
    _SET_TEXT(element, text)
    _SET_BOX(element, box_px)
    _SET_FLAGS(element, flags)
    _SET_RID(element, resource_id)
    _SET_CLASS(element, class_name)
    _SET_NODE(element, node)
    _SET_MORE(element, more)
    return element


@dataclass(frozen=True, slots=True, kw_only=True)
class TreeHealth:
    """Signals the arbiter uses to decide how far the tree can be trusted."""

    node_count: int
    """Nodes in the raw dump."""
    kept_count: int
    """Nodes left after cleaning (on-screen, visible, not pure layout)."""
    element_count: int
    nodes_per_mpx: float
    """Kept nodes per screen megapixel."""
    text_share: float
    """Share of kept leaf nodes that carry text or a description."""
    webview_area_share: float
    """Area covered by WebView nodes, as a share of the screen."""
    surface_area_share: float
    """Area covered by SurfaceView / TextureView / GLSurfaceView nodes, as a share of the screen."""
    canvas_area_share: float
    """Area covered by single text-less leaf nodes that span most of the screen (custom-drawn)."""
    covered_area_share: float
    """Share of the screen covered by the union of the window roots."""
    looks_partial: bool
    """The dump covers much less than the screen or stops at a suspiciously flat root."""
    empty: bool
    """A genuinely empty hierarchy (valid, but nothing for the tree channel to offer)."""
    blank_web_area_share: float = 0.0
    """Area covered by WebView nodes with nothing inside them in the dump (a browser engine
    that does not expose the page, such as Firefox's): what they show is unknown to the tree."""
    floating_window: bool = False
    """The dump is one window floating over the screen (a dialog, pop-up or bottom sheet): its
    roots leave the screen's top edge or both side edges. Small but whole, so not partial."""
