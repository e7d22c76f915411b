"""The first step: a preset, the GPUs, or an imported verl script or YAML.

Cheap to import on purpose (Qt, the preset files and the GPU-spec parser): the window shows this step
while the checker loads on a worker thread (``WizardWindow(progressive=True)``). Until the window hands
it the plan document (:meth:`StartPage.attach`), a chosen preset or typed GPU spec is only remembered.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QStringListModel, Qt, Signal
from PySide6.QtWidgets import (
    QCompleter,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
)

from wizard.adapters.files.resources import load_preset_doc, preset_names
from wizard.core.hardware import GpuSpec
from wizard.gui.steps import texts
from wizard.gui.widgets.page import Page
from wizard.gui.wording import window_text
from wizard.usecases.hardware import gpu_model_ids, read_gpu_spec

if TYPE_CHECKING:
    from wizard.gui.document import PlanDocument

DEFAULT_PRESET = "grpo-1gpu-smoke"
GUIDE = ("<b>How it goes.</b> Pick a preset (or import the verl script you have); leave the GPUs empty to keep the "
         "preset's, or type yours. Each step on the left shows the verl keys it sets, with verl's default as the "
         "grey text of an empty field. The <b>Findings</b> below say what verl would refuse and when it would "
         "(at launch, at startup, in training), each with a fix. Nothing runs and nothing is written until the "
         "Write and Run steps.")
_COUNTS = re.compile(r"\s*\d+\s*[xX]\s*(?:\d+\s*[xX]\s*)?")  # the counts before a GPU spec's model


class StartPage(Page):
    step, title, subtitle = texts("start")
    opened = Signal(str)  # a file was read into the plan
    needs_document = Signal()  # an import asked for the plan before the window handed it over

    def __init__(self, doc: PlanDocument | None = None) -> None:
        super().__init__(doc)
        self._typed_gpus: GpuSpec | None = None  # what the GPU field holds, parsed
        self.chosen_while_loading: set[str] = set()  # "preset", "gpus": picked before the plan document came
        self._built = False
        self.presets = QListWidget()
        self.presets.setAccessibleName("Presets")
        self.presets.setWordWrap(True)
        self.presets.setSpacing(4)
        self.presets.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)  # as tall as its presets (fit_presets)
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
        self.gpus.setToolTip("Nodes x GPUs per node x GPU model. The config is checked against it; the model as "
                             "the GPU catalogue names it (type a few letters after the x for the list).")
        self.gpus.setAccessibleName("GPUs")
        self._models = QStringListModel(self)
        completer = QCompleter(self._models, self.gpus)
        completer.setCaseSensitivity(Qt.CaseInsensitive)
        completer.setFilterMode(Qt.MatchContains)
        self.gpus.setCompleter(completer)
        self.gpus.textEdited.connect(self._offer_models)
        self.gpus_error = QLabel()
        self.gpus_error.setObjectName("gpusError")
        self.gpus_error.setStyleSheet("color: #b00020")
        self.gpus_error.setWordWrap(True)
        self.gpus_error.hide()
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
        layout.addWidget(self.presets)
        layout.addWidget(self.description)
        layout.addLayout(form)
        row = QHBoxLayout()
        row.addWidget(self.import_button)
        row.addWidget(self.import_status, 1)
        layout.addLayout(row)
        self.guide = QLabel(GUIDE)
        self.guide.setObjectName("startGuide")
        self.guide.setWordWrap(True)
        self.guide.setTextFormat(Qt.RichText)
        layout.addWidget(self.guide)
        layout.addStretch(1)

        self.presets.currentItemChanged.connect(self._preset_changed)
        self.gpus.editingFinished.connect(self._gpus_changed)
        for i in range(self.presets.count()):
            if self.presets.item(i).data(Qt.UserRole) == DEFAULT_PRESET:
                self.presets.setCurrentRow(i)
        self._built = True

    def fit_presets(self) -> None:
        """Make the preset list as tall as its presets at the width it has now: no blank rows below them."""
        view = self.presets
        view.doItemsLayout()
        last = view.item(view.count() - 1)
        if last is None:
            return
        bottom = view.visualItemRect(last).bottom() + view.verticalOffset() + view.spacing() + 1
        view.setFixedHeight(min(bottom + 2 * view.frameWidth(), 420))

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self.fit_presets()

    def attach(self, doc: PlanDocument) -> None:
        """Take the plan document: what was chosen before it came (a preset, GPUs) becomes the plan."""
        self.doc = doc
        doc.gpus = self._typed_gpus  # read by the preset: one check, not two
        doc.changed.connect(self._show_gpus)
        item = self.presets.currentItem()
        if item is not None:
            doc.load_preset(item.data(Qt.UserRole))

    def _show_gpus(self) -> None:
        """The field follows the plan's GPUs when they change elsewhere (undo, recovery, detection)."""
        if self.doc is not None and self.doc.gpus != self._typed_gpus:
            self._typed_gpus = self.doc.gpus
            self.gpus.setText(str(self.doc.gpus) if self.doc.gpus else "")
            self._show_gpus_error("")

    def _preset_changed(self, item: QListWidgetItem | None, _prev=None) -> None:
        if item is None:
            return
        name = item.data(Qt.UserRole)
        self.description.setText(f"Preset <b>{name}</b>: its values are verl overrides you can review next.")
        self.import_status.clear()
        if self.doc is not None:
            self.doc.load_preset(name)
        elif self._built:  # the user's pick, not the default set while building the step
            self.chosen_while_loading.add("preset")

    def _offer_models(self, text: str) -> None:
        """Complete the GPU model after ``N x`` (or ``NODES x N x``) with the catalogue's names."""
        head = _COUNTS.match(text)
        self._models.setStringList([head.group(0) + model for model in gpu_model_ids()] if head else [])

    def _show_gpus_error(self, text: str) -> None:
        """The refusal under the field, the field marked, its words for screen readers; "" clears all three."""
        self.gpus_error.setText(text)
        self.gpus_error.setVisible(bool(text))
        self.gpus.setStyleSheet("QLineEdit { border: 2px solid #c62828; }" if text else "")
        self.gpus.setAccessibleDescription(text)

    def _gpus_changed(self) -> None:
        """Read the field as ``--gpus`` is read (the same parser, the same GPU catalogue): a spec it refuses is said
        under the field, with the did-you-mean, and leaves the plan's GPUs as they were."""
        text = self.gpus.text().strip()
        try:
            spec = read_gpu_spec(text) if text else None
        except ValueError as exc:
            self._show_gpus_error(window_text(str(exc)) or "")
            return
        self._show_gpus_error("")
        if self.doc is None and spec != self._typed_gpus:
            self.chosen_while_loading.add("gpus")
        self._typed_gpus = spec  # before the edit: the field keeps the user's own words
        if self.doc is not None:
            self.doc.set_gpus(spec)

    def _import_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, "Import a verl launch script or config", str(Path.home()), "verl configs (*.sh *.yaml *.yml *.json)"
        )
        if path:
            self.import_file(path)

    def import_file(self, path: str) -> bool:
        if self.doc is None:
            self.needs_document.emit()  # the window finishes loading now (connected directly)
        if self.doc is None:  # it could not load: the window said why
            return False
        from wizard.adapters.files.sources import load_source  # imported after the loader is done with it

        try:
            source = load_source(path)
        except ValueError as exc:
            self.import_status.setText(f"<span style='color:#b00020'>Cannot import: {html.escape(str(exc))}</span>")
            return False
        self.presets.blockSignals(True)
        self.presets.clearSelection()
        self.presets.setCurrentRow(-1)
        self.presets.blockSignals(False)
        plan = source.to_plan(name=Path(path).stem)
        self.doc.set_plan(plan, source.findings, f"Import {Path(path).name}", another_run=True)
        self.doc.path = path if source.plan is not None else None  # Save writes back only to plan files
        self.opened.emit(path)
        kept = len(plan.passthrough)
        self.description.setText(f"Imported {path}")
        self.import_status.setText(
            f"Imported {len(source.overrides)} overrides ({kept} without a field in the steps, kept exactly as "
            "written)")
        self.import_status.setToolTip(
            "The wizard has a field for the keys most runs change; every other override of your script is kept "
            "word for word (the plan's 'passthrough') and written back into run.sh and config.yaml, checked like "
            "the rest. The Review step shows them all.")
        return True
