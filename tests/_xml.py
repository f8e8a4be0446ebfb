"""Build small uiautomator dumps for tests (our own screens, written here)."""

from __future__ import annotations

from perception.tree.write import NODE_DEFAULTS, dump, node

DEFAULTS = NODE_DEFAULTS
SCREEN = (0, 0, 1080, 2400)

__all__ = ["DEFAULTS", "SCREEN", "dump", "node", "screen"]


def screen(*children: str) -> bytes:
    """A full-screen window with the given children."""
    return dump(node(SCREEN, *children))
