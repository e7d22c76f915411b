"""The placement board: which GPUs each role runs on, how full each GPU gets per phase, and drag-to-move.

``PlacementBoard(doc)`` is self-contained: it reads ``doc.plan`` (and the machines chosen on the Hardware step),
redraws on ``doc.changed`` and turns every accepted drop into one ``doc.set_plan`` on the document's undo stack.
The board draws the document's assessment (the plan judged once per edit on the document's machine). While a role
is dragged over a pool that can take it, the candidate plan is assessed on a worker thread (throttled, cached per
target: the GUI thread never waits for it) and the tiles and findings show it when it comes. Everything the mouse does has a keyboard path ("Move role to
pool…", Ctrl+M) and the canvas has an accessible description of the pools. The predicted step beside the verdict
and the response length it assumes are :mod:`wizard.gui.placement.step_time`'s.
"""

from __future__ import annotations

import dataclasses

from PySide6.QtCore import QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QColor, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QGraphicsView,
    QHBoxLayout,
    QLabel,
    QListWidgetItem,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from wizard.core.findings import Finding
from wizard.core.memory import BoardState, headline
from wizard.core.placement import BoardMove, propose, role_title
from wizard.gui.widgets.canvas import FitView, add_action, canvas_split, finding_item, findings_list, undo_redo
from wizard.gui.widgets.status_line import StatusLine
from wizard.gui.document import PlanDocument
from wizard.gui.placement.commands import push_move
from wizard.gui.placement.dialogs import MoveDialog
from wizard.gui.workers import Worker
from wizard.usecases.board import board_of, candidate_board
from wizard.usecases.plan_notes import no_estimate_reason
from wizard.core.memory import PHASES
from wizard.gui.placement.items import REPLICA_WORDS
from wizard.gui.placement.scene import PlacementScene, columns_for
from wizard.gui.placement.step_time import ResponseLength, step_words
from wizard.gui.theme import ThemeFollower, canvas_colours
from wizard.gui.wording import window_text

HOW_TO = ("Drag a role chip onto another pool (or a dashed \"new pool\" slot); green targets can take it, grey ones "
          "say why not. Ctrl+wheel zooms. Ctrl+M moves a role by keyboard.")
PREVIEW_MS = 60  # estimate a hovered target this long after the mouse settles on it


class PlacementView(FitView):
    """The canvas. Until the user zooms (Ctrl+wheel or the toolbar) it shows the board at its own, readable scale
    and has the scene wrap each node's GPUs to the view's width; it never shrinks the board to fit."""

    def __init__(self, scene: PlacementScene, parent: QWidget | None = None) -> None:
        super().__init__(scene, parent)
        self.setViewportUpdateMode(QGraphicsView.SmartViewportUpdate)
        self.setCacheMode(QGraphicsView.CacheBackground)
        self.setAlignment(Qt.AlignHCenter | Qt.AlignTop)
        self.setAccessibleName("Placement board")
        self._shown_top = False

    def fit(self) -> None:
        scene: PlacementScene = self.scene()
        columns = columns_for(self.viewport().width())
        relaid = columns != scene.columns and scene.relayout(columns)
        if relaid:
            self.resetCachedContent()
        self.resetTransform()
        if relaid or not self._shown_top:  # a new layout starts at its top; an edit keeps where the user scrolled
            self._shown_top = True
            self.ensureVisible(scene.sceneRect().left(), scene.sceneRect().top(), 1, 1, 0, 0)


def legend_html() -> str:
    c = canvas_colours()
    dots = " ".join(f"<span style='color:{c.verdict[v]}'>■</span>&nbsp;{w}"
                    for v, w in (("ok", "fits"), ("tight", "tight or fits only if samples are short"),
                                 ("oom", "out of memory")))
    phases = " · ".join(p.tag for p in PHASES)
    return (f"Bars: memory per phase ({phases}: those the plan has), the peak outlined; dashes: the GPU's memory. "
            f"{dots} · <span style='color:{c.verdict['ok']}'>━</span> NVLink · <span style='color:{c.bad}'>┅</span> "
            "PCIe only · dashed box: an engine replica (TP2: one model copy split over 2 GPUs). Hover a GPU for "
            "details.")


class PlacementBoard(QWidget):
    """Where each role of a verl 0.9.1 run sits on the GPUs, with memory per phase; drag roles between pools."""

    findings_changed = Signal(list)

    def __init__(self, doc: PlanDocument, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Placement board")
        self.doc = doc
        self.machine = doc.machine
        self.state: BoardState | None = None
        self.preview_state: BoardState | None = None
        self.previewing: str | None = None  # the target whose candidate the tiles show
        self._step = ""  # the predicted step beside the verdict, made once per assessment
        self._cache: dict[str, BoardState] = {}
        self._pending: BoardMove | None = None
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(PREVIEW_MS)
        self._timer.timeout.connect(self._show_preview)
        self._worker = Worker(self)  # assesses a hovered candidate off the GUI thread
        self._worker.finished.connect(self._candidate_ready)
        self._worker.failed.connect(self._candidate_failed)
        self._evaluating: BoardMove | None = None
        self.scene = PlacementScene(self)
        self.view = PlacementView(self.scene)
        self.headline = QLabel()
        self.headline.setObjectName("placementHeadline")
        self.headline.setAccessibleName("Memory verdict")
        self.headline.setWordWrap(True)
        self.status = StatusLine("placementStatus", "Board status")
        self.findings = findings_list("placementFindings", "Placement and memory findings")
        self.response_length = ResponseLength(doc)
        self.responses = self.response_length.spin  # the box the tests and hosts reach
        self._run_reader = self.response_length.reader
        self.response_length.said.connect(self._say)
        self._build()
        self.scene.propose_all = self.propose_all
        self.scene.on_hint = self._say
        self.scene.on_hover = self._hover
        self.scene.move_requested.connect(self.apply_move)
        self.scene.refused.connect(lambda reason: self._say(f"Refused: {reason}"))
        doc.changed.connect(self.refresh)
        self.refresh()
        ThemeFollower(self, self.restyle)

    # -- construction ---------------------------------------------------------------------------------------
    def _action(self, text: str, tip: str, slot, shortcut=None) -> QAction:
        return add_action(self, text, tip, slot, shortcut)

    def _build(self) -> None:
        self.move_action = self._action("&Move role to pool…", "Move a role to another pool, by keyboard",
                                        self.move_dialog, "Ctrl+M")
        self.fit_action = self._action("&Fit", "Back to the readable size, the GPUs wrapped to the window's width",
                                       self.fit, "Ctrl+0")
        self.zoom_in_action = self._action("Zoom &in", "Zoom in", lambda: self.view.zoom(1.25), QKeySequence.ZoomIn)
        self.zoom_out_action = self._action("Zoom &out", "Zoom out", lambda: self.view.zoom(0.8),
                                            QKeySequence.ZoomOut)
        self.advice_action = self._action("Make it f&it…", "The configs that fit these GPUs (or run faster), each "
                                          "estimated again, with the predicted step time", self.open_advice,
                                          "Ctrl+Shift+F")
        bar = QToolBar("Placement")
        bar.setAccessibleName("Placement tools")
        for act in (self.move_action, self.fit_action, self.zoom_in_action, self.zoom_out_action):
            bar.addAction(act)
        bar.addSeparator()
        bar.addAction(self.advice_action)
        bar.addSeparator()
        self.undo_action, self.redo_action = undo_redo(self.doc.undo_stack, self)
        bar.addAction(self.undo_action)
        bar.addAction(self.redo_action)
        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.headline)
        top_layout.addWidget(self.response_length)
        split = canvas_split(self.view, top, "&Findings for this placement:", self.findings, (1000, 270))
        self.legend = legend = QLabel(legend_html())
        legend.setAccessibleName("Board legend")
        legend.setToolTip("The phases of a training step, in the bars' order: "
                          + "; ".join(f"{p.tag} = {p.title}" for p in PHASES) + ". " + REPLICA_WORDS)
        legend.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(bar)
        layout.addWidget(split, 1)
        row = QHBoxLayout()
        row.addWidget(self.status, 1)
        layout.addLayout(row)
        layout.addWidget(legend)

    # -- the model ------------------------------------------------------------------------------------------
    def _candidate_job(self, move: BoardMove) -> tuple:
        """The function and data that assess ``move``'s plan (the same use case on the GUI thread or a worker)."""
        return candidate_board, move.plan, self.machine, self.doc.gpus, self.doc._model_cache

    def refresh(self) -> None:
        """Lay the board out for the document's assessment (on every document change, never during a drag)."""
        self.response_length.sync()
        if self.doc.assessment is None:
            return  # the check itself failed: the findings dock says so; the board keeps its last picture
        self.machine = self.doc.machine
        memory = self.doc.assessment.memory
        self.state = board_of(self.doc.assessment)
        if self.state.report is None:  # one reason, the most basic first (a GPU count before an unknown memory)
            self.state = dataclasses.replace(self.state, why=no_estimate_reason(memory))
        self._step, tip = step_words(self.doc)  # once per assessment, not per preview or restyle
        self.headline.setToolTip(tip)
        self._advice_for(memory)
        self._cache.clear()
        self._worker.cancel()
        self._evaluating = None
        self.preview_state, self.previewing = None, None
        self.scene.set_state(self.state, self.machine)
        self.view.resetCachedContent()
        self.view.setAccessibleDescription(self.describe())
        self._show_findings(self.state)
        if self.view.auto_fit:
            self.view.fit()
        self._say("")

    def _advice_for(self, memory) -> None:
        """Make it fit (or Faster) says which it is, and is off, saying why in its tooltip, while there is no
        estimate to search from."""
        fits = memory.verdict.fits is True
        self.advice_action.setText("F&aster…" if fits else "Make it f&it…")  # the dialog's title follows suit
        why = no_estimate_reason(memory)
        tip = (f"Nothing to advise on yet: no memory estimate ({window_text(why)})" if why else
               "The configs that run faster and still fit these GPUs, each estimated again, with the predicted step "
               "time" if fits else
               "The configs that fit these GPUs, each estimated again, with the predicted step time")
        self.advice_action.setEnabled(why is None)
        self.advice_action.setToolTip(tip)
        self.advice_action.setStatusTip(tip)

    def describe(self) -> str:
        """The board in words, for screen readers and the tests."""
        return self.state.describe()

    def _show_findings(self, state: BoardState, preview: str | None = None) -> None:
        self.findings.clear()
        if preview:
            head = QListWidgetItem(f"If you drop here ({preview}):")
            head.setForeground(QColor(canvas_colours().good))
            self.findings.addItem(head)
        for f in state.findings:
            self.findings.addItem(finding_item(f, f.rule))
        if not state.findings:
            self.findings.addItem("No findings")
        self.headline.setText(window_text(headline(state)) + self._step)
        self.findings_changed.emit(list(state.findings))

    def open_advice(self) -> None:
        """Make it fit (or Faster): the advisor's alternatives, searched on a worker; Apply is one undo step."""
        from wizard.gui.widgets.advice_dialog import AdviceDialog

        self.advice_dialog = AdviceDialog(self.doc, self)
        self.advice_dialog.open()

    def restyle(self) -> None:
        """Draw the board again in the theme's colours (the theme changed)."""
        self.legend.setText(legend_html())
        if self.scene.relayout():
            self.view.resetCachedContent()
        self._show_findings(self.preview_state or self.state)

    def current_findings(self) -> list[Finding]:
        return list((self.preview_state or self.state).findings)

    # -- moves ----------------------------------------------------------------------------------------------
    def propose(self, role: str, target: str) -> BoardMove:
        return propose(self.state, self.machine, role, target)

    def propose_all(self, role: str) -> dict[str, BoardMove]:
        self._cache.clear()
        return {t: self.propose(role, t) for t in self.state.targets()}

    def _candidate(self, move: BoardMove) -> BoardState:
        """The candidate's board state now (a drop): the one a preview assessed, else assessed here."""
        if move.target not in self._cache:
            fn, *args = self._candidate_job(move)
            self._cache[move.target] = fn(*args)
        return self._cache[move.target]

    def apply_move(self, move: BoardMove) -> bool:
        """An accepted drop (or the dialog's OK): one undoable edit, unless the cluster cannot hold it."""
        if not move.ok:
            self._say(f"Refused: {move.verdict.reason}")
            return False
        short = self._candidate(move).missing_gpus()
        if short:
            self._say(f"Refused: the machines cannot hold it ({short})")
            return False
        changed = push_move(self.doc, move)
        self._say(f"{move.text}: {' '.join(move.verdict.overrides)}" if changed else "")
        return changed

    def move_dialog(self) -> None:
        if self.state is None:
            return
        dialog = MoveDialog(self.state.roles(), self.state.targets(), self.propose, parent=self)
        if dialog.exec() == QDialog.Accepted and dialog.move is not None:
            self.apply_move(dialog.move)

    # -- preview while dragging -----------------------------------------------------------------------------
    def _hover(self, move: BoardMove | None) -> None:
        self._pending = move
        self._timer.start()

    def _show_preview(self) -> None:
        move = self._pending
        if move is None or not self.scene.dragging:
            self.preview_state, self.previewing = None, None
            self.scene.preview(None)
            if self.state is not None:
                self._show_findings(self.state)
            return
        if move.target in self._cache:
            self._preview(move, self._cache[move.target])
        elif self._evaluating is None or self._evaluating.target != move.target:
            self._evaluating = move
            self._worker.start(f"assess a drop on {move.target}", *self._candidate_job(move))

    def _candidate_ready(self, state: BoardState) -> None:
        move, self._evaluating = self._evaluating, None
        if move is None:
            return
        self._cache[move.target] = state
        pending = self._pending
        if pending is not None and self.scene.dragging:
            if pending.target == move.target:
                self._preview(move, state)
            else:
                self._show_preview()  # the mouse moved on while this one was assessed

    def _candidate_failed(self, message: str) -> None:
        move, self._evaluating = self._evaluating, None
        self._say(f"Could not assess a drop on {move.target if move else 'that pool'}: {message.splitlines()[0]}")

    def _preview(self, move: BoardMove, state: BoardState) -> None:
        self.preview_state, self.previewing = state, move.target
        self.scene.preview(state)
        self._show_findings(state, preview=f"{role_title(move.role)} on {move.pool}")

    # -- for hosts and tests --------------------------------------------------------------------------------
    def fit(self) -> None:
        self.view.auto_fit = True
        self.view.fit()

    def _say(self, text: str) -> None:
        text = text or HOW_TO
        if text != self.status.text():
            self.status.setText(text)

    def chip_view_pos(self, role: str) -> QPoint:
        chip = self.scene.chips[role]
        return self.view.mapFromScene(chip.sceneBoundingRect().center())

    def target_view_pos(self, target: str) -> QPoint:
        """A point inside ``target``'s first region that no chip or tile covers (its lower-left margin)."""
        rect = self.scene.regions_of(target)[0].sceneBoundingRect()
        return self.view.mapFromScene(rect.left() + 12, rect.bottom() - 8)

    def read_response_length(self, folder: str) -> None:
        """Take the mean response length of ``folder``'s last step (read on a worker; one undo step)."""
        self.response_length.read(folder)
