"""The command-line tools as a newcomer runs them (review 18): environment values they cannot
use, bad bench options, dump files given to export, a serial the adb server never listed,
``-v`` after the subcommand, and a terminal that cannot show the text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _adb import AdbServer, requires_adb

from bench.cli import main as bench_main

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DEMO_XML = ROOT / "perception" / "data" / "demo_screen.xml"


def tool(name: str, *argv: str, env: dict[str, str] | None = None,
         timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run an installed console script (``perception``, ``perception-agent`` ...)."""
    return subprocess.run(
        [str(BIN / name), *argv], capture_output=True, text=True, timeout=timeout,
        env=dict(os.environ, **(env or {})), cwd=ROOT,
    )


def python(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env=dict(os.environ, **env), cwd=ROOT,
    )


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


# ----- 1. environment values the tools cannot use ---------------------------------------------

BAD_ENVIRONMENTS = [
    {"ANDROID_ADB_SERVER_PORT": "abc"},
    {"PERCEPTION_FASTPATH": "bogus"},
]


@pytest.mark.parametrize("env", BAD_ENVIRONMENTS, ids=["adb-port", "fastpath"])
@pytest.mark.parametrize("name", ["perception", "perception-agent", "perception-bench"])
def test_help_works_whatever_the_environment_holds(name: str, env: dict[str, str]) -> None:
    done = tool(name, "--help", env=env)
    assert done.returncode == 0, done.stderr
    assert "usage:" in done.stdout and "Traceback" not in done.stderr


def test_a_bad_adb_port_variable_is_one_line_for_a_command_that_needs_it() -> None:
    done = tool("perception", "observe", "--serial", "x", env={"ANDROID_ADB_SERVER_PORT": "abc"})
    assert done.returncode == 2
    assert one_line(done.stderr).startswith(
        "perception: ConfigError: ANDROID_ADB_SERVER_PORT='abc': expected the adb server's port"
    )


def test_a_bad_fastpath_variable_is_one_line_in_every_tool(tmp_path: Path) -> None:
    env = {"PERCEPTION_FASTPATH": "bogus"}
    expected = "ConfigError: PERCEPTION_FASTPATH='bogus': expected 'python', 'cython' or unset"
    done = tool("perception", "tree", str(DEMO_XML), env=env)
    assert (done.returncode, done.stdout) == (2, "")
    assert one_line(done.stderr) == f"perception: {expected}"
    done = tool("perception-bench", "tree", "--corpus", str(tmp_path), env=env)
    assert (done.returncode, done.stdout) == (2, "")
    assert one_line(done.stderr) == f"perception-bench: {expected}"
    done = tool("perception-simdevice", str(ROOT / "tests" / "data" / "sources" / "tiny"),
                "--port", "0", env=env)
    assert (done.returncode, done.stdout) == (2, "")
    assert one_line(done.stderr) == f"perception-simdevice: {expected}"
    done = tool("perception-agent", "--replay", str(ROOT / "tests" / "data" / "sources" / "tiny"),
                "--task", "t", "--base-url", "http://127.0.0.1:1/v1", "--model", "m", env=env)
    assert done.returncode == 2 and done.stderr.strip().endswith(expected)


def test_a_library_user_gets_the_typed_error_before_any_work() -> None:
    """Not at import (a tool's --help must work whatever the environment holds; an import that
    depends on which program runs would be a trap): a Perceiver checks when it is made, and
    every kernel call raises the same error."""
    bogus = {"PERCEPTION_FASTPATH": "bogus"}
    for code in ("import perception; perception.Perceiver()",
                 f"import perception; perception.read_tree(open('{DEMO_XML}', 'rb').read())",
                 "from perception import fastpath; fastpath.check()"):
        done = python(code, bogus)
        assert done.returncode == 1, code
        assert done.stderr.strip().splitlines()[-1].startswith(
            "perception.errors.ConfigError: PERCEPTION_FASTPATH='bogus'"
        ), done.stderr
    assert python("import perception, agent, bench.cli", bogus).returncode == 0
    code = (
        "import perception\n"
        "try:\n"
        "    import perception.sources.device\n"
        "except perception.ConfigError as exc:\n"
        "    print('ConfigError', exc)\n"
    )
    done = python(code, {"ANDROID_ADB_SERVER_PORT": "abc"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ConfigError ANDROID_ADB_SERVER_PORT='abc'")


def test_the_agent_and_a_blank_adb_port_import_without_a_phone() -> None:
    # The agent's modules do not import the device source (adbutils) until a phone is used;
    # a blank ANDROID_ADB_SERVER_PORT is adb's default port, which adbutils' int() refuses.
    done = python("import agent, sys; print('adbutils' in sys.modules)",
                  {"ANDROID_ADB_SERVER_PORT": "abc"})
    assert (done.returncode, done.stdout.strip()) == (0, "False"), done.stderr
    done = python(
        "import os, perception.sources.device as d; "
        "print(repr(os.environ['ANDROID_ADB_SERVER_PORT']), d.DeviceConfig.from_env().adb_port)",
        {"ANDROID_ADB_SERVER_PORT": " "},
    )
    assert (done.returncode, done.stdout.strip()) == (0, "' ' 5037"), done.stderr


# ----- 2. perception-bench ----------------------------------------------------------------------


@requires_adb
def test_bench_device_with_a_bad_recording_starts_nothing(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    done = tool(
        "perception-bench", "device", "--sim", str(tmp_path / "nonexist"), "--samples", "1",
        "--duration-s", "1", env={"TMPDIR": str(tmp)},
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert one_line(done.stderr).startswith("perception-bench: RecordingError: ")
    assert str(tmp_path / "nonexist") in done.stderr
    assert list(tmp.iterdir()) == []  # no adb HOME folder left behind (nor a server in it)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["device", "--serial", "x", "--adb-port", "70000"], "argument --adb-port: expects a port"),
        (["device", "--serial", "x", "--samples", "-1"], "argument --samples: expects a whole"),
        (["device", "--serial", "x", "--samples", "0"], "argument --samples: expects a whole"),
        (["device", "--serial", "x", "--duration-s", "-1"], "argument --duration-s: expects a"),
        (["tree", "--corpus", ".", "--limit", "-1"], "argument --limit: expects a whole"),
        (["tree", "--corpus", ".", "--repeat", "0"], "argument --repeat: expects a whole"),
        (["agent", "--corpus", ".", "--limit", "-1"], "argument --limit: expects a whole"),
        (["fusion", "--corpus", ".", "--limit", "-1"], "argument --limit: expects a whole"),
        (["pixels", "--corpus", ".", "--limit", "-1"], "argument --limit: expects a whole"),
    ],
)
def test_bench_refuses_bad_numbers_as_usage_errors(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        bench_main(argv)
    assert exc.value.code == 2
    assert says in capsys.readouterr().err


def test_bench_help_describes_the_tool_for_its_user() -> None:
    done = tool("perception-bench", "--help")
    assert done.returncode == 0
    assert "Measure perception" in done.stdout
    assert "add_parser" not in done.stdout and "bench.<name>" not in done.stdout


def test_bench_agent_says_when_its_corpus_is_not_a_folder(tmp_path: Path) -> None:
    done = tool("perception-bench", "agent", "--corpus", str(tmp_path / "nonexist"))
    assert (done.returncode, done.stdout) == (2, "")
    assert one_line(done.stderr) == (
        f"perception-bench: BenchInputError: --corpus {tmp_path / 'nonexist'}: not a directory"
    )


@pytest.mark.parametrize("command", ["tree", "agent"])
def test_without_bpe_openai_the_message_names_the_subcommand(command: str, tmp_path: Path) -> None:
    # None in sys.modules makes ``import bpe_openai`` fail, as where the [bench] extra is not
    # installed.
    code = (
        "import sys; sys.modules['bpe_openai'] = None\n"
        "from bench.cli import main\n"
        f"sys.exit(main([{command!r}, '--corpus', {str(tmp_path)!r}]))\n"
    )
    (tmp_path / "s0").mkdir()
    (tmp_path / "s0" / "screen.xml").write_bytes(DEMO_XML.read_bytes())
    done = python(code, {})
    assert done.returncode == 2
    assert one_line(done.stderr) == (
        f"perception-bench: BenchInputError: perception-bench {command} needs the bpe-openai "
        "package: pip install bpe-openai (or, in a checkout, pip install '.[bench]')"
    )


# ----- 3. perception export of dump files -----------------------------------------------------


def test_export_of_dump_files_names_each_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from perception.cli.main import main

    xml = DEMO_XML.read_bytes()
    (tmp_path / "empty.xml").write_bytes(b"")
    (tmp_path / "trunc.xml").write_bytes(xml[:5000])
    (tmp_path / "good.xml").write_bytes(xml)
    (tmp_path / "also.xml").write_bytes(xml)
    monkeypatch.chdir(tmp_path)
    assert main(["export", "empty.xml", "trunc.xml", "good.xml", "also.xml", "--no-frames"]) == 0
    out, err = capsys.readouterr()
    assert [json.loads(line)["path"] for line in out.splitlines()] == ["good.xml", "also.xml"]
    failures = err.splitlines()[:2]
    assert failures[0].startswith("perception export: empty.xml: DumpFailedError: ")
    assert failures[1].startswith("perception export: trunc.xml: TreeParseError: ")
    # A folder's own screens still name their folder.
    (tmp_path / "s0").mkdir()
    (tmp_path / "s0" / "screen.xml").write_bytes(xml)
    assert main(["export", "s0", "--no-frames"]) == 0
    assert json.loads(capsys.readouterr().out)["path"] == "s0"


# ----- 4. a serial the adb server does not list -------------------------------------------------


@requires_adb
def test_observe_of_a_serial_adb_does_not_list_says_so_once(
    adb_server: AdbServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from perception.cli.main import main

    monkeypatch.delenv("PERCEPTION_DEVICE_ADB_PORT", raising=False)
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(adb_server.port))
    assert main(["observe", "--serial", "nosuch", "--timeout-s", "0.5"]) == 2
    assert one_line(capsys.readouterr().err) == (
        "perception: DeviceOfflineError: [nosuch] device not found: `adb devices` does not "
        "list it"
    )


# ----- 5. -v before or after the subcommand ---------------------------------------------------


@pytest.mark.parametrize("argv", [["-v", "demo"], ["demo", "-v"], ["demo", "--verbose"]])
def test_verbose_works_before_and_after_the_subcommand(argv: list[str]) -> None:
    done = tool("perception", *argv)
    assert done.returncode == 0, done.stderr
    assert "INFO:perception." in done.stderr


def test_without_verbose_nothing_is_logged() -> None:
    done = tool("perception", "demo")
    assert done.returncode == 0 and "INFO:" not in done.stderr


@pytest.mark.parametrize(
    "env", [{"PERCEPTION_FUSION_PAIR_WINDOW_MS": "abc"}, {"PERCEPTION_TREE_LIST_KEEP": "-1"}]
)
def test_demo_checks_its_settings_before_it_prints(env: dict[str, str]) -> None:
    """A bad setting is one line and exit 2, not the tree half of the demo and then the error."""
    done = tool("perception", "demo", env=env)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "ConfigError" in done.stderr


# ----- 6. a stream that cannot encode the text ------------------------------------------------


def test_output_in_an_encoding_without_the_text_is_utf8_not_a_crash(tmp_path: Path) -> None:
    xml = DEMO_XML.read_text(encoding="utf-8")
    assert 'text="Wi-Fi settings"' in xml
    dump = tmp_path / "中文.xml"
    dump.write_text(xml.replace('text="Wi-Fi settings"', 'text="无线网络设置 😀"', 1), "utf-8")
    env = {"PYTHONIOENCODING": "latin-1"}
    done = subprocess.run([str(BIN / "perception"), "tree", str(dump)], capture_output=True,
                          env=dict(os.environ, **env), timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.decode("utf-8"))["text"][0][0] == "无线网络设置 😀"
    # stderr too: an error naming the file
    done = subprocess.run([str(BIN / "perception"), "tree", str(tmp_path / "缺.xml")],
                          capture_output=True, env=dict(os.environ, **env), timeout=120)
    assert done.returncode == 2
    assert "缺.xml" in done.stderr.decode("utf-8") and b"Traceback" not in done.stderr
