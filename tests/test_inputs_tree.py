"""``read_tree`` takes what callers really hand it, and refuses the rest with a typed error.

Paths (``os.PathLike`` or a one-line str without ``<``), UTF-16 and UTF-8-BOM text, a given
screen that does not fit the dump, out-of-range screen sizes, wrong argument types, limits and
dumps without usable bounds. Every test runs on both kernel twins.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from _xml import dump, node, screen

import perception
from perception import (
    DumpFailedError,
    InputError,
    ScreenMismatchError,
    ScreenSize,
    TreeParseError,
    UnsafeXmlError,
    read_tree,
)
from perception.config import TreeConfig
from perception.tree.parse import RawTree, dump_source, parse_dump

pytestmark = pytest.mark.usefixtures("pipeline_impl")

BUTTON = node((100, 200, 500, 300), text="Save", clickable=True, cls="android.widget.Button")
SCREEN_XML = screen(BUTTON)  # one 1080x2400 window


def labels(xml: object, **kw: object) -> list[str]:
    return [e.text for e in read_tree(xml, **kw).elements]  # type: ignore[arg-type]


def same_raw(a: RawTree, b: RawTree) -> None:
    assert a.strings == b.strings and a.rotation == b.rotation
    for name in ("parent", "box_px", "bits", "draw", "class_id"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


# --- 1. paths --------------------------------------------------------------------------------


def test_a_path_is_read(tmp_path: Path) -> None:
    f = tmp_path / "dump.xml"
    f.write_bytes(SCREEN_XML)
    assert labels(f) == labels(str(f)) == labels(SCREEN_XML) == ["Save"]
    assert dump_source(f) == SCREEN_XML and dump_source(str(f)) == SCREEN_XML


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope.xml"
    with pytest.raises(InputError, match=r"cannot read the dump '.*nope\.xml': No such file") as a:
        read_tree(str(missing))
    assert "taken for a file path" in str(a.value)
    assert not isinstance(a.value, perception.TreeError)  # a caller's mistake, not a bad dump
    with pytest.raises(InputError, match="No such file"):
        read_tree(missing)
    with pytest.raises(InputError, match="Is a directory"):
        read_tree(tmp_path)


def test_content_is_never_taken_for_a_path() -> None:
    text = SCREEN_XML.decode()
    assert dump_source(text) is text and dump_source(SCREEN_XML) is SCREEN_XML
    # What a failed dump prints stays a failed dump, never "no such file".
    with pytest.raises(DumpFailedError, match="killed"):
        read_tree("Killed")
    with pytest.raises(DumpFailedError, match="never idle"):
        read_tree("ERROR: could not get idle state.")
    with pytest.raises(DumpFailedError, match="empty"):
        read_tree("")
    with pytest.raises(TreeParseError, match="no <hierarchy>"):
        read_tree("UI hierchary dumped to: /sdcard/window_dump.xml")


def test_bytes_naming_a_file_stay_bytes_with_a_hint(tmp_path: Path) -> None:
    f = tmp_path / "dump.xml"
    f.write_bytes(SCREEN_XML)
    with pytest.raises(TreeParseError, match="name a file; pass the path as a str"):
        read_tree(str(f).encode())


def test_perceive_names_the_missing_file_the_same_way(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.xml")
    with pytest.raises(InputError) as direct:
        read_tree(missing)
    with pytest.raises(InputError) as fused:
        perception.perceive(xml=missing)
    assert str(fused.value) == str(direct.value)


# --- 2. encodings ----------------------------------------------------------------------------

EMOJI = node((0, 400, 1080, 500), text="caf\u00e9 \u4e2d\u6587 \U0001f600", clickable=True)


@pytest.mark.parametrize(
    "encode",
    [
        lambda t: "\ufeff".encode("utf-16-le") + t.encode("utf-16-le"),
        lambda t: "\ufeff".encode("utf-16-be") + t.encode("utf-16-be"),
        lambda t: t.encode("utf-16"),  # the platform's order, with a BOM
        lambda t: t.encode("utf-16-le"),  # no BOM: recognised by its NUL pattern
        lambda t: t.encode("utf-16-be"),
        lambda t: b"\xef\xbb\xbf" + t.encode("utf-8"),
    ],
    ids=["utf16le-bom", "utf16be-bom", "utf16", "utf16le", "utf16be", "utf8-bom"],
)
def test_utf16_and_bom_dumps_read_as_utf8(encode: object) -> None:
    text = screen(BUTTON, EMOJI).decode("utf-8")
    data = encode(text)  # type: ignore[operator]
    same_raw(parse_dump(data), parse_dump(text.encode("utf-8")))
    assert labels(data) == ["Save", "caf\u00e9 \u4e2d\u6587 \U0001f600"]


def test_powershell_redirect_of_a_real_dump(corpus_dir: Path) -> None:
    real = (corpus_dir / "dumps" / "Nora__ui.xml").read_bytes()
    utf16 = b"\xff\xfe" + real.decode("utf-8").encode("utf-16-le")
    same_raw(parse_dump(utf16), parse_dump(real))


def test_binary_with_nuls_is_still_binary() -> None:
    with pytest.raises(TreeParseError, match="holds NUL bytes"):
        read_tree(bytes(range(256)) * 4)


# --- 3, 4. the given screen ------------------------------------------------------------------


@pytest.mark.parametrize("size", [(540, 1200), (10, 10), (1080, 1900)])
def test_a_screen_too_small_for_the_windows_is_refused(size: tuple[int, int]) -> None:
    with pytest.raises(ScreenMismatchError, match="windows reach 1080x2400 px") as info:
        read_tree(SCREEN_XML, screen=ScreenSize(*size))
    assert "larger screen" in str(info.value)


def test_a_transposed_screen_is_named() -> None:
    with pytest.raises(ScreenMismatchError, match="they fit 1080x2400, the size transposed"):
        read_tree(SCREEN_XML, screen=ScreenSize(2400, 1080))
    landscape = dump(node((0, 0, 2400, 1080), BUTTON), rotation=1)
    with pytest.raises(ScreenMismatchError, match="fit 2400x1080.*landscape"):
        read_tree(landscape, screen=ScreenSize(1080, 2400))


def test_screens_that_hold_the_windows_are_accepted() -> None:
    assert labels(SCREEN_XML, screen=ScreenSize(1080, 2400)) == ["Save"]
    # Windows a bar's height past the screen (a status bar the size leaves out) are clipped.
    assert labels(SCREEN_XML, screen=ScreenSize(1080, 2340)) == ["Save"]
    # A dialog dumped alone covers less than the screen.
    dialog = dump(node((100, 800, 980, 1400), BUTTON))
    assert labels(dialog, screen=ScreenSize(1080, 2400)) == ["Save"]
    assert read_tree(b'<hierarchy rotation="0"/>', screen=ScreenSize(1080, 2400)).empty


@pytest.mark.parametrize(
    "size", [(0, 0), (0, 2400), (-1080, 2400), (1080, -1), (10**20, 2), (65536, 100)]
)
def test_screen_sizes_out_of_range_are_refused(size: tuple[int, int]) -> None:
    with pytest.raises(InputError, match="each side must be 1 to 65535 px"):
        read_tree(SCREEN_XML, screen=ScreenSize(*size))


def test_a_screen_of_non_integers_is_refused() -> None:
    with pytest.raises(InputError, match="whole pixels"):
        read_tree(SCREEN_XML, screen=ScreenSize(1080.5, 2400))  # type: ignore[arg-type]
    with pytest.raises(InputError, match="whole pixels"):
        read_tree(SCREEN_XML, screen=(1080, 2400))  # type: ignore[arg-type]


# --- 6. limits -------------------------------------------------------------------------------


def test_node_limit_says_the_limit_and_the_count() -> None:
    with pytest.raises(UnsafeXmlError, match=r"21 <node> elements .* the limit is 10"):
        read_tree(screen(*[BUTTON] * 20), config=TreeConfig(max_nodes=10))


@pytest.mark.parametrize(("levels", "limit"), [(20, 10), (300, 200)])
def test_depth_limit_says_the_limit(levels: int, limit: int) -> None:
    deep = node((0, 0, 10, 10))
    for _ in range(levels):
        deep = node((0, 0, 10, 10), deep)
    with pytest.raises(UnsafeXmlError, match=f"nesting deeper than the limit of {limit} levels"):
        read_tree(dump(deep), config=TreeConfig(max_depth=limit))


# --- 7. argument types -----------------------------------------------------------------------


@pytest.mark.parametrize("bad", [None, 5, 1.5, ["<hierarchy/>"]], ids=repr)
def test_wrong_argument_types_are_typed_errors(bad: object) -> None:
    with pytest.raises(InputError, match=r"a dump is bytes, a str \(XML text or a file path\)"):
        read_tree(bad)  # type: ignore[arg-type]


def test_an_open_file_is_refused_with_a_hint(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"not BytesIO \(read the file first"):
        read_tree(io.BytesIO(SCREEN_XML))  # type: ignore[arg-type]


def test_bytearray_and_memoryview_are_bytes() -> None:
    assert labels(bytearray(SCREEN_XML)) == labels(memoryview(SCREEN_XML)) == ["Save"]


# --- 9. bounds -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bounds", ["garbage", "[0,0,1080,200]", "[0.5,300][1080,500]", "[0,0][99999999999,9]"]
)
def test_a_dump_without_usable_bounds_is_an_error(bounds: str) -> None:
    bad = dump(f'<node text="A" clickable="true" bounds="{bounds}"/>')
    with pytest.raises(TreeParseError, match=r"no node of the dump has usable bounds \(1 node;"):
        read_tree(bad)
    with pytest.raises(TreeParseError, match="usable bounds"):
        read_tree(bad, screen=ScreenSize(1080, 2400))


def test_a_dump_without_bounds_attributes_is_an_error() -> None:
    with pytest.raises(TreeParseError, match="no bounds attribute at all"):
        read_tree(b'<hierarchy rotation="0"><node text="a"/><node text="b"/></hierarchy>')


def test_a_few_malformed_nodes_are_dropped_and_counted() -> None:
    xml = screen(BUTTON, '<node text="Lost" clickable="true" bounds="[0,0,1080,200]"/>')
    tree = read_tree(xml)
    assert [e.text for e in tree.elements] == ["Save"] and tree.raw.unbounded == 1


def test_window_roots_without_bounds_leave_no_screen() -> None:
    xml = dump(f'<node bounds="garbage">{BUTTON}</node>')
    with pytest.raises(TreeParseError, match="window roots have no usable bounds"):
        read_tree(xml)
    assert labels(xml, screen=ScreenSize(1080, 2400)) == ["Save"]
