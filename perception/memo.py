"""Memoisation of pure text functions whose keys come from the screen.

A class name or a label is the app's to choose: an app naming a view with an 8 MB class name
(``getAccessibilityClassName`` returns whatever the app says) made a plain ``lru_cache`` keep
8 MB per screen for the life of the process, up to its size in entries (gigabytes), after the
Perceiver that read it was gone. :func:`short_key_cache` caches calls whose text is at most
:data:`MAX_KEY_CHARS` long and computes longer ones each time: the results are the same, the
memory the cache can hold is bounded by ``maxsize * MAX_KEY_CHARS``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar, cast, overload

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

MAX_KEY_CHARS = 256
"""Longer than any Java class name Android ships and than the labels the prompt shows."""


def short_key_cache(maxsize: int) -> Callable[[F], F]:
    """An ``lru_cache(maxsize)`` for a function whose first argument is a screen's text,
    bypassed for texts over :data:`MAX_KEY_CHARS` characters. The wrapper keeps
    ``cache_clear`` and ``cache_info``, and has ``many(texts)``: the call on each text."""

    def wrap(fn: F) -> F:
        cached = functools.lru_cache(maxsize=maxsize)(fn)

        @functools.wraps(fn)
        def call(text: str, *args: Any) -> Any:
            if len(text) > MAX_KEY_CHARS:
                return fn(text, *args)
            return cached(text, *args)

        # many()'s results by text: when every text of a list is known (a page seen before),
        # one lookup in C a text, not an lru_cache call each (a tenth of the cost). At most
        # maxsize short texts, as the lru_cache: full, it starts over.
        known: dict[str, Any] = {}

        def many(texts: Iterable[str]) -> list[Any]:
            """``[call(text) for text in texts]`` (a one-argument function), with no Python
            call a text: a fusion's few hundred candidate texts in one."""
            texts = texts if isinstance(texts, list) else list(texts)
            try:
                return list(map(known.__getitem__, texts))
            except KeyError:
                pass  # a text not known yet (or a long one, never kept)
            out = [fn(text) if len(text) > MAX_KEY_CHARS else cached(text) for text in texts]
            if len(known) + len(out) > maxsize:
                known.clear()
            if len(out) <= maxsize:
                pairs = zip(texts, out, strict=True)
                known.update((text, r) for text, r in pairs if len(text) <= MAX_KEY_CHARS)
            return out

        call.many = many  # type: ignore[attr-defined]

        def cache_clear() -> None:
            cached.cache_clear()
            known.clear()

        call.cache_clear = cache_clear  # type: ignore[attr-defined]
        call.cache_info = cached.cache_info  # type: ignore[attr-defined]
        return cast(F, call)

    return wrap


class cached_property(Generic[T]):  # noqa: N801  (functools' name, for its drop-in use)
    """``functools.cached_property`` without the lock Python 3.11 takes on every first read
    (an ``RLock`` per property: half a microsecond each, a few a prompt; Python 3.12 dropped
    it too). Two threads reading a value first at once may both compute it: the properties it
    serves are pure functions of their object, so either answer is the same."""

    def __init__(self, func: Callable[[Any], T]) -> None:
        self.func = func
        self.attrname = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.attrname = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> cached_property[T]: ...

    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> T | cached_property[T]:
        if obj is None:
            return self
        value = self.func(obj)
        obj.__dict__[self.attrname] = value
        return value
