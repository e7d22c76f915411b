"""One composition per edit: an edit typed in a field, with the Placement step shown, composes verl's config once
(the findings dock, the pages and the board read the same assessment); a drag candidate is one more, made off the
GUI thread."""

import threading

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

from tests.helpers.compositions import counted_compositions  # noqa: E402


def test_an_edit_with_the_placement_step_shown_composes_once(window, qtbot, monkeypatch):
    qtbot.waitUntil(lambda: window.is_loaded, timeout=60_000)
    window.go_to(window.page("placement"))
    board = window.page("placement").board
    editor = window.page("data").forms[1].editors["data.train_batch_size"]
    with counted_compositions(monkeypatch) as made:
        editor.widget.setText("32")
        editor._commit()
        qtbot.waitUntil(lambda: window.doc.plan.data.train_batch_size == 32)
    assert len(made) == 1
    assert "data.train_batch_size=32" in made[0]
    # what the board shows is that one assessment: its findings are the dock's check findings
    assert [f.rule for f in board.current_findings()] == [f.rule for f in window.doc.result.findings]


def test_a_drag_candidate_is_one_composition_on_a_worker_thread(window, qtbot, monkeypatch):
    qtbot.waitUntil(lambda: window.is_loaded, timeout=60_000)
    window.doc.load_preset("ppo-8gpu")  # eight GPUs: the rollout may move to a pool of its own
    window.resize(1800, 1400)  # the chip and the target both in view
    window.go_to(window.page("placement"))
    board = window.page("placement").board
    # the window's new size first (a resize during the drag would re-centre the board under the mouse)
    qtbot.waitUntil(lambda: board.view.viewport().width() > 1000)
    qtbot.waitUntil(lambda: board.view.viewport().rect().contains(board.target_view_pos("new:rollout_pool")))
    threads: list[str] = []
    with counted_compositions(monkeypatch) as made:
        import wizard.core.verl.compose as compose

        counting = compose.composed_view

        def where(schema, overrides, **kwargs):
            threads.append(threading.current_thread().name)
            return counting(schema, overrides, **kwargs)

        monkeypatch.setattr(compose, "composed_view", where)
        monkeypatch.setattr("wizard.core.check.verdict.composed_view", where)
        viewport = board.view.viewport()
        start, end = board.chip_view_pos("rollout"), board.target_view_pos("new:rollout_pool")
        QTest.mousePress(viewport, Qt.LeftButton, Qt.NoModifier, start)
        for i in range(1, 9):
            QTest.mouseMove(viewport, QPoint(start.x() + (end.x() - start.x()) * i // 8,
                                             start.y() + (end.y() - start.y()) * i // 8))
        qtbot.waitUntil(lambda: board.previewing == "new:rollout_pool", timeout=10_000)
        QTest.mouseRelease(viewport, Qt.LeftButton, Qt.NoModifier, QPoint(viewport.width() - 5, 5))  # no drop
    assert len(made) == 1
    assert threads and threads[0] != threading.main_thread().name
