"""The fusion bench's own parts: degradations, tap points, oscillation (no OCR here)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from lxml import etree

from bench.fusion import (
    Sample,
    bench_oscillation,
    degrade_blank,
    degrade_drop,
    degrade_surface,
    spread,
    tap_point,
    targets,
)
from perception.config import FusionConfig
from perception.tree import read_tree
from perception.types import BoxPx, PointPx, ScreenSize

NODE = (
    '<node index="0" text="{t}" resource-id="" class="{c}" package="com.example" content-desc=""'
    ' checkable="false" checked="false" clickable="true" enabled="true" focusable="true"'
    ' focused="false" scrollable="false" long-clickable="false" password="false"'
    ' selected="false" bounds="[{l},{y}][{r},{b}]">{kids}</node>'
)


def dump(n: int = 12) -> bytes:
    kids = "".join(
        NODE.format(
            t=f"Row {i}", c="android.widget.Button", l=0, y=100 * i, r=700, b=100 * i + 90, kids=""
        )
        for i in range(n)
    )
    root = NODE.format(t="", c="android.widget.FrameLayout", l=0, y=0, r=720, b=1280, kids=kids)
    return f'<hierarchy rotation="0">{root}</hierarchy>'.encode()


def test_degradations_are_real_dumps_the_tree_channel_reads() -> None:
    xml = dump()
    dropped = degrade_drop(xml, random.Random(1))
    assert len(list(etree.fromstring(dropped).iter("node"))) <= 0.6 * 13
    blank = read_tree(degrade_blank(xml))
    assert all(not e.text for e in blank.elements)
    surface = read_tree(degrade_surface(xml, ScreenSize(720, 1280)))
    assert surface.health.surface_area_share > 0.9


def _sample(tmp_path: Path, action: dict[str, Any]) -> Sample:
    import json

    (tmp_path / "meta.json").write_text(json.dumps({"trace": {"action_to_next": action}}))
    return Sample.load(tmp_path, {"width": 1080, "height": 2400, "path": "x"})


def test_tap_points(tmp_path: Path) -> None:
    droidbot = {"event_type": "touch", "target": {"bounds": "[100,200][300,400]"}}
    assert tap_point(_sample(tmp_path, droidbot)) == PointPx(200, 300)
    # DroidBot's set_text touches the field's centre before it types.
    typed = {"event_type": "set_text", "target": {"bounds": "[60,563][660,707]"}, "text": "a"}
    assert tap_point(_sample(tmp_path, typed)) == PointPx(360, 635)
    llama = {"type": "click", "coord_space": [320, 720], "x": 160, "y": 360}
    assert tap_point(_sample(tmp_path, llama)) == PointPx(540, 1200)
    assert tap_point(_sample(tmp_path, {"event_type": "key", "name": "BACK"})) is None
    # DroidBot's bounds of a view scrolled off the screen: no point to tap, not a miss.
    inverted = {"event_type": "touch", "target": {"bounds": "[1259,1280][1080,1322]"}}
    assert tap_point(_sample(tmp_path, inverted)) is None


def test_oscillation_figures_meet_the_target() -> None:
    out = bench_oscillation(FusionConfig(), seed=3, rounds=400)
    assert out["worst_hysteresis_flips_per_round"] <= 0.5
    for key, v in out.items():
        if isinstance(v, dict):
            assert v["hysteresis_flips_per_round"] < v["threshold_flips_per_round"], key


def test_spread_is_deterministic() -> None:
    assert spread(list(range(10)), 3) == [0, 3, 6]
    assert spread([1, 2], 0) == [1, 2]


def test_interactive_taps_are_told_apart() -> None:
    from bench.fusion import _lands, interactive_at, tapped_view

    xml = dump(3)
    assert interactive_at(xml, PointPx(100, 150))  # inside "Row 1", a clickable button
    assert tapped_view(xml, PointPx(100, 150)) == BoxPx(0, 100, 700, 190)
    divider = xml.replace(b'clickable="true"', b'clickable="false"')
    assert not interactive_at(divider, PointPx(100, 150))
    # A pixel text box hugging the row's label: the row's centre is outside it, a tap on its
    # centre lands on the row all the same.
    label = BoxPx(20, 130, 120, 160)
    assert not label.contains(PointPx(350, 145))
    assert _lands([label], BoxPx(0, 100, 700, 190))
    assert not _lands([label], BoxPx(0, 200, 700, 290)) and not _lands([label], None)


def test_an_open_drawer_takes_the_taps_on_its_page() -> None:
    """Beside an open navigation drawer the scrim takes the tap (it closes the drawer); on the
    drawer only the drawer's own views do; the page under both takes none."""
    from bench.fusion import tapped_view

    def node(bounds: str, *kids: str, cls: str = "android.widget.FrameLayout",
             clickable: bool = False) -> str:
        return (f'<node class="{cls}" clickable="{str(clickable).lower()}" '
                f'bounds="{bounds}">{"".join(kids)}</node>')

    page = node("[0,0][1080,2400]",
                node("[0,0][168,168]", clickable=True),  # the menu button, under the drawer
                node("[900,2200][1080,2400]", clickable=True))  # a tab, under the scrim
    drawer = node("[0,0][800,2400]", node("[0,300][800,460]", clickable=True))
    drawers = "androidx.drawerlayout.widget.DrawerLayout"
    layout = node("[0,0][1080,2400]", page, drawer, cls=drawers)
    xml = f"<hierarchy>{layout}</hierarchy>".encode()
    assert tapped_view(xml, PointPx(1000, 2300)) == BoxPx(800, 0, 1080, 2400)  # the scrim
    assert tapped_view(xml, PointPx(80, 80)) is None  # the drawer's header, over the menu
    assert tapped_view(xml, PointPx(400, 380)) == BoxPx(0, 300, 800, 460)  # a drawer row
    closed = f"<hierarchy>{node('[0,0][1080,2400]', page, cls=drawers)}</hierarchy>"
    assert tapped_view(closed.encode(), PointPx(80, 80)) == BoxPx(0, 0, 168, 168)


def _report(fused: float, tree: float, first_sight_ms: float) -> dict[str, Any]:
    return {
        "degraded": {"summary": {"all": {"left_within_1_share": 1.0,
                                         "returned_within_2_share": 0.9889}}},
        "desync": {"desync_flagged": 6, "false_alarm_rate": 0.0174},
        "taps": {"fused_covered": fused, "tree_covered": tree, "pixel_covered": 0.7952},
        "oscillation": {"worst_hysteresis_flips_per_round": 0.29},
        "time": {"fuse_300_first_sight_ms": {"p50": first_sight_ms, "p95": 1.5}},
    }


def test_targets_say_which_of_issue_4s_targets_a_run_meets() -> None:
    met = {name: t["met"] for name, t in targets(_report(0.9759, 0.9699, 1.344)).items()}
    missed = [name for name, ok in met.items() if not ok]
    assert missed == [
        "recorded taps covered by fused candidates >= 98%",
        "fusion of 300 candidates (first sight, p50) <= 1.0 ms",
    ]
    # Fused must beat both channels alone, not tie the tree.
    met = {name: t["met"] for name, t in targets(_report(0.99, 0.99, 0.8)).items()}
    assert [name for name, ok in met.items() if not ok] == ["fused taps above either channel alone"]
