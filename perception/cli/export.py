"""``perception export PATH... [-o OUT.jsonl]``: element lists as a dataset, one screen a line.

Each PATH is a recording (ours), a corpus trace, a sample folder (``screen.xml`` beside a
screenshot), a folder holding any of these, searched depth first in name order (the same
input gives the same bytes), or a dump file (one screen without a screenshot; dumps lying
loose in a walked folder are said and left out). Steps of one recording go through one
:class:`~perception.cli.replay.StepPerceiver`, as in replay, each in its recorded epoch. A line
is :func:`perception.debug.record` of the observation with ``path`` (the step's folder; a
dump file's own path), ``step``, ``dump`` and ``screenshot`` (the files), the recording's
``task`` when it has one and the recorded ``action`` taken next (the label of a
screen-to-action dataset).

A screen that fails, or a recording that cannot be opened (a broken ``trace.json``), is
reported on stderr with its path and type, counted, and the export goes on, unless
``--strict``; a path that is not a folder is refused before anything is written, and so is
an ``-o`` that is one of the inputs (:func:`input_named`: a file a recording reads, or any file
of a recording that cannot be opened). ``-o`` a
device, a FIFO or ``/dev/stdout`` is written in place (streamed), a symlink through to the file
it names (replaced whole at the end, the link kept).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from perception.cli.options import (
    plural,
    replaced_file,
    same_file,
    whole,
    writes_directly,
)
from perception.errors import InputError, PerceptionError
from perception.sources.recording import RecordedStep, Recording

if TYPE_CHECKING:
    from perception.pixel.read import PixelReader

_MARKERS = ("steps.jsonl", "trace.json", "screen.xml")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "export",
        help="write the element lists of recordings as JSON lines",
        description=(
            "Perceive every screen of recordings, corpus traces or sample folders and write one "
            "JSON line per screen: its candidates, boxes, flags, the prompt the model reads and the"
            " action recorded next (a screen-to-action dataset)."
        ),
    )
    p.add_argument("paths", nargs="+", type=Path,
                   help="recordings, traces, sample folders, folders of them, or dump files")
    p.add_argument(
        "-o", "--out", type=Path, default=None, help="JSONL file (default or '-': stdout)"
    )
    p.add_argument("--no-frames", action="store_true", help="tree channel only (fast)")
    p.add_argument("--limit", type=whole, default=0, help="stop after this many screens (0: all)")
    p.add_argument("--strict", action="store_true", help="stop at the first screen that fails")
    p.add_argument(
        "--resume", action="store_true",
        help="continue an interrupted export into -o FILE (its FILE.part): recordings done are "
        "copied, not perceived again",
    )
    p.set_defaults(run=run, parser=p)


def _not_an_input(path: Path) -> str:
    if not path.exists():
        return f"{path}: no such file or folder"
    return f"{path}: neither a folder nor a dump file (.xml)"


def recordings(path: Path) -> Iterator[Path]:
    """Folders under ``path`` that :func:`read_recording` opens (not those inside one), or
    ``path`` itself when it is a dump file. Dump files lying loose in a walked folder are no
    screens of a recording (no screenshot, no action): they are left out, and said."""
    if path.is_file() and path.suffix.lower() == ".xml":
        yield path
        return
    if not path.is_dir():
        raise InputError(_not_an_input(path))
    if any((path / m).is_file() for m in _MARKERS):
        yield path
        return
    loose = [p for p in path.iterdir() if p.suffix.lower() == ".xml" and p.is_file()]
    if loose:
        print(f"perception export: {plural(len(loose), 'dump')} in {path} are not in sample "
              "folders: not exported (give them as PATHs to export them)", file=sys.stderr)
    for child in sorted(p for p in path.iterdir() if p.is_dir()):
        yield from recordings(child)


def _dump_file(path: Path) -> Recording:
    """A dump file alone as a one-step recording: no screenshot, no action, no capture times."""
    step = RecordedStep(
        step=0, tree_path=path, frame_path=None, frame_fmt=None,
        tree_start_ns=0, tree_end_ns=0, frame_start_ns=0, frame_end_ns=0,
    )
    return Recording(root=path, kind="dump", steps=(step,), meta={}, density_dpi=0, serial="")


def task_of(recording: Recording) -> str | None:
    """What the recorded actions set out to do, when the recording says: a LlamaTouch trace's
    ``instruction`` (``[task id, text]``), a recording's ``task``; exploration traces have none."""
    given = recording.meta.get("instruction") or recording.meta.get("task")
    if isinstance(given, list):
        given = next((t for t in reversed(given) if isinstance(t, str) and t.strip()), None)
    return given.strip() if isinstance(given, str) and given.strip() else None


@dataclass(frozen=True, slots=True)
class Counts:
    written: int
    """Screens written (``reused`` included)."""
    failed: int
    """Screens that failed, plus recordings that could not be opened (their screens are
    unknown: each counts as one)."""
    unreadable: int
    """Of ``failed``, the recordings that could not be opened."""
    reused: int = 0
    """Of ``written``, the screens copied from an earlier run (``--resume``)."""

    def __str__(self) -> str:
        text = plural(self.written, "screen")
        if self.reused:
            text += f" ({self.reused} from the earlier run)"
        text += f", {self.failed} failed"
        if self.unreadable:
            text += f" ({plural(self.unreadable, 'recording')} unreadable)"
        return text


class Previous:
    """The lines of an earlier run of the same export (``--resume``), found by dump path.

    Only where each line lies is kept, not the lines: the export of a big corpus would not fit
    in memory twice. A line cut short (a killed run) or that is not one of ours is ignored, so
    its recording is exported again."""

    def __init__(self, path: Path) -> None:
        self._file = path.open("rb")
        self._where: dict[str, tuple[int, int]] = {}
        offset = 0
        for raw in self._file:
            if raw.endswith(b"\n"):
                try:
                    dump = json.loads(raw).get("dump")
                except (ValueError, AttributeError):
                    dump = None
                if isinstance(dump, str):
                    self._where[dump] = (offset, len(raw))
            offset += len(raw)

    def lines(self, recording: Recording) -> list[str] | None:
        """The recording's lines in step order, or None unless every step has one (a
        recording is redone whole: its steps share one perceiver's history)."""
        spans = [self._where.get(str(step.tree_path)) for step in recording.steps]
        if not spans or None in spans:
            return None
        out = []
        for offset, size in (s for s in spans if s is not None):
            self._file.seek(offset)
            out.append(self._file.read(size).decode("utf-8"))
        return out

    def close(self) -> None:
        self._file.close()


def export(paths: list[Path], out: TextIO, *, frames: bool = True, limit: int = 0,
           strict: bool = False, previous: Previous | None = None) -> Counts:
    """Write the lines; returns what was written and what failed. With ``previous``, a
    recording whose every step has a line there is copied from it, not perceived again."""
    from perception.config import PixelConfig
    from perception.pixel.read import PixelReader

    for root in paths:  # a mistyped path is refused before anything is written
        if not (root.is_dir() or (root.is_file() and root.suffix.lower() == ".xml")):
            raise InputError(_not_an_input(root))
    # One OCR engine for every recording, closed at the end.
    reader = PixelReader(PixelConfig.from_env())
    tally = _Tally()
    try:
        _export(paths, out, reader, tally, frames=frames, limit=limit, strict=strict,
                previous=previous)
    finally:
        reader.close()
    return Counts(tally.written, tally.failed + tally.unreadable, tally.unreadable, tally.reused)


class _Tally:
    __slots__ = ("written", "failed", "unreadable", "reused")

    def __init__(self) -> None:
        self.written = self.failed = self.unreadable = self.reused = 0


def _export(paths: list[Path], out: TextIO, reader: PixelReader, tally: _Tally, *,
            frames: bool, limit: int, strict: bool, previous: Previous | None) -> None:
    from perception.cli.replay import StepPerceiver, in_epochs, report_skipped
    from perception.debug import record
    from perception.pipeline import PixelChannel
    from perception.sources.recording import read_recording

    for root in paths:
        for folder in recordings(root):
            try:
                recording = _dump_file(folder) if folder.is_file() else read_recording(folder)
            except PerceptionError as exc:
                # One broken trace.json or steps.jsonl must not cost the rest of a big corpus.
                if strict:
                    print(f"perception export: stopped at {folder} (--strict)", file=sys.stderr)
                    raise
                tally.unreadable += 1
                print(f"perception export: {folder}: {type(exc).__name__}: {exc}",
                      file=sys.stderr)
                continue
            report_skipped("export", recording)
            done = previous.lines(recording) if previous is not None else None
            if done is not None:
                for text in done[: limit - tally.written if limit else None]:
                    out.write(text)
                    tally.written += 1
                    tally.reused += 1
                if limit and tally.written >= limit:
                    return
                continue
            task = task_of(recording)
            player = StepPerceiver(PixelChannel(reader), frames=frames)
            for epoch, step in in_epochs(recording.steps):
                # A step's folder; a dump file given alone is its own screen: its name, not the
                # folder it lies in (several dumps of one folder would all read ".").
                where = str(recording.root if recording.kind == "dump" else step.tree_path.parent)
                try:
                    obs = player.perceive(step, epoch=epoch)
                except PerceptionError as exc:
                    if strict:  # the error itself is printed by the caller, with its type
                        print(f"perception export: stopped at {where} (--strict)",
                              file=sys.stderr)
                        raise
                    tally.failed += 1
                    print(f"perception export: {where}: {type(exc).__name__}: {exc}",
                          file=sys.stderr)
                    continue
                action = step.action.to_json() if step.action is not None else None
                line = record(
                    obs,
                    path=where,
                    step=step.step,
                    dump=str(step.tree_path),
                    # Also without --no-frames' pixel work: the image a training row pairs with.
                    screenshot=None if step.frame_path is None else str(step.frame_path),
                    task=task,
                    action=action,
                )
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
                tally.written += 1
                if limit and tally.written >= limit:
                    return


def _found_some(paths: list[Path], counts: Counts) -> None:
    if not counts.written and not counts.failed:
        raise InputError("no screens found in " + ", ".join(map(str, paths)))


def input_named(out: Path, paths: list[Path]) -> Path | None:
    """The input that writing ``out`` could destroy, or None; ``out`` is compared by its path
    and by where its symlinks lead. An input dump file given as a PATH; a file a recording
    under an input folder reads (its ``steps.jsonl``, ``meta.json``, ``trace.json``, dumps and
    screenshots); or any existing file inside a recording folder that cannot be opened (a
    screenshot missing): what it reads is unknown then, and its dumps are still the data. A
    new file inside an input folder, or an existing one no recording reads (last run's lines
    beside the corpus), is fine to write, unless it is named as a recording's own
    (``steps.jsonl``, ``meta.json``, ``trace.json``): it would make a corpus trace read as a
    broken recording. Only the recording that would hold ``out`` is opened, not the corpus."""
    exists = out.exists() or out.is_symlink()  # a dangling symlink is no new file either
    names = {Path(os.path.abspath(out))}
    try:
        names.add(out.resolve())
    except (OSError, RuntimeError):  # a symlink loop: its path alone
        pass
    for root in paths:
        if exists and same_file(out, root):
            return root
        if not root.is_dir():
            continue
        inside = [
            (folder, name.relative_to(folder))
            for folder in {Path(os.path.abspath(root)), root.resolve()}
            for name in names
            if name.is_relative_to(folder)
        ]
        if not inside:
            continue
        if not exists:
            if out.name in (*_MARKERS, "meta.json"):
                return root
            continue
        for base, rel in inside:
            found = _recording_holding(base, rel)
            if found is not None:
                return found
    return None


def _recording_holding(base: Path, rel: Path) -> Path | None:
    """For ``base / rel``, an existing file under the input folder ``base``: the file of the
    recording holding it that it is (writing it would destroy what export reads), the
    recording's folder when that recording cannot be opened (its every file is kept), or
    None. The recording is the folder export would take: the first one down from ``base``
    that holds a marker (:func:`recordings` does not look inside one)."""
    out = base / rel
    folder = base
    for part in (None, *rel.parts[:-1]):
        folder = folder / part if part else folder
        if any((folder / m).is_file() for m in _MARKERS):
            break
    else:
        return None
    read = [folder / m for m in (*_MARKERS, "meta.json")]
    try:
        from perception.sources.recording import read_recording

        recording = read_recording(folder)
    except PerceptionError:
        return folder
    for step in recording.steps:
        read.append(step.tree_path)
        if step.frame_path is not None:
            read.append(step.frame_path)
        read.append(step.tree_path.parent / "meta.json")  # a corpus trace step's own
    return next((path for path in read if same_file(out, path)), None)


def run(args: argparse.Namespace) -> int:
    if args.out is not None and str(args.out) != "-":
        own = input_named(args.out, args.paths)
        if own is not None:
            existing = args.out.exists() or args.out.is_symlink()
            if not existing:
                args.parser.error(
                    f"-o {args.out} is an input of this export ({own}): a recording's own "
                    "file name there would break that recording; write the lines to another "
                    "file"
                )
            if own in args.paths:
                where = "an input file"
            elif own.is_dir():
                where = "in a recording that cannot be opened, whose every file is kept"
            else:
                where = "a recording reads it"
            args.parser.error(
                f"-o {args.out} is an input of this export ({own}; {where}): it would be "
                "overwritten; write the lines to a new file or outside the input folders"
            )
    if args.out is None or str(args.out) == "-":
        if args.resume:
            args.parser.error("--resume needs -o FILE: the lines of the earlier run")
        counts = export(args.paths, sys.stdout, frames=not args.no_frames,
                        limit=args.limit, strict=args.strict)
        _found_some(args.paths, counts)
    elif writes_directly(args.out):
        if args.resume:
            args.parser.error(
                f"--resume needs -o FILE, a regular file: {args.out} is a device, a pipe or "
                "standard output, which keeps no earlier lines to continue from"
            )
        counts = _export_in_place(args)
    else:
        counts = _export_to_file(args)
    print(f"perception export: {counts}", file=sys.stderr)
    # Every screen failed: a failure, as elsewhere.
    return 0 if counts.written or not counts.failed else 2


def _export_in_place(args: argparse.Namespace) -> Counts:
    """Streamed into what :func:`writes_directly` (``/dev/null``, a FIFO, ``/dev/stdout``):
    there is no file beside it to rename over it, and renaming would replace the node. Opened
    to append: ``/dev/stdout`` into a log that ``>>`` extends keeps the log."""
    try:
        with args.out.open("a", encoding="utf-8") as out:
            counts = export(args.paths, out, frames=not args.no_frames, limit=args.limit,
                            strict=args.strict)
    except OSError as exc:
        raise InputError(f"cannot write {args.out}: {exc.strerror}") from exc
    _found_some(args.paths, counts)
    return counts


def _export_to_file(args: argparse.Namespace) -> Counts:
    """Written beside the target (where a symlink ``-o`` leads) and moved over it at the end:
    a run that fails (a bad path, --strict) leaves an existing file as it was. An interrupted
    run keeps what it wrote in ``OUT.part``, which ``--resume`` continues from (or from
    ``OUT`` when that is all there is: a finished export of a corpus that grew since)."""
    try:
        target = replaced_file(args.out)  # a symlink is written through, and kept
    except OSError as exc:
        raise InputError(f"cannot write {args.out}: {exc.strerror}") from exc
    part = target.with_name(target.name + ".part")
    older = part.with_name(part.name + ".old")
    previous: Previous | None = None
    outcome = "failed"
    try:
        if args.resume and part.is_file():
            part.replace(older)  # read from, while the new .part is written
            previous = Previous(older)
        elif args.resume and target.is_file():
            previous = Previous(target)
        with part.open("w", encoding="utf-8") as out:
            counts = export(args.paths, out, frames=not args.no_frames, limit=args.limit,
                            strict=args.strict, previous=previous)
        _found_some(args.paths, counts)
        part.replace(target)
        outcome = "done"
        return counts
    except KeyboardInterrupt:
        outcome = "kept"  # it holds every screen done, the earlier run's included
        print(f"perception export: the screens written are kept in {part}: run the same "
              "command with --resume to continue", file=sys.stderr)
        raise
    except OSError as exc:
        raise InputError(f"cannot write {args.out}: {exc.strerror}") from exc
    finally:
        if previous is not None:
            previous.close()
        if outcome == "failed":
            part.unlink(missing_ok=True)
        if older.exists():
            if outcome == "failed":
                older.replace(part)  # a failed resume leaves the earlier progress as it was
            else:
                older.unlink()
