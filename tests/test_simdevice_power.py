"""The virtual phone asleep or locked, as a real Android 10-14 phone behaves, through the real
adb server.

A real phone's screen times out while a slow model thinks; its ``screencap`` is then all
black, which perception read as a FLAG_SECURE screen. The virtual phone must say it is asleep
(``dumpsys power``) or locked (``dumpsys window``), wake on the power keys, and take no input
until it is awake and unlocked, so that the device source and the agent can be tested on it.
"""

from __future__ import annotations

import subprocess
import sys

import cv2
import numpy as np
import pytest
from _adb import TINY, AdbServer, device_config, requires_adb, serving, shell, simdevice_cli

from perception.simdevice import Faults, SimDevice
from perception.simdevice.phone import Phone
from perception.sources.base import decode_raw_screencap
from perception.sources.device import DeviceSource, parse_dumpsys_window
from perception.sources.recording import read_recording
from perception.types import ScreenSize

AWAKE_POWER = (
    "POWER MANAGER (dumpsys power)\n\nPower Manager State:\n  mDirty=0x0\n"
    "  mWakefulness=Awake\n  mWakefulnessChanging=false\n  mIsPowered=true\n"
)
KEYGUARD = (
    "    KeyguardServiceDelegate\n      showing={0}\n      showingAndNotOccluded={0}\n"
    "      inputRestricted={0}\n"
)
OLD_KEYGUARD = "    mShowingLockscreen={0} mShowingDream=false mDreamingLockscreen={0}\n"


def _out(adb_server: AdbServer, sim: SimDevice, line: str) -> str:
    done = shell(adb_server, sim.serial, line)
    assert done.returncode == 0 and done.stderr == "", (line, done)
    return done.stdout


# ----- the state and its switches (no adb needed) -----------------------------------------


def test_asleep_and_locked_are_switches_shown_by_state() -> None:
    phone = Phone(read_recording(TINY))
    assert "asleep=0 locked=0" in phone.run("simctl state").stdout.decode()
    assert "asleep=1 locked=1" in phone.run("simctl fault asleep=1 locked=yes").stdout.decode()
    assert phone.faults.asleep and phone.faults.locked
    assert "asleep=0 locked=1" in phone.run("simctl fault asleep=0").stdout.decode()
    assert "asleep=0 locked=0" in phone.run("simctl clear").stdout.decode()
    assert Faults(asleep=True).describe().endswith("asleep=1 locked=0 pin=0")
    usage = phone.run("wm frobnicate")
    assert usage.code == 1 and b"dismiss-keyguard" in usage.stderr


# ----- through the real adb server --------------------------------------------------------


@requires_adb
def test_dumpsys_power_awake_then_asleep(adb_server: AdbServer, sim: SimDevice) -> None:
    power = _out(adb_server, sim, "dumpsys power")
    assert power.startswith(AWAKE_POWER)
    assert "\nDisplay Power: state=ON\n" in power
    assert power.index("mWakefulness=") < power.index("Display Power:")
    sim.faults.apply("asleep", "1")
    power = _out(adb_server, sim, "dumpsys power")
    assert power.startswith(AWAKE_POWER.replace("=Awake", "=Asleep"))
    assert "\nDisplay Power: state=OFF\n" in power and "state=ON" not in power
    # What scripts grep for reaches them through the shell's pipe.
    assert _out(adb_server, sim, "dumpsys power | grep mWakefulness=") == "  mWakefulness=Asleep\n"


@requires_adb
def test_keyguard_lines_and_the_window_facts_still_read(
    adb_server: AdbServer, phone: tuple[SimDevice, DeviceSource]
) -> None:
    sim, source = phone
    window = _out(adb_server, sim, "dumpsys window")
    assert KEYGUARD.format("false") in window and OLD_KEYGUARD.format("false") in window
    sim.faults.apply("locked", "1")
    window = _out(adb_server, sim, "dumpsys window")
    assert KEYGUARD.format("true") in window and OLD_KEYGUARD.format("true") in window
    assert "mCurrentFocus=Window{5f3e2a1 u0 com.example.notes/.MainActivity}" in window
    policy = _out(adb_server, sim, "dumpsys window policy")
    assert policy.startswith("WINDOW MANAGER POLICY STATE (dumpsys window policy)\n")
    assert KEYGUARD.format("true") in policy and "mCurrentFocus" not in policy
    # The device source's parser reads size, rotation, focus and insets past the new lines.
    facts = parse_dumpsys_window(window)
    assert facts["size"] == ScreenSize(360, 640) and facts["rotation"] == 0
    assert facts["activity"] == "com.example.notes/.MainActivity"
    screen = source.screen_facts(refresh=True)
    assert screen.package == "com.example.notes" and screen.insets.top_px == 40
    sim.faults.apply("asleep", "1")
    assert "      screenState=SCREEN_STATE_OFF\n" in _out(adb_server, sim, "dumpsys window policy")


@requires_adb
@pytest.mark.parametrize(
    ("wake", "sleep", "power"),
    [("KEYCODE_WAKEUP", "KEYCODE_SLEEP", "KEYCODE_POWER"), ("224", "223", "26")],
    ids=["names", "numbers"],
)
def test_wake_sleep_and_power_keys(
    adb_server: AdbServer, sim: SimDevice, wake: str, sleep: str, power: str
) -> None:
    _out(adb_server, sim, "simctl goto 2")  # a recorded BACK: a key that would move it
    _out(adb_server, sim, f"input keyevent {sleep}")
    assert "asleep=1" in _out(adb_server, sim, "simctl state")
    assert sim.phone.events[-1] == f"keyevent {sleep} -> 2 (screen turned off)"
    _out(adb_server, sim, f"input keyevent {sleep}")
    assert sim.phone.events[-1] == f"keyevent {sleep} -> 2 (screen already off)"
    _out(adb_server, sim, f"input keyevent {wake}")
    assert not sim.faults.asleep
    assert sim.phone.events[-1] == f"keyevent {wake} -> 2 (screen turned on)"
    _out(adb_server, sim, f"input keyevent {wake}")
    assert sim.phone.events[-1] == f"keyevent {wake} -> 2 (screen already on)"
    _out(adb_server, sim, f"input keyevent {power}")
    assert sim.faults.asleep
    _out(adb_server, sim, f"input keyevent {power}")
    assert not sim.faults.asleep
    assert sim.phone.navigator.position == 2  # no power key moved the recording
    # A wake key then BACK in one command: the screen turns on, then BACK reaches the app.
    _out(adb_server, sim, f"input keyevent {sleep}")
    _out(adb_server, sim, f"input keyevent {wake} KEYCODE_BACK")
    assert sim.phone.navigator.position == 0
    assert sim.phone.events[-1] == (
        f"keyevent {wake} KEYCODE_BACK -> 0 (screen turned on; recorded BACK)"
    )


@requires_adb
@pytest.mark.parametrize(
    ("switch", "reason"), [("asleep", "ignored (screen off)"), ("locked", "ignored (locked)")]
)
def test_input_is_ignored_while_asleep_or_locked(
    adb_server: AdbServer, sim: SimDevice, switch: str, reason: str
) -> None:
    sim.faults.apply(switch, "1")
    for line, shown in [
        ("input tap 180 140", "tap 180 140"),  # the recorded "New note" target
        ("input swipe 180 140 180 600 300", "swipe 180 140 180 600 300"),
        ("input touchscreen swipe 180 140 182 141 600", "swipe 180 140 182 141 600"),
        ("input text hello", "text hello"),
        ("input keyevent KEYCODE_ENTER", "keyevent KEYCODE_ENTER"),
    ]:
        _out(adb_server, sim, line)
        assert sim.phone.events[-1] == f"{shown} -> 0 ({reason})"
    assert sim.phone.typed == [] and sim.phone.navigator.position == 0
    # Usage errors are still errors.
    assert shell(adb_server, sim.serial, "input text").returncode == 1
    sim.faults.apply(switch, "0")
    _out(adb_server, sim, "input tap 180 140")
    assert sim.phone.navigator.position == 1


@requires_adb
def test_a_wake_key_leaves_the_lock_and_dismiss_keyguard_lifts_it(
    adb_server: AdbServer,
) -> None:
    with serving(adb_server, faults=Faults(asleep=True, locked=True)) as sim:
        _out(adb_server, sim, "input tap 180 140")
        assert sim.phone.events[-1] == "tap 180 140 -> 0 (ignored (screen off))"
        _out(adb_server, sim, "input keyevent KEYCODE_WAKEUP")
        assert "asleep=0 locked=1" in _out(adb_server, sim, "simctl state")
        _out(adb_server, sim, "input tap 180 140")
        assert sim.phone.events[-1] == "tap 180 140 -> 0 (ignored (locked))"
        assert _out(adb_server, sim, "wm dismiss-keyguard") == ""  # prints nothing, exits 0
        assert sim.phone.events[-1] == "wm dismiss-keyguard -> 0 (keyguard dismissed)"
        assert "showing=false" in _out(adb_server, sim, "dumpsys window policy")
        assert _out(adb_server, sim, "wm dismiss-keyguard") == ""
        assert sim.phone.events[-1] == "wm dismiss-keyguard -> 0 (no keyguard)"
        _out(adb_server, sim, "input tap 180 140")
        assert sim.phone.navigator.position == 1


@requires_adb
def test_adb_keyboard_types_nothing_while_asleep(adb_server: AdbServer) -> None:
    with serving(adb_server, faults=Faults(asleep=True), adb_keyboard="active") as sim:
        done = _out(adb_server, sim, "am broadcast -a ADB_INPUT_TEXT --es msg hi")
        assert done.endswith("Broadcast completed: result=0\n")  # it completes, as ever
        assert sim.phone.typed == []
        assert sim.phone.events[-1] == "adbkeyboard text hi -> 0 (ignored (screen off))"
        _out(adb_server, sim, "am broadcast -a ADB_CLEAR_TEXT")
        assert sim.phone.events[-1] == "adbkeyboard clear -> 0 (ignored (screen off))"
        _out(adb_server, sim, "input keyevent 224")
        _out(adb_server, sim, "am broadcast -a ADB_INPUT_TEXT --es msg hi")
        assert sim.phone.typed == ["hi"]


@requires_adb
def test_frames_are_black_while_asleep_and_the_tree_stays(
    adb_server: AdbServer, phone: tuple[SimDevice, DeviceSource]
) -> None:
    sim, source = phone
    expected = cv2.imread(str(TINY / "step_000" / "screen.png"), cv2.IMREAD_COLOR)
    sim.faults.apply("asleep", "1")
    raw = decode_raw_screencap(source.capture_frame().data)  # type: ignore[arg-type]
    assert raw.shape == (640, 360, 3) and int(raw.max()) == 0
    _out(adb_server, sim, "screencap -p /sdcard/off.png; screencap /sdcard/off.raw")
    for data in (source.capture_png().data, sim.phone.files.data["/sdcard/off.png"]):
        assert isinstance(data, bytes)
        png = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        assert png is not None and png.shape == (640, 360, 3) and int(png.max()) == 0
    assert int(decode_raw_screencap(sim.phone.files.data["/sdcard/off.raw"]).max()) == 0
    # A real phone dumps the last window: the tree is the current step's.
    assert source.capture_tree().xml == (TINY / "step_000" / "screen.xml").read_bytes()
    sim.faults.apply("locked", "1")  # a lock screen alone does not blacken the frame
    sim.faults.apply("asleep", "0")
    frame = decode_raw_screencap(source.capture_frame().data)  # type: ignore[arg-type]
    np.testing.assert_array_equal(frame, expected)
    assert source.capture_png().data == (TINY / "step_000" / "screen.png").read_bytes()


@requires_adb
def test_simdevice_command_line_starts_asleep_and_locked(adb_server: AdbServer) -> None:
    with simdevice_cli(adb_server, "--asleep", "--locked") as serial:
        shell = ["-s", serial, "shell"]
        assert "asleep=1 locked=1" in adb_server.adb(*shell, "simctl state")
        assert "mWakefulness=Asleep" in adb_server.adb(*shell, "dumpsys power")
        source = DeviceSource(serial, config=device_config(adb_server))
        pixels = decode_raw_screencap(source.capture_frame().data)  # type: ignore[arg-type]
        assert int(pixels.max()) == 0
        adb_server.adb(*shell, "input keyevent KEYCODE_WAKEUP; wm dismiss-keyguard")
        assert "asleep=0 locked=0" in adb_server.adb(*shell, "simctl state")
    help_text = subprocess.run(
        [sys.executable, "-m", "perception.simdevice.cli", "--help"],
        capture_output=True, text=True, timeout=30,
    ).stdout
    assert "--asleep" in help_text and "--locked" in help_text


def test_a_pin_lock_says_secure_and_stays() -> None:
    """``pin=1``: the keyguard says ``secure=true`` and ``wm dismiss-keyguard`` leaves it."""
    phone = Phone(read_recording(TINY), faults=Faults(locked=True, pin=True))
    assert "      secure=true" in phone.run("dumpsys window policy").stdout.decode()
    phone.run("wm dismiss-keyguard")
    assert phone.faults.locked and phone.events[-1].endswith("(keyguard asks for a PIN)")
    phone.run("simctl fault pin=0")
    phone.run("wm dismiss-keyguard")
    assert not phone.faults.locked
