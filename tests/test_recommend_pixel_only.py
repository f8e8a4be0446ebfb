"""Recommended operations on pixel-only screens, and the prompt's "px" (audit 19, audC).

A Yes / No pair alone says "dialog": only the buttons around it are the dialog's, not a "NO"
OCR read out of the game logo behind it. A label ending in "?" is a title, no button; "Deny
anyway" (it revokes a permission) comes after a plain "Cancel". A pop-up the pixels see holding
a short message and no button gets "press back". Where every row is the pixels', ``px`` says
nothing and is left out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from perception import Observation, Perceiver
from perception.fusion.arbiter import ArbiterState
from perception.fusion.candidates import Candidate
from perception.fusion.screen import OperationKind, ScreenInfo, button_kind, recommend
from perception.pipeline import PixelChannel
from perception.pixel import PixelReader
from perception.tree.compress import iter_rows
from perception.types import BoxPx, Channel, ElementFlag, ScreenSize

SCREEN = ScreenSize(1080, 1920)
INFO = ScreenInfo(
    package="", activity=None, size=SCREEN, rotation=0, secure=False, fingerprint="f",
    top_texts=(),
)
Row = tuple[str, str, tuple[int, int, int, int]]


def _pixels(*rows: Row, source: Channel = Channel.PIXEL) -> list[Candidate]:
    """Candidates from (kind, text, box) rows, as the pixels offer them (OCR lines as text)."""
    return [
        Candidate(
            id=i + 1, source=source, kind=kind, text=text, box_px=BoxPx(*box), confidence=0.7,
            flags=ElementFlag.NONE if kind == "text" else ElementFlag.CLICKABLE,
            origin="ocr" if kind == "text" else "anchor",
        )
        for i, (kind, text, box) in enumerate(rows)
    ]


def _said(candidates: Sequence[Candidate], *, modal: bool = False) -> list[tuple[str, str | None]]:
    texts = {c.id: c.text for c in candidates}
    return [
        (op.kind.value, texts.get(op.candidate_id) if op.candidate_id else None)
        for op in recommend(candidates, INFO, modal=modal)
    ]


# --- drawn screens ----------------------------------------------------------------------------


def test_a_pair_dialogs_operations_are_the_pairs_not_the_page_behind() -> None:
    """A game's exit pop-up over its full-screen page (too much on screen for a compact
    dialog): OCR reads "NO" out of the logo "NOW" at the top; only the pair is the dialog's."""
    rows: list[Row] = [
        ("text", "CURE", (286, 136, 797, 270)),
        ("text", "NO", (399, 414, 547, 499)),
        ("text", "W", (547, 414, 672, 499)),
        ("text", "Are you sure to exit this game?", (221, 780, 959, 837)),
        ("btn", "Yes", (82, 904, 528, 1022)),
        ("btn", "No", (556, 904, 1002, 1022)),
        ("img", "", (388, 1090, 692, 1396)),
        ("text", "Mini", (288, 1584, 437, 1650)),
        ("text", "Games", (243, 1646, 464, 1703)),
        ("btn", "", (180, 1744, 354, 1776)),
    ]
    assert _said(_pixels(*rows)) == [("accept", "Yes"), ("dismiss", "No")]
    # A third button on the row under the pair is the dialog's too.
    later = _pixels(*rows, ("btn", "Later", (300, 1040, 780, 1150)))
    assert _said(later) == [("accept", "Yes"), ("dismiss", "No"), ("dismiss", "Later")]


def test_a_question_is_no_button() -> None:
    """A dialog's title "Close?" was its first dismiss, ahead of its own No and Yes."""
    for label in ("Close?", "Cancel?", "确定？", "OK ?"):
        assert button_kind(label) == (None, False), label
    assert button_kind("Close") == (OperationKind.DISMISS, True)
    dialog = _pixels(
        ("text", "Close?", (80, 453, 219, 504)),
        ("text", "Do you want to abort the test?", (82, 569, 562, 610)),
        ("btn", "No", (52, 676, 380, 770)),
        ("btn", "Yes", (386, 676, 714, 770)),
    )
    assert _said(dialog, modal=True) == [("dismiss", "No"), ("accept", "Yes")]


def test_cancel_is_ranked_above_deny_anyway() -> None:
    """Android's warning on denying an old app a permission: "Deny anyway" revokes it, so a
    plain "Cancel" comes first, wherever each lies (stacked buttons put it last)."""
    warning = _pixels(
        ("text", "This app was designed for an older", (144, 754, 900, 813)),
        ("text", "version of Android.", (144, 808, 600, 873)),
        ("text", "DENY ANYWAY", (645, 1000, 936, 1046)),
        ("text", "CANCEL", (756, 1080, 936, 1126)),
    )
    assert _said(warning, modal=True) == [("dismiss", "CANCEL"), ("dismiss", "DENY ANYWAY")]


def test_a_message_pop_up_without_a_button_says_press_back() -> None:
    """A pop-up the pixels see over a dimmed page holding a short message alone: back is the
    only move (the tree path has it from class names, which the pixels have none of)."""
    lines: list[Row] = [
        ("text", "Thanks for granting permission!", (142, 830, 835, 897)),
        ("text", "Please press save again.", (144, 894, 672, 951)),
    ]
    message = _pixels(*lines)
    assert _said(message, modal=True) == [("dismiss", None)]
    assert _said(message) == []  # no pop-up seen: a page with two lines on it
    assert _said(_pixels(("text", "没有应用可执行此操作", (230, 1581, 850, 1636))), modal=True) == [
        ("dismiss", None)
    ]
    # A chooser of paths, an icon, a button or a tree row on it: no message alone.
    chooser = _pixels(
        ("text", "/storage/emulated/0/ajsha", (100, 700, 900, 760)),
        ("text", "examples/", (100, 800, 400, 860)),
        ("text", "plugins/", (100, 900, 400, 960)),
    )
    assert _said(chooser, modal=True) == []
    extras: list[Row] = [("icon", "", (100, 700, 160, 760)), ("btn", "", (600, 1000, 900, 1100))]
    for extra in extras:
        assert ("dismiss", None) not in _said(_pixels(*lines, extra), modal=True)
    tree_row = _pixels(("text", "Settings", (0, 100, 720, 200)), source=Channel.TREE)[0]
    assert _said([tree_row, *message], modal=True) == []
    many: list[Row] = [
        ("text", f"line number {k} of a long text", (40, 400 + 60 * k, 900, 450 + 60 * k))
        for k in range(9)
    ]
    assert _said(_pixels(*many), modal=True) == []


def _observation(candidates: Sequence[Candidate]) -> Observation:
    return Observation(
        state=ArbiterState.PIXEL, tree_confidence=0.0, pixel_confidence=0.75, consistent=None,
        screen=INFO, candidates=tuple(candidates),
    )


def test_px_marks_the_pixels_rows_only_beside_the_trees() -> None:
    pixel = _pixels(
        ("text", "Delete this note?", (100, 700, 900, 760)),
        ("btn", "Cancel", (100, 900, 500, 1000)),
        ("switch", "Wi-Fi", (800, 1100, 1000, 1200)),
    )
    rows = list(iter_rows(json.loads(_observation(pixel).to_prompt())))
    assert rows and not any("px" in r.flags for r in rows)
    tree = _pixels(("btn", "Settings", (0, 100, 720, 200)), source=Channel.TREE)[0]
    mixed = [tree, *(replace(c, id=c.id + 1) for c in pixel)]
    flags = {r.label: r.flags for r in iter_rows(json.loads(_observation(mixed).to_prompt()))}
    assert "px" in flags["Cancel"] and "px" in flags["Wi-Fi"] and "px" not in flags["Settings"]


# --- real screens, pixel-only ----------------------------------------------------------------


@pytest.fixture(scope="module")
def pixel_only(corpus_dir: Path, reader: PixelReader) -> Iterator[object]:
    perceiver = Perceiver(pixels=PixelChannel(reader))

    def run(step: str) -> list[tuple[str, str | None]]:
        d = corpus_dir / step
        frame = next(p for p in sorted(d.iterdir()) if p.stem == "screen" and p.suffix != ".xml")
        perceiver.reset()
        obs = perceiver.perceive(frame=frame.read_bytes())
        assert obs.state is ArbiterState.PIXEL
        assert "px" not in {w for r in iter_rows(json.loads(obs.to_prompt())) for w in r.flags}
        return [
            (o.kind.value, obs.candidate(o.candidate_id).text if o.candidate_id else None)
            for o in obs.operations
        ]

    yield run


@pytest.mark.parametrize(
    ("step", "ops"),
    [
        # Exit pop-up over the game: the logo's "NOW" read as "NO" was the first dismiss.
        (
            "droidbot_admob_apps/com.tp.android.curezombie2nd/step_002",
            [("accept", "Yes"), ("dismiss", "No")],
        ),
        # The title "Close?" was the first dismiss.
        (
            "droidbot_admob_apps/andrei.brusentcov.eyecheck.free/step_006",
            [("dismiss", "No"), ("accept", "Yes")],
        ),
        # Message pop-ups without a button: press back.
        ("fdroidutg_apps/anupam.acrylic/step_010", [("dismiss", None)]),
        ("fdroidutg_apps/com.brosmike.airpushdetector/step_003", [("dismiss", None)]),
        # A file chooser of paths: nothing to press back for.
        ("fdroidutg_apps/org.ligi.ajsha/step_003", []),
        # Cancel before Deny anyway.
        (
            "fdroidutg_apps/org.ligi.ajsha/step_001",
            [("dismiss", "CANCEL"), ("dismiss", "DENY ANYWAY")],
        ),
    ],
)
def test_pixel_only_operations_on_real_screens(
    pixel_only: object, step: str, ops: list[tuple[str, str | None]]
) -> None:
    assert pixel_only(step) == ops  # type: ignore[operator]
