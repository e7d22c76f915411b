"""The Placement step: the board of GPUs, pools and roles (``wizard.gui.placement``), built on first show."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget

from wizard.gui.steps import texts
from wizard.gui.steps._lazy import LazyPage


class PlacementPage(LazyPage):
    step, title, subtitle = texts("placement")

    def build(self) -> QWidget:
        from wizard.gui.placement import PlacementBoard

        return PlacementBoard(self.doc)

    @property
    def board(self):
        return self.content
