"""Write uiautomator dumps: small screens for tests, benchmarks and users' own fixtures.

The output is what ``uiautomator dump`` writes (attribute order, ``bounds`` format, the XML
declaration and the trailing banner), so it goes through the same parser as a phone's dump.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from xml.sax.saxutils import quoteattr

NODE_DEFAULTS: Mapping[str, str] = MappingProxyType(
    {
        "index": "0",
        "text": "",
        "resource-id": "",
        "class": "android.widget.FrameLayout",
        "package": "com.example.app",
        "content-desc": "",
        "checkable": "false",
        "checked": "false",
        "clickable": "false",
        "enabled": "true",
        "focusable": "false",
        "focused": "false",
        "scrollable": "false",
        "long-clickable": "false",
        "password": "false",
        "selected": "false",
    }
)
"""The attributes of a ``<node>`` as uiautomator writes them, with their defaults."""


def bounds(box: tuple[int, int, int, int]) -> str:
    left, top, right, bottom = box
    return f"[{left},{top}][{right},{bottom}]"


def node(box: tuple[int, int, int, int], *children: str, **attrs: object) -> str:
    """One ``<node>``; keywords use ``_`` for ``-`` (``content_desc=...``), ``cls`` for class,
    booleans become ``true``/``false``."""
    values = dict(NODE_DEFAULTS)
    for key, value in attrs.items():
        name = "class" if key == "cls" else key.replace("_", "-")
        values[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    values["bounds"] = bounds(box)
    head = "<node " + " ".join(f"{k}={quoteattr(v)}" for k, v in values.items())
    return head + (">" + "".join(children) + "</node>" if children else " />")


def dump(*roots: str, rotation: int = 0, banner: bool = True) -> bytes:
    """A whole dump: the declaration, ``<hierarchy>`` with the window roots, the banner."""
    text = (
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>"
        f'<hierarchy rotation="{rotation}">' + "".join(roots) + "</hierarchy>"
    )
    if banner:
        text += "UI hierchary dumped to: /dev/tty\n"
    return text.encode("utf-8")
