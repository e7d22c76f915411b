"""The Run page's log: search, level filter, follow the end, bounded memory, batched appends.

Lines arrive as ``(level, text)`` entries made by ``log_entry`` (on the run's worker thread): ANSI colour
removed, Ray's ``(Actor pid=N)`` prefix kept as plain text (it says which process spoke), tabs expanded.
The view never updates per line: ``append`` only queues, and a timer moves the queue into the model once
per tick, as one row insertion.

The view is a one-column table over a Python list, not a text document: a QTextDocument costs ~700 bytes
and a layout per line and slows down as it trims its top, while a fixed-height table asks only for the rows
on screen (bench/bench_log_view.py has the figures).

Memory is bounded: the view keeps the last ``cap`` lines (200,000 by default). Past that, the oldest lines
leave the view and the status line says how many left; the run's complete log stays in ``run.log``.
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QFontDatabase, QFontMetrics, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from wizard.core.run import split_line, strip_ansi

SEARCH_WORDS = "Search the log"  # the keys are in its tooltip: a placeholder the field never cuts
DEFAULT_CAP = 200_000
TICK_MS = 100
Entry = tuple[str | None, str]  # (DEBUG..CRITICAL or None, text without colour)

# label -> the levels shown (None: every line, levelled or not)
FILTERS: dict[str, frozenset[str] | None] = {
    "All lines": None,
    "Warnings and errors": frozenset({"WARNING", "ERROR", "CRITICAL"}),
    "Errors only": frozenset({"ERROR", "CRITICAL"}),
}
LEVEL_COLOURS = {"ERROR": "#c62828", "CRITICAL": "#c62828", "WARNING": "#a15c00", "DEBUG": "#7a7a7a"}
MATCH_BACKGROUND = "#fff176"


def log_entry(raw: str) -> Entry:
    """One raw console line as the view keeps it: its level (verl/Ray logger lines, exceptions) and its text."""
    text = strip_ansi(raw)
    if "\t" in text:
        text = text.expandtabs(8)
    return split_line(text).level, text


class _LogModel(QAbstractTableModel):
    """The kept lines (``rows``) and, under a level filter, the ones shown (``shown``); one column."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.rows: list[Entry] = []
        self.shown: list[Entry] = self.rows
        self.levels: frozenset[str] | None = None
        self.needle = ""  # casefolded search text: matching rows get a background
        self._colours = {k: QColor(v) for k, v in LEVEL_COLOURS.items()}
        self._match = QColor(MATCH_BACKGROUND)
        self._match_ink = QColor("#1a1a1a")

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802 - Qt's name
        return 0 if parent.isValid() else len(self.shown)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else 1

    def data(self, index, role=Qt.DisplayRole):
        if role == Qt.DisplayRole:
            return self.shown[index.row()][1]
        if role == Qt.ForegroundRole:
            level, text = self.shown[index.row()]
            if self.needle and self.needle in text.casefold():
                return self._match_ink  # dark on the yellow match background, in light and dark palettes
            return self._colours.get(level or "")
        if role == Qt.BackgroundRole and self.needle and self.needle in self.shown[index.row()][1].casefold():
            return self._match
        return None

    def shows(self, level: str | None) -> bool:
        return self.levels is None or level in self.levels

    def add(self, batch: list[Entry], cap: int) -> list[Entry]:
        """Append ``batch``, drop the oldest rows past ``cap``; returns the dropped entries."""
        over = len(self.rows) + len(batch) - cap
        dropped: list[Entry] = []
        if over > 0:
            dropped = self.rows[:over]
            gone = over if self.shown is self.rows else sum(1 for lv, _ in dropped if self.shows(lv))
            if gone:
                self.beginRemoveRows(QModelIndex(), 0, gone - 1)
            del self.rows[:over]
            if self.shown is not self.rows:
                del self.shown[:gone]
            if gone:
                self.endRemoveRows()
        new = batch if self.shown is self.rows else [e for e in batch if self.shows(e[0])]
        if new:
            start = len(self.shown)
            self.beginInsertRows(QModelIndex(), start, start + len(new) - 1)
            if self.shown is self.rows:
                self.rows.extend(new)
            else:
                self.rows.extend(batch)
                self.shown.extend(new)
            self.endInsertRows()
        elif batch:
            self.rows.extend(batch)
        return dropped

    def set_levels(self, levels: frozenset[str] | None) -> None:
        self.beginResetModel()
        self.levels = levels
        self.shown = self.rows if levels is None else [e for e in self.rows if e[0] in levels]
        self.endResetModel()

    def clear(self) -> None:
        self.beginResetModel()
        self.rows.clear()
        self.shown = self.rows if self.levels is None else []
        self.endResetModel()


class LogView(QWidget):
    """A read-only log with search (Enter / Shift+Enter), a level filter and a follow-the-end toggle."""

    follow_changed = Signal(bool)

    def __init__(self, parent: QWidget | None = None, cap: int = DEFAULT_CAP, tick_ms: int = TICK_MS) -> None:
        super().__init__(parent)
        self.cap = cap
        self._pending: list[Entry] = []
        self._dropped = 0
        self._matches = 0
        self._longest = 0
        self._programmatic = False
        self.model = _LogModel(self)
        self.table = self._make_table()
        self.search = QLineEdit()
        self.search.setObjectName("logSearch")
        self.search.setPlaceholderText(SEARCH_WORDS)
        self.search.setToolTip("Search the log: Enter goes to the next match, Shift+Enter to the previous")
        self.search.setMinimumWidth(QFontMetrics(self.search.font()).horizontalAdvance(SEARCH_WORDS) + 48)
        self.search.setClearButtonEnabled(True)
        self.prev_button = QPushButton("Previous")
        self.next_button = QPushButton("Next")
        self.match_label = QLabel()
        self.match_label.setObjectName("logMatches")
        self.level = QComboBox()
        self.level.setObjectName("logLevel")
        self.level.addItems(list(FILTERS))
        self.level.setToolTip("Every line, or only the lines verl, Ray or Python marked as warnings or errors")
        self.follow = QCheckBox("Follo&w the end")
        self.follow.setObjectName("logFollow")
        self.follow.setChecked(True)
        self.follow.setToolTip("Keep the newest line in view; scrolling up pauses it, scrolling to the end resumes")
        self.status = QLabel("No output yet.")
        self.status.setObjectName("logStatus")
        self._layout()
        self._connect()
        self._timer = QTimer(self)
        self._timer.setInterval(tick_ms)
        self._timer.timeout.connect(self.flush)

    def _make_table(self) -> QTableView:
        table = QTableView()
        table.setObjectName("logText")
        table.setAccessibleName("Run log")
        table.setModel(self.model)
        table.setFont(QFontDatabase.systemFont(QFontDatabase.FixedFont))
        table.setShowGrid(False)
        table.setWordWrap(False)
        table.setTextElideMode(Qt.ElideNone)
        table.setSelectionBehavior(QAbstractItemView.SelectRows)
        table.setSelectionMode(QAbstractItemView.ExtendedSelection)
        table.setEditTriggers(QAbstractItemView.NoEditTriggers)
        table.setHorizontalScrollMode(QAbstractItemView.ScrollPerPixel)
        table.horizontalHeader().hide()
        table.horizontalHeader().setSectionResizeMode(QHeaderView.Fixed)
        rows = table.verticalHeader()
        rows.hide()
        rows.setSectionResizeMode(QHeaderView.Fixed)  # fixed heights: the view never measures a row
        rows.setDefaultSectionSize(QFontMetrics(table.font()).height() + 2)
        self._char_width = QFontMetrics(table.font()).horizontalAdvance("M")
        return table

    def _layout(self) -> None:
        bar = QHBoxLayout()
        bar.addWidget(self.search, 1)
        bar.addWidget(self.prev_button)
        bar.addWidget(self.next_button)
        bar.addWidget(self.match_label)
        bar.addSpacing(12)
        bar.addWidget(QLabel("Show:", buddy=self.level))
        bar.addWidget(self.level)
        bar.addWidget(self.follow)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.status)

    def _connect(self) -> None:
        self.search.returnPressed.connect(self.find_next)
        QShortcut(QKeySequence("Shift+Return"), self.search, activated=self.find_previous)
        QShortcut(QKeySequence.Find, self, activated=self.search.setFocus)
        QShortcut(QKeySequence.FindNext, self, activated=self.find_next)
        QShortcut(QKeySequence.FindPrevious, self, activated=self.find_previous)
        QShortcut(QKeySequence.Copy, self.table, activated=self.copy_selection)
        self.next_button.clicked.connect(self.find_next)
        self.prev_button.clicked.connect(self.find_previous)
        self.search.textChanged.connect(self._search_changed)
        self.level.currentTextChanged.connect(self._filter_changed)
        self.follow.toggled.connect(self._follow_toggled)
        self.table.verticalScrollBar().valueChanged.connect(self._scrolled)

    # -- feeding ----------------------------------------------------------------------------------------------

    def append(self, entries: Iterable[Entry]) -> None:
        """Queue lines; they show at the next tick (never one widget update per line)."""
        self._pending.extend(entries)
        if self._pending and not self._timer.isActive():
            self._timer.start()

    def append_raw(self, lines: Iterable[str]) -> None:
        self.append(log_entry(line) for line in lines)

    def clear(self) -> None:
        self._pending.clear()
        self.model.clear()
        self._dropped = self._matches = self._longest = 0
        self._update_status()

    def flush(self) -> None:
        """Move the queued lines into the view: one insertion, one removal past the cap, one scroll."""
        if not self._pending:
            self._timer.stop()
            return
        batch, self._pending = self._pending, []
        if len(batch) > self.cap:  # a flood larger than the cap: only its end can be kept
            self._dropped += len(batch) - self.cap
            batch = batch[-self.cap:]
        self._programmatic = True
        try:
            dropped = self.model.add(batch, self.cap)
            self._widen(batch)
            if self.follow.isChecked():
                self.table.scrollToBottom()
        finally:
            self._programmatic = False
        self._dropped += len(dropped)
        needle = self.model.needle
        if needle:
            self._matches += self._count(batch, needle) - self._count(dropped, needle)
        self._update_status()

    def _widen(self, batch: list[Entry]) -> None:
        """The column grows to the longest line seen, so long lines scroll sideways instead of being cut."""
        longest = max((len(t) for _, t in batch), default=0)
        if longest > self._longest:
            self._longest = longest
            self.table.horizontalHeader().resizeSection(0, (longest + 2) * self._char_width)
        if self.table.horizontalHeader().sectionSize(0) < self.table.viewport().width():
            self.table.horizontalHeader().resizeSection(0, self.table.viewport().width())

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self._widen([])

    # -- reading ----------------------------------------------------------------------------------------------

    @property
    def line_count(self) -> int:
        """Lines kept (every level), the queued ones included."""
        return min(self.cap, len(self.model.rows) + len(self._pending))

    @property
    def dropped(self) -> int:
        return self._dropped

    def shown_lines(self) -> list[str]:
        """The lines the view shows now (after the filter)."""
        self.flush()
        return [t for _, t in self.model.shown]

    def plain_text(self) -> str:
        return "\n".join(self.shown_lines())

    def entries(self) -> list[Entry]:
        self.flush()
        return list(self.model.rows)

    def copy_selection(self) -> None:
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        if rows:
            QGuiApplication.clipboard().setText("\n".join(self.model.shown[r][1] for r in rows))

    # -- filter -----------------------------------------------------------------------------------------------

    def set_filter(self, label: str) -> None:
        self.level.setCurrentText(label)

    def _filter_changed(self, label: str) -> None:
        self.flush()
        self._programmatic = True
        try:
            self.model.set_levels(FILTERS.get(label))
            if self.follow.isChecked():
                self.table.scrollToBottom()
        finally:
            self._programmatic = False
        self._recount()

    # -- follow -----------------------------------------------------------------------------------------------

    def _follow_toggled(self, on: bool) -> None:
        if on:
            self.flush()
            self._programmatic = True
            try:
                self.table.scrollToBottom()
            finally:
                self._programmatic = False
        self.follow_changed.emit(on)

    def _scrolled(self, value: int) -> None:
        """The user scrolled: away from the end pauses following, back to the end resumes it."""
        if self._programmatic:
            return
        at_end = value >= self.table.verticalScrollBar().maximum()
        if at_end != self.follow.isChecked():
            self.follow.setChecked(at_end)

    # -- search -----------------------------------------------------------------------------------------------

    @staticmethod
    def _count(entries: list[Entry], needle: str) -> int:
        return sum(1 for _, t in entries if needle in t.casefold())

    def _search_changed(self, text: str) -> None:
        self.model.needle = text.casefold()
        self._recount()
        self.table.viewport().update()

    def _recount(self) -> None:
        needle = self.model.needle
        self._matches = self._count(self.model.shown, needle) if needle else 0
        self._update_status()

    def find_next(self) -> bool:
        return self._find(backward=False)

    def find_previous(self) -> bool:
        return self._find(backward=True)

    def _find(self, backward: bool) -> bool:
        """Select the next (or previous) shown line holding the search text, wrapping around the ends."""
        needle = self.model.needle
        if not needle:
            return False
        self.flush()
        self.follow.setChecked(False)  # a found line must stay in view while lines keep arriving
        rows = self.model.shown
        n = len(rows)
        current = self.table.currentIndex().row() if self.table.currentIndex().isValid() else (n if backward else -1)
        order = range(current - 1, current - 1 - n, -1) if backward else range(current + 1, current + 1 + n)
        for i in order:
            row = i % n if n else 0
            if n and needle in rows[row][1].casefold():
                index = self.model.index(row, 0)
                self._programmatic = True  # the jump is not the user scrolling back to the end
                try:
                    self.table.setCurrentIndex(index)
                    self.table.selectRow(row)
                    self.table.scrollTo(index, QAbstractItemView.PositionAtCenter)
                    self._reveal(rows[row][1].casefold().find(needle), len(needle))
                finally:
                    self._programmatic = False
                self.match_label.setText(self._match_text())
                return True
        self.match_label.setText("not found")
        return False

    def _reveal(self, at: int, length: int) -> None:
        """Scroll sideways so the match itself shows (from the line's start when it fits on screen)."""
        fits = self.table.viewport().width() // max(1, self._char_width)
        start = 0 if at + length < fits else max(0, at - 20)
        self.table.horizontalScrollBar().setValue(start * self._char_width)

    def current_line(self) -> str | None:
        index = self.table.currentIndex()
        return self.model.shown[index.row()][1] if index.isValid() else None

    def _match_text(self) -> str:
        if not self.model.needle:
            return ""
        n = self._matches
        return "1 line matches" if n == 1 else f"{n:,} lines match"

    def _update_status(self) -> None:
        kept = len(self.model.rows)
        if not kept:
            self.status.setText("No output yet.")
        elif self._dropped:
            self.status.setText(f"Showing the last {kept:,} lines; {self._dropped:,} earlier lines left this view "
                                "to keep memory bounded (run.log in the run folder has every line).")
        else:
            shown = len(self.model.shown)
            self.status.setText(f"{kept:,} lines" + (f", {shown:,} shown by the filter" if shown != kept else ""))
        self.match_label.setText(self._match_text())


__all__ = ["LogView", "log_entry", "FILTERS", "DEFAULT_CAP", "Entry"]
