"""A dump that holds only a pop-up window (an overflow menu, a dialog dumped alone) covers its
own window, not the screen: where its labels read back off the pixels, the page around it is
not content the tree lost (audit 19 A, defect 8: AeonDroid's overflow menu went unstable and
the whole frame was read)."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt
from _frames import png
from _xml import dump, node

from perception import Perceiver
from perception.fusion.arbiter import ArbiterState
from perception.fusion.score import TreeEvidence, tree_confidence
from perception.pipeline import PixelChannel
from perception.pixel import PixelReader
from perception.types import TreeHealth

W, H = 1080, 2400
MENU = (560, 90, 1060, 470)
ITEMS = (((560, 110, 1060, 280), "Share page"), ((560, 290, 1060, 460), "About"))
PAGE = ("Inbox", "Starred", "Snoozed", "Important", "Sent", "Scheduled", "Outbox", "Drafts")


def _page() -> npt.NDArray[np.uint8]:
    """The app's list under the menu, drawn all over the screen."""
    img = np.full((H, W, 3), 250, np.uint8)
    cv2.rectangle(img, (0, 0), (W, 80), (40, 40, 40), -1)
    for k, label in enumerate(PAGE * 2):
        top = 120 + 140 * k
        cv2.putText(img, label, (60, top + 80), cv2.FONT_HERSHEY_SIMPLEX, 1.6, (20, 20, 20), 3)
        cv2.putText(img, f"{k + 3} new", (60, top + 125), cv2.FONT_HERSHEY_SIMPLEX, 1.0,
                    (90, 90, 90), 2)
    return img


def _with_menu(img: npt.NDArray[np.uint8], items: tuple[tuple[tuple[int, ...], str], ...]
               ) -> npt.NDArray[np.uint8]:
    out = img.copy()
    x0, y0, x1, y1 = MENU
    cv2.rectangle(out, (x0 - 4, y0 - 4), (x1 + 4, y1 + 6), (160, 160, 160), -1)
    cv2.rectangle(out, (x0, y0), (x1, y1), (255, 255, 255), -1)
    for (left, top, _, bottom), text in items:
        cv2.putText(out, text, (left + 40, (top + bottom) // 2 + 18), cv2.FONT_HERSHEY_SIMPLEX,
                    1.6, (20, 20, 20), 3)
    return out


def _menu_dump() -> bytes:
    """The overflow menu's window dumped alone (uiautomator gives the focused pop-up)."""
    rows = [
        node(box, text=text, cls="android.widget.TextView", clickable=True,
             resource_id="android:id/title")
        for box, text in ITEMS
    ]
    return dump(node(MENU, node(MENU, *rows, cls="android.widget.ListView"),
                     cls="android.widget.PopupWindow$PopupDecorView"))


def test_a_pop_up_menu_dumped_alone_over_its_page_is_trusted(reader: PixelReader) -> None:
    frame = png(_with_menu(_page(), ITEMS))
    obs = Perceiver(pixels=PixelChannel(reader)).perceive(_menu_dump(), frame)
    assert obs.state is ArbiterState.TREE
    assert "coverage" not in obs.tree_factors
    assert [c.text for c in obs.candidates if c.listed] == ["Share page", "About"]


def test_a_pop_up_dump_whose_labels_do_not_read_back_keeps_the_screens_coverage(
    reader: PixelReader,
) -> None:
    """The same dump over a frame whose menu says other things: no proof the window is on the
    screen, so the page around it still counts as content the tree does not hold."""
    other = (((560, 110, 1060, 280), "Print"), ((560, 290, 1060, 460), "Settings"))
    frame = png(_with_menu(_page(), other))
    obs = Perceiver(pixels=PixelChannel(reader)).perceive(_menu_dump(), frame)
    assert obs.tree_factors["coverage"] < 0.7
    assert obs.state is not ArbiterState.TREE


def _health(*, floating: bool) -> TreeHealth:
    return TreeHealth(
        node_count=4, kept_count=2, element_count=2, nodes_per_mpx=0.8, text_share=1.0,
        webview_area_share=0.0, surface_area_share=0.0, canvas_area_share=0.0,
        covered_area_share=0.07, looks_partial=False, empty=False, floating_window=floating,
    )


def test_the_coverage_of_a_pop_up_whose_labels_read_back_is_of_its_own_window() -> None:
    seen = dict(coverage=0.04, window_content=0.05, text_on_pixels=1.0, text_boxes=2)
    popup = tree_confidence(TreeEvidence(
        health=_health(floating=True), read_back_sampled=2, read_back_agreed=1, **seen))
    assert "coverage" not in popup.factors  # 0.04 of 0.05: 80% of its window
    # Unread (too few labels sampled), read back too little, or no floating window: the screen.
    for evidence in (
        TreeEvidence(health=_health(floating=True), **seen),
        TreeEvidence(health=_health(floating=True), read_back_sampled=3, read_back_agreed=0,
                     **seen),
        TreeEvidence(health=_health(floating=False), read_back_sampled=2, read_back_agreed=2,
                     **seen),
    ):
        assert tree_confidence(evidence).factors["coverage"] == 0.64


def test_the_corpus_overflow_menu_dumped_alone_is_trusted(corpus_dir: Path,
                                                           reader: PixelReader) -> None:
    """AeonDroid's overflow menu (Settings, About) over its list: tree-dominant, no OCR of the
    whole frame."""
    folder = corpus_dir / "fdroidutg_apps/io.github.phora.aeondroid/step_001"
    obs = Perceiver(pixels=PixelChannel(reader)).perceive(
        (folder / "screen.xml").read_bytes(), (folder / "screen.jpg").read_bytes()
    )
    assert obs.state is ArbiterState.TREE
    assert "coverage" not in obs.tree_factors
