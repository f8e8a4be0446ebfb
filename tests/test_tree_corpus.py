"""Every real screen in the corpus goes through the tree channel, identically on both twins."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import pytest

from perception import BoxPx, ElementFlag, fastpath, read_tree
from perception.tree import Tree


def corpus_dumps(corpus_dir: Path) -> list[Path]:
    files = sorted(corpus_dir.rglob("screen.xml")) + sorted((corpus_dir / "dumps").glob("*.xml"))
    assert len(files) > 400, "the corpus looks incomplete"
    return files


def _read_all(files: list[Path], impl: str, monkeypatch: pytest.MonkeyPatch) -> list[Tree]:
    with monkeypatch.context() as m:
        m.setattr(fastpath, "_impl", fastpath.available()[impl])
        return [read_tree(path.read_bytes()) for path in files]


def test_every_corpus_screen_parses_and_compresses(
    corpus_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = corpus_dumps(corpus_dir)
    trees = {impl: _read_all(files, impl, monkeypatch) for impl in fastpath.available()}
    reference = trees["python"]
    for impl, got in trees.items():
        for path, tree, ref in zip(files, got, reference, strict=True):
            prompt = tree.to_prompt()
            json.loads(prompt)
            assert "<" not in prompt, f"a control token's first character in {path}"
            assert prompt == ref.to_prompt(), f"{impl} differs from python on {path}"
            assert tree.elements == ref.elements
            assert tree.health == ref.health


def _has_tap_box(tree: Tree, el: int) -> bool:
    """The element is offered on part of its own node's box, not all of it."""
    element = tree.elements[el]
    own = BoxPx(*tree.cleaned.clip_px[element.node].tolist())
    return element.box_px != own and own.encloses(element.box_px)


def test_every_actionable_node_survives_before_truncation(corpus_dir: Path) -> None:
    """Each enabled, on-screen, not-occluded actionable node maps to an element whose box holds
    its centre (the bench reports the same figure over the corpus)."""
    lost = []
    for path in corpus_dumps(corpus_dir):
        tree = read_tree(path.read_bytes())
        raw, clean = tree.raw, tree.cleaned
        for node in range(raw.count):
            bits = int(clean.bits[node])
            if not bits & fastpath.B_ACTION_MASK or bits & (
                fastpath.B_DROPPED | ElementFlag.DISABLED
            ):
                continue
            el = int(tree.element_of_node[node])
            if el >= 0 and tree.elements[el].occluded:
                continue
            left, top, right, bottom = clean.clip_px[node].tolist()
            centre = ((left + right) // 2, (top + bottom) // 2)
            # an action whose centre a later cover holds is offered with its tap box, the part
            # of its own box that shows (perception.tree.occlusion): a tap there reaches it
            own = el >= 0 and tree.elements[el].node == node
            if own and BoxPx(left, top, right, bottom).encloses(tree.elements[el].box_px):
                continue
            # a node folded into an element that has a tap box clear of the controls over its
            # centre (perception.tree.occlusion.clear_of_controls): where its centre lies, a tap
            # reaches one of those controls, and the element is offered where a tap reaches it
            if el >= 0 and _has_tap_box(tree, el):
                continue
            if el < 0 or not tree.elements[el].box_px.contains(centre):
                lost.append((path.name, node, raw.string(node, fastpath.F_CLASS)))
    assert lost == []


def test_empty_hierarchies_in_the_corpus_are_valid_empty_trees(corpus_dir: Path) -> None:
    empty = [p for p in corpus_dumps(corpus_dir) if read_tree(p.read_bytes()).empty]
    assert len(empty) >= 2


def test_a_chat_screen_full_of_control_tokens_reads_back_whole(corpus_dir: Path) -> None:
    """A chat app showing raw model output ("<|im_start|>system You are..."): the prompt holds
    no control token for any tokenizer, and the text reads back unchanged."""
    xml = (corpus_dir / "dumps" / "Nora__chat_dump.xml").read_bytes()
    tree = read_tree(xml)
    texts = [e.text for e in tree.elements if "<|" in e.text]
    assert texts, "the screen shows control-token text"
    prompt = tree.to_prompt()
    assert "<|" not in prompt
    shown = [r[1] if isinstance(r[0], int) else r[0] for rows in json.loads(prompt).values()
             if isinstance(rows, list) for r in rows]
    assert sum(t.startswith("<|im_start|>system ") for t in shown) == len(texts) == 2


def test_floating_windows_get_the_width_of_their_screenshot(corpus_dir: Path) -> None:
    """A dump of a dialog or pop-up alone: the estimated screen width is the screenshot's."""
    checked = 0
    for path in corpus_dumps(corpus_dir):
        shots = [p for p in (path.with_suffix(".png"), path.with_suffix(".jpg")) if p.exists()]
        tree = read_tree(path.read_bytes())
        if not shots or not tree.screen_estimated:
            continue
        image = cv2.imread(str(shots[0]))
        assert image is not None, shots[0]
        assert tree.screen.width_px == image.shape[1], path
        assert tree.extent.height_px <= tree.screen.height_px
        checked += 1
    assert checked >= 50, checked
