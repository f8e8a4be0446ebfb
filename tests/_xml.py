"""Build small uiautomator dumps for tests (our own screens, written here)."""

from __future__ import annotations

from xml.sax.saxutils import quoteattr

DEFAULTS = {
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


def node(box: tuple[int, int, int, int], *children: str, **attrs: object) -> str:
    """One ``<node>``; keywords use ``_`` for ``-`` (``content_desc=...``), ``cls`` for class."""
    values = dict(DEFAULTS)
    for key, value in attrs.items():
        name = "class" if key == "cls" else key.replace("_", "-")
        values[name] = ("true" if value else "false") if isinstance(value, bool) else str(value)
    left, top, right, bottom = box
    values["bounds"] = f"[{left},{top}][{right},{bottom}]"
    head = "<node " + " ".join(f"{k}={quoteattr(v)}" for k, v in values.items())
    return head + (">" + "".join(children) + "</node>" if children else " />")


def dump(*roots: str, rotation: int = 0, banner: bool = True) -> bytes:
    text = (
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>"
        f'<hierarchy rotation="{rotation}">' + "".join(roots) + "</hierarchy>"
    )
    if banner:
        text += "UI hierchary dumped to: /dev/tty\n"
    return text.encode("utf-8")


SCREEN = (0, 0, 1080, 2400)


def screen(*children: str) -> bytes:
    """A full-screen window with the given children."""
    return dump(node(SCREEN, *children))
