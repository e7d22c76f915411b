"""SGLang 0.5.12 as verl 0.9.1's rollout engine: each term held to the number SGLang's own code gives.

"sglang" is python/sglang/srt/ of the sglang 0.5.12 wheel (verl 0.9.1's sglang extra pins it); the formulas are quoted
in wizard/core/memory/terms.py (sglang_memory). Worked example: Qwen2.5-7B (28 layers, 4 KV heads of 128) in bf16,
cell_size = 4 x (128 + 128) x 28 x 2 = 57,344 bytes per token (pool_configurator.py:163-169); weights 2 x
7,615,616,512 = 15,231,233,024 bytes; with 130 GiB free when SGLang measures (pre_model_load_memory) and
mem_fraction_static 0.5: rest = (130 - 14.19) - 130 x 0.5 GiB = 0.5 x 139,586,437,120 - 15,231,233,024 =
54,561,985,536 bytes -> max_total_num_tokens = 54,561,985,536 // 57,344 = 951,485 (model_runner_kv_cache_mixin.py:61-74,
pool_configurator.py:182-187).
"""

from __future__ import annotations

from tests.core.test_memory import A, BASE, P7, Q05, Q7, R, cluster, phase, report, term
from tests.helpers.hf_configs import QWEN25_15B
from tests.helpers.memory_values import full
from wizard.core.models.facts import facts_from_hf_config
from wizard.core.memory.estimate import estimate_memory
from wizard.core.hardware.cluster import GPU, Cluster, ClusterNode
from wizard.adapters.files.resources import load_moves, load_schema
from wizard.core.check.verdict import check_overrides
from wizard.core.memory.board import OK, OOM, fit_verdict, headline
from wizard.core.memory.terms import CONSTANTS as C
from wizard.core.memory.sglang import (
    SglangArgs, sglang_gpu_defaults, sglang_graph_batch_sizes, sglang_memory, sglang_piecewise_tokens,
)
from wizard.core.memory.terms import GIB, engine_activation, vllm_activation
from wizard.core.memory.verdict import DOES_NOT_FIT, FITS, memory_verdict

MIB = 1 << 20
Q15 = facts_from_hf_config(QWEN25_15B, name="Qwen/Qwen2.5-1.5B-Instruct", source="config")
H200 = 143_771 * MIB  # nvidia-smi memory.total of an H200, what SGLang reads (utils/common.py:1647-1677)
SG = {f"{R}.name": "sglang"}
KW = f"{R}.engine_kwargs"


def seven_b(free_gib=130.0, util=0.5, **kw):
    """Qwen2.5-7B on one H200 rank that SGLang finds ``free_gib`` free on (its own context already up)."""
    return sglang_memory(Q7, capacity=H200, free=int(free_gib * GIB) + C.sglang_context, util=util, tp=1,
                         max_num_seqs=kw.pop("max_num_seqs", 256), disable_cuda_graph=kw.pop("eager", False),
                         args=SglangArgs(**kw))


def test_the_kv_pool_is_mem_fraction_static_of_the_free_memory_minus_the_weights():
    s = seven_b()
    assert s.free_at_start == 130 * GIB
    assert s.weights_bytes == 2 * P7 == 15_231_233_024
    assert s.cell_size == 57_344
    assert s.kv_tokens == 951_485  # worked out in the module docstring
    assert s.static_bytes == int(0.5 * 130 * GIB)  # weights + KV pool: the fraction of the free memory, not the total
    # after the pool SGLang leaves exactly (1 - fraction) x free for what it allocates next
    assert 130 * GIB - s.static_bytes == int(0.5 * 130 * GIB)


def test_max_total_tokens_caps_the_pool_and_the_static_memory_with_it():
    s = seven_b(max_total_tokens=100_000)
    assert s.capped and s.kv_tokens == 100_000
    assert s.static_bytes == 2 * P7 + 100_000 * 57_344
    assert not seven_b(max_total_tokens=2_000_000).capped  # above the profiled pool: SGLang keeps the profiled one


def test_gpu_memory_picks_the_prefill_chunk_and_the_graphs_batch_size():
    # server_args.py:1424-1482: H200 / H100 8k and 256 (512 from TP 4), A100-40GB 4k and 32, 24 GB 2k and 24, B200 16k
    assert sglang_gpu_defaults(H200, 1) == (8192, 256) and sglang_gpu_defaults(H200, 4) == (8192, 512)
    assert sglang_gpu_defaults(81_559 * MIB, 2) == (8192, 256)
    assert sglang_gpu_defaults(40_960 * MIB, 1) == (4096, 32)
    assert sglang_gpu_defaults(24_564 * MIB, 1) == (2048, 24)
    assert sglang_gpu_defaults(183_359 * MIB, 8) == (16384, 512)
    # verl hands SGLang tp_size = TP x DP (async_sglang_server.py:313-323): TP 2 with DP 2 reads as SGLang's TP 4
    dp2 = sglang_memory(Q7, capacity=H200, free=100 * GIB, util=0.5, tp=2, dp=2, max_num_seqs=1024,
                        disable_cuda_graph=False)
    assert dp2.cuda_graph_max_bs == 512 and seven_b().cuda_graph_max_bs == 256
    # ... and its TP group of TP x DP ranks has NCCL's buffers even at TP 1
    dp_only = sglang_memory(Q7, capacity=H200, free=100 * GIB, util=0.5, tp=1, dp=2, max_num_seqs=1024,
                            disable_cuda_graph=False)
    assert dp_only.context_bytes == C.sglang_context + C.nccl_buffers and seven_b().context_bytes == C.sglang_context


def test_cuda_graphs_are_captured_up_to_the_smaller_of_cuda_graph_max_bs_and_the_requests():
    # server_args.py:1604-1635 and cuda_graph_runner.py:515-541
    assert sglang_graph_batch_sizes(256, 256) == [1, 2, 4, 8, 12, *range(16, 257, 8)]
    assert sglang_graph_batch_sizes(256, 50) == [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 50]
    s = seven_b()
    assert s.graph_bytes == 256 * 2 * MIB  # SGLang's own reserve: cuda_graph_max_bs x 2 MB (server_args.py:1550)
    assert seven_b(max_num_seqs=64).graph_bytes == 64 * 2 * MIB
    assert seven_b(cuda_graph_max_bs=32).graph_bytes == 32 * 2 * MIB


def test_enforce_eager_drops_the_decode_graphs_but_not_the_piecewise_prefill_graphs():
    assert len(sglang_piecewise_tokens(8192)) == 58  # 4..32, 48..256, 288..512, 576..1024, 1280..4096, 4608..8192
    eager = seven_b(eager=True)
    assert eager.graph_bytes == 0 and eager.graph_batch_sizes == []
    # the graph pool holds the activations of the largest capture (8,192 tokens) and a fixed part
    assert eager.piecewise_sizes == 58  # len(piecewise_cuda_graph_tokens)
    assert eager.piecewise_bytes == int(C.sglang_piecewise_base + engine_activation(Q7, 8192, 1))
    assert seven_b(disable_piecewise_cuda_graph=True).piecewise_bytes == 0
    assert seven_b(lora_adapter=True).piecewise_bytes == 0  # LoRA turns them off (server_args.py:1330-1331)
    assert seven_b(chunked_prefill_size=-1).piecewise_bytes == 0  # no capture sizes without chunked prefill
    capped = seven_b(max_total_tokens=1024)  # the 38 sizes up to 1,024 tokens
    assert capped.piecewise_sizes == 38
    assert capped.piecewise_bytes == int(C.sglang_piecewise_base + engine_activation(Q7, 1024, 1))


def test_piecewise_graphs_match_what_sglang_logged_on_an_h100():
    # SGLang's own "Capture piecewise CUDA graph end ... mem usage" on an H100, Qwen2.5-1.5B (bench/data/verl_real/
    # sgl-grpo-1.5b-*-h100/run.log.gz): 0.74 and 0.75 GiB up to 8,192 tokens, 0.32 GiB up to 2,048
    for chunk, logged in ((8192, 0.745), (2048, 0.32)):
        s = sglang_memory(Q15, capacity=81_559 * MIB, free=70 * GIB, util=0.5, tp=1, max_num_seqs=256,
                          disable_cuda_graph=False, args=SglangArgs(chunked_prefill_size=chunk))
        assert abs(s.piecewise_bytes / GIB - logged) <= 0.1 * logged


def test_the_rest_holds_the_request_table_the_workspace_and_a_prefill_chunk():
    s = seven_b()
    assert s.max_running_requests == 256  # verl's max_num_seqs (the 2,048 floor of SGLang's estimate is above it)
    assert s.req_to_token_bytes == 257 * (32768 + 4) * 4  # memory_pool.py:145-150
    assert s.workspace_bytes == 512 * MIB  # flashinfer workspace for Qwen2 (flashinfer_backend.py:163-173)
    assert s.activation_bytes == int(vllm_activation(Q7, 8192, 256, 1))
    assert seven_b(chunked_prefill_size=2048).activation_bytes == int(vllm_activation(Q7, 2048, 256, 1))
    # chunked prefill off: a prefill batch is bounded by max_prefill_tokens, 16,384 (server_args.py:424)
    assert seven_b(chunked_prefill_size=-1).activation_bytes == int(vllm_activation(Q7, 16384, 256, 1))
    assert s.awake_bytes == s.context_bytes + s.static_bytes + s.dynamic_bytes


def test_triton_attention_has_no_flashinfer_workspace_but_its_own_decode_buffers():
    # attention_backend=triton (engine_kwargs.sglang): triton_backend.py:497-560 allocates, for the largest captured
    # decode batch (256 on an H200), fp32 partial outputs and log-sum-exp per head and KV split (8, server_args.py:
    # 748), and int64 KV indices where flashinfer's are int32: 4 more bytes per request and context token
    t = seven_b(attention_backend="triton")
    assert t.workspace_bytes == 256 * 28 * 8 * (128 + 1) * 4 + 256 * 32768 * 4  # Qwen2.5-7B: 28 heads of 128
    assert seven_b().awake_bytes - t.awake_bytes == 512 * MIB - t.workspace_bytes
    assert seven_b(attention_backend="triton", triton_kv_splits=16).workspace_bytes > t.workspace_bytes
    assert seven_b(attention_backend="triton", eager=True).workspace_bytes == 0  # no graphs, no graph state
    rep, _ = judged({**SG, f"{R}.gpu_memory_utilization": 0.5, KW: {"sglang": {"attention_backend": "triton"}}},
                    h200())
    runtime = next(t for t in phase(rep, "generation").terms if t.key == "engine_rollout_runtime")
    assert "triton attention's decode buffers" in runtime.label and "flashinfer" not in runtime.label


def test_the_weight_sync_to_sglang_holds_two_buckets_of_whole_tensors_not_a_send_buffer():
    # SGLangRollout.update_weights (verl sglang_rollout.py:377-385) keeps the bucket it sent until the next is whole:
    # two buckets of fp32 tensors (the trainer's dtype) and the one that overflows the second, at most the model
    rep, _ = judged({**SG, f"{R}.gpu_memory_utilization": 0.5}, h200())
    sync = phase(rep, "weight_sync")
    largest = 4 * 152064 * 3584  # Qwen2.5-7B's fp32 embedding
    assert term(sync, "sync_bucket") == 2 * 2048 * MIB + largest
    assert "two buckets" in next(t.label for t in sync.terms if t.key == "sync_bucket")
    small, _ = judged({**SG, f"{R}.gpu_memory_utilization": 0.5,
                       f"{R}.checkpoint_engine.update_weights_bucket_megabytes": 512}, h200())
    assert term(phase(small, "weight_sync"), "sync_bucket") == 2 * 512 * MIB + largest
    # a bucket larger than the model: the whole model, once
    big, _ = judged({**SG, f"{R}.gpu_memory_utilization": 0.5,
                     f"{R}.checkpoint_engine.update_weights_bucket_megabytes": 65536}, h200())
    assert term(phase(big, "weight_sync"), "sync_bucket") == 4 * P7
    vllm, _ = judged({f"{R}.gpu_memory_utilization": 0.5}, h200())  # vLLM's sender: one preallocated buffer
    assert term(phase(vllm, "weight_sync"), "sync_bucket") == 2048 * MIB
    # over 8 GPUs each weight is gathered (one more alive before its bucket's copy)
    assert term(sync, "sync_tensor") == largest


def one_gpu_sync(values, facts=Q05):
    rep, why = estimate_memory(full({**BASE, **SG, "trainer.n_gpus_per_node": 1, f"{R}.tensor_model_parallel_size": 1,
                                     f"{R}.gpu_memory_utilization": 0.5, **values}), {"actor": facts}, h200(1))
    assert rep is not None, why
    return phase(rep, "weight_sync")


def test_the_sglang_sync_of_a_small_tied_model_holds_its_whole_state_dict_and_no_more():
    # Qwen2.5-0.5B ties its embedding: state_dict() lists it twice (embed_tokens, lm_head), so the fp32 tensors sent in
    # two buckets come to 4 x (0.49B + 151,936 x 896) = 2.35 GiB, less than two buckets of 2,048 MiB
    vh = 151936 * 896
    sync = one_gpu_sync({f"{A}.strategy": "fsdp2", "actor_rollout_ref.ref.strategy": "fsdp2"})
    assert term(sync, "sync_bucket") == 4 * (Q05.param_count + vh)
    assert term(sync, "sync_tensor") == 0  # FSDP2 on one GPU: the bucket's copy is the only one
    # param offload: the shard is copied to the GPU before its bucket's copy is made
    off = one_gpu_sync({f"{A}.strategy": "fsdp2", "actor_rollout_ref.ref.strategy": "fsdp2",
                        f"{A}.fsdp_config.param_offload": True})
    assert term(off, "sync_tensor") == 4 * vh
    # FSDP1 on one GPU: the buckets point into its state_dict copy (sync_copy), nothing more
    fsdp1 = one_gpu_sync({f"{A}.strategy": "fsdp", "actor_rollout_ref.ref.strategy": "fsdp"})
    assert term(fsdp1, "sync_bucket") == 0 and term(fsdp1, "sync_copy") > 0
    # LoRA served as an adapter: base weights from the CPU, one bucket on the GPU at a time
    lora = one_gpu_sync({f"{A}.strategy": "fsdp2", "actor_rollout_ref.ref.strategy": "fsdp2",
                         "actor_rollout_ref.model.lora_rank": 32,
                         f"{R}.checkpoint_engine.update_weights_bucket_megabytes": 1024})
    assert term(lora, "sync_bucket") == 1024 * MIB


def test_a_fraction_below_the_weights_leaves_no_pool():
    s = seven_b(free_gib=20, util=0.5)  # 10 GiB for 14.2 GiB of weights
    assert s.kv_bytes < 0 and s.kv_tokens == 0


# ------------------------------------------------------------------------------------------------ in a verl plan


def judged(values, cl):
    """The estimate of BASE (Qwen2.5-7B, 8 GPUs, TP 2) with ``values``, and its verdict."""
    values = full({**BASE, **values})
    rep, why = estimate_memory(values, {"actor": Q7}, cl)
    assert rep is not None, why
    return rep, memory_verdict(rep, values, {"actor": Q7}, cl)


def h200(n=8):
    return Cluster(source="spec", nodes=[ClusterNode(name="node0", gpu_count=n, gpus=[
        GPU(index=j, name="NVIDIA H200", memory_total_bytes=H200) for j in range(n)])])


def test_a_plan_that_fits_gets_the_verdict_words_and_the_kv_pool_sglang_computes():
    values = {**SG, f"{R}.gpu_memory_utilization": 0.5}
    rep, v = judged(values, h200())
    load = phase(rep, "load")
    # the trainer's load state less the allocator cache verl empties before the engines start
    trainer = sum(t.bytes for t in load.terms if not t.key.startswith(("engine", "graphs", "driver", "allocator")))
    free = H200 - C.driver_reserved - trainer - (C.sglang_context + C.nccl_buffers)  # TP 2
    kv = rep.kv["rollout"]
    assert kv.engine == "sglang" and kv.budget_bytes == int(0.5 * free)
    assert kv.tokens == int((0.5 * free - P7) // (2 * 28 * 2 * 128 * 2))  # 2 of the 4 KV heads per rank
    assert rep.unmodelled is None
    assert v.word == FITS and v.fits is True


def test_no_kv_pool_is_does_not_fit_with_sglang_s_own_words():
    values = {**SG, f"{R}.gpu_memory_utilization": 0.05, f"{R}.tensor_model_parallel_size": 1}
    rep, v = judged(values, cluster(gib=80))
    assert rep.kv["rollout"].kv_bytes <= 0
    assert v.word == DOES_NOT_FIT and v.cause == "kv_cache"
    res = check_overrides(load_schema(), ["actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct",
                                          "trainer.n_gpus_per_node=8", f"{R}.name=sglang",
                                          f"{R}.gpu_memory_utilization=0.05", f"{R}.tensor_model_parallel_size=1"],
                          moves=load_moves(), cluster=cluster(gib=80), models={"actor": Q7})
    found = [f for f in res.findings if f.rule == "memory.kv_cache"]
    assert found and "Not enough memory. Please try to increase --mem-fraction-static." in found[0].message


def test_a_pool_shorter_than_one_request_does_not_fit():
    # max_total_tokens below prompt + response (1,536): SGLang caps every request at its pool and cuts the responses
    values = {**SG, KW: {"vllm": {}, "sglang": {"max_total_tokens": 1000}, "trtllm": {}}}
    rep, v = judged(values, h200())
    assert rep.kv["rollout"].tokens == 1000
    assert v.word == DOES_NOT_FIT and v.cause == "kv_cache"


def test_graphs_and_activations_past_the_rest_overflow_the_gpu():
    # 0.99 of the free memory leaves ~0.7 GiB for graphs, workspace and a 8k-token prefill: the load phase overflows
    values = {**SG, f"{R}.gpu_memory_utilization": 0.99}
    rep, v = judged(values, h200())
    assert phase(rep, "load").total > H200  # it already fails while it starts (capturing its graphs)
    assert v.word == DOES_NOT_FIT and v.cause == "generation"  # the peak: the trainer holds more after step 1


def test_asleep_sglang_keeps_its_context_workspace_and_graphs_only():
    rep = report({**SG, f"{R}.gpu_memory_utilization": 0.5}, cl=h200())
    gen = phase(rep, "generation")
    s_graphs, runtime = term(gen, "graphs_rollout"), term(gen, "engine_rollout_runtime")
    context = term(gen, "engine_rollout_context")
    upd = phase(rep, "actor_update")
    assert term(upd, "engine_rollout") == 0 and term(upd, "engine_rollout_runtime") == 0
    assert term(upd, "engine_rollout_asleep") == context + 512 * (1 << 20) + s_graphs
    assert runtime > 512 * (1 << 20)  # the activations and the request table went with the flushed cache
    # LoRA served as an adapter: verl's sleep releases only the KV cache, the base weights stay (sleep_level 1)
    lora = report({**SG, f"{R}.gpu_memory_utilization": 0.5, "actor_rollout_ref.model.lora_rank": 32}, cl=h200())
    assert term(phase(lora, "actor_update"), "engine_rollout_asleep") == \
        context + 512 * (1 << 20) + term(phase(lora, "generation"), "graphs_rollout") + P7  # bf16 / TP 2
    # free_cache_engine=false: the engine never sleeps
    awake = report({**SG, f"{R}.free_cache_engine": False}, cl=h200())
    assert term(phase(awake, "actor_update"), "engine_rollout") == term(phase(awake, "generation"), "engine_rollout")


def test_the_placement_board_draws_an_sglang_plan_with_its_verdict():
    from tests.core.test_placement_board import state

    s = state("grpo-8gpu", "8xH200", [f"{R}.name=sglang"], models={"actor": Q7, "ref": Q7})
    assert s.report is not None and s.report.unmodelled is None and len(s.by_gpu) == 8
    worst = max(s.report.groups, key=lambda g: g.peak.total)
    assert fit_verdict(s.report, worst) == OK
    assert headline(s).startswith("Fits: worst GPU") and "(global_pool)" in headline(s)
    tile = s.estimate_of("node0", 0)
    assert {"engine_rollout", "graphs_rollout", "engine_rollout_runtime", "engine_rollout_context"} <= {
        t.key for t in next(p for p in tile.phases if p.name == "generation").terms}
    full = state("grpo-8gpu", "8xH200", [f"{R}.name=sglang", f"{R}.gpu_memory_utilization=0.99"],
                 models={"actor": Q7, "ref": Q7})
    assert fit_verdict(full.report, max(full.report.groups, key=lambda g: g.peak.total)) == OOM
    assert headline(full).startswith("Does not fit")


def test_a_small_model_on_one_gpu():
    rep = report({**SG, "trainer.n_gpus_per_node": 1, f"{R}.tensor_model_parallel_size": 1}, {"actor": Q05}, h200(1))
    assert rep.kv["rollout"].bytes_per_token == 2 * 24 * 2 * 64 * 2
    assert phase(rep, "generation").total < H200
