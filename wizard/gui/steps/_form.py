"""The base of the steps that are forms over the plan (Model, Data, Algorithm, Rollout & training)."""

from __future__ import annotations

from PySide6.QtWidgets import QGroupBox, QVBoxLayout, QWidget

from wizard.gui.document import PlanDocument
from wizard.gui.widgets.fields import FieldForm
from wizard.gui.widgets.page import Page, scrolled


class FormPage(Page):
    """A page of grouped FieldForms, with room for extra widgets below."""

    groups: list[tuple[str, list[tuple]]] = []

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        self.body = QWidget()
        self.body_layout = QVBoxLayout(self.body)
        self.boxes: list[QGroupBox] = []  # one per group, for what a step adds under a group's fields
        for title, rows in self.groups:
            box = QGroupBox(title)
            form = FieldForm(doc, rows)
            QVBoxLayout(box).addWidget(form)
            self.forms.append(form)
            self.boxes.append(box)
            self.body_layout.addWidget(box)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.scroll = scrolled(self.body)
        layout.addWidget(self.scroll)

    def finish(self) -> None:
        self.body_layout.addStretch(1)
