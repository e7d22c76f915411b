"""No blank rectangles on a first start: what is empty says how it gets filled; a list is as tall as its rows; a
cluster spec's GPUs show what the spec says, not columns of question marks, from the top of the step."""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtWidgets import QApplication  # noqa: E402

from wizard.gui.screenshots import settle  # noqa: E402

from tests.helpers.gui_steps import at  # noqa: E402

pytestmark = pytest.mark.gui


def test_the_start_step_lists_its_presets_without_blank_rows_and_says_how_it_goes(window):
    page = at(window, "start")
    last = page.presets.item(page.presets.count() - 1)
    below = page.presets.viewport().height() - page.presets.visualItemRect(last).bottom()
    assert 0 <= below < 20  # the list ends with its last preset
    assert page.guide.isVisible() and "Findings" in page.guide.text()


def test_an_unchecked_environment_says_what_checking_it_shows(window):
    page = at(window, "environment")
    assert page.facts.rowCount() == 0 and page.facts_hint.shown()
    assert "Check this environment" in page.facts_hint.text and "Nothing is installed" in page.facts_hint.text
    image = page.facts.viewport().grab().toImage()  # the words are drawn, not just kept
    colours = {image.pixelColor(x, y).name() for x in range(0, image.width(), 3) for y in range(0, image.height(), 3)}
    assert len(colours) > 2


def test_hardware_without_gpus_says_how_to_get_them_and_a_spec_shows_no_unknown_columns(window, qtbot, tmp_path):
    page = at(window, "hardware")
    assert page.topology.empty_hint.shown() and "Open a cluster spec" in page.topology.empty_hint.text
    spec = tmp_path / "cluster.yaml"
    spec.write_text("nodes:\n  - {count: 2, gpus: 8, gpu: H100-80GB}\n")
    page.load_spec(str(spec))
    qtbot.waitUntil(lambda: not page.runner.running, timeout=30000)
    settle(QApplication.instance())
    assert not page.topology.empty_hint.shown()
    headers = [page.gpus.horizontalHeaderItem(c).text() for c in range(page.gpus.columnCount())
               if not page.gpus.isColumnHidden(c)]
    assert "Free" not in headers and headers[:3] == ["GPU", "Model", "Memory"]
    assert page.scroll.verticalScrollBar().value() == 0  # the step opens at its top
