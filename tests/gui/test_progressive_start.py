"""How ``verl-wizard`` opens: the Start step at once, the checker loading behind it, nothing chosen meanwhile lost."""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QApplication, QMessageBox  # noqa: E402

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
        f"{i + 1}. {step.name}" for i, step in enumerate(steps.STEPS)]
    assert w.page_title.text() == steps.step("start").title
    assert w.start_page.presets.count() >= 4
    assert "Loading" in w.findings_dock.widget().text()
    # the user picks a preset and types GPUs while loading
    choose(w, "ppo-8gpu")
    w.start_page.gpus.setText("2x8xH100-80GB")
    w.start_page.gpus.editingFinished.emit()
    w.go_to(steps.index("review"))  # a step that is not built yet says so, it does not break
    assert w.page_title.text() == steps.step("review").title
    qtbot.waitUntil(lambda: w.is_loaded, timeout=60_000)
    plan = w.doc.plan
    assert plan.algorithm.adv_estimator == "gae"  # the PPO preset, not the default one
    assert (plan.hardware.nnodes, plan.hardware.n_gpus_per_node) == (2, 8)
    review = w.page("review")
    assert w.current_page() is review and "trainer.nnodes='2'" in review.run_sh.toPlainText()
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
    from wizard.adapters.files.session_store import save_session
    from wizard.usecases.plans import preset_plan

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
    from wizard.adapters.files.session_store import save_session, session_path

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    save_session({"plan": {"name": "mine"}, "gpus": None})
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: pytest.fail("asked after closing"))
    w = opening(qtbot)
    w.close()  # before the question's turn came
    assert session_path().exists()
    QApplication.processEvents()  # the loader's start and the question's turn come to a closed window: nothing happens
    assert not w.is_loaded


def recovered(tmp_path, monkeypatch, gpus):
    from wizard.usecases.plans import plan_with_gpus, preset_plan
    from wizard.adapters.files.session_store import save_session
    from wizard.core.hardware.gpus import parse_gpu_spec

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    plan = plan_with_gpus(preset_plan("grpo-1gpu-smoke", None), parse_gpu_spec(gpus)).model_copy(deep=True)
    plan.data.train_batch_size = 48
    save_session({"plan": plan.model_dump(mode="json"), "gpus": gpus})


def test_a_preset_picked_after_saying_yes_wins_over_the_recovered_plan(qtbot, tmp_path, monkeypatch):
    recovered(tmp_path, monkeypatch, "4")
    w = opening(qtbot, restore=True)  # answered yes; the steps are still loading
    choose(w, "ppo-8gpu")
    qtbot.waitUntil(lambda: w.is_loaded, timeout=60_000)
    assert w.doc.plan.algorithm.adv_estimator == "gae"  # what the user picked last
    assert str(w.doc.gpus) == w.start_page.gpus.text() == "4"  # the recovered GPUs, shown where they are typed
    assert w.doc.plan.hardware.n_gpus_per_node == 4


def test_gpus_typed_after_saying_yes_shape_the_recovered_plan(qtbot, tmp_path, monkeypatch):
    recovered(tmp_path, monkeypatch, "4")
    w = opening(qtbot, restore=True)
    w.start_page.gpus.setText("2x8xH100-80GB")
    w.start_page.gpus.editingFinished.emit()
    qtbot.waitUntil(lambda: w.is_loaded, timeout=60_000)
    assert w.doc.plan.data.train_batch_size == 48  # the recovered plan
    assert (w.doc.plan.hardware.nnodes, w.doc.plan.hardware.n_gpus_per_node) == (2, 8)  # on the typed GPUs
    assert w.start_page.gpus.text() == "2x8xH100-80GB" and w.doc.gpus.gpus_per_node == 8
    w.doc.undo_stack.undo()  # one step takes the whole recovery back
    assert w.doc.plan.data.train_batch_size != 48


def test_a_broken_install_says_why_instead_of_loading_forever(qtbot, monkeypatch):
    from wizard.gui.document import PlanDocument

    def broken(*_a, **_k):
        raise ImportError("No module named 'hydra'\nmore lines")

    monkeypatch.setattr(PlanDocument, "__init__", broken)
    w = opening(qtbot, restore=False)
    said = []
    w.report_load_error = said.append
    qtbot.waitUntil(lambda: w.load_error is not None, timeout=60_000)
    assert said == ["ImportError: No module named 'hydra'"]
    w.go_to(steps.index("review"))
    assert "could not load: ImportError" in w.current_page().label.text()
    assert not w.open_file(str(SCRIPTS / "examples__ppo_trainer__run_deepseek7b_llm.sh")) and said == said[:1]
    assert not w.start_page.import_file(str(SCRIPTS / "examples__ppo_trainer__run_deepseek7b_llm.sh"))
    assert len(said) == 1  # said once


def test_closing_while_loading_after_saying_no_drops_the_old_session(qtbot, tmp_path, monkeypatch):
    from wizard.adapters.files.session_store import save_session, session_path

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    save_session({"plan": {"name": "mine"}, "gpus": None})
    w = opening(qtbot, restore=False)
    w.close()
    assert not session_path().exists()


def test_the_recovered_session_comes_back_as_it_was_and_undo_takes_all_of_it_back(qtbot, tmp_path, monkeypatch):
    from wizard.usecases.plans import plan_with_gpus, preset_plan
    from wizard.adapters.files.session_store import save_session
    from wizard.core.hardware.gpus import parse_gpu_spec

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    plan = plan_with_gpus(preset_plan("grpo-1gpu-smoke", None), parse_gpu_spec("4")).model_copy(deep=True)
    plan.hardware.n_gpus_per_node = 2  # edited on the Hardware step after typing the GPUs
    save_session({"plan": plan.model_dump(mode="json"), "gpus": "4"})
    w = opening(qtbot, restore=True)
    qtbot.waitUntil(lambda: w.is_loaded, timeout=60_000)
    assert w.doc.plan == plan and w.start_page.gpus.text() == "4"
    w.doc.undo_stack.undo()
    assert w.doc.gpus is None and w.start_page.gpus.text() == ""  # the field follows the plan's GPUs


def test_the_question_asked_while_loading_builds_the_steps_once(qtbot, tmp_path, monkeypatch):
    recovered(tmp_path, monkeypatch, "4")
    asked = []

    def question(*_a, **_k):  # a modal dialog runs its own event loop while it waits
        asked.append(1)
        for _ in range(20):
            QApplication.processEvents()
            qtbot.wait(20)
        return QMessageBox.Yes

    monkeypatch.setattr(QMessageBox, "question", question)
    w = opening(qtbot)
    built = []
    w.loaded.connect(lambda: built.append(w.doc))
    assert w.open_file(str(SCRIPTS / "examples__ppo_trainer__run_deepseek7b_llm.sh"))  # waited for the loader
    QApplication.processEvents()  # the loader's answer, queued meanwhile, arrives after the steps were built
    assert len(asked) == 1 and len(built) == 1
    assert "deepseek" in w.doc.plan.models.actor_path.lower()  # the file opened last wins


def test_a_failing_check_is_a_finding_not_an_old_verdict(qtbot, monkeypatch):
    import wizard.gui.document as document

    w = opening(qtbot, restore=False)
    qtbot.waitUntil(lambda: w.is_loaded, timeout=60_000)

    def broken(*_a, **_k):
        raise KeyError("actor_rollout_ref")

    monkeypatch.setattr(document, "assess_plan", broken)
    choose(w, "ppo-8gpu")
    (error,) = [f for f in w.doc.findings if f.rule == "wizard.internal_error"]
    assert "KeyError" in error.message and w.findings.tree.topLevelItemCount() > 0
    review = w.page("review")
    w.go_to(review)
    assert "No verdict" in review.verdict.text() and not review.is_complete()
    monkeypatch.undo()
    w.doc.undo_stack.undo()
    assert not any(f.rule == "wizard.internal_error" for f in w.doc.findings)
