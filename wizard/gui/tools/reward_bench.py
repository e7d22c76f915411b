"""Test the reward before training: score sampled rows of the training file with known-good and known-bad
responses, with verl's built-in scorer or the plan's own reward function.

"Reward always 0" costs hours of GPU time before anyone notices. Here it costs seconds: the bench runs in
a subprocess of the target Python (adapters.reward_runner, the same call as ``verl-wizard data reward``),
off the GUI thread with a Cancel, and the verdict on top says in words whether the reward can teach.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from itertools import islice

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from wizard.core.data import scorer_for
from wizard.core.findings import Finding, sort_findings
from wizard.core.reward import BenchRow, bench_rows
from wizard.core.reward.verdict import Verdict, verdict
from wizard.gui.document import PlanDocument
from wizard.gui.widgets.fields import FieldForm
from wizard.gui.widgets.page import note, scrolled
from wizard.gui.tools.reward_results import RewardResults
from wizard.gui.widgets.task_bar import TaskBar
from wizard.gui.workers import Job, Worker

BUILTIN, CUSTOM = "builtin", "custom"
DEFAULT_FUNCTION = "compute_score"  # reward.custom_reward_function.name's default in verl 0.9.1
DEFAULT_TIMEOUT_S = 120  # importing verl's scorers alone takes 5-20 s on a busy machine
SEPARATOR = "---"
BENCH_COLUMNS = ["data_source", "reward_model", "extra_info"]


@dataclass
class BenchOutcome:
    """What one bench run gives the panel: the rows scored, every finding, and the runner's result."""

    rows: list[BenchRow]
    findings: list[Finding]
    result: object  # adapters.reward_runner.BenchResult
    python: str
    custom: bool


def split_responses(text: str) -> list[str]:
    """The user's responses: separated by a line holding only ``---``, so one response may span lines."""
    parts, current = [], []
    for line in text.splitlines():
        if line.strip() == SEPARATOR:
            parts.append("\n".join(current))
            current = []
        else:
            current.append(line)
    parts.append("\n".join(current))
    return [p.strip("\n") for p in parts if p.strip()]


def bench_file(path: str, n: int, first: bool, function: str | None, name: str | None, texts: list[str],
               python: str | None, timeout: float, cancel=None) -> BenchOutcome:
    """Pick rows (spread over the file, or the first ``n``), then score them in the target Python."""
    from wizard.adapters.files.dataset import DatasetFile
    from wizard.adapters.verl_env.python_envs import default_python
    from wizard.adapters.verl_env.reward_runner import RewardRunError, run_bench

    python = python or default_python()
    if not python:
        raise RewardRunError("no Python with verl was found: choose one on the Environment step")
    ds = DatasetFile(path)
    records = list(islice(ds.iter_rows(BENCH_COLUMNS), n)) if first else ds.sample(n, BENCH_COLUMNS)
    rows, findings = bench_rows(records)
    result = run_bench(rows, function=function, name=name, user_texts=texts, python=python, timeout=timeout,
                       cancel=cancel)
    return BenchOutcome(rows, sort_findings(findings + result.findings), result, python, function is not None)


def _bench_job(job: Job, *args) -> BenchOutcome:
    """:func:`bench_file` on the worker thread; Cancel kills the scoring subprocess at once."""
    return bench_file(*args, cancel=job.stop)


def scorer_name(rows: list[BenchRow], custom: bool) -> str:
    """Who scored, for the verdict: 'Your reward function', "verl's gsm8k scorer" or "verl's built-in scorers"."""
    if custom:
        return "Your reward function"
    scorers = {scorer_for(r.data_source) for r in rows} - {None}
    return f"verl's {scorers.pop()} scorer" if len(scorers) == 1 else "verl's built-in scorers"


class RewardBenchPanel(QWidget):
    """The reward bench. ``target_python()`` gives the Environment step's Python ('' for the default one).

    ``scored(BenchOutcome)`` is emitted after each finished run; the bench's findings also go to the
    document's findings panel under the name "reward" until the reward function changes.
    """

    scored = Signal(object)

    def __init__(self, doc: PlanDocument, target_python: Callable[[], str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        self.target_python = target_python
        self.runner = Worker(self)
        self._reward_key = self._reward_function()
        self.setObjectName("rewardBench")
        layout = QVBoxLayout(self)
        layout.addWidget(note(
            "Score a few rows of the training file with responses whose answer is known, before a GPU is "
            "touched: the right answer should score high, an empty or wrong one low. If they score the same, "
            "training learns nothing.", "rewardIntro"))
        layout.addWidget(self._rows_box())
        layout.addWidget(self._scorer_box())
        layout.addWidget(self._responses_box())
        buttons = QHBoxLayout()
        self.run_button = QPushButton("&Score the responses")
        self.run_button.setObjectName("rewardRun")
        self.run_button.clicked.connect(self.run)
        buttons.addWidget(self.run_button)
        buttons.addWidget(QLabel("Give up after"))
        self.timeout = QSpinBox()
        self.timeout.setObjectName("rewardTimeout")
        self.timeout.setAccessibleName("Time limit in seconds")
        self.timeout.setRange(5, 600)
        self.timeout.setValue(DEFAULT_TIMEOUT_S)
        self.timeout.setSuffix(" s")
        self.timeout.setToolTip("For the whole bench, including loading verl in the target Python")
        buttons.addWidget(self.timeout)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        self.task_bar = TaskBar(self.runner)
        layout.addWidget(self.task_bar)
        self.results = RewardResults()
        layout.addWidget(self.results, 1)
        self.runner.finished.connect(self._finished)
        self.runner.failed.connect(self._failed)
        self.runner.cancelled.connect(self._cancelled)
        doc.changed.connect(self.refresh)
        self.refresh()

    # -- inputs -----------------------------------------------------------------------------------
    def _rows_box(self) -> QGroupBox:
        box = QGroupBox("Rows of the training file")
        row = QHBoxLayout(box)
        self.file_label = note("", "rewardFile")
        self.count = QSpinBox()
        self.count.setObjectName("rewardRowCount")
        self.count.setAccessibleName("Rows to score")
        self.count.setRange(1, 200)
        self.count.setValue(5)
        self.pick = QComboBox()
        self.pick.setObjectName("rewardPick")
        self.pick.setAccessibleName("Which rows")
        self.pick.addItem("spread over the file", "sample")
        self.pick.addItem("from the top", "first")
        row.addWidget(self.file_label, 1)
        row.addWidget(QLabel("Score"))
        row.addWidget(self.count)
        row.addWidget(QLabel("rows"))
        row.addWidget(self.pick)
        return box

    def _scorer_box(self) -> QGroupBox:
        box = QGroupBox("Who scores")
        col = QVBoxLayout(box)
        self.mode = QComboBox()
        self.mode.setObjectName("rewardMode")
        self.mode.setAccessibleName("Scorer")
        self.mode.addItem("verl's built-in scorer, picked by each row's data_source", BUILTIN)
        self.mode.addItem("my reward function (the plan's, below)", CUSTOM)
        self.mode.setCurrentIndex(1 if self.doc.plan.reward.custom_function_path else 0)
        self.mode.currentIndexChanged.connect(lambda _i: self._mode_changed())
        col.addWidget(self.mode)
        self.function_form = FieldForm(self.doc, [
            ("reward.custom_function_path", "Reward file (.py)"),
            ("reward.custom_function_name", "Function name"),
        ])
        editors = self.function_form.editors
        editors["reward.custom_reward_function.path"].widget.setPlaceholderText(
            "none: verl's built-in scorer is used in training")
        editors["reward.custom_reward_function.name"].widget.setPlaceholderText(f"verl default: {DEFAULT_FUNCTION}")
        col.addWidget(self.function_form)
        self.browse = QPushButton("Choose the reward &file…")
        self.browse.clicked.connect(self._browse)
        col.addWidget(self.browse, 0, Qt.AlignLeft)
        col.addWidget(note("The function is called as verl calls it: "
                           "<code>fn(data_source, solution_str, ground_truth, extra_info)</code>, and must return "
                           "a float (or a dict with a float 'score'). Editing these fields edits the plan.",
                           "rewardSignature"))
        return box

    def _responses_box(self) -> QGroupBox:
        box = QGroupBox("Responses scored on every row")
        col = QVBoxLayout(box)
        col.addWidget(note("Always: just the answer, the answer in the form the scorer extracts "
                           "(e.g. <code>#### 72</code> for GSM8K), an empty response, and a wrong answer. "
                           f"Add your own below, as a model might write them; separate several with a line "
                           f"holding only <code>{SEPARATOR}</code>.", "rewardCandidates"))
        self.responses = QPlainTextEdit()
        self.responses.setObjectName("rewardResponses")
        self.responses.setAccessibleName("Your responses")
        self.responses.setPlaceholderText("e.g.  Natalia sold 48 + 24 = 72 clips.\n#### 72\n---\nThe answer is 72.")
        self.responses.setFixedHeight(80)
        col.addWidget(self.responses)
        return box

    # -- document -> widgets ----------------------------------------------------------------------
    def refresh(self) -> None:
        path = self.train_file()
        self.file_label.setText(f"Training file: <b>{_escape(path)}</b>" if path else
                                "<span style='color:#c62828'>No training file in the plan yet: set one on the "
                                "Data step, or convert one.</span>")
        key = self._reward_function()
        if key != self._reward_key:  # function or file changed: the last bench no longer describes them
            old, self._reward_key = self._reward_key, key
            if self.doc.context_findings.get("reward"):
                self.doc.set_context_findings("reward", [])
            if key[0] and key[0] != old[0] and self.mode.currentData() == BUILTIN:
                self.mode.setCurrentIndex(1)
        self._mode_changed()

    def _mode_changed(self) -> None:
        custom = self.mode.currentData() == CUSTOM
        self.function_form.setEnabled(custom)
        self.browse.setEnabled(custom)

    def _reward_function(self) -> tuple[str, str, str]:
        """What the last bench described: the reward function and the training file."""
        r = self.doc.plan.reward
        return (r.custom_function_path or "", r.custom_function_name or "", str(self.doc.plan.data.train_files or ""))

    def train_file(self) -> str | None:
        files = self.doc.plan.data.train_files
        first = files[0] if isinstance(files, list) and files else files
        return os.path.expandvars(os.path.expanduser(str(first))) if first else None

    def _browse(self) -> None:
        start = os.path.dirname(self.doc.plan.reward.custom_function_path or "") or os.path.expanduser("~")
        path, _ = QFileDialog.getOpenFileName(self, "Reward function file", start, "Python files (*.py)")
        if path:
            self.set_function(path)

    def set_function(self, path: str, name: str | None = None) -> None:
        """Use ``path`` (and ``name``) as the plan's reward function: one undoable edit."""
        plan = self.doc.plan.model_copy(deep=True)
        plan.reward.custom_function_path = os.path.abspath(path)
        if name is not None:
            plan.reward.custom_function_name = name
        self.mode.setCurrentIndex(1)
        self.doc.set_plan(plan, text=f"Set reward.custom_reward_function.path = {plan.reward.custom_function_path}")

    # -- run --------------------------------------------------------------------------------------
    def run(self) -> None:
        if self.runner.running:
            return
        path = self.train_file()
        if not path:
            self.results.clear("Set a training file first (Data step), then score it.", "error")
            return
        function = name = None
        if self.mode.currentData() == CUSTOM:
            reward = self.doc.plan.reward
            if not reward.custom_function_path:
                self.results.clear("Choose your reward file first, or score with verl's built-in scorer.", "error")
                return
            function = os.path.expandvars(os.path.expanduser(reward.custom_function_path))
            name = reward.custom_function_name or DEFAULT_FUNCTION
        args = (path, self.count.value(), self.pick.currentData() == "first", function, name,
                split_responses(self.responses.toPlainText()), self.target_python().strip() or None,
                float(self.timeout.value()))
        self.results.clear("Scoring… (the first call loads verl in the target Python; that takes a few seconds)",
                           "neutral")
        self.run_button.setEnabled(False)
        who = f"{name} in {os.path.basename(function)}" if function else "verl's built-in scorer"
        self.runner.start_job(f"Scoring {self.count.value()} rows with {who}", _bench_job, *args)

    def _finished(self, outcome: BenchOutcome) -> None:
        self.run_button.setEnabled(True)
        result = outcome.result
        who = scorer_name(outcome.rows, outcome.custom)
        v: Verdict = verdict(result.trials, result.summary, outcome.findings, who)
        sources = {r.row: r.data_source for r in outcome.rows}
        self.results.show_outcome(result.trials, result.summary, outcome.findings, v, sources)
        self.doc.set_context_findings("reward", outcome.findings)
        self.scored.emit(outcome)

    def _failed(self, message: str) -> None:
        self.run_button.setEnabled(True)
        self.results.clear(f"The bench could not run: {message}", "error")

    def _cancelled(self) -> None:
        self.run_button.setEnabled(True)
        self.results.clear("Cancelled: nothing was scored.", "neutral")


class RewardBenchDialog(QDialog):
    """The panel in a window of its own (not modal: the plan stays editable while it is open)."""

    def __init__(self, doc: PlanDocument, target_python: Callable[[], str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Test the reward")
        self.setObjectName("rewardBenchDialog")
        self.panel = RewardBenchPanel(doc, target_python)
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(scrolled(self.panel), 1)
        layout.addWidget(buttons)
        self.resize(1000, 820)

    def reject(self) -> None:
        self.panel.runner.cancel()  # closing is giving up: a late answer must not land in a hidden window
        super().reject()


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
