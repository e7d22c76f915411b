"""The Run page's Samples tab: what the model generated, step by step, with the flags and each step's verdict.

Above: which generations (training or validation), which step, which flag, and a search over prompt, response
and ground truth. Then the steps' one-line verdicts and what they mean (findings with a fix). Below: the table
(sortable) and, for the selected response, everything about it. The data comes judged from the core
(``wizard.core.run.samples``); this widget only shows it.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QSplitter,
    QStackedWidget,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from wizard.core.findings import Severity
from wizard.core.run import FLAGS, FLAG_HELP, InspectedStep, StepVerdict
from wizard.core.visible import visible
from wizard.gui.run.samples_model import FLAGGED, Row, SamplesModel, rows_of
from wizard.gui.wording import window_finding

KINDS = ("training", "validation")
SEARCH_DELAY_MS = 150
SHOWN_STEPS = 3  # verdict lines shown for "every step": the last ones
EMPTY_TEXT = ("No generations yet. A smoke run started here dumps every step's prompts, responses and scores into "
              "its folder (rollout/ and validation/); they show here as each step ends. Open run folder… shows an "
              "earlier run's.")
_COLOURS = {Severity.ERROR: "#c62828", Severity.WARNING: "#a15c00", Severity.INFO: "palette(text)"}


class SamplesView(QWidget):
    """``set_steps(kind, steps)`` shows a run's judged generations; ``add_steps`` appends a live run's new ones."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._rows: dict[str, list[Row]] = {k: [] for k in KINDS}
        self._verdicts: dict[str, dict[int, StepVerdict]] = {k: {} for k in KINDS}
        self.model = SamplesModel(self)
        self._build()

    def _build(self) -> None:
        self.kind = QComboBox()
        self.kind.addItems(["Training", "Validation"])
        self.kind.setToolTip("Training generations (trainer.rollout_data_dir) or validation's")
        self.step = QComboBox()
        self.step.setToolTip("One step, or every step")
        self.flag = QComboBox()
        self.flag.addItem("every response", None)
        self.flag.addItem("any flag", FLAGGED)
        for f in FLAGS:
            self.flag.addItem(f, f)
            self.flag.setItemData(self.flag.count() - 1, FLAG_HELP[f], Qt.ToolTipRole)
        self.search = QLineEdit()
        self.search.setObjectName("samplesSearch")
        self.search.setPlaceholderText('Search prompts, responses, ground truths ("a phrase" as one)…')
        self.search.setClearButtonEnabled(True)
        self.count = QLabel()
        self.count.setObjectName("samplesCount")
        self.verdict = QLabel()
        self.verdict.setObjectName("samplesVerdict")
        self.verdict.setWordWrap(True)
        self.verdict.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.table = self._make_table()
        self.detail = QPlainTextEdit()
        self.detail.setObjectName("sampleDetail")
        self.detail.setReadOnly(True)
        self.detail.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
        self.detail.setLineWrapMode(QPlainTextEdit.WidgetWidth)
        self.detail.setPlaceholderText("Select a response to read all of it.")
        self._layout()
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_DELAY_MS)
        self._search_timer.timeout.connect(self._apply_filter)
        self.search.textChanged.connect(lambda _t: self._search_timer.start())
        self.kind.currentIndexChanged.connect(lambda _i: self._show_kind())
        self.step.currentIndexChanged.connect(lambda _i: self._apply_filter())
        self.flag.currentIndexChanged.connect(lambda _i: self._apply_filter())
        self.table.selectionModel().currentRowChanged.connect(lambda cur, _prev: self._show_detail(cur.row()))
        self.model.modelReset.connect(self._count_changed)
        self._refresh_steps()

    def _make_table(self) -> QTableView:
        table = QTableView()
        table.setObjectName("samplesTable")
        table.setAccessibleName("Generated samples")
        table.setModel(self.model)
        table.setSortingEnabled(True)
        table.sortByColumn(0, Qt.AscendingOrder)
        table.setSelectionBehavior(QAbstractItemView.SelectRows)
        table.setSelectionMode(QAbstractItemView.SingleSelection)
        table.setWordWrap(False)
        table.verticalHeader().setVisible(False)
        table.verticalHeader().setDefaultSectionSize(table.fontMetrics().height() + 6)
        header = table.horizontalHeader()
        for col, width in ((0, 44), (1, 40), (2, 190), (4, 52), (5, 90)):
            table.setColumnWidth(col, width)
        header.setSectionResizeMode(3, QHeaderView.Stretch)
        table.setColumnWidth(6, 130)
        return table

    def _layout(self) -> None:
        bar = QHBoxLayout()
        for label, w in (("&Generations:", self.kind), ("S&tep:", self.step), ("F&lag:", self.flag)):
            bar.addWidget(QLabel(label, buddy=w))
            bar.addWidget(w)
        bar.addWidget(self.search, 1)
        bar.addWidget(self.count)
        split = QSplitter(Qt.Vertical)  # the whole response below the table, wrapped, the response first
        split.addWidget(self.table)
        split.addWidget(self.detail)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        content = QWidget()
        box = QVBoxLayout(content)
        box.setContentsMargins(0, 0, 0, 0)
        box.addLayout(bar)
        box.addWidget(self.verdict)
        box.addWidget(split, 1)
        self.empty = QLabel(EMPTY_TEXT)
        self.empty.setObjectName("samplesEmpty")
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignCenter)
        self.stack = QStackedWidget()
        self.stack.addWidget(self.empty)
        self.stack.addWidget(content)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.stack)

    # -- content ----------------------------------------------------------------------------------------------
    def clear(self) -> None:
        for k in KINDS:
            self._rows[k] = []
            self._verdicts[k] = {}
        self.detail.clear()
        self._show_kind()

    def set_steps(self, kind: str, steps: Sequence[InspectedStep]) -> None:
        self._rows[kind] = rows_of(steps)
        self._verdicts[kind] = {s.verdict.step: s.verdict for s in steps}
        other = KINDS[1 - KINDS.index(kind)]
        if steps and (kind == "training" or not self._rows[other]):  # training first; validation when alone
            self._select_kind(kind)
        self._show_kind()

    def add_steps(self, kind: str, steps: Sequence[InspectedStep]) -> None:
        """A live run's newly dumped steps."""
        if not steps:
            return
        rows = rows_of(steps)
        self._rows[kind] = self._rows[kind] + rows
        self._verdicts[kind].update({s.verdict.step: s.verdict for s in steps})
        if kind == self.current_kind():
            self.model.add_rows(rows)
            self._refresh_steps()
            self._refresh_verdict()
        self.stack.setCurrentIndex(1 if any(self._rows.values()) else 0)

    def current_kind(self) -> str:
        return KINDS[self.kind.currentIndex()]

    def _select_kind(self, kind: str) -> None:
        self.kind.blockSignals(True)
        self.kind.setCurrentIndex(KINDS.index(kind))
        self.kind.blockSignals(False)

    def _show_kind(self) -> None:
        kind = self.current_kind()
        self._refresh_steps()
        self.model.set_rows(self._rows[kind])
        self._apply_filter()
        self.stack.setCurrentIndex(1 if any(self._rows.values()) else 0)

    def _refresh_steps(self) -> None:
        steps = sorted(self._verdicts[self.current_kind()])
        current = self.step.currentData()
        self.step.blockSignals(True)
        self.step.clear()
        self.step.addItem("every step", None)
        for s in steps:
            self.step.addItem(f"step {s}", s)
        self.step.setCurrentIndex(max(0, self.step.findData(current)) if current is not None else 0)
        self.step.blockSignals(False)

    # -- filter, verdict, detail ------------------------------------------------------------------------------
    def _apply_filter(self) -> None:
        self._search_timer.stop()
        self.model.set_filter(self.step.currentData(), self.flag.currentData(), self.search.text())
        self._refresh_verdict()

    def set_search(self, text: str) -> None:
        """Search now (typing waits for a pause)."""
        self.search.setText(text)
        self._apply_filter()

    def _count_changed(self) -> None:
        total = len(self.model.rows)
        self.count.setText(f"{len(self.model.shown):,} of {total:,} responses")
        self.detail.clear()

    def verdict_lines(self) -> list[str]:
        verdicts = self._verdicts[self.current_kind()]
        step = self.step.currentData()
        return [v.line for s, v in sorted(verdicts.items()) if step is None or s == step]

    def _refresh_verdict(self) -> None:
        verdicts = self._verdicts[self.current_kind()]
        step = self.step.currentData()
        chosen = [v for s, v in sorted(verdicts.items()) if step is None or s == step]
        lines = [html.escape(v.line) for v in chosen[-SHOWN_STEPS:]]
        if len(chosen) > SHOWN_STEPS:
            lines.insert(0, f"… {len(chosen) - SHOWN_STEPS} earlier steps (pick one above)")
        last = chosen[-1] if chosen else None
        for f in map(window_finding, last.findings if last else []):
            lines.append(f"<span style='color:{_COLOURS[f.severity]}'><b>{html.escape(f.severity.value)}</b>: "
                         f"{html.escape(f.message)}.</span> {html.escape(f.fix or '')}")
        self.verdict.setText("<br>".join(lines))

    def _show_detail(self, view_row: int) -> None:
        row = self.model.row_at(view_row)
        if row is None:
            self.detail.clear()
            return
        s = row.sample
        flags = "\n".join(f"  {f}: {FLAG_HELP[f]}" for f in row.flags) or "  none"
        extra = "".join(f"\n{k}: {v}" for k, v in s.extra.items())
        self.detail.setPlainText(visible(  # line breaks and tabs kept, every other control character shown
            f"step {s.step}, response #{s.index} (prompt {s.group}, answer {s.answer})\n"
            f"score: {'none' if s.score is None else f'{s.score:g}'}   ground truth: {s.ground_truth}{extra}\n"
            f"flags:\n{flags}\n\n--- response ({len(s.response):,} characters) ---\n{s.response or '(empty)'}\n\n"
            f"--- prompt ---\n{s.prompt}", newline=None, tabs=True))

    def select_row(self, view_row: int) -> None:
        self.table.selectRow(view_row)
        self._show_detail(view_row)


__all__ = ["SamplesView", "KINDS"]
