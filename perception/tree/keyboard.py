"""The on-screen keyboard in a dump: context for the model, not candidates.

A dump of every window (``uiautomator dump`` on recent Android, and most tools that read the
accessibility tree) holds the keyboard's window while it is up. Its thirty-odd keys would be
offered as buttons: some 300 tokens, and an invitation to type by tapping letters one at a
time, when the ``type`` action types the whole text. The app's views under the keyboard are
covered by it, and the occlusion pass already says so (a later window is drawn over earlier
ones). So the keyboard's elements are kept in :attr:`perception.tree.Tree.elements` but left out
of the prompt (:attr:`~perception.tree.Tree.hidden_ids`), and its box is reported once instead
(:attr:`~perception.tree.Tree.keyboard_px`, ``"kbd"`` in the prompt): the model knows a
keyboard hides the bottom of the screen, and that the back key lowers it.

An input method's window is known by its package: the keyboards of the phone makers and the
common ones of the app stores, and any package whose name says it (``inputmethod``,
``keyboard``). A window that starts in the top quarter of the screen is not taken for one, so
an app about keyboards (a typing trainer, a keyboard's settings) stays an app.
"""

from __future__ import annotations

from perception import fastpath
from perception.tree.parse import I32, RawTree
from perception.types import BoxPx, ScreenSize

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
    raw: RawTree, clip_px: I32, screen: ScreenSize
) -> tuple[list[tuple[int, int]], BoxPx | None]:
    """The dump's keyboard windows (``(root, end)`` node spans) and the box they cover
    together (clipped to the screen), or ``([], None)``."""
    if raw.count == 0:
        return [], None
    spans = raw.window_spans()
    found: list[tuple[int, int]] = []
    box: BoxPx | None = None
    min_top = screen.height_px * KEYBOARD_MIN_TOP_SHARE
    for root, end in spans:
        package = raw.string(root, fastpath.F_PKG) or raw.string(
            min(root + 1, end - 1), fastpath.F_PKG
        )
        if not is_input_method(package):
            continue
        left, top, right, bottom = (int(v) for v in clip_px[root])
        if right <= left or bottom <= top or top < min_top:
            continue
        found.append((root, end))
        box = BoxPx(left, top, right, bottom) if box is None else BoxPx(
            min(box.left, left), min(box.top, top), max(box.right, right), max(box.bottom, bottom)
        )
    return found, box
