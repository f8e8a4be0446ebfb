"""A newcomer's run of every command line (review 18): standard input where the other commands
take it, options that were silently ignored or reported late, signals, and --help."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _adb import AdbServer, requires_adb

from perception.cli.main import main
from perception.demo import demo_png, demo_xml
from perception.simdevice import SimDevice

ROOT = Path(__file__).resolve().parents[1]
TINY = Path(__file__).parent / "data" / "sources" / "tiny"


def _default_sigint() -> None:
    """Ctrl-C's default in the child: a suite run as a background job hands it SIGINT ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _spawn(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *args], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
        preexec_fn=_default_sigint,
    )


def _perception(args: list[str], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "perception.cli.main", *args], input=stdin,
        capture_output=True, timeout=120, cwd=ROOT,
    )


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


@pytest.fixture
def demo_files(tmp_path: Path) -> tuple[Path, Path]:
    screen, dump = tmp_path / "screen.png", tmp_path / "screen.xml"
    screen.write_bytes(demo_png())
    dump.write_bytes(demo_xml())
    return screen, dump


# ----- 1: overlay reads '-' as standard input, as tree and pixels do -----------------------


def test_overlay_reads_the_screen_or_the_dump_from_stdin(
    tmp_path: Path, demo_files: tuple[Path, Path]
) -> None:
    """`overlay - -o x.png` said "cannot read frame file '-'", `--dump -` "cannot read the
    dump '-'"."""
    screen, dump = demo_files
    from_files, screen_in, dump_in = (tmp_path / f"{n}.png" for n in ("a", "b", "c"))
    assert _perception(["overlay", str(screen), "--dump", str(dump), "-o", str(from_files)]
                       ).returncode == 0
    run = _perception(["overlay", "-", "--dump", str(dump), "-o", str(screen_in)],
                      stdin=screen.read_bytes())
    assert run.returncode == 0, run.stderr
    run = _perception(["overlay", str(screen), "--dump", "-", "-o", str(dump_in)],
                      stdin=dump.read_bytes())
    assert run.returncode == 0, run.stderr
    assert screen_in.read_bytes() == from_files.read_bytes() == dump_in.read_bytes()


def test_overlay_names_stdin_in_a_dump_error(tmp_path: Path, demo_files: tuple[Path, Path]
                                            ) -> None:
    screen, _ = demo_files
    run = _perception(["overlay", str(screen), "--dump", "-", "-o", str(tmp_path / "o.png")],
                      stdin=b"<hierarchy")
    assert run.returncode == 2
    (line,) = run.stderr.decode().splitlines()
    assert line.startswith("perception: TreeParseError: standard input: ")


def test_overlay_with_both_from_stdin_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = _usage_error(["overlay", "-", "--dump", "-", "-o", str(tmp_path / "o.png")], capsys)
    assert "SCREEN and --dump cannot both be '-' (standard input)" in err
    assert not (tmp_path / "o.png").exists()


# ----- 2: replay --speed without --realtime -----------------------------------------------


def test_replay_speed_without_realtime_is_a_usage_error(
    capsys: pytest.CaptureFixture[str]
) -> None:
    """It was ignored: the replay ran as fast as it could, as without --speed."""
    err = _usage_error(["replay", str(TINY), "--speed", "5"], capsys)
    assert "--speed scales --realtime's timing; add --realtime" in err


def test_replay_speed_with_realtime_still_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(TINY), "--no-frames", "--realtime", "--speed", "1000"]) == 0
    assert main(["replay", str(TINY), "--no-frames"]) == 0  # no --speed: as fast as it can
    assert "Traceback" not in capsys.readouterr().err


# ----- 3: a bad --screen is a usage error; --roi named once ---------------------------------


@pytest.mark.parametrize(
    "size", ["abc", "0x0", "99999999999999999999x2", "65536x2400", "+5x5", "1080x", "1x2x3"]
)
def test_tree_screen_is_checked_while_parsing(
    size: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--screen abc` was reported at run time ("perception: InputError: --screen 'abc': ..."),
    while `--keyboard 1,2,3` was a usage error."""
    err = _usage_error(["tree", str(TINY / "step_000" / "screen.xml"), f"--screen={size}"],
                       capsys)
    assert (f"argument --screen: expects WIDTHxHEIGHT in pixels, each 1 to 65535 "
            f"(e.g. 1080x2400), got {size!r}") in err


def test_tree_screen_still_places_the_dump(
    demo_files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    dump = str(demo_files[1])
    assert main(["tree", dump, "--screen", "1080X2400"]) == 0
    assert main(["tree", dump, "--screen", "540x1200"]) == 2  # a screen the dump overflows
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("perception: ScreenMismatchError: ")


def test_pixels_roi_names_the_option_once(capsys: pytest.CaptureFixture[str]) -> None:
    err = _usage_error(["pixels", "--roi", "0,0,0,0", "x.png"], capsys)
    assert err.count("--roi") == 2  # the usage line and the error, not "--roi: --roi expects"
    assert "argument --roi: expects L,T,R,B with 0 <= L < R" in err


# ----- 4: signals -------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_simdevice_stops_on_each_signal_with_one_line(sig: signal.Signals) -> None:
    """SIGINT and SIGTERM exited 0 printing nothing; SIGHUP killed it without device.stop()."""
    proc = _spawn(["-m", "perception.simdevice.cli", str(TINY), "--port", "0"])
    try:
        assert proc.stdout is not None
        serial = proc.stdout.readline().split(" on ")[1].split(";")[0]
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert err.splitlines() == [
        f"perception-simdevice: stopped by {sig.name}; no longer serving {serial}"
    ]


def test_simdevice_help_says_how_it_stops() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "perception.simdevice.cli", "--help"], capture_output=True,
        text=True, timeout=60, cwd=ROOT,
    ).stdout
    assert "Stop it with Ctrl-C, SIGTERM or SIGHUP" in out and "exit status is 0" in " ".join(
        out.split()
    )


@requires_adb
@pytest.mark.parametrize(("sig", "code", "what"), [
    (signal.SIGINT, 130, "interrupted"), (signal.SIGHUP, 129, "stopped by SIGHUP"),
])
def test_record_actions_interrupted_says_what_it_kept(
    adb_server: AdbServer, sim: SimDevice, tmp_path: Path, sig: signal.Signals, code: int,
    what: str,
) -> None:
    """It said only `perception: interrupted`: the steps recorded so far are kept, and where."""
    out = tmp_path / "rec"
    proc = _spawn(["-m", "perception.cli.main", "record", "--serial", sim.serial, "--adb-port",
                   str(adb_server.port), "--timeout-s", "5", str(out), "--actions", "-"],
                  env=adb_server.env)
    try:
        steps = out / "steps.jsonl"
        deadline = time.monotonic() + 30
        while not (steps.exists() and steps.read_text(encoding="utf-8").strip()):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        proc.send_signal(sig)  # waiting for its first action on standard input
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == code
    assert err.splitlines() == [
        f"perception: {what} (the partial recording is kept: 1 step in {out})"
    ]
    assert len(steps.read_text(encoding="utf-8").splitlines()) == 1


@requires_adb
def test_record_interrupted_before_a_step_says_none_was_recorded(
    adb_server: AdbServer, tmp_path: Path
) -> None:
    """Waiting for a phone that is not there yet: nothing is kept, and it says so."""
    out = tmp_path / "rec"
    proc = _spawn(["-m", "perception.cli.main", "record", "--serial", "127.0.0.1:1",
                   "--adb-port", str(adb_server.port), "--timeout-s", "30", str(out)],
                  env=adb_server.env)
    try:
        time.sleep(3)  # past the imports, in wait_ready
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 143
    assert err.splitlines() == ["perception: stopped by SIGTERM (no step was recorded)"]
    assert not out.exists()


# ----- 5: --help -------------------------------------------------------------------------


def test_simdevice_help_offers_no_empty_drop_choice(capsys: pytest.CaptureFixture[str]) -> None:
    from perception.simdevice.cli import main as simdevice_main

    with pytest.raises(SystemExit):
        simdevice_main(["--help"])
    out = capsys.readouterr().out
    assert "--drop {screencap,dump,any}" in out and "{," not in out


def test_record_help_gives_the_defaults_and_out_dir(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["record", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "every this many ms (default 1000)" in out
    assert "before the next capture (default 800)" in out
    assert "out_dir the folder to record into: new, or empty" in out
