"""The on-screen keyboard in a dump: context for the model, not candidates.

A dump of every window (``uiautomator dump`` on recent Android, and most tools that read the
accessibility tree) holds the keyboard's window while it is up. Its thirty-odd keys would be
offered as buttons: some 300 tokens, and an invitation to type by tapping letters one at a
time, when the ``type`` action types the whole text. So the cleaning stage leaves the
keyboard's windows out (as it leaves the status bar out), the app's elements under the keyboard
are not offered (:attr:`~perception.tree.Tree.keyboard_ids`, among
:attr:`~perception.tree.Tree.hidden_ids`: they take no tap, the keys over them do), and the
keyboard's box is said once instead (:attr:`~perception.tree.Tree.keyboard_px`, ``"kbd"`` in
the prompt): the model knows a keyboard hides the bottom of the screen.

An input method's window is known by its package: the keyboards of the phone makers and the
common ones of the app stores, and any package whose name says it (``inputmethod``,
``keyboard``). Such a window is the keyboard when another app's window is in the dump (the app
being typed into: the keyboard may float anywhere over it, or cover it whole in landscape's
full-screen mode), or when its content starts below the top quarter of the screen (a dump of
the keyboard's window alone, the active one). A keyboard's own settings, or a typing trainer,
is a window of that package alone with content from the top: an app. The keyboard's box is
what its keys cover (a keyboard window may span the whole screen with its keys at the bottom).
"""

from __future__ import annotations

import numpy as np

from perception import fastpath
from perception.geometry import union_box
from perception.tree.parse import I32, SYSTEM_UI, RawTree
from perception.types import ACTIONABLE, BoxPx, ScreenSize

INPUT_METHOD_PACKAGES = frozenset({
    "com.google.android.inputmethod.latin",  # Gboard
    "com.android.inputmethod.latin",  # AOSP keyboard
    "com.samsung.android.honeyboard",  # Samsung Keyboard
    "com.touchtype.swiftkey",  # Microsoft SwiftKey
    "com.baidu.input",  # Baidu (and its makers' builds: com.baidu.input_huawei, _mi, _oppo)
    "com.sohu.inputmethod.sogou",  # Sogou (and .xiaomi, .vivo, .oppo)
    "com.iflytek.inputmethod",  # iFlytek
    "com.tencent.qqpinyin",  # QQ Pinyin
    "com.tencent.wetype",  # WeChat Keyboard
    "com.huawei.ohos.inputmethod",  # Huawei Celia Keyboard
    "com.oplus.inputmethod",  # OPPO / OnePlus / realme
    "com.vivo.ai.ime",  # vivo Jovi input
    "com.adamrocker.android.input.simeji",  # Simeji
    "jp.co.omronsoft.openwnn",  # OpenWnn
    "com.justsystems.atokmobile.service",  # ATOK
    "ru.yandex.androidkeyboard",  # Yandex Keyboard
    "com.grammarly.android.keyboard",  # Grammarly
    "com.syntellia.fleksy.keyboard",  # Fleksy
    "org.futo.inputmethod.latin",  # FUTO Keyboard
    "helium314.keyboard",  # HeliBoard
    "com.android.adbkeyboard",  # ADB Keyboard (a one-line strip)
})
_PREFIXES = ("com.baidu.input", "com.sohu.inputmethod.", "com.iflytek.inputmethod")
_MARKERS = ("inputmethod", "keyboard", "honeyboard")

KEYBOARD_MIN_TOP_SHARE = 0.25
"""A keyboard's window starts below this share of the screen's height."""


def is_input_method(package: str) -> bool:
    """Does ``package`` name an on-screen keyboard (an input method)?"""
    if not package:
        return False
    if package in INPUT_METHOD_PACKAGES or package.startswith(_PREFIXES):
        return True
    lower = package.lower()
    return any(marker in lower for marker in _MARKERS)


def keyboard_windows(
    raw: RawTree, screen: ScreenSize
) -> tuple[list[tuple[int, int]], BoxPx | None]:
    """The dump's keyboard windows (``(root, end)`` node spans) and the box their content covers
    together (clipped to the screen), or ``([], None)``."""
    if raw.count == 0:
        return [], None
    if raw.windows == 1 and not _window_is_input_method(raw, 0, raw.count):
        return [], None  # most dumps: one window, the app's
    spans = raw.window_spans()
    ime: list[tuple[int, int]] = []
    others: list[int] = []
    for root, end in spans:
        if _window_is_input_method(raw, root, end):
            ime.append((root, end))
        elif raw.string(root, fastpath.F_PKG) != SYSTEM_UI:
            others.append(root)
    if not ime:
        return [], None
    limit = np.array(
        [screen.width_px, screen.height_px, screen.width_px, screen.height_px], dtype=np.int32
    )
    clip_px = np.clip(raw.box_px, 0, limit)
    other_app = any(_area(clip_px[root]) > 0 for root in others)
    found: list[tuple[int, int]] = []
    boxes: list[BoxPx] = []
    min_top = screen.height_px * KEYBOARD_MIN_TOP_SHARE
    for root, end in ime:
        here = _content_box(raw, clip_px, root, end, min_top)
        if here is None:
            continue
        if not other_app and here.top < min_top:
            continue  # the keyboard's package alone, from the top: its settings, an app
        found.append((root, end))
        boxes.append(here)
    return found, union_box(boxes) if boxes else None


def _window_is_input_method(raw: RawTree, root: int, end: int) -> bool:
    """The window's package (its root's, else its first child's) names an input method."""
    package = raw.string(root, fastpath.F_PKG) or raw.string(min(root + 1, end - 1), fastpath.F_PKG)
    return is_input_method(package)


_CONTENT_BITS = fastpath.B_HAS_TEXT | fastpath.B_HAS_DESC | int(ACTIONABLE)


def _content_box(
    raw: RawTree, clip_px: I32, root: int, end: int, min_top: float
) -> BoxPx | None:
    """The window's box when it sits below ``min_top`` (a docked keyboard, its suggestion strip
    included); else what its keys and texts cover (a window over the whole screen with the keys
    at its bottom, a floating keyboard), or its box when nothing in it has one."""
    left, top, right, bottom = (int(v) for v in clip_px[root])
    if top >= min_top and right > left and bottom > top:
        return BoxPx(left, top, right, bottom)
    bits = raw.bits[root:end]
    boxes = clip_px[root:end][(bits & _CONTENT_BITS) != 0]
    boxes = boxes[(boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])]
    if len(boxes) == 0:
        return BoxPx(left, top, right, bottom) if right > left and bottom > top else None
    return BoxPx(
        int(boxes[:, 0].min()), int(boxes[:, 1].min()),
        int(boxes[:, 2].max()), int(boxes[:, 3].max()),
    )


def _area(box: object) -> int:
    left, top, right, bottom = (int(v) for v in box)  # type: ignore[attr-defined]
    return max(0, right - left) * max(0, bottom - top)
