"""The terms of the GPU memory estimate, and every constant they use, each with its source.

Pure arithmetic on :class:`ModelFacts` and a few numbers; :mod:`wizard.core.memory.estimate` assembles them per phase.
Sources: "ref §x" is ../shared/reference/gpu-memory.md section x; "H200" is ``bench/data/gpu_memory_h200.json``,
measured by ``bench/calibrate_gpu_memory.py`` (Qwen2 models of 0.5B-3B and a 4-layer 7B slice, FSDP2 on one
rank, fp32 master weights, AdamW, bf16 compute, torch 2.11, ``expandable_segments:True`` as verl trains);
"verl H200" is ``bench/data/verl_real/``: real verl 0.9.1 runs with vLLM 0.24 on one H200 (NVML per process at
10 Hz, cut into verl's own phases; ``bench/bench_memory_real.py`` prints them against this estimate);
"[E]" is an estimate nobody measured here. ``REFERENCE_CONSTANTS`` are the values the reference proposed
before that measurement (``bench/bench_memory.py`` prints the error of both).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict

from wizard.core.memory import vision
from wizard.core.models.facts import ModelFacts

GIB = 1024**3
DTYPE_BYTES = {"fp32": 4, "float32": 4, "32": 4, "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2, "16": 2, "half": 2,
               "float": 4}


class MemoryConstants(BaseModel):
    """Every tunable number of the estimate. Units: bytes, or multipliers of the named tensor."""

    model_config = ConfigDict(frozen=True)

    # Activations saved per token by one Qwen2/Llama decoder layer in bf16 autocast, with flash attention:
    # act_h*h + act_q*q + act_kv*kv + act_i*I bytes (q = heads*head_dim, kv = kv_heads*head_dim).
    # H200: derived from the saved tensors (two RMSNorms keep an fp32 input, 2 bf16 outputs each = 16h; rotated q,
    # attention output and its reshape copy = 6q; rotated k and v = 4kv; gate, up, silu, product = 8I), and the
    # no-checkpointing fit gives 0.98x of it. Ref §2.3 proposed 10h + 4kv + 8I.
    act_h: float = 16
    act_q: float = 6
    act_kv: float = 4
    act_i: float = 8
    # With gradient checkpointing: each layer keeps its input (2h per token, x gc_store) and one layer is
    # recomputed with its backward temporaries (x gc_recompute of the layer's activations). H200 fit: 1.08, 1.19.
    gc_store: float = 1.0
    gc_recompute: float = 1.2
    # bf16 copies of the V x h matrix (lm_head, or the tied embedding) alive in an update: gathered bf16 weight plus
    # its fp32 gradient before the reduce-scatter = 3 copies. H200 fit 2.9. Ref §2.2 proposed 1.
    vocab_copies_update: float = 3.0
    vocab_copies_forward: float = 1.0  # H200: forward-only passes hold the gathered lm_head only
    # Forward-only (no_grad) passes free each layer's intermediates at once: a quarter of what a layer saves for
    # backward (hidden, normed input, gate, up, product) [E]; H200: never the peak, the logits were.
    forward_layer_fraction: float = 0.25
    # bf16 copies of one decoder layer in flight. H200 (one rank) fits 0.4 for an update; kept at 1 since with N > 1
    # FSDP also holds the reduce-scatter input. Forward-only: current + prefetched unit (ref §2.2).
    layer_copies_update: float = 1.0
    layer_copies_forward: float = 2.0
    # Logits (T x V): bf16; flash-attn's cross-entropy writes the gradient in place (H200: 1.0x). Ref §2.15 added
    # fp32 temporaries (4 more bytes per logit).
    logits_bytes: float = 2.0
    logits_extra_update: float = 0.0
    # Without flash-attn verl takes logprobs_from_logits_v2, whose per-row bf16 log-softmax stays for the backward.
    # verl H200 (no flash-attn wheel exists there): update peak - states = 7.28 GiB for 7,584 tokens of Qwen2.5-1.5B,
    # one bf16 copy of the logits over the flash-attn path.
    logits_extra_update_torch: float = 2.0
    # At the update's peak the allocator still holds part of the backward's blocks while the optimizer step
    # allocates beside them. verl H200, no flash-attn: reserved - allocated at the peak = 0.51-0.63 x the backward's
    # transient (0.5B FSDP1, 1.5B and 3B FSDP2). With flash-attn: the vocabulary slack below (not measured in verl).
    update_cache_fraction: float = 0.57
    # Without flash-attn transformers' SDPA path gets a packed micro-batch (use_remove_padding) as one row with
    # position_ids restarting at each sequence and builds one (T x T) boolean block-causal mask for it, alive
    # through the model's forward; each layer's attention has torch turn it into a bf16 additive bias (its negation,
    # the bias and an aligned copy of it), freed after the layer. Bytes per (query, key) pair: 1 + 1 + 2 + 2. verl
    # H100, the fused log-prob head (no (T x V) logits to hide it): the trainer process went from 35.9 to 53.0 GiB
    # within a second of the old log-prob pass's start at T = 55,000 (5.9 and 7.0 bytes a pair over what the
    # estimate had, at T = 23,400 and 55,000; advised-ppo-1.5b-critic-4096-h100-3, time-grpo-1.5b-...-fused-h100).
    sdpa_mask_pair: float = 6.0
    # Entropy of every token (bytes per logit element). torch.compile is verl's default (fsdp_config.use_torch_compile).
    # H200: update +0.75x / +5.5x of the bf16 logits (compiled / eager); forward-only +0 / +2x.
    entropy_update_compiled: float = 1.5
    entropy_update_eager: float = 11.0
    entropy_forward_compiled: float = 0.0
    entropy_forward_eager: float = 4.0
    entropy_chunk_rows: int = 2048  # entropy_from_logits_chunk_size default; fp32 chunk + softmax (ref §2.4)
    # AdamW (torch.optim, foreach on CUDA) keeps a temporary the size of the moments' shard during step():
    # H200 step peak = 20 P/N bytes in fp32 (states 16 P/N + 4 P/N). Ref §2.2 counted 16 P/N.
    optimizer_step_temp: float = 1.0
    # Caching allocator: reserved over allocated at the peak of a pass with an FSDP working set, in bf16 copies of the
    # V x h matrix. H200 with expandable segments: 0.6 GiB (Qwen2.5-0.5B) to 2.5 GiB (the 7B layer slice), about
    # 2.4 copies in every model; ~0 at the optimizer step (few, large, equal tensors).
    allocator_slack_vocab: float = 2.5
    # verl's FSDP2 log-prob passes (old and reference) hold less: NVML - (the terms without slack) = 0.1-1.0 copies
    # in 11 passes of 0.5B / 1.5B / 3B with the params on the GPU, 0.4-4.8 in 5 with them streamed from the CPU
    # (param_offload / offload_policy; verl H200, bench/bench_memory_real.py). 1.25-2.0 keep every one within 10 %;
    # 1.75 leans to the safe side (the streamed 0.5B passes are the under-estimates).
    allocator_slack_forward_fsdp2: float = 1.75
    # Outside torch, per process: CUDA context and library workspaces. H200: NVML used - reserved - idle = 0.30 GiB
    # for a plain torch process (bench/bench_memory.py).
    cuda_context: int = int(0.3 * GIB)
    # verl's trainer worker (WorkerDict) outside torch's allocator: CUDA context, NCCL, cuBLAS workspaces and compiled
    # kernels. verl H200: NVML per process - torch reserved = 1.14-1.30 GiB in every run (FSDP1 and FSDP2).
    trainer_context: int = int(1.25 * GIB)
    # The Megatron trainer worker holds more outside torch's allocator once it has trained: 1.27 GiB at load (as
    # trainer_context), 2.82 after the first step (NVML 12.27 GiB - torch reserved 9.45): TransformerEngine's and
    # cuBLASLt's workspaces, the first collectives' NCCL buffers, compiled kernels. One run alone on an H100
    # (meg-grpo-0.5b-tp1-u0.4-h100, megatron-core 0.18, TransformerEngine 2.16.1).
    megatron_runtime: int = int(1.55 * GIB)
    # What the driver keeps of every GPU: NVML's total minus CUDA's. H200: 140.4 - 139.8 GiB = 644,939,776 bytes,
    # NVML used on the idle GPU of the verl H200 runs, and nvml_total - cuda_total in gpu_memory_h200.json.
    driver_reserved: int = 644_939_776
    nccl_buffers: int = int(0.5 * GIB)  # per process in a multi-rank NCCL group [E, ref §2.11]
    # vLLM 0.24 sizes gpu_memory_utilization on CUDA's total (capacity - driver_reserved) and counts its CUDA graph
    # pool inside it ("CUDA graph memory profiling is enabled (default since v0.21.0)"). Awake, its worker process
    # holds the budget and a little more. verl H200: 0.21-0.42 GiB over util x 139.8 GiB (3 runs).
    vllm_outside_budget: int = int(0.4 * GIB)
    # Inside the budget beside weights, activation peak and graphs. verl H200: util x 139.8 - weights - graphs -
    # "Available KV cache memory" = the activation peak + 0.26 GiB (Qwen2.5-1.5B). TP > 1 adds NCCL buffers [E]
    # (older vLLM logged 3.58 GiB of non-torch memory at TP2, ref §3.3).
    vllm_non_torch_tp1: int = int(0.3 * GIB)
    vllm_non_torch_tp: int = int(2.0 * GIB)
    # vLLM's profile run: (act_i*I/TP + act_h*h) bytes per batched token; 1.2 GiB for Llama-3-8B at 8192 tokens
    # (ref §3.3 logs 1.26 GiB), plus the sampler's fp32 logits for max_num_seqs.
    vllm_act_i: float = 7.0
    vllm_act_h: float = 10.0
    # Asleep (level 1 or 2) the worker keeps its context, and its CUDA graph pool stays. verl H200: 0.98 GiB with
    # enforce_eager (Qwen2.5-3B); 1.24 / 1.67 GiB with graphs (0.5B / 1.5B; vLLM logs a 0.35 GiB pool for 1.5B).
    vllm_asleep: int = int(1.0 * GIB)
    cuda_graphs: int = int(0.5 * GIB)
    cuda_graphs_small: int = int(0.2 * GIB)  # cudagraph_capture_sizes set to a short list [E]
    # SGLang 0.5.12 as verl 0.9.1 starts it (wizard/core/memory/sglang.py; "sglang" is sglang 0.5.12's python/sglang/srt/):
    # its scheduler process's CUDA context and NCCL communicator exist before it measures the free memory
    # (model_runner.py:1186-1299: init_torch_distributed) [E, as cuda_context + cuBLAS/NCCL]
    sglang_context: int = int(0.5 * GIB)
    # What SGLang itself reserves, in its own words, for what it does not profile (server_args.py:1541-1571, MB):
    # "reserved_mem += self.cuda_graph_max_bs * 2" for the decode CUDA graphs (its log measured 0.39-0.41 GiB for 256
    # sizes on an H100, 1.5B, triton's 0.04 GiB of decode buffers included: the 2 MB a size over-counts by 0.15 GiB),
    # 1.5 GiB of piecewise graphs with an MLA backend
    sglang_graph_per_bs: int = 2 << 20
    sglang_piecewise_mla: int = int(1.5 * GIB)
    # The piecewise prefill graphs hold the activations of their largest capture (the graph pool is shared; the
    # per-token arithmetic of vllm_activation) and a fixed part: SGLang's "Capture piecewise CUDA graph end ... mem
    # usage" was 0.74-0.75 GiB up to 8,192 tokens (58 sizes) and 0.32 GiB up to 2,048 (42 sizes), H100, Qwen2.5-1.5B
    # (bench/data/verl_real/sgl-*); its own reserve, 8 MB a size, says 0.45 and 0.33 [E]
    sglang_piecewise_base: int = int(0.16 * GIB)
    # A GPU is "tight" when less than max(tight_fraction of its memory, tight_min) stays free at the peak: the
    # estimator's error after calibration (bench/bench_memory.py) plus fragmentation without expandable segments.
    tight_fraction: float = 0.08
    tight_min: int = int(2 * GIB)
    # Host RAM [E]: resident size of a Ray worker that imported torch + CUDA (trainer), of a rollout GPU's engine
    # processes (vLLM's worker, EngineCore and HTTP server: 3.6 GiB of PSS measured for Qwen2.5-1.5B on an H100, 1.76 +
    # 0.72 + 1.25 GB; advised-ppo-1.5b-critic-4096-h100's host.jsonl), and the per-node processes (TaskRunner,
    # TransferQueue's controller and storage units, agent-loop and reward workers, the load balancer: 9-10 GB at that
    # run's peak, storage 3.3 of it), per dataloader worker.
    host_trainer_process: int = int(3 * GIB)
    # Megatron's trainer worker holds less: 2.29 GB at meg-grpo-0.5b-tp1-u0.4-h100's peak (FSDP's 2.9-3.3 GB).
    host_trainer_megatron: int = int(2.3 * GIB)
    host_engine_process: int = int(3.5 * GIB)
    host_node_fixed: int = int(10 * GIB)
    # of those per-node processes, what is there while rank 0 reads the model at start (the engines not started, the
    # storage units empty: 3.4 GiB measured then, beside the trainer's 9.5 GiB, in the same run)
    host_node_fixed_at_start: int = int(3.5 * GIB)
    host_dataloader_worker: int = int(0.5 * GIB)


CONSTANTS = MemoryConstants()
# What ../shared/reference/gpu-memory.md §2.15 proposed before the H200 measurements (bench/bench_memory.py).
REFERENCE_CONSTANTS = MemoryConstants(
    act_h=10, act_q=0, act_kv=4, act_i=8, gc_recompute=1.0, vocab_copies_update=1.0, layer_copies_update=5.0,
    logits_extra_update=4.0, entropy_update_compiled=4.0, entropy_update_eager=4.0, entropy_forward_compiled=4.0,
    entropy_forward_eager=4.0, optimizer_step_temp=0.0, allocator_slack_vocab=0.0)


class Term(BaseModel):
    model_config = ConfigDict(frozen=True)

    key: str  # stable id: actor_params, kv_budget, ...
    label: str
    bytes: int
    note: str = ""


RAY_KILL_FRACTION = 0.95
HOST_AT_START = frozenset({"host_init"})  # rank 0's read of the whole model, freed once FSDP holds it
HOST_PROCESSES = frozenset({"host_trainer", "host_engine", "host_fixed", "host_dataloader"})
HOST_FIXED_AT_START = MemoryConstants().host_node_fixed_at_start


class HostEstimate(BaseModel):
    model_config = ConfigDict(frozen=True)

    node: str
    terms: list[Term]
    capacity_bytes: int | None

    @property
    def total(self) -> int:
        """The node's peak: the larger of the start, while rank 0 reads the whole model (the trainers, that read and
        the few per-node processes there by then: no engine yet, TransferQueue empty), and the run, every process
        with the states kept. The read is gone before the engines sleep and the first weight sync gathers (verl H200,
        14B LoRA: the trainer held 56.0 GiB at that sync, one copy of 4 bytes x 14.8B, not two; verl H100, 1.5B PPO:
        13.3 GiB used at the read, 16.9 at the run's peak)."""
        return max(self.moments)

    @property
    def moments(self) -> tuple[int, int]:
        """(the start, the run): what the node holds while rank 0 reads the model (0 where no rank does) and while
        it runs; its terms add up to neither where both are present."""
        by = {}
        for t in self.terms:
            by[t.key] = by.get(t.key, 0) + t.bytes
        read = sum(by.get(k, 0) for k in HOST_AT_START)
        kept = sum(v for k, v in by.items() if k not in HOST_AT_START and k not in HOST_PROCESSES)
        processes = sum(by.get(k, 0) for k in HOST_PROCESSES)
        at_start = (by.get("host_trainer", 0) + read + by.get("host_dataloader", 0)
                    + min(by.get("host_fixed", 0), HOST_FIXED_AT_START)) if read else 0
        return at_start, processes + kept

    @property
    def limit(self) -> float | None:
        """What the run may use: Ray's memory monitor kills workers past this share of the node's memory
        (``RAY_memory_usage_threshold``, 0.95 by default; verl H200: "exceeded threshold ... (95.0% of ... limit)")."""
        return None if self.capacity_bytes is None else RAY_KILL_FRACTION * self.capacity_bytes

    @property
    def over(self) -> bool:
        return self.limit is not None and self.capacity_bytes > 0 and self.total > self.limit


def dtype_bytes(name: object, default: int = 4) -> int:
    return DTYPE_BYTES.get(str(name).lower(), default) if name is not None else default


# ------------------------------------------------------------------------------------------------
# Model states


def lora_params(facts: ModelFacts, rank: int) -> int:
    """Adapter parameters of ``target_modules: all-linear``: r x (in + out) for q, k, v, o, gate, up, down."""
    h, q = facts.hidden_size, facts.num_attention_heads * facts.head_dim
    kv, inter = facts.num_kv_heads * facts.head_dim, facts.moe_intermediate_size or facts.intermediate_size
    per_layer = (h + q) + 2 * (h + kv) + (q + h) + 3 * (h + inter)
    return rank * per_layer * facts.num_layers


def critic_params(facts: ModelFacts) -> int:
    """AutoModelForTokenClassification(num_labels=1): the decoder and embeddings, a value head instead of lm_head."""
    return facts.param_count - (0 if facts.tie_word_embeddings else facts.vocab_size * facts.hidden_size) + facts.hidden_size


def layer_activation(facts: ModelFacts, tokens: float, c: MemoryConstants = CONSTANTS, tp: int = 1) -> float:
    """Bytes one decoder layer saves for backward over ``tokens`` tokens (see MemoryConstants.act_*)."""
    h, q = facts.hidden_size, facts.num_attention_heads * facts.head_dim
    kv = facts.num_kv_heads * facts.head_dim
    inter = facts.intermediate_size
    if facts.num_experts:  # routed tokens pass top-k experts of moe_intermediate_size (+ a shared one)
        inter = (facts.num_experts_per_tok or 1) * (facts.moe_intermediate_size or inter) + (
            facts.shared_expert_intermediate_size or 0)
    return tokens * (c.act_h * h + c.act_q * q / tp + c.act_kv * kv / tp + c.act_i * inter / tp)


def train_activations(facts: ModelFacts, tokens: float, gc: bool, offload: bool,
                      c: MemoryConstants = CONSTANTS) -> tuple[float, str]:
    """Activations of one micro-batch kept for its backward, and how they were counted."""
    one = layer_activation(facts, tokens, c)
    if gc:
        store = 0.0 if offload else c.gc_store * facts.num_layers * tokens * 2 * facts.hidden_size
        return store + c.gc_recompute * one, (
            f"checkpointed: {'layer inputs on CPU (activation offload)' if offload else f'{facts.num_layers} layer inputs'}"
            " + one layer recomputed")
    if offload:
        return 2 * one, "no checkpointing, activation offload: about two layers on the GPU"
    return facts.num_layers * one, f"no checkpointing: all {facts.num_layers} layers' activations"


def vocab_matrix(facts: ModelFacts) -> int:
    """Bytes of the V x h matrix (lm_head or the tied embedding) in bf16."""
    return 2 * facts.vocab_size * facts.hidden_size


def largest_weight(facts: ModelFacts, dtype_bytes: int) -> int:
    """Bytes of the model's largest weight, the V x h matrix, at the trainer's dtype (what the weight sync makes
    whole, and the least verl's send buffer must hold)."""
    return dtype_bytes * facts.vocab_size * facts.hidden_size


# verl's fused head (use_fused_kernels; verl/utils/experimental/torch_functional.py:36-95,96-217, FusedLinearForPPO's
# torch backend, chunk_size=512): the logits of 512 tokens at a time, never the whole (T x V). Its forward holds a
# chunk's fp32 logits, their softmax and two V-wide temporaries of the entropy (logsumexp's shifted copy and exp, or
# probs x logits): 16 bytes a logit. One run measured it (time-grpo-1.5b-fsdp2-u0.5-resp1024-fused-h100): its
# log-prob passes 25.16 GiB against 23.3 with this (-7.5 %; 3.06 GiB under the same run without the fused head,
# whose (T x V) logits were 6.96); its update's peak 33.09 GiB, under the terms without any chunk (34.3 at the
# optimizer step), so the backward's chunk (verl recomputes it with the one-hot and dlogits) is not added: it sits in
# what the backward's cached blocks are counted at
FUSED_CHUNK_ROWS = 512
FUSED_FORWARD_BYTES = 16


def logits(facts: ModelFacts, tokens: float, fused: bool, c: MemoryConstants = CONSTANTS, update: bool = True,
           flash_attn: bool = True) -> float:
    """The (T x V) logits; ``use_fused_kernels`` returns log-probs without materialising them (the hidden states and
    one chunk's working set). Without flash-attn the update keeps a bf16 log-softmax per row for the backward
    (verl's logprobs_from_logits_v2)."""
    if fused:
        chunk = 0 if update else min(tokens, FUSED_CHUNK_ROWS) * facts.vocab_size * FUSED_FORWARD_BYTES
        return tokens * facts.hidden_size * 4 + chunk
    extra = (c.logits_extra_update if flash_attn else c.logits_extra_update_torch) if update else 0.0
    return tokens * facts.vocab_size * (c.logits_bytes + extra)


def entropy(facts: ModelFacts, tokens: float, mode: str, update: bool, c: MemoryConstants = CONSTANTS) -> float:
    """Extra bytes of the entropy of every token: mode compiled | eager | chunked | checkpointed | fused | none."""
    if mode in ("none", "fused"):
        return 0.0
    per_logit = {
        ("compiled", True): c.entropy_update_compiled, ("eager", True): c.entropy_update_eager,
        ("compiled", False): c.entropy_forward_compiled, ("eager", False): c.entropy_forward_eager,
        ("checkpointed", True): c.entropy_forward_compiled, ("checkpointed", False): c.entropy_forward_compiled,
    }.get((mode, update))
    if per_logit is not None:
        return tokens * facts.vocab_size * per_logit
    rows = min(tokens, c.entropy_chunk_rows)  # chunked: an fp32 chunk and its softmax
    return rows * facts.vocab_size * 8


# ------------------------------------------------------------------------------------------------
# Rollout engines


def engine_activation(facts: ModelFacts, tokens: int, tp: int, c: MemoryConstants = CONSTANTS) -> float:
    """A rollout engine's decoder forward: its activation peak over ``tokens`` tokens on one TP rank (measured with vLLM's profile run;
    an MoE layer at its routed experts' width)."""
    inter = facts.intermediate_size if not facts.num_experts else (facts.moe_intermediate_size or facts.intermediate_size) * (
        facts.num_experts_per_tok or 1)
    return tokens * (c.vllm_act_i * inter / tp + c.vllm_act_h * facts.hidden_size)


def vllm_activation(facts: ModelFacts, batched_tokens: int, max_num_seqs: int, tp: int,
                    c: MemoryConstants = CONSTANTS, encoder: bool = True, max_model_len: int | None = None,
                    mm: vision.MmProfile = vision.NO_SETTINGS) -> float:
    """vLLM's profiled activation peak: a dummy forward of max_num_batched_tokens and the sampler's fp32 logits; with
    a vision tower (``encoder``: vLLM profiles it), the larger of that and the encoder's run, plus the encoder
    outputs the language model's run keeps (:func:`wizard.core.memory.vision.vllm_encoder_profile`)."""
    lm = engine_activation(facts, batched_tokens, tp, c) + max_num_seqs * facts.vocab_size * 4
    if not (encoder and vision.has_tower(facts)):
        return lm
    tower, kept = vision.vllm_encoder_profile(facts, batched_tokens, tp, c,
                                              max_model_len or facts.max_position_embeddings, mm)
    return max(lm, tower) + kept


def engine_weights(facts: ModelFacts, tp: int, pp: int = 1) -> float:
    """bf16 weights on one rank: layers split by TP (and PP), vocabulary-parallel embedding and lm_head."""
    return 2 * facts.param_count / max(1, tp) / max(1, pp)


def non_torch(tp: int, c: MemoryConstants = CONSTANTS) -> int:
    return c.vllm_non_torch_tp1 if tp <= 1 else c.vllm_non_torch_tp


class KvCache(BaseModel):
    """What a rollout replica's KV cache holds, per GPU and per replica."""

    model_config = ConfigDict(frozen=True)

    engine: str
    budget_bytes: int  # gpu_memory_utilization x CUDA's total (vLLM), or the fraction of free memory (SGLang)
    weights_bytes: int
    activation_bytes: int
    other_bytes: int  # non-torch memory and the CUDA graph pool, counted inside the budget
    kv_bytes: int  # per GPU; <= 0 means the engine does not start
    bytes_per_token: int  # per GPU (its share of the KV heads and layers)
    tokens: int  # tokens one replica can hold at once (x data-parallel ranks)
    seq_tokens: int  # prompt + response: the most one sequence can need
    max_model_len: int | None
    sequences: int  # sequences of seq_tokens one replica holds at once
    wanted: int  # sequences the batch puts on one replica at once (max_num_seqs caps it)
    # engine_kwargs.vllm.kv_cache_memory_bytes set: kv_bytes is that, and budget_bytes what the engine holds with it
    # (weights + activations + non-torch + graphs + KV), not gpu_memory_utilization x CUDA's total
    pinned: bool = False


def kv_cache(facts: ModelFacts, *, engine: str, capacity: int, util: float, tp: int, dp: int,
             pp: int, batched_tokens: int, max_num_seqs: int, seq_tokens: int, max_model_len: int | None,
             in_flight: int, graph_pool: int = 0, pinned: int | None = None,
             c: MemoryConstants = CONSTANTS, mm: vision.MmProfile = vision.NO_SETTINGS) -> KvCache:
    """KV sizing of vLLM (util x CUDA's total - weights - activation peak - non-torch - CUDA graph pool; ref §2.9,
    vLLM 0.24 as measured). SGLang sizes its own: :func:`wizard.core.memory.sglang.sglang_kv_cache`.

    ``pinned`` (engine_kwargs.vllm.kv_cache_memory_bytes): vLLM's Worker.determine_available_memory returns it after
    a profile run without measuring anything, "This does not respect the gpu_memory_utilization config"; the KV
    cache is exactly that, and the weights, the profile run's activations, non-torch memory and the CUDA graph pool
    come on top of it. gpu_memory_utilization still gates the start (init_device / request_memory: free memory
    >= util x CUDA's total, whatever the KV cache)."""
    weights = engine_weights(facts, tp, pp)
    act = vllm_activation(facts, batched_tokens, max_num_seqs, tp, c, max_model_len=max_model_len, mm=mm)
    other = non_torch(tp, c) + graph_pool
    if pinned:
        kv = pinned
        budget = pinned_budget(facts, pinned, tp=tp, pp=pp, batched_tokens=batched_tokens, max_num_seqs=max_num_seqs,
                               graph_pool=graph_pool, c=c, max_model_len=max_model_len, mm=mm)
    else:
        budget = util * (capacity - c.driver_reserved)
        kv = budget - weights - act - other
    per_token = max(1, facts.kv_bytes_per_token(tp) // max(1, pp))
    tokens = max(0, int(kv // per_token)) * dp
    return KvCache(engine=engine, budget_bytes=int(budget), weights_bytes=int(weights), activation_bytes=int(act),
                   other_bytes=int(other), kv_bytes=int(kv), bytes_per_token=int(per_token), tokens=tokens,
                   seq_tokens=seq_tokens, max_model_len=max_model_len,
                   sequences=tokens // max(1, seq_tokens), wanted=min(max_num_seqs * dp, in_flight),
                   pinned=bool(pinned))


def pinned_budget(facts: ModelFacts, kv_bytes: int, *, tp: int, pp: int, batched_tokens: int, max_num_seqs: int,
                  graph_pool: int, c: MemoryConstants = CONSTANTS, max_model_len: int | None = None,
                  mm: vision.MmProfile = vision.NO_SETTINGS) -> float:
    """What an awake vLLM worker holds inside its budget when engine_kwargs.vllm.kv_cache_memory_bytes pins the KV
    cache (see :func:`kv_cache`): weights + the profile run's activation peak + non-torch memory + the CUDA graph
    pool + exactly ``kv_bytes``."""
    return (engine_weights(facts, tp, pp)
            + vllm_activation(facts, batched_tokens, max_num_seqs, tp, c, max_model_len=max_model_len, mm=mm)
            + non_torch(tp, c) + graph_pool + kv_bytes)


def graphs(enforce_eager: bool, capture_sizes: object, c: MemoryConstants = CONSTANTS) -> int:
    if enforce_eager:
        return 0
    return c.cuda_graphs_small if capture_sizes else c.cuda_graphs


# ------------------------------------------------------------------------------------------------
def ceil_div(a: int, b: int) -> int:
    return -(-a // b) if b else 0


def gib(n: float) -> float:
    return round(n / GIB, 2)


def fmt_gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB" if abs(n) >= 0.05 * GIB or n == 0 else f"{n / 2**20:.0f} MiB"


def finite(x: float) -> float:
    return x if math.isfinite(x) else 0.0
