"""The wizard's pages: Start (preset, GPUs or an import), Review (findings, run.sh, YAML), Write."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
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
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWizardPage,
)

from wizard.adapters.files import WriteError
from wizard.adapters.generate import CONFIG_YAML, RUN_SH, write_plan_files
from wizard.adapters.resources import load_preset_doc, preset_names
from wizard.adapters.sources import load_source
from wizard.core.gpus import parse_gpu_spec
from wizard.gui.document import PlanDocument
from wizard.gui.findings_view import FindingsView
from wizard.gui.highlight import ConfigHighlighter

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


class StartPage(QWizardPage):
    def __init__(self, doc: PlanDocument) -> None:
        super().__init__()
        self.doc = doc
        self.setTitle("What do you want to run?")
        self.setSubTitle("Start from a preset an expert would run, or import an existing verl script or YAML.")
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
        kept = len(plan.passthrough)
        self.description.setText(f"Imported {path}")
        self.import_status.setText(
            f"Imported {len(source.overrides)} overrides ({kept} kept verbatim as passthrough)"
        )
        return True


class ReviewPage(QWizardPage):
    def __init__(self, doc: PlanDocument) -> None:
        super().__init__()
        self.doc = doc
        self.setTitle("Review")
        self.setSubTitle("What verl 0.9.1 would say, and the mistakes it only finds later. Then the files.")
        self.findings = FindingsView()
        self.findings.fix_requested.connect(self.doc.apply_fix)
        self.tabs = QTabWidget()
        self.run_sh = code_view("runShView")
        self.yaml = code_view("yamlView")
        self.tabs.addTab(self.run_sh, "run.sh")
        self.tabs.addTab(self.yaml, "config.yaml")
        splitter = QSplitter(Qt.Vertical)
        splitter.addWidget(self.findings)
        splitter.addWidget(self.tabs)
        splitter.setSizes([260, 360])
        layout = QVBoxLayout(self)
        layout.addWidget(splitter)
        doc.changed.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        self.findings.set_findings(self.doc.findings)
        self.run_sh.setPlainText(self.doc.files.get(RUN_SH, ""))
        self.yaml.setPlainText(self.doc.files.get(CONFIG_YAML, "# " + "; ".join(self.doc.notes)))
        self.completeChanged.emit()

    def isComplete(self) -> bool:  # noqa: N802 - Qt's name
        return self.doc.result is not None and self.doc.result.ok


class WritePage(QWizardPage):
    def __init__(self, doc: PlanDocument) -> None:
        super().__init__()
        self.doc = doc
        self.setTitle("Write the files")
        self.setSubTitle("run.sh (verl overrides), config.yaml (for --config-path/--config-name) and plan.json. "
                         "Files already there are kept as .bak copies.")
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
        layout.addStretch(1)
        self.written = False

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
        self.written = True
        self.doc.undo_stack.setClean()
        self.completeChanged.emit()
        return True

    def isComplete(self) -> bool:  # noqa: N802
        return self.written
