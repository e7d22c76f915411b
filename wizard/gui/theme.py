"""Light and dark palettes (Fusion style, so both look the same on every desktop)."""

from __future__ import annotations

from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QApplication, QStyleFactory

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
