"""Each rule fires on the mistake it names, with the numbers involved and a usable fix."""

import pytest

from wizard.core.findings import Severity, Stage
from wizard.core.hardware.gpus import parse_gpu_spec

GOOD = [
    "algorithm.adv_estimator=grpo", "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct",
    "actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.rollout.n=4", "data.train_batch_size=16",
    "actor_rollout_ref.actor.ppo_mini_batch_size=8", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8", "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
    "trainer.n_gpus_per_node=1", "trainer.nnodes=1", "trainer.logger=[console]", "trainer.resume_mode=disable",
]


def rules_of(result):
    return {f.rule for f in result.findings}


def one(result, rule):
    found = [f for f in result.findings if f.rule == rule]
    assert len(found) == 1, [f.rule for f in result.findings]
    return found[0]


def test_a_good_config_has_no_findings(check):
    assert check(GOOD).findings == []


def test_batch_not_divisible_names_numbers_and_nearest_fixes(check):
    r = check(GOOD + ["trainer.n_gpus_per_node=8", "data.train_batch_size=257", "actor_rollout_ref.rollout.n=4"])
    f = one(r, "batch.real_train_batch_size")
    assert f.stage is Stage.PREFLIGHT and f.severity is Severity.ERROR
    assert "257 x 4 = 1028" in f.message and "1028" in f.message and "8" in f.message
    # the nearest that also make whole mini-batches of 8 prompts (258 divides over the GPUs, but the V1 trainer
    # would pad every step of it: batch.padded_step)
    assert "256 or 264" in f.fix


def test_dynamic_batch_size_switches_the_divisibility_check_off(check):
    r = check(GOOD + ["trainer.n_gpus_per_node=8", "data.train_batch_size=257", "actor_rollout_ref.actor.use_dynamic_bsz=true"])
    assert "batch.real_train_batch_size" not in rules_of(r)


def test_missing_micro_batch_is_verls_default_failure(check):
    r = check([g for g in GOOD if "ppo_micro_batch_size_per_gpu" not in g])
    f = one(r, "batch.actor_micro")
    assert f.fix_overrides and f.fix_overrides[0].startswith("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=")


def test_ref_micro_only_when_a_reference_model_is_needed(check):
    assert "batch.ref_log_prob_micro" not in rules_of(check(GOOD))
    r = check(GOOD + ["actor_rollout_ref.actor.use_kl_loss=true"])
    assert "batch.ref_log_prob_micro" in rules_of(r)


def test_mini_batch_larger_than_train_batch(check):
    f = one(check(GOOD + ["actor_rollout_ref.actor.ppo_mini_batch_size=32"]), "batch.actor_mini_vs_train")
    assert "train_batch_size (16) must be >= actor.ppo_mini_batch_size (32)" in f.message


def test_not_a_number(check):
    f = one(check(GOOD + ["data.train_batch_size=abc"]), "types.value")
    assert f.stage is Stage.PREFLIGHT and "'abc'" in f.message and "int" in f.message


def test_a_wrong_type_s_fix_gives_verls_own_value_as_the_example(check):
    # not a made-up 64 (a TP of 64 on a 16-GPU cluster): the key's default where verl has one of that type
    f = one(check(GOOD + ["actor_rollout_ref.actor.clip_ratio=wide"]), "types.value")
    assert "e.g. actor_rollout_ref.actor.clip_ratio=0.2 (no quotes)" in f.fix


def test_none_on_the_command_line_is_a_string_to_hydra(check):
    f = one(check(GOOD + ["actor_rollout_ref.model.lora.target_modules=None"]), "types.none_string")
    assert f.severity is Severity.WARNING and "the string 'None'" in f.message
    assert f.fix_overrides == ["actor_rollout_ref.model.lora.target_modules=null"]
    quiet = GOOD + ["actor_rollout_ref.model.lora.target_modules=null",
                    "global_profiler.global_tool_config.nsys.worker_nsight_options.kill=none"]  # a word it takes
    assert not [x for x in check(quiet).findings if x.rule == "types.none_string"]


def test_unset_rollout_engine_fails_at_startup(check):
    f = one(check([g for g in GOOD if "rollout.name" not in g]), "rollout.name")
    assert f.stage is Stage.STARTUP and f.fix_overrides == ["actor_rollout_ref.rollout.name=vllm"]


def test_removed_hf_rollout(check):
    f = one(check(GOOD + ["actor_rollout_ref.rollout.name=hf"]), "rollout.engine")
    assert "removed" in f.message


def test_tp_must_divide_gpus(check):
    r = check(GOOD + ["trainer.n_gpus_per_node=6", "data.train_batch_size=24", "actor_rollout_ref.actor.ppo_mini_batch_size=6",
                      "actor_rollout_ref.rollout.tensor_model_parallel_size=4"])
    f = one(r, "rollout.world_size")
    assert "4 x 1 x 1 = 4" in f.message and "6" in f.message
    assert f.fix_overrides == ["actor_rollout_ref.rollout.tensor_model_parallel_size=3"]


@pytest.mark.parametrize("key", ["tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size"])
def test_a_rollout_parallel_size_of_zero_stops_the_start_and_is_an_error(check, key):
    """verl's config takes 0; RolloutReplica divides by min(gpus_per_node, TP x DP x PP) at the rollout's start."""
    f = one(check(GOOD + [f"actor_rollout_ref.rollout.{key}=0"]), "rollout.parallel_size")
    assert f.severity is Severity.ERROR and f.stage is Stage.STARTUP and "ZeroDivisionError" in f.message
    assert f.fix_overrides == [f"actor_rollout_ref.rollout.{key}=1"]
    # null: verl keeps None and multiplies it; negative: no division by zero (-1 % -1 is 0), no GPU count either
    assert "TypeError" in one(check(GOOD + [f"actor_rollout_ref.rollout.{key}=null"]), "rollout.parallel_size").message
    negative = one(check(GOOD + [f"actor_rollout_ref.rollout.{key}=-1"]), "rollout.parallel_size").message
    assert "ZeroDivisionError" not in negative and "negative" in negative


def test_unknown_logger_is_a_late_failure_with_suggestion(check):
    f = one(check(GOOD + ["trainer.logger=[console,wandbb]"]), "names.logger")
    assert f.stage is Stage.RUNTIME and "did you mean wandb" in f.message


def test_too_few_ray_cpus_hangs(check):
    f = one(check(GOOD + ["ray_kwargs.ray_init.num_cpus=4"]), "ray.transfer_queue_cpus")
    assert "hangs" in f.message and "Ray gets 4 CPUs" in f.message and "at least 13" in f.message
    # each GPU's bundle holds 3 CPUs: the 10 TransferQueue needs are not enough beside one GPU's
    assert "ray.transfer_queue_cpus" in rules_of(check(GOOD + ["ray_kwargs.ray_init.num_cpus=12"]))
    eight = check(GOOD + ["trainer.n_gpus_per_node=8", "ray_kwargs.ray_init.num_cpus=33"])
    assert "at least 34" in one(eight, "ray.transfer_queue_cpus").message
    assert "ray.transfer_queue_cpus" not in rules_of(check(GOOD + ["ray_kwargs.ray_init.num_cpus=13"]))


def test_standalone_rollout_replicas_hold_two_cpus_a_gpu(check):
    # workers/rollout/replica.py: a standalone replica's pool has max_colocate_count=2
    separate = ["trainer.v1.trainer_mode=separate_async", "actor_rollout_ref.hybrid_engine=False",
                "actor_rollout_ref.rollout.nnodes=1", "actor_rollout_ref.rollout.n_gpus_per_node=2",
                "actor_rollout_ref.rollout.checkpoint_engine.backend=nccl"]
    f = one(check(GOOD + separate + ["ray_kwargs.ray_init.num_cpus=16"]), "ray.transfer_queue_cpus")
    assert "at least 17" in f.message and "2 with each of the 2 standalone rollout GPU(s)" in f.message
    assert "ray.transfer_queue_cpus" not in rules_of(check(GOOD + separate + ["ray_kwargs.ray_init.num_cpus=17"]))


def test_fewer_storage_units_need_fewer_cpus(check):
    r = check(GOOD + ["ray_kwargs.ray_init.num_cpus=7", "transfer_queue.backend.SimpleStorage.num_data_storage_units=2"])
    assert "ray.transfer_queue_cpus" not in rules_of(r)


def test_a_node_too_small_for_its_gpus_bundles_hangs(check):
    from wizard.core.hardware.cluster import parse_cluster_spec
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue

    cluster = parse_cluster_spec("2x8xH100-80GB", load_gpu_catalogue())
    for node in cluster.nodes:
        node.cpus = 16
    eight = GOOD + ["trainer.n_gpus_per_node=8", "trainer.nnodes=2", "data.train_batch_size=64"]
    f = one(check(eight, cluster=cluster), "ray.node_cpus")
    assert f.severity is Severity.ERROR and "node0 has 16 CPUs" in f.message and "(24:" in f.message
    cluster.nodes[0].cpus = cluster.nodes[1].cpus = 24
    assert "ray.node_cpus" not in rules_of(check(eight, cluster=cluster))
    cluster.nodes[1].cpus = 16  # two nodes needed, one holds them
    assert "ray.node_cpus" in rules_of(check(eight, cluster=cluster))


def test_group_estimator_with_one_response(check):
    f = one(check(GOOD + ["actor_rollout_ref.rollout.n=1"]), "advice.group_size")
    assert f.severity is Severity.WARNING and f.stage is Stage.ADVICE


@pytest.mark.parametrize("n, estimator, fixed", [(0, "grpo", 5), (-2, "grpo", 5), (0, "gae", 1)])
def test_no_response_per_prompt_is_an_error_with_a_step_size_that_samples(check, n, estimator, fixed):
    r = check(GOOD + [f"actor_rollout_ref.rollout.n={n}", f"algorithm.adv_estimator={estimator}"])
    f = one(r, "batch.no_responses")
    assert f.severity is Severity.ERROR and f"rollout.n={n} samples no response" in f.message
    assert f.fix_overrides == [f"actor_rollout_ref.rollout.n={fixed}"]
    assert "advice.group_size" not in rules_of(r)  # "every advantage is 0" is for one response, not none
    assert "batch.no_responses" not in rules_of(check(GOOD + f.fix_overrides + [f"algorithm.adv_estimator={estimator}"]))


@pytest.mark.parametrize("extra", [["data.train_batch_size=0", "actor_rollout_ref.actor.ppo_mini_batch_size=0"],
                                   ["data.train_batch_size=-5"], ["actor_rollout_ref.actor.ppo_mini_batch_size=-8"],
                                   ["actor_rollout_ref.actor.ppo_mini_batch_size=-5", "trainer.n_gpus_per_node=8"],
                                   ["data.train_batch_size=-10", "actor_rollout_ref.actor.ppo_mini_batch_size=-5"]])
def test_no_fix_offers_a_size_below_one_prompt_and_none_is_let_through(check, extra):
    r = check(GOOD + extra)
    assert "internal.rule_failed" not in rules_of(r)  # the divisibility rule crashed on a negative step
    assert "batch.not_positive" in rules_of(r)
    for f in r.findings:
        for o in f.fix_overrides:
            key, value = o.split("=", 1)
            if key.endswith("batch_size") and value.lstrip("-").isdigit():
                assert int(value) >= 1, (f.rule, o)


def test_legacy_reward_key_is_ignored_by_main_ppo(check):
    f = one(check(GOOD + ["custom_reward_function.path=/r.py"]), "legacy.reward_keys")
    assert "reward.custom_reward_function.path" in f.message
    assert "reward.custom_reward_function.path=/r.py" in f.fix_overrides


def test_more_gpus_than_the_cluster_has(check):
    r = check(GOOD + ["trainer.n_gpus_per_node=8", "data.train_batch_size=16"], gpus=parse_gpu_spec("4xH100-80GB"))
    f = one(r, "gpus.available")
    assert "Total available GPUs 4 is less than total desired GPUs 8" in f.message
    assert "verl's default" not in f.message  # the config set the 8 itself


def test_gpus_beyond_the_cluster_by_verls_default_size_say_so(check):
    """check does not resize a command line (the run would ask for 8): it says the 8 is verl's default."""
    r = check([g for g in GOOD if not g.startswith("trainer.n_gpus_per_node")], gpus=parse_gpu_spec("1xH100-80GB"))
    f = one(r, "gpus.available")
    assert "trainer.n_gpus_per_node=8 is verl's default" in f.message and "trainer.n_gpus_per_node=1" in f.fix


def test_deprecated_global_micro_batch_passes_preflight_but_fails_at_startup(check):
    r = check([g for g in GOOD if "log_prob_micro" not in g] + ["actor_rollout_ref.rollout.log_prob_micro_batch_size=8"])
    f = one(r, "batch.worker_micro")
    assert f.stage is Stage.STARTUP
    assert not any(x.stage is Stage.PREFLIGHT for x in r.findings)


def test_mini_batch_must_split_over_data_parallel_ranks(check):
    r = check(GOOD + ["trainer.n_gpus_per_node=8", "data.train_batch_size=64", "actor_rollout_ref.actor.ppo_mini_batch_size=3",
                      "actor_rollout_ref.rollout.n=2"])
    f = one(r, "batch.mini_vs_dp")
    assert "3 x 2 = 6" in f.message and "8" in f.message


@pytest.mark.parametrize("key", ["algorithm.adv_estimator=grpoo", "actor_rollout_ref.actor.policy_loss.loss_mode=vanila",
                                 "trainer.v1.trainer_mode=syncc", "reward.reward_manager.name=dapoo"])
def test_unknown_registry_names(check, key):
    r = check(GOOD + [key])
    assert any(f.rule.startswith("names.") and "did you mean" in f.message for f in r.findings)


def test_max_model_len_shorter_than_prompt_plus_response(check):
    r = check(GOOD + ["data.max_prompt_length=1024", "data.max_response_length=2048",
                      "actor_rollout_ref.rollout.max_model_len=2048"])
    f = one(r, "rollout.context_length")
    assert "1024 + 2048 = 3072" in f.message and f.fix_overrides == ["actor_rollout_ref.rollout.max_model_len=3072"]
    assert f.severity is Severity.WARNING
    r = check(GOOD + ["data.max_prompt_length=4096", "actor_rollout_ref.rollout.max_model_len=2048"])
    assert one(r, "rollout.context_length").severity is Severity.ERROR


def test_batched_tokens_only_matter_without_chunked_prefill(check):
    base = GOOD + ["actor_rollout_ref.rollout.max_model_len=16384"]
    assert "rollout.batched_tokens" not in rules_of(check(base))
    r = check(base + ["actor_rollout_ref.rollout.enable_chunked_prefill=false"])
    assert "8192" in one(r, "rollout.batched_tokens").message


def test_lora_rank_vllm_cannot_serve(check):
    f = one(check(GOOD + ["actor_rollout_ref.model.lora_rank=1024"]), "rollout.vllm_lora_rank")
    assert f.severity is Severity.ERROR and "512, but got 1024" in f.message
    assert f.fix_overrides == ["actor_rollout_ref.model.lora_rank=512"]
    # between vLLM's ranks verl rounds up (get_vllm_max_lora_rank): advice, not an error
    f = one(check(GOOD + ["actor_rollout_ref.model.lora_rank=48"]), "rollout.vllm_lora_rank")
    assert f.severity is Severity.INFO and "max_lora_rank=64" in f.message
    assert "rollout.vllm_lora_rank" not in rules_of(check(GOOD + ["actor_rollout_ref.model.lora_rank=64"]))


def test_live_ray_cluster_cpus_replace_num_cpus(check):
    from dataclasses import replace

    small = replace(parse_gpu_spec("1xH100-80GB"), cpus=4)
    f = one(check(GOOD, gpus=small), "ray.transfer_queue_cpus")
    assert "The Ray cluster has 4 CPUs" in f.message
    big = replace(small, cpus=64)
    assert "ray.transfer_queue_cpus" not in rules_of(check(GOOD + ["ray_kwargs.ray_init.num_cpus=2"], gpus=big))


def test_every_rule_module_registers_rules_and_every_rule_runs():
    """A module dropped into rules/ runs without joining a list, and one that registers nothing fails here."""
    from pathlib import Path

    import wizard.core.check.rules as rules_pkg
    from wizard.core.check.rules import NOT_RULES, RULES, _load, rule_modules

    _load()
    on_disk = sorted(p.stem for p in Path(rules_pkg.__file__).parent.glob("*.py")
                     if p.stem != "__init__" and p.stem not in NOT_RULES)
    assert rule_modules() == on_disk
    by_module = {name: [r.id for r in RULES if r.fn.__module__ == f"wizard.core.check.rules.{name}"] for name in on_disk}
    assert not [name for name, ids in by_module.items() if not ids], "a rule module that registers no rule"
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids)), "two rules with one id"


@pytest.mark.parametrize("per,nodes,rule", [(0, -1, "batch.no_gpus"), (0, 1, "batch.no_gpus"), (8, -1, "gpus.count"),
                                            (-8, 2, "gpus.count")])
def test_no_gpus_or_a_negative_count_is_an_error(check, per, nodes, rule):
    """verl's pre-flight divides by 0 GPUs (ZeroDivisionError); a negative count passes it and fails at startup."""
    result = check([o for o in GOOD if not o.startswith("trainer.n")] + [f"trainer.n_gpus_per_node={per}",
                                                                       f"trainer.nnodes={nodes}"])
    found = one(result, rule)
    assert found.severity is Severity.ERROR and (f"{per}" in found.message and f"{nodes}" in found.message)
    assert found.stage is (Stage.PREFLIGHT if rule == "batch.no_gpus" else Stage.STARTUP)


@pytest.mark.parametrize("override,error", [
    ("trainer.experiment_name=${python:1}", "UnsupportedInterpolationType"),
    ("trainer.experiment_name=${nope.key}", "InterpolationKeyError"),
    ("+trainer.a=${trainer.b}", "Recursive interpolation"),
])
def test_an_interpolation_verl_cannot_resolve_is_an_error(check, override, error):
    extra = ["+trainer.b=${trainer.a}"] if "trainer.a" in override else []
    found = [f for f in check(GOOD + [override] + extra).findings if f.rule == "compose.interpolation"]
    assert found and found[0].stage is Stage.STARTUP and error in found[0].message


def test_interpolations_that_resolve_and_environment_references_are_fine(check):
    result = check(GOOD + ["trainer.experiment_name=${trainer.project_name}_x", "+trainer.k=${oc.env:UNSET_HERE_42}"])
    assert "compose.interpolation" not in rules_of(result)


def test_lora_on_fsdp1_with_one_gpu_is_the_run_that_hangs_at_its_first_sync(check):
    # verl 0.9.1 + vLLM 0.24 on an H200, twice: vLLM gets an empty adapter, its worker dies, no step is done
    lora = GOOD + ["actor_rollout_ref.model.lora_rank=32", "actor_rollout_ref.actor.strategy=fsdp"]
    f = one(check(lora), "rollout.lora_fsdp1_one_gpu")
    assert f.severity is Severity.ERROR and f.stage is Stage.RUNTIME
    assert "rank 32" in f.message and "StopIteration" in f.message
    assert f.fix_overrides == ["actor_rollout_ref.actor.strategy=fsdp2", "actor_rollout_ref.ref.strategy=fsdp2"]
    assert "rollout.lora_fsdp1_one_gpu" not in rules_of(check(lora + f.fix_overrides))
    # not seen beyond one GPU (FSDP shards there), nor without LoRA
    assert "rollout.lora_fsdp1_one_gpu" not in rules_of(check(lora + ["trainer.n_gpus_per_node=2"]))
    assert "rollout.lora_fsdp1_one_gpu" not in rules_of(check(GOOD + ["actor_rollout_ref.actor.strategy=fsdp"]))
    # Megatron's model.lora.rank does not turn LoRA on in verl's FSDP engine; merged LoRA and SGLang send no adapter
    megatron_key = GOOD + ["actor_rollout_ref.model.lora.rank=32", "actor_rollout_ref.actor.strategy=fsdp"]
    assert "rollout.lora_fsdp1_one_gpu" not in rules_of(check(megatron_key))
    assert "rollout.lora_fsdp1_one_gpu" not in rules_of(check(lora + ["actor_rollout_ref.model.lora.merge=true"]))
    assert "rollout.lora_fsdp1_one_gpu" not in rules_of(check(lora + ["actor_rollout_ref.rollout.name=sglang"]))
