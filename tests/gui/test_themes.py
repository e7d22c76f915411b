"""The dark theme reaches what Qt's palette does not: the three canvases (dataflow, topology, placement) and the
coloured findings beside them, and they follow a switch while the window is open."""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QColor, QImage, QPalette  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from wizard.gui.theme import DARK_CANVAS, LIGHT_CANVAS  # noqa: E402


def lightness(image: QImage) -> float:
    """The mean lightness (0-255) of ``image``, sampled on a grid."""
    values = [image.pixelColor(x, y).lightness() for x in range(0, image.width(), 7) for y in range(0, image.height(), 7)]
    return sum(values) / len(values)


def luminance(colour: QColor) -> float:
    def lin(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    return 0.2126 * lin(colour.redF()) + 0.7152 * lin(colour.greenF()) + 0.0722 * lin(colour.blueF())


def contrast(a: QColor, b: QColor) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def canvases(window):
    from wizard.core.hardware.topology import Discovery
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
    from wizard.core.hardware.cluster import parse_cluster_spec

    hardware = window.page("hardware")
    hardware.show_discovery(Discovery(cluster=parse_cluster_spec("1x8xH100-80GB nvlink", load_gpu_catalogue())))
    dataflow = window.page("dataflow").editor
    board = window.page("placement").board
    return {"dataflow": dataflow.view, "topology": hardware.topology.view, "placement": board.view}


def shown(window, qtbot, view) -> QImage:
    page = view.parentWidget()
    while page is not None and page not in window.pages:
        page = page.parentWidget()
    window.go_to(page)
    qtbot.waitExposed(window)
    QApplication.processEvents()
    return view.viewport().grab().toImage()


def readable_list(widget) -> None:
    """Every line of a findings list stands out from the list's background (WCAG's 4.5:1)."""
    base = widget.palette().color(QPalette.Base)
    for i in range(widget.count()):
        item = widget.item(i)
        brush = item.data(Qt.ForegroundRole)
        colour = brush.color() if brush is not None else widget.palette().color(QPalette.Text)
        assert contrast(colour, base) >= 4.5, (item.text(), colour.name(), base.name())


def test_canvases_follow_the_dark_theme_and_back(window, qtbot):
    views = canvases(window)
    try:
        for name, view in views.items():
            assert lightness(shown(window, qtbot, view)) > 180, name
        window.set_theme("dark")
        for name, view in views.items():
            qtbot.waitUntil(lambda v=view: v.scene().backgroundBrush().color() == QColor(DARK_CANVAS.background))
            assert lightness(shown(window, qtbot, view)) < 90, name  # the tiles and stages too, not only the back
        board = window.page("placement").board
        readable_list(board.findings)
        readable_list(window.page("dataflow").editor.findings)
        window.set_theme("light")
        for name, view in views.items():
            qtbot.waitUntil(lambda v=view: v.scene().backgroundBrush().color() == QColor(LIGHT_CANVAS.background))
            assert lightness(shown(window, qtbot, view)) > 180, name
        readable_list(board.findings)
    finally:
        window.set_theme("system")


def test_the_findings_dock_colours_follow_the_theme(window, qtbot):
    try:
        window.set_theme("dark")
        qtbot.wait(10)
        tree = window.findings.tree
        base = tree.palette().color(QPalette.Base)
        for item in window.findings.items():
            brush = item.data(0, Qt.ForegroundRole)
            colour = brush.color() if brush is not None else tree.palette().color(QPalette.Text)
            assert contrast(colour, base) >= 4.5, (item.text(0), colour.name())
    finally:
        window.set_theme("system")
