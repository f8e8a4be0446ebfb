"""The virtual phone answers test scripts as a phone does: its package manager knows the
recording's apps, its shell keeps variables and runs ``exec`` (the adb client wraps ``logcat``
in both), ``logcat`` has an empty log, and what it cannot do (resize the screen, an interactive
shell, a pm verb it does not carry out) fails with a line that says so.

A QA run with the real ``adb`` and adbutils on the a2dpvol trace found: ``am start -n
a2dp.Vol/.main`` while a2dp.Vol was in front said the activity does not exist, ``pm list
packages`` was an unknown command (adbutils' ``list_packages()`` returned ``[]``), ``adb logcat
-c`` failed with ``export: not found`` (exit 127), ``A=1; echo $A`` ran ``A=1`` as a command,
``wm size 1080x1920`` printed the old size and exit 0, and ``adb shell`` alone exited 0 silently.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import adbutils
import pytest
from _adb import ADB, TINY, AdbServer, requires_adb, serving, shell

from perception.simdevice import SimDevice
from perception.simdevice.cli import main as simdevice_main
from perception.simdevice.phone import Phone
from perception.sources.recording import read_recording

A2DP = "a2dp.Vol"
A2DP_MAIN = "a2dp.Vol/.main"
DELIVERED = (
    b"Warning: Activity not started, intent has been delivered to currently running top-most "
    b"instance.\n"
)
A2DP_PACKAGES = [
    "a2dp.Vol", "android", "com.android.chrome", "com.android.inputmethod.latin",
    "com.android.settings", "com.google.android.packageinstaller", "org.chromium.webview_shell",
]
"""What the a2dpvol trace's phone has: the three apps its steps show, and the system's."""


@pytest.fixture(scope="module")
def a2dpvol(corpus_dir: Path) -> Path:
    """The QA run's recording: step 0 a permission dialog (packageinstaller), steps 1-3 and 8
    A2DP Volume (a2dp.Vol/.main), steps 4-7 WebView shell; every recorded action is a tap."""
    return corpus_dir / "droidbot_a2dpvol_lowres" / "a2dpvol_2018-06-05"


@pytest.fixture
def a2dp_phone(a2dpvol: Path) -> Phone:
    phone = Phone(read_recording(a2dpvol))
    phone.navigator.goto(1)
    return phone


def _out(phone: Phone, line: str) -> tuple[bytes, bytes, int]:
    result = phone.run(line)
    return result.stdout, result.stderr, result.code


# ----- the package manager --------------------------------------------------------------------


def test_every_package_the_recording_shows_is_installed(a2dp_phone: Phone) -> None:
    listed = a2dp_phone.run("pm list packages")
    assert listed.code == 0 and listed.stderr == b""
    assert listed.stdout.decode().splitlines() == [f"package:{p}" for p in A2DP_PACKAGES]
    assert _out(a2dp_phone, "cmd package list packages") == (listed.stdout, b"", 0)
    third = a2dp_phone.run("pm list packages -3").stdout.decode().split()
    assert third == ["package:a2dp.Vol", "package:org.chromium.webview_shell"]
    system = a2dp_phone.run("pm list packages -s").stdout.decode().split()
    assert "package:a2dp.Vol" not in system and "package:com.android.settings" in system
    assert _out(a2dp_phone, "pm list packages -3 Vol") == (b"package:a2dp.Vol\n", b"", 0)
    assert _out(a2dp_phone, "pm list packages nothing.like.it") == (b"", b"", 0)
    assert a2dp_phone.run("pm list packages -f a2dp").stdout == (
        b"package:/data/app/a2dp.Vol-1/base.apk=a2dp.Vol\n"
    )
    assert _out(a2dp_phone, "pm list packages -d") == (b"", b"", 0)  # none is disabled
    bad = a2dp_phone.run("pm list packages -Z")
    assert (bad.stderr, bad.code) == (b"Error: Unknown option: -Z\n", 255)


def test_pm_path_and_the_verbs_the_phone_does_not_carry_out(a2dp_phone: Phone) -> None:
    assert _out(a2dp_phone, f"pm path {A2DP}") == (
        b"package:/data/app/a2dp.Vol-1/base.apk\n", b"", 0
    )
    assert _out(a2dp_phone, "pm path com.android.settings") == (
        b"package:/system/app/com.android.settings/com.android.settings.apk\n", b"", 0
    )
    assert _out(a2dp_phone, "pm path com.nope") == (b"", b"", 1)  # as Android's: nothing, 1
    for line in (f"pm clear {A2DP}", f"pm uninstall {A2DP}", "pm list features"):
        out, err, code = _out(a2dp_phone, line)
        assert out == b"" and code == 255
        assert b"not emulated by the virtual phone" in err and err.count(b"\n") == 1, err
    assert _out(a2dp_phone, "pm frobnicate") == (b"", b"Unknown command: frobnicate\n", 255)


def test_starting_the_app_in_front_leaves_it_there(a2dp_phone: Phone) -> None:
    started = a2dp_phone.run(f"am start -n {A2DP_MAIN}")
    assert started.code == 0 and started.stderr == b""
    assert started.stdout == b"Starting: Intent { cmp=a2dp.Vol/.main }\n" + DELIVERED
    monkey = a2dp_phone.run(f"monkey -p {A2DP} -c android.intent.category.LAUNCHER 1")
    assert (monkey.stdout, monkey.code) == (b"Events injected: 1\n", 0)
    assert a2dp_phone.navigator.position == 1
    # the full spelling of the same activity is the same activity
    assert DELIVERED in a2dp_phone.run("am start -n a2dp.Vol/a2dp.Vol.main").stdout
    # an activity of the app that the phone never saw does not exist, as before
    other = a2dp_phone.run("am start -n a2dp.Vol/.Settings")
    assert b"Activity class {a2dp.Vol/a2dp.Vol.Settings} does not exist" in other.stderr
    assert a2dp_phone.navigator.position == 1


def test_starting_an_installed_app_that_is_not_in_front_keeps_the_screen(
    a2dp_phone: Phone,
) -> None:
    """As ``am start`` of Settings always has: the recording has no screen of it to show from
    here (no recorded intent starts it), so the start is accepted and nothing moves."""
    a2dp_phone.navigator.goto(4)  # WebView shell in front
    started = a2dp_phone.run(f"am start -n {A2DP_MAIN}")
    assert started.stdout == b"Starting: Intent { cmp=a2dp.Vol/.main }\n"
    assert (started.stderr, started.code) == (b"", 0)
    assert _out(a2dp_phone, f"monkey -p {A2DP} 1") == (b"Events injected: 1\n", b"", 0)
    assert a2dp_phone.navigator.position == 4
    assert a2dp_phone.events[-2:] == [
        f"am start -n {A2DP_MAIN} -> 4 (no recorded intent here)",
        f"monkey -p {A2DP} 1 -> 4 (no recorded intent here)",
    ]
    # a package the recording never showed is still not there
    aborted = a2dp_phone.run("monkey -p com.nope 1")
    assert aborted.code == 252 and b"No activities found to run" in aborted.stdout


# ----- the shell: variables, export, exec ----------------------------------------------------


@pytest.fixture
def tiny_phone() -> Phone:
    return Phone(read_recording(TINY))


@pytest.mark.parametrize(
    ("line", "stdout"),
    [
        ("A=1; echo $A", b"1\n"),
        ("A=1 B=$A; echo $B ${A}", b"1 1\n"),
        ("export A=2; echo $A", b"2\n"),
        ("A=3; export A; echo $A", b"3\n"),
        ("A=1 echo x$A", b"x\n"),  # for the command's environment: $A was expanded before
        ("A=4; unset A; echo x${A}x", b"xx\n"),
        ("A='a  b'; echo \"$A\" $A", b"a  b a b\n"),  # unquoted: split at blanks
        ("export ANDROID_LOG_TAGS=\"''\" ; exec echo hi; echo never", b"hi\n"),
        ("exec echo a | cat; echo b", b"a\nb\n"),  # in a pipeline exec ends that part only
        ("echo $HOME; HOME=/sdcard; echo $HOME", b"/\n/sdcard\n"),
        ("'A=1'; echo $?", b"127\n"),  # a quoted name is no assignment
    ],
)
def test_shell_variables_last_until_the_line_ends(
    tiny_phone: Phone, line: str, stdout: bytes
) -> None:
    assert tiny_phone.run(line).stdout == stdout
    assert tiny_phone.run("echo x${A}x").stdout == b"xx\n"  # a new line, a new sh


def test_an_unquoted_variable_splits_into_arguments(tiny_phone: Phone) -> None:
    tiny_phone.run("T='hello world'; input text $T; input text \"$T\"")
    assert tiny_phone.typed == ["hello", "hello world"]  # input text types its first argument


def test_what_the_shell_refuses(tiny_phone: Phone) -> None:
    assert _out(tiny_phone, "export 1A=2") == (
        b"", b"/system/bin/sh: export: 1A=2: is not an identifier\n", 1
    )
    out, err, code = _out(tiny_phone, "exec >/sdcard/log; echo hi")
    assert (out, code) == (b"", 2) and b"not emulated by the virtual phone" in err
    assert _out(tiny_phone, "exec; echo still") == (b"still\n", b"", 0)


# ----- logcat, wm, input ----------------------------------------------------------------------


def test_logcat_has_an_empty_log(tiny_phone: Phone) -> None:
    for line in ("logcat -c", "logcat -d", "logcat -d -v time *:S", "logcat -t 100",
                 "logcat -vthreadtime -b main -d"):
        done = tiny_phone.run(line)
        assert (done.stdout, done.stderr, done.code, done.hold) == (b"", b"", 0, False), line
    assert tiny_phone.run("logcat -d -f /sdcard/log.txt; cat /sdcard/log.txt").code == 0
    for line in ("logcat", "logcat -v time", "logcat | grep x; echo never"):
        streaming = tiny_phone.run(line)
        assert streaming.hold and streaming.stdout == b"", line
    out, err, code = _out(tiny_phone, "logcat -g")
    assert code == 255 and b"logcat -g: not emulated by the virtual phone" in err
    assert _out(tiny_phone, "logcat -Z") == (b"", b"logcat: unrecognized option '-Z'\n", 1)


def test_screen_size_and_density_cannot_be_changed(tiny_phone: Phone) -> None:
    out, err, code = _out(tiny_phone, "wm size 1080x1920")
    assert (out, code) == (b"", 255)
    assert err == (
        b"wm size 1080x1920: changing the screen's size is not emulated by the virtual phone "
        b"(it stays 360x640, as recorded; wm size reset is accepted)\n"
    )
    out, err, code = _out(tiny_phone, "wm density 320")
    assert code == 255 and b"it stays 160" in err
    assert _out(tiny_phone, "wm size reset") == (b"", b"", 0)
    assert _out(tiny_phone, "wm density reset -d 0") == (b"", b"", 0)
    assert _out(tiny_phone, "wm size -d 0") == (b"Physical size: 360x640\n", b"", 0)


def test_input_reports_bad_numbers_as_android_does(tiny_phone: Phone) -> None:
    assert _out(tiny_phone, "input tap abc 5") == (
        b"",
        b"Exception occurred while executing 'tap':\n"
        b'java.lang.NumberFormatException: For input string: "abc"\n',
        255,
    )
    out, err, code = _out(tiny_phone, "input tap 5")
    assert code == 1 and err.startswith(b"Error: Invalid arguments for command: tap\nUsage: ")
    assert _out(tiny_phone, "input swipe 1 2 3 x")[2] == 255
    assert tiny_phone.events == []  # nothing reached the screen
    assert _out(tiny_phone, "input tap 5.5 6e1") == (b"", b"", 0)
    assert tiny_phone.events[-1].startswith("tap 5.5 6e1 -> ")


# ----- through the real adb -------------------------------------------------------------------


def _adb(server: AdbServer, serial: str, *args: str) -> subprocess.CompletedProcess[str]:
    assert ADB is not None
    return subprocess.run(
        [ADB, "-P", str(server.port), "-s", serial, *args], env=server.env,
        capture_output=True, text=True, timeout=20, stdin=subprocess.DEVNULL,
    )


@requires_adb
def test_the_qa_script_through_adb_and_adbutils(adb_server: AdbServer, a2dpvol: Path) -> None:
    with serving(adb_server, a2dpvol) as sim:
        assert _adb(adb_server, sim.serial, "shell", "simctl", "goto", "1").returncode == 0
        focus = shell(adb_server, sim.serial, "dumpsys window | grep mCurrentFocus").stdout
        assert A2DP_MAIN in focus
        started = shell(adb_server, sim.serial, f"am start -n {A2DP_MAIN}")
        assert started.returncode == 0 and started.stderr == ""
        assert DELIVERED.decode() in started.stdout
        monkey = shell(adb_server, sim.serial,
                       f"monkey -p {A2DP} -c android.intent.category.LAUNCHER 1")
        assert monkey.returncode == 0
        listed = shell(adb_server, sim.serial, "pm list packages")
        assert listed.returncode == 0 and f"package:{A2DP}\n" in listed.stdout
        assert shell(adb_server, sim.serial, "pm path com.nope").returncode == 1

        device = adbutils.AdbClient(port=adb_server.port).device(sim.serial)
        assert device.list_packages() == A2DP_PACKAGES
        assert device.list_packages(["-3"]) == [A2DP, "org.chromium.webview_shell"]
        device.app_start(A2DP)  # monkey -p: already in front, it stays
        assert device.app_current().package == A2DP
        assert sim.phone.navigator.position == 1


@requires_adb
def test_adb_logcat_and_variables_through_the_adb_client(
    adb_server: AdbServer, sim: SimDevice
) -> None:
    """``adb logcat`` sends ``export ANDROID_LOG_TAGS="''" ; exec logcat ARGS``."""
    for args in (("logcat", "-c"), ("logcat", "-d"), ("logcat", "-d", "-v", "time")):
        done = _adb(adb_server, sim.serial, *args)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), args
    assert sim.phone.commands[-1] == "export ANDROID_LOG_TAGS=\"''\"; exec logcat '-d' '-v' 'time'"
    assert shell(adb_server, sim.serial, "A=1; echo $A").stdout == "1\n"
    size = shell(adb_server, sim.serial, "wm size 1080x1920")
    assert size.returncode == 255 and "not emulated" in size.stderr


def _stream_threads() -> int:
    return sum(t.name.startswith("simdevice-stream-") for t in threading.enumerate())


@pytest.fixture
def quiet_logcat(adb_server: AdbServer, sim: SimDevice) -> Iterator[subprocess.Popen[bytes]]:
    assert ADB is not None
    proc = subprocess.Popen(
        [ADB, "-P", str(adb_server.port), "-s", sim.serial, "logcat"], env=adb_server.env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


@requires_adb
def test_a_streaming_logcat_stays_open_and_quiet_until_the_client_leaves(
    sim: SimDevice, quiet_logcat: subprocess.Popen[bytes]
) -> None:
    before = time.monotonic()
    while time.monotonic() - before < 1.5 and quiet_logcat.poll() is None:
        time.sleep(0.1)
    assert quiet_logcat.poll() is None  # still streaming, as a phone where nothing logs
    assert _stream_threads() >= 1
    quiet_logcat.terminate()
    quiet_logcat.wait(timeout=10)
    deadline = time.monotonic() + 5
    while _stream_threads() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _stream_threads() == 0  # the phone let go of the stream
    assert sim.phone.run("echo alive").stdout == b"alive\n"


@requires_adb
def test_an_interactive_shell_says_it_is_not_emulated(
    adb_server: AdbServer, sim: SimDevice
) -> None:
    done = _adb(adb_server, sim.serial, "shell")
    assert done.returncode == 1 and done.stdout == ""
    assert "an interactive shell is not emulated by the virtual phone" in done.stderr
    assert "adb shell COMMAND" in done.stderr


# ----- the command line ------------------------------------------------------------------------


def test_help_states_the_port_and_the_emulator_probe(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        simdevice_main(["--help"])
    assert done.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "default 5555" in text and "5555-5585" in text and "emulator-5554" in text
    assert "--host HOST address to listen on (default 127.0.0.1" in text
    assert "--model MODEL the model the phone reports" in text
