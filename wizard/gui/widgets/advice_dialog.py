"""Make it fit (or Faster): the advisor's alternatives for the plan on its GPUs, side by side, one Apply = one undo step.

The search (a few hundred estimates, ``wizard.usecases.advising.plan_advice``) runs on a :class:`Worker`, never on
an edit; the table shows, per alternative, what changes (and, in its tooltip, the keys it sets), whether it is a
change of tuning, hardware or method, the peak per GPU against the GPU's memory, the predicted step time and the
verdict. Where nothing on these GPUs fits, the dialog says so in the advisor's words.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView, QDialog, QDialogButtonBox, QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QVBoxLayout,
    QWidget,
)

from wizard.core.advice import NONE_FASTER
from wizard.core.memory import GIB
from wizard.core.plan import apply_overrides
from wizard.core.steptime.terms import seconds_text
from wizard.gui.document import PlanDocument
from wizard.gui.theme import canvas_colours
from wizard.gui.workers import Worker
from wizard.gui.wording import window_text
from wizard.usecases.plan_notes import no_estimate_reason

COLUMNS = ("What changes", "Kind", "Peak per GPU", "Step time", "Verdict")
HOST_UNJUDGED = ("Fits the GPUs. The nodes' RAM is not known here, so nothing checked that a node holds what this "
                 "needs of it (CPU offload and LoRA's base spend host RAM); a cluster spec with memory_gib, or "
                 "Detect this machine, on the Hardware step has it checked.")


def _search(memory):
    """The advisor and the plan's own step time (run on the worker: data in, data out)."""
    from wizard.usecases.advising import plan_advice, step_time

    return plan_advice(memory), step_time(memory)


class AdviceDialog(QDialog):
    """The advisor's alternatives for ``doc``'s plan; ``apply()`` sets the chosen one as one undo step."""

    def __init__(self, doc: PlanDocument, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.doc = doc
        self.advice = None
        memory = doc.assessment.memory if doc.assessment is not None else None
        fits = memory is not None and memory.verdict.fits
        self.over = memory is not None and memory.verdict.word == "does_not_fit"
        self.setWindowTitle("Faster, still fitting" if fits else "Make it fit")
        self.setAccessibleName(self.windowTitle())
        self.resize(980, 420)
        self.intro = QLabel("Searching the configs that fit these GPUs (each one estimated again)…")
        self.intro.setWordWrap(True)
        self.intro.setAccessibleName("What the advisor found")
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setAccessibleName("Alternatives, fastest first")
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        self.table.setWordWrap(True)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.Stretch)
        for i in range(1, len(COLUMNS)):
            header.setSectionResizeMode(i, QHeaderView.ResizeToContents)
        self.table.itemSelectionChanged.connect(self._selection_changed)
        self.table.cellDoubleClicked.connect(lambda *_: self.apply())
        self.unpicked = QLabel()  # why no row is selected for the user, while none is
        self.unpicked.setWordWrap(True)
        self.unpicked.setObjectName("adviceUnpicked")
        self.unpicked.setAccessibleName("Why no alternative is selected")
        self.unpicked.hide()
        self.keys = QLabel()
        self.keys.setWordWrap(True)
        self.keys.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.keys.setAccessibleName("Keys the selected alternative sets")
        self.buttons = QDialogButtonBox()
        self.apply_button = self.buttons.addButton("&Apply", QDialogButtonBox.AcceptRole)
        self.apply_button.setEnabled(False)
        self.apply_button.setToolTip("Set the selected alternative's keys in the plan (Edit ▸ Undo takes it back)")
        self.buttons.addButton(QDialogButtonBox.Close)
        self.buttons.accepted.connect(self.apply)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.unpicked)
        layout.addWidget(self.keys)
        layout.addWidget(self.buttons)
        self.worker = Worker(self)
        self.worker.finished.connect(self._found)
        self.worker.failed.connect(self._failed)
        if memory is None or memory.judged is None:
            why = no_estimate_reason(memory) if memory is not None else "the check failed"
            self.intro.setText("No memory estimate to advise on: " + window_text(why))
        else:
            self.worker.start("advisor", _search, memory)

    @property
    def alternatives(self) -> list:
        return self.advice.alternatives if self.advice is not None else []

    def _found(self, result) -> None:
        self.advice, step = result
        tokens = self.doc.response_tokens
        assumed = (f"responses averaging {tokens:,} tokens (as set on the Placement step)" if tokens else
                   "every response at max_response_length, the worst case (a mean can be set on the Placement step)")
        # a plan that does not fit has no step to compare with: what it would take, were it to fit, said so
        now = (f"As planned it does not fit; if it did, its {step.line()}" if self.over and step.seconds is not None
               else f"As planned: {step.line()}") + f". Step times assume {assumed}."
        self.intro.setToolTip("Assuming " + ";\n".join(step.assumptions) if step.assumptions else "")
        if self.advice.statement:  # nothing fits without a change of method: the advisor's words, the list below
            head = self.advice.statement.split("; what fits on ")[0] + "."
            lora = self.advice.statement.split("; LoRA would fit ")
            if len(lora) > 1:  # why LoRA is not among them: the host's RAM (the list below cannot say that)
                head += " LoRA would fit " + lora[1] + "."
            if self.alternatives:
                head += " These change the method and fit (fastest first):"
        elif not self.alternatives:
            if not self.advice.fits_now:
                head = "Nothing on these GPUs fits."
            elif self.advice.step_seconds is None:  # nothing to be faster than
                head = "It fits; with no step time predicted for it, nothing is offered as faster."
            else:
                head = f"Nothing faster that still fits was found: {NONE_FASTER}."
        elif self.advice.fits_now:
            head = "It fits; these fit too and are predicted to be faster (fastest first):"
        elif self.advice.tight_now:
            head = "It fits only tightly; these give it the estimate's margin, each estimated again (fastest first):"
        else:
            head = "These fit, each estimated again (fastest first; changes of method last):"
        text = f"{now}\n{head}"
        if kept := self.advice.lora_kept(len(self.alternatives)):
            text += f"\n{kept}."
        self.intro.setText(text)
        self.table.setRowCount(len(self.alternatives))
        for row, alt in enumerate(self.alternatives):
            cap = f" of {alt.capacity_bytes / GIB:.1f}" if alt.capacity_bytes else ""
            cells = (alt.text, alt.kind, f"{alt.peak_bytes / GIB:.1f}{cap} GiB",
                     "?" if alt.step_seconds is None else f"{seconds_text(alt.step_seconds)} s"
                     + (f" ({alt.step_seconds / 3600:.1f} h)" if alt.step_seconds >= 3600 else ""),
                     alt.verdict + (f"; {alt.host_note}" if alt.host_note else ""))
            for col, value in enumerate(cells):
                item = QTableWidgetItem(value)
                item.setToolTip("\n".join(alt.overrides))
                if col == len(cells) - 1 and alt.host_note:  # fits the GPUs; the node's RAM was never judged
                    item.setForeground(QColor(canvas_colours().severity["warning"]))
                    item.setToolTip(f"{HOST_UNJUDGED}\n\n" + "\n".join(alt.overrides))
                self.table.setItem(row, col, item)
        # the columns fit their new contents first: rows sized while the wrapped column was wider than it ends up
        # were cut ("... rollout TP ..."); the scroll bar stays, so its coming does not narrow that column again
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarAlwaysOn)
        self.table.horizontalHeader().resizeSections()
        self.table.resizeRowsToContents()
        first, why = self.advice.pick() if self.advice is not None else (None, None)
        if first is not None:
            self.table.selectRow(first)
        self.unpicked.setText(why or "")
        self.unpicked.setVisible(bool(why))

    def _failed(self, message: str) -> None:
        self.intro.setText(f"The advisor failed: {message}")

    def _selected(self):
        rows = self.table.selectionModel().selectedRows() if self.table.selectionModel() else []
        return self.alternatives[rows[0].row()] if rows else None

    def _selection_changed(self) -> None:
        alt = self._selected()
        self.apply_button.setEnabled(alt is not None)
        if alt is not None:
            self.unpicked.hide()  # the user picked one
        self.keys.setText("Sets: " + "  ".join(alt.overrides) if alt is not None else "")

    def apply(self, alternative=None) -> bool:
        """Set ``alternative`` (default: the selected one) in the plan, as one undo step, and close."""
        alt = alternative or self._selected()
        if alt is None:
            return False
        changed = self.doc.set_plan(apply_overrides(self.doc.plan, alt.overrides), text=f"Make it fit: {alt.text}")
        self.accept()
        return changed

    def done(self, result: int) -> None:
        self.worker.cancel()
        super().done(result)
