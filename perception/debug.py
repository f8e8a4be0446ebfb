"""Seeing what the engine saw: arbitration overlays and element-list records for datasets.

:func:`draw_overlay` paints an observation over its frame: every candidate's box, coloured by
where it came from (tree, pixels, both), with the id the prompt uses; a band above the screen
says what the arbiter decided and why (state, confidences, the factors that lowered the tree's
score, the pixel work done, operations, notes). :func:`record` is the observation as one plain
JSON object (what ``perception export`` writes a line of), for datasets of element lists.
:func:`draw_marks` is the set-of-marks screenshot for a vision-language model: the screen's own
pixels (no band) with the prompt's ids on what an agent may act on.

Screen text is not drawn: OpenCV's fonts have no CJK, and the ids are what ties a box to its
row in ``obs.to_prompt()`` and in :func:`record`.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

import cv2
import numpy as np
import numpy.typing as npt

from perception.errors import ConfigError
from perception.fusion.candidates import Candidate
from perception.geometry import box_px_to_pm, clip_box, point_px_to_pm
from perception.pipeline import Observation
from perception.pixel.frame import FrameLike, load_frame
from perception.tree.compress import flag_words
from perception.types import BoxPx, Channel, ScreenSize

U8 = npt.NDArray[np.uint8]

# BGR. Colour-blind safe (Okabe-Ito): blue, bluish green, orange; grey for what cannot be used.
SOURCE_COLOURS: dict[Channel, tuple[int, int, int]] = {
    Channel.TREE: (178, 114, 0),
    Channel.BOTH: (115, 158, 0),
    Channel.PIXEL: (0, 159, 230),
}
UNUSABLE = (150, 150, 150)
"""Disabled, occluded and unlisted candidates (drawn thin)."""
STATE_COLOURS = {"tree": (115, 158, 0), "unstable": (0, 159, 230), "pixel": (0, 94, 213)}
_FONT = cv2.FONT_HERSHEY_SIMPLEX
MIN_FONT_SCALE = 0.45
"""The smallest Hershey scale drawn (capitals about 10 px high): on a 480x800 screen the
band's text was drawn at 0.3 and the ids at 0.28, too small to read."""
_NOT_ASCII = re.compile(r"[^\x20-\x7e]+")


def draw_overlay(obs: Observation, frame: FrameLike, *, hidden: bool = False) -> U8:
    """The frame (``uint8[H + band, W, 3]`` BGR) with the observation drawn over it.

    ``hidden``: also draw the candidates the prompt leaves out (occluded, and unlisted: list
    items past the ones shown, slivers, folded wrappers).
    Raises :class:`~perception.errors.FrameError` for a frame that cannot be decoded.
    """
    f = load_frame(frame)
    img = f.pixels.copy()
    h, w = img.shape[:2]
    # Text and lines sized for the screen, not for the pixels: by the short side, which is the
    # same for a phone upright and turned (the width made a landscape band 1.8x as big).
    short = min(w, h)
    scale = max(0.5, short / 1080)
    thick = max(1, round(2 * scale))
    tags = candidate_tags(obs)
    # Big boxes first, so the small ones inside them stay visible and clickable-looking.
    order = sorted(obs.candidates, key=lambda c: -c.box_px.area)
    for c in order:
        if not hidden and (c.occluded or not c.listed):
            continue
        _draw_candidate(img, c, tags[c.id], font_scales(short)[1], thick)
    keyboard = obs.screen.keyboard_px if obs.screen is not None else None
    if keyboard is not None:
        # What the app's elements under it are hidden by (the keys are no candidates).
        _draw_box(img, keyboard, "kbd", UNUSABLE, font_scales(short)[1], thick)
    band = _band(obs, w, short, scale)
    return np.ascontiguousarray(np.vstack([band, img]))


def font_scales(short_side_px: int) -> tuple[float, float]:
    """The band's and the id tags' font scales for a frame whose short side is this long
    (sized for the screen, never under :data:`MIN_FONT_SCALE`)."""
    ratio = short_side_px / 1080
    return max(MIN_FONT_SCALE, 0.6 * ratio), max(MIN_FONT_SCALE, 0.55 * ratio)


def candidate_tags(obs: Observation) -> dict[int, str]:
    """The tag drawn on each candidate: its id, and the operation recommended on it
    (``2 dismiss``), so the recommendation is seen where it would tap."""
    tags = {c.id: str(c.id) for c in obs.candidates}
    for o in obs.operations:
        if o.candidate_id in tags:
            tags[o.candidate_id] += f" {o.kind.value}"
    return tags


def _usable(c: Candidate) -> bool:
    return not (c.disabled or c.occluded or not c.listed)


def _draw_candidate(img: U8, c: Candidate, label: str, fs: float, thick: int) -> None:
    b = c.box_px
    colour = SOURCE_COLOURS[c.source] if _usable(c) else UNUSABLE
    # Thin: what cannot be used, a doubtful candidate (confidence under 0.5), and static tree
    # text, which the prompt lists without an id (context, nothing to tap).
    static = c.static
    line = thick if _usable(c) and c.confidence >= 0.5 and not static else 1
    _draw_box(img, b, None if static else label, colour, fs, line)


def _draw_box(
    img: U8, b: BoxPx, label: str | None, colour: tuple[int, int, int], fs: float, line: int
) -> None:
    """A box's outline and, unless None, its tag in its top-left corner."""
    cv2.rectangle(img, (b.left, b.top), (b.right - 1, b.bottom - 1), colour, line)
    if label is None:
        return
    (tw, th), base = cv2.getTextSize(label, _FONT, fs, 1)
    x, y = b.left, max(b.top, 0)
    cv2.rectangle(img, (x, y), (x + tw + 6, y + th + base + 4), colour, -1)
    cv2.putText(img, label, (x + 3, y + th + 2), _FONT, fs, (255, 255, 255), 1, cv2.LINE_AA)


MARK_COLOUR = (0, 0, 215)
"""BGR red behind white digits (contrast about 5:1): one colour, nothing for a model to decode."""
MARK_MODEL_SIDE_PX = 1280
"""The longer side a model is assumed to see the screen at: the mark labels are sized so their
digits stay readable (about 13 px high) once the image is scaled down to this."""
MIN_MAX_SIDE_PX = 64
"""The smallest ``max_side_px``: below it a phone screen's labels would cover the screen."""


class Mark(NamedTuple):
    """One mark as placed on the output image (pixels of that image, after any scaling)."""

    id: int
    box_px: BoxPx
    label_px: BoxPx


def markable(obs: Observation) -> list[Candidate]:
    """The candidates a mark goes on: those :meth:`Observation.to_prompt` lists with an id
    (:attr:`Candidate.shown`; none when the observation is not ready) that an agent may act
    on. A mark on anything else (occluded, unlisted, static text, disabled, or a view that
    takes neither tap nor text nor swipe) would be an id ``agent.actions.parse_action``
    refuses."""
    if not obs.ready:
        return []
    return [
        c
        for c in obs.candidates
        if c.shown
        and not c.disabled
        and (c.source is Channel.PIXEL or c.flags.actionable)
    ]


def _mark_font(long_side_px: int) -> tuple[float, int]:
    """The label's font scale and stroke for an output image whose longer side is this long:
    scaled with the image, so a full-size 1080x2400 image downscaled to
    :data:`MARK_MODEL_SIDE_PX` keeps its labels as readable as one drawn at that size."""
    fs = max(0.6, 0.6 * long_side_px / MARK_MODEL_SIDE_PX)
    return fs, max(2, round(fs * 1.8))  # bold: a 1 px stroke blurs away when scaled


def mark_layout(
    obs: Observation, width_px: int, height_px: int, *, scale: float = 1.0
) -> list[Mark]:
    """Where each mark and its label go on a ``width_px`` x ``height_px`` image showing the
    screen scaled by ``scale``, in id order.

    Smaller boxes choose first (a list's label moves, not its rows'). A label goes inside the
    box's top-left corner, else the first free place of: above it, inside top-right, below it,
    inside bottom-left, left of it; when none is free it stays in the corner. Free means not
    over an earlier label; every place is kept inside the image. Deterministic: the same
    observation and size give the same layout."""
    fs, stroke = _mark_font(max(width_px, height_px))
    pad = max(2, round(3 * fs))
    th, base = _digit_height(fs, stroke)
    placed: list[Mark] = []
    taken: list[tuple[int, int, int, int]] = []
    todo = sorted(markable(obs), key=lambda c: (c.box_px.area, c.id))
    for c in todo:
        b = c.box_px
        box = BoxPx(
            round(b.left * scale), round(b.top * scale),
            round(b.right * scale), round(b.bottom * scale),
        )
        tw = cv2.getTextSize(str(c.id), _FONT, fs, stroke)[0][0]
        lw, lh = tw + 2 * pad, th + base + 2 * pad
        left, top, right, bottom = box
        spots = (
            (left, top),
            (left, top - lh),
            (right - lw, top),
            (left, bottom),
            (left, bottom - lh),
            (left - lw, top),
        )
        rects = []
        for x, y in spots:
            x = min(max(x, 0), max(width_px - lw, 0))
            y = min(max(y, 0), max(height_px - lh, 0))
            rects.append((x, y, x + lw, y + lh))
        free = [r for r in rects if not any(_overlap(r, t) for t in taken)]
        label = (free or rects)[0]
        taken.append(label)
        placed.append(Mark(c.id, box, BoxPx(*label)))
    return sorted(placed, key=lambda m: m.id)


def _digit_height(fs: float, stroke: int) -> tuple[int, int]:
    """Height above and below the baseline of any id: every label of an image is as tall."""
    (_, th), base = cv2.getTextSize("0123456789", _FONT, fs, stroke)
    return int(th), int(base)


def _overlap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def draw_marks(obs: Observation, frame: FrameLike, *, max_side_px: int | None = None) -> U8:
    """The screen with a numbered mark on each candidate an agent may act on ("set of marks"):
    ``uint8[H, W, 3]`` BGR, the frame's own size, or scaled down (aspect kept) so its longer
    side is ``max_side_px``. Never scaled up.

    A mark is the box's thin outline and its id (the id :meth:`Observation.to_prompt` lists)
    in a filled label (:func:`mark_layout`). Unlike :func:`draw_overlay` there is no band and
    no state colour: the image is the screen's own pixels, so a point the model reads off it
    and the prompt's grid agree. A black (secure) frame is drawn as it is.
    Raises :class:`~perception.errors.FrameError` for a frame that cannot be decoded and
    :class:`~perception.errors.ConfigError` for a ``max_side_px`` that is not a whole number
    of at least :data:`MIN_MAX_SIDE_PX`.
    """
    if max_side_px is not None and (
        isinstance(max_side_px, bool)
        or not isinstance(max_side_px, int | np.integer)
        or max_side_px < MIN_MAX_SIDE_PX
    ):
        raise ConfigError(
            f"max_side_px must be a whole number of pixels, at least {MIN_MAX_SIDE_PX}, "
            f"got {max_side_px!r:.40}"
        )
    img = load_frame(frame).pixels
    h, w = img.shape[:2]
    scale = 1.0
    if max_side_px is not None and max(w, h) > max_side_px:
        scale = int(max_side_px) / max(w, h)
        size = (max(1, round(w * scale)), max(1, round(h * scale)))
        # INTER_AREA: downscaling without the aliasing that breaks thin text apart.
        img = cv2.resize(img, size, interpolation=cv2.INTER_AREA)
        h, w = img.shape[:2]
    else:
        img = img.copy()
    marks = mark_layout(obs, w, h, scale=scale)
    fs, stroke = _mark_font(max(w, h))
    line = max(1, round(max(w, h) / MARK_MODEL_SIDE_PX))
    # Outlines first, then every label over them: no outline crosses a digit.
    # A thick line is inset one pixel at a time: OpenCV centres it on the edge, which would
    # paint outside the box (over the neighbour a model is told the mark is not on).
    for m in marks:
        b = m.box_px
        for k in range(line):
            cv2.rectangle(img, (b.left + k, b.top + k), (b.right - 1 - k, b.bottom - 1 - k),
                          MARK_COLOUR, 1)
    th, base = _digit_height(fs, stroke)
    for m in marks:
        lb = m.label_px
        cv2.rectangle(img, (lb.left, lb.top), (lb.right - 1, lb.bottom - 1), MARK_COLOUR, -1)
        pad = (lb.height - th - base) // 2
        cv2.putText(img, str(m.id), (lb.left + pad, lb.top + pad + th), _FONT, fs,
                    (255, 255, 255), stroke, cv2.LINE_AA)
    return np.ascontiguousarray(img)


def _band_lines(obs: Observation) -> list[str]:
    s = obs.screen
    head = (
        f"{obs.state.value.upper()}  tree {obs.tree_confidence:.2f}  "
        f"pixel {obs.pixel_confidence:.2f}  consistent {obs.consistent}  "
        f"pixel work {obs.pixel_work.value}"
    )
    lines = [head]
    if not obs.ready:
        again = ", ".join(sorted(r.value for r in obs.refresh))
        lines.append(f"NOT READY: {obs.pairing.value}; capture again: {again}")
    factors = " ".join(f"{k} x{v:g}" for k, v in sorted(obs.tree_factors.items()))
    counts = {ch: sum(1 for c in obs.candidates if c.source is ch) for ch in Channel}
    occluded = sum(c.occluded for c in obs.candidates)
    unlisted = sum(not c.listed for c in obs.candidates)
    # Where the candidates counted but not drawn went (and the option that draws them).
    hidden = f"   hidden: {occluded} occluded, {unlisted} unlisted (--hidden)"
    lines.append(
        f"tree factors: {factors or 'none'}   candidates: {counts[Channel.TREE]} tree, "
        f"{counts[Channel.BOTH]} both, {counts[Channel.PIXEL]} pixel"
        f"{hidden if occluded or unlisted else ''}"
    )
    if s is not None:
        extra = f"  rot {s.rotation}" if s.rotation else ""
        lines.append(
            f"{s.package or '?'} {s.activity or ''}  {s.size.width_px}x{s.size.height_px}{extra}"
            f"{'  SECURE' if s.secure else ''}  page {s.fingerprint}"
            + (f"  kbd {','.join(map(str, s.keyboard_px))}" if s.keyboard_px else "")
        )
    ops = [f"{o.kind.value}#{o.candidate_id}" if o.candidate_id else o.kind.value
           for o in obs.operations]
    if ops:
        lines.append("ops: " + ", ".join(ops))
    lines.extend(f"note: {n}" for n in obs.notes)
    # Only ASCII reaches OpenCV's font (anything else draws as "?"): a run of other text is
    # one "?", so a CJK label does not become a line of question marks.
    return [_NOT_ASCII.sub("?", ln) for ln in lines]


def _text_width(text: str, fs: float) -> int:
    return int(cv2.getTextSize(text, _FONT, fs, 1)[0][0])


def wrap(text: str, width_px: int, fs: float, *, first_px: int | None = None) -> list[str]:
    """``text`` cut into lines that fit ``width_px`` when drawn at ``fs`` (the first line
    ``first_px``, beside the legend): at spaces, inside a word only when it alone is wider.
    Continuation lines are indented. Nothing is dropped: a note cut at the frame's edge was
    the part that said why."""
    lines: list[str] = []
    limit = width_px if first_px is None else first_px
    current = ""
    for word in text.split(" "):
        candidate = f"{current} {word}" if current else word
        if _text_width(candidate, fs) <= limit:
            current = candidate
            continue
        if current.strip():
            lines.append(current)
            limit = width_px
            current = "   " + word
        else:
            current = candidate
        while _text_width(current, fs) > limit and len(current) > 4:
            cut = len(current) - 1
            while cut > 4 and _text_width(current[:cut], fs) > limit:
                cut -= 1
            lines.append(current[:cut])
            limit = width_px
            current = "   " + current[cut:]
    if current.strip():
        lines.append(current)
    return lines


def _legend_width(fs: float, scale: float) -> int:
    return sum(_text_width(ch.value, fs) + int(12 * scale) for ch in Channel) + int(10 * scale)


def _band(obs: Observation, width: int, short: int, scale: float) -> U8:
    fs = font_scales(short)[0]
    margin = int(20 * scale)
    room = width - margin - int(8 * scale)
    lines: list[str] = []
    for i, text in enumerate(_band_lines(obs)):
        first = room - _legend_width(fs, scale) if i == 0 else None
        lines.extend(wrap(text, room, fs, first_px=first))
    step = max(int(30 * scale), int(_text_height(fs) * 1.8))
    band = np.full((step * len(lines) + int(14 * scale), width, 3), 32, np.uint8)
    colour = STATE_COLOURS.get(obs.state.value, (255, 255, 255))
    cv2.rectangle(band, (0, 0), (int(10 * scale), band.shape[0]), colour, -1)
    for i, text in enumerate(lines):
        y = int(10 * scale) + step * i + _text_height(fs) + int(6 * scale)
        cv2.putText(band, text, (margin, y), _FONT, fs, (235, 235, 235), 1, cv2.LINE_AA)
    x = width - int(10 * scale)
    for ch in (Channel.PIXEL, Channel.BOTH, Channel.TREE):  # the legend, right to left
        (tw, th), _ = cv2.getTextSize(ch.value, _FONT, fs, 1)
        x -= tw + int(12 * scale)
        cv2.rectangle(band, (x - 4, 4), (x + tw + 4, th + 14), SOURCE_COLOURS[ch], -1)
        cv2.putText(band, ch.value, (x, th + 8), _FONT, fs, (255, 255, 255), 1, cv2.LINE_AA)
    return band


def _text_height(fs: float) -> int:
    return int(cv2.getTextSize("Ag", _FONT, fs, 1)[0][1])


def record(obs: Observation, **extra: Any) -> dict[str, Any]:
    """The observation as one JSON-ready object: a dataset row of its element list.

    Every candidate, listed or not, with its box in device pixels and on the prompt's 0-1000
    grid, its flag words (those of the prompt), whether the prompt shows it (``listed``), why
    not (``hidden``: ``occluded`` and/or ``unlisted``, see :func:`_candidate_row`) and
    whether its row has no id
    (``static``: text to read, nothing to tap); ``prompt`` is what the decision model reads.
    ``extra`` items (a path, the action taken next) come first.
    """
    s = obs.screen
    size = s.size if s is not None else None
    out: dict[str, Any] = dict(extra)
    out.update(
        state=obs.state.value,
        ready=obs.ready,
        tree_confidence=obs.tree_confidence,
        pixel_confidence=obs.pixel_confidence,
        consistent=obs.consistent,
        tree_factors=dict(obs.tree_factors),
        pixel_work=obs.pixel_work.value,
        notes=list(obs.notes),
    )
    if s is not None:
        out["screen"] = {
            "app": s.package,
            "activity": s.activity,
            "width": s.size.width_px,
            "height": s.size.height_px,
            "rotation": s.rotation,
            "secure": s.secure,
            "fingerprint": s.fingerprint,
            "keyboard_px": list(s.keyboard_px) if s.keyboard_px is not None else None,
        }
    out["operations"] = [
        {"op": o.kind.value, "id": o.candidate_id, "reason": o.reason} for o in obs.operations
    ]
    keyboard = s.keyboard_px if s is not None else None
    out["candidates"] = [_candidate_row(c, size, obs.ready, keyboard) for c in obs.candidates]
    out["prompt"] = json.loads(obs.to_prompt())
    return out


def _candidate_row(
    c: Candidate, size: ScreenSize | None, ready: bool, keyboard: BoxPx | None = None
) -> dict[str, Any]:
    # Occluded (under a dialog or drawer), under the on-screen keyboard, and unlisted (left out
    # of the prompt otherwise: list items past the ones shown, which a scroll reaches, and
    # slivers scrolled almost out of view, repeats of a text around them, rows of punctuation,
    # the outer of two scroll areas with one box, wrappers folded into their control) are told
    # apart: a dataset may drop what is covered and keep the rest.
    hidden = ["occluded"] if c.occluded else []
    if not c.listed:
        under = keyboard is not None and keyboard.contains(c.box_px.center)
        hidden.append("keyboard" if under else "unlisted")
    return {
        "id": c.id,
        "source": c.source.value,
        "origin": c.origin,
        "kind": c.kind,
        "text": c.text,
        "box_px": list(c.box_px),
        "box_pm": list(box_px_to_pm(c.box_px, size)) if size is not None else None,
        # where the prompt places it (and a tap on it lands): the centre of its part on the
        # screen
        "point_pm": (
            list(point_px_to_pm(clip_box(c.box_px, size.box_px).center, size))
            if size is not None
            else None
        ),
        "confidence": c.confidence,
        "flags": flag_words(int(c.flags), c.more).split(),
        # A prompt that is not ready shows no rows at all.
        "listed": ready and not hidden,
        "hidden": hidden,
        "static": c.static,
        "tree_id": c.tree_id,
    }
