"""Words a newcomer needs are whole at the window's first size: the Model step's hub-id hint, the log's search box."""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPoint, QRect  # noqa: E402
from PySide6.QtGui import QFontMetrics  # noqa: E402
from PySide6.QtWidgets import QLabel, QLineEdit, QScrollArea  # noqa: E402


from tests.helpers.gui_steps import at  # noqa: E402

pytestmark = pytest.mark.gui


def test_the_model_steps_hub_id_hint_is_whole_without_scrolling(window):
    page = at(window, "model")
    hint = page.findChild(QLabel, "modelNote")
    area = page.findChild(QScrollArea)
    top_left = hint.mapTo(area.viewport(), QPoint(0, 0))
    assert QRect(area.viewport().rect()).contains(QRect(top_left, hint.size()))


def test_the_log_search_box_shows_its_whole_placeholder(window):
    page = at(window, "run")
    search = page.findChild(QLineEdit, "logSearch")
    words = QFontMetrics(search.font()).horizontalAdvance(search.placeholderText())
    assert search.width() > words + 20 and "Enter" in search.toolTip()
