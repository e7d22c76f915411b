"""A field whose value a finding is about says so in place: marked, with the finding under it, like the dock."""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

from wizard.core.findings import Severity  # noqa: E402

pytestmark = pytest.mark.gui
TP = "actor_rollout_ref.rollout.tensor_model_parallel_size"


def tp_editor(window):
    page = window.page("rollout")
    window.go_to(page)
    return next(form.editors[TP] for form in page.forms if TP in form.editors)


def test_a_tensor_parallel_size_verl_refuses_is_marked_on_its_field_and_cleared_when_fixed(window):
    editor = tp_editor(window)
    assert not editor.error.isVisibleTo(window)
    editor.widget.clear()
    QTest.keyClicks(editor.widget, "3")
    QTest.keyClick(editor.widget, Qt.Key_Return)
    errors = [f for f in window.doc.findings if f.severity is Severity.ERROR and TP in f.keys]
    assert errors  # the dock has it ...
    assert editor.error.isVisibleTo(window) and editor.error.text().startswith("Error: ")  # ... and so does the field
    assert errors[0].message.split(";")[0][:40] in editor.error.text()
    assert "border" in editor.widget.styleSheet()
    editor.widget.clear()
    QTest.keyClicks(editor.widget, "1")  # one GPU: TP 1
    QTest.keyClick(editor.widget, Qt.Key_Return)
    assert not editor.error.isVisibleTo(window) and editor.widget.styleSheet() == ""
