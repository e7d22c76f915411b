"""The CLI contract: exit codes, JSON shapes, one-line reasons, never a traceback."""

import json
import os

import pytest

from tests.conftest import ROOT, SCRIPTS
from tests.helpers.cli import process_env, run_cli

GOOD = ["algorithm.adv_estimator=grpo", "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct",
        "actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.rollout.n=4", "data.train_batch_size=16",
        "actor_rollout_ref.actor.ppo_mini_batch_size=8", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1", "trainer.n_gpus_per_node=1",
        "trainer.resume_mode=disable", "trainer.logger=[console]"]


def run(*args, cwd=None):
    return run_cli(*args, cwd=cwd)


def assert_one_line_error(proc, code, needle):
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], proc.stderr


def test_check_good_overrides_exits_0():
    proc = run("check", "--", *GOOD)
    assert proc.returncode == 0, proc.stdout
    assert proc.stdout.startswith("OK")


def test_check_not_a_number_exits_1_with_the_reason():
    proc = run("check", "--format", "json", "--", *GOOD, "data.train_batch_size=abc")
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["ok"] is False
    (finding,) = [f for f in doc["findings"] if f["rule"] == "types.value"]
    assert set(finding) >= {"rule", "severity", "stage", "keys", "message", "fix"}
    assert finding["keys"] == ["data.train_batch_size"] and finding["stage"] == "preflight"


def test_check_bare_abc_from_the_issue():
    proc = run("check", "--", "data.train_batch_size=abc")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "data.train_batch_size='abc' is not an int" in proc.stdout


def test_missing_file_is_one_line_exit_2(tmp_path):
    assert_one_line_error(run("check", str(tmp_path / "nope.yaml")), 2, "no such file")


def test_malformed_yaml_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("data:\n  train_batch_size: [1, 2\n")
    assert_one_line_error(run("check", str(bad)), 2, "not valid YAML")


def test_bad_gpu_spec_and_bad_usage():
    assert_one_line_error(run("check", "--gpus", "lots", "--", *GOOD), 2, "cannot read GPU spec")
    assert_one_line_error(run("check"), 2, "give a config")
    assert_one_line_error(run("generate", "--preset", "nope", "--out", "x"), 2, "no preset 'nope'")
    assert_one_line_error(run("frobnicate"), 2, "invalid choice")


def test_check_a_real_verl_script():
    proc = run("check", "--format", "json", str(SCRIPTS / "examples__grpo_trainer__run_qwen2-7b.sh"))
    doc = json.loads(proc.stdout)
    assert proc.returncode in (0, 1) and isinstance(doc["findings"], list)


def test_refused_script_is_one_line_exit_2():
    proc = run("check", str(SCRIPTS / "other" / "tests__special_e2e__run_dapo.sh"))
    assert_one_line_error(proc, 2, "recipe.dapo.main_dapo")


def test_batch_jsonl(tmp_path):
    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        json.dumps({"id": "good", "overrides": GOOD}) + "\n"
        + json.dumps({"id": "bad", "overrides": GOOD + ["trainer.logr=1"]}) + "\n"
    )
    proc = run("check", "--batch", str(cases), "--format", "json")
    assert proc.returncode == 1
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(d["id"], d["ok"]) for d in lines] == [("good", True), ("bad", False)]


def test_batch_with_a_broken_line(tmp_path):
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "x", "overrides": [1]}\n')
    assert_one_line_error(run("check", "--batch", str(cases)), 2, "overrides must be strings")


def test_generate_writes_files_and_json(tmp_path):
    out = tmp_path / "my run"
    proc = run("generate", "--preset", "grpo-1gpu-smoke", "--out", str(out), "--format", "json",
               "--set", "trainer.total_training_steps=3")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert "trainer.total_training_steps=3" in doc["overrides"]
    assert sorted(os.path.basename(f) for f in doc["files"]) == ["config.yaml", "plan.json", "run.sh"]
    assert os.access(out / "run.sh", os.X_OK)
    # the written plan reads back and checks clean
    assert run("check", str(out / "plan.json")).returncode == 0


def test_generate_refuses_errors_unless_forced(tmp_path):
    proc = run("generate", "--preset", "grpo-8gpu", "--gpus", "4xH100-80GB", "--out", str(tmp_path), "--set",
               "trainer.n_gpus_per_node=8")
    assert proc.returncode == 1 and "Nothing written" in proc.stdout
    assert not (tmp_path / "run.sh").exists()


def test_generate_backs_up_instead_of_overwriting(tmp_path):
    (tmp_path / "run.sh").write_text("my own edits\n")
    proc = run("generate", "--preset", "grpo-1gpu-smoke", "--out", str(tmp_path))
    assert proc.returncode == 0
    backups = list(tmp_path.glob("run.sh.*.bak"))
    assert len(backups) == 1 and backups[0].read_text() == "my own edits\n"


@pytest.mark.parametrize("spec, nodes, per_node", [("8xH100-80GB", 1, 8), ("2x8xH100-80GB", 2, 8)])
def test_generate_gpus_sets_the_trainer(tmp_path, spec, nodes, per_node):
    proc = run("generate", "--preset", "grpo-8gpu", "--gpus", spec, "--out", str(tmp_path), "--format", "json")
    doc = json.loads(proc.stdout)
    assert f"trainer.nnodes={nodes}" in doc["overrides"] and f"trainer.n_gpus_per_node={per_node}" in doc["overrides"]


def test_version():
    proc = run("--version")
    assert proc.returncode == 0 and proc.stdout.startswith("verl-wizard ")


@pytest.mark.verl
def test_check_with_verl_preflight_agrees(tmp_path):
    proc = run("check", "--verl", "--format", "json", "--", *GOOD, "data.train_batch_size=10", "trainer.n_gpus_per_node=16")
    doc = json.loads(proc.stdout)
    rules = {f["rule"] for f in doc["findings"]}
    assert {"batch.real_train_batch_size", "verl.preflight"} <= rules


def test_check_fix_prints_corrected_overrides_and_leaves_choices_to_the_user():
    proc = run("check", "--fix", "--format", "json", "--", *GOOD, "data.train_batch_size=17",
               "trainer.n_gpus_per_node=8", "trainer.logger=[console,wandbb]", "~actor_rollout_ref.rollout.name")
    doc = json.loads(proc.stdout)
    assert "data.train_batch_size=16" in doc["overrides"] and "trainer.logger=[console,wandb]" in doc["overrides"]
    assert "data.train_batch_size=16" in doc["applied"]
    # the rollout engine is a choice (vllm or sglang): reported, not guessed
    assert [f["rule"] for f in doc["findings"] if f["severity"] == "error"] == ["rollout.name"]
    assert proc.returncode == 1


def test_check_against_a_cluster_spec(tmp_path):
    spec = tmp_path / "cluster.yaml"
    spec.write_text("cluster: 2x4xH100-80GB nvlink\n")
    proc = run("check", "--cluster", str(spec), "--format", "json", "--", *GOOD, "trainer.n_gpus_per_node=8")
    rules = {f["rule"] for f in json.loads(proc.stdout)["findings"]}
    assert "gpus.per_node" in rules and proc.returncode == 1


def test_check_against_a_dead_ray_address_answers_quickly():
    proc = run("check", "--ray-address", "127.0.0.1:1", "--format", "json", "--", *GOOD)
    doc = json.loads(proc.stdout)
    assert any(f["rule"].startswith("ray.") and "ray start" in (f["fix"] or "") for f in doc["findings"])


def _gsm8k_parquet(path, rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pylist([
        {"data_source": "openai/gsm8k", "prompt": [{"role": "user", "content": f"What is {i} + {i}?"}],
         "reward_model": {"style": "rule", "ground_truth": str(2 * i)}, "extra_info": {"index": i}}
        for i in range(rows)
    ])
    pq.write_table(table, path)


def test_check_looks_at_the_data_files_the_config_names(tmp_path):
    train, val = tmp_path / "train.parquet", tmp_path / "missing.parquet"
    _gsm8k_parquet(train, 10)
    args = [*GOOD, f"data.train_files={train}", f"data.val_files={val}"]
    doc = json.loads(run("check", "--format", "json", "--", *args).stdout)
    missing = [f for f in doc["findings"] if f["rule"] == "data.file_missing"]
    assert len(missing) == 1 and "missing.parquet" in missing[0]["message"]
    # --data reads the file: 10 rows cannot fill a batch of 16 prompts
    deep = json.loads(run("check", "--data", "--format", "json", "--", *args).stdout)
    assert deep["ok"] is False
    assert any("10" in f["message"] and "16" in f["message"] for f in deep["findings"] if f["severity"] == "error")


def test_resume_auto_over_an_existing_checkpoint_is_named(tmp_path):
    (tmp_path / "ckpt" / "global_step_40").mkdir(parents=True)
    args = [a for a in GOOD if not a.startswith("trainer.resume_mode")]
    doc = json.loads(run("check", "--format", "json", "--", *args, f"trainer.default_local_dir={tmp_path / 'ckpt'}").stdout)
    (finding,) = [f for f in doc["findings"] if f["rule"] == "data.resume_existing"]
    assert "global_step_40" in finding["message"] and finding["fix_overrides"] == ["trainer.resume_mode=disable"]


def test_overrides_after_a_file_are_added_to_its_own(tmp_path):
    proc = run("check", str(ROOT / "resources" / "presets" / "ppo-8gpu.yaml"),
               "actor_rollout_ref.actor.ppo_mini_batch_size=7000")
    assert proc.returncode == 1 and "ppo_mini_batch_size (7000)" in proc.stdout


def test_check_with_a_gpu_model_runs_the_memory_rules():
    plan = ROOT / "resources" / "presets" / "grpo-8gpu.yaml"
    proc = run("check", "--gpus", "8xH100-80GB", "--format", "json", str(plan),
               "actor_rollout_ref.rollout.gpu_memory_utilization=0.95")
    rules = {f["rule"]: f for f in json.loads(proc.stdout)["findings"]}
    assert proc.returncode == 1 and "memory.gpu_oom" in rules
    assert "79.6 GiB" in rules["memory.gpu_oom"]["message"]  # what NVML reports on an H100 80GB
    assert rules["memory.gpu_oom"]["fix_overrides"]  # the cheapest fix, as an override
    # without a GPU model the memory rules stay silent instead of guessing
    proc = run("check", "--gpus", "8", "--format", "json", str(plan), "actor_rollout_ref.rollout.gpu_memory_utilization=0.95")
    assert not any(f["rule"].startswith("memory.") for f in json.loads(proc.stdout)["findings"])


def test_the_installed_entry_points_start():
    """The other tests call main() in-process; these start the programs a user types."""
    import shutil
    import subprocess
    import sys

    module = subprocess.run([sys.executable, "-m", "wizard", "check", "--", *GOOD], capture_output=True, text=True,
                            timeout=120, env=process_env())
    assert module.returncode == 0 and module.stdout.startswith("OK"), module.stderr
    script = shutil.which("verl-wizard", path=os.path.dirname(sys.executable))
    assert script, "the verl-wizard console script is not installed next to this Python"
    bad = subprocess.run([script, "check", "--gpus", "8xNOPE"], capture_output=True, text=True, timeout=120,
                         env=process_env())
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_one_reading_of_the_inputs_for_check_generate_plan_and_launch(tmp_path):
    """The same --gpus, presets and full check everywhere: what plan calls out of memory, generate refuses too."""
    too_much = "actor_rollout_ref.rollout.gpu_memory_utilization=0.95"
    plan = run_cli("plan", "--preset", "grpo-8gpu", "--gpus", "8xH100", "--set", too_much)
    gen = run("generate", "--preset", "grpo-8gpu", "--gpus", "8xH100", "--set", too_much, "--out", tmp_path / "g")
    chk = run("check", "--preset", "grpo-8gpu", "--gpus", "8xH100", "--set", too_much)
    assert plan.returncode == gen.returncode == chk.returncode == 1
    assert "memory.engine_start" in plan.stdout and "memory.engine_start" in gen.stdout
    assert "memory.engine_start" in chk.stdout and not (tmp_path / "g").exists()
    for argv in (["generate", "--preset", "grpo-8gpu", "--gpus", "8xFOO", "--out", tmp_path / "f"],
                 ["launch", "--preset", "grpo-1gpu-smoke", "--gpus", "1xFOO", "--dry-run"],
                 ["check", "--preset", "grpo-8gpu", "--gpus", "8xA100"]):
        proc = run(*argv)
        assert_one_line_error(proc, 2, "unknown GPU model")
    assert "did you mean A100-80GB, A100-40GB" in run("check", "--preset", "grpo-8gpu", "--gpus", "8xA100").stderr
    assert_one_line_error(run("generate", "--preset", "grpo-8gpu", "--out", ""), 2, "--out needs a folder")
    assert_one_line_error(run("generate", "--preset", "../presets/grpo-8gpu", "--out", tmp_path / "p"), 2,
                          "no preset '../presets/grpo-8gpu'")
    dry = run("launch", "--preset", "grpo-1gpu-smoke", "--dry-run")
    assert "data.file_missing" in dry.stdout  # the launcher's check is check's, data files included


@pytest.mark.verl
def test_check_with_verl_says_when_verl_accepts_the_config():
    proc = run("check", "--preset", "grpo-1gpu-smoke", "--verl", "--format", "json")
    (ok,) = [f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "verl.preflight_ok"]
    assert proc.returncode == 0 and "verl 0.9.1 itself accepts this config" in ok["message"]
