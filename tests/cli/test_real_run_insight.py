"""``samples``, ``timing`` and ``report`` on a real run folder: the project's own smoke run on one H200 with verl's
own generation dumps (tests/data/verl-run-h200-dumps). Random weights: every response is 512 tokens of random
bytes (control characters included) and scores 0, so every GRPO group is flat. What a user would notice, read
from the output as printed."""

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli

REAL = Path(__file__).resolve().parents[1] / "data" / "verl-run-h200-dumps"
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")  # any C0 control but the line break, DEL, any C1 control
FLAT = ("64 responses to 16 prompts (4 each): 100 % of responses hit the 512-token limit; in all 16 groups every "
        "response scored the same (0), so GRPO's advantage is 0 there")


@pytest.fixture
def run_dir(tmp_path):
    folder = tmp_path / "smoke"
    shutil.copytree(REAL, folder)
    return folder


def test_samples_shows_both_steps_every_response_cut_and_that_nothing_was_learned():
    r = run_cli("samples", REAL)
    assert r.returncode == 1, r.stderr  # the last step taught nothing
    assert f"samples: 2 step(s) of training generations in {REAL} (128 responses)" in r.stdout
    assert f"  step 1: {FLAT}" in r.stdout and f"  step 2: {FLAT}" in r.stdout
    assert ("error   samples.no_signal: Step 2: in all 16 groups every response scored the same (0), so GRPO's "
            "advantage is 0 for every response: this step taught the policy nothing") in r.stdout
    assert "warning samples.cut: Step 2: 64 of 64 responses (100 %) hit the 512-token limit" in r.stdout
    assert r.stdout.count("[cut, same score]") == 3 and r.stdout.count("    response: ") == 3
    assert "(2,9" in r.stdout.split("    response: ")[1]  # clipped: "… (2,926 characters)"
    assert not RAW.search(r.stdout) and "\\x1b" in r.stdout  # random bytes' ESC, BEL, NUL... shown, not written


def test_samples_json_counts_what_verl_counted_and_filters_by_step_and_flag():
    doc = json.loads(run_cli("samples", REAL, "--format", "json").stdout)
    assert doc["ok"] is False and [s["step"] for s in doc["steps"]] == [1, 2]
    assert [(s["samples"], s["cut"], s["cut_exact"], s["same_score_groups"], s["flat_score"]) for s in doc["steps"]] \
        == [(64, 64, True, 16, 0.0)] * 2  # cut counted by verl's own response_length/clip_ratio (1.0)
    one = json.loads(run_cli("samples", REAL, "--step", "1", "--flag", "cut", "--show", "64", "--format", "json").stdout)
    assert len(one["examples"]) == 64 and {e["step"] for e in one["examples"]} == {1}
    assert all({"cut", "same score"} <= set(e["flags"]) and e["score"] == 0 for e in one["examples"])


def test_timing_tells_step_1s_warm_up_apart_and_forecasts_the_full_run():
    r = run_cli("timing", REAL)
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0] == f"timing: 2 step(s) in {REAL}; steady step 82 s (median of step(s) 2)"
    step1, step2 = (next(x for x in lines if x.startswith(f"  step   {n}")) for n in (1, 2))
    assert step1.startswith("  step   1   126.2 s |ggggg") and step1.endswith("(warm-up)")
    assert step2.startswith("  step   2    82.4 s |gg") and "warm-up" not in step2
    assert ("timing.warmup: Step 1 took 2 min 6 s, 1.5× the steady 82 s of step 2: warm-up") in r.stdout
    assert ("forecast: The full run: 4 steps (1 epoch × 4 steps of 16 prompts from 64 rows), about 11 min on 1 GPU "
            "(0.18 GPU-hours)") in r.stdout
    doc = json.loads(run_cli("timing", REAL, "--format", "json").stdout)
    assert [s["warmup"] for s in doc["steps"]] == [True, False] and doc["steady_steps"] == [2]
    assert doc["forecast"]["steps"] == 4


def test_report_has_the_versions_gpu_overrides_verdicts_timing_and_log_tail(run_dir):
    r = run_cli("report", run_dir)
    assert r.returncode == 0 and r.stdout.startswith(f"wrote {run_dir / 'report.md'} (")
    text = (run_dir / "report.md").read_text()
    assert text.startswith("# verl run report: grpo_smoke_qwen2.5_0.5b\n\nFinished ok (2/2 steps).")
    for part in ("Seen in the log: Python 3.12, NCCL 2.28.9+cuda13.0, vLLM 0.24.0.", "- GPU 0: NVIDIA H200 (143,771 MiB)",
                 "  actor_rollout_ref.rollout.gpu_memory_utilization=0.06",
                 "  +actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_memory_bytes=7188500736",
                 f"- step 2: {FLAT}", "`samples.no_signal`", "| 1 (warm-up) | 126.2 s |", "| 2 | 82.4 s |",
                 "The full run: 4 steps", "run.log: the last 200 of 1262 lines"):
        assert part in text, part
    log = text.split("```text\n")[-1].split("\n```")[0].splitlines()
    assert len(log) == 200 and log[-1].startswith("(TaskRunnerV1 pid=3890) RuntimeError: DataLoader worker")
    assert not RAW.search(text) and "\x1b" not in text  # Ray's colour codes gone


KEY_VALUE = "wandbkey-0123456789abcdef"  # a value only its key marks as secret
HF = "hf_" + "Q" * 34  # a value whose shape marks it
ENV = {"WANDB_API_KEY": "envsecret-42424242", "MY_SERVICE_PASSWORD": "hunter2hunter2"}


def test_report_keeps_secrets_planted_in_run_json_the_log_and_the_environment_out(run_dir):
    meta = json.loads((run_dir / "run.json").read_text())
    meta["plan_overrides"] += [f"+trainer.wandb_api_key={KEY_VALUE}", f"+reward.hf_token={HF}"]
    meta["environment"] = {"python": "3.12.3", "packages": {"verl": "0.9.1", "vllm": "0.24.0"},
                           "torch": "2.11.0+cu130", "driver_cuda": "13.0"}
    (run_dir / "run.json").write_text(json.dumps(meta))
    with open(run_dir / "run.log", "a") as fh:  # lines the launcher did not get to redact
        fh.write(f"wandb: logging in with {ENV['WANDB_API_KEY']}\n")
        fh.write(f"(TaskRunnerV1 pid=3890) {{'password': '{ENV['MY_SERVICE_PASSWORD']}', 'hub': '{HF}'}}\n")
    r = run_cli("report", run_dir, "--out", "-", env=ENV)
    assert r.returncode == 0
    for secret in (KEY_VALUE, HF, *ENV.values()):
        assert secret not in r.stdout, secret
    assert "| verl | 0.9.1 |" in r.stdout and "| vllm | 0.24.0 |" in r.stdout and "| torch build | 2.11.0+cu130 |" \
        in r.stdout
    assert "+trainer.wandb_api_key=${oc.env:WANDB_API_KEY}" in r.stdout and "wandb: logging in with ${WANDB_API_KEY}" \
        in r.stdout
