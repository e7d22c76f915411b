"""What an empty list, table or picture says instead of a blank rectangle: how it gets filled.

``EmptyHint(view, text, is_empty)`` paints ``text`` (muted, wrapped, centred) over the view's viewport while
``is_empty()`` holds; the view keeps its size, so nothing jumps when the first rows come.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, QRect, Qt
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import QAbstractScrollArea


class EmptyHint(QObject):
    def __init__(self, view: QAbstractScrollArea, text: str, is_empty: Callable[[], bool]) -> None:
        super().__init__(view)
        self.view, self.text, self.is_empty = view, text, is_empty
        view.viewport().installEventFilter(self)
        view.setAccessibleDescription(text)

    def shown(self) -> bool:
        """Whether the hint is what the view shows now."""
        return self.is_empty()

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Paint and self.is_empty():
            self.view.viewportEvent(event)  # the view's own picture first (a canvas fills its background) ...
            painter = QPainter(watched)  # ... then the words over it
            painter.setPen(QColor(self.view.palette().placeholderText().color()))
            rect = QRect(watched.rect()).adjusted(24, 12, -24, -12)
            painter.drawText(rect, Qt.AlignCenter | Qt.TextWordWrap, self.text)
            painter.end()
            return True
        return False
