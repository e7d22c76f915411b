"""The line under a canvas that says what a gesture would do: it wraps, and never widens the page.

The hints name verl keys (``actor_rollout_ref.rollout.tensor_model_parallel_size=2``) that have no space to
break at, and a label that cannot break pushes its minimum width past the page and gets cut. Here a long word
may break after a dot, an equals sign, a comma or a slash, the label keeps room for two lines so a hint that
appears mid-drag does not shift the canvas, and it grows when a hint needs more.
"""

from __future__ import annotations

import re

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget

ZWSP = "\u200b"  # a break opportunity that draws nothing
_BREAK_AFTER = re.compile(r"([./=,_:])(?=\S)")
LINES = 2


def breakable(text: str) -> str:
    """``text`` with an invisible break opportunity after the punctuation inside long words."""
    return " ".join(_BREAK_AFTER.sub(r"\1" + ZWSP, w) if len(w) > 24 else w for w in text.split(" "))


class StatusLine(QLabel):
    """A wrapping status label: ``text()`` is what was set; what is drawn may break inside long keys."""

    def __init__(self, name: str, accessible: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self.setAccessibleName(accessible)
        self.setWordWrap(True)
        self.setTextFormat(Qt.PlainText)
        self.setMinimumWidth(1)  # long words break (``breakable``): the page never grows for a hint
        self.setMinimumHeight(self.fontMetrics().lineSpacing() * LINES + 4)
        self._plain = ""

    def setText(self, text: str) -> None:  # noqa: N802 - Qt's name
        self._plain = text
        self.setToolTip(text if len(text) > 80 else "")
        super().setText(breakable(text))

    def text(self) -> str:
        return self._plain
