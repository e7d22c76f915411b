"""The memory and placement rules through the real check (verl 0.9.1's composed config, the wizard's rules)."""

import pytest

from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
from wizard.adapters.files.resources import load_moves, load_schema
from wizard.core.check.verdict import check_overrides
from wizard.core.hardware.cluster import parse_cluster_spec
from wizard.core.findings import Severity
from wizard.core.models.facts import ModelFacts

A, AF, R = "actor_rollout_ref.actor", "actor_rollout_ref.actor.fsdp_config", "actor_rollout_ref.rollout"
Q7 = ModelFacts(source="catalogue", name="Qwen/Qwen2.5-7B-Instruct", model_type="qwen2", hidden_size=3584,
                intermediate_size=18944, num_layers=28, num_attention_heads=28, num_kv_heads=4, head_dim=128,
                vocab_size=152064, tie_word_embeddings=False, max_position_embeddings=32768, attention_bias=True)
BASE = ["algorithm.adv_estimator=grpo", f"{R}.name=vllm", f"{R}.n=5", "data.train_batch_size=256",
        "data.max_prompt_length=512", "data.max_response_length=1024", f"{A}.ppo_mini_batch_size=64",
        f"{A}.ppo_micro_batch_size_per_gpu=4", f"{R}.log_prob_micro_batch_size_per_gpu=8", f"{A}.use_kl_loss=True",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8", f"{R}.gpu_memory_utilization=0.6",
        "trainer.n_gpus_per_node=8", "trainer.resume_mode=disable", "trainer.logger=[console]"]


def cluster(text="8xH100-80GB"):
    return parse_cluster_spec(text, load_gpu_catalogue())


def check(extra=(), cl="8xH100-80GB", models=None):
    return check_overrides(load_schema(), [*BASE, *extra], moves=load_moves(),
                           models={"actor": Q7} if models is None else models,
                           cluster=cluster(cl) if isinstance(cl, str) else cl)


def rules(result, prefix=("memory.", "placement.")):
    return {f.rule: f for f in result.findings if f.rule.startswith(prefix)}


FIT_RULES = ("memory.gpu_oom", "memory.gpu_oom_long", "memory.gpu_tight", "memory.engine_start", "memory.kv_cache",
             "memory.host")


def misfits(result) -> set[str]:
    """The memory findings that say the plan does not fit (or only just)."""
    return {r for r in rules(result) if r in FIT_RULES}


def test_a_config_that_fits_is_silent():
    assert rules(check()) == {}


def test_silent_when_models_or_gpu_memory_are_unknown():
    assert rules(check(["trainer.n_gpus_per_node=1", f"{R}.tensor_model_parallel_size=1"], cl="1xRTX-4090-24GB",
                       models={})) == {}
    assert rules(check(["trainer.n_gpus_per_node=1", f"{R}.tensor_model_parallel_size=1"], cl=None)) == {}


def test_oom_on_a_small_gpu_with_numbers_and_a_fix_that_fits():
    extra = ["trainer.n_gpus_per_node=2", f"{R}.tensor_model_parallel_size=2"]
    found = rules(check(extra, cl="2xRTX-4090-24GB"))
    oom = found["memory.gpu_oom"]
    assert oom.severity is Severity.ERROR
    assert "2 GPUs of global_pool (node0:0-1" in oom.message and "of 24.0 GiB" in oom.message
    assert "actor AdamW moments 28.4" in oom.message  # 8 bytes x 7.6B / 2 shards
    assert oom.fix.startswith("Fastest that fits: 1)") and "per step" in oom.fix
    assert oom.fix_overrides and oom.fix_auto
    # every memory finding offers the same config, and one Apply of it leaves none
    assert found["memory.engine_start"].severity is Severity.ERROR
    assert found["memory.engine_start"].fix_overrides == oom.fix_overrides
    assert misfits(check([*extra, *oom.fix_overrides], cl="2xRTX-4090-24GB")) == set()


def test_micro_batch_oom_depends_on_sample_length_and_its_fix_fits():
    extra = [f"{A}.ppo_micro_batch_size_per_gpu=64", f"{A}.ppo_mini_batch_size=256"]
    oom = rules(check(extra))["memory.gpu_oom_long"]
    assert oom.severity is Severity.WARNING
    assert oom.message.startswith("Over memory at the configured lengths; fits while samples average <= ") and "1,536 tokens" in oom.message
    assert oom.fix.startswith("Fastest that fits: 1)")
    # applying the fix makes the memory rules quiet
    assert rules(check([*extra, *oom.fix_overrides])) == {}


def test_dynamic_batch_token_budget_over_memory_is_an_error():
    extra = [f"{A}.use_dynamic_bsz=True", f"{A}.ppo_mini_batch_size=256"]
    oom = rules(check([*extra, f"{A}.ppo_max_token_len_per_gpu=200000"]))["memory.gpu_oom"]
    assert oom.severity is Severity.ERROR and "actor update phase" in oom.message
    assert any(o.startswith(f"{A}.ppo_max_token_len_per_gpu=") for o in oom.fix_overrides)
    assert rules(check([*extra, *oom.fix_overrides])) == {}
    # in the update a budget above what one GPU gets in a mini-batch (64 x 5 / 8 = 40 samples) is never filled;
    # the log-prob pass (its budget interpolates the actor's) sees the whole batch: 160 samples per GPU
    found = rules(check([f"{A}.use_dynamic_bsz=True", f"{A}.ppo_max_token_len_per_gpu=200000"]))
    assert set(found) == {"memory.gpu_tight"} and "old log-prob phase" in found["memory.gpu_tight"].message
    assert "logits (200,000 tokens" in found["memory.gpu_tight"].message


def test_tight_is_a_warning():
    tight = rules(check([f"{R}.gpu_memory_utilization=0.8"]))["memory.gpu_tight"]
    assert tight.severity is Severity.WARNING and "spare" in tight.message and "generation phase" in tight.message
    assert any(o.startswith(f"{R}.gpu_memory_utilization=") or o.startswith(f"{AF}.") for o in tight.fix_overrides)


def test_vllm_refuses_to_start_when_the_trainer_holds_too_much():
    found = rules(check([f"{R}.gpu_memory_utilization=0.97"]))
    start = found["memory.engine_start"]
    # vLLM sizes its share of CUDA's total: the catalogue's 79.6 GiB less the 0.6 GiB the driver keeps
    assert start.message.startswith("Does not fit: ") and "vLLM starts with" in start.message
    assert "0.97 x 79.0 = 76.7 GiB" in start.message
    assert any(o.startswith(f"{R}.gpu_memory_utilization=0.") for o in start.fix_overrides)
    assert misfits(check([f"{R}.gpu_memory_utilization=0.97", *start.fix_overrides])) == set()


def test_kv_cache_that_cannot_hold_max_model_len():
    found = rules(check(["trainer.n_gpus_per_node=1", f"{R}.tensor_model_parallel_size=1",
                         f"{R}.gpu_memory_utilization=0.22", f"{AF}.param_offload=True",
                         f"{AF}.optimizer_offload=True"], cl="1xH100-80GB"))
    kv = found["memory.kv_cache"]
    assert kv.severity is Severity.ERROR and "max_model_len=32,768" in kv.message
    assert kv.fix_auto and misfits(check(["trainer.n_gpus_per_node=1", f"{R}.tensor_model_parallel_size=1",
                                          f"{R}.gpu_memory_utilization=0.22", f"{AF}.param_offload=True",
                                          f"{AF}.optimizer_offload=True", *kv.fix_overrides], cl="1xH100-80GB")) == set()


def test_kv_cache_too_small_for_the_batch_is_advice():
    found = rules(check([f"{R}.max_num_seqs=1024", "data.train_batch_size=2048", f"{A}.ppo_mini_batch_size=256",
                         f"{R}.gpu_memory_utilization=0.35", f"{R}.n=8"]))
    kv = found["memory.kv_concurrency"]
    assert kv.severity is Severity.WARNING and "sequences of 1536 tokens" in kv.message
    assert "queues and preempts" in kv.message


def test_host_memory_of_a_node_with_little_ram():
    cl = cluster()
    cl.nodes[0].memory_bytes = 96 * 2**30
    host = rules(check([f"{AF}.param_offload=True", f"{AF}.optimizer_offload=True"], cl=cl))["memory.host"]
    assert host.severity is Severity.ERROR and "of 96 GiB" in host.message and "Ray kills workers" in host.message


def test_what_an_offload_asks_of_a_node_whose_ram_is_unknown_is_a_note():
    # applied from Make it fit, the offload's "host RAM about 239 GiB a node (unknown here)" was said nowhere after
    cl = cluster()
    assert cl.nodes[0].memory_bytes is None
    host = rules(check([f"{AF}.param_offload=True", f"{AF}.optimizer_offload=True"], cl=cl))["memory.host_unknown"]
    assert host.severity is Severity.INFO and "its RAM is not known here" in host.message and "free -g" in host.fix
    assert "memory.host_unknown" not in rules(check([], cl=cl))  # nothing offloaded: not worth a word


def test_reward_groups_that_cannot_be_formed_need_no_models():
    extra = ["reward.reward_model.enable=True", "reward.reward_model.enable_resource_pool=True",
             "reward.reward_model.n_gpus_per_node=2", "reward.reward_model.nnodes=1",
             "reward.reward_model.rollout.tensor_model_parallel_size=4", "reward.reward_model.rollout.name=vllm",
             "reward.reward_model.model_path=/models/rm"]
    found = rules(check(extra, cl=None, models={}))
    assert found["placement.reward_groups"].severity is Severity.ERROR


@pytest.mark.parametrize("gpus", ["2x8xH100-80GB"])
def test_tp_across_nodes_is_reported_by_placement(gpus):
    found = rules(check(["trainer.nnodes=2", f"{R}.tensor_model_parallel_size=16"], cl=gpus))
    assert found["placement.tp_link"].severity is Severity.WARNING
