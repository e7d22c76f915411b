"""Host bytes of the pinned copies verl, FSDP and vLLM keep on the CPU: torch's CachingHostAllocator gives each
pinned tensor the next power of two (ATen/core/CachingHostAllocator.h: ``PowerOf2Ceil(size)``), so a copy's size
depends on the model's weight shapes, not only its parameter count. :mod:`wizard.core.memory.host` sums them per
node. Pure arithmetic on :class:`ModelFacts`.
"""

from __future__ import annotations

import functools
import math

from wizard.core.memory.terms import critic_params, engine_weights, lora_params
from wizard.core.models.facts import ModelFacts


def engine_weight_tensors(facts: ModelFacts, tp: int, pp: int = 1) -> list[float]:
    """Bytes of each large bf16 weight one vLLM rank allocates, as vLLM fuses them (qkv_proj, o_proj, gate_up_proj,
    down_proj; a MoE layer's w13 and w2 of all its experts and its router; the vocabulary-parallel embedding and
    lm_head), layers split by PP and the rest by TP; MLA attention counts as one tensor a layer. What these do not
    cover (norms, biases, a vision tower) is left to :func:`sleep_backup` at its own size."""
    tp, h = max(1, tp), facts.hidden_size
    layers = math.ceil(facts.num_layers / max(1, pp))
    if facts.kv_lora_rank:
        attn = [2 * facts.attention_params / tp]
    else:
        q, d = facts.num_attention_heads * facts.head_dim / tp, facts.head_dim
        kv = max(1.0, facts.num_kv_heads / tp) * d  # vLLM replicates KV heads when TP exceeds them
        attn = [2 * h * (q + 2 * kv), 2 * q * h]

    def mlp(inter: float) -> list[float]:
        return [2 * 2 * inter / tp * h, 2 * h * inter / tp]

    out: list[float] = []
    dense = facts.num_dense_layers if facts.num_experts else facts.num_layers
    for i in range(layers):
        out += attn
        if not facts.num_experts or i < dense * layers / facts.num_layers:
            out += mlp(facts.intermediate_size)
            continue
        e, inter = facts.num_experts, facts.moe_intermediate_size or facts.intermediate_size
        out += [2 * e * 2 * inter / tp * h, 2 * e * h * inter / tp, 2 * e * h]  # FusedMoE w13, w2; the router
        shared = facts.shared_expert_intermediate_size or (facts.num_shared_experts or 0) * inter
        out += mlp(shared) if shared else []
    vocab = 2 * facts.vocab_size * h / tp
    return out + [vocab] * (1 if facts.tie_word_embeddings else 2)


def pow2(n: float) -> float:
    """What torch's CachingHostAllocator takes for an ``n``-byte pinned tensor: the next power of two
    (ATen/core/CachingHostAllocator.h: ``PowerOf2Ceil(size)``, then cudaHostAlloc of that)."""
    return float(2 ** math.ceil(math.log2(n))) if n > 1 else max(0.0, n)


def hf_weight_shapes(facts: ModelFacts, head: bool = True) -> list[tuple[int, int]]:
    """(rows, columns) of each large weight as transformers holds it (q, k, v, o, gate, up, down a layer; each
    expert's three and the router in a MoE layer; MLA attention as one; the embedding and, unless tied or
    ``head=False`` (a critic's value head), lm_head)."""
    h, d = facts.hidden_size, facts.head_dim
    q, kv = facts.num_attention_heads * d, facts.num_kv_heads * d
    attn = [(facts.attention_params // h, h)] if facts.kv_lora_rank else [(q, h), (kv, h), (kv, h), (h, q)]

    def mlp(inter: int) -> list[tuple[int, int]]:
        return [(inter, h), (inter, h), (h, inter)]

    out: list[tuple[int, int]] = []
    dense = facts.num_dense_layers if facts.num_experts else facts.num_layers
    for i in range(facts.num_layers):
        out += attn
        if not facts.num_experts or i < dense:
            out += mlp(facts.intermediate_size)
            continue
        inter = facts.moe_intermediate_size or facts.intermediate_size
        out += mlp(inter) * facts.num_experts + [(facts.num_experts, h)]
        shared = facts.shared_expert_intermediate_size or (facts.num_shared_experts or 0) * inter
        out += mlp(shared) if shared else []
    return out + [(facts.vocab_size, h)] * (1 if facts.tie_word_embeddings or not head else 2)


def lora_shapes(facts: ModelFacts, rank: int) -> list[tuple[int, int]]:
    """(rows, columns) of each adapter matrix of ``target_modules: all-linear`` (A: r x in, B: out x r)."""
    h, d = facts.hidden_size, facts.head_dim
    q, kv = facts.num_attention_heads * d, facts.num_kv_heads * d
    inter = facts.moe_intermediate_size or facts.intermediate_size
    per_layer = [(rank, h), (q, rank), (rank, h), (kv, rank), (rank, h), (kv, rank), (rank, q), (h, rank),
                 (rank, h), (inter, rank), (rank, h), (inter, rank), (rank, inter), (h, rank)]
    return per_layer * facts.num_layers


@functools.lru_cache(maxsize=256)  # pure, and asked again for every plan the advisor estimates (a MoE has 18k weights)
def pinned_shard(facts: ModelFacts, shards: int, dtype_bytes: int, *, fsdp1: bool = False, lora_rank: int = 0,
                 head: bool = True) -> float:
    """Host bytes of one rank's pinned copy of its shard of the model's weights (``lora_rank``: of its adapters):
    verl's offloads copy with ``non_blocking=True``, which pins the CPU tensor (verl/utils/fsdp_utils.py:196-209),
    and FSDP2's CPUOffloadPolicy pins each shard (torch _fsdp_param.py: ``.cpu().pin_memory()``); each pinned
    tensor takes a power of two (:func:`pow2`). FSDP2 shards each weight on its first dimension; FSDP1 keeps one
    flat parameter a decoder layer (and one for the rest). What the shapes leave (norms, biases) counts as is."""
    n = max(1, shards)
    shapes = lora_shapes(facts, lora_rank) if lora_rank else hf_weight_shapes(facts, head)
    total = lora_params(facts, lora_rank) if lora_rank else (facts.param_count if head else critic_params(facts))
    rest = max(0.0, total - sum(r * c for r, c in shapes)) * dtype_bytes / n
    if fsdp1:
        vocab = 0 if lora_rank else (1 if facts.tie_word_embeddings or not head else 2)
        layers = sum(r * c for r, c in shapes[:len(shapes) - vocab])
        per_layer = pow2(layers / max(1, facts.num_layers) * dtype_bytes / n)
        return facts.num_layers * per_layer + pow2(max(0.0, total - layers) * dtype_bytes / n)
    return sum(pow2(math.ceil(r / n) * c * dtype_bytes) for r, c in shapes) + rest


def pinned_bytes(n: float) -> float:
    """Host bytes torch's pinned-memory allocator takes for an ``n``-byte copy of one engine allocation: the CUDA
    caching allocator under vLLM's cuMem pool holds a weight of >= 10 MiB in a segment of its own rounded up to
    2 MiB (smaller ones share 2 MiB or 20 MiB segments), and torch's CachingHostAllocator rounds each pinned
    allocation up to a power of two (ATen/core/CachingHostAllocator.h: ``PowerOf2Ceil(size)``)."""
    mib = 2**20
    if n < mib:
        return n
    if n < 10 * mib:
        return n * 1.6  # a 20 MiB segment shared by such weights, pinned as 32 MiB
    return pow2(math.ceil(n / (2 * mib)) * 2 * mib)


def sleep_backup(facts: ModelFacts, tp: int, pp: int = 1) -> float:
    """Host bytes of vLLM's level-1 sleep on one rank: ``CuMemAllocator.sleep`` copies each weight allocation to a
    pinned CPU tensor (vllm/device_allocator/cumem.py) and the allocator keeps the rounded blocks (pinned_bytes).
    verl sleeps at level 1 when LoRA is served as an adapter. verl H200 (advised-grpo-14b-1gpu, Qwen2.5-14B, TP 1):
    vLLM "backed up 27.85 GiB" and Ray's OOM report gave the worker 52.25 GiB; this gives 49.0 + the process's 2."""
    tensors = engine_weight_tensors(facts, tp, pp)
    rest = max(0.0, engine_weights(facts, tp, pp) - sum(tensors))
    return sum(pinned_bytes(t) for t in tensors) + rest


def megatron_state_ratio(facts: ModelFacts, tp: int, ep: int, etp: int, dense_shards: int, expert_shards: int) -> float:
    """What verl's Megatron optimizer_offload takes on the host for the fp32 main params and Adam states, over their
    bytes: it moves each state tensor with ``.to("cpu", non_blocking=True)`` (verl/utils/megatron_utils.py:931-962),
    a pinned tensor of its own, so each is rounded up to a power of two (:func:`pow2`). The tensors are megatron-core's
    weights on one GPU (fused QKV and gate-up, split over TP; each local expert's over ETP), the distributed
    optimizer's shard of each (/ ``dense_shards`` or ``expert_shards`` ranks). Measured: a 1.5B's states took 22.6
    GiB of host RAM where their bytes are 17.25 (meg-grpo-1.5b-tp1-u0.5-paramoffload-h100); this ratio gives 1.24."""
    h, d = facts.hidden_size, facts.head_dim
    q, kv = facts.num_attention_heads * d, facts.num_kv_heads * d
    attn = [facts.attention_params / tp] if facts.kv_lora_rank else [(q + 2 * kv) * h / tp, q * h / tp]
    dense: list[float] = [facts.vocab_size * h / tp] * (1 if facts.tie_word_embeddings else 2)
    expert: list[float] = []
    first_dense = facts.num_dense_layers if facts.num_experts else facts.num_layers
    for i in range(facts.num_layers):
        dense += attn
        if not facts.num_experts or i < first_dense:
            dense += [2 * facts.intermediate_size * h / tp, facts.intermediate_size * h / tp]
            continue
        inter = facts.moe_intermediate_size or facts.intermediate_size
        expert += [2 * inter * h / etp, inter * h / etp] * max(1, facts.num_experts // ep)
        dense.append(facts.num_experts * h)  # the router, whole on every rank
        shared = facts.shared_expert_intermediate_size or (facts.num_shared_experts or 0) * inter
        dense += [2 * shared * h / tp, shared * h / tp] if shared else []
    sizes = [4 * n / dense_shards for n in dense] + [4 * n / expert_shards for n in expert]
    total = sum(sizes)
    return sum(pow2(b) for b in sizes) / total if total else 1.0
