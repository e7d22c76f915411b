"""The base of the steps that host a canvas or a monitor (Dataflow, Placement, Run): built on first show.

The window opens without paying for pyqtgraph, the graph scene and the memory estimate of every GPU (see
bench/bench_gui.py for the start-up figures).
"""

from __future__ import annotations

from PySide6.QtWidgets import QVBoxLayout, QWidget

from wizard.gui.document import PlanDocument
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
