"""``samples``, ``timing`` and ``report`` on a run folder: the recorded H200 run (with generations in verl's dump
format added), exit codes 0/1/2, one-line errors, JSON."""

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.rollout_dumps import HOSTILE, hostile_step, recorded_run_dumps, varied_step

RUN = Path(__file__).resolve().parents[1] / "data" / "verl-run-h200"


@pytest.fixture
def run_dir(tmp_path):
    folder = tmp_path / "h200"
    shutil.copytree(RUN, folder)
    recorded_run_dumps(folder / "rollout")
    return folder


def test_samples_prints_each_steps_verdict_and_flagged_examples(run_dir):
    r = run_cli("samples", run_dir)
    assert r.returncode == 0, r.stderr  # step 3 still has two groups that scored differently
    assert f"samples: 3 step(s) of training generations in {run_dir} (192 responses)" in r.stdout
    assert "step 1: 64 responses to 16 prompts (4 each): 31 % of responses hit the 512-token limit; in all 16 " \
           "groups every response scored the same (0), so GRPO's advantage is 0 there" in r.stdout
    assert "warning samples.cut: Step 3: 20 of 64 responses (31 %) hit the 512-token limit" in r.stdout
    assert r.stdout.count("    response: ") == 3 and "[cut, same score]" in r.stdout


def test_samples_of_a_step_that_taught_nothing_exits_1_and_json_has_the_examples_asked(run_dir):
    r = run_cli("samples", run_dir, "--step", "1", "--flag", "cut", "--show", "2", "--format", "json")
    doc = json.loads(r.stdout)
    assert r.returncode == 1 and doc["ok"] is False
    assert [s["step"] for s in doc["steps"]] == [1] and doc["steps"][0]["cut"] == 20
    assert doc["findings"][0]["rule"] == "samples.no_signal" and doc["findings"][0]["severity"] == "error"
    assert len(doc["examples"]) == 2 and all("cut" in e["flags"] for e in doc["examples"])


def test_samples_searches_and_reads_a_folder_of_dumps(tmp_path):
    varied_step(tmp_path / "dumps", step=9)
    r = run_cli("samples", tmp_path / "dumps", "--grep", "娜塔莉亚", "--format", "json")
    doc = json.loads(r.stdout)
    assert r.returncode == 0 and [e["flags"] for e in doc["examples"]] == [["language"]]


@pytest.mark.parametrize("argv, message", [
    (["samples", "{missing}"], "no such folder"),
    (["samples", "{plain}"], "no training generations dumped in this run"),
    (["samples", "{run}", "--validation"], "no validation generations dumped"),
    (["samples", "{run}", "--step", "7"], "--step 7: no dump for it; steps: 1, 2, 3"),
    (["samples", "{run}", "--flag", "weird"], "--flag 'weird': one of cut, empty"),
    (["timing", "{missing}"], "no such folder"),
    (["report", "{missing}"], "no such folder"),
])
def test_bad_input_is_one_line_and_exit_2(run_dir, tmp_path, argv, message):
    plain = tmp_path / "plain"
    shutil.copytree(RUN, plain)
    words = [a.format(missing=tmp_path / "nope", plain=plain, run=run_dir) for a in argv]
    r = run_cli(*words)
    assert r.returncode == 2 and message in r.stderr and r.stderr.count("\n") == 1 and r.stdout == ""


def test_timing_draws_the_steps_tells_the_warm_up_apart_and_forecasts(run_dir):
    r = run_cli("timing", run_dir)
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0] == f"timing: 3 step(s) in {run_dir}; steady step 14 s (median of step(s) 2, 3)"
    step1 = next(line for line in lines if line.startswith("  step   1"))
    assert step1.endswith("(warm-up)") and "62.6 s |ggggggggg" in step1 and "gen 1.7k tokens/s" in step1
    assert "steady step: generation 22 %, log-probs 14 %, reference 12 %, update 50 %" in r.stdout
    assert "timing.update_bound: Update takes 50 % of a step (6.9 s of 14 s)" in r.stdout
    assert ("forecast: The full run: 8 steps (1 epoch × 8 steps of 16 prompts from 128 rows), about 6 min 41 s on "
            "1 GPU (0.11 GPU-hours)") in r.stdout


def test_timing_json_and_a_run_that_never_stepped_exits_1(run_dir, tmp_path):
    doc = json.loads(run_cli("timing", run_dir, "--format", "json").stdout)
    assert [s["warmup"] for s in doc["steps"]] == [True, False, False] and doc["forecast"]["steps"] == 8
    assert [a["rule"] for a in doc["advice"]] == ["timing.warmup", "timing.update_bound"]
    failed = tmp_path / "failed"
    failed.mkdir()
    (failed / "run.log").write_text("ValueError: Total available GPUs 0 is less than total desired GPUs 1\n")
    r = run_cli("timing", failed)
    assert r.returncode == 1 and "no training step finished" in r.stdout


def test_report_writes_markdown_into_the_folder_or_to_stdout(run_dir, tmp_path):
    r = run_cli("report", run_dir, env={"WANDB_API_KEY": "planted-key-0123456789"})
    assert r.returncode == 0 and r.stdout.startswith(f"wrote {run_dir / 'report.md'} (")
    text = (run_dir / "report.md").read_text()
    assert text.startswith("# verl run report: grpo_smoke_qwen2.5_0.5b\n") and "planted-key" not in text
    out = run_cli("report", run_dir, "--out", "-")
    assert out.returncode == 0 and out.stdout.startswith("# verl run report")
    doc = json.loads(run_cli("report", run_dir, "--out", tmp_path / "r.md", "--format", "json").stdout)
    assert doc["ok"] and doc["path"] == str(tmp_path / "r.md") and doc["lines"] > 250


def test_report_probes_the_python_it_is_given(run_dir):
    import sys

    text = run_cli("report", run_dir, "--out", "-", "--python", sys.executable).stdout
    assert f"| Python | {sys.version.split()[0]} |" in text
    bad = run_cli("report", run_dir, "--python", str(run_dir / "none"))
    assert bad.returncode == 2 and "no such file" in bad.stderr


FAKE = """\
import json, os, sys
args = dict(a.split("=", 1) for a in sys.argv[1:] if "=" in a)
rollout = args["trainer.rollout_data_dir"]
os.makedirs(rollout, exist_ok=True)
P = "(TaskRunnerV1 pid=466) "
print(P + "INFO:2026-12-03 15:44:32,052:train and validate dataloader initialized, train dataset size: 64, val dataset size: 8")
print(P + "INFO:2026-12-03 15:44:33,001:Total training steps: 2")
print(P + "INFO:2026-12-03 15:46:33,013:all initialize finished, ready to fit")
for step, total in ((1, 30.0), (2, 10.0)):
    with open(f"{rollout}/{step}.jsonl", "w") as fh:
        for i in range(8):
            fh.write(json.dumps({"input": "user\\nq\\nassistant\\n", "output": "#### 2", "gts": "2", "score": 0.0,
                                 "step": step, "uid": f"u{i // 4}_{i % 4}_0"}) + "\\n")
    print(P + f"step:{step} - timing_s/step:{total} - timing_s/gen:6.0 - timing_s/update_actor:3.0")
print(P + "'Final validation metrics: None'")
"""


def test_launch_records_the_run_and_ends_with_the_verdict_the_time_and_the_forecast(tmp_path):
    import sys

    py = tmp_path / "python"
    (tmp_path / "fake.py").write_text(FAKE)
    py.write_text(f"#!/bin/sh\nexec {sys.executable} {tmp_path / 'fake.py'} \"$@\"\n")
    py.chmod(0o755)
    out = tmp_path / "r"
    r = run_cli("launch", "--preset", "grpo-1gpu-smoke", "--python", py, "--out", out, "--steps", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    assert ("verl-wizard: samples, step 2: 8 responses to 2 prompts (4 each): in all 2 groups every response scored "
            "the same (0), so GRPO's advantage is 0 there; in 2 of 2 groups every response is the same text") in r.stdout
    assert "verl-wizard: time: a steady step takes 10 s (generation 60 %, update 30 %, other 10 %); step 1 warm-up " \
           "30 s" in r.stdout
    assert "The full run: 4 steps (1 epoch × 4 steps of 16 prompts from 64 rows)" in r.stdout  # epochs end first
    meta = json.loads((out / "run.json").read_text())
    assert meta["exit_code"] == 0 and meta["steps"] == 2 and meta["rollout_dir"] == str(out / "rollout")
    assert sorted(p.name for p in (out / "rollout").iterdir()) == ["1.jsonl", "2.jsonl"]
    again = run_cli("launch", "--preset", "grpo-1gpu-smoke", "--python", py, "--out", out, "--steps", "2")
    assert again.returncode == 0 and len(list(out.glob("rollout.*.bak"))) == 1  # the first run's dumps kept aside


# --- what a model writes is shown, never obeyed by the terminal ----------------------------------------------

RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")  # any C0 control but the line break, DEL, any C1 control


def test_samples_shows_a_responses_escape_sequences_instead_of_writing_them(tmp_path):
    dumps = hostile_step(tmp_path / "dumps").parent
    r = run_cli("samples", dumps, "--show", "5")
    assert r.returncode == 0 and r.stdout.count("    response: ") == 5
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout and not RAW.search(r.stdout)
    assert "response: sure \\x1b[2J\\x1b]0;pwned\\x07 the answer is #### 2" in r.stdout
    assert "response: \\x9b2J\\rnothing here, #### 3" in r.stdout and "response: tab\\tbed #### 4" in r.stdout
    assert "prompt:   user⏎ what is 1 + 1 ?\\x1b[2J\\x1b]0;pwned\\x07⏎ assistant⏎ " in r.stdout and "ground truth 2\\x07" in r.stdout
    out = run_cli("samples", dumps, "--show", "5", "--format", "json").stdout
    assert not RAW.search(out)
    assert {e["response"] for e in json.loads(out)["examples"]} >= {f"sure {HOSTILE} the answer is #### 2"}


def test_the_report_shows_a_logs_control_characters_instead_of_writing_them(run_dir):
    with open(run_dir / "run.log", "a") as fh:
        fh.write(f"(TaskRunnerV1 pid=7) [response] {HOSTILE}\x9b31m red\tand\x00 more\r\n")
    text = run_cli("report", run_dir, "--out", "-").stdout
    line = next(x for x in text.splitlines() if "[response]" in x)  # the CSI sequence goes (as colour codes do)
    assert line == "(TaskRunnerV1 pid=7) [response] \\x1b]0;pwned\\x07\\x9b31m red      and\\x00 more"  # the tab as spaces
    assert "\x1b" not in text and "\x07" not in text and not RAW.search(text)
