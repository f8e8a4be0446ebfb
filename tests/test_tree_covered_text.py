"""Text a page pushed over it hides, in one window, is not read into the window's labels (our own
screens, and QQ Music's album page over its artist page in the corpus)."""

from __future__ import annotations

import json
from pathlib import Path

from _xml import dump, node

from perception import read_tree

BTN = "android.widget.Button"
TEXT = "android.widget.TextView"


def stacked(cover: tuple[int, int, int, int], *, with_content: bool = True) -> bytes:
    """A clickable window root holding a first page (static text) and, drawn after it, a
    clickable container over ``cover`` (with its own content, or empty)."""
    first = node((0, 0, 1080, 2400),
                 node((40, 600, 700, 700), cls=TEXT, text="Miley Cyrus"),
                 node((40, 720, 700, 800), cls=TEXT, text="Artist"))
    content = (node((40, 300, 1040, 400), cls=BTN, clickable=True, text="Play album"),)
    second = node(cover, *(content if with_content else ()), clickable=True)
    return dump(node((0, 0, 1080, 2400), first, second, clickable=True))


def labels(xml: bytes) -> str:
    return json.dumps(json.loads(read_tree(xml).to_prompt()), ensure_ascii=False)


def test_text_under_a_page_pushed_over_it_is_not_read() -> None:
    shown = labels(stacked((0, 0, 1080, 2400)))
    assert "Miley Cyrus" not in shown and "Artist" not in shown and "Play album" in shown


def test_text_beside_or_over_small_and_empty_covers_stays() -> None:
    # a cover under a quarter of the screen (a card), one without content (a touch overlay),
    # one that covers the text only in part: the text is there to read
    for xml in (
        stacked((0, 500, 1080, 900)),
        stacked((0, 0, 1080, 2400), with_content=False),
        stacked((0, 650, 1080, 2400)),
    ):
        assert "Miley Cyrus" in labels(xml)


def test_qq_music_album_over_the_artist(corpus_dir: Path) -> None:
    step = corpus_dir / "droidbotexp_qqmusic/qqmusic_2021-11-23/step_016/screen.xml"
    shown = labels(step.read_bytes())
    assert "歌手名" not in shown and "Miley Cyrus | " not in shown
    assert "WITHOUT YOU (Miley Cyrus Remix)" in shown  # the album page, on top, stays
    artist = corpus_dir / "droidbotexp_qqmusic/qqmusic_2021-11-23/step_015/screen.xml"
    assert "歌手名" in labels(artist.read_bytes())  # the artist page alone: its name is read
