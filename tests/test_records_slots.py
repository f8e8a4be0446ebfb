"""``fusion_records`` writes a plain ``__slots__`` member where its descriptor would, and any
other data descriptor through its setter: the records are the same either way, on both twins."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import pytest


class _Plain:
    __slots__ = ("a", "b", "c")


class _Child(_Plain):
    """A subclass: its instances hold the base's slots."""

    __slots__ = ("d",)


class _WithProperty:
    """One slot written through a property's setter (no plain member): kept as it says."""

    __slots__ = ("_b", "a")

    @property
    def b(self) -> Any:
        return self._b

    @b.setter
    def b(self, value: Any) -> None:
        self._b = ("set", value)


class _Other:
    __slots__ = ("a",)


def _slots(cls: type, *names: str) -> tuple[Any, ...]:
    return tuple(next(k.__dict__[n] for k in cls.__mro__ if n in k.__dict__) for n in names)


def test_plain_slots_get_the_values(fastpath_impl: ModuleType) -> None:
    first = object()
    slots = _slots(_Plain, "a", "b", "c")
    (r,) = fastpath_impl.fusion_records(_Plain, slots, [first], [["x", 3]])
    assert r.a is first and r.b == "x" and r.c == 3


def test_a_base_classes_slots_are_written_in_a_subclass(fastpath_impl: ModuleType) -> None:
    out = fastpath_impl.fusion_records(
        _Child, _slots(_Child, "d", "a", "b", "c"), [1, 2], [(10, 20, 30), (11, 21, 31)]
    )
    assert [(r.d, r.a, r.b, r.c) for r in out] == [(1, 10, 20, 30), (2, 11, 21, 31)]


def test_a_property_is_written_through_its_setter(fastpath_impl: ModuleType) -> None:
    slots = (_WithProperty.__dict__["a"], _WithProperty.__dict__["b"])
    (r,) = fastpath_impl.fusion_records(_WithProperty, slots, [1], [(2,)])
    assert r.a == 1 and r.b == ("set", 2)


def test_a_slot_named_twice_keeps_the_last_value_and_drops_the_first(
    fastpath_impl: ModuleType,
) -> None:
    first, last = object(), object()
    held = sys.getrefcount(first)
    slots = _slots(_Plain, "a", "a", "b", "c")
    (r,) = fastpath_impl.fusion_records(_Plain, slots, [first], [(last, 1, 2)])
    assert r.a is last
    assert sys.getrefcount(first) == held  # the overwritten value is not leaked


def test_another_classes_slot_is_refused(fastpath_impl: ModuleType) -> None:
    slots = (_Other.__dict__["a"], *_slots(_Plain, "b", "c"))
    with pytest.raises(TypeError):
        fastpath_impl.fusion_records(_Plain, slots, [1], [(2, 3)])
