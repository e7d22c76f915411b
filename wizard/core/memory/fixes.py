"""The cheapest changes that bring a GPU's memory peak down, ranked, each with the peak it leaves.

Cost order (what a run gives up): micro batch, dynamic batching with a token budget, offload, gradient
checkpointing, gpu_memory_utilization, rollout TP, more GPUs. Every candidate is checked by estimating the
memory again with its values, so a fix is offered only when it lowers the peak of that GPU, and it is marked
as enough when the GPU then fits with the tight margin to spare. Pure, like :mod:`wizard.core.memory.estimate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wizard.core.hardware.cluster import Cluster
from wizard.core.memory.estimate import GpuEstimate, MemoryReport, estimate_memory
from wizard.core.memory.config import read_config
from wizard.core.memory import terms as mt
from wizard.core.memory.phases import PhaseName as P
from wizard.core.memory.terms import GIB, MemoryConstants
from wizard.core.models.facts import ModelFacts
from wizard.core.verl.keys import CF, REF, A, AF, M, R

TRAINING_PHASES = (P.ACTOR_UPDATE, P.OLD_LOG_PROB, P.REF_LOG_PROB, P.CRITIC_UPDATE)


@dataclass(frozen=True)
class Fix:
    text: str
    overrides: tuple[str, ...]
    peak: int  # the GPU's peak after the change
    enough: bool  # fits with the tight margin to spare


def _value(v) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    return str(v)


def _group_peak(report: MemoryReport | None, pool: str, capacity: int | None) -> int | None:
    if report is None:
        return None
    same = [g for g in report.groups if g.pool == pool and g.capacity_bytes == capacity]
    return max((g.peak.total for g in same), default=None)


def _candidates(values: Mapping, phase: str, models: Mapping[str, ModelFacts]) -> list[tuple[str, list[dict]]]:
    """(what it is, [value changes to try, best first]) in cost order for the phase that peaks."""
    cfg = read_config(values)
    seq = cfg.seq_tokens
    out: list[tuple[str, list[dict]]] = []
    micro_key, dyn_key, budget_key = {
        P.ACTOR_UPDATE: (f"{A}.ppo_micro_batch_size_per_gpu", f"{A}.use_dynamic_bsz", f"{A}.ppo_max_token_len_per_gpu"),
        P.OLD_LOG_PROB: (f"{R}.log_prob_micro_batch_size_per_gpu", f"{R}.log_prob_use_dynamic_bsz",
                         f"{R}.log_prob_max_token_len_per_gpu"),
        P.REF_LOG_PROB: (f"{REF}.log_prob_micro_batch_size_per_gpu", f"{REF}.log_prob_use_dynamic_bsz",
                         f"{REF}.log_prob_max_token_len_per_gpu"),
    }.get(phase, (None, None, None))
    if micro_key:
        dynamic = bool(values.get(dyn_key))
        micro = values.get(micro_key)
        if not dynamic and isinstance(micro, int) and micro > 1:
            out.append(("micro batch", [{micro_key: m} for m in _halvings(micro)]))
        budget = values.get(budget_key) if dynamic else None
        tries = [b for b in (8 * seq, 4 * seq, 3 * seq, 2 * seq, seq) if not isinstance(budget, int) or b < budget]
        if tries:
            out.append(("dynamic batch", [{budget_key: b} if dynamic else {dyn_key: True, budget_key: b} for b in tries]))
    offload = []
    if phase in (P.GENERATION, P.LOAD, P.OLD_LOG_PROB, P.REF_LOG_PROB, P.CRITIC_UPDATE, P.WEIGHT_SYNC, P.REWARD):
        if not values.get(f"{AF}.optimizer_offload"):
            offload.append({f"{AF}.optimizer_offload": True})
        if not values.get(f"{AF}.param_offload") and phase != P.WEIGHT_SYNC:
            offload.append({f"{AF}.param_offload": True, f"{AF}.optimizer_offload": True})
    if phase == P.ACTOR_UPDATE and not (values.get(f"{A}.strategy") == "fsdp2" and values.get(f"{AF}.offload_policy")):
        offload.append({f"{A}.strategy": "fsdp2", f"{AF}.offload_policy": True})
    if phase == P.CRITIC_UPDATE:
        offload.append({f"{CF}.param_offload": True, f"{CF}.optimizer_offload": True})
    if offload:
        out.append(("offload", offload))
    if cfg.strategy == "fsdp" and phase in (P.LOAD, P.WEIGHT_SYNC, P.GENERATION, P.OLD_LOG_PROB, P.REF_LOG_PROB,
                                            P.ACTOR_UPDATE, P.REWARD):
        # FSDP1 on one GPU keeps the reference on the GPU through the first step and its update caches more
        out.append(("FSDP2", [{f"{A}.strategy": "fsdp2", f"{REF}.strategy": "fsdp2"}]))
    if phase == P.ACTOR_UPDATE and not cfg.actor_gc:
        out.append(("gradient checkpointing", [{f"{M}.enable_gradient_checkpointing": True}]))
    if phase == P.CRITIC_UPDATE and not cfg.critic_gc:
        out.append(("gradient checkpointing", [{"critic.model.enable_gradient_checkpointing": True}]))
    if phase == P.ACTOR_UPDATE and cfg.update_entropy and cfg.entropy_mode == "eager":
        out.append(("entropy", [{f"{AF}.use_torch_compile": True}, {f"{AF}.entropy_checkpointing": True}]))
    if phase in (P.GENERATION, P.LOAD, P.REWARD):
        util = cfg.engines["rollout"].util
        out.append(("gpu_memory_utilization", [{f"{R}.gpu_memory_utilization": round(u / 100, 2)}
                                               for u in range(int(util * 100) - 5, 19, -5)]))
    actor = models.get("actor")
    if phase == P.WEIGHT_SYNC and actor is not None and not cfg.lora_rank:
        # verl sends the weights through a buffer of this size, allocated whole (a smaller one means more rounds);
        # never below the largest weight at the trainer's dtype, which would take verl's direct path instead
        largest = mt.largest_weight(actor, cfg.actor_dtype_bytes)
        out.append(("weight-sync buffer", [{f"{R}.checkpoint_engine.update_weights_bucket_megabytes": b}
                                           for b in (1024, 512) if largest <= b << 20 < cfg.sync_bucket_bytes]))
    if phase in TRAINING_PHASES or phase in (P.GENERATION, P.WEIGHT_SYNC):
        out.append(("more GPUs", [{"trainer.nnodes": cfg.world // max(1, values.get("trainer.n_gpus_per_node")) * 2}]))
    return out


def _halvings(n: int) -> list[int]:
    out, m = [], n // 2
    while m >= 1:
        out.append(m)
        m //= 2
    return out


def ranked_fixes(values: Mapping, models: Mapping[str, ModelFacts], cluster: Cluster | None, group: GpuEstimate,
                 constants: MemoryConstants, limit: int = 4) -> list[Fix]:
    """Fixes for ``group``'s peak phase, cheapest first; those that are enough before those that only help."""
    capacity = group.capacity_bytes
    if capacity is None:
        return []
    margin = max(int(constants.tight_fraction * capacity), constants.tight_min)
    phase, before = group.peak.name, group.peak.total
    enough, helps = [], []
    for what, tries in _candidates(values, phase, models):
        best = None
        for change in tries:
            report, _ = estimate_memory({**values, **change}, models, _grown(cluster, change, values), constants)
            peak = _group_peak(report, group.pool, capacity)
            if peak is None or peak >= before - 0.01 * GIB:
                continue
            fix = Fix(text=_describe(what, change, peak, capacity), overrides=tuple(f"{k}={_value(v)}" for k, v in change.items()),
                      peak=peak, enough=peak <= capacity - margin)
            if fix.enough:
                best = fix  # the gentlest change that is enough: tries go from gentle to strong
                break
            best = best if best is not None and best.peak <= fix.peak else fix
        if best is not None:
            (enough if best.enough else helps).append(best)
    return (enough + helps)[:limit]


def _grown(cluster: Cluster | None, change: Mapping, values: Mapping) -> Cluster | None:
    """For "more GPUs", the same nodes again (a bigger cluster of the same kind)."""
    if cluster is None or "trainer.nnodes" not in change:
        return cluster
    want = change["trainer.nnodes"]
    nodes = list(cluster.nodes)
    i = 0
    while len(nodes) < want and cluster.nodes:
        src = cluster.nodes[i % len(cluster.nodes)]
        nodes.append(src.model_copy(update={"name": f"{src.name}+{len(nodes)}"}))
        i += 1
    return cluster.model_copy(update={"nodes": nodes})


def _describe(what: str, change: Mapping, peak: int, capacity: int) -> str:
    sets = " ".join(f"{k}={_value(v)}" for k, v in change.items())
    after = f"peak {peak / GIB:.1f} of {capacity / GIB:.1f} GiB"
    if what == "more GPUs":
        return f"more GPUs: {sets} (FSDP shards the states over twice as many GPUs; {after})"
    return f"{what}: {sets} ({after})"
