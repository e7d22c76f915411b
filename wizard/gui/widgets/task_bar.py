"""What a step shows while its Worker runs: a busy bar, what is running, and Cancel."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

from wizard.gui.workers import Worker


class TaskBar(QWidget):
    """Busy bar, label and Cancel for one Worker; "Cancelled." once cancelled, nothing once it answered."""

    def __init__(self, runner: Worker, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.runner = runner
        self.label = QLabel()
        self.label.setObjectName("taskLabel")
        self.bar = QProgressBar()
        self.bar.setRange(0, 0)  # busy: these probes cannot say how far they are
        self.bar.setMaximumWidth(160)
        self.bar.setAccessibleName("Working")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(runner.cancel)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.label, 1)
        row.addWidget(self.bar)
        row.addWidget(self.cancel_button)
        runner.started.connect(self._started)
        runner.finished.connect(lambda _r: self._ended(""))
        runner.failed.connect(lambda _m: self._ended(""))
        runner.cancelled.connect(lambda: self._ended("Cancelled."))
        self._ended("")

    def _started(self, label: str) -> None:
        self.label.setText(label + "…")
        self.bar.show()
        self.cancel_button.show()
        self.cancel_button.setEnabled(True)

    def _ended(self, text: str) -> None:
        self.label.setText(text)
        self.bar.hide()
        self.cancel_button.hide()
