"""The fusion's element table: its columns read by fusion_columns (both twins) are the
elements' own fields, and its digest tells contents apart as before."""

from __future__ import annotations

from types import ModuleType, SimpleNamespace

import pytest

from perception.fusion.table import ElementTable
from perception.types import BoxPx, ElementFlag, TreeElement

NAMES = ("kind", "text", "box_px", "flags")


def _elements(n: int) -> list[TreeElement]:
    return [
        TreeElement(
            id=i + 1,
            kind=("btn", "text", "img")[i % 3],
            text=f"Label {i}" if i % 4 else "",
            box_px=BoxPx(i, 2 * i, i + 40, 2 * i + 30),
            flags=ElementFlag.CLICKABLE if i % 2 else ElementFlag.NONE,
            class_name="android.widget.TextView",
        )
        for i in range(n)
    ]


class _Loud(TreeElement):
    """A subclass with its own attribute lookup: read by it."""

    __slots__ = ()

    def __getattribute__(self, name: str) -> object:
        value = object.__getattribute__(self, name)
        return value.upper() if name == "text" else value  # type: ignore[attr-defined]


def test_columns_are_the_fields(fastpath_impl: ModuleType) -> None:
    elements = _elements(37)
    got = fastpath_impl.fusion_columns(TreeElement, NAMES, elements)
    assert got == [[getattr(e, name) for e in elements] for name in NAMES]
    assert all(type(c) is list for c in got)
    assert got[2][5] is elements[5].box_px and got[3][1] is elements[1].flags
    assert fastpath_impl.fusion_columns(TreeElement, NAMES, ()) == [[], [], [], []]
    assert fastpath_impl.fusion_columns(TreeElement, (), elements) == []


def test_columns_of_other_items_by_getattr(fastpath_impl: ModuleType) -> None:
    # Another class (a tree reader's own records) or a subclass: their attributes, as read.
    base = _elements(3)
    loud = _Loud(id=9, kind="text", text="quiet", box_px=BoxPx(0, 0, 5, 5), flags=ElementFlag.NONE)
    other = SimpleNamespace(kind="btn", text="duck", box_px=BoxPx(1, 1, 2, 2), flags=0)
    items = [base[1], loud, other, base[2]]
    got = fastpath_impl.fusion_columns(TreeElement, NAMES, items)
    assert got[1] == [base[1].text, "QUIET", "duck", base[2].text]
    assert got[0] == ["text", "text", "btn", "img"]
    # The class asked for has a lookup of its own: every item goes through it.
    assert fastpath_impl.fusion_columns(_Loud, ("text",), [loud, loud]) == [["QUIET", "QUIET"]]
    with pytest.raises(AttributeError):
        fastpath_impl.fusion_columns(TreeElement, NAMES, [object()])


class _Greedy:
    """An item whose attribute lookup empties the list it came in."""

    __slots__ = ("bag", "text")

    def __init__(self, bag: list[object], text: str) -> None:
        self.bag, self.text = bag, text

    def __getattribute__(self, name: str) -> object:
        bag = object.__getattribute__(self, "bag")
        bag.clear()
        return object.__getattribute__(self, name)


def test_columns_read_the_items_as_called_with(fastpath_impl: ModuleType) -> None:
    # A getattr that empties the list mid-way (the compiled loop held a pointer into it).
    bag: list[object] = []
    bag += [_Greedy(bag, f"t{i}") for i in range(200)]
    snapshot = list(bag)
    got = fastpath_impl.fusion_columns(TreeElement, ("text",), bag)
    assert got == [[item.text for item in snapshot]]  # type: ignore[attr-defined]


class _Bare:
    """A plain ``__slots__`` class: the compiled twin reads its slots in place."""

    __slots__ = ("kind", "text")


def test_columns_read_slots_in_place(fastpath_impl: ModuleType) -> None:
    # A slot read where its descriptor keeps it; one never set raises as getattr does.
    full, half = _Bare(), _Bare()
    full.kind, full.text = "btn", "OK"
    half.kind = "img"
    got = fastpath_impl.fusion_columns(_Bare, ("kind", "text"), [full, full])
    assert got == [["btn", "btn"], ["OK", "OK"]]
    assert fastpath_impl.fusion_columns(_Bare, ("kind",), [full, half]) == [["btn", "img"]]
    with pytest.raises(AttributeError):
        fastpath_impl.fusion_columns(_Bare, ("kind", "text"), [full, half])


def test_columns_need_data_descriptors(fastpath_impl: ModuleType) -> None:
    elements = _elements(2)
    for bad in (("no_such_field",), ("__init__",), ("__slots__",), ("text", "__repr__")):
        with pytest.raises(TypeError):
            fastpath_impl.fusion_columns(TreeElement, bad, elements)
    # A property is a data descriptor too: read as the attribute.
    assert fastpath_impl.fusion_columns(TreeElement, ("clickable",), elements) == [
        [False, True]
    ]


def test_table_columns_and_digest(pipeline_impl: str) -> None:
    elements = _elements(20)
    table = ElementTable(elements)
    assert table.kinds == [e.kind for e in elements]
    assert table.texts == [e.text for e in elements]
    assert table.boxes == [e.box_px for e in elements]
    assert table.flags == [e.flags for e in elements]
    assert table.ids == [e.id for e in elements]
    assert table.mores == [e.more for e in elements]
    assert table.class_names == [e.class_name for e in elements]
    assert table.resource_ids == [e.resource_id for e in elements]
    assert len(table) == 20
    # The same content (other objects) is the same digest; any field of any element changed,
    # or two elements swapped, another.
    same = [TreeElement(**{f: getattr(e, f) for f in e.__slots__}) for e in elements]
    assert ElementTable(same).digest() == table.digest()
    changes = [
        {"kind": "tab"},
        {"text": "Label 5!"},
        {"box_px": BoxPx(5, 10, 45, 41)},
        {"flags": ElementFlag.CLICKABLE | ElementFlag.OCCLUDED},
    ]
    for change in changes:
        other = list(elements)
        fields = {f: getattr(other[5], f) for f in other[5].__slots__} | change
        other[5] = TreeElement(**fields)
        assert ElementTable(other).digest() != table.digest(), change
    swapped = list(elements)
    swapped[3], swapped[4] = swapped[4], swapped[3]
    assert ElementTable(swapped).digest() != table.digest()
    assert ElementTable(elements[:19]).digest() != table.digest()
    assert ElementTable(()).digest() == ElementTable([]).digest()
