"""``plan`` sizes the model families verl's examples and users name from the catalogue alone (no download, no
config.json on this machine), and an id named after a catalogue row gets that row's sizes, labelled a guess."""

import json

import pytest

from tests.helpers.cli import run_cli

R = "actor_rollout_ref.rollout"
BATCH = ["algorithm.adv_estimator=grpo", f"{R}.name=vllm", "data.train_batch_size=64",
         "actor_rollout_ref.actor.ppo_mini_batch_size=32", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
         f"{R}.log_prob_micro_batch_size_per_gpu=4", "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4"]


def plan(model: str, gpus: str, *extra: str, fmt: str = "json"):
    res = run_cli("plan", "--format", fmt, "--gpus", gpus, "--",
                  f"actor_rollout_ref.model.path={model}", *BATCH, *extra)
    assert "Traceback" not in res.stdout + res.stderr
    return json.loads(res.stdout) if fmt == "json" else res.stdout


@pytest.mark.parametrize("model, gpus, tp, billions", [
    ("Qwen/Qwen2.5-Coder-14B-Instruct", "8xH100-80GB", 2, 14.77),
    ("Qwen/Qwen2.5-Math-7B-Instruct", "8xH100-80GB", 1, 7.62),
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", "2x8xH100-80GB", 4, 30.53),
    ("meta-llama/Llama-3.3-70B-Instruct", "4x8xH100-80GB", 8, 70.55),
    ("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", "8xH100-80GB", 2, 8.03),
    ("google/gemma-2-27b-it", "2x8xH100-80GB", 4, 27.23),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "2x8xH100-80GB", 4, 46.70),
    ("microsoft/Phi-3.5-mini-instruct", "8xH100-80GB", 1, 3.82),
])
def test_plan_sizes_each_family_offline_with_a_verdict(model, gpus, tp, billions):
    nodes = gpus.split("x")[0] if gpus.count("x") == 2 else "1"
    extra = (f"{R}.tensor_model_parallel_size={tp}", f"trainer.nnodes={nodes}")
    out = plan(model, gpus, *extra)
    assert out["verdict"] in ("fits", "tight", "fits_while_short", "does_not_fit") and out["fits"] is not None, out["fits_reason"]
    assert out["gpus"] and all(g["peak_gib"] > 0 for g in out["gpus"])
    text = plan(model, gpus, *extra, fmt="text")
    assert f"{model}: {billions:.2f}B params" in text


def test_a_vision_language_model_is_sized_with_its_vision_tower_and_says_how():
    out = plan("Qwen/Qwen2.5-VL-3B-Instruct", "8xH100-80GB")
    assert out["gpus"] and out["fits"] is not None  # its tower's shape is read: a verdict (tests/core/test_memory_vision)
    text = plan("Qwen/Qwen2.5-VL-3B-Instruct", "8xH100-80GB", fmt="text")
    assert "Qwen/Qwen2.5-VL-3B-Instruct: 3.75B params" in text  # 3.09B decoder + 0.67B vision tower
    assert "vision tower: 0.67B of the model's 3.75B parameters" in text
    assert "at worst every prompt token an image token" in text and "not measured" in text


def test_an_unknown_id_named_after_a_catalogue_model_is_sized_as_it_and_labelled_a_guess():
    out = plan("Qwen/Qwen2.5-Coder-3B-Instruct-GPTQ-Int4", "8xH100-80GB")
    guess = [f for f in out["findings"] if f["rule"] == "models.sized_as"]
    assert len(guess) == 1 and "sized as Qwen/Qwen2.5-Coder-3B-Instruct" in guess[0]["message"]
    assert out["verdict"] is not None and out["gpus"]
    base = plan("Qwen/Qwen2.5-Coder-3B-Instruct", "8xH100-80GB")
    assert out["gpus"][0]["peak_gib"] == base["gpus"][0]["peak_gib"]
    fine_tune = plan("someone/Qwen2.5-Math-7B-grpo-gsm8k", "8xH100-80GB")
    assert any("sized as Qwen/Qwen2.5-Math-7B," in f["message"] for f in fine_tune["findings"]
               if f["rule"] == "models.sized_as")


def test_a_name_without_a_catalogue_size_in_it_is_not_guessed():
    out = plan("someone/qwen-small-chat", "8xH100-80GB")
    assert not [f for f in out["findings"] if f["rule"] == "models.sized_as"]
    assert not out["gpus"] or out["fits"] is None
