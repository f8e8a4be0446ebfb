"""Stage 3: cluster. Turn cleaned nodes into elements.

An aggregation root (clickable, long-clickable, checkable, or editable node) absorbs the text
and descriptions of its descendants that are not roots themselves, so one "Save" button is one
element, not three. Icon-only roots keep their content-desc or resource id as a label. Text
nodes without a root above them become text elements; scrollable containers become list
elements so the model knows it can scroll. Homogeneous runs of list items (same container,
kind and size) are truncated to the first ``list_keep`` items plus a count of the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from perception import fastpath
from perception.config import TreeConfig
from perception.tree.clean import CleanTree
from perception.tree.occlusion import occluded
from perception.types import BoxPx, ElementFlag, TreeElement

I32 = npt.NDArray[np.int32]
_FLAG_MASK = (1 << 13) - 1
_LABEL_SEP = " | "

# Short kind names, by class-name fragment, checked in order.
_KINDS = (
    ("EditText", "input"),
    ("AutoCompleteTextView", "input"),
    ("Switch", "switch"),
    ("ToggleButton", "switch"),
    ("CheckBox", "check"),
    ("CheckedTextView", "check"),
    ("RadioButton", "radio"),
    ("SeekBar", "slider"),
    ("RatingBar", "slider"),
    ("ProgressBar", "progress"),
    ("Spinner", "select"),
    ("WebView", "web"),
    ("TabView", "tab"),
    ("Tab", "tab"),
    ("ImageButton", "btn"),
    ("Button", "btn"),
    ("Image", "img"),
)


def kind_of(class_name: str, bits: int) -> str:
    """The short type name the model sees."""
    short = class_name.rsplit(".", 1)[-1]
    for fragment, kind in _KINDS:
        if fragment in short:
            if kind == "img" and bits & fastpath.B_ROOT_MASK:
                return "btn"
            return kind
    if bits & fastpath.B_EDITABLE:
        return "input"
    if bits & (ElementFlag.CHECKABLE):
        return "check"
    if bits & fastpath.B_ROOT_MASK:
        return "btn"
    if bits & ElementFlag.SCROLLABLE:
        return "list"
    if bits & fastpath.B_WEBVIEW:
        return "web"
    return "text" if bits & fastpath.B_HAS_TEXT else "view"


def short_resource_id(rid: str) -> str:
    """``com.app:id/btn_save`` -> ``btn_save``."""
    return rid.rsplit("/", 1)[-1] if "/" in rid else rid


def _piece(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _add_piece(pieces: list[str], piece: str) -> None:
    """Add a label piece unless another piece already says it; a longer piece that contains
    an earlier one replaces it ("Pictures" then "Pictures, Tab 1 of 2." keeps the latter)."""
    if not piece:
        return
    for k, have in enumerate(pieces):
        if piece in have:
            return
        if have in piece:
            pieces[k] = piece
            return
    pieces.append(piece)


@dataclass(frozen=True, slots=True, kw_only=True)
class Clusters:
    elements: tuple[TreeElement, ...]
    element_of_node: I32
    """For each raw node, the index of the element it belongs to (absorbed or itself), or -1."""
    hidden: frozenset[int]
    """Ids of elements hidden by list truncation."""


def cluster(tree: CleanTree, config: TreeConfig) -> Clusters:
    raw = tree.raw
    bits = tree.bits
    owner = tree.owner
    n = raw.count
    strings = raw.strings
    nf = fastpath.NFIELDS
    limit = config.max_label_chars

    alive = (bits & fastpath.B_DROPPED) == 0
    is_root = alive & (owner == np.arange(n, dtype=np.int32))
    has_label = (bits & (fastpath.B_HAS_TEXT | fastpath.B_HAS_DESC)) != 0
    free_text = alive & (owner < 0) & has_label & ((bits & fastpath.B_LAYOUT) == 0)
    # Scrollables are elements of their own (the model can scroll them); inside a root only
    # when the root's box does not hold their centre (else tapping the root reaches them).
    scrollable = alive & ((bits & ElementFlag.SCROLLABLE) != 0) & ~is_root
    clip = tree.clip_px
    centre_x = (clip[:, 0] + clip[:, 2]) // 2
    centre_y = (clip[:, 1] + clip[:, 3]) // 2
    root_box = clip[np.maximum(owner, 0)]
    outside_root = (
        (centre_x < root_box[:, 0]) | (centre_x >= root_box[:, 2])
        | (centre_y < root_box[:, 1]) | (centre_y >= root_box[:, 3])
    )
    scrollable &= (owner < 0) | outside_root
    free_scroll = scrollable & ((owner >= 0) | ~has_label)
    candidates = np.flatnonzero(is_root | free_text | free_scroll).astype(np.int32)

    index = np.full(n, -1, dtype=np.int32)
    index[candidates] = np.arange(candidates.size, dtype=np.int32)
    of_node = np.where(owner >= 0, index[np.maximum(owner, 0)], -1)
    of_node = np.where(alive, np.maximum(of_node, index), -1).astype(np.int32)

    # Label pieces: every alive node with text or a description, in document order, goes to
    # its candidate (its root, or itself). Password text is never read out.
    pieces: list[list[str]] = [[] for _ in range(candidates.size)]
    labelled = np.flatnonzero(alive & has_label & (of_node >= 0))
    for node, el in zip(labelled.tolist(), of_node[labelled].tolist(), strict=True):
        if bits[node] & ElementFlag.PASSWORD:
            continue
        base = node * nf
        own = pieces[el]
        for field in (fastpath.F_TEXT, fastpath.F_DESC):
            value = strings[base + field]
            if value:
                _add_piece(own, _piece(value, limit))

    cand_nodes = candidates.tolist()
    remap = _borrow_labels(tree, cand_nodes, pieces, is_root, is_root | scrollable)
    extra_flags = _merge_nested_roots(tree, cand_nodes, pieces, is_root, remap)
    boxes = _merge_static_text(tree, cand_nodes, pieces, is_root | scrollable, remap)

    # Keep roots and scrollables always; text candidates only when they say something.
    keep = [
        k for k, node in enumerate(cand_nodes)
        if remap[k] == k and (is_root[node] or free_scroll[node] or pieces[k])
    ]
    new_id = np.full(len(cand_nodes) + 1, -1, dtype=np.int32)
    for new, old in enumerate(keep):
        new_id[old] = new
    for old, target in reversed(list(enumerate(remap))):  # nested folds chain to later ids
        if target != old:
            new_id[old] = new_id[target]
    element_of_node = np.where(of_node >= 0, new_id[of_node], -1).astype(np.int32)
    kept_nodes = np.array([cand_nodes[k] for k in keep], dtype=np.int32)
    blocked = occluded(tree, kept_nodes)

    elements: list[TreeElement] = []
    for new, old in enumerate(keep):
        node = cand_nodes[old]
        b = int(bits[node])
        base = node * nf
        own = pieces[old]
        if not own and b & fastpath.B_EDITABLE and strings[base + fastpath.F_HINT]:
            own.append(_piece(strings[base + fastpath.F_HINT], limit))
        flags = ElementFlag((b | extra_flags.get(old, 0)) & _FLAG_MASK)
        if blocked[new]:
            flags |= ElementFlag.OCCLUDED
        cls = strings[base + fastpath.F_CLASS]
        left, top, right, bottom = boxes.get(old) or clip[node].tolist()
        elements.append(
            TreeElement(
                id=new,
                kind=kind_of(cls, b),
                text=_LABEL_SEP.join(own[: config.max_label_pieces]),
                box_px=BoxPx(left, top, right, bottom),
                flags=flags,
                resource_id=short_resource_id(strings[base + fastpath.F_RID]),
                class_name=cls,
                node=node,
            )
        )

    hidden: set[int] = set()
    if elements:
        visible = [e for e in elements if not e.flags & ElementFlag.OCCLUDED]
        kinds: dict[str, int] = {}
        group = [int(raw.parent[e.node]) for e in visible]
        kind = [kinds.setdefault(e.class_name, len(kinds)) for e in visible]
        hide, more = fastpath.tree_list_runs(
            group, kind, [e.box_px.width for e in visible], [e.box_px.height for e in visible],
            keep=config.list_keep, min_run=config.min_list_run,
        )
        for e, h, m in zip(visible, hide.tolist(), more.tolist(), strict=True):
            if h:
                hidden.add(e.id)
            if m:
                elements[e.id] = _with_more(e, m)
    return Clusters(
        elements=tuple(elements), element_of_node=element_of_node, hidden=frozenset(hidden)
    )


_BORROWERS = ElementFlag.CHECKABLE | ElementFlag.EDITABLE


def _borrow_labels(
    tree: CleanTree,
    nodes: list[int],
    pieces: list[list[str]],
    is_root: npt.NDArray[np.bool_],
    actionable: npt.NDArray[np.bool_],
) -> list[int]:
    """Give an unlabelled switch, checkbox or input the static text on its row.

    Settings rows often put the title in a plain TextView and the switch in a clickable of its
    own; without the title the model cannot tell what the switch does. The nearest text that
    shares the row (its vertical centre inside the control's row, on the same side of the
    screen's window) moves into the control's label. Returns, for each candidate, the candidate
    it now belongs to (itself unless borrowed).
    """
    remap = list(range(len(nodes)))
    bits = tree.bits
    borrowers = [
        k for k, node in enumerate(nodes)
        if is_root[node] and not pieces[k] and bits[node] & _BORROWERS
    ]
    if not borrowers:
        return remap
    clip = tree.clip_px
    parent = tree.raw.parent
    texts = [k for k, node in enumerate(nodes) if not actionable[node] and pieces[k]]
    width = max(1, tree.screen.width_px)
    for k in borrowers:
        left, top, right, bottom = clip[nodes[k]].tolist()
        best, best_gap = -1, width * 6 // 10
        for t in texts:
            if remap[t] != t:
                continue
            tl, tt, tr, tb = clip[nodes[t]].tolist()
            centre = (tt + tb) // 2
            if not top <= centre < bottom and not tt <= (top + bottom) // 2 < tb:
                continue
            if _window_of(parent, nodes[t]) != _window_of(parent, nodes[k]):
                continue
            gap = left - tr if tr <= left else (tl - right if tl >= right else 0)
            if 0 <= gap < best_gap:
                best, best_gap = t, gap
        if best >= 0:
            remap[best] = k
            pieces[k].extend(pieces[best])
    return remap


def _merge_nested_roots(
    tree: CleanTree,
    nodes: list[int],
    pieces: list[list[str]],
    is_root: npt.NDArray[np.bool_],
    remap: list[int],
) -> dict[int, int]:
    """An unlabelled clickable wrapper with the same box as a root inside it is one target:
    the wrapper folds into the inner root (which keeps the wrapper's flags). Returns the extra
    flags per surviving candidate."""
    extra: dict[int, int] = {}
    clip = tree.clip_px
    end = tree.end
    bits = tree.bits
    pos = {node: k for k, node in enumerate(nodes)}
    for k, node in enumerate(nodes):
        if not is_root[node] or pieces[k] or remap[k] != k:
            continue
        box = clip[node].tolist()
        for inner in range(node + 1, int(end[node])):
            j = pos.get(inner)
            if j is None or not is_root[inner] or remap[j] != j:
                continue
            if clip[inner].tolist() == box:
                remap[k] = j
                extra[j] = extra.get(j, 0) | int(bits[node]) | extra.pop(k, 0)
                break
    return extra


def _merge_static_text(
    tree: CleanTree,
    nodes: list[int],
    pieces: list[list[str]],
    actionable: npt.NDArray[np.bool_],
    remap: list[int],
) -> dict[int, list[int]]:
    """Merge consecutive static texts that share a parent (a card's title and body, a list
    row's two lines) into one element whose box is their union. Returns the merged boxes."""
    boxes: dict[int, list[int]] = {}
    parent = tree.raw.parent
    clip = tree.clip_px
    head = -1
    for k, node in enumerate(nodes):
        if actionable[node] or remap[k] != k or not pieces[k]:
            head = -1
            continue
        if head >= 0 and parent[node] == parent[nodes[head]] and parent[node] >= 0:
            remap[k] = head
            for piece in pieces[k]:
                _add_piece(pieces[head], piece)
            box = boxes.setdefault(head, clip[nodes[head]].tolist())
            left, top, right, bottom = clip[node].tolist()
            box[0], box[1] = min(box[0], left), min(box[1], top)
            box[2], box[3] = max(box[2], right), max(box[3], bottom)
            continue
        head = k
    return boxes


def _window_of(parent: npt.NDArray[np.int32], node: int) -> int:
    while parent[node] >= 0:
        node = int(parent[node])
    return node


def _with_more(e: TreeElement, more: int) -> TreeElement:
    return TreeElement(
        id=e.id,
        kind=e.kind,
        text=e.text,
        box_px=e.box_px,
        flags=e.flags,
        resource_id=e.resource_id,
        class_name=e.class_name,
        node=e.node,
        more=more,
    )
