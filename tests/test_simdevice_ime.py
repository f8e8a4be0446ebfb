"""The virtual phone's input methods and ADB Keyboard, as a real Android 11-13 phone answers.

``input text`` types printable ASCII only; ADB Keyboard types anything its broadcasts carry,
but only while it is the current input method: otherwise the broadcast completes and types
nothing. These tests drive one phone per ``--adb-keyboard`` mode through the real adb server,
and the shell of a phone without a server for the cases that need no transport.
"""

from __future__ import annotations

import base64
import subprocess
import sys

import pytest
from _adb import TINY, AdbServer, requires_adb, serving, shell, simdevice_cli

from perception.errors import ConfigError
from perception.simdevice import SimDevice
from perception.simdevice.phone import ADB_KEYBOARD_IME, LATIN_IME, AdbKeyboard, Phone
from perception.sources.recording import read_recording

TEXT = "你好, café 😀"
B64 = base64.b64encode(TEXT.encode("utf-8")).decode("ascii")
BROADCAST = f"am broadcast -a ADB_INPUT_B64 --es msg {B64}"
BROADCAST_OUT = (
    "Broadcasting: Intent { act=ADB_INPUT_B64 flg=0x400000 (has extras) }\n"
    "Broadcast completed: result=0\n"
)


@requires_adb
def test_without_adb_keyboard_a_broadcast_types_nothing(adb_server: AdbServer) -> None:
    with serving(adb_server, adb_keyboard="absent") as sim:
        assert shell(adb_server, sim.serial, "ime list -a -s").stdout == f"{LATIN_IME}\n"
        current = shell(adb_server, sim.serial, "settings get secure default_input_method")
        assert current.stdout == f"{LATIN_IME}\n"
        # The broadcast completes, as on a real phone: nobody is listening.
        done = shell(adb_server, sim.serial, BROADCAST)
        assert (done.stdout, done.returncode) == (BROADCAST_OUT, 0)
        assert sim.phone.typed == [] and sim.phone.events == []
        enable = shell(adb_server, sim.serial, f"ime enable {ADB_KEYBOARD_IME}")
        assert enable.returncode == 255 and enable.stdout == ""
        assert enable.stderr == (
            f"Unknown input method {ADB_KEYBOARD_IME} cannot be enabled for user #0\n"
        )


@requires_adb
def test_installed_adb_keyboard_types_once_enabled_and_selected(adb_server: AdbServer) -> None:
    with serving(adb_server, adb_keyboard="installed") as sim:
        listed = shell(adb_server, sim.serial, "ime list -a -s").stdout.splitlines()
        assert listed == [LATIN_IME, ADB_KEYBOARD_IME]
        assert shell(adb_server, sim.serial, "ime list -s").stdout == f"{LATIN_IME}\n"
        # Installed but not enabled: selecting it fails, and a broadcast types nothing.
        refused = shell(adb_server, sim.serial, f"ime set {ADB_KEYBOARD_IME}")
        assert refused.returncode == 255
        assert refused.stderr == (
            f"Unknown input method {ADB_KEYBOARD_IME} cannot be selected for user #0\n"
        )
        assert shell(adb_server, sim.serial, BROADCAST).stdout == BROADCAST_OUT
        assert sim.phone.typed == []

        enable = shell(adb_server, sim.serial, f"ime enable {ADB_KEYBOARD_IME}")
        assert (enable.stdout, enable.returncode) == (
            f"Input method {ADB_KEYBOARD_IME}: now enabled for user #0\n", 0
        )
        again = shell(adb_server, sim.serial, f"ime enable {ADB_KEYBOARD_IME}")
        assert again.stdout == f"Input method {ADB_KEYBOARD_IME}: already enabled for user #0\n"
        chosen = shell(adb_server, sim.serial, f"ime set {ADB_KEYBOARD_IME}")
        assert (chosen.stdout, chosen.returncode) == (
            f"Input method {ADB_KEYBOARD_IME} selected for user #0\n", 0
        )
        current = shell(adb_server, sim.serial, "settings get secure default_input_method")
        assert current.stdout == f"{ADB_KEYBOARD_IME}\n"
        assert shell(adb_server, sim.serial, BROADCAST).stdout == BROADCAST_OUT
        assert sim.phone.typed == [TEXT]
        assert sim.phone.events[-1].startswith(f"adbkeyboard text {TEXT} -> 0 ")

        unknown = shell(adb_server, sim.serial, "ime set com.example/.NoSuchIME")
        assert (unknown.stdout, unknown.returncode) == ("", 255)
        assert unknown.stderr == (
            "Unknown input method com.example/.NoSuchIME cannot be selected for user #0\n"
        )
        # Disabling the current keyboard puts Android's back, and broadcasts type nothing again.
        disable = shell(adb_server, sim.serial, f"ime disable {ADB_KEYBOARD_IME}")
        assert disable.stdout == f"Input method {ADB_KEYBOARD_IME}: now disabled for user #0\n"
        current = shell(adb_server, sim.serial, "settings get secure default_input_method")
        assert current.stdout == f"{LATIN_IME}\n"
        shell(adb_server, sim.serial, BROADCAST)
        assert sim.phone.typed == [TEXT]


@requires_adb
def test_active_adb_keyboard_types_at_once(adb_server: AdbServer) -> None:
    with serving(adb_server, adb_keyboard="active") as sim:
        assert shell(adb_server, sim.serial, "ime list -s").stdout.splitlines() == [
            LATIN_IME, ADB_KEYBOARD_IME
        ]
        current = shell(adb_server, sim.serial, "settings get secure default_input_method")
        assert current.stdout == f"{ADB_KEYBOARD_IME}\n"
        assert shell(adb_server, sim.serial, BROADCAST).stdout == BROADCAST_OUT
        plain = shell(adb_server, sim.serial, "am broadcast -a ADB_INPUT_TEXT --es msg 'a b'")
        assert plain.stdout.startswith("Broadcasting: Intent { act=ADB_INPUT_TEXT flg=0x400000")
        cleared = shell(adb_server, sim.serial, "am broadcast -a ADB_CLEAR_TEXT")
        assert cleared.stdout == (
            "Broadcasting: Intent { act=ADB_CLEAR_TEXT flg=0x400000 }\n"
            "Broadcast completed: result=0\n"
        )
        assert sim.phone.typed == [TEXT, "a b"]
        assert sim.phone.events[-1] == "adbkeyboard clear -> 0 (field cleared)"
        state = shell(adb_server, sim.serial, "simctl state").stdout
        assert f"ime={ADB_KEYBOARD_IME}" in state


@requires_adb
def test_command_line_adb_keyboard(adb_server: AdbServer) -> None:
    with simdevice_cli(adb_server, "--adb-keyboard", "active") as serial:
        current = shell(adb_server, serial, "settings get secure default_input_method")
        assert current.stdout == f"{ADB_KEYBOARD_IME}\n"
        assert shell(adb_server, serial, BROADCAST).stdout == BROADCAST_OUT
    bad = subprocess.run(
        [sys.executable, "-m", "perception.simdevice.cli", str(TINY), "--adb-keyboard", "on"],
        capture_output=True, text=True, timeout=30,
    )
    assert bad.returncode == 2 and "--adb-keyboard: invalid choice: 'on'" in bad.stderr


# ----- the shell alone (no transport) -------------------------------------------------------


@pytest.fixture
def keyboard_phone() -> Phone:
    """The tiny recording's phone with ADB Keyboard current, without a server."""
    return Phone(read_recording(TINY), adb_keyboard=AdbKeyboard.ACTIVE)


def test_an_unknown_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="adb_keyboard='on': expected absent, installed or"):
        Phone(read_recording(TINY), adb_keyboard="on")
    with pytest.raises(ConfigError):
        SimDevice(TINY, adb_keyboard="yes")


@pytest.mark.parametrize(
    ("msg", "typed"),
    [
        # android.util.Base64 skips what is outside its alphabet and accepts missing padding.
        ("YWJj", ["abc"]),
        ("YQ", ["a"]),
        ("YW\\ Jj", ["abc"]),
        # It throws on wrong padding or one character left over: the IME types nothing.
        ("YQ=", []),
        ("Y", []),
        ("YQ==YQ", []),
        # Java's String(bytes, "UTF-8") replaces bytes that are no UTF-8; it does not throw.
        (base64.b64encode(b"a\xffb").decode(), ["a\ufffdb"]),
    ],
)
def test_b64_reads_as_android_decodes(keyboard_phone: Phone, msg: str, typed: list[str]) -> None:
    result = keyboard_phone.run(f"am broadcast -a ADB_INPUT_B64 --es msg {msg}")
    assert result.code == 0 and b"Broadcast completed: result=0" in result.stdout
    assert keyboard_phone.typed == typed


def test_broadcasts_that_do_not_reach_the_keyboard(keyboard_phone: Phone) -> None:
    """An explicit component is no receiver registered at run time; another package's
    broadcast and other actions complete with no effect."""
    lines = [
        f"am broadcast -n {ADB_KEYBOARD_IME} -a ADB_INPUT_TEXT --es msg x",
        "am broadcast -p com.example -a ADB_INPUT_TEXT --es msg x",
        "am broadcast -a android.intent.action.FOO --ei n 3",
    ]
    for line in lines:
        result = keyboard_phone.run(line)
        assert result.code == 0 and result.stdout.endswith(b"Broadcast completed: result=0\n")
    assert keyboard_phone.run(lines[0]).stdout.startswith(
        b"Broadcasting: Intent { act=ADB_INPUT_TEXT flg=0x400000 "
        b"cmp=com.android.adbkeyboard/.AdbIME (has extras) }\n"
    )
    assert keyboard_phone.typed == []
    bad = keyboard_phone.run("am broadcast --nope")
    assert bad.code == 255 and b"Unknown option: --nope" in bad.stderr


def test_settings_and_disabling_choose_the_current_keyboard(keyboard_phone: Phone) -> None:
    phone = keyboard_phone
    assert phone.run("settings get secure enabled_input_methods").stdout == (
        f"{LATIN_IME}:{ADB_KEYBOARD_IME}\n".encode()
    )
    # The shell may write the secure setting; a real phone switches keyboards at once.
    assert phone.run(f"settings put secure default_input_method {LATIN_IME}").code == 0
    assert phone.run("am broadcast -a ADB_INPUT_TEXT --es msg x").code == 0
    assert phone.typed == []
    phone.run(f"settings put secure default_input_method {ADB_KEYBOARD_IME}")
    phone.run("am broadcast -a ADB_INPUT_TEXT --es msg x")
    assert phone.typed == ["x"]
    # Other settings: null until put.
    assert phone.run("settings get global foo").stdout == b"null\n"
    phone.run("settings put global foo 1")
    assert phone.run("settings get global foo").stdout == b"1\n"
    # With no keyboard left enabled there is no current one.
    phone.run(f"ime disable {LATIN_IME}")
    assert phone.run("settings get secure default_input_method").stdout == (
        f"{ADB_KEYBOARD_IME}\n".encode()
    )
    out = phone.run(f"ime disable {ADB_KEYBOARD_IME}")
    assert out.stdout == f"Input method {ADB_KEYBOARD_IME}: now disabled for user #0\n".encode()
    assert phone.run("settings get secure default_input_method").stdout == b"\n"
    assert phone.run("ime list -s").stdout == b""
    listed = phone.run("ime list -a").stdout.decode()
    assert listed == "".join(f"{i}:\n  mId={i}\n" for i in (LATIN_IME, ADB_KEYBOARD_IME))
