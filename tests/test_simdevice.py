"""The virtual phone end to end: the real ``adb`` server connects to it, adbutils and our
device source drive it, and every fault ends in its typed error or a recovery, never a hang.

Each test starts its own simulated phone; one adb server runs on a test port for the module
(``adb -P PORT``, with HOME in a temporary folder so no user keys are touched).
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import adbutils
import cv2
import numpy as np
import pytest
from _adb import ADB, TINY, AdbServer, device_config, requires_adb, simdevice_cli

from agent.executor import input_for
from perception.errors import (
    ConfigError,
    DeviceDisconnectedError,
    DeviceError,
    DeviceOfflineError,
    DeviceTimeoutError,
    DeviceUnauthorizedError,
    DumpFailedError,
    IdleStateError,
    NotAnImageError,
)
from perception.simdevice import Faults, SimDevice
from perception.simdevice.phone import CAPTURE_FAILED, Phone
from perception.simdevice.protocol import Command, pack, unpack_header
from perception.sources.base import FrameFormat, Insets, decode_raw_screencap
from perception.sources.device import (
    DeviceSource,
    extract_dump_xml,
    parse_dumpsys_window,
    parse_wm_density,
    parse_wm_size,
    split_text_prefix,
)
from perception.sources.loop import FrameLoop
from perception.sources.recording import read_recording
from perception.types import ScreenSize

# ----- parsers (no adb needed) ------------------------------------------------------------


def test_parsers_read_several_android_eras() -> None:
    assert parse_wm_size("Physical size: 1080x2340\n") == ScreenSize(1080, 2340)
    assert parse_wm_size("Physical size: 1080x2340\nOverride size: 720x1560\n") == ScreenSize(
        720, 1560
    )
    assert parse_wm_density("Physical density: 420\nOverride density: 360") == 360
    old = (
        "  mCurrentFocus=Window{41f2 u0 com.android.settings/com.android.settings.Settings}\n"
        "  mRotation=1\n  mStableInsets=[0,63][0,0]\n"
    )
    facts = parse_dumpsys_window(old)
    assert facts["rotation"] == 1
    assert facts["package"] == "com.android.settings"
    assert facts["activity"] == "com.android.settings/com.android.settings.Settings"
    new = (
        "    mCurrentRotation=ROTATION_270\n"
        "    InsetsSource type=ITYPE_STATUS_BAR frame=[0,0][2340,63] visible=true\n"
        "    InsetsSource type=ITYPE_NAVIGATION_BAR frame=[2214,0][2340,1080] visible=true\n"
    )
    facts = parse_dumpsys_window(new)
    assert facts["rotation"] == 3
    assert facts["insets"] == Insets(top_px=63, right_px=126)


def test_dump_answers_become_typed_errors() -> None:
    xml = b"<?xml version='1.0' ?><hierarchy rotation=\"0\"><node/></hierarchy>"
    assert extract_dump_xml(b"UI hierchary dumped to: /x.xml\n" + xml, "s") == xml
    with pytest.raises(IdleStateError):
        extract_dump_xml(b"ERROR: could not get idle state.\ncat: /x: No such file\n", "s")
    with pytest.raises(DumpFailedError, match="null root node"):
        extract_dump_xml(b"ERROR: null root node returned by UiTestAutomationBridge.\n", "s")
    with pytest.raises(DeviceDisconnectedError):
        extract_dump_xml(xml[:40], "s")


def test_protocol_messages_round_trip() -> None:
    raw = pack(Command.WRTE, 3, 9, b"hello")
    assert unpack_header(raw[:24]) == (Command.WRTE, 3, 9, 5)
    assert raw[24:] == b"hello"


# ----- the real adb server against the virtual phone --------------------------------------


@requires_adb
def test_adb_cli_sees_a_phone(adb_server: AdbServer, phone: tuple[SimDevice, DeviceSource]) -> None:
    sim, _ = phone
    devices = adb_server.adb("devices", "-l")
    assert f"{sim.serial}" in devices and "model:PerceptionSim" in devices
    # shell_v2 is advertised: the exit status travels back to the adb client.
    proc = subprocess.run(
        [ADB or "adb", "-P", str(adb_server.port), "-s", sim.serial, "shell", "false"],
        env=adb_server.env, capture_output=True, timeout=20,
    )
    assert proc.returncode == 1
    assert adb_server.adb("-s", sim.serial, "shell", "wm size").strip() == "Physical size: 360x640"
    out = adb_server.adb("-s", sim.serial, "shell", "uiautomator dump /sdcard/w.xml")
    assert "UI hierchary dumped to: /sdcard/w.xml" in out


@requires_adb
def test_sync_pull_and_push(
    adb_server: AdbServer, phone: tuple[SimDevice, DeviceSource], tmp_path: Path
) -> None:
    sim, _ = phone
    adb_server.adb("-s", sim.serial, "shell", "uiautomator dump /sdcard/w.xml")
    out = adb_server.adb("-s", sim.serial, "pull", "/sdcard/w.xml", str(tmp_path / "w.xml"))
    assert "1 file pulled" in out, out
    assert (tmp_path / "w.xml").read_bytes() == (TINY / "step_000" / "screen.xml").read_bytes()
    (tmp_path / "up.txt").write_bytes(b"x" * 70_000)
    out = adb_server.adb("-s", sim.serial, "push", str(tmp_path / "up.txt"), "/sdcard/up.txt")
    assert "1 file pushed" in out, out
    assert sim.phone.files.data["/sdcard/up.txt"] == b"x" * 70_000
    # adbutils' own sync client speaks the same protocol.
    dev = adbutils.AdbClient(port=adb_server.port).device(sim.serial)
    assert dev.sync.stat("/sdcard/up.txt").size == 70_000
    assert dev.sync.read_bytes("/sdcard/w.xml").startswith(b"<?xml")
    assert dev.shell("getprop ro.product.model") == "PerceptionSim"


@requires_adb
def test_device_source_captures(phone: tuple[SimDevice, DeviceSource]) -> None:
    sim, source = phone
    tree = source.capture_tree()
    assert tree.xml == (TINY / "step_000" / "screen.xml").read_bytes()
    assert tree.serial == sim.serial and tree.start_ns < tree.end_ns
    assert not sim.phone.files.data, "the fresh dump file must be removed"
    frame = source.capture_frame()
    assert frame.fmt is FrameFormat.RAW and isinstance(frame.data, bytes)
    expected = cv2.imread(str(TINY / "step_000" / "screen.png"), cv2.IMREAD_COLOR)
    np.testing.assert_array_equal(decode_raw_screencap(frame.data), expected)
    png = source.capture_png()
    assert png.fmt is FrameFormat.PNG
    facts = source.screen_facts()
    assert facts.size == ScreenSize(360, 640) and facts.density_dpi == 160
    assert facts.package == "com.example.notes" and facts.rotation == 0
    assert facts.insets.top_px == 40
    source.input("tap", 50, 150)
    assert source.epoch == 1
    assert b"Save" in source.capture_tree().xml
    assert source.screen_facts(refresh=True).activity == "com.example.notes/.EditActivity"
    source.input("keyevent", "KEYCODE_BACK")
    assert b"New note" in source.capture_tree().xml


@requires_adb
def test_idle_state_retries_then_typed_error(phone: tuple[SimDevice, DeviceSource]) -> None:
    sim, source = phone
    sim.faults.apply("idle", "2")  # two failures, the third attempt succeeds
    assert b"<hierarchy" in source.capture_tree().xml
    sim.faults.apply("idle", "always")
    t0 = time.monotonic()
    with pytest.raises(IdleStateError) as info:
        source.capture_tree()
    assert info.value.serial == sim.serial
    assert time.monotonic() - t0 < 3.0
    sim.faults.apply("idle", "0")
    assert b"<hierarchy" in source.capture_tree().xml  # recovery


@requires_adb
def test_slow_phone_times_out(
    adb_server: AdbServer, phone: tuple[SimDevice, DeviceSource]
) -> None:
    sim, _ = phone
    source = DeviceSource(sim.serial, config=device_config(adb_server, dump_timeout_s=0.5))
    sim.faults.apply("slow_ms", "1500")
    t0 = time.monotonic()
    with pytest.raises(DeviceTimeoutError) as info:
        source.capture_tree()
    assert time.monotonic() - t0 < 1.5
    assert info.value.serial == sim.serial
    sim.faults.apply("slow_ms", "0")
    time.sleep(1.2)  # let the slow command drain
    assert b"<hierarchy" in source.capture_tree().xml


@requires_adb
@pytest.mark.parametrize("what", ["screencap", "dump"])
def test_dropped_connection_mid_transfer(
    adb_server: AdbServer, what: str, tmp_path: Path
) -> None:
    sim = SimDevice(TINY).start()
    try:
        adb_server.connect(sim)
        source = DeviceSource(sim.serial, config=device_config(adb_server))
        source.wait_ready()
        sim.faults.apply("drop", what)
        with pytest.raises(DeviceDisconnectedError) as info:
            if what == "dump":
                source.capture_tree()
            else:
                source.capture_frame()
        assert info.value.serial == sim.serial
        # The phone is gone for the adb server until it reconnects.
        with pytest.raises((DeviceOfflineError, DeviceDisconnectedError)):
            source.capture_tree()
        source.reconnect(5.0)
        assert b"<hierarchy" in source.capture_tree().xml
    finally:
        adb_server.adb("disconnect", sim.serial)
        sim.stop()


@requires_adb
def test_secure_frames_are_black_not_errors(phone: tuple[SimDevice, DeviceSource]) -> None:
    sim, source = phone
    sim.faults.apply("secure", "1")
    pixels = decode_raw_screencap(source.capture_frame().data)  # type: ignore[arg-type]
    assert pixels.shape == (640, 360, 3) and int(pixels.max()) == 0
    assert b"New note" in source.capture_tree().xml  # FLAG_SECURE hides pixels, not the tree


@requires_adb
def test_screencap_warning_before_the_image_is_stripped(
    phone: tuple[SimDevice, DeviceSource],
) -> None:
    """Phones with several displays (foldables, Android 12+ emulators) warn on stderr before
    the image, and ``exec:`` merges stderr into the bytes: every frame used to fail (raw: not
    a header, then PNG: 'screencap -p returned b"[Warning] ..."')."""
    sim, source = phone
    sim.faults.apply("multi_display", "1")
    expected = cv2.imread(str(TINY / "step_000" / "screen.png"), cv2.IMREAD_COLOR)
    frame = source.capture_frame()
    assert frame.fmt is FrameFormat.RAW
    np.testing.assert_array_equal(decode_raw_screencap(frame.data), expected)  # type: ignore[arg-type]
    png = source.capture_png()
    assert png.data == (TINY / "step_000" / "screen.png").read_bytes()


@requires_adb
def test_screencap_failure_text_is_not_a_disconnect(
    phone: tuple[SimDevice, DeviceSource],
) -> None:
    """``Screen capture failed: -1`` (26 bytes) used to be read as a transfer cut short:
    DeviceDisconnectedError, although the phone was there and had answered."""
    sim, source = phone
    sim.faults.apply("capture_fail", "1")
    with pytest.raises(NotAnImageError, match="Screen capture failed"):
        source.capture_frame()
    with pytest.raises(NotAnImageError, match="Screen capture failed"):
        source.capture_png()
    sim.faults.apply("capture_fail", "0")
    assert source.capture_frame().fmt is FrameFormat.RAW  # raw frames were not given up


@pytest.mark.parametrize(
    ("data", "text", "rest"),
    [
        (b"\x89PNG\r\n\x1a\nrest", b"", b"\x89PNG\r\n\x1a\nrest"),
        (b"[Warning] two displays\nsecond line\n\x89PNG", b"[Warning] two displays\nsecond line\n",
         b"\x89PNG"),
        (b"Screen capture failed: -1\n", b"Screen capture failed: -1\n", b""),
        (b"fail", b"fail", b""),
        # Raw headers: a width whose low byte is '\n' or printable bytes then '\n' stay whole.
        (b"\n\x01\x00\x00\x10\x00\x00\x00", b"", b"\n\x01\x00\x00\x10\x00\x00\x00"),
        (b"8\n\x00\x00\x10\x00\x00\x00", b"", b"8\n\x00\x00\x10\x00\x00\x00"),
    ],
)
def test_split_text_prefix(data: bytes, text: bytes, rest: bytes) -> None:
    assert split_text_prefix(data) == (text, rest)


@requires_adb
def test_unauthorized_phone(adb_server: AdbServer) -> None:
    sim = SimDevice(TINY, faults=Faults(unauthorized=True)).start()
    try:
        assert "failed to authenticate" in adb_server.connect(sim)
        source = DeviceSource(sim.serial, config=device_config(adb_server, ready_timeout_s=0.5))
        with pytest.raises(DeviceUnauthorizedError) as info:
            source.wait_ready()
        assert info.value.serial == sim.serial
        with pytest.raises(DeviceUnauthorizedError):
            source.capture_tree()
    finally:
        adb_server.adb("disconnect", sim.serial)
        sim.stop()


@requires_adb
def test_unknown_and_vanished_devices(adb_server: AdbServer) -> None:
    source = DeviceSource("127.0.0.1:1", config=device_config(adb_server, ready_timeout_s=0.5))
    with pytest.raises(DeviceOfflineError):
        source.capture_tree()
    with pytest.raises(DeviceOfflineError):
        source.wait_ready()
    sim = SimDevice(TINY).start()
    adb_server.connect(sim)
    source = DeviceSource(sim.serial, config=device_config(adb_server))
    source.wait_ready()
    sim.stop()  # the phone disappears
    t0 = time.monotonic()
    with pytest.raises(DeviceError):
        source.capture_frame()
    assert time.monotonic() - t0 < 5.0
    adb_server.adb("disconnect", sim.serial)


@requires_adb
def test_two_phones_at_once(adb_server: AdbServer, corpus_dir: Path) -> None:
    trace = corpus_dir / "droidbot_a2dpvol_lowres" / "a2dpvol_2018-06-05"
    sims = [SimDevice(TINY).start(), SimDevice(trace).start()]
    try:
        sources = []
        for sim in sims:
            adb_server.connect(sim)
            source = DeviceSource(sim.serial, config=device_config(adb_server))
            source.wait_ready()
            sources.append(source)
        sizes = {s.serial: s.screen_facts().size for s in sources}
        assert sizes == {
            sims[0].serial: ScreenSize(360, 640),
            sims[1].serial: ScreenSize(480, 800),
        }
        assert b"ALLOW" in sources[1].capture_tree().xml
        sources[1].input("tap", 380, 504)  # the recorded ALLOW button
        assert b"ALLOW" not in sources[1].capture_tree().xml
        assert b"New note" in sources[0].capture_tree().xml
    finally:
        for sim in sims:
            adb_server.adb("disconnect", sim.serial)
            sim.stop()


@requires_adb
def test_adbutils_high_level_api(
    adb_server: AdbServer, phone: tuple[SimDevice, DeviceSource]
) -> None:
    sim, _ = phone
    dev = adbutils.AdbClient(port=adb_server.port).device(sim.serial)
    assert tuple(dev.window_size()) == (360, 640)
    assert dev.rotation() == 0
    current = dev.app_current()
    assert (current.package, current.activity) == ("com.example.notes", ".MainActivity")
    shot = dev.screenshot(error_ok=False)
    assert shot.size == (360, 640)
    dev.click(100, 140)  # input tap on the recorded "New note" target
    assert dev.app_current().activity == ".EditActivity"
    dev.keyevent("BACK")
    assert dev.app_current().activity == ".MainActivity"
    assert sim.phone.events[0].startswith("tap 100 140 -> 1")


@requires_adb
def test_frame_loop_keeps_only_the_newest_frame(phone: tuple[SimDevice, DeviceSource]) -> None:
    sim, source = phone
    with FrameLoop(source, interval_ms=10) as loop:
        first = loop.wait_newer(0, timeout_s=5.0)
        time.sleep(0.3)
        newest = loop.latest()
        assert newest is not None and newest.start_ns > first.start_ns
        assert loop.dropped >= 1 and loop.captured >= 3
        source.input("tap", 50, 150)
        mark = time.monotonic_ns()
        after = loop.wait_newer(mark, timeout_s=5.0)
        assert after.start_ns >= mark and after.epoch == 1
        sim.stop()  # the phone goes away: a typed error, not a hang
        with pytest.raises(DeviceError):
            loop.wait_newer(time.monotonic_ns(), timeout_s=2.0)
    assert not [t for t in threading.enumerate() if t.name == "perception-frameloop"]


@requires_adb
def test_dump_to_stdout(adb_server: AdbServer, phone: tuple[SimDevice, DeviceSource]) -> None:
    sim, _ = phone
    source = DeviceSource(sim.serial, config=device_config(adb_server, dump_to_stdout=True))
    assert source.capture_tree().xml == (TINY / "step_000" / "screen.xml").read_bytes()
    sim.faults.apply("drop", "dump")
    with pytest.raises(DeviceDisconnectedError):
        source.capture_tree()


@requires_adb
@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("input tap 1e400 5", "input: cannot convert float infinity to integer"),
        ("sleep nan", "sleep: invalid number 'nan'"),
        ("simctl goto 99", "simctl: step position 99 outside 0..2"),
    ],
)
def test_odd_commands_fail_like_commands(
    adb_server: AdbServer, phone: tuple[SimDevice, DeviceSource], command: str, message: str
) -> None:
    """``input tap 1e400 5`` used to kill the service thread: no output and no exit status;
    ``sleep nan`` slept the 5 s cap."""
    sim, _ = phone
    assert ADB is not None
    t0 = time.monotonic()
    proc = subprocess.run(
        [ADB, "-P", str(adb_server.port), "-s", sim.serial, "shell", command],
        env=adb_server.env, capture_output=True, text=True, timeout=20,
    )
    assert time.monotonic() - t0 < 4.0
    assert message in proc.stderr and proc.returncode == 1
    assert "position=0" in adb_server.adb("-s", sim.serial, "shell", "simctl state")


@requires_adb
def test_stop_does_not_wait_for_simulated_delays(adb_server: AdbServer) -> None:
    """A command sleeping in a ``slow_ms`` fault held ``stop()`` for its whole 2 s timeout and
    its thread outlived the server."""
    sim = SimDevice(TINY, faults=Faults(slow_ms=5000)).start()
    adb_server.connect(sim)
    source = DeviceSource(sim.serial, config=device_config(adb_server))
    with pytest.raises(DeviceTimeoutError):
        source.run("echo hi", timeout_s=0.3)
    t0 = time.monotonic()
    sim.stop()
    assert time.monotonic() - t0 < 1.0
    assert not [t for t in threading.enumerate() if t.name.startswith("simdevice-stream")]
    adb_server.adb("disconnect", sim.serial)


@requires_adb
def test_simdevice_command_line(adb_server: AdbServer) -> None:
    with simdevice_cli(adb_server, "--idle", "1") as serial:
        shell = ["-s", serial, "shell"]
        assert adb_server.adb(*shell, "uiautomator dump").startswith(
            "ERROR: could not get idle state."
        )
        assert "dumped to: /sdcard/window_dump.xml" in adb_server.adb(*shell, "uiautomator dump")
        assert "secure=1" in adb_server.adb(*shell, "simctl fault secure=1")


def test_a_fault_value_that_is_no_number_is_named() -> None:
    # `adb shell simctl fault idle=foo` answered "invalid literal for int() with base 10".
    faults = Faults()
    for name in ("idle", "slow_ms", "dump_slow_ms"):
        with pytest.raises(ValueError, match=f"{name}='foo': expected a whole number"):
            faults.apply(name, "foo")
    faults.apply("idle", "always")
    assert faults.idle_failures == -1


# ----- the shell reads command lines as Android's sh (mksh) does --------------------------


@pytest.fixture
def bare_phone() -> Phone:
    """The tiny recording's phone without a server: its shell is what these tests read."""
    return Phone(read_recording(TINY))


@pytest.mark.parametrize(
    ("line", "stdout"),
    [
        # A quoted operator is a word, whatever it holds (it ended the command).
        ("echo ';'", ";\n"),
        ("echo '&&' '||' '|' '&' '>' '<' \\; \\&\\&", "&& || | & > < ; &&\n"),
        ("echo 'a;echo INJECTED'", "a;echo INJECTED\n"),
        ('echo "x && echo PWNED"', "x && echo PWNED\n"),
        # $? is read outside single quotes only, when its command runs.
        ("echo 'rc=$?'", "rc=$?\n"),
        ("false; echo \"rc=$?\" rc=$? '$?' \\$?", "rc=1 rc=1 $? $?\n"),
        ("false && echo no || echo yes", "yes\n"),
        ("true || echo no && echo yes", "yes\n"),
        # Double quotes escape only $ ` " \ ; a backslash outside quotes escapes anything.
        ('echo "a\\"b\\c\\$x" \\a\\\\', 'a"b\\c$x a\\\n'),
        ("echo 'it'\\''s'", "it's\n"),
        # Parameters: adb shell's environment, unset ones expand to nothing (no argument).
        ('echo $HOME ${USER} "$UNSET" $UNSET x', "/ shell  x\n"),
        ("echo a$", "a$\n"),
        ("echo ~ ~/x '~' a~ ~shell", "/ //x ~ a~ ~shell\n"),
        # Comments start a word; newlines separate commands; backslash-newline joins lines.
        ("echo a#b # c ; echo hidden\necho d", "a#b\nd\n"),
        ("echo a \\\nb", "a b\n"),
        # "2" with a space before ">" is an argument, not a descriptor.
        ("echo 2 > /sdcard/f; cat /sdcard/f", "2\n"),
        ("echo a > /sdcard/f; echo b >> /sdcard/f; cat < /sdcard/f", "a\nb\n"),
        ("cat /nope 2>&1 | grep No", "cat: /nope: No such file or directory\n"),
        ("cat /nope 2>/dev/null; echo $?", "1\n"),
        ("cat /no > /sdcard/o 2>&1; cat /sdcard/o", "cat: /no: No such file or directory\n"),
    ],
)
def test_shell_reads_quotes_and_operators_as_sh(bare_phone: Phone, line: str, stdout: str) -> None:
    """``input text ';'`` typed nothing: shlex's punctuation lexer turned the quoted ``;`` into
    a separator; and ``'rc=$?'`` typed ``rc=0``."""
    result = bare_phone.run(line)
    assert result.stdout.decode() == stdout, result.stderr


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("; ls", "syntax error: ';' unexpected"),
        ("ls ;; ls", "syntax error: ';;' unexpected"),
        ("echo a &&", "syntax error: unexpected end of line"),
        ("echo a | | cat", "syntax error: '|' unexpected"),
        ("echo 'a", "syntax error: no closing quote"),
        ('echo "a', "syntax error: no closing quote"),
        ("echo a >", "syntax error: a redirect without a file"),
        ("input text x; echo $(reboot)", "command substitution ($(...)) is not emulated"),
        ("input text x; echo `reboot`", "command substitution (`...`) is not emulated"),
        ('input text x; echo "`reboot`"', "command substitution (`...`) is not emulated"),
        ("echo $((1+1))", "arithmetic ($((...))) is not emulated"),
        ("echo ${X:-y}", "the expansion '${X:-y}' is not emulated"),
    ],
)
def test_shell_refuses_what_it_cannot_read(bare_phone: Phone, line: str, message: str) -> None:
    """A line sh would refuse, or that would run something the phone cannot (a command
    substitution typed as literal text here would reboot a real phone), runs nothing."""
    result = bare_phone.run(line)
    assert result.code == 2 and not result.stdout
    assert result.stderr.decode().startswith("/system/bin/sh: ")
    assert message in result.stderr.decode()
    assert bare_phone.typed == []


def test_input_text_types_its_first_argument_only(bare_phone: Phone) -> None:
    """Android 11's ``input text a b`` types ``a``; the phone used to type ``a b``."""
    assert bare_phone.run("input text a b").code == 0
    assert bare_phone.run("input text 100%sdone").code == 0
    assert bare_phone.typed == ["a", "100 done"]
    result = bare_phone.run("input text")
    assert result.code == 1 and b"Argument expected" in result.stderr


TRICKY_TEXTS = [
    "'", '"', "\\", "%s", "100%sure", "%%s", "$HOME", "a;b", "a && b", "a || b", "a | b",
    "$(reboot)", "`reboot`", "rc=$?", "it's \"quoted\"", "  two  spaces  ", "#not a comment",
    "> /sdcard/x", "2>&1", "~", "*", "a\\nb",
]


@requires_adb
def test_executor_text_round_trips_through_adb(phone: tuple[SimDevice, DeviceSource]) -> None:
    """What the agent's executor sends for ``type`` reaches the phone as exactly its text,
    through the real adb server: every printable ASCII character alone and between letters,
    and the strings a shell is likeliest to misread."""
    sim, source = phone
    sink = input_for(source)
    texts = [chr(c) for c in range(0x20, 0x7F)]
    texts += [f"a{chr(c)}b" for c in range(0x20, 0x7F)] + TRICKY_TEXTS
    for text in texts:
        sim.phone.typed.clear()
        sink.text(text)
        assert "".join(sim.phone.typed) == text
    assert "position=0" in source.run("simctl state").decode()
    assert not sim.phone.files.data  # no "> /sdcard/x" redirect wrote a file


# ----- the phone applies the pixel channel's frame size rules, read when it is built --------


def test_the_phone_reads_the_pixel_frame_limits_once_when_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A phone serves no frame the pixel channel would refuse, by the settings in force when it
    was built; a bad setting is refused then, not on some later ``screencap``."""
    monkeypatch.setenv("PERCEPTION_PIXEL_MAX_SIDE_PX", "600")  # the tiny frames are 360x640
    strict = Phone(read_recording(TINY))
    monkeypatch.delenv("PERCEPTION_PIXEL_MAX_SIDE_PX")
    refused = strict.run("screencap -p")
    assert (refused.code, refused.stdout, refused.stderr) == (1, b"", CAPTURE_FAILED)
    assert Phone(read_recording(TINY)).run("screencap -p").stdout.startswith(b"\x89PNG")
    monkeypatch.setenv("PERCEPTION_PIXEL_MAX_SIDE_PX", "lots")
    with pytest.raises(ConfigError, match="PERCEPTION_PIXEL_MAX_SIDE_PX"):
        Phone(read_recording(TINY))
