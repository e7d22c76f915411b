"""Light and dark palettes (Fusion style, so both look the same on every desktop), and the colours the canvases
paint with in each."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QStyleFactory, QWidget

THEMES = ("system", "light", "dark")


def _palette(dark: bool) -> QPalette:
    p = QPalette()
    if dark:
        base, window, text, button = "#1e1f22", "#2b2d30", "#dfe1e5", "#3c3f41"
        highlight, link, disabled = "#3d6fb4", "#6ea8fe", "#7f8389"
    else:
        base, window, text, button = "#ffffff", "#f3f3f3", "#1f1f1f", "#e8e8e8"
        highlight, link, disabled = "#2a6fdb", "#1a5fc4", "#9a9a9a"
    roles = {
        QPalette.Window: window, QPalette.WindowText: text, QPalette.Base: base,
        QPalette.AlternateBase: window, QPalette.ToolTipBase: base, QPalette.ToolTipText: text,
        QPalette.Text: text, QPalette.Button: button, QPalette.ButtonText: text,
        QPalette.Highlight: highlight, QPalette.HighlightedText: "#ffffff", QPalette.Link: link,
        QPalette.PlaceholderText: disabled, QPalette.BrightText: "#ff5252",
    }
    for role, colour in roles.items():
        p.setColor(role, QColor(colour))
    for role in (QPalette.Text, QPalette.ButtonText, QPalette.WindowText):
        p.setColor(QPalette.Disabled, role, QColor(disabled))
    return p


_SYSTEM: dict = {}


def apply_theme(app: QApplication, name: str) -> str:
    """Apply ``name`` (system/light/dark); returns the theme applied."""
    if name not in THEMES:
        name = "system"
    if not _SYSTEM:
        _SYSTEM["style"] = app.style().name()
        _SYSTEM["palette"] = QPalette(app.palette())
    if name == "system":
        app.setStyle(QStyleFactory.create(_SYSTEM["style"]) or app.style())
        app.setPalette(_SYSTEM["palette"])
    else:
        app.setStyle(QStyleFactory.create("Fusion"))
        app.setPalette(_palette(dark=name == "dark"))
    return name


def is_dark(app: QApplication) -> bool:
    return app.palette().color(QPalette.Window).lightness() < 128


@dataclass(frozen=True)
class CanvasColours:
    """What the canvases (dataflow, placement, topology) and the findings lists paint with, for one theme.

    The canvases draw their own items, so the palette alone does not reach them: they ask ``canvas_colours()``
    when they lay out and lay out again when the application's palette changes (``ThemeFollower``)."""

    background: str  # the scene behind everything
    surface: str  # a tile's or a stage's body
    surface_off: str  # a stage that is off
    text: str
    muted: str  # secondary text (node facts, hints, unused ports)
    border: str
    track: str  # an empty bar, a refused port
    pools: dict[str, str]  # pool name -> region fill
    other_pool: str
    lit: tuple[str, str]  # a target that can take the dragged role: (fill, border)
    hover: tuple[str, str]  # the target under the mouse
    refused: tuple[str, str]  # a target that cannot
    verdict: dict[str, str]  # ok / tight / oom / short / unknown -> bar and word colour
    good: str  # "if you drop here", NVLink
    bad: str  # PCIe only, a replica over a slow link, the capacity line
    severity: dict[str, str]  # error / warning / info -> text colour in a list on the palette's base


LIGHT_CANVAS = CanvasColours(
    background="#f7f8fa", surface="#ffffff", surface_off="#f3f4f6", text="#1f2933", muted="#52606d",
    border="#7b8794", track="#e4e7eb",
    pools={"global_pool": "#dbe8fb", "reward_pool": "#f8e1f0", "teacher_pool": "#fff1cc", "rollout": "#dff3e4"},
    other_pool="#eeeeee", lit=("#c8efcf", "#2e7d32"), hover=("#a5e0b0", "#1b5e20"), refused=("#e0e0e0", "#9e9e9e"),
    verdict={"ok": "#2e7d32", "tight": "#c77700", "oom": "#c62828", "short": "#c77700", "unknown": "#9e9e9e"},
    good="#1b5e20", bad="#c62828",
    severity={"error": "#b00020", "warning": "#7a5200", "info": "#1f2933"},
)
DARK_CANVAS = CanvasColours(
    background="#1b1c1f", surface="#2b2d30", surface_off="#25272a", text="#dfe1e5", muted="#a3a9b1",
    border="#8a919a", track="#3a3d41",
    pools={"global_pool": "#22344d", "reward_pool": "#45283c", "teacher_pool": "#463d22", "rollout": "#213d2a"},
    other_pool="#333538", lit=("#1f4a2a", "#66bb6a"), hover=("#2c6b3a", "#a5d6a7"), refused=("#2f3033", "#6d7278"),
    verdict={"ok": "#66bb6a", "tight": "#ffa726", "oom": "#ef5350", "short": "#ffa726", "unknown": "#8a919a"},
    good="#81c784", bad="#ef5350",
    severity={"error": "#ff6b6b", "warning": "#f0b429", "info": "#dfe1e5"},
)


def canvas_colours() -> CanvasColours:
    """The canvas colours of the theme in use (dark when the application's window colour is dark)."""
    app = QApplication.instance()
    return DARK_CANVAS if app is not None and is_dark(app) else LIGHT_CANVAS


class ThemeFollower(QObject):
    """Calls ``redraw`` (once, on the next turn of the event loop) whenever ``widget``'s palette changes, as it
    does when the user picks another theme: the canvases lay themselves out again in the new colours."""

    def __init__(self, widget: QWidget, redraw: Callable[[], None]) -> None:
        super().__init__(widget)
        self._redraw = redraw
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(redraw)
        self._dark = is_dark(QApplication.instance())
        widget.installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.PaletteChange:
            dark = is_dark(QApplication.instance())
            if dark != self._dark:
                self._dark = dark
                self._timer.start()
        return False
