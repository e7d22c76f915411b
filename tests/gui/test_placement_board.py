"""The placement board driven by real mouse drags on its canvas (press, moves, release on the viewport)."""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402
from PySide6.QtWidgets import QApplication, QGraphicsSimpleTextItem, QGraphicsTextItem  # noqa: E402

from wizard.core.plan.emit import emit_overrides  # noqa: E402
from wizard.core.placement.moves import check_move  # noqa: E402
from wizard.core.plan.convert import apply_overrides  # noqa: E402
from wizard.gui.document import PlanDocument  # noqa: E402
from wizard.gui.placement import PlacementBoard  # noqa: E402
from wizard.gui.placement.items import FONTS, Region  # noqa: E402

RM = "reward.reward_model"
WITH_RM = [f"{RM}.enable=True", f"{RM}.model_path=Qwen/Qwen2.5-7B-Instruct"]


@pytest.fixture
def make_board(qtbot):
    def make(preset: str, extra: list[str] | None = None) -> PlacementBoard:
        doc = PlanDocument(autosave=False)
        doc.load_preset(preset)
        if extra:
            doc.set_plan(apply_overrides(doc.plan, extra))
        doc.undo_stack.clear()
        board = PlacementBoard(doc)
        qtbot.addWidget(board)
        board.resize(1500, 800)
        board.show()
        qtbot.waitExposed(board)
        return board

    return make


def overrides(board) -> list[str]:
    return emit_overrides(board.doc.plan).overrides


def emitted(board, override: str) -> bool:
    """Whether the plan now emits ``override`` (booleans as verl spells them, either case)."""
    return override.lower() in (o.lower() for o in overrides(board))


def press_and_move(board, start: QPoint, end: QPoint, steps: int = 8) -> None:
    viewport = board.view.viewport()
    QTest.mousePress(viewport, Qt.LeftButton, Qt.NoModifier, start)
    for i in range(1, steps + 1):
        QTest.mouseMove(viewport, QPoint(start.x() + (end.x() - start.x()) * i // steps,
                                         start.y() + (end.y() - start.y()) * i // steps))


def release(board, end: QPoint) -> None:
    QTest.mouseRelease(board.view.viewport(), Qt.LeftButton, Qt.NoModifier, end)


def drag(board, start: QPoint, end: QPoint) -> None:
    press_and_move(board, start, end)
    release(board, end)


def test_reward_model_dragged_to_its_own_pool_on_two_nodes(make_board, qtbot):
    board = make_board("grpo-2node", WITH_RM)
    assert "global_pool: 16 GPU(s) on 2 nodes (actor, rollout, ref, reward)" in board.describe()
    values = dict(board.state.values)
    before_findings = [f.message for f in board.current_findings()]
    press_and_move(board, board.chip_view_pos("reward"), board.target_view_pos("new:reward_pool"))
    # while dragging: the slot is lit, the training pool (where it already is) greyed with the reason
    assert board.scene.regions_of("new:reward_pool")[0].state == Region.HOVER
    glob = board.scene.regions_of("global_pool")[0]
    assert glob.state == Region.REFUSED and "already runs on global_pool" in glob.toolTip()
    assert board.status.text().startswith("Release to run the reward model on New reward-model pool")
    qtbot.waitUntil(lambda: board.previewing == "new:reward_pool")
    assert board.findings.item(0).text().startswith("If you drop here (reward model on reward_pool)")
    preview_rules = [f.message for f in board.current_findings()]
    assert preview_rules != before_findings  # the candidate's findings, before the drop
    release(board, board.target_view_pos("new:reward_pool"))
    want = check_move(values, "reward", "reward_pool", 8, 1).overrides
    assert all(emitted(board, o) for o in ["trainer.nnodes=1", *want])
    assert board.describe() == ("global_pool: 8 GPU(s) on node0 (actor, rollout, ref); "
                                "reward_pool: 8 GPU(s) on node1 (reward)")
    assert [f.message for f in board.current_findings()] == preview_rules
    assert board.doc.undo_stack.count() == 1
    board.doc.undo_stack.undo()
    assert "global_pool: 16 GPU(s) on 2 nodes (actor, rollout, ref, reward)" in board.describe()
    assert not emitted(board, f"{RM}.enable_resource_pool=true")
    assert [f.message for f in board.current_findings()] == before_findings


def test_rollout_dragged_to_a_standalone_pool_on_one_node(make_board, qtbot):
    board = make_board("ppo-8gpu")
    values = dict(board.state.values)
    tiles_before = board.scene.tiles[("node0", 0)].group.peak.total
    press_and_move(board, board.chip_view_pos("rollout"), board.target_view_pos("new:rollout_pool"))
    qtbot.waitUntil(lambda: board.previewing == "new:rollout_pool")
    tile = board.scene.tiles[("node0", 0)]
    assert tile.preview and tile.group.peak.total != tiles_before  # the bars show the candidate while dragging
    release(board, board.target_view_pos("new:rollout_pool"))
    want = check_move(values, "rollout", "rollout_pool", 4, 1).overrides
    assert all(emitted(board, o) for o in ["trainer.n_gpus_per_node=4", *want])
    assert board.describe().startswith("global_pool: 4 GPU(s) on node0 (actor, critic); rollout_pool_0: 2 GPU(s)")
    assert not board.scene.tiles[("node0", 0)].preview
    board.doc.undo_stack.undo()
    assert board.describe() == "global_pool: 8 GPU(s) on node0 (actor, rollout, critic)"
    assert not emitted(board, "trainer.v1.trainer_mode=separate_async")


def test_a_refused_drop_leaves_the_plan_and_says_why(make_board):
    board = make_board("ppo-8gpu")
    before, steps = board.doc.plan, board.doc.undo_stack.count()
    drag(board, board.chip_view_pos("critic"), board.target_view_pos("new:reward_pool"))
    assert board.status.text().startswith("Refused: verl 0.9.1 puts the critic on the training GPUs (global_pool) in its code")
    assert board.doc.plan == before and board.doc.undo_stack.count() == steps
    assert all(r.state == Region.NORMAL for r in board.scene.regions)


def test_refused_targets_grey_out_while_dragging_the_actor(make_board):
    board = make_board("grpo-2node", WITH_RM)
    press_and_move(board, board.chip_view_pos("actor"), board.target_view_pos("new:rollout_pool"))
    slot = board.scene.regions_of("new:rollout_pool")[0]
    assert slot.state == Region.REFUSED and "the actor defines global_pool" in slot.toolTip()
    assert board.status.text().startswith("Refused: the actor defines global_pool")
    release(board, board.target_view_pos("new:rollout_pool"))
    assert board.doc.undo_stack.count() == 0


def test_memory_bars_follow_a_plan_edit(make_board):
    board = make_board("ppo-8gpu")
    tile = board.scene.tiles[("node0", 3)]
    gen = next(p for p in tile.group.phases if p.name == "generation").total
    assert tile.verdict == "ok" and "62.8 / 79.6 GiB" in tile.summary()
    plan = board.doc.plan.model_copy(deep=True)
    plan.rollout.gpu_memory_utilization = 0.9
    board.doc.set_plan(plan)
    tile = board.scene.tiles[("node0", 3)]
    gen2 = next(p for p in tile.group.phases if p.name == "generation").total
    assert gen2 > gen + 20 * 2**30
    assert tile.verdict in ("tight", "oom") and board.headline.text().startswith(("Fits, tight", "Does not fit"))
    assert any(f.rule.startswith("memory.") for f in board.current_findings())


def test_an_sglang_plan_draws_its_bars_and_verdict(make_board):
    # SGLang is modelled from its own code (wizard/core/memory/terms.py sglang_memory): bars and a verdict, as vLLM
    board = make_board("ppo-8gpu", ["actor_rollout_ref.rollout.name=sglang"])
    tile = board.scene.tiles[("node0", 3)]
    gen = next(p for p in tile.group.phases if p.name == "generation")
    assert {"engine_rollout", "graphs_rollout", "engine_rollout_runtime"} <= {t.key for t in gen.terms}
    assert tile.verdict == "ok" and "/ 79.6 GiB" in tile.summary()
    assert board.headline.text().startswith("Fits: worst GPU")
    plan = board.doc.plan.model_copy(deep=True)
    plan.rollout.gpu_memory_utilization = 0.99
    board.doc.set_plan(plan)
    assert board.scene.tiles[("node0", 3)].verdict == "oom" and board.headline.text().startswith("Does not fit")


def test_keyboard_move_dialog_gives_the_same_verdict(make_board, qtbot):
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QDialogButtonBox

    board = make_board("grpo-2node", WITH_RM)
    seen = {}

    def drive():
        dialog = QApplication.activeModalWidget()
        dialog.role.setCurrentIndex(dialog.role.findData("ref"))
        dialog.target.setCurrentIndex(dialog.target.findData("new:reward_pool"))
        seen["refused"] = dialog.verdict.text()
        seen["ok"] = dialog.buttons.button(QDialogButtonBox.Ok).isEnabled()
        dialog.role.setCurrentIndex(dialog.role.findData("reward"))
        seen["allowed"] = dialog.verdict.text()
        qtbot.keyClick(dialog.target, Qt.Key_Return)

    QTimer.singleShot(0, drive)
    board.move_action.trigger()
    assert seen["refused"].startswith("Refused: verl 0.9.1 puts the ref on the training GPUs (global_pool)") and seen["ok"] is False
    assert seen["allowed"].startswith("Allowed: the reward model gets its own pool")
    assert emitted(board, f"{RM}.enable_resource_pool=true")


def test_many_identical_nodes_collapse_into_one_row(qtbot):
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
    from wizard.core.hardware.cluster import parse_cluster_spec

    doc = PlanDocument(autosave=False)
    doc.load_preset("grpo-2node")
    doc.set_cluster(parse_cluster_spec("128x8xH100-80GB", load_gpu_catalogue()))
    board = PlacementBoard(doc)
    qtbot.addWidget(board)
    assert board.scene.rows == [("node0 – node127  ×128", [f"node{i}" for i in range(128)])]
    assert len({id(t) for t in board.scene.tiles.values()}) == 8 and len(board.scene.tiles) == 1024
    assert "global_pool: 1024 GPU(s) on 128 nodes" in board.describe()


# -- readable at the window's default size ---------------------------------------------------------------------

def board_in_window(window, qtbot, preset: str, gpus: str | None = None, cluster: str | None = None,
                    extra: list[str] | None = None):
    """The Placement step of the window at its default size (1180 x 820), for ``preset`` on these GPUs."""
    from wizard.gui.screenshots import parse_args, preset_and_gpus

    argv = ["--screenshots", "unused", "--preset", preset] + (["--gpus", gpus] if gpus else []) + (
        ["--cluster", cluster] if cluster else [])
    preset_and_gpus(window, parse_args(argv))
    if extra:
        window.doc.set_plan(apply_overrides(window.doc.plan, extra))
    page = window.page("placement")
    window.go_to(page)
    qtbot.waitExposed(window)
    QApplication.processEvents()
    return page.board


def smallest_text_on_screen(board) -> float:
    """The smallest point size any text on the board has on screen (its size in the scene times the zoom)."""
    texts = [i for i in board.scene.items() if isinstance(i, (QGraphicsSimpleTextItem, QGraphicsTextItem))]
    painted = [size for size, _bold in FONTS.values()]  # what the tiles and chips paint with
    return min([t.font().pointSizeF() for t in texts] + painted) * board.view.transform().m11()


@pytest.mark.parametrize("preset, gpus, cluster, count", [
    ("grpo-1gpu-smoke", "1xH100-80GB", None, 1),
    ("ppo-8gpu", "8xH100-80GB", None, 8),
    ("grpo-2node", None, "8x8xH100-80GB nvlink", 64),
])
def test_board_text_is_readable_at_any_gpu_count(window, qtbot, preset, gpus, cluster, count):
    board = board_in_window(window, qtbot, preset, gpus, cluster)
    assert len(board.scene.tiles) == count
    assert smallest_text_on_screen(board) >= 9.0
    # the GPUs wrap to the canvas's width rather than shrink: nothing to scroll sideways
    assert board.scene.sceneRect().width() * board.view.transform().m11() <= board.view.viewport().width()
    qtbot.waitUntil(lambda: not board.view.horizontalScrollBar().isVisible(), timeout=2000)  # once laid out
    # every role chip sits inside its pool's region, even on one GPU
    for chip in board.scene.chips.values():
        region = board.scene.regions_of(chip.pool)[0]
        assert region.sceneBoundingRect().contains(chip.sceneBoundingRect()), chip.role


def test_identical_nodes_draw_once_even_two_of_them(window, qtbot):
    board = board_in_window(window, qtbot, "grpo-2node", cluster="2x8xH100-80GB nvlink")
    assert board.scene.rows == [("node0 – node1  ×2", ["node0", "node1"])]
    assert board.scene.lines == 2  # 8 GPUs as 4 + 4 at this width


def test_the_status_line_wraps_a_long_hint_during_a_drag(window, qtbot):
    board = board_in_window(window, qtbot, "grpo-2node", extra=WITH_RM)
    press_and_move(board, board.chip_view_pos("reward"), board.target_view_pos("new:reward_pool"))
    status = board.status
    hint = status.text()
    assert hint.startswith("Release to run the reward model on New reward-model pool:") and len(hint) > 120
    QApplication.processEvents()
    assert status.minimumSizeHint().width() <= status.width()  # no word wider than the line
    assert status.heightForWidth(status.width()) <= status.height()  # every line of it shown
    assert status.geometry().right() <= board.width()
    release(board, board.chip_view_pos("reward"))


def test_gpus_the_pools_leave_out_say_unused_not_that_the_model_is_unknown(make_board):
    from wizard.core.hardware.gpus import parse_gpu_spec

    board = make_board("grpo-8gpu")
    board.doc.set_gpus(parse_gpu_spec("8xH100-80GB"))
    board.doc.set_plan(apply_overrides(board.doc.plan, ["trainer.n_gpus_per_node=4"]))
    used, spare = board.scene.tiles[("node0", 0)], board.scene.tiles[("node0", 6)]
    assert used.group is not None and used.summary().endswith("gen")
    # "no estimate: the model's size is not known yet" / "memory unknown" for GPUs simply left out
    assert spare.no_estimate == "not used by the plan's pools" and spare.summary() == "unused"
    # on a board wrapped to 4 GPUs a line, the pooled GPUs of the second line are not "unused" (runs hold columns)
    board.doc.set_plan(apply_overrides(board.doc.plan, ["trainer.n_gpus_per_node=8"]))
    board.scene.set_state(board.state, board.machine, columns=4)
    assert all(board.scene.tiles[("node0", i)].no_estimate != "not used by the plan's pools" for i in range(8))


def test_undo_and_redo_stay_on_the_toolbar_after_a_long_edit(make_board, qtbot):
    from PySide6.QtWidgets import QToolBar

    board = make_board("grpo-8gpu")
    board.resize(1180, 800)  # the window's default width
    long = "trainer.experiment_name=" + "a-very-long-experiment-name-" * 4
    board.doc.set_plan(apply_overrides(board.doc.plan, [long]), text=f"Set {long}")
    bar = board.findChild(QToolBar)
    qtbot.wait(10)
    assert board.undo_action.text() == "Undo" and board.undo_action.toolTip() == f"Undo Set {long}"
    assert bar.widgetForAction(board.undo_action).isVisible()  # not behind the toolbar's » (it was)
    board.doc.undo_stack.undo()
    assert board.redo_action.isEnabled() and not board.undo_action.isEnabled()
