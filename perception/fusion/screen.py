"""The screen description, its page fingerprint, and operations the screen makes obvious.

The fingerprint names a *page*, not a moment: package, activity and the top texts, with digits
masked (a clock or a counter does not make a new page). Recommended operations are offered only
where the screen makes them obvious: a dialog with a close / skip / allow button, a loading
screen (wait), a secure or captcha screen (hand over to the user), or nothing trustworthy at all
(capture again).
"""

from __future__ import annotations

import enum
import hashlib
import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.fusion.candidates import Candidate, Draft
from perception.fusion.crossval import normalise_text, normalise_texts
from perception.fusion.table import boxes_array, flag_bits
from perception.geometry import union_box
from perception.types import ACTIONABLE, BoxPx, Channel, ElementFlag, ScreenSize

TOP_TEXTS = 8
_PIXEL = Channel.PIXEL
_TREE = Channel.TREE

# Button vocabulary. A label says a phrase when it *is* the phrase (case, spaces, punctuation
# and a countdown such as "5s" aside): "Cancel" dismisses, "Cancel order" is an action of its
# own, "Allow all the time" accepts because it is listed. Latin and Cyrillic labels are compared
# as words ("don't" is one word, "dont"; "Schließen" is "schliessen"), labels with CJK
# characters (Chinese, Japanese kana, Korean hangul) as their normalised text.
_APOSTROPHES = str.maketrans("", "", "'’‘`´")
_WORD = re.compile(r"[^\W_]+")
# Close, skip and not-now are listed once, as strong (_STRONG_PHRASES, _STRONG_PHRASES_INTL,
# CJK_STRONG_DISMISS_WORDS): the dismiss sets include them.
_DISMISS_PHRASES = (
    "skip for now",
    "later",
    "maybe later",
    "ask me later",
    "remind me later",
    "not yet",
    "cancel",
    "dismiss",
    "got it",
    "deny",
    "deny anyway",
    "no",
    "reject",
    "reject all",
    "decline",
    "decline all",
    "disagree",
    "disallow",
)
_ACCEPT_PHRASES = (
    "allow",
    "ok",
    "okay",
    "accept",
    "accept all",
    "accept and continue",
    "agree",
    "i agree",
    "agree and continue",
    "continue",
    "yes",
    "done",
    "while using the app",
    "allow while using the app",
    "allow only while using the app",
    "only this time",
    "allow this time",
    "allow once",
    "allow all the time",
    "pair",  # Bluetooth's pairing request: "Pair" / "Cancel"
)
_STRONG_PHRASES = (
    "close",
    "close ad",
    "skip",
    "skip ad",
    "skip ads",
    "x",
    "no thanks",
    "no thank you",
    "not now",
    "no not now",
)
# German, French, Spanish, Portuguese, Italian and Russian, as Android's permission dialog and
# common pop-ups write them (normalised like a label: "Nur dieses Mal" is ("nur", "dieses", "mal")).
# Negated accept phrases ("Nicht zulassen", "Ne pas autoriser", "No permitir", "Não permitir")
# come from NEGATIONS; negations of another form are listed ("Non consentire", "Не разрешать").
# None is longer than _MAX_LABEL (40 characters): a longer label is read as no button.
_DISMISS_PHRASES_INTL = (
    # de
    "Abbrechen",
    "Später",
    "Vielleicht später",
    "Nein",
    "Ablehnen",
    "Alle ablehnen",
    "Trotzdem ablehnen",
    "Verweigern",
    "Verstanden",
    # fr
    "Ignorer",
    "Annuler",
    "Plus tard",
    "Non",
    "Refuser",
    "Tout refuser",
    "Continuer sans accepter",
    "J'ai compris",
    # es
    "Cancelar",
    "Más tarde",
    "Denegar",
    "Rechazar",
    "Rechazar todo",
    "Rechazar todas",
    "Continuar sin aceptar",
    "Entendido",
    # pt
    "Mais tarde",
    "Não",
    "Negar",
    "Recusar",
    "Rejeitar",
    "Rejeitar tudo",
    "Entendi",
    # it
    "Annulla",
    "Più tardi",
    "Rifiuta",
    "Rifiuta tutto",
    "Nega",
    "Non consentire",
    # ru
    "Отмена",
    "Позже",
    "Нет",
    "Запретить",
    "Отклонить",
    "Отклонить все",
    "Не разрешать",
    "Понятно",
)
_ACCEPT_PHRASES_INTL = (
    # de
    "Zulassen",
    "Erlauben",
    "Immer zulassen",
    "Bei Nutzung der App",
    "Während der Nutzung der App",
    "Nur während der Nutzung der App",
    "Nur dieses Mal",
    "Akzeptieren",
    "Alle akzeptieren",
    "Zustimmen",
    "Ich stimme zu",
    "Weiter",
    "Fortfahren",
    "Ja",
    "Fertig",
    # fr
    "Autoriser",
    "Toujours autoriser",
    "Autoriser tout le temps",
    "Lorsque vous utilisez l'appli",
    "Uniquement cette fois-ci",
    "Uniquement cette fois",
    "Accepter",
    "Tout accepter",
    "Accepter et continuer",
    "J'accepte",
    "Continuer",
    "Oui",
    "D'accord",
    "Terminé",
    # es
    "Permitir",
    "Permitir siempre",
    "Mientras la app está en uso",
    "Mientras se usa la app",
    "Solo esta vez",
    "Sólo esta vez",
    "Aceptar",
    "Aceptar todo",
    "Aceptar todas",
    "Acepto",
    "Estoy de acuerdo",
    "Continuar",
    "Sí",
    "Listo",
    # pt
    "Permitir sempre",
    "Durante o uso do app",
    "Permitir apenas durante o uso do app",
    "Permitir apenas enquanto uso a app",
    "Apenas esta vez",
    "Só esta vez",
    "Somente esta vez",
    "Aceitar",
    "Aceitar tudo",
    "Aceito",
    "Concordo",
    "Sim",
    "Concluído",
    # it
    "Consenti",
    "Consenti sempre",
    "Mentre usi l'app",
    "Consenti solo mentre l'app è in uso",
    "Solo questa volta",
    "Accetta",
    "Accetta tutto",
    "Accetto",
    "Continua",
    "Sì",
    # ru
    "Разрешить",
    "Разрешить всегда",
    "При использовании приложения",
    "Только во время использования приложения",
    "Только в этот раз",
    "ОК",
    "Принять",
    "Принять все",
    "Согласен",
    "Согласна",
    "Продолжить",
    "Да",
    "Готово",
)
_STRONG_PHRASES_INTL = (
    "Schließen",
    "Anzeige schließen",
    "Werbung schließen",
    "Überspringen",
    "Anzeige überspringen",
    "Werbung überspringen",
    "Nicht jetzt",
    "Jetzt nicht",
    "Nein danke",
    "Fermer",
    "Fermer l'annonce",
    "Passer",
    "Passer l'annonce",
    "Ignorer l'annonce",
    "Pas maintenant",
    "Non merci",
    "Cerrar",
    "Cerrar anuncio",
    "Omitir",
    "Omitir anuncio",
    "Saltar",
    "Saltar anuncio",
    "Ahora no",
    "No, gracias",
    "Fechar",
    "Fechar anúncio",
    "Pular",
    "Pular anúncio",
    "Agora não",
    "Não, obrigado",
    "Não, obrigada",
    "Chiudi",
    "Chiudi annuncio",
    "Salta",
    "Salta annuncio",
    "Non ora",
    "No grazie",
    "Закрыть",
    "Закрыть рекламу",
    "Пропустить",
    "Пропустить рекламу",
    "Не сейчас",
    "Нет, спасибо",
)


def _words(phrase: str) -> tuple[str, ...]:
    """A phrase as the words a label says it with (NFKC, case-folded, apostrophes dropped)."""
    text = unicodedata.normalize("NFKC", phrase).casefold().translate(_APOSTROPHES)
    return tuple(_WORD.findall(text))


STRONG_DISMISS_WORDS = frozenset(map(_words, _STRONG_PHRASES + _STRONG_PHRASES_INTL))
"""Close, skip and no-thanks: obvious on a screen with little else to tap even when nothing else
says "dialog" (a full-screen ad, a splash). "Cancel" is not: it may abort a download."""
DISMISS_WORDS = STRONG_DISMISS_WORDS | frozenset(
    map(_words, _DISMISS_PHRASES + _DISMISS_PHRASES_INTL)
)
"""Latin and Cyrillic dismiss labels, as word tuples (the strong ones among them)."""
_ENGLISH_ACCEPT_WORDS = frozenset(map(_words, _ACCEPT_PHRASES))
ACCEPT_WORDS = _ENGLISH_ACCEPT_WORDS | frozenset(map(_words, _ACCEPT_PHRASES_INTL))
"""Latin and Cyrillic accept labels, as word tuples."""
NEGATIONS: tuple[tuple[str, ...], ...] = (
    ("dont",),
    ("do", "not"),
    ("not",),
    ("never",),
    ("nicht",),
    ("ne", "pas"),
    ("no",),
    ("não",),
    ("non",),
    ("не",),
)
"""A negation in front of an accept phrase makes it a dismiss ("Don't allow", "DON'T AGREE",
"Nicht zulassen", "Ne pas autoriser", "No permitir", "Não permitir", "Non accetto", "Не
согласен"). "No" is English too: in front of an English phrase it says nothing, as before ("No,
continue")."""
_NEGATED = tuple(
    (n, ACCEPT_WORDS - _ENGLISH_ACCEPT_WORDS if n == ("no",) else ACCEPT_WORDS) for n in NEGATIONS
)
"""Each negation with the accept phrases it negates."""
CJK_STRONG_DISMISS_WORDS = frozenset(
    map(
        normalise_text,
        (
            "关闭",
            "关闭广告",
            "跳过",
            "跳过广告",
            "以后再说",
            "暂不",
            "閉じる",
            "広告を閉じる",
            "スキップ",
            "スキップする",
            "広告をスキップ",
            "今はしない",
            "닫기",
            "광고 닫기",
            "건너뛰기",
            "광고 건너뛰기",
        ),
    )
)
"""Close, skip and not-now in Chinese, Japanese and Korean (see :data:`STRONG_DISMISS_WORDS`)."""
CJK_DISMISS_WORDS = CJK_STRONG_DISMISS_WORDS | frozenset(
    map(
        normalise_text,
        (
            "取消",
            "不同意并退出",
            "拒绝并退出",
            "我知道了",
            "知道了",
            "以后",
            "下次再说",
            "稍后",
            "稍后再说",
            "暂时不用",
            "不了",
            "不用了",
            "我再想想",
            "拒绝",
            "残忍拒绝",
            "禁止",
            # Japanese negates with a suffix: its negated forms are listed.
            "許可しない",
            "拒否",
            "キャンセル",
            "後で",
            "あとで",
            "また後で",
            "今はしません",
            "同意しない",
            "同意しません",
            "いいえ",
            # Korean
            "허용 안함",
            "허용하지 않음",
            "거부",
            "취소",
            "나중에",
            "나중에 하기",
            "동의 안함",
            "동의하지 않음",
            "아니요",
            "아니오",
        ),
    )
)
CJK_ACCEPT_WORDS = frozenset(
    map(
        normalise_text,
        (
            "允许",
            "始终允许",
            "仅在使用中允许",
            "允许本次使用",
            "本次允许",
            "同意",
            "我同意",
            "同意并继续",
            "同意并使用",
            "同意并进入",
            "确定",
            "确认",
            "好",
            "好的",
            "完成",
            "继续",
            "接受",
            # Japanese
            "許可",
            "許可する",
            "常に許可",
            "アプリの使用中のみ許可",
            "今回のみ",
            "今回のみ許可",
            "同意する",
            "同意します",
            "同意して続行",
            "続行",
            "続ける",
            "はい",
            "完了",
            # Korean
            "허용",
            "항상 허용",
            "앱 사용 중에만 허용",
            "이번만 허용",
            "확인",
            "동의",
            "동의함",
            "동의합니다",
            "계속",
            "계속하기",
            "완료",
            "예",
        ),
    )
)
CJK_NEGATIONS = ("暂不", "不再", "不", "拒绝", "禁止")
"""Negations in front of an accept word or of :data:`CJK_PROPOSALS` ("不允许", "暂不开启")."""
CJK_PROPOSALS = frozenset({"开启", "打开", "更新", "升级", "授权", "需要"})
"""What a pop-up proposes; negated, they dismiss it. Alone they are no accept: a wrong accept
switches something on that the user did not ask for."""
CLOSE_SYMBOLS = frozenset({"×", "✕", "✖", "╳", "ⓧ"})
RID_DISMISS_WORDS = frozenset({"close", "dismiss", "skip", "cancel"})
RID_NOISE_WORDS = frozenset(
    {
        "b",
        "bt",
        "btn",
        "button",
        "iv",
        "img",
        "image",
        "imageview",
        "ic",
        "icon",
        "view",
        "dialog",
        "dlg",
        "popup",
        "pop",
        "ad",
        "ads",
        "hint",
        "tip",
        "tips",
        "guide",
        "x",
        "top",
        "right",
        "left",
        "corner",
    }
)
"""Words that may stand next to "close" in a resource name that names a pop-up's close button
(``iv_close``, ``b_close_hint``); any other word makes it a page's own control
(``btnTestTypeClose``, ``home_drag_view_close``, ``close_banner``)."""

LOADING_LABELS = frozenset(
    {
        "loading",
        "loadingpleasewait",
        "pleasewait",
        "pleasewaitloading",
        "signingin",
        "signingup",
        "loggingin",
        "connecting",
        "加载中",
        "正在加载",
        "正在加载中",
        "加载中请稍候",
        "请稍候",
        "请稍等",
        "载入中",
        "正在载入",
        "正在载入中",
    }
)
"""What a loading screen's own short label says (normalised, digits dropped: "Loading 45%")."""
LOADING_WORDS = (
    "loading",
    "pleasewait",
    "signing",
    "loggingin",
    "connecting",
    "加载",
    "请稍",
    "载入",
)
"""Cheap pre-check on the joined texts before :data:`LOADING_LABELS` are looked for."""
CAPTCHA_WORDS = ("captcha", "verifyyouarehuman", "imnotarobot", "人机验证", "滑动验证", "拖动滑块")
"""Said in a short label of its own. "验证码" alone is not here: it is mostly an SMS code."""
CAPTCHA_IMAGE_CODES = ("图形验证码", "图片验证码")
NOT_A_CAPTCHA = ("protectedby",)
"""A "protected by reCAPTCHA" footer is an invisible captcha: nothing for the user to do."""
DIALOG_HINTS = ("dialog", "alerttitle", "permission", "popup", "button1", "button2")
MESSAGE_HINTS = frozenset({"message", "empty"})
"""The resource names of a pop-up's message: a dialog's (``android:id/message``) and the
system's app chooser's "No apps can perform this action." (``android:id/empty``, a sheet with
nothing to tap). A dialog with a title and a custom view whose controls the dump lost (a
slider) is no message dialog."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScreenInfo:
    package: str
    activity: str | None
    size: ScreenSize
    rotation: int
    secure: bool
    """The frame is black while the tree shows a screen, or with no tree at all: FLAG_SECURE (or
    a blank capture, a display that is off). A frame of one other colour (white, grey) is an app
    still drawing: not secure, ``wait``."""
    fingerprint: str
    top_texts: tuple[str, ...]
    keyboard_px: BoxPx | None = None
    """The on-screen keyboard's box, when the tree holds its window (its keys are not
    candidates; see :mod:`perception.tree.keyboard`)."""


def top_texts(
    drafts: Sequence[Draft],
    limit: int = TOP_TEXTS,
    *,
    boxes: npt.NDArray[np.int32] | None = None,
) -> tuple[str, ...]:
    """The first distinct texts top to bottom, digits masked (``boxes``: the drafts' boxes as
    ``int32[N, 4]`` when the caller has them already). Labels count, and pixel text only when
    OCR read it; the first ``8 * limit`` of them by place are looked at (the top names the
    page), each cut to 40 characters."""
    arr = boxes_array([d.box_px for d in drafts]) if boxes is None else boxes
    return fastpath.top_texts(
        drafts, arr, pixel=_PIXEL, ocr="ocr", limit=limit, scan=8 * limit, width=40
    )


def fingerprint(package: str, activity: str | None, texts: Sequence[str]) -> str:
    h = hashlib.blake2b(digest_size=8)
    for part in (package, activity or "", *texts):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x1f")
    return h.hexdigest()


@enum.unique
class OperationKind(enum.StrEnum):
    DISMISS = "dismiss"
    """A dialog or pop-up offers a close / skip / cancel button: ``candidate_id`` names it.
    Without a ``candidate_id`` (``["dismiss"]`` in the prompt) the dialog shows a message and no
    button at all: press back to dismiss it."""
    ACCEPT = "accept"
    """A dialog or permission sheet offers allow / OK / agree: ``candidate_id`` names it."""
    WAIT = "wait"
    """A loading screen: wait and observe again."""
    HAND_OVER = "hand_over"
    """A secure or captcha screen: hand over to the user."""
    RECAPTURE = "recapture"
    """Nothing trustworthy was seen (stale or mismatched captures, both channels weak)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Operation:
    kind: OperationKind
    reason: str
    candidate_id: int | None = None


_COUNTDOWN = re.compile(r"\d+(?:secs|sec|s|秒)?")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_MAX_LABEL = 40
_MAX_CAPTCHA_LABEL = 24
_NAV_LABELS = frozenset({"back", "navigateup", "返回"})
_BIG_AREA = 0.3
_DIALOG_AREA = 0.6
_DIALOG_MAX_BOXES = 15
_LONE_MAX_ACTIONABLE = 4
_PAIR_MAX_AREA = 0.08
_PAIR_MAX_GAP = 0.15
_TOP_BAR = 0.1
_NAV_BAR = 0.08
"""The system navigation bar's depth at the screen's bottom edge (its right edge in landscape),
as a share of that side: 3-button bars are 48 dp on a 732-915 dp high phone, 5.2-6.6%."""
_SYSTEM_KEYS = frozenset(
    {"back", "home", "overview", "recents", "recentapps",
     "返回", "主屏幕", "主页", "概览", "最近任务", "多任务"}
)
"""The system navigation bar's keys, as ``normalise_text`` leaves their labels."""
_QUESTION_MARKS = "?？"
_REVOKING_WORDS = frozenset({("deny", "anyway")})
"""Dismiss labels that revoke something (Android's "Deny anyway" under its warning that an old
app may stop working without the permission): ranked after a plain dismiss ("Cancel")."""


def _is_rid(piece: str) -> bool:
    """A label made from a resource name (:func:`perception.tree.compress.label_of`)."""
    return len(piece) > 2 and piece[0] == "[" and piece[-1] == "]"


_FIRST_WORDS = frozenset({p[0] for p in DISMISS_WORDS | ACCEPT_WORDS if p})
"""The words a Latin or Cyrillic label that says something can start with (countdowns aside).
A negated label ("Ne pas autoriser") holds the phrase it negates, so the negations need not be
looked for: "ne" alone let every "New ..." and "phone" through."""


def _label_kind(piece: str) -> tuple[OperationKind | None, bool]:
    """What one label piece says, and whether it is a close / skip (obvious on its own)."""
    piece = piece.strip()
    if not piece or len(piece) > _MAX_LABEL or piece[-1] in _QUESTION_MARKS:
        return None, False  # a question ("Close?") is a dialog's title or message, no button
    if _is_rid(piece):
        names = {w.lower() for w in re.split(r"[\W_]+", _CAMEL.sub("_", piece[1:-1])) if w}
        if names & RID_DISMISS_WORDS and names <= RID_DISMISS_WORDS | RID_NOISE_WORDS:
            return OperationKind.DISMISS, True
        return None, False
    if piece in CLOSE_SYMBOLS:
        return OperationKind.DISMISS, True
    if _CJK.search(piece):
        n = _COUNTDOWN.sub("", normalise_text(piece))
        if n in CJK_DISMISS_WORDS:
            return OperationKind.DISMISS, n in CJK_STRONG_DISMISS_WORDS
        for neg in CJK_NEGATIONS:
            if n.startswith(neg):
                rest = n[len(neg) :]
                if rest in CJK_ACCEPT_WORDS or rest in CJK_PROPOSALS or rest.endswith("允许"):
                    return OperationKind.DISMISS, False
                if neg == "暂不" and len(n) <= 6:
                    return OperationKind.DISMISS, False  # "not for now", whatever follows
                return None, False
        if n in CJK_ACCEPT_WORDS or (n.endswith("允许") and len(n) <= 10):
            return OperationKind.ACCEPT, False
        return None, False
    all_words = tuple(_words(piece))
    words = tuple(w for w in all_words if not _COUNTDOWN.fullmatch(w))
    if not words:
        return None, False
    if words == ("x",) and any(w.isdigit() for w in all_words):
        return None, False  # "x 37", "X 10": a count (coins, a quantity); "X 5s" stays a close
    if words in DISMISS_WORDS:
        return OperationKind.DISMISS, words in STRONG_DISMISS_WORDS
    for negation, negated in _NEGATED:
        if words[: len(negation)] == negation and words[len(negation) :] in negated:
            return OperationKind.DISMISS, False
    if words in ACCEPT_WORDS:
        return OperationKind.ACCEPT, False
    return None, False


def button_kind(text: str) -> tuple[OperationKind | None, bool]:
    """What a button's label says: ``(DISMISS | ACCEPT | None, close_or_skip)``. Each piece of a
    ``" | "`` label is read on its own; pieces that say nothing are ignored, pieces that
    contradict each other make the label say nothing."""
    kind: OperationKind | None = None
    strong = False
    for piece in text.split(" | "):
        k, s = _label_kind(piece)
        if k is None:
            continue
        if kind is not None and k is not kind:
            return None, False
        kind, strong = k, strong or s
    return kind, strong


def _visible_pieces(c: Candidate) -> list[str]:
    """The label pieces a person sees (resource names left out)."""
    return [p for p in c.text.split(" | ") if p and not _is_rid(p)]


_OCCLUDED = int(ElementFlag.OCCLUDED)


def _live(c: Candidate) -> bool:
    b = c.box_px
    return not c.occluded and b.right > b.left and b.bottom > b.top


_DISABLED = int(ElementFlag.DISABLED)
_ACTIONABLE = int(ACTIONABLE)


def _offers(c: Candidate, flags: int | None = None) -> bool:
    """``c.actionable and not c.disabled and _live(c)`` on the flags' bits, and listed (an op
    names only ids the prompt shows: not a list item past ``+N``, not a key of the on-screen
    keyboard): the long-page gate asks it of up to 41 candidates a fusion, and the enum's
    operators made that 0.12 ms. ``flags``: ``int(c.flags)`` when the caller has the bits
    (an array's; the enum's int() is most of the rest)."""
    if flags is None:
        flags = int(c.flags)
    if flags & (_OCCLUDED | _DISABLED) or not c.listed:
        return False
    if c.source is not _PIXEL and not flags & _ACTIONABLE:
        return False
    b = c.box_px
    return b.right > b.left and b.bottom > b.top


def _is_nav(c: Candidate) -> bool:
    """A back arrow ("Back", "Navigate up", "返回")."""
    pieces = _visible_pieces(c)
    return bool(pieces) and all(normalise_text(p) in _NAV_LABELS for p in pieces)


def _is_bar_nav(c: Candidate, screen: ScreenSize) -> bool:
    """A back arrow in the top bar: a page of its own. A dialog's own "Back" button (beside
    its "OK") lies lower and says nothing about the page."""
    return c.box_px.bottom <= _TOP_BAR * screen.height_px * 1.5 and _is_nav(c)


def _system_key(c: Candidate, screen: ScreenSize) -> bool:
    """A key of the system navigation bar (Back, Home, Overview), which a multi-window dump
    holds beside the app: in the bar at the screen's bottom edge (the right edge in landscape),
    labelled as one. Its Back is no back arrow of the page's (a splash ad's lone "跳过 3" in a
    dump that holds the bar was taken for a page's own close), and the bar is no part of a
    dialog's box."""
    b = c.box_px
    if not (
        b.top >= (1 - _NAV_BAR) * screen.height_px
        or screen.width_px > screen.height_px and b.left >= (1 - _NAV_BAR) * screen.width_px
    ):
        return False
    pieces = _visible_pieces(c)
    return bool(pieces) and all(normalise_text(p) in _SYSTEM_KEYS for p in pieces)


def _captcha(candidates: Sequence[Candidate], texts: str) -> str | None:
    """A captcha named in a short label of its own (a heading, a checkbox), not in a sentence."""
    if not any(w in texts for w in CAPTCHA_WORDS + CAPTCHA_IMAGE_CODES):
        return None
    for c in candidates:
        for piece in _visible_pieces(c):
            n = normalise_text(piece)
            if any(w in n for w in NOT_A_CAPTCHA):
                continue
            limit = _MAX_CAPTCHA_LABEL if not _CJK.search(n) else _MAX_CAPTCHA_LABEL // 2
            if len(n) > limit:
                continue
            if any(w in n for w in CAPTCHA_WORDS + CAPTCHA_IMAGE_CODES):
                return piece
    return None


def _loading(
    candidates: Sequence[Candidate], screen: ScreenSize, hints: str, texts: str
) -> str | None:
    """A loading screen: a short label of its own says so and little else is offered, or a
    progress bar on a near-empty screen. A list footer saying "Loading…" under the content, or
    a title saying so over a page that has loaded, is no loading screen."""
    big = _BIG_AREA * screen.width_px * screen.height_px
    label: Candidate | None = None
    said = ""
    if any(w in texts for w in LOADING_WORDS):
        for c in candidates:
            for piece in _visible_pieces(c):
                n = _COUNTDOWN.sub("", normalise_text(piece))
                if n in LOADING_LABELS:
                    label, said = c, piece
                    break
            if label is not None:
                break
    if label is None:
        if "progressbar" not in hints or len(candidates) > 4:
            return None
        said = "progress bar"
    offered = 0
    for c in candidates:
        if c is label or not _live(c):
            continue
        if _visible_pieces(c) and c.box_px.area >= big:
            return None  # content fills the screen: a page, whatever its title says
        if _offers(c):
            kind, _ = button_kind(c.text)
            if kind is not OperationKind.DISMISS and not _is_nav(c):
                offered += 1
    if offered > (2 if label is not None else 0):
        return None
    return said


SPOT_BAND = 0.15
"""How far above and below a loading indicator (share of the screen's height) text means the
page around it has loaded."""
SPOT_PAGE_SHARE = 0.5
"""A view holding a loading indicator over more of the screen than this is the page (its
label is the page's), not a card around the indicator."""


def loading_spot(
    spots: Sequence[BoxPx], rows: Sequence[tuple[BoxPx, str, bool]], screen: ScreenSize
) -> BoxPx | None:
    """The first loading indicator (:attr:`perception.tree.Tree.loading_spots`) with no text
    around it, among ``rows`` (box, label, occluded: the tree's elements): part of a page
    still loading inside the app's own bars (Yelp's spinner on a blank feed under its tabs;
    QQ Music's list panel, blank but for its spinner or saying only "正在载入…"), which
    :func:`_loading` leaves alone since the bars offer buttons.

    Text around it is a label other than a loading label or a resource name, on a row that
    reaches within :data:`SPOT_BAND` of the screen's height above or below the indicator
    (a paragraph block taller than the band counts by its edge, not its centre),
    or on one that holds the indicator and is no larger than :data:`SPOT_PAGE_SHARE` of the
    screen: a spinner beside text is no wait (a list's "load more" footer under loaded rows,
    a video buffering in a feed's card that has a caption). An indicator that only occluded
    rows hold is under a dialog or a sheet: not what the screen shows."""
    band = SPOT_BAND * screen.height_px
    page = SPOT_PAGE_SHARE * screen.width_px * screen.height_px
    for spot in spots:
        centre = spot.center
        top, bottom = spot.top - band, spot.bottom + band
        held = covered = near = False
        for box, label, occluded in rows:
            if box.right <= box.left or box.bottom <= box.top:
                continue
            inside = box.contains(centre)
            if occluded:
                covered = covered or inside
                continue
            held = held or inside
            if inside and box.area > page:
                continue
            if not inside and (box.bottom < top or box.top > bottom):
                continue
            if any(
                p and not _is_rid(p) and _COUNTDOWN.sub("", normalise_text(p)) not in LOADING_LABELS
                for p in label.split(" | ")
            ):
                near = True
                break
        if not near and (held or not covered):
            return spot
    return None


SPLASH_KINDS = frozenset({"img", "text"})
SPLASH_LINES = 3
SPLASH_WORDS = 3
"""Words (CJK: twice as many characters) a line of a splash the tree reads says at most: a
name, a slogan's fragment, a copyright ("Chatter", "© Saimon"); not a sentence ("Haven't you
heard about Testdroid Cloud?" on Bitbar's results page)."""
_TAP_WORDS = re.compile(
    r"(?i)\b(tap|touch|click|press|continue|start|skip|next|enter|log ?in|sign ?(in|up)|get "
    r"started|play)\b|点击|点按|轻触|跳过|进入|开始|继续|登录|下一步"
)
"""Words that ask for a tap: a screen saying them is no splash to wait out."""
_SENTENCE = re.compile(r"[!?.！？。]\s*$")


def _splash_line(piece: str) -> bool:
    """A line a splash the tree reads may say: :data:`SPLASH_WORDS` words at most, no
    sentence's end, no tap word, no button's phrase."""
    if _SENTENCE.search(piece) or _TAP_WORDS.search(piece) or button_kind(piece)[0] is not None:
        return False
    if _CJK.search(piece):
        return len(normalise_text(piece)) <= 2 * SPLASH_WORDS
    return len(_words(piece)) <= SPLASH_WORDS


_PASSING = re.compile(r"(?<![a-z])(splash|launch|welcome|loading|startup|logo(?!ut))")
"""A name a passing screen has: an activity (``.Splash``, ``LaunchActivity``) or resource
(``iv_splash``, ``logoImg``) named after a splash, a launch, a welcome, loading, start-up or
the app's logo, lowercased and matched from a word's start."""
_LOGO = re.compile(r"(?i)(?<![^\W_])logo(?![^\W_])")
"""A picture whose own description names it a logo ("Logo", "Bitbar logo")."""


def _passing(candidates: Sequence[Candidate], activity: str | None, hints: str) -> bool:
    """Something says the screen the tree reads is one that passes by itself: the activity's
    class name or a resource name (:data:`_PASSING`), or a picture's description calling it a
    logo (:data:`_LOGO`). A photo viewer, a comic's page, a QR code to scan hold a picture and
    a few short lines too, and never change by themselves."""
    name = _CAMEL.sub("_", (activity or "").rpartition("/")[2].rpartition(".")[2]).lower()
    if _PASSING.search(name):
        return True
    for h in hints.split():
        if ":id/" in h and _PASSING.search(h.rpartition("/")[2]):
            return True
    return any(c.kind == "img" and _LOGO.search(c.text) for c in candidates)


def _splash(candidates: Sequence[Candidate], activity: str | None = None, hints: str = "") -> bool:
    """A splash screen: a picture and at most :data:`SPLASH_LINES` lines of text, nothing to
    tap and no word asking for a tap. Off the pixels (the tree offers nothing: an empty dump, a
    failed one, one of another moment left out): QQ Music's logo over "让生活充满音乐" while it
    starts; not "Tap anywhere to continue". Off the tree: an image with nothing actionable on
    the screen, its label and the text beside it short lines (:func:`_splash_line`): Chatter's
    logo over "Chatter | © Saimon" while its loading dots run; not Bitbar's results page
    ("Bitbar logo | You are right! | Congratulations…"), which is no splash to wait out. The
    tree's rows must also show a sign the screen passes (:func:`_passing`): a photo viewer,
    a comic's page, "Scan to pay" under a QR code are no splash."""
    # Kinds and taps first, over every candidate: a screen with a button (most screens) is
    # ruled out before any of its lines is read.
    for c in candidates:
        if (
            (c.kind not in SPLASH_KINDS or (c.source is not _PIXEL and c.actionable))
            and c.listed and _live(c)
        ):
            return False
    lines = pictures = 0
    tree = False
    for c in candidates:
        if not c.listed or not _live(c):
            continue
        if c.source is not _PIXEL:
            tree = True
            pieces = _visible_pieces(c)
            if not all(map(_splash_line, pieces)):
                return False
            lines += len(pieces) - (c.kind == "img" and len(pieces) > 0)
            pictures += c.kind == "img"
        elif c.kind == "text":
            if _TAP_WORDS.search(c.text) or button_kind(c.text)[0] is not None:
                return False
            lines += 1
        else:
            pictures += 1
    return (
        pictures > 0 and lines <= SPLASH_LINES
        and (not tree or _passing(candidates, activity, hints))
    )


BLANK_WEB_SHARE = 0.4
"""A web view over this much of the screen with nothing in it, in the tree or on the pixels,
is a page still loading."""


def _blank_web(candidates: Sequence[Candidate], screen: ScreenSize) -> Candidate | None:
    """A web view of the tree over :data:`BLANK_WEB_SHARE` of the screen or more, with no
    label, no candidate inside it (the tree holds nothing of its page), while the pixels were
    read (a candidate they found or confirmed elsewhere) and found nothing there: a blank page
    loading (WebView Browser Tester before its page draws). A page the pixels read has text or
    shapes inside the view; a page the tree alone describes has its rows there."""
    least = BLANK_WEB_SHARE * screen.width_px * screen.height_px
    webs = [
        c for c in candidates
        if c.kind == "web" and c.source is not _PIXEL and _live(c) and c.listed
        and c.box_px.area >= least and not _visible_pieces(c)
    ]
    if not webs or not any(c.source is not _TREE for c in candidates):
        return None
    for web in webs:
        if not any(
            c is not web and not c.occluded and web.box_px.contains(c.box_px.center)
            for c in candidates
        ):
            return web
    return None


def _is_dialog(candidates: Sequence[Candidate], screen: ScreenSize, hints: str) -> bool:
    """A dialog or pop-up: a dialog's class or resource names, or what is not occluded (the
    page behind a dialog is) fits in under 60% of the screen with at most 15 boxes, none of
    them a back arrow (a short page of its own: a title, two rows, Cancel and Save)."""
    if any(h in hints for h in DIALOG_HINTS):
        return True
    live: list[Candidate] = []
    for c in candidates:
        if _live(c) and not _system_key(c, screen):
            live.append(c)
            if len(live) > _DIALOG_MAX_BOXES:
                return False  # too much on screen for a dialog
    # A back arrow is looked for among a few boxes only (a label read each).
    if not live or any(_is_bar_nav(c, screen) for c in live):
        return False
    boxes = [c.box_px for c in live]
    left = min(b.left for b in boxes)
    top = min(b.top for b in boxes)
    right = max(b.right for b in boxes)
    bottom = max(b.bottom for b in boxes)
    union = max(0, right - left) * max(0, bottom - top)
    return union < _DIALOG_AREA * screen.width_px * screen.height_px


def _button_pairs(
    buttons: Sequence[tuple[Candidate, OperationKind]], screen: ScreenSize
) -> list[BoxPx]:
    """A dismiss and an accept button side by side ("OK" "Cancel" under a question): a dialog,
    even one drawn over a full-screen page (a game's own pop-up). The region of each pair: the
    two buttons and one button's height around them (the row above or below, a third button
    beside them); nothing else on the screen is the dialog's for sure."""
    small = _PAIR_MAX_AREA * screen.width_px * screen.height_px
    gap_max = _PAIR_MAX_GAP * screen.width_px
    regions: list[BoxPx] = []
    for a, ka in buttons:
        if ka is not OperationKind.ACCEPT or a.box_px.area > small:
            continue
        for d, kd in buttons:
            if kd is not OperationKind.DISMISS or d.box_px.area > small:
                continue
            p, q = a.box_px, d.box_px
            overlap = min(p.bottom, q.bottom) - max(p.top, q.top)
            gap = max(p.left, q.left) - min(p.right, q.right)
            if overlap >= 0.5 * min(p.bottom - p.top, q.bottom - q.top) and gap <= gap_max:
                h = max(p.bottom - p.top, q.bottom - q.top)
                regions.append(
                    BoxPx(
                        min(p.left, q.left) - h, min(p.top, q.top) - h,
                        max(p.right, q.right) + h, max(p.bottom, q.bottom) + h,
                    )
                )
    return regions


def _has_message_hint(hints: str) -> bool:
    return any(w in MESSAGE_HINTS for w in hints.split())


def _revokes(c: Candidate) -> bool:
    return any(_words(p) in _REVOKING_WORDS for p in _visible_pieces(c))


MESSAGE_MAX_LINES = 8
"""A pop-up the pixels see holding more text lines than this is no short message."""
MESSAGE_MIN_WORDS = 3


def _pixel_message(candidates: Sequence[Candidate]) -> bool:
    """What the pixels offer is a message alone: text lines only (no button word, no outline,
    no icon, no tree row), at most :data:`MESSAGE_MAX_LINES` of them, one a sentence
    (:data:`MESSAGE_MIN_WORDS` words or more, CJK twice as many characters): "No apps can
    perform this action."; not a chooser of names or paths ("examples/", "plugins/")."""
    lines = 0
    sentence = False
    for c in candidates:
        if not c.listed or not _live(c):
            continue
        if c.source is not _PIXEL or c.kind != "text" or button_kind(c.text)[0] is not None:
            return False
        lines += 1
        if lines > MESSAGE_MAX_LINES:
            return False
        if _CJK.search(c.text):
            sentence = sentence or len(normalise_text(c.text)) >= 2 * MESSAGE_MIN_WORDS
        else:
            sentence = sentence or len(c.text.split()) >= MESSAGE_MIN_WORDS
    return sentence


_PROGRESS_WORDS = (
    r"(?i)^\W*(processing|connecting|loading|signing|logging|saving|uploading|downloading|"
    r"updating|syncing|sending|submitting|verifying|preparing|installing|authenticating)\b"
    r"|\bplease\s+wait\b|正在|请稍|加载"
)
_PROGRESS = re.compile(_PROGRESS_WORDS + r"|(\.\.\.|…)\s*$")
"""A line saying work is under way: a verb of progress leading it ("Processing your payment",
"Signing you in"), "please wait", an ellipsis at its end, 正在 / 请稍候 / 加载. Back on such a
pop-up would cancel the work ("Error uploading" leads with no such verb: a message)."""
_PROGRESS_SAID = re.compile(_PROGRESS_WORDS)
""":data:`_PROGRESS` without the ellipsis, for the tree's labels: the cluster stage cuts a long
piece with one ("There was a problem communicating with Google…")."""


def _progress(candidates: Sequence[Candidate], pattern: re.Pattern[str] = _PROGRESS) -> str | None:
    """The first line a pop-up says work is under way in (:data:`_PROGRESS`; the tree's labels
    are read piece by piece, ``pattern`` :data:`_PROGRESS_SAID`)."""
    for c in candidates:
        if not (c.listed and _live(c) and c.kind == "text"):
            continue
        for line in c.text.split(" | ") if pattern is _PROGRESS_SAID else (c.text,):
            if pattern.search(line):
                return c.text
    return None


_READ_WORDS = (
    _FIRST_WORDS
    | CJK_DISMISS_WORDS
    | CJK_ACCEPT_WORDS
    | frozenset(CJK_NEGATIONS)
    | CJK_PROPOSALS
    | {"允许"}
    | RID_DISMISS_WORDS
    | _NAV_LABELS
)


def _any_of(words: Iterable[str]) -> str:
    """A pattern that finds a text holding any of ``words`` (as substrings): their prefix tree
    written out, so the regex engine tries a position's character once against each branch,
    not once against each of a few hundred words (three times faster over a long page's
    labels). A word that holds a shorter one of them from its start is left out: the shorter
    finds the same texts."""
    root: dict[str, dict[str, Any]] = {}
    for word in sorted(set(words), key=len):
        node = root
        for ch in word:
            if "" in node:
                break  # a shorter word is a prefix of this one
            node = node.setdefault(ch, {})
        else:
            node.clear()
            node[""] = {}

    def branches(node: dict[str, dict[str, Any]]) -> str:
        if "" in node:
            return ""
        alts = [re.escape(ch) + branches(sub) for ch, sub in sorted(node.items())]
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    return branches(root)


_READ = re.compile(_any_of(w for w in _READ_WORDS if len(w) > 1))
"""Any of the words a button or back-arrow label must hold, in its normalised text (one-letter
words, "I agree" and "X", are looked for as words in the text itself: in the normalised text
nearly every label holds an "i")."""
_SYMBOLS = re.compile(
    "|".join(map(re.escape, CLOSE_SYMBOLS))
    + "|(?<![^\\W_])(?:"
    + "|".join(re.escape(w) for w in sorted(_READ_WORDS) if len(w) == 1)
    + ")(?![^\\W_])",
    re.IGNORECASE,
)


def _indices(pattern: re.Pattern[str], texts: Sequence[str]) -> set[int]:
    """The indices of ``texts`` that ``pattern`` finds something in (one search over them all)."""
    joined = "\x00".join(texts)
    if pattern.search(joined) is None:
        return set()
    starts = list(accumulate((len(t) + 1 for t in texts), initial=0))
    return {bisect_right(starts, m.start()) - 1 for m in pattern.finditer(joined)}


def _worth_reading(candidates: Sequence[Candidate], norms: Sequence[str]) -> list[int]:
    """The candidates whose label may say dismiss / accept or be a back arrow: its normalised
    text holds a word of the vocabulary, or its text a close symbol (which normalising drops).
    On a long page most labels are ruled out by one regex pass over them all."""
    found = _indices(_READ, norms)
    found |= _indices(_SYMBOLS, [c.text for c in candidates])
    return sorted(found)


AD_ACTIVITIES = (
    "com.google.android.gms.ads.",  # AdMob: AdActivity
    "com.startapp.",  # StartApp: com.startapp.android.publish.AppWallActivity, ...
    "com.applovin.",  # AppLovin: com.applovin.adview.AppLovinInterstitialActivity
    "com.unity3d.ads.",  # Unity Ads
    "com.unity3d.services.ads.",
    "com.ironsource.",  # ironSource: com.ironsource.sdk.controller.ControllerActivity
    "com.vungle.",  # Vungle: com.vungle.warren.AdActivity
    "com.facebook.ads.",  # Meta Audience Network: AudienceNetworkActivity
    "com.chartboost.",
    "com.inmobi.",
    "com.mopub.",
    "com.adcolony.",
    "com.bytedance.sdk.openadsdk.",  # Pangle
    "com.qq.e.ads.",  # Tencent GDT
    "com.mbridge.msdk.",  # Mintegral
)
"""Package prefixes of ad SDKs, lowercased: a foreground activity under one of them shows a
full-screen ad. Matched on the activity's class name from its start, never inside a word (an
app's ``DownloadActivity`` or ``ThreadActivity`` holds "adactivity")."""
AD_RID_WORDS = frozenset(
    {"startapp", "admob", "applovin", "unityads", "mopub", "vungle", "ironsource", "chartboost",
     "inmobi", "interstitial", "appwall"}
)
"""Words of a resource name (split at ``_`` and case changes) that name an ad SDK's view."""
AD_VIEW_TAGS = frozenset({"startapp"})
"""The whole label (normalised) an ad SDK's code gives its page-wide web view: StartApp's
interstitial (HomeCleaningGames, its activity not known to the pipeline). Only the whole label:
a page titled "AdMob Help Center" or "StartApp docs" is a page."""
AD_PAGE_SHARE = 0.6
"""An ad SDK's view whose box covers this much of the screen shows a full-screen ad."""


def _ad_activity(package: str, activity: str | None) -> bool:
    """The activity (``pkg/.Name``, ``pkg/full.Name`` or a bare class name) is an ad SDK's."""
    name = (activity or "").rpartition("/")[2]
    if name.startswith("."):
        name = package + name
    return name.lower().startswith(AD_ACTIVITIES)


def _full_screen_ad(
    candidates: Sequence[Candidate],
    screen: ScreenInfo,
    boxes: npt.NDArray[np.int32] | None = None,
) -> bool:
    """A full-screen ad (an interstitial): the foreground activity is an ad SDK's
    (:data:`AD_ACTIVITIES`: StartApp's ``AppWallActivity`` over HomeCleaningGames), or a box
    over :data:`AD_PAGE_SHARE` of the screen has a resource name of one
    (:data:`AD_RID_WORDS`) or is a web view whose whole label is an SDK's tag
    (:data:`AD_VIEW_TAGS`). Words within a box's text are no sign: a web view titled "AdMob
    Help Center" is a page. Its close sits in a top corner, where a page's own
    bar would be, and its junk (image URLs as labels) makes it look busy; an ad banner on a
    page (a small ``adView``) is no full-screen ad. ``boxes``: the candidates' boxes
    (``int32[N, 4]``) when the caller has them."""
    if _ad_activity(screen.package, screen.activity):
        return True
    if not candidates:
        return False
    most = AD_PAGE_SHARE * screen.size.width_px * screen.size.height_px
    # The boxes over that much of the screen, found in one pass over their array (a long page
    # has none, and hundreds of rows); areas in float64, exact up to 2**53.
    if boxes is None:
        boxes = boxes_array([c.box_px for c in candidates])
    for i in fastpath.big_boxes(boxes, most):
        c = candidates[i]
        if not _live(c):
            continue
        if c.kind == "web" and normalise_text(c.text) in AD_VIEW_TAGS:
            return True
        if "[" in c.text:
            for piece in c.text.split(" | "):
                if _is_rid(piece):
                    words = re.split(r"[\W_]+", _CAMEL.sub("_", piece[1:-1]).lower())
                    if AD_RID_WORDS.intersection(words):
                        return True
    return False


def _few_others(candidates: Sequence[Candidate], screen: ScreenSize) -> bool:
    """At most four labelled things to tap besides content that fills the screen (an ad's web
    view)."""
    big = _BIG_AREA * screen.width_px * screen.height_px
    others = 0
    for c in candidates:
        if c.text and _offers(c) and c.box_px.area < big:
            others += 1
            if others > _LONE_MAX_ACTIONABLE:
                return False
    return True


_PAIR_MAX_OFFERED = 40
"""An accept and a dismiss button side by side make a dialog only on a screen offering at most
this many things to tap."""


def _few_offered(
    candidates: Sequence[Candidate], flags: npt.NDArray[np.int64] | None = None
) -> bool:
    """At most :data:`_PAIR_MAX_OFFERED` candidates are offered (``flags``: their flag bits,
    ``int64[N]`` in their order, when at hand)."""
    bits = flags.tolist() if flags is not None else [None] * len(candidates)
    n = 0
    for c, b in zip(candidates, bits, strict=True):
        if _offers(c, b):
            n += 1
            if n > _PAIR_MAX_OFFERED:
                return False
    return True


_ANR_WAIT = "aerr_wait"
_CRASH_RESTART = "aerr_restart"
_ERROR_CLOSE = "aerr_close"
_ERROR_BUTTONS = (_ANR_WAIT, _CRASH_RESTART, _ERROR_CLOSE)
"""The buttons of Android's own app-error dialogs (``android:id/aerr_*`` of
``app_anr_dialog.xml`` and ``app_error_dialog.xml``; the tree keeps ids without their
``package:id/``): stable in every language, unlike their labels."""
_ERROR_PARTS = frozenset((*_ERROR_BUTTONS, "alertTitle"))
"""What an app-error dialog's box is made of: its title and its buttons."""


def system_error_dialog(
    candidates: Sequence[Candidate], resource_ids: Mapping[int, str]
) -> tuple[list[Operation], BoxPx | None]:
    """Android's dialog for an app that is not responding, or that crashed (``resource_ids``:
    tree element id -> resource id): its operation and its box (title and buttons), or
    ``([], None)`` when no such dialog is offered. Not responding: wait (its Close app would
    end the app, and with it the task). Crashed: open it again, else close the dialog
    (``open_app`` starts the app again). The dialog is modal: nothing outside its box takes a
    tap."""
    found: dict[str, Candidate] = {}
    parts: list[BoxPx] = []
    for c in candidates:
        rid = resource_ids.get(c.tree_id) if c.tree_id is not None else None
        if rid in _ERROR_BUTTONS and _offers(c):
            found.setdefault(rid, c)
        if rid in _ERROR_PARTS:
            parts.append(c.box_px)
    if _ANR_WAIT in found:
        op = Operation(
            kind=OperationKind.ACCEPT, candidate_id=found[_ANR_WAIT].id,
            reason="Android says an app is not responding: wait for it (closing the app "
            "ends it)",
        )
    elif _CRASH_RESTART in found:
        op = Operation(
            kind=OperationKind.ACCEPT, candidate_id=found[_CRASH_RESTART].id,
            reason="Android says an app crashed: open it again",
        )
    elif _ERROR_CLOSE in found:
        op = Operation(
            kind=OperationKind.DISMISS, candidate_id=found[_ERROR_CLOSE].id,
            reason="Android says an app crashed: close the dialog, then start the app again",
        )
    else:
        return [], None
    return [op], union_box(parts)


def recommend(
    candidates: Sequence[Candidate],
    screen: ScreenInfo,
    *,
    hints: str = "",
    norms: Sequence[str] | None = None,
    consistent: bool | None = None,
    drawing: bool = False,
    modal: bool = False,
    boxes: npt.NDArray[np.int32] | None = None,
    flags: npt.NDArray[np.int64] | None = None,
    locked: bool = False,
) -> list[Operation]:
    """Operations the screen makes obvious; ``hints`` are class and resource names, lowercased and
    space-separated in any order (``norms``: the candidates' texts through ``normalise_text``,
    when at hand). ``consistent`` is the observation's: when tree and pixels disagree (False)
    no dialog button is recommended, since the dialog may be gone from the screen.

    A dialog's buttons are recommended when something says "dialog" (its names, a compact
    screen, a dismiss and an accept button side by side). On a screen without a back arrow, a
    close, skip or no-thanks button is obvious on its own when at most four labelled things
    can be tapped besides content that fills the screen (a splash ad's "3 | 跳过"), or when it
    sits below the top bar while part of the page is covered (an ad panel slid over it). A
    message dialog with no button at all gets a DISMISS without a candidate: press back (off
    the pixels: a pop-up over a dimmed page, ``modal``, holding a few text lines alone). When a
    dismiss and an accept side by side alone say "dialog", only the buttons around that pair
    are its. A label ending in "?" is no button; "Deny anyway" comes after a plain dismiss.
    ``drawing``: the frame is one flat colour that is not black over a tree with things on it
    (a splash, a window animating in): WAIT comes first, before a dialog's button the pixels
    do not show yet (unless a loading screen already says wait). ``modal``: the pixels show a
    pop-up over a dimmed page (``FrameFlags.modal_box_px``): no splash, whatever few things it
    holds (a colour picker's title and wheel waits for the user, not the other way round).
    ``boxes`` (``int32[N, 4]``) and ``flags`` (``int64[N]``): the candidates' boxes and flag
    bits in their order, when the caller has them already. ``locked``: the tree shows the lock
    screen asking for the phone's PIN, password or pattern (``Tree.asks_to_unlock``), handed
    over as a captcha is."""
    ops: list[Operation] = []
    if norms is None:
        norms = normalise_texts([c.text for c in candidates])
    texts = " ".join(norms)
    if screen.secure:
        ops.append(
            Operation(
                kind=OperationKind.HAND_OVER,
                reason="the frame is black while the tree shows a screen: FLAG_SECURE, unless "
                "the display is off (wake it); the pixels cannot be checked, a person should "
                "take over",
            )
        )
    captcha = _captcha(candidates, texts)
    if captcha is not None:
        ops.append(
            Operation(kind=OperationKind.HAND_OVER, reason=f"a captcha is on screen ({captcha!r})")
        )
    if locked:
        ops.append(
            Operation(
                kind=OperationKind.HAND_OVER,
                reason="the lock screen asks for the phone's PIN, password or pattern: a person "
                "should unlock it",
            )
        )
    loading = _loading(candidates, screen.size, hints, texts)
    if drawing and loading is None:
        ops.insert(
            0,
            Operation(
                kind=OperationKind.WAIT,
                reason="the frame is one flat colour: the app is still drawing",
            ),
        )
    if loading is not None:
        ops.append(Operation(kind=OperationKind.WAIT, reason=f"loading screen ({loading!r})"))
    elif not drawing and not modal and _splash(candidates, screen.activity, hints):
        ops.append(
            Operation(
                kind=OperationKind.WAIT,
                reason="a splash screen: a picture and a few words, nothing to tap yet",
            )
        )
    elif not drawing and (web := _blank_web(candidates, screen.size)) is not None:
        ops.append(
            Operation(
                kind=OperationKind.WAIT,
                reason=f"a web view at {tuple(web.box_px)} shows nothing yet: its page is "
                "loading",
            )
        )
    if consistent is False:
        return ops  # the dialog the tree shows may be gone: its buttons are no safe bet
    buttons: list[tuple[Candidate, OperationKind, bool]] = []
    nav = False  # a back arrow: a page of its own, not a pop-up
    bar_nav = False  # one in the top bar (not a dialog's own "Back" button)
    named = _is_dialog(candidates, screen.size, hints)
    if flags is None:
        flags = flag_bits([c.flags for c in candidates])
    covered = bool((flags & _OCCLUDED).any())
    keyboard = screen.keyboard_px
    if covered and keyboard is not None:
        # What the on-screen keyboard covers is no pop-up over the page.
        covered = any(
            int(c.flags) & _OCCLUDED and not keyboard.contains(c.box_px.center)
            for c in candidates
        )
    # A long page is read only where part of it is covered: then a close / skip on the pop-up
    # over it is obvious (an OK and a Cancel side by side among forty things to tap are a
    # form's, not a dialog's).
    ad = _full_screen_ad(candidates, screen, boxes)
    read = (
        named or covered or ad or _few_others(candidates, screen.size)
        or _few_offered(candidates, flags)
    )
    for i in _worth_reading(candidates, norms) if read else ():
        c = candidates[i]
        if not _offers(c):
            continue
        kind, strong = button_kind(c.text)
        if kind is not None:
            buttons.append((c, kind, strong))
        elif not bar_nav and _is_nav(c) and not _system_key(c, screen.size):
            nav = True
            bar_nav = _is_bar_nav(c, screen.size)
    # A back arrow in the top bar, in the open (nothing covered), says a page of its own: its
    # Cancel and Save side by side are the page's (a settings page at a large font scale), not
    # a dialog's.
    pairs = (
        [] if named or (bar_nav and not covered)
        else _button_pairs([(c, k) for c, k, _ in buttons], screen.size)
    )
    dialog = named or bool(pairs)
    if pairs:
        # Only a pair says "dialog": its buttons are the dialog's, not every dismiss or accept
        # word on the page behind it (a game logo's "NOW" read as "NO").
        buttons = [b for b in buttons if any(r.contains(b[0].box_px.center) for r in pairs)]
    buttons.sort(key=lambda b: _revokes(b[0]))  # "Cancel" before "Deny anyway"
    below_bar = _TOP_BAR * screen.size.height_px
    for c, kind, strong in buttons:
        if dialog:
            reason = f"dialog or pop-up with the button {c.text!r}"
        elif not strong or kind is not OperationKind.DISMISS:
            continue
        elif nav:
            continue  # a page of its own: its close or skip leaves the page
        elif _few_others(candidates, screen.size):
            reason = f"a {c.text!r} button on a screen with little else to tap"
        elif ad:
            reason = f"a {c.text!r} button on a full-screen ad"
        elif covered and c.box_px.top >= below_bar:
            reason = f"a {c.text!r} button on a pop-up that covers part of the page"
        else:
            continue  # a page's own close (a browser's, a toolbar's) is no pop-up
        ops.append(Operation(kind=kind, candidate_id=c.id, reason=reason))
    busy: str | None = None  # a dialog of the tree says work is under way
    if (
        dialog
        and not any(map(_offers, candidates))
        and loading is None
        and any(_visible_pieces(c) for c in candidates if _live(c))
    ):
        if (busy := _progress(candidates, _PROGRESS_SAID)) is not None:
            # YouTube's "Processing | This may take a moment" beside its spinner: back would
            # cancel the work.
            ops.append(
                Operation(
                    kind=OperationKind.WAIT,
                    reason=f"a dialog without a button says work is under way ({busy!r}): back "
                    "would cancel it",
                )
            )
        elif _has_message_hint(hints):
            ops.append(
                Operation(
                    kind=OperationKind.DISMISS,
                    reason="a message dialog without a button: press back to dismiss it",
                )
            )
    if modal and not buttons and loading is None and busy is None and _pixel_message(candidates):
        if (busy := _progress(candidates)) is not None:
            ops.append(
                Operation(
                    kind=OperationKind.WAIT,
                    reason=f"a pop-up the pixels see says work is under way ({busy!r}): back "
                    "would cancel it",
                )
            )
        else:
            ops.append(
                Operation(
                    kind=OperationKind.DISMISS,
                    reason="a message on a pop-up the pixels see, without a button: press back "
                    "to dismiss it",
                )
            )
    return ops
