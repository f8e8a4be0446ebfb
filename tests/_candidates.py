"""Candidates as the tree channel hands them to ``recommend``: a phone screen, its facts, and
tree elements merged and numbered, for the tests of the fusion's operations."""

from __future__ import annotations

from perception.fusion.candidates import Candidate, IdAllocator, merge
from perception.fusion.screen import ScreenInfo
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
