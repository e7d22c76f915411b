"""megatron-core's memory formulas for one GPU of one pipeline stage (megatron-core 0.19.2,
megatron/training/theoretical_memory_usage.py): the parameters a stage holds, its optimizer states with and without
the distributed optimizer, and its saved activations under 1F1B / interleaved schedules and recompute. The sources,
line by line, are in :mod:`wizard.core.memory.megatron`, which puts these into the phases of a verl step;
``bench/bench_megatron_terms.py`` runs megatron-core's own functions beside them. Pure."""

from __future__ import annotations

import math
from dataclasses import dataclass

from wizard.core.memory.megatron_layout import MegatronConfig
from wizard.core.models.facts import ModelFacts


# ------------------------------------------------------------------------------------------------
# Parameters per GPU (theoretical_memory_usage.py:139-264)


def _mlp_ffn(f: ModelFacts, moe: bool) -> int:
    """The FFN width a token passes through in one layer (MoE: its top-k experts and the shared one)."""
    if not moe:
        return f.intermediate_size
    return (f.num_experts_per_tok or 1) * (f.moe_intermediate_size or f.intermediate_size) + _shared_ffn(f)


def _shared_ffn(f: ModelFacts) -> int:
    if f.shared_expert_intermediate_size:
        return f.shared_expert_intermediate_size
    return (f.num_shared_experts or 0) * (f.moe_intermediate_size or f.intermediate_size)


def layer_split(f: ModelFacts, moe: bool) -> tuple[int, int, int]:
    """(TP-sharded, replicated, expert-sharded) parameters of one decoder layer, as megatron holds them: attention
    and the dense or shared-expert MLP split by TP; norms, the router and the shared expert's gate whole on every
    rank; the routed experts split by EP x ETP (theoretical_memory_usage.py:214-230). SwiGLU: 3 h x ffn."""
    h = f.hidden_size
    norms = f.norms_per_layer * h
    if not moe:
        return f.attention_params + 3 * h * f.intermediate_size, norms, 0
    e = f.num_experts or 0
    gate = h if f.shared_expert_intermediate_size else 0
    experts = e * 3 * h * (f.moe_intermediate_size or f.intermediate_size)
    return f.attention_params + 3 * h * _shared_ffn(f), norms + h * e + gate, experts


@dataclass(frozen=True)
class Stage:
    """One pipeline stage's share of the model on one of its GPUs."""

    index: int  # 0-based
    of: int  # PP
    layers: int
    moe_layers: int
    dense: float  # TP-sharded / TP + replicated: their optimizer states shard over DP x CP
    expert: float  # routed experts / (EP x ETP): theirs over the expert-data-parallel ranks
    embedding: bool
    output: bool

    @property
    def params(self) -> float:
        return self.dense + self.expert

    @property
    def name(self) -> str:
        if self.of == 1:
            return "the only pipeline stage"
        what = "first: embedding" if self.embedding else "last: output layer" if self.output else "middle"
        return f"pipeline stage {self.index + 1} of {self.of} ({what})"


def stage(f: ModelFacts, m: MegatronConfig, index: int) -> Stage:
    """Stage ``index``'s parameters on one GPU: ceil(L / PP) layers (the most any stage gets), the leading dense layers
    of an MoE model on the first stages, the embedding on the first and the output layer on the last (an untied one,
    or a tied one's copy when PP > 1: megatron keeps the output weight on the last stage and syncs it)."""
    L, pp = f.num_layers, m.pp
    per = math.ceil(L / pp)
    lo, hi = index * per, min(L, (index + 1) * per)
    layers = max(0, hi - lo)
    n_dense = (f.num_dense_layers if f.num_experts else L)
    dense_here = max(0, min(hi, n_dense) - lo)
    moe_here = layers - dense_here
    d_tp, d_rep, _ = layer_split(f, False)
    m_tp, m_rep, m_exp = layer_split(f, True) if f.num_experts else (0, 0, 0)
    tp_part = dense_here * d_tp + moe_here * m_tp
    rep = dense_here * d_rep + moe_here * m_rep
    first, last = index == 0, index == pp - 1
    vh = f.vocab_size * f.hidden_size
    if first:
        tp_part += vh
    if last:
        rep += f.hidden_size  # final norm
        if not f.tie_word_embeddings or pp > 1:
            tp_part += vh
    expert = moe_here * m_exp / (m.ep * m.etp)
    return Stage(index=index, of=pp, layers=layers, moe_layers=moe_here, dense=tp_part / m.tp + rep, expert=expert,
                 embedding=first, output=last)


@dataclass(frozen=True)
class States:
    """Bytes of one GPU's model and optimizer states (theoretical_memory_usage.py:293-303)."""

    params: float  # bf16 (or fp16) params
    grads: float  # the gradient buffer (fp32)
    main: float  # fp32 main params (sharded with the distributed optimizer)
    adam: float  # Adam's m and v (fp32, sharded likewise)

    @property
    def total(self) -> float:
        return self.params + self.grads + self.main + self.adam


def states(s: Stage, m: MegatronConfig) -> States:
    n = s.params
    sharded = s.dense / m.dp_cp + s.expert / m.expert_dp if m.dist_opt else n
    return States(params=m.param_bytes * n, grads=(4 if m.grads_fp32 else m.param_bytes) * n, main=4 * sharded,
                  adam=8 * sharded)


# ------------------------------------------------------------------------------------------------
# Activations (theoretical_memory_usage.py:308-379)


def layer_activation(f: ModelFacts, tokens: float, m: MegatronConfig, moe: bool) -> float:
    """Bytes one layer saves for its backward over ``tokens`` tokens of this CP rank: ``T (18 h + 4 ffn) / TP`` with
    sequence parallelism (theoretical_memory_usage.py:317-319, /TP at :379), ``T h (10 + (8 + 4 ffn / h) / TP)``
    without (:386, there written 10 + 24 / TP for ffn = 4h). An MoE layer's ffn is what a token passes through (its
    top-k experts and a shared one), and each routed copy of a token keeps its permuted hidden state (2 h bytes per
    expert it goes to; the all-to-all dispatcher works on the sequence-parallel shard) [E: megatron-core's formula
    has no MoE term]."""
    h, ffn = f.hidden_size, _mlp_ffn(f, moe)
    routed = 2 * h * (f.num_experts_per_tok or 1) if moe and f.num_experts else 0
    if m.sp and m.tp > 1:
        return tokens * (18 * h + 4 * ffn + routed) / m.tp
    return tokens * (10 * h + (8 * h + 4 * ffn + routed) / m.tp)


def layer_input(f: ModelFacts, tokens: float, m: MegatronConfig) -> float:
    """A layer's bf16 input, what full recompute keeps per checkpointed chunk (2 T h, split by TP with SP)."""
    return 2 * tokens * f.hidden_size / (m.tp if m.sp and m.tp > 1 else 1)


def in_flight(m: MegatronConfig, s: Stage, micro_batches: int) -> float:
    """Micro-batches whose activations a stage holds at once under 1F1B: PP - index (the first stage PP, the last 1),
    never more than the micro-batches there are; with VPP the first stage's PP x (1 + (PP - 1) / (PP x VPP))
    (theoretical_memory_usage.py:342-361)."""
    if m.vpp and m.pp > 1:
        return m.pp * (1 + (m.pp - 1) / (m.pp * m.vpp)) if s.index == 0 else 1.0
    return float(max(1, min(micro_batches, m.pp - s.index)))


def activations(f: ModelFacts, tokens: float, m: MegatronConfig, s: Stage, micro_batches: int) -> tuple[float, str]:
    """A stage's saved activations at its peak in the update, and how they were counted."""
    k = in_flight(m, s, micro_batches)
    dense_layers = s.layers - s.moe_layers
    one = (dense_layers * layer_activation(f, tokens, m, False) + s.moe_layers * layer_activation(f, tokens, m, True))
    worst = max(layer_activation(f, tokens, m, bool(s.moe_layers)), layer_activation(f, tokens, m, False))
    how = f"{k:g} micro-batch{'es' if k != 1 else ''} in flight x {s.layers} layers"
    if m.recompute == "full":
        n = min(m.recompute_layers, max(1, s.layers))
        if m.recompute_method == "block":
            kept = n * layer_input(f, tokens, m) + (s.layers - n) * one / max(1, s.layers)
            acts, how = k * kept + worst, how + f", full recompute of {n} layers (block): their inputs kept"
        else:
            chunks = math.ceil(s.layers / n)
            acts = k * chunks * layer_input(f, tokens, m) + n * worst
            how += f", full recompute (uniform, {n} layer{'s' if n > 1 else ''} a chunk): {chunks} chunk inputs kept"
            how += f" + {n} recomputed"
    else:
        acts = k * one
        how += (", selective recompute" if m.recompute == "selective" else ", no recompute (flash attention: what "
                "selective recompute keeps)") + (", sequence parallel" if m.sp and m.tp > 1 else "")
    if s.embedding:  # input ids and the embedding's dropout mask (theoretical_memory_usage.py:329-339)
        acts += k * tokens * (8 + f.hidden_size) / m.tp
    return acts, how
