"""Recommended operations: the button vocabulary, and what real corpus screens get.

Corpus screens run tree-dominant with a pixel channel that decodes frames and never runs OCR, so
the module stays fast; ``recommend`` itself is pure Python, the same under both fast paths.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from perception import Perceiver, perceive
from perception.fusion.candidates import Candidate, IdAllocator, merge
from perception.fusion.crossval import TextBlock
from perception.fusion.screen import Operation, OperationKind, button_kind, recommend
from perception.pipeline import Observation
from perception.pixel import PixelReader
from perception.tree.write import dump as xml_dump, node
from perception.types import BoxPx, Channel, ElementFlag, TreeElement
from tests._candidates import INFO, SCREEN

DISMISS, ACCEPT, WAIT = OperationKind.DISMISS, OperationKind.ACCEPT, OperationKind.WAIT


@pytest.mark.parametrize(
    ("label", "kind"),
    [
        ("DISAGREE", DISMISS),
        ("DON'T AGREE", DISMISS),
        ("Don’t allow", DISMISS),
        ("Do not allow", DISMISS),
        ("AGREE", ACCEPT),
        ("Reject all", DISMISS),
        ("Accept all", ACCEPT),
        ("Done", ACCEPT),
        ("No, not now", DISMISS),
        ("NO THANKS", DISMISS),
        ("Cancel", DISMISS),
        ("Cancel order", None),
        ("Cancel subscription", None),
        ("Discontinue", None),
        ("Continue with Facebook", None),
        ("Allow only while using the app", ACCEPT),
        ("By signing up, you agree to the Terms of Service", None),
        ("不允许", DISMISS),
        ("暂不开启", DISMISS),
        ("暂不更新", DISMISS),
        ("拒绝", DISMISS),
        ("不同意", DISMISS),
        ("允许", ACCEPT),
        ("仅在使用中允许", ACCEPT),
        ("确定", ACCEPT),
        ("立即开启", None),
        ("去开启", None),
        ("3 | 跳过", DISMISS),
        ("跳过 5s", DISMISS),
        ("跳过广告", DISMISS),
        ("同意《用户许可协议》《QQ音乐隐私指引》", None),
        ("收不到验证码怎么办", None),
        ("×", DISMISS),
        ("[iv_close]", DISMISS),
        ("[b_close_hint]", DISMISS),
        ("[close_banner]", None),
        ("[btnTestTypeClose]", None),
        ("[home_drag_view_close]", None),
        ("[loading_panel]", None),
        ("Pair", ACCEPT),  # Bluetooth's pairing request (a held-out Android TV dump)
        ("OK | Cancel", None),
        ("No, continue", None),
        ("Einstellungen", None),
        ("Weiter lesen", None),
        ("Permitir acceso a la ubicación", None),
        ("계속 알림", None),
        ("許可を管理", None),
    ],
)
def test_button_vocabulary(label: str, kind: OperationKind | None) -> None:
    assert button_kind(label)[0] is kind


def test_close_and_skip_are_obvious_on_their_own_cancel_is_not() -> None:
    assert button_kind("3 | 跳过") == (DISMISS, True)
    assert button_kind("Skip ad") == (DISMISS, True)
    assert button_kind("No thanks") == (DISMISS, True)
    assert button_kind("Cancel") == (DISMISS, False)
    assert button_kind("Don't allow") == (DISMISS, False)


@pytest.mark.parametrize(
    ("label", "kind"),
    [
        ("Zulassen", ACCEPT),
        ("Nicht zulassen", DISMISS),
        ("Nur dieses Mal", ACCEPT),
        ("Bei Nutzung der App", ACCEPT),
        ("Weiter", ACCEPT),
        ("Abbrechen", DISMISS),
        ("SCHLIESSEN", DISMISS),  # "ß" folds to "ss"
        ("Autoriser", ACCEPT),
        ("Ne pas autoriser", DISMISS),
        ("Lorsque vous utilisez l’appli", ACCEPT),
        ("Uniquement cette fois-ci", ACCEPT),
        ("Continuer sans accepter", DISMISS),
        ("Tout refuser", DISMISS),
        ("Permitir", ACCEPT),
        ("No permitir", DISMISS),
        ("Solo esta vez", ACCEPT),
        ("Ahora no", DISMISS),
        ("Não permitir", DISMISS),
        ("Agora não", DISMISS),
        ("Consenti", ACCEPT),
        ("Non consentire", DISMISS),
        ("Non accetto", DISMISS),
        ("Разрешить", ACCEPT),
        ("Не согласен", DISMISS),
        ("Только в этот раз", ACCEPT),
        ("ОК", ACCEPT),  # Cyrillic letters
        ("許可", ACCEPT),
        ("許可しない", DISMISS),
        ("アプリの使用中のみ許可", ACCEPT),
        ("今回のみ", ACCEPT),
        ("今はしない", DISMISS),
        ("同意しない", DISMISS),
        ("同意する", ACCEPT),
        ("허용", ACCEPT),
        ("허용 안함", DISMISS),
        ("허용 안 함", DISMISS),
        ("앱 사용 중에만 허용", ACCEPT),
        ("이번만 허용", ACCEPT),
        ("거부", DISMISS),
        ("확인", ACCEPT),
        ("5 | 건너뛰기", DISMISS),
    ],
)
def test_button_vocabulary_in_other_languages(label: str, kind: OperationKind) -> None:
    assert button_kind(label)[0] is kind


def test_close_and_skip_are_strong_in_other_languages_cancel_is_not() -> None:
    strong = ("閉じる", "広告をスキップ", "닫기", "건너뛰기", "Überspringen", "Fermer", "Omitir")
    for label in strong:
        assert button_kind(label) == (DISMISS, True), label
    for label in ("キャンセル", "취소", "Abbrechen", "Annuler", "Cancelar", "Nicht zulassen"):
        assert button_kind(label) == (DISMISS, False), label


def test_no_negates_another_languages_phrase_not_an_english_one() -> None:
    assert button_kind("No acepto") == (DISMISS, False)
    assert button_kind("No, continue") == (None, False)  # as before: English "no" + "continue"
    assert button_kind("No, OK") == (None, False)
    assert button_kind("No thanks") == (DISMISS, True)
    assert button_kind("No") == (DISMISS, False)


# --- small screens ----------------------------------------------------------------------------

def _screen(items: Sequence[tuple[str, tuple[int, int, int, int], bool]]) -> list[Candidate]:
    """Candidates from (label, box, clickable) rows, as the tree channel hands them over."""
    elements = [
        TreeElement(
            id=i,
            kind="btn" if clickable else "text",
            text=text,
            box_px=BoxPx(*box),
            flags=ElementFlag.CLICKABLE if clickable else ElementFlag.NONE,
        )
        for i, (text, box, clickable) in enumerate(items)
    ]
    drafts = merge(elements=elements, tree_confidence=0.9, screen=SCREEN)
    return IdAllocator().assign(drafts, page="p", screen=SCREEN)


def _said(candidates: Sequence[Candidate], hints: str = "") -> list[tuple[str, str | None]]:
    texts = {c.id: c.text for c in candidates}
    ops = recommend(candidates, INFO, hints=hints)
    return [(op.kind.value, texts.get(op.candidate_id)) for op in ops]


@pytest.mark.parametrize(
    ("question", "buttons"),
    [
        (
            "„Maps“ erlauben, auf den Standort dieses Geräts zuzugreifen?",
            ("Bei Nutzung der App", "Nur dieses Mal", "Nicht zulassen"),
        ),
        (
            "Autoriser Maps à accéder à la position de cet appareil ?",
            ("Lorsque vous utilisez l'appli", "Uniquement cette fois-ci", "Ne pas autoriser"),
        ),
        (
            "¿Permitir que Maps acceda a la ubicación de este dispositivo?",
            ("Mientras la app está en uso", "Solo esta vez", "No permitir"),
        ),
        (
            "このデバイスの位置情報へのアクセスを「マップ」に許可しますか？",
            ("アプリの使用中のみ許可", "今回のみ", "許可しない"),
        ),
        (
            "지도에서 이 기기의 위치에 액세스하도록 허용하시겠습니까?",
            ("앱 사용 중에만 허용", "이번만 허용", "허용 안함"),
        ),
    ],
    ids=["de", "fr", "es", "ja", "ko"],
)
def test_android_permission_dialog_in_other_languages(
    question: str, buttons: tuple[str, str, str]
) -> None:
    """Android 11+'s location sheet: while using the app, only this time, don't allow."""
    foreground, once, deny = buttons
    dialog = _screen(
        [
            (question, (80, 900, 1000, 1100), False),
            (foreground, (80, 1100, 1000, 1200), True),
            (once, (80, 1200, 1000, 1300), True),
            (deny, (80, 1300, 1000, 1400), True),
        ]
    )
    assert _said(dialog) == [("accept", foreground), ("accept", once), ("dismiss", deny)]


def test_a_short_page_with_a_back_arrow_is_no_dialog() -> None:
    """A settings page of its own (back arrow, title, a row, Cancel and Save side by side) fits
    in under 60% of the screen with five boxes: it was taken for a dialog, and "dismiss: Cancel"
    would have thrown the user's edits away."""
    page = [
        ("Navigate up", (0, 96, 168, 264), True),
        ("Notification settings", (200, 120, 1040, 240), False),
        ("Notification categories", (40, 400, 1040, 700), True),
        ("Cancel", (40, 800, 520, 1000), True),
        ("Save changes", (560, 800, 1040, 1000), True),
    ]
    assert _said(_screen(page)) == []
    # The same buttons without the back arrow are still a dialog's.
    assert _said(_screen(page[1:])) == [("dismiss", "Cancel")]


def test_a_count_beside_an_x_is_no_close_button() -> None:
    """A game's coin counter "x 37" was a strong dismiss: the countdown filter took the number
    and left "x"; a countdown with its unit ("X 5s") is still a close."""
    for label in ("x 37", "X 10", "x 2"):
        assert button_kind(label) == (None, False)
    assert button_kind("X 5s") == (DISMISS, True) and button_kind("x") == (DISMISS, True)


def test_a_pop_up_the_pixels_see_is_no_splash() -> None:
    """A colour picker read from the pixels alone (a title and the wheel, an image) looked like
    a splash screen: "wait" on a dialog that waits for the user."""
    picker = _pixels(
        ("text", "Pick a color", (150, 520, 700, 600)), ("img", "", (100, 620, 500, 1000))
    )
    assert [op.kind for op in recommend(picker, INFO)] == [OperationKind.WAIT]
    assert recommend(picker, INFO, modal=True) == []


def test_a_dialogs_own_back_button_is_no_page_of_its_own() -> None:
    """Only a back arrow in the top bar says a page: a dialog's "Back" beside its "OK" lost the
    dialog's operations when any "Back" did."""
    dialog = [
        ("Discard this draft?", (150, 950, 930, 1050), False),
        ("Back", (450, 1350, 680, 1470), True),
        ("OK", (700, 1350, 930, 1470), True),
    ]
    assert _said(_screen(dialog)) == [("accept", "OK")]


def test_a_korean_settings_list_says_nothing_its_pop_up_does() -> None:
    """Labels are read whole: a row that holds "계속" (continue) or "허용" (allow) is no button."""
    rows = ["알림", "계속 알림", "허용된 앱", "확인 요청", "동의 내역", "완료된 다운로드", "소리"]
    rows += ["진동", "방해 금지", "잠금 화면", "배지", "고급 설정"]
    page = [(label, (0, 200 + 170 * i, 1080, 370 + 170 * i), True) for i, label in enumerate(rows)]
    assert _said(_screen(page)) == []
    pop_up = [("취소", (100, 1500, 530, 1620), True), ("계속", (550, 1500, 980, 1620), True)]
    assert _said(_screen(page + pop_up), hints="dialog") == [
        ("dismiss", "취소"),
        ("accept", "계속"),
    ]


# --- real screens -----------------------------------------------------------------------------


class _FramesOnly:
    """The pixel channel without OCR: frames are decoded (the cheap checks run), nothing read."""

    def __init__(self, reader: PixelReader) -> None:
        self.reader = reader

    def load(self, frame: object) -> object:
        return self.reader.frame(frame)  # type: ignore[arg-type]

    def full(self, frame: object) -> Sequence[TextBlock]:
        return []

    def regions(self, frame: object, regions: Sequence[BoxPx]) -> Sequence[TextBlock]:
        return []


@pytest.fixture
def observe(corpus_dir: Path, reader: PixelReader) -> object:
    def run(step: str, xml: bytes | None = None) -> Observation:
        d = corpus_dir / step
        frame = next(p for p in sorted(d.iterdir()) if p.stem == "screen" and p.suffix != ".xml")
        dump = xml if xml is not None else (d / "screen.xml").read_bytes()
        return Perceiver(pixels=_FramesOnly(reader)).perceive(dump, frame)  # type: ignore[arg-type]

    return run


def _ops(obs: Observation) -> list[tuple[str, str | None]]:
    """(kind, the button's text) for each operation."""
    out = []
    for op in obs.operations:
        text = obs.candidate(op.candidate_id).text if op.candidate_id is not None else None
        out.append((op.kind.value, text))
    return out


def _kinds(obs: Observation) -> set[OperationKind]:
    return {op.kind for op in obs.operations}


def test_done_accepts_a_dialog(observe: object) -> None:
    obs = observe("llamatouch/trace_7/step_010")  # type: ignore[operator]
    assert _ops(obs) == [("accept", "Done")]  # "Timeline data deleted" / Done


@pytest.mark.parametrize(
    ("labels", "expected"),
    [
        (("DISAGREE", "AGREE"), [("dismiss", "DISAGREE"), ("accept", "AGREE")]),
        (("DON'T AGREE", "AGREE"), [("dismiss", "DON'T AGREE"), ("accept", "AGREE")]),
        (("不允许", "允许"), [("dismiss", "不允许"), ("accept", "允许")]),
        (("暂不开启", "立即开启"), [("dismiss", "暂不开启")]),
        (("Reject all", "Accept all"), [("dismiss", "Reject all"), ("accept", "Accept all")]),
        (("Cancel order", "Keep"), []),
        (("Exit", "Done"), [("accept", "Done")]),
    ],
)
def test_dialog_buttons_on_a_real_dialog(
    observe: object, corpus_dir: Path, labels: tuple[str, str], expected: list[object]
) -> None:
    """agram's NO / YES dialog with other labels (the reviewer's repro)."""
    step = "fdroidutg_apps/us.achromaticmetaphor.agram/step_008"
    src = (corpus_dir / step / "screen.xml").read_text(encoding="utf-8")
    no, yes = labels
    xml = src.replace('text="NO"', f'text="{no}"').replace('text="YES"', f'text="{yes}"')
    assert _ops(observe(step, xml.encode())) == expected  # type: ignore[operator]


@pytest.mark.parametrize(
    ("deny", "allow"),
    [
        ("許可しない", "許可"),
        ("허용 안함", "허용"),
        ("Nicht zulassen", "Zulassen"),
        ("Ne pas autoriser", "Autoriser"),
        ("No permitir", "Permitir"),
        ("Não permitir", "Permitir"),
        ("Non consentire", "Consenti"),
        ("Не разрешать", "Разрешить"),
    ],
)
def test_allow_and_deny_on_a_real_dialog_in_other_languages(
    observe: object, corpus_dir: Path, deny: str, allow: str
) -> None:
    """agram's NO / YES dialog as Android 13's notification question words its buttons."""
    step = "fdroidutg_apps/us.achromaticmetaphor.agram/step_008"
    src = (corpus_dir / step / "screen.xml").read_text(encoding="utf-8")
    xml = src.replace('text="NO"', f'text="{deny}"').replace('text="YES"', f'text="{allow}"')
    expected = [("dismiss", deny), ("accept", allow)]
    assert _ops(observe(step, xml.encode())) == expected  # type: ignore[operator]


@pytest.mark.parametrize(
    "step",
    [
        "droidbot_yelp/yelp_2017/step_001",  # "By signing up, you agree…" is a sentence
        "droidbot_yelp/yelp_2017/step_002",
        "droidbot_yelp/yelp_2017/step_004",  # [loading_panel] is a resource name, list loaded
        "fdroidutg_weibo/weibo_2023-10-24/step_033",  # "Loading...." title over a loaded page
    ],
)
def test_no_wait_on_a_loaded_screen(observe: object, step: str) -> None:
    assert OperationKind.WAIT not in _kinds(observe(step))  # type: ignore[operator]


@pytest.mark.parametrize(
    "step",
    [
        "droidbot_admob_apps/com.heaven.assistant/step_007",  # a progress dialog alone
        "droidbot_admob_apps/andrei.brusentcov.eyecheck.free/step_000",  # splash, "Loading ..."
    ],
)
def test_wait_on_a_loading_screen(observe: object, step: str) -> None:
    assert _kinds(observe(step)) == {OperationKind.WAIT}  # type: ignore[operator]


def test_an_sms_code_is_no_captcha_a_recaptcha_is(observe: object) -> None:
    faq = observe("fdroidutg_weibo/weibo_2023-10-24/step_004")  # type: ignore[operator]
    assert OperationKind.HAND_OVER not in _kinds(faq)  # "收不到验证码怎么办"
    sorry = observe("fdroidutg_apps/mattecarra.accapp/step_001")  # type: ignore[operator]
    assert OperationKind.HAND_OVER in _kinds(sorry)  # Google's reCAPTCHA page


def test_no_dialog_buttons_when_tree_and_pixels_disagree(observe: object) -> None:
    obs = observe("_desync/fdroidutg_apps__org.ligi.ajsha__step_007")  # type: ignore[operator]
    assert obs.consistent is False and obs.screen is not None
    kinds = [op.kind for op in recommend(obs.candidates, obs.screen)]
    assert DISMISS in kinds and ACCEPT in kinds  # what the tree's CANCEL / OK dialog offers
    dropped = recommend(obs.candidates, obs.screen, consistent=False)
    assert not {DISMISS, ACCEPT} & {op.kind for op in dropped}


def test_skip_on_a_full_screen_splash_ad(observe: object) -> None:
    obs = observe("droidbotexp_qqmusic/qqmusic_2021-12-06/step_002")  # type: ignore[operator]
    assert _ops(obs) == [("dismiss", "3 跳过")]


@pytest.mark.parametrize("label", ["閉じる", "広告をスキップ", "닫기", "Schließen", "Omitir"])
def test_close_on_a_full_screen_ad_in_other_languages(
    observe: object, corpus_dir: Path, label: str
) -> None:
    """QQ Music's splash ad with its "跳过" (skip) in another language: obvious on its own."""
    step = "droidbotexp_qqmusic/qqmusic_2021-12-06/step_002"
    src = (corpus_dir / step / "screen.xml").read_text(encoding="utf-8")
    xml = src.replace('text="跳过"', f'text="{label}"')
    assert _ops(observe(step, xml.encode())) == [("dismiss", f"3 {label}")]  # type: ignore[operator]


def test_ok_cancel_pop_up_over_a_full_screen_game(observe: object) -> None:
    obs = observe("fdroidutg_apps/com.uberspot.a2048/step_003")  # type: ignore[operator]
    assert sorted(_ops(obs)) == [("accept", "OK"), ("dismiss", "Cancel")]


@pytest.mark.parametrize(
    "step",
    [
        "fdroidutg_weibo/weibo_2023-10-24/step_034",  # a web view's own "Close"
        "testcube_transsion/chatter_2025-01-25/step_009",  # a card's OK under a drawer
        "adb_oneoffs/unicom_home",  # [home_drag_view_close] of a floating widget
        "llamatouch/trace_18/step_001",  # the X app on a home screen
    ],
)
def test_no_dialog_operation_on_an_ordinary_page(observe: object, step: str) -> None:
    assert not {DISMISS, ACCEPT} & _kinds(observe(step))  # type: ignore[operator]


@pytest.mark.parametrize(
    "step",
    [
        "fdroidutg_apps/anupam.acrylic/step_010",  # an AlertDialog with a message and no button
        # the system's app chooser: "No apps can perform this action." on a sheet
        "fdroidutg_apps/com.brosmike.airpushdetector/step_003",
    ],
)
def test_message_dialog_without_a_button_says_press_back(observe: object, step: str) -> None:
    obs = observe(step)  # type: ignore[operator]
    assert [(op.kind, op.candidate_id) for op in obs.operations] == [(DISMISS, None)]
    op: Operation = obs.operations[0]
    assert "back" in op.reason
    assert json.loads(obs.to_prompt())["ops"] == [["dismiss"]]


def _progress_dialog(*lines: str, spinner: bool = True, message_id: bool = False) -> bytes:
    """A dump holding a small dialog window alone (YouTube's "Processing" while a video
    uploads): a spinner and the lines under it, nothing to tap."""
    from _xml import dump, node

    kids = [node((303, 532, 415, 644), cls="android.widget.ProgressBar")] if spinner else []
    kids += [
        node((200, 668 + 50 * i, 520, 710 + 50 * i), cls="android.widget.TextView", text=line,
             resource_id="android:id/message" if message_id else "com.app:id/label")
        for i, line in enumerate(lines)
    ]
    return dump(node((180, 484, 539, 795), node((180, 484, 539, 795), *kids,
                                                cls="android.widget.LinearLayout")))


def test_a_dialog_saying_work_is_under_way_says_wait_not_back() -> None:
    """Back on YouTube's "Processing | This may take a moment" would cancel the upload."""
    from perception import perceive

    obs = perceive(_progress_dialog("Processing", "This may take a moment"))
    assert [(op.kind, op.candidate_id) for op in obs.operations] == [(WAIT, None)]
    assert "Processing" in obs.operations[0].reason
    assert json.loads(obs.to_prompt())["ops"] == [["wait"]]
    # Chinese, and a message dialog's own id: still a wait
    obs = perceive(_progress_dialog("正在上传视频", message_id=True))
    assert [op.kind for op in obs.operations] == [WAIT]


def _navigation_bar() -> str:
    """The system navigation bar's window at the bottom of a 1080x2400 screen, as a
    multi-window dump holds it: 概览 (overview), 主屏幕 (home), 返回 (back)."""
    from _xml import node

    sysui = "com.android.systemui"
    return node(
        (0, 2270, 1080, 2400),
        *(node((x, 2270, x + 165, 2400), content_desc=label, clickable=True, package=sysui)
          for x, label in ((212, "概览"), (457, "主屏幕"), (702, "返回"))),
        package=sysui,
    )


def _consent_dialog(*, nav_bar: bool) -> bytes:
    """Bilibili's first start, drawn again: a consent dialog over the page, its two buttons
    stacked ("同意并使用" under "不同意并退出"), and, in a multi-window dump, the system
    navigation bar with its 返回 (back) key."""
    from _xml import dump, node

    dialog = node(
        (0, 0, 1080, 2270),
        node((210, 705, 870, 779), cls="android.widget.TextView", text="用户协议与隐私政策提示"),
        node((210, 823, 870, 1108), cls="android.widget.TextView",
             text="您需要同意用户协议与隐私政策后才能使用本应用。"),
        node((423, 1369, 657, 1477), cls="android.widget.TextView", text="不同意并退出",
             clickable=True),
        node((210, 1477, 870, 1586), cls="android.widget.TextView", text="同意并使用",
             clickable=True),
        package="tv.example",
    )
    return dump(dialog, _navigation_bar()) if nav_bar else dump(dialog)


@pytest.mark.parametrize("nav_bar", [False, True])
def test_a_consent_dialogs_stacked_buttons_are_read(nav_bar: bool) -> None:
    """"同意并使用" accepts and "不同意并退出" dismisses (a held-out Bilibili dump got neither),
    with the system bar in the dump as without it."""
    from perception import perceive

    obs = perceive(_consent_dialog(nav_bar=nav_bar))
    got = [(op.kind, obs.candidate(op.candidate_id).text) for op in obs.operations]
    assert got == [(DISMISS, "不同意并退出"), (ACCEPT, "同意并使用")]


def test_a_splash_ads_skip_is_offered_beside_the_navigation_bar() -> None:
    """A splash ad's lone "跳过 3" is obvious on a screen with little else to tap; a dump that
    also holds the system navigation bar adds its 返回 key, which is no back arrow of the
    page's (that would make the ad a page of its own, whose close leaves it)."""
    from _xml import dump, node

    from perception import perceive

    ad = node(
        (0, 0, 1080, 2270),
        node((0, 0, 1080, 2000), cls="android.widget.ImageView", content_desc="广告"),
        node((860, 120, 1040, 200), text="跳过 3", clickable=True),
        package="com.example.news",
    )
    for windows in ((ad,), (ad, _navigation_bar())):
        obs = perceive(dump(*windows))
        got = [(op.kind, obs.candidate(op.candidate_id).text) for op in obs.operations
               if op.candidate_id is not None]
        assert got == [(DISMISS, "跳过 3")], len(windows)


def test_a_back_arrow_in_the_top_bar_still_makes_a_page() -> None:
    """A page's own back arrow at its top (not the system bar's key) keeps its Cancel and Save
    side by side the page's: no dialog operation."""
    from _xml import dump, node

    page = node(
        (0, 0, 1080, 2400),
        node((0, 80, 160, 220), content_desc="返回", clickable=True),
        node((100, 600, 500, 700), text="取消", clickable=True, cls="android.widget.Button"),
        node((580, 600, 980, 700), text="保存", clickable=True, cls="android.widget.Button"),
        *(node((0, 800 + 120 * k, 1080, 900 + 120 * k), text=f"第 {k} 行", clickable=True)
          for k in range(12)),
    )
    from perception import perceive

    assert not {DISMISS, ACCEPT} & {op.kind for op in perceive(dump(page)).operations}


def test_a_message_cut_short_is_no_progress() -> None:
    """The cluster stage cuts a long message with an ellipsis: that is no "…" of work under
    way. A message dialog says press back; one with no message id, nothing."""
    from perception import perceive

    long = "There was a problem communicating with Google servers. Try again later."
    obs = perceive(_progress_dialog(long, spinner=False, message_id=True))
    assert obs.candidates[0].text.endswith("…")
    assert [(op.kind, op.candidate_id) for op in obs.operations] == [(DISMISS, None)]
    assert perceive(_progress_dialog(long, spinner=False)).operations == ()


def test_a_dialog_whose_control_the_dump_lost_gets_nothing(observe: object) -> None:
    obs = observe("fdroidutg_apps/anupam.acrylic/step_003")  # type: ignore[operator]
    assert obs.operations == ()  # "Brush size" with a slider: no message, no guess


# ----- Android's own app-error dialogs ------------------------------------------------------


def _error_dialog(title: str, buttons: Sequence[tuple[str, str]]) -> bytes:
    """A screen of an app (its Send at the top) under Android's not-responding or crash dialog,
    a window of the "android" package with the ``android:id/aerr_*`` buttons."""
    from _xml import dump, node

    app = node((0, 0, 1080, 2400), node((40, 200, 1040, 330), cls="android.widget.Button",
                                        text="Send", clickable=True, package="com.example.chat"),
               package="com.example.chat")
    kids = [node((100, 900, 980, 1000), cls="android.widget.TextView", text=title,
                 resource_id="android:id/alertTitle", package="android")]
    kids += [
        node((100, 1020 + i * 110, 980, 1120 + i * 110), cls="android.widget.Button", text=text,
             resource_id=f"android:id/{rid}", clickable=True, package="android")
        for i, (rid, text) in enumerate(buttons)
    ]
    dialog = node((60, 850, 1020, 1400), node((60, 850, 1020, 1400), *kids,
                                              cls="android.widget.LinearLayout", package="android"),
                  cls="android.widget.FrameLayout", package="android")
    return dump(app, dialog)


@pytest.mark.parametrize(
    ("title", "buttons", "op", "label"),
    [
        # not responding: wait (Close app would end the app, and the task with it)
        ("Chat isn't responding", [("aerr_close", "Close app"), ("aerr_wait", "Wait")],
         "accept", "Wait"),
        ("聊天 没有响应", [("aerr_close", "关闭应用"), ("aerr_wait", "等待")], "accept", "等待"),
        # crashed: open it again, else close the dialog
        ("Chat keeps stopping", [("aerr_restart", "Open app again"), ("aerr_app_info", "App info"),
                                 ("aerr_close", "Close app")], "accept", "Open app again"),
        ("Chat has stopped", [("aerr_close", "Close app")], "dismiss", "Close app"),
    ],
)
def test_androids_error_dialogs_are_recognised_by_their_ids(
    title: str, buttons: Sequence[tuple[str, str]], op: str, label: str
) -> None:
    from perception import perceive

    obs = perceive(_error_dialog(title, buttons))
    assert [(o.kind.value, obs.candidate(o.candidate_id).text) for o in obs.operations
            if o.candidate_id is not None] == [(op, label)]
    assert json.loads(obs.to_prompt())["ops"] == [[op, obs.operations[0].candidate_id]]
    # The dialog is modal: the app's Send under it is not offered while it is up.
    shown = {c.text for c in obs.candidates if c.shown}
    assert "Send" not in shown and label in shown and title in obs.to_prompt()


def _pixels(*rows: tuple[str, str, tuple[int, int, int, int]]) -> list[Candidate]:
    """Pixel-only candidates from (kind, text, box) rows: what a screen the tree left empty
    offers."""
    return [
        Candidate(
            id=i + 1, source=Channel.PIXEL, kind=kind, text=text, box_px=BoxPx(*box),
            confidence=0.7, flags=ElementFlag.NONE if kind == "text" else ElementFlag.CLICKABLE,
            origin="ocr" if kind == "text" else "anchor",
        )
        for i, (kind, text, box) in enumerate(rows)
    ]


def test_a_splash_screen_says_wait() -> None:
    """QQ Music starting: an empty dump, a logo and two lines of text on the pixels."""
    logo = ("img", "", (240, 490, 480, 690))
    splash = _pixels(logo, ("text", "QQ音乐", (240, 750, 480, 800)),
                     ("text", "让生活充满音乐", (240, 820, 480, 850)))
    assert _said(splash) == [("wait", None)]
    # Something to tap, a page of text, or a tree row listed: no splash.
    assert _said(_pixels(logo, ("btn", "Start", (200, 1000, 520, 1080)))) == []
    lines = [("text", f"line {k}", (40, 100 + 60 * k, 680, 150 + 60 * k)) for k in range(4)]
    assert _said(_pixels(logo, *lines)) == []
    assert _said(_pixels(*lines[:2])) == []  # no picture: a page that has little on it
    for asks in ("Tap anywhere to continue", "点击进入", "Skip"):
        said = _said(_pixels(logo, ("text", asks, (240, 750, 480, 800))))
        assert ("wait", None) not in said, asks  # ("Skip" is a dismiss of its own)
    row = _screen([("Settings", (0, 100, 720, 200), True)])[0]
    assert _said([row, *splash]) == []


# ----- the phone's lock screen ---------------------------------------------------------------


def _bouncer(field_id: str, package: str = "com.android.systemui") -> bytes:
    """A lock screen's PIN bouncer as the system UI dumps it: the field, a keypad, the
    emergency call button (our own screen, after AOSP's KeyguardPINView)."""
    keys = [
        node((90 + 300 * (k % 3), 1200 + 200 * (k // 3), 390 + 300 * (k % 3),
              1400 + 200 * (k // 3)), text=str(k + 1), cls="android.widget.TextView",
             resource_id=f"{package}:id/key{k + 1}", clickable=True, package=package)
        for k in range(9)
    ]
    return xml_dump(node(
        (0, 0, 1080, 2400),
        node((0, 400, 1080, 500), text="Enter PIN", cls="android.widget.TextView",
             resource_id=f"{package}:id/keyguard_message_area", package=package),
        node((240, 700, 840, 850), cls="android.widget.EditText", password=True,
             resource_id=f"{package}:id/{field_id}", clickable=True, package=package),
        *keys,
        node((340, 2100, 740, 2220), text="Emergency call", cls="android.widget.Button",
             resource_id=f"{package}:id/emergency_call_button", clickable=True, package=package),
        package=package,
    ))


@pytest.mark.parametrize("field_id", ["pinEntry", "passwordEntry"])
def test_a_lock_screen_asking_for_the_pin_hands_over(field_id: str) -> None:
    obs = perceive(xml=_bouncer(field_id))
    assert [op.kind for op in obs.operations] == [OperationKind.HAND_OVER]
    assert "lock screen" in obs.operations[0].reason
    assert json.loads(obs.to_prompt())["ops"] == [["hand_over"]]


def test_a_bouncer_locked_out_after_wrong_tries_hands_over() -> None:
    """The bouncer's container holding only its lockout message (MIUI's, after wrong PINs):
    it asks again in a while, and only a person knows the PIN."""
    ui = "com.android.systemui"
    obs = perceive(xml=xml_dump(node(
        (0, 0, 1080, 2400),
        node((0, 0, 1080, 2400),
             node((244, 720, 836, 806), text="This device is locked", package=ui,
                  resource_id=f"{ui}:id/phone_locked_textview", cls="android.widget.TextView"),
             node((308, 814, 772, 873), text="Try again in 21 seconds", package=ui,
                  resource_id=f"{ui}:id/phone_locked_timeout_id", cls="android.widget.TextView"),
             node((55, 2089, 297, 2221), text="EMERGENCY", cls="android.widget.Button",
                  resource_id=f"{ui}:id/emergencyCallButton", clickable=True, package=ui),
             resource_id=f"{ui}:id/keyguard_security_container", package=ui),
        package=ui,
    )))
    assert [op.kind for op in obs.operations] == [OperationKind.HAND_OVER]


def test_an_apps_own_pin_field_is_no_lock_screen() -> None:
    obs = perceive(xml=_bouncer("pinEntry", package="com.example.bank"))
    assert OperationKind.HAND_OVER not in _kinds(obs)


def test_a_bouncer_off_the_screen_asks_for_nothing() -> None:
    """The bouncer's views left in the dump while it is slid away below the screen."""
    xml = _bouncer("pinEntry").replace(
        b'bounds="[240,700][840,850]"', b'bounds="[240,2500][840,2650]"'
    )
    assert OperationKind.HAND_OVER not in _kinds(perceive(xml=xml))


def test_a_lock_screen_without_a_bouncer_is_not_handed_over() -> None:
    """A swipe lock screen (the clock, the notifications): nothing asks for a credential
    (the agent opens it with ``wm dismiss-keyguard``)."""
    ui = "com.android.systemui"
    obs = perceive(xml=xml_dump(node(
        (0, 0, 1080, 2400),
        node((63, 194, 496, 451), text="13:23", resource_id=f"{ui}:id/keyguard_clock",
             package=ui),
        node((36, 2262, 144, 2370), content_desc="Wallet", resource_id=f"{ui}:id/end_button",
             clickable=True, package=ui),
        package=ui,
    )))
    assert OperationKind.HAND_OVER not in _kinds(obs)


def _flutter_dialog(*, barrier_last: bool) -> bytes:
    """A Flutter dialog (every node a ``View``, no dialog class or id anywhere): its card with a
    question and two buttons, and the modal barrier, "Dismiss", listed after the route (as
    Flutter sorts it) or around it (older Flutter)."""
    from _xml import dump, node

    view, full = "android.view.View", (0, 0, 1080, 2337)
    card = node(
        (105, 885, 975, 1588),
        node((168, 948, 912, 1032), content_desc="Confirm rebirth?", cls=view, focusable=True),
        node((549, 1399, 717, 1525), content_desc="CANCEL", cls="android.widget.Button",
             clickable=True),
        node((738, 1399, 912, 1525), content_desc="REBIRTH", cls="android.widget.Button",
             clickable=True),
        cls=view,
    )
    if barrier_last:
        page = node(full, node(full, card, cls=view),
                    node(full, content_desc="Dismiss", cls=view, clickable=True), cls=view)
    else:
        page = node(full, node(full, card, cls=view), content_desc="Dismiss", cls=view,
                    clickable=True)
    return dump(node((0, 0, 1080, 2400), page, package="com.example.game"))


@pytest.mark.parametrize("barrier_last", [True, False])
def test_a_flutter_dialog_over_its_barrier_is_a_dialog(barrier_last: bool) -> None:
    """Nothing in a Flutter dump says "dialog"; the barrier that closes one at a tap outside it
    does: its CANCEL dismisses, and so does the barrier, tapped outside the card (a held-out
    game's "Confirm Rebirth?" and an overlay-permission prompt got no operation)."""
    from perception import perceive

    obs = perceive(_flutter_dialog(barrier_last=barrier_last))
    got = sorted(
        (op.kind.value, obs.candidate(op.candidate_id).text) for op in obs.operations
        if op.candidate_id is not None
    )
    assert got == [("dismiss", "CANCEL"), ("dismiss", "Dismiss")]
    barrier = next(c for c in obs.candidates if c.text == "Dismiss")
    assert not BoxPx(105, 885, 975, 1588).contains(barrier.box_px.center)
