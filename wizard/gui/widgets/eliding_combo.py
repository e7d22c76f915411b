"""A combo box whose closed face ends its text with "…" where the text is wider than the box, the whole text in
its tooltip and its list.

A stage's entry ("Data — prompts from data.train_files, data.train_batch_size per step") is wider than the side
panel beside a canvas; a plain combo cut it mid-word ("Data — prompts from dat") with nothing to say it goes on.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt
from PySide6.QtWidgets import (
    QComboBox,
    QSizePolicy,
    QStyle,
    QStyleOptionComboBox,
    QStylePainter,
    QToolTip,
    QWidget,
)


class ElidingComboBox(QComboBox):
    """A non-editable combo that takes the row's width and elides what still does not fit."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Fixed)  # the form's whole field column

    def tip(self) -> str:
        """The tooltip shown: the whole current text, then what the box is for (its ``toolTip``)."""
        return "\n\n".join(t for t in (self.currentText(), self.toolTip()) if t)

    def event(self, event) -> bool:
        if event.type() == QEvent.ToolTip:
            QToolTip.showText(event.globalPos(), self.tip(), self)
            return True
        return super().event(event)

    def shown_text(self) -> str:
        """The current text as the closed box draws it."""
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        room = self.style().subControlRect(QStyle.CC_ComboBox, opt, QStyle.SC_ComboBoxEditField, self).width()
        return self.fontMetrics().elidedText(opt.currentText, Qt.ElideRight, room)

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt's name
        painter = QStylePainter(self)
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        painter.drawComplexControl(QStyle.CC_ComboBox, opt)
        opt.currentText = self.shown_text()
        painter.drawControl(QStyle.CE_ComboBoxLabel, opt)

    def showPopup(self) -> None:  # noqa: N802
        # the list as wide as its longest entry (up to the screen): the entries are read there in full
        widest = max((self.fontMetrics().horizontalAdvance(self.itemText(i)) for i in range(self.count())), default=0)
        self.view().setMinimumWidth(widest + 4 * self.style().pixelMetric(QStyle.PM_ScrollBarExtent))
        super().showPopup()
