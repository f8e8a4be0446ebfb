"""Recommended operations: the button vocabulary, and what real corpus screens get.

Corpus screens run tree-dominant with a pixel channel that decodes frames and never runs OCR, so
the module stays fast; ``recommend`` itself is pure Python, the same under both fast paths.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from perception import Perceiver
from perception.fusion.crossval import TextBlock
from perception.fusion.screen import Operation, OperationKind, button_kind, recommend
from perception.pipeline import Observation
from perception.pixel import PixelReader
from perception.types import BoxPx

DISMISS, ACCEPT = OperationKind.DISMISS, OperationKind.ACCEPT


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
        ("OK | Cancel", None),
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


@pytest.fixture(scope="module")
def reader() -> Iterator[PixelReader]:
    with PixelReader() as r:
        yield r


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
    assert _ops(obs) == [("dismiss", "3 | 跳过")]


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


def test_message_dialog_without_a_button_says_press_back(observe: object) -> None:
    obs = observe("fdroidutg_apps/anupam.acrylic/step_010")  # type: ignore[operator]
    assert [(op.kind, op.candidate_id) for op in obs.operations] == [(DISMISS, None)]
    op: Operation = obs.operations[0]
    assert "back" in op.reason
    assert json.loads(obs.to_prompt())["ops"] == [["dismiss"]]


def test_a_dialog_whose_control_the_dump_lost_gets_nothing(observe: object) -> None:
    obs = observe("fdroidutg_apps/anupam.acrylic/step_003")  # type: ignore[operator]
    assert obs.operations == ()  # "Brush size" with a slider: no message, no guess
