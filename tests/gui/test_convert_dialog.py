"""Convert a file to verl's format from the GUI: real files, a real preview, a real atomic write, an undoable plan edit."""

import json

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402

from wizard.gui.tools.convert_dialog import ConvertDialog, default_output  # noqa: E402
from wizard.gui.document import PlanDocument  # noqa: E402

READ_MS = 30_000

QUESTIONS = [
    {"id": 1, "question": "Natalia sold 48 clips in April and half as many in May. How many in all?", "answer": "72"},
    {"id": 2, "question": "Weng earns $12 an hour. How much for 50 minutes?", "answer": "10"},
    {"id": 3, "question": "A robe takes 2 bolts of blue fiber and half that of white. How many bolts?", "answer": "3"},
    {"id": 4, "question": "", "answer": "5"},
]


@pytest.fixture
def jsonl(tmp_path):
    path = tmp_path / "my questions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in QUESTIONS))
    return path


@pytest.fixture
def doc(qtbot):
    d = PlanDocument(autosave=False)
    plan = d.plan.model_copy(deep=True)
    plan.data.train_files = "/data/old.parquet"
    d.set_plan(plan, text="old train file")
    return d


@pytest.fixture
def dialog(qtbot, doc, jsonl):
    dlg = ConvertDialog(doc, path=str(jsonl))
    qtbot.addWidget(dlg)
    dlg.show()
    qtbot.waitUntil(lambda: dlg.table.rowCount() == 3 and dlg.write_button.isEnabled(), timeout=READ_MS)
    return dlg


def preview_cell(dialog, row, col):
    return dialog.table.item(row, col).text()


def test_jsonl_to_verl_parquet_then_train_files_and_undo(dialog, doc, qtbot, jsonl):
    # the columns are guessed from their names, and the first rows are shown before anything is written
    assert dialog.question.currentText() == "question" and dialog.answer.currentText() == "answer"
    assert preview_cell(dialog, 0, 0).startswith("[user] Natalia sold 48 clips")
    assert preview_cell(dialog, 0, 1) == "72"
    out = default_output(str(jsonl))
    assert dialog.output.text() == out
    assert not (jsonl.parent / "my questions.verl.parquet").exists()
    assert "no built-in scorer" in dialog.findings.text()  # data_source 'custom' needs a reward function
    # template, system prompt and data_source change the preview live
    dialog.system.setText("You are a careful maths tutor.")
    dialog.template.setText('{question} Let\'s think step by step and output the final answer after "####".')
    dialog.data_source.setCurrentText("openai/gsm8k")
    qtbot.waitUntil(lambda: dialog.write_button.isEnabled()
                    and preview_cell(dialog, 0, 2) == "openai/gsm8k", timeout=READ_MS)
    prompt = preview_cell(dialog, 0, 0)
    assert prompt.startswith("[system] You are a careful maths tutor.\n[user] Natalia")
    assert prompt.endswith('after "####".')
    assert dialog.findings.text() == "data_source 'openai/gsm8k' is scored by verl's gsm8k scorer."
    qtbot.mouseClick(dialog.write_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: dialog.use_button.isVisible(), timeout=READ_MS)
    assert "Wrote 3 rows" in dialog.result.text() and "1 rows had an empty question" in dialog.result.text()

    import pyarrow.parquet as pq

    table = pq.read_table(out)
    assert table.column_names == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    rows = table.to_pylist()
    assert [r["reward_model"]["ground_truth"] for r in rows] == ["72", "10", "3"]
    assert rows[0]["prompt"][0] == {"role": "system", "content": "You are a careful maths tutor."}
    assert rows[0]["prompt"][1]["role"] == "user" and rows[0]["data_source"] == "openai/gsm8k"
    assert not [p for p in jsonl.parent.iterdir() if p.name.endswith(".tmp")]  # the temp file is gone

    qtbot.mouseClick(dialog.use_button, Qt.LeftButton)
    assert doc.plan.data.train_files == out
    assert not dialog.use_button.isVisible()
    doc.undo_stack.undo()
    assert doc.plan.data.train_files == "/data/old.parquet"


def test_a_template_without_the_question_is_refused_before_writing(dialog, qtbot):
    dialog.template.setText("Answer this:")
    qtbot.waitUntil(lambda: "must contain {question}" in dialog.status.text(), timeout=READ_MS)
    assert "The template must contain {question}" in dialog.status.text()
    assert not dialog.write_button.isEnabled() and dialog.table.rowCount() == 0


def test_writing_over_a_file_keeps_the_old_one(dialog, qtbot, tmp_path):
    out = tmp_path / "train.parquet"
    out.write_bytes(b"an older file")
    dialog.output.setText(str(out))
    qtbot.mouseClick(dialog.write_button, Qt.LeftButton)
    qtbot.waitUntil(lambda: "Wrote" in dialog.result.text(), timeout=READ_MS)
    assert "is kept as" in dialog.result.text()
    assert [p.read_bytes() for p in tmp_path.glob("train.parquet.*.bak")] == [b"an older file"]


def test_an_unreadable_file_is_one_line(qtbot, doc, tmp_path):
    bad = tmp_path / "broken.jsonl"
    bad.write_text('{"question": "q", "answer": "a"}\nnot json\n')
    dlg = ConvertDialog(doc, path=str(bad))
    qtbot.addWidget(dlg)
    qtbot.waitUntil(lambda: "line 2 is not valid JSON" in dlg.status.text(), timeout=READ_MS)
    assert "Traceback" not in dlg.status.text() and not dlg.write_button.isEnabled()
