"""The first window, driven through real widgets: pick, see findings and run.sh, fix, write."""

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402

from tests.conftest import SCRIPTS  # noqa: E402
from wizard.gui.app import WizardWindow  # noqa: E402


@pytest.fixture
def window(qtbot):
    w = WizardWindow(restore=False)
    qtbot.addWidget(w)
    w.show()
    return w


def select_preset(window, name):
    presets = window.start_page.presets
    for i in range(presets.count()):
        if presets.item(i).data(Qt.UserRole) == name:
            presets.setCurrentRow(i)
            return
    raise AssertionError(name)


def test_default_preset_is_clean_and_shows_run_sh(window):
    window.next()
    review = window.review_page
    assert "No findings" in review.findings.summary.text()
    text = review.run_sh.toPlainText()
    assert "-m verl.trainer.main_ppo" in text and "actor_rollout_ref.rollout.name='vllm'" in text
    assert "override" not in review.yaml.toPlainText() or "defaults" in review.yaml.toPlainText()
    assert review.isComplete()


def test_gpu_spec_that_cannot_fit_shows_an_error_and_blocks_writing(window, qtbot):
    select_preset(window, "grpo-8gpu")
    window.start_page.gpus.setText("4xH100-80GB")
    window.start_page.gpus.editingFinished.emit()
    # the preset asks for 8 GPUs per node: bring it back, then shrink the cluster without changing the plan
    window.doc.set_plan(window.doc.plan.model_copy(update={}))
    window.next()
    review = window.review_page
    assert review.isComplete()  # --gpus rewrote the trainer to 4 GPUs: batch sizes still divide
    window.doc.plan.hardware.n_gpus_per_node = 8
    window.doc.set_plan(window.doc.plan)
    assert "error" in review.findings.summary.text()
    assert not review.isComplete()


def test_bad_gpu_spec_is_explained_in_place(window):
    window.start_page.gpus.setText("eight")
    window.start_page.gpus.editingFinished.emit()
    assert "cannot read GPU spec" in window.start_page.gpus_error.text()


def test_apply_fix_button_repairs_the_plan(window, qtbot):
    plan = window.doc.plan.model_copy(deep=True)
    plan.rollout.name = None
    plan.passthrough.append("actor_rollout_ref.rollout.name='???'")
    window.doc.set_plan(plan)
    window.next()
    findings = window.review_page.findings
    assert findings.select_first_fixable()
    qtbot.mouseClick(findings.fix_button, Qt.LeftButton)
    assert window.doc.result.ok
    assert "actor_rollout_ref.rollout.name='vllm'" in window.review_page.run_sh.toPlainText()


def test_import_a_real_verl_script(window):
    assert window.start_page.import_file(str(SCRIPTS / "examples__grpo_trainer__run_qwen2-7b_math.sh"))
    window.next()
    text = window.review_page.run_sh.toPlainText()
    assert 'data.train_files="[${HOME}/data/gsm8k/train.parquet,${HOME}/data/math/train.parquet]"' in text


def test_import_refusal_is_shown_not_raised(window):
    assert not window.start_page.import_file(str(SCRIPTS / "other" / "tests__special_e2e__run_dapo.sh"))
    assert "Cannot import" in window.start_page.import_status.text()


def test_write_page_writes_files(window, qtbot, tmp_path):
    window.next()
    window.next()
    page = window.write_page
    page.folder.setText(str(tmp_path / "out dir"))
    qtbot.mouseClick(page.write_button, Qt.LeftButton)
    assert (tmp_path / "out dir" / "run.sh").exists() and (tmp_path / "out dir" / "plan.json").exists()
    assert "Wrote" in page.status.text() and page.isComplete()


def test_write_into_an_unwritable_place_is_a_message(window, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    window.write_page.folder.setText(str(blocker / "sub"))
    assert not window.write_page.write()
    assert "cannot write" in window.write_page.status.text()


def test_undo_and_redo_an_edit(window, qtbot):
    before = window.doc.plan
    window.start_page.gpus.setText("2x8xH100-80GB")
    window.start_page.gpus.editingFinished.emit()
    assert window.doc.plan.hardware.nnodes == 2 and window.windowTitle().endswith("*")
    qtbot.keyClick(window, "z", modifier=Qt.ControlModifier)
    assert window.doc.plan == before
    window.doc.undo_stack.redo()
    assert window.doc.plan.hardware.nnodes == 2


def test_a_crashed_session_is_offered_back(qtbot, tmp_path, monkeypatch):
    from wizard.adapters.session_store import load_session, session_path

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    first = WizardWindow(restore=False)
    qtbot.addWidget(first)
    first.start_page.gpus.setText("4xA100-80GB")
    first.start_page.gpus.editingFinished.emit()
    qtbot.waitUntil(lambda: (load_session() or {}).get("gpus") == "4xA100-80GB", timeout=3000)
    first.hide()  # the process "crashes": no clean close, the autosave stays
    assert session_path().exists()
    second = WizardWindow(restore=True)
    qtbot.addWidget(second)
    assert second.doc.plan.hardware.n_gpus_per_node == 4
    assert second.start_page.gpus.text() == "4xA100-80GB"
    second.close()
    assert not session_path().exists()  # a clean close removes it


def test_the_worst_finding_is_explained_in_full(window):
    window.start_page.import_file(str(SCRIPTS / "examples__ppo_trainer__run_deepseek7b_llm.sh"))
    window.next()
    details = window.review_page.findings.details.text()
    assert "critic.fsdp.param_offload" in details and "Fix:" in details
    assert window.review_page.findings.fix_button.isEnabled()
