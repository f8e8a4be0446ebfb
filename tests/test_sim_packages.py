"""The virtual phone's package manager answers as a phone does for every app the recording
shows: ``dumpsys package PKG`` (adbutils' ``app_info``), a launcher entry for an app the
recording only shows as screens (the agent's ``open_app`` could not start it: the launcher
query listed only the apps started by intent), and the focus lines ``app_current`` reads.

Before: ``dumpsys package a2dp.Vol`` printed ``Can't find service: package`` (``app_info``
returned None for an installed app), the a2dpvol trace's launcher listed Settings and Chrome
only, and ``am start -n`` of an app the recording opened by a tap on its icon kept the home
screen.
"""

from __future__ import annotations

import datetime
from pathlib import Path

import adbutils
import pytest
from _adb import AdbServer, connected, requires_adb, serving, shell
from _apps import LAUNCHER, NOTES, home, notes_screen, write_recording

from agent.executor import AdbInput
from perception.simdevice.phone import CHROME, SETTINGS, Phone
from perception.sources.device import LAUNCHER_QUERY, parse_components
from perception.sources.recording import read_recording

A2DP = "a2dp.Vol"
A2DP_MAIN = "a2dp.Vol/.main"
WEBVIEW_SHELL = "org.chromium.webview_shell/.WebViewBrowserActivity"
NOTES_GUESSED = f"{NOTES}/.Main"
"""The activity the phone names for Notes' screens: the recording below records none."""


@pytest.fixture(scope="module")
def a2dpvol(corpus_dir: Path) -> Path:
    """Step 0 a permission dialog (packageinstaller), steps 1-3 and 8 A2DP Volume, steps 4-7
    WebView shell; every recorded action is a tap, no app is started by intent."""
    return corpus_dir / "droidbot_a2dpvol_lowres" / "a2dpvol_2018-06-05"


@pytest.fixture(scope="module")
def tapped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home screen whose recorded tap (on Notes' icon) opens Notes: no intent anywhere,
    no activity recorded."""
    return write_recording(
        tmp_path_factory.mktemp("packages") / "tapped",
        [home(), notes_screen()],
        [{"kind": "tap", "point_px": [60, 540], "result_step": 1}, None],
    )


# ----- the launcher lists the apps the recording shows ------------------------------------


def test_the_launcher_lists_apps_the_recording_only_shows(a2dpvol: Path, tapped: Path) -> None:
    phone = Phone(read_recording(a2dpvol))
    # the first activity seen of each app; the permission dialog's package is no launcher app
    assert phone.launcher_components() == (A2DP_MAIN, WEBVIEW_SHELL, SETTINGS, CHROME)
    listed = phone.run(LAUNCHER_QUERY)
    assert listed.code == 0 and listed.stdout.startswith(b"4 activities found:\n")
    assert parse_components(listed.stdout.decode()) == phone.launcher_components()
    only = phone.run(f"{LAUNCHER_QUERY} -p {A2DP}").stdout.decode()
    assert parse_components(only) == (A2DP_MAIN,)
    # the home screen is installed but not an app its own launcher lists
    notes = Phone(read_recording(tapped))
    assert notes.launcher_components() == (NOTES_GUESSED, SETTINGS, CHROME)
    assert f"package:{LAUNCHER}\n".encode() in notes.run("pm list packages").stdout


def test_home_screens_and_system_dialogs_get_no_launcher_entry(corpus_dir: Path) -> None:
    """QQ Music's trace shows Launcher3 (QuickstepLauncher) and the permission controller;
    the LlamaTouch trace names the wallpaper as the home screen's focus and records Maps'
    activity as ``null``."""
    qq = Phone(read_recording(corpus_dir / "droidbotexp_qqmusic" / "qqmusic_2021-11-23"))
    packages = {c.split("/")[0] for c in qq.launcher_components()}
    assert "com.tencent.qqmusic" in packages
    assert not packages & {"com.android.launcher3", "com.android.permissioncontroller"}
    llama = Phone(read_recording(corpus_dir / "llamatouch" / "trace_7"))
    assert llama.launcher_components() == (
        "com.google.android.apps.photos/.home.HomeActivity",
        "com.google.android.apps.maps/.Main", SETTINGS, CHROME,
    )


# ----- starting such an app goes where the recording went into it -------------------------


def test_starting_an_app_follows_the_recorded_tap_that_opened_it(tapped: Path) -> None:
    phone = Phone(read_recording(tapped))
    started = phone.run(f"am start -n {NOTES_GUESSED}")
    assert (started.stdout, started.stderr, started.code) == (
        f"Starting: Intent {{ cmp={NOTES_GUESSED} }}\n".encode(), b"", 0
    )
    assert phone.navigator.position == 1
    # in front now: started again, it stays, with a phone's warning
    again = phone.run(f"am start -n {NOTES_GUESSED}")
    assert b"Warning: Activity not started" in again.stdout and phone.navigator.position == 1
    assert phone.events[-2:] == [
        f"am start -n {NOTES_GUESSED} -> 1 (recorded way into {NOTES})",
        f"am start -n {NOTES_GUESSED} -> 1 (no recorded intent here)",
    ]

    by_monkey = Phone(read_recording(tapped))
    done = by_monkey.run(f"monkey -p {NOTES} -c android.intent.category.LAUNCHER 1")
    assert (done.stdout, done.code) == (b"Events injected: 1\n", 0)
    assert by_monkey.navigator.position == 1


def test_an_app_the_step_does_not_open_keeps_the_screen(a2dpvol: Path) -> None:
    """From the WebView shell (step 4, whose recorded tap stays on it) nothing recorded goes
    into A2DP Volume: the start is accepted and the screen stays."""
    phone = Phone(read_recording(a2dpvol))
    phone.navigator.goto(4)
    assert phone.run(f"am start -n {A2DP_MAIN}").code == 0
    assert phone.navigator.position == 4
    # from the permission dialog (step 0), whose recorded tap leads into A2DP Volume (step 1)
    phone.navigator.goto(0)
    phone.run(f"am start -n {A2DP_MAIN}")
    assert phone.navigator.position == 1
    assert phone.events[-1] == f"am start -n {A2DP_MAIN} -> 1 (recorded way into {A2DP})"


# ----- dumpsys package ----------------------------------------------------------------------


def test_dumpsys_package_describes_a_recorded_app(a2dpvol: Path) -> None:
    phone = Phone(read_recording(a2dpvol))
    done = phone.run(f"dumpsys package {A2DP}")
    assert done.code == 0 and done.stderr == b""
    text = done.stdout.decode()
    assert text.startswith(
        "Activity Resolver Table:\n  Non-Data Actions:\n      android.intent.action.MAIN:\n"
    )
    assert f" {A2DP_MAIN} filter " in text
    assert f"Packages:\n  Package [{A2DP}] (" in text
    for line in (
        "    codePath=/data/app/a2dp.Vol-1\n",
        "    versionCode=0 minSdk=1 targetSdk=30\n",
        "    versionName=null\n",
        "    firstInstallTime=2009-01-01 00:00:00\n",
        "    pkgFlags=[ HAS_CODE ALLOW_CLEAR_USER_DATA ALLOW_BACKUP ]\n",
    ):
        assert line in text, line
    assert "signatures=PackageSignatures{" in text and "past signatures:[]}" in text
    assert phone.run(f"dumpsys package {A2DP}").stdout == done.stdout  # stable
    # a system package: SYSTEM flag, its APK under /system, no launcher filter of its own
    installer = phone.run("dumpsys package com.google.android.packageinstaller").stdout.decode()
    assert "pkgFlags=[ SYSTEM HAS_CODE" in installer and "filter" not in installer
    assert "codePath=/system/app/com.google.android.packageinstaller\n" in installer
    # the system's packages share one (stand-in) platform signature; apps have their own
    settings = phone.run("dumpsys package com.android.settings").stdout.decode()

    def signature(dump: str) -> str:
        return dump.split("signatures:[", 1)[1].split("]", 1)[0]

    assert signature(installer) == signature(settings) != signature(text)
    # pm list packages --show-versioncode says the same version
    assert phone.run(f"pm list packages --show-versioncode {A2DP}").stdout == (
        f"package:{A2DP} versionCode:0\n".encode()
    )


def test_dumpsys_package_of_an_unknown_package_says_so(a2dpvol: Path) -> None:
    phone = Phone(read_recording(a2dpvol))
    assert (phone.run("dumpsys package com.nope").stdout, phone.run("dumpsys package com.nope")
            .code) == (b"Unable to find package: com.nope\n", 0)
    everything = phone.run("dumpsys package").stdout.decode()
    assert everything.count("  Package [") == len(phone.installed_packages())
    section = phone.run("dumpsys package perm")
    assert section.code == 255 and b"not emulated by the virtual phone" in section.stderr


# ----- through the real adb and adbutils ---------------------------------------------------


@requires_adb
def test_adbutils_app_info_and_app_current(adb_server: AdbServer, a2dpvol: Path) -> None:
    with serving(adb_server, a2dpvol) as sim:
        device = adbutils.AdbClient(port=adb_server.port).device(sim.serial)
        info = device.app_info(A2DP)
        assert info is not None
        assert (info.package_name, info.version_name, info.version_code) == (A2DP, None, 0)
        assert info.first_install_time == datetime.datetime(2009, 1, 1)
        assert info.last_update_time == datetime.datetime(2009, 1, 1)
        assert info.flags == ["HAS_CODE", "ALLOW_CLEAR_USER_DATA", "ALLOW_BACKUP"]
        assert info.path == "/data/app/a2dp.Vol-1/base.apk" and info.signature
        assert device.app_info("com.nope") is None
        unknown = shell(adb_server, sim.serial, "dumpsys package com.nope")
        assert (unknown.stdout, unknown.returncode) == ("Unable to find package: com.nope\n", 0)

        current = device.app_current()
        assert (current.package, current.activity) == (
            "com.google.android.packageinstaller",
            "com.android.packageinstaller.permission.ui.GrantPermissionsActivity",
        )
        top = shell(adb_server, sim.serial, "dumpsys activity top").stdout
        assert f"  ACTIVITY {A2DP}" not in top and "  ACTIVITY com.google.android" in top
        device.shell("simctl goto 1")
        assert device.app_current().package == A2DP


@requires_adb
def test_the_agent_opens_an_app_the_recording_only_shows(
    adb_server: AdbServer, tapped: Path
) -> None:
    with connected(adb_server, tapped) as (sim, source):
        assert source.launchable_apps() == (NOTES_GUESSED, SETTINGS, CHROME)
        sent = AdbInput(source).open_app("Notes")
        assert sent == f"am start -n {NOTES_GUESSED}"
        assert sim.phone.navigator.position == 1
        assert b"New note" in source.capture_tree().xml


def test_a_recorded_settings_page_does_not_make_a_second_settings_icon(
    corpus_dir: Path,
) -> None:
    """Eye Check's run opens Settings' app details page, AirUnlock's a SubSettings page: the
    launcher listed those beside Settings' own icon (two Settings entries, and the agent's
    open_app("Settings") picked the sub page). One entry per app; Settings' is its own."""
    for trace in ("droidbot_admob_apps/andrei.brusentcov.eyecheck.free",
                  "fdroidutg_apps/tw.qtlin.mac.airunlocker"):
        listed = Phone(read_recording(corpus_dir / trace)).launcher_components()
        packages = [c.split("/")[0] for c in listed]
        assert len(packages) == len(set(packages)), listed
        assert listed[-2:] == (SETTINGS, CHROME)
