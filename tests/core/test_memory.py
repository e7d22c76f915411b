"""The memory estimate, term by term, with numbers worked out by hand for known models.

Qwen2.5-7B (config.json dims, ../shared/reference/gpu-memory.md §4.3) on 8 x 80 GB, FSDP over 8 GPUs:
P = 7,615,616,512; the update phase holds fp32 params 4P/8 + grads 4P/8 + AdamW 8P/8 = 16P/8 bytes per GPU.
"""

import math

import pytest

from tests.helpers.memory_values import full
from wizard.core.hardware.cluster import GPU, Cluster, ClusterNode
from wizard.core.memory.estimate import estimate_memory
from wizard.core.memory.terms import CONSTANTS as C
from wizard.core.memory.pinned import pinned_shard
from wizard.core.memory.terms import GIB, layer_activation, lora_params
from wizard.core.models.facts import ModelFacts

A, AF, R = "actor_rollout_ref.actor", "actor_rollout_ref.actor.fsdp_config", "actor_rollout_ref.rollout"
Q7 = ModelFacts(source="config", name="Qwen/Qwen2.5-7B-Instruct", model_type="qwen2", hidden_size=3584,
                intermediate_size=18944, num_layers=28, num_attention_heads=28, num_kv_heads=4, head_dim=128,
                vocab_size=152064, tie_word_embeddings=False, max_position_embeddings=32768, attention_bias=True)
Q05 = ModelFacts(source="config", name="Qwen/Qwen2.5-0.5B-Instruct", model_type="qwen2", hidden_size=896,
                 intermediate_size=4864, num_layers=24, num_attention_heads=14, num_kv_heads=2, head_dim=64,
                 vocab_size=151936, tie_word_embeddings=True, max_position_embeddings=32768, attention_bias=True)
P7 = 7_615_616_512
BASE = {
    "trainer.n_gpus_per_node": 8, "trainer.nnodes": 1, "algorithm.adv_estimator": "grpo",
    f"{A}.use_kl_loss": True, f"{R}.name": "vllm", f"{R}.n": 5, f"{R}.tensor_model_parallel_size": 2,
    f"{R}.gpu_memory_utilization": 0.6, "data.train_batch_size": 1024, "data.max_prompt_length": 512,
    "data.max_response_length": 1024, f"{A}.ppo_mini_batch_size": 256, f"{A}.ppo_micro_batch_size_per_gpu": 4,
    f"{R}.log_prob_micro_batch_size_per_gpu": 8, "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": 8,
}


def cluster(nodes=1, per_node=8, gib=80, ram=None):
    return Cluster(source="spec", nodes=[
        ClusterNode(name=f"node{i}", gpu_count=per_node, memory_bytes=ram,
             gpus=[GPU(index=j, name="H100", memory_total_bytes=gib * GIB) for j in range(per_node)])
        for i in range(nodes)])


def report(values=None, models=None, cl=None):
    rep, why = estimate_memory(full({**BASE, **(values or {})}), models or {"actor": Q7}, cl or cluster())
    assert rep is not None, why
    return rep


def phase(rep, name, pool="global_pool"):
    group = next(g for g in rep.groups if g.pool == pool)
    return next(p for p in group.phases if p.name == name)


def term(ph, key):
    return sum(t.bytes for t in ph.terms if t.key == key)


def test_param_count_matches_the_model_card():
    assert Q7.param_count == P7  # 7.61B on the Qwen2.5-7B card


def test_update_phase_holds_16_bytes_per_param_over_8_shards():
    upd = phase(report(), "actor_update")
    assert term(upd, "actor_params") == 4 * P7 // 8
    assert term(upd, "actor_grads") == 4 * P7 // 8
    assert term(upd, "actor_adam") == 8 * P7 // 8
    states = term(upd, "actor_params") + term(upd, "actor_grads") + term(upd, "actor_adam")
    assert states == pytest.approx(16 * P7 / 8, abs=2)  # 15.2 GB per GPU


def test_generation_keeps_params_and_adam_resident_and_the_vllm_share():
    gen = phase(report(), "generation")
    assert term(gen, "actor_params") == 4 * P7 // 8
    assert term(gen, "actor_adam") == 8 * P7 // 8
    assert term(gen, "actor_grads") == 0  # grads are freed after the update (zero_grad)
    # vLLM 0.24: util x CUDA's total (NVML's less what the driver keeps), CUDA graphs inside; the worker a bit more
    assert term(gen, "engine_rollout") == int(0.6 * (80 * GIB - C.driver_reserved))
    assert term(gen, "engine_rollout_context") == C.vllm_outside_budget
    assert term(gen, "graphs_rollout") == 0


def test_offload_flags_and_what_they_do_not_save():
    rep = report({f"{AF}.param_offload": True, f"{AF}.optimizer_offload": True})
    gen, upd = phase(rep, "generation"), phase(rep, "actor_update")
    assert term(gen, "actor_params") == 0 and term(gen, "actor_adam") == 0
    # manual offload loads everything back for update_actor: the update peak is the same
    assert term(upd, "actor_params") == 4 * P7 // 8 and term(upd, "actor_adam") == 8 * P7 // 8
    assert phase(rep, "actor_update").total == phase(report(), "actor_update").total
    # the old log-prob pass loads the params back (not the optimizer)
    assert term(phase(rep, "old_log_prob"), "actor_params") == 4 * P7 // 8
    assert term(phase(rep, "old_log_prob"), "actor_adam") == 0


def test_fsdp2_offload_policy_keeps_states_on_cpu_even_in_the_update():
    upd = phase(report({f"{A}.strategy": "fsdp2", f"{AF}.offload_policy": True}), "actor_update")
    assert term(upd, "actor_params") == term(upd, "actor_grads") == term(upd, "actor_adam") == 0
    # the AdamW step runs on the host beside its moments: no step temporaries on the GPU (a 32B update was the
    # step's 61 GiB of temporaries, over a backward of far less)
    assert term(upd, "optimizer_step") == 0
    # on one GPU at a micro-batch of 1 the step is the update's worse moment with the states on the GPU, and not
    # with the policy
    one = {"trainer.n_gpus_per_node": 1, f"{R}.tensor_model_parallel_size": 1, f"{A}.ppo_micro_batch_size_per_gpu": 1,
           f"{A}.strategy": "fsdp2"}
    assert term(phase(report(one, cl=cluster(per_node=1, gib=141)), "actor_update"), "optimizer_step") > 0
    upd = phase(report({**one, f"{AF}.offload_policy": True}, cl=cluster(per_node=1, gib=141)), "actor_update")
    assert term(upd, "optimizer_step") == 0 and term(upd, "activations") > 0
    # FSDP1 ignores offload_policy ("Only for FSDP2")
    assert term(phase(report({f"{AF}.offload_policy": True}), "actor_update"), "actor_adam") == 8 * P7 // 8


def test_shard_count_follows_fsdp_size():
    upd = phase(report({f"{AF}.fsdp_size": 4}), "actor_update")
    assert term(upd, "actor_adam") == 8 * P7 // 4


def test_micro_batch_tokens_and_activations_with_and_without_checkpointing():
    T = 4 * (512 + 1024)  # fixed micro-batch of 4 samples at full length
    h, q, kv, inter, L = 3584, 28 * 128, 4 * 128, 18944, 28
    per_layer = T * (16 * h + 6 * q + 4 * kv + 8 * inter)
    assert layer_activation(Q7, T) == per_layer
    gc_on = phase(report(), "actor_update")
    assert term(gc_on, "activations") == int(L * T * 2 * h + 1.2 * per_layer)
    gc_off = phase(report({"actor_rollout_ref.model.enable_gradient_checkpointing": False}), "actor_update")
    assert term(gc_off, "activations") == L * per_layer


def test_dynamic_batch_uses_the_token_budget():
    upd = phase(report({f"{A}.use_dynamic_bsz": True, f"{A}.ppo_max_token_len_per_gpu": 24576}), "actor_update")
    assert term(upd, "logits") == 24576 * 152064 * 2  # bf16 (T x V)
    # a sample longer than the budget still forms its own micro-batch
    upd = phase(report({f"{A}.use_dynamic_bsz": True, f"{A}.ppo_max_token_len_per_gpu": 1000}), "actor_update")
    assert term(upd, "logits") == 1536 * 152064 * 2


def test_ulysses_divides_the_tokens_per_gpu():
    upd = phase(report({f"{A}.ulysses_sequence_parallel_size": 2}), "actor_update")
    assert term(upd, "logits") == 4 * 1536 // 2 * 152064 * 2


def test_entropy_temporaries_compiled_eager_and_fused():
    T, V = 4 * 1536, 152064
    base = {f"{A}.entropy_coeff": 0.01}
    assert term(phase(report(base), "actor_update"), "entropy") == T * V * C.entropy_update_compiled
    eager = phase(report({**base, f"{AF}.use_torch_compile": False}), "actor_update")
    assert term(eager, "entropy") == T * V * C.entropy_update_eager
    assert term(phase(report(), "actor_update"), "entropy") == 0  # entropy_coeff 0: not computed in the update
    fused = phase(report({**base, "actor_rollout_ref.model.use_fused_kernels": True}), "actor_update")
    assert term(fused, "logits") == T * 3584 * 4 and term(fused, "entropy") == 0


def test_old_log_prob_pass_peaks_on_logits_plus_eager_entropy():
    T, V = 8 * 1536, 152064
    lp = phase(report({f"{AF}.use_torch_compile": False}), "old_log_prob")
    assert term(lp, "logits") == T * V * 2
    assert term(lp, "entropy") == T * V * C.entropy_forward_eager


def test_reference_model_is_cpu_offloaded_and_only_with_kl():
    rep = report()
    ref = phase(rep, "ref_log_prob")
    assert term(ref, "logits") == 8 * 1536 * 152064 * 2 and term(ref, "entropy") == 0
    assert not any(t.key == "ref_params" for t in ref.terms)
    host = rep.host[0]
    # 8 ranks' fp32 shards, pinned: one FSDP1 flat parameter a layer, each a power of two (torch's host allocator),
    # and FSDP1's CPU offload pins a gradient as large beside it
    ref = sum(t.bytes for t in host.terms if t.key == "host_ref")
    assert ref == pytest.approx(2 * 8 * pinned_shard(Q7, 8, 4, fsdp1=True), rel=1e-6) and 8 * P7 < ref < 16 * P7
    names = [p.name for g in report({f"{A}.use_kl_loss": False}).groups for p in g.phases]
    assert "ref_log_prob" not in names


def test_a_bf16_reference_keeps_half_the_host_memory():
    """ref.fsdp_config.model_dtype=bf16: the reference's pinned copy on the host is at 2 bytes a parameter, the lever
    a user short of host RAM reaches for (it was counted at fp32 whatever the key said)."""
    def ref_host(values):
        return sum(t.bytes for t in report(values).host[0].terms if t.key == "host_ref")

    fp32, bf16 = ref_host({}), ref_host({"actor_rollout_ref.ref.fsdp_config.model_dtype": "bf16"})
    assert bf16 == pytest.approx(2 * 8 * pinned_shard(Q7, 8, 2, fsdp1=True), rel=1e-6) and 0.4 < bf16 / fp32 < 0.6


def test_lora_trains_adapters_only_and_has_no_separate_reference():
    rank = 32
    rep = report({"actor_rollout_ref.model.lora_rank": rank})
    upd = phase(rep, "actor_update")
    Pt = lora_params(Q7, rank)
    per_layer = (3584 + 3584) + 2 * (3584 + 512) + (3584 + 3584) + 3 * (3584 + 18944)
    assert Pt == rank * per_layer * 28
    assert term(upd, "actor_grads") == 4 * Pt // 8 and term(upd, "actor_adam") == 8 * Pt // 8
    assert term(upd, "actor_params") == 4 * P7 // 8  # the frozen base stays fp32 (model_dtype)
    assert "ref_log_prob" not in [p.name for p in rep.groups[0].phases]
    assert "ref_log_prob" in [p.name for p in report().groups[0].phases]


def test_critic_states_in_generation_and_its_own_update():
    values = {"algorithm.adv_estimator": "gae", f"{A}.use_kl_loss": False, "critic.model.path": "x"}
    rep = report(values, {"actor": Q7, "critic": Q7})
    Pc = P7 - 152064 * 3584 + 3584  # value head instead of lm_head
    gen = phase(rep, "generation")
    assert term(gen, "critic_params") == 4 * Pc // 8 and term(gen, "critic_adam") == 8 * Pc // 8
    cu = phase(rep, "critic_update")
    assert term(cu, "critic_params") + term(cu, "critic_grads") + term(cu, "critic_adam") == pytest.approx(16 * Pc / 8, abs=3)
    assert term(cu, "actor_params") == 4 * P7 // 8  # the actor stays resident meanwhile


def test_sglang_takes_its_fraction_of_the_free_memory():
    rep = report({f"{R}.name": "sglang"})
    load = phase(rep, "load")
    # the trainer's load state, less the allocator cache verl's init_model empties before the engines start
    trainer_init = sum(t.bytes for t in load.terms if not t.key.startswith(("engine", "graphs", "driver", "allocator")))
    assert term(load, "allocator") > 0  # the load phase keeps it: fitted to the measured load peaks
    # SGLang measures the free memory once its own process (CUDA context, NCCL at TP 2) is up
    free = 80 * GIB - C.driver_reserved - trainer_init - term(load, "engine_rollout_context")
    assert term(load, "engine_rollout_context") == C.sglang_context + C.nccl_buffers
    assert term(load, "engine_rollout") == int(0.6 * free)  # weights + KV pool


def test_kv_cache_capacity_in_tokens_and_sequences():
    rep = report()
    kv = rep.kv["rollout"]
    weights = 2 * P7 / 2
    act = 8192 * (7 * 18944 / 2 + 10 * 3584) + 256 * 152064 * 4
    budget = 0.6 * (80 * GIB - C.driver_reserved)
    kv_bytes = budget - weights - act - C.vllm_non_torch_tp - C.cuda_graphs
    per_token = 2 * 28 * 2 * 128 * 2  # 4 KV heads split over TP 2
    assert kv.bytes_per_token == per_token
    assert kv.tokens == int(kv_bytes // per_token)
    assert kv.sequences == kv.tokens // 1536
    assert kv.wanted == min(256, math.ceil(1024 * 5 / 4))  # 4 replicas of TP 2


def test_peak_is_the_worst_phase_and_overheads_are_counted():
    group = report().groups[0]
    assert group.peak.total == max(p.total for p in group.phases)
    upd = phase(report(), "actor_update")
    assert term(upd, "trainer_context") == C.trainer_context + C.nccl_buffers
    assert term(upd, "allocator") == int(C.allocator_slack_vocab * 2 * 152064 * 3584)  # ~2.5 bf16 lm_heads
    assert term(upd, "driver") == C.driver_reserved


def test_optimizer_step_is_the_update_peak_for_short_micro_batches():
    upd = phase(report({f"{A}.ppo_micro_batch_size_per_gpu": 1, "trainer.n_gpus_per_node": 1,
                        f"{R}.tensor_model_parallel_size": 1}, {"actor": Q05}, cluster(per_node=1, gib=141)),
                "actor_update")
    assert term(upd, "optimizer_step") == 4 * Q05.param_count  # foreach AdamW temp: 20 P bytes at the step
    assert term(upd, "activations") == 0


def test_hundreds_of_identical_gpus_share_one_group():
    rep = report({"trainer.nnodes": 128}, cl=cluster(nodes=128))
    assert len(rep.groups) == 1 and len(rep.groups[0].gpus) == 1024
    upd = phase(rep, "actor_update")
    assert term(upd, "actor_adam") == 8 * P7 // 1024


def test_mixed_memory_nodes_get_a_group_each():
    cl = cluster(nodes=2)
    cl.nodes[1] = ClusterNode(name="node1", gpu_count=8,
                       gpus=[GPU(index=j, name="H200", memory_total_bytes=141 * GIB) for j in range(8)])
    rep = report({"trainer.nnodes": 2}, cl=cl)
    assert sorted(g.capacity_bytes for g in rep.groups) == [80 * GIB, 141 * GIB]


def test_host_memory_against_node_ram():
    rep = report({f"{AF}.param_offload": True, f"{AF}.optimizer_offload": True}, cl=cluster(ram=96 * GIB))
    host = rep.host[0]
    assert host.capacity_bytes == 96 * GIB
    keys = {t.key: t.bytes for t in host.terms}
    # 8 ranks x 4P/8, each rank's flat parameters pinned in power-of-two blocks (verl offloads non_blocking)
    assert keys["host_actor_params"] == pytest.approx(8 * pinned_shard(Q7, 8, 4, fsdp1=True), rel=1e-6)
    assert 4 * P7 < keys["host_actor_params"] < 8 * P7
    assert keys["host_actor_adam"] == pytest.approx(2 * keys["host_actor_params"], rel=1e-6)
    assert host.total > 96 * GIB  # 7B with everything offloaded does not fit 96 GB of RAM (verl #224)


def test_unknown_model_or_engine_gives_no_report_but_a_reason():
    rep, why = estimate_memory(full(BASE), {}, cluster())
    assert rep is None and "actor's model is unknown" in why
    rep, why = estimate_memory(full({**BASE, f"{A}.strategy": "veomni"}), {"actor": Q7}, cluster())
    assert rep is None and "veomni training engine is not modelled" in why


def test_no_cluster_still_places_but_has_no_capacity():
    rep, _ = estimate_memory(full(BASE), {"actor": Q7}, None)
    assert rep.fits is None and rep.groups[0].capacity_bytes is None


def test_the_critic_is_batched_as_verl_091_batches_it():
    # verl #7462: the V1 trainer's critic engine packs by critic.ppo_infer_max_token_len_per_gpu for training too
    # (trainer_base.py:266-268); critic.ppo_micro_batch_size_per_gpu never reaches it. Its own keys do
    # (+critic.fsdp.use_dynamic_bsz=false, +critic.fsdp.micro_batch_size_per_gpu), and so do the legacy trainer's.
    from tests.helpers.memory_values import full
    from wizard.core.memory.config import read_config

    base = {"algorithm.adv_estimator": "gae", "critic.enable": True, "data.max_prompt_length": 512,
            "data.max_response_length": 512, "data.train_batch_size": 256, f"{R}.n": 1,
            "critic.ppo_mini_batch_size": 256, "trainer.n_gpus_per_node": 8}

    def tokens(**more):
        return read_config(full({**base, **{k.replace("__", "."): v for k, v in more.items()}})).critic_tokens

    assert tokens() == 32768  # verl's default budget
    assert tokens(critic__ppo_micro_batch_size_per_gpu=64) == 32768  # ignored by the V1 engine
    assert tokens(critic__fsdp__use_dynamic_bsz=False, critic__fsdp__micro_batch_size_per_gpu=2) == 2 * 1024
    assert tokens(trainer__use_v1=False, critic__ppo_micro_batch_size_per_gpu=4) == 4 * 1024


def test_gradient_accumulation_without_sync_holds_the_whole_unsharded_gradient():
    # verl 0.9.1's FSDP engine (fsdp/transformer_impl.py:692-720): use_no_sync_for_gradient_accumulation skips the
    # reduce-scatter on all but a mini-batch's last micro-batch. FSDP2 keeps torch's unsharded_accumulated_grad in the
    # reduce dtype (fp32 by verl's default mixed precision; bf16 when it equals the param dtype), FSDP1 the unsharded
    # bf16 flat gradient. BASE: 256 x 5 / 8 = 160 samples per GPU in micro-batches of 4 = 40 micro-batches.
    on = {f"{AF}.use_no_sync_for_gradient_accumulation": True}

    def held(**more):
        return term(phase(report({**on, **more}), "actor_update"), "actor_unsharded_grads")

    assert term(phase(report(), "actor_update"), "actor_unsharded_grads") == 0  # verl's default: off
    assert held(**{f"{A}.strategy": "fsdp2"}) == int(4 * P7 * 7 / 8)  # 24.8 GiB more per GPU for a 7B
    assert held(**{f"{A}.strategy": "fsdp"}) == int(2 * P7 * 7 / 8)
    # FSDP1 keeps the flat gradient in the param dtype: fp32 compute holds 4 bytes a param
    assert held(**{f"{A}.strategy": "fsdp", f"{AF}.mixed_precision": {"param_dtype": "fp32"}}) == int(4 * P7 * 7 / 8)
    assert held(**{f"{A}.strategy": "fsdp2", f"{AF}.mixed_precision": {"reduce_dtype": "bf16"}}) == int(2 * P7 * 7 / 8)
    assert held(**{f"{A}.ppo_micro_batch_size_per_gpu": 160}) == 0  # one micro-batch: nothing is deferred
    assert held(**{f"{AF}.fsdp_size": 1}) == 0  # one shard: nothing to reduce-scatter
    # dynamic batching: 160 samples of 1,536 tokens at worst over a 24,576-token budget = 10 micro-batches
    assert held(**{f"{A}.strategy": "fsdp2", f"{A}.use_dynamic_bsz": True, f"{A}.ppo_max_token_len_per_gpu": 24576}) \
        == int(4 * P7 * 7 / 8)
    assert held(**{f"{A}.use_dynamic_bsz": True, f"{A}.ppo_max_token_len_per_gpu": 160 * 1536}) == 0
    # the update's peak is its backward: the whole gradient is gone by the optimizer step
    upd = phase(report({**on, f"{A}.strategy": "fsdp2"}), "actor_update")
    assert sum(t.bytes for t in upd.terms) - sum(t.bytes for t in phase(report({f"{A}.strategy": "fsdp2"}),
                                                                           "actor_update").terms) >= 4 * P7 * 7 / 8 - 1


def test_the_critic_accumulates_without_sync_too():
    critic = {"algorithm.adv_estimator": "gae", "critic.enable": True, "critic.strategy": "fsdp2",
              "critic.fsdp.use_dynamic_bsz": False, "critic.fsdp.micro_batch_size_per_gpu": 4,
              "critic.fsdp.use_no_sync_for_gradient_accumulation": True}
    rep = report(critic, models={"actor": Q7, "critic": Q7})
    held = term(phase(rep, "critic_update"), "critic_unsharded_grads")
    # the critic's params: the model without its lm_head, with a value head (7.07B for the 7B)
    from wizard.core.memory.terms import critic_params

    assert held == int(4 * critic_params(Q7) * 7 / 8)
    rep = report({**critic, "critic.fsdp.use_no_sync_for_gradient_accumulation": False}, models={"actor": Q7, "critic": Q7})
    assert term(phase(rep, "critic_update"), "critic_unsharded_grads") == 0


def test_reshard_after_forward_off_keeps_the_whole_model_gathered_through_a_pass():
    # verl 0.9.1 hands fsdp_config.reshard_after_forward to fully_shard (FSDP2) or maps it to SHARD_GRAD_OP (FSDP1);
    # torch then keeps each layer's bf16 params after its forward: a forward-only pass ends with the whole model
    # gathered (2 bytes a param: 14.2 GiB for the 7B, where the working set is 2 layers and the lm_head, 1.9 GiB),
    # and an update holds it from the forward to the backward beside the layer in flight and the lm_head's gradient
    from wizard.core.memory.terms import vocab_matrix

    def gather(ph):
        return term(ph, "fsdp_gather")

    base, off = report(), report({f"{AF}.reshard_after_forward": False})
    working_fwd, working_upd = gather(phase(base, "old_log_prob")), gather(phase(base, "actor_update"))
    assert working_fwd < 2 * GIB
    assert gather(phase(off, "old_log_prob")) == 2 * P7
    assert gather(phase(off, "actor_update")) == int(2 * P7 + working_upd - vocab_matrix(Q7))
    assert gather(phase(off, "ref_log_prob")) == working_fwd  # the reference has its own key
    # verl reshards only the root module after an eval pass (torch's reshard is not recursive): the actor's copy from
    # its old log-prob pass is still there in the reference pass, until its update's backward frees it
    assert term(phase(off, "ref_log_prob"), "actor_gathered") == 2 * P7
    assert term(phase(off, "generation"), "actor_gathered") == 0
    ref_off = report({"actor_rollout_ref.ref.fsdp_config.reshard_after_forward": False})
    assert gather(phase(ref_off, "ref_log_prob")) == 2 * P7 and gather(phase(ref_off, "old_log_prob")) == working_fwd
    # the reference never runs a backward: its copy stays in every phase of the steady step, beside vLLM too
    for name in ("weight_sync", "generation", "old_log_prob", "actor_update"):
        assert term(phase(ref_off, name), "ref_gathered") == 2 * P7, name
    assert term(phase(ref_off, "load"), "ref_gathered") == 0 and term(phase(ref_off, "ref_log_prob"), "ref_gathered") == 0
    # FSDP1 on one shard is NO_SHARD whatever the key says; FSDP2 keeps its bf16 copies even there
    one = {f"{AF}.reshard_after_forward": False, f"{AF}.fsdp_size": 1}
    assert gather(phase(report(one), "old_log_prob")) == working_fwd
    assert gather(phase(report({**one, f"{A}.strategy": "fsdp2"}), "old_log_prob")) == 2 * P7
