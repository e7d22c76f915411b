"""How ``verl-wizard`` opens: the Start step at once, the checker loading behind it, nothing chosen meanwhile lost."""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

from tests.conftest import SCRIPTS  # noqa: E402
from wizard.gui import steps  # noqa: E402
from wizard.gui.app import WizardWindow  # noqa: E402


def opening(qtbot, **kwargs) -> WizardWindow:
    w = WizardWindow(progressive=True, **kwargs)
    w.ask_save = lambda: "discard"
    qtbot.addWidget(w)
    w.show()
    return w


def choose(window, preset):
    presets = window.start_page.presets
    row = next(i for i in range(presets.count()) if presets.item(i).data(Qt.UserRole) == preset)
    presets.setCurrentRow(row)


def test_the_start_step_is_usable_before_the_checker_has_loaded(qtbot):
    w = opening(qtbot, restore=False)
    assert not w.is_loaded  # nothing processed yet: the loader's answer is still queued
    assert [w.steps.item(i).text() for i in range(w.steps.count())] == [
        f"{i + 1}. {name}" for i, (name, _, _) in enumerate(steps.STEPS)]
    assert w.page_title.text() == steps.START[1]
    assert w.start_page.presets.count() >= 4
    assert "Loading" in w.findings_dock.widget().text()
    # the user picks a preset and types GPUs while loading
    choose(w, "ppo-8gpu")
    w.start_page.gpus.setText("2x8xH100-80GB")
    w.start_page.gpus.editingFinished.emit()
    w.go_to(steps.STEPS.index(steps.REVIEW))  # a step that is not built yet says so, it does not break
    assert w.page_title.text() == steps.REVIEW[1]
    qtbot.waitUntil(lambda: w.is_loaded, timeout=60_000)
    plan = w.doc.plan
    assert plan.algorithm.adv_estimator == "gae"  # the PPO preset, not the default one
    assert (plan.hardware.nnodes, plan.hardware.n_gpus_per_node) == (2, 8)
    assert w.current_page() is w.review_page and "trainer.nnodes='2'" in w.review_page.run_sh.toPlainText()
    assert w.findings.tree.topLevelItemCount() > 0  # the check ran
    assert w.doc.undo_stack.isClean() and not w.windowTitle().endswith("*")  # choosing is not an edit


def test_an_import_while_loading_waits_for_the_checker_and_lands(qtbot):
    w = opening(qtbot, restore=False)
    assert not w.is_loaded
    assert w.open_file(str(SCRIPTS / "examples__ppo_trainer__run_deepseek7b_llm.sh"))
    assert w.is_loaded
    assert "deepseek" in w.doc.plan.models.actor_path.lower()
    assert any(f.rule for f in w.doc.findings)


def test_a_crashed_session_is_offered_while_loading_and_comes_back(qtbot, tmp_path, monkeypatch):
    from wizard.adapters.session_store import save_session
    from wizard.adapters.generate import preset_plan

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    plan = preset_plan("grpo-1gpu-smoke", None).model_copy(deep=True)
    plan.data.train_batch_size = 48
    save_session({"plan": plan.model_dump(mode="json"), "gpus": None})
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[1]) or QMessageBox.Yes)
    w = opening(qtbot)
    qtbot.waitUntil(lambda: w.is_loaded, timeout=60_000)
    assert asked == ["Recover your last session?"]
    assert w.doc.plan.data.train_batch_size == 48
    assert w.windowTitle().endswith("*")


def test_closing_while_loading_keeps_the_recovery_offer(qtbot, tmp_path, monkeypatch):
    from wizard.adapters.session_store import save_session, session_path

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    save_session({"plan": {"name": "mine"}, "gpus": None})
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: pytest.fail("asked after closing"))
    w = opening(qtbot)
    w.close()  # before the question's turn came
    assert session_path().exists()
    qtbot.wait(200)  # the loader's answer arrives at a closed window: nothing happens
