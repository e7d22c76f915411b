"""The Samples tab's table: one row per response, over plain Python lists, filtered and sorted by the core's rules.

The filter (step, flag, the search words) and the sort keys are ``wizard.core.run.samples.dump``'s, the same the
``samples`` command uses. Each row's search text is lower-cased once, when it arrives; a filter change is one pass
over the rows and one model reset, so 10,000 responses stay interactive (bench/bench_samples.py).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtGui import QColor

from wizard.core.run import FLAG_HELP, InspectedStep, Sample, haystack, matches, sort_value, terms
from wizard.core.visible import visible

COLUMNS = ("Step", "#", "Prompt", "Response", "Score", "Ground truth", "Flags")
SHOWN_CHARS = 160  # characters of a prompt or response in its cell (the detail pane shows all of it)
TOOLTIP_CHARS = 1500
FLAGGED = "any flag"
FLAG_COLOUR = QColor("#a15c00")


@dataclass(frozen=True, slots=True)
class Row:
    sample: Sample
    flags: tuple[str, ...]
    hay: str  # what the search looks in, lower-cased


def rows_of(steps: Sequence[InspectedStep]) -> list[Row]:
    return [Row(s, f, haystack(s)) for step in steps for s, f in zip(step.samples, step.flags)]


def one_line(text: str, limit: int = SHOWN_CHARS) -> str:
    """A cell's text: line breaks as ⏎, every other control character written out (\\x1b, \\x9b), not drawn as a box
    or nothing."""
    flat = visible(text[: limit + 1], newline=" ⏎ ")
    return flat if len(text) <= limit else flat[:limit] + "…"


def tooltip(text: str) -> str:
    """A model's text as a tooltip: escaped rich text, so a response that reads like HTML ("<b>", "&lt;") shows as
    written, and a long one wraps instead of running off the screen."""
    return f"<p>{html.escape(one_line(text, TOOLTIP_CHARS))}</p>"


class SamplesModel(QAbstractTableModel):
    """Rows of one kind (training or validation generations); ``shown`` are the rows the filter keeps, in order."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.rows: list[Row] = []
        self.shown: list[int] = []
        self.step: int | None = None
        self.flag: str | None = None  # a flag name, FLAGGED, or None for every row
        self.query = ""
        self._terms: list[str] = []
        self._sort: tuple[int, Qt.SortOrder] | None = None

    # -- Qt's model -------------------------------------------------------------------------------------------
    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802 - Qt's name
        return 0 if parent.isValid() else len(self.shown)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.DisplayRole):  # noqa: N802
        if role == Qt.DisplayRole and orientation == Qt.Horizontal:
            return COLUMNS[section]
        return None

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        row = self.rows[self.shown[index.row()]]
        col = index.column()
        if role == Qt.DisplayRole:
            return self._text(row, col)
        if role == Qt.ToolTipRole:
            if col == 6 and row.flags:
                return "\n".join(f"{f}: {FLAG_HELP[f]}" for f in row.flags)
            if col in (2, 3, 5):
                return tooltip(self._full(row, col))
        if role == Qt.ForegroundRole and col == 6 and row.flags:
            return FLAG_COLOUR
        if role == Qt.TextAlignmentRole and col in (0, 1, 4):
            return int(Qt.AlignRight | Qt.AlignVCenter)
        return None

    @staticmethod
    def _full(row: Row, col: int) -> str:
        s = row.sample
        return {2: s.prompt, 3: s.response, 5: s.ground_truth or ""}[col]

    def _text(self, row: Row, col: int) -> str:
        s = row.sample
        if col == 0:
            return str(s.step)
        if col == 1:
            return str(s.index)
        if col in (2, 3, 5):
            text = self._full(row, col)
            return one_line(text) if text or col != 3 else "(empty)"
        if col == 4:
            return "" if s.score is None else f"{s.score:g}"
        return ", ".join(row.flags)

    def sort(self, column: int, order=Qt.AscendingOrder) -> None:
        self._sort = (column, order)
        self.beginResetModel()
        self._apply_sort()
        self.endResetModel()

    def _apply_sort(self) -> None:
        if self._sort is None:
            return
        column, order = self._sort
        key = {0: "step", 1: "step", 3: "length", 4: "score", 6: "flags"}.get(column)
        rows = self.rows
        if key is not None:
            self.shown.sort(key=lambda i: sort_value(rows[i].sample, key, rows[i].flags))
        elif column == 2:
            self.shown.sort(key=lambda i: rows[i].sample.prompt)
        else:
            self.shown.sort(key=lambda i: rows[i].sample.ground_truth or "")
        if order == Qt.DescendingOrder:
            self.shown.reverse()

    # -- content and filter -----------------------------------------------------------------------------------
    def keeps(self, row: Row) -> bool:
        if self.step is not None and row.sample.step != self.step:
            return False
        if self.flag == FLAGGED and not row.flags:
            return False
        if self.flag not in (None, FLAGGED) and self.flag not in row.flags:
            return False
        return not self._terms or matches(row.hay, self._terms)

    def set_rows(self, rows: list[Row]) -> None:
        self.rows = rows
        self.refilter()

    def add_rows(self, rows: list[Row]) -> None:
        """Rows of a new step (a live run): appended, the filter and order kept."""
        self.rows = self.rows + rows
        self.refilter()

    def set_filter(self, step: int | None, flag: str | None, query: str) -> None:
        self.step, self.flag, self.query = step, flag, query.strip()
        self._terms = terms(self.query)
        self.refilter()

    def refilter(self) -> None:
        self.beginResetModel()
        self.shown = [i for i, row in enumerate(self.rows) if self.keeps(row)]
        self._apply_sort()
        self.endResetModel()

    def row_at(self, view_row: int) -> Row | None:
        return self.rows[self.shown[view_row]] if 0 <= view_row < len(self.shown) else None


__all__ = ["SamplesModel", "Row", "rows_of", "one_line", "tooltip", "COLUMNS", "FLAGGED"]
