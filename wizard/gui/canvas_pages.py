"""Steps that host the canvases (dataflow editor, placement board) and the run monitor.

Each builds its content the first time it is shown: the window opens without paying for pyqtgraph, the
graph scene and the memory estimate of every GPU (see bench/bench_gui.py for the start-up figures).
"""

from __future__ import annotations

from PySide6.QtWidgets import QVBoxLayout, QWidget

from wizard.gui.document import PlanDocument
from wizard.gui import steps
from wizard.gui.widgets.page import Page


class LazyPage(Page):
    """A page whose widget is made by ``build()`` on first show (or first use of ``content``)."""

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        self._content: QWidget | None = None
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)

    def build(self) -> QWidget:
        raise NotImplementedError

    @property
    def content(self) -> QWidget:
        if self._content is None:
            self._content = self.build()
            self._layout.addWidget(self._content)
        return self._content

    def entered(self) -> None:
        self.content  # noqa: B018 - building it is the point

    def keys(self) -> set[str]:
        return set()  # the form steps hold the fields; these steps show them


class DataflowPage(LazyPage):
    step, title, subtitle = steps.DATAFLOW

    def build(self) -> QWidget:
        from wizard.gui.dataflow import DataflowEditor

        return DataflowEditor(self.doc)

    @property
    def editor(self):
        return self.content


class PlacementPage(LazyPage):
    step, title, subtitle = steps.PLACEMENT

    def build(self) -> QWidget:
        from wizard.gui.placement import PlacementBoard

        return PlacementBoard(self.doc)

    @property
    def board(self):
        return self.content


class RunPage(LazyPage):
    step, title, subtitle = steps.RUN

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        self._python: str | None = None

    def build(self) -> QWidget:
        from wizard.gui.run.panel import RunPanel

        return RunPanel(self.doc, self._python)

    @property
    def panel(self):
        return self.content

    def set_target_python(self, path: str) -> None:
        """The Python the Environment step probed; used when the panel is (or was) built."""
        self._python = path
        if self._content is not None:
            self._content.set_target_python(path)
