"""The only unit converter: device pixels <-> 0-1 (``_norm``) <-> the 0-1000 grid (``_pm``).

The 0-1000 grid is what the decision model sees. A pixel box maps to the grid by scaling each
edge and rounding to the nearest integer; a grid point maps back to the *centre* of the pixel
cell it names, clamped inside the screen, so a round trip never leaves the screen.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

from perception.errors import InputError
from perception.types import BoxPm, BoxPx, PointPm, PointPx, ScreenSize

GRID_PM = 1000


def _scale_to_pm(value_px: int, extent_px: int) -> int:
    if extent_px <= 0:
        return 0
    # Integer round-half-up, identical on every platform.
    pm = (value_px * GRID_PM * 2 + extent_px) // (extent_px * 2)
    return min(GRID_PM, max(0, pm))


def box_px_to_pm(box: BoxPx, screen: ScreenSize) -> BoxPm:
    """Scale a pixel box to the 0-1000 grid (clamped to the grid)."""
    w, h = screen.width_px, screen.height_px
    if w <= 0 or h <= 0:
        return BoxPm(0, 0, 0, 0)
    # Integer round-half-up as in _scale_to_pm, inlined: this runs for every prompt row.
    left, top, right, bottom = box
    return BoxPm(
        min(GRID_PM, max(0, (left * 2000 + w) // (w * 2))),
        min(GRID_PM, max(0, (top * 2000 + h) // (h * 2))),
        min(GRID_PM, max(0, (right * 2000 + w) // (w * 2))),
        min(GRID_PM, max(0, (bottom * 2000 + h) // (h * 2))),
    )


def box_pm_text(box: BoxPm) -> str:
    """A grid box as the prompt writes it: ``"left top right bottom"``."""
    return "%d %d %d %d" % box  # noqa: UP031  (fastest for four ints)


def place_texts(boxes: Sequence[BoxPx], screen: ScreenSize, whole: Sequence[bool]) -> list[str]:
    """Where each box is on the 0-1000 grid, as the prompt writes it: the whole box
    ``"left top right bottom"`` (:func:`box_px_to_pm`) where ``whole`` says so, else
    ``"x y"``, the point a tap on it lands on: the centre of its part on the screen
    (:func:`clip_box`, then ``BoxPx.center``, as the executor taps), scaled as
    :func:`point_px_to_pm` does. :func:`point_pm_to_px` maps it back within a pixel or two of
    that tap, inside the box. A list at a time: this runs for every prompt row."""
    w, h = screen.width_px, screen.height_px
    if w <= 0 or h <= 0:
        return ["0 0 0 0" if full else "0 0" for full in whole]
    w2, h2 = w * 2, h * 2
    out: list[str] = []
    add = out.append
    for box, full in zip(boxes, whole, strict=True):
        if full:
            add(box_pm_text(box_px_to_pm(box, screen)))
            continue
        left, top, right, bottom = box  # clip_box against the screen, inlined
        if left < 0:
            left = 0
        if top < 0:
            top = 0
        if right > w:
            right = w
        if bottom > h:
            bottom = h
        x = (left + (right if right > left else left)) // 2
        y = (top + (bottom if bottom > top else top)) // 2
        add("%d %d" % (min(GRID_PM, (x * 2000 + w) // w2), min(GRID_PM, (y * 2000 + h) // h2)))  # noqa: UP031
    return out


def point_px_to_pm(point: PointPx, screen: ScreenSize) -> PointPm:
    return PointPm(_scale_to_pm(point.x, screen.width_px), _scale_to_pm(point.y, screen.height_px))


def point_pm_to_px(point: PointPm, screen: ScreenSize) -> PointPx:
    """Map a grid point to the pixel it names, clamped to ``[0, size - 1]``."""
    x = min(GRID_PM, max(0, int(point.x))) * screen.width_px // GRID_PM
    y = min(GRID_PM, max(0, int(point.y))) * screen.height_px // GRID_PM
    return PointPx(min(x, screen.width_px - 1), min(y, screen.height_px - 1))


def point_norm_to_px(x_norm: float, y_norm: float, screen: ScreenSize) -> PointPx:
    """Map 0-1 coordinates to pixels, clamped to ``[0, size - 1]`` (android_env's rule)."""
    x = int(min(1.0, max(0.0, x_norm)) * screen.width_px)
    y = int(min(1.0, max(0.0, y_norm)) * screen.height_px)
    return PointPx(min(x, screen.width_px - 1), min(y, screen.height_px - 1))


def point_px_to_norm(point: PointPx, screen: ScreenSize) -> tuple[float, float]:
    return (point.x / screen.width_px, point.y / screen.height_px)


def point_scaled_to_px(x: float, y: float, space: ScreenSize, screen: ScreenSize) -> PointPx:
    """Map a point given in another resolution (a downscaled click space) to device pixels."""
    return point_norm_to_px(x / space.width_px, y / space.height_px, screen)


def clip_box(box: BoxPx, bounds: BoxPx) -> BoxPx:
    """Intersect ``box`` with ``bounds``; an empty result has zero area (right=left etc.)."""
    left = max(box.left, bounds.left)
    top = max(box.top, bounds.top)
    right = max(left, min(box.right, bounds.right))
    bottom = max(top, min(box.bottom, bounds.bottom))
    return BoxPx(left, top, right, bottom)


def union_box(boxes: Sequence[BoxPx]) -> BoxPx:
    """The smallest box holding every one of ``boxes`` (at least one)."""
    return BoxPx(
        min(b.left for b in boxes),
        min(b.top for b in boxes),
        max(b.right for b in boxes),
        max(b.bottom for b in boxes),
    )


def box_arg(name: str, value: object) -> BoxPx | None:
    """A caller's box argument as a :class:`BoxPx` (None stays None): four whole numbers, left,
    top, right, bottom, right of left and below top, in a tuple or a list (JSON's), Python's or
    numpy's ints; anything else is :class:`~perception.InputError` (as the recordings and the
    CLIs refuse it: a box without area is no box; pass None)."""
    if value is None:
        return None
    if not (
        isinstance(value, tuple | list)
        and len(value) == 4
        and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value)
    ):
        raise InputError(f"{name} must be a box (left, top, right, bottom) of ints, got {value!r}")
    box = BoxPx(*(int(v) for v in value))
    if box.right <= box.left or box.bottom <= box.top:
        raise InputError(f"{name} must be a box with an area (right > left, bottom > top), "
                         f"got {value!r}; pass None for none")
    return box


def rotate_size(screen: ScreenSize, rotation: int) -> ScreenSize:
    """The screen size as seen in ``rotation`` (0-3 quarter turns) from the natural size."""
    if rotation % 2:
        return ScreenSize(screen.height_px, screen.width_px)
    return screen


def scale_box(box: BoxPx, factor: float) -> BoxPx:
    """Scale a box (e.g. from a downscaled analysis copy back to device pixels)."""
    return BoxPx(
        round(box.left * factor),
        round(box.top * factor),
        round(box.right * factor),
        round(box.bottom * factor),
    )
