"""``verl-wizard plan``: the real CLI on every preset and on hand-written cases (catalogue and local models)."""

import json
import re
from pathlib import Path

import pytest

from tests.helpers.tiny_model import write_tiny_model
from tests.helpers.cli import run_cli

DATA = Path(__file__).resolve().parents[1] / "data" / "verl_scripts"
PRESET_GPUS = {"grpo-1gpu-smoke": "1xRTX-4090-24GB", "grpo-2node": "2x8xH100-80GB", "grpo-8gpu": "8xH100-80GB",
               "ppo-8gpu": "8xH100-80GB"}
GPU_COUNT = {"grpo-1gpu-smoke": 1, "grpo-2node": 16, "grpo-8gpu": 8, "ppo-8gpu": 8}
R = "actor_rollout_ref.rollout"


def run(*args):
    return run_cli("plan", *args)


def assert_one_line_error(proc, words):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr


def test_every_preset_is_covered():
    from wizard.adapters.files.resources import preset_names

    assert sorted(preset_names()) == sorted(PRESET_GPUS)


@pytest.mark.parametrize("preset", sorted(PRESET_GPUS))
def test_every_preset_fits_the_gpus_it_was_written_for(preset):
    text = run("--preset", preset, "--gpus", PRESET_GPUS[preset])
    assert text.returncode == 0, text.stdout + text.stderr
    assert "verdict: FITS" in text.stdout and "memory per GPU (GiB):" in text.stdout
    proc = run("--preset", preset, "--gpus", PRESET_GPUS[preset], "--format", "json")
    doc = json.loads(proc.stdout)
    assert set(doc) == {"fits", "verdict", "fits_up_to_avg_tokens", "fits_reason", "fits_cause", "gpus", "host", "memory_notes",
                        "term_labels", "findings",
                        "step_seconds", "step_reason", "phases_seconds", "phases_terms", "step_assumptions", "advice",
                        "advice_statement", "advice_status",
                        "data", "data_reason", "forecast", "forecast_reason"}
    assert doc["fits"] is True and doc["verdict"] in ("fits", "tight") and doc["fits_reason"] is None
    assert len(doc["gpus"]) == GPU_COUNT[preset]
    gpu = doc["gpus"][0]
    assert {"node", "index", "capacity_gib", "peak_gib", "peak_phase", "breakdown"} <= set(gpu)
    assert gpu["peak_gib"] <= gpu["capacity_gib"]
    assert gpu["breakdown"][gpu["peak_phase"]]["total_gib"] == gpu["peak_gib"]
    assert doc["host"]["nodes"] and doc["host"]["kv_cache"]["rollout"]["tokens_per_replica"] > 0


def test_a_7b_preset_on_24gb_gpus_does_not_fit_and_exits_1():
    proc = run("--preset", "grpo-8gpu", "--gpus", "8xRTX-4090-24GB", "--format", "json")
    assert proc.returncode == 1
    doc = json.loads(proc.stdout)
    assert doc["fits"] is False and doc["verdict"] == "does_not_fit" and doc["fits_up_to_avg_tokens"] is None
    oom = [f for f in doc["findings"] if f["rule"] == "memory.gpu_oom"]
    assert oom and "of 24.0 GiB" in oom[0]["message"] and oom[0]["fix_overrides"]
    text = run("--preset", "grpo-8gpu", "--gpus", "8xRTX-4090-24GB")
    assert "verdict: DOES NOT FIT" in text.stdout and "memory.gpu_oom" in text.stdout


def test_a_thousand_identical_gpus_print_as_one_row():
    args = ("--preset", "grpo-2node", "--gpus", "128x8xH100-80GB", "--set", "trainer.nnodes=128")
    text = run(*args)
    assert text.returncode == 0, text.stderr
    assert text.stdout.count("1024 x global_pool") == 1
    assert "1024 GPUs of global_pool (128 nodes x GPUs 0-7" in text.stdout
    assert len(text.stdout.splitlines()) < 80
    doc = json.loads(run(*args, "--format", "json").stdout)
    assert len(doc["gpus"]) == 1024 and {g["node"] for g in doc["gpus"]} == {f"node{i}" for i in range(128)}


def test_a_verl_example_script_on_a100s():
    proc = run(str(DATA / "examples__grpo_trainer__run_qwen2-7b_seq_balance.sh"), "--gpus", "8xA100-80GB")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Qwen/Qwen2-7B-Instruct: 7.62B params" in proc.stdout and "memory per GPU (GiB):" in proc.stdout
    # the script rolls out with SGLang (modelled from its code): the numbers and a verdict
    assert "rollout engine: sglang weights" in proc.stdout and "KV cache (rollout, sglang)" in proc.stdout
    assert "memory.not_modelled" not in proc.stdout
    script = str(DATA / "examples__grpo_trainer__run_qwen2-7b_seq_balance.sh")
    doc = json.loads(run(script, "--gpus", "8xA100-80GB", "--format", "json").stdout)
    assert doc["fits"] is True and doc["verdict"] == "fits" and doc["fits_reason"] is None
    gpu = doc["gpus"][0]
    assert gpu["peak_gib"] < gpu["capacity_gib"] == 80.0
    assert {"engine_rollout", "graphs_rollout", "engine_rollout_runtime"} <= set(gpu["breakdown"]["generation"]["terms"])


def test_a_local_model_folder_and_overrides(tmp_path):
    model = write_tiny_model(tmp_path / "q7", config={
        "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
        "num_key_value_heads": 4, "vocab_size": 152064, "tie_word_embeddings": False,
        "max_position_embeddings": 32768})
    base = ["algorithm.adv_estimator=grpo", f"{R}.name=vllm", f"{R}.n=4", "data.train_batch_size=64",
            "actor_rollout_ref.actor.ppo_mini_batch_size=16", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
            f"{R}.log_prob_micro_batch_size_per_gpu=4", "trainer.n_gpus_per_node=4", f"{R}.tensor_model_parallel_size=2",
            "trainer.resume_mode=disable", f"actor_rollout_ref.model.path={model}"]
    proc = run("--gpus", "4xH100-80GB", "--format", "json", "--", *base)
    doc = json.loads(proc.stdout)
    # the folder has a config and a tokenizer but no weights: that is the one error, the plan is still made
    assert proc.returncode == 1 and [f["rule"] for f in doc["findings"] if f["severity"] == "error"] == [
        "models.weights_missing"]
    assert doc["fits"] is True
    assert len(doc["gpus"]) == 4
    params = doc["gpus"][0]["breakdown"]["actor_update"]["terms"]["actor_params"]
    assert params == pytest.approx(4 * 7_615_616_512 / 4 / 2**30, abs=0.01)  # fp32, 4 shards
    text = run("--gpus", "4xH100-80GB", *[f"--set={o}" for o in base])
    assert f"actor   {model}: 7.62B params" in text.stdout and "(local)" in text.stdout


def test_a_cluster_spec_of_pcie_nodes_warns_about_tp_groups(tmp_path):
    spec = tmp_path / "cluster.yaml"
    spec.write_text("nodes:\n  - count: 1\n    gpus: 8\n    gpu: L40S-48GB\n    interconnect: pcie\n")
    proc = run("--preset", "grpo-8gpu", "--cluster", str(spec), "--set",
               "actor_rollout_ref.model.path=Qwen/Qwen2.5-1.5B-Instruct", "--format", "json")
    doc = json.loads(proc.stdout)
    tp = [f for f in doc["findings"] if f["rule"] == "placement.tp_link"]
    assert tp and "over PCIe" in tp[0]["message"]
    assert doc["gpus"][0]["capacity_gib"] == 44.99  # 46,068 MiB as NVML reports it, not 48 GiB


def test_without_a_gpu_model_there_is_no_memory_verdict():
    proc = run("--preset", "grpo-8gpu", "--gpus", "8")
    assert proc.returncode == 0, proc.stderr
    assert "No memory estimate" in proc.stdout and "global_pool: 8 x 1 node(s)" in proc.stdout
    doc = json.loads(run("--preset", "grpo-8gpu", "--gpus", "8", "--format", "json").stdout)
    # no verdict is not "does not fit": fits is null, with the reason
    assert doc["fits"] is None and doc["verdict"] is None and doc["gpus"] == []
    assert doc["fits_reason"].startswith("the GPUs' memory is unknown")
    assert any(f["rule"] == "memory.unknown" and f["severity"] == "info" for f in doc["findings"])


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    assert_one_line_error(run("--preset", "grpo-8gpu", "--gpus", "8xNOPE-1GB"), "unknown GPU model")
    assert_one_line_error(run("--preset", "grpo-8gpu", "--gpus", "8xH100-80GB", "--cluster", "x.yaml"),
                          "give one of --gpus, --cluster, --ray-address")
    assert_one_line_error(run(str(tmp_path / "missing.sh"), "--gpus", "8xH100-80GB"), "missing.sh")
    assert_one_line_error(run("--gpus", "8xH100-80GB"), "give a config")
    assert_one_line_error(run("--preset", "nope"), "no preset 'nope'")


SEVEN_B = "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct"


def test_plan_json_gives_the_step_time_and_the_advisors_alternatives():
    proc = run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--set", SEVEN_B, "--format", "json")
    doc = json.loads(proc.stdout)
    assert doc["verdict"] == "does_not_fit" and doc["step_seconds"] > 0 and doc["step_reason"] is None
    assert {"gen", "old_log_prob", "update_actor", "update_weights"} <= set(doc["phases_seconds"])
    # each phase's seconds are its terms', each with the arithmetic that gave it
    for name, seconds in doc["phases_seconds"].items():
        terms = doc["phases_terms"][name]
        assert all(set(t) == {"label", "seconds", "note"} for t in terms)
        assert sum(t["seconds"] for t in terms) == pytest.approx(seconds, abs=0.01)
    assert any(t["label"] == "FLOPs" and "TFLOP/s" in t["note"] for t in doc["phases_terms"]["update_actor"])
    assert "the longest phase: actor update" in run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--set",
                                                    SEVEN_B).stdout
    assert doc["advice"], doc
    for alt in doc["advice"]:
        assert set(alt) == {"overrides", "fits", "verdict", "peak_gib", "step_seconds", "changes", "kind", "host_gib"}
        assert alt["kind"] in ("tuning", "method", "hardware") and alt["peak_gib"] > 0
    best = doc["advice"][0]
    assert best["fits"] and best["kind"] == "tuning"
    # the first alternative, applied, plans as it said
    sets = [w for o in best["overrides"] for w in ("--set", o)]
    again = json.loads(run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--set", SEVEN_B, *sets,
                           "--format", "json").stdout)
    assert again["fits"] is True and max(g["peak_gib"] for g in again["gpus"]) == pytest.approx(best["peak_gib"], abs=0.05)


def test_plan_says_plainly_when_nothing_on_this_gpu_fits_and_prints_no_negative_sizes():
    proc = run("--preset", "grpo-1gpu-smoke", "--gpus", "1xRTX-4090-24GB", "--set", SEVEN_B)
    assert proc.returncode == 1
    assert "Nothing on this 24 GiB GPU fits Qwen/Qwen2.5-7B-Instruct full fine-tuning: it needs >= " in proc.stdout
    assert "Qwen/Qwen2.5-3B-Instruct" in proc.stdout  # a smaller model of the family, as a change of method
    assert not re.search(r"-\d+(\.\d+)? GiB", proc.stdout), proc.stdout
    assert "KV cache (rollout, vllm): no room" in proc.stdout and "nothing free" in proc.stdout
    # the alternatives are printed once: the three memory findings point at them instead of repeating them
    assert proc.stdout.count("Nothing on this 24 GiB GPU fits") == 1
    memory = [line for line in proc.stdout.splitlines() if line.lstrip().startswith("error   memory.")]
    assert len(memory) == 3 and proc.stdout.count("fix: 'fastest that fits' above") == 3
    check = run_cli("check", "--preset", "grpo-1gpu-smoke", "--gpus", "1xRTX-4090-24GB", "--set", SEVEN_B)
    assert check.stdout.count("Nothing on this 24 GiB GPU fits") == 1
    assert check.stdout.count("fix: the same as memory.engine_start's above") == 2


def test_check_fix_applies_the_config_that_fits_and_exits_1_while_an_error_remains():
    fits = run_cli("check", "--fix", "--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--set", SEVEN_B)
    assert fits.returncode == 0, fits.stderr
    # the preset's experiment name follows the model: its checkpoints are not filed under the 0.5B's name
    assert "trainer.experiment_name=grpo_smoke_qwen2.5_7b\n" in fits.stdout and "0.5b" not in fits.stdout
    assert "actor_rollout_ref.actor.fsdp_config.offload_policy=True" in fits.stdout and "still an error" not in fits.stderr
    assert not fits.stdout.startswith("--config-name")  # verl's default config: nothing to name
    stuck = run_cli("check", "--fix", "--preset", "grpo-1gpu-smoke", "--gpus", "1xRTX-4090-24GB", "--set", SEVEN_B)
    assert stuck.returncode == 1 and "still an error: memory." in stuck.stderr
    # what it could not apply is said, once: nothing on this GPU fits, and the changes of method that would
    assert stuck.stderr.count("Nothing on this 24 GiB GPU fits Qwen/Qwen2.5-7B-Instruct") == 1
    assert "fix (not applied by --fix): " in stuck.stderr and "Qwen/Qwen2.5-3B-Instruct" in stuck.stderr


def test_the_fix_offered_is_the_first_alternative_that_asks_nothing_of_host_ram_nobody_knows():
    """3B on 2 x A100-40GB: rollout TP 2 and FSDP2 without checkpointing are both about 17 s a step, and TP 2 needs
    67 GiB of a host --gpus says nothing of. `plan` names the FSDP2 one to apply and `check --fix` offers it (the
    window preselects the same row: Advice.pick)."""
    args = ("--preset", "grpo-1gpu-smoke", "--gpus", "2xA100-40GB", "--set",
            "actor_rollout_ref.model.path=Qwen/Qwen2.5-3B-Instruct", "--no-data")
    out = run(*args).stdout
    lines = out.splitlines()
    first = next(x for x in lines if x.startswith("  1) "))
    assert "rollout TP 1 -> 2" in first and "(unknown here)" in first
    apply = next(x for x in lines if x.startswith("  apply "))
    assert apply.startswith("  apply 2), the first that asks nothing of host RAM not known here, with: ")
    assert "strategy=fsdp2" in apply and "tensor_model_parallel_size" not in apply
    checked = run_cli("check", *args[:-1]).stdout  # the finding's fix says which of those it lists it applies
    assert "; the fix applies 2), the first that asks nothing of host RAM not known here" in checked
    fixed = run_cli("check", "--fix", *args[:-1])
    told = next(x for x in fixed.stderr.splitlines() if "to apply its fix" in x)
    assert "strategy=fsdp2" in told and "tensor_model_parallel_size" not in told


def test_plan_judges_the_train_file_the_config_names_with_the_models_tokenizer(tmp_path):
    from tests.helpers.tiny_data import write_gsm8k_like

    model = write_tiny_model(tmp_path / "model")
    data = write_gsm8k_like(tmp_path / "train.parquet", 300)
    proc = run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--set", f"actor_rollout_ref.model.path={model}",
               "--set", f"data.train_files={data}", "--format", "json")
    doc = json.loads(proc.stdout)
    got = doc["data"]
    assert got["rows"] == 300 and "tokenizer" in got["how"]
    # "<|im_start|> user how many is 7 and 7 <|im_end|>" and the generation prompt: a handful of tokens each
    assert 3 <= got["prompt_tokens_mean"] <= 20 and got["prompt_tokens_p95"] >= got["prompt_tokens_mean"]
    assert got["verdict"].startswith(f"your prompts average {got['prompt_tokens_mean']} tokens")
    # the step time is predicted at those prompts, not at max_prompt_length
    assert any(f"prompts average {got['prompt_tokens_mean']} tokens (the train file's)" in a
               for a in doc["step_assumptions"])
    text = run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--set", f"actor_rollout_ref.model.path={model}",
               "--set", f"data.train_files={data}", "--response-tokens", "100").stdout
    assert "on your data (300 rows, prompts tokenized with" in text and "responses average 100 tokens (as given)" in text


def test_plan_says_why_it_did_not_judge_the_data():
    doc = json.loads(run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--set",
                         "data.train_files=/nonexistent/train.parquet", "--format", "json").stdout)
    assert doc["data"] is None and doc["data_reason"].startswith("/nonexistent/train.parquet")
    bad = run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--response-tokens", "0")
    assert_one_line_error(bad, "--response-tokens")


def test_plan_forecasts_the_run_from_the_predicted_step(tmp_path):
    from tests.helpers.tiny_data import write_gsm8k_like

    data = write_gsm8k_like(tmp_path / "train.parquet", 640)
    doc = json.loads(run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--set", f"data.train_files={data}",
                         "--set", "trainer.total_training_steps=null", "--set", "trainer.total_epochs=2",
                         "--format", "json").stdout)
    fc = doc["forecast"]
    batch = 16  # the preset's data.train_batch_size
    assert fc["steps"] == 2 * (640 // batch) and fc["schedule"].startswith("2 epochs")
    assert fc["training_s"] == pytest.approx(fc["steps"] * doc["step_seconds"], rel=0.01)
    assert any("start-up" in a for a in fc["assumptions"])


def test_plan_takes_the_mean_response_from_a_smoke_run():
    run_folder = Path(__file__).resolve().parents[1] / "data" / "verl-run-h200"  # its last step: 326.7 tokens
    doc = json.loads(run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--response-tokens-from",
                         str(run_folder), "--format", "json").stdout)
    worst = json.loads(run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--format", "json").stdout)
    assert any("responses average 327 tokens (as given)" in a for a in doc["step_assumptions"])
    assert doc["step_seconds"] < worst["step_seconds"]  # shorter responses than max_response_length: a shorter step
    assert_one_line_error(run("--preset", "grpo-1gpu-smoke", "--response-tokens-from", "/nonexistent"),
                          "--response-tokens-from")


def test_the_alternatives_step_times_assume_the_stated_response_length_too():
    """7B on one H100: the advisor's alternatives are timed at the mean response the user states, as the plan is."""
    short = json.loads(run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--set", SEVEN_B,
                           "--response-tokens", "128", "--format", "json").stdout)
    worst = json.loads(run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--set", SEVEN_B,
                           "--format", "json").stdout)
    best_short, best_worst = short["advice"][0], worst["advice"][0]
    assert best_short["step_seconds"] < best_worst["step_seconds"]
    # the short-response choice planned at each length: the stated one gives the step time it was offered with
    sets = [w for o in best_short["overrides"] for w in ("--set", o)]
    at = {extra: json.loads(run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--set", SEVEN_B, *sets,
                                *extra, "--format", "json").stdout)["step_seconds"]
          for extra in (("--response-tokens", "128"), ())}
    assert at[("--response-tokens", "128")] == pytest.approx(best_short["step_seconds"], abs=0.05)
    assert at[("--response-tokens", "128")] < at[()]
    # the memory findings' fix names the same step times as the alternatives printed
    fix = next(f["fix"] for f in short["findings"] if f["rule"].startswith("memory."))
    from wizard.core.steptime.terms import seconds_text
    assert f"about {seconds_text(best_short['step_seconds'])} s per step" in fix


SMALL = ["algorithm.adv_estimator=grpo", f"{R}.name=vllm", f"{R}.n=4", "data.train_batch_size=8",
         "actor_rollout_ref.actor.ppo_mini_batch_size=8", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
         f"{R}.log_prob_micro_batch_size_per_gpu=2", "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2",
         f"{R}.tensor_model_parallel_size=1", "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct"]


def test_gpus_size_the_trainer_of_a_command_line_without_a_preset():
    """verl's default trainer asks for 8 GPUs; --gpus 1xRTX4090 once planned 8 GPUs, 7 of them 'memory unknown'."""
    doc = json.loads(run("--gpus", "1xRTX4090-24GB", "--format", "json", "--", *SMALL).stdout)
    assert doc["verdict"] in ("fits", "tight") and len(doc["gpus"]) == 1 and doc["gpus"][0]["capacity_gib"] == 23.99  # NVML: 24,564 MiB
    assert not [f for f in doc["findings"] if f["rule"] in ("gpus.available", "memory.unknown")]
    sized = [f for f in doc["findings"] if f["rule"] == "gpus.sized"]
    assert sized and "trainer.nnodes=1 trainer.n_gpus_per_node=1" in sized[0]["fix"]


def test_a_size_the_command_line_sets_is_kept_and_the_conflict_named_in_one_line():
    proc = run("--gpus", "1xRTX4090-24GB", "--", *SMALL, "trainer.n_gpus_per_node=8")
    verdict = next(line for line in proc.stdout.splitlines() if line.startswith("verdict:"))
    assert "trainer.n_gpus_per_node=8" in verdict and "set trainer.nnodes=1 trainer.n_gpus_per_node=1" in verdict
    assert "name the GPU model" not in proc.stdout and "gpus.available" in proc.stdout


def test_a_plan_file_is_reshaped_for_gpus_as_a_preset_is(tmp_path):
    out = tmp_path / "gen"
    assert run_cli("generate", "--preset", "grpo-8gpu", "--gpus", "8xH100-80GB", "--out", str(out)).returncode in (0, 1)
    doc = json.loads(run(str(out / "plan.json"), "--gpus", "2xH100-80GB", "--format", "json").stdout)
    assert len(doc["gpus"]) == 2 and not [f for f in doc["findings"] if f["rule"] == "gpus.available"]


def test_the_plan_table_says_what_its_columns_and_parallel_sizes_are():
    text = run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB").stdout
    assert "has: each GPU's memory" in text and "sync: weight sync" in text and "gen: generation" in text
    assert "(GPUs in tensor x data x pipeline parallel)" in text
    assert "the batch sends" not in text and "the step puts 64 on each replica at once" in text


def test_a_2048_node_cluster_spec_plans_two_of_its_nodes_as_a_2_node_spec_does(tmp_path):
    """A spec at the wizard's limit of 16,384 GPUs is planned (placement, memory, host, findings) like the
    small cluster it uses; only the advice, which may offer the other nodes, differs."""
    docs = {}
    for nodes in (2, 2048):
        path = tmp_path / f"{nodes}.yaml"
        path.write_text(f"cluster: {nodes}x8xH100-80GB nvlink\n")
        proc = run("--preset", "grpo-8gpu", "--set", "trainer.nnodes=2", "--cluster", str(path), "--format", "json")
        assert proc.returncode == 0, proc.stderr
        docs[nodes] = json.loads(proc.stdout)
    small, big = docs[2], docs[2048]
    assert big["verdict"] == small["verdict"] == "fits"
    for key in ("gpus", "host", "findings", "step_seconds", "phases_seconds"):
        assert big[key] == small[key], key
    assert any("of 2048" in a["changes"] for a in big["advice"])


def test_a_ppo_plan_too_big_for_its_gpus_is_fitted_by_the_critics_savings_too():
    """The PPO preset on one 24 GB GPU: nothing fits, and the statement names how many such GPUs it needs. Its bound
    counts every saving at once, the critic's too (offload, its FSDP2 offload policy, checkpointing, a token budget
    of one sample): without the critic's it said 32 on 8 x 24 GB, while 16 fit; without the critic's offload policy
    16, while 2 fit."""
    def doc(gpus: int) -> dict:
        return json.loads(run("--preset", "ppo-8gpu", "--gpus", f"{gpus}xRTX-4090-24GB", "--set",
                              f"trainer.n_gpus_per_node={gpus}", "--set",
                              f"actor_rollout_ref.rollout.tensor_model_parallel_size={gpus}", "--format", "json").stdout)

    one = doc(1)
    assert one["fits"] is False and not [a for a in one["advice"] if a["fits"] and a["kind"] != "method"]
    need = int(re.search(r"it needs >= (\d+) such GPUs", one["advice_statement"]).group(1))
    # two of them fit once the critic's own savings are searched (and the statement does not overstate it)
    two = [a for a in doc(2)["advice"] if a["fits"] and a["kind"] == "tuning"]
    assert two and "critic.fsdp.offload_policy=True" in two[0]["overrides"] and need == 2


def test_a_plan_that_fits_only_tightly_is_not_told_that_nothing_fits():
    """32B Megatron TP 4 PP 2 squeezed onto one node: FITS, TIGHT above, and below it the advice said "Nothing on
    these 8 x 80 GiB GPUs fits"; it now says it fits only tightly and what gives it the margin (megatron-core's CPU
    optimizer: 51.7 GiB). Responses of 1,536 tokens: at the script's 2,048 the update's logits (16 bytes a logit element
    since the H100 runs) make it fit only while samples are short."""
    script = str(Path(__file__).resolve().parents[1] / "data" / "megatron" / "grpo_qwen2.5-32b_tp4_pp2.sh")
    shorter = ("--set", "data.max_response_length=1536")
    proc = run(script, "--gpus", "8xH100-80GB", "--set", "trainer.nnodes=1", *shorter)
    assert "verdict: FITS, TIGHT" in proc.stdout
    assert "Nothing on" not in proc.stdout and "fastest that fits" not in proc.stdout, proc.stdout
    assert "with room to spare (it fits only tightly now):" in proc.stdout
    doc = json.loads(run(script, "--gpus", "8xH100-80GB", "--set", "trainer.nnodes=1", *shorter,
                         "--format", "json").stdout)
    assert doc["fits"] is True and doc["advice_statement"] is None  # something gives it the margin: no statement
    assert doc["advice"][0]["fits"] and "CPU optimizer" in doc["advice"][0]["changes"]
    # check --fix leaves a warning's fix to the user, and says so with the overrides that apply it (it said nothing);
    # the script's trainer.nnodes=2 and the --set after it come out once, the last
    fixed = run_cli("check", script, "--gpus", "8xH100-80GB", "--set", "trainer.nnodes=1", *shorter, "--fix")
    assert fixed.returncode == 0, fixed.stderr
    left = [ln for ln in fixed.stderr.splitlines() if ln.startswith("left as a warning: memory.gpu_tight")]
    assert len(left) == 1 and "--set ++actor_rollout_ref.actor.optim.override_optimizer_config." in left[0], fixed.stderr
    assert [ln for ln in fixed.stdout.splitlines() if ln.startswith("trainer.nnodes=")] == ["trainer.nnodes=1"]
    # and no alternative is another with a change added that gains under 1 % ("micro-batch 2 -> 1, 7B: 518 s" was
    # offered above "7B: 519 s")
    for a in doc["advice"]:
        for b in doc["advice"]:
            if set(a["overrides"]) < set(b["overrides"]) and a["fits"] >= b["fits"]:
                assert b["step_seconds"] <= 0.99 * a["step_seconds"], (a["changes"], b["changes"])


def test_a_response_length_stated_past_what_fits_is_an_error_and_under_it_says_so():
    """8,192-token responses on 8 x H100: fits while samples average <= 4,611 tokens. Told responses average
    8,000, plan said FITS WHILE ... and exited 0; those samples (8,512) do not fit."""
    base = ("--preset", "grpo-8gpu", "--gpus", "8xH100-80GB", "--set", "data.max_response_length=8192")
    over = run(*base, "--response-tokens", "8000")
    assert over.returncode == 1, over.stdout
    line = next(x for x in over.stdout.splitlines() if "memory.gpu_oom_long" in x)
    assert line.lstrip().startswith("error") and "Does not fit at the lengths you stated" in line
    assert "responses averaging 8,000 tokens: samples of 8,512" in line
    # the headline and the JSON say what the error says (they once said FITS WHILE SAMPLES AVERAGE <= ...)
    head = next(x for x in over.stdout.splitlines() if x.startswith("verdict:"))
    assert head.startswith("verdict: DOES NOT FIT AT THE STATED LENGTHS (SAMPLES OF 8,512 TOKENS"), head
    doc = json.loads(run(*base, "--response-tokens", "8000", "--format", "json").stdout)
    assert (doc["verdict"], doc["fits"]) == ("does_not_fit", False) and doc["fits_up_to_avg_tokens"] < 8512
    under = run(*base, "--response-tokens", "3000")
    assert under.returncode == 0, under.stdout
    line = next(x for x in under.stdout.splitlines() if "memory.gpu_oom_long" in x)
    assert line.lstrip().startswith("warning") and "samples of 3,512" in line
    assert next(x for x in under.stdout.splitlines() if x.startswith("verdict:")).startswith(
        "verdict: OVER MEMORY AT THE CONFIGURED LENGTHS; FITS WHILE SAMPLES AVERAGE <=")
    # nothing stated: the length-conditional warning as before
    assert "at the lengths you stated" not in run(*base).stdout


@pytest.mark.parametrize("key", ["data.max_response_length", "data.max_prompt_length"])
@pytest.mark.parametrize("value", ["0", "-1"])
def test_a_length_below_one_token_is_an_error(key, value):
    proc = run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--set", f"{key}={value}")
    assert proc.returncode == 1 and "Traceback" not in proc.stdout + proc.stderr
    assert f"data.lengths: {key} = {value}:" in proc.stdout


def test_a_config_asking_for_more_gpus_than_the_cluster_has_gets_no_verdict_step_or_forecast():
    """Two nodes of eight on one node of eight: plan drew the eight missing GPUs, said FITS and a 16-GPU step time
    while the error below said verl refuses the run."""
    proc = run("--preset", "grpo-8gpu", "--gpus", "8xH100-80GB", "--set", "trainer.nnodes=2")
    assert proc.returncode == 1 and "verdict: FITS" not in proc.stdout
    assert "step time: not predicted (the config asks for 16 GPUs and the cluster has 8" in proc.stdout
    doc = json.loads(run("--preset", "grpo-8gpu", "--gpus", "8xH100-80GB", "--set", "trainer.nnodes=2",
                         "--format", "json").stdout)
    assert doc["fits"] is None and doc["verdict"] is None and doc["step_seconds"] is None
    assert doc["forecast"] is None and "gpus.available" in {f["rule"] for f in doc["findings"]}


def test_a_change_of_method_is_explained_says_what_it_replaces_and_can_be_applied():
    """PPO on 8 x H100 fits; the faster configs that swap the model swap it for the critic too: said, with the
    keys (a tuning one, checkpointing off with micro-batches of 4, comes first)."""
    out = run("--preset", "ppo-8gpu", "--gpus", "8xH100-80GB").stdout
    line = next(x for x in out.splitlines() if "(1.5B, as actor and critic)" in x)
    assert "[method]" in line
    assert "[method]: changes what is trained (LoRA adapters, or a smaller model), not only how" in out
    doc = json.loads(run("--preset", "ppo-8gpu", "--gpus", "8xH100-80GB", "--format", "json").stdout)
    assert doc["advice"][0]["kind"] == "tuning"
    method = next(a for a in doc["advice"] if a["kind"] == "method")
    assert {"actor_rollout_ref.model.path=Qwen/Qwen2.5-1.5B-Instruct",
            "critic.model.path=Qwen/Qwen2.5-1.5B-Instruct"} <= set(method["overrides"])
    # where only a change of method fits (the 7B on one 24 GB GPU), its keys are printed as the line to apply
    out = run("--preset", "grpo-1gpu-smoke", "--gpus", "1xRTX4090-24GB", "--set", SEVEN_B).stdout
    line = next(x for x in out.splitlines() if "to change the method instead" in x)
    assert "--set actor_rollout_ref.model." in line


def test_no_forecast_for_a_plan_that_does_not_fit():
    out = run("--preset", "grpo-1gpu-smoke", "--gpus", "1xRTX-4090-24GB", "--set",
              "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct").stdout
    assert "verdict: DOES NOT FIT" in out
    assert "forecast: none: the plan does not fit these GPUs" in out and " h " not in out.split("forecast:")[1][:80]


def test_the_apply_line_says_which_other_errors_remain_and_check_fix_clears_them():
    """14B LoRA on one H200: the advisor's first fixes memory (FSDP2, no checkpointing); the base model's first sync
    is still over the sync buffer (models.lora_base_sync_bucket), which the apply line said nothing about."""
    args = ("--preset", "grpo-1gpu-smoke", "--gpus", "1xH200-141GB", "--set",
            "actor_rollout_ref.model.path=Qwen/Qwen2.5-14B-Instruct", "--set", "actor_rollout_ref.model.lora_rank=32")
    out = run(*args).stdout
    note = next(x for x in out.splitlines() if "(that fixes memory;" in x)
    assert "models.lora_base_sync_bucket" in note and "check --fix" in note
    fixed = run_cli("check", *args, "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    # either takes the base's first sync under the buffer: vLLM loading the base, or the base (embedding) in bf16
    assert re.search(r"fixed: \S*(rollout.load_format=safetensors|fsdp_config.model_dtype=bf16)", fixed.stderr)


def test_the_apply_line_names_only_the_errors_the_first_alternative_leaves():
    """LoRA 32 on the 2-node preset: the first alternative has vLLM load the base (a layer at a time), which also
    takes LoRA's first sync off the weight-sync buffer; the note said models.lora_base_sync_bucket "still stops the
    run" after it."""
    args = ("--preset", "grpo-2node", "--gpus", "2x8xH100-80GB", "--no-data", "--set",
            "actor_rollout_ref.model.lora_rank=32")
    out = run(*args).stdout
    first = next(x for x in out.splitlines() if x.startswith("  apply the first with: "))
    assert "load_format=safetensors" in first and "error   models.lora_base_sync_bucket" in out
    assert "(that fixes memory;" not in out
    # where an error is left, it is still named (7B LoRA on 40 GB GPUs: see the test above)


def test_a_stated_response_length_past_the_maximum_is_said_to_be_capped():
    out = run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--response-tokens", "2000").stdout
    assert "responses average 512 tokens (given 2,000, capped at data.max_response_length)" in out
    out = run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--response-tokens", "200").stdout
    assert "responses average 200 tokens (as given)" in out


def test_a_lora_plan_over_the_host_ram_a_spec_states_is_fixed_by_vllm_loading_the_base(tmp_path):
    """Qwen2.5-14B with LoRA on one H200 of 125 GiB host RAM, from vLLM's dummy weights: Ray killed that run on the
    lent H200 at the first weight sync (bench/data/verl_real/advised-grpo-14b-1gpu). The spec's memory_gib is read,
    plan says it does not fit for host memory; the first alternative (the base in bf16: half the base's copies on the
    host, and room for no checkpointing) fits GPU and host when planned again, and check --fix exits 0."""
    spec = tmp_path / "h200.yaml"
    spec.write_text("nodes:\n  - {gpus: 1, gpu: H200-141GB, memory_gib: 125}\n")
    args = ("--preset", "grpo-1gpu-smoke", "--cluster", str(spec), "--no-data",
            "--set", "actor_rollout_ref.model.path=Qwen/Qwen2.5-14B-Instruct", "--set", "actor_rollout_ref.model.lora_rank=32",
            "--set", "actor_rollout_ref.actor.strategy=fsdp2", "--set", "actor_rollout_ref.ref.strategy=fsdp2")
    out = run(*args).stdout
    assert "host node0: about 125 GiB of 125 GiB" in out
    assert "verdict: DOES NOT FIT: a node needs more host memory than Ray lets the run use" in out
    doc = json.loads(run(*args, "--format", "json").stdout)
    assert doc["verdict"] == "does_not_fit" and doc["fits_cause"] == "host"
    (node,) = doc["host"]["nodes"]
    assert node["ram_gib"] == 125 and node["limit_gib"] == 118.75 and node["over"] is True and node["need_gib"] > 118.75
    first = doc["advice"][0]
    assert first["fits"] and first["host_gib"] < 118.75
    again = json.loads(run(*args, *[w for o in first["overrides"] for w in ("--set", o)], "--format", "json").stdout)
    assert again["verdict"] == "fits" and not again["host"]["nodes"][0]["over"]
    assert again["host"]["nodes"][0]["need_gib"] == pytest.approx(first["host_gib"], abs=0.1)
    fixed = run_cli("check", *[a for a in args if a != "--no-data"], "--fix")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert f"fixed: {first['overrides'][0]}" in fixed.stderr


def test_where_the_nodes_ram_is_unknown_an_alternative_says_what_the_host_must_hold():
    """14B LoRA on one H200 given as --gpus (no RAM known): the fastest alternative keeps the base's copies on the
    host (vLLM's pinned copy asleep, the trainer's gather of the base at the first sync: over 64 GiB), and says so."""
    args = ("--preset", "grpo-1gpu-smoke", "--gpus", "1xH200-141GB", "--no-data", "--set",
            "actor_rollout_ref.model.path=Qwen/Qwen2.5-14B-Instruct", "--set", "actor_rollout_ref.model.lora_rank=32")
    first = next(x for x in run(*args).stdout.splitlines() if x.startswith("  1) "))
    m = re.search(r"host RAM about (\d+) GiB a node \(unknown here\)$", first)
    assert m and int(m.group(1)) > 64
    advice = json.loads(run(*args, "--format", "json").stdout)["advice"]
    assert round(advice[0]["host_gib"]) == int(m.group(1)) and all("host_gib" in a for a in advice)


def test_where_the_host_not_the_gpus_is_short_the_statement_says_so_and_lora_is_listed(tmp_path):
    """14B full fine-tuning on one node of 8 H100s with 125 GiB of RAM: every memory saving fits the GPUs but a node
    then needs 149 GiB; it was told "needs >= 16 such GPUs" and offered smaller models only, while LoRA with the
    rollout over 8 GPUs fits (its TP was past the beam's reach)."""
    spec = tmp_path / "node.yaml"
    spec.write_text("nodes:\n  - {gpus: 8, gpu: H100-80GB, memory_gib: 125}\n")
    out = run("--preset", "grpo-8gpu", "--cluster", str(spec), "--no-data", "--set",
              "actor_rollout_ref.model.path=Qwen/Qwen2.5-14B-Instruct").stdout
    assert "fits Qwen/Qwen2.5-14B-Instruct full fine-tuning within the host's RAM" in out
    assert "needs >= " not in out and ">= 16 such GPUs hold it within that RAM" in out
    assert "forecast: none: the plan does not fit this machine's host RAM" in out
    lora = [x for x in out.splitlines() if re.match(r"  [1-4]\) .*LoRA rank 32", x)]
    assert lora and "rollout TP 2 -> 8" in lora[0] and "fits" in lora[0]


def test_no_alternative_turns_a_knob_and_then_turns_it_back():
    """14B LoRA on one H200: "FSDP2 with the CPU offload policy, ..., the smaller 3B, no CPU offload policy" read
    as two contradicting changes of one key."""
    out = run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH200-141GB", "--no-data", "--set",
              "actor_rollout_ref.model.path=Qwen/Qwen2.5-14B-Instruct", "--set",
              "actor_rollout_ref.model.lora_rank=32").stdout
    lines = [x for x in out.splitlines() if re.match(r"  \d\) ", x)]
    assert lines and not any("CPU offload policy" in x and "no CPU offload policy" in x for x in lines)


def test_check_fix_on_a_preset_prints_each_key_once_with_the_users_value():
    """`check --preset ... --set model.path=... --fix` printed the preset's model.path and then the user's: pasted
    back, the later won, but the list read as two models."""
    fixed = run_cli("check", "--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--set",
                    "actor_rollout_ref.model.path=Qwen/Qwen2.5-1.5B-Instruct", "--fix")
    paths = [x for x in fixed.stdout.splitlines() if x.startswith("actor_rollout_ref.model.path=")]
    assert paths == ["actor_rollout_ref.model.path=Qwen/Qwen2.5-1.5B-Instruct"], fixed.stdout


def _negatives(doc, path=""):
    if isinstance(doc, dict):
        return [n for k, v in doc.items() for n in _negatives(v, f"{path}.{k}")]
    if isinstance(doc, list):
        return [n for i, v in enumerate(doc) for n in _negatives(v, f"{path}[{i}]")]
    return [(path, doc)] if isinstance(doc, (int, float)) and not isinstance(doc, bool) and doc < 0 else []


@pytest.mark.parametrize("engine,short", [("vllm", 7.58), ("sglang", 16.22)])
def test_no_room_for_a_kv_cache_is_zero_gib_and_a_shortfall_in_json_not_a_negative_size(engine, short):
    """Mixtral-8x7B on 8 x H100 with FSDP and rollout TP 2: the text says 'no room (N GiB short)'; the JSON gives
    kv_gib_per_gpu 0 and the shortfall, and no negative number anywhere."""
    proc = run("--no-data", "--gpus", "8xH100-80GB", "--format", "json", "--",
               "actor_rollout_ref.model.path=mistralai/Mixtral-8x7B-Instruct-v0.1", f"{R}.name={engine}",
               f"{R}.tensor_model_parallel_size=2")
    doc = json.loads(proc.stdout)
    kv = doc["host"]["kv_cache"]["rollout"]
    assert kv["kv_gib_per_gpu"] == 0 and kv["kv_short_gib_per_gpu"] == pytest.approx(short, abs=0.5)
    assert _negatives(doc) == []
    assert doc["verdict"] == "does_not_fit" and doc["fits_cause"] == "kv_cache"


def test_config_name_among_the_override_words_picks_verls_megatron_config_as_its_command_line_does():
    words = ["actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct", "algorithm.adv_estimator=grpo"]
    for flag in (["--config-name=ppo_megatron_trainer"], ["-cn", "ppo_megatron_trainer"]):
        proc = run_cli("plan", "--gpus", "2x8xH100-80GB", "--no-data", "--format", "json", "--", *flag, *words)
        doc = json.loads(proc.stdout)
        codes = [f["rule"] for f in doc["findings"]]
        assert "compose.syntax" not in codes, codes  # was: Hydra cannot parse '--config-name=...', then an FSDP plan
        update = [t["label"] for t in doc["phases_terms"]["update_actor"]]
        assert "pipeline bubble" in update and "gradient sync" in update, update  # Megatron's terms, not FSDP's


@pytest.mark.parametrize("typo,right", [("data.train_bach_size=32", "data.train_batch_size=32"),
                                        ("actor_rollout_ref.actor.clip_ratoi=0.3", "actor_rollout_ref.actor.clip_ratio=0.3")])
def test_check_fix_replaces_a_misspelled_key_with_the_right_one_and_ends_clean(typo, right):
    """The fix sets the right key and takes the misspelled word off: it said 'fixed:' and then 'still an error' on
    the same word (and on an actor key ended with both clip_ratio=null and ~clip_ratio)."""
    proc = run_cli("check", "--fix", "--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--set", typo)
    lines = proc.stdout.splitlines()
    assert right in lines and typo not in lines and not [w for w in lines if w.startswith("~")], lines
    assert f"fixed: {right}" in proc.stderr and "compose.unknown_key" not in proc.stderr
    assert proc.returncode == 0, proc.stderr


def test_check_fix_does_not_switch_the_engine_on_its_own_for_a_megatron_key():
    proc = run_cli("check", "--fix", "--preset", "grpo-8gpu", "--gpus", "8xH100-80GB", "--set",
                   "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2")
    assert proc.returncode == 1 and "fixed: model_engine=megatron" not in proc.stderr
    assert "fix (not applied by --fix): Switch the engine as a whole: model_engine=megatron" in proc.stderr
    assert proc.stderr.count("still an error") <= 3  # it was 32, from an FSDP config switched under its keys


def _errors_of_check(*args) -> int:
    proc = run_cli("check", "--format", "json", *args)
    return sum(f["severity"] == "error" for f in json.loads(proc.stdout)["findings"])


def _assert_fix_never_worse(args: list[str], before: int):
    """check --fix on ``args``: no more errors than before, the FSDP keys rewritten to Megatron's (no section deleted
    under keys it sets), the exit code the documented one, and the printed overrides compose cleanly."""
    proc = run_cli("check", "--fix", *args)
    left = proc.stderr.count("still an error: ")
    assert left <= before, proc.stderr  # it was 30 (of 8), 15 (of 6)
    assert proc.returncode == (1 if left else 0), proc.stderr
    lines = proc.stdout.splitlines()
    assert not [w for w in lines if "fsdp_config" in w or w.startswith("~")], lines
    assert "actor_rollout_ref.actor.megatron.param_offload=" in proc.stdout
    again = run_cli("check", "--format", "json", "--", *lines)
    assert not [f for f in json.loads(again.stdout)["findings"] if f["rule"].startswith("compose.")], again.stdout


def test_check_fix_after_switching_a_preset_to_megatron_never_ends_with_more_errors():
    args = ["--preset", "grpo-8gpu", "--gpus", "8xH100-80GB", "--set", "model_engine=megatron"]
    _assert_fix_never_worse(args, _errors_of_check(*args))


def test_check_fix_rewrites_an_fsdp_override_to_megatron_and_names_the_real_counterpart():
    words = ["model_engine=megatron", "actor_rollout_ref.actor.fsdp_config.param_offload=true",
             "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct", f"{R}.name=vllm"]
    plain = run_cli("check", "--", *words)
    assert "did you mean actor_rollout_ref.actor.megatron.param_offload?" in plain.stdout
    assert "model_config" not in plain.stdout, plain.stdout  # fields.unknown pointed at an unrelated key
    _assert_fix_never_worse(["--", *words], _errors_of_check("--", *words))


def test_check_fix_on_a_script_generated_for_megatron_never_ends_with_more_errors(tmp_path):
    out = tmp_path / "gen"
    gen = run_cli("generate", "--preset", "grpo-8gpu", "--gpus", "8xH100-80GB", "--set", "model_engine=megatron",
                  "--out", str(out), "--force")
    assert (out / "run.sh").is_file(), gen.stderr
    args = ["--gpus", "8xH100-80GB", str(out / "run.sh")]
    _assert_fix_never_worse(args, _errors_of_check(*args))


def test_a_step_under_10_s_and_its_faster_alternative_are_told_apart():
    out = run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB").stdout
    now = float(re.search(r"step time: about (\d\.\d) s", out).group(1))
    alt = float(re.search(r"1\) .* about (\d\.\d) s per step", out).group(1))
    assert alt < now, out  # both printed as 'about 9 s' before


def test_check_fix_on_a_megatron_script_keeps_its_config_name():
    script = Path(__file__).resolve().parents[1] / "data" / "megatron" / "grpo_qwen2.5-32b_tp4_pp2.sh"
    proc = run_cli("check", "--fix", "--format", "json", "--gpus", "2x8xH100-80GB", str(script))
    doc = json.loads(proc.stdout)
    assert doc["config_name"] == "ppo_megatron_trainer" and doc["overrides"]


def test_a_fitting_plan_is_offered_a_faster_pair_of_changes_neither_of_which_fits_alone_the_other_way():
    # checkpointing off alone is 1.3 GiB over a 24 GB GPU; with micro-batches of 4 it fits and is faster
    out = run("--preset", "grpo-1gpu-smoke", "--gpus", "1xRTX4090-24GB").stdout
    assert "1) gradient checkpointing off (faster, more memory), actor micro-batch 8 -> 4: " in out, out
    assert "LoRA rank" not in out  # LoRA would save 2 s of 15: not worth training adapters instead


def test_a_fitting_plan_with_nothing_faster_says_so():
    out = run("--preset", "grpo-1gpu-smoke", "--gpus", "1xRTX4090-24GB", "--set",
              "actor_rollout_ref.model.enable_gradient_checkpointing=False", "--set",
              "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4").stdout
    assert "faster, still fitting: none found (no change that still fits saves 2 % of the step; LoRA or a smaller " \
           "model is offered only where it saves a fifth)" in out, out
    # and where there is no step time to be faster than, nothing is said of it
    hf = run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--set", "actor_rollout_ref.rollout.name=hf").stdout
    assert "step time: not predicted" in hf and "faster, still fitting" not in hf
    # JSON tells the two empty lists apart: searched and none found, or not searched
    searched = json.loads(run("--preset", "grpo-1gpu-smoke", "--gpus", "1xRTX4090-24GB", "--set",
                              "actor_rollout_ref.model.enable_gradient_checkpointing=False", "--set",
                              "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4", "--format", "json").stdout)
    assert searched["advice"] == [] and searched["advice_status"] == "none_found"
    unsearched = json.loads(run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--set",
                                "actor_rollout_ref.rollout.name=hf", "--format", "json").stdout)
    assert unsearched["advice"] == [] and unsearched["advice_status"] == "not_run"
    found = json.loads(run("--preset", "grpo-1gpu-smoke", "--gpus", "1xRTX4090-24GB", "--format", "json").stdout)
    assert found["advice"] and found["advice_status"] == "found"
    # no verdict (LoRA on Megatron is not modelled): the advisor had nothing to search from
    script = str(Path(__file__).resolve().parents[1] / "data" / "megatron" / "grpo_qwen2.5-32b_tp4_pp2.sh")
    lora = json.loads(run(script, "--gpus", "8xH100-80GB", "--set", "trainer.nnodes=1", "--set",
                          "actor_rollout_ref.model.lora_rank=32", "--format", "json").stdout)
    assert lora["verdict"] is None and lora["advice"] == [] and lora["advice_status"] == "not_run"
    # and no sizes: they would be full fine-tuning's (gradients and Adam of the frozen base, 206 GiB a GPU printed)
    assert lora["gpus"] == [] and lora["host"]["nodes"] == [] and "none are shown" in lora["fits_reason"]


def test_why_there_is_no_memory_estimate_is_said_once():
    out = run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--set",
              "+actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_memory_bytes=abc").stdout
    assert out.count("does not start with actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_memory_bytes='abc'") \
        == 2, out  # the verdict line and one note (memory.not_modelled), not a second note (memory.unknown)


def test_a_nodes_host_need_is_the_larger_of_its_two_moments_and_json_gives_both():
    doc = json.loads(run("--preset", "ppo-8gpu", "--gpus", "8xH100-80GB", "--format", "json").stdout)
    [node] = doc["host"]["nodes"]
    assert node["need_gib"] == max(node["start_gib"], node["run_gib"]) > 0
    terms = node["terms"]
    # the run: every term but rank 0's read at start; the start has the read (the terms add up to neither)
    assert node["run_gib"] == pytest.approx(sum(v for k, v in terms.items() if k != "host_init"), abs=0.05)
    assert terms["host_init"] < node["start_gib"] < node["run_gib"] + terms["host_init"]


def test_where_the_host_stops_full_fine_tuning_the_statement_names_a_smaller_model_and_lora(tmp_path):
    """7B on one H100 of 125 GiB: the two changes of method named are the fastest (a smaller model) and LoRA of the
    7B itself, not the 1.5B twice (with and without checkpointing)."""
    spec = tmp_path / "h100.yaml"
    spec.write_text("nodes:\n  - {gpus: 1, gpu: H100-80GB, memory_gib: 125}\n")
    out = run("--preset", "grpo-1gpu-smoke", "--cluster", str(spec), "--set", SEVEN_B).stdout
    said = out.split("what fits on this one changes what is trained: ")[1].splitlines()[0]
    assert said.count("Qwen2.5-1.5B") == 1 and "LoRA rank" in said, said
    # the list offers each change of method once, at its fastest: the 1.5B, the 3B and LoRA of the 7B side by side
    # (the 1.5B and the 3B each twice, with and without checkpointing, had pushed LoRA past the four printed)
    listed = [x for x in out.split("fastest that fits:")[1].splitlines() if x[:4].strip().endswith(")")]
    assert [sum("Qwen2.5-1.5B" in x for x in listed), sum("Qwen2.5-3B" in x for x in listed),
            sum("LoRA rank" in x for x in listed)] == [1, 1, 1], listed


def test_each_phase_of_the_json_breakdown_labels_its_terms_with_its_own_numbers():
    """The reference pass at micro-batches of 8 packs 12,288 tokens, the old log-prob pass at 32 packs 49,152: the
    logits of each are labelled with its own count (``term_labels`` keeps the first, as the text's legend)."""
    doc = json.loads(run("--preset", "grpo-8gpu", "--gpus", "8xH100-80GB", "--no-data", "--format", "json", "--set",
                         "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8").stdout)
    phases = doc["gpus"][0]["breakdown"]
    assert all(set(p["labels"]) == set(p["terms"]) for p in phases.values())
    assert phases["old_log_prob"]["labels"]["logits"].startswith("logits (49,152 tokens")
    assert phases["ref_log_prob"]["labels"]["logits"].startswith("logits (12,288 tokens")
    assert doc["term_labels"]["logits"] == phases["old_log_prob"]["labels"]["logits"]


def test_four_gpus_on_each_of_two_nodes_are_planned_on_both_nodes_with_a_host_line_each():
    # trainer.n_gpus_per_node=4 trainer.nnodes=2 on 2 x 8 GPUs: verl's pool is [4, 4], one placement group per node
    # (the preset sets nnodes 1); it used to be planned as node0:0-7 with one host line, node1 never used
    args = ("--preset", "grpo-8gpu", "--gpus", "2x8xH100-80GB",
            "--set", "trainer.n_gpus_per_node=4", "--set", "trainer.nnodes=2")
    text = run(*args)
    assert text.returncode == 0, text.stdout + text.stderr
    out = text.stdout
    assert "global_pool: 4 x 2 node(s)" in out
    assert "8 GPUs of global_pool (node0:0-3, node1:0-3;" in out, out
    assert re.search(r"^  host node0: about \d+ GiB", out, re.M), out
    assert re.search(r"^  host node1: about \d+ GiB", out, re.M), out
    doc = json.loads(run(*args, "--format", "json").stdout)
    assert [(g["node"], g["index"]) for g in doc["gpus"]] == [("node0", i) for i in range(4)] + [
        ("node1", i) for i in range(4)]
    nodes = {n["node"]: n for n in doc["host"]["nodes"]}
    assert set(nodes) == {"node0", "node1"}
    # each node holds its own 4 ranks' share; the head node also the TaskRunner and rank 0's whole model
    assert nodes["node1"]["terms"]["host_trainer"] == nodes["node0"]["terms"]["host_trainer"]
    assert "host_fixed" in nodes["node0"]["terms"] and "host_fixed" not in nodes["node1"]["terms"]
    assert 0 < nodes["node1"]["need_gib"] < nodes["node0"]["need_gib"]


def test_a_utilization_aimed_at_the_kv_cache_is_not_labelled_for_a_model_changed_after_it():
    """7B on one 24 GB GPU: "gpu_memory_utilization 0.4 -> 0.75 (KV cache for one request), the smaller 3B": the
    0.75 was aimed at the 7B's KV cache; the 3B's at 0.75 holds hundreds of sequences."""
    doc = json.loads(run("--preset", "grpo-1gpu-smoke", "--gpus", "1xRTX4090-24GB", "--set",
                         "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct", "--format", "json").stdout)
    assert any("the smaller" in a["changes"] and "gpu_memory_utilization" in a["changes"] for a in doc["advice"])
    for a in doc["advice"]:
        text = a["changes"]
        if "KV cache for" in text and "the smaller" in text:
            assert text.index("the smaller") < text.index("KV cache for"), text


def test_a_gpu_count_without_its_model_says_the_model_is_what_is_missing():
    out = run("--preset", "grpo-8gpu", "--gpus", "8").stdout
    assert "step time: not predicted (the GPU model is not named" in out and "no GPUs given" not in out


def test_megatron_strategy_on_an_fsdp_config_says_the_engine_is_missing_not_an_optimizer():
    out = run("--preset", "grpo-8gpu", "--gpus", "8xH100-80GB", "--set", "actor_rollout_ref.actor.strategy=megatron").stdout
    head = next(x for x in out.splitlines() if x.startswith("verdict:"))
    assert "model_engine=megatron" in head and "optimizer" not in head, head


def test_the_fastest_that_fits_once_applied_is_offered_no_faster_tuning():
    """3B PPO on two 40 GB GPUs: the first choice (428 s) applied was at once offered a faster tuning (gradient
    checkpointing off with a smaller micro-batch, 401 s) that the search toward fitting had never tried."""
    base = ("--preset", "ppo-8gpu", "--gpus", "2xA100-40GB", "--set", "actor_rollout_ref.model.path=Qwen/Qwen2.5-3B-Instruct",
            "--set", "critic.model.path=Qwen/Qwen2.5-3B-Instruct")
    doc = json.loads(run(*base, "--format", "json").stdout)
    first = next(a for a in doc["advice"] if a["kind"] == "tuning" and a["fits"])
    again = json.loads(run(*base, *[w for o in first["overrides"] for w in ("--set", o)], "--format", "json").stdout)
    assert again["fits"] and again["step_seconds"] == pytest.approx(first["step_seconds"], abs=0.1)
    faster = [a for a in again["advice"] if a["kind"] == "tuning" and a["fits"]
              and a["step_seconds"] < 0.98 * again["step_seconds"]]
    assert not faster, [(a["changes"], a["step_seconds"]) for a in faster]


def test_check_fix_on_three_gpus_lands_whole_mini_batches_and_no_error():
    """The 8-GPU preset on 3 GPUs: 1,024 x 5 does not divide over 3 GPUs nor do mini-batches of 256 x 5. --fix once
    chose 1,023 and 255 (the V1 trainer then pads 20 % of each step); the batch fix now takes whole mini-batches of
    the mini-batch size the other fix leaves (1,020 = 4 x 255), and a fix whose new errors each have a fix (the
    micro-batches that divide 3 GPUs' shares) is kept, so --fix ends with no error."""
    base = ("--gpus", "3xH100-80GB", "--preset", "grpo-8gpu")
    fixed = run_cli("check", "--fix", *base)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "fixed: data.train_batch_size=1020" in fixed.stderr and "ppo_mini_batch_size=255" in fixed.stderr
    overrides = [w for line in fixed.stdout.splitlines() if "=" in line and not line.startswith("#")
                 for w in ("--set", line.strip())]
    again = run_cli("check", *base, *overrides)
    assert again.returncode == 0 and "batch.padded_step" not in again.stdout, again.stdout


def test_a_plan_file_or_preset_is_judged_on_the_gpus_it_names(tmp_path):
    """generate --gpus writes hardware.gpu into plan.json and the presets name the GPUs they were sized for; plan and
    check read them back only when --gpus was given again ("the GPUs' memory is unknown: name the GPU model")."""
    out = tmp_path / "a100"  # the 7B does not fit two 40 GB GPUs: written anyway (--force), to be judged again
    assert run_cli("generate", "--preset", "grpo-8gpu", "--gpus", "2xA100-40GB", "--force", "--out",
                   str(out)).returncode == 1  # written, with its errors said
    doc = json.loads(run(str(out / "plan.json"), "--format", "json").stdout)
    assert doc["verdict"] == "does_not_fit" and [g["capacity_gib"] for g in doc["gpus"]] == [40.0, 40.0]
    assert any(f["rule"] == "gpus.from_plan" and "2xA100-40GB" in f["message"] for f in doc["findings"])
    checked = run_cli("check", str(out / "plan.json"), "--format", "json")
    rules = [f["rule"] for f in json.loads(checked.stdout)["findings"]]
    assert checked.returncode == 1 and "gpus.from_plan" in rules and "memory.gpu_oom" in rules
    # the preset's own GPUs; --gpus still judges it on others
    assert "FITS: worst GPU" in run("--preset", "grpo-8gpu").stdout
    other = json.loads(run("--preset", "grpo-8gpu", "--gpus", "8xA100-80GB", "--format", "json").stdout)
    assert not any(f["rule"] == "gpus.from_plan" for f in other["findings"]) and other["gpus"][0]["capacity_gib"] == 80.0


def test_plan_reports_the_missing_data_files_check_does():
    # plan and check judge the same config: plan left out data.file_missing, though its forecast could not read it
    out = run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--set", "data.train_files=/nonexistent/t.parquet")
    assert "data.file_missing: data.train_files: /nonexistent/t.parquet is not on this machine" in out.stdout


def test_a_preset_resized_for_the_gpus_given_says_so():
    # the 2-node preset on one GPU was planned as 1 x 1 without a word; the same sizes as overrides get gpus.available
    for cmd in (run, lambda *a: run_cli("check", *a)):
        out = cmd("--preset", "grpo-2node", "--gpus", "1xH100-80GB").stdout
        assert "gpus.resized: preset grpo-2node's trainer of 2 x 8 GPUs is planned on the GPUs given, 1 x 1" in out
    assert "gpus.resized" not in run("--preset", "grpo-8gpu", "--gpus", "8xH100-80GB").stdout


def test_the_gpus_a_preset_or_plan_names_never_turn_its_own_bad_size_into_a_usage_error(tmp_path):
    # check reported gpus.count (exit 1) for a preset's count of -1; judged on the preset's named GPUs it exited 2 with
    # "cannot read GPU spec '-1xH100-80GB'", a spec nobody typed. The preset's GPUs are read before any override.
    bad = run_cli("check", "--preset", "grpo-8gpu", "--set", "trainer.n_gpus_per_node=-1")
    assert bad.returncode == 1 and "gpus.count" in bad.stdout and "GPUs: 8xH100-80GB, as the plan names" in bad.stdout
    over = run_cli("check", "--preset", "grpo-8gpu", "--", "trainer.n_gpus_per_node=16")
    assert over.returncode == 1 and "gpus.available" in over.stdout  # --set and a tail judge alike
    assert run_cli("generate", "--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB", "--out",
                   str(tmp_path / "p")).returncode == 0
    plan = json.loads((tmp_path / "p" / "plan.json").read_text())
    for gpu, per, said in (("8xH100", 1, "is not known"), ("H100-80GB", 100000, "not a size the machines can be")):
        plan["hardware"].update(gpu=gpu, n_gpus_per_node=per)
        path = tmp_path / f"{per}.json"
        path.write_text(json.dumps(plan))
        out = run_cli("check", str(path))
        assert out.returncode in (0, 1) and said in out.stdout, out.stdout + out.stderr


def test_a_plan_that_does_not_fit_prints_its_step_only_as_what_it_would_take_if_it_fit():
    out = run("--preset", "ppo-8gpu", "--gpus", "2xA100-40GB").stdout
    assert "verdict: DOES NOT FIT" in out and "\nstep time, if it fit: about " in out
    assert "\nstep time: about " in run("--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB").stdout
