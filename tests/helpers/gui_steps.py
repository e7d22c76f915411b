"""The window on one step at its first size, settled (the GUI tests that look at what a newcomer sees)."""

from __future__ import annotations


def at(window, key: str):
    """``window`` at the default size on the step ``key``, its events processed; the step's page."""
    from PySide6.QtWidgets import QApplication

    from wizard.gui.screenshots import DEFAULT_SIZE, settle

    window.resize(*DEFAULT_SIZE)
    page = window.page(key)
    window.go_to(page)
    settle(QApplication.instance())
    return page
