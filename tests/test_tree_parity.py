"""The compiled tree kernels and their pure-Python twins give identical results.

Real dumps from the corpus, generated documents (hypothesis), mutated bytes, and degenerate box
arrays (empty, zero-area, negative, nested, touching) go through both; arrays must be equal, and
where one twin refuses an input the other must refuse it with the same error class.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from xml.sax.saxutils import quoteattr

import numpy as np
import pytest
from conftest import requires_corpus
from hypothesis import HealthCheck, given, settings, strategies as st

from perception import ElementFlag, PerceptionError, fastpath
from perception.tree.parse import frame_documents

IMPLS = fastpath.available()
needs_both = pytest.mark.skipif(
    "cython" not in IMPLS, reason="the Cython extension is not built: nothing to compare"
)
pytestmark = needs_both
PY = IMPLS["python"]


def _cy() -> ModuleType:
    return IMPLS["cython"]


def outcome(impl: ModuleType, name: str, *args: object) -> object:
    try:
        return getattr(impl, name)(*args)
    except PerceptionError as exc:
        return type(exc)


def assert_same(a: object, b: object) -> None:
    if isinstance(a, type) or isinstance(b, type):
        assert a == b, f"one twin raised, the other did not: {a!r} vs {b!r}"
        return
    if not isinstance(a, tuple):
        a, b = (a,), (b,)
    assert isinstance(b, tuple) and len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y)
            assert x.dtype == y.dtype
        else:
            assert x == y


def both(name: str, *args: object) -> object:
    a = outcome(PY, name, *args)
    b = outcome(_cy(), name, *args)
    assert_same(a, b)
    return a


def structure_round(doc: bytes) -> None:
    # Every element a node, whatever its name (Appium's page source): the twins agree too.
    both("scan_hierarchy", doc, 200, 50_000, True)
    scanned = both("scan_hierarchy", doc, 200, 50_000)
    if isinstance(scanned, type):
        return
    _, parent, box, bits, draw, class_id, strings = scanned  # type: ignore[misc]
    for width, height in ((1080, 2400), (500, 500)):
        clip, out_bits, owner, rank, end = both(  # type: ignore[misc]
            "tree_structure", parent, box, bits, draw, width, height
        )
        nodes = np.arange(len(parent), dtype=np.int32)
        vis = (clip, out_bits, rank, end, parent, class_id)
        both("tree_visibility", *vis, nodes, clip, 4, 5, 8, 3, 2)
        both("tree_visibility", *vis, nodes[::2].copy(), clip[::2].copy(), 1, 2, 1, 0, 0)
        # piece budgets, container and page areas and label cuts: the default, tight (every
        # root over it, labels cut short), none
        for pieces, area, page, chars, rid in (
            (4, width * height // 4, width * height * 3 // 4, 40, 4), (1, 0, 0, 8, 1),
            (10_000, 1 << 40, 1 << 40, 10_000, 100),
        ):
            elements = both("tree_elements", parent, clip, out_bits, owner, end, width,
                            pieces, area, page, strings, chars, rid)
            if not isinstance(elements, type):
                el_nodes, _, el_boxes, _, _, _, _ = elements  # type: ignore[misc]
                both("tree_visibility", *vis, el_nodes, el_boxes, 4, 5, 2, 3, 2)


# --- the real corpus ---------------------------------------------------------------------------


def corpus_files() -> list[Path]:
    from conftest import CORPUS_DIR

    if not CORPUS_DIR.is_dir():
        return []
    return sorted(CORPUS_DIR.rglob("screen.xml")) + sorted((CORPUS_DIR / "dumps").glob("*.xml"))


@requires_corpus
def test_corpus_kernels_are_identical() -> None:
    files = corpus_files()
    assert len(files) > 400
    for path in files:
        for doc in frame_documents(path.read_bytes()):
            structure_round(doc)


# --- generated documents -----------------------------------------------------------------------

TEXT = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs",),
        blacklist_characters="\x00",
        min_codepoint=0x09,
        max_codepoint=0x1FFFF,
    ),
    max_size=12,
)
BOOL = st.sampled_from(["true", "false", "True", "", "1"])
COORD = st.integers(min_value=-3000, max_value=3000)
BOUNDS = st.one_of(
    st.tuples(COORD, COORD, COORD, COORD).map(lambda b: "[{},{}][{},{}]".format(*b)),
    st.sampled_from(["", "[0,0][1,1", "[a,b][c,d]", "[1,2][3,4] ", "[99999999999,0][1,1]",
                     "[-0,-0][0,0]", "[1,2][3,4][5,6]"]),
)
ATTRS = st.fixed_dictionaries(
    {},
    optional={
        "text": TEXT,
        "content-desc": TEXT,
        "resource-id": st.one_of(TEXT, st.sampled_from(["g:id/unitySurfaceView", "surfaceView",
                                                         "x:id/textureView", "urfaceVie",
                                                         "a:id/surface_view", "exture_vie"])),
        "class": st.sampled_from(["android.widget.EditText", "android.webkit.WebView",
                                  "android.view.SurfaceView", "android.widget.Button", "X"]),
        "package": TEXT,
        "hint": TEXT,
        "clickable": BOOL,
        "long-clickable": BOOL,
        "checkable": BOOL,
        "checked": BOOL,
        "enabled": BOOL,
        "focusable": BOOL,
        "focused": BOOL,
        "scrollable": BOOL,
        "password": BOOL,
        "selected": BOOL,
        "visible-to-user": BOOL,
        "displayed": BOOL,
        "drawing-order": st.one_of(st.integers(-5, 2_000_000).map(str), TEXT),
        "bounds": BOUNDS,
        "extra-attr": TEXT,
    },
)


def render(attrs: dict[str, str], children: list[str], tag: str = "node") -> str:
    head = f"<{tag}" + "".join(f" {k}={quoteattr(v)}" for k, v in attrs.items())
    return head + (">" + "".join(children) + f"</{tag}>" if children else " />")


NODES = st.recursive(
    ATTRS.map(lambda a: render(a, [])),
    lambda kids: st.tuples(ATTRS, st.lists(kids, max_size=4),
                           st.sampled_from(["node", "x", "n\u00f6de", "\u0443\u0437\u0435\u043b",
                                            "android.widget.Button", "a.B-c_1"]))
    .map(lambda t: render(t[0], t[1], t[2])),
    max_leaves=25,
)
DOCS = st.tuples(
    st.lists(NODES, max_size=4),
    st.sampled_from(['rotation="0"', 'rotation="3"', 'rotation="9"', "", 'rotation="x"']),
    st.sampled_from(["", "\n  ", "<!-- note -->", "<?pi data?>", "&#10;"]),
).map(lambda t: f"<hierarchy {t[1]}>{t[2]}{''.join(t[0])}</hierarchy>".encode())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCS)
def test_generated_documents(doc: bytes) -> None:
    structure_round(doc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCS, st.data())
def test_truncated_and_mutated_documents(doc: bytes, data: st.DataObject) -> None:
    cut = data.draw(st.integers(0, len(doc)))
    structure_round(doc[:cut])
    pos = data.draw(st.integers(0, max(0, len(doc) - 1)))
    byte = data.draw(st.sampled_from(list(b"<>/=\"'&;# \n\x01\x00\xff\xc3\xed\xb7\x80")))
    structure_round(doc[:pos] + bytes([byte]) + doc[pos + 1 :])


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1, max_size=4), st.text(min_size=1, max_size=4))
def test_any_element_and_attribute_name(tag: str, attr: str) -> None:
    """Names may hold any letter XML allows (lxml's rules); the compiled scanner agrees."""
    for name in (tag, "n" + tag):
        doc = f'<hierarchy><{name} {attr}="v" text="a"></{name}></hierarchy>'
        structure_round(doc.encode("utf-8", "surrogatepass"))


def test_known_tricky_documents() -> None:
    for doc in (
        b"<hierarchy/>",
        b"<hierarchy></hierarchy>",
        b'<hierarchy rotation="1"><node/></hierarchy>',
        b"<hierarchy><node><x><node/></x></node></hierarchy>",
        b'<hierarchy><node text="a&#x1F600;b&#65;&lt;&gt;&amp;&quot;&apos;"/></hierarchy>',
        b'<hierarchy><node text="\r\n\t x"/></hierarchy>',
        b'<hierarchy><node text="&#0;"/></hierarchy>',
        b'<hierarchy><node text="&#xD800;"/></hierarchy>',
        b'<hierarchy><node text="\xef\xbf\xbe"/></hierarchy>',
        b'<hierarchy><node text="\xc0\xaf"/></hierarchy>',
        b"<hierarchy><!-- a -- b --></hierarchy>",
        b"<hierarchy><?xml version='1.0'?></hierarchy>",
        b"<hierarchy>]]></hierarchy>",
        b"<hierarchy><node></nod></hierarchy>",
        b"<hierarchy></hierarchy><hierarchy/>",
        b"<hierarchy><![CDATA[x]]></hierarchy>",
        b'<hierarchy><node text="a" text="a"/></hierarchy>',
        b'<hierarchy><node zz="a" zz="b"/></hierarchy>',
        b'<hierarchy><node bounds="[1,2][3,4]" drawing-order="7" /></hierarchy>',
        # non-ASCII names: U+FFFD (a repaired byte), U+00D7 (not a name character), U+00B7
        # (a name character, not a start), a combining mark
        "<hierarchy><n\ufffd\ufffdde/><node text='a'/></hierarchy>".encode(),
        "<hierarchy><n\u00d7de/></hierarchy>".encode(),
        "<hierarchy><n\u00b7 a\u0300='1'/><\u00b7/></hierarchy>".encode(),
        # the package cache must not hand a decoded value to a later raw span of equal length
        b'<hierarchy><node package=""/><node package="&#13;"><node package=""/></node></hierarchy>',
        b'<hierarchy><node package="ab"/><node package="&#97;b"/><node package="ab"/></hierarchy>',
        # a <hierarchy> inside the document: refused by both (framing cuts dumps apart before)
        b'<hierarchy><node text="a"/><hierarchy><node text="b"/></hierarchy></hierarchy>',
        b'<hierarchy><node><hierarchy/></node></hierarchy>',
    ):
        structure_round(doc)


# --- degenerate arrays -------------------------------------------------------------------------

BOXES = st.lists(
    st.tuples(*(st.integers(-50, 1200),) * 4), min_size=0, max_size=40
)


@settings(max_examples=200, deadline=None)
@given(BOXES, st.data())
def test_structure_and_occlusion_on_arbitrary_forests(
    boxes: list[tuple[int, int, int, int]], data: st.DataObject
) -> None:
    n = len(boxes)
    parent = [data.draw(st.integers(-1, i - 1)) for i in range(n)]
    # raw bits as the scanner sets them (below DROPPED), plus the list-class bit
    bits = [data.draw(st.integers(0, (1 << 25) - 1) | st.sampled_from([0, fastpath.B_LIST]))
            for _ in range(n)]
    draw = [data.draw(st.integers(-1, 3)) for _ in range(n)]
    arrays = (
        np.array(parent, dtype=np.int32),
        np.array(boxes, dtype=np.int32).reshape(n, 4),
        np.array(bits, dtype=np.int32),
        np.array(draw, dtype=np.int32),
    )
    clip, out_bits, owner, rank, end = both(  # type: ignore[misc]
        "tree_structure", *arrays, 1080, 1000
    )
    nodes = np.arange(n, dtype=np.int32)
    class_id = np.array([data.draw(st.integers(0, 2)) for _ in range(n)], dtype=np.int32)
    vis = (clip, out_bits, rank, end, arrays[0], class_id)
    both("tree_visibility", *vis, nodes, clip, 4, 5, 2, 2, 3)
    pieces = data.draw(st.integers(1, 6))
    area = data.draw(st.integers(0, 1080 * 1000))
    page = data.draw(st.integers(0, 1080 * 1000))
    # the bit cluster sets on roots whose resource id is their label
    named = np.array([data.draw(st.booleans()) for _ in range(n)], dtype=bool)
    marked = np.where(named, out_bits | fastpath.B_NAMED, out_bits).astype(np.int32)
    strings = data.draw(st.lists(LABEL_TEXT, min_size=n * fastpath.NFIELDS,
                                 max_size=n * fastpath.NFIELDS))
    chars = data.draw(st.integers(1, 14))
    rid = data.draw(st.integers(0, 8))
    both("tree_elements", arrays[0], clip, marked, owner, end, 1080, pieces, area, page,
         strings, chars, rid)


# Label text as apps write it: white space runs, bidi marks, combining marks, emoji sequences
# (ZWJ, skin tones, flags), ellipses, CJK, spelled digits, pieces inside other pieces.
LABEL_TEXT = st.one_of(
    st.just(""),
    st.text(alphabet=st.sampled_from(
        list("ab 1\t\n\r…·")
        + ["\u200e", "\u2068", "\u2069", "\u0301", "\u200d", "\ufe0f", "\U0001f3fd",
           "\U0001f1e9", "\U0001f1ea", "\U0001f468", "\u4e2d", "\u3002", "\uac00",
           "\U0001f3f4", "\U000e0067", "\U000e0062", "\U000e007f", "\U000e0001"]
    ), max_size=24),
    st.sampled_from(["Pictures", "Pictures, Tab 1 of 2.", "5 7 0 5", "5 7 0 5 3", "57053",
                     "  Save  ", "OK", "OK…", "com.app:id/btn_save", "id/ab", "x/", "/"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(LABEL_TEXT, LABEL_TEXT, st.integers(-30, 40), st.integers(-3, 3),
                          st.booleans()), min_size=1, max_size=8),
       st.integers(1, 5), st.integers(1, 45), st.booleans(), st.booleans())
def test_labels_of_texts_on_one_line(
    texts: list[tuple[str, str, int, int, bool]], pieces: int, chars: int, editable: bool,
    bits_lie: bool,
) -> None:
    """A clickable row (or an input, with a hint) over texts side by side on one line, with
    gaps, overlaps and slight offsets: the glue between them, the cut, the repeats and the
    cap give the same labels in both twins; also where the bits say a node has text and its
    string is empty (the compiled twin runs without bounds checks)."""
    root = (fastpath.B_EDITABLE | fastpath.B_HAS_HINT) if editable else 1
    _row_labels_in_both(root, ["", "", "", "android.widget.Button", "app", "a hint  "], texts,
                        pieces, chars, bits_lie)


def _row_labels_in_both(
    root_bits: int, root_strings: list[str], texts: list[tuple[str, str, int, int, bool]],
    pieces: int, chars: int, bits_lie: bool = False,
) -> None:
    """A clickable root (``root_bits``, its six strings) over texts side by side on one line
    (text, description, gap before the next, vertical offset, whether the description is
    set): both twins' elements and labels are the same. ``bits_lie``: a text's bit is set
    where its string is empty."""
    n = len(texts) + 1
    parent = np.array([-1] + [0] * len(texts), dtype=np.int32)
    boxes, left = [[0, 0, 1080, 200]], 10
    for _, _, gap, dy, _ in texts:
        boxes.append([left, 50 + dy, left + 60, 110 + dy])
        left += 60 + gap
    bits = [root_bits | fastpath.B_HAS_BOUNDS]
    strings = list(root_strings)
    for text, desc, _, _, with_desc in texts:
        desc = desc if with_desc else ""
        bits.append(fastpath.B_HAS_BOUNDS | (fastpath.B_HAS_TEXT if text or bits_lie else 0)
                    | (fastpath.B_HAS_DESC if desc else 0))
        strings += [text, desc, "", "android.widget.TextView", "app", ""]
    clip, out_bits, owner, _, end = both(  # type: ignore[misc]
        "tree_structure", parent, np.array(boxes, dtype=np.int32),
        np.array(bits, dtype=np.int32), np.full(n, -1, np.int32), 1080, 2400
    )
    both("tree_elements", parent, clip, out_bits, owner, end, 1080, pieces, 1 << 40, 1 << 40,
         strings, chars, 4)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(LABEL_TEXT, LABEL_TEXT, st.integers(-30, 40), st.integers(-3, 3),
                          st.booleans()), min_size=2, max_size=6),
       st.lists(st.sampled_from(["", ", ", ",  on ", "Unread, ", "\n", "  ", ", , , ", "ab "]),
                min_size=1, max_size=6),
       st.integers(0, 2), st.integers(1, 5), st.integers(8, 45))
def test_labels_of_a_row_summarising_its_texts(
    texts: list[tuple[str, str, int, int, bool]], joins: list[str], own: int, pieces: int,
    chars: int,
) -> None:
    """A clickable row whose own text, description or both join the texts inside it (with
    empty fields, connectors, a word of its own, white space; the summary rule): the same
    labels in both twins."""
    summary = "".join(
        joins[k % len(joins)] + text for k, (text, _, _, _, _) in enumerate(texts)
    )
    text, desc = (summary, "") if own == 0 else ("", summary) if own == 1 else (summary, summary)
    root = 1 | (fastpath.B_HAS_TEXT if text else 0) | (fastpath.B_HAS_DESC if desc else 0)
    _row_labels_in_both(root, [text, desc, "", "android.view.ViewGroup", "app", ""], texts,
                        pieces, chars)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 2), st.integers(0, 2), st.integers(0, 6),
                          st.integers(0, 6), st.booleans()), max_size=40),
       st.integers(1, 5), st.integers(0, 6), st.integers(0, 3))
def test_list_runs(rows: list[tuple[int, int, int, int, bool]], keep: int, min_run: int,
                   slack: int) -> None:
    """Runs over elements that nothing occludes (no blockers), parent, class and the scrollable
    bit per node (a parent may come after its child here: both twins read it as not yet set)."""
    n = len(rows)
    parent = np.array([min(r[0], n - 1) for r in rows], dtype=np.int32)
    class_id = np.array([r[1] for r in rows], dtype=np.int32)
    boxes = np.array([(0, 0, r[2], r[3]) for r in rows], dtype=np.int32).reshape(n, 4)
    scrollable = int(ElementFlag.SCROLLABLE)
    bits = np.array([scrollable if r[4] else 0 for r in rows], dtype=np.int32)
    zeros = np.zeros(n, dtype=np.int32)
    nodes = np.arange(n, dtype=np.int32)
    out = both("tree_visibility", boxes, bits, zeros, nodes + 1, parent, class_id, nodes, boxes,
               4, 5, keep, min_run, slack)
    assert not isinstance(out, type) and not out[0].any()  # type: ignore[index]


SIDE = st.integers(-1_000_000_000, 1_000_000_000)


@given(st.lists(st.tuples(SIDE, SIDE, SIDE, SIDE, st.integers(0, 3)), max_size=30),
       st.integers(1, 5000), st.integers(1, 5000), st.integers(0, 3))
def test_big_actions(rows: list[tuple[int, int, int, int, int]], width: int, height: int,
                     mask: int) -> None:
    """The page-sized actions: the same nodes from both twins on any boxes, inverted and
    out-of-screen ones and sides near the bounds' limit included (no overflow)."""
    box = np.array([r[:4] for r in rows], dtype=np.int32).reshape(-1, 4)
    bits = np.array([r[4] for r in rows], dtype=np.int32)
    found = both("tree_big_actions", box, bits, mask, width, height)
    assert found == [
        i for i, (left, top, right, bottom, b) in enumerate(rows)
        if b & mask and 2 * (right - left) >= width and 2 * (bottom - top) >= height
    ]


def test_degenerate_inputs() -> None:
    empty = np.zeros(0, dtype=np.int32)
    both("tree_structure", empty, np.zeros((0, 4), dtype=np.int32), empty, empty, 1080, 2400)
    box0 = np.zeros((0, 4), dtype=np.int32)
    both("tree_visibility", box0, empty, empty, empty, empty, empty, empty, box0, 4, 5, 8, 3, 2)
    both("tree_elements", empty, np.zeros((0, 4), dtype=np.int32), empty, empty, empty, 1080,
         4, 0, 0, [], 40, 4)
    one = np.zeros(1, dtype=np.int32)
    for impl in IMPLS.values():  # fewer strings than the nodes need: refused, never read
        with pytest.raises(ValueError, match="NFIELDS"):
            impl.tree_elements(one - 1, np.zeros((1, 4), dtype=np.int32), one, one, one + 1,
                               1080, 4, 0, 0, [""] * 5, 40, 4)
    # zero-area, touching, nested, negative
    boxes = np.array([[0, 0, 100, 100], [100, 0, 200, 100], [10, 10, 90, 90],
                      [-100, -100, -10, -10], [50, 50, 50, 80]], dtype=np.int32)
    parent = np.array([-1, -1, 0, -1, 0], dtype=np.int32)
    bits = np.array([1, 1, 1, 1 << 24, 1], dtype=np.int32)
    out = both("tree_structure", parent, boxes, bits, np.full(5, -1, np.int32), 1080, 2400)
    clip, out_bits, owner, rank, end = out  # type: ignore[misc]
    assert (out_bits[[3, 4]] & fastpath.B_DROPPED).all()
    assert owner.tolist() == [0, 1, 2, -1, 0]
    assert end.tolist() == [3, 2, 3, 4, 5] or end.tolist()[0] == 5


def test_bad_bytes_in_comments_and_instructions() -> None:
    for doc in (
        b"<hierarchy><!-- \xff --></hierarchy>",
        b"<hierarchy><!-- \x01 --></hierarchy>",
        b"<hierarchy><?pi \xff?></hierarchy>",
        b"<hierarchy><?pi \x02?></hierarchy>",
        b"<hierarchy><?pi ok \xc3\xa9?><!-- ok \xc3\xa9 --></hierarchy>",
        b"<hierarchy><![CDATA[\xff]]></hierarchy>",
        b"<hierarchy><![CDATA[ok]]></hierarchy>",
        b"<hierarchy/><![CDATA[x]]>",
    ):
        structure_round(doc)
