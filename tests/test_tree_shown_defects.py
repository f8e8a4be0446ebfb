"""The tree-channel defects of the 2026-12-05 audit: a container's tap point on a control inside
it, sliders never offered, one target offered twice, junk labels and thin slivers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _xml import dump, node, screen
from conftest import CORPUS_DIR, requires_corpus

from perception import BoxPx, ElementFlag, read_tree
from perception.tree import Tree
from perception.tree.cluster import without_junk
from perception.tree.occlusion import largest_free
from perception.types import TreeElement

TXT = "android.widget.TextView"
BTN = "android.widget.Button"
IMG = "android.widget.ImageView"
_ACTIONS = int(
    ElementFlag.CLICKABLE | ElementFlag.LONG_CLICKABLE | ElementFlag.CHECKABLE
    | ElementFlag.EDITABLE
)


def _rows(tree: Tree) -> dict[str, list[list[object]]]:
    rows: dict[str, list[list[object]]] = json.loads(tree.to_prompt())
    return rows


def _actions(tree: Tree) -> list[TreeElement]:
    return [
        e for e in tree.prompt_elements
        if int(e.flags) & _ACTIONS and e.kind not in ("list", "web")
        and not e.flags & ElementFlag.SCROLLABLE
    ]


def _centre_on_another(tree: Tree) -> list[tuple[int, int]]:
    """The audit's count: an offered action whose tap point (its box's centre) lies inside a
    smaller offered action within its box."""
    acts = _actions(tree)
    out = []
    for a in acts:
        point = a.box_px.center
        for b in acts:
            if (
                b is not a and a.box_px.encloses(b.box_px)
                and b.box_px.area < 0.9 * a.box_px.area and b.box_px.contains(point)
            ):
                out.append((a.id, b.id))
                break
    return out


# --- 1: a container's tap point is clear of the controls inside it ----------------------------


def test_a_card_is_offered_on_the_part_its_button_leaves() -> None:
    tree = read_tree(screen(node(
        (0, 800, 1080, 1400),
        node((40, 820, 1040, 900), text="Gaucho Parrilla", cls=TXT),
        node((100, 1000, 980, 1250), text="Write a Review", cls=BTN, clickable=True),
        clickable=True,
    )))
    card = next(e for e in tree.prompt_elements if e.text == "Gaucho Parrilla")
    button = next(e for e in tree.prompt_elements if e.text == "Write a Review")
    assert not button.box_px.contains(card.box_px.center)
    assert card.box_px == BoxPx(0, 800, 1080, 1000)  # the largest part the button leaves
    assert _centre_on_another(tree) == []


def test_an_unlabelled_scrim_around_a_dialog_is_not_offered() -> None:
    # grant_singleton: a wrapper nearly the screen's size whose middle is the dialog's button
    tree = read_tree(screen(node(
        (28, 172, 1052, 2147),
        node((72, 900, 1008, 1500),
             node((72, 920, 1008, 1090), text="Allow the app to take pictures?", cls=TXT),
             node((72, 1103, 1008, 1257), text="WHILE USING THE APP", cls=BTN, clickable=True),
             node((72, 1257, 1008, 1411), text="DENY", cls=BTN, clickable=True),
             clickable=True, resource_id="app:id/grant_dialog"),
        clickable=True, resource_id="app:id/grant_singleton",
    )))
    shown = {e.resource_id for e in tree.prompt_elements}
    assert "grant_singleton" not in shown
    allow = next(e for e in tree.prompt_elements if e.text == "WHILE USING THE APP")
    message = next(e for e in tree.prompt_elements if e.text.startswith("Allow the app"))
    assert not allow.box_px.contains(message.box_px.center)
    assert _centre_on_another(tree) == []


def test_a_page_root_with_only_margins_left_is_read_not_tapped() -> None:
    rows = [
        node((0, 200 * k, 1080, 200 * k + 190), text=f"Song {k}", cls=TXT, clickable=True)
        for k in range(12)
    ]
    tree = read_tree(screen(node(
        (0, 0, 1080, 2400), node((0, 0, 1080, 2400), *rows), content_desc="Charts",
        clickable=True,
    )))
    page = next(e for e in tree.elements if e.text == "Charts")
    assert page.kind == "text" and not int(page.flags) & _ACTIONS
    assert ["Charts", "500 500"] in _rows(tree)["text"]
    assert all(e.text != "Charts" for e in _actions(tree))


def test_largest_free_is_the_largest_part_no_rect_overlaps() -> None:
    box = BoxPx(0, 0, 100, 100)
    assert largest_free(box, []) == box
    assert largest_free(box, [BoxPx(0, 0, 100, 60)]) == BoxPx(0, 60, 100, 100)
    assert largest_free(box, [BoxPx(30, 0, 100, 100)]) == BoxPx(0, 0, 30, 100)
    assert largest_free(box, [box]).area == 0


@requires_corpus
def test_the_permission_dialog_offers_no_point_on_allow() -> None:
    tree = read_tree(CORPUS_DIR / "droidbotexp_qqmusic/qqmusic_2021-11-23/step_025/screen.xml")
    assert all(e.resource_id != "grant_singleton" for e in tree.prompt_elements)
    allow = next(e for e in tree.prompt_elements if e.text == "WHILE USING THE APP")
    for e in tree.prompt_elements:
        if e is not allow:
            assert not allow.box_px.contains(e.box_px.center), e.text
    assert _centre_on_another(tree) == []


@requires_corpus
def test_the_qq_music_page_root_is_no_button() -> None:
    for step in ("step_041", "step_042", "step_044"):
        tree = read_tree(CORPUS_DIR / f"droidbotexp_qqmusic/qqmusic_2021-11-23/{step}/screen.xml")
        labels = [str(row[1]) for row in _rows(tree).get("btn", [])]
        assert not any(label.startswith("焦点图") for label in labels), step
        assert _centre_on_another(tree) == []


@requires_corpus
def test_no_corpus_action_is_offered_on_another_one() -> None:
    index = [json.loads(line) for line in (CORPUS_DIR / "index.jsonl").open()]
    hits = {}
    for entry in index:
        tree = read_tree(Path(CORPUS_DIR) / entry["path"] / "screen.xml")
        if found := _centre_on_another(tree):
            hits[entry["path"]] = found
    assert hits == {}  # the audit counted 94 on 76 screens


# --- 2: sliders ---------------------------------------------------------------------------------


def test_a_seekbar_that_says_it_takes_no_click_is_a_slider() -> None:
    tree = read_tree(screen(
        node((75, 800, 1005, 860), text="Brush size", cls=TXT),
        node((75, 907, 1005, 961), cls="android.widget.SeekBar", focusable=True,
             resource_id="app:id/brushSizeSeekBar"),
    ))
    slider = _rows(tree)["slider"]
    assert slider == [[1, "[brushSizeSeekBar]", "69 378 931 400"]]  # the box: where to drag
    element = next(e for e in tree.prompt_elements if e.kind == "slider")
    assert element.box_px == BoxPx(75, 907, 1005, 961)


def test_a_rating_bar_only_showing_a_rating_is_no_slider() -> None:
    [shown] = read_tree(screen(node((100, 500, 600, 560), cls="android.widget.RatingBar",
                                    content_desc="4.5 stars"))).elements
    assert not shown.flags & ElementFlag.CLICKABLE  # what it was: a rating to read
    settable = read_tree(screen(node((100, 500, 600, 560), cls="android.widget.RatingBar",
                                     content_desc="Rate", focusable=True)))
    [rate] = settable.elements
    assert rate.kind == "slider" and rate.flags & ElementFlag.CLICKABLE
    assert "slider" not in _rows(read_tree(screen(
        node((100, 500, 600, 560), cls="android.widget.RatingBar")
    )))


@requires_corpus
@pytest.mark.parametrize("step", [
    "fdroidutg_apps/anupam.acrylic/step_003",
    "droidbotexp_qqmusic/qqmusic_2021-11-23/step_034",
    "droidbotexp_qqmusic/qqmusic_2021-11-23/step_035",
])
def test_corpus_sliders_are_offered(step: str) -> None:
    tree = read_tree(CORPUS_DIR / step / "screen.xml")
    rows = _rows(tree)
    assert len(rows["slider"]) == 1
    assert len(str(rows["slider"][0][2]).split()) == 4


# --- 4: one target offered once -----------------------------------------------------------------


def test_a_frame_and_its_checkbox_icon_are_one_check() -> None:
    tree = read_tree(screen(node(
        (60, 916, 132, 973),
        node((60, 916, 108, 964), cls=IMG, clickable=True, checkable=True, checked=True,
             resource_id="app:id/iv_login_view_protocol"),
        clickable=True, resource_id="app:id/fl_login_view_protocol_container",
    )))
    [one] = _actions(tree)
    assert one.flags & ElementFlag.CHECKABLE and one.flags & ElementFlag.CHECKED
    assert one.resource_id == "iv_login_view_protocol"
    assert _rows(tree)["btn"] == [[1, "[iv_login_view_protocol]", "89 393", "on"]]
    assert one.box_px == BoxPx(60, 916, 132, 973)  # the outer box: both take the tap there


def test_a_labelled_tile_and_its_empty_twin_are_one() -> None:
    tree = read_tree(screen(node(
        (44, 1132, 358, 1446),
        node((44, 1132, 358, 1400), cls=IMG, clickable=True),
        node((44, 1400, 358, 1446), text="中国潮音主题对战观后感", cls=TXT),
        clickable=True,
    )))
    assert [(e.text, tuple(e.box_px)) for e in _actions(tree)] == [
        ("中国潮音主题对战观后感", (44, 1132, 358, 1446))
    ]


def share_target(avatar_box: tuple[int, int, int, int], name: str = "Ann") -> str:
    """Douyin's share sheet: a cell and the avatar in it, both named after the contact."""
    return node(
        (35, 1380, 273, 1713),
        node(avatar_box, cls=IMG, clickable=True, content_desc="Ann"),
        node((35, 1604, 273, 1660), text=name, cls=TXT),
        clickable=True,
    )


def test_a_cell_and_its_avatar_named_the_same_are_one() -> None:
    tree = read_tree(screen(share_target((56, 1380, 252, 1576))))  # 48% of the cell
    assert [(e.text, tuple(e.box_px)) for e in _actions(tree)] == [
        ("Ann", (35, 1380, 273, 1713))
    ]


def test_named_the_same_but_small_they_stay_two() -> None:
    """Under a quarter of the cell the avatar is no twin even so named."""
    tree = read_tree(screen(share_target((100, 1500, 200, 1600))))
    assert len(_actions(tree)) == 2


def test_a_row_holding_two_controls_is_no_twin() -> None:
    tree = read_tree(screen(node(
        (0, 500, 1080, 700),
        node((0, 500, 1000, 700), cls=IMG, clickable=True),
        node((1000, 500, 1080, 700), text="More", cls=BTN, clickable=True),
        clickable=True, content_desc="Row",
    )))
    # the picture is not folded into the row: the row's middle is on it, and nothing of the
    # row is left clear of its two controls, so the row is read, not tapped
    assert [e.class_name for e in _actions(tree)] == [IMG, BTN]
    assert ["Row", "500 250"] in _rows(tree)["text"]


RADIO = "android.widget.RadioButton"


def _option_row(top: int, label: str, *, chosen: bool, control: str = RADIO) -> str:
    """A Compose selectable row: the control at its start, its label beside it; the chosen
    option's radio takes no taps of its own (the row does)."""
    return node(
        (96, top, 2704, top + 155),
        node((97, top + 7, 239, top + 149), cls=control, checkable=True, checked=chosen,
             clickable=not chosen),
        node((263, top + 48, 720, top + 108), text=label, cls=TXT),
        clickable=True, cls="android.view.View",
    )


def test_an_option_row_and_its_radio_are_one_radio() -> None:
    # E7's engine picker (a held-out dump): the rows took the labels and each unchosen radio
    # was offered apart, unlabelled
    tree = read_tree(dump(node(
        (0, 0, 2800, 1272),
        _option_row(439, "YOLO", chosen=True),
        _option_row(594, "Built-in", chosen=False),
        _option_row(749, "GPU", chosen=False),
    )))
    assert [(e.kind, e.text, bool(e.flags & ElementFlag.CHECKED)) for e in _actions(tree)] == [
        ("radio", "YOLO", True), ("radio", "Built-in", False), ("radio", "GPU", False)
    ]
    built_in = _actions(tree)[1]
    assert built_in.box_px == BoxPx(96, 594, 2704, 749)  # the row's: a tap there chooses it
    radio_node = next(
        i for i in range(tree.raw.count) if tree.raw.string(i, 3) == RADIO
        and tree.element_of_node[i] not in (-1, _actions(tree)[0].id)
    )
    assert tree.element_of_node[radio_node] == built_in.id  # a tap on the radio is the row's


@pytest.mark.parametrize("control", ["android.widget.CheckBox", "android.widget.Switch"])
def test_a_row_around_its_checkbox_or_switch_stays_two(control: str) -> None:
    # a row may do something else than toggle them (Settings' Wi-Fi row opens its page)
    tree = read_tree(dump(node(
        (0, 0, 2800, 1272), _option_row(594, "Wi-Fi", chosen=False, control=control),
    )))
    assert [(e.kind, e.text) for e in _actions(tree)] == [
        ("btn", "Wi-Fi"), ("check" if "Check" in control else "switch", "")
    ]


@requires_corpus
def test_weibo_terms_checkbox_is_offered_once() -> None:
    tree = read_tree(CORPUS_DIR / "fdroidutg_weibo/weibo_2023-10-24/step_002/screen.xml")
    ids = [e.resource_id for e in tree.prompt_elements]
    assert ("fl_login_view_protocol_container" in ids) + ("iv_login_view_protocol" in ids) == 1


# --- 6: junk labels and slivers -----------------------------------------------------------------


@pytest.mark.parametrize(("label", "said"), [
    ("http%3A%2F%2Fstatic.akamai.startappexchange.com%2Fa.png", ""),
    ("http%3A%2F%2Fstatic.akamai.startappexcha…", ""),
    ("*&*", ""),
    ("Save | *&*", "Save"),
    ("\uf053", ""),
    ("../", "../"),
    ("×", "×"),
    ("Sale 50% off", "Sale 50% off"),
    ("382.6K*&*Followers", "382.6K*&*Followers"),
])
def test_junk_pieces_are_no_label(label: str, said: str) -> None:
    assert without_junk(label) == said


def test_an_ad_image_described_by_its_address_is_an_unlabelled_control() -> None:
    tree = read_tree(screen(node(
        (0, 700, 1080, 1300), cls=IMG, clickable=True, resource_id="app:id/ad_image",
        content_desc="http%3A%2F%2Fstatic.example.com%2Fcreative%2F1.png",
    )))
    assert _rows(tree)["btn"] == [[0, "[ad_image]", "500 417"]]


def test_slivers_are_measured_in_dp() -> None:
    def offered(width: int, height: int, side: int) -> bool:
        xml = dump(node((0, 0, width, height), node(
            (100, 500, 600, 500 + side), text="Command", cls=TXT, clickable=True,
        )))
        return any(e.text == "Command" for e in read_tree(xml).prompt_elements)

    assert not offered(1080, 2400, 10) and offered(1080, 2400, 16)  # 5 dp = 15 px
    assert not offered(1440, 3120, 18) and offered(1440, 3120, 20)  # 5 dp = 20 px
    assert offered(720, 1280, 10)  # 5 dp = 10 px


@requires_corpus
def test_no_junk_labels_on_the_audit_screens() -> None:
    for step in (
        "droidbot_admob_apps/com.HomeCleaningGames/step_006",
        "fdroidutg_weibo/weibo_2023-10-24/step_008",
        "fdroidutg_weibo/weibo_2023-10-24/step_024",
    ):
        prompt = read_tree(CORPUS_DIR / step / "screen.xml").to_prompt()
        assert "%2F" not in prompt and '"*&*"' not in prompt, step
