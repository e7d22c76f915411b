"""The reward bench panel: real verl scorer and real user reward files, run in a real subprocess of this Python."""

import sys

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from wizard.gui.document import PlanDocument  # noqa: E402
from wizard.gui.tools.reward_bench import RewardBenchDialog, RewardBenchPanel, split_responses  # noqa: E402

BENCH_S = 240_000  # ms to wait for a bench: loading verl's scorers in a fresh Python is slow on a busy machine


def write_gsm8k(path, answers):
    """A parquet in verl's GSM8K format (as examples/data_preprocess/gsm8k.py writes it)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from wizard.adapters.files.dataset_convert import verl_schema

    rows = [{"data_source": "openai/gsm8k", "ability": "math",
             "prompt": [{"role": "user", "content": f"Question {i}. Let's think step by step and output the final "
                                                    "answer after \"####\"."}],
             "reward_model": {"style": "rule", "ground_truth": answer},
             "extra_info": {"index": i, "question": f"Question {i}", "answer": answer, "split": "train"}}
            for i, answer in enumerate(answers)]
    pq.write_table(pa.Table.from_pylist(rows, schema=verl_schema()), path)
    return str(path)


@pytest.fixture
def doc(qtbot, tmp_path):
    d = PlanDocument(autosave=False)
    plan = d.plan.model_copy(deep=True)
    plan.data.train_files = write_gsm8k(tmp_path / "gsm8k.parquet", ["72", "10", "5", "42", "18", "3"])
    d.set_plan(plan, text="train file")
    return d


@pytest.fixture
def panel(qtbot, doc):
    p = RewardBenchPanel(doc, lambda: sys.executable)
    qtbot.addWidget(p)
    p.show()
    return p


def cells(panel):
    t = panel.results.table
    return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())]


def run_and_wait(panel, qtbot):
    qtbot.mouseClick(panel.run_button, Qt.LeftButton)
    assert panel.runner.running and not panel.run_button.isEnabled()
    qtbot.waitUntil(lambda: not panel.runner.running, timeout=BENCH_S)


def use_function(panel, tmp_path, body, name="compute_score"):
    path = tmp_path / "my_reward.py"
    path.write_text(body)
    panel.set_function(str(path), name)
    return path


@pytest.mark.verl
def test_verl_gsm8k_scorer_gives_1_to_the_answer_and_0_to_a_wrong_one(panel, qtbot):
    assert panel.mode.currentData() == "builtin"  # the plan has no reward function of its own
    panel.pick.setCurrentIndex(panel.pick.findData("first"))
    panel.count.setValue(2)
    panel.responses.setPlainText("Natalia sold 48 + 24 = 72 clips.\n#### 72")
    run_and_wait(panel, qtbot)
    rows = cells(panel)
    score = {(r[0], r[2]): r[4] for r in rows}
    assert score[("0", "the answer in the scorer's format")] == "1.0"
    assert score[("0", "a wrong answer")] == "0.0"
    assert score[("0", "an empty response")] == "0.0"
    assert score[("0", "just the answer")] == "0.0"  # '72' without '#### ' is not extracted
    assert score[("0", "your text")] == "1.0" and score[("1", "your text")] == "0.0"  # 72 is row 0's answer only
    assert all(r[1] == "openai/gsm8k" for r in rows)
    verdict = panel.results.verdict.text()
    assert "verl's gsm8k scorer gives 1.0 to the right answer and 0.0 to a wrong one: it can teach" in verdict
    assert "'#### 72'" in verdict  # says the form the answer must take
    assert "from 0.0 to 1.0" in panel.results.summary.text()
    assert panel.results.histogram.isVisible() and not panel.results.traceback.isVisible()
    assert panel.doc.context_findings["reward"] == []


def test_a_reward_that_raises_shows_the_traceback_of_the_users_code(panel, qtbot, tmp_path):
    path = use_function(panel, tmp_path, (
        "def parse(text):\n"
        "    return float(text.split('####')[1])\n"
        "\n"
        "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
        "    return float(parse(solution_str) == float(ground_truth))\n"))
    assert panel.doc.plan.reward.custom_function_path == str(path)  # a plan edit
    assert panel.mode.currentData() == "custom"
    run_and_wait(panel, qtbot)
    assert "raised IndexError" in panel.results.verdict.text()
    box = panel.results.traceback
    assert box.isVisible() and box.isReadOnly()
    text = box.toPlainText()
    assert "my_reward.py" in text and "in parse" in text and "IndexError" in text
    assert "reward_probe" not in text  # only the user's frames
    assert box.textInteractionFlags() & Qt.TextSelectableByMouse
    assert "exception" in panel.results.flags.text()
    assert "error" in [r[4] for r in cells(panel)]
    # the findings panel hears about it until the function changes
    assert any(f.rule == "reward.exception" for f in panel.doc.findings)
    panel.doc.undo_stack.undo()  # the reward file edit is taken back
    assert panel.doc.plan.reward.custom_function_path is None
    assert not panel.doc.context_findings.get("reward")


def test_a_reward_that_returns_a_string_is_flagged_non_numeric(panel, qtbot, tmp_path):
    use_function(panel, tmp_path, (
        "def judge(data_source, solution_str, ground_truth, extra_info=None):\n"
        "    return 'correct' if ground_truth in solution_str else 'wrong'\n"), name="judge")
    panel.count.setValue(2)
    run_and_wait(panel, qtbot)
    assert "non-numeric" in panel.results.flags.text()
    assert "instead of a number" in panel.results.verdict.text()
    assert any(r[4].startswith("not a number: str 'correct'") for r in cells(panel))


def test_a_reward_file_that_does_not_load_is_one_line_not_a_traceback(panel, qtbot, tmp_path):
    use_function(panel, tmp_path, "def compute_score(data_source, solution_str\n")
    run_and_wait(panel, qtbot)
    text = panel.results.verdict.text()
    assert text.startswith("The bench could not run: SyntaxError") and "\n" not in text
    assert "my_reward.py" in text
    assert panel.run_button.isEnabled()


def test_cancel_gives_control_back_at_once(panel, qtbot, tmp_path):
    use_function(panel, tmp_path, (
        "import time\n"
        "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
        "    time.sleep(15)\n"
        "    return 1.0\n"))
    panel.timeout.setValue(20)
    qtbot.mouseClick(panel.run_button, Qt.LeftButton)
    assert panel.runner.running and panel.task_bar.cancel_button.isVisible()
    qtbot.waitUntil(lambda: bool(_probes()), timeout=20000)  # the scorer process is running
    qtbot.mouseClick(panel.task_bar.cancel_button, Qt.LeftButton)
    assert not panel.runner.running and panel.run_button.isEnabled()
    assert "Cancelled" in panel.results.verdict.text()
    qtbot.waitUntil(lambda: not _probes(), timeout=5000)  # and Cancel ended it, not its 20 s limit
    assert panel.runner.wait(10)  # the bench's work ended too: whatever it answered is queued
    QApplication.processEvents()
    assert panel.results.table.rowCount() == 0 and "Cancelled" in panel.results.verdict.text()  # and dropped


def _probes() -> list[int]:
    """pids of reward probes this test session started."""
    import os

    out = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if b"reward_probe.py" in fh.read():
                    out.append(int(pid))
        except OSError:
            pass
    return out


def test_the_dialog_hosts_the_panel_and_closing_it_gives_up_the_run(qtbot, doc, tmp_path):
    dlg = RewardBenchDialog(doc, lambda: sys.executable)
    qtbot.addWidget(dlg)
    dlg.show()
    use_function(dlg.panel, tmp_path, (
        "import time\n"
        "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
        "    time.sleep(5)\n"
        "    return 1.0\n"))
    dlg.panel.timeout.setValue(8)
    dlg.panel.run()
    assert dlg.panel.runner.running
    dlg.reject()
    assert not dlg.isVisible() and not dlg.panel.runner.running and dlg.panel.run_button.isEnabled()


def test_without_a_training_file_the_bench_says_so(qtbot):
    doc = PlanDocument(autosave=False)
    panel = RewardBenchPanel(doc, lambda: sys.executable)
    qtbot.addWidget(panel)
    panel.run()
    assert not panel.runner.running
    assert "Set a training file first" in panel.results.verdict.text()


def test_own_responses_are_separated_by_a_dashed_line():
    assert split_responses("a\n#### 1\n---\nb\n\n---\n") == ["a\n#### 1", "b"]
