"""The on-screen keyboard a dump does not hold, end to end on the virtual phone through the real
adb server: the phone says where it is (``dumpsys window displays``), the device source reads
it, the engine hides what it covers, recordings keep it and replays give it back.

A real phone's ``uiautomator dump`` holds the app's window only (no corpus screen holds the
keyboard's): without the box, an agent was offered the app's buttons under the keyboard, and a
tap on one typed a key. The virtual phone behaves as such a phone: a tap on its keyboard does
not reach the app, and the first BACK closes the keyboard only.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import cv2
import numpy as np
import pytest
from _adb import (
    AdbServer,
    connected,
    device_config,
    requires_adb,
    serving,
    shell,
    simdevice_cli,
)
from _xml import dump, node

from perception.cli.main import main
from perception.config import EngineConfig
from perception.engine import Engine
from perception.errors import RecordingError
from perception.simdevice import Faults
from perception.simdevice.phone import Phone
from perception.sources.device import DeviceSource, parse_dumpsys_window, parse_keyboard
from perception.sources.record import RecordingWriter
from perception.sources.recording import read_recording
from perception.sources.replay import ReplaySource
from perception.tree.compress import iter_rows
from perception.types import BoxPx, ScreenSize

CFG = EngineConfig(frame_interval_ms=50, tree_interval_ms=50, observe_timeout_s=15.0)
APP = "com.example.chat"
FIELD = (20, 100, 340, 180)
SEND = (20, 500, 340, 580)
"""A button the keyboard covers (the bottom 40% of 640 px starts at 384)."""
SIM_KEYBOARD = BoxPx(0, 384, 360, 640)
RECORDED_KEYBOARD = BoxPx(0, 400, 360, 640)
"""The box step 1 was recorded with (a real phone's, not the switch's)."""
LANDSCAPE_KEYBOARD = BoxPx(0, 216, 640, 360)


def _chat_xml(*, focused: bool) -> bytes:
    return dump(
        node(
            (0, 40, 360, 640),
            node(FIELD, cls="android.widget.EditText", text="", resource_id=f"{APP}:id/msg",
                 package=APP, clickable=True, focusable=True, focused=focused,
                 hint="Message"),
            node(SEND, cls="android.widget.Button", text="Send", resource_id=f"{APP}:id/send",
                 package=APP, clickable=True, focusable=True),
            cls="android.widget.FrameLayout", package=APP,
        ),
        banner=False,
    )


def _done_xml() -> bytes:
    return dump(
        node(
            (0, 40, 360, 640),
            node((20, 220, 340, 300), cls="android.widget.Button", text="Done", package=APP,
                 clickable=True),
            cls="android.widget.FrameLayout", package=APP,
        ),
        banner=False,
    )


def _landscape_xml() -> bytes:
    return dump(
        node(
            (0, 24, 640, 360),
            node((20, 60, 620, 120), cls="androidx.appcompat.widget.AppCompatEditText",
                 package=APP, clickable=True, focusable=True, focused=True),
            cls="android.widget.FrameLayout", package=APP,
        ),
        rotation=1,
        banner=False,
    )


def _png(width: int, height: int, boxes: list[tuple[int, int, int, int]]) -> bytes:
    image = np.full((height, width, 3), 255, dtype=np.uint8)
    for left, top, right, bottom in boxes:
        cv2.rectangle(image, (left, top), (right - 1, bottom - 1), (90, 60, 20), 2)
    ok, buf = cv2.imencode(".png", image)
    assert ok
    return buf.tobytes()


def _line(step: int, **extra: object) -> dict[str, object]:
    base: dict[str, object] = {
        "step": step, "tree": f"step_{step:03d}/screen.xml", "frame": f"step_{step:03d}/screen.png",
        "tree_start_ns": step * 400_000_000, "tree_end_ns": step * 400_000_000 + 30_000_000,
        "epoch": step, "package": APP, "activity": f"{APP}/.ChatActivity", "rotation": 0,
        "screen": [360, 640], "action": None,
    }
    base.update(extra)
    return base


@pytest.fixture(scope="module")
def chat(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Step 0: a focused message field at the top and Send at the bottom (a tap on Send goes
    to step 1); step 1: recorded with a keyboard box, nothing focused (BACK goes to step 0);
    step 2: landscape with a focused AppCompatEditText."""
    root = tmp_path_factory.mktemp("chat_rec")
    files = [
        (_chat_xml(focused=True), _png(360, 640, [FIELD, SEND])),
        (_done_xml(), _png(360, 640, [(20, 220, 340, 300)])),
        (_landscape_xml(), _png(640, 360, [(20, 60, 620, 120)])),
    ]
    for step, (xml, png) in enumerate(files):
        (root / f"step_{step:03d}").mkdir()
        (root / f"step_{step:03d}" / "screen.xml").write_bytes(xml)
        (root / f"step_{step:03d}" / "screen.png").write_bytes(png)
    lines = [
        _line(0, action={"kind": "tap", "point_px": [180, 540], "target_px": list(SEND),
                         "result_step": 1}),
        _line(1, keyboard=list(RECORDED_KEYBOARD),
              action={"kind": "key", "key": "BACK", "result_step": 0}),
        _line(2, rotation=1, screen=[640, 360]),
    ]
    (root / "steps.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    meta = {"format": "perception-recording", "version": 1, "serial": "chat",
            "screen": {"width_px": 360, "height_px": 640, "density_dpi": 160, "rotation": 0},
            "insets": {"top_px": 40, "bottom_px": 0, "left_px": 0, "right_px": 0},
            "package": APP}
    (root / "meta.json").write_text(json.dumps(meta))
    return root


def _out(adb_server: AdbServer, serial: str, line: str) -> str:
    done = shell(adb_server, serial, line)
    assert done.returncode == 0 and done.stderr == "", (line, done)
    return done.stdout


def _labels(prompt: dict[str, object]) -> set[str]:
    return {row.label for row in iter_rows(prompt)}


def _says_kbd(prompt: dict[str, object]) -> bool:
    """The prompt says where the keyboard is (``"kbd"``, in the screen's description)."""
    return '"kbd"' in json.dumps(prompt)


# ----- the phone's state (no adb needed) ---------------------------------------------------


def test_the_switch_the_window_manager_lines_and_the_state(chat: Path) -> None:
    phone = Phone(read_recording(chat))
    assert "keyboard=0" in phone.run("simctl state").stdout.decode()
    assert "kbd=-" in phone.run("simctl state").stdout.decode()
    displays = phone.run("dumpsys window displays").stdout.decode()
    # Down: Android 13's hidden form, the frame it would take kept as visibleFrame.
    assert (
        "    InsetsSource type=ITYPE_IME frame=[0,0][0,0] visibleFrame=[0,384][360,640] "
        "visible=false\n"
    ) in displays
    assert parse_keyboard(displays) is None
    assert displays.startswith("WINDOW MANAGER DISPLAY CONTENTS")
    assert "mCurrentFocus" not in displays

    state = phone.run("simctl fault keyboard=1").stdout.decode()
    assert "keyboard=1" in state and Faults(keyboard=True).describe().count("keyboard=1") == 1
    assert "kbd=[0,384][360,640]" in phone.run("simctl state").stdout.decode()
    window = phone.run("dumpsys window").stdout.decode()
    assert (
        "    InsetsSource type=ITYPE_IME frame=[0,384][360,640] visibleFrame=[0,384][360,640] "
        "visible=true\n"
    ) in window
    assert parse_keyboard(window) == SIM_KEYBOARD
    assert parse_keyboard(phone.run("dumpsys window displays").stdout.decode()) == SIM_KEYBOARD
    # The screen facts still read past the new line; the keyboard is no inset of the app's.
    facts = parse_dumpsys_window(window)
    assert facts["size"] == ScreenSize(360, 640) and facts["rotation"] == 0
    assert facts["activity"] == f"{APP}/.ChatActivity"
    insets = facts["insets"]
    assert getattr(insets, "top_px", None) == 40 and getattr(insets, "bottom_px", None) == 0

    # A step recorded with a keyboard has that box; one in landscape has the switch's there.
    phone.run("simctl goto 1")
    assert parse_keyboard(phone.run("dumpsys window").stdout.decode()) == RECORDED_KEYBOARD
    phone.run("simctl goto 2")
    landscape = phone.run("dumpsys window displays").stdout.decode()
    assert parse_keyboard(landscape) == LANDSCAPE_KEYBOARD
    assert "kbd=[0,216][640,360]" in phone.run("simctl state").stdout.decode()
    phone.run("simctl clear")  # the switch off: no focused field brings a keyboard up
    assert parse_keyboard(phone.run("dumpsys window displays").stdout.decode()) is None
    phone.run("simctl goto 1")
    assert "kbd=[0,400][360,640]" in phone.run("simctl state").stdout.decode()


# ----- the device source and the engine, through the real adb server ----------------------


@requires_adb
def test_the_device_source_reads_the_keyboard_after_each_dump(
    adb_server: AdbServer, chat: Path
) -> None:
    with connected(adb_server, chat, faults=Faults(keyboard=True)) as (sim, source):
        assert source.capture_tree().keyboard_px == SIM_KEYBOARD
        sim.faults.keyboard = False
        assert source.capture_tree().keyboard_px is None
        _out(adb_server, sim.serial, "simctl goto 1")
        assert source.capture_tree().keyboard_px == RECORDED_KEYBOARD
        # Switched off: no keyboard, and the query is not made at all.
        quiet = DeviceSource(sim.serial, config=device_config(adb_server, read_keyboard=False))
        try:
            sim.phone.commands.clear()
            assert quiet.capture_tree().keyboard_px is None
            ran = list(sim.phone.commands)
            assert any(c.startswith("uiautomator dump") for c in ran), ran
            assert not any("dumpsys window" in c for c in ran), ran
        finally:
            quiet.close()


@requires_adb
def test_a_phone_before_android_11_is_asked_its_keyboards_window(
    adb_server: AdbServer, chat: Path
) -> None:
    """No input method insets in `dumpsys window displays`: the source asks the keyboard's
    window (`dumpsys window InputMethod`) for its touchable region, and from then on asks that
    alone. A phone that lists the insets is asked them alone."""
    faults = Faults(keyboard=True, android10=True)
    with connected(adb_server, chat, faults=faults) as (sim, source):
        sim.phone.commands.clear()
        assert source.capture_tree().keyboard_px == SIM_KEYBOARD
        asked = [c for c in sim.phone.commands if c.startswith("dumpsys")]
        assert asked == ["dumpsys window displays", "dumpsys window InputMethod"], asked
        sim.phone.commands.clear()
        sim.faults.keyboard = False
        assert source.capture_tree().keyboard_px is None
        asked = [c for c in sim.phone.commands if c.startswith("dumpsys")]
        assert asked == ["dumpsys window InputMethod"], asked
        facts = source.screen_facts(refresh=True)  # mStableInsets, not InsetsSource lines
        assert facts.insets.top_px > 0
    with connected(adb_server, chat, faults=Faults(keyboard=True)) as (sim, source):
        for _ in range(2):
            sim.phone.commands.clear()
            assert source.capture_tree().keyboard_px == SIM_KEYBOARD
            asked = [c for c in sim.phone.commands if c.startswith("dumpsys")]
            assert asked == ["dumpsys window displays"], asked


@requires_adb
def test_a_keyboard_query_that_times_out_keeps_the_dump(
    adb_server: AdbServer, chat: Path
) -> None:
    """A window manager that does not answer costs the capture its keyboard box, not its
    dump: within the query's short deadline, and the next capture asks again."""
    with serving(adb_server, chat, faults=Faults(keyboard=True, dumpsys_slow_ms=3000)) as sim:
        source = DeviceSource(sim.serial, config=device_config(
            adb_server, command_timeout_s=0.5))
        try:
            source.wait_ready()
            t0 = time.monotonic()
            tree = source.capture_tree()
            assert time.monotonic() - t0 < 2.5
            assert tree.keyboard_px is None and b"Message" in tree.xml
            sim.faults.dumpsys_slow_ms = 0
            assert source.capture_tree().keyboard_px == SIM_KEYBOARD
        finally:
            source.close()


@requires_adb
def test_the_engine_does_not_offer_the_button_under_the_keyboard(
    adb_server: AdbServer, chat: Path
) -> None:
    with connected(adb_server, chat, faults=Faults(keyboard=True)) as (sim, source):
        with Engine(source, config=CFG) as engine:
            prompt = json.loads(engine.observe().to_prompt())
        assert _says_kbd(prompt) and "Send" not in _labels(prompt)
        assert "Message" in json.dumps(prompt)  # the field above the keyboard stays
        sim.faults.keyboard = False  # the same screen, the keyboard down
        with Engine(source, config=CFG) as engine:
            prompt = json.loads(engine.observe().to_prompt())
        assert not _says_kbd(prompt) and "Send" in _labels(prompt)


# ----- input on the keyboard ----------------------------------------------------------------


@requires_adb
def test_a_tap_on_the_keyboard_is_ignored_and_back_closes_it(
    adb_server: AdbServer, chat: Path
) -> None:
    with serving(adb_server, chat, faults=Faults(keyboard=True)) as sim:
        serial, events = sim.serial, sim.phone.events
        _out(adb_server, serial, "input tap 180 540")  # on Send, under the keyboard
        assert events[-1] == "tap 180 540 -> 0 (ignored (keyboard))"
        _out(adb_server, serial, "input swipe 180 540 182 541 80")  # a tap as a swipe
        assert events[-1] == "swipe 180 540 182 541 80 -> 0 (ignored (keyboard))"
        _out(adb_server, serial, "input tap 180 140")  # the field, above it: the app's
        assert events[-1] == "tap 180 140 -> 0 (tap outside the recorded target)"
        _out(adb_server, serial, "input keyevent KEYCODE_BACK")
        assert events[-1] == "keyevent KEYCODE_BACK -> 0 (keyboard closed)"
        state = _out(adb_server, serial, "simctl state")
        assert "position=0 " in state and "kbd=-" in state
        assert "visible=false" in _out(adb_server, serial, "dumpsys window displays")
        _out(adb_server, serial, "input tap 180 540")  # Send is reachable now
        assert events[-1] == "tap 180 540 -> 1 (tap on the recorded target)"
        # Step 1 was recorded with a keyboard: the first BACK (by number) closes it only, the
        # second is the app's (the recorded BACK to step 0, whose field brings it up again).
        assert "kbd=[0,400][360,640]" in _out(adb_server, serial, "simctl state")
        _out(adb_server, serial, "input keyevent 4")
        assert events[-1] == "keyevent 4 -> 1 (keyboard closed)"
        _out(adb_server, serial, "input keyevent 4")
        assert events[-1] == "keyevent 4 -> 0 (recorded BACK)"
        assert "kbd=[0,384][360,640]" in _out(adb_server, serial, "simctl state")


@requires_adb
def test_the_simdevice_cli_switch(adb_server: AdbServer) -> None:
    with simdevice_cli(adb_server, "--keyboard") as serial:
        assert "keyboard=1" in _out(adb_server, serial, "simctl state")
    with simdevice_cli(adb_server) as serial:
        assert "keyboard=0" in _out(adb_server, serial, "simctl state")


# ----- recordings keep it, replays give it back ---------------------------------------------


@requires_adb
def test_a_recording_keeps_the_keyboard_and_replays_give_it_back(
    adb_server: AdbServer, chat: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rec"
    script = tmp_path / "actions.txt"
    script.write_text("text hi\nback\n")  # typed with the keyboard up, then BACK closes it
    with serving(adb_server, chat, faults=Faults(keyboard=True)) as sim:
        code = main(["record", "--serial", sim.serial, "--adb-port", str(adb_server.port),
                     str(out), "--actions", str(script), "--settle-ms", "0"])
    assert code == 0
    lines = [json.loads(x) for x in (out / "steps.jsonl").read_text().splitlines()]
    assert [x.get("keyboard") for x in lines] == [list(SIM_KEYBOARD)] * 2 + [None]
    assert "keyboard" not in lines[2]  # left out, not null: older readers see no change
    rec = read_recording(out)
    assert [s.keyboard_px for s in rec.steps] == [SIM_KEYBOARD, SIM_KEYBOARD, None]

    with ReplaySource(rec) as replay:
        assert replay.capture_tree().keyboard_px == SIM_KEYBOARD
        replay.navigator.goto(2)
        assert replay.capture_tree().keyboard_px is None

    capsys.readouterr()
    assert main(["replay", str(out), "--json", "--no-frames"]) == 0
    shown = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    first, last = shown[0]["observation"], shown[2]["observation"]
    assert _says_kbd(first) and "Send" not in _labels(first)
    assert not _says_kbd(last) and "Send" in _labels(last)

    # The dataset export perceives the steps as replay does.
    assert main(["export", str(out), "--no-frames"]) == 0
    rows = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2]
    assert _says_kbd(rows[0]["prompt"]) and "Send" not in _labels(rows[0]["prompt"])
    assert not _says_kbd(rows[2]["prompt"]) and "Send" in _labels(rows[2]["prompt"])


def test_the_recorder_api_writes_the_box_and_old_steps_stay_as_they_were(
    chat: Path, tmp_path: Path
) -> None:
    source = ReplaySource(chat)
    with RecordingWriter(tmp_path / "copy") as writer:
        for position in range(2):
            source.navigator.goto(position)
            writer.add_step(source.capture_tree(), source.capture_frame(), source.screen_facts())
    lines = (tmp_path / "copy" / "steps.jsonl").read_text().splitlines()
    assert "keyboard" not in json.loads(lines[0])
    assert json.loads(lines[1])["keyboard"] == list(RECORDED_KEYBOARD)
    copy = read_recording(tmp_path / "copy")
    assert [s.keyboard_px for s in copy.steps] == [None, RECORDED_KEYBOARD]


@pytest.mark.parametrize(
    "value",
    ["[0, 400, 360]", '[0, 400, 360, "640"]', "[0, 400, 0, 640]", "[0, 640, 360, 400]",
     "[0.0, 400, 360, 640]", "[true, 400, 360, 640]", "true", '{"top": 400}', '"0 400 360 640"'],
)
def test_a_malformed_keyboard_is_a_recording_error_naming_file_and_line(
    chat: Path, tmp_path: Path, value: str
) -> None:
    root = tmp_path / "bad"
    shutil.copytree(chat, root)  # links out of the folder would be refused as such
    (root / "steps.jsonl").unlink()
    lines = (chat / "steps.jsonl").read_text().splitlines()
    step = json.loads(lines[1])
    del step["keyboard"]
    text = json.dumps(step)
    lines[1] = text[:-1] + f', "keyboard": {value}}}'
    (root / "steps.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordingError, match=r"steps\.jsonl line 2: 'keyboard' must be"):
        read_recording(root)
    lines[1] = text[:-1] + ', "keyboard": null}'
    (root / "steps.jsonl").write_text("\n".join(lines) + "\n")
    assert read_recording(root).steps[1].keyboard_px is None


@requires_adb
def test_a_swipe_starting_on_the_keyboard_is_the_keyboards(
    adb_server: AdbServer, chat: Path
) -> None:
    """Gesture typing: a swipe that starts on the keys never reaches the app; one that starts
    above them does."""
    with connected(adb_server, chat, faults=Faults(keyboard=True)) as (sim, source):
        source.input("swipe", 180, 600, 180, 450, 200)
        assert sim.phone.events[-1].endswith("(ignored (keyboard))"), sim.phone.events
        source.input("swipe", 180, 300, 180, 150, 200)
        assert "ignored" not in sim.phone.events[-1], sim.phone.events


@requires_adb
def test_watch_mode_records_the_keyboard_going_down(
    adb_server: AdbServer, chat: Path, tmp_path: Path
) -> None:
    """The same hierarchy with the keyboard up, then down, is two screens: watch mode records
    a step for each (it compared the hierarchy alone)."""
    import threading

    out = tmp_path / "watched"
    with serving(adb_server, chat, faults=Faults(keyboard=True)) as sim:
        args = ["record", "--serial", sim.serial, "--adb-port", str(adb_server.port), str(out),
                "--steps", "2", "--interval-ms", "50", "--duration-s", "20"]
        codes: list[int] = []
        runner = threading.Thread(target=lambda: codes.append(main(args)))
        runner.start()
        steps = out / "steps.jsonl"
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not (
            steps.exists() and steps.read_text().count("\n") >= 1
        ):
            time.sleep(0.02)
        sim.faults.keyboard = False
        runner.join(30)
    assert codes == [0]
    lines = [json.loads(x) for x in steps.read_text().splitlines()]
    assert [x.get("keyboard") for x in lines] == [list(SIM_KEYBOARD), None]
    rec = read_recording(out)
    assert rec.steps[0].read_tree() == rec.steps[1].read_tree()


@requires_adb
def test_a_phone_answered_by_the_window_is_asked_the_insets_again(
    adb_server: AdbServer, chat: Path
) -> None:
    """Some phones list input method insets only once a keyboard has come up: a source that
    learnt to ask the keyboard's window asks for the insets again every KEYBOARD_RECHECK
    captures, and keeps to them once listed."""
    from perception.sources.device import KEYBOARD_RECHECK

    with connected(adb_server, chat, faults=Faults(keyboard=True, android10=True)) as (
        sim, source,
    ):
        assert source.keyboard() == SIM_KEYBOARD  # learnt: the window
        sim.faults.android10 = False  # the insets are listed from now on
        for _ in range(KEYBOARD_RECHECK - 2):
            source.keyboard()
        sim.phone.commands.clear()
        assert source.keyboard() == SIM_KEYBOARD  # the recheck
        assert list(sim.phone.commands) == ["dumpsys window displays"], sim.phone.commands
        sim.phone.commands.clear()
        assert source.keyboard() == SIM_KEYBOARD
        assert list(sim.phone.commands) == ["dumpsys window displays"], sim.phone.commands
