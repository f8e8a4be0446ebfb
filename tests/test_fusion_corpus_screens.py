"""What the model is shown on real screens where the tree is not trusted (a review looked at
every such corpus pair against its screenshot): each test is one of its findings, mended.

Real OCR and real screens; one pixel reader for the module (its models load once)."""

from __future__ import annotations

import json
from pathlib import Path

from perception import Observation, Perceiver
from perception.fusion.screen import OperationKind
from perception.pipeline import PixelChannel
from perception.pixel import PixelReader
from perception.tree.compress import iter_rows
from perception.types import Channel


def _observe(corpus: Path, pair: str, reader: PixelReader) -> Observation:
    folder = corpus / pair
    image = next(p for p in sorted(folder.glob("screen.*")) if p.suffix in (".png", ".jpg"))
    with Perceiver(pixels=PixelChannel(reader)) as perceiver:
        return perceiver.perceive((folder / "screen.xml").read_bytes(), image.read_bytes())


def _labels(obs: Observation) -> list[str]:
    return [r.label for r in iter_rows(json.loads(obs.to_prompt()))]


def test_a_gone_dialogs_buttons_are_not_offered(corpus_dir: Path, reader: PixelReader) -> None:
    """The launcher is on the screen; the dump still holds the app's "Hello World" dialog."""
    obs = _observe(corpus_dir, "_desync/fdroidutg_apps__org.ligi.ajsha__step_007", reader)
    assert obs.consistent is False
    assert not {"CANCEL", "OK", "Hello World"} & set(_labels(obs))
    gone = [c for c in obs.candidates if c.source is Channel.TREE]
    assert {c.text for c in gone} >= {"CANCEL", "OK"} and not any(c.listed for c in gone)
    assert any("rows are left out" in n for n in obs.notes)


def test_a_players_controls_under_one_full_screen_button_are_offered(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """QQ Music's player: the dump is one unlabelled full-screen button; the pixels show 21
    controls, of which 1 was offered."""
    obs = _observe(corpus_dir, "droidbotexp_qqmusic/qqmusic_2021-11-23/step_020", reader)
    offered = [c for c in obs.candidates if c.shown and c.source is Channel.PIXEL
               and c.kind in ("icon", "btn")]
    assert len(offered) >= 15


def test_tree_unstable_reads_the_page_inside_a_web_view(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """Weibo's help article in a web view: the regions read were the status and navigation
    bars alone, the article's lines were not offered."""
    obs = _observe(corpus_dir, "fdroidutg_weibo/weibo_2023-10-24/step_033", reader)
    assert "登录名是什么" in _labels(obs)


def test_a_loading_dialog_over_a_dimmed_page_says_wait(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """The dump holds the "Loading...." dialog alone; the page under it (its "Click Now") is no
    thing to tap while the dialog is up."""
    obs = _observe(corpus_dir, "droidbot_admob_apps/com.heaven.assistant/step_007", reader)
    assert [o.kind for o in obs.operations] == [OperationKind.WAIT]
    assert "Click Now" not in _labels(obs)


def test_a_pop_up_menu_is_what_is_offered(corpus_dir: Path, reader: PixelReader) -> None:
    """AeonDroid's overflow menu dumped alone over its list: a tap on the list would only
    close the menu."""
    obs = _observe(corpus_dir, "fdroidutg_apps/io.github.phora.aeondroid/step_001", reader)
    assert _labels(obs) == ["Settings", "About"]


def test_a_splash_screen_says_wait(corpus_dir: Path, reader: PixelReader) -> None:
    obs = _observe(corpus_dir, "droidbotexp_qqmusic/qqmusic_2021-11-23/step_002", reader)
    assert [o.kind for o in obs.operations] == [OperationKind.WAIT]
    assert "splash" in obs.operations[0].reason


def test_a_stale_page_goes_the_browsers_own_toolbar_stays(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """Firefox: the dump still holds the page before; its toolbar is the one on the screen.
    The page's rows go, the toolbar's icons (named by descriptions OCR cannot confirm) stay."""
    obs = _observe(corpus_dir, "fdroidutg_apps/mattecarra.accapp/step_005", reader)
    assert obs.consistent is False
    labels = set(_labels(obs))
    assert {"Home screen", "Menu"} <= labels
    assert not {"Mozilla Support Logo", "Firefox for Android Beta"} & labels


def test_the_pixels_under_a_tree_of_another_moment_are_offered(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """The tree's rows left out as another moment's hid the pixel candidates under them: the
    voice assistant's dump still holds its command list, the screen shows an ad with a row
    of icons (its close in a ring among them) above it, and none was offered; Firefox's
    stale page hid the × of the banner the screen shows."""
    obs = _observe(corpus_dir, "droidbot_admob_apps/com.heaven.assistant/step_009", reader)
    assert obs.consistent is False
    h = obs.screen.size.height_px if obs.screen else 0
    top = [c for c in obs.candidates if c.shown and c.source is Channel.PIXEL
           and c.box_px.bottom < 0.12 * h]
    assert len(top) >= 4
    obs = _observe(corpus_dir, "fdroidutg_apps/mattecarra.accapp/step_005", reader)
    w = obs.screen.size.width_px if obs.screen else 0
    close = [c for c in obs.candidates if c.shown and c.text == "×"
             and c.source is Channel.PIXEL and c.box_px.left > 0.8 * w]
    assert close


def test_a_stale_trees_long_labels_do_not_swallow_the_new_screens_text(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """A trace step's dump over the next step's frame: OCR lines inside a stale row whose
    label the tree cut were taken for the rest of that label and dropped with the row (Google
    Maps' "Timeline data deleted" page, AdFree's dialog buttons)."""
    for trace, step, shows in (
        ("llamatouch/trace_7", 9, {"Timeline data deleted"}),
        ("fdroidutg_apps/ch.abertschi.adfree", 4, {"CANCEL", "TURN OFF"}),
        # A stale input whose cut label "clear" was read in: the screen's own buttons.
        ("fdroidutg_apps/org.ligi.ajsha", 4, {"EVAL", "CLEAR", "SHARE"}),
    ):
        before, after = (corpus_dir / trace / f"step_{n:03d}" for n in (step, step + 1))
        image = next(p for p in sorted(after.glob("screen.*")) if p.suffix in (".png", ".jpg"))
        with Perceiver(pixels=PixelChannel(reader)) as perceiver:
            obs = perceiver.perceive((before / "screen.xml").read_bytes(), image.read_bytes())
        assert obs.consistent is False, trace
        assert shows <= set(_labels(obs)), trace


def test_part_of_a_stale_label_read_there_does_not_keep_the_row(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """Weibo's profile page dumped, its home page on the frame: OCR's "Me" (the bottom bar's
    tab) lies where the stale tree puts "Recommend", and "me" is in "recommend": the stale row
    stood for the tab."""
    trace = corpus_dir / "fdroidutg_weibo/weibo_2023-10-24"
    image = (trace / "step_015" / "screen.jpg").read_bytes()
    with Perceiver(pixels=PixelChannel(reader)) as perceiver:
        obs = perceiver.perceive((trace / "step_014" / "screen.xml").read_bytes(), image)
    assert obs.consistent is False
    labels = set(_labels(obs))
    assert "Me" in labels and "Recommend" not in labels


def test_a_row_the_pixels_name_stands_for_the_icon_under_it(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """China Unicom's home page, its tree another moment's: the tree's close icon in the web
    page stays, named × off the pixels; the × the pixels find on it is that row, not a second
    candidate."""
    obs = _observe(corpus_dir, "adb_oneoffs/unicom_home", reader)
    assert obs.consistent is False
    closes = [c for c in obs.candidates if c.shown and c.text == "×"]
    assert [c.source for c in closes] == [Channel.BOTH]


def test_a_blank_page_behind_a_browsers_progress_line_is_waited_for(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """Firefox loading adguard.com: a white page, a progress line over the toolbar, and a dump
    holding the toolbar, an empty WebView and the ProgressBar. The toolbar's buttons are
    there, but the page is what the task needs: wait. A page already drawn while its last
    parts load (GitHub behind the same line, AdGuard's page) is read, not waited for."""
    apps = "fdroidutg_apps"
    for pair in (f"{apps}/com.adguard.android.contentblocker/step_003",
                 f"{apps}/io.github.phora.aeondroid/step_008"):
        obs = _observe(corpus_dir, pair, reader)
        assert obs.operations and obs.operations[0].kind is OperationKind.WAIT, pair
        assert "web page is loading" in obs.operations[0].reason
    for pair in (f"{apps}/bluepie.ad_silence/step_002",
                 f"{apps}/com.adguard.android.contentblocker/step_009"):
        obs = _observe(corpus_dir, pair, reader)
        assert OperationKind.WAIT not in {o.kind for o in obs.operations}, pair


def test_a_pop_up_the_tree_does_not_hold_is_what_is_offered(
    corpus_dir: Path, reader: PixelReader
) -> None:
    """A trace step's dump over the next step's frame, where a dialog came up in between: the
    page's labels read back under the dialog's scrim, so the tree passed for this frame's and
    the model was offered the page, not the dialog (a2dpvol's "Car Dock" dialog and its
    "Webpage not available" page under another, Acrylic Paint's storage permission). Over its
    own dump, each frame is consistent."""
    for trace, step, shows, gone, ops in (
        ("droidbot_a2dpvol_lowres/a2dpvol_2018-06-05", 1, {"EDIT", "DELETE", "OK"},
         {"STORED LOCATION", "FIND DEVICES", "More options"}, [("accept", "OK")]),
        ("droidbot_a2dpvol_lowres/a2dpvol_2018-06-05", 7, {"LOCATION", "OK"},
         {"Webpage not available", "Load URL"}, [("accept", "OK")]),
        ("fdroidutg_apps/anupam.acrylic", 8, {"ALLOW", "DENY"}, {"Collapse", "Search…"},
         [("accept", "ALLOW"), ("dismiss", "DENY")]),
    ):
        before, after = (corpus_dir / trace / f"step_{n:03d}" for n in (step, step + 1))
        image = next(p for p in sorted(after.glob("screen.*")) if p.suffix in (".png", ".jpg"))
        with Perceiver(pixels=PixelChannel(reader)) as perceiver:
            obs = perceiver.perceive((before / "screen.xml").read_bytes(), image.read_bytes())
        assert obs.consistent is False and obs.tree_factors.get("modal_missing") == 0.4, trace
        labels = set(_labels(obs))
        assert shows <= labels and not gone & labels, (trace, labels)
        page = [c for c in obs.candidates if c.source is not Channel.PIXEL and c.text in gone]
        assert page and all(c.occluded or not c.listed for c in page), trace
        # The dialog's buttons are on the screen now: recommended off the pixels.
        by_id = {c.id: c for c in obs.candidates}
        assert [(o.kind.value, by_id[o.candidate_id].text) for o in obs.operations
                if o.candidate_id is not None] == ops, trace
        with Perceiver(pixels=PixelChannel(reader)) as perceiver:
            own = perceiver.perceive((after / "screen.xml").read_bytes(), image.read_bytes())
        assert own.consistent is True and "modal_missing" not in own.tree_factors, trace
    # A text-less row of the page that runs across the dialog took the dialog's lines for its
    # label, its button among them, and went with the page (Habitica's "You ran out of
    # Health!" over the task list).
    before, after = (corpus_dir / "droidbot_habitica/habitica_2020-08-29" / f"step_{n:03d}"
                     for n in (4, 5))
    with Perceiver(pixels=PixelChannel(reader)) as perceiver:
        obs = perceiver.perceive(
            (before / "screen.xml").read_bytes(), (after / "screen.jpg").read_bytes()
        )
    assert obs.tree_factors.get("modal_missing") == 0.4
    assert any(c.shown and c.source is Channel.PIXEL and "Health & Try Again" in c.text
               for c in obs.candidates)
