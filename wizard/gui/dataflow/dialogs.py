"""Keyboard ways to do what the mouse does on the canvas: link two ports, cut a link.

Each dialog asks the core the same question a drag asks (``can_connect``) and shows its answer.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from wizard.core.dataflow import Graph, Link, PortRef, all_ports, can_connect, port_label


class ConnectDialog(QDialog):
    """Pick an output and an input; the reason a pair is refused is shown before you press OK."""

    def __init__(self, graph: Graph, source_node: str | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Link two stages")
        self.graph = graph
        self.src = QComboBox()
        self.src.setAccessibleName("From output")
        self.dst = QComboBox()
        self.dst.setAccessibleName("To input")
        for ref in all_ports(graph, "out"):
            self.src.addItem(port_label(ref), ref)
        for ref in all_ports(graph, "in"):
            self.dst.addItem(port_label(ref), ref)
        if source_node is not None:
            first = next((i for i in range(self.src.count()) if self.src.itemData(i).node == source_node), 0)
            self.src.setCurrentIndex(first)
        self.verdict = QLabel()
        self.verdict.setWordWrap(True)
        self.verdict.setObjectName("connectVerdict")
        self.verdict.setAccessibleName("Whether this link is allowed")
        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form = QFormLayout()
        form.addRow("&From (output):", self.src)
        form.addRow("&To (input):", self.dst)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.verdict)
        layout.addWidget(self.buttons)
        self.src.currentIndexChanged.connect(self._update)
        self.dst.currentIndexChanged.connect(self._update)
        self._select_first_compatible()
        self._update()

    def _select_first_compatible(self) -> None:
        src = self.src.currentData()
        for i in range(self.dst.count()):
            if can_connect(self.graph, src, self.dst.itemData(i))[0]:
                self.dst.setCurrentIndex(i)
                return

    def choice(self) -> tuple[PortRef, PortRef]:
        return self.src.currentData(), self.dst.currentData()

    def _update(self, *_) -> None:
        ok, reason = can_connect(self.graph, *self.choice())
        self.verdict.setText(("Allowed" + (f": {reason}" if reason else "")) if ok else f"Refused: {reason}")
        self.buttons.button(QDialogButtonBox.Ok).setEnabled(ok)


class DisconnectDialog(QDialog):
    """Pick a link to cut."""

    def __init__(self, graph: Graph, selected: Link | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Cut a link")
        self.links = QListWidget()
        self.links.setAccessibleName("Links")
        for link in graph.links:
            item = QListWidgetItem(str(link))
            item.setData(256, link)
            self.links.addItem(item)
            if link == selected:
                self.links.setCurrentItem(item)
        if self.links.currentRow() < 0 and self.links.count():
            self.links.setCurrentRow(0)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Cutting a link turns off a stage whose output nothing else reads."))
        layout.addWidget(self.links)
        layout.addWidget(buttons)

    def choice(self) -> Link | None:
        item = self.links.currentItem()
        return item.data(256) if item is not None else None
