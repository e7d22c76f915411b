"""verl-wizard data check|preview|convert|reward: exit codes, JSON shapes, one-line errors, never a traceback."""

import json
import os
import sys

import pyarrow.parquet as pq
import pytest

from tests.adapters.test_dataset import verl_rows, write_jsonl, write_parquet, write_tokenizer
from tests.helpers.cli import run_cli


def run(*args):
    return run_cli("data", *args, env={"HF_HUB_OFFLINE": "1"})


def assert_one_line_error(proc, words):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr


def test_check_a_good_file_exits_0(tmp_path):
    proc = run("check", write_parquet(tmp_path / "train.parquet", verl_rows(32)), "--batch-size", 16)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "32 rows" in proc.stdout and "openai/gsm8k" in proc.stdout and "gsm8k" in proc.stdout
    assert "OK" in proc.stdout


def test_check_json_names_rows_and_columns(tmp_path):
    rows = verl_rows(8)
    rows[5]["data_source"] = "my/data"
    for r in rows:
        r["reward_model"] = {"style": "rule"}
    proc = run("check", write_jsonl(tmp_path / "train.jsonl", rows), "--batch-size", 16, "--format", "json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ok"] is False and doc["rows"] == 8
    by = {f["rule"]: f for f in doc["findings"]}
    assert "rows 0, 1, 2, 3, 4 and 3 more" in by["data.missing_value.ground_truth"]["message"]
    assert "'my/data' (row 5)" in by["data.unknown_data_source"]["message"]
    assert "data.train_batch_size=16" in by["data.fewer_rows_than_batch"]["message"]
    assert set(by["data.fewer_rows_than_batch"]) >= {"rule", "severity", "stage", "keys", "message", "fix"}
    assert {"data_source": "my/data", "rows": 1, "scorer": None} in doc["data_sources"]


def test_check_with_a_custom_function_accepts_any_data_source(tmp_path):
    fn = tmp_path / "r.py"
    fn.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 0.0\n")
    proc = run("check", write_parquet(tmp_path / "t.parquet", verl_rows(4, source="mine")), "--function", fn)
    assert proc.returncode == 0, proc.stdout


def test_check_prompt_lengths_with_a_local_tokenizer(tmp_path):
    path = write_parquet(tmp_path / "t.parquet", verl_rows(3) + verl_rows(1, words=100))
    proc = run("check", path, "--model", write_tokenizer(tmp_path / "m"), "--max-prompt-length", 50)
    assert proc.returncode == 0, proc.stdout + proc.stderr  # a warning, not an error
    assert "1 prompts (row 3) are longer than data.max_prompt_length=50" in proc.stdout
    assert "data.filter_overlong_prompts=True" in proc.stdout
    assert "prompt tokens (chat template, 4 prompts): min 9" in proc.stdout


def test_preview_shows_schema_and_rows(tmp_path):
    proc = run("preview", write_parquet(tmp_path / "t.parquet", verl_rows(100)), "--rows", 2)
    assert proc.returncode == 0, proc.stderr
    assert "100 rows" in proc.stdout and "row 1:" in proc.stdout and "row 2:" not in proc.stdout
    assert "reward_model: struct<style: string, ground_truth: string>" in proc.stdout
    doc = json.loads(run("preview", tmp_path / "t.parquet", "--format", "json").stdout)
    assert doc["num_rows"] == 100 and len(doc["rows"]) == 5


def test_convert_preview_then_write(tmp_path):
    src = write_jsonl(tmp_path / "qa.jsonl", [{"question": f"What is {i}+{i}?", "answer": 2 * i} for i in range(5)])
    out = tmp_path / "train.parquet"
    common = ["--out", out, "--question", "question", "--answer", "answer", "--data-source", "openai/gsm8k",
              "--template", '{question} Output the final answer after "####".', "--system", "You are a tutor."]
    proc = run("convert", src, *common, "--preview")
    assert proc.returncode == 0, proc.stderr
    assert "Nothing written" in proc.stdout and "What is 0+0? Output the final answer" in proc.stdout
    assert not out.exists()
    proc = run("convert", src, *common, "--format", "json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 0 and doc["written"] == 5 and doc["out"] == str(out)
    assert pq.read_table(out).column("prompt").to_pylist()[0][0] == {"role": "system", "content": "You are a tutor."}
    again = json.loads(run("convert", src, *common, "--format", "json").stdout)
    assert again["backup"] and os.path.exists(again["backup"])
    assert run("check", out, "--batch-size", 5).returncode == 0


def test_a_datasets_control_characters_are_shown_not_written_raw(tmp_path):
    hostile = "\x1b[2J\x1b]0;pwned\x07 \x9b31m"  # ESC sequences, a bell, an 8-bit CSI
    rows = verl_rows(2)
    rows[0]["prompt"][0]["content"] += hostile
    rows[0]["data_source"] = "gsm8k\x1b[31m"
    src = write_jsonl(tmp_path / "t.jsonl", rows)
    qa = write_jsonl(tmp_path / "qa.jsonl", [{"question": "What is 1+1?" + hostile, "answer": 2}])
    outputs = [run("preview", src).stdout, run("check", src).stdout,
               run("convert", qa, "--out", tmp_path / "o.parquet", "--question", "question", "--answer", "answer",
                   "--preview").stdout,
               run("convert", qa, "--out", tmp_path / "o.parquet", "--question", "question", "--answer", "answer",
                   "--format", "json").stdout]
    assert "\\u001b[2J\\u001b]0;pwn..." in outputs[0] and "What is 1+1?\\x1b[2J\\x1b]0;pwned\\x07" in outputs[2]
    assert "  gsm8k\\x1b[31m " in outputs[1] and "data_source 'gsm8k\\x1b[31m'" in outputs[1]  # its table and its finding
    assert json.loads(outputs[3])["preview"][0]["prompt"][0]["content"] == "What is 1+1?" + hostile
    for out in outputs:
        assert not any(c in out for c in "\x1b\x07\x9b"), out


@pytest.mark.verl
def test_reward_with_verls_gsm8k_scorer(tmp_path):
    rows = verl_rows(3)
    rows[0]["reward_model"]["ground_truth"] = "72"
    path = write_parquet(tmp_path / "t.parquet", rows)
    proc = run("reward", path, "--python", sys.executable, "--response", "so 48 + 24 = 72\n#### 72", "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    got = {(t["row"], t["candidate"]): t["score"] for t in doc["trials"]}
    assert got[(0, "user")] == 1.0 and got[(1, "user")] == 0.0
    assert got[(0, "ground_truth_formatted")] == 1.0 and got[(0, "wrong")] == 0.0
    assert doc["ok"] is True and doc["summary"]["max"] == 1.0


def test_reward_with_a_custom_function_that_fails(tmp_path):
    fn = tmp_path / "my_reward.py"
    fn.write_text("def score(data_source, solution_str, ground_truth, extra_info=None):\n"
                  "    return int(solution_str) == int(ground_truth)\n")
    path = write_parquet(tmp_path / "t.parquet", verl_rows(2, source="mine"))
    proc = run("reward", path, "--function", fn, "--name", "score", "--python", sys.executable)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "reward.exception" in proc.stdout and "ValueError: invalid literal for int()" in proc.stdout
    assert f'File "{fn}", line 2, in score' in proc.stdout


def test_reward_all_equal_scores_exit_1(tmp_path):
    fn = tmp_path / "zero.py"
    fn.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 0\n")
    path = write_parquet(tmp_path / "t.parquet", verl_rows(2, source="mine"))
    proc = run("reward", path, "--function", fn, "--python", sys.executable)
    assert proc.returncode == 1 and "reward.constant" in proc.stdout and "same score 0" in proc.stdout


@pytest.mark.parametrize("args, words", [
    (["check", "nope.parquet"], "nope.parquet: no such file"),
    (["check", "{tmp}/bad.parquet"], "not a readable parquet file"),
    (["check", "{tmp}/ok.parquet", "--batch-size", "0"], "must be 1 or more"),
    (["check", "{tmp}/ok.parquet", "--model", "Qwen/Qwen2.5-0.5B"], "not a local model folder"),
    (["preview", "{tmp}/notes.txt"], "unsupported file type"),
    (["convert", "{tmp}/ok.parquet", "--out", "{tmp}/o.parquet", "--question", "q", "--answer", "a"],
     "--question 'q': no such column"),
    (["convert", "{tmp}/ok.parquet", "--out", "{tmp}/o.parquet", "--question", "data_source", "--answer", "ability",
      "--template", "no slot"], "must contain {question}"),
    (["reward", "{tmp}/ok.parquet", "--function", "{tmp}/missing.py"], "missing.py: no such file"),
    (["reward", "{tmp}/ok.parquet", "--name", "fn"], "--name needs --function"),
    (["reward", "{tmp}/ok.parquet", "--python", "{tmp}/no-python"], "cannot run"),
    (["reward", "{tmp}/ok.parquet", "--timeout", "nan"], "--timeout must be a number of seconds more than 0, not nan"),
    (["reward", "{tmp}/ok.parquet", "--timeout", "inf"], "--timeout must be a number of seconds more than 0, not inf"),
    (["reward", "{tmp}/ok.parquet", "--timeout", "-5"], "--timeout must be a number of seconds more than 0, not -5"),
    ([], "give a data command"),
])
def test_bad_input_is_one_line_exit_2(tmp_path, args, words):
    write_parquet(tmp_path / "ok.parquet", verl_rows(2))
    (tmp_path / "bad.parquet").write_text("not parquet")
    (tmp_path / "notes.txt").write_text("x")
    assert_one_line_error(run(*[a.replace("{tmp}", str(tmp_path)) for a in args]), words)
