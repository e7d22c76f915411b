"""The Environment step: probe the Python verl will run in (``verl-wizard doctor``), off the GUI thread."""

from __future__ import annotations

import os

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QLineEdit, QPushButton, QTableWidgetItem, QVBoxLayout

from wizard.adapters.verl_env.python_envs import default_python, how_to_create
from wizard.gui.document import PlanDocument
from wizard.gui.wording import window_text
from wizard.gui.steps import texts
from wizard.gui.steps._machine import escaped, findings_html, read_only_table
from wizard.gui.widgets.empty_hint import EmptyHint
from wizard.gui.widgets.page import Page, note
from wizard.gui.widgets.task_bar import TaskBar
from wizard.gui.workers import Worker


class EnvironmentPage(Page):
    python_checked = Signal(str)  # a Python that was probed: the Run step uses it
    environment_known = Signal(object)  # EnvironmentFacts of that Python (flash-attn): the Run step's launch uses it
    step, title, subtitle = texts("environment")

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        self.python = QLineEdit(default_python() or "")
        self.python.setObjectName("targetPython")
        self.python.setAccessibleName("Target Python")
        self.python.setToolTip("The python of the virtual environment or conda env where verl is installed")
        browse = QPushButton("&Browse…")
        browse.clicked.connect(self._browse)
        self.check_button = QPushButton("&Check this environment")
        self.check_button.setObjectName("runDoctor")
        self.check_button.clicked.connect(self.run_doctor)
        self.runner = Worker(self)
        self.runner.finished.connect(self.show_report)
        self.runner.failed.connect(self._failed)
        self.runner.started.connect(lambda _l: self.check_button.setEnabled(False))
        for signal in (self.runner.finished, self.runner.failed, self.runner.cancelled):
            signal.connect(lambda *_: self.check_button.setEnabled(True))
        self.facts = read_only_table("environmentFacts", ["Package", "Version"])
        self.facts.horizontalHeader().setStretchLastSection(True)
        self.facts_hint = EmptyHint(
            self.facts, "Check this environment runs the Python above for a few seconds and lists here the versions "
            "of Python, torch, CUDA, vLLM, Ray and verl it has, each against what verl 0.9.1 needs. Nothing is "
            "installed or changed. Give the Python of the environment your runs use (a virtual environment or conda "
            "env with verl), not necessarily the wizard's own.", lambda: self.facts.rowCount() == 0)
        self.result = note("Not checked yet. verl-wizard plans without it; checking catches a broken install "
                           "before a run does.", "environmentResult")
        row = QHBoxLayout()
        row.addWidget(QLabel("&Python:", buddy=self.python))
        row.addWidget(self.python, 1)
        row.addWidget(browse)
        row.addWidget(self.check_button)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(TaskBar(self.runner))
        layout.addWidget(self.result)
        layout.addWidget(self.facts, 1)

    def target_python(self) -> str:
        """The Python typed here ('' for the default one): the Data step's reward bench runs in it."""
        return self.python.text().strip()

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "The python of verl's environment", os.path.expanduser("~"))
        if path:
            self.python.setText(path)

    def run_doctor(self) -> None:
        from wizard.adapters.verl_env.doctor import run_doctor

        python = self.python.text().strip() or default_python() or ""
        if not python:
            self.result.setText(escaped(how_to_create()))
            return
        self.runner.start(f"Probing {python}", run_doctor, python, timeout=60)

    def _failed(self, message: str) -> None:
        self.result.setText(f"<span style='color:#c62828'>{escaped(window_text(message))}</span>")
        self.doc.set_context_findings("environment", [])

    def show_report(self, report) -> None:
        """Show a probe's answer: the versions, the verdict and every finding with its fix (for the machine, never a
        plan edit); the findings panel lists them too, marked "this machine"."""
        from wizard.core.run import ENV_PACKAGES, environment_summary

        pk = report.facts.get("packages") or {}
        rows = [("python", (report.facts.get("python") or {}).get("version", "?"))]
        rows += [(n, pk.get(n) or "not installed") for n in ENV_PACKAGES]
        self.facts.setRowCount(len(rows))
        for r, (name, version) in enumerate(rows):
            self.facts.setItem(r, 0, QTableWidgetItem(name))
            self.facts.setItem(r, 1, QTableWidgetItem(str(version)))
        verdict = ("<b>Ready for verl 0.9.1.</b>" if report.ok else "<b>Not ready:</b> fix the errors below.")
        self.result.setText(f"{verdict} Probed {report.python} in {report.wall_s:.1f} s.<br>"
                            + findings_html(report.findings))
        self.doc.environment = environment_summary(report.facts)
        self.doc.set_context_findings("environment", report.findings)
        self.python_checked.emit(report.python)
        self.environment_known.emit(environment_facts(report))


def environment_facts(report):
    """What the probe found that changes a run: does flash-attn import (None: installed, import not tried)."""
    from wizard.core.check import EnvironmentFacts

    installed = bool((report.facts.get("packages") or {}).get("flash-attn"))
    imported = (report.facts.get("flash_attn") or {}).get("imported")
    return EnvironmentFacts(flash_attn=(imported if imported is not None else None) if installed else False,
                            python=report.python)
