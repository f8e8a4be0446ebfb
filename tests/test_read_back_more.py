"""The read-back check on screens of one app: list rows whose labels are several pieces, a title
the app's pages share, labels in scripts the recogniser does not read (real lxml, real OCR on
screens drawn here)."""

from __future__ import annotations

from collections.abc import Iterator

import cv2
import numpy as np
import numpy.typing as npt
import pytest
from _frames import png
from _xml import dump, node

from perception import Perceiver
from perception.fusion.crossval import read_back_sample
from perception.fusion.score import read_back_failed
from perception.fusion.table import ElementTable
from perception.tree import read_tree
from perception.types import ScreenSize

W, H = 1080, 2400
TITLE = "Activity Launcher"
ROW_H = 192


@pytest.fixture(scope="module")
def perceiver_factory() -> Iterator[object]:
    from perception.pipeline import PixelChannel
    from perception.pixel import PixelReader

    with PixelReader() as reader:
        yield lambda: Perceiver(pixels=PixelChannel(reader))


def _row_box(k: int) -> tuple[int, int, int, int]:
    top = 300 + k * ROW_H
    return (0, top, W, top + ROW_H - 4)


def _name_box(k: int) -> tuple[int, int, int, int]:
    top = _row_box(k)[1]
    return (240, top + 40, 924, top + 128)


def page(names: list[str], tabs: list[str] = ()) -> bytes:  # type: ignore[assignment]
    """An app page: its title in the app bar, then one list row a name (an icon described
    "Icon:" beside the name: the row's label is "Icon: | <name>", two pieces)."""
    rows = [
        node(
            _row_box(k),
            node((90, _row_box(k)[1] + 20, 200, _row_box(k)[1] + 150),
                 cls="android.widget.ImageView", content_desc="Icon:"),
            node(_name_box(k), cls="android.widget.TextView", text=name),
            cls="android.widget.LinearLayout", clickable=True,
        )
        for k, name in enumerate(names)
    ]
    title = node((48, 115, 700, 196), cls="android.widget.TextView", text=TITLE)
    return dump(node((0, 0, W, H), title, *rows, cls="android.widget.FrameLayout",
                     package="com.example.launcher"))


def frame(names: list[str]) -> bytes:
    """What the page with these row names looks like."""
    img: npt.NDArray[np.uint8] = np.full((H, W, 3), 250, np.uint8)
    cv2.rectangle(img, (0, 0), (W, 240), (120, 80, 30), -1)
    cv2.putText(img, TITLE, (48, 180), cv2.FONT_HERSHEY_SIMPLEX, 2.0, (255, 255, 255), 4)
    for k, name in enumerate(names):
        x0, y0, _x1, y1 = _name_box(k)
        cv2.circle(img, (145, _row_box(k)[1] + 85), 50, (40, 160, 60), -1)
        cv2.putText(img, name, (x0, y1 - 22), cv2.FONT_HERSHEY_SIMPLEX, 1.8, (30, 30, 30), 4)
    return png(img)


SHOWN = ["Downloads", "Calendar", "Messages", "Settings"]
BEFORE = ["Flashlight", "Gallery", "Weather", "Contacts"]


def test_a_page_sharing_only_its_title_with_the_frame_does_not_read_back(
    perceiver_factory: object,
) -> None:
    """The app's previous page over this frame: the title reads back where the tree puts it,
    the rows' names do not. The rows' labels are two pieces each (an icon's description and
    the name), so the names are read in their own text boxes; the title alone does not pass
    the tree. The page the frame shows reads back."""
    p = perceiver_factory  # type: ignore[assignment]
    other = p().perceive(page(BEFORE), frame(SHOWN))  # type: ignore[operator]
    assert other.consistent is False and other.tree_factors.get("read_back") == 0.4
    assert any("Flashlight" in n and "reads back" in n for n in other.notes)
    same = p().perceive(page(SHOWN), frame(SHOWN))  # type: ignore[operator]
    assert same.consistent is True and "read_back" not in same.tree_factors
    assert "read_back" in same.timings_ms


def test_one_shared_row_of_four_does_not_pass_the_tree(perceiver_factory: object) -> None:
    """A row both pages show (one in four) reads back; the other three do not: too few."""
    p = perceiver_factory  # type: ignore[assignment]
    mixed = ["Downloads", *BEFORE[1:]]
    obs = p().perceive(page(mixed), frame(SHOWN))  # type: ignore[operator]
    assert obs.consistent is False and obs.tree_factors.get("read_back") == 0.4
    assert any("only 1 of the tree's 4 labels" in n for n in obs.notes)
    # Two of four (an OCR miss or a changed row on the right page) still pass.
    half = ["Downloads", "Calendar", *BEFORE[2:]]
    assert p().perceive(page(half), frame(SHOWN)).consistent is True  # type: ignore[operator]


def test_the_share_that_fails() -> None:
    assert not read_back_failed(1, 0)  # one label: an OCR miss says nothing
    assert read_back_failed(2, 0) and not read_back_failed(2, 1)
    assert read_back_failed(3, 0) and not read_back_failed(3, 1)
    assert read_back_failed(4, 1) and not read_back_failed(4, 2)


def test_labels_the_recogniser_cannot_say_are_not_sampled() -> None:
    """Cyrillic, Korean and Arabic labels read as nothing or look-alikes on their own screen;
    Latin (accents too) and Han labels are sampled."""
    texts = ["Русский", "비디오", "الإعدادات", "Português", "推荐歌单", "Settings"]
    items = [
        node((80, 300 + 160 * k, 700, 400 + 160 * k), cls="android.widget.Button", text=t,
             clickable=True)
        for k, t in enumerate(texts)
    ]
    tree = read_tree(dump(node((0, 0, W, H), *items, cls="android.widget.FrameLayout")))
    table = ElementTable(tree.elements)
    picked = read_back_sample(table, hidden=frozenset(), frame_size=ScreenSize(W, H))
    assert [table.texts[i] for i in picked] == ["Português", "推荐歌单", "Settings"]
