"""The Data step: files and batch sizes; previews and checks of the training file off the GUI thread, the check
followed by the plan judged on the file's prompt lengths (what ``plan`` prints as "on your data"); the convert
dialog and the reward bench (``wizard.gui.tools``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import NamedTuple
from html import escape

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QHBoxLayout, QHeaderView, QPushButton, QTableWidget, QTableWidgetItem

from wizard.core.findings import Severity
from wizard.gui.document import PlanDocument
from wizard.gui.steps import texts
from wizard.gui.steps._form import FormPage
from wizard.gui.widgets.page import Page, note
from wizard.gui.widgets.task_bar import TaskBar
from wizard.gui.workers import Worker
from wizard.gui.wording import window_finding


class Judged(NamedTuple):
    """The answer of :func:`fit_on_data`: the plan judged on the file's prompts (a DataFit), or None and why not."""

    fit: object
    why: str | None


def fit_on_data(memory, path: str, model_dir: str | None) -> Judged:
    """Work for the Data step, after a check: the plan judged on ``path``'s prompts."""
    from wizard.usecases.advising import train_data_fit

    return Judged(*train_data_fit(memory, path, model_dir))


def fit_words(fit, why: str | None) -> str:
    """The data verdict in the window's words (HTML)."""
    if fit is None:
        return f"<b>On this data:</b> not judged ({escape(why or 'no prompts read', quote=False)})"
    sizes = [f"actor micro-batch up to {fit.largest_micro_batch}" if fit.largest_micro_batch else "",
             f"prompts per step (data.train_batch_size) up to {fit.largest_train_batch}"
             if fit.largest_train_batch else ""]
    text = f"<b>On this data</b> ({fit.rows:,} rows, prompts {escape(fit.how, quote=False)}): " + escape(fit.verdict)
    if any(sizes):
        text += "<br>At these prompts it fits with " + ", ".join(x for x in sizes if x) + "."
    return text


class DataPage(FormPage):
    step, title, subtitle = texts("data")
    groups = [
        ("Files", [
            ("data.train_files", "Training file(s)"),
            ("data.val_files", "Validation file(s)"),
            ("data.prompt_key", "Prompt column"),
        ]),
        ("Sizes", [
            ("data.train_batch_size", "Prompts per step"),
            ("data.max_prompt_length", "Max prompt tokens"),
            ("data.max_response_length", "Max response tokens"),
            ("data.filter_overlong_prompts", "Drop prompts that are too long"),
            ("data.shuffle", "Shuffle"),
        ]),
    ]

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        self.runner = Worker(self)
        buttons = QHBoxLayout()
        self.preview_button = QPushButton("&Preview the training file")
        self.preview_button.clicked.connect(self.preview)
        self.check_button = QPushButton("Chec&k the training file")
        self.check_button.clicked.connect(self.check)
        self.target_python: Callable[[], str] = lambda: ""  # the Environment step's Python, once wired
        self.convert_button = QPushButton("Con&vert a file…")
        self.convert_button.setToolTip("Turn a JSONL/CSV/parquet of questions and answers into verl's format")
        self.convert_button.clicked.connect(self.open_convert)
        self.reward_button = QPushButton("&Test the reward…")
        self.reward_button.setToolTip("Score sample rows with verl's scorer or your reward function, before training")
        self.reward_button.clicked.connect(self.open_reward_bench)
        self._reward_dialog = None
        buttons.addWidget(self.preview_button)
        buttons.addWidget(self.check_button)
        buttons.addWidget(self.convert_button)
        buttons.addWidget(self.reward_button)
        buttons.addStretch(1)
        self.body_layout.addLayout(buttons)
        self.body_layout.addWidget(TaskBar(self.runner))
        self.status = note("", "dataStatus")
        self.body_layout.addWidget(self.status)
        self.table = QTableWidget()
        self.table.setObjectName("dataPreview")
        self.table.setAccessibleName("Data preview")
        self.table.setMinimumHeight(180)
        self.table.hide()
        self.body_layout.addWidget(self.table)
        self.runner.finished.connect(self._show)
        self.runner.failed.connect(self._failed)
        self._checked: tuple[str, str | None] | None = None  # the file checked and the model folder, to judge on
        self._follow_status = False  # a verdict came: keep the page scrolled to it until the user scrolls
        self._judging = False  # the runner's work is the judgement on the data (after a check)
        bar = self.scroll.verticalScrollBar()
        bar.rangeChanged.connect(lambda *_: QTimer.singleShot(0, self._show_status))
        bar.actionTriggered.connect(self._stop_following)
        self._report_html = ""
        self.finish()

    def wire(self, pages: Mapping[str, Page]) -> None:
        self.target_python = pages["environment"].target_python

    def open_reward_bench(self) -> None:
        from wizard.gui.tools.reward_bench import RewardBenchDialog

        if self._reward_dialog is None:
            self._reward_dialog = RewardBenchDialog(self.doc, self.target_python, self)
        self._reward_dialog.show()
        self._reward_dialog.raise_()

    def open_convert(self) -> None:
        from wizard.gui.tools.convert_dialog import ConvertDialog

        dialog = ConvertDialog(self.doc, self)
        dialog.setAttribute(Qt.WA_DeleteOnClose)
        dialog.show()

    def _train_file(self) -> str | None:
        files = self.doc.plan.data.train_files
        first = files[0] if isinstance(files, list) and files else files
        if not first:
            self.status.setText("Set a training file first.")
            return None
        return os.path.expandvars(os.path.expanduser(str(first)))

    def _failed(self, message: str) -> None:
        if self._judging:  # the check's report stays; the judgement says why it is missing
            self._judging = False
            self.status.setText(self._report_html + "<br>" + fit_words(None, message.splitlines()[0]))
            return
        self.status.setText(f"<span style='color:#c62828'>{escape(message, quote=False)}</span>")
        self.table.hide()  # not the last file's rows under this one's failure
        self._follow_status = True  # in sight: it was below the fold
        QTimer.singleShot(0, self._show_status)

    def preview(self) -> None:
        self._follow_status = self._judging = False
        path = self._train_file()
        if path:
            from wizard.adapters.files.dataset import preview

            self.runner.start(f"Reading the first rows of {path}", preview, path, 20)

    def check(self) -> None:
        path = self._train_file()
        if not path:
            return
        from wizard.adapters.files.dataset import check_file

        plan = self.doc.plan
        model = plan.models.actor_path if plan.models.actor_path and os.path.isdir(plan.models.actor_path) else None
        self._checked, self._follow_status, self._judging = (path, model), False, False
        self.runner.start(
            f"Checking {path}", check_file, path, batch_size=plan.data.train_batch_size, model_dir=model,
            max_prompt_length=plan.data.max_prompt_length, filter_overlong=bool(plan.data.filter_overlong_prompts),
            has_custom_reward=bool(plan.reward.custom_function_path), prompt_key=plan.data.prompt_key or "prompt")

    def _show(self, result) -> None:
        from wizard.adapters.files.dataset import DataReport, Preview

        if isinstance(result, Preview):
            rows = f"{result.num_rows} rows" if result.num_rows is not None else "rows: unknown until read"
            self.status.setText(f"{result.path}: {result.format}, {rows}, read in {result.seconds * 1000:.0f} ms")
            self.table.setColumnCount(len(result.columns))
            self.table.setHorizontalHeaderLabels(result.columns)
            self.table.setRowCount(len(result.rows))
            for r, row in enumerate(result.rows):
                for c, col in enumerate(result.columns):
                    text = str(row.get(col, ""))
                    item = QTableWidgetItem(text if len(text) < 300 else text[:300] + "…")
                    item.setToolTip(text[:2000])
                    self.table.setItem(r, c, item)
            # the prompt column takes the room the others leave (it was cut to ~100 px beside empty space)
            header = self.table.horizontalHeader()
            header.setSectionResizeMode(QHeaderView.Interactive)  # not the last file's stretched column
            self.table.resizeColumnsToContents()
            for c in range(self.table.columnCount()):
                self.table.setColumnWidth(c, min(self.table.columnWidth(c), 200))
            prompt = self.doc.plan.data.prompt_key or "prompt"
            if prompt in result.columns:
                header.setSectionResizeMode(result.columns.index(prompt), QHeaderView.Stretch)
            self.table.show()
            self._follow_status = True  # the preview in sight, as a check's verdict is
            QTimer.singleShot(0, self._show_status)
        elif isinstance(result, DataReport):
            worst = [window_finding(f) for f in result.findings if f.severity is not Severity.INFO]
            lines = [f"{result.path}: {result.rows} rows, checked in {result.seconds:.1f} s"]
            lines += [f"• {f.severity.value}: {f.message}" + (f" — fix: {f.fix}" if f.fix else "") for f in worst]
            if not worst:
                lines.append("The rows have the columns verl expects.")
            self._report_html = "<br>".join(escape(x, quote=False) for x in lines)
            self.status.setText(self._report_html)
            self._judge_on_data()
        elif isinstance(result, Judged):
            self._judging = False
            self.status.setText(self._report_html + "<br>" + fit_words(result.fit, result.why))
            self._follow_status = True
            QTimer.singleShot(0, self._show_status)

    def _stop_following(self, *_) -> None:
        self._follow_status = False

    def _show_status(self) -> None:
        """Scroll the page down to the whole status (again when the scroll area takes the page's new height)."""
        if not self._follow_status:
            return
        geo = self.status.geometry()  # (ensureWidgetVisible stops at a selectable label's first line)
        if self.table.isVisible():  # a preview: its first rows too
            geo = geo.united(self.table.geometry().adjusted(0, 0, 0, -max(0, self.table.height() - 120)))
        self.scroll.ensureVisible(geo.left(), geo.bottom(), 0, 6)

    def _judge_on_data(self) -> None:
        """After a check: the plan judged on the file's prompt lengths (a few estimates, on the worker)."""
        assessment = self.doc.assessment
        if self._checked is None or assessment is None:
            return
        if assessment.memory.judged is None:
            why = assessment.memory.why or "no memory estimate for this plan"
            self.status.setText(self._report_html + "<br>" + fit_words(None, f"{why}; choose GPUs on the Hardware step"
                                                                      if self.doc.gpus is None else why))
            return
        path, model = self._checked
        self._judging = True
        self.runner.start(f"Judging the plan on the prompts of {path}", fit_on_data, assessment.memory, path, model)
