"""Convert a question/answer file (JSONL, JSON, CSV or parquet) into verl's row format, with a live preview.

verl wants chat-message prompts, a data_source and reward_model.ground_truth in every row; most people's
data is two columns. The dialog fills a ConversionSpec (core.data_schema, the same one
``verl-wizard data convert`` builds), shows the first rows exactly as verl will read them while the user
picks columns, writes atomically through adapters.dataset, and then offers to make the written file the
plan's training file (one undoable edit).
"""

from __future__ import annotations

import html
import os
from pathlib import Path

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from wizard.core.data import BUILTIN_SCORERS, ConversionError, ConversionSpec, conversion_findings, scorer_for
from wizard.core.findings import Finding, Severity
from wizard.gui.document import PlanDocument
from wizard.gui.widgets.page import note
from wizard.gui.widgets.task_bar import TaskBar
from wizard.gui.workers import Worker
from wizard.gui.wording import window_finding

PREVIEW_ROWS = 3
PREVIEW_DELAY_MS = 250  # typing in the template re-reads the file this long after the last key
FILE_FILTER = "Datasets (*.jsonl *.json *.csv *.parquet);;All files (*)"
QUESTION_GUESSES = ("question", "problem", "prompt", "query", "input", "instruction")
ANSWER_GUESSES = ("answer", "solution", "ground_truth", "output", "target", "response")
# The CLI's flag names in the core's one-line reasons, as this dialog labels them.
FLAG_WORDS = {"--template": "The template", "--data-source": "data_source", "--question": "Question column",
              "--answer": "Answer column"}
RED = "#c62828"


def _guess(columns: list[str], names: tuple[str, ...]) -> str | None:
    """The column a newcomer most likely means (case-insensitive), so the first preview needs no clicks."""
    lowered = {c.lower(): c for c in columns}
    return next((lowered[n] for n in names if n in lowered), None)


def _words(message: str) -> str:
    for flag, words in FLAG_WORDS.items():
        message = message.replace(flag, words)
    return message


def default_output(input_path: str) -> str:
    """Next to the input: NAME.verl.parquet (never the input itself)."""
    p = Path(input_path)
    return str(p.with_name(f"{p.stem}.verl.parquet"))


# On the reader's thread; the answer says which question it answers.
def _read_columns(path: str) -> tuple[str, list[str]]:
    from wizard.adapters.files.dataset import DatasetFile

    return "columns", DatasetFile(path).columns()


def _preview(path: str, spec: ConversionSpec) -> tuple[str, ConversionSpec, list[dict]]:
    from wizard.adapters.files.dataset_convert import convert_preview

    return "preview", spec, convert_preview(path, spec, PREVIEW_ROWS)


def _write(path: str, out: str, spec: ConversionSpec, has_custom_reward: bool):
    from wizard.adapters.files.dataset_convert import convert_file

    return convert_file(path, out, spec, has_custom_reward=has_custom_reward)


class ConvertDialog(QDialog):
    """``written(str)`` is emitted with the output path after a successful write."""

    written = Signal(str)

    def __init__(self, doc: PlanDocument, parent: QWidget | None = None, path: str | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        self.columns: list[str] = []
        self.out_path: str | None = None  # the file last written
        self.setWindowTitle("Convert a file to verl's format")
        self.setObjectName("convertDialog")
        self.reader = Worker(self)  # columns and preview: a newer request drops an older answer
        self.writer = Worker(self)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(PREVIEW_DELAY_MS)
        self._timer.timeout.connect(self.refresh_preview)
        layout = QVBoxLayout(self)
        layout.addWidget(note(
            "verl reads parquet rows with a chat-format <code>prompt</code>, a <code>data_source</code> (it picks "
            "the scorer) and <code>reward_model.ground_truth</code>. Pick the columns of your file that hold "
            "the question and the answer; the preview shows the first rows as verl will read them.",
            "convertIntro"))
        self.form_box = QWidget()
        self.form_box.setLayout(self._form())
        layout.addWidget(self.form_box)
        layout.addWidget(TaskBar(self.reader))
        self.status = note("", "convertStatus")
        layout.addWidget(self.status)
        self.table = QTableWidget(0, 3)
        self.table.setObjectName("convertPreview")
        self.table.setAccessibleName("Converted rows")
        self.table.setHorizontalHeaderLabels(["Prompt the model sees", "ground_truth", "data_source"])
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setEditTriggers(QTableWidget.NoEditTriggers)
        self.table.setWordWrap(True)
        self.table.setMinimumHeight(160)
        layout.addWidget(self.table, 1)
        self.findings = note("", "convertFindings")
        layout.addWidget(self.findings)
        layout.addWidget(TaskBar(self.writer))
        self.result = note("", "convertResult")
        layout.addWidget(self.result)
        self.buttons = QDialogButtonBox()
        self.write_button = self.buttons.addButton("&Write", QDialogButtonBox.ActionRole)
        self.write_button.setObjectName("convertWrite")
        self.use_button = self.buttons.addButton("&Use it as the training file", QDialogButtonBox.ActionRole)
        self.use_button.setObjectName("convertUse")
        self.use_button.hide()
        close = self.buttons.addButton(QDialogButtonBox.Close)
        close.clicked.connect(self.reject)
        self.write_button.clicked.connect(self.write)
        self.use_button.clicked.connect(self.use_as_training_file)
        layout.addWidget(self.buttons)
        self.reader.finished.connect(self._read)
        self.reader.failed.connect(self._read_failed)
        self.writer.finished.connect(self._written)
        self.writer.failed.connect(self._write_failed)
        self._set_ready(False)
        self.resize(900, 640)
        if path:
            self.set_input(path)

    def _form(self) -> QFormLayout:
        form = QFormLayout()
        self.input = QLineEdit()
        self.input.setObjectName("convertInput")
        self.input.setPlaceholderText("a .jsonl, .json, .csv or .parquet file")
        self.input.editingFinished.connect(lambda: self.set_input(self.input.text().strip()))
        browse = QPushButton("Choose…")
        browse.clicked.connect(self._browse_input)
        form.addRow("File:", _row(self.input, browse))
        self.question = self._combo("convertQuestion", "Question column")
        self.answer = self._combo("convertAnswer", "Answer column")
        form.addRow("Question column:", self.question)
        form.addRow("Answer column:", self.answer)
        self.system = self._line("convertSystem", "optional: a system prompt put before every question")
        form.addRow("System prompt:", self.system)
        self.template = self._line("convertTemplate", "optional: wraps each question, e.g. {question} Let's think "
                                                      "step by step and output the final answer after \"####\".")
        form.addRow("Template:", self.template)
        self.data_source = QComboBox()
        self.data_source.setObjectName("convertDataSource")
        self.data_source.setEditable(True)
        self.data_source.addItems(["custom", *BUILTIN_SCORERS])
        self.data_source.setToolTip("Picks verl's scorer for every row: openai/gsm8k uses the GSM8K scorer; "
                                    "a name verl does not know needs your own reward function")
        self.data_source.currentTextChanged.connect(lambda _t: self._changed())
        form.addRow("data_source:", self.data_source)
        self.ability = self._line("convertAbility", "optional, e.g. math")
        self.split = self._line("convertSplit", "optional, e.g. train (goes to extra_info.split)")
        form.addRow("Ability:", self.ability)
        form.addRow("Split:", self.split)
        self.output = QLineEdit()
        self.output.setObjectName("convertOutput")
        self.output.setPlaceholderText("where to write the .parquet file")
        browse_out = QPushButton("Choose…")
        browse_out.clicked.connect(self._browse_output)
        form.addRow("Write to:", _row(self.output, browse_out))
        return form

    def _combo(self, name: str, accessible: str) -> QComboBox:
        box = QComboBox()
        box.setObjectName(name)
        box.setAccessibleName(accessible)
        box.currentIndexChanged.connect(lambda _i: self._changed())
        return box

    def _line(self, name: str, placeholder: str) -> QLineEdit:
        line = QLineEdit()
        line.setObjectName(name)
        line.setPlaceholderText(placeholder)
        line.textChanged.connect(lambda _t: self._changed())
        return line

    # -- input file -------------------------------------------------------------------------------
    def _browse_input(self) -> None:
        start = os.path.dirname(self.input.text()) or os.path.expanduser("~")
        path, _ = QFileDialog.getOpenFileName(self, "A file with questions and answers", start, FILE_FILTER)
        if path:
            self.set_input(path)

    def _browse_output(self) -> None:
        start = self.output.text() or os.path.expanduser("~")
        path, _ = QFileDialog.getSaveFileName(self, "Write verl's parquet to", start, "Parquet (*.parquet)")
        if path:
            self.output.setText(path if path.endswith(".parquet") else path + ".parquet")

    def set_input(self, path: str) -> None:
        """Read the columns of ``path`` (off the GUI thread); the preview follows."""
        path = os.path.expanduser(path)
        if not path or path == getattr(self, "_input", None):
            return
        self._input = path
        self.input.setText(path)
        if not self.output.text() or self.output.text() == getattr(self, "_default_out", None):
            self._default_out = default_output(path)
            self.output.setText(self._default_out)
        self.columns = []
        self._set_ready(False)
        self.reader.start(f"Reading the columns of {os.path.basename(path)}", _read_columns, path)

    def _fill_columns(self, columns: list[str]) -> None:
        self.columns = columns
        for box, guesses in ((self.question, QUESTION_GUESSES), (self.answer, ANSWER_GUESSES)):
            box.blockSignals(True)
            box.clear()
            box.addItems(columns)
            guess = _guess(columns, guesses)
            if guess:
                box.setCurrentText(guess)
            box.blockSignals(False)
        if self.answer.currentText() == self.question.currentText() and len(columns) > 1:
            self.answer.setCurrentIndex(1 if self.question.currentIndex() == 0 else 0)
        self.refresh_preview()

    # -- spec and preview -------------------------------------------------------------------------
    def spec(self) -> ConversionSpec:
        """The ConversionSpec the fields describe; ConversionError with a one-line reason."""
        spec = ConversionSpec(question=self.question.currentText(), answer=self.answer.currentText(),
                              data_source=self.data_source.currentText().strip(),
                              system=self.system.text().strip() or None, template=self.template.text() or None,
                              ability=self.ability.text().strip() or None, split=self.split.text().strip() or None)
        if not spec.question or not spec.answer:
            raise ConversionError("choose the question and the answer columns")
        if spec.question == spec.answer:
            raise ConversionError("the question and the answer are the same column; choose two")
        spec.validate(self.columns or None)
        return spec

    def _changed(self) -> None:
        self._set_ready(False)
        if self.columns:
            self._timer.start()

    def refresh_preview(self) -> None:
        if not self.columns or self.writer.running:
            return
        try:
            spec = self.spec()
        except ConversionError as exc:
            self._show_problem(_words(str(exc)))
            return
        path = self._input
        self.reader.start("Converting the first rows", _preview, path, spec)

    def _read(self, answer: tuple) -> None:
        if answer[0] == "columns":
            self.status.setText(f"Columns: {', '.join(answer[1]) or 'none'}")
            self._fill_columns(answer[1])
            return
        _, spec, rows = answer
        if spec != self._spec_or_none():
            return  # the fields changed while it ran; the newer preview is on its way
        self._show_rows(rows)
        self._show_findings(spec, conversion_findings(spec, bool(self.doc.plan.reward.custom_function_path)))
        self.status.setText(f"The first {len(rows)} rows as verl will read them (nothing is written yet):")
        self._set_ready(bool(rows))

    def _spec_or_none(self) -> ConversionSpec | None:
        try:
            return self.spec()
        except ConversionError:
            return None

    def _read_failed(self, message: str) -> None:
        self._show_problem(_words(message))

    def _show_problem(self, message: str) -> None:
        self.table.setRowCount(0)
        self.findings.setText("")
        self.status.setText(f"<span style='color:{RED}'>{html.escape(message)}</span>")
        self._set_ready(False)

    def _show_rows(self, rows: list[dict]) -> None:
        self.table.setRowCount(len(rows))
        for r, row in enumerate(rows):
            prompt = "\n".join(f"[{m['role']}] {m['content']}" for m in row["prompt"])
            for c, text in enumerate((prompt, row["reward_model"]["ground_truth"], row["data_source"])):
                item = QTableWidgetItem(text)
                item.setToolTip(text[:4000])
                self.table.setItem(r, c, item)
        self.table.setColumnWidth(0, 520)
        self.table.resizeRowsToContents()

    def _show_findings(self, spec: ConversionSpec, findings: list[Finding]) -> None:
        scorer = scorer_for(spec.data_source)
        lines = [f"data_source {html.escape(spec.data_source)!r} is scored by verl's {scorer} scorer."] if scorer \
            else []
        lines += [f"<span style='color:{RED if f.severity is Severity.ERROR else '#ef6c00'}'>"
                 f"<b>{f.severity.value}</b></span> {html.escape(f.message)}" for f in map(window_finding, findings)]
        self.findings.setText("<br>".join(lines))

    def _set_ready(self, ready: bool) -> None:
        self.write_button.setEnabled(ready and not self.writer.running)

    # -- write ------------------------------------------------------------------------------------
    def write(self) -> None:
        try:
            spec = self.spec()
        except ConversionError as exc:
            self._show_problem(_words(str(exc)))
            return
        out = os.path.expanduser(self.output.text().strip())
        if not out:
            self._show_problem("Say where to write the .parquet file.")
            return
        custom = bool(self.doc.plan.reward.custom_function_path)
        path = self._input
        self.write_button.setEnabled(False)
        self.form_box.setEnabled(False)  # the preview must stay the picture of what is written
        self.use_button.hide()
        self.result.setText("")
        self.writer.start(f"Writing {os.path.basename(out)}", _write, path, out, spec, custom)

    def _written(self, conv) -> None:
        self.form_box.setEnabled(True)
        self.out_path = conv.out
        lines = [f"Wrote {conv.written} rows to <b>{html.escape(conv.out)}</b>."]
        if conv.backup:
            lines.append(f"The file that was there is kept as {html.escape(conv.backup)}.")
        if conv.skipped:
            lines.append(f"<span style='color:#ef6c00'>{len(conv.skipped)} rows had an empty question or "
                         "answer and were left out.</span>")
        self.result.setText(" ".join(lines))
        self.status.setText(f"The first rows of {html.escape(os.path.basename(conv.out))}, as verl will read them:")
        self.use_button.setText(f"&Use {os.path.basename(conv.out)} as the training file")
        self.use_button.setVisible(self._train_files() != [conv.out])
        self._set_ready(True)
        self.written.emit(conv.out)

    def _write_failed(self, message: str) -> None:
        self.form_box.setEnabled(True)
        self.result.setText(f"<span style='color:{RED}'>Nothing written: {html.escape(_words(message))}</span>")
        self._set_ready(True)

    def _train_files(self) -> list[str]:
        files = self.doc.plan.data.train_files
        return [files] if isinstance(files, str) else list(files or [])

    def use_as_training_file(self) -> None:
        """data.train_files = the written file: one undoable edit."""
        if not self.out_path:
            return
        plan = self.doc.plan.model_copy(deep=True)
        plan.data.train_files = self.out_path
        self.doc.set_plan(plan, text=f"Set data.train_files = {self.out_path}")
        self.use_button.hide()
        self.result.setText(self.result.text() + " It is now the plan's training file (Edit ▸ Undo takes it back).")


def _row(*widgets: QWidget) -> QWidget:
    box = QWidget()
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    for i, w in enumerate(widgets):
        row.addWidget(w, 1 if i == 0 else 0)
    return box

