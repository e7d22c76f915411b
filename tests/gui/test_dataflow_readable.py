"""The Dataflow step as a newcomer first sees it: the window at its opening size, the step's words as large as the
rest of the window's, zoom buttons, and ports that stand out from the stage in either theme."""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtGui import QColor  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from wizard.core.dataflow.graph import PortRef  # noqa: E402
from wizard.gui.dataflow import DataflowEditor  # noqa: E402
from wizard.gui.dataflow.items import SMALLEST_PT  # noqa: E402
from wizard.gui.document import PlanDocument  # noqa: E402
from wizard.gui.screenshots import DEFAULT_SIZE, settle  # noqa: E402
from wizard.gui.theme import apply_theme, canvas_colours  # noqa: E402

pytestmark = pytest.mark.gui


def dataflow_at_opening_size(window) -> DataflowEditor:
    window.resize(*DEFAULT_SIZE)
    window.go_to(window.page("dataflow"))
    settle(QApplication.instance())
    return window.page("dataflow").editor


def test_at_the_opening_size_every_word_is_9_pt_or_more_and_the_whole_step_is_in_view(window):
    editor = dataflow_at_opening_size(window)
    view = editor.view
    dpi = view.logicalDpiY()
    smallest_px = SMALLEST_PT * dpi / 72 * view.transform().m11()  # device pixels of the smallest word drawn
    assert smallest_px >= 9 * dpi / 72 - 0.01
    shown = view.mapFromScene(editor.scene.itemsBoundingRect()).boundingRect()
    assert view.viewport().rect().contains(shown)  # nothing to scroll to on the default plan
    area = shown.width() * shown.height() / (view.viewport().width() * view.viewport().height())
    assert area > 0.5  # the step uses the canvas, not a strip across it


def test_zoom_buttons_change_the_scale_and_fit_brings_the_readable_one_back(window):
    editor = dataflow_at_opening_size(window)
    fitted = editor.view.transform().m11()
    editor.zoom_in_action.trigger()
    assert editor.view.transform().m11() == pytest.approx(fitted * 1.25)
    editor.zoom_out_action.trigger()
    editor.zoom_out_action.trigger()
    assert editor.view.transform().m11() == pytest.approx(fitted * 0.8)
    assert editor.view.text_pt() < 9  # the user may zoom out past it; the opening view never does
    editor.fit_action.trigger()
    assert editor.view.transform().m11() == pytest.approx(fitted) and editor.view.text_pt() >= 9 - 1e-6


def _contrast(a: QColor, b: QColor) -> float:
    def lum(c: QColor) -> float:
        ch = [v / 255 for v in (c.red(), c.green(), c.blue())]
        ch = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in ch]
        return 0.2126 * ch[0] + 0.7152 * ch[1] + 0.0722 * ch[2]

    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize("theme", ["dark", "light"])
def test_every_port_stands_out_from_its_stage_in_both_themes(qtbot, theme):
    app = QApplication.instance()
    apply_theme(app, theme)
    try:
        doc = PlanDocument(autosave=False)
        doc.load_preset("grpo-1gpu-smoke")
        editor = DataflowEditor(doc)
        qtbot.addWidget(editor)
        surface = QColor(canvas_colours().surface)
        unused = editor.scene.port_items[PortRef("advantage", "values")]
        assert unused.unused_note  # GRPO does not read the values: the port drawn hollow
        for port in editor.scene.port_items.values():  # a filled dot, or a ring thick enough to see, in contrast
            filled = _contrast(port.brush().color(), surface) >= 2.5
            ringed = port.pen().widthF() >= 2 and _contrast(port.pen().color(), surface) >= 2.5
            assert filled or ringed, port.ref
    finally:
        apply_theme(app, "system")
