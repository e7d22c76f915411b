"""The predicted step beside the placement board's verdict, and the mean response length it assumes.

:func:`step_words` is the headline's " · a step about 31 s" (with its phases and assumptions as the tooltip);
:class:`ResponseLength` is the box under it that sets the mean response length (typed, stepped, or read from a
finished run's folder on a worker), one undo step on the document each time.
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QPushButton, QSpinBox, QVBoxLayout, QWidget

from wizard.gui.document import PlanDocument
from wizard.gui.workers import Worker

RESPONSES_TIP = ("The mean response length the predicted step time (and Make it fit's) assumes. \"The maximum\": "
                 "every response runs to data.max_response_length, the worst case, which is what untrained or "
                 "random-weight models do. A smoke run's samples say what yours average: From a run….")


def step_words(doc: PlanDocument) -> tuple[str, str]:
    """(" · a step about 31 s (predicted)" for beside the verdict, its phases and assumptions as rich text for the
    headline's tooltip); empty where there is no step time. A prediction of a few terms: cheap enough for every
    assessment."""
    if doc.assessment is None:
        return "", ""
    from wizard.core.steptime.terms import seconds_text
    from wizard.usecases.advising import step_time

    memory = doc.assessment.memory
    step = step_time(memory)
    slowest = step.longest()
    paragraphs = [] if step.seconds is None or slowest is None else [
        [step.line()], ["The longest phase: " + slowest.lines()[0], *slowest.lines()[1:]],
        ["Assuming " + step.assumptions[0] if step.assumptions else "", *step.assumptions[1:]]]
    # rich text, so that Qt wraps the long lines of arithmetic at a tooltip's width
    tip = "".join("<p>" + "<br>".join(html.escape(line.strip()) for line in lines) + "</p>" for lines in paragraphs)
    if step.seconds is None:
        return "", tip
    longest = memory.values.get("data.max_response_length")
    tokens = doc.response_tokens
    if tokens and isinstance(longest, int) and not isinstance(longest, bool) and longest > 0:
        tokens = min(tokens, longest)  # what the prediction takes (no response runs past the limit)
    given = f", responses of {tokens:,} tokens" if tokens else ""
    if memory.verdict.word == "does_not_fit":  # no step to run: what it would take, said so
        return f" · a step would take about {seconds_text(step.seconds)} s if it fit (predicted{given})", tip
    return f" · a step about {seconds_text(step.seconds)} s (predicted{given})", tip


class QuietSpinBox(QSpinBox):
    """A spin box the mouse wheel turns only once it has the focus: scrolling the panel past it changes nothing."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.StrongFocus)

    def wheelEvent(self, event) -> None:  # noqa: N802 - Qt's name
        if self.hasFocus():
            super().wheelEvent(event)
        else:
            event.ignore()


class ResponseLength(QWidget):
    """The mean response length the step time assumes: its label, the box (``spin``) and "From a run…". ``said``
    carries what it did for the board's status line."""

    said = Signal(str)

    def __init__(self, doc: PlanDocument, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        self.spin = QuietSpinBox()
        self.spin.setObjectName("responseTokens")
        self.spin.setAccessibleName("Mean response length the step time assumes")
        self.spin.setRange(0, 1 << 18)
        self.spin.setSingleStep(64)
        self.spin.setSpecialValueText("the maximum")
        self.spin.setKeyboardTracking(False)  # typed digits count once: Enter, the arrows or leaving the box
        self.spin.setToolTip(RESPONSES_TIP)
        # the arrows step it often: the plan is judged again once they rest (and at once on Enter or leaving the box)
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(400)
        self.timer.timeout.connect(self._set)
        self.spin.valueChanged.connect(self.timer.start)
        self.spin.editingFinished.connect(self._set)
        self.from_run = QPushButton("From a &run…")
        self.from_run.setToolTip("Take the mean response length of a finished run's last step (its folder under runs/)")
        self.from_run.clicked.connect(self.choose_run_folder)
        self._reading = ""  # the run folder whose response length is being read
        self.reader = Worker(self)  # reads a run folder's metrics off the GUI thread
        self.reader.finished.connect(self._read)
        self.reader.failed.connect(lambda reason: self.said.emit(f"Could not take the response length: {reason}"))
        label = QLabel("Mean &response length (tokens) the step time assumes:")
        label.setWordWrap(True)
        label.setBuddy(self.spin)
        label.setToolTip(RESPONSES_TIP)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(label)
        row = QHBoxLayout()
        row.addWidget(self.spin, 1)
        row.addWidget(self.from_run)
        layout.addLayout(row)

    def sync(self) -> None:
        """Show the document's value (an undo, a preset) unless the user's own edit is about to be set."""
        if self.spin.value() != (self.doc.response_tokens or 0) and not self.timer.isActive():
            self.spin.blockSignals(True)  # the document's: not an edit
            self.spin.setValue(self.doc.response_tokens or 0)
            self.spin.blockSignals(False)

    def _set(self) -> None:
        self.timer.stop()
        self.doc.set_response_tokens(self.spin.value() or None)

    def choose_run_folder(self) -> None:
        from pathlib import Path

        from wizard.usecases.runs import RUNS

        start = Path(RUNS).absolute()
        folder = QFileDialog.getExistingDirectory(self, "A finished run's folder", str(start if start.is_dir() else
                                                                                       Path.cwd()))
        if folder:
            self.read(folder)

    def read(self, folder: str) -> None:
        """Take the mean response length of ``folder``'s last step (read on a worker; one undo step)."""
        from wizard.usecases.runs import mean_response_tokens

        self._reading = folder
        self.said.emit(f"Reading {folder}…")
        self.reader.start(f"read the responses of {folder}", mean_response_tokens, folder)

    def _read(self, answer: tuple[int, int]) -> None:
        tokens, step = answer
        self.doc.set_response_tokens(tokens, f"Responses as in {self._reading}")
        self.said.emit(f"Responses average {tokens:,} tokens: step {step} of {self._reading}")
