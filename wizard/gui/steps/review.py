"""The Review step: the files the plan gives (run.sh, config.yaml), the changes from verl's defaults, and the
verdict; Next stays off while verl would reject the plan. When a smoke run of this very plan exists (run in this
session, or a folder under runs/ whose run.json has the plan's fingerprint), its forecast of the full run too."""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QLabel,
    QPlainTextEdit,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
)

from wizard.core.plan import CONFIG_YAML, RUN_SH
from wizard.adapters.files.resources import load_key_docs, load_schema
from wizard.core.run import Forecast, plan_fingerprint
from wizard.core.verl.key_help import changes_from_defaults, key_help, set_to_default
from wizard.gui.document import PlanDocument
from wizard.gui.steps import texts
from wizard.gui.widgets.highlight import ConfigHighlighter
from wizard.gui.widgets.page import Page
from wizard.gui.workers import Worker
from wizard.gui.wording import window_text
from wizard.usecases.plan_notes import MEMORY_UNKNOWN
from wizard.usecases.runs import RUNS


def code_view(name: str) -> QPlainTextEdit:
    view = QPlainTextEdit()
    view.setReadOnly(True)
    view.setObjectName(name)
    view.setAccessibleName(name)
    view.setLineWrapMode(QPlainTextEdit.NoWrap)
    view.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
    ConfigHighlighter(view.document())
    return view


class ReviewPage(Page):
    step, title, subtitle = texts("review")
    incomplete_hint = "Fix the errors below to go on to writing the files."

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        self.tabs = QTabWidget()
        self.run_sh = code_view("runShView")
        self.yaml = code_view("yamlView")
        self.changes = QTableWidget(0, 3)
        self.changes.setObjectName("changesTable")
        self.changes.setAccessibleName("Changes from verl's defaults")
        self.changes.setHorizontalHeaderLabels(["verl key", "This plan", "verl's default"])
        self.changes.setEditTriggers(QTableWidget.NoEditTriggers)
        self.changes.verticalHeader().setVisible(False)
        self.changes.horizontalHeader().setStretchLastSection(True)
        self.tabs.addTab(self.run_sh, "run.sh")
        self.tabs.addTab(self.yaml, "config.yaml")
        self.tabs.addTab(self.changes, "Changes from verl's defaults")
        self.verdict = QLabel()
        self.verdict.setObjectName("reviewVerdict")
        self.verdict.setWordWrap(True)
        self.forecast = QLabel()
        self.forecast.setObjectName("reviewForecast")
        self.forecast.setWordWrap(True)
        self.forecast.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.forecast.setVisible(False)
        self.forecasts: dict[str, tuple[Forecast, str]] = {}  # plan fingerprint -> (forecast, its run folder)
        self._looked: set[str] = set()
        self._finding = ""
        self._finder = Worker(self)
        self._finder.finished.connect(self._found)
        layout = QVBoxLayout(self)
        layout.addWidget(self.verdict)
        layout.addWidget(self.forecast)
        layout.addWidget(self.tabs, 1)
        doc.changed.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        self.run_sh.setPlainText(self.doc.files.get(RUN_SH, ""))
        self.yaml.setPlainText(self.doc.files.get(CONFIG_YAML, "# " + "; ".join(self.doc.notes)))
        result = self.doc.result
        if result is None:
            self.verdict.setText("<b style='color:#c62828'>No verdict</b>: the check did not run to the end "
                                 "(the findings panel says why).")
        elif result.ok:
            text = "verl 0.9.1 would accept this config. Write the files next."
            unchecked = next((f for f in result.findings if f.rule == MEMORY_UNKNOWN), None)
            if unchecked is not None:  # accepted is not "fits": say that memory was never judged
                why = window_text(unchecked.message).removeprefix("No memory estimate: ")
                text += f"<br><b>Memory not checked</b>: {html.escape(why, quote=False)} (a note in Findings)"
            self.verdict.setText(text)
        else:
            errors = sum(1 for f in result.findings if f.severity.value == "error")
            self.verdict.setText(f"<b style='color:#c62828'>{errors} error(s)</b> would stop verl: fix them in the "
                                 "findings panel (each has its fix) before writing.")
        self._fill_changes()
        self._show_forecast()
        self.complete_changed.emit()

    # -- the forecast of a smoke run of this plan ------------------------------------------------------------
    def wire(self, pages: Mapping[str, Page]) -> None:
        pages["run"].forecast_found.connect(self.add_forecast)

    def add_forecast(self, fingerprint: str, forecast: Forecast, run_dir: str) -> None:
        self.forecasts[fingerprint] = (forecast, run_dir)
        self._show_forecast()

    def entered(self) -> None:
        """Look under runs/ once per plan for a smoke run of it (off the GUI thread)."""
        from wizard.adapters.files.run_folder import forecast_for_plan

        fp = plan_fingerprint(self.doc.plan)
        if fp in self.forecasts or fp in self._looked or self._finder.running:
            return
        self._looked.add(fp)
        self._finder.start("look for a smoke run of this plan", forecast_for_plan, str(Path(RUNS).absolute()), fp)
        self._finding = fp

    def _found(self, answer) -> None:
        if answer is not None:
            self.add_forecast(self._finding, answer[1], answer[0])

    def _show_forecast(self) -> None:
        got = self.forecasts.get(plan_fingerprint(self.doc.plan))
        self.forecast.setVisible(got is not None)
        if got is not None:
            fc, run_dir = got
            self.forecast.setText(f"<b>From the smoke run in {html.escape(run_dir)}:</b> {html.escape(fc.line())} "
                                  f"<small>Assuming {html.escape('; '.join(fc.assumptions))}.</small>")

    def _fill_changes(self) -> None:
        schema, docs = load_schema(), load_key_docs()
        engine = self.doc.result.engine if self.doc.result else None
        rows = changes_from_defaults(schema, self.doc.overrides, engine)
        again = set_to_default(schema, self.doc.overrides, engine)
        self.changes.clearSpans()
        self.changes.clearContents()  # the last fill's spanning line would size the key column (2,871 px)
        self.changes.setRowCount(len(rows) + bool(again))
        for r, (key, value, default) in enumerate(rows):
            for c, text in enumerate((key, value, default)):
                item = QTableWidgetItem(text)
                item.setToolTip(key_help(schema, docs, key, engine))
                self.changes.setItem(r, c, item)
        self.changes.resizeColumnsToContents()  # by the changes: the line below spans the columns
        if again:  # kept in the files as written, but no change: said once, not listed as changes
            item = QTableWidgetItem(f"Also set, to verl's own default (no change): {', '.join(again)}")
            item.setForeground(self.palette().placeholderText())
            item.setToolTip("\n".join(again))
            self.changes.setItem(len(rows), 0, item)
            self.changes.setSpan(len(rows), 0, 1, 3)
            self.changes.resizeRowToContents(len(rows))

    def is_complete(self) -> bool:
        return self.doc.result is not None and self.doc.result.ok

    def show_key(self, key: str) -> bool:
        """Select the line of run.sh that sets ``key`` (for keys no step has a field for)."""
        bare = key.lstrip("+~")
        self.tabs.setCurrentWidget(self.run_sh)
        found = self.run_sh.find(bare)
        if not found:  # search from the top
            cursor = self.run_sh.textCursor()
            cursor.movePosition(cursor.MoveOperation.Start)
            self.run_sh.setTextCursor(cursor)
            found = self.run_sh.find(bare)
        self.run_sh.setFocus(Qt.OtherFocusReason)
        return found
