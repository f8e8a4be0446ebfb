"""OCR's reading of an icon is not a label: a short line on an icon that scores low, or any on
a menu glyph, gives way to the icon; real short labels (a count, "OK", "+") stay. Real corpus
screens read whole, and the rule on given boxes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from perception.pixel import Anchor, PixelKind, PixelReader, TextLine, build_candidates
from perception.types import BoxPx, PointPx


def _read(corpus_dir: Path, reader: PixelReader, sample: str):  # type: ignore[no-untyped-def]
    image = next((corpus_dir / sample).glob("screen.*[gG]"))
    return reader.read(image.read_bytes()).candidates


# (sample, what OCR made of icons there, where an icon candidate stands instead)
MISREAD = [
    ("droidbot_habitica/habitica_2020-08-29/step_001", {"用"}, []),  # the Dailies tab's icon
    # The icon of the 视频 item (its button holds it: one candidate, see test_pixel_duplicates).
    ("droidbotexp_qqmusic/qqmusic_2021-11-23/step_004", {"D", "0"}, []),
    ("adb_oneoffs/unicom_home", {"8", "Y!"}, [PointPx(1012, 183)]),
    ("fdroidutg_apps/bluepie.ad_silence/step_007", {"由", "士", "目"}, []),  # quick settings
    ("llamatouch/trace_7/step_002", {"41"}, []),  # Maps' fork and knife
    ("droidbot_yelp/yelp_2017/step_009", {".", "★", "0"}, [PointPx(77, 1019)]),
    # ⋮ read ":" (no score keeps it: the glyph rule is sure), ☰ read "三".
    ("fdroidutg_apps/de.szalkowski.activitylauncher/step_009", {":"}, [PointPx(987, 298)]),
    ("fdroidutg_apps/mattecarra.accapp/step_003", {"三"}, [PointPx(852, 1250)]),
]


@pytest.mark.parametrize(("sample", "misread", "icons"), MISREAD)
def test_icons_read_as_characters_are_icons(
    corpus_dir: Path,
    reader: PixelReader,
    sample: str,
    misread: set[str],
    icons: list[PointPx],
) -> None:
    cands = _read(corpus_dir, reader, sample)
    assert not misread & {c.text for c in cands}
    for point in icons:
        hit = [c for c in cands if c.box_px.contains(point)]
        assert any(c.kind in (PixelKind.ICON, PixelKind.TAB) and not c.text for c in hit), hit


def test_named_glyphs_come_back(corpus_dir: Path, reader: PixelReader) -> None:
    cands = _read(corpus_dir, reader, "fdroidutg_apps/mattecarra.accapp/step_003")
    assert [c.glyph for c in cands if c.box_px.contains(PointPx(852, 1250))] == ["☰"]


@pytest.mark.parametrize(
    ("sample", "labels"),
    [
        ("droidbot_a2dpvol_lowres/a2dpvol_2018-06-05/step_002", {"OK"}),
        ("droidbot_yelp/yelp_2017/step_004", {"Me"}),
        ("droidbot_admob_apps/com.heaven.thermo/step_006", {"40", "45"}),
    ],
)
def test_short_labels_stay(
    corpus_dir: Path, reader: PixelReader, sample: str, labels: set[str]
) -> None:
    assert labels <= {c.text for c in _read(corpus_dir, reader, sample)}


def _line(text: str, box: tuple[int, int, int, int], score: float) -> TextLine:
    return TextLine(text=text, box_px=BoxPx(*box), confidence=score)


def _icon(box: tuple[int, int, int, int], glyph: str = "") -> Anchor:
    return Anchor(kind=PixelKind.ICON, box_px=BoxPx(*box), score=0.8, glyph=glyph)


def test_the_rule_on_given_boxes() -> None:
    icon = _icon((100, 100, 160, 160))

    def texts(line: TextLine, anchors: list[Anchor]) -> list[str]:
        return [c.text for c in build_candidates([line], anchors)]

    # A low score on an icon: the icon, text-less.
    assert texts(_line("用", (104, 104, 156, 156), 0.62), [icon]) == [""]
    # High scores stay (a count, a short word the icon rule made an icon of).
    assert texts(_line("45", (104, 104, 156, 156), 0.99), [icon]) == ["45"]
    assert texts(_line("OK", (90, 110, 180, 150), 0.99), [icon]) == ["OK"]
    # A menu glyph: whatever OCR's score.
    assert texts(_line(":", (120, 100, 140, 160), 0.99), [_icon((100, 100, 160, 160), "⋮")]) == [
        ""
    ]
    # Longer lines are words, also scored low; a very low score is noise anywhere.
    assert texts(_line("Help", (90, 110, 200, 150), 0.62), [icon]) == ["Help"]
    assert texts(_line(".", (500, 500, 510, 520), 0.55), []) == []
    # A line box grazing an icon (OCR's padding) leaves it a candidate.
    graze = build_candidates([_line("Title", (0, 155, 400, 200), 0.99)], [icon])
    assert sorted(c.text for c in graze) == ["", "Title"]
