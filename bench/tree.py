"""``perception-bench tree``: the tree channel on every real dump of a corpus, in one run.

Inputs: every ``screen.xml`` under ``--corpus`` (the pairs, ``_desync/`` included) and every
``dumps/*.xml`` (original ``uiautomator dump`` output). Figures:

- per-stage p50/p95 ms for each fast-path implementation: parse, clean, cluster (occlusion
  included), compress, the whole pipeline ``read_tree(xml).to_prompt()``, and health apart
  (computed lazily, so not part of the pipeline);
- the bare baseline ``lxml.etree.fromstring`` on the same bytes, and pipeline/lxml as the
  median of per-file ratios;
- Cython vs pure Python, as the ratio of medians, for the pipeline and for each tree kernel,
  each kernel timed on the arrays the pipeline really passed it for that file;
- tokens per screen (o200k_base) of the prompt with and without coordinates, and of the raw XML;
- actionable survival and text retention, before and after list truncation (see
  :func:`survival` and :func:`text_retention`).

Each file is timed as the median of ``--repeat`` calls, and the implementations are timed back
to back on each file, so load on the machine hits both alike. Both implementations must produce
the same prompt; the report counts the files where they do not.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import json
import os
import platform
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import numpy as np
from lxml import etree

from bench import BenchInputError
from bench.stats import at_least_one, fmt, p50_p95, pct, target, target_lines, time_ms
from perception import fastpath
from perception._kernels_tree_py import label_piece, summarises
from perception.cli.options import whole
from perception.config import TreeConfig
from perception.errors import PerceptionError
from perception.tree import Tree, read_tree
from perception.tree.clean import clean, infer_screen
from perception.tree.cluster import cluster, without_state
from perception.tree.compress import iter_rows, to_prompt
from perception.tree.parse import parse_dump
from perception.types import BoxPx, ElementFlag

STAGES = ("parse", "clean", "cluster", "compress", "pipeline", "health")
KERNELS = ("scan_hierarchy", "tree_structure", "tree_elements", "tree_visibility", "tree_tap_boxes")
"""The tree kernels listed first; any other ``tree_*`` kernel the pipeline calls is timed too."""
_TREE_KERNEL = re.compile(r"scan_hierarchy|tree_\w+")
LABEL_PREFIX_CHARS = 40
_LABEL_SEP = " | "
WORST = 5
GC_EVERY_FILES = 25

TARGETS = {
    "pipeline_over_lxml_max": 2.0,
    "cython_pipeline_speedup_min": 3.0,
    "cython_kernel_speedup_min": 10.0,
    "survival_before_truncation_min": 1.0,
    "text_retention_min": 0.98,
    "dump_tokens_max": 200,
    "dump_tokens_ids_only_max": 120,
}

_HIERARCHY = re.compile(rb"<hierarchy[\s/>]")
_HIERARCHY_END = b"</hierarchy>"


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "tree", help="tree channel: stage latency vs lxml, Cython vs Python, tokens, survival"
    )
    p.add_argument("--corpus", type=Path, required=True, help="dir with */screen.xml and dumps/")
    p.add_argument("--json", type=Path, default=None, help="write the full report here")
    p.add_argument(
        "--repeat", type=at_least_one, default=5,
        help="timed calls per file and stage (median kept)",
    )
    p.add_argument(
        "--limit",
        type=whole,
        default=0,
        help="at most this many pairs and this many dumps, evenly spaced by path (0 = all)",
    )
    p.set_defaults(run=run)


# --- inputs --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Screen:
    path: Path
    name: str
    group: str
    """``pairs`` or ``dumps``."""
    data: bytes


T = TypeVar("T")


def spread(items: Sequence[T], limit: int) -> list[T]:
    """``limit`` items evenly spaced over ``items`` (all when limit is 0 or larger)."""
    if limit <= 0 or limit >= len(items):
        return list(items)
    step = len(items) / limit
    return [items[int(i * step)] for i in range(limit)]


def load_screens(corpus: Path, limit: int) -> list[Screen]:
    dumps_dir = corpus / "dumps"
    pairs = sorted(p for p in corpus.rglob("screen.xml") if dumps_dir not in p.parents)
    dumps = sorted(dumps_dir.glob("*.xml")) if dumps_dir.is_dir() else []
    screens = []
    for group, paths in (("pairs", pairs), ("dumps", dumps)):
        for path in spread(paths, limit):
            name = str(path.relative_to(corpus))
            screens.append(Screen(path, name, group, path.read_bytes()))
    return screens


def hierarchy_slice(data: bytes) -> bytes | None:
    """``<hierarchy>...</hierarchy>`` out of noisy bytes, or None when there is none."""
    m = _HIERARCHY.search(data)
    end = data.rfind(_HIERARCHY_END)
    if m is None or end < m.start():
        return None
    return data[m.start() : end + len(_HIERARCHY_END)]


def lxml_bytes(data: bytes) -> bytes | None:
    """What the bare lxml baseline parses: the bytes themselves, or their ``<hierarchy>``
    slice when lxml refuses them as they are (banner, noise), or None if it refuses both."""
    try:
        etree.fromstring(data)
        return data
    except etree.XMLSyntaxError:
        pass
    sliced = hierarchy_slice(data)
    if sliced is None:
        return None
    try:
        etree.fromstring(sliced)
    except etree.XMLSyntaxError:
        return None
    return sliced


# --- implementations -----------------------------------------------------------------------------


@contextmanager
def using(mod: Any) -> Iterator[None]:
    """Run the package on ``mod`` as its kernel module (restored afterwards)."""
    saved = fastpath.kernels()
    setattr(fastpath, "_impl", mod)  # noqa: B010  (a module attribute typed as one module)
    try:
        yield
    finally:
        setattr(fastpath, "_impl", saved)  # noqa: B010


class Recorder:
    """Stands in for a kernel module: forwards every call, keeps the tree kernels' arguments."""

    def __init__(self, mod: ModuleType) -> None:
        self._mod = mod
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def __getattr__(self, name: str) -> Any:
        fn = getattr(self._mod, name)
        if not callable(fn) or not _TREE_KERNEL.fullmatch(name):
            return fn

        def record(*args: Any) -> Any:
            out = fn(*args)
            self.calls.append((name, args))
            return out

        return record


# --- quality -------------------------------------------------------------------------------------


@dataclass(slots=True)
class Survival:
    eligible: int = 0
    before: int = 0
    after: int = 0
    lost: list[dict[str, Any]] = field(default_factory=list)


def _occluded_nodes(tree: Tree) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """True for each raw node whose element is flagged occluded."""
    of_node = tree.element_of_node
    occ = np.array(
        [bool(e.flags & ElementFlag.OCCLUDED) for e in tree.elements] + [False], dtype=bool
    )
    return np.where(of_node >= 0, occ[np.where(of_node >= 0, of_node, len(occ) - 1)], False)


def _node_info(tree: Tree, node: int) -> dict[str, Any]:
    raw = tree.raw
    label = raw.string(node, fastpath.F_TEXT) or raw.string(node, fastpath.F_DESC)
    return {
        "node": node,
        "class": raw.string(node, fastpath.F_CLASS).rsplit(".", 1)[-1],
        "label": " ".join(label.split())[:LABEL_PREFIX_CHARS],
        "rid": raw.string(node, fastpath.F_RID).rsplit("/", 1)[-1],
        "box_px": [int(v) for v in tree.cleaned.clip_px[node]],
    }


def survival(tree: Tree) -> Survival:
    """Actionable survival on one screen.

    Eligible: raw nodes that are enabled, on-screen (clipped area > 0, not dropped by clean),
    actionable (clickable, long-clickable, checkable, editable or scrollable) in the dump and
    after cleaning (not what clean knows takes no tap of its own: the permission dialog's
    panels, a web page's blanket clicks) and not occluded (their element is not flagged
    occluded). A node survives when the element that maps to it (``tree.element_of_node``)
    contains the centre of its clipped box, or is the node's own element offered with a tap box
    inside the node (its centre is under a later cover, see ``perception.tree.occlusion``), and
    is emitted: before truncation, any element not occluded; after it, one of
    ``tree.prompt_elements``.
    """
    raw, cleaned = tree.raw, tree.cleaned
    out = Survival()
    if raw.count == 0:
        return out
    clip = cleaned.clip_px.astype(np.int64)
    area = (clip[:, 2] - clip[:, 0]) * (clip[:, 3] - clip[:, 1])
    eligible = (
        ((raw.bits & ElementFlag.DISABLED) == 0)
        & (area > 0)
        & ((cleaned.bits & fastpath.B_DROPPED) == 0)
        & ((raw.bits & fastpath.B_ACTION_MASK) != 0)
        & ((cleaned.bits & fastpath.B_ACTION_MASK) != 0)
        & ~_occluded_nodes(tree)
    )
    of_node = tree.element_of_node
    hidden = tree.hidden_ids
    for node in np.flatnonzero(eligible).tolist():
        out.eligible += 1
        el = int(of_node[node])
        if el < 0:
            out.lost.append({**_node_info(tree, node), "why": "no element"})
            continue
        element = tree.elements[el]
        box = BoxPx(*cleaned.clip_px[node].tolist())
        tap_box = element.node == node and box.encloses(element.box_px)
        if not tap_box and not element.box_px.contains(box.center):
            out.lost.append({**_node_info(tree, node), "why": f"centre outside element {el}"})
            continue
        out.before += 1
        if el in hidden:
            out.lost.append({**_node_info(tree, node), "why": "hidden by list truncation"})
            continue
        out.after += 1
    return out


@dataclass(slots=True)
class Retention:
    labels: int = 0
    before: int = 0
    after: int = 0
    missing_before: list[str] = field(default_factory=list)
    hidden_after: int = 0
    cut: int = 0
    """Missing labels whose start does appear, cut with an ellipsis before 40 characters."""
    capped: int = 0
    """Missing labels of a node whose element's label already has the most pieces allowed."""


def prompt_labels(prompt: str) -> str:
    """The labels of a compact prompt, one a line (ids, boxes and flags left out), with any
    whitespace run as one space, as in :func:`visible_labels` (a no-break space is a space)."""
    labels = [" ".join(r.label.split()) for r in iter_rows(json.loads(prompt))]
    return "\n".join(labels)


_WHOLE = 1 << 30
"""A ``label_piece`` limit no text reaches: the piece whole."""


def visible_labels(tree: Tree) -> dict[str, int]:
    """Distinct text / content-desc of alive, not occluded, not password raw nodes, each with
    the element of its first node (-1 if none), as a label piece says it before any cut
    (``label_piece``: white space collapsed, bidi marks and a summary's empty fields dropped,
    ", , , Ann, , Subject" is "Ann, Subject"). An element's own text or description that only
    summarises the labels of its other nodes (``summarises``; the cluster stage leaves it out
    when cut, its parts said whole) is said by them, not counted. An element's own description
    that ends with the state its flags say (``"Easy, Selected"``: ``"Easy"`` and ``sel``, see
    ``cluster.without_state``) is said as its name."""
    raw = tree.raw
    if raw.count == 0:
        return {}
    has_label = (raw.bits & (fastpath.B_HAS_TEXT | fastpath.B_HAS_DESC)) != 0
    keep = (
        has_label
        & ((tree.cleaned.bits & fastpath.B_DROPPED) == 0)
        & ((raw.bits & ElementFlag.PASSWORD) == 0)
        & ~_occluded_nodes(tree)
    )
    labels: dict[str, int] = {}
    of_node = tree.element_of_node
    nodes = np.flatnonzero(keep).tolist()
    of_kept = of_node[nodes].tolist()
    by_element: dict[int, list[int]] = {}
    for node, el in zip(nodes, of_kept, strict=True):
        by_element.setdefault(el, []).append(node)
    for node, el in zip(nodes, of_kept, strict=True):
        own = el >= 0 and tree.elements[el].node == node  # the element's own node
        parts = [
            value for other in by_element[el] if other != node
            for value in (raw.string(other, fastpath.F_TEXT), raw.string(other, fastpath.F_DESC))
            if value.split()
        ] if own else []
        for fld in (fastpath.F_TEXT, fastpath.F_DESC):
            value = raw.string(node, fld)
            if own and fld == fastpath.F_DESC:
                said = value.strip()
                name, state = without_state(said)
                if name != said and int(tree.elements[el].flags) & state == state:
                    value = name  # the state is the row's flags ("Not selected": none)
            label = " ".join(label_piece(value, _WHOLE).split())
            if label and not (parts and summarises(value, parts)):
                labels.setdefault(label, el)
    return labels


def text_retention(tree: Tree, config: TreeConfig) -> Retention:
    """Share of distinct visible labels whose first 40 characters appear among the labels of
    the prompt, in any capitals (the cluster stage says "Advanced" once where a tab is
    described so and draws "ADVANCED"): before truncation (every element not occluded) and
    after (the prompt).

    Two causes of a missing label are counted apart: ``cut``, the label is there but cut
    shorter than 40 characters (``max_label_chars`` or one fewer, then an ellipsis, as the
    cluster stage cuts label pieces); ``capped``, its element's label already holds
    ``max_label_pieces`` pieces.
    """
    piece_chars = config.max_label_chars
    out = Retention()
    labels = visible_labels(tree)
    if not labels:
        return out
    shown = [e for e in tree.elements if not e.flags & ElementFlag.OCCLUDED]
    before = prompt_labels(to_prompt(shown, screen=tree.screen, coords=False))
    after = prompt_labels(tree.to_prompt(coords=False))
    before_any, after_any = before.casefold(), after.casefold()
    for label, el in sorted(labels.items()):
        key = label[:LABEL_PREFIX_CHARS]
        out.labels += 1
        if key in before or key.casefold() in before_any:
            out.before += 1
            if key in after or key.casefold() in after_any:
                out.after += 1
            else:
                out.hidden_after += 1
        else:
            out.missing_before.append(key)
            if any(key[:k] + "…" in before for k in (piece_chars - 1, piece_chars) if k < len(key)):
                out.cut += 1
            elif el >= 0 and _pieces(tree.elements[el].text) >= config.max_label_pieces:
                out.capped += 1
    return out


def _pieces(label: str) -> int:
    return label.count(_LABEL_SEP) + 1 if label else 0


# --- one file ------------------------------------------------------------------------------------


@dataclass(slots=True)
class FileResult:
    screen: Screen
    lxml_ms: float = 0.0
    lxml_sliced: bool = False
    lxml_refused: bool = False
    stage_ms: dict[str, dict[str, float]] = field(default_factory=dict)
    kernel_ms: dict[str, dict[str, float]] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    survival: Survival = field(default_factory=Survival)
    retention: Retention = field(default_factory=Retention)
    nodes: int = 0
    elements: int = 0


def time_stages(data: bytes, config: TreeConfig, repeat: int) -> tuple[dict[str, float], str]:
    """Per-stage medians (ms) on the live kernel module, and the prompt it produced."""
    raw = parse_dump(data, config)
    cleaned = clean(raw, infer_screen(raw)[0])
    clusters = cluster(cleaned, config)
    times = {
        "parse": time_ms(lambda: parse_dump(data, config), repeat),
        "clean": time_ms(lambda: clean(raw, infer_screen(raw)[0]), repeat),
        "cluster": time_ms(lambda: cluster(cleaned, config), repeat),
        "compress": time_ms(lambda: Tree(cleaned, clusters, raw.rotation).to_prompt(), repeat),
        "health": time_ms(lambda: Tree(cleaned, clusters, raw.rotation).health, repeat),
        "pipeline": time_ms(lambda: read_tree(data).to_prompt(), repeat),
    }
    return times, read_tree(data).to_prompt()


def measure(
    screen: Screen,
    impls: dict[str, ModuleType],
    live: ModuleType,
    encode: Callable[[str], int],
    config: TreeConfig,
    repeat: int,
) -> FileResult:
    res = FileResult(screen)
    data = screen.data
    lxml_input = lxml_bytes(data)
    if lxml_input is None:
        res.lxml_refused = True
    else:
        res.lxml_sliced = lxml_input is not data
        res.lxml_ms = time_ms(lambda: etree.fromstring(lxml_input), repeat)
    for name, mod in impls.items():
        with using(mod):
            res.stage_ms[name], res.prompts[name] = time_stages(data, config, repeat)

    recorder = Recorder(live)
    with using(recorder):
        tree = read_tree(data)
    for kernel, args in recorder.calls:
        for name, mod in impls.items():
            call = partial(getattr(mod, kernel), *args)
            per_impl = res.kernel_ms.setdefault(name, {})
            per_impl[kernel] = per_impl.get(kernel, 0.0) + time_ms(call, repeat)

    prompt = tree.to_prompt()
    res.tokens = {
        "prompt": encode(prompt),
        "ids_only": encode(tree.to_prompt(coords=False)),
        "raw_xml": encode(data.decode("utf-8", "replace")),
    }
    res.survival = survival(tree)
    res.retention = text_retention(tree, config)
    res.nodes = tree.raw.count
    res.elements = len(tree.elements)
    return res


# --- summary -------------------------------------------------------------------------------------


def _share(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def _median(values: Sequence[float]) -> float | None:
    return round(pct(values, 50), 4) if values else None


def _ratio(num: float | None, den: float | None) -> float | None:
    return round(num / den, 2) if num is not None and den else None


def summarise_quality(results: Sequence[FileResult]) -> dict[str, Any]:
    tok = {k: [r.tokens[k] for r in results] for k in ("prompt", "ids_only", "raw_xml")}
    surv = [r.survival for r in results]
    with_actions = [s for s in surv if s.eligible]
    ret = [r.retention for r in results]
    with_labels = [t for t in ret if t.labels]
    elig = sum(s.eligible for s in surv)
    labels = sum(t.labels for t in ret)
    return {
        "screens": len(results),
        "tokens": {
            "prompt": {"median": _median(tok["prompt"]), "p95": pct(tok["prompt"], 95)},
            "ids_only": {"median": _median(tok["ids_only"]), "p95": pct(tok["ids_only"], 95)},
            "raw_xml": {"median": _median(tok["raw_xml"]), "p95": pct(tok["raw_xml"], 95)},
        },
        "survival": {
            "screens_with_actionable": len(with_actions),
            "eligible_nodes": elig,
            "before": {
                "micro": _share(sum(s.before for s in surv), elig),
                "median_per_screen": _median([s.before / s.eligible for s in with_actions]),
                "screens_under_100": sum(1 for s in with_actions if s.before < s.eligible),
            },
            "after": {
                "micro": _share(sum(s.after for s in surv), elig),
                "median_per_screen": _median([s.after / s.eligible for s in with_actions]),
                "screens_under_100": sum(1 for s in with_actions if s.after < s.eligible),
            },
        },
        "text_retention": {
            "screens_with_labels": len(with_labels),
            "labels": labels,
            "before": {
                "micro": _share(sum(t.before for t in ret), labels),
                "median_per_screen": _median([t.before / t.labels for t in with_labels]),
                "screens_under_98": sum(1 for t in with_labels if t.before < 0.98 * t.labels),
                "missing": sum(len(t.missing_before) for t in ret),
                "missing_only_cut_short": sum(t.cut for t in ret),
                "missing_beyond_piece_cap": sum(t.capped for t in ret),
            },
            "after": {
                "micro": _share(sum(t.after for t in ret), labels),
                "median_per_screen": _median([t.after / t.labels for t in with_labels]),
                "screens_under_98": sum(1 for t in with_labels if t.after < 0.98 * t.labels),
            },
        },
    }


def summarise(results: Sequence[FileResult], impls: Sequence[str], repeat: int) -> dict[str, Any]:
    latency: dict[str, Any] = {
        "lxml.fromstring": p50_p95([r.lxml_ms for r in results if not r.lxml_refused]),
    }
    over_lxml: dict[str, Any] = {}
    medians: dict[str, dict[str, float | None]] = {}
    kernels = kernel_names(results)
    for name in impls:
        per_stage = {s: [r.stage_ms[name][s] for r in results] for s in STAGES}
        latency[name] = {s: p50_p95(v) for s, v in per_stage.items()}
        ratios = [r.stage_ms[name]["pipeline"] / r.lxml_ms for r in results if r.lxml_ms > 0]
        over_lxml[name] = {
            "median": _median(ratios),
            "p95": round(pct(ratios, 95), 4) if ratios else None,
        }
        medians[name] = {"pipeline": _median(per_stage["pipeline"])}
        for kernel in kernels:
            values = [r.kernel_ms[name][kernel] for r in results if kernel in r.kernel_ms[name]]
            medians[name][kernel] = _median(values)
        for stage in STAGES:
            medians[name][f"stage:{stage}"] = _median(per_stage[stage])
    speedup: dict[str, Any] | None = None
    kernel_latency: dict[str, Any] = {}
    for name in impls:
        kernel_latency[name] = {
            k: p50_p95([r.kernel_ms[name][k] for r in results if k in r.kernel_ms[name]])
            for k in kernels
        }
        kernel_latency[name]["files_calling"] = {
            k: sum(1 for r in results if k in r.kernel_ms[name]) for k in kernels
        }
    if "cython" in impls and "python" in impls:
        py, cy = medians["python"], medians["cython"]
        speedup = {k: _ratio(py[k], cy[k]) for k in ("pipeline", *kernels)}
        speedup["stages"] = {s: _ratio(py[f"stage:{s}"], cy[f"stage:{s}"]) for s in STAGES}
    groups = {
        "all": summarise_quality(results),
        "pairs": summarise_quality([r for r in results if r.screen.group == "pairs"]),
        "dumps": summarise_quality([r for r in results if r.screen.group == "dumps"]),
    }
    mismatches = [r.screen.name for r in results if len(set(r.prompts.values())) > 1]
    return {
        "kernels": kernels,
        "latency_ms": latency,
        "kernel_ms": kernel_latency,
        "pipeline_over_lxml": over_lxml,
        "cython_speedup": speedup,
        "quality": groups,
        "prompt_mismatches": mismatches,
        "worst_survival": worst_survival(results),
        "worst_text": worst_text(results),
        "lxml_sliced": [r.screen.name for r in results if r.lxml_sliced],
        "lxml_refused": [r.screen.name for r in results if r.lxml_refused],
    }


def kernel_names(results: Sequence[FileResult]) -> list[str]:
    """The kernels the pipeline called, the known ones first in their order."""
    seen = {k for r in results for per_impl in r.kernel_ms.values() for k in per_impl}
    return [k for k in KERNELS if k in seen] + sorted(seen - set(KERNELS))


def worst_survival(results: Sequence[FileResult]) -> list[dict[str, Any]]:
    lossy = [r for r in results if r.survival.before < r.survival.eligible]
    lossy.sort(key=lambda r: (r.survival.before / r.survival.eligible, -r.survival.eligible))
    rows = []
    for r in lossy[:WORST]:
        s = r.survival
        before = [n for n in s.lost if n["why"] != "hidden by list truncation"]
        rows.append(
            {
                "file": r.screen.name,
                "eligible": s.eligible,
                "before": s.before,
                "after": s.after,
                "lost_before_truncation": before[:WORST],
                "hidden_by_truncation": len(s.lost) - len(before),
            }
        )
    return rows


def worst_text(results: Sequence[FileResult]) -> list[dict[str, Any]]:
    lossy = [r for r in results if r.retention.missing_before]
    lossy.sort(key=lambda r: (r.retention.before / r.retention.labels, -r.retention.labels))
    return [
        {
            "file": r.screen.name,
            "labels": r.retention.labels,
            "before": r.retention.before,
            "after": r.retention.after,
            "missing": r.retention.missing_before[:WORST],
        }
        for r in lossy[:WORST]
    ]


def targets(summary: dict[str, Any]) -> dict[str, Any]:
    t = TARGETS
    dumps = summary["quality"]["dumps"]
    allq = summary["quality"]["all"]
    speed = summary["cython_speedup"] or {}
    fast = "cython" if "cython" in summary["pipeline_over_lxml"] else "python"

    kernel_speedups = [speed.get(k) for k in summary["kernels"]]
    known = [v for v in kernel_speedups if v is not None]
    return {
        f"pipeline/lxml ({fast}) <= {t['pipeline_over_lxml_max']}x": target(
            summary["pipeline_over_lxml"][fast]["median"],
            lambda v: v <= t["pipeline_over_lxml_max"],
        ),
        f"cython pipeline speedup >= {t['cython_pipeline_speedup_min']}x": target(
            speed.get("pipeline"), lambda v: v >= t["cython_pipeline_speedup_min"]
        ),
        f"cython kernel speedup (min) >= {t['cython_kernel_speedup_min']}x": target(
            min(known) if known and len(known) == len(kernel_speedups) else None,
            lambda v: v >= t["cython_kernel_speedup_min"],
        ),
        "actionable survival before truncation = 100% (median per screen)": target(
            allq["survival"]["before"]["median_per_screen"],
            lambda v: v >= t["survival_before_truncation_min"],
        ),
        f"text retention >= {t['text_retention_min']:.0%} (median per screen)": target(
            allq["text_retention"]["before"]["median_per_screen"],
            lambda v: v >= t["text_retention_min"],
        ),
        f"dumps/ tokens with coords <= {t['dump_tokens_max']} (median)": target(
            dumps["tokens"]["prompt"]["median"], lambda v: v <= t["dump_tokens_max"]
        ),
        f"dumps/ tokens id-only <= {t['dump_tokens_ids_only_max']} (median)": target(
            dumps["tokens"]["ids_only"]["median"], lambda v: v <= t["dump_tokens_ids_only_max"]
        ),
    }


# --- report --------------------------------------------------------------------------------------


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def environment(impls: Sequence[str]) -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "lxml": ".".join(str(v) for v in etree.LXML_VERSION),
        "libxml2": ".".join(str(v) for v in etree.LIBXML_VERSION),
        "cython": _version("Cython"),
        "bpe_openai": _version("bpe-openai"),
        "fastpath_implementation": fastpath.IMPLEMENTATION,
        "implementations_timed": list(impls),
        "cpu_count": os.cpu_count(),
        "load_avg_1m": round(os.getloadavg()[0], 2),
        "platform": platform.platform(),
    }


def _pc(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def render(report: dict[str, Any]) -> str:
    env, s = report["environment"], report["summary"]
    impls = env["implementations_timed"]
    files = report["files"]
    lines = [
        f"perception-bench tree: {files['timed']} files ({files['pairs']} pairs, "
        f"{files['dumps']} dumps), repeat {report['repeat']}, live fastpath "
        f"{env['fastpath_implementation']}, {env['cpu_count']} CPUs, load {env['load_avg_1m']}",
        "",
        "latency per file, ms (median of repeats; p50/p95 over files)",
        f"  {'stage':<16}"
        + "".join(f"{name + ' p50':>14}{'p95':>9}" for name in impls)
        + ("   py/cy (ratio of p50)" if s["cython_speedup"] else ""),
    ]
    lx = s["latency_ms"]["lxml.fromstring"]
    lines.append(f"  {'lxml.fromstring':<16}{lx['p50']:>14.3f}{lx['p95']:>9.3f}")
    for stage in STAGES:
        label = "health (lazy)" if stage == "health" else stage
        row = f"  {label:<16}"
        for name in impls:
            v = s["latency_ms"][name][stage]
            row += f"{v['p50']:>14.3f}{v['p95']:>9.3f}"
        if s["cython_speedup"]:
            row += f"   {fmt(s['cython_speedup']['stages'][stage], 'x')}"
        lines.append(row)
    lines.append(
        "  pipeline/lxml (median of per-file ratios): "
        + ", ".join(f"{n} {fmt(s['pipeline_over_lxml'][n]['median'], 'x')}" for n in impls)
    )
    if s["cython_speedup"]:
        sp = s["cython_speedup"]
        lines.append(
            "  cython vs python (ratio of medians): pipeline "
            + fmt(sp["pipeline"], "x")
            + "; kernels "
            + ", ".join(f"{k} {fmt(sp[k], 'x')}" for k in s["kernels"])
        )
    else:
        lines.append("  cython extension not built: cython vs python ratios skipped")
    lines += ["", "quality (one line per corpus part)"]
    lines.append(
        f"  {'part':<7}{'n':>5}{'tok med':>9}{'p95':>6}{'id-only':>9}{'p95':>6}{'xml med':>9}"
        f"{'surv<trunc':>12}{'(med)':>8}{'<100%':>7}{'surv':>8}{'text<trunc':>12}{'(med)':>8}"
        f"{'text':>8}"
    )
    for part in ("dumps", "pairs", "all"):
        q = s["quality"][part]
        if not q["screens"]:
            continue
        tk, sv, tr = q["tokens"], q["survival"], q["text_retention"]
        lines.append(
            f"  {part:<7}{q['screens']:>5}{fmt(tk['prompt']['median']):>9}"
            f"{tk['prompt']['p95']:>6}{fmt(tk['ids_only']['median']):>9}"
            f"{tk['ids_only']['p95']:>6}{fmt(tk['raw_xml']['median']):>9}"
            f"{_pc(sv['before']['micro']):>12}{_pc(sv['before']['median_per_screen']):>8}"
            f"{sv['before']['screens_under_100']:>7}{_pc(sv['after']['micro']):>8}"
            f"{_pc(tr['before']['micro']):>12}{_pc(tr['before']['median_per_screen']):>8}"
            f"{_pc(tr['after']['micro']):>8}"
        )
    lines.append(
        "  (tok: o200k_base tokens of to_prompt(); surv/text: micro-average over nodes/labels "
        "before and after list truncation, (med) = median per screen)"
    )
    tra = s["quality"]["all"]["text_retention"]["before"]
    lines.append(
        f"  text missing before truncation: {tra['missing']} labels; "
        f"{tra['missing_only_cut_short']} only cut short (their start is there, cut with an "
        f"ellipsis before {LABEL_PREFIX_CHARS} characters), "
        f"{tra['missing_beyond_piece_cap']} beyond the {report['label_pieces']}-piece label cap"
    )
    if s["worst_survival"]:
        lines += ["", "worst actionable survival (lost before truncation)"]
        for w in s["worst_survival"]:
            lines.append(f"  {w['file']}: {w['before']}/{w['eligible']}")
            for n in w["lost_before_truncation"]:
                lines.append(f"    {n['class']} {n['label'] or n['rid']!r} {n['why']}")
    if s["worst_text"]:
        lines += ["", "worst text retention (missing before truncation)"]
        for w in s["worst_text"]:
            lines.append(f"  {w['file']}: {w['before']}/{w['labels']}  {w['missing']!r}")
    lines += target_lines(report["targets"])
    for note in report["notes"]:
        lines.append(f"note: {note}")
    for err in report["errors"]:
        lines.append(f"ERROR {err['file']}: {err['error']}")
    return "\n".join(lines)


def token_counter(command: str) -> Callable[[str], int]:
    """The model's token count of a text (o200k_base), for ``perception-bench COMMAND``."""
    try:
        import bpe_openai
    except ImportError as exc:  # pragma: no cover - the bench extra installs it
        raise BenchInputError(
            f"perception-bench {command} needs the bpe-openai package: pip install bpe-openai "
            "(or, in a checkout, pip install '.[bench]')"
        ) from exc
    enc = bpe_openai.get_encoding("o200k_base")

    def count(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    return count


def run(args: argparse.Namespace) -> int:
    corpus: Path = args.corpus
    if not corpus.is_dir():
        raise BenchInputError(f"--corpus {corpus}: not a directory")
    screens = load_screens(corpus, args.limit)
    if not screens:
        raise BenchInputError(f"--corpus {corpus}: no */screen.xml and no dumps/*.xml")
    impls = dict(sorted(fastpath.available().items()))
    live = fastpath.kernels()
    encode = token_counter("tree")
    config = TreeConfig()
    notes: list[str] = []
    if "cython" not in impls:
        notes.append("the Cython extension is not built: only the pure-Python twins are timed")

    results: list[FileResult] = []
    errors: list[dict[str, str]] = []
    gc_was_enabled = gc.isenabled()
    try:
        for k, screen in enumerate(screens):
            if k % GC_EVERY_FILES == 0:
                gc.enable()
                gc.collect()
                gc.disable()
            try:
                results.append(measure(screen, impls, live, encode, config, args.repeat))
            except PerceptionError as exc:
                errors.append({"file": screen.name, "error": f"{type(exc).__name__}: {exc}"})
    finally:
        if gc_was_enabled:
            gc.enable()
    if not results:
        print("\n".join(f"ERROR {e['file']}: {e['error']}" for e in errors), file=sys.stderr)
        return 1

    summary = summarise(results, list(impls), args.repeat)
    if summary["lxml_sliced"]:
        notes.append(
            f"lxml refused {len(summary['lxml_sliced'])} file(s) as they are (banner or noise): "
            "the baseline parsed their <hierarchy>...</hierarchy> slice"
        )
    if summary["lxml_refused"]:
        notes.append(
            f"lxml refused {len(summary['lxml_refused'])} file(s) even as a <hierarchy> slice: "
            "they have no baseline and no pipeline/lxml ratio"
        )
    if summary["prompt_mismatches"]:
        notes.append(
            f"the implementations gave different prompts on {len(summary['prompt_mismatches'])} "
            "file(s): see prompt_mismatches"
        )
    notes.append(
        "kernel times sum every call of that kernel in a file (scan_hierarchy: one per window "
        "document); tree_visibility is only called on files with elements"
    )
    report: dict[str, Any] = {
        "corpus": str(corpus),
        "repeat": args.repeat,
        "limit": args.limit,
        "label_chars": config.max_label_chars,
        "label_pieces": config.max_label_pieces,
        "files": {
            "pairs": sum(1 for s in screens if s.group == "pairs"),
            "dumps": sum(1 for s in screens if s.group == "dumps"),
            "timed": len(results),
            "errors": len(errors),
        },
        "environment": environment(list(impls)),
        "summary": summary,
        "notes": notes,
        "errors": errors,
    }
    report["targets"] = targets(summary)
    report["per_file"] = [
        {
            "file": r.screen.name,
            "group": r.screen.group,
            "bytes": len(r.screen.data),
            "nodes": r.nodes,
            "elements": r.elements,
            "lxml_ms": round(r.lxml_ms, 4),
            "stage_ms": {
                n: {k: round(v, 4) for k, v in st.items()} for n, st in r.stage_ms.items()
            },
            "kernel_ms": {
                n: {k: round(v, 4) for k, v in st.items()} for n, st in r.kernel_ms.items()
            },
            "tokens": r.tokens,
            "survival": [r.survival.eligible, r.survival.before, r.survival.after],
            "text": [r.retention.labels, r.retention.before, r.retention.after],
        }
        for r in results
    ]
    print(render(report))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=1) + "\n")
        print(f"wrote {args.json}")
    return 1 if errors else 0


if __name__ == "__main__":
    from bench.cli import main

    sys.exit(main(["tree", *sys.argv[1:]]))
