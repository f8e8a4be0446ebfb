"""The tree channel: ``uiautomator dump`` bytes -> a compact, trustworthy element list.

Stages, one module each: :mod:`~perception.tree.parse` (hardened parse),
:mod:`~perception.tree.clean`, :mod:`~perception.tree.cluster`,
:mod:`~perception.tree.occlusion`, :mod:`~perception.tree.compress`,
:mod:`~perception.tree.health`.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.config import TreeConfig
from perception.errors import TreeParseError
from perception.geometry import box_arg, clip_box, union_box
from perception.memo import cached_property
from perception.tree.clean import (
    MAX_DUMP_SCREEN_SIDE_PX,
    CleanTree,
    check_screen_fits,
    check_screen_size,
    clean,
    infer_screen,
    window_extent,
)
from perception.tree.cluster import Clusters, cluster
from perception.tree.compress import over_budget, to_prompt
from perception.tree.health import blank_web_views, health
from perception.tree.parse import DumpSource, RawTree, dump_source, parse_dump, tree_config
from perception.types import BoxPx, ElementFlag, ScreenSize, TreeElement, TreeHealth

LOCK_SCREEN_IDS = frozenset({
    "com.android.systemui:id/pinEntry",  # the PIN's field (the SIM PIN's too)
    "com.android.systemui:id/passwordEntry",
    "com.android.systemui:id/lockPatternView",
    # the bouncer's own container, shown only while it asks (or, after wrong tries, says when
    # it will ask again: MIUI's "This device is locked / Try again in 21 seconds")
    "com.android.systemui:id/keyguard_security_container",
})
"""Resource ids of the lock screen's bouncer asking for the phone's credential (AOSP's
KeyguardSecurityContainer with its KeyguardPINView, KeyguardPasswordView or
KeyguardPatternView, kept by the phone makers that build on them). A swipe lock screen shows
no bouncer."""

__all__ = ["Tree", "read_tree", "RawTree", "dump_source"]

_OCCLUDED = int(ElementFlag.OCCLUDED)
_SPOT_MIN_SIDE = 0.04
_SPOT_MAX_AREA = 0.1
_NAME_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


def _names_loading(resource_id: str) -> bool:
    """The resource name (package part left out) has a word that starts with "loading":
    ``loading_panel``, ``ivLoading``, ``LOADING_VIEW``, ``loadingbar``; not
    ``preloadingCache`` or ``unloading``."""
    if "oading" not in resource_id and "OADING" not in resource_id:
        return False
    name = resource_id.rpartition("/")[2]
    return any(w.lower().startswith("loading") for w in _NAME_WORD.findall(name))


class Tree:
    """One screen as the tree channel sees it.

    ``elements`` holds every element (ids stable within the screen, in document order),
    including occluded ones (flagged) and those left out otherwise (:attr:`hidden_ids`: list
    items past the ones shown, among others); ``prompt_elements`` is what the model is offered.
    """

    def __init__(
        self,
        cleaned: CleanTree,
        clusters: Clusters,
        rotation: int,
        *,
        screen_estimated: bool = False,
        keyboard: BoxPx | None = None,
        max_rows: int | None = None,
    ) -> None:
        self._clean = cleaned
        self._clusters = clusters
        self._max_rows = TreeConfig().max_rows if max_rows is None else max_rows
        given = box_arg("keyboard", keyboard)
        if given is not None:
            screen = cleaned.screen
            given = clip_box(given, BoxPx(0, 0, screen.width_px, screen.height_px))
        # Nothing of it on the screen: no keyboard.
        self._given_keyboard = given if given is not None and given.area > 0 else None
        self.screen: ScreenSize = cleaned.screen
        """The screen the 0-1000 coordinates are relative to (given, or inferred)."""
        self.screen_estimated = screen_estimated
        """True when :attr:`screen` is a guess: no screen was given and the dump holds only a
        floating window (see :func:`perception.tree.clean.infer_screen`)."""
        self.rotation: int = rotation

    @cached_property
    def window_box(self) -> BoxPx:
        """The union of the dump's windows, in device pixels (a dialog dumped alone: its
        box)."""
        return BoxPx(*window_extent(self._clean.raw))

    @property
    def extent(self) -> ScreenSize:
        """Right and bottom edge of the dump's windows: what a frame must at least hold."""
        return ScreenSize(self.window_box.right, self.window_box.bottom)

    @property
    def elements(self) -> tuple[TreeElement, ...]:
        return self._clusters.elements

    @cached_property
    def hidden_ids(self) -> frozenset[int]:
        """Ids of elements left out of the prompt though not occluded: list items past the
        ones shown (truncation), slivers, repeats of a text around them, punctuation rows, the
        outer of two scroll areas with one box, wrappers folded into their control, the app's
        elements under the on-screen keyboard (:attr:`keyboard_ids`), rows past the row budget
        (:attr:`over_budget_ids`)."""
        if (
            self._given_keyboard is None and self._clean.keyboard_px is None
            and len(self._clusters.elements) <= self._max_rows
        ):
            return self._clusters.hidden  # nearly every screen: no keyboard, within the budget
        hidden = self._hidden_before_budget
        budget = self.over_budget_ids
        return hidden | budget if budget else hidden

    @property
    def _hidden_before_budget(self) -> frozenset[int]:
        keys = self.keyboard_ids
        return self._clusters.hidden | keys if keys else self._clusters.hidden

    @cached_property
    def over_budget_ids(self) -> frozenset[int]:
        """Ids of the rows left out because the screen has more than ``max_rows``
        (:class:`~perception.config.TreeConfig`) to show: the app decides how many elements it
        draws, the prompt's size must not follow. Which go:
        :func:`perception.tree.compress.over_budget` (the densest repeated small rows' tail
        first; focused, selected, input, list and tab rows last). The prompt says how many
        (``"more"``); they stay in :attr:`elements`."""
        if len(self._clusters.elements) <= self._max_rows:
            return frozenset()  # every screen of the corpus: no row to count
        hidden = self._hidden_before_budget
        rows = [
            e for e in self._clusters.elements
            if e.id not in hidden and not int(e.flags) & _OCCLUDED
        ]
        out = over_budget(
            [e.kind for e in rows], [int(e.flags) for e in rows], [e.box_px for e in rows],
            self._max_rows,
        )
        return frozenset(rows[i].id for i in out)

    @cached_property
    def keyboard_px(self) -> BoxPx | None:
        """The on-screen keyboard's box (the prompt's ``"kbd"``): its window's when the dump
        holds it (its keys are not offered: see :mod:`perception.tree.keyboard`), and the box
        the phone reported beside the dump (:meth:`with_keyboard`)."""
        boxes = [b for b in (self._clean.keyboard_px, self._given_keyboard) if b is not None]
        return union_box(boxes) if boxes else None

    def with_keyboard(self, box: BoxPx | None) -> Tree:
        """This screen with the on-screen keyboard at ``box`` (device pixels; clipped to the
        screen; None or nothing left on the screen: no keyboard but the dump's own), as the
        phone reports it beside a dump that does not hold the keyboard's window (most hold the
        app's alone): the app's elements under it are left out, they take no tap, the keys
        over them do. The tree's reading is shared, not redone."""
        if box == self._given_keyboard:
            return self
        return Tree(
            self._clean,
            self._clusters,
            self.rotation,
            screen_estimated=self.screen_estimated,
            keyboard=box,
            max_rows=self._max_rows,
        )

    @cached_property
    def keyboard_ids(self) -> frozenset[int]:
        """Ids of the app's elements under the keyboard, left out of the prompt: they take no
        tap, the keys over them do (the keys themselves are no elements: the cleaning stage
        leaves the keyboard's windows out)."""
        box = self.keyboard_px
        if box is None:
            return frozenset()  # most screens: the app's window is not looked for
        app = self._app_window
        if app is None:
            return frozenset()
        return frozenset(
            e.id for e in self._clusters.elements
            if app[0] <= e.node < app[1] and box.contains(e.box_px.center)
        )

    @property
    def prompt_elements(self) -> tuple[TreeElement, ...]:
        hidden = self.hidden_ids
        return tuple([  # a list comprehension: no generator to resume for every element
            e for e in self._clusters.elements
            if e.id not in hidden and not int(e.flags) & _OCCLUDED
        ])

    @property
    def raw(self) -> RawTree:
        return self._clean.raw

    @property
    def element_of_node(self) -> npt.NDArray[np.int32]:
        """For each raw node (document order), the id of the element that covers it, or -1."""
        return self._clusters.element_of_node

    @cached_property
    def inferred_ids(self) -> frozenset[int]:
        """Ids of the elements offered as controls on a guess, not because the dump says they
        take taps: the items of a list that nothing in the dump makes tappable (OneList's list
        chips: :func:`perception.tree.clean.untouched_list_items`). A consumer trusts them
        less (fusion's ``doubtful``)."""
        nodes = self._clean.inferred
        if not nodes:
            return frozenset()  # nearly every screen
        of = self._clusters.element_of_node[list(nodes)]
        return frozenset(of[of >= 0].tolist())

    @cached_property
    def text_labelled(self) -> frozenset[int]:
        """Ids of the elements whose label holds text the screen draws (a ``text`` attribute of
        the element's node or of one it absorbed), not only a description or a resource id:
        what OCR can be expected to read back where the element is."""
        of = self._clusters.element_of_node
        drawn = (self._clean.raw.bits & fastpath.B_HAS_TEXT) != 0
        return frozenset(np.unique(of[drawn & (of >= 0)]).tolist())

    @cached_property
    def _shown(self) -> npt.NDArray[np.bool_]:
        """``bool[n]``: the raw nodes cleaning kept that have some of the screen."""
        clean = self._clean
        clip = clean.clip_px
        shown: npt.NDArray[np.bool_] = (
            ((clean.bits & fastpath.B_DROPPED) == 0)
            & (clip[:, 2] > clip[:, 0])
            & (clip[:, 3] > clip[:, 1])
        )
        return shown

    def _holding(self, spot: BoxPx) -> npt.NDArray[np.bool_]:
        """``bool[n]``: the raw nodes whose box holds ``spot``'s centre (as BoxPx.contains)."""
        clip = self._clean.clip_px
        cx, cy = spot.center
        holds: npt.NDArray[np.bool_] = (
            (clip[:, 0] <= cx) & (cx < clip[:, 2]) & (clip[:, 1] <= cy) & (cy < clip[:, 3])
        )
        return holds

    @cached_property
    def loading_pages(self) -> tuple[BoxPx, ...]:
        """Web views whose page is still loading, as far as the dump tells: a WebView holding
        no node, while a progress bar is on the screen (a browser's toolbar line, which it
        hides once the page has loaded; Firefox dumps its pages without their content). Empty
        when either is missing. Whether the page is drawn yet only the pixels can say."""
        clean = self._clean
        if clean.raw.count == 0:
            return ()
        clip = clean.clip_px
        shown = self._shown
        classes = clean.raw.strings[fastpath.F_CLASS :: fastpath.NFIELDS]
        if not any(classes[i].endswith("ProgressBar") for i in np.flatnonzero(shown).tolist()):
            return ()
        blank = np.flatnonzero(shown & blank_web_views(clean)).tolist()
        return tuple(BoxPx(*(int(v) for v in clip[i])) for i in blank)

    @cached_property
    def loading_spots(self) -> tuple[BoxPx, ...]:
        """Loading indicators the dump shows: a spinner (``ProgressBar``, or a view whose
        resource name has a word starting with "loading": Yelp's ``loading_spinner_holder``,
        Weibo's ``lottie_view_loading_circle``), about square, at least 4% of the screen's
        shorter side (a 48 dp spinner on a landscape tablet) and at most a tenth of its area.
        A horizontal bar is left out (a download's progress, a song's position), as is a
        full-screen overlay named for loading (Duolingo keeps its ``homeLoadingIndicator``
        over the loaded page). Such a spot is kept even where cleaning dropped it (no text,
        nothing to tap); whether the page around it is empty is for the observation to say
        (:func:`perception.fusion.screen.loading_spot`, :meth:`drawn_px`)."""
        clean = self._clean
        raw = clean.raw
        if raw.count == 0:
            return ()
        classes = raw.strings[fastpath.F_CLASS :: fastpath.NFIELDS]
        rids = raw.strings[fastpath.F_RID :: fastpath.NFIELDS]
        names = "\n".join(rids)
        if "oading" not in names and "OADING" not in names and "ProgressBar" not in "\n".join(
            classes
        ):
            return ()  # most screens: one pass over the names, none over the nodes
        clip = clean.clip_px
        shown = np.flatnonzero(self._shown).tolist()
        screen = self._clean.screen
        min_side = _SPOT_MIN_SIDE * min(screen.width_px, screen.height_px)
        max_area = _SPOT_MAX_AREA * screen.width_px * screen.height_px
        spots = []
        for i in shown:
            if not (classes[i].endswith("ProgressBar") or _names_loading(rids[i])):
                continue
            left, top, right, bottom = (int(v) for v in clip[i])
            w, h = right - left, bottom - top
            if w < min_side or w * h > max_area or not 0.5 * h <= w <= 2 * h:
                continue
            spots.append(BoxPx(left, top, right, bottom))
        return tuple(spots)

    def spot_area(self, spot: BoxPx) -> BoxPx:
        """The part of the screen a loading indicator stands for: the smallest shown node
        holding it that is at least twice its width and height (the panel it spins in, not
        its own frame), else the whole screen. What lies outside (the keyboard under a
        resized page, the bars) says nothing of whether that part has loaded."""
        clean = self._clean
        screen = BoxPx(0, 0, clean.screen.width_px, clean.screen.height_px)
        if clean.raw.count == 0:
            return screen
        clip = clean.clip_px
        w, h = clip[:, 2] - clip[:, 0], clip[:, 3] - clip[:, 1]
        fit = np.flatnonzero(
            self._shown & self._holding(spot) & (w >= 2 * spot.width) & (h >= 2 * spot.height)
        )
        if not len(fit):
            return screen
        best = fit[np.argmin((w * h)[fit].astype(np.int64))]
        return BoxPx(*(int(v) for v in clip[best]))

    def drawn_px(self, spot: BoxPx) -> npt.NDArray[np.int32]:
        """``int32[N, 4]``: where the dump says something is drawn around ``spot`` (a loading
        indicator): every shown node that does not hold it, cleaned away or not (a decorative
        picture, a page under a scrim), every shown leaf that does (a picture, a video, a map's
        or a camera's surface: drawn content itself, under the spinner), and the on-screen
        keyboard. What lies around the spot outside these the dump does not explain."""
        clean = self._clean
        if clean.raw.count == 0:
            return np.zeros((0, 4), np.int32)
        leaf = clean.end == np.arange(1, clean.raw.count + 1, dtype=clean.end.dtype)
        boxes = clean.clip_px[self._shown & (~self._holding(spot) | leaf)]
        keyboard = self.keyboard_px
        if keyboard is not None:
            boxes = np.vstack([boxes, np.asarray([tuple(keyboard)], dtype=np.int32)])
        return np.ascontiguousarray(boxes, dtype=np.int32)

    def best_overlap(self, box: BoxPx) -> float:
        """The highest intersection over union between ``box`` cut to the dump's windows and
        a node the dump shows, kept as an element or not (a dialog's panel is a layout node):
        does the dump hold something drawn there, as large? 0.0 when ``box`` lies outside the
        windows or the dump holds no node. A dump whose windows end above the frame's bottom
        (a DroidBot capture of 1920 px over a 2340 px screenshot) is compared over its own
        windows."""
        clean = self._clean
        window = self.window_box
        left, top = max(box.left, window.left), max(box.top, window.top)
        right, bottom = min(box.right, window.right), min(box.bottom, window.bottom)
        if clean.raw.count == 0 or right <= left or bottom <= top:
            return 0.0
        clip = clean.clip_px[self._shown].astype(np.int64)
        w = np.clip(np.minimum(clip[:, 2], right) - np.maximum(clip[:, 0], left), 0, None)
        h = np.clip(np.minimum(clip[:, 3], bottom) - np.maximum(clip[:, 1], top), 0, None)
        inter = w * h
        union = (
            (clip[:, 2] - clip[:, 0]) * (clip[:, 3] - clip[:, 1])
            + (right - left) * (bottom - top)
            - inter
        )
        if not len(union):
            return 0.0
        return float((inter / np.maximum(union, 1)).max())

    @property
    def cleaned(self) -> CleanTree:
        return self._clean

    @cached_property
    def package(self) -> str:
        """The app on screen: the package most nodes of the largest window belong to ("" for
        an empty tree).

        Over all nodes the keyboard, the system bars or an edge panel often outnumber the app
        (a landscape dump whose systemui windows hold more nodes than a simple app, or a
        keyboard's keys): windows other than the app's are no larger than it. Of two windows
        as large (split screen) the one with more nodes wins, then the first listed. The
        keyboard's window is never the app (in landscape's full-screen mode it is the largest);
        a dump of it alone names none."""
        raw = self._clean.raw
        span = self._app_window
        if span is None:
            return ""
        counts = Counter(raw.strings[fastpath.F_PKG :: fastpath.NFIELDS][span[0] : span[1]])
        counts.pop("", None)
        return counts.most_common(1)[0][0] if counts else ""

    @property
    def over_dialog(self) -> bool:
        """A layer that closes a dialog, a sheet or a menu at a tap outside it is offered, with
        that tap (Flutter's modal barrier, a bottom sheet's outside): the screen shows one over
        the page, whatever its classes are called (Flutter's are all ``View``)."""
        hidden = self.hidden_ids
        return any(i not in hidden for i in self._clusters.outside_taps)

    @cached_property
    def asks_to_unlock(self) -> bool:
        """The lock screen asks for the phone's PIN, password or pattern: a node of the system
        UI's on the screen (not cleaned away) has the id of the bouncer's field or pattern grid
        (:data:`LOCK_SCREEN_IDS`). A swipe lock screen asks for nothing; an app's own PIN field,
        or Settings confirming the PIN, is not the phone locked."""
        clean = self._clean
        rids = clean.raw.strings[fastpath.F_RID :: fastpath.NFIELDS]
        if LOCK_SCREEN_IDS.isdisjoint(rids):  # one pass in C: nearly every screen
            return False
        hits = [i for i, rid in enumerate(rids) if rid in LOCK_SCREEN_IDS]
        return any(int(clean.bits[i]) & fastpath.B_DROPPED == 0 for i in hits)

    @cached_property
    def _app_window(self) -> tuple[int, int] | None:
        """The node span of the app's window: the largest that is not the keyboard's."""
        raw = self._clean.raw
        if raw.count == 0:
            return None
        keyboard = self._clean.keyboard_windows
        if raw.windows == 1 and not keyboard:
            return (0, raw.count)
        spans = [span for span in raw.window_spans() if span not in keyboard]
        if not spans:
            return None  # the keyboard's window alone
        clip = self._clean.clip_px[[root for root, _ in spans]].astype(np.int64)
        area = ((clip[:, 2] - clip[:, 0]) * (clip[:, 3] - clip[:, 1])).tolist()
        best = max(range(len(spans)), key=lambda k: (area[k], spans[k][1] - spans[k][0], -k))
        return spans[best]

    @cached_property
    def health(self) -> TreeHealth:
        return health(self._clean, len(self._clusters.elements))

    @property
    def empty(self) -> bool:
        return self._clean.raw.count == 0

    def field_text(self, element_id: int) -> str | None:
        """The text an input element's field holds now (``""`` when empty, or when it shows
        its hint), or None when the element holds no editable node. What replacing the text
        has to delete: the label may be cut, or be the hint."""
        raw = self._clean.raw
        element = self._clusters.elements[element_id]
        nodes = [element.node] if element.node >= 0 else []
        if not (nodes and int(raw.bits[nodes[0]]) & fastpath.B_EDITABLE):
            covered = np.flatnonzero(self._clusters.element_of_node == element_id).tolist()
            nodes = [n for n in covered if int(raw.bits[n]) & fastpath.B_EDITABLE][:1]
        if not nodes:
            return None
        at = nodes[0] * fastpath.NFIELDS
        text = raw.strings[at + fastpath.F_TEXT]
        return "" if text == raw.strings[at + fastpath.F_HINT] else text

    def texts(self) -> list[str]:
        """The labels of the offered elements, in order (for matching against OCR)."""
        return [e.text for e in self.prompt_elements if e.text]

    def to_prompt(self, coords: bool = True) -> str:
        """The compact JSON the model reads (schema in :mod:`perception.tree.compress`)."""
        return to_prompt(
            self.prompt_elements, screen=self.screen, coords=coords, keyboard=self.keyboard_px,
            left_out=len(self.over_budget_ids),
        )

    def __repr__(self) -> str:
        return (
            f"Tree({len(self.elements)} elements, screen={self.screen.width_px}x"
            f"{self.screen.height_px}, package={self.package!r})"
        )


def read_tree(
    xml: DumpSource,
    *,
    screen: ScreenSize | None = None,
    config: TreeConfig | None = None,
    keyboard: BoxPx | None = None,
) -> Tree:
    """Turn a ``uiautomator dump`` into a :class:`Tree`.

    ``xml`` is the dump's bytes or text, or a file path (an ``os.PathLike``, or a one-line str
    without ``<``; see :func:`perception.tree.parse.dump_source`). ``screen`` is the device
    screen in the dump's rotation; without it, the extent of the dump's window roots is used,
    or for a floating window alone an estimate (:attr:`Tree.screen_estimated`). Raises a
    :class:`perception.TreeError` subclass for anything that is not a usable hierarchy (never
    an empty tree for a failed dump), :class:`perception.ScreenMismatchError` for a ``screen``
    that cannot hold the dump's windows, and :class:`perception.InputError` for an argument
    of the wrong type, a file that cannot be read or a screen side outside 1-65535 px.
    ``keyboard`` is the on-screen keyboard's box where the phone reports it beside the dump
    (see :meth:`Tree.with_keyboard`).
    """
    config = tree_config(config)
    if screen is not None:
        screen = check_screen_size(screen)
    raw = parse_dump(dump_source(xml, config.max_input_bytes), config)
    estimated = False
    if screen is None:
        screen, estimated = infer_screen(raw)
        if raw.count and (screen.width_px <= 0 or screen.height_px <= 0):
            raise TreeParseError(
                f"the dump's window roots have no usable bounds (its {raw.windows} windows "
                f"span {screen.width_px}x{screen.height_px} px): no screen to place "
                "its nodes on"
            )
        if max(screen.width_px, screen.height_px) > MAX_DUMP_SCREEN_SIDE_PX:
            raise TreeParseError(
                f"the dump's windows span {screen.width_px}x{screen.height_px} px, more than "
                f"any screen ({MAX_DUMP_SCREEN_SIDE_PX} px a side): a damaged dump (pass "
                "screen= where the screen really is that large)"
            )
    else:
        check_screen_fits(raw, screen)
    cleaned = clean(raw, screen)
    return Tree(
        cleaned,
        cluster(cleaned, config),
        raw.rotation,
        screen_estimated=estimated,
        keyboard=keyboard,
        max_rows=config.max_rows,
    )
