"""Occlusion by what is drawn later, together: union coverage, covered centres (tap boxes) and
open navigation drawers. Screens we write here, then the corpus screens the review named."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _xml import screen
from conftest import CORPUS_DIR, requires_corpus

from perception import ElementFlag, fastpath, read_tree
from perception.tree import Tree
from perception.tree.occlusion import TAP_SIDE_SHARE
from perception.tree.write import node
from perception.types import TreeElement

pytestmark = pytest.mark.usefixtures("pipeline_impl")

TXT = "android.widget.TextView"
DRAWER = "androidx.drawerlayout.widget.DrawerLayout"


def by_text(tree: Tree) -> dict[str, TreeElement]:
    return {e.text: e for e in tree.elements}


def offered(tree: Tree) -> set[str]:
    return {e.text for e in tree.prompt_elements}



def corpus_files() -> list[Path]:
    return sorted(CORPUS_DIR.rglob("screen.xml")) + sorted((CORPUS_DIR / "dumps").glob("*.xml"))

# --- several covers together -------------------------------------------------------------------


def test_two_later_covers_together_occlude() -> None:
    # Each bar covers half of the button (neither 80% alone): together all of it.
    tree = read_tree(screen(
        node((0, 1000, 1080, 1200), text="Buy", clickable=True),
        node((0, 1000, 540, 1200), content_desc="Left bar", clickable=True),
        node((540, 1000, 1080, 1200), content_desc="Right bar", clickable=True),
    ))
    assert by_text(tree)["Buy"].occluded
    assert offered(tree) == {"Left bar", "Right bar"}


def test_overlapping_covers_count_once() -> None:
    # 50% and 50% overlapping by 30%: the union is 70%, not 100%; the centre stays free.
    tree = read_tree(screen(
        node((0, 1000, 1000, 1200), text="Row", clickable=True),
        node((0, 1000, 500, 1200), content_desc="A", clickable=True),
        node((200, 1000, 700, 1200), content_desc="B", clickable=True),
    ))
    row = by_text(tree)["Row"]
    assert not row.occluded
    assert tuple(row.box_px) == (700, 1000, 1000, 1200)  # its centre was on A and B


# --- covered centres: the tap box --------------------------------------------------------------


def test_row_under_a_bottom_bar_is_tapped_on_its_visible_part() -> None:
    # The bottom bar covers the lower 60% of the row and its centre.
    tree = read_tree(screen(
        node((0, 1700, 1080, 1900), text="Song", clickable=True),
        node((0, 1780, 1080, 2000), content_desc="Player", clickable=True),
    ))
    song = by_text(tree)["Song"]
    assert not song.occluded
    assert tuple(song.box_px) == (0, 1700, 1080, 1780)
    assert "Song" in offered(tree)
    prompt = json.loads(tree.to_prompt())
    assert ["Song", "500 725"] in [row[1:3] for row in prompt["btn"]]


def test_a_sliver_left_visible_is_occluded() -> None:
    # 21 of 100 px visible (79% covered), a strip under 1/45 of the shorter side (24 px):
    # nothing to aim at.
    side = 1080 * TAP_SIDE_SHARE[0] // TAP_SIDE_SHARE[1]
    tree = read_tree(screen(
        node((0, 1700, 1080, 1800), text="Comment", clickable=True),
        node((0, 1700 + side - 3, 1080, 2000), content_desc="Bar", clickable=True),
    ))
    assert by_text(tree)["Comment"].occluded


def test_static_text_and_lists_keep_their_box() -> None:
    # Only actions get a tap box: a text is read, a list is swiped.
    tree = read_tree(screen(
        node((0, 600, 1080, 800), text="Caption", cls=TXT),
        node((0, 300, 1080, 1500), node((0, 300, 1080, 500), text="Item", clickable=True),
             cls="android.widget.ListView", scrollable=True, resource_id="app:id/list"),
        node((400, 650, 700, 1000), content_desc="Floating", clickable=True),
    ))
    assert tuple(by_text(tree)["Caption"].box_px) == (0, 600, 1080, 800)
    listed = next(e for e in tree.elements if e.kind == "list")
    assert tuple(listed.box_px) == (0, 300, 1080, 1500) and not listed.occluded


# --- what is not a cover -----------------------------------------------------------------------


def test_row_and_the_switch_inside_it() -> None:
    tree = read_tree(screen(node(
        (0, 500, 1080, 700),
        node((40, 560, 500, 640), text="Wi-Fi", cls=TXT),
        node((300, 520, 1040, 680), cls="android.widget.Switch", checkable=True, clickable=True,
             content_desc="Toggle"),
        clickable=True,
    )))
    for e in tree.elements:
        assert not e.occluded
    # no cover, but the switch holds the row's centre: the row is offered on the part of its
    # box left of the switch (perception.tree.occlusion.clear_of_controls)
    row = next(e for e in tree.elements if "Wi-Fi" in e.text)
    assert tuple(row.box_px) == (0, 500, 300, 700)


def test_clickable_full_screen_wrapper_is_no_cover_of_its_dialog() -> None:
    tree = read_tree(screen(node(
        (0, 0, 1080, 2400),
        node((60, 900, 1020, 1500),
             node((100, 1300, 500, 1400), text="Allow", clickable=True),
             node((580, 1300, 980, 1400), text="Deny", clickable=True)),
        clickable=True, resource_id="app:id/grant_singleton",
    )))
    assert {"Allow", "Deny"} <= offered(tree)
    assert tuple(by_text(tree)["Allow"].box_px) == (100, 1300, 500, 1400)


def test_badge_over_an_icon_corner() -> None:
    tree = read_tree(screen(
        node((100, 100, 244, 244), content_desc="Inbox", clickable=True,
             cls="android.widget.ImageView"),
        node((190, 100, 244, 154), node((190, 100, 244, 154), text="3", cls=TXT),
             clickable=True),
    ))
    inbox = by_text(tree)["Inbox"]
    assert not inbox.occluded and tuple(inbox.box_px) == (100, 100, 244, 244)


def test_toolbar_over_a_collapsing_header() -> None:
    # The header image scrolled under the toolbar: its centre is below the toolbar's buttons.
    tree = read_tree(screen(
        node((0, 0, 1080, 600), content_desc="Cover photo", clickable=True,
             cls="android.widget.ImageView"),
        node((0, 0, 1080, 168), node((0, 0, 168, 168), content_desc="Back", clickable=True),
             node((912, 0, 1080, 168), content_desc="Share", clickable=True),
             cls="android.view.ViewGroup", resource_id="app:id/toolbar"),
    ))
    cover = by_text(tree)["Cover photo"]
    assert not cover.occluded and tuple(cover.box_px) == (0, 0, 1080, 600)


# --- navigation drawers ------------------------------------------------------------------------


def _drawer_screen(drawer_box: tuple[int, int, int, int] | None) -> bytes:
    kids = [node((0, 0, 1080, 2400),
                 node((0, 0, 168, 168), content_desc="Open menu", clickable=True),
                 node((0, 2200, 540, 2400), text="Home tab", clickable=True),
                 node((540, 2200, 1080, 2400), text="Search tab", clickable=True))]
    if drawer_box is not None:
        kids.append(node(drawer_box,
                         node((0, 200, 800, 360), text="Settings", clickable=True),
                         node((0, 360, 800, 520), text="Search", clickable=True),
                         resource_id="app:id/nav_drawer"))
    return screen(node((0, 0, 1080, 2400), *kids, cls=DRAWER))


def test_open_drawer_occludes_the_page_behind_it() -> None:
    tree = read_tree(_drawer_screen((0, 0, 800, 2400)))
    # the Search tab is outside the drawer, under the scrim the DrawerLayout draws
    assert offered(tree) == {"Settings", "Search", ""}  # "": the scrim, [close_drawer]
    for name in ("Open menu", "Home tab", "Search tab"):
        assert by_text(tree)[name].occluded


def test_the_scrim_beside_an_open_drawer_is_offered_to_close_it() -> None:
    """The strip beside an open drawer closes it on a tap (the DrawerLayout draws it; no node of
    the dump): offered as ``[close_drawer]``, so the page's taps that land there are covered
    by what they do."""
    tree = read_tree(_drawer_screen((0, 0, 800, 2400)))
    scrim = [e for e in tree.prompt_elements if e.resource_id == "close_drawer"]
    assert len(scrim) == 1 and scrim[0].clickable and scrim[0].kind == "btn"
    assert tuple(scrim[0].box_px) == (800, 0, 1080, 2400) and scrim[0].text == ""
    assert '"[close_drawer]","870 500"' in tree.to_prompt()
    right = read_tree(_drawer_screen((280, 0, 1080, 2400)))  # a drawer from the right edge
    assert [tuple(e.box_px) for e in right.prompt_elements if e.resource_id == "close_drawer"] == [
        (0, 0, 280, 2400)
    ]
    full = read_tree(_drawer_screen((0, 0, 1080, 2400)))  # nothing beside it to tap
    assert not [e for e in full.elements if e.resource_id == "close_drawer"]


def test_closed_drawer_occludes_nothing() -> None:
    for box in (None, (-800, 0, 0, 2400)):  # not dumped, or off the screen
        tree = read_tree(_drawer_screen(box))
        assert {"Open menu", "Home tab", "Search tab"} <= offered(tree)


# --- the corpus screens of the review ----------------------------------------------------------


@pytest.fixture(scope="module")
def corpus() -> Path:
    return CORPUS_DIR


def _tree(corpus: Path, path: str) -> Tree:
    return read_tree(corpus / path / "screen.xml")


def _at(tree: Tree, x: int, y: int) -> list[str]:
    return [e.text for e in tree.prompt_elements if e.box_px.contains((x, y))]


@requires_corpus
def test_yelp_drawer_hides_the_bottom_tabs(corpus: Path) -> None:
    tree = _tree(corpus, "droidbot_yelp/yelp_2017/step_015")
    texts = [e.text for e in tree.prompt_elements]
    assert texts.count("Search") == 1 and "Me" not in texts
    # everything offered is in the drawer (0-1050 px across): the page right of it is dimmed,
    # and the dimmed strip closes the drawer
    page = [e for e in tree.prompt_elements if e.resource_id != "close_drawer"]
    assert all(e.box_px.center.x < 1050 for e in page)
    (scrim,) = (e for e in tree.prompt_elements if e.resource_id == "close_drawer")
    assert tuple(scrim.box_px) == (1050, 84, 1440, 2392)
    hint = next(e for e in tree.elements if e.text.startswith("Bookmarks are a great way"))
    assert hint.occluded  # the page's text, dimmed under the scrim


@requires_corpus
def test_documentsui_drawer_scrim_takes_the_grid_view_tap(corpus: Path) -> None:
    # DroidBot tapped Grid view under the scrim: the drawer closed and the list view stayed
    # (result_step 7, not the grid view of step 8).
    tree = _tree(corpus, "testcube_transsion/chatter_2025-01-25/step_009")
    grid = by_text(tree)["Grid view"]
    assert grid.occluded
    # what the tap did is offered where it landed: the scrim, which closes the drawer
    assert [e.resource_id for e in tree.prompt_elements if e.box_px.contains(grid.box_px.center)
            ] == ["close_drawer"]
    tree = _tree(corpus, "fdroidutg_apps/anupam.acrylic/step_007")
    assert by_text(tree)["Show roots"].occluded


@requires_corpus
def test_eyecheck_start_test_is_tapped_above_the_close_handle(corpus: Path) -> None:
    tree = _tree(corpus, "droidbot_admob_apps/andrei.brusentcov.eyecheck.free/step_011")
    start = by_text(tree)["Start test"]
    assert start in tree.prompt_elements
    x, y = start.box_px.center
    assert "Close" not in _at(tree, x, y)  # the review: "the middle of its box is on Close"
    assert tuple(start.box_px) == (60, 439, 708, 484)  # the strip above the handle


@requires_corpus
def test_weibo_translate_under_the_repost_bar(corpus: Path) -> None:
    tree = _tree(corpus, "fdroidutg_weibo/weibo_2023-10-24/step_029")
    hidden = [e for e in tree.elements if e.text == "Translate content" and e.box_px.top >= 1626]
    assert hidden and all(e.occluded for e in hidden)


@requires_corpus
def test_duolingo_popup_holds_no_other_centre(corpus: Path) -> None:
    tree = _tree(corpus, "llamatouch/trace_18/step_003")
    # the popup and the lesson card inside it, one target, are one element (cluster's
    # nested twins): the card's, on the popup's box
    popup = next(e for e in tree.prompt_elements if e.text.startswith("Use basic phrases"))
    assert tuple(popup.box_px) == (84, 980, 996, 1402)
    for e in tree.prompt_elements:
        if e.resource_id in ("oval", "characterLottieAnimation"):
            assert not popup.box_px.contains(e.box_px.center)


@requires_corpus
def test_no_offered_action_has_its_centre_under_a_later_cover(corpus: Path) -> None:
    """Corpus-wide: an agent tapping an offered action's centre hits it, not a clickable node
    drawn later outside it (the review counted 53 such elements on 27 screens)."""
    for path in corpus_files():
        tree = read_tree(path)
        clean = tree.cleaned
        clip, bits, rank, end = clean.clip_px, clean.bits, clean.rank, clean.end
        takes_taps = fastpath.B_ROOT_MASK & ~fastpath.B_EDITABLE & ~int(ElementFlag.CHECKABLE)
        blockers = np.flatnonzero(
            ((bits & (takes_taps | fastpath.B_WINDOW_ROOT)) != 0)
            & ((bits & fastpath.B_DROPPED) == 0)
        ).tolist()
        for e in tree.prompt_elements:
            n = e.node
            if not bits[n] & fastpath.B_ROOT_MASK:
                continue
            x, y = e.box_px.center
            for b in blockers:
                if rank[b] <= rank[n] or n <= b < end[n] or b <= n < end[b]:
                    continue
                left, top, right, bottom = clip[b].tolist()
                assert not (left <= x < right and top <= y < bottom), (path, e)
