"""The Dataflow step: the editor of verl's training step as a graph (``wizard.gui.dataflow``), built on first show."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from wizard.gui.steps import texts
from wizard.gui.steps._lazy import LazyPage


class DataflowPage(LazyPage):
    step, title, subtitle = texts("dataflow")

    def build(self) -> QWidget:
        from wizard.gui.dataflow import DataflowEditor

        return DataflowEditor(self.doc)

    @property
    def editor(self):
        return self.content
