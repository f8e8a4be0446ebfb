"""Which app an ``open_app`` action means: its words against the phone's launcher activities.

The phone lists what its launcher shows as ``package/activity`` components
(:meth:`perception.sources.device.DeviceSource.launchable_apps`); labels ("WeChat", "Einstellungen")
are not to be had over adb, so a model names an app by its package (``com.tencent.mm``), which
models know for common apps, by a known name (:data:`ALIASES`, English and Chinese), or by words
its package spells (``settings`` -> ``com.android.settings``, ``qq music`` ->
``com.tencent.qqmusic``). No match, or several equally good, is an :class:`AppNotFoundError`
whose message lists the packages nearest to what was asked: the model answers with one of them
on its next step. Letters inside a package's word do not match (``phone`` is not Alipay's
``AlipayGphone``): a wrong app started is worse than a refusal.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from typing import NoReturn

from perception.errors import PerceptionError
from perception.sources.base import package_of
from perception.sources.replay import full_component

MAX_SUGGESTIONS = 8
"""Packages a refusal lists (nearest first)."""
MIN_PREFIX = 4
"""Shortest word of a name that may match the start of a package's word (``insta``)."""
_NOT_ALNUM = re.compile(r"[^0-9a-z]+")
_NOT_WORD = re.compile(r"[^\w]+")
_CAMEL = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
_GENERIC = frozenset({
    "com", "org", "net", "io", "de", "cn", "me", "co", "app", "apps", "android", "google",
    "mobile", "client", "activity", "main", "ui", "launcher",
})
"""Package and class segments that name no app (``com.android.settings``: "settings")."""
_FILLER = frozenset({"the", "my", "a", "app", "application", "open", "launch", "start"})
"""Words around a name that are not part of it (``the settings app``)."""


class AppNotFoundError(PerceptionError, LookupError):
    """No app the launcher shows matches the name asked for, or several match equally well."""


_BROWSERS = ("com.android.chrome", "com.sec.android.app.sbrowser", "com.huawei.browser",
             "com.heytap.browser", "com.mi.globalbrowser", "com.android.browser",
             "org.mozilla.firefox")
_EMAIL = ("com.google.android.gm", "com.android.email", "com.samsung.android.email.provider",
          "com.huawei.email")
_PHONE = ("com.google.android.dialer", "com.android.dialer", "com.samsung.android.dialer",
          "com.android.contacts", "com.huawei.contacts")
_CONTACTS = ("com.google.android.contacts", "com.android.contacts",
             "com.samsung.android.app.contacts", "com.huawei.contacts")
_MESSAGES = ("com.google.android.apps.messaging", "com.android.mms",
             "com.samsung.android.messaging")
_GALLERY = ("com.google.android.apps.photos", "com.android.gallery3d", "com.miui.gallery",
            "com.sec.android.gallery3d", "com.huawei.photos", "com.coloros.gallery3d")
_CLOCK = ("com.google.android.deskclock", "com.android.deskclock",
          "com.sec.android.app.clockpackage")
_CAMERA = ("com.android.camera2", "com.android.camera", "com.google.android.GoogleCamera",
           "com.sec.android.app.camera", "com.huawei.camera", "com.oplus.camera")
_CALCULATOR = ("com.google.android.calculator", "com.android.calculator2", "com.miui.calculator",
               "com.sec.android.app.popupcalculator")
_CALENDAR = ("com.google.android.calendar", "com.android.calendar",
             "com.samsung.android.calendar")
_FILES = ("com.google.android.documentsui", "com.android.documentsui",
          "com.google.android.apps.nbu.files", "com.mi.android.globalFileexplorer")

_KNOWN: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    # (names people and models give an app whose package does not spell them, its packages:
    # the phone makers' after AOSP's); a name matches only a package the phone's launcher shows.
    (("play store", "google play"), ("com.android.vending",)),
    (("phone", "dialer", "电话", "拨号"), _PHONE),
    (("contacts", "people", "联系人"), _CONTACTS),
    (("messages", "sms", "短信", "信息"), _MESSAGES),
    (("gmail",), ("com.google.android.gm",)),
    (("email", "mail", "邮件"), _EMAIL),
    (("browser", "浏览器"), _BROWSERS),
    (("photos",), ("com.google.android.apps.photos",)),
    (("gallery", "相册", "图库"), _GALLERY),
    (("clock", "alarm", "时钟", "闹钟"), _CLOCK),
    (("camera", "相机"), _CAMERA),
    (("files", "file manager", "文件", "文件管理"), _FILES),
    (("drive", "google drive"), ("com.google.android.apps.docs",)),
    (("keep", "keep notes"), ("com.google.android.keep",)),
    (("calculator", "计算器"), _CALCULATOR),
    (("calendar", "日历"), _CALENDAR),
    (("设置",), ("com.android.settings",)),
    (("wechat", "weixin", "微信"), ("com.tencent.mm",)),
    (("wecom", "企业微信"), ("com.tencent.wework",)),
    (("qq",), ("com.tencent.mobileqq",)),
    (("qq音乐",), ("com.tencent.qqmusic",)),
    (("alipay", "支付宝"), ("com.eg.android.AlipayGphone",)),
    (("taobao", "淘宝"), ("com.taobao.taobao",)),
    (("xianyu", "闲鱼"), ("com.taobao.idlefish",)),
    (("jd", "jingdong", "京东"), ("com.jingdong.app.mall",)),
    (("pinduoduo", "拼多多"), ("com.xunmeng.pinduoduo",)),
    (("meituan", "美团"), ("com.sankuai.meituan",)),
    (("eleme", "饿了么"), ("me.ele",)),
    (("xiaohongshu", "rednote", "小红书"), ("com.xingin.xhs",)),
    (("bilibili", "哔哩哔哩", "b站"), ("tv.danmaku.bili",)),
    (("zhihu", "知乎"), ("com.zhihu.android",)),
    (("douyin", "抖音"), ("com.ss.android.ugc.aweme",)),
    (("kuaishou", "快手"), ("com.smile.gifmaker",)),
    (("toutiao", "今日头条"), ("com.ss.android.article.news",)),
    (("tiktok",), ("com.zhiliaoapp.musically", "com.ss.android.ugc.trill")),
    (("weibo", "微博"), ("com.sina.weibo",)),
    (("netease music", "网易云音乐"), ("com.netease.cloudmusic",)),
    (("amap", "gaode", "高德地图"), ("com.autonavi.minimap",)),
    (("baidu maps", "百度地图"), ("com.baidu.BaiduMap",)),
    (("baidu", "百度"), ("com.baidu.searchbox",)),
    (("dingtalk", "钉钉"), ("com.alibaba.android.rimet",)),
    (("ctrip", "trip.com", "携程"), ("ctrip.android.view",)),
    (("didi", "滴滴"), ("com.sdu.didi.psnger",)),
    (("google",), ("com.google.android.googlequicksearchbox",)),
    (("assistant", "google assistant"), ("com.google.android.apps.googleassistant",)),
    (("docs", "google docs"), ("com.google.android.apps.docs.editors.docs",)),
    (("sheets", "google sheets"), ("com.google.android.apps.docs.editors.sheets",)),
    (("meet", "duo"), ("com.google.android.apps.tachyon",)),
    (("fit",), ("com.google.android.apps.fitness",)),
    (("youtube music",), ("com.google.android.apps.youtube.music",)),
    (("facebook",), ("com.facebook.katana",)),
    (("messenger",), ("com.facebook.orca",)),
    (("x", "twitter"), ("com.twitter.android",)),
)
ALIASES: dict[str, tuple[str, ...]] = {
    name: packages for names, packages in _KNOWN for name in names
}
"""Lower-case names -> packages, most likely first."""


def resolve_app(app: str, components: Sequence[str]) -> str:
    """The launcher component ``app`` names. In order, the first rule that matches decides
    (several packages matching one rule is a refusal naming them):

    1. a component (either spelling: ``com.x/.Main``, ``com.x/com.x.Main``) or a package given
       whole (any case);
    2. a known name (:data:`ALIASES`), filler words (``the``, ``app``) left out, then also
       words that name no app (``Google Play Store`` -> ``play store``);
    3. the package's last word is the name's letters and digits (``QQ Music`` -> ``qqmusic``
       -> ``com.tencent.qqmusic``), then any of its words is;
    4. every word of the name that names something (not ``google``, ``android``) is a word of
       the package (``Google Maps`` -> ``...apps.maps``), then is one or starts one (``Google
       Wallet`` -> ``...walletnfcrel``; a word of at least :data:`MIN_PREFIX` letters);
    5. every such word is a known name, all of one app (``Chrome browser``; ``Outlook mail``
       is not Gmail).

    A package with several launcher activities gives the one whose class spells a word of the
    name (``Contacts`` -> ``.../.PeopleActivity`` only if it says so), else its first."""
    if not components:
        raise AppNotFoundError(
            "the phone lists no app its launcher shows; find the app on the home screen"
        )
    asked = app.strip()
    by_package: dict[str, list[str]] = {}
    for component in components:
        by_package.setdefault(package_of(component), []).append(component)
    lower = {p.lower(): p for p in reversed(list(by_package))}
    whole = full_component(asked).lower()
    exact = next((c for c in components if full_component(c).lower() == whole), None)
    if exact is not None:
        return exact
    words = [w for w in _NOT_WORD.split(asked.lower()) if w and w not in _FILLER]
    if asked.lower() in lower:
        return by_package[lower[asked.lower()]][0]
    phrases = (" ".join(words), " ".join(w for w in words if w not in _GENERIC))
    for phrase in phrases:
        for package in ALIASES.get(phrase, ()):
            if package.lower() in lower:
                return _activity(by_package[lower[package.lower()]], words)
    key = "".join(_NOT_ALNUM.sub("", w) for w in words)
    named = [_NOT_ALNUM.sub("", w) for w in words if w not in _GENERIC]
    named = [w for w in named if w]
    rules: tuple[Callable[[list[str]], bool], ...] = (
        lambda pw: bool(key) and bool(pw) and pw[-1] == key,
        lambda pw: bool(key) and key not in _GENERIC and key in pw,
        lambda pw: bool(named) and all(w in pw for w in named),
        lambda pw: bool(named) and all(
            w in pw or (len(w) >= MIN_PREFIX and any(p.startswith(w) for p in pw))
            for w in named
        ),
    )
    for rule in rules:
        found = [p for p in by_package if rule(_package_words(p))]
        if len(found) == 1:
            return _activity(by_package[found[0]], words)
        if len(found) > 1:
            _refuse_several(asked, found)
    meaning = [w for w in words if w not in _GENERIC]
    if meaning and all(w in ALIASES for w in meaning):
        aliased: set[str] = set()
        for word in meaning:
            present = [lower[p.lower()] for p in ALIASES[word] if p.lower() in lower]
            if present:
                aliased.add(present[0])  # the known name's likeliest package on this phone
        if len(aliased) == 1:
            (only,) = aliased
            return _activity(by_package[only], words)
        if len(aliased) > 1:
            _refuse_several(asked, sorted(aliased))
    if not key:
        # A name in another script that no known name covers: nothing to compare packages with.
        raise AppNotFoundError(
            f'"{_quoted(asked)}" names no app this phone\'s launcher shows that is known by that '
            "name; open_app its package (e.g. com.tencent.mm), or find the app on the home "
            f"screen; the launcher shows {len(by_package)} apps"
        )
    raise AppNotFoundError(
        f'no app the launcher shows matches "{_quoted(asked)}"; its packages, nearest first: '
        + ", ".join(nearest(key, list(by_package)))
        + "; open_app one of these packages, or find the app on the home screen"
    )


def _refuse_several(asked: str, packages: Sequence[str]) -> NoReturn:
    names = ", ".join(packages[:MAX_SUGGESTIONS])
    raise AppNotFoundError(
        f'several apps match "{_quoted(asked)}": {names}; open_app one of these packages'
    )


_CLASS_WORDS: dict[str, frozenset[str]] = {
    # A maker's Contacts package may also hold its Phone: what each activity's class is called.
    "contacts": frozenset({"people", "contacts"}),
    "people": frozenset({"people", "contacts"}),
    "phone": frozenset({"dialtacts", "dialer", "dial"}),
    "dialer": frozenset({"dialtacts", "dialer", "dial"}),
}


def _activity(components: Sequence[str], words: Sequence[str]) -> str:
    """Of one package's launcher activities, the one whose class name spells a word of the
    name (a phone's Contacts and Phone may be one package), else the first."""
    if len(components) > 1:
        wanted = {_NOT_ALNUM.sub("", w) for w in words} - _GENERIC - {""}
        wanted |= {c for w in words for c in _CLASS_WORDS.get(w, ())}
        spelled = [
            c for c in components
            if wanted & {w.lower() for w in _CAMEL.findall(c.rsplit(".", 1)[-1])}
        ]
        if len(spelled) == 1:
            return spelled[0]
    return components[0]


def nearest(key: str, packages: Sequence[str]) -> list[str]:
    """Up to :data:`MAX_SUGGESTIONS` packages, the most like ``key`` first (by their words'
    letters; ties and no likeness at all: in name order)."""

    def likeness(package: str) -> float:
        words = [w for w in _package_words(package) if w not in _GENERIC] or [package]
        return max(difflib.SequenceMatcher(None, key, w).ratio() for w in words)

    return sorted(sorted(packages), key=likeness, reverse=True)[:MAX_SUGGESTIONS]


def _package_words(package: str) -> list[str]:
    """A package's words, lower case, letters and digits only (``com.eg.android.AlipayGphone``:
    com, eg, android, alipaygphone)."""
    return [_NOT_ALNUM.sub("", w) for w in package.lower().split(".")]


def _quoted(text: str) -> str:
    """What the model asked for, short and plain: letters (any script) and digits, lower case,
    punctuation as spaces (it is the model's own text, but may have been copied off a screen)."""
    return _NOT_WORD.sub(" ", text.lower()).replace("_", " ").strip()[:60] or "?"
