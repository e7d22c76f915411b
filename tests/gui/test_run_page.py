"""The Run page driven through real widgets: a real verl 0.9.1 run failing for want of a GPU (inside a
loopback-only namespace), Stop during startup, a recorded metric log printed by a real child process through
the same RunProcess path, the log view's search/filter/cap/follow, and the GPU monitor on recorded NVML answers.

The only stand-in is the target Python: a small script (a real process) that either prints recorded lines
or runs the real interpreter inside ``unshare``. No timing is asserted."""

import json
import os
import shlex
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

pytest.importorskip("PySide6")
pytest.importorskip("pyqtgraph")

from PySide6.QtWidgets import QMainWindow, QMessageBox  # noqa: E402

from tests.helpers.tiny_data import write_gsm8k_like  # noqa: E402
from tests.helpers.netns import LOOPBACK_RAY, UNSHARE, namespaces_work  # noqa: E402
from wizard.adapters.machine.gpu_sampler import GpuSampler, parse_sample  # noqa: E402
from wizard.adapters.processes.launcher import list_processes  # noqa: E402
from wizard.core.plan.convert import apply_overrides  # noqa: E402
from wizard.gui.document import PlanDocument  # noqa: E402
from wizard.gui.run.gpu_monitor import GpuMonitor  # noqa: E402
from wizard.gui.run.log_view import LogView  # noqa: E402
from wizard.gui.run.panel import RunPanel  # noqa: E402

pytestmark = [pytest.mark.gui, pytest.mark.skipif(not os.path.isdir("/proc"), reason="runs read /proc (Linux)")]
GPU_DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"
WAIT_MS = 540_000  # a real verl start on a 2-core machine takes minutes; the wait ends as soon as it is done


@pytest.fixture
def doc():
    d = PlanDocument(autosave=False)
    d.load_preset("grpo-1gpu-smoke")
    return d


@pytest.fixture
def panel(qtbot, doc):
    p = RunPanel(doc)
    qtbot.addWidget(p)
    p.resize(1200, 800)
    p.show()
    yield p
    p.shutdown()


def marked(token: str) -> list[int]:
    """Live processes whose environment holds ``token`` (every process of a run inherits it)."""
    out = []
    for pid, proc in list_processes().items():
        if proc.state == "Z":
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if token.encode() in fh.read():
                    out.append(pid)
        except OSError:
            pass
    return out


def stand_in(tmp_path: Path, code: str, token: str) -> Path:
    """A target Python that runs ``python -c code`` (whatever verl arguments it gets)."""
    path = tmp_path / f"python-{uuid.uuid4().hex[:6]}"
    path.write_text(f"#!/bin/sh\nexport WIZARD_TEST_TOKEN={token}\n"
                    f"exec {shlex.quote(sys.executable)} -c {shlex.quote(textwrap.dedent(code))}\n")
    path.chmod(0o755)
    return path


def wait_done(qtbot, panel, timeout=60_000):
    qtbot.waitUntil(lambda: not panel.is_running, timeout=timeout)
    return panel.result


# --- dry run and bad input ---------------------------------------------------------------------------------

def test_dry_run_shows_the_exact_command_and_environment_and_copies_it(panel, tmp_path, qapp):
    panel.folder.setText(str(tmp_path / "r"))
    panel.steps.setValue(2)
    panel.dry_button.click()
    text = panel.command.toPlainText()
    assert panel.tabs.currentWidget() is panel.command_tab
    for word in ("PYTHONUNBUFFERED=1", "RAY_USAGE_STATS_ENABLED=0", "RAY_DEDUP_LOGS=0",
                 f"VERL_FILE_LOGGER_PATH={tmp_path / 'r' / 'metrics.jsonl'}", f"{sys.executable} -m verl.trainer.main_ppo",
                 "trainer.total_training_steps=2", "'trainer.logger=[console,file]'",
                 "+ray_kwargs.ray_init._node_ip_address=127.0.0.1"):
        assert word in text
    panel.copy_button.click()
    copied = qapp.clipboard().text()
    assert copied.startswith("PYTHONUNBUFFERED=1 ") and "-m verl.trainer.main_ppo" in copied and "\n" not in copied
    assert not (tmp_path / "r").exists()  # a dry run writes nothing


def test_a_missing_target_python_is_one_line_and_nothing_starts(panel, tmp_path):
    panel.python.setText(str(tmp_path / "no-python"))
    assert panel.start() is False
    assert panel.status.text() == f"Target Python {tmp_path / 'no-python'}: no such file"
    assert not panel.is_running and not panel.stop_button.isEnabled()


def test_a_plan_with_errors_is_not_started_and_the_errors_show(panel, doc, tmp_path):
    doc.set_plan(apply_overrides(doc.plan, ["data.train_batch_size=4"]))
    panel.folder.setText(str(tmp_path / "r"))
    assert panel.start() is False
    assert "Not started" in panel.status.text()
    assert "Not started: the plan has errors" in panel.banner.failure_plain()
    assert not (tmp_path / "r").exists()


# --- a recorded run through a real child process ---------------------------------------------------------

RECORDED = """
    import contextlib, io, math, sys, time
    import numpy as np
    from verl.utils.logger.aggregate_logger import LocalLogger  # verl's own console logger renders the lines

    P = "\\x1b[36m(TaskRunnerV1 pid=466)\\x1b[0m "
    def out(text, err=False):
        print(text, file=sys.stderr if err else sys.stdout, flush=True)
    out("[validate_config] All configuration checks passed successfully!")
    out("2026-12-02 14:06:31,183\\tINFO worker.py:2029 -- Started a local Ray instance.", err=True)
    out(P + "INFO:2026-12-02 14:07:12,343:train and validate dataloader initialized, train dataset size: 32, "
        "val dataset size: 8", err=True)
    out(P + "INFO:2026-12-02 14:07:12,343:Total training steps: 5", err=True)
    out(P + "WARNING:2026-12-02 14:07:13,001:some prompts are longer than data.max_prompt_length", err=True)
    logger = LocalLogger()
    for step in range(1, 6):
        data = {"critic/score/mean": np.float64(0.0), "critic/rewards/mean": np.float64(0.0),
                "actor/kl_loss": np.float64(0.001 * step), "actor/pg_loss": np.float64(-0.02 / step),
                "actor/entropy": np.float32(1.2 - 0.1 * step), "actor/grad_norm": np.float64(math.nan if step == 3 else 0.4),
                "response_length/mean": np.float64(180.0 + step), "perf/throughput": np.float64(812.5),
                "timing_s/gen": np.float64(3.5), "timing_s/update_actor": np.float64(2.25), "training/epoch": np.int64(0)}
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            logger.log(data=data, step=step)
        out(P + buf.getvalue().rstrip("\\n"))
        sys.stdout.write(f"Training Progress: {step * 20}%|##| {step}/5 [00:0{step}<00:00, 1.00it/s]\\r")
        sys.stdout.flush()
        time.sleep(0.05)
    out(P + "'Final validation metrics: None'")
"""


@pytest.mark.verl
def test_a_recorded_run_fills_the_log_plots_progress_and_alarms(panel, tmp_path, qtbot):
    token = uuid.uuid4().hex
    panel.python.setText(str(stand_in(tmp_path, RECORDED, token)))
    panel.folder.setText(str(tmp_path / "r"))
    assert panel.start() and panel.is_running and not panel.start_button.isEnabled()
    result = wait_done(qtbot, panel)
    assert result.ok and result.exit_code == 0 and marked(token) == []
    assert panel.status.text() == "Finished OK (5 of 5 steps)."
    assert (panel.progress.value(), panel.progress.maximum()) == (5, 5)
    log = panel.log.plain_text()
    assert "(TaskRunnerV1 pid=466) INFO:2026-12-02 14:07:12,343:Total training steps: 5" in log
    assert "\x1b[" not in log and "step:5 - critic/score/mean:np.float64(0.0)" in log
    plots = panel.plots
    assert plots.curve_data("critic/score/mean") == ([1.0, 2.0, 3.0, 4.0, 5.0], [0.0] * 5)
    steps, norms = plots.curve_data("actor/grad_norm")
    assert steps == [1.0, 2.0, 3.0, 4.0, 5.0] and norms[2] != norms[2] and norms[3] == pytest.approx(0.4)
    assert {"critic/score/mean", "actor/kl_loss", "actor/pg_loss", "actor/entropy", "response_length/mean",
            "actor/grad_norm", "perf/throughput", "timing_s/gen", "timing_s/update_actor"} <= set(plots.plotted())
    assert "training/epoch" in plots.series_names() and "training/epoch" not in plots.plotted()
    plots.set_checked("perf/throughput", False)
    assert "perf/throughput" not in plots.plotted()
    alarms = panel.banner.alarms_plain()
    assert "critic/score/mean has been 0 for all 3 steps (1-3)" in alarms  # raised as soon as it is true
    assert "actor/grad_norm is NaN/inf at step(s) 3" in alarms
    assert panel.banner.failure_plain() == ""  # it finished: no failure verdict
    assert "step:5" in (tmp_path / "r" / "run.log").read_text()
    assert "verl.trainer.main_ppo" in (tmp_path / "r" / "command.sh").read_text()


def test_a_known_failure_shows_cause_fix_and_a_fix_button_that_edits_the_plan(panel, doc, tmp_path, qtbot):
    code = """
        import sys
        print("Traceback (most recent call last):", file=sys.stderr)
        print("ValueError: Total available GPUs 2 is less than total desired GPUs 4", file=sys.stderr)
        sys.exit(1)
    """
    panel.python.setText(str(stand_in(tmp_path, code, uuid.uuid4().hex)))
    panel.folder.setText(str(tmp_path / "r"))
    panel.start()
    result = wait_done(qtbot, panel)
    assert result.exit_code == 1 and [f.rule for f in result.findings] == ["triage.gpus_short"]
    assert panel.status.text().startswith("The run failed (exit code 1).")
    verdict = panel.banner.failure_plain()
    assert "Total available GPUs 2 < 4" in verdict and "Fix: Set trainer.n_gpus_per_node=2" in verdict
    assert "The log says: ValueError: Total available GPUs 2 is less than total desired GPUs 4" in verdict
    (button,) = [panel.banner.fix_buttons.itemAt(i).widget() for i in range(panel.banner.fix_buttons.count())
                 if panel.banner.fix_buttons.itemAt(i).widget()]
    button.click()
    assert doc.plan.hardware.n_gpus_per_node == 2


# --- Stop and closing --------------------------------------------------------------------------------------

SLEEPER = """
    import subprocess, sys, time
    child = subprocess.Popen([sys.executable, "-c", "import os, time; os.setsid(); time.sleep(3600)"])
    print("started a helper", child.pid, flush=True)
    time.sleep(3600)
"""


def test_closing_the_window_during_a_run_asks_then_stops_everything(qtbot, doc, tmp_path, monkeypatch):
    token = uuid.uuid4().hex
    window = QMainWindow()
    qtbot.addWidget(window)
    panel = RunPanel(doc)
    window.setCentralWidget(panel)
    window.show()
    panel.python.setText(str(stand_in(tmp_path, SLEEPER, token)))
    panel.folder.setText(str(tmp_path / "r"))
    panel.start()
    qtbot.waitUntil(lambda: "started a helper" in panel.log.plain_text(), timeout=30_000)
    qtbot.waitUntil(lambda: len(marked(token)) >= 2, timeout=30_000)
    asked = []
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[2]) or QMessageBox.No)
    assert window.close() is False and window.isVisible() and panel.is_running
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: asked.append(a[2]) or QMessageBox.Yes)
    window.close()
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=60_000)
    assert len(asked) == 2 and "A run is still going" in asked[0]
    assert panel.result.stopped and panel.result.left == [] and marked(token) == []
    assert panel.status.text().startswith("Stopped by you: ") and "nothing left running" in panel.status.text()


# --- the real thing: verl 0.9.1 on this GPU-less machine, Ray on loopback only ------------------------------

def isolated_python(tmp_path: Path, token: str) -> Path:
    """The real interpreter inside a loopback-only network namespace with its own /tmp/ray. Bash stays the
    namespace's first process, so Stop's SIGTERM reaches Python (a namespace's init ignores it)."""
    inner = (LOOPBACK_RAY + " && "
             '"$0" "$@"; exit $?')
    path = tmp_path / "python-isolated"
    path.write_text("#!/bin/bash\n"
                    f"export WIZARD_TEST_TOKEN={token} RAY_NODE_IP_ADDRESS=127.0.0.1 RAY_USAGE_STATS_ENABLED=0\n"
                    "unset RAY_ADDRESS\n"
                    f"exec {shlex.join(UNSHARE)} bash -c {shlex.quote(inner)} {shlex.quote(sys.executable)} \"$@\"\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def real_run(panel, doc, tmp_path, tiny_model):  # for tests marked verl
    why = namespaces_work()
    if why:
        pytest.skip(f"{why}; a real run starts Ray and never runs outside a loopback-only namespace")
    train = write_gsm8k_like(tmp_path / "train.parquet", 32)
    val = write_gsm8k_like(tmp_path / "test.parquet", 8)
    doc.set_plan(apply_overrides(doc.plan, [f"actor_rollout_ref.model.path={tiny_model}", f"data.train_files={train}",
                                            f"data.val_files={val}", "ray_kwargs.ray_init.num_cpus=13"]))
    token = uuid.uuid4().hex
    panel.python.setText(str(isolated_python(tmp_path, token)))
    panel.folder.setText(str(tmp_path / "run"))
    panel.steps.setValue(2)
    return panel, token


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.verl
def test_a_real_verl_run_fails_for_want_of_a_gpu_and_the_page_says_why(real_run, qtbot, tmp_path):
    panel, token = real_run
    assert panel.start()
    result = wait_done(qtbot, panel, WAIT_MS)
    log = panel.log.plain_text()
    assert result.exit_code == 1 and not result.stopped, log[-3000:]
    assert marked(token) == [] and result.left == []  # nothing of the run (driver, Ray, workers) outlives it
    # the log view filled as the run went, colour and all handled
    assert "[validate_config] All configuration checks passed successfully!" in log
    assert "Started a local Ray instance" in log and "(TaskRunnerV1 pid=" in log and "\x1b[" not in log
    assert panel.status.total == 2  # "Total training steps: 2" reached the progress bar
    # the verdict: cause, fix, and the line it was read from
    verdict = panel.banner.failure_plain()
    assert "The run failed" in verdict and "Total available GPUs 0 < 1" in verdict
    assert "Fix: Run on a machine with 1 GPU(s)" in verdict and "trainer.n_gpus_per_node" in verdict
    assert "The log says: ValueError: Total available GPUs 0 is less than total desired GPUs 1" in verdict
    assert panel.status.text().startswith("The run failed (exit code 1).")
    panel.log.set_filter("Errors only")
    assert any("Total available GPUs 0 is less than total desired GPUs 1" in line for line in panel.log.shown_lines())
    assert "HF_HUB_OFFLINE=1" in (tmp_path / "run" / "command.sh").read_text()


@pytest.mark.ray
@pytest.mark.verl
def test_stop_during_startup_leaves_nothing_running(real_run, qtbot):
    panel, token = real_run
    assert panel.start()
    qtbot.waitUntil(lambda: "Started a local Ray instance" in panel.log.plain_text(), timeout=WAIT_MS)
    assert len(marked(token)) >= 3  # the namespace, verl's driver and Ray's own processes are up
    panel.stop_button.click()
    assert panel.status.text().startswith("Stopping")
    result = wait_done(qtbot, panel, 120_000)
    assert result.stopped and result.left == [] and result.ended
    assert marked(token) == []
    assert panel.status.text().startswith("Stopped by you: ") and panel.banner.failure_plain() == ""
    assert panel.start_button.isEnabled() and not panel.stop_button.isEnabled()


# --- the log view ----------------------------------------------------------------------------------------------

def lines(n: int) -> list[str]:
    out = []
    for i in range(n):
        if i % 10 == 3:
            out.append(f"\x1b[36m(WorkerDict pid=77)\x1b[0m WARNING:2026-12-02 14:07:12,343:slow batch {i}")
        elif i % 10 == 7:
            out.append(f"ValueError: bad thing {i}")
        else:
            out.append(f"\x1b[36m(TaskRunnerV1 pid=466)\x1b[0m chatter {i}")
    return out


def test_log_view_keeps_the_last_lines_and_says_how_many_left(qtbot):
    view = LogView(cap=50)
    qtbot.addWidget(view)
    view.append_raw(lines(120))
    assert view.line_count == 50 and view.plain_text().splitlines()[0] == "(TaskRunnerV1 pid=466) chatter 70"
    assert view.dropped == 70 and "70 earlier lines left this view" in view.status.text()


def test_log_view_filters_by_level_and_searches_both_ways(qtbot):
    view = LogView()
    qtbot.addWidget(view)
    view.show()
    view.append_raw(lines(40))
    view.set_filter("Errors only")
    assert view.shown_lines() == [f"ValueError: bad thing {i}" for i in (7, 17, 27, 37)]
    view.set_filter("Warnings and errors")
    assert len(view.shown_lines()) == 8 and "(WorkerDict pid=77) WARNING" in view.shown_lines()[0]
    view.set_filter("All lines")
    view.search.setText("BAD THING")
    assert view.match_label.text() == "4 lines match"
    assert view.find_next() and view.current_line() == "ValueError: bad thing 7"
    assert view.find_next() and view.current_line() == "ValueError: bad thing 17"
    assert view.find_previous() and view.current_line() == "ValueError: bad thing 7"
    assert view.find_previous() and view.current_line() == "ValueError: bad thing 37"  # wraps around
    assert not view.follow.isChecked()  # a found line stays in view while lines keep arriving
    view.search.setText("nowhere")
    assert not view.find_next() and view.match_label.text() == "not found"


def test_log_view_follows_the_end_until_the_user_scrolls_up(qtbot):
    view = LogView()
    qtbot.addWidget(view)
    view.resize(600, 300)
    view.show()
    view.append_raw(lines(500))
    view.flush()
    bar = view.table.verticalScrollBar()
    assert view.follow.isChecked() and bar.value() == bar.maximum() > 0
    bar.setValue(0)  # the user scrolls to the top
    assert not view.follow.isChecked()
    view.append_raw(lines(100))
    view.flush()
    assert bar.value() == 0
    view.follow.setChecked(True)
    assert bar.value() == bar.maximum()


# --- the GPU monitor -------------------------------------------------------------------------------------------

def test_gpu_monitor_without_a_gpu_says_so(qtbot):
    if GpuSampler().sample().get("devices"):
        pytest.skip("this machine has an NVIDIA GPU")
    monitor = GpuMonitor(interval_ms=200)
    qtbot.addWidget(monitor)
    monitor.start()
    qtbot.waitUntil(lambda: monitor.snapshot is not None, timeout=20_000)
    monitor.stop()
    assert monitor.state.text().startswith("No NVIDIA GPU visible here (NVML: ")
    assert monitor.row_texts() == [] and monitor.busy() is None
    assert "Total available GPUs 0 is less than total desired GPUs" in monitor.hint.text()


# capture_monitor.py rows from a real H200 (shared/fixtures/gpu/h200-busy-monitor.nvml.jsonl rows 0, 60, 158)
MONITOR_ROWS = [
    '{"t": 0.01, "mem_total": 150754820096, "mem_used": 644939776, "mem_free": 150109880320, "util_gpu": 0, '
    '"util_mem": 0, "sm_clock": 345, "power_mw": 79508, "temp": 34, "procs": []}',
    '{"t": 6.1, "mem_total": 150754820096, "mem_used": 44614680576, "mem_free": 106140139520, "util_gpu": 100, '
    '"util_mem": 30, "sm_clock": 1740, "power_mw": 562499, "temp": 50, "procs": [{"pid": 486, "used": 43960500224}]}',
    '{"t": 15.97, "mem_total": 150754820096, "mem_used": 644939776, "mem_free": 150109880320, "util_gpu": 0, '
    '"util_mem": 0, "sm_clock": 360, "power_mw": 80295, "temp": 34, "procs": []}',
]


def test_gpu_monitor_shows_memory_processes_and_utilisation_from_recorded_answers(qtbot):
    monitor = GpuMonitor()
    qtbot.addWidget(monitor)
    monitor.show_snapshot(parse_sample(json.loads((GPU_DATA / "h200-busy.raw-nvml.json").read_text())))
    (row,) = monitor.row_texts()
    assert "GPU 0</b> · NVIDIA H200" in row and "Memory: 11.1 of 140.4 GiB (peak 11.1)" in row
    assert "Utilisation: not reported" in row and "Compute processes (pid): 526" in row
    assert monitor._rows[0].memory.value() == 8 and not monitor._rows[0].util.isEnabled()
    assert monitor.state.text().startswith("1 GPU on this machine") and monitor.busy() is None
    assert monitor.hint.isHidden()
    for raw in MONITOR_ROWS[:2]:
        monitor.show_snapshot(parse_sample(json.loads(raw), name="NVIDIA H200"))
    assert "Utilisation: 100%" in monitor.row_texts()[0] and monitor.busy() is True
    monitor.show_snapshot(parse_sample(json.loads(MONITOR_ROWS[2]), name="NVIDIA H200"))
    (row,) = monitor.row_texts()
    assert "Memory: 0.6 of 140.4 GiB (peak 41.6)" in row and "No compute process" in row
    assert monitor.busy() is False


# GpuSampler.sample() on a lent one-H200 machine (driver as in NOTES.md), 2026-12-02: idle, then while a torch
# process held 20 GiB and ran bf16 matmuls (recorded by this project's sampler; copies in /tmp/run-shots/gpu-captures)
SAMPLER_ROWS = [
    '{"devices": [{"name": "NVIDIA H200", "memory": {"total": 150754820096, "used": 644939776}, '
    '"util": {"gpu": 0, "memory": 0}, "procs": []}]}',
    '{"devices": [{"name": "NVIDIA H200", "memory": {"total": 150754820096, "used": 23139844096}, '
    '"util": {"gpu": 100, "memory": 30}, "procs": [{"pid": 496}]}]}',
]


def test_gpu_monitor_reads_the_samplers_own_answers_from_a_real_h200(qtbot):
    monitor = GpuMonitor()
    qtbot.addWidget(monitor)
    monitor.show_snapshot(parse_sample(json.loads(SAMPLER_ROWS[0])))
    assert monitor.busy() is False and "Utilisation: 0%" in monitor.row_texts()[0]
    monitor.show_snapshot(parse_sample(json.loads(SAMPLER_ROWS[1])))
    (row,) = monitor.row_texts()
    assert "Memory: 21.6 of 140.4 GiB (peak 21.6)" in row and "Utilisation: 100%" in row
    assert "Compute processes (pid): 496" in row and monitor.busy() is True
    assert monitor._rows[0].memory.value() == 15 and monitor._rows[0].util.value() == 100


def test_without_flash_attn_in_the_probed_python_the_run_adds_sdpa_and_says_so(panel, tmp_path):
    """The Environment step found no flash-attn in the run's Python: the smoke run adds the SDPA override itself
    (verl would fail at model load) and the dry run says so first."""
    import sys

    from wizard.core.check.rules.context import EnvironmentFacts

    panel.python.setText(sys.executable)
    panel.folder.setText(str(tmp_path / "r"))
    panel.environment = EnvironmentFacts(flash_attn=False, python=sys.executable)
    prepared = panel.dry_run()
    assert "+actor_rollout_ref.model.override_config.attn_implementation=sdpa" in prepared.command.args
    assert panel.command.toPlainText().startswith("# flash-attn does not import in the run's Python")
    panel.environment = EnvironmentFacts(flash_attn=True, python=sys.executable)
    assert "+actor_rollout_ref.model.override_config.attn_implementation=sdpa" not in panel.prepare().command.args
