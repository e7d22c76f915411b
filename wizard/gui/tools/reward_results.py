"""What the reward bench found, shown: the verdict, the score of every call, the range and a histogram,
the flags, and the traceback of the user's code.

Display only: the verdict comes from core.reward_verdict, the flags from core.reward_bench.judge (the
same findings the CLI prints). Selecting a row that raised shows that call's traceback, so a newcomer
can read where their function failed without opening a terminal.
"""

from __future__ import annotations

import html
import math

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QPalette
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from wizard.core.findings import Finding, Severity
from wizard.core.reward import BenchSummary, Trial, Verdict, fmt_score
from wizard.core.visible import visible
from wizard.gui.widgets.page import note
from wizard.gui.wording import window_finding

LEVEL_COLOURS = {"good": "#2e7d32", "warning": "#ef6c00", "error": "#c62828", "none": "#c62828"}
SEVERITY_COLOURS = {Severity.ERROR: "#c62828", Severity.WARNING: "#ef6c00", Severity.INFO: "#546e7a"}
# The core's candidate kinds, in a newcomer's words.
CANDIDATE_WORDS = {
    "ground_truth": "just the answer",
    "ground_truth_formatted": "the answer in the scorer's format",
    "empty": "an empty response",
    "wrong": "a wrong answer",
    "user": "your text",
}
# The bench's flags (core.reward_bench.judge's rule ids) by the names a newcomer looks for.
FLAG_NAMES = {
    "reward.timeout": "timed out", "reward.exception": "exception", "reward.non_numeric": "non-numeric",
    "reward.nan": "NaN", "reward.constant": "all equal", "reward.no_signal": "no signal", "reward.slow": "slow",
    "reward.no_scorer": "no scorer", "reward.unscorable_rows": "rows without an answer",
}
COLUMNS = ("Row", "data_source", "Response", "Text scored", "Score", "Time (ms)")
TEXT_CHARS = 90
TRACEBACK_LINES = 18


def score_text(trial: Trial) -> str:
    """What one call gave, as a cell: the number, or why there is none."""
    if trial.error:
        return "error"
    if trial.score is None:
        return f"not a number: {trial.raw}"[:60]
    return fmt_score(trial.score)


def _one_line(text: str) -> str:
    flat = visible(text)  # line breaks as ⏎, other control characters shown
    return flat if len(flat) <= TEXT_CHARS else flat[: TEXT_CHARS - 1] + "…"


class RewardResults(QWidget):
    """The bench's outcome; ``show_outcome`` fills it, ``clear`` empties it."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.trials: list[Trial] = []
        self.verdict = QLabel()
        self.verdict.setObjectName("rewardVerdict")
        self.verdict.setWordWrap(True)
        self.verdict.setTextInteractionFlags(Qt.TextSelectableByMouse)
        font = self.verdict.font()
        font.setPointSizeF(font.pointSizeF() * 1.2)
        font.setBold(True)
        self.verdict.setFont(font)
        self.summary = note("", "rewardSummary")
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setObjectName("rewardScores")
        self.table.setAccessibleName("Scores per call")
        self.table.setHorizontalHeaderLabels(list(COLUMNS))
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setStretchLastSection(False)
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.setSelectionBehavior(QTableWidget.SelectRows)
        self.table.setMinimumHeight(170)
        self.table.itemSelectionChanged.connect(self._selected)
        self.histogram = pg.PlotWidget()
        self.histogram.setObjectName("rewardHistogram")
        self.histogram.setAccessibleName("Distribution of scores")
        self.histogram.setFixedHeight(150)
        self.histogram.setBackground(self.palette().color(QPalette.Base))
        self.histogram.setMouseEnabled(x=False, y=False)
        self.histogram.hideButtons()
        self.histogram.setLabel("left", "calls")
        self.histogram.setLabel("bottom", "score")
        self.flags = note("", "rewardFlags")
        self.flags.setTextFormat(Qt.RichText)
        self.traceback_title = note("", "rewardTracebackTitle")
        self.traceback = QPlainTextEdit()
        self.traceback.setObjectName("rewardTraceback")
        self.traceback.setAccessibleName("Traceback of your reward function")
        self.traceback.setReadOnly(True)
        self.traceback.setTextInteractionFlags(Qt.TextSelectableByMouse | Qt.TextSelectableByKeyboard)
        self.traceback.setLineWrapMode(QPlainTextEdit.NoWrap)
        self.traceback.setFont(QFont("monospace"))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        # the traceback right under the verdict that points to it; the flags' fix text says "above"
        for widget in (self.verdict, self.traceback_title, self.traceback, self.summary, self.table, self.histogram,
                       self.flags):
            layout.addWidget(widget)
        self.clear()

    # -- states -----------------------------------------------------------------------------------
    def clear(self, message: str = "", level: str = "none") -> None:
        self.trials = []
        self.set_verdict(message, level)
        self.summary.setText("")
        self.flags.setText("")
        self.table.setRowCount(0)
        for widget in (self.summary, self.table, self.histogram, self.flags, self.traceback_title, self.traceback):
            widget.hide()

    def set_verdict(self, text: str, level: str) -> None:
        self.verdict.setText(text)
        self.verdict.setStyleSheet(f"color: {LEVEL_COLOURS.get(level, '')}" if level != "neutral" else "")
        self.verdict.setVisible(bool(text))

    def show_outcome(self, trials: list[Trial], summary: BenchSummary, findings: list[Finding], verdict: Verdict,
                     data_sources: dict[int, str]) -> None:
        self.clear()
        self.trials = list(trials)
        self.set_verdict(verdict.text, verdict.level)
        self._fill_table(data_sources)
        self._show_summary(summary)
        self._show_flags(findings)
        first = next((t for t in self.trials if t.traceback), None)
        if first is not None:
            self._show_traceback(first)

    # -- parts ------------------------------------------------------------------------------------
    def _fill_table(self, data_sources: dict[int, str]) -> None:
        self.table.setRowCount(len(self.trials))
        for r, t in enumerate(self.trials):
            cells = (str(t.row), data_sources.get(t.row, ""), CANDIDATE_WORDS.get(t.candidate, t.candidate),
                     _one_line(t.text) if t.text else "(empty)", score_text(t), f"{t.seconds * 1000:.1f}")
            for c, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if c == 3:
                    item.setToolTip(t.text[:4000])
                if c == 4 and (t.error or t.score is None or not math.isfinite(t.score)):
                    item.setForeground(QColor("#c62828"))
                    item.setToolTip(t.error or t.raw)
                if c in (0, 4, 5):
                    item.setTextAlignment(Qt.AlignRight | Qt.AlignVCenter)
                self.table.setItem(r, c, item)
        self.table.resizeColumnsToContents()
        self.table.setColumnWidth(3, min(self.table.columnWidth(3), 420))
        self.table.setVisible(bool(self.trials))

    def _show_summary(self, summary: BenchSummary) -> None:
        numbers = sum(summary.distribution.values())
        if summary.min is None:
            self.summary.setText(f"{summary.trials} calls; none gave a usable number.")
        else:
            of = f"the {numbers} of {summary.trials} calls that gave a number" if numbers < summary.trials \
                else f"{summary.trials} calls"
            self.summary.setText(
                f"Scores from {fmt_score(summary.min)} to {fmt_score(summary.max)}, mean {summary.mean:.3g}, over "
                f"{of}; {summary.mean_seconds * 1000:.1f} ms per call on average, "
                f"{summary.max_seconds * 1000:.1f} ms at worst.")
        self.summary.show()
        self.histogram.clear()
        if summary.distribution:
            values = list(summary.distribution)
            counts = [summary.distribution[v] for v in values]
            colour = self.palette().color(QPalette.Highlight)
            self.histogram.addItem(pg.BarGraphItem(x=list(range(len(values))), height=counts, width=0.6,
                                                   brush=colour, pen=colour))
            self.histogram.getAxis("bottom").setTicks([[(i, fmt_score(float(v))) for i, v in enumerate(values)]])
            self.histogram.setXRange(-0.6, len(values) - 0.4, padding=0)
            self.histogram.setYRange(0, max(counts) * 1.1, padding=0)
            step = max(1, math.ceil(max(counts) / 5))  # whole calls: no tick at 1.5
            self.histogram.getAxis("left").setTickSpacing(step, step)
            self.histogram.show()

    def _show_flags(self, findings: list[Finding]) -> None:
        lines = []
        for f in map(window_finding, findings):
            colour = SEVERITY_COLOURS.get(f.severity, "")
            first = f.message.split("\n", 1)[0]  # the traceback goes in its own box
            fix = f" <i>Fix:</i> {html.escape(f.fix)}" if f.fix else ""
            name = FLAG_NAMES.get(f.rule, f.rule)
            lines.append(f"<span style='color:{colour}'><b>{name}</b> ({f.severity.value})</span>: "
                         f"{html.escape(first)}.{fix}")
        self.flags.setText("<br>".join(lines) if lines else "No flags: no exception, no NaN, no non-numeric "
                                                             "return, the scores differ, and every call was fast.")
        self.flags.show()

    def _show_traceback(self, trial: Trial) -> None:
        self.traceback_title.setText(f"Traceback of your code (row {trial.row}, "
                                     f"{CANDIDATE_WORDS.get(trial.candidate, trial.candidate)}); select and copy it:")
        text = trial.traceback or trial.error or ""
        self.traceback.setPlainText(text)
        lines = min(text.count("\n") + 2, TRACEBACK_LINES)  # as tall as the traceback, up to a limit
        self.traceback.setFixedHeight(self.traceback.fontMetrics().lineSpacing() * lines + 12)
        self.traceback_title.show()
        self.traceback.show()

    def _selected(self) -> None:
        rows = {i.row() for i in self.table.selectedItems()}
        if len(rows) == 1:
            trial = self.trials[rows.pop()]
            if trial.traceback:
                self._show_traceback(trial)
