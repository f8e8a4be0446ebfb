"""The façade end to end: the real tree channel, the real pixel channel, the fusion layer."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt
import pytest
from _frames import png

import perception
from perception import DumpFailedError, InputError, Observation, Perceiver, perceive, read_tree
from perception.config import FusionConfig
from perception.demo import demo_xml
from perception.fusion.arbiter import ArbiterState
from perception.fusion.screen import OperationKind
from perception.pipeline import PixelWork, VisionBox
from perception.tree.compress import iter_rows
from perception.tree.write import dump as screen_dump, node
from perception.types import BoxPx, Channel, ScreenSize

W, H = 720, 1280
MS = 1_000_000

NODE = (
    '<node index="{i}" text="{text}" resource-id="{rid}" class="{cls}" package="com.example.demo"'
    ' content-desc="" checkable="false" checked="false" clickable="{click}" enabled="true"'
    ' focusable="{click}" focused="false" scrollable="false" long-clickable="false"'
    ' password="false" selected="false" bounds="[{l},{t}][{r},{b}]">{children}</node>'
)

DIALOG = [
    (
        "Delete this note?",
        "android:id/alertTitle",
        "android.widget.TextView",
        False,
        (80, 500, 640, 580),
    ),
    ("Cancel", "android:id/button2", "android.widget.Button", True, (80, 640, 340, 720)),
    ("Delete", "android:id/button1", "android.widget.Button", True, (380, 640, 640, 720)),
]


def dump(
    items: list[tuple[str, str, str, bool, tuple[int, int, int, int]]], *, scrolls: bool = False
) -> bytes:
    """The items in one full-screen window; ``scrolls``: the window's root is scrollable (only
    list runs the user can scroll are cut short)."""
    children = "".join(
        NODE.format(
            i=i,
            text=text,
            rid=rid,
            cls=cls,
            click=str(click).lower(),
            l=b[0],
            t=b[1],
            r=b[2],
            b=b[3],
            children="",
        )
        for i, (text, rid, cls, click, b) in enumerate(items)
    )
    root = NODE.format(
        i=0,
        text="",
        rid="",
        cls="android.widget.FrameLayout",
        click="false",
        l=0,
        t=0,
        r=W,
        b=H,
        children=children,
    )
    if scrolls:
        root = root.replace('scrollable="false"', 'scrollable="true"', 1)
    return (
        f'<?xml version="1.0" encoding="UTF-8"?><hierarchy rotation="0">{root}</hierarchy>'.encode()
    )


def draw(
    items: list[tuple[str, str, str, bool, tuple[int, int, int, int]]], background: int = 245
) -> npt.NDArray[np.uint8]:
    """A screen of our own: each labelled box drawn with its text."""
    img = np.full((H, W, 3), background, np.uint8)
    cv2.rectangle(img, (0, 0), (W, 60), (60, 60, 60), -1)  # a status bar
    for text, _, _, click, (x0, y0, x1, y1) in items:
        if click:
            cv2.rectangle(img, (x0, y0), (x1, y1), (200, 120, 40), -1)
        cv2.putText(img, text, (x0 + 12, y1 - 24), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (20, 20, 20), 2)
    return img



@pytest.fixture(scope="module")
def perceiver_factory() -> Iterator[object]:
    from perception.pipeline import PixelChannel
    from perception.pixel import PixelReader

    with PixelReader() as reader:  # one OCR engine for the module
        yield lambda **kw: Perceiver(pixels=PixelChannel(reader), **kw)


def test_the_environment_tunes_only_a_perceiver_built_from_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from perception.pipeline import PixelChannel
    from perception.pixel import PixelReader

    rows = [
        (f"Contact {i}", "", "android.widget.Button", True, (0, 100 + 90 * i, W, 180 + 90 * i))
        for i in range(12)
    ]
    monkeypatch.setenv("PERCEPTION_FUSION_PAIR_WINDOW_MS", "900")
    monkeypatch.setenv("PERCEPTION_TREE_LIST_KEEP", "3")
    with PixelReader() as reader:
        tuned = Perceiver.from_env(pixels=PixelChannel(reader))
        plain = Perceiver(pixels=PixelChannel(reader))
        assert tuned.config.pair_window_ms == 900 and plain.config.pair_window_ms == 300
        assert Perceiver.from_env({}, pixels=PixelChannel(reader)).config == FusionConfig()
        listed = {
            name: sum(
                c.listed and c.text.startswith("Contact")
                for c in p.perceive(dump(rows, scrolls=True)).candidates
            )
            for name, p in (("tuned", tuned), ("plain", plain))
        }
    assert listed == {"tuned": 3, "plain": 8}


def test_public_names() -> None:
    assert {"perceive", "Perceiver", "Observation"} <= set(perception.__all__)
    # Every error class the package defines can be caught by its name from the top level.
    from perception import errors

    defined = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, errors.PerceptionError)
    }
    assert defined <= set(perception.__all__)
    assert all(getattr(perception, name) is getattr(errors, name) for name in defined)


def test_a_dump_may_be_given_as_a_path(tmp_path: Path) -> None:
    """frame= takes a path, and so does xml=: a path is read, never parsed as XML."""
    (tmp_path / "screen.xml").write_bytes(dump(DIALOG))
    by_bytes = perceive(xml=dump(DIALOG)).to_prompt()
    assert perceive(xml=tmp_path / "screen.xml").to_prompt() == by_bytes
    assert perceive(xml=str(tmp_path / "screen.xml")).to_prompt() == by_bytes
    with pytest.raises(InputError, match="cannot read the dump"):
        perceive(xml=tmp_path / "missing.xml")


def test_one_shot_dialog_is_tree_dominant_and_consistent() -> None:
    obs = perceive(xml=dump(DIALOG), frame=png(draw(DIALOG)))
    assert isinstance(obs, Observation) and obs.ready
    assert obs.state is ArbiterState.TREE and obs.pixel_work is PixelWork.NONE
    assert obs.consistent is True and obs.tree_confidence >= 0.75
    assert obs.screen is not None and obs.screen.package == "com.example.demo"
    assert obs.screen.size == ScreenSize(W, H) and not obs.screen.secure
    texts = {c.text: c for c in obs.candidates}
    assert {"Cancel", "Delete"} <= set(texts) and texts["Cancel"].source is Channel.TREE
    ops = {(o.kind, o.candidate_id) for o in obs.operations}
    assert (OperationKind.DISMISS, texts["Cancel"].id) in ops
    prompt = json.loads(obs.to_prompt())
    assert prompt["state"] == "tree"
    shown = {c.id for c in obs.candidates if not c.occluded and c.listed}
    rows = list(iter_rows(prompt))
    assert {r.id for r in rows if r.id is not None} <= shown
    assert {c.id for c in obs.candidates if c.listed and c.actionable} <= {r.id for r in rows}
    assert all(
        r.point_pm is not None and 0 <= min(r.point_pm) <= max(r.point_pm) <= 1000 for r in rows
    )
    ids_only = list(iter_rows(json.loads(obs.to_prompt(coords=False))))
    assert [(r.id, r.label) for r in ids_only] == [(r.id, r.label) for r in rows]
    assert all(r.point_pm is None and r.box_pm is None for r in ids_only)


def test_tree_without_its_pixels_is_inconsistent(perceiver_factory: object) -> None:
    p = perceiver_factory()  # type: ignore[operator]
    blank = np.full((H, W, 3), 245, np.uint8)
    cv2.rectangle(blank, (0, 0), (W, 60), (60, 60, 60), -1)
    obs = p.perceive(dump(DIALOG), png(blank))
    assert obs.consistent is False
    assert obs.state is not ArbiterState.TREE and obs.pixel_work is not PixelWork.NONE
    assert "text_on_pixels" in obs.tree_factors
    # Nothing on the pixels either: neither channel is trustworthy, so capture again.
    assert obs.pixel_confidence < 0.25 and not obs.ready
    assert obs.operations[0].kind is OperationKind.RECAPTURE
    assert json.loads(obs.to_prompt())["recapture"] == ["pixel", "tree"]
    # The prompt shows no id, so no id is the model's to name.
    assert obs.candidates and obs.shown_ids == ()
    with pytest.raises(perception.UnknownCandidateError, match="not ready"):
        obs.candidate(obs.candidates[0].id)
    assert obs.candidate(obs.candidates[0].id, shown=False) is obs.candidates[0]


OTHER_DIALOG = [
    ("Rename this file?", *DIALOG[0][1:]),
    ("Keep", *DIALOG[1][1:]),
    ("Rename", *DIALOG[2][1:]),
]


def test_a_tree_of_another_moment_does_not_read_back(perceiver_factory: object) -> None:
    """Ink where the tree puts text, but other words (the dialog before or after this one): the
    labels do not read back off the pixels, so the tree does not describe this frame. The
    right frame reads back, and the same tree over the same frame is not read twice."""
    p = perceiver_factory()  # type: ignore[operator]
    obs = p.perceive(dump(DIALOG), png(draw(OTHER_DIALOG)))
    assert obs.consistent is False and obs.tree_factors.get("read_back") == 0.4
    assert obs.state is not ArbiterState.TREE
    assert any("reads back" in note and "Delete this note?" in note for note in obs.notes)
    prompt = json.loads(obs.to_prompt())
    assert prompt["warn"] == "tree and pixels disagree"
    # A dialog's buttons are not recommended when the pixels show another dialog.
    assert not any(o.candidate_id for o in obs.operations)
    # Nor offered: the tree's rows the pixels do not show are left out (kept, unlisted), what
    # the pixels read stands for them.
    tree_rows = [c for c in obs.candidates if c.source is Channel.TREE]
    assert tree_rows and not any(c.listed for c in tree_rows)
    assert set(obs.shown_ids) == {c.id for c in obs.candidates if c.source is not Channel.TREE}
    assert "Rename" in obs.to_prompt() and '"Delete"' not in obs.to_prompt()
    assert any("rows are left out" in note for note in obs.notes)

    good = perceiver_factory()  # type: ignore[operator]
    first = good.perceive(dump(DIALOG), png(draw(DIALOG)))
    assert first.consistent is True and "read_back" in first.timings_ms
    assert "read_back" not in first.tree_factors and first.state is ArbiterState.TREE
    again = good.perceive(dump(DIALOG), png(draw(DIALOG)))
    assert again.consistent is True and "read_back" not in again.timings_ms  # kept, not read


def test_read_back_samples_one_line_labels_the_pixels_can_say() -> None:
    from perception.fusion.crossval import read_back_sample
    from perception.fusion.table import ElementTable
    from perception.tree import read_tree

    tree = read_tree(dump([
        *DIALOG,
        ("[icon]", "", "android.widget.TextView", False, (80, 800, 640, 880)),
        ("ok", "", "android.widget.TextView", False, (80, 900, 640, 980)),
        ("Tall label box", "", "android.widget.TextView", False, (80, 1000, 640, 1400)),
        ("Search notes", "", "android.widget.EditText", True, (80, 1500, 640, 1580)),
        ("Delete", "", "android.widget.Button", True, (80, 1600, 640, 1680)),
    ]))
    table = ElementTable(tree.elements)
    picked = read_back_sample(table, hidden=frozenset(), frame_size=ScreenSize(W, H))
    # A resource-id label, a label under 3 characters, a box taller than a line, an input's
    # text and a repeated label are not read; the rest, tallest first, three at most.
    assert [table.texts[i] for i in picked] == ["Delete this note?", "Cancel", "Delete"]
    assert read_back_sample(table, hidden=frozenset(picked), frame_size=ScreenSize(W, H)) == []


def test_a_scaled_down_screenshot_is_refused(perceiver_factory: object) -> None:
    """Half the tree's size (an agent that downscales before sending): every box would be off."""
    small = cv2.resize(draw(DIALOG), (W // 2, H // 2))
    with pytest.raises(perception.FrameSizeMismatchError, match="360x640") as info:
        perceiver_factory().perceive(dump(DIALOG), png(small))  # type: ignore[operator]
    # The message says what happened and what to pass instead.
    assert "scaled down (0.50 of the width)" in str(info.value)
    assert "device's resolution" in str(info.value)


def test_alignment_drops_the_stale_capture(perceiver_factory: object) -> None:
    p = perceiver_factory()  # type: ignore[operator]
    xml, frame = dump(DIALOG), png(draw(DIALOG))
    obs = p.perceive(xml, frame, tree_time_ns=(0, 100 * MS), frame_time_ns=(900 * MS, 950 * MS))
    assert not obs.ready and obs.refresh == {Channel.TREE} and not obs.candidates
    assert obs.operations[0].kind is OperationKind.RECAPTURE
    assert json.loads(obs.to_prompt())["recapture"] == ["tree"]
    # The frame was kept; a fresh tree completes the pair.
    obs = p.perceive(xml, tree_time_ns=(960 * MS, 1100 * MS))
    assert obs.ready and obs.state is ArbiterState.TREE and obs.consistent is True


def test_new_epoch_detects_a_stale_tree(perceiver_factory: object) -> None:
    p = perceiver_factory()  # type: ignore[operator]
    xml = dump(DIALOG)
    assert p.perceive(xml, png(draw(DIALOG)), epoch=0).state is ArbiterState.TREE
    after = [
        ("Note deleted", "", "android.widget.TextView", False, (80, 200, 640, 280)),
        ("Undo", "", "android.widget.Button", True, (80, 1000, 640, 1080)),
    ]
    obs = p.perceive(xml, png(draw(after)), epoch=1)  # the old dump served after the action
    assert obs.consistent is False and "stale" in obs.tree_factors
    assert obs.state is not ArbiterState.TREE
    with pytest.raises(perception.PerceptionError):
        p.perceive(xml, png(draw(after)), epoch=1, tree_time_ns=(5, 1))


def test_a_toggle_the_dump_does_not_show_yet_makes_it_stale(perceiver_factory: object) -> None:
    """The tap checked the box, the dump still says unchecked: 0.2% of the screen changed,
    all of it where the tree has a checkbox (llamatouch trace_7's case, drawn here)."""
    rows = [
        ("Keep my history", "", "android.widget.CheckBox", True, (40, 300, 680, 380)),
        ("Search", "", "android.widget.EditText", True, (40, 500, 680, 580)),
    ]
    xml = dump(rows).replace(b'checkable="false"', b'checkable="true"', 1)
    before = draw(rows)
    cv2.rectangle(before, (52, 316), (100, 364), (20, 20, 20), 3)
    checked = before.copy()
    cv2.rectangle(checked, (52, 316), (100, 364), (20, 20, 20), -1)
    typed = before.copy()  # what a blinking cursor does to the field: not a toggle
    cv2.line(typed, (300, 510), (300, 570), (20, 20, 20), 3)
    for after, stale in ((checked, True), (typed, False)):
        p = perceiver_factory()  # type: ignore[operator]
        assert p.perceive(xml, png(before), epoch=0).state is ArbiterState.TREE
        obs = p.perceive(xml, png(after), epoch=1)  # the same dump after the action
        assert ("stale" in obs.tree_factors) is stale
        assert (obs.state is ArbiterState.TREE) is not stale
        assert obs.consistent is not stale


def test_a_map_redrawn_after_an_action_keeps_its_dump_fresh(perceiver_factory: object) -> None:
    """A map (a SurfaceView under a search bar and a switch) zoomed by the action: the
    picture changed all over, the dump is rightly the same; a toggle's cells moving still
    make it stale."""
    rows = [
        ("Search here", "", "android.widget.EditText", True, (40, 80, 680, 160)),
        ("Traffic", "", "android.widget.Switch", True, (440, 1120, 680, 1200)),
    ]
    head, switch = dump(rows).split(b'text="Traffic"')
    xml = head + b'text="Traffic"' + switch.replace(b'checkable="false"', b'checkable="true"', 1)
    xml = xml.replace(b"</node></hierarchy>", b'<node index="9" text="" resource-id="" '
                      b'class="android.view.SurfaceView" package="com.example.demo" '
                      b'content-desc="" bounds="[0,180][720,1100]" /></node></hierarchy>')

    def map_frame(zoom: int) -> npt.NDArray[np.uint8]:
        img = draw(rows)
        rng = np.random.default_rng(zoom)
        for _ in range(60):  # streets and blocks, all redrawn at another zoom
            x0, y0 = int(rng.integers(0, W)), int(rng.integers(180, 1100))
            cv2.line(img, (x0, y0), (x0 + int(rng.integers(-300, 300)), y0 + int(rng.integers(
                -300, 300))), (int(rng.integers(80, 200)),) * 3, int(rng.integers(4, 16)))
        img[1100:] = draw(rows)[1100:]
        return img

    before, zoomed = map_frame(1), map_frame(2)
    toggled = zoomed.copy()
    cv2.rectangle(toggled, (596, 1136), (664, 1184), (20, 20, 20), -1)  # the switch turned on
    for after, stale in ((zoomed, False), (toggled, True)):
        p = perceiver_factory()  # type: ignore[operator]
        assert "stale" not in p.perceive(xml, png(before), epoch=0).tree_factors
        obs = p.perceive(xml, png(after), epoch=1)  # the same dump after the action
        assert read_tree(xml).health.surface_area_share > 0.5
        assert ("stale" in obs.tree_factors) is stale


def test_an_icon_under_a_row_of_another_moment_is_offered(perceiver_factory: object) -> None:
    """The tree's rows left out as another moment's hide nothing the pixels show under them:
    a play icon drawn where the stale tree puts its dialog's title was dropped as that row's
    drawing, and then the row was left out too."""
    img = draw(OTHER_DIALOG)
    cv2.circle(img, (600, 540), 28, (40, 40, 40), -1)
    cv2.fillPoly(img, [np.array([(590, 525), (590, 555), (614, 540)])], (255, 255, 255))
    p = perceiver_factory()  # type: ignore[operator]
    obs = p.perceive(dump(DIALOG), png(img))
    assert obs.consistent is False
    title = next(c for c in obs.candidates if c.text == "Delete this note?")
    assert not title.listed
    icons = [c for c in obs.candidates if c.shown and c.kind == "icon"
             and title.box_px.contains(c.box_px.center)]
    assert [(c.source, c.text) for c in icons] == [(Channel.PIXEL, "▶")]
    assert "▶" in obs.to_prompt()


def test_lines_inside_a_cut_label_of_another_moment_are_offered(
    perceiver_factory: object,
) -> None:
    """OCR lines inside a row whose label the tree cut ("…") are the rest of that label, not
    text of their own; but when the tree shows another moment and the row is left out, they
    are what the screen shows there now. They were dropped with the row."""
    para = (
        "Your notes are kept on this phone until you delete them. Deleted notes stay in the "
        "bin for thirty days and can be restored from there at any time.",
        "", "android.widget.TextView", False, (40, 800, 680, 1000),
    )
    img = draw(OTHER_DIALOG)
    for k, line in enumerate(("Nothing was renamed", "Files stay where they are")):
        cv2.putText(img, line, (52, 850 + 60 * k), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (20, 20, 20), 2)
    p = perceiver_factory()  # type: ignore[operator]
    obs = p.perceive(dump([*DIALOG, para]), png(img))
    assert obs.consistent is False
    row = next(c for c in obs.candidates if c.text.startswith("Your notes"))
    assert row.text.endswith("…") and not row.listed
    shown = {c.text for c in obs.candidates if c.shown and c.source is Channel.PIXEL}
    assert {"Nothing was renamed", "Files stay where they are"} <= shown
    # The same row over its own frame: no line of its own, and it reads back.
    good = perceiver_factory()  # type: ignore[operator]
    obs = good.perceive(dump([*DIALOG, para]), png(draw([*DIALOG, para])))
    assert obs.consistent is True
    assert not any(
        c.source is Channel.PIXEL and c.text.startswith(("bin", "Your")) for c in obs.candidates
    )


def test_part_of_a_stale_rows_label_does_not_keep_it(perceiver_factory: object) -> None:
    """A row of a tree of another moment stays where OCR reads its label there; OCR reading
    "Me" where the stale tree puts "Recommend" ("me" lies in it) kept the row, so the model
    was offered a "Recommend" the screen does not show, and not the "Me" it does."""
    row = ("Recommend", "", "android.widget.Button", True, (420, 1000, 700, 1080))
    img = draw([*OTHER_DIALOG, ("Me", "", "", True, row[4])])
    p = perceiver_factory()  # type: ignore[operator]
    obs = p.perceive(dump([*DIALOG, row]), png(img))
    assert obs.consistent is False
    labels = [r.label for r in iter_rows(json.loads(obs.to_prompt()))]
    assert "Me" in labels and "Recommend" not in labels
    # Over its own frame the row reads back whole and stands.
    good = perceiver_factory()  # type: ignore[operator]
    obs = good.perceive(dump([*DIALOG, row]), png(draw([*DIALOG, row])))
    assert obs.consistent is True and "Recommend" in obs.to_prompt()


PAGE = [
    (label, "", "android.widget.TextView", False, (40, top, 680, top + 80))
    for label, top in (("Inbox", 100), ("Drafts", 200), ("Sent", 300), ("Archive", 900),
                       ("Settings", 1000))
]
POP_UP = (80, 460, 640, 820)
"""Where :func:`over_a_dimmed_page` draws its dialog."""


def over_a_dimmed_page() -> npt.NDArray[np.uint8]:
    """:data:`PAGE` dimmed as Android's dialog dim does (x0.4), a white dialog over it."""
    img = (draw(PAGE).astype(np.float32) * 0.4).astype(np.uint8)
    cv2.rectangle(img, POP_UP[:2], POP_UP[2:], (255, 255, 255), -1)
    for text, x, y in (("Discard draft?", 112, 540), ("CANCEL", 290, 775), ("DISCARD", 460, 775)):
        cv2.putText(img, text, (x, y), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (20, 20, 20), 2)
    return img


def test_a_pop_up_the_tree_does_not_hold_is_another_moment(perceiver_factory: object) -> None:
    """A dialog came up after the dump: the page's labels still read back under its scrim, and
    the page passed for what the screen offers. The pixels see the pop-up, no node of the tree
    matches it: the tree is another moment's, the dialog's buttons are offered and the page's
    rows are not (a tap there dismisses the dialog)."""
    p = perceiver_factory()  # type: ignore[operator]
    obs = p.perceive(dump(PAGE), png(over_a_dimmed_page()))
    assert obs.consistent is False and obs.tree_factors.get("modal_missing") == 0.4
    assert any("pop-up over a dimmed page" in n for n in obs.notes)
    labels = [r.label for r in iter_rows(json.loads(obs.to_prompt()))]
    assert {"CANCEL", "DISCARD"} <= set(labels)
    assert not {"Inbox", "Drafts", "Sent", "Archive", "Settings"} & set(labels)
    # Its buttons are on the screen now: the dismiss is recommended off them.
    by_id = {c.id: c for c in obs.candidates}
    assert [(o.kind, by_id[o.candidate_id].text) for o in obs.operations
            if o.candidate_id is not None] == [(OperationKind.DISMISS, "CANCEL")]
    # A dump that holds the dialog (its panel a layout node, its title and buttons): the same
    # frame is its moment.
    held = [
        *PAGE,
        ("", "", "android.widget.FrameLayout", False, POP_UP),
        ("Discard draft?", "android:id/alertTitle", "android.widget.TextView", False,
         (100, 500, 620, 560)),
        ("CANCEL", "android:id/button2", "android.widget.Button", True, (270, 730, 430, 800)),
        ("DISCARD", "android:id/button1", "android.widget.Button", True, (440, 730, 630, 800)),
    ]
    obs = perceiver_factory().perceive(dump(held), png(over_a_dimmed_page()))  # type: ignore[operator]
    assert "modal_missing" not in obs.tree_factors and obs.consistent is not False


def test_the_best_overlap_is_over_the_dumps_windows() -> None:
    """``Tree.best_overlap``: a node's own box 1.0, whether or not cleaning kept it (a layout
    node); a box reaching past the windows is cut to them first; none outside them."""
    sheet = ("", "", "android.widget.FrameLayout", False, (0, 1100, 720, 1280))
    tree = perception.read_tree(dump([*PAGE, ("", "", "android.widget.FrameLayout", False,
                                              POP_UP), sheet]))
    assert tree.best_overlap(BoxPx(*POP_UP)) == 1.0
    assert tree.best_overlap(BoxPx(0, 1100, 720, 1500)) == 1.0  # cut at the window's 1280
    assert tree.best_overlap(BoxPx(0, 1300, 720, 1500)) == 0.0
    assert 0.0 < tree.best_overlap(BoxPx(80, 460, 640, 640)) < 0.6  # half the panel


def test_a_real_dialog_already_gone_does_not_read_back(
    perceiver_factory: object, corpus_dir: Path
) -> None:
    """A corpus pair marked matched whose tree still holds a voice assistant's command dialog
    that the screenshot no longer shows (heaven.assistant step 8): ink lies where the labels
    were, the words do not. An earlier step of the app reads back."""
    app = corpus_dir / "droidbot_admob_apps" / "com.heaven.assistant"

    def one_shot(step: str) -> Observation:
        p = perceiver_factory()  # type: ignore[operator]
        return p.perceive(  # type: ignore[no-any-return]
            (app / step / "screen.xml").read_bytes(), (app / step / "screen.jpg").read_bytes()
        )

    obs = one_shot("step_008")
    assert obs.consistent is False and obs.tree_factors.get("read_back") == 0.4
    assert any("Command: Open" in note for note in obs.notes)
    obs = one_shot("step_001")
    assert obs.consistent is True and "read_back" in obs.timings_ms
    assert "read_back" not in obs.tree_factors


ONE_LABEL = [("Search", "", "android.widget.TextView", True, (60, 200, 660, 280))]


def test_one_label_with_other_words_under_it_is_another_moment(
    perceiver_factory: object,
) -> None:
    """A tree with one label to read back (a launcher's search box) passes no verdict when the
    pixels do not say it (an OCR miss is as likely), but where they read other words in its box
    (the app the launcher opened) the tree is another moment's. Its own frame reads back."""
    other = draw([("Recent apps, default apps", "", "", False, (60, 200, 660, 280))])
    obs = perceiver_factory().perceive(dump(ONE_LABEL), png(other))  # type: ignore[operator]
    assert obs.consistent is False and obs.tree_factors.get("read_back") == 0.4
    assert any("one label 'Search'" in n and "Recent" in n for n in obs.notes)
    blank = draw([])
    obs = perceiver_factory().perceive(dump(ONE_LABEL), png(blank))  # type: ignore[operator]
    assert "read_back" not in obs.tree_factors
    assert not any("one label" in n for n in obs.notes)
    own = perceiver_factory().perceive(dump(ONE_LABEL), png(draw(ONE_LABEL)))  # type: ignore[operator]
    assert own.consistent is True and "read_back" in own.timings_ms
    assert "read_back" not in own.tree_factors


def test_a_launcher_tree_over_the_app_it_opened_is_another_moment(
    perceiver_factory: object, corpus_dir: Path
) -> None:
    """The F-Droid traces' first step: the launcher's dump, whose one label to read back is its
    search box's "Search", over the next step's frame, the app opened (AD Silence's "Recent apps,
    default apps" screen): flagged. Over its own frame, the same dump reads back."""
    app = corpus_dir / "fdroidutg_apps" / "bluepie.ad_silence"
    xml = (app / "step_000" / "screen.xml").read_bytes()
    p = perceiver_factory()  # type: ignore[operator]
    obs = p.perceive(xml, (app / "step_001" / "screen.jpg").read_bytes())
    assert obs.consistent is False and obs.tree_factors.get("read_back") == 0.4
    assert any("one label 'Search'" in n for n in obs.notes)
    own = perceiver_factory().perceive(xml, (app / "step_000" / "screen.jpg").read_bytes())  # type: ignore[operator]
    assert own.consistent is True and "read_back" not in own.tree_factors


def test_the_real_toggle_is_caught(perceiver_factory: object, corpus_dir: Path) -> None:
    """llamatouch trace_7: "I understand and want to delete." ticked between steps 8 and 9."""
    trace = corpus_dir / "llamatouch" / "trace_7"
    (xml0, png0), (xml1, png1) = (
        ((trace / s / "screen.xml").read_bytes(), (trace / s / "screen.png").read_bytes())
        for s in ("step_008", "step_009")
    )
    p = perceiver_factory()  # type: ignore[operator]
    assert p.perceive(xml0, png0, epoch=0).state is ArbiterState.TREE
    obs = p.perceive(xml0, png1, epoch=1)
    assert "stale" in obs.tree_factors and obs.state is not ArbiterState.TREE
    obs = p.perceive(xml1, png1, epoch=1)  # the fresh dump: checked, and "Delete" enabled
    assert "stale" not in obs.tree_factors and obs.consistent is True


def test_the_same_dump_over_a_new_picture_is_stale_without_epochs(
    perceiver_factory: object, corpus_dir: Path
) -> None:
    """A caller that never passes ``epoch`` (the one-shot habit) still has a stale dump caught:
    Habitica's step 4 dump served again over step 5's frame, where a modal ("You ran out of
    Health!") dims the page; the dump is the same, the picture changed nearly everywhere."""
    trace = corpus_dir / "droidbot_habitica" / "habitica_2020-08-29"
    xml = (trace / "step_004" / "screen.xml").read_bytes()
    p = perceiver_factory()  # type: ignore[operator]
    first = p.perceive(xml, (trace / "step_004" / "screen.jpg").read_bytes())
    assert first.state is ArbiterState.TREE and "stale" not in first.tree_factors
    obs = p.perceive(xml, (trace / "step_005" / "screen.jpg").read_bytes())
    assert "stale" in obs.tree_factors and obs.state is not ArbiterState.TREE
    assert obs.consistent is False
    # Still stale when served once more over that picture (the yardstick is the frame the dump
    # was last fresh over, not the previous call's).
    again = p.perceive(xml, (trace / "step_005" / "screen.jpg").read_bytes())
    assert "stale" in again.tree_factors
    fresh = p.perceive(
        (trace / "step_005" / "screen.xml").read_bytes(),
        (trace / "step_005" / "screen.jpg").read_bytes(),
    )
    assert "stale" not in fresh.tree_factors


def test_a_part_of_the_picture_moving_keeps_the_same_dump_fresh(
    perceiver_factory: object,
) -> None:
    """A carousel, a video or a progress animation redraws part of the screen while the dump
    stays the same: not stale."""
    xml = dump(DIALOG)
    before = draw(DIALOG)
    p = perceiver_factory()  # type: ignore[operator]
    assert p.perceive(xml, png(before)).state is ArbiterState.TREE
    moved = before.copy()
    moved[: H // 3] = 255 - moved[: H // 3]  # a third of the screen redrawn
    obs = p.perceive(xml, png(moved))
    assert "stale" not in obs.tree_factors


def test_secure_black_frame_hands_over(perceiver_factory: object) -> None:
    p = perceiver_factory()  # type: ignore[operator]
    obs = p.perceive(dump(DIALOG), png(np.zeros((H, W, 3), np.uint8)))
    assert obs.screen is not None and obs.screen.secure
    assert obs.pixel_confidence == 0.0 and obs.consistent is None
    assert obs.state is ArbiterState.TREE
    assert OperationKind.HAND_OVER in {o.kind for o in obs.operations}


def test_a_unity_game_is_read_off_its_pixels(perceiver_factory: object) -> None:
    """A Unity game's dump is one View (its SurfaceView, named only by the id
    ``unitySurfaceView``) described "Game view": nothing the tree offers is on the picture,
    so the pixels are read and their buttons offered."""
    game = node((0, 0, W, H), cls="android.view.View", resource_id="com.game:id/unitySurfaceView",
                content_desc="Game view", focusable=True, focused=True, package="com.game")
    img = np.zeros((H, W, 3), np.uint8)
    img[:] = np.linspace(60, 160, H, dtype=np.uint8)[:, None, None]  # a sky
    for x, y, r in ((120, 300, 70), (560, 420, 90), (300, 700, 50)):
        cv2.circle(img, (x, y), r, (40, 150, 60), -1)  # scenery
    buttons = {"PLAY": (210, 1000, 510, 1120), "SHOP": (480, 80, 690, 170)}
    for label, (x0, y0, x1, y1) in buttons.items():
        cv2.rectangle(img, (x0, y0), (x1, y1), (40, 170, 240), -1)
        cv2.putText(img, label, (x0 + 30, y1 - 30), cv2.FONT_HERSHEY_DUPLEX, 1.6,
                    (255, 255, 255), 3, cv2.LINE_AA)
    obs = perceiver_factory().perceive(screen_dump(game), png(img))  # type: ignore[operator]
    assert obs.state is ArbiterState.PIXEL and obs.tree_factors["opaque"] < 0.2
    for label, box in buttons.items():
        hits = [c for c in obs.candidates if c.text == label and c.source is Channel.PIXEL]
        assert hits and BoxPx(*box).contains(hits[0].box_px.center), label
    assert "PLAY" in obs.to_prompt()


def test_failed_dump_is_an_error_or_a_pixel_fallback(perceiver_factory: object) -> None:
    with pytest.raises(DumpFailedError):
        perceive(xml=b"ERROR: could not get idle state.")
    p = perceiver_factory()  # type: ignore[operator]
    obs = p.perceive(b"ERROR: could not get idle state.", png(draw(DIALOG)))
    assert obs.tree_confidence == 0.0 and obs.state is ArbiterState.PIXEL
    assert any("DumpFailedError" in n for n in obs.notes)
    assert any("no vision model" in n for n in obs.notes)
    assert obs.candidates and all(c.source is Channel.PIXEL for c in obs.candidates)
    # In the prompt every pixel candidate keeps its id: the buttons under "btn" (the tree's
    # word), the title under "ocr"; "text" is the tree's static text and there is none.
    doc = json.loads(obs.to_prompt())
    assert "text" not in doc and "screen" not in doc  # no package known: no empty "app"
    rows = {r.id: r for r in iter_rows(doc)}
    assert set(rows) == {c.id for c in obs.candidates}
    assert {(r.kind, r.label) for r in rows.values()} >= {
        ("ocr", "Delete this note?"),
        ("btn", "Cancel"),
        ("btn", "Delete"),
    }
    assert not any("px" in r.flags for r in rows.values())  # every row is the pixels'
    with pytest.raises(InputError):
        p.perceive()


def largest_ink(crop: npt.NDArray[np.uint8]) -> list[VisionBox]:
    """A tiny real detector: the bounding box of dark ink in the crop, labelled "ink"."""
    ys, xs = np.nonzero(crop.min(axis=2) < 100)
    if not len(xs):
        return []
    return [
        VisionBox(
            label="ink",
            box_px=BoxPx(int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1),
            confidence=0.8,
        )
    ]


def test_vision_model_is_consulted_in_pixel_fallback(perceiver_factory: object) -> None:
    p = perceiver_factory(vision=largest_ink)  # type: ignore[operator]
    img = np.full((H, W, 3), 245, np.uint8)
    cv2.circle(img, (360, 900), 60, (10, 10, 10), -1)  # an icon-like blob, no text
    empty = b'<?xml version="1.0"?><hierarchy rotation="0"/>'
    obs = p.perceive(empty, png(img))
    assert obs.state is ArbiterState.PIXEL and obs.vision_used
    vision = [c for c in obs.candidates if c.origin == "vision"]
    assert vision and vision[0].box_px.contains((360, 900)) and vision[0].confidence < 0.5


def test_ids_are_stable_and_loops_are_reported(perceiver_factory: object) -> None:
    p = perceiver_factory()  # type: ignore[operator]
    xml, frame = dump(DIALOG), png(draw(DIALOG))
    seen = [p.perceive(xml, frame, epoch=i) for i in range(3)]
    assert [c.id for c in seen[0].candidates] == [c.id for c in seen[2].candidates]
    assert seen[0].loop is None and seen[2].loop is not None and seen[2].loop.count == 3
    assert seen[1].revisit and seen[0].screen is not None
    assert p.page(seen[0].screen.fingerprint) == seen[2].candidates


def test_the_arbiter_state_changes_neither_ids_nor_the_page(perceiver_factory: object) -> None:
    """One screen seen tree-dominant, pixel-fallback, tree-dominant: the pixels say "Settings"
    on a text-less button and fill in its label, yet the page's fingerprint and every tree
    candidate's id stay what the tree gives."""
    from dataclasses import replace

    from perception.fusion.arbiter import Arbiter, ArbiterState, ArbiterStep

    class Pinned(Arbiter):
        """The real arbiter, its state pinned by the test (the OCR and fusion are real)."""

        pinned = ArbiterState.TREE

        def update(self, tree_confidence: float) -> ArbiterStep:
            return replace(super().update(tree_confidence), state=self.pinned)

    items = [
        ("Inbox", "", "android.widget.TextView", False, (40, 80, 400, 160)),
        *[
            (f"Note {n}", "", "android.widget.TextView", True, (40, y, 680, y + 90))
            for n, y in zip("ABCDE", range(200, 700, 100), strict=True)
        ],
        ("Settings", "com.example.demo:id/nav", "android.widget.ImageButton", True,
         (40, 1100, 400, 1200)),
    ]
    xml = dump(items).replace(b'text="Settings"', b'text=""')
    frame = png(draw(items))
    p = perceiver_factory()  # type: ignore[operator]
    p.arbiter = Pinned(p.config)
    seen = []
    for state in (ArbiterState.TREE, ArbiterState.PIXEL, ArbiterState.TREE):
        p.arbiter.pinned = state
        seen.append(p.perceive(xml, frame))
    assert [o.state for o in seen] == [ArbiterState.TREE, ArbiterState.PIXEL, ArbiterState.TREE]
    nav = [next(c for c in o.candidates if c.box_px.top == 1100) for o in seen]
    # OCR fills it in while the pixels are analysed, the read of unlabelled actions when not
    assert all("Settings" in n.text for n in nav)
    assert len({o.screen.fingerprint for o in seen}) == 1
    assert seen[0].screen.fingerprint == perceive(xml).screen.fingerprint  # the tree's alone
    ids = [{c.tree_id: c.id for c in o.candidates if c.tree_id is not None} for o in seen]
    assert ids[0] == ids[1] == ids[2]


def test_real_pairs(corpus_dir: Path, perceiver_factory: object) -> None:
    step = corpus_dir / "droidbot_yelp" / "yelp_2017" / "step_000"
    obs = perceiver_factory().perceive(  # type: ignore[operator]
        (step / "screen.xml").read_bytes(), (step / "screen.png").read_bytes()
    )
    assert obs.state is ArbiterState.TREE and obs.consistent is True
    tap = BoxPx(737, 2150, 1387, 2339).center  # the recorded "Yes, turn it on" target
    assert any(c.box_px.contains(tap) for c in obs.candidates)
    desync = corpus_dir / "_desync" / "droidbot_yelp__yelp_2017__step_003"
    obs = perceiver_factory().perceive(  # type: ignore[operator]
        (desync / "screen.xml").read_bytes(), (desync / "screen.png").read_bytes()
    )
    assert obs.consistent is False and obs.state is not ArbiterState.TREE


def test_a_dialog_dumped_alone_is_placed_on_its_frame(
    corpus_dir: Path, perceiver_factory: object
) -> None:
    """Only the dialog's window is in the dump: the tree alone estimates a taller screen than
    this 1080x1920 phone, but the frame says what the screen is and nothing is refused."""
    step = corpus_dir / "droidbot_habitica" / "habitica_2020-08-29" / "step_005"
    xml = (step / "screen.xml").read_bytes()
    assert perception.read_tree(xml).screen.height_px > 1920
    obs = perceiver_factory().perceive(xml, (step / "screen.jpg").read_bytes())  # type: ignore[operator]
    assert obs.screen is not None and obs.screen.size == ScreenSize(1080, 1920)
    assert obs.ready and obs.candidates


def test_truncated_list_items_stay_candidates_but_leave_the_prompt() -> None:
    rows = [
        (f"Contact {i}", "", "android.widget.Button", True, (0, 100 + 90 * i, W, 180 + 90 * i))
        for i in range(12)
    ]
    obs = perceive(xml=dump(rows, scrolls=True), frame=png(draw(rows)))
    prompt = json.loads(obs.to_prompt())
    listed = [c for c in obs.candidates if c.listed]
    assert len(obs.candidates) >= 12 > len(listed)
    rows = list(iter_rows(prompt))
    assert len(rows) == len(listed)
    more = sum(int(w[1:]) for r in rows for w in r.flags.split() if w.startswith("+"))
    assert more == len(obs.candidates) - len(listed)


def test_a_dialog_the_pixels_do_not_show_offers_no_button(
    corpus_dir: Path, perceiver_factory: object
) -> None:
    """A real desync pair: the dump is a dialog with CANCEL and OK, the screenshot the launcher
    after it closed. The observation says tree and pixels disagree and offers neither button
    as an operation (its boxes land on the wallpaper)."""
    from perception.fusion.screen import OperationKind

    pair = corpus_dir / "_desync" / "fdroidutg_apps__org.ligi.ajsha__step_007"
    obs = perceiver_factory().perceive(  # type: ignore[operator]
        (pair / "screen.xml").read_bytes(), (pair / "screen.jpg").read_bytes()
    )
    assert obs.consistent is False
    kinds = {o.kind for o in obs.operations}
    assert not kinds & {OperationKind.DISMISS, OperationKind.ACCEPT}
    labels = {c.text.lower() for c in obs.candidates}
    assert {"cancel", "ok"} <= labels  # the buttons are still candidates, flagged by state


def test_a_frame_that_cannot_be_read_is_an_error_not_a_note(tmp_path: Path) -> None:
    """A good dump with a truncated PNG, a missing file or a float image: the frame's typed
    error, never a tree-only observation with the pixel checks quietly off."""
    from perception.errors import FrameError, TruncatedFrameError

    xml = dump(DIALOG)
    whole = png(draw(DIALOG))
    with pytest.raises(TruncatedFrameError):
        perception.perceive(xml=xml, frame=whole[: len(whole) // 2])
    with pytest.raises(FrameError):
        perception.perceive(xml=xml, frame=str(tmp_path / "missing.png"))
    with pytest.raises(FrameError):
        perception.perceive(xml=xml, frame=draw(DIALOG).astype(np.float32))
    assert perception.perceive(xml=xml).ready  # without the frame: the tree alone, as asked


def test_a_tree_turned_against_its_frame_is_not_offered(
    corpus_dir: Path, perceiver_factory: object
) -> None:
    """A real pair captured across a rotation: a landscape dump (1920x1080) over a portrait
    screenshot. The tree does not describe this frame: the observation says they disagree,
    leaves tree-dominant, and offers none of the tree's boxes (they fell off the frame)."""
    pair = corpus_dir / "fdroidutg_weibo" / "weibo_2023-10-24" / "step_026"
    obs = perceiver_factory().perceive(  # type: ignore[operator]
        (pair / "screen.xml").read_bytes(), (pair / "screen.jpg").read_bytes()
    )
    assert obs.consistent is False and obs.state is not ArbiterState.TREE
    assert obs.candidates and all(c.source is Channel.PIXEL for c in obs.candidates)
    size = obs.screen.size
    assert all(c.box_px.right <= size.width_px for c in obs.candidates)
    assert any("rotated" in n for n in obs.notes)


def test_read_back_joins_a_label_set_on_two_lines_in_reading_order() -> None:
    """Detection gives lines in no set order; a label set on two lines ("STORED" over
    "LOCATION", a low-resolution tab) must read as it is written, or it never reads back."""
    from perception.pixel.merge import line_rows

    texts = ["LOCATION", "World", "STORED"]
    boxes = [BoxPx(0, 30, 100, 50), BoxPx(60, 9, 100, 29), BoxPx(0, 5, 50, 25)]
    assert [texts[i] for row in line_rows(boxes) for i in row] == ["STORED", "World", "LOCATION"]


def test_an_unlabelled_button_is_offered_with_the_text_its_pixels_show(
    perceiver_factory: object,
) -> None:
    """A custom-drawn button the tree leaves empty (its text is painted, not a TextView) gets
    the text the pixels show; an unlabelled icon stays unlabelled; the page and the ids follow
    the tree's own labels, and the same tree over the same frame is not read twice."""
    items = [
        *DIALOG,
        ("", "", "android.view.View", True, (80, 800, 340, 880)),  # painted "Apply"
        ("", "", "android.widget.ImageView", True, (560, 800, 640, 880)),  # an icon
    ]
    img = draw(DIALOG)
    cv2.rectangle(img, (80, 800), (340, 880), (200, 120, 40), -1)
    cv2.putText(img, "Apply", (100, 856), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (20, 20, 20), 2)
    cv2.circle(img, (600, 840), 24, (60, 60, 60), 4)
    p = perceiver_factory()  # type: ignore[operator]
    obs = p.perceive(dump(items), png(img))
    assert obs.state is ArbiterState.TREE and "labels" in obs.timings_ms
    by_box = {tuple(c.box_px): c for c in obs.candidates}
    apply, icon = by_box[(80, 800, 340, 880)], by_box[(560, 800, 640, 880)]
    assert apply.text == "Apply" and apply.source is Channel.BOTH
    assert icon.text == "" and icon.source is Channel.TREE
    assert '"Apply"' in obs.to_prompt()
    # The same page as the tree alone names it, with the same ids.
    bare = perceive(dump(items))
    assert obs.screen.fingerprint == bare.screen.fingerprint
    again = p.perceive(dump(items), png(img))
    assert "labels" not in again.timings_ms and by_box[(80, 800, 340, 880)].id == next(
        c.id for c in again.candidates if c.text == "Apply"
    )


def test_unlabelled_sample_leaves_rows_around_labels_and_named_icons() -> None:
    from perception.fusion.crossval import unlabelled_sample
    from perception.fusion.table import ElementTable
    from perception.tree import read_tree

    tree = read_tree(dump([
        ("", "", "android.view.View", True, (0, 60, 720, 1280)),  # the page's size, under all
        ("", "", "android.view.View", True, (80, 800, 340, 880)),
        ("", "com.app:id/btn_share", "android.widget.ImageView", True, (400, 800, 480, 880)),
        ("", "", "android.widget.ImageView", True, (500, 800, 560, 880)),
        ("", "", "android.view.View", False, (80, 900, 340, 980)),  # not an action
        ("", "", "android.widget.LinearLayout", True, (0, 1000, 720, 1100)),  # a row ...
        # ... its text, clear of the row's centre (a later clickable over the centre takes the
        # row's taps: the row would be offered where it shows, see perception.tree.occlusion)
        ("Groceries", "", "android.widget.TextView", True, (40, 1020, 300, 1080)),
    ]))
    table = ElementTable(tree.elements)
    picked = unlabelled_sample(table, hidden=frozenset(), frame_size=ScreenSize(W, H))
    # The nameless first, then the action named only by its resource id.
    assert [tuple(table.boxes[i]) for i in picked] == [
        (80, 800, 340, 880), (500, 800, 560, 880), (400, 800, 480, 880)
    ]
    first = unlabelled_sample(table, hidden=frozenset(), frame_size=ScreenSize(W, H), limit=2)
    assert [tuple(table.boxes[i]) for i in first] == [(80, 800, 340, 880), (500, 800, 560, 880)]


def test_a_button_named_by_its_resource_id_is_offered_with_what_it_shows(
    perceiver_factory: object,
) -> None:
    """A resource id is the developer's name for a view, not what the user sees (Weibo's
    "+Follow" is ``detail_activity_header_common_button``): where the pixels show a label, the
    model is offered that; the page and the ids still follow the tree's own labels."""
    rid = "com.app:id/header_common_button"
    items = [*DIALOG, ("", rid, "android.widget.FrameLayout", True, (80, 800, 340, 880))]
    img = draw(DIALOG)
    cv2.rectangle(img, (80, 800), (340, 880), (40, 120, 240), -1)
    cv2.putText(img, "Follow", (100, 856), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (255, 255, 255), 2)
    p = perceiver_factory()  # type: ignore[operator]
    obs = p.perceive(dump(items), png(img))
    follow = next(c for c in obs.candidates if tuple(c.box_px) == (80, 800, 340, 880))
    assert follow.text == "Follow" and follow.source is Channel.BOTH
    assert '"Follow"' in obs.to_prompt() and "header_common_button" not in obs.to_prompt()
    bare = perceive(dump(items))
    named = next(c for c in bare.candidates if tuple(c.box_px) == (80, 800, 340, 880))
    assert named.text == "[header_common_button]" and named.id == follow.id
    assert obs.screen.fingerprint == bare.screen.fingerprint


def test_a_renamed_close_is_judged_by_its_resource_id(perceiver_factory: object) -> None:
    """A floating widget's close, ``home_drag_view_close``, draws the × a pop-up's close draws:
    offered as "×", it is still judged by its id, a page's own control, and no dismiss is
    recommended (the × alone would make one: Unicom's home page)."""
    from perception.fusion.screen import recommend

    page = [
        ("Balance", "", "android.widget.TextView", False, (80, 200, 640, 260)),
        ("Top up", "", "android.widget.Button", True, (80, 300, 340, 380)),
        ("", "com.app:id/home_drag_view_close", "android.widget.ImageView", True,
         (600, 1000, 672, 1072)),
    ]
    img = draw(page)
    for a, b in (((618, 1018), (654, 1054)), ((654, 1018), (618, 1054))):
        cv2.line(img, a, b, (60, 60, 60), 5, cv2.LINE_AA)
    p = perceiver_factory()  # type: ignore[operator]
    obs = p.perceive(dump(page), png(img))
    close = next(c for c in obs.candidates if tuple(c.box_px) == (600, 1000, 672, 1072))
    assert close.text == "×" and close.source is Channel.BOTH
    assert OperationKind.DISMISS not in {op.kind for op in obs.operations}
    assert obs.screen is not None
    said = recommend(obs.candidates, obs.screen)  # the candidates as offered, × and all
    assert [op.candidate_id for op in said if op.kind is OperationKind.DISMISS] == [close.id]


def test_a_label_read_in_tree_unstable_leaves_the_page_and_ids_alone(
    perceiver_factory: object,
) -> None:
    """In tree-unstable the labels are read around the OCR of doubtful places (none here):
    the label is offered, yet the page is named by the tree's own labels, as in tree-dominant."""
    from dataclasses import replace

    from perception.fusion.arbiter import Arbiter, ArbiterStep
    from perception.pipeline import PixelChannel
    from perception.pixel import PixelReader

    class Unstable(Arbiter):
        def update(self, tree_confidence: float) -> ArbiterStep:
            return replace(super().update(tree_confidence), state=ArbiterState.UNSTABLE)

    class NothingDoubtful(PixelChannel):
        """The real channel, whose OCR of doubtful places finds no text (none is doubtful)."""

        def regions(self, frame: object, regions: object) -> list[object]:
            return []

    items = [*DIALOG, ("", "", "android.view.View", True, (80, 800, 340, 880))]
    img = draw(DIALOG)
    cv2.rectangle(img, (80, 800), (340, 880), (200, 120, 40), -1)
    cv2.putText(img, "Apply", (100, 856), cv2.FONT_HERSHEY_SIMPLEX, 1.2, (20, 20, 20), 2)
    with PixelReader() as reader:
        p = Perceiver(pixels=NothingDoubtful(reader))
        p.arbiter = Unstable(p.config)
        obs = p.perceive(dump(items), png(img))
    assert obs.state is ArbiterState.UNSTABLE
    assert next(c for c in obs.candidates if c.box_px.top == 800).text == "Apply"
    assert obs.screen.fingerprint == perceive(dump(items)).screen.fingerprint


def test_a_menu_glyph_the_anchors_recognised_names_its_candidate(
    perceiver_factory: object, corpus_dir: Path
) -> None:
    """Pixel-fallback on A2DP Volume's main screen: the toolbar's overflow menu is offered as
    "⋮" (what the glyph rule recognised), not as an unnamed icon."""
    trace = corpus_dir / "droidbot_a2dpvol_lowres" / "a2dpvol_2018-06-05"
    frame = trace / "step_001" / "screen.png"
    p = perceiver_factory()  # type: ignore[operator]
    obs = p.perceive(frame=frame.read_bytes())
    menu = [c for c in obs.candidates if c.text == "⋮"]
    assert len(menu) == 1 and menu[0].kind == "icon" and menu[0].source is Channel.PIXEL
    assert obs.screen is not None
    assert menu[0].box_px.left > obs.screen.size.width_px * 3 // 4  # at the toolbar's end
    assert f'[{menu[0].id},"⋮",' in obs.to_prompt()


def test_a_confidence_just_under_half_is_not_written_as_half() -> None:
    """``c=0.42`` flags a confidence under 0.5; 0.497 rounded to two places would read 0.50."""
    obs = perceive(xml=demo_xml())
    save = next(c for c in obs.candidates if c.text == "Save")
    doubtful = dataclasses.replace(save, confidence=0.497)
    obs = dataclasses.replace(
        obs, candidates=tuple(doubtful if c is save else c for c in obs.candidates)
    )
    row = next(r for r in iter_rows(json.loads(obs.to_prompt())) if r.label == "Save")
    assert row.flags == "disabled c=0.49"
