"""What every step of the wizard is: a widget with a title, a subtitle and fields to focus."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QFrame, QLabel, QScrollArea, QWidget

if TYPE_CHECKING:
    from wizard.gui.document import PlanDocument


class Page(QWidget):
    """A step's page. Its texts come from the step registry (``wizard.gui.steps``); the window builds it."""

    step = ""  # the name in the step list
    title = ""
    subtitle = ""
    incomplete_hint = ""  # next to Next while the page is not complete: what to do to go on
    complete_changed = Signal()

    def __init__(self, doc: PlanDocument | None) -> None:
        super().__init__()
        self.doc = doc
        self.forms: list = []  # FieldForms on this page, for click-to-field

    def keys(self) -> set[str]:
        return {key for form in self.forms for key in form.editors}

    def focus_key(self, key: str) -> bool:
        """Put the cursor in the field of ``key``; False when this page has none."""
        return any(form.focus_key(key) for form in self.forms)

    def is_complete(self) -> bool:
        return True

    def entered(self) -> None:
        """Called each time the page is shown."""

    def wire(self, pages: Mapping[str, Page]) -> None:
        """Called once every step's page exists (``pages`` by step key): connect to the steps this one
        listens to. The window knows no step by its class, so the steps join up here."""


def scrolled(widget: QWidget) -> QScrollArea:
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.NoFrame)
    area.setWidget(widget)
    return area


def note(text: str, name: str = "") -> QLabel:
    label = QLabel(text)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextSelectableByMouse | Qt.LinksAccessibleByMouse)
    label.setOpenExternalLinks(True)
    if name:
        label.setObjectName(name)
    return label
