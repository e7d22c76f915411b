"""The Environment, Hardware and Data steps: real probes off the GUI thread, results shown, cancel."""

import sys

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QApplication, QLineEdit  # noqa: E402



def test_doctor_runs_in_the_background_and_reports_into_the_findings(window, qtbot):
    page = window.page("environment")
    window.go_to(page)
    page.python.setText(sys.executable)
    qtbot.mouseClick(page.check_button, Qt.LeftButton)
    assert not page.check_button.isEnabled() and page.runner.running
    # the window keeps answering while the probe runs: typing goes on
    field = window.page("data").forms[1].editors["data.train_batch_size"].widget
    qtbot.keyClicks(field, "8")
    assert field.text().endswith("8")
    qtbot.waitUntil(lambda: not page.runner.running, timeout=60000)
    names = [page.facts.item(r, 0).text() for r in range(page.facts.rowCount())]
    versions = {page.facts.item(r, 0).text(): page.facts.item(r, 1).text() for r in range(page.facts.rowCount())}
    assert "verl" in names and versions["verl"] == "0.9.1"
    assert "Probed" in page.result.text()
    # no GPU and no vLLM here: the environment is not ready, and the findings panel says why
    env = window.doc.context_findings["environment"]
    assert env and all(f in window.doc.findings for f in env)
    assert page.check_button.isEnabled()


def test_a_python_that_is_not_there_is_a_message(window, qtbot, tmp_path):
    page = window.page("environment")
    page.python.setText(str(tmp_path / "no" / "python"))
    page.run_doctor()
    qtbot.waitUntil(lambda: not page.runner.running, timeout=30000)
    assert "#c62828" in page.result.text()  # shown in red, in words
    assert "Traceback" not in page.result.text()
    # the window's words: the Python field, not the command line's --python option
    assert f"The Python {tmp_path / 'no' / 'python'}: no such file" in page.result.text()


def test_cancel_gives_control_back_at_once(window, qtbot):
    page = window.page("environment")
    page.python.setText(sys.executable)
    page.run_doctor()
    assert page.runner.running
    page.runner.cancel()
    assert not page.runner.running and page.check_button.isEnabled()
    assert page.runner.wait(60)  # the doctor's work ended: its answer is queued for the GUI thread
    QApplication.processEvents()
    assert "Probed" not in page.result.text()  # the late answer is dropped


def test_detect_this_machine_without_a_gpu_is_explained(window, qtbot, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    page = window.page("hardware")
    window.go_to(page)
    page.detect()
    qtbot.waitUntil(lambda: not page.runner.running, timeout=30000)
    assert "0 GPU(s)" in page.summary.text()
    assert "NVIDIA" in page.summary.text() or "driver" in page.summary.text().lower()
    assert not page.use_button.isEnabled()  # nothing to plan on


def test_a_cluster_spec_becomes_the_plan_shape_and_can_be_undone(window, qtbot, tmp_path):
    spec = tmp_path / "cluster.yaml"
    spec.write_text("nodes:\n  - {count: 2, gpus: 8, gpu: H100-80GB, memory_gib: 1536}\n")
    page = window.page("hardware")
    page.load_spec(str(spec))
    qtbot.waitUntil(lambda: not page.runner.running, timeout=30000)
    assert "16 GPU(s) on 2 node(s)" in page.summary.text()
    assert "1536 GiB of host RAM a node" in page.summary.text()  # what memory.host judges offload against
    assert page.topology.summary.isHidden()  # said once, by the step (issue 30: the count line came twice)
    assert page.gpus.rowCount() == 16 and page.use_button.isEnabled()
    qtbot.mouseClick(page.use_button, Qt.LeftButton)
    assert window.doc.plan.hardware.nnodes == 2 and window.doc.plan.hardware.n_gpus_per_node == 8
    assert window.doc.cluster is not None
    nodes = page.forms[0].editors["trainer.nnodes"].widget
    assert isinstance(nodes, QLineEdit) and nodes.text() == "2"
    window.doc.undo_stack.undo()
    assert window.doc.plan.hardware.nnodes == 1 and window.doc.cluster is None


def test_a_machine_detected_elsewhere_is_planned_with_its_real_memory(window, qtbot):
    """`verl-wizard detect --format json` saved on a lent H100 machine, opened on this GPU-less one."""
    from tests.conftest import ROOT

    page = window.page("hardware")
    page.load_spec(str(ROOT / "tests" / "data" / "gpu" / "h100-1gpu.detect.json"))
    qtbot.waitUntil(lambda: not page.runner.running, timeout=30000)
    assert "1 GPU(s) on 1 node(s)" in page.summary.text() and page.gpus.rowCount() == 1
    row = [page.gpus.item(0, c).text() for c in range(page.gpus.columnCount()) if page.gpus.item(0, c)]
    assert "NVIDIA H100 80GB HBM3" in " ".join(row) and any("79.6" in cell for cell in row)
    qtbot.mouseClick(page.use_button, Qt.LeftButton)
    assert str(window.doc.gpus) == "1xH100-80GB" and window.doc.cluster.source == "nvml"
    # that capture predates reading the host's RAM: none is said, and none is judged
    assert "host RAM" not in page.summary.text() and window.doc.cluster.nodes[0].memory_bytes is None


def test_a_broken_cluster_spec_is_one_line(window, qtbot, tmp_path):
    spec = tmp_path / "cluster.yaml"
    spec.write_text("nodes: [\n")
    page = window.page("hardware")
    page.load_spec(str(spec))
    qtbot.waitUntil(lambda: not page.runner.running, timeout=30000)
    assert "not valid YAML" in page.summary.text()


def test_the_link_matrix_of_a_real_capture(window, qtbot):
    from tests.conftest import ROOT
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
    from wizard.adapters.machine.nvidia_smi import discover_nvidia_smi_xml

    xml = (ROOT / "tests" / "data" / "gpu" / "h200-1gpu.nvidia-smi-q.xml").read_text()
    discovery = discover_nvidia_smi_xml(xml, None, load_gpu_catalogue())
    page = window.page("hardware")
    page.show_discovery(discovery)
    assert page.gpus.rowCount() == 1 and "H200" in page.gpus.item(0, 1).text()
    assert "139" in page.gpus.item(0, 2).text() or "140" in page.gpus.item(0, 2).text()
    assert page.matrix.isHidden()  # one GPU: no links to show


def test_data_preview_reads_rows_off_the_gui_thread(window, qtbot, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "train.parquet"
    rows = [{"data_source": "openai/gsm8k", "prompt": [{"role": "user", "content": f"What is {i}+{i}?"}],
             "reward_model": {"style": "rule", "ground_truth": str(2 * i)}, "extra_info": {"index": i}}
            for i in range(40)]
    pq.write_table(pa.Table.from_pylist(rows), path)
    plan = window.doc.plan.model_copy(deep=True)
    plan.data.train_files = str(path)
    window.doc.set_plan(plan)
    page = window.page("data")
    qtbot.mouseClick(page.preview_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: not page.runner.running, timeout=30000)
    assert "40 rows" in page.status.text() and page.table.rowCount() == 20
    headers = [page.table.horizontalHeaderItem(c).text() for c in range(page.table.columnCount())]
    assert "reward_model" in headers
    # the prompt column takes the room the others leave: it was cut to ~100 px beside empty space
    window.go_to(page)
    qtbot.waitUntil(lambda: page.table.isVisible())
    widths = {h: page.table.columnWidth(c) for c, h in enumerate(headers)}
    assert widths["prompt"] > 1.5 * max(w for h, w in widths.items() if h != "prompt")
    qtbot.mouseClick(page.check_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: not page.runner.running, timeout=30000)
    assert "40 rows" in page.status.text()


def test_the_model_step_shows_what_is_known_of_the_model_and_its_heads_rule_fires(window, qtbot):
    page = window.page("model")
    window.go_to(page)
    # the default preset names a catalogue model: its facts are shown
    cells = [page.facts.item(r, 1).text() for r in range(page.facts.rowCount())]
    assert not page.facts.isHidden() and any("0.49 B" in c for c in cells) and "14 / 2" in cells
    # 14 heads cannot be split over 4 rollout GPUs: the heads rule, with both numbers, in the panel
    plan = window.doc.plan.model_copy(deep=True)
    plan.rollout.tensor_model_parallel_size = 4
    plan.hardware.n_gpus_per_node = 4
    window.doc.set_plan(plan)
    messages = [f.message for f in window.doc.findings]
    assert any("14" in m and "4" in m and "head" in m for m in messages)


def test_the_data_step_opens_the_reward_bench_and_the_converter(window, qtbot):
    from wizard.gui.tools.convert_dialog import ConvertDialog
    from wizard.gui.tools.reward_bench import RewardBenchDialog

    page = window.page("data")
    qtbot.mouseClick(page.reward_button, Qt.LeftButton)
    assert isinstance(page._reward_dialog, RewardBenchDialog) and page._reward_dialog.isVisible()
    assert page.target_python() == window.page("environment").python.text().strip()
    page._reward_dialog.close()
    qtbot.mouseClick(page.convert_button, Qt.LeftButton)
    dialogs = [w for w in page.findChildren(ConvertDialog) if w.isVisible()]
    assert dialogs
    dialogs[0].close()


def test_checking_the_training_file_judges_the_plan_on_its_prompts(window, qtbot, tmp_path):
    """What `plan` prints as "on your data": after the check, the verdict at the file's own prompt lengths."""
    from tests.helpers.tiny_data import write_gsm8k_like
    from tests.helpers.tiny_model import write_tiny_model
    from wizard.core.hardware import parse_gpu_spec

    model = write_tiny_model(tmp_path / "model")
    data = write_gsm8k_like(tmp_path / "train.parquet", 300)
    plan = window.doc.plan.model_copy(deep=True)
    plan.data.train_files = str(data)
    plan.models.actor_path = str(model)
    window.doc.set_plan(plan)
    page = window.page("data")
    window.go_to(page)
    qtbot.mouseClick(page.check_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: "On this data" in page.status.text(), timeout=180_000)
    # no GPUs chosen: no memory estimate to judge with, and where to choose them
    assert "not judged" in page.status.text() and "Hardware step" in page.status.text()
    window.doc.set_gpus(parse_gpu_spec("1xH100-80GB"))
    qtbot.mouseClick(page.check_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: "On this data</b> (300 rows" in page.status.text(), timeout=180_000)
    text = page.status.text()
    assert "300 rows, checked in" in text  # the check's own lines stay above
    assert "prompts tokenized with" in text and "your prompts average " in text
    assert "At these prompts it fits with actor micro-batch up to " in text


def test_before_anything_is_detected_the_hardware_step_says_which_gpus_the_plan_is_checked_against(window):
    # a newcomer who typed 1xRTX4090-24GB on Start read "Nothing detected yet" and nothing of the GPUs they gave
    from wizard.core.hardware import parse_gpu_spec

    page = window.page("hardware")
    assert "the plan's own trainer.nnodes" in page.summary.text()
    window.doc.set_gpus(parse_gpu_spec("1xRTX4090-24GB"))
    assert "checked against the GPUs typed on the Start step: <b>1xRTX4090-24GB</b>" in page.summary.text()
