"""The generation phase of a step: the rollout engine's decode steps and prefill, the agent loop's work on each
sample, and verl's poll that sees them done (vLLM and SGLang, each calibrated on its real runs; SGLang's sleep
measured). Split from :mod:`wizard.core.steptime.predict`. Pure.
"""

from __future__ import annotations

import math

from wizard.core.memory.estimate import MemoryReport
from wizard.core.memory.sglang import sglang_gpu_defaults, sglang_max_running
from wizard.core.models.facts import ModelFacts
from wizard.core.steptime import comm
from wizard.core.steptime.terms import Calibration, Gpu, PhaseTime, TimeTerm, flops_params, routed_expert_params


def generation(cfg, actor: ModelFacts, report: MemoryReport | None, seqs: int, lp: int, lr: int, gpu: Gpu,
                c: Calibration, tp_link: comm.Link | None = None, gpus: int | None = None) -> PhaseTime:
    """The rollout of ``seqs`` sequences of ``lp`` prompt and ``lr`` response tokens: rounds of decode steps while the
    engine holds fewer sequences than a replica gets, the prompts' prefill (each prompt once: its n samples share the
    cached prefix, unless vLLM's ``enable_prefix_caching`` is off; SGLang's radix cache is always on in verl), the
    agent loop's work on each sample (``rollout.agent.num_workers`` at a time), and verl's poll that sees them
    done. ``gpus``: the GPUs the replicas run on, where not the trainer's (standalone rollout pools)."""
    eng = cfg.engines["rollout"]
    replicas = max(1, (gpus or cfg.world) // max(1, eng.tp * eng.pp))
    per_replica = math.ceil(seqs / replicas)
    kv = report.kv.get("rollout") if report is not None else None
    held = max(1, kv.sequences) if kv is not None else per_replica
    concurrent = min(per_replica, eng.max_num_seqs, held)
    rounds = math.ceil(per_replica / max(1, concurrent))
    bw = gpu.bandwidth_gbs * 1e9 * c.bandwidth_efficiency
    graphs, why_eager = not eng.enforce_eager, "eager"
    if eng.name == "vllm" and graphs:
        # vLLM captures decode graphs up to min(2 x max_num_seqs, 512, max_num_batched_tokens) unless
        # cudagraph_capture_sizes lists them (config/vllm.py: _set_cudagraph_sizes); a larger batch runs without
        # (cudagraph_dispatcher: CUDAGraphMode.NONE above the largest size)
        largest = vllm_largest_graph(eng.capture_sizes, eng.max_num_seqs, eng.max_num_batched_tokens)
        if concurrent > largest:
            graphs, why_eager = False, f"without CUDA graphs: {concurrent} sequences at once > vLLM's largest " \
                                       f"captured batch {largest}"
    if eng.name == "sglang":
        # SGLang runs at most max_running_requests at once, and a decode batch above cuda_graph_max_bs without its
        # CUDA graphs (cuda_graph_runner.py: can_run); verl's enforce_eager sets disable_cuda_graph
        per_rank = (kv.tokens if kv is not None else 0) // max(1, eng.dp)
        concurrent = min(concurrent, sglang_max_running(actor, per_rank, eng.max_num_seqs, eng.dp))
        rounds = math.ceil(per_replica / max(1, concurrent))
        max_bs = (eng.sglang.cuda_graph_max_bs if eng.sglang else None) or \
            sglang_gpu_defaults(gpu.memory_bytes, eng.tp * max(1, eng.dp))[1]
        if graphs and concurrent > max_bs:
            graphs, why_eager = False, f"without CUDA graphs: {concurrent} requests at once > cuda_graph_max_bs {max_bs}"
    kv_read = concurrent * (lp + lr / 2) * actor.kv_bytes_per_token(tp=eng.tp)
    weights = decode_weight_bytes(actor, concurrent) / eng.tp
    base = c.sglang_decode_overhead_s if eng.name == "sglang" else c.decode_overhead_graphs_s
    overhead = actor.num_layers * c.decode_overhead_eager_layer_s + base if not graphs else base
    step = (weights + kv_read) / bw + overhead
    allreduce = comm.tp_decode_seconds(actor.num_layers, concurrent, actor.hidden_size, eng.tp, tp_link)
    step += allreduce
    lora_factor = c.lora_decode_factor if cfg.lora_rank and not graphs else 1.0  # graphs hold the adapter's kernels
    step *= lora_factor
    decode = rounds * lr * step
    # vLLM (enable_prefix_caching, on by default) and SGLang (its radix cache) cache a prompt's prefix, so its n
    # samples prefill it once (SGLang logs the cached tokens)
    shared = cfg.rollout_n if eng.prefix_caching or eng.name == "sglang" else 1
    prompts = math.ceil(per_replica / max(1, shared))
    prefill = 2 * flops_params(actor) * prompts * lp / (gpu.tflops * 1e12 * eng.tp * c.fwd_efficiency)
    per_worker = math.ceil(seqs / eng.agent_workers)
    samples = per_worker * c.sample_s_per_worker
    seen = math.ceil((decode + prefill + samples) / c.poll_s) * c.poll_s
    terms = [TimeTerm("decode", decode, f"{rounds} round(s) x {lr:,} steps x {step * 1e3:.1f} ms (weights "
                                        f"{weights / 1e9:.1f} GB + KV {kv_read / 1e9:.2f} GB at "
                                        f"{bw / 1e9:.0f} GB/s"
                                        + (f", + {overhead * 1e3:.2f} ms" if overhead else "")
                                        + f" {why_eager if not graphs else 'with CUDA graphs'}"
                                        + (f", + {allreduce * 1e3:.1f} ms of TP {eng.tp} all-reduces over "
                                           f"{tp_link.how}, from link bandwidth" if allreduce else "") + ")"
                                        + (f" x {lora_factor:g} with a LoRA adapter, eager" if lora_factor != 1
                                           else ", a LoRA adapter inside the graphs" if cfg.lora_rank else "")),
             TimeTerm("prefill", prefill, f"{prompts} prompts of {lp:,} tokens per replica" + (
                 f", each prefilled once for its {shared} samples (the cached prefix)" if shared > 1 else "")),
             TimeTerm("samples' scoring and hand-off", samples,
                      f"{per_worker:,} samples per agent-loop worker ({eng.agent_workers} workers: "
                      f"actor_rollout_ref.rollout.agent.num_workers) x {c.sample_s_per_worker * 1e3:.0f} ms: the "
                      "reward and the put into TransferQueue, one sample at a time in each worker (measured with "
                      "2 workers)"),
             TimeTerm("until verl's next poll", seen - decode - prefill - samples, "the replay buffer polls every 2 s")]
    if eng.name == "sglang" and eng.free_cache_engine:
        terms.append(TimeTerm("engine sleep", c.sglang_sleep_s, "SGLang releases its weights and KV cache before the "
                                                                 "trainer's phases (measured on an H100)"))
    if rounds > 1:
        limit = "the KV cache holds" if concurrent == held else (
            "max_running_requests lets" if eng.name == "sglang" else "max_num_seqs lets")
        terms[0] = TimeTerm(terms[0].label, terms[0].seconds, terms[0].note + f"; {limit} {concurrent} of the "
                            f"{per_replica} sequences a replica gets" + ("" if concurrent == held else " run at once"))
    return PhaseTime("gen", "generation", tuple(terms))


def decode_weight_bytes(f: ModelFacts, batch: int) -> float:
    """bf16 weights one decode step reads: all of a dense model's; of an MoE model's routed experts, those its
    ``batch`` tokens pick (each token top-k of E, chosen as if uniformly: 1 - (1 - k/E)^batch of them)."""
    if not (f.num_experts and f.num_experts_per_tok):
        return 2 * f.param_count
    experts = 2 * routed_expert_params(f)
    hit = 1 - (1 - f.num_experts_per_tok / f.num_experts) ** max(1, batch)
    return 2 * f.param_count - experts * (1 - hit)


def vllm_largest_graph(capture_sizes: object, max_num_seqs: int, max_num_batched_tokens: int) -> int:
    """The largest decode batch vLLM captures a CUDA graph for (config/vllm.py: _set_cudagraph_sizes): the listed
    cudagraph_capture_sizes up to max_num_batched_tokens, else its own list (1, 2, 4, multiples of 8 to 256, then of
    16) up to min(2 x max_num_seqs, 512, max_num_batched_tokens)."""
    limit = max(1, max_num_batched_tokens)
    listed = [n for n in capture_sizes if isinstance(n, int) and not isinstance(n, bool) and 0 < n <= limit] \
        if isinstance(capture_sizes, (list, tuple)) else []
    if listed:
        return max(listed)
    top = min(2 * max_num_seqs, 512, limit)
    sizes = [n for n in [1, 2, 4, *range(8, 256, 8), *range(256, top + 1, 16)] if n <= top]
    return max(sizes) if sizes else 1
