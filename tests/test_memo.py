"""The caches keyed by a screen's text keep no long key: an app chooses its class names and
labels, and a process outlives the Perceivers that read them."""

from __future__ import annotations

import gc
import tracemalloc

from _xml import screen

from perception import perceive, read_tree
from perception.memo import MAX_KEY_CHARS, short_key_cache


def test_a_long_key_is_computed_each_time_and_not_kept() -> None:
    calls: list[str] = []

    @short_key_cache(maxsize=8)
    def size(text: str, extra: int) -> int:
        calls.append(text)
        return len(text) + extra

    short, long = "a" * MAX_KEY_CHARS, "b" * (MAX_KEY_CHARS + 1)
    assert [size(short, 1), size(short, 1), size(long, 2), size(long, 2)] == [257, 257, 259, 259]
    assert calls == [short, long, long]
    assert size.cache_info().currsize == 1  # type: ignore[attr-defined]


def _screen(cls: str, label: str) -> bytes:
    return screen(
        f'<node index="0" text="{label}" resource-id="" class="{cls}" package="com.app" '
        'content-desc="" checkable="false" checked="false" clickable="true" enabled="true" '
        'focusable="true" focused="false" scrollable="false" long-clickable="false" '
        'password="false" selected="false" bounds="[0,100][1080,300]" />'
    )


def test_screens_with_megabyte_class_names_and_labels_leave_nothing_in_the_caches() -> None:
    """Four screens, each with a 1 MB class name and a 550 KB label: what stays allocated
    once they are gone is the caches' short keys (the labels as the prompt cuts them), not
    megabytes (a plain lru_cache kept every long key: 8 MB a screen with 8 MB names)."""
    perceive(xml=_screen("android.widget.Button", "Pay"))  # the root's own names, once
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for n in range(4):
            xml = _screen(f"com.app{n}." + "X" * 1_000_000 + "Button", f"Pay {n} now " * 50_000)
            assert [e.kind for e in read_tree(xml).elements] == ["btn"]  # off the long name
            assert perceive(xml=xml).candidates[0].kind == "btn"
            del xml
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 200_000, kept


def test_many_is_the_call_on_each_text_and_keeps_no_long_key() -> None:
    calls: list[str] = []

    @short_key_cache(maxsize=8)
    def shout(text: str) -> str:
        calls.append(text)
        return text.upper()

    short, long = "a" * MAX_KEY_CHARS, "b" * (MAX_KEY_CHARS + 1)
    texts = [short, long, "", short, long]
    assert shout.many(texts) == [shout(t) for t in texts]  # type: ignore[attr-defined]
    assert shout.many(iter(["x", "y"])) == ["X", "Y"]  # type: ignore[attr-defined]
    assert shout.many([]) == []  # type: ignore[attr-defined]
    # The short texts once each; the long one every time it comes (twice a list, two lists).
    assert calls == [short, long, "", long, long, long, "x", "y"]
    assert shout.cache_info().currsize == 4  # type: ignore[attr-defined]


def test_normalise_texts_is_normalise_text_of_each() -> None:
    from perception.fusion.crossval import normalise_text, normalise_texts

    long = "x" * (MAX_KEY_CHARS + 5) + " Y"
    texts = ["Sign In", "ＡＢＣ １２３", "Straße!", "", "返回 (3)", long]
    assert normalise_texts(texts) == [normalise_text(t) for t in texts]
    assert normalise_texts(texts)[:3] == ["signin", "abc123", "strasse"]


def test_many_over_known_texts_calls_nothing_and_keeps_at_most_maxsize() -> None:
    calls: list[str] = []

    @short_key_cache(maxsize=4)
    def shout(text: str) -> str:
        calls.append(text)
        return text.upper()

    many = shout.many  # type: ignore[attr-defined]
    assert many(["a", "b", "a"]) == ["A", "B", "A"]
    assert many(["b", "a"]) == ["B", "A"] and calls == ["a", "b"]  # both known: no call
    # A list with a text not known yet: each text as the call gives it, the new one computed.
    assert many(["a", "c", "b"]) == ["A", "C", "B"] and calls == ["a", "b", "c"]
    # More texts than maxsize over a few lists: every answer right, and what many() keeps
    # beside the lru_cache is bounded (the oldest forgotten: "a" is computed again).
    for n in range(6):
        assert many([f"t{n}", f"u{n}"]) == [f"T{n}", f"U{n}"]
    calls.clear()
    assert many(["a", "t5"]) == ["A", "T5"] and calls == ["a"]
    shout.cache_clear()  # type: ignore[attr-defined]
    calls.clear()
    assert many(["t5"]) == ["T5"] and calls == ["t5"]  # cleared: computed again
