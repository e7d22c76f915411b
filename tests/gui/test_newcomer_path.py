"""A newcomer's whole path through the window, and a real crash of the process after edits."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from tests.conftest import ROOT  # noqa: E402
from wizard.gui.app import WizardWindow  # noqa: E402


def test_start_accept_hardware_pick_preset_break_fix_undo_write(qtbot, tmp_path):
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
    from wizard.adapters.machine.nvidia_smi import discover_nvidia_smi_xml

    w = WizardWindow(restore=False)
    w.ask_save = lambda: "discard"
    qtbot.addWidget(w)
    w.show()
    # the smoke preset is where a newcomer starts
    assert w.start_page.presets.currentItem().data(Qt.UserRole) == "grpo-1gpu-smoke"
    # accept the detected hardware (this machine has no GPU: the H200 capture stands in for NVML's answer)
    xml = (ROOT / "tests" / "data" / "gpu" / "h200-1gpu.nvidia-smi-q.xml").read_text()
    w.go_to(w.page("hardware"))
    w.page("hardware").show_discovery(discover_nvidia_smi_xml(xml, None, load_gpu_catalogue()))
    qtbot.mouseClick(w.page("hardware").use_button, Qt.LeftButton)
    assert w.doc.cluster is not None and w.doc.plan.hardware.n_gpus_per_node == 1
    # a batch size verl refuses: the finding says so, with its fix (4 prompts: smaller than a mini-batch of 8; after
    # the fix, 4 x 4 responses still split into the preset's micro batches, which 3 x 4 would not: batch.micro_split)
    w.go_to(w.page("data"))
    field = w.page("data").forms[1].editors["data.train_batch_size"].widget
    field.setFocus()
    field.selectAll()
    qtbot.keyClicks(field, "4")
    qtbot.keyClick(field, Qt.Key_Return)
    assert w.doc.plan.data.train_batch_size == 4
    broken = [f for f in w.doc.findings if f.severity.value == "error"]
    assert broken and any("train_batch_size (4)" in f.message for f in broken)
    assert "✖" in w.steps.item(w.pages.index(w.page("data"))).text() or "✖" in w.steps.item(
        w.pages.index(w.page("rollout"))).text()
    # apply its fix
    assert w.findings.select_first_fixable()
    qtbot.mouseClick(w.findings.fix_button, Qt.LeftButton)
    assert w.doc.result.ok
    fixed = w.doc.plan
    # undo takes the fix back, redo puts it again (the keys go to the active window)
    w.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is w)
    qtbot.keyClick(w, "z", modifier=Qt.ControlModifier)
    assert not w.doc.result.ok
    qtbot.keyClick(w, "z", modifier=Qt.ControlModifier | Qt.ShiftModifier)
    assert w.doc.plan == fixed and w.doc.result.ok
    # write the files
    w.go_to(w.page("write"))
    w.page("write").folder.setText(str(tmp_path / "gui out"))
    qtbot.mouseClick(w.page("write").write_button, Qt.LeftButton)
    written = (tmp_path / "gui out" / "run.sh").read_text()
    # the same plan through the CLI gives the same run.sh
    plan_file = tmp_path / "gui out" / "plan.json"
    from wizard.core.plan.emit import render_files
    from wizard.adapters.files.sources import load_source

    assert render_files(load_source(str(plan_file)).to_plan())[0]["run.sh"] == written
    sets = [o for o in _overrides_from(written) if o.split("=")[0] in (
        "data.train_batch_size", "actor_rollout_ref.actor.ppo_mini_batch_size", "trainer.n_gpus_per_node")]
    out = tmp_path / "cli out"
    proc = subprocess.run([sys.executable, "-m", "wizard", "generate", "--preset", "grpo-1gpu-smoke", "--gpus",
                           "1xH200-141GB", "--out", str(out)] + [a for s in sets for a in ("--set", s)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert _overrides_from((out / "run.sh").read_text()) == _overrides_from(written)


def _overrides_from(run_sh: str) -> list[str]:
    from wizard.core.scripts.reader import read_launch_script

    return read_launch_script(run_sh).args


CHILD = textwrap.dedent("""
    import os, sys, time
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtWidgets import QApplication
    app = QApplication([])
    from wizard.gui.gc_guard import collect_on_the_gui_thread
    collect_on_the_gui_thread(app)
    from wizard.gui.app import WizardWindow
    from wizard.adapters.files.session_store import load_session
    w = WizardWindow(restore=False)
    w.show()
    plan = w.doc.plan.model_copy(deep=True)
    plan.data.train_batch_size = 48
    plan.trainer.experiment_name = "before the crash"
    w.doc.set_plan(plan, text="edits")
    w.doc.set_response_tokens(300)
    deadline = time.time() + 20
    while time.time() < deadline and (load_session() or {}).get("response_tokens") != 300:
        app.processEvents()
        time.sleep(0.05)
    print("saved", flush=True)
    time.sleep(60)  # killed before this ends
""")


def test_killed_after_edits_the_next_start_offers_them_back(qtbot, tmp_path):
    env = dict(os.environ, XDG_STATE_HOME=os.environ["XDG_STATE_HOME"], PYTHONPATH=str(ROOT))
    child = subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "saved"
    finally:
        child.send_signal(signal.SIGKILL)  # no clean close: like a crash or a power cut
        child.wait(timeout=30)
    w = WizardWindow(restore=True)
    w.ask_save = lambda: "discard"
    qtbot.addWidget(w)
    assert w.doc.plan.data.train_batch_size == 48
    assert w.doc.plan.trainer.experiment_name == "before the crash"
    assert w.doc.response_tokens == 300  # the step time's assumption comes back with the plan
    assert w.windowTitle().endswith("*")  # recovered edits are not saved anywhere yet
    QApplication.processEvents()
