"""The demo screen the package ships: a Wi-Fi settings page we wrote ourselves.

``perception demo`` runs the whole engine on it, so a newcomer sees the product work without a
phone. The screen is built here, as a uiautomator dump and a matching 1080x2400 screenshot
rendered with OpenCV; ``python -m perception.demo --write`` regenerates both files in
``perception/data/`` (the committed files are byte-identical to what it writes).

It exercises what real screens do: a toolbar with icon-only buttons, a switch whose label sits in
a separate text view, a search field with a hint, a list of twelve homogeneous rows (truncated in
the prompt), a disabled button, and an invisible node that must not show up.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from xml.sax.saxutils import quoteattr

WIDTH_PX = 1080
HEIGHT_PX = 2400
PACKAGE = "com.example.wifisettings"
XML_NAME = "demo_screen.xml"
PNG_NAME = "demo_screen.png"

NETWORKS = (
    ("HomeNet-5G", "Connected"),
    ("HomeNet", "Saved"),
    ("Cafe Corner", "Open"),
    ("Library Guest", "Open"),
    ("Office-Secure", "Secured"),
    ("Neighbour 2.4", "Secured"),
    ("Printer-Direct", "Secured"),
    ("Garden Mesh", "Secured"),
    ("Bus Stop Free", "Open"),
    ("Studio Link", "Secured"),
    ("Train WiFi", "Open"),
    ("Hotel Lobby", "Open"),
)


@dataclass
class _Node:
    cls: str
    box: tuple[int, int, int, int]
    text: str = ""
    desc: str = ""
    rid: str = ""
    clickable: bool = False
    checkable: bool = False
    checked: bool = False
    enabled: bool = True
    focusable: bool = False
    scrollable: bool = False
    visible: bool = True
    hint: str = ""
    children: list[_Node] = field(default_factory=list)

    def xml(self, index: int) -> str:
        left, top, right, bottom = self.box
        attrs = {
            "index": str(index),
            "text": self.text,
            "resource-id": f"{PACKAGE}:id/{self.rid}" if self.rid else "",
            "class": self.cls,
            "package": PACKAGE,
            "content-desc": self.desc,
            "checkable": _b(self.checkable),
            "checked": _b(self.checked),
            "clickable": _b(self.clickable),
            "enabled": _b(self.enabled),
            "focusable": _b(self.focusable or self.clickable),
            "focused": "false",
            "scrollable": _b(self.scrollable),
            "long-clickable": "false",
            "password": "false",
            "selected": "false",
            "visible-to-user": _b(self.visible),
            "bounds": f"[{left},{top}][{right},{bottom}]",
        }
        if self.hint:
            attrs["hint"] = self.hint
        head = "<node " + " ".join(f"{k}={quoteattr(v)}" for k, v in attrs.items())
        if not self.children:
            return head + " />"
        inner = "".join(child.xml(i) for i, child in enumerate(self.children))
        return head + ">" + inner + "</node>"


def _b(value: bool) -> str:
    return "true" if value else "false"


def _screen() -> _Node:
    toolbar = _Node(
        "android.view.ViewGroup", (0, 96, 1080, 264), rid="toolbar",
        children=[
            _Node("android.widget.ImageButton", (0, 96, 168, 264), desc="Navigate up",
                  clickable=True),
            _Node("android.widget.TextView", (200, 140, 800, 220), text="Wi-Fi settings"),
            _Node("android.widget.ImageButton", (912, 96, 1080, 264), rid="overflow_menu",
                  clickable=True),
        ],
    )
    switch_row = _Node(
        "android.widget.LinearLayout", (0, 264, 1080, 432),
        children=[
            _Node("android.widget.TextView", (48, 310, 600, 386), text="Use Wi-Fi"),
            _Node("android.widget.Switch", (880, 300, 1032, 396), rid="wifi_switch",
                  clickable=True, checkable=True, checked=True),
        ],
    )
    search = _Node("android.widget.EditText", (48, 456, 1032, 600), rid="search",
                   clickable=True, focusable=True, hint="Search networks")
    rows = []
    top = 640
    for name, state in NETWORKS:
        rows.append(
            _Node(
                "android.widget.LinearLayout", (0, top, 1080, top + 120), clickable=True,
                children=[
                    _Node("android.widget.ImageView", (48, top + 24, 120, top + 96),
                          rid="signal_icon"),
                    _Node("android.widget.TextView", (160, top + 12, 900, top + 64), text=name),
                    _Node("android.widget.TextView", (160, top + 66, 900, top + 108),
                          text=state),
                ],
            )
        )
        top += 120
    networks = _Node("androidx.recyclerview.widget.RecyclerView", (0, 640, 1080, 2080),
                     rid="networks", scrollable=True, children=rows)
    hidden = _Node("android.widget.TextView", (48, 2090, 600, 2130), text="Debug overlay",
                   visible=False)
    buttons = _Node(
        "android.widget.LinearLayout", (0, 2120, 1080, 2280),
        children=[
            _Node("android.widget.Button", (48, 2140, 520, 2260), text="Add network",
                  clickable=True),
            _Node("android.widget.Button", (560, 2140, 1032, 2260), text="Save",
                  clickable=True, enabled=False),
        ],
    )
    content = _Node("android.widget.FrameLayout", (0, 96, 1080, 2280), rid="content",
                    children=[toolbar, switch_row, search, networks, hidden, buttons])
    return _Node("android.widget.FrameLayout", (0, 0, 1080, 2400), children=[content])


def build_xml() -> bytes:
    """The demo dump, exactly as ``uiautomator dump`` would write it (banner included)."""
    body = _screen().xml(0)
    return (
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>"
        f'<hierarchy rotation="0">{body}</hierarchy>'
        "UI hierchary dumped to: /dev/tty\n"
    ).encode()


def build_png() -> bytes:
    """A screenshot that shows what the dump describes."""
    import cv2
    import numpy as np

    img = np.full((HEIGHT_PX, WIDTH_PX, 3), 255, dtype=np.uint8)
    font = cv2.FONT_HERSHEY_SIMPLEX
    dark, grey, blue = (33, 33, 33), (110, 110, 110), (210, 120, 25)

    def text(s: str, x: int, y: int, scale: float = 1.6, color: tuple[int, int, int] = dark,
             thick: int = 3) -> None:
        cv2.putText(img, s, (x, y), font, scale, color, thick, cv2.LINE_AA)

    cv2.rectangle(img, (0, 0), (WIDTH_PX, 96), (60, 60, 60), -1)
    text("10:42", 40, 66, 1.2, (255, 255, 255), 2)
    cv2.rectangle(img, (0, 96), (WIDTH_PX, 264), (245, 240, 235), -1)
    cv2.arrowedLine(img, (120, 180), (50, 180), dark, 8, tipLength=0.45)
    text("Wi-Fi settings", 200, 205, 1.8)
    for dy in (-36, 0, 36):
        cv2.circle(img, (996, 180 + dy), 9, dark, -1)
    text("Use Wi-Fi", 48, 372)
    cv2.rectangle(img, (880, 318), (1032, 378), blue, -1)
    cv2.circle(img, (1002, 348), 40, (255, 255, 255), -1)
    cv2.circle(img, (1002, 348), 40, blue, 4)
    cv2.rectangle(img, (48, 456), (1032, 600), (235, 235, 235), -1)
    text("Search networks", 90, 550, 1.5, grey, 2)
    top = 640
    for name, state in NETWORKS:
        for k in range(4):
            h = 14 + k * 14
            cv2.rectangle(img, (56 + k * 16, top + 92 - h), (66 + k * 16, top + 92), blue, -1)
        text(name, 160, top + 58, 1.4)
        text(state, 160, top + 104, 1.1, grey, 2)
        cv2.line(img, (160, top + 119), (WIDTH_PX, top + 119), (225, 225, 225), 2)
        top += 120
    cv2.rectangle(img, (48, 2140), (520, 2260), blue, -1)
    text("Add network", 92, 2218, 1.5, (255, 255, 255))
    cv2.rectangle(img, (560, 2140), (1032, 2260), (225, 225, 225), -1)
    text("Save", 730, 2218, 1.5, (160, 160, 160))
    cv2.rectangle(img, (0, 2280), (WIDTH_PX, HEIGHT_PX), (20, 20, 20), -1)
    ok, png = cv2.imencode(".png", img, [cv2.IMWRITE_PNG_COMPRESSION, 9])
    if not ok:
        raise RuntimeError("OpenCV could not encode the demo screen")
    return bytes(png.tobytes())


def demo_xml() -> bytes:
    """The shipped demo dump."""
    return resources.files("perception").joinpath("data", XML_NAME).read_bytes()


def demo_png() -> bytes:
    """The shipped demo screenshot."""
    return resources.files("perception").joinpath("data", PNG_NAME).read_bytes()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate the shipped demo screen.")
    parser.add_argument("--write", action="store_true", help="write perception/data/demo_*")
    args = parser.parse_args(argv)
    if args.write:
        out = Path(__file__).resolve().parent / "data"
        out.mkdir(exist_ok=True)
        (out / XML_NAME).write_bytes(build_xml())
        (out / PNG_NAME).write_bytes(build_png())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
