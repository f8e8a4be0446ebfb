"""Part of a page loading inside the app's own bars: a spinner on a blank panel is a wait; the
same spinner in the dump over a frame that shows the page drawn is a tree from before (the page
loaded between the two captures); a spinner beside text is neither.

Synthetic screens are ours (tests/_xml.py); the corpus screens are real and skip without it.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt
import pytest
from _frames import png
from _xml import dump, node

import perception
from perception import Observation, Perceiver
from perception.fusion.screen import OperationKind
from perception.pipeline import PixelChannel
from perception.pixel import PixelReader
from perception.tree import _names_loading

W, H = 1080, 2400
PKG = "com.example.feed"
SPINNER = (440, 1100, 640, 1300)
PB = "android.widget.ProgressBar"
BARS = [
    ((0, 80, 200, 260), "Navigate up", "android.widget.ImageButton"),
    ((220, 120, 700, 220), "Activity", "android.widget.TextView"),
    ((0, 2200, 360, 2400), "Home", "android.widget.TextView"),
    ((360, 2200, 720, 2400), "Search", "android.widget.TextView"),
    ((720, 2200, 1080, 2400), "Me", "android.widget.TextView"),
]


def feed(
    *,
    spinner: str = "android.widget.ProgressBar",
    spinner_id: str = "",
    spinner_box: tuple[int, int, int, int] = SPINNER,
    rows_above: int = 0,
) -> bytes:
    """A toolbar and a bottom bar (tappable, labelled), a blank clickable panel between them
    holding a spinner, and optionally ``rows_above`` loaded rows of text over the spinner."""
    bars = [
        node(box, text=text, cls=cls, clickable=True, package=PKG) for box, text, cls in BARS
    ]
    rows = [
        node((0, 1100 - 150 * (k + 1), W, 1100 - 150 * k - 10), text=f"Post number {k}",
             cls="android.widget.TextView", clickable=True, package=PKG)
        for k in range(rows_above)
    ]
    panel = node(
        (0, 280, W, 2180),
        node(spinner_box, cls=spinner, resource_id=spinner_id, package=PKG),
        clickable=True, package=PKG, cls="android.widget.LinearLayout",
    )
    return dump(node((0, 0, W, H), *bars, panel, *rows, package=PKG))


def frame(*, drawn: bool) -> npt.NDArray[np.uint8]:
    """The bars with their labels; between them a blank panel with a ring, or (``drawn``) the
    loaded feed: rows of text the dump does not hold yet."""
    img = np.full((H, W, 3), 245, np.uint8)
    for (x0, y0, _, y1), text, _ in BARS:
        cv2.putText(img, text, (x0 + 20, (y0 + y1) // 2 + 15), cv2.FONT_HERSHEY_SIMPLEX, 1.4,
                    (20, 20, 20), 3)
    cv2.circle(img, (540, 1200), 70, (40, 40, 200), 14)
    if drawn:
        for k in range(12):
            y = 320 + 150 * k
            if 1040 <= y <= 1340:
                continue  # the ring stays where the dump's spinner is
            cv2.putText(img, f"Salon number {k} on Walnut St", (40, y + 60),
                        cv2.FONT_HERSHEY_SIMPLEX, 1.5, (30, 30, 30), 3)
    return img


def waits(obs: Observation) -> list[str]:
    return [o.reason for o in obs.operations if o.kind is OperationKind.WAIT]


@pytest.mark.parametrize(
    ("rid", "loading"),
    [
        ("com.yelp.android:id/loading_spinner_holder", True),
        ("com.sina.weibo:id/lottie_view_loading_circle", True),
        ("ivLoading", True),
        ("LOADING_VIEW", True),
        ("x:id/loadingbar", True),
        ("preloadingCache", False),
        ("unloading_dock", False),
        ("progress", False),
        ("", False),
    ],
)
def test_a_resource_name_says_loading_as_a_word(rid: str, loading: bool) -> None:
    assert _names_loading(rid) is loading


def test_a_spinner_on_a_blank_panel_between_the_bars_is_a_wait() -> None:
    tree = perception.read_tree(feed())
    assert tree.loading_spots == (perception.BoxPx(*SPINNER),)
    obs = Perceiver().perceive(xml=feed(), screen=perception.ScreenSize(W, H))
    assert len(waits(obs)) == 1 and "part of the page is loading" in waits(obs)[0]
    assert '"ops":[["wait"]]' in obs.to_prompt()
    # A view named for loading holds the spinner in some apps (Yelp's).
    named = feed(spinner="android.widget.FrameLayout", spinner_id=f"{PKG}:id/loading_holder")
    assert waits(Perceiver().perceive(xml=named, screen=perception.ScreenSize(W, H)))


@pytest.mark.parametrize(
    ("kwargs", "why"),
    [
        ({"rows_above": 3}, "a load-more footer under loaded rows"),
        ({"spinner_box": (40, 1180, 1040, 1200)}, "a horizontal bar: a download, a song"),
        ({"spinner_box": (480, 1160, 520, 1200)}, "smaller than 4% of the width"),
        ({"spinner": "android.widget.FrameLayout", "spinner_id": f"{PKG}:id/homeLoadingIndicator",
          "spinner_box": (0, 280, W, 2180)}, "a full-screen overlay kept over the loaded page"),
        ({"spinner": "android.widget.Spinner"}, "a drop-down is no loading indicator"),
    ],
)
def test_no_wait_where_the_spinner_is_no_page_loading(kwargs: dict[str, object], why: str) -> None:
    xml = feed(**kwargs)  # type: ignore[arg-type]
    obs = Perceiver().perceive(xml=xml, screen=perception.ScreenSize(W, H))
    assert not waits(obs), why


def test_the_pixels_decide_between_loading_and_a_tree_from_before(
    reader: PixelReader,
) -> None:
    blank = Perceiver(pixels=PixelChannel(reader)).perceive(
        xml=feed(), frame=png(frame(drawn=False))
    )
    assert blank.consistent is not False
    assert len(waits(blank)) == 1
    drawn = Perceiver(pixels=PixelChannel(reader)).perceive(
        xml=feed(), frame=png(frame(drawn=True))
    )
    # The page loaded between the dump and the screenshot: no wait, and the observation says
    # the two disagree (the agent observes again; the prompt warns, the pixels' rows are read).
    assert drawn.consistent is False and not waits(drawn)
    assert any("older than the frame" in n for n in drawn.notes)
    assert "tree and pixels disagree" in drawn.to_prompt()


def _scene(xml: bytes, img: npt.NDArray[np.uint8], reader: PixelReader) -> Observation:
    return Perceiver(pixels=PixelChannel(reader)).perceive(xml=xml, frame=png(img))


def _ring_frame(centre: tuple[int, int]) -> npt.NDArray[np.uint8]:
    img = np.full((H, W, 3), 245, np.uint8)
    cv2.circle(img, centre, 50, (40, 40, 200), 12)
    return img


def test_a_spinner_over_a_scrim_over_the_page_is_a_wait(reader: PixelReader) -> None:
    """The page under a translucent scrim is drawn, dimmed: the dump holds it, so it is no
    sign of another moment."""
    rows = [
        node((0, 300 + 160 * k, W, 440 + 160 * k), text=f"Message number {k}",
             cls="android.widget.TextView", package=PKG)
        for k in range(12)
    ]
    scrim = node((0, 0, W, H), node((480, 1140, 600, 1260), cls=PB, package=PKG),
                 clickable=True, resource_id=f"{PKG}:id/overlay", package=PKG)
    xml = dump(node((0, 0, W, H), *rows, scrim, package=PKG))
    img = np.full((H, W, 3), 120, np.uint8)
    for k in range(12):
        cv2.putText(img, f"Message number {k}", (40, 390 + 160 * k), cv2.FONT_HERSHEY_SIMPLEX,
                    1.5, (60, 60, 60), 3)
    cv2.circle(img, (540, 1200), 50, (230, 230, 230), 12)
    obs = _scene(xml, img, reader)
    assert obs.consistent is not False and waits(obs)


def test_a_video_buffering_is_a_wait_not_another_moment(reader: PixelReader) -> None:
    """A TextureView (a video, a map's or a camera's surface) is drawn content by itself."""
    xml = dump(node((0, 0, W, H), node((0, 0, W, H), cls="android.view.TextureView",
                                        package=PKG),
                    node((480, 1140, 600, 1260), cls=PB, package=PKG), package=PKG))
    rng = np.random.default_rng(3)
    img = cv2.resize(rng.integers(0, 255, (60, 27, 3), dtype=np.uint8), (W, H))
    obs = _scene(xml, img, reader)
    assert not any("older than the frame" in n for n in obs.notes) and waits(obs)


def test_the_keyboard_under_a_resized_page_is_not_the_page_drawn(reader: PixelReader) -> None:
    """Only the panel the spinner stands for is looked at (Tree.spot_area)."""
    field = node((0, 80, W, 260), node((40, 120, 1040, 220), text="pizza",
                                       cls="android.widget.EditText", clickable=True,
                                       package=PKG), package=PKG)
    panel = node((0, 260, W, 1450), node((480, 1180, 600, 1300), cls=PB, package=PKG),
                 package=PKG)
    xml = dump(node((0, 0, W, H), field, panel, package=PKG))
    img = _ring_frame(centre=(540, 1240))
    cv2.putText(img, "pizza", (60, 190), cv2.FONT_HERSHEY_SIMPLEX, 1.4, (20, 20, 20), 3)
    img[1450:] = 210
    for r in range(4):
        for c in range(10):
            x0, y0 = 10 + c * 107, 1480 + r * 220
            cv2.rectangle(img, (x0, y0), (x0 + 95, y0 + 190), (250, 250, 250), -1)
            cv2.putText(img, "qwertyuiop"[c], (x0 + 30, y0 + 120), cv2.FONT_HERSHEY_SIMPLEX,
                        1.6, (20, 20, 20), 3)
    obs = _scene(xml, img, reader)
    assert obs.consistent is not False and waits(obs)


def test_paragraphs_taller_than_the_band_are_text_around_a_load_more_spinner() -> None:
    """A block counts by its edge: its centre may lie far above the spinner."""
    blocks = [
        node((0, 300 + 600 * k, W, 890 + 600 * k), text=f"Paragraph {k} of the article",
             cls="android.view.View", package=PKG)
        for k in range(3)
    ]
    xml = dump(node((0, 0, W, H), *blocks,
                    node((480, 2250, 600, 2370), resource_id=f"{PKG}:id/loading_more",
                         package=PKG), package=PKG))
    assert not waits(Perceiver().perceive(xml=xml, screen=perception.ScreenSize(W, H)))


def test_a_tablets_48_dp_spinner_is_a_loading_spot() -> None:
    """4% of the shorter side: 96 px at density 2 on a 2560x1600 landscape screen."""
    w, h = 2560, 1600
    xml = dump(node((0, 0, w, h), node((0, 50, w, 200), text="Feed", package=PKG),
                    node((0, 200, w, h), node((1232, 852, 1328, 948), cls=PB, package=PKG),
                         clickable=True, package=PKG), package=PKG))
    assert perception.read_tree(xml).loading_spots
    assert waits(Perceiver().perceive(xml=xml, screen=perception.ScreenSize(w, h)))


# -- real screens ------------------------------------------------------------------------------


def _observe(corpus_dir: Path, reader: PixelReader, step: str) -> Observation:
    folder = corpus_dir / step
    if not folder.is_dir():
        pytest.skip(f"corpus screen {step} not found under {corpus_dir}")
    image = next(p for p in (folder / "screen.png", folder / "screen.jpg") if p.exists())
    return Perceiver(pixels=PixelChannel(reader)).perceive(
        xml=(folder / "screen.xml").read_bytes(), frame=image.read_bytes()
    )


@pytest.mark.parametrize(
    "step",
    [
        "droidbot_yelp/yelp_2017/step_006",  # Yelp's spinner on a blank feed under its tabs
        "droidbot_yelp/yelp_2017/step_013",  # the map placeholder spinning under the search
        # QQ Music's album list still loading in the dump ("正在载入…" and a spinner), drawn on
        # the screenshot, over the page it covers (the dump still holds that page: what is
        # drawn there it explains, and a wait is the safer word than "another moment").
        "droidbotexp_qqmusic/qqmusic_2021-11-23/step_005",
        "droidbotexp_qqmusic/qqmusic_2021-11-23/step_016",
    ],
)
def test_real_pages_loading_inside_their_bars_say_wait(
    corpus_dir: Path, reader: PixelReader, step: str
) -> None:
    obs = _observe(corpus_dir, reader, step)
    assert any("part of the page is loading" in r for r in waits(obs)), obs.operations


def test_a_real_dump_still_loading_over_a_drawn_page_disagrees(
    corpus_dir: Path, reader: PixelReader
) -> None:
    # Yelp's results drawn on the screenshot while the dump still shows its loading panel.
    obs = _observe(corpus_dir, reader, "droidbot_yelp/yelp_2017/step_004")
    assert obs.consistent is False and not waits(obs)
    assert any("older than the frame" in n for n in obs.notes)


@pytest.mark.parametrize(
    ("step", "wait"),
    [
        ("fdroidutg_weibo/weibo_2023-10-24/step_009", False),  # a video buffering in a card
        ("fdroidutg_weibo/weibo_2023-10-24/step_028", False),
        ("llamatouch/trace_18/step_002", False),  # Duolingo's overlay named for loading
        ("droidbot_admob_apps/com.heaven.assistant/step_007", True),  # a progress dialog alone
    ],
)
def test_real_spinners_that_are_no_page_loading(
    corpus_dir: Path, reader: PixelReader, step: str, wait: bool
) -> None:
    obs = _observe(corpus_dir, reader, step)
    assert not any("older than the frame" in n for n in obs.notes)
    assert not any("part of the page is loading" in r for r in waits(obs))
    assert bool(waits(obs)) is wait  # the dialog's own "Loading...." is the wait there
