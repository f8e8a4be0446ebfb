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
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.fusion.candidates import Candidate, Draft
from perception.fusion.crossval import normalise_text
from perception.fusion.table import boxes_array, flag_bits
from perception.types import Channel, ElementFlag, ScreenSize

TOP_TEXTS = 8
_PIXEL = Channel.PIXEL
_OCCLUDED = int(ElementFlag.OCCLUDED)

DISMISS_WORDS = frozenset(
    {
        "close",
        "skip",
        "notnow",
        "nothanks",
        "later",
        "maybelater",
        "cancel",
        "dismiss",
        "gotit",
        "deny",
        "dontallow",
        "no",
        "x",
        "×",
        "✕",
        "关闭",
        "跳过",
        "取消",
        "我知道了",
        "以后再说",
        "暂不",
        "不同意",
        "拒绝",
        "稍后",
        "知道了",
    }
)
ACCEPT_WORDS = frozenset(
    {
        "allow",
        "ok",
        "okay",
        "accept",
        "agree",
        "iagree",
        "continue",
        "yes",
        "whileusingtheapp",
        "allowonlywhileusingtheapp",
        "onlythistime",
        "允许",
        "同意",
        "确定",
        "好",
        "好的",
        "同意并继续",
        "仅在使用中允许",
        "始终允许",
    }
)
LOADING_WORDS = (
    "loading",
    "pleasewait",
    "signingup",
    "signingin",
    "loggingin",
    "connecting",
    "加载中",
    "正在加载",
    "请稍候",
    "请稍等",
    "载入中",
)
CAPTCHA_WORDS = ("captcha", "verifyyouarehuman", "imnotarobot", "验证码", "人机验证", "滑动验证")
DIALOG_HINTS = ("dialog", "alerttitle", "permission", "popup", "button1", "button2")


@dataclass(frozen=True, slots=True, kw_only=True)
class ScreenInfo:
    package: str
    activity: str | None
    size: ScreenSize
    rotation: int
    secure: bool
    """The frame is black or uniform while the screen is on: FLAG_SECURE (or a blank capture)."""
    fingerprint: str
    top_texts: tuple[str, ...]


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
    """A dialog or pop-up offers a close / skip / cancel button: ``candidate_id`` names it."""
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


def _words(c: Candidate) -> list[str]:
    return [normalise_text(p) for p in c.text.split(" | ") if normalise_text(p)]


def _says(words: Sequence[str], vocabulary: frozenset[str]) -> bool:
    """A label says a word: exactly, or containing it when the word is long enough to be safe."""
    for w in words:
        if len(w) > 24:
            continue
        if w in vocabulary or any(len(v) >= 4 and v in w for v in vocabulary):
            return True
    return False


def _is_dialog(candidates: Sequence[Candidate], screen: ScreenSize, hints: str) -> bool:
    if any(h in hints for h in DIALOG_HINTS):
        return True
    if (flag_bits([c.flags for c in candidates]) & _OCCLUDED).any():
        return True
    live = []
    for c in candidates:
        b = c.box_px
        if b.right > b.left and b.bottom > b.top:
            live.append(b)
            if len(live) > 15:
                return False  # too much on screen for a dialog
    if not live:
        return False
    left = min(b.left for b in live)
    top = min(b.top for b in live)
    right = max(b.right for b in live)
    bottom = max(b.bottom for b in live)
    union = max(0, right - left) * max(0, bottom - top)
    return union < 0.6 * screen.width_px * screen.height_px


def recommend(
    candidates: Sequence[Candidate],
    screen: ScreenInfo,
    *,
    hints: str = "",
    norms: Sequence[str] | None = None,
) -> list[Operation]:
    """Operations the screen makes obvious; ``hints`` are class and resource names, lowercased and
    space-separated in any order (``norms``: the candidates' texts through ``normalise_text``,
    when at hand)."""
    ops: list[Operation] = []
    if norms is None:
        norms = list(map(normalise_text, [c.text for c in candidates]))
    texts = " ".join(norms)
    if screen.secure:
        ops.append(
            Operation(
                kind=OperationKind.HAND_OVER,
                reason="the frame is black while the screen is on (FLAG_SECURE): the pixels "
                "cannot be checked, a person should take over",
            )
        )
    if any(w in texts for w in CAPTCHA_WORDS):
        ops.append(Operation(kind=OperationKind.HAND_OVER, reason="a captcha is on screen"))
    loading = next((w for w in LOADING_WORDS if w in texts), None)
    if loading is None and "progressbar" in hints and len(candidates) <= 6:
        loading = "progress bar"
    if loading is not None:
        ops.append(Operation(kind=OperationKind.WAIT, reason=f"loading screen ({loading})"))
    if _is_dialog(candidates, screen.size, hints):
        for c in candidates:
            if c.occluded or c.disabled or not c.actionable:
                continue
            words = _words(c)
            if _says(words, DISMISS_WORDS):
                ops.append(
                    Operation(
                        kind=OperationKind.DISMISS,
                        candidate_id=c.id,
                        reason=f"dialog or pop-up with a {c.text!r} button",
                    )
                )
            elif _says(words, ACCEPT_WORDS):
                ops.append(
                    Operation(
                        kind=OperationKind.ACCEPT,
                        candidate_id=c.id,
                        reason=f"dialog or pop-up with a {c.text!r} button",
                    )
                )
    return ops
