"""The dataflow editor driven by real mouse drags on its canvas (press, moves, release on the viewport)."""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtTest import QTest  # noqa: E402

from wizard.core.dataflow.graph import Link, PortRef  # noqa: E402
from wizard.core.plan.emit import emit_overrides  # noqa: E402
from wizard.gui.dataflow import DataflowEditor  # noqa: E402
from wizard.gui.dataflow.items import PortItem  # noqa: E402
from wizard.gui.document import PlanDocument  # noqa: E402

KL_OUT, KL_IN = PortRef("kl_loss", "kl"), PortRef("actor_update", "kl")
KL_LINK = Link(KL_OUT, KL_IN)
USE_KL_LOSS = "actor_rollout_ref.actor.use_kl_loss"


@pytest.fixture
def make_editor(qtbot):
    def make(preset: str) -> DataflowEditor:
        doc = PlanDocument(autosave=False)
        doc.load_preset(preset)
        doc.undo_stack.clear()
        editor = DataflowEditor(doc)
        qtbot.addWidget(editor)
        editor.resize(1400, 700)
        editor.show()
        qtbot.waitExposed(editor)
        return editor

    return make


def overrides(editor) -> list[str]:
    return emit_overrides(editor.doc.plan).overrides


def messages(editor) -> list[str]:
    return [f.message for f in editor.graph_findings()]


def press_and_move(editor, start: QPoint, end: QPoint, steps: int = 6) -> None:
    viewport = editor.view.viewport()
    QTest.mousePress(viewport, Qt.LeftButton, Qt.NoModifier, start)
    for i in range(1, steps + 1):
        QTest.mouseMove(viewport, QPoint(start.x() + (end.x() - start.x()) * i // steps,
                                         start.y() + (end.y() - start.y()) * i // steps))


def drag(editor, start: QPoint, end: QPoint) -> None:
    press_and_move(editor, start, end)
    QTest.mouseRelease(editor.view.viewport(), Qt.LeftButton, Qt.NoModifier, end)


def empty_spot(editor) -> QPoint:
    """A point of the canvas below every stage."""
    rect = editor.scene.itemsBoundingRect()
    return editor.view.mapFromScene(rect.center().x(), rect.bottom() + 25)


def test_dragging_a_link_end_off_its_input_cuts_it_and_turns_kl_loss_off(make_editor):
    editor = make_editor("grpo-8gpu")
    assert f"{USE_KL_LOSS}=true" in overrides(editor) and messages(editor) == []
    drag(editor, editor.port_view_pos(KL_IN), empty_spot(editor))
    assert KL_LINK not in editor.graph.links
    assert editor.doc.plan.algorithm.use_kl_loss is False
    assert f"{USE_KL_LOSS}=false" in overrides(editor)
    assert any("KL in loss is drawn but no stage that runs reads its output" in m for m in messages(editor))
    assert editor.findings.item(0).text().startswith("Warning: KL in loss")
    # the side list wraps the key the finding names (one word to Qt: it was cut at the edge, scrolled sideways)
    item = editor.findings.item(0)
    assert "actor_rollout_ref.actor.use_kl_loss" in item.text().replace("\u200b", "")
    assert editor.findings.visualItemRect(item).right() <= editor.findings.viewport().width()
    editor.doc.undo_stack.undo()
    assert KL_LINK in editor.graph.links and f"{USE_KL_LOSS}=true" in overrides(editor)
    assert messages(editor) == []
    editor.doc.undo_stack.redo()
    assert KL_LINK not in editor.graph.links and f"{USE_KL_LOSS}=false" in overrides(editor)


def test_while_dragging_compatible_ports_light_up_and_others_say_why_not(make_editor):
    editor = make_editor("grpo-8gpu")
    drag(editor, editor.port_view_pos(KL_IN), empty_spot(editor))
    press_and_move(editor, editor.port_view_pos(KL_OUT), editor.port_view_pos(KL_IN))
    ports = editor.scene.port_items
    assert ports[KL_IN].state == PortItem.COMPATIBLE
    scores = ports[PortRef("advantage", "scores")]
    assert scores.state == PortItem.REFUSED and "takes scores" in scores.toolTip()
    assert editor.status.text().startswith("Release to link to Actor update · KL term")
    QTest.mouseRelease(editor.view.viewport(), Qt.LeftButton, Qt.NoModifier, editor.port_view_pos(KL_IN))
    assert KL_LINK in editor.graph.links
    assert editor.doc.plan.algorithm.use_kl_loss is True and f"{USE_KL_LOSS}=true" in overrides(editor)
    assert all(p.state == PortItem.NORMAL for p in editor.scene.port_items.values())
    assert messages(editor) == []
    editor.doc.undo_stack.undo()  # undo the link: KL is off again
    assert editor.doc.plan.algorithm.use_kl_loss is False


def test_a_drop_on_a_port_of_another_type_is_refused_with_the_reason(make_editor):
    editor = make_editor("grpo-8gpu")
    before, steps = editor.doc.plan, editor.doc.undo_stack.count()
    drag(editor, editor.port_view_pos(PortRef("reward", "scores")), editor.port_view_pos(KL_IN))
    assert editor.status.text() == "Refused: Actor update · KL term takes KL term (from KL in loss), not scores"
    assert editor.doc.plan == before and editor.doc.undo_stack.count() == steps


def test_cutting_the_responses_into_reward_is_an_unresolved_dependency(make_editor):
    editor = make_editor("ppo-8gpu")
    before = overrides(editor)
    link = Link(PortRef("rollout", "responses"), PortRef("reward", "responses"))
    drag(editor, editor.port_view_pos(link.dst), empty_spot(editor))
    assert link not in editor.graph.links
    assert "unresolved dependency: responses → Reward (nothing feeds its responses input)" in messages(editor)
    assert editor.findings.item(0).text().startswith("Error: unresolved dependency")
    assert overrides(editor) == before  # verl wires its own step: the keys do not change
    drag(editor, editor.port_view_pos(link.src), editor.port_view_pos(link.dst))  # and back, by dragging
    assert link in editor.graph.links and messages(editor) == []
    editor.doc.undo_stack.undo()
    assert link not in editor.graph.links and messages(editor)


def test_gae_without_values_and_a_backwards_drag_from_the_input(make_editor):
    editor = make_editor("ppo-8gpu")
    values = PortRef("advantage", "values")
    drag(editor, editor.port_view_pos(values), empty_spot(editor))
    assert any(m.startswith("gae reads critic values") for m in messages(editor))
    # from the free input back to an output: the drag runs backwards
    drag(editor, editor.port_view_pos(values), editor.port_view_pos(PortRef("critic_values", "values")))
    assert Link(PortRef("critic_values", "values"), values) in editor.graph.links
    assert messages(editor) == []


def test_estimator_change_redraws_refuses_values_and_raises_n(make_editor, qtbot):
    editor = make_editor("ppo-8gpu")
    editor.select_stage("advantage")
    combo = editor.inspector.estimator
    combo.setCurrentIndex(combo.findData("grpo"))
    combo.activated.emit(combo.currentIndex())
    plan = editor.doc.plan
    assert plan.algorithm.adv_estimator == "grpo" and plan.rollout.n == 5 and plan.models.critic_enable is True
    assert "actor_rollout_ref.rollout.n=5" in overrides(editor) and "critic.enable=true" in overrides(editor)
    assert any("grpo does not read critic values" in m for m in messages(editor))
    drag(editor, editor.port_view_pos(PortRef("critic_values", "values")), editor.port_view_pos(PortRef("advantage", "values")))
    assert editor.status.text().startswith("Refused: grpo does not read critic values")
    editor.select_stage("critic_values")
    editor.delete_action.trigger()
    editor.select_stage("critic_update")
    editor.delete_action.trigger()
    assert editor.doc.plan.models.critic_enable is None and "critic.enable" not in " ".join(overrides(editor))
    for _ in range(3):
        editor.doc.undo_stack.undo()
    assert editor.doc.plan.algorithm.adv_estimator == "gae" and editor.doc.plan.rollout.n == 1


def test_toolbar_adds_a_stage_wired_in_and_keyboard_connect(make_editor):
    editor = make_editor("grpo-8gpu")
    editor.add_actions["kl_reward"].trigger()
    assert editor.doc.plan.algorithm.use_kl_in_reward is True
    assert "algorithm.use_kl_in_reward=true" in overrides(editor) and not editor.add_actions["kl_reward"].isEnabled()
    assert Link(PortRef("kl_reward", "scores_kl"), PortRef("advantage", "scores")) in editor.graph.links
    editor.select_stage("kl_reward")
    editor.delete_action.trigger()
    assert Link(PortRef("reward", "scores"), PortRef("advantage", "scores")) in editor.graph.links
    assert editor.doc.plan.algorithm.use_kl_in_reward is False and messages(editor) == []


def test_editing_the_plan_elsewhere_redraws_the_graph(make_editor):
    editor = make_editor("grpo-8gpu")
    plan = editor.doc.plan.model_copy(deep=True)
    plan.algorithm.use_kl_loss = False
    editor.doc.set_plan(plan)
    assert not editor.graph.has("kl_loss") and "kl_loss" not in editor.scene.node_items
    assert not editor.graph.has("ref")  # nothing reads reference log-probs any more
    editor.doc.undo_stack.undo()
    assert "kl_loss" in editor.scene.node_items


def test_moving_a_stage_is_saved_with_the_plan_not_in_the_overrides(make_editor):
    editor = make_editor("grpo-2node")
    before = overrides(editor)
    item = editor.scene.node_items["reward"]
    y0 = item.y()
    start = editor.view.mapFromScene(item.mapToScene(60, 12))  # grab it by the title bar
    drag(editor, start, start + QPoint(0, -60))
    saved = editor.doc.plan.dataflow.positions
    assert saved["reward"][1] < y0 - 50 and editor.scene.node_items["reward"].y() == saved["reward"][1]
    assert set(saved) == {n.id for n in editor.graph.nodes}  # the first move pins every stage
    assert overrides(editor) == before
    editor.doc.undo_stack.undo()
    assert editor.doc.plan.dataflow.positions == {}


def test_keyboard_connect_dialog_says_why_before_ok(make_editor, qtbot):
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QDialogButtonBox

    editor = make_editor("grpo-8gpu")
    editor.cut(KL_LINK)
    seen = {}

    def drive():
        dialog = QApplication.activeModalWidget()
        dialog.dst.setCurrentIndex(dialog.dst.findText("Advantage · scores"))
        seen["refused"] = dialog.verdict.text()
        seen["ok_enabled"] = dialog.buttons.button(QDialogButtonBox.Ok).isEnabled()
        dialog.dst.setCurrentIndex(dialog.dst.findText("Actor update · KL term"))
        seen["allowed"] = dialog.verdict.text()
        qtbot.keyClick(dialog.dst, Qt.Key_Return)  # Enter presses OK

    editor.select_stage("kl_loss")
    QTimer.singleShot(0, drive)
    editor.connect_action.trigger()
    assert seen == {"refused": "Refused: Advantage · scores takes scores (from Reward or KL in reward), not KL term",
                    "ok_enabled": False, "allowed": "Allowed"}
    assert KL_LINK in editor.graph.links and editor.doc.plan.algorithm.use_kl_loss is True


def test_reward_model_from_the_inspector(make_editor):
    editor = make_editor("grpo-2node")
    editor.select_stage("reward")
    kind = editor.inspector.reward
    kind.setCurrentIndex(kind.findData("model"))
    kind.activated.emit(kind.currentIndex())
    assert any("reward model is on but has no model" in m for m in messages(editor))
    path = editor.inspector.edits["model_path"]
    path.setText("/models/rm-7b")
    path.editingFinished.emit()
    text = overrides(editor)
    assert "reward.reward_model.enable=true" in text and "reward.reward_model.model_path=/models/rm-7b" in text
    assert "reward.reward_model.rollout.name=vllm" in text and messages(editor) == []
    assert "reward model: rm-7b" in editor.inspector.stage.currentText()


def open_editor(doc, qtbot) -> DataflowEditor:
    """An editor the test closes and destroys itself (as a page that is rebuilt drops its editor)."""
    editor = DataflowEditor(doc)
    editor.resize(1400, 700)
    editor.show()
    qtbot.waitExposed(editor)
    return editor


def destroy(editor) -> None:
    from PySide6.QtCore import QCoreApplication, QEvent
    from shiboken6 import isValid

    editor.close()
    editor.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.DeferredDelete)
    assert not isValid(editor)


def test_undo_and_redo_after_the_editor_is_gone_restore_positions_and_links(qtbot):
    doc = PlanDocument(autosave=False)
    doc.load_preset("ppo-8gpu")
    doc.undo_stack.clear()
    plan_before = doc.plan
    link = Link(PortRef("rollout", "responses"), PortRef("reward", "responses"))  # no key says it: a cut is drawn only
    editor = open_editor(doc, qtbot)
    item = editor.scene.node_items["reward"]
    y0 = item.y()
    start = editor.view.mapFromScene(item.mapToScene(60, 12))  # the title bar
    drag(editor, start, start + QPoint(0, -60))
    drag(editor, editor.port_view_pos(link.dst), empty_spot(editor))
    moved = dict(doc.plan.dataflow.positions)
    assert moved["reward"][1] < y0 - 50 and link not in editor.graph.links
    destroy(editor)

    editor = open_editor(doc, qtbot)  # the page built again: the document still holds the cut and the move
    assert link not in editor.graph.links and editor.scene.node_items["reward"].y() == moved["reward"][1]
    assert "unresolved dependency: responses → Reward (nothing feeds its responses input)" in messages(editor)
    destroy(editor)

    doc.undo_stack.undo()
    doc.undo_stack.undo()
    assert doc.plan == plan_before and doc.plan.dataflow.positions == {}
    assert link in doc.graph.links and doc.graph.layout == {}
    editor = open_editor(doc, qtbot)
    assert link in editor.graph.links and editor.scene.node_items["reward"].y() == y0 and messages(editor) == []
    destroy(editor)

    doc.undo_stack.redo()
    doc.undo_stack.redo()
    assert link not in doc.graph.links and doc.plan.dataflow.positions == moved


def test_an_edit_that_changes_nothing_pushes_no_undo_step(make_editor):
    editor = make_editor("grpo-8gpu")
    doc = editor.doc
    plan, steps = doc.plan, doc.undo_stack.count()
    item = editor.scene.node_items["reward"]
    editor.scene.nodes_moved.emit({"reward": (item.x(), item.y())})  # a drag that ends where it began
    editor.inspector.param_edited.emit("rollout", "n", plan.rollout.n)  # the value it already has
    assert doc.undo_stack.count() == steps and doc.plan == plan and doc.plan.dataflow.positions == {}
    assert not doc.set_graph(doc.graph, text="Nothing") and not doc.set_plan(plan)
    assert doc.undo_stack.count() == steps and doc.undo_stack.isClean()
