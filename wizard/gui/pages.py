"""The wizard's first and last steps: Start (preset, GPUs or an import), Review (findings, files), Write."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
)

from wizard.adapters.files import WriteError
from wizard.adapters.generate import CONFIG_YAML, RUN_SH, write_plan_files
from wizard.adapters.resources import load_key_docs, load_preset_doc, load_schema, preset_names
from wizard.adapters.sources import load_source
from wizard.core.gpus import parse_gpu_spec
from wizard.core.key_help import changes_from_defaults, key_help
from wizard.gui.document import PlanDocument
from wizard.gui.highlight import ConfigHighlighter
from wizard.gui.page import Page

DEFAULT_PRESET = "grpo-1gpu-smoke"


def code_view(name: str) -> QPlainTextEdit:
    view = QPlainTextEdit()
    view.setReadOnly(True)
    view.setObjectName(name)
    view.setAccessibleName(name)
    view.setLineWrapMode(QPlainTextEdit.NoWrap)
    view.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
    ConfigHighlighter(view.document())
    return view


class StartPage(Page):
    step, title = "Start", "What do you want to run?"
    subtitle = "Start from a preset an expert would run, or import an existing verl script or YAML."
    opened = Signal(str)  # a file was read into the plan

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        self.presets = QListWidget()
        self.presets.setAccessibleName("Presets")
        self.presets.setWordWrap(True)
        self.presets.setSpacing(4)
        for name in preset_names():
            description = load_preset_doc(name).get("description", "")
            item = QListWidgetItem(f"{name}\n{description}")
            item.setData(Qt.UserRole, name)
            item.setToolTip(description)
            self.presets.addItem(item)
        self.description = QLabel()
        self.description.setWordWrap(True)
        self.description.setObjectName("presetDescription")
        self.gpus = QLineEdit()
        self.gpus.setPlaceholderText("as in the preset; or e.g. 1, 8xH100-80GB, 2x8xH100-80GB")
        self.gpus.setToolTip("Nodes x GPUs per node x GPU model. The config is checked against it.")
        self.gpus_error = QLabel()
        self.gpus_error.setObjectName("gpusError")
        self.gpus_error.setStyleSheet("color: #b00020")
        self.import_button = QPushButton("&Import a verl script or YAML…")
        self.import_button.clicked.connect(self._import_dialog)
        self.import_status = QLabel()
        self.import_status.setWordWrap(True)
        self.import_status.setObjectName("importStatus")

        form = QFormLayout()
        form.addRow("&GPUs:", self.gpus)
        form.addRow("", self.gpus_error)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("&Presets:", buddy=self.presets))
        layout.addWidget(self.presets, 1)
        layout.addWidget(self.description)
        layout.addLayout(form)
        row = QHBoxLayout()
        row.addWidget(self.import_button)
        row.addWidget(self.import_status, 1)
        layout.addLayout(row)

        self.presets.currentItemChanged.connect(self._preset_changed)
        self.gpus.editingFinished.connect(self._gpus_changed)
        for i in range(self.presets.count()):
            if self.presets.item(i).data(Qt.UserRole) == DEFAULT_PRESET:
                self.presets.setCurrentRow(i)

    def _preset_changed(self, item: QListWidgetItem | None, _prev=None) -> None:
        if item is None:
            return
        name = item.data(Qt.UserRole)
        self.description.setText(f"Preset <b>{name}</b>: its values are verl overrides you can review next.")
        self.import_status.clear()
        self.doc.load_preset(name)

    def _gpus_changed(self) -> None:
        text = self.gpus.text().strip()
        if not text:
            self.gpus_error.clear()
            self.doc.set_gpus(None)
            return
        try:
            spec = parse_gpu_spec(text)
        except ValueError as exc:
            self.gpus_error.setText(str(exc))
            return
        self.gpus_error.clear()
        self.doc.set_gpus(spec)

    def _import_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Import a verl launch script or config", str(Path.home()), "verl configs (*.sh *.yaml *.yml *.json)"
        )
        if path:
            self.import_file(path)

    def import_file(self, path: str) -> bool:
        try:
            source = load_source(path)
        except ValueError as exc:
            self.import_status.setText(f"<span style='color:#b00020'>Cannot import: {exc}</span>")
            return False
        self.presets.blockSignals(True)
        self.presets.clearSelection()
        self.presets.setCurrentRow(-1)
        self.presets.blockSignals(False)
        plan = source.to_plan(name=Path(path).stem)
        self.doc.set_plan(plan, source.findings, f"Import {Path(path).name}")
        self.doc.path = path if source.plan is not None else None  # Save writes back only to plan files
        self.opened.emit(path)
        kept = len(plan.passthrough)
        self.description.setText(f"Imported {path}")
        self.import_status.setText(
            f"Imported {len(source.overrides)} overrides ({kept} kept verbatim as passthrough)"
        )
        return True


class ReviewPage(Page):
    step, title = "Review", "Review"
    subtitle = ("The files verl-wizard will write, and every value this plan changes from verl's defaults. "
                "The findings panel says what verl 0.9.1 would reject and what it would only find later.")

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
        layout = QVBoxLayout(self)
        layout.addWidget(self.verdict)
        layout.addWidget(self.tabs, 1)
        doc.changed.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        self.run_sh.setPlainText(self.doc.files.get(RUN_SH, ""))
        self.yaml.setPlainText(self.doc.files.get(CONFIG_YAML, "# " + "; ".join(self.doc.notes)))
        result = self.doc.result
        if result is None or result.ok:
            self.verdict.setText("verl 0.9.1 would accept this config. Write the files next.")
        else:
            errors = sum(1 for f in result.findings if f.severity.value == "error")
            self.verdict.setText(f"<b style='color:#c62828'>{errors} error(s)</b> would stop verl: fix them in the "
                                 "findings panel (each has its fix) before writing.")
        self._fill_changes()
        self.complete_changed.emit()

    def _fill_changes(self) -> None:
        schema, docs = load_schema(), load_key_docs()
        engine = self.doc.result.engine if self.doc.result else None
        rows = changes_from_defaults(schema, self.doc.overrides, engine)
        self.changes.setRowCount(len(rows))
        for r, (key, value, default) in enumerate(rows):
            for c, text in enumerate((key, value, default)):
                item = QTableWidgetItem(text)
                item.setToolTip(key_help(schema, docs, key, engine))
                self.changes.setItem(r, c, item)
        self.changes.resizeColumnsToContents()

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


class WritePage(Page):
    step, title = "Write", "Write the files"
    subtitle = ("run.sh (verl overrides), config.yaml (for --config-path/--config-name) and plan.json. "
                "Files already there are kept as .bak copies.")

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        self.folder = QLineEdit(str(Path.cwd() / "verl-run"))
        self.folder.setAccessibleName("Output folder")
        browse = QPushButton("&Browse…")
        browse.clicked.connect(self._browse)
        self.write_button = QPushButton("&Write")
        self.write_button.setDefault(True)
        self.write_button.clicked.connect(self.write)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setObjectName("writeStatus")
        self.status.setTextInteractionFlags(Qt.TextSelectableByMouse)
        row = QHBoxLayout()
        row.addWidget(self.folder, 1)
        row.addWidget(browse)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("&Folder:", buddy=self.folder))
        layout.addLayout(row)
        layout.addWidget(self.write_button)
        layout.addWidget(self.status)
        from wizard.gui.cluster_box import ClusterBox

        self.cluster = ClusterBox(doc, self.folder)
        layout.addWidget(self.cluster)
        layout.addStretch(1)

    def _browse(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Write the files into", self.folder.text())
        if path:
            self.folder.setText(path)

    def write(self) -> bool:
        folder = self.folder.text().strip()
        if not folder:
            self.status.setText("Choose a folder first.")
            return False
        try:
            written = write_plan_files(self.doc.plan, folder)
        except WriteError as exc:
            self.status.setText(f"<span style='color:#b00020'>{exc}</span>")
            return False
        lines = [f"Wrote {p}" for p in written.files] + [f"Kept the previous file as {p}" for p in written.backups]
        lines += [f"Note: {n}" for n in written.notes]
        lines.append(f"Start it with: bash {Path(folder) / RUN_SH}")
        self.status.setText("<br>".join(lines))
        self.doc.undo_stack.setClean()
        self.complete_changed.emit()
        return True

    def is_complete(self) -> bool:
        return True  # the Run step works from the plan itself; writing the files is not required
