"""The pixel-only path (no tree: games, Flutter, a failed dump) on black frames (review 18).

The fusion skips a frame as blank by the pixel channel's own flags (black, uniform): a
true-black dark theme with labels on it is read, not sent back for a recapture forever; a
FLAG_SECURE frame is still black, and says so without a tree too (screen ``secure``, a
``hand_over``), since capturing it again gives the same black frame."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt
import pytest
from _frames import png
from _xml import dump, node

from perception import Observation, Perceiver
from perception.config import PixelConfig
from perception.fusion.arbiter import ArbiterState
from perception.fusion.crossval import FrameProbe
from perception.fusion.screen import OperationKind
from perception.pipeline import PixelChannel
from perception.pixel import Frame, PixelReader, frame_flags
from perception.types import Channel

W, H = 1080, 2400
FONT = cv2.FONT_HERSHEY_SIMPLEX
LABELS = ["Network", "Bluetooth", "Battery", "Storage", "Display"]
MakePerceiver = Callable[..., Perceiver]


@pytest.fixture(scope="module")
def make() -> Iterator[MakePerceiver]:
    readers: list[PixelReader] = []

    def build(config: PixelConfig | None = None) -> Perceiver:
        reader = PixelReader(config, readers[0].text.engine if readers else None)
        readers.append(reader)
        return Perceiver(pixels=PixelChannel(reader))

    yield build
    if readers:
        readers[0].close()  # the one OCR engine they share


def dark_page() -> npt.NDArray[np.uint8]:
    """A settings page in an AMOLED-black theme: light labels on pure black, a status bar's
    clock and battery, a gesture handle; over 95% of its pixels are grey 16 or darker."""
    img = np.zeros((H, W, 3), np.uint8)
    cv2.putText(img, "9:41", (40, 60), FONT, 1.4, (230, 230, 230), 3, cv2.LINE_AA)
    cv2.rectangle(img, (960, 30), (1030, 60), (230, 230, 230), -1)
    cv2.putText(img, "Settings", (40, 190), FONT, 2.2, (240, 240, 240), 4, cv2.LINE_AA)
    for k, label in enumerate(LABELS):
        y = 360 + 200 * k
        cv2.putText(img, label, (60, y), FONT, 1.6, (235, 235, 235), 3, cv2.LINE_AA)
    cv2.rectangle(img, (390, 2360), (690, 2370), (200, 200, 200), -1)
    return img


def dark_page_xml() -> bytes:
    kids = [
        node((0, 0, W, 80), cls="android.view.View"),
        node((0, 120, W, 230), text="Settings", cls="android.widget.TextView",
             resource_id="com.example.app:id/title"),
    ]
    for k, label in enumerate(LABELS):
        top = 360 + 200 * k - 70
        kids.append(
            node((0, top, W, top + 110), text=label, cls="android.widget.TextView",
                 resource_id="com.example.app:id/row", clickable=True)
        )
    return dump(node((0, 0, W, H), *kids))


def secure_frame(grey: int = 0) -> npt.NDArray[np.uint8]:
    """As a phone captures a FLAG_SECURE app: black, but the status bar's clock and icons,
    the gesture handle and an edge-panel tab show (see tests/test_pixel_sparse.py)."""
    img = np.full((H, W, 3), grey, np.uint8)
    cv2.putText(img, "9:17", (40, 60), FONT, 1.4, (255, 255, 255), 3, cv2.LINE_AA)
    cv2.rectangle(img, (900, 30), (1040, 64), (255, 255, 255), -1)
    cv2.rectangle(img, (390, 2360), (690, 2370), (200, 200, 200), -1)
    cv2.rectangle(img, (1068, 500), (1080, 860), (120, 120, 120), -1)
    return img


def one_label(bg: int = 0, fg: int = 255) -> npt.NDArray[np.uint8]:
    img = np.full((H, W, 3), bg, np.uint8)
    cv2.putText(img, "Retry", (460, 1200), FONT, 1.0, (fg, fg, fg), 2, cv2.LINE_AA)
    return img


def ops(obs: Observation) -> list[OperationKind]:
    return [o.kind for o in obs.operations]


# -- the fusion's blank test is the pixel channel's ------------------------------------------


@pytest.mark.parametrize(
    "img",
    [
        pytest.param(dark_page(), id="dark-page"),
        pytest.param(one_label(), id="one-label-on-black"),
        pytest.param(secure_frame(), id="secure"),
        pytest.param(np.zeros((H, W, 3), np.uint8), id="all-black"),
        pytest.param(np.full((H, W, 3), 250, np.uint8), id="white"),
        pytest.param(np.full((H, W, 3), 18, np.uint8), id="dark-grey"),
    ],
)
def test_the_probe_calls_blank_and_black_what_the_pixel_flags_call_so(
    img: npt.NDArray[np.uint8],
) -> None:
    flags, _ = frame_flags(Frame.from_array(img))
    probe = FrameProbe(img)
    assert probe.blank == (flags.black or flags.uniform)
    assert probe.black == flags.black and probe.secure == flags.secure


def test_a_true_black_dark_theme_is_no_blank_frame() -> None:
    img = dark_page()
    grey = cv2.cvtColor(img, cv2.COLOR_BGR2GRAY)
    assert (grey <= 16).mean() >= 0.95  # what the fusion's own test took for black
    probe = FrameProbe(img)
    assert not probe.blank and not probe.black and not probe.secure


def test_the_probe_follows_the_pixel_channels_limits() -> None:
    """Grey 12 with the bars' marks: not black by the default limit (8), black by 16."""
    img = secure_frame(grey=12)
    assert not FrameProbe(img).black
    assert FrameProbe(img, PixelConfig(black_luma_max=16.0)).black


# -- no tree: a dark theme is read, a secure frame handed over -------------------------------


def test_a_true_black_dark_theme_alone_is_read(make: MakePerceiver) -> None:
    """It got no candidates and asked for a recapture (tree 0.00, pixels 0.00) forever."""
    obs = make().perceive(frame=png(dark_page()))
    assert obs.ready and obs.state is ArbiterState.PIXEL
    assert obs.screen is not None and not obs.screen.secure
    said = {c.text for c in obs.candidates if c.source is Channel.PIXEL}
    assert {"Settings", "Battery", "Storage"} <= said
    assert OperationKind.HAND_OVER not in ops(obs)
    assert obs.pixel_confidence > 0.5


def test_one_label_on_a_black_screen_alone_is_read(make: MakePerceiver) -> None:
    """The README's dark-mode screen with one "Retry"."""
    obs = make().perceive(frame=png(one_label()))
    assert obs.ready
    assert [c.text for c in obs.candidates] == ["Retry"]


@pytest.mark.parametrize(
    "tree",
    [
        pytest.param(None, id="no-tree"),
        pytest.param(b"ERROR: could not get idle state.", id="failed-dump"),
        pytest.param(
            b"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\"/>",
            id="empty-dump",
        ),
    ],
)
def test_a_secure_frame_without_a_tree_is_handed_over(
    make: MakePerceiver, tree: bytes | None
) -> None:
    obs = make().perceive(tree, png(secure_frame()))
    assert obs.ready and not obs.refresh
    assert obs.screen is not None and obs.screen.secure
    assert ops(obs) == [OperationKind.HAND_OVER]
    # The frame alone cannot tell FLAG_SECURE from a display that is off: the wording says both.
    reason = obs.operations[0].reason
    assert "FLAG_SECURE, unless the display is off (wake it)" in reason
    assert "tree shows a screen" not in reason
    doc = json.loads(obs.to_prompt())
    assert doc == {"state": "pixel", "screen": {"secure": True}, "ops": [["hand_over"]]}
    assert not obs.candidates and obs.pixel_confidence == 0.0


def test_a_secure_frame_with_its_tree_keeps_the_trees_hand_over(make: MakePerceiver) -> None:
    obs = make().perceive(dark_page_xml(), png(secure_frame()))
    assert obs.ready and obs.screen is not None and obs.screen.secure
    assert ops(obs) == [OperationKind.HAND_OVER]
    assert "while the tree shows a screen" in obs.operations[0].reason


def test_a_flat_frame_alone_still_asks_for_a_recapture(make: MakePerceiver) -> None:
    """White or a theme's grey is an app that has not drawn yet: capture it again."""
    for grey in (250, 18):
        obs = make().perceive(frame=png(np.full((H, W, 3), grey, np.uint8)))
        assert not obs.ready and obs.screen is not None and not obs.screen.secure
        assert OperationKind.HAND_OVER not in ops(obs)
        assert json.loads(obs.to_prompt())["why"] == "low_confidence"


def test_a_dark_frame_that_shows_only_its_status_bar_is_read(make: MakePerceiver) -> None:
    """Black below a grey status bar, no navigation bar or gesture handle: the bottom bar's
    search over the rows above the black padding scanned past the few rows there are and threw
    an IndexError out of ``perceive`` (hypothesis found it on a 3-cell-wide frame in CI). Now
    it is a frame with nothing to offer: not ready, asking for another capture."""
    img = np.zeros((H, W, 3), np.uint8)
    img[:70] = 40
    cv2.putText(img, "12:53", (20, 55), FONT, 1.5, (255, 255, 255), 3, cv2.LINE_AA)
    cv2.rectangle(img, (1000, 15), (1040, 55), (255, 255, 255), -1)
    flags, _ = frame_flags(Frame.from_array(img))
    assert not flags.black and not flags.uniform and flags.status_bar_px > 0
    obs = make().perceive(frame=png(img))
    assert not obs.ready and json.loads(obs.to_prompt())["why"] == "low_confidence"


def test_the_perceiver_uses_its_pixel_channels_black_limit(make: MakePerceiver) -> None:
    """Grey 12: uniform but not black by default (recapture); black, so secure, when the pixel
    channel's config says grey 16 is black."""
    frame = png(secure_frame(grey=12))
    assert not make().perceive(frame=frame).ready
    obs = make(PixelConfig(black_luma_max=16.0)).perceive(frame=frame)
    assert obs.ready and obs.screen is not None and obs.screen.secure
    assert ops(obs) == [OperationKind.HAND_OVER]


# -- with a tree: a dark theme is no secure screen -------------------------------------------


def test_a_true_black_dark_theme_with_its_tree_is_not_handed_over(make: MakePerceiver) -> None:
    """Taken for FLAG_SECURE before: a person was asked to take over a settings page."""
    obs = make().perceive(dark_page_xml(), png(dark_page()))
    assert obs.ready and obs.state is ArbiterState.TREE
    assert obs.screen is not None and not obs.screen.secure
    assert OperationKind.HAND_OVER not in ops(obs)
    assert obs.consistent is True  # its labels are checked against the pixels again
    assert "secure" not in json.loads(obs.to_prompt()).get("screen", {})


def test_a_pop_up_the_pixels_see_gets_no_splash_wait(corpus_dir: Path) -> None:
    """Acrylic Paint's "Pick a color" read from the frame alone (its title and the colour wheel,
    over the dimmed page) was taken for a splash screen: "wait" on a dialog waiting for the
    user. The pixels' modal box now reaches the operations."""
    frame = (corpus_dir / "fdroidutg_apps/anupam.acrylic/step_005/screen.jpg").read_bytes()
    obs = Perceiver().perceive(frame=frame)
    assert obs.ready and any(c.text == "Pick a color" for c in obs.candidates)
    assert not any(op.kind is OperationKind.WAIT for op in obs.operations)
