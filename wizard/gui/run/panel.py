"""The Run page: start a smoke run of the plan, watch it live, stop it, and say why it failed.

``RunPanel`` is a self-contained widget built on a ``PlanDocument``. It builds the run exactly as
``verl-wizard launch`` does, with the same use case (``wizard.usecases.launching.prepare_smoke``: the smoke plan, the
full check, the command), and runs it through the same ``RunProcess`` (its own session; Stop ends the whole
tree). Its Samples and Time tabs, Open run folder… and Report are ``wizard.gui.run.insight.RunInsight``'s.
All process I/O happens on a worker thread (``wizard.gui.run.follower.RunFollower``, run by a
``wizard.gui.workers.Worker``); the GUI thread only receives batches about ten times a second, so typing never
waits for the run.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from PySide6.QtCore import QEvent, Signal
from PySide6.QtGui import QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from wizard.adapters.processes.launcher import RunProcess
from wizard.adapters.processes.run_dir import LaunchError, prepare_run_dir, write_command_file
from wizard.core.findings import Severity
from wizard.core.run import VALIDATION, dump_dirs
from wizard.usecases.launching import SmokeRun, prepare_smoke
from wizard.usecases.runs import RUNS
from wizard.gui.document import PlanDocument
from wizard.gui.run.gpu_monitor import GpuMonitor
from wizard.gui.run.insight import RunInsight, start_recorder
from wizard.gui.run.log_view import LogView
from wizard.gui.run.metric_plots import MetricPlots
from wizard.gui.run.status import FindingsBanner, RunStatus
from wizard.gui.run.follower import STOP_GRACE_S, RunBatch, RunFollower, RunResult
from wizard.gui.workers import Worker
from wizard.core.secrets import secret_values


Prepared = SmokeRun  # a run ready to start (or to show in a dry run): exactly what ``verl-wizard launch`` would run


class RunPanel(QWidget):
    """Target Python, run folder, Dry run / Start / Stop; then the status, the log, the plots, the GPUs."""

    run_started = Signal()
    run_finished = Signal(object)  # RunResult

    def __init__(self, doc: PlanDocument, python: str | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        self.result: RunResult | None = None
        self.prepared: Prepared | None = None
        self.environment = None  # EnvironmentFacts of the Python the Environment step probed, when it did
        self._runner = Worker(self)
        self._runner.progress.connect(self._batch)
        self._runner.finished.connect(self._done)
        self._follower: RunFollower | None = None
        self._close_after: QWidget | None = None
        self._watched: QWidget | None = None
        self._build(python or sys.executable)
        app = QApplication.instance()
        if app is not None:
            app.aboutToQuit.connect(self.shutdown)

    # -- layout -----------------------------------------------------------------------------------------------

    def _build(self, python: str) -> None:
        self.python = QLineEdit(python)
        self.python.setObjectName("targetPython")
        self.python.setToolTip("The Python that has verl 0.9.1 installed (verl-wizard doctor checks it)")
        self.folder = QLineEdit()
        self.folder.setObjectName("runFolder")
        self.folder.setPlaceholderText("runs/launch-<date>-<time> (a new folder for each run)")
        self.folder.setToolTip("Where run.log (every line), command.sh and metrics.jsonl go")
        self.steps = QSpinBox()
        self.steps.setRange(1, 100000)
        self.steps.setValue(5)
        self.steps.setToolTip("A smoke run: a few training steps, enough to see the loop close")
        # beside an opened run folder: that run's own count, so the box reads as the next run's setting
        self.steps_note = QLabel()
        self.steps_note.setObjectName("openedRunSteps")
        self.steps_note.setEnabled(False)  # drawn greyed: a remark, not a setting
        self.steps_note.hide()
        self.validation = QComboBox()
        self.validation.addItems(list(VALIDATION))
        self.validation.setToolTip("end: validate after the last step; none; start: before training; both")
        form = QFormLayout()
        form.addRow(QLabel("Target &Python:", buddy=self.python), self._with_browse(self.python, self._browse_python))
        form.addRow(QLabel("Run &folder:", buddy=self.folder), self._with_browse(self.folder, self._browse_folder))
        smoke = QHBoxLayout()
        smoke.addWidget(self.steps)
        smoke.addWidget(self.steps_note)
        smoke.addWidget(QLabel("&Validation:", buddy=self.validation))
        smoke.addWidget(self.validation)
        smoke.addStretch(1)
        form.addRow(QLabel("Trainin&g steps:", buddy=self.steps), smoke)
        self.dry_button = QPushButton("&Dry run")
        self.dry_button.setToolTip("Show the exact command and environment; run nothing")
        self.start_button = QPushButton("&Start")
        self.stop_button = QPushButton("S&top")
        self.stop_button.setToolTip("End the run and every process it started (Ray included)")
        self.stop_button.setEnabled(False)
        self.status = RunStatus()
        buttons = QHBoxLayout()
        for b in (self.dry_button, self.start_button, self.stop_button):
            buttons.addWidget(b)
        buttons.addWidget(self.status, 1)
        self.banner = FindingsBanner()
        self.banner.fix_requested.connect(self.doc.apply_fix)
        self.log = LogView()
        self.plots = MetricPlots()
        self.insight = RunInsight(self, environment=lambda: self.doc.environment)
        self.insight.said.connect(self.status.say)
        self.insight.digested.connect(self._folder_read)
        for b in (self.insight.open_button, self.insight.report_button):
            buttons.addWidget(b)
        self.command = QPlainTextEdit()
        self.command.setObjectName("dryRunText")
        self.command.setReadOnly(True)
        self.command.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
        self.copy_button = QPushButton("&Copy the command")
        self.copy_button.clicked.connect(self.copy_command)
        command_tab = QWidget()
        box = QVBoxLayout(command_tab)
        box.addWidget(self.command, 1)
        box.addWidget(self.copy_button)
        self.tabs = QTabWidget()
        self.tabs.addTab(self.log, "&Log")
        self.tabs.addTab(self.plots, "&Metrics")
        self.tabs.addTab(self.insight.samples, "S&amples")
        self.tabs.addTab(self.insight.timing, "T&ime")
        self.tabs.addTab(command_tab, "C&ommand")
        self.command_tab = command_tab
        self.gpus = GpuMonitor()
        self.gpus.snapshot_changed.connect(self._gpus_sampled)
        split = QSplitter()
        split.addWidget(self.tabs)
        split.addWidget(self.gpus)
        split.setStretchFactor(0, 1)
        split.setSizes([760, 240])
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addLayout(buttons)
        layout.addWidget(self.status.progress)
        layout.addWidget(self.banner)
        layout.addWidget(split, 1)
        self.dry_button.clicked.connect(self.dry_run)
        self.start_button.clicked.connect(self.start)
        self.stop_button.clicked.connect(self.stop)

    def _with_browse(self, edit: QLineEdit, slot) -> QHBoxLayout:
        row = QHBoxLayout()
        row.addWidget(edit, 1)
        browse = QPushButton("Browse…")
        browse.clicked.connect(slot)
        row.addWidget(browse)
        return row

    def _browse_python(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "The Python that has verl", self.python.text())
        if path:
            self.python.setText(path)

    def _browse_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Run folder", self.folder.text() or os.getcwd())
        if path:
            self.folder.setText(path)

    def set_target_python(self, path: str) -> None:
        """The interpreter doctor found (the coordinator calls this when the Environment page has one)."""
        self.python.setText(path)

    @property
    def progress(self) -> QProgressBar:
        return self.status.progress

    # -- building the run -------------------------------------------------------------------------------------

    def prepare(self) -> Prepared | str:
        """The run the buttons would start (the same use case as ``verl-wizard launch``), or a one-line reason why
        there is none."""
        python = self.python.text().strip() or sys.executable
        p = Path(python)
        if not p.is_file():
            return f"Target Python {python}: no such file"
        if not os.access(p, os.X_OK):
            return f"Target Python {python}: not executable"
        folder = self.folder.text().strip() or str(Path(RUNS) / time.strftime("launch-%Y%m%d-%H%M%S"))
        run_dir = Path(os.path.expanduser(folder)).absolute()
        try:
            return prepare_smoke(self.doc.plan, python=python, run_dir=run_dir, steps=self.steps.value(),
                                 validation=self.validation.currentText(), environment=self.environment,
                                 gpus=self.doc.gpus, cluster=self.doc.effective_cluster(),
                                 model_cache=self.doc._model_cache)
        except ValueError as exc:
            text = str(exc)
            return text[:1].upper() + text[1:]

    def dry_run(self) -> Prepared | None:
        """Show the exact command and environment on the Command tab; run nothing."""
        prepared = self.prepare()
        self.tabs.setCurrentWidget(self.command_tab)
        if isinstance(prepared, str):
            self.command.setPlainText(prepared)
            self.status.say(prepared, error=True)
            return None
        self.prepared = prepared
        errors = [f for f in prepared.check.findings if f.severity is Severity.ERROR]
        lines = [f"# {note}" for note in prepared.notes] + ["# Environment added to yours:"]
        lines += [f"{k}={v}" for k, v in prepared.command.env.items()]
        lines += ["", f"# The command (run from {os.getcwd()}); its output goes to {prepared.run_dir}:",
                  prepared.shell, ""]
        if errors:
            lines.append(f"# Start is refused: the plan has {len(errors)} error(s):")
            lines += [f"#   {f.rule}: {f.message}" for f in errors]
        self.command.setPlainText("\n".join(lines))
        self.status.say("Dry run: the Command tab shows what Start would run." + (
            f" The plan has {len(errors)} error(s) to fix first." if errors else ""), error=bool(errors))
        return prepared

    def copy_command(self) -> None:
        if self.prepared is not None:
            QGuiApplication.clipboard().setText(self.prepared.shell)

    # -- running ----------------------------------------------------------------------------------------------

    @property
    def is_running(self) -> bool:
        return self._runner.running

    def start(self) -> bool:
        if self.is_running:
            return False
        prepared = self.prepare()
        if isinstance(prepared, str):
            self.status.say(prepared, error=True)
            return False
        self.prepared = prepared
        if not prepared.check.ok:
            errors = [f for f in prepared.check.findings if f.severity is Severity.ERROR]
            self.banner.show_findings(errors, "Not started: the plan has errors verl would stop on", None)
            self.status.say(f"Not started: fix the {len(errors)} error(s) above first.", error=True)
            return False
        try:
            prepare_run_dir(prepared.run_dir)
            write_command_file(prepared.run_dir, prepared.shell)
            run = RunProcess([prepared.python, *prepared.command.args], env_add=prepared.command.env,
                             cwd=os.getcwd(), run_dir=prepared.run_dir,
                             secrets=secret_values(os.environ) | secret_values(os.environ, prepared.command.secrets))
            run.start()
        except (LaunchError, OSError) as exc:
            self.status.say(f"Not started: {exc}", error=True)
            return False
        self._reset_views()
        self.status.started(run.pid, prepared.run_dir)
        for note in prepared.notes:  # what the launch changed on its own, said where the run is followed
            self.log.append_raw([f"verl-wizard: {note}"])
        self.insight.begin(str(prepared.run_dir), prepared.base)
        self._follower = RunFollower(run, prepared.max_response_length,
                                     metrics_file=prepared.run_dir / "metrics.jsonl",
                                     dump_dirs=dump_dirs(prepared.plan), recorder=start_recorder(
                                         prepared.run_dir, prepared.base, prepared.plan, steps=self.steps.value(),
                                         python=prepared.python, environment=self.doc.environment,
                                         snapshot=self.gpus.snapshot))
        self._runner.start_job(f"follow the run {run.pid}", self._follower.follow)
        self._set_running(True)
        self.run_started.emit()
        return True

    def _folder_read(self, d) -> None:
        """An opened run folder: its log and metrics in the Log and Metrics tabs (Samples and Time fill themselves)."""
        if not d.opened or self.is_running:
            return
        self.log.clear()
        self.plots.clear()
        self.banner.clear()
        self.log.append(d.entries)
        self.plots.add(d.metrics)
        self.folder.setText(d.record.path)
        progress = d.record.state.progress()
        self.status.show_progress(progress)
        if progress:
            done, total = progress
            self.steps_note.setText(f"for the next run (the opened one: {done:,} of {total:,})")
            self.steps_note.show()
        else:
            self.steps_note.hide()

    def _reset_views(self) -> None:
        self.result = None
        self.steps_note.hide()
        self.log.clear()
        self.plots.clear()
        self.banner.clear()
        self.tabs.setCurrentIndex(0)

    def _set_running(self, running: bool) -> None:
        self.start_button.setEnabled(not running)
        self.dry_button.setEnabled(not running)
        self.stop_button.setEnabled(running)
        for w in (self.python, self.folder, self.steps, self.validation, self.insight.open_button):
            w.setEnabled(not running)
        if running:
            self.gpus.start()

    def stop(self) -> None:
        """End the run: the worker signals the whole process tree and reports what it ended."""
        if self._runner.running:
            self._runner.stop()
            self.stop_button.setEnabled(False)
            self.status.stopping()

    def _batch(self, batch: RunBatch) -> None:
        self.log.append(batch.entries)
        self.plots.add(batch.metrics)
        self.status.update_run(batch.events, batch.progress)
        self.insight.add_batch(batch)
        if batch.alarms:
            self.banner.add_alarms(batch.alarms)

    def _done(self, result: RunResult) -> None:
        self.result = result
        self._runner.wait()  # it has answered: a moment at most
        self._follower = None
        self._set_running(False)
        self.status.ended(result)
        if result.findings and not result.stopped:
            self.banner.show_findings(result.findings, "The run failed" if not result.ok else "Seen in the log",
                                      result.last_error)
        self.log.flush()
        self.insight.ended()
        self.run_finished.emit(result)
        if self._close_after is not None:
            window, self._close_after = self._close_after, None
            window.close()

    def _gpus_sampled(self, snapshot) -> None:
        if self._follower is not None:
            self._follower.gpus_busy = snapshot.busy()
            self._follower.gpu_snapshot = snapshot

    # -- closing ----------------------------------------------------------------------------------------------

    def confirm_close(self) -> bool:
        """May the window close now? While a run goes on: ask; on yes, stop it and close once it has ended."""
        if not self.is_running:
            self.gpus.stop()
            return True
        answer = QMessageBox.question(self, "A run is going", "A run is still going. Stop it (and every process "
                                      "it started) and close?", QMessageBox.Yes | QMessageBox.No, QMessageBox.No)
        if answer == QMessageBox.Yes:
            self._close_after = self.window()
            self.stop()
        return False

    def shutdown(self) -> None:
        """Stop a run and wait for its end (application exit: nothing may be left behind)."""
        if self._runner.running:
            self._runner.stop()
            self._runner.wait(STOP_GRACE_S + 10)
        self.gpus.stop()

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        window = self.window()
        if window is not self._watched:
            if self._watched is not None:
                self._watched.removeEventFilter(self)
            self._watched = window
            window.installEventFilter(self)
        self.gpus.start()

    def eventFilter(self, watched, event) -> bool:  # noqa: N802
        if watched is self._watched and event.type() == QEvent.Close and not self.confirm_close():
            event.ignore()
            return True
        return super().eventFilter(watched, event)


__all__ = ["RunPanel", "RunFollower", "RunBatch", "RunResult", "Prepared"]
