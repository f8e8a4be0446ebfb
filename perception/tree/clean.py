"""Stage 2: clean. Clip every node to the screen and classify it.

Dropped: invisible (``visible-to-user="false"``, or under an invisible parent) and nodes with no
area on the screen (off-screen or zero-area). Pure layout containers (no text, no description,
no resource hint, not actionable) stay as structure only: they link their children but never
become elements. Disabled nodes are kept and flagged. One kernel call does it all.

Before it, some classes change what their nodes' bits say (:func:`with_roles`):

- a Spinner (a dropdown) does not scroll, whatever its accessibility node says (``AbsSpinner``
  reports the adapter's scroll actions), and what is drawn inside it (the chosen value, in a
  clickable item view) is its label, not controls of its own: the model sees one ``select``
  showing "mute audio", not a scrollable ``[spinner]`` beside a button "mute audio";
- a focusable child of a list view (ListView, GridView, RecyclerView) with a text or a
  description of its own is a tappable item even when it is not clickable: the list takes the
  touch (DocumentsUI's photo tiles). A placeholder without a label ("No items" drawn in a
  child of its own) is not one;
- a slider (a SeekBar, a RatingBar) takes touches even where its node says it is not clickable
  (uiautomator and DroidBot report QQ Music's progress bar and Acrylic's brush size so): it is
  clickable, so an element the model sees (kind ``slider``, with its box: where along it to
  tap or drag). A RatingBar that is not focusable only shows a rating (an indicator): it stays
  what it is.
"""

from __future__ import annotations

import operator
import re
from bisect import bisect_left
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.errors import InputError, ScreenMismatchError
from perception.memo import short_key_cache
from perception.tree.keyboard import keyboard_windows
from perception.tree.parse import SYSTEM_UI, RawTree
from perception.types import ACTIONABLE, BoxPx, ElementFlag, ScreenSize

I32 = npt.NDArray[np.int32]


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanTree:
    raw: RawTree
    screen: ScreenSize
    clip_px: I32
    """Boxes clipped to the screen, ``int32[n, 4]``."""
    bits: I32
    """Raw bits plus PARTLY_OFFSCREEN, ``fastpath.B_DROPPED`` and ``fastpath.B_LAYOUT``."""
    owner: I32
    """Aggregation root of each node (see :mod:`perception.tree.cluster`), -1 if none."""
    rank: I32
    """Draw rank: later-drawn nodes have higher ranks."""
    end: I32
    """Subtree end (exclusive) of each node in document order."""
    tab_bars: tuple[int, ...]
    """The ``TabWidget`` nodes (:data:`ROLE_TAB_BAR`), in document order."""
    drawer_layouts: tuple[int, ...] = ()
    """The ``DrawerLayout`` nodes (:data:`ROLE_DRAWER`), in document order."""
    keyboard_px: BoxPx | None = None
    """The on-screen keyboard's box, when the dump holds its window (left out: see
    :mod:`perception.tree.keyboard`)."""
    keyboard_windows: tuple[tuple[int, int], ...] = ()
    """The keyboard's windows as ``(root, end)`` node spans."""
    under_modal: tuple[tuple[int, int], ...] = ()
    """The windows under a modal one (a dialog or a pop-up: see :func:`modal_cover`), as
    ``(root, end)`` node spans: none of their nodes takes a tap."""
    inferred: tuple[int, ...] = ()
    """The nodes made tappable though nothing in the dump says they are (a list's untouched
    items: :func:`untouched_list_items`), in document order: a guess, to be trusted less."""
    barriers: tuple[int, ...] = ()
    """The layers that close a dialog at a tap outside it, in document order: Flutter's modal
    barriers (:func:`modal_barriers`) and the bottom-sheet dialogs' (:func:`sheet_scrims`)."""


# Display widths of phones and tablets, in pixels, in the orientation the dump shows (portrait
# widths and landscape long sides). Only a floating window's width is snapped to one of these.
_DISPLAY_WIDTHS = (
    240, 320, 360, 480, 540, 600, 720, 768, 800, 1080, 1200, 1280, 1440, 1600, 1800, 1920,
    2160, 2280, 2340, 2400, 2560,
)
# A centred dialog is centred on the area below the status bar and above the navigation bar:
# the screen is its top plus its bottom plus about the navigation bar less the status bar.
_BARS_DP = 24


def window_extent(raw: RawTree) -> tuple[int, int, int, int]:
    """The union of the dump's window roots (``left, top, right, bottom``), 0s without roots."""
    if raw.windows == 1:  # most dumps: the first node is the one root (numpy's mask and
        # fancy index for it were most of this function's time)
        left, top, right, bottom = raw.box_px[0].tolist()
        return (max(0, left), max(0, top), max(0, right), max(0, bottom))
    # A dump has a window or a few: a list beats four numpy reductions (14 -> 3 us).
    boxes = raw.box_px[(raw.parent < 0).nonzero()[0]].tolist()
    if not boxes:
        return (0, 0, 0, 0)
    lefts, tops, rights, bottoms = zip(*boxes, strict=True)
    return (max(0, min(lefts)), max(0, min(tops)), max(0, max(rights)), max(0, max(bottoms)))


MAX_SCREEN_SIDE_PX = 65_535
"""No display is wider or taller (the kernels keep coordinates in int32)."""
MAX_DUMP_SCREEN_SIDE_PX = 16_384
"""The largest screen side a dump may imply by itself (the corpus's largest: 3120 px; an 8K
display: 7680); a caller's ``screen=`` may say up to :data:`MAX_SCREEN_SIDE_PX`."""


def check_screen_size(screen: ScreenSize) -> ScreenSize:
    """``screen`` with whole-pixel sides, each 1 to :data:`MAX_SCREEN_SIDE_PX`, or an
    :class:`InputError` saying what is wrong with it."""
    try:
        if isinstance(screen.width_px, bool) or isinstance(screen.height_px, bool):
            raise TypeError("a bool is no pixel count")
        width, height = operator.index(screen.width_px), operator.index(screen.height_px)
    except (AttributeError, TypeError) as exc:
        raise InputError(
            f"screen must be a ScreenSize of whole pixels, got {screen!r}"
        ) from exc
    if not (0 < width <= MAX_SCREEN_SIDE_PX and 0 < height <= MAX_SCREEN_SIDE_PX):
        raise InputError(
            f"screen {width}x{height} px: each side must be 1 to {MAX_SCREEN_SIDE_PX} px"
        )
    return ScreenSize(width, height)


def _slack_px(side_px: int) -> int:
    """How far windows may reach past a given screen's edge (1/16 of it, at least 8 px): a
    status or navigation bar the dump counts and the screen size does not."""
    return max(8, side_px // 16)


def _holds(width: int, height: int, right: int, bottom: int) -> bool:
    return right <= width + _slack_px(width) and bottom <= height + _slack_px(height)


def check_screen_fits(raw: RawTree, screen: ScreenSize) -> None:
    """Refuse a given screen that cannot hold the dump's windows (:class:`ScreenMismatchError`).

    As for frames (``perception.pixel.check_frame_size``), the windows may cover less than
    the screen (a dialog dumped alone), never more, except by a bar's height
    (:func:`_slack_px`). Clipping to a screen that is too small would silently drop elements.
    """
    _, _, right, bottom = window_extent(raw)
    width, height = screen.width_px, screen.height_px
    if _holds(width, height, right, bottom):
        return
    if _holds(height, width, right, bottom):
        shape = "portrait" if bottom >= right else "landscape"
        hint = (
            f"; they fit {height}x{width}, the size transposed: the dump is {shape}, give the "
            "screen as the dump shows it"
        )
    else:
        hint = "; the dump is from a larger screen (leave the screen out to use its extent)"
    raise ScreenMismatchError(
        f"the given screen is {width}x{height} px but the dump's windows reach {right}x{bottom} "
        f"px (right and bottom edges){hint}"
    )


LANDSCAPE_ONLY_WIDTH_PX = 1920
"""No phone or tablet held upright is this wide (the widest upright panels of
:data:`_DISPLAY_WIDTHS` are 1600 and 1800): a screen this wide is held level."""
PHONE_MAX_WIDTH_PX = 1440
"""No phone held upright is wider (1440 x 3120 and the like): a dialog's place says which way
up a wider screen is held, never a narrower one's."""
_LEVEL_SHAPES = ((9, 16), (10, 16))
"""The height-to-width shapes of displays whose natural orientation is landscape: TVs (16:9)
and tablets (16:10)."""


def _level_height(width: int, top: int, bottom: int, centred: bool) -> int:
    """The height of a landscape screen ``width`` wide whose rotation says portrait (its natural
    orientation is landscape): the 16:9 or 16:10 height nearest a centred window's vertical
    centre, else the 16:9 one; never above the window's bottom."""
    heights = [round(width * num / den) for num, den in _LEVEL_SHAPES]
    if centred:
        return max(bottom, min(heights, key=lambda h: abs(h - (top + bottom))))
    return max(bottom, heights[0])


def infer_screen(raw: RawTree) -> tuple[ScreenSize, bool]:
    """The screen the dump describes (rotation already applied), and whether it is a guess.

    A dump whose windows start at the top-left corner spans the screen: its extent is the
    screen. A floating window (a dialog, pop-up or sheet dumped alone, as ``uiautomator dump``
    does while one is up) says nothing certain about the screen, so its size is estimated:
    a window whose left and right margins match a display width is a centred dialog (width =
    left + right; height from its vertical centre, about 24 dp below the screen's); otherwise
    the width is the next display width at or past its right edge. A portrait window that ends
    short of 5:3 (no phone is squatter) gets a 16:9 screen. Across the corpus's 59 floating
    windows with a screenshot this width is exact on all 59 (the extent: 17); pass the real
    screen wherever it is known.

    Rotation 0 means portrait on a phone only: on a tablet or a TV whose natural orientation is
    landscape it is landscape, and a portrait estimate made a 2560-wide tablet's screen 4551 px
    tall (every y of the prompt wrong). So an upright rotation is taken as landscape where the
    geometry says so: a width no upright display has (:data:`LANDSCAPE_ONLY_WIDTH_PX`), or a
    width no upright phone has (past :data:`PHONE_MAX_WIDTH_PX`: a 2560 or 1600 px tablet) and
    a centred dialog whose vertical centre puts the screen's height below its width; such a
    screen is 16:9 or 16:10 (:func:`_level_height`). A phone's dialog sits high as often (pushed
    up by the keyboard, a top-gravity dialog), so at a phone's width a dialog's place decides
    nothing: a 1280x720 TV's dialog is estimated as a phone's, 1280 px wide and 16:9 upright
    (pass the screen).
    """
    left, top, right, bottom = window_extent(raw)
    if (left, top) == (0, 0) or right <= left or bottom <= top:
        return ScreenSize(right, bottom), False
    span = left + right
    # The display widths are sorted, and two neighbours lie farther apart than their
    # tolerances (0.5% each) together: the one width within its tolerance, if any, is the
    # nearest (a bisection, not a lambda call for each of the 21 widths).
    at = bisect_left(_DISPLAY_WIDTHS, span)
    if at == len(_DISPLAY_WIDTHS) or (
        at > 0 and span - _DISPLAY_WIDTHS[at - 1] <= _DISPLAY_WIDTHS[at] - span
    ):
        at -= 1  # the one below is as near or nearer (on a tie, the smaller width)
    nearest = _DISPLAY_WIDTHS[at]
    centred = left > 0 and abs(nearest - span) <= 0.005 * nearest
    if centred:
        width = nearest
    elif left > 0:
        at = bisect_left(_DISPLAY_WIDTHS, right)  # the next display width at or past its edge
        width = _DISPLAY_WIDTHS[at] if at < len(_DISPLAY_WIDTHS) else right
    else:
        width = right
    portrait = raw.rotation % 2 == 0
    if portrait and (
        width >= LANDSCAPE_ONLY_WIDTH_PX
        or (centred and width > PHONE_MAX_WIDTH_PX and top + bottom < width)
    ):
        return ScreenSize(width, _level_height(width, top, bottom, centred)), True
    height = bottom
    if portrait and bottom < width * 5 / 3:  # short of any phone's bottom (5:3 at the squattest)
        height = round(width * 16 / 9)
    if centred:
        dp = (width if portrait else width * 9 / 16) / 360
        height = max(height, top + bottom + round(_BARS_DP * dp))
    return ScreenSize(width, height), True


FLOAT_INSET_SHARE = 0.02
"""A window this share of the screen's height below its top edge, or this share of its width
inside both side edges, floats over the screen."""


def floats(box: tuple[int, int, int, int], width: int, height: int) -> bool:
    """A window's box (``left, top, right, bottom``) floats over the screen (a dialog, a pop-up,
    a bottom sheet): it leaves the screen's top edge, or both side edges. A full-screen window,
    and a dump that lost part of the screen, keep the top-left anchoring (a strip across the
    top does not float)."""
    left, top, right, bottom = box
    if width <= 0 or height <= 0 or right <= left or bottom <= top:
        return False
    inset = FLOAT_INSET_SHARE
    off_top = top >= inset * height
    off_sides = left >= inset * width and right <= (1 - inset) * width
    return off_top or off_sides


DIALOG_PARTS = frozenset({
    "parentPanel", "topPanel", "title_template", "alertTitle", "contentPanel", "customPanel",
    "buttonPanel", "button1", "button2", "button3", "select_dialog_listview",
    "aerr_close", "aerr_wait", "aerr_restart", "aerr_report", "aerr_mute", "aerr_app_info",
})
"""The resource names (package part left out) of an ``AlertDialog``'s layout, the platform's
and AppCompat's alike (``alert_dialog.xml``, ``abc_alert_dialog_material.xml``), and of
Android's own not-responding and crash dialogs (``android:id/aerr_*``)."""
_MODAL_NAMES = ("dialog", "popup")
"""A word in a class or resource name that says dialog or pop-up (``dialog_container``,
``grant_dialog``, ``MenuPopupWindow$MenuDropDownListView``: an overflow or pop-up menu),
lowercased."""
_ANY_POPUP = re.compile(r"(?:^|[.$])(?:list)?popupwindow\$")
"""A class of ``PopupWindow``'s or ``ListPopupWindow``'s own (``PopupWindow$PopupDecorView``,
``ListPopupWindow$DropDownListView``), lowercased: dumps that name views by their Java class
show it for every pop-up, an ``AutoCompleteTextView``'s drop-down too, which is no modal."""


def _is_modal(raw: RawTree, root: int, end: int, screen: ScreenSize) -> bool:
    """Window ``root..end`` is a dialog or a pop-up that takes every touch: it floats
    (:func:`floats`, the test ``TreeHealth.floating_window`` makes of a dialog dumped alone)
    and it says so, by an ``AlertDialog``'s parts (:data:`DIALOG_PARTS`) or a name with
    "dialog" or "popup" in it (a SystemUI window only by an ``AlertDialog``'s parts). Only
    what can be shown modal is: a floating list says nothing, as an ``AutoCompleteTextView``'s
    or a search box's suggestions (a ``ListPopupWindow`` that is not focusable: a touch outside
    reaches the app, the user keeps typing and taps Search) look like a spinner's drop-down
    (``uiautomator`` names both ``android.widget.ListView``, and a Java class dump both
    ``ListPopupWindow$DropDownListView``: :data:`_ANY_POPUP` is no evidence). Such a window,
    and what floats and says nothing (a picture-in-picture video, a toast, a bubble, a
    split-screen pane, the volume panel), covers only what lies under its box."""
    width, height = screen.width_px, screen.height_px
    left, top, right, bottom = (int(v) for v in raw.box_px[root])
    left, right = max(0, min(left, width)), max(0, min(right, width))
    top, bottom = max(0, min(top, height)), max(0, min(bottom, height))
    if not floats((left, top, right, bottom), width, height):
        return False
    nf, strings = fastpath.NFIELDS, raw.strings
    # SystemUI's own panels (the volume dialog) let a touch outside them through to the app.
    system = raw.string(root, fastpath.F_PKG) == SYSTEM_UI
    for i in range(root, end):
        rid = strings[i * nf + fastpath.F_RID].rpartition("/")[2]
        if rid in DIALOG_PARTS:
            return True
        if system:
            continue
        cls = strings[i * nf + fastpath.F_CLASS].lower()
        names = rid.lower() + ("" if _ANY_POPUP.search(cls) else " " + cls)
        if any(word in names for word in _MODAL_NAMES):
            return True
    return False


def modal_cover(
    raw: RawTree, bits: I32, screen: ScreenSize, draw: I32
) -> tuple[tuple[int, int], ...]:
    """The windows a dialog or a pop-up over them covers whole (``(root, end)`` spans).

    A dialog is modal, and a pop-up menu (a focusable pop-up window) takes a touch outside it
    to close: a tap on the app's rows around it lands on the dim layer, closes the window at
    best, and never reaches the row (:func:`_is_modal` says which windows are such). So
    everything in the windows under it is covered, not only what lies under its box.
    ``bits``: with the keyboard's and SystemUI's empty windows made invisible (they are no
    modal); ``draw``: :func:`window_stack`'s. SystemUI's windows (the bars, the shade)
    stay: the system takes their touches whatever window an app shows."""
    if raw.windows < 2:
        return ()
    spans = raw.window_spans()
    shown = [(root, end) for root, end in spans if not bits[root] & fastpath.B_INVISIBLE]
    if len(shown) < 2:
        return ()
    modal = [int(draw[root]) for root, end in shown if _is_modal(raw, root, end, screen)]
    if not modal:
        return ()
    top = max(modal)
    return tuple(
        (root, end) for root, end in shown
        if int(draw[root]) < top and raw.string(root, fastpath.F_PKG) != SYSTEM_UI
    )


def window_stack(raw: RawTree, screen: ScreenSize) -> I32:
    """``raw.draw`` with each window root's place in the stack of windows (0 at the bottom).

    Tools built on ``UiDevice.dumpWindowHierarchy`` (uiautomator2, Appium) write the windows of
    ``UiAutomation.getWindows()``, which lists them top first: the corpus's two multi-window
    dumps put the status bar, the navigation bar and an edge panel before the app. Dumps written
    by hand or by other tools may list the app first. What holds either way: a window over
    another is no larger than it (a keyboard, a bar, a dialog or a pop-up over the app), and
    SystemUI's windows lie over every app's: the notification shade and the lock screen are as
    large as the app's window, or larger when the app's stops at the navigation bar, and cover
    it whole (an app's rows were offered through the shade listed after the app). So SystemUI's
    windows go over the others; within each group, the larger a window's area on the screen,
    the lower it lies, and of two as large the one listed first is on top."""
    if raw.windows < 2:
        return raw.draw
    roots = np.array([root for root, _ in raw.window_spans()])
    box = raw.box_px[roots].astype(np.int64)
    width = np.clip(box[:, 2], 0, screen.width_px) - np.clip(box[:, 0], 0, screen.width_px)
    height = np.clip(box[:, 3], 0, screen.height_px) - np.clip(box[:, 1], 0, screen.height_px)
    area = np.maximum(width, 0) * np.maximum(height, 0)
    system = np.array(
        [raw.string(root, fastpath.F_PKG) == SYSTEM_UI for root in roots.tolist()], dtype=bool
    )
    # apps' windows first, then SystemUI's; in each, the largest first; of equals, the last
    # listed first
    bottom_up = np.lexsort((-roots, -area, system))
    draw = raw.draw.copy()
    draw[roots[bottom_up]] = np.arange(roots.size, dtype=np.int32)
    return draw


_LABEL_BITS = fastpath.B_HAS_TEXT | fastpath.B_HAS_DESC

_ACTIONABLE_BITS = int(ACTIONABLE)


def without_decor(raw: RawTree) -> I32:
    """``raw.bits`` with SystemUI's windows that hold nothing to act on marked invisible, when
    the dump also holds another app's window: the status bar (the clock, the battery and one
    description per notification icon: 300 tokens of "Instagram notification: ..." on a
    corpus dump), the rounded corners and the cutout. The agent acts on the app, opens the
    shade by a swipe (its notifications are actionable there) and presses keys for the
    navigation bar; the pixel channel leaves the status bar's icons out alike. A SystemUI window
    with a named control (the navigation bar's Back, the shade, a volume dialog) stays; a
    control with no text or description in it names nothing (inDriver's phone draws an
    unlabelled clickable chip in its status bar, which kept ten notification icons in the
    prompt)."""
    if raw.windows < 2:
        return raw.bits
    spans = raw.window_spans()
    packages = [raw.string(root, fastpath.F_PKG) for root, _ in spans]
    if all(p == SYSTEM_UI for p in packages):
        return raw.bits  # the lock screen or the shade alone is the screen
    bits = raw.bits
    for (root, end), package in zip(spans, packages, strict=True):
        if package == SYSTEM_UI and not _named_control(raw, root, end):
            if bits is raw.bits:
                bits = raw.bits.copy()
            bits[root] |= fastpath.B_INVISIBLE
    return bits


PERMISSION_PANELS = frozenset({"grant_singleton", "grant_dialog"})
"""The panels of the platform's permission dialog (``GrantPermissionsActivity``, Android 12
on), clickable only to cancel on a touch outside the dialog and to swallow a touch on it: they
take no tap of their own. Offered, they took the dialog's question, and "Allow QQMusic to take
pictures and record video?" stood as a button over "WHILE USING THE APP"."""
_PERMISSION_PACKAGE = "permissioncontroller"
"""The end of the permission dialog's package (``com.android.permissioncontroller``, Google's
``com.google.android.permissioncontroller``)."""


def without_panel_clicks(raw: RawTree, bits: I32) -> I32:
    """``bits`` with the permission dialog's panels (:data:`PERMISSION_PANELS`) no longer
    clickable, in the windows of the permission controller's package (a window's root is read,
    the nodes only of such a window). A copy only when something changes."""
    spans = [(0, raw.count)] if raw.windows == 1 else raw.window_spans()
    out = bits
    nf, f_rid = fastpath.NFIELDS, fastpath.F_RID
    for root, end in spans:
        if not raw.string(root, fastpath.F_PKG).endswith(_PERMISSION_PACKAGE):
            continue
        for i in range(root, end):
            rid = raw.strings[i * nf + f_rid]
            if rid and rid.rpartition("/")[2] in PERMISSION_PANELS and out[i] & _CLICKABLE:
                if out is bits:
                    out = bits.copy()
                out[i] &= ~_CLICKABLE
    return out


ROLE_SPINNER = 1
"""A dropdown (``Spinner``): what it draws is its value, see the module docstring."""
ROLE_ITEM_LIST = 2
"""A list view whose children are its items (ListView, GridView, RecyclerView; not a
ScrollView, whose one child is its content)."""
ROLE_TAB_BAR = 4
"""A ``TabWidget``: the controls inside it are its tabs (see ``perception.tree.cluster``)."""
ROLE_DRAWER = 8
"""A navigation drawer's layout (``DrawerLayout``): an open drawer covers it (see
``perception.tree.occlusion``) and the strip beside the drawer closes it (``cluster``)."""

ROLE_SLIDER = 16
"""A slider (``SeekBar`` and its kin, ``RatingBar``; Material's ``Slider`` reports itself as a
SeekBar): something to drag, an element even where the dump says it takes no click."""
ROLE_WEB = 32
"""A web view (``WebView``): old Chromium marks every node of its page clickable (see
:func:`without_blanket_clicks`)."""


@short_key_cache(maxsize=1024)
def class_role(class_name: str) -> int:
    """The role bits of a class name (its last segment: ``android.widget.Spinner``,
    ``androidx.appcompat.widget.AppCompatSpinner``, ``...ExpandableListView``)."""
    short = class_name.rsplit(".", 1)[-1]
    role = ROLE_SPINNER if short.endswith("Spinner") else 0
    if "ListView" in short or "GridView" in short or "RecyclerView" in short:
        role |= ROLE_ITEM_LIST
    if short.endswith("TabWidget"):
        role |= ROLE_TAB_BAR
    if short.endswith("DrawerLayout"):
        role |= ROLE_DRAWER
    if short.endswith(("SeekBar", "RatingBar")):
        role |= ROLE_SLIDER
    if "WebView" in short:
        role |= ROLE_WEB
    return role


def without_covered_text(raw: RawTree, bits: I32, big: list[int]) -> I32:
    """``bits`` with static text marked invisible where a page pushed over it hides it from the
    clickable root that would read it into its label: inside a clickable root of at least half
    the screen's width and height, a clickable container as large, with content of its own,
    drawn after the text (later in the document, not around it) over the text's whole box. QQ
    Music stacks its album page over the artist page in one clickable window root, which read
    "Miley Cyrus | 歌手名", text no one can see, over the album. (Text no root absorbs is a row
    of its own, and the occlusion pass flags it when covered.) A copy only when something
    changes. ``big``: the dump's clickables of at least half the screen's width and height
    (:func:`big_clickables`); with fewer than two (nearly every screen) nothing is looked at."""
    pb, boxes = raw.bits, raw.box_px
    if len(big) < 2:
        return bits
    n, parent = raw.count, raw.parent
    roots = set(big)
    out = bits
    texty: npt.NDArray[np.intp] | None = None
    for c in big[1:]:
        if c + 1 >= n or parent[c + 1] != c:
            continue  # no content of its own (its first child would follow it)
        ancestors = []
        p = int(parent[c])
        while p >= big[0]:
            ancestors.append(p)
            if p in roots:
                break
            p = int(parent[p])
        else:
            continue  # no large clickable around it would read the text under it
        if texty is None:
            texty = np.flatnonzero(((pb & _LABEL_BITS) != 0) & ((pb & _ACTIONABLE_BITS) == 0))
        t = texty[(texty > p) & (texty < c)]
        if t.size == 0:
            continue
        left, top, right, bottom = (int(v) for v in boxes[c])
        b = boxes[t]
        inside = (b[:, 0] >= left) & (b[:, 1] >= top) & (b[:, 2] <= right) & (b[:, 3] <= bottom)
        above = set(ancestors)
        covered = [i for i in t[inside].tolist() if i not in above]
        if covered:
            out = out.copy() if out is bits else out
            out[covered] |= fastpath.B_INVISIBLE
    return out


def roles_present(raw: RawTree) -> int:
    """The role bits of the dump's classes together (a set of a dump's class names is a
    microsecond; most dumps have no Spinner and no TabWidget, so nothing more is looked at)."""
    role = 0
    names = set(raw.strings[fastpath.F_CLASS :: fastpath.NFIELDS])
    for bits in class_role.many(names):  # type: ignore[attr-defined]  # no Python call a name
        role |= bits
    return role


def nodes_of_role(raw: RawTree, role: int) -> list[int]:
    """The nodes whose class has ``role``, in document order."""
    classes = raw.strings[fastpath.F_CLASS :: fastpath.NFIELDS]
    roles = class_role.many(classes)  # type: ignore[attr-defined]  # no Python call a node
    return [i for i, bits in enumerate(roles) if bits & role]


_SPINNER_INSIDE = int(ElementFlag.CLICKABLE | ElementFlag.LONG_CLICKABLE)
_SCROLLABLE = int(ElementFlag.SCROLLABLE)
_FOCUSABLE = int(ElementFlag.FOCUSABLE)
_CLICKABLE = int(ElementFlag.CLICKABLE)
_ITEM_BITS = _FOCUSABLE | fastpath.B_ROOT_MASK | _LABEL_BITS


def with_roles(raw: RawTree, bits: I32, present: int) -> I32:
    """``bits`` as the roles of the classes make them (see the module docstring): a Spinner
    neither scrolls nor holds controls of its own, and a focusable, labelled child of a list
    view is clickable. ``present``: :func:`roles_present`. A copy only when something
    changes."""
    out = bits
    if present & ROLE_SPINNER:
        out = bits.copy()
        parent = raw.parent
        for s in nodes_of_role(raw, ROLE_SPINNER):
            out[s] &= ~_SCROLLABLE
            if not bits[s] & fastpath.B_ROOT_MASK:
                continue  # nothing takes over what its children would do
            out[s + 1 : _subtree_end(parent, s)] &= ~_SPINNER_INSIDE
    if present & ROLE_ITEM_LIST:
        # focusable, not clickable (nor checkable, editable), with a text or a description
        own = bits & _ITEM_BITS
        maybe = (((own & ~_LABEL_BITS) == _FOCUSABLE) & (own != _FOCUSABLE)).nonzero()[0]
        if maybe.size:
            strings, field, nf = raw.strings, fastpath.F_CLASS, fastpath.NFIELDS
            items = [
                i for i, p in zip(maybe.tolist(), raw.parent[maybe].tolist(), strict=True)
                if p >= 0 and class_role(strings[p * nf + field]) & ROLE_ITEM_LIST
            ]
            if items:
                if out is bits:
                    out = bits.copy()
                out[items] |= _CLICKABLE
    if present & ROLE_WEB:
        out = without_blanket_clicks(raw, out, bits)
    if present & ROLE_SLIDER:
        strings, field, nf = raw.strings, fastpath.F_CLASS, fastpath.NFIELDS
        sliders = [
            i for i in nodes_of_role(raw, ROLE_SLIDER)
            if not bits[i] & fastpath.B_ROOT_MASK
            and (bits[i] & _FOCUSABLE or not strings[i * nf + field].endswith("RatingBar"))
        ]
        if sliders:
            if out is bits:
                out = bits.copy()
            out[sliders] |= _CLICKABLE
    return out


_TOUCHED = fastpath.B_ROOT_MASK | _FOCUSABLE
_HOLDS_ITEMS = int(ElementFlag.CLICKABLE | ElementFlag.LONG_CLICKABLE) | fastpath.B_WEBVIEW


def _named_control(raw: RawTree, root: int, end: int) -> bool:
    """Does the window ``[root, end)`` hold a control with a text or description in it? One
    pass in document order (a parent before its children), linear in the window's nodes: a
    window of unlabelled controls is answered as fast as a status bar."""
    window = raw.bits[root:end]
    if not np.any(window & _ACTIONABLE_BITS):
        return False
    under = [False] * (end - root)  # the node is a control or lies inside one
    parents = raw.parent[root:end].tolist()
    for k, (bits, parent) in enumerate(zip(window.tolist(), parents, strict=True)):
        p = parent - root
        inside = bool(bits & _ACTIONABLE_BITS) or (p >= 0 and under[p])
        if inside and bits & _LABEL_BITS:
            return True
        under[k] = inside
    return False


def _subtree_end(parent: I32, node: int) -> int:
    """The end (exclusive) of ``node``'s subtree: the first node after it whose parent lies
    before it (the subtree is the nodes right after it), or the count."""
    past = parent[node + 1 :] < node
    return node + 1 + (int(past.argmax()) if past.any() else past.size)


def untouched_list_items(raw: RawTree, bits: I32) -> list[int]:
    """The children of a list view (ListView, GridView, RecyclerView) that nothing in the dump
    makes tappable though they are its items: a list with two labelled children (a text or a
    description in their subtree) or more, nothing clickable, long-clickable, checkable,
    editable or focusable inside it, itself not clickable, nothing clickable around it, and no
    web view around it (a page's lists are text: changelogs, help articles). OneList draws its
    list chips so ("Tuto ❓", "TODO🗒️", "Hello World"), and takes their touches by listeners
    the dump does not show: without this they were static text, the lists could not be
    switched but by a blind tap. The labelled children, in document order (a guess: see
    :attr:`CleanTree.inferred`)."""
    parent, n = raw.parent, raw.count
    out: list[int] = []
    touched: npt.NDArray[np.intp] | None = None
    strings, field, nf = raw.strings, fastpath.F_CLASS, fastpath.NFIELDS
    for lv in np.flatnonzero(raw.bits & fastpath.B_LIST).tolist():  # lists, scroll views, pagers
        if bits[lv] & fastpath.B_ROOT_MASK or not class_role(strings[lv * nf + field]) & (
            ROLE_ITEM_LIST
        ):
            continue  # a list that takes taps (its own focus is a list's: RecyclerView's)
        if lv + 1 < n and parent[lv + 1] == lv and bits[lv + 1] & _TOUCHED:
            continue  # its first item takes touches: most lists
        if touched is None:
            touched = np.flatnonzero(bits & _TOUCHED)
        k = int(touched.searchsorted(lv, "right"))  # the first touchable node after it
        if k < touched.size:
            p = int(touched[k])
            while p > lv:
                p = int(parent[p])
            if p == lv:
                continue  # inside it (its subtree is the nodes right after it): most lists
        p = int(parent[lv])
        while p >= 0 and not bits[p] & _HOLDS_ITEMS:
            p = int(parent[p])
        if p >= 0:
            continue  # a clickable holds it, or a web page
        stop = _subtree_end(parent, lv)
        if stop - lv < 3:
            continue  # fewer than two children
        kids = np.flatnonzero(parent[lv + 1 : stop] == lv)
        labelled = np.add.reduceat((bits[lv + 1 : stop] & _LABEL_BITS) != 0, kids)
        if np.count_nonzero(labelled) >= 2:
            out.extend((kids[labelled != 0] + lv + 1).tolist())
    return out


BLANKET_CLICK_SHARE = (9, 10)
"""A web view whose labelled nodes are clickable from this share on (numerator, denominator)
is one whose clickability says nothing (old Chromium's pages: every node clickable)."""
_WEB_NODE = "android.view.View"
_WEB_TAKERS = int(ElementFlag.LONG_CLICKABLE | ElementFlag.CHECKABLE | ElementFlag.EDITABLE)
PARAGRAPH_WORDS = 3
"""A web node's text of this many words or more is a paragraph or a heading, not a link's
(or of :data:`PARAGRAPH_CHARS` characters: "net::ERR_NAME_NOT_RESOLVED", a line of CJK)."""
PARAGRAPH_CHARS = 20


PROSE_WORDS = 6
"""A page demotes its paragraphs only when one of them is prose: this many words or more, or
:data:`PROSE_CHARS` characters ("The webpage at https://... could not be loaded because:").
Lines of a few words alone ("Sign up for free", "Download the app") may be a list of links;
a heading or an error code beside prose is no link."""
PROSE_CHARS = 40


def _as_long(text: str, words: int, chars: int) -> bool:
    """Has ``text`` ``words`` words or ``chars`` characters?"""
    return len(text) >= chars or len(text.split(None, words - 1)) >= words


def _paragraph(text: str) -> bool:
    return _as_long(text, PARAGRAPH_WORDS, PARAGRAPH_CHARS)


def _prose(text: str) -> bool:
    return _as_long(text, PROSE_WORDS, PROSE_CHARS)


def without_blanket_clicks(raw: RawTree, out: I32, bits: I32) -> I32:
    """``out`` with the text of a web view's page that is clickable only because the page marks
    every node so no longer clickable: Chromium 55 (a2dpvol's "Webpage not available", Heaven
    Assistant's help page) reports each node ``clickable`` and none ``focusable``, and the model
    was offered its paragraphs as buttons. In a web view whose labelled nodes (web views left
    out) are nearly all clickable (:data:`BLANKET_CLICK_SHARE`, two at least), a leaf
    ``android.view.View`` with a paragraph's text or description (:func:`_paragraph`) that is
    clickable and nothing else (not focusable: a link the keyboard can reach is one) is static
    text, where one of them at least is prose (:data:`PROSE_WORDS`). Short ones ("Reload",
    "Details", "OK") stay controls, as do buttons, images and anything focusable. ``bits``:
    the bits before :func:`with_roles` (``out`` a copy of them, or themselves). A copy only
    when something changes."""
    parent = raw.parent
    pb = bits
    strings, nf = raw.strings, fastpath.NFIELDS
    num, den = BLANKET_CLICK_SHARE
    demote: list[int] = []
    webs = np.flatnonzero(raw.bits & fastpath.B_WEBVIEW)
    plain_text = np.flatnonzero(
        ((pb & _LABEL_BITS) != 0) & ((pb & (_CLICKABLE | _FOCUSABLE | _WEB_TAKERS)) == _CLICKABLE)
    )
    if not plain_text.size or plain_text[-1] <= webs[0]:
        return out  # nothing it would demote (a newer Chromium's links are focusable)
    for w in webs.tolist():
        stop = _subtree_end(parent, w)
        sub = pb[w + 1 : stop]
        labelled = ((sub & _LABEL_BITS) != 0) & ((sub & fastpath.B_WEBVIEW) == 0)
        count = int(np.count_nonzero(labelled))
        clicked = int(np.count_nonzero(labelled & ((sub & _CLICKABLE) != 0)))
        if count < 2 or clicked * den < count * num:
            continue
        leaf = np.ones(sub.size, dtype=bool)
        leaf[(parent[w + 2 : stop] - (w + 1))[parent[w + 2 : stop] > w]] = False
        plain = (sub & (_CLICKABLE | _FOCUSABLE | _WEB_TAKERS)) == _CLICKABLE
        found: list[int] = []
        prose = False
        for j in (np.flatnonzero(labelled & leaf & plain) + w + 1).tolist():
            base = j * nf
            if strings[base + fastpath.F_CLASS] != _WEB_NODE:
                continue
            said = strings[base + fastpath.F_TEXT].strip()
            said = said or strings[base + fastpath.F_DESC].strip()
            if _paragraph(said):
                found.append(j)
                prose = prose or _prose(said)
        if prose:
            demote.extend(found)
    if not demote:
        return out
    if out is bits:
        out = bits.copy()
    out[demote] &= ~_CLICKABLE
    return out


def big_clickables(raw: RawTree, screen: ScreenSize) -> list[int]:
    """The dump's clickable nodes of at least half the screen's width and half its height, in
    document order, in one compiled pass (``fastpath.tree_big_actions``): pages pushed over
    pages (:func:`without_covered_text`), the layers that close a dialog
    (:func:`modal_barriers`, :func:`sheet_scrims`)."""
    return fastpath.tree_big_actions(
        raw.box_px, raw.bits, _CLICKABLE, screen.width_px, screen.height_px
    )


BARRIER_SCREEN_SHARE = (3, 4)
"""A modal barrier (:func:`modal_barriers`) covers at least this share of the screen's area
(numerator, denominator)."""
FLUTTER_NODE_CLASS = "android.view.View"
"""The class Flutter's engine gives every semantics node that is no text field, button,
image, check box or the like: its barriers among them."""


def modal_barriers(raw: RawTree, big: list[int], screen: ScreenSize) -> tuple[int, ...]:
    """Flutter's modal barriers among the large clickables ``big`` (:func:`big_clickables`):
    the clickable layer over a whole window that closes the dialog, sheet or menu on it at a
    tap outside it, described "Dismiss" or its translation. A barrier: a clickable node of
    class :data:`FLUTTER_NODE_CLASS` with a description and no resource id, on at least
    :data:`BARRIER_SCREEN_SHARE` of the screen, with a clickable among its nodes (older
    Flutter: around the route it closes) or, a leaf, among its earlier siblings' (Flutter
    now lists the barrier after the route's content, so that a screen reader reads the dialog
    first: see :func:`barriers_under`). In document order; most screens have no candidate."""
    if not big:
        return ()
    n, parent, pb = raw.count, raw.parent, raw.bits
    num, den = BARRIER_SCREEN_SHARE
    least = screen.width_px * screen.height_px * num
    found: list[int] = []
    for c in big:
        if (
            pb[c] & (fastpath.B_HAS_DESC | fastpath.B_HAS_RID) != fastpath.B_HAS_DESC
            or raw.string(c, fastpath.F_CLASS) != FLUTTER_NODE_CLASS
        ):
            continue
        left, top, right, bottom = (int(v) for v in raw.box_px[c])
        width = min(right, screen.width_px) - max(left, 0)
        height = min(bottom, screen.height_px) - max(top, 0)
        if width * height * den < least:
            continue
        if c + 1 < n and parent[c + 1] == c:  # around the route: its first child follows it
            past = np.flatnonzero(parent[c + 1 :] < c)  # a node past its subtree hangs above it
            stop = c + 1 + int(past[0]) if past.size else n
            if (pb[c + 1 : stop] & _CLICKABLE).any():
                found.append(c)
            continue
        p = int(parent[c])
        if p >= 0 and (pb[p + 1 : c] & _CLICKABLE).any():  # the earlier siblings' nodes
            found.append(c)
    return tuple(found)


SHEET_SCRIM_ID = "touch_outside"
"""The resource id (after the "/") of the layer a Material ``BottomSheetDialog`` lays under its
sheet (:data:`SHEET_ID`, a later sibling): a tap on it closes the dialog."""
SHEET_ID = "design_bottom_sheet"
"""The resource id of a ``BottomSheetDialog``'s sheet: it takes every touch on its box (the
dialog consumes them), so a tap meant for the layer under it must land outside it."""


def sheets_of(raw: RawTree, layer: int) -> list[int]:
    """The sheets (:data:`SHEET_ID`) among the later siblings of the node ``layer``."""
    siblings = np.flatnonzero(raw.parent == raw.parent[layer]).tolist()
    return [
        k for k in siblings
        if k > layer and raw.string(k, fastpath.F_RID).rpartition("/")[2] == SHEET_ID
    ]


def sheet_scrims(raw: RawTree, big: list[int]) -> tuple[int, ...]:
    """The bottom-sheet dialogs' outside layers (:data:`SHEET_SCRIM_ID`) among the large
    clickables ``big``, each with a sheet among its later siblings (:func:`sheets_of`)."""
    return tuple(
        c for c in big
        if raw.string(c, fastpath.F_RID).rpartition("/")[2] == SHEET_SCRIM_ID
        and sheets_of(raw, c)
    )


def barriers_under(raw: RawTree, barriers: tuple[int, ...], draw: I32) -> I32:
    """``draw`` with each leaf of Flutter's modal ``barriers`` (:func:`modal_barriers`) drawn
    under its siblings, as Flutter paints it, where its siblings carry no ``drawing-order``.
    Flutter lists such a barrier after the route's content; taken in document order it covered
    the dialog, and a held-out app's overlay-permission prompt ("开启悬浮宠物", with 取消 and
    去开启) was offered as the barrier alone. A copy only when something changes."""
    out = draw
    n, parent = raw.count, raw.parent
    for c in barriers:
        if c + 1 < n and parent[c + 1] == c:
            continue  # around the route: drawn before it already
        siblings = np.flatnonzero(parent == parent[c])
        if (draw[siblings] >= 0).any():
            continue  # the dump says how they are drawn
        out = out.copy() if out is draw else out
        out[siblings] = np.arange(1, siblings.size + 1, dtype=np.int32)
        out[c] = 0
    return out


def clean(raw: RawTree, screen: ScreenSize) -> CleanTree:
    present = roles_present(raw)
    big = big_clickables(raw, screen)
    bits = without_covered_text(raw, without_decor(raw), big)
    keyboard, keyboard_box = keyboard_windows(raw, screen) if raw.windows else ([], None)
    if keyboard:
        bits = bits.copy() if bits is raw.bits else bits
        for root, _ in keyboard:
            bits[root] |= fastpath.B_INVISIBLE
    chips = untouched_list_items(raw, bits) if present & ROLE_ITEM_LIST else []
    if present:
        bits = with_roles(raw, bits, present)
    if chips:
        bits = bits.copy() if bits is raw.bits else bits
        bits[chips] |= _CLICKABLE
    if raw.count:
        bits = without_panel_clicks(raw, bits)
    draw = window_stack(raw, screen)
    flutter = modal_barriers(raw, big, screen)
    if flutter:
        draw = barriers_under(raw, flutter, draw)
    barriers = tuple(sorted((*flutter, *sheet_scrims(raw, big)))) if big else ()
    under_modal = modal_cover(raw, bits, screen, draw)
    clip, bits, owner, rank, end = fastpath.tree_structure(
        raw.parent, raw.box_px, bits, draw, screen.width_px, screen.height_px,
    )
    tab_bars: tuple[int, ...] = ()
    drawers: tuple[int, ...] = ()
    wanted = present & (ROLE_TAB_BAR | ROLE_DRAWER)
    if wanted:  # both found in one pass over the classes (most dumps have neither)
        strings, at, nf = raw.strings, fastpath.F_CLASS, fastpath.NFIELDS
        marked = nodes_of_role(raw, wanted)
        tab_bars = tuple(i for i in marked if class_role(strings[i * nf + at]) & ROLE_TAB_BAR)
        drawers = tuple(i for i in marked if class_role(strings[i * nf + at]) & ROLE_DRAWER)
    return CleanTree(
        raw=raw, screen=screen, clip_px=clip, bits=bits, owner=owner, rank=rank, end=end,
        tab_bars=tab_bars, drawer_layouts=drawers, keyboard_px=keyboard_box,
        keyboard_windows=tuple(keyboard), under_modal=under_modal, inferred=tuple(chips),
        barriers=barriers,
    )
