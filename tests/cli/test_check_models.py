"""``verl-wizard check`` on configs that name models: a tiny local folder, a missing one, a catalogue hub id."""

import json
import shlex

from tests.helpers.tiny_model import write_tiny_model
from tests.helpers.cli import run_cli

R = "actor_rollout_ref.rollout"
BASE = ["algorithm.adv_estimator=grpo", f"{R}.name=vllm", f"{R}.n=4", "data.train_batch_size=16",
        "actor_rollout_ref.actor.ppo_mini_batch_size=8", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1",
        f"{R}.log_prob_micro_batch_size_per_gpu=1", "trainer.n_gpus_per_node=8", "trainer.resume_mode=disable",
        "trainer.logger=[console]"]


def run(*args):
    return run_cli(*args)


def findings(proc, rule):
    return [f for f in json.loads(proc.stdout)["findings"] if f["rule"] == rule]


def tiny14(tmp_path):
    return write_tiny_model(tmp_path / "tiny14", shards=2, config={
        "hidden_size": 56, "num_attention_heads": 14, "num_key_value_heads": 2, "tie_word_embeddings": False})


def test_heads_that_rollout_tp_cannot_split(tmp_path):
    model = tiny14(tmp_path)
    proc = run("check", "--", *BASE, f"actor_rollout_ref.model.path={model}", f"{R}.tensor_model_parallel_size=4")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "models.tp_heads" in proc.stdout and "14 attention heads" in proc.stdout
    assert "tensor parallel size (4)" in proc.stdout
    assert f"fix: Set {R}.tensor_model_parallel_size=2" in proc.stdout


def test_json_and_a_good_tp_passes(tmp_path):
    model = tiny14(tmp_path)
    proc = run("check", "--format", "json", "--", *BASE, f"actor_rollout_ref.model.path={model}",
               f"{R}.tensor_model_parallel_size=2")
    assert json.loads(proc.stdout)["ok"] is True and not findings(proc, "models.tp_heads")
    bad = run("check", "--format", "json", "--", *BASE, f"actor_rollout_ref.model.path={model}",
              f"{R}.tensor_model_parallel_size=4")
    (f,) = findings(bad, "models.tp_heads")
    assert f["severity"] == "error" and f["fix_overrides"] == [f"{R}.tensor_model_parallel_size=2"]


def test_a_missing_model_folder(tmp_path):
    missing = tmp_path / "models" / "Qwen2.5-0.5B-Instruct"
    proc = run("check", "--format", "json", "--", *BASE, f"actor_rollout_ref.model.path={missing}")
    # a warning, not an error: the plan may be for a cluster where the folder exists
    (f,) = findings(proc, "models.path_missing")
    assert f["severity"] == "warning" and "not on this machine" in f["message"]
    assert str(missing) in f["message"] and f["keys"] == ["actor_rollout_ref.model.path"]


def test_a_catalogue_hub_id_gets_the_download_command():
    proc = run("check", "--", *BASE, "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct")
    assert proc.returncode == 0, proc.stdout
    line = next(ln for ln in proc.stdout.splitlines() if "models.hub_download" in ln)
    command = line.split("to fetch it once ahead: ", 1)[1]
    assert shlex.split(command)[:4] == ["hf", "download", "Qwen/Qwen2.5-7B-Instruct", "--local-dir"]
    # and its facts are used: 28 heads do not split over TP=8
    proc = run("check", "--", *BASE, "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct",
               f"{R}.tensor_model_parallel_size=8")
    assert proc.returncode == 1 and "28 attention heads" in proc.stdout


def test_batch_checks_every_case_against_the_model(tmp_path):
    model = tiny14(tmp_path)
    cases = tmp_path / "cases.jsonl"
    cases.write_text("\n".join(json.dumps({"id": f"tp{tp}", "overrides": BASE + [
        f"actor_rollout_ref.model.path={model}", f"{R}.tensor_model_parallel_size={tp}"]}) for tp in (1, 2, 4)))
    proc = run("check", "--batch", str(cases), "--format", "json")
    docs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(d["id"], d["ok"]) for d in docs] == [("tp1", True), ("tp2", True), ("tp4", False)]
    assert any(f["rule"] == "models.tp_heads" for f in docs[2]["findings"])
