"""Frame flags: black / uniform (FLAG_SECURE), rotation, system-bar insets, stability.

These are facts about a frame that the arbiter weighs; none of them is an error. A secure
window's screenshot is black while its hierarchy is fine, so a black frame is *flagged* and the
pixel channel simply offers nothing for it.

Stability compares a downscaled luma signature (bars masked) with the previous frame's: one
changed character already changes several cells, which a perceptual hash would miss.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np
import numpy.typing as npt

from perception.config import PixelConfig
from perception.errors import InputError
from perception.pixel.frame import Frame
from perception.types import BoxPx, ScreenSize

SIGNATURE_SCALE = 4
"""The stability signature keeps one luma cell per ``SIGNATURE_SCALE`` x ``SIGNATURE_SCALE`` px."""

CONTENT_CELLS_MIN = 8
"""A dark or flat frame with at least this many signature cells clearly off its background
(:data:`CONTENT_DIFF_MIN`), away from the system bars and the side edges, shows something: it is
neither black nor uniform, and is read. One short label ("OK" in 24 px type) has about 30; a
FLAG_SECURE capture with its status bar, gesture handle and edge-panel tab showing has none."""
CONTENT_DIFF_MIN = 24
"""Luma difference from the frame's median that counts a cell as content."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FrameFlags:
    """What the pixels say about the frame itself."""

    black: bool
    """Almost every pixel is black (screen off, or a FLAG_SECURE window)."""
    uniform: bool
    """One flat colour (black included): nothing to read."""
    secure: bool
    """Black although a screen was captured: most likely FLAG_SECURE (the tree may be fine)."""
    rotation: int
    """Quarter turns from portrait as the image shows it: 0 portrait, 1 landscape."""
    status_bar_px: int
    """Height of the status-bar inset at the top (0 when none was found)."""
    nav_bar_px: int
    """Thickness of the navigation-bar inset (0 when none was found)."""
    nav_bar_side: str
    """Where the navigation bar sits: ``bottom``, ``right`` or ``none``."""
    stable: bool | None
    """The screen stopped changing since the previous frame; None without a previous frame."""
    changed_cells: int
    """Signature cells that changed against the previous frame (-1 without one)."""
    mean_luma: float
    luma_std: float
    modal_box_px: BoxPx | None = None
    """A surface (a dialog, a sheet, a drawer, a popup menu; light, or of one flat fill) over
    the rest of the screen dimmed by a scrim: what lies outside it is not for tapping
    (:func:`modal_surface`)."""

    def status_bar_box(self, size: ScreenSize) -> BoxPx | None:
        """The status bar's inset on a frame of ``size``, None when none was found."""
        if self.status_bar_px <= 0:
            return None
        return BoxPx(0, 0, size.width_px, min(size.height_px, self.status_bar_px))

    def nav_bar_box(self, size: ScreenSize) -> BoxPx | None:
        """The navigation bar's inset on a frame of ``size``, None when there is none."""
        w, h, t = size.width_px, size.height_px, self.nav_bar_px
        if t <= 0 or self.nav_bar_side not in ("bottom", "right"):
            return None
        return BoxPx(0, h - t, w, h) if self.nav_bar_side == "bottom" else BoxPx(w - t, 0, w, h)


@dataclass(frozen=True, slots=True, eq=False)
class StabilitySignature:
    """A downscaled luma image with the system bars masked out, for frame differencing."""

    cells: npt.NDArray[np.uint8]

    def changed_cells(self, other: StabilitySignature, diff_min: int) -> int:
        if self.cells.shape != other.cells.shape:
            return int(self.cells.size)
        diff = cv2.absdiff(self.cells, other.cells)
        return int(np.count_nonzero(diff >= diff_min))


def gray_small(pixels: npt.NDArray[np.uint8]) -> npt.NDArray[np.uint8]:
    """``pixels`` (BGR, or grey already) as luma :data:`SIGNATURE_SCALE` times smaller on each
    side, each value the mean of its block: what the flags work on, and the fusion's probe of
    the same frame (converted first, then shrunk: cheaper than the other way round on a
    phone's frame, 0.8 ms against 1.4 ms at 1080x2400)."""
    gray = pixels if pixels.ndim == 2 else cv2.cvtColor(pixels, cv2.COLOR_BGR2GRAY)
    h, w = gray.shape[:2]
    size = (max(1, w // SIGNATURE_SCALE), max(1, h // SIGNATURE_SCALE))
    small: npt.NDArray[np.uint8] = np.ascontiguousarray(
        cv2.resize(gray, size, interpolation=cv2.INTER_AREA), dtype=np.uint8
    )
    return small


def _band_end(rows: npt.NDArray[np.float32], limit: int) -> int:
    """How many leading rows (of ``rows``: [N, W] luma) form a system bar; 0 if none.

    A bar ends either at a full-width change of background colour, or after a run of "ink"
    (icons, clock) that starts near the edge and is followed by blank rows. ``limit`` is cut to
    the rows there are: above black padding only a few may be left (a black frame that shows
    its status bar alone had thrown an IndexError out of ``perceive``).
    """
    limit = min(limit, rows.shape[0])
    if rows.shape[0] < 4 or limit < 2:
        return 0
    bg = float(np.median(rows[0]))
    far = np.abs(rows[:limit] - bg) > 24.0
    share = far.mean(axis=1)
    # A different background across the whole width: the bar's lower edge.
    for r in range(1, limit):
        if share[r] > 0.9 and abs(float(np.median(rows[r])) - bg) > 20.0:
            return r
    ink = share > 0.01
    run_start = -1
    for r in range(limit):
        if ink[r]:
            run_start = r
            break
    if run_start < 0 or run_start > limit // 3:
        return 0
    r = run_start
    while r < limit and ink[r]:
        r += 1
    run_end = r
    blank_after = 0
    while r < limit and not ink[r]:
        blank_after += 1
        r += 1
    if run_end >= limit or blank_after < 1:
        return 0
    return min(limit, run_end + max(run_start, 1))


def _nav_bar_over_padding(
    gray: npt.NDArray[np.uint8], rows: npt.NDArray[np.float32], black_max: float
) -> int:
    """The navigation bar of a screen drawn into a taller frame whose rows below it are black
    padding (the fdroid recordings: 1080x1920 screens in 1080x2340 frames, the bar right above
    the black): its thickness counted from the frame's bottom edge, padding included, or 0.

    The padding is the black rows at the bottom (a black bar down to its buttons merges into
    them); above it, the bar must be what :func:`_band_end` takes for one and hold nothing
    but three buttons, one in the middle and two mirrored about it (back, home, recents in
    either order) in the bar's middle third. A video or a game over a black lower part has no
    such row above the black."""
    h_cells = int(gray.shape[0])
    black = np.flatnonzero(gray.max(axis=1) > black_max)
    if not black.size:
        return 0
    content = int(black[-1]) + 1
    if content >= h_cells:
        return 0
    band = _band_end(rows[:content][::-1], max(2, int(0.07 * h_cells)))
    # The buttons sit in the bar's middle third (a translucent bar shows the content under
    # its upper edge).
    top = content - band
    if not band or not _three_buttons(gray[top + band // 3 : content - band // 3]):
        return 0
    return h_cells - content + band


NAV_BUTTON_SHARE = 0.1
"""A navigation button is at most this share of the frame's width wide."""
NAV_MIRROR_SHARE = 0.05
"""The buttons' centres sit this close (a share of the width) to the middle and its mirror."""


def _three_buttons(band: npt.NDArray[np.uint8]) -> bool:
    """Does this band (rows x columns of luma) hold exactly three marks side by side, narrow,
    the middle one centred and the outer two mirrored about the centre?"""
    w = int(band.shape[1])
    bg = float(np.median(band))
    columns = (np.abs(band.astype(np.float32) - bg) > 24.0).any(axis=0)
    ink = np.flatnonzero(columns)
    if not ink.size:
        return False
    # Runs of ink columns, a blank column or two inside a glyph bridged (a ring's middle).
    breaks = np.flatnonzero(np.diff(ink) > 3)
    starts = np.concatenate(([ink[0]], ink[breaks + 1]))
    ends = np.concatenate((ink[breaks], [ink[-1]])) + 1
    if len(starts) != 3 or (ends - starts).max() > NAV_BUTTON_SHARE * w:
        return False
    left, middle, right = (float(v) for v in (starts + ends) / 2.0)
    slack = NAV_MIRROR_SHARE * w
    return abs(middle - w / 2.0) <= slack and abs((left + right) / 2.0 - w / 2.0) <= slack


def _right_nav_bar(gray: npt.NDArray[np.uint8], rows: npt.NDArray[np.float32], top: int) -> int:
    """A landscape frame's navigation bar along its right edge: its thickness in cells, or 0.

    :func:`_band_end` on the columns takes any marks near the right edge with blank columns
    inside them for a bar: a settings page's switches, a status bar's battery (a 2400x1080
    page with nothing else at the right got a 168 px bar, and the switches in it were dropped).
    A bar on the right is taken when it has a background of its own (its median off the
    content's beside it) or holds the three buttons, stacked (below the status bar's rows,
    ``top``: its icons may reach over the bar)."""
    w_cells = int(gray.shape[1])
    band = _band_end(rows.T[::-1], max(2, int(0.08 * w_cells)))
    if not band or band * 2 >= w_cells:
        return 0
    bar = gray[top:, w_cells - band :]
    beside = gray[top:, max(0, w_cells - 3 * band) : w_cells - band]
    if abs(float(np.median(bar)) - float(np.median(beside))) > 20.0:
        return band
    middle = gray[top:, w_cells - band + band // 3 : w_cells - band // 3]
    return band if middle.size and _three_buttons(middle.T) else 0


MODAL_WHITE_MIN = 180
"""A modal surface is light: its brightest luma (the 99.5th percentile of the content) at
least this."""
MODAL_SURFACE_SHARE = (0.08, 0.9)
"""... and takes this share of the content area (a dialog, a sheet, a drawer, a menu)."""
MODAL_BAR_SHARE = 0.12
"""A full-width surface at the top or bottom of the content less tall than this share of it
is a bar, not a sheet (a sheet holds more than one row)."""
MODAL_DIM_SHARE_MIN = 0.15
"""The dimmed rest is at least this share of the content area."""
MODAL_DIM_CEILING = (40, 0.62)
"""A scrim darkens everything under it alike, so nothing there is brighter than the dimmed
white: the rest's brightest luma (99.9th percentile) lies between 40 (a black letterbox or
a dark app is no dimmed screen) and this share of the surface's white. Android's dialog dim
(0.6) gives 0.40; on the corpus's modal screens 0.30-0.60, on the rest down to 0.64 (a video
page under a comment box, a dark picture over a white card)."""
MODAL_RING_CELLS = 3
"""Cells around the surface left out of the rest (its shadow and anti-aliased edge)."""
MODAL_BAR_MARGIN_CELLS = 2
"""Rows inside a detected system bar's edge left out of the modal search too. A bar is found
to a cell or so: a light navigation bar left undimmed 130 px tall, found 128 px, put a cell
half bar, half scrim in the rest, brighter than the dimmed white (the rest's 99.9th
percentile), and a dialog over a dimmed page was no modal."""


MODAL_FLAT_PEAKS = 4
"""A dark surface (:func:`_flat_surface`) is sought at the content's this many most common
luma values (a dialog's or sheet's fill is one flat colour)."""
MODAL_FLAT_TOLERANCE = 10
"""Cells within this luma of the fill belong to the flat surface."""
MODAL_FLAT_FILL = 0.8
"""The flat patch fills at least this share of its box (a rectangle, text gaps closed)."""
MODAL_FLAT_WHITE_MIN = 150
"""A flat surface's own brightest luma (99.9th percentile: its text, its buttons) is at least
this."""
MODAL_FLAT_DIM_CEILING = 0.52
"""The flat rule's own, tighter share of the surface's white the rest's brightest luma stays
under (see :data:`MODAL_DIM_CEILING`): a dark page shows its own secondary text at about 0.6
of white (Material's, luma ~153-160 on #121212), which a flat elevated card holding white text
would otherwise take for a dimmed rest. Android's dialog dim (0.6) leaves 0.40; the corpus's
flat-surface dialogs 0.38-0.49. Dimmer page text (0.52 or less) still passes: one frame does
not tell it from a scrim."""
MODAL_HOLE_SHARE = 0.3
"""A hole in the flat patch (a framed button, a field) is at most this share of its box."""
MODAL_EDGE_SHARE = 0.75
"""... and at least this share of the cells on a ring just outside its box differ from the fill
(a clear boundary all round, where a dark page's panel runs into its own background)."""


def modal_surface(
    gray: npt.NDArray[np.uint8], top: int, bottom: int
) -> tuple[int, int, int, int] | None:
    """The box (``left, top, right, bottom`` in cells of ``gray``) of a surface over a dimmed
    screen, looked for between rows ``top`` and ``bottom`` (not on the system bars: the
    status bar's icons are drawn over any scrim), or None. A surface that reaches either row
    reaches the frame's edge there. A light surface is looked for first
    (:func:`_light_surface`), then a flat one of any shade (:func:`_flat_surface`)."""
    return _light_surface(gray, top, bottom) or _flat_surface(gray, top, bottom)


def _histogram(cells: npt.NDArray[np.uint8]) -> npt.NDArray[np.float32]:
    """How many of ``cells`` hold each luma 0-255 (exact counts up to 2**24 cells)."""
    hist = cv2.calcHist([np.ascontiguousarray(cells)], [0], None, [256], [0, 256])
    return np.asarray(hist, dtype=np.float32).ravel()


def _percentile(hist: npt.NDArray[np.float32], q: float) -> float:
    """The ``q``-th percentile of the values counted in ``hist`` (:func:`_histogram`), exactly
    as ``np.percentile`` (linear) gives it of those values: a tenth of the time of its sort on
    a phone's grey copy, and no copy of a masked rest."""
    cum = np.cumsum(hist, dtype=np.float64)
    n = int(cum[-1])
    if n == 0:
        raise InputError("the percentile of no values: an empty histogram")
    at = (n - 1) * (q / 100)
    lo = math.floor(at)
    a = float(np.searchsorted(cum, lo, side="right"))
    b = float(np.searchsorted(cum, min(lo + 1, n - 1), side="right"))
    t = at - lo
    # numpy's lerp, the same rounding either side of the midpoint.
    return b - (b - a) * (1 - t) if t >= 0.5 else a + (b - a) * t


def _spare(n: int) -> int:
    """At least how many of ``n`` values can lie above a limit while their 99.9th percentile
    (numpy's, interpolated) does not: the ones above the interpolation's lower index, and one
    for the rounding of that index."""
    return n - 1 - math.floor(0.999 * (n - 1)) + 1


def _room_for_dim_rest(content: npt.NDArray[np.uint8], share: float) -> bool:
    """Can any box leave a rest of at least :data:`MODAL_DIM_SHARE_MIN` of ``content`` whose
    99.9th percentile stays at or under ``share`` of the content's brightest cell? A necessary
    condition of the surface rules' dimmed rest, cheap against their labelling passes.

    The rest may hold only its 0.1% of cells brighter than that. So a box must take in every
    bright cell but that many: it spans at least the rows from where more than that many lie
    above to where more than that many lie below, and the columns likewise. What lies outside
    that core is all a rest can be; when it is under the share, no box qualifies (a page with
    bright text or a light area both high and low, as a launcher's wallpaper and labels)."""
    h, w = content.shape
    size = h * w
    bright = content > share * float(content.max())
    spare = _spare(size)  # a rest is smaller than the content: it spares no more
    rows = np.cumsum(np.count_nonzero(bright, axis=1))
    if int(rows[-1]) <= spare:
        return True
    cols = np.cumsum(np.count_nonzero(bright, axis=0))
    # The box's first row lies at or above ``top``: more than ``spare`` bright cells in the
    # rows above it would all be in the rest. Its end lies at or below ``bottom``, and so on.
    top = int(np.searchsorted(rows, spare, side="right"))
    bottom = int(np.searchsorted(rows, rows[-1] - spare, side="left")) + 1
    left = int(np.searchsorted(cols, spare, side="right"))
    right = int(np.searchsorted(cols, cols[-1] - spare, side="left")) + 1
    core = max(0, bottom - top) * max(0, right - left)
    return bool(size - core >= MODAL_DIM_SHARE_MIN * size)


def _reach_edges(
    gray: npt.NDArray[np.uint8],
    content: npt.NDArray[np.uint8],
    top: int,
    box: tuple[int, int, int, int],
) -> tuple[int, int, int, int]:
    """``box`` (x, y, w, h in cells of ``content``) in cells of ``gray``: a surface cut by the
    search band goes on under the system bars' rows (a drawer's header, a sheet's lower edge)."""
    x, y, w, h = box
    upper = 0 if y == 0 else y + top
    lower = gray.shape[0] if y + h == content.shape[0] else y + h + top
    return x, upper, x + w, lower


def _flat_surface(
    gray: npt.NDArray[np.uint8], top: int, bottom: int
) -> tuple[int, int, int, int] | None:
    """A dialog or sheet of one flat fill, dark or light, over a dimmed screen (a dark dialog
    over a dimmed game, a dark sheet over a dimmed dark page), or None.

    The surface is the largest 4-connected patch within :data:`MODAL_FLAT_TOLERANCE` of one of
    the content's most common shades, filling :data:`MODAL_FLAT_FILL` of its box, with a clear
    boundary (:data:`MODAL_EDGE_SHARE`). Its own brightest luma (text, buttons) plays the white:
    the rest must be dimmed below it, tighter than for a light surface
    (:data:`MODAL_FLAT_DIM_CEILING`). An ordinary dark-mode page shows its own text at full
    brightness, or its secondary text at about 0.6 of it, outside any panel, and is no modal."""
    content = gray[top:bottom]
    if content.shape[0] < 8:
        return None
    # The dimmed rest spans the content's width or height beside the surface: whole rows or
    # columns with nothing brighter than the dimmed white of the brightest surface. On most
    # screens some row or column of each holds full-bright text, and the search is skipped.
    dim = content <= MODAL_DIM_CEILING[1] * 255
    if max(float(dim.all(axis=1).mean()), float(dim.all(axis=0).mean())) < MODAL_DIM_SHARE_MIN / 2:
        return None
    if not _room_for_dim_rest(content, MODAL_FLAT_DIM_CEILING):
        return None
    size = content.shape[0] * content.shape[1]
    low, high = MODAL_SURFACE_SHARE
    hist = _histogram(content)
    smooth = np.convolve(hist, np.ones(5, np.float32), "same")
    tried: list[int] = []
    for shade in (int(v) for v in np.argsort(-smooth)):
        if len(tried) >= MODAL_FLAT_PEAKS or smooth[shade] < low * size / 4:
            break
        if any(abs(shade - t) <= 2 * MODAL_FLAT_TOLERANCE for t in tried):
            continue
        tried.append(shade)
        near = (np.abs(content.astype(np.int16) - shade) <= MODAL_FLAT_TOLERANCE).astype(np.uint8)
        flat = cv2.morphologyEx(near, cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8))
        count, labels, stats, _ = cv2.connectedComponentsWithStats(flat, connectivity=4)
        if count < 2:
            continue
        k = 1 + int(np.argmax(stats[1:, 4]))
        x, y, w, h, _ = (int(v) for v in stats[k])
        if not low * size <= w * h <= high * size:
            continue
        at_edge = y == 0 or y + h == content.shape[0]
        if at_edge and w >= content.shape[1] - 2 and h < MODAL_BAR_SHARE * content.shape[0]:
            continue
        ring = MODAL_RING_CELLS
        outer = np.zeros(content.shape, dtype=bool)
        outer[max(0, y - 2) : y + h + 2, max(0, x - 2) : x + w + 2] = True
        outer[y : y + h, x : x + w] = False
        if not outer.any() or float((flat[outer] == 0).mean()) < MODAL_EDGE_SHARE:
            continue
        white = _percentile(_histogram(content[y : y + h, x : x + w]), 99.9)
        if white < MODAL_FLAT_WHITE_MIN:
            continue
        dimmed = hist - _histogram(
            content[max(0, y - ring) : y + h + ring, max(0, x - ring) : x + w + ring]
        )
        if dimmed.sum() < MODAL_DIM_SHARE_MIN * size:
            continue
        ceiling = _percentile(dimmed, 99.9)
        if not MODAL_DIM_CEILING[0] <= ceiling <= MODAL_FLAT_DIM_CEILING * white:
            continue
        # The holes last (a contour pass and a labelling: the dearest test, seldom reached on
        # a frame with no pop-up). Buttons and fields framed by the fill are holes in the
        # patch, not gaps around it; a hole as big as a dialog is a surface of its own (the
        # patch is the scrim around it).
        patch = (labels[y : y + h, x : x + w] == k).astype(np.uint8)
        outlines, _ = cv2.findContours(patch, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
        filled = patch.copy()
        cv2.drawContours(filled, outlines, -1, 1, thickness=cv2.FILLED)
        _, _, holes, _ = cv2.connectedComponentsWithStats(filled - patch, connectivity=4)
        if holes[1:, 4].size and int(holes[1:, 4].max()) > MODAL_HOLE_SHARE * w * h:
            continue
        if int(filled.sum()) < MODAL_FLAT_FILL * w * h:
            continue
        return _reach_edges(gray, content, top, (x, y, w, h))
    return None


def _light_surface(
    gray: npt.NDArray[np.uint8], top: int, bottom: int
) -> tuple[int, int, int, int] | None:
    """A light surface over a dimmed screen, or None (see :func:`modal_surface`).

    The surface is the largest 4-connected patch of near-white cells (within 20 of the content's
    white, gaps of text closed) filling most of its box; the rest of the content, a ring
    around the surface aside, must be dimmed: see :data:`MODAL_DIM_CEILING`. Dark surfaces
    over dark screens are not found (their scrim hardly shows)."""
    content = gray[top:bottom]
    if content.shape[0] < 8:
        return None
    hist = _histogram(content)
    white = _percentile(hist, 99.5)
    if white < MODAL_WHITE_MIN:
        return None
    near_white = (content >= white - 20).astype(np.uint8)
    # The dimmed rest spans the content's width or height beside the surface (above and below
    # a dialog, right of a drawer): whole rows or columns without a near-white cell. On most
    # light screens every row holds some of the background, and the labelling below is skipped.
    row_share = 1.0 - float(near_white.any(axis=1).mean())
    col_share = 1.0 - float(near_white.any(axis=0).mean())
    if max(row_share, col_share) < MODAL_DIM_SHARE_MIN / 2:
        return None
    if not _room_for_dim_rest(content, MODAL_DIM_CEILING[1]):
        return None
    bright = cv2.morphologyEx(near_white, cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8))
    count, _, stats, _ = cv2.connectedComponentsWithStats(bright, connectivity=4)
    if count < 2:
        return None
    k = 1 + int(np.argmax(stats[1:, 4]))
    x, y, w, h, area = (int(v) for v in stats[k])
    size = content.shape[0] * content.shape[1]
    low, high = MODAL_SURFACE_SHARE
    if area < 0.6 * w * h or not low * size <= w * h <= high * size:
        return None
    at_edge = y == 0 or y + h == content.shape[0]
    if at_edge and w >= content.shape[1] - 2 and h < MODAL_BAR_SHARE * content.shape[0]:
        return None  # a toolbar or bottom bar (a browser's, over a page still fading in)
    ring = MODAL_RING_CELLS
    dimmed = hist - _histogram(
        content[max(0, y - ring) : y + h + ring, max(0, x - ring) : x + w + ring]
    )
    if dimmed.sum() < MODAL_DIM_SHARE_MIN * size:
        return None
    ceiling = _percentile(dimmed, 99.9)
    if not MODAL_DIM_CEILING[0] <= ceiling <= MODAL_DIM_CEILING[1] * white:
        return None
    return _reach_edges(gray, content, top, (x, y, w, h))


def _content_cells(gray: npt.NDArray[np.uint8]) -> int:
    """Cells clearly off the median luma, outside the top 5% and bottom 7% (where system bars
    and the gesture handle sit) and the outer 3% of each side (edge-panel tabs)."""
    h, w = gray.shape
    mid = gray[int(0.05 * h) : h - int(0.07 * h), int(0.03 * w) : w - int(0.03 * w)]
    if mid.size == 0:
        return 0
    median = int(np.median(gray))
    return int(np.count_nonzero(np.abs(mid.astype(np.int16) - median) >= CONTENT_DIFF_MIN))


def frame_flags(
    frame: Frame,
    config: PixelConfig | None = None,
    previous: StabilitySignature | None = None,
    *,
    gray: npt.NDArray[np.uint8] | None = None,
) -> tuple[FrameFlags, StabilitySignature]:
    """Flag a frame; returns the flags and its stability signature (pass it in next time).
    ``gray``: the frame's :func:`gray_small` when the caller has it already."""
    cfg = config or PixelConfig()
    if gray is None:
        gray = gray_small(frame.pixels)
    else:
        h, w = frame.pixels.shape[:2]
        if gray.shape != (max(1, h // SIGNATURE_SCALE), max(1, w // SIGNATURE_SCALE)):
            raise InputError(
                f"a grey copy of shape {gray.shape} is not this {w}x{h} frame's gray_small"
            )
    # OpenCV's one pass, a tenth of numpy's two: the same to 1e-13 (the flags keep two places).
    mean_std = cv2.meanStdDev(gray)
    mean, std = float(mean_std[0][0, 0]), float(mean_std[1][0, 0])
    p99 = _percentile(_histogram(gray), 99)
    black = mean <= cfg.black_luma_max and p99 <= 3 * cfg.black_luma_max
    uniform = std <= cfg.uniform_std_max
    if (black or uniform) and _content_cells(gray) >= CONTENT_CELLS_MIN:
        # A label on a black (dark mode) or flat screen: skipping it would report an empty screen.
        black = uniform = False
    landscape = frame.size.width_px > frame.size.height_px
    rows = gray.astype(np.float32)
    h_cells, w_cells = gray.shape
    status_cells = 0 if uniform else _band_end(rows, max(2, int(0.05 * h_cells)))
    nav_side = "none"
    nav_cells = 0
    if not uniform:
        if landscape:
            nav_cells = _right_nav_bar(gray, rows, status_cells)
            nav_side = "right" if nav_cells else "none"
        if not nav_cells:
            nav_cells = _band_end(rows[::-1], max(2, int(0.07 * h_cells)))
            if not nav_cells:
                nav_cells = _nav_bar_over_padding(gray, rows, cfg.black_luma_max)
            nav_side = "bottom" if nav_cells else "none"
    modal = None
    if not uniform:
        bottom_cells = nav_cells if nav_side == "bottom" else 0
        margin = MODAL_BAR_MARGIN_CELLS
        cells = modal_surface(
            gray,
            max(status_cells + margin if status_cells else 0, int(0.05 * h_cells)),
            h_cells - max(bottom_cells + margin if bottom_cells else 0, int(0.03 * h_cells)),
        )
        if cells is not None:
            modal = BoxPx(*(v * SIGNATURE_SCALE for v in cells))
    masked = gray.copy()
    if status_cells:
        masked[:status_cells] = 0
    if nav_cells and nav_side == "bottom":
        masked[h_cells - nav_cells :] = 0
    elif nav_cells and nav_side == "right":
        masked[:, w_cells - nav_cells :] = 0
    signature = StabilitySignature(masked)
    changed = -1 if previous is None else previous.changed_cells(signature, cfg.stable_diff_min)
    flags = FrameFlags(
        black=black,
        uniform=uniform,
        secure=black,
        rotation=1 if landscape else 0,
        status_bar_px=status_cells * SIGNATURE_SCALE,
        nav_bar_px=nav_cells * SIGNATURE_SCALE,
        nav_bar_side=nav_side,
        stable=None if previous is None else changed == 0,
        changed_cells=changed,
        mean_luma=round(mean, 2),
        luma_std=round(std, 2),
        modal_box_px=modal,
    )
    return flags, signature
