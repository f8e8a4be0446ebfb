"""Listing and starting apps on the virtual phone (through the real adb server) and on a replay.

An agent opens an app by naming it: the executor looks it up among the launcher's activities
(``cmd package query-activities``) and starts it (``am start -n``), as the recorded traces do
(DroidBot's ``am start pkg/cls``). A replay moves only along a recorded start of that same app:
before, any ``am start`` (or ``monkey -p``) followed the step's recorded intent, whichever app it
named, so opening Settings on a recording of Notes showed Notes.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _adb import AdbServer, connected, requires_adb, serving, shell
from _apps import (
    NOTES,
    NOTES_MAIN,
    NOTES_SHOWN,
    START_FLAGS,
    home,
    notes_recording,
    notes_screen,
    write_recording,
)

from perception.errors import AppStartError
from perception.simdevice.phone import CHROME, SETTINGS, Phone
from perception.sources.device import LAUNCHER_QUERY, parse_components
from perception.sources.recording import ActionKind, RecordedAction, read_recording
from perception.sources.replay import (
    Navigator,
    ReplaySource,
    full_component,
    intent_target,
    short_component,
)


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Step 0: a home screen whose recorded action starts Notes (DroidBot's form); step 1:
    Notes."""
    return notes_recording(tmp_path_factory.mktemp("open_app") / "notes")


@pytest.fixture(scope="module")
def no_intents(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two steps joined by a tap: nothing started by intent."""
    return write_recording(
        tmp_path_factory.mktemp("open_app") / "taps",
        [home(), notes_screen()],
        [{"kind": "tap", "point_px": [60, 540], "result_step": 1}, None],
    )


# ----- reading a command's app, and the navigator -------------------------------------------


@pytest.mark.parametrize(
    ("command", "package", "component"),
    [
        (f"am start {NOTES_MAIN}", NOTES, NOTES_MAIN),
        (f"am start {START_FLAGS} -n {NOTES_SHOWN}", NOTES, NOTES_SHOWN),
        (f"am start -W -S --user 0 -n '{NOTES_SHOWN}'", NOTES, NOTES_SHOWN),
        (f"monkey -p {NOTES} -c android.intent.category.LAUNCHER 1", NOTES, ""),
        ("monkey -p com.x --throttle 200 --pct-touch 50 -v 1", "com.x", ""),
        # values of options are no app: a URI, a component extra
        ("am start -a android.intent.action.VIEW -d http://example.com/a/b", "", ""),
        (f"am start --ecn target com.x/.Y -n {NOTES_SHOWN}", NOTES, NOTES_SHOWN),
        ("am start -a android.intent.action.MAIN", "", ""),
        # a bare package: am reads it as -p
        ("am start com.android.settings", "com.android.settings", ""),
        ("am start -W com.android.settings", "com.android.settings", ""),
        ("", "", ""),
    ],
)
def test_the_app_a_command_starts(command: str, package: str, component: str) -> None:
    target = intent_target(command)
    assert (target.package, target.component) == (package, component)


def test_component_spellings() -> None:
    assert short_component(NOTES_MAIN) == NOTES_SHOWN
    assert short_component(CHROME) == CHROME  # a class outside the package stays whole
    assert full_component(NOTES_SHOWN) == NOTES_MAIN
    assert full_component(NOTES_MAIN) == NOTES_MAIN
    assert short_component(f"{NOTES}/{NOTES}.") == f"{NOTES}/{NOTES}."


@pytest.mark.parametrize(
    "command",
    [
        f"am start -n {NOTES_SHOWN}",
        f"am start {NOTES_MAIN}",
        f"monkey -p {NOTES} -c android.intent.category.LAUNCHER 1",
        "am start -a android.intent.action.VIEW -d content://x/1",  # names no app: as before
    ],
)
def test_the_navigator_follows_a_recorded_start_of_that_app(notes: Path, command: str) -> None:
    nav = Navigator(read_recording(notes))
    move = nav.intent(command)
    assert move.moved and nav.position == 1, move


def test_the_navigator_ignores_a_start_of_another_app(notes: Path) -> None:
    nav = Navigator(read_recording(notes))
    for command in (f"am start -n {SETTINGS}", "monkey -p com.android.chrome 1"):
        move = nav.intent(command)
        assert not move.moved and nav.position == 0
        package = intent_target(command).package
        assert move.reason == f"no recorded intent for {package} here (it starts {NOTES})"
    # where nothing was started by intent, no start moves
    nav.goto(1)
    assert nav.intent(f"am start -n {NOTES_SHOWN}").reason == "no recorded intent here"


def test_a_recorded_intent_that_names_no_app_follows_any_start(tmp_path: Path) -> None:
    """A recorded intent without a package (a URI, or an empty record) cannot tell one app from
    another: any start follows it, as every start did before."""
    rec = write_recording(tmp_path / "view", [home(), notes_screen()],
                 [{"kind": "intent", "intent": "am start -a VIEW -d https://notes.example/1"},
                  None])
    nav = Navigator(read_recording(rec))
    assert nav.intent(f"am start -n {SETTINGS}").moved


# ----- the replay source --------------------------------------------------------------------


def test_the_replay_lists_and_starts_the_recorded_app(notes: Path, no_intents: Path) -> None:
    source = ReplaySource(notes)
    assert source.launchable_apps() == (NOTES_SHOWN,)
    # an app the recording only shows is listed too, and starting it follows the recorded tap
    # that went into it, as on the virtual phone
    tapped = ReplaySource(no_intents)
    assert tapped.launchable_apps() == (f"{NOTES}/.Main",)
    move = tapped.start_app(f"{NOTES}/.Main")
    assert move.moved and tapped.capture_tree().step == 1
    assert move.reason == f"recorded way into {NOTES}"
    assert not tapped.start_app(f"{NOTES}/.Main").moved  # in front now: it stays

    epoch = source.epoch
    source.start_app(SETTINGS)  # another app: nothing moves, nothing is raised
    assert source.navigator.position == 0 and source.epoch == epoch + 1
    assert source.capture_tree().step == 0

    with pytest.raises(AppStartError, match="'Notes' is not a package/activity"):
        source.start_app("Notes")
    assert source.navigator.position == 0 and source.epoch == epoch + 1

    source.start_app(NOTES_MAIN)  # either spelling of the recorded app
    tree = source.capture_tree()
    assert tree.step == 1 and b"New note" in tree.xml and tree.epoch == epoch + 2
    # recorded actions still go through perform() as before
    again = ReplaySource(notes)
    move = again.perform(RecordedAction(kind=ActionKind.INTENT, intent=f"am start -n {SETTINGS}"))
    assert not move.moved
    assert again.perform(RecordedAction(kind=ActionKind.INTENT, intent=NOTES_SHOWN)).moved


# ----- the virtual phone's shell (no adb) ---------------------------------------------------


def test_the_phone_lists_its_launcher_activities(notes: Path, no_intents: Path) -> None:
    phone = Phone(read_recording(notes))
    assert phone.launcher_components() == (NOTES_SHOWN, SETTINGS, CHROME)
    # an app the recording only shows gets the activity it is seen with (here none: PKG/.Main)
    assert Phone(read_recording(no_intents)).launcher_components() == (
        f"{NOTES}/.Main", SETTINGS, CHROME
    )

    brief = phone.run(LAUNCHER_QUERY)
    assert brief.code == 0 and brief.stderr == b""
    text = brief.stdout.decode()
    assert text.startswith("3 activities found:\n  Activity #0:\n    priority=0 preferredOrder=0 "
                           "match=0x108000 specificIndex=-1 isDefault=false\n"
                           f"    {NOTES_SHOWN}\n  Activity #1:\n")
    assert parse_components(text) == (NOTES_SHOWN, SETTINGS, CHROME)
    assert phone.run(LAUNCHER_QUERY.replace("cmd package", "pm")).stdout.decode() == text

    components = phone.run(
        "cmd package query-activities --components -a android.intent.action.MAIN "
        "-c android.intent.category.LAUNCHER"
    ).stdout.decode()
    assert components == f"{NOTES_SHOWN}\n{SETTINGS}\n{CHROME}\n"
    full = phone.run(LAUNCHER_QUERY.replace(" --brief", "")).stdout.decode()
    assert full.startswith("3 activities found:\n") and f"packageName={NOTES}" in full
    assert "name=com.google.android.apps.chrome.Main" in full
    only = phone.run(f"{LAUNCHER_QUERY} -p com.android.chrome").stdout.decode()
    assert parse_components(only) == (CHROME,)

    for other in (
        "cmd package query-activities --brief -a android.intent.action.MAIN "
        "-c android.intent.category.HOME",
        "cmd package query-activities -a android.intent.action.VIEW -d https://x.example",
        f"{LAUNCHER_QUERY} -p com.nope",
    ):
        done = phone.run(other)
        assert (done.stdout, done.stderr, done.code) == (b"No activities found\n", b"", 0)
    bad = phone.run("cmd package query-activities --nope")
    assert bad.code == 255 and b"Unknown option: --nope" in bad.stderr
    assert phone.run("cmd package list-things").stderr == b"Unknown command: list-things\n"
    assert phone.run("cmd nosuch").stderr == b"cmd: Can't find service: nosuch\n"
    assert phone.navigator.position == 0


def test_the_phone_starts_what_its_launcher_shows(notes: Path) -> None:
    phone = Phone(read_recording(notes))
    missing = phone.run(f"am start {START_FLAGS} -n com.nope/.Main")
    assert missing.code == 0  # am reports it and still exits 0
    assert missing.stdout == (
        b"Starting: Intent { act=android.intent.action.MAIN "
        b"cat=[android.intent.category.LAUNCHER] flg=0x10200000 cmp=com.nope/.Main }\n"
    )
    assert missing.stderr == (
        b"Error type 3\nError: Activity class {com.nope/com.nope.Main} does not exist.\n"
    )
    # an activity of a listed package that the launcher does not show is no start either
    other = phone.run(f"am start -n {NOTES}/.Secret")
    assert b"{com.example.notes/com.example.notes.Secret} does not exist" in other.stderr
    unresolved = phone.run("am start -p com.nope")
    assert unresolved.stderr.startswith(b"Error: Activity not started, unable to resolve Intent")
    aborted = phone.run("monkey -p com.nope -c android.intent.category.LAUNCHER 1")
    assert aborted.stdout == b"** No activities found to run, monkey aborted.\n"
    assert aborted.code == 252
    settings = phone.run(f"am start {START_FLAGS} -n {SETTINGS}")
    assert settings.stderr == b"" and phone.navigator.position == 0
    assert phone.navigator.position == 0

    started = phone.run(f"am start {NOTES_MAIN}")  # DroidBot's form
    assert started.stdout == (
        b"Starting: Intent { act=android.intent.action.MAIN "
        b"cat=[android.intent.category.LAUNCHER] cmp=com.example.notes/.MainActivity }\n"
    )
    assert started.stderr == b"" and phone.navigator.position == 1
    # started again while it is in front: a real phone's warning, no error
    front = phone.run(f"am start {START_FLAGS} -n {NOTES_SHOWN}")
    assert b"Warning: Activity not started, its current task has been brought to the front" in (
        front.stdout
    )
    assert front.stderr == b"" and phone.navigator.position == 1

    assert phone.events == [
        f"am start {START_FLAGS} -n com.nope/.Main -> 0 (no activity com.nope here)",
        f"am start -n {NOTES}/.Secret -> 0 (no activity {NOTES} here)",
        "am start -p com.nope -> 0 (no activity com.nope here)",
        "monkey -p com.nope -c android.intent.category.LAUNCHER 1 -> 0 "
        "(no activity com.nope here)",
        f"am start {START_FLAGS} -n {SETTINGS} -> 0 "
        f"(no recorded intent for com.android.settings here (it starts {NOTES}))",
        f"am start {NOTES_MAIN} -> 1 (recorded intent)",
        f"am start {START_FLAGS} -n {NOTES_SHOWN} -> 1 (no recorded intent here)",
    ]


def test_monkey_starts_the_recorded_app_by_package(notes: Path, tmp_path: Path) -> None:
    phone = Phone(read_recording(notes))
    done = phone.run(f"monkey -p {NOTES} -c android.intent.category.LAUNCHER 1")
    assert done.stdout == b"Events injected: 1\n" and done.code == 0
    assert phone.navigator.position == 1
    # a recording that starts its app by package alone replays on the phone too
    rec = write_recording(tmp_path / "monkey", [home(), notes_screen()],
                 [{"kind": "intent", "intent": f"monkey -p {NOTES} 1"}, None])
    by_package = Phone(read_recording(rec))
    assert by_package.launcher_components() == (f"{NOTES}/.Main", SETTINGS, CHROME)
    assert by_package.run(f"monkey -p {NOTES} 1").code == 0
    assert by_package.navigator.position == 1


# ----- through the real adb server ----------------------------------------------------------


@requires_adb
def test_the_device_source_lists_and_starts_apps(adb_server: AdbServer, notes: Path) -> None:
    with connected(adb_server, notes) as (sim, source):
        assert source.launchable_apps() == (NOTES_SHOWN, SETTINGS, CHROME)

        epoch = source.epoch
        source.start_app(SETTINGS)  # listed, but not what the recording starts: it stays
        assert sim.phone.navigator.position == 0 and source.epoch == epoch + 1
        assert b"Clock" in source.capture_tree().xml

        with pytest.raises(AppStartError, match=r"com\.nope/\.Main") as caught:
            source.start_app("com.nope/.Main")
        assert "does not exist" in str(caught.value)
        assert sim.phone.navigator.position == 0

        ran = len(sim.phone.commands)
        for bad in ("Notes", "com.example.notes", "com.x/.A; input tap 1 1", ""):
            with pytest.raises(AppStartError, match="is not a package/activity"):
                source.start_app(bad)
        assert len(sim.phone.commands) == ran  # nothing reached the phone

        source.start_app(NOTES_SHOWN)
        assert sim.phone.navigator.position == 1
        assert b"New note" in source.capture_tree().xml
        source.start_app(NOTES_SHOWN)  # already in front: the phone's warning is no error
        assert sim.phone.navigator.position == 1
        starts = [c for c in sim.phone.commands if c.startswith("am start")]
        assert starts[-1] == f"am start {START_FLAGS} -n {NOTES_SHOWN}"


@requires_adb
def test_am_start_errors_reach_stderr_over_shell_v2(adb_server: AdbServer, notes: Path) -> None:
    with serving(adb_server, notes) as sim:
        done = shell(adb_server, sim.serial, "am start -n com.nope/.Main")
        assert done.returncode == 0
        assert done.stdout == "Starting: Intent { cmp=com.nope/.Main }\n"
        assert done.stderr == (
            "Error type 3\nError: Activity class {com.nope/com.nope.Main} does not exist.\n"
        )
        listed = shell(adb_server, sim.serial, f"{LAUNCHER_QUERY} | grep /")
        assert listed.stdout.split() == [NOTES_SHOWN, SETTINGS, CHROME]
        assert shell(adb_server, sim.serial, f"am start {NOTES_MAIN}").returncode == 0
        assert sim.phone.navigator.position == 1


@requires_adb
def test_an_activity_whose_class_holds_a_dollar_starts_whole(
    adb_server: AdbServer, tmp_path: Path
) -> None:
    """An inner class (YouTube's ``.app.honeycomb.Shell$HomeActivity``): the component goes
    to the phone quoted, so its shell does not read ``$HomeActivity`` as a variable."""
    inner = f"{NOTES}/.Main$Inner"
    start = {"kind": "intent", "intent": f"am start {inner}"}
    rec = write_recording(tmp_path / "dollar", [home(), notes_screen()], [start, None])
    with connected(adb_server, rec) as (sim, source):
        assert inner in source.launchable_apps()
        source.start_app(inner)
        assert sim.phone.navigator.position == 1, sim.phone.events
