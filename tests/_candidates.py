"""Candidates as the tree channel hands them to ``recommend``: a phone screen, its facts, and
tree elements merged and numbered, for the tests of the fusion's operations."""

from __future__ import annotations

from collections.abc import Sequence

from perception.fusion.candidates import Candidate, IdAllocator, merge
from perception.fusion.screen import ScreenInfo, recommend
from perception.types import BoxPx, ElementFlag, ScreenSize, TreeElement

SCREEN = ScreenSize(1080, 2400)
INFO = ScreenInfo(
    package="com.app",
    activity=None,
    size=SCREEN,
    rotation=0,
    secure=False,
    fingerprint="f",
    top_texts=(),
)


def element(
    i: int, kind: str, text: str, box: tuple[int, int, int, int],
    flags: ElementFlag = ElementFlag.NONE,
) -> TreeElement:
    return TreeElement(id=i, kind=kind, text=text, box_px=BoxPx(*box), flags=flags)


def tree_candidates(*elements: TreeElement) -> list[Candidate]:
    """The elements merged as a trusted tree's and given their ids on one page."""
    drafts = merge(elements=elements, tree_confidence=0.9, screen=SCREEN)
    return IdAllocator().assign(drafts, page="p", screen=SCREEN)


def ops(
    candidates: Sequence[Candidate], info: ScreenInfo = INFO, *, hints: str = "",
    modal: bool = False,
) -> list[tuple[str, str | None]]:
    """What ``recommend`` says, as (kind, the label of the candidate it names)."""
    texts = {c.id: c.text for c in candidates}
    return [
        (op.kind.value, texts.get(op.candidate_id))
        for op in recommend(candidates, info, hints=hints, modal=modal)
    ]


def ad_page(name: str) -> list[Candidate]:
    """An interstitial: a page-wide web view labelled ``name``, five junk buttons, two more, a
    close "X" in the top corner."""
    click = ElementFlag.CLICKABLE
    rows = [element(0, "web", name, (0, 90, 1080, 2400), ElementFlag.SCROLLABLE)]
    rows += [
        element(i, "btn", f"http%3A%2F%2Fstatic.example{i}", (100 * i, 900, 100 * i + 90, 1000),
                click)
        for i in range(1, 6)
    ]
    rows += [
        element(6, "btn", "Best Mobile Portal!", (100, 1600, 980, 1700), click),
        element(7, "btn", "CLICK NOW", (100, 1900, 980, 2000), click),
        element(8, "btn", "X", (60, 120, 180, 240), click),
    ]
    return tree_candidates(*rows)
