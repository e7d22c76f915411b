"""What the Run page says about the run: a status line with a progress bar, and a banner for the triage
verdict (why it failed, and the fix) and the health alarms as they fire.

Texts are for a newcomer: what is happening now, what to expect next, and on failure the cause in words with
the numbers and the fix, above the log line it came from.
"""

from __future__ import annotations

import html
from pathlib import Path

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QTextDocumentFragment
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from wizard.core.findings import Finding, Severity
from wizard.gui.wording import window_finding

# lifecycle events of wizard.core.run.logparse -> what the status line says while the run goes on
PHASES = {
    "config_ok": "verl accepted the configuration; starting Ray…",
    "ray_started": "Ray started; loading the models and workers (minutes on a GPU)…",
    "ready": "Training…",
    "finished": "Last step done; finishing…",
    "error": "verl reported an error; waiting for the run to end…",
}
FAILURE_STYLE = "QFrame#failure { background: #fdecea; border: 1px solid #c62828; border-radius: 4px; }"
ALARM_STYLE = "QFrame#alarms { background: #fff8e1; border: 1px solid #a15c00; border-radius: 4px; }"
INK = "color: #1a1a1a;"  # the banners have light backgrounds of their own, so their text is dark in any palette


class RunStatus(QLabel):
    """One line: the phase of the run or how it ended. ``progress`` is the step bar under it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Not started. Dry run shows the exact command; Start runs it.", parent)
        self.setObjectName("runStatus")
        self.setWordWrap(True)
        self.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.progress = QProgressBar()
        self.progress.setObjectName("runProgress")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("no run yet")
        self.total: int | None = None

    def say(self, text: str, error: bool = False) -> None:
        self.setStyleSheet("color: #c62828;" if error else "")
        self.setText(text)

    def started(self, pid: int | None, run_dir: Path) -> None:
        self.total = None
        self.progress.setRange(0, 0)  # busy until verl says how many steps
        self.progress.setFormat("")
        self.say(f"Starting verl (pid {pid}): Python imports take a few seconds. Full log: {run_dir / 'run.log'}")

    def update_run(self, events: list[tuple[str, object]], progress: tuple[int, int] | None) -> None:
        for kind, value in events:
            if kind in PHASES:
                self.say(PHASES[kind])
            elif kind == "total_steps":
                self.say(f"The run has {value} training steps; loading the models and workers…")
        if progress is not None:
            self.show_progress(progress)
            if progress[0]:
                self.say(f"Training: step {progress[0]} of {progress[1]}.")

    def show_progress(self, progress: tuple[int, int] | None) -> None:
        if progress is None:
            return
        done, total = progress
        self.total = total
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        self.progress.setFormat(f"step {done} of {total}")

    def stopping(self) -> None:
        self.say("Stopping: ending the run and every process it started (Ray included)…")

    def ended(self, result) -> None:
        if self.progress.maximum() == 0:  # never learned the number of steps
            self.progress.setRange(0, 1)
            self.progress.setValue(0)
            self.progress.setFormat("no training step ran")
        if result.left:
            self.say(f"Stopped, but {len(result.left)} process(es) could not be ended: pids "
                     f"{', '.join(map(str, result.left))}.", error=True)
        elif result.halted:
            self.say(f"Stopped: {result.halted}.", error=True)
        elif result.stopped:
            ended = len(result.ended)
            self.say(f"Stopped by you: {ended} process{'es' if ended != 1 else ''} ended, nothing left running.")
        elif result.ok:
            steps = f" ({result.progress[0]} of {result.progress[1]} steps)" if result.progress else ""
            self.say(f"Finished OK{steps}.")
        else:
            self.say(f"The run failed (exit code {result.exit_code}). The cause and the fix are below; the log "
                     "shows every line.", error=True)


class FindingsBanner(QScrollArea):
    """The triage verdict (red) and the health alarms (amber), hidden while there is nothing to say. It scrolls
    past ``MAX_HEIGHT`` so a long verdict never squeezes the log and the plots out of the window."""

    fix_requested = Signal(object)  # Finding
    MAX_HEIGHT = 190

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.NoFrame)
        self.setMaximumHeight(self.MAX_HEIGHT)
        self.setSizePolicy(QSizePolicy.Preferred, QSizePolicy.Maximum)
        inner = QWidget()
        self.setWidget(inner)
        self.failure = QFrame()
        self.failure.setObjectName("failure")
        self.failure.setStyleSheet(FAILURE_STYLE)
        self.failure_text = self._label("triageText")
        self.fix_buttons = QHBoxLayout()
        box = QVBoxLayout(self.failure)
        box.addWidget(self.failure_text)
        box.addLayout(self.fix_buttons)
        self.alarms = QFrame()
        self.alarms.setObjectName("alarms")
        self.alarms.setStyleSheet(ALARM_STYLE)
        self.alarm_text = self._label("alarmText")
        QVBoxLayout(self.alarms).addWidget(self.alarm_text)
        layout = QVBoxLayout(inner)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.failure)
        layout.addWidget(self.alarms)
        layout.addStretch(1)
        self._alarms: list[Finding] = []
        self.clear()

    @staticmethod
    def _label(name: str) -> QLabel:
        label = QLabel()
        label.setObjectName(name)
        label.setWordWrap(True)
        label.setTextFormat(Qt.RichText)
        label.setTextInteractionFlags(Qt.TextSelectableByMouse)
        label.setStyleSheet(INK)
        return label

    def clear(self) -> None:
        self._alarms = []
        self.failure_text.clear()
        self.alarm_text.clear()
        self._clear_buttons()
        self.failure.hide()
        self.alarms.hide()
        self.hide()

    def sizeHint(self) -> QSize:  # noqa: N802
        """As tall as the text needs at the current width, up to MAX_HEIGHT (then it scrolls)."""
        inner = self.widget().layout()
        width = max(200, self.viewport().width())
        height = inner.heightForWidth(width) if inner.hasHeightForWidth() else inner.sizeHint().height()
        return QSize(super().sizeHint().width(), min(self.MAX_HEIGHT, height + 2 * self.frameWidth()))

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():
            self.updateGeometry()

    def _clear_buttons(self) -> None:
        while self.fix_buttons.count():
            item = self.fix_buttons.takeAt(0)
            if item.widget():
                item.widget().deleteLater()

    def show_findings(self, findings: list[Finding], title: str, evidence: str | None) -> None:
        """The verdict: each finding's cause and fix, then the log line it was read from."""
        self._clear_buttons()
        if not findings:
            self.failure.hide()
            self.setVisible(self.alarms.isVisibleTo(self))
            return
        parts = [f"<p style='font-size:115%'><b>{html.escape(title)}</b></p>"]
        for f in findings:
            word = "Cause" if f.severity is Severity.ERROR else "Note"
            shown = window_finding(f)
            parts.append(f"<p><b>{word}:</b> {html.escape(shown.message)}"
                         + (f"<br><b>Fix:</b> {html.escape(shown.fix)}" if shown.fix else "") + "</p>")
            if f.fix_overrides:
                button = QPushButton(f"Apply to the plan: {' '.join(f.fix_overrides)}")
                button.setToolTip("Changes the plan (undo with Ctrl+Z); start again to try it")
                button.clicked.connect(lambda _=False, f=f: self.fix_requested.emit(f))
                self.fix_buttons.addWidget(button)
        if evidence:
            parts.append(f"<p><b>The log says:</b> <code>{html.escape(evidence[:400])}</code></p>")
        self.fix_buttons.addStretch(1)
        self.failure_text.setText("".join(parts))
        self.failure.show()
        self.show()
        self.updateGeometry()
        self.ensureVisible(0, 0)

    def add_alarms(self, alarms: list[Finding]) -> None:
        """Health alarms as they fire (each once), newest last."""
        self._alarms += alarms
        rows = [f"<p><b>{'Alarm' if f.severity is Severity.ERROR else 'Warning'}:</b> {html.escape(f.message)}"
                + (f"<br><b>What to do:</b> {html.escape(f.fix)}" if f.fix else "") + "</p>"
                for f in map(window_finding, self._alarms)]
        self.alarm_text.setText("<p><b>Health alarms from the metrics</b></p>" + "".join(rows))
        self.alarms.show()
        self.show()
        self.updateGeometry()

    def failure_plain(self) -> str:
        """The verdict as plain text ('' while hidden)."""
        return _plain(self.failure_text.text()) if not self.failure.isHidden() else ""

    def alarms_plain(self) -> str:
        return _plain(self.alarm_text.text()) if not self.alarms.isHidden() else ""


def _plain(rich: str) -> str:
    return QTextDocumentFragment.fromHtml(rich).toPlainText()


__all__ = ["RunStatus", "FindingsBanner", "PHASES"]
