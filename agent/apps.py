"""Which app an ``open_app`` action means: its words against the phone's launcher activities.

The phone lists what its launcher shows as ``package/activity`` components
(:meth:`perception.sources.device.DeviceSource.launchable_apps`); labels ("WeChat", "Einstellungen")
are not to be had over adb, so a model names an app by its package (``com.tencent.mm``), which
models know for common apps, or by a word its package spells (``settings`` ->
``com.android.settings``, ``qq music`` -> ``com.tencent.qqmusic``). No match, or several equally
good, is an :class:`AppNotFoundError` whose message lists the packages nearest to what was
asked: the model answers with one of them on its next step.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence

from perception.errors import PerceptionError

MAX_SUGGESTIONS = 12
"""Packages a refusal lists (nearest first)."""
_NOT_ALNUM = re.compile(r"[^0-9a-z]+")
_GENERIC = frozenset({
    "com", "org", "net", "io", "de", "cn", "me", "co", "app", "apps", "android", "google",
    "mobile", "client", "activity", "main", "ui", "launcher",
})
"""Package and class segments that name no app (``com.android.settings``: "settings")."""


class AppNotFoundError(PerceptionError, LookupError):
    """No app the launcher shows matches the name asked for, or several match equally well."""


def package_of(component: str) -> str:
    return component.split("/", 1)[0]


ALIASES: dict[str, tuple[str, ...]] = {
    # Names people (and models) give apps whose packages do not spell them, the phone makers'
    # packages after AOSP's; a name matches only a package the phone's launcher shows.
    "play store": ("com.android.vending",),
    "google play": ("com.android.vending",),
    "phone": ("com.google.android.dialer", "com.android.dialer", "com.samsung.android.dialer"),
    "dialer": ("com.google.android.dialer", "com.android.dialer", "com.samsung.android.dialer"),
    "messages": ("com.google.android.apps.messaging", "com.android.mms",
                 "com.samsung.android.messaging"),
    "sms": ("com.google.android.apps.messaging", "com.android.mms",
            "com.samsung.android.messaging"),
    "gmail": ("com.google.android.gm",),
    "photos": ("com.google.android.apps.photos",),
    "gallery": ("com.google.android.apps.photos", "com.android.gallery3d",
                "com.miui.gallery", "com.sec.android.gallery3d", "com.huawei.photos"),
    "clock": ("com.google.android.deskclock", "com.android.deskclock",
              "com.sec.android.app.clockpackage"),
    "alarm": ("com.google.android.deskclock", "com.android.deskclock",
              "com.sec.android.app.clockpackage"),
    "files": ("com.google.android.documentsui", "com.android.documentsui",
              "com.google.android.apps.nbu.files"),
    "camera": ("com.android.camera2", "com.android.camera", "com.google.android.GoogleCamera",
               "com.sec.android.app.camera", "com.huawei.camera"),
    "wechat": ("com.tencent.mm",),
    "微信": ("com.tencent.mm",),
    "qq": ("com.tencent.mobileqq",),
    "alipay": ("com.eg.android.AlipayGphone",),
    "支付宝": ("com.eg.android.AlipayGphone",),
    "taobao": ("com.taobao.taobao",),
    "淘宝": ("com.taobao.taobao",),
    "douyin": ("com.ss.android.ugc.aweme",),
    "抖音": ("com.ss.android.ugc.aweme",),
    "tiktok": ("com.zhiliaoapp.musically", "com.ss.android.ugc.trill"),
    "weibo": ("com.sina.weibo",),
    "微博": ("com.sina.weibo",),
    "qq音乐": ("com.tencent.qqmusic",),
    "设置": ("com.android.settings",),
    "相机": ("com.android.camera2", "com.android.camera", "com.huawei.camera"),
    "facebook": ("com.facebook.katana",),
    "messenger": ("com.facebook.orca",),
    "x": ("com.twitter.android",),
    "twitter": ("com.twitter.android",),
}
"""Lower-case names -> packages, most likely first."""


def resolve_app(app: str, components: Sequence[str]) -> str:
    """The launcher component ``app`` names: a component or package given whole (any case),
    a known name (:data:`ALIASES`), else the package one of whose words (``.``-separated
    segments) is ``app``'s letters and digits (``QQ Music`` -> ``qqmusic`` ->
    ``com.tencent.qqmusic``; the last word first), or holds every word of ``app`` that names
    something (``Google Maps`` -> ``maps``), else the one package whose name holds them (at
    least three). A package with several launcher activities gives its first."""
    if not components:
        raise AppNotFoundError("the phone lists no app its launcher shows")
    asked = app.strip()
    by_package: dict[str, str] = {}
    for component in components:
        by_package.setdefault(package_of(component), component)
    lower = {p.lower(): c for p, c in reversed(by_package.items())}
    exact = next((c for c in components if c.lower() == asked.lower()), None)
    if exact is not None:
        return exact
    if asked.lower() in lower:
        return lower[asked.lower()]
    for package in ALIASES.get(" ".join(asked.lower().split()), ()):
        if package.lower() in lower:
            return lower[package.lower()]
    key = _NOT_ALNUM.sub("", asked.lower())
    words = [w for w in _NOT_ALNUM.split(asked.lower()) if w and w not in _GENERIC]
    if key:
        ranks: tuple[Callable[[str], bool], ...] = (
            lambda p: _last_word(key, p),
            lambda p: _any_word(key, p),
            lambda p: bool(words) and all(_any_word(w, p) for w in words),
            lambda p: _holds(key, p),
        )
        for rank in ranks:
            found = [c for p, c in by_package.items() if rank(p.lower())]
            if len(found) == 1:
                return found[0]
            if len(found) > 1:
                names = ", ".join(package_of(c) for c in found[:MAX_SUGGESTIONS])
                raise AppNotFoundError(
                    f'several apps match "{_quoted(asked)}": {names}; open_app one of these '
                    "packages"
                )
    raise AppNotFoundError(
        f'no app the launcher shows matches "{_quoted(asked)}"; its packages, nearest first: '
        + ", ".join(nearest(key, list(by_package)))
        + "; open_app one of these packages, or find the app on the home screen"
    )


def nearest(key: str, packages: Sequence[str]) -> list[str]:
    """Up to :data:`MAX_SUGGESTIONS` packages, the most like ``key`` first (by their words'
    letters; ties and no likeness at all: in name order)."""

    def likeness(package: str) -> float:
        words = [w for w in package.lower().split(".") if w not in _GENERIC] or [package]
        return max(difflib.SequenceMatcher(None, key, _NOT_ALNUM.sub("", w)).ratio()
                   for w in words)

    return sorted(sorted(packages), key=likeness, reverse=True)[:MAX_SUGGESTIONS]


def _words(package: str) -> list[str]:
    return [_NOT_ALNUM.sub("", w) for w in package.split(".")]


def _last_word(key: str, package: str) -> bool:
    words = [w for w in _words(package) if w not in _GENERIC]
    return bool(words) and words[-1] == key


def _any_word(key: str, package: str) -> bool:
    return key not in _GENERIC and key in _words(package)


def _holds(key: str, package: str) -> bool:
    return len(key) >= 3 and key not in _GENERIC and key in _NOT_ALNUM.sub("", package)


def _quoted(text: str) -> str:
    """What the model asked for, short and plain (it is the model's own text, not the screen's)."""
    return _NOT_ALNUM.sub(" ", text.lower()).strip()[:60] or "?"
