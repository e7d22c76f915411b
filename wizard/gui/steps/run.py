"""The Run step: a smoke run of the plan, followed live (``wizard.gui.run.panel.RunPanel``), built on first show."""

from __future__ import annotations

from collections.abc import Mapping

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QWidget

from wizard.gui.document import PlanDocument
from wizard.gui.steps import texts
from wizard.gui.steps._lazy import LazyPage
from wizard.gui.widgets.page import Page


class RunPage(LazyPage):
    step, title, subtitle = texts("run")
    forecast_found = Signal(str, object, str)  # a smoke run's forecast: (plan fingerprint, Forecast, run folder)

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        self._python: str | None = None

    def build(self) -> QWidget:
        from wizard.gui.run.panel import RunPanel

        panel = RunPanel(self.doc, self._python)
        panel.environment = getattr(self, "_environment", None)
        panel.insight.forecast_found.connect(self.forecast_found)
        return panel

    @property
    def panel(self):
        return self.content

    def wire(self, pages: Mapping[str, Page]) -> None:
        pages["environment"].python_checked.connect(self.set_target_python)
        pages["environment"].environment_known.connect(self.set_environment)

    def set_environment(self, facts) -> None:
        """What the Environment step found in the run's Python (flash-attn): the launch adds SDPA when it lacks it."""
        self._environment = facts
        if self._content is not None:
            self._content.environment = facts

    def set_target_python(self, path: str) -> None:
        """The Python the Environment step probed; used when the panel is (or was) built."""
        self._python = path
        if self._content is not None:
            self._content.set_target_python(path)
