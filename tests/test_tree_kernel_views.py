"""The tree kernels that hand back several arrays cut from one buffer (``scan_hierarchy``'s
columns, ``tree_structure``'s results) hand back arrays that do not overlap, each C-contiguous
``int32`` of its own shape, in both twins: writing into one leaves the others as they were."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from perception import fastpath

IMPLS = fastpath.available()


def _node(bounds: str, clickable: str = "false", inner: str = "") -> str:
    return (
        f'<node index="0" text="t" resource-id="" class="android.widget.TextView" package="app" '
        f'content-desc="" checkable="false" checked="false" clickable="{clickable}" '
        f'enabled="true" focusable="false" focused="false" scrollable="false" '
        f'long-clickable="false" password="false" selected="false" bounds="{bounds}">'
        f"{inner}</node>"
    )


DOCS = {
    "three nodes": (
        '<hierarchy rotation="0">'
        + _node("[0,0][1080,2400]", inner=_node("[0,0][540,200]", "true") + _node("[0,200][9,9]"))
        + "</hierarchy>"
    ).encode(),
    "no node": b'<hierarchy rotation="0"/>',
}


def _separate(arrays: Sequence[np.ndarray], shapes: Sequence[tuple[int, ...]]) -> None:
    for a, shape in zip(arrays, shapes, strict=True):
        assert a.dtype == np.int32
        assert a.shape == shape
        assert a.flags.c_contiguous
    for i, a in enumerate(arrays):
        for b in arrays[i + 1 :]:
            assert not np.shares_memory(a, b)
    for k, a in enumerate(arrays):
        others = [b.copy() for j, b in enumerate(arrays) if j != k]
        a[...] = -5
        for b, was in zip([b for j, b in enumerate(arrays) if j != k], others, strict=True):
            np.testing.assert_array_equal(b, was)


@pytest.mark.parametrize("impl", sorted(IMPLS))
@pytest.mark.parametrize("doc", sorted(DOCS))
def test_results_do_not_overlap(impl: str, doc: str) -> None:
    kernels = IMPLS[impl]
    _, *columns, strings = kernels.scan_hierarchy(DOCS[doc], 200, 100, False)
    parent, box, bits, draw, _ = columns
    n = len(parent)
    assert n == (3 if doc == "three nodes" else 0)
    assert len(strings) == n * fastpath.NFIELDS
    structure = kernels.tree_structure(parent, box, bits, draw, 1080, 2400)
    _separate(structure, [(n, 4), (n,), (n,), (n,), (n,)])
    _separate(columns, [(n,), (n, 4), (n,), (n,), (n,)])
