"""What the Run page knows beyond the log: the run's generations (Samples tab), its timing and forecast (Time
tab), opening an earlier run's folder, and the report to share.

``digest_folder`` (run by a ``wizard.gui.workers.Worker``, off the GUI thread) reads a run folder and digests it
with the core (``wizard.core.run.digest``): the same numbers the ``samples``, ``timing`` and ``report`` commands
print. During a live run the follower sends the newly dumped steps already judged, and the metrics; the Time tab
is recomputed from them on a timer. When the run ends its folder is read once more, whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QFileDialog, QPushButton, QWidget

from wizard.core.plan import Plan
from wizard.core.run import (
    Forecast,
    InspectedStep,
    RunLog,
    RunRecord,
    StepMetrics,
    TimingSummary,
    advise,
    dataset_size,
    forecast,
    has_timestamp,
    schedule_of,
    startup_seconds,
    summarize,
)
from wizard.gui.run.log_view import Entry, log_entry
from wizard.gui.run.samples_view import SamplesView
from wizard.gui.run.timing_view import TimingView
from wizard.gui.workers import Worker
from wizard.usecases.runs import RUNS, digest_run, write_run_report

REDRAW_MS = 500
LOG_SHOWN = 200_000  # lines of an opened folder's log put in the log view (its cap)


@dataclass
class FolderDigest:
    """A run folder, read and judged on a worker thread (plain data for the GUI thread)."""

    record: RunRecord
    training: list[InspectedStep]
    validation: list[InspectedStep]
    timing: TimingSummary
    forecast: Forecast | str
    opened: bool  # the user opened it (the views show it whole), not the end of a run followed live
    entries: list[Entry] = field(default_factory=list)
    metrics: list[StepMetrics] = field(default_factory=list)


def step_metrics(state: RunLog) -> list[StepMetrics]:
    """The series back as one ``StepMetrics`` per step (what the metric plots take)."""
    steps: dict[int, dict[str, float]] = {}
    for key, points in state.series.items():
        for step, value in points:
            steps.setdefault(step, {})[key] = value
    return [StepMetrics(step=s, data=d, source="file") for s, d in sorted(steps.items())]


def digest_folder(path: str, opened: bool) -> FolderDigest:
    """On a worker thread: the folder read and digested (``wizard.usecases.runs``), and for a folder the user opened
    its log and metrics as the views take them."""
    run = digest_run(path)
    d = FolderDigest(record=run.record, training=run.training, validation=run.validation, timing=run.timing,
                     forecast=run.forecast, opened=opened)
    record = run.record
    if opened:
        d.entries = [log_entry(line) for line in record.log_tail[-LOG_SHOWN:]]
        d.metrics = step_metrics(record.state)
    return d


def write_report(run_dir: str, environment: dict | None) -> tuple[str, str]:
    """On a worker thread: the report written to the run folder (``wizard.usecases.runs``); (its path, its text)."""
    from wizard.adapters.files.run_folder import read_run_folder

    path, text = write_run_report(read_run_folder(run_dir), environment)
    return str(path), text


def start_recorder(run_dir: Path, base: Plan, smoke: Plan, *, steps: int, python: str, environment: dict | None,
                   snapshot):
    """run.json written now (the plan's overrides, the environment and the GPUs the monitor sees) and the recorder
    the follower keeps it with (``gpus.csv``, the end)."""
    from wizard import __version__
    from wizard.adapters.files.run_folder import RunRecorder, gpu_inventory, now_iso
    from wizard.core.run import start_meta

    meta = start_meta(base, smoke, steps=steps, python=python, started=now_iso(), wizard_version=__version__,
                      environment=environment,
                      gpus=gpu_inventory(snapshot) if snapshot is not None and snapshot.gpus else None)
    recorder = RunRecorder(run_dir, meta)
    recorder.start()
    return recorder


class RunInsight(QObject):
    """Feeds the Samples and Time tabs, live or from a folder; owns Open run folder… and Write report."""

    digested = Signal(object)  # FolderDigest
    forecast_found = Signal(str, object, str)  # (the plan's fingerprint, Forecast, the run folder): for Review
    said = Signal(str, bool)  # a status line, and whether it is an error

    def __init__(self, parent: QWidget, environment=lambda: None) -> None:
        super().__init__(parent)
        self.samples = SamplesView()
        self.timing = TimingView()
        self.run_dir: str | None = None
        self._opening = False
        self.plan: Plan | None = None
        self._environment = environment
        self._state = RunLog()
        self._facts: list[str] = []  # the log lines the forecast needs (dataset size, timestamps, ready to fit)
        self._reader = Worker(self)
        self._reader.finished.connect(self._digested)
        self._reader.failed.connect(self._unreadable)
        self._reporter = Worker(self)
        self._reporter.finished.connect(self._reported)
        self._reporter.failed.connect(lambda msg: self.said.emit(f"No report: {msg}", True))
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(REDRAW_MS)
        self._timer.timeout.connect(self._redraw_live)
        self.open_button = QPushButton("Open run &folder…")
        self.open_button.setToolTip("Show an earlier run's log, metrics, samples and timing (a folder of "
                                    "verl-wizard launch, or of verl's <step>.jsonl dumps)")
        self.open_button.clicked.connect(self._browse)
        self.report_button = QPushButton("&Report")
        self.report_button.setToolTip("Write report.md into the run folder (versions, GPUs, the plan with secrets "
                                      "redacted, findings, timing, the last 200 log lines) and copy it to paste "
                                      "into an issue")
        self.report_button.setEnabled(False)
        self.report_button.clicked.connect(self.report)

    # -- a folder ---------------------------------------------------------------------------------------------
    def _browse(self) -> None:
        path = QFileDialog.getExistingDirectory(self.parent(), "A run folder", self.run_dir or str(Path(RUNS)))
        if path:
            self.open_folder(path)

    def open_folder(self, path: str, opened: bool = True) -> None:
        """Read ``path`` off the GUI thread; the tabs show it when it is read (``digested``). ``opened``: the user
        opened it (the status line says so); else a run just ended and its status line stays."""
        self._opening = opened
        if opened:
            self.said.emit(f"Reading {path}…", False)
        self._reader.start(f"read the run folder {path}", digest_folder, str(path), opened)

    def _unreadable(self, message: str) -> None:
        if self._opening:  # after a run, its own status line stays (the log view has the log)
            self.said.emit(f"Could not read the run folder: {message}", True)

    @property
    def reading(self) -> bool:
        return self._reader.running

    def _digested(self, d: FolderDigest) -> None:
        self.run_dir = d.record.path
        self.plan = d.record.plan
        self.report_button.setEnabled(True)
        self.samples.set_steps("training", d.training)
        self.samples.set_steps("validation", d.validation)
        self.timing.show_timing(d.timing, d.forecast)
        meta = d.record.meta
        if meta is not None and meta.fingerprint and isinstance(d.forecast, Forecast):
            self.forecast_found.emit(meta.fingerprint, d.forecast, d.record.path)
        if d.opened:
            n = sum(len(s.samples) for s in d.training + d.validation)
            self.said.emit(f"{d.record.path}: {d.record.log_lines:,} log lines, {len(d.timing.steps)} timed step(s), "
                           f"{n:,} generated responses.", False)
        self.digested.emit(d)

    # -- a live run -------------------------------------------------------------------------------------------
    def begin(self, run_dir: str, plan: Plan) -> None:
        self.run_dir, self.plan = run_dir, plan
        self._state = RunLog()
        self._facts = []
        self.samples.clear()
        self.timing.clear()
        self.report_button.setEnabled(True)

    def add_batch(self, batch) -> None:
        """A ``RunBatch`` of the follower: new judged steps go to the Samples tab, metrics to the Time tab."""
        for kind, step in batch.samples:
            self.samples.add_steps(kind, [step])
        for m in batch.metrics:
            self._state.add_metrics(m)
        self._facts += [text for _level, text in batch.entries
                        if "dataset size" in text or "ready to fit" in text or (not self._facts and has_timestamp(text))]
        if batch.metrics and not self._timer.isActive():
            self._timer.start()

    def _redraw_live(self) -> None:
        summary = summarize(self._state.series)
        summary.advice = advise(summary, self._state.series, self.plan)
        fc = None
        if self.plan is not None:
            fc = forecast(summary, schedule_of(self.plan), dataset_size=dataset_size(self._facts),
                          startup_s=startup_seconds(self._facts))
        self.timing.show_timing(summary, fc)

    def ended(self) -> None:
        """The run ended: its folder, read whole (metrics file, GPU samples, every dump)."""
        self._timer.stop()
        if self.run_dir:
            self.open_folder(self.run_dir, opened=False)

    # -- the report -------------------------------------------------------------------------------------------
    def report(self) -> None:
        if not self.run_dir or self._reporter.running:
            return
        self.said.emit("Writing the report…", False)
        self._reporter.start("write the report", write_report, self.run_dir, self._environment())

    def _reported(self, answer: tuple[str, str]) -> None:
        path, text = answer
        QGuiApplication.clipboard().setText(text)
        self.last_report = path
        self.said.emit(f"Wrote {path} and copied it: paste it into an issue (secrets are redacted; read it first).",
                       False)


__all__ = ["RunInsight", "FolderDigest", "digest_folder", "write_report", "step_metrics", "start_recorder"]
