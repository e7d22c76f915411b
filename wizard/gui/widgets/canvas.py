"""What the two canvases (dataflow editor, placement board) share: the fitting view, keyboard actions, and
the list of findings beside the canvas."""

from __future__ import annotations

import re

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QAction, QColor, QKeySequence, QPainter
from PySide6.QtWidgets import (
    QGraphicsView,
    QListView,
    QListWidget,
    QListWidgetItem,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QWidget,
)

from wizard.core.findings import Finding, Severity
from wizard.gui.theme import canvas_colours
from wizard.gui.widgets.findings_view import SEVERITY_TEXT
from wizard.gui.wording import window_finding


class FitView(QGraphicsView):
    """A canvas that fits its scene (never enlarging it) until the user zooms (Ctrl+wheel or ``zoom``)."""

    def __init__(self, scene, parent: QWidget | None = None) -> None:
        super().__init__(scene, parent)
        self.setRenderHints(QPainter.Antialiasing | QPainter.TextAntialiasing)
        self.setMouseTracking(True)
        self.setFocusPolicy(Qt.StrongFocus)
        self.auto_fit = True

    def fit(self) -> None:
        rect = self.scene().sceneRect()
        if rect.isEmpty():
            return
        self.resetTransform()
        self.fitInView(rect, Qt.KeepAspectRatio)
        if self.transform().m11() > 1.0:  # never blow small scenes up
            self.resetTransform()
        self.centerOn(rect.center())

    def zoom(self, factor: float) -> None:
        self.auto_fit = False
        self.scale(factor, factor)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        if self.auto_fit:
            self.fit()

    def wheelEvent(self, event) -> None:  # noqa: N802
        if event.modifiers() & Qt.ControlModifier:
            self.zoom(1.15 if event.angleDelta().y() > 0 else 1 / 1.15)
            event.accept()
            return
        super().wheelEvent(event)


def add_action(owner: QWidget, text: str, tip: str, slot, shortcut: str | QKeySequence | None = None) -> QAction:
    """An action of ``owner`` (toolbar and keyboard), its shortcut live while the canvas has the focus."""
    act = QAction(text, owner)
    act.setToolTip(tip)
    act.setStatusTip(tip)
    act.triggered.connect(slot)
    if shortcut is not None:
        act.setShortcut(QKeySequence(shortcut))
        act.setShortcutContext(Qt.WidgetWithChildrenShortcut)
    owner.addAction(act)
    return act


class _StackAction(QAction):
    """Undo or Redo named by its word alone, what it undoes in the tooltip. Connected through its own methods, so
    Qt drops the connections when the action goes (a lambda would outlive it)."""

    def __init__(self, word: str, parent) -> None:
        super().__init__(word, parent)
        self.word = word

    def said(self, text: str) -> None:
        self.setToolTip(f"{self.word} {text}" if text else self.word)


def undo_redo(stack, parent) -> tuple[QAction, QAction]:
    """Undo and Redo for a canvas's toolbar: QUndoStack's own actions carry the command's words ("Undo Make it
    fit: FSDP2 with the CPU offload ..."), which pushed the toolbar's last buttons behind its overflow arrow."""
    undo, redo = _StackAction("Undo", parent), _StackAction("Redo", parent)
    for action, act, can, text, now, words in (
            (undo, stack.undo, stack.canUndoChanged, stack.undoTextChanged, stack.canUndo(), stack.undoText()),
            (redo, stack.redo, stack.canRedoChanged, stack.redoTextChanged, stack.canRedo(), stack.redoText())):
        action.triggered.connect(act)
        can.connect(action.setEnabled)
        text.connect(action.said)
        action.setEnabled(now)
        action.said(words)
    return undo, redo


def breakable(text: str) -> str:
    """``text`` with a zero-width space after each dot, underscore, slash or '=' inside a word, where Qt may wrap a
    line: a verl key (actor_rollout_ref.actor.use_kl_loss=False) is one word to it, and a side list as narrow as
    the canvas leaves cut it at the edge and scrolled sideways."""
    return re.sub(r"([._/=])(?=[A-Za-z$~])", "\\1\u200b", text)


def finding_item(f: Finding, data) -> QListWidgetItem:
    """One finding in a canvas's side list: its words coloured by severity (for the theme in use), the fix as
    tooltip."""
    shown = window_finding(f)
    item = QListWidgetItem(breakable(f"{SEVERITY_TEXT[f.severity]}: {shown.message}"))
    item.setToolTip(f"Fix: {shown.fix}" if shown.fix else f.rule)
    if f.severity is not Severity.INFO:  # notes keep the palette's text colour
        item.setForeground(QColor(canvas_colours().severity[f.severity.value]))
    item.setData(Qt.UserRole, data)
    return item


class _FullWidthRows(QStyledItemDelegate):
    """Each row as wide as the list and as tall as its words wrapped at that width.

    QListView sizes a wrapped row at the list's width but lays it out as wide as its longest line; painted at that
    narrower width the words wrapped once more and the row's last line was cut ("...desired GPU memory ...")."""

    def __init__(self, view: QListWidget) -> None:
        super().__init__(view)
        self.view = view

    def sizeHint(self, option, index) -> QSize:  # noqa: N802 - Qt's name
        width = self.view.viewport().width() - 2 * self.view.spacing()
        if width <= 0:
            return super().sizeHint(option, index)
        opt = QStyleOptionViewItem(option)
        opt.rect.setWidth(width)
        return QSize(width, super().sizeHint(opt, index).height())


def findings_list(name: str, accessible: str) -> QListWidget:
    """The list of findings beside a canvas: rows wrap (long keys break, see ``breakable``) and each row is as tall
    as its lines at the list's width, again whenever that width changes."""
    view = QListWidget()
    view.setObjectName(name)
    view.setAccessibleName(accessible)
    view.setWordWrap(True)
    view.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
    view.setSpacing(3)
    view.setResizeMode(QListView.Adjust)  # a new width lays the rows out again
    view.setItemDelegate(_FullWidthRows(view))
    return view


def canvas_split(view: QWidget, top: QWidget, heading: str, findings: QWidget, sizes: tuple[int, int]):
    """The canvas on the left; on the right ``top`` (inspector, headline) over the labelled findings list."""
    from PySide6.QtWidgets import QLabel, QSplitter, QVBoxLayout

    side = QWidget()
    side_layout = QVBoxLayout(side)
    side_layout.setContentsMargins(0, 0, 0, 0)
    side_layout.addWidget(top)
    label = QLabel(heading)
    label.setBuddy(findings)
    side_layout.addWidget(label)
    side_layout.addWidget(findings, 1)
    split = QSplitter(Qt.Horizontal)
    split.addWidget(view)
    split.addWidget(side)
    split.setStretchFactor(0, 1)
    split.setSizes(list(sizes))
    return split
