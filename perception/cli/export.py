"""``perception export PATH... [-o OUT.jsonl]``: element lists as a dataset, one screen a line.

Each PATH is a recording (ours), a corpus trace, a sample folder (``screen.xml`` beside a
screenshot) or a folder holding any of these, searched depth first. Steps of one recording go
through one :class:`~perception.pipeline.Perceiver`, as in replay, each step a new epoch. A line
is :func:`perception.debug.record` of the observation with ``path``, ``step`` and the recorded
``action`` taken next (the label of a screen-to-action dataset).
A screen that fails is reported on stderr and the export goes on, unless ``--strict``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from perception.cli.options import plural, whole
from perception.errors import InputError, PerceptionError

if TYPE_CHECKING:
    from perception.pixel.read import PixelReader

_MARKERS = ("steps.jsonl", "trace.json", "screen.xml")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("export", help="write the element lists of recordings as JSON lines")
    p.add_argument("paths", nargs="+", type=Path, help="recordings, traces or folders of them")
    p.add_argument(
        "-o", "--out", type=Path, default=None, help="JSONL file (default or '-': stdout)"
    )
    p.add_argument("--no-frames", action="store_true", help="tree channel only (fast)")
    p.add_argument("--limit", type=whole, default=0, help="stop after this many screens (0: all)")
    p.add_argument("--strict", action="store_true", help="stop at the first screen that fails")
    p.set_defaults(run=run)


def recordings(path: Path) -> Iterator[Path]:
    """Folders under ``path`` that :func:`read_recording` opens (not those inside one)."""
    if not path.is_dir():
        raise InputError(f"{path}: not a directory")
    if any((path / m).is_file() for m in _MARKERS):
        yield path
        return
    for child in sorted(p for p in path.iterdir() if p.is_dir()):
        yield from recordings(child)


def export(paths: list[Path], out: TextIO, *, frames: bool = True, limit: int = 0,
           strict: bool = False) -> tuple[int, int]:
    """Write the lines; returns (screens written, screens failed)."""
    from perception.config import PixelConfig
    from perception.pixel.read import PixelReader

    # One OCR engine for every recording, closed at the end.
    reader = PixelReader(PixelConfig.from_env())
    try:
        return _export(paths, out, reader, frames=frames, limit=limit, strict=strict)
    finally:
        reader.close()


def _export(paths: list[Path], out: TextIO, reader: PixelReader, *, frames: bool, limit: int,
            strict: bool) -> tuple[int, int]:
    from perception.debug import record
    from perception.pipeline import Perceiver, PixelChannel
    from perception.sources.recording import read_recording

    written = failed = 0
    for root in paths:
        for folder in recordings(root):
            recording = read_recording(folder)
            perceiver = Perceiver.from_env(pixels=PixelChannel(reader))
            for epoch, step in enumerate(recording.steps):
                where = str(step.tree_path.parent)
                try:
                    frame = step.read_frame() if frames and step.frame_path is not None else None
                    obs = perceiver.perceive(
                        xml=step.read_tree(),
                        frame=frame,
                        tree_time_ns=(step.tree_start_ns, step.tree_end_ns),
                        frame_time_ns=(
                            None if frame is None else (step.frame_start_ns, step.frame_end_ns)
                        ),
                        epoch=epoch,
                        activity=step.activity or None,
                    )
                except PerceptionError as exc:
                    if strict:  # the error itself is printed by the caller, with its type
                        print(f"perception export: stopped at {where} (--strict)",
                              file=sys.stderr)
                        raise
                    failed += 1
                    print(f"perception export: {where}: {type(exc).__name__}: {exc}",
                          file=sys.stderr)
                    continue
                action = step.action.to_json() if step.action is not None else None
                line = record(obs, path=where, step=step.step, action=action)
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
                written += 1
                if limit and written >= limit:
                    return written, failed
    return written, failed


def _found_some(paths: list[Path], written: int, failed: int) -> None:
    if not written and not failed:
        raise InputError("no screens found in " + ", ".join(map(str, paths)))


def run(args: argparse.Namespace) -> int:
    if args.out is None or str(args.out) == "-":
        written, failed = export(args.paths, sys.stdout, frames=not args.no_frames,
                                 limit=args.limit, strict=args.strict)
        _found_some(args.paths, written, failed)
    else:
        # Written beside the target and moved over it at the end: a run that fails (a bad path,
        # --strict) leaves an existing file as it was.
        part = args.out.with_name(args.out.name + ".part")
        try:
            with part.open("w", encoding="utf-8") as out:
                written, failed = export(args.paths, out, frames=not args.no_frames,
                                         limit=args.limit, strict=args.strict)
            _found_some(args.paths, written, failed)
            part.replace(args.out)
        except OSError as exc:
            raise InputError(f"cannot write {args.out}: {exc.strerror}") from exc
        finally:
            part.unlink(missing_ok=True)
    print(f"perception export: {plural(written, 'screen')}, {failed} failed", file=sys.stderr)
    return 0 if written or not failed else 2  # every screen failed: a failure, as elsewhere
