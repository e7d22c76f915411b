"""GPU and host memory of a verl 0.9.1 run, per GPU and per phase, with a breakdown a person can read.

The phase model is ../shared/reference/gpu-memory.md §1: on a training GPU the FSDP trainer process (actor,
fused reference, critic) and the rollout engine share the memory, and the peak is the worst phase, not the
sum. What the trainer holds in each phase is :mod:`wizard.core.memory.trainer`; every term's size is in
:mod:`wizard.core.memory.terms` with its constant and source; where each role runs is
:mod:`wizard.core.placement.pools`. Pure: the resolved values of :data:`MEMORY_KEYS` (from a RuleContext or a plain
mapping), the :class:`ModelFacts` per role and the :class:`Cluster` (per-GPU memory) in, a
:class:`MemoryReport` out, or ``None`` with the reason when the actor's model or the engine is unknown.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from wizard.core.memory import terms as mt
from wizard.core.hardware.cluster import Cluster
from wizard.core.memory.config import MEMORY_KEYS, NOT_NUMBERS, MemoryConfig, read_config
from wizard.core.memory.engines import refused_engine_values
from wizard.core.memory.host import host_estimates
from wizard.core.memory.megatron import LORA_NOT_MODELLED, MegatronTrainer, megatron_phases, worst_stage
from wizard.core.memory.phases import PhaseName as P, phase_of
from wizard.core.memory.scope import unmodelled
from wizard.core.memory.vision import has_tower
from wizard.core.memory.sglang import SglangMemory, sglang_kv_cache, sglang_memory
from wizard.core.memory.terms import CONSTANTS, GIB, HostEstimate, KvCache, MemoryConstants, Term
from wizard.core.memory.trainer import Trainer, slack, sync_buffers, sync_copies, term
from wizard.core.models.facts import ModelFacts
from wizard.core.verl.keys import ACTOR
from wizard.core.placement.models import GpuRef, Placement
from wizard.core.placement.pools import plan_placement

__all__ = ["MEMORY_KEYS", "GpuEstimate", "HostEstimate", "MemoryReport", "Phase", "Term", "estimate_memory"]



class Phase(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    terms: list[Term]

    @property
    def total(self) -> int:
        return sum(t.bytes for t in self.terms)

    @property
    def title(self) -> str:
        phase = phase_of(self.name)
        return phase.title if phase is not None else self.name


class GpuEstimate(BaseModel):
    """One estimate shared by every GPU of a pool with the same memory (``gpus`` lists them)."""

    model_config = ConfigDict(frozen=True)

    pool: str
    roles: list[str]
    gpus: list[GpuRef]
    capacity_bytes: int | None
    phases: list[Phase]

    @property
    def peak(self) -> Phase:
        return max(self.phases, key=lambda p: p.total)

    @property
    def margin_bytes(self) -> int | None:
        return None if self.capacity_bytes is None else self.capacity_bytes - self.peak.total


class MemoryReport(BaseModel):
    model_config = ConfigDict(frozen=True)

    groups: list[GpuEstimate]
    kv: dict[str, KvCache] = Field(default_factory=dict)  # by engine role: rollout, reward, teacher
    host: list[HostEstimate] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    placement: Placement
    constants: MemoryConstants = CONSTANTS
    # Why these numbers carry no verdict: a model the estimate does not model (vision-language).
    unmodelled: str | None = None

    def tight_margin(self, capacity: int) -> int:
        return max(int(self.constants.tight_fraction * capacity), self.constants.tight_min)

    @property
    def fits(self) -> bool | None:
        """False when a GPU's peak is over its memory; None when no GPU memory is known."""
        known = [g for g in self.groups if g.capacity_bytes is not None]
        if not known:
            return None
        return all(g.peak.total <= g.capacity_bytes for g in known)


# ------------------------------------------------------------------------------------------------
# Per-GPU phases of a training GPU (global_pool)


def _engine_terms(role: str, e: dict, awake: bool, c: MemoryConstants) -> list[Term]:
    """A rollout / reward / teacher engine on this GPU: its whole budget awake, its residual asleep."""
    if awake or not e["free_cache_engine"]:
        if e.get("sglang") is not None:
            return _sglang_terms(role, e["sglang"], e["util"])
        if e["name"] == "sglang":  # no model facts: its static memory only
            return [term(f"engine_{role}", f"{role} engine: sglang weights + KV pool ({e['util']:g} x free at start)",
                         e["budget"])]
        if e.get("pinned"):
            return [term(f"engine_{role}", f"{role} engine: vllm weights, activations, CUDA graphs and the KV cache "
                                         f"pinned at {mt.fmt_gib(e['pinned'])} (engine_kwargs.vllm.kv_cache_memory_bytes; "
                                         f"gpu_memory_utilization={e['util']:g} only gates its start)", e["budget"]),
                    term(f"engine_{role}_context", f"{role} engine: worker process beyond its budget",
                         c.vllm_outside_budget)]
        return [term(f"engine_{role}", f"{role} engine: {e['name']} budget ({e['util']:g} x CUDA's total memory; "
                                     "weights, KV cache and CUDA graphs inside)", e["budget"]),
                term(f"engine_{role}_context", f"{role} engine: worker process beyond its budget", c.vllm_outside_budget)]
    if e.get("sglang") is not None:  # verl releases the weights and kv_cache regions (async_sglang_server.py:504-525)
        kept = "base weights (LoRA adapter), " if e["sglang"].keeps_weights else ""
        return [term(f"engine_{role}_asleep", f"{role} engine asleep (weights and KV pool released): {kept}context, "
                                              "attention buffers and CUDA graphs stay", e["asleep"])]
    return [term(f"engine_{role}_asleep", f"{role} engine asleep: context, NCCL and CUDA graphs stay", e["asleep"])]


def _attention_buffers(s: SglangMemory) -> str:
    if s.attention_backend == "triton":
        return f"triton attention's decode buffers {mt.fmt_gib(s.workspace_bytes)}"
    if s.attention_backend == "flashinfer":
        return "flashinfer workspace"
    return f"{s.attention_backend} attention sized as flashinfer's workspace (not read from its code)"


def _sglang_terms(role: str, s: SglangMemory, util: float) -> list[Term]:
    """An awake SGLang rank, term by term (:func:`wizard.core.memory.sglang.sglang_memory` gives each source)."""
    graphs = (f"decode batch sizes up to {max(s.graph_batch_sizes)}" if s.graph_batch_sizes else "decode graphs off")
    return [
        term(f"engine_{role}", f"{role} engine: sglang weights {mt.fmt_gib(s.weights_bytes)} + KV pool "
                               f"{s.kv_tokens:,} tokens{' (max_total_tokens)' if s.capped else ''} = "
                               f"{'' if s.capped else f'{util:g} x '}{mt.fmt_gib(s.free_at_start)} free at start",
             s.static_bytes),
        *([term(f"graphs_{role}", f"{role} engine: CUDA graphs ({graphs}; piecewise prefill graphs "
                                  f"{mt.fmt_gib(s.piecewise_bytes)})", s.graph_bytes + s.piecewise_bytes)]
          if s.graph_bytes + s.piecewise_bytes else []),
        term(f"engine_{role}_runtime", f"{role} engine: activations of a {s.chunked_prefill_size:,}-token prefill, "
                                       f"request table ({s.max_running_requests} requests), "
                                       f"{_attention_buffers(s)}",
             s.activation_bytes + s.req_to_token_bytes + s.workspace_bytes),
        term(f"engine_{role}_context", f"{role} engine: scheduler process's CUDA context and NCCL", s.context_bytes)]


def _engine(cfg: MemoryConfig, which: str, capacity: int, free_at_start: int, c: MemoryConstants,
            facts: ModelFacts | None = None) -> dict:
    """An engine's memory on one GPU; ``facts``: its model, which a KV cache pinned by kv_cache_memory_bytes needs
    (without it the engine is sized from gpu_memory_utilization)."""
    eng = cfg.engines[which]
    budget = eng.util * (free_at_start if eng.name == "sglang" else capacity - c.driver_reserved)
    graphs = mt.graphs(eng.enforce_eager, eng.capture_sizes, c)
    nccl = mt.non_torch(eng.tp, c) - mt.non_torch(1, c)
    pinned = eng.kv_cache_bytes if eng.name == "vllm" and facts is not None else None
    if pinned:
        budget = mt.pinned_budget(facts, pinned, tp=eng.tp, pp=eng.pp, batched_tokens=eng.max_num_batched_tokens,
                                  max_num_seqs=eng.max_num_seqs, graph_pool=graphs, c=c,
                                  max_model_len=eng.max_model_len or facts.max_position_embeddings, mm=eng.mm)
    if eng.name == "sglang" and facts is not None:
        sg = _sglang(eng, facts, capacity, free_at_start, c)
        return {"name": eng.name, "util": eng.util, "budget": sg.static_bytes, "free_cache_engine": eng.free_cache_engine,
                "graphs": sg.graph_bytes + sg.piecewise_bytes, "asleep": sg.asleep_bytes, "pinned": None, "sglang": sg}
    return {"name": eng.name, "util": eng.util, "budget": budget, "free_cache_engine": eng.free_cache_engine,
            "graphs": graphs, "asleep": c.vllm_asleep + graphs + nccl, "pinned": pinned}


def _sglang(eng, facts: ModelFacts, capacity: int, free: int, c: MemoryConstants) -> SglangMemory:
    """One SGLang rank started with ``free`` bytes free on its GPU (the trainer's load state already there)."""
    return sglang_memory(facts, capacity=capacity, free=free, util=eng.util, tp=eng.tp, dp=eng.dp, pp=eng.pp,
                            max_num_seqs=eng.max_num_seqs, disable_cuda_graph=eng.enforce_eager, args=eng.sglang, c=c)


def _training_phases(cfg: MemoryConfig, tr: Trainer, roles: list[str], capacity: int,
                     c: MemoryConstants, models: Mapping[str, ModelFacts]) -> tuple[list[Phase], int]:
    f = tr.f
    init = tr.at_load()
    # what SGLang finds free when it starts: the trainer's load state without the allocator's cache, which verl's
    # init_model empties first "so colocated vLLM processes can see it via cudaMemGetInfo"
    # (workers/engine_workers.py:690-691); SGLang logged 71.35 / 65.81 GiB free at 1.5B / 3B on an H100, this gives
    # 71.55 / 65.80 (the trainer's process held its params + 1.2-1.4 GiB then, by NVML)
    free = capacity - c.driver_reserved - sum(t.bytes for t in init if t.key != "allocator")
    engines = {r: _engine(cfg, r, capacity, free, c, models.get(r)) for r in ("rollout", "reward") if r in roles}
    asleep = [t for r, e in engines.items() for t in _engine_terms(r, e, False, c)]
    phases = []
    if "rollout" in engines:
        phases.append(Phase(name=P.LOAD, terms=init + _engine_terms("rollout", engines["rollout"], True, c)))
        eng = cfg.engines["rollout"]
        # FSDP2 with param_offload streams the sync from the CPU copy: torch's counter stays at 0 through verl's
        # load_fsdp_model_to_gpu (verl H200, Qwen2.5-0.5B); FSDP1 and LoRA load the params back for it
        # (get_per_tensor_param: _skip_staging = fsdp_version == 2 and not _is_peft)
        loaded = not (cfg.strategy == "fsdp2" and cfg.actor_param_offload and not cfg.lora_rank)
        # SGLang serving LoRA as an adapter never released its base weights (engine_workers.py:776-783)
        woken = 0 if eng.sglang is not None and eng.sglang.lora_adapter else mt.engine_weights(f, eng.tp, eng.pp)
        sync = tr.resident(params_loaded=loaded) + [
            term("engine_rollout_weights", f"rollout engine weights woken (bf16 / TP {eng.tp})", woken),
            *sync_buffers(cfg, tr),
            term("engine_rollout_asleep", "rollout engine context and CUDA graphs", engines["rollout"]["asleep"])]
        phases.append(Phase(name=P.WEIGHT_SYNC, terms=tr.first_step(slack(sync + sync_copies(cfg, tr), f, c))))
        phases.append(Phase(name=P.GENERATION, terms=tr.first_step(
            tr.resident() + _engine_terms("rollout", engines["rollout"], True, c)
            + [t for r, e in engines.items() if r != "rollout" for t in _engine_terms(r, e, False, c)])))
    forward_slack = c.allocator_slack_forward_fsdp2 if cfg.strategy == "fsdp2" else None
    phases.append(Phase(name=P.OLD_LOG_PROB, terms=tr.first_step(slack(
        tr.forward(cfg.logprob_tokens, cfg.entropy_mode, cfg.actor_param_offload, images=cfg.logprob_images), f, c,
        forward_slack) + asleep)))
    if cfg.ref_separate:
        phases.append(Phase(name=P.REF_LOG_PROB, terms=tr.first_step(slack(
            tr.forward(cfg.ref_tokens, "none", False, put_away=True, ref=True, images=cfg.ref_images), f, c,
            forward_slack) + asleep)))
    phases.append(Phase(name=P.ACTOR_UPDATE, terms=slack(tr.update(), f, c) + asleep))
    if tr.critic is not None:
        phases.append(Phase(name=P.CRITIC_UPDATE, terms=slack(tr.critic_update(), tr.critic, c) + asleep))
    if "reward" in engines:
        others = [t for r, e in engines.items() if r != "reward" for t in _engine_terms(r, e, False, c)]
        phases.append(Phase(name=P.REWARD, terms=tr.first_step(
            tr.resident() + _engine_terms("reward", engines["reward"], True, c) + others)))
    return phases, free


def _engine_only_phases(cfg: MemoryConfig, role: str, capacity: int, c: MemoryConstants,
                        facts: ModelFacts | None = None) -> tuple[list[Phase], int]:
    """A GPU that only serves an engine (standalone rollout, reward pool, teacher pool): awake throughout."""
    free = capacity - c.driver_reserved
    e = _engine(cfg, role, capacity, free, c, facts)
    return [Phase(name=P.GENERATION if role == "rollout" else ("reward" if role == "reward" else "load"),
                  terms=_engine_terms(role, e, True, c))], free


# ------------------------------------------------------------------------------------------------


def estimate_memory(values: Mapping, models: Mapping[str, ModelFacts], cluster: Cluster | None = None,
                    constants: MemoryConstants = CONSTANTS) -> tuple[MemoryReport | None, str | None]:
    """The report, or (None, why) when the estimate cannot be made (no actor model, an engine not modelled)."""
    actor = models.get("actor")
    if actor is None:
        return None, "the actor's model is unknown (a local folder or a catalogue id gives its size)"
    strategy = str(values.get(f"{ACTOR}.strategy") or "fsdp")
    if strategy not in ("fsdp", "fsdp2", "megatron"):  # (another engine's config has none of the keys read here)
        return None, f"memory of the {strategy} training engine is not modelled (FSDP, FSDP2 and Megatron are)"
    if text := values.get(NOT_NUMBERS):
        return None, f"{text[0]} is not a number (its error is below), so the memory is not estimated"
    refused = refused_engine_values(values)
    if refused:  # a fraction outside (0, 1], a kv_cache_memory_bytes vLLM does not parse: no sizes for a failed start
        return None, refused[0].reason
    cfg = read_config(values)
    placement = plan_placement(values, cluster)
    critic = models.get("critic") if cfg.need_critic else None
    notes = list(cfg.notes)
    if actor.vision_params:
        notes.append(f"vision tower: {actor.vision_params / 1e9:.2f}B of the model's {actor.param_count / 1e9:.2f}B "
                     "parameters (from its config.json's vision_config, as transformers builds the tower), inside every "
                     "weight, gradient and optimizer term" + (
                         "; its activations over the images, at worst every prompt token an image token, and vLLM's "
                         "profile of it (the largest image the processor allows) are counted from the code, not "
                         "measured" if has_tower(actor) else "; the image tokens of a batch are not counted"))
    if cfg.need_critic and critic is None:
        notes.append("the critic's model is unknown: the critic is left out of the training GPUs' estimate")
    if strategy == "megatron" and cfg.lora_rank:  # full fine-tuning's gradients and Adam would be its numbers
        return None, f"{LORA_NOT_MODELLED}: its sizes would be full fine-tuning's, so none are shown"
    tr = Trainer(cfg, actor, critic, constants)
    engine_facts = {"rollout": actor, "reward": models.get("reward"), "teacher": models.get("teacher")}
    mg = _megatron(values, cfg, actor, constants, engine_facts, placement, cluster) if strategy == "megatron" else None
    if mg is not None and (stops := mg.does_not_start):
        return None, stops
    notes += mg.notes() if mg else []
    groups, kv = [], {}
    for pool, by_capacity in zip(placement.pools, _by_capacity(placement, cluster)):
        for capacity, gpus in by_capacity.items():
            cap = capacity if capacity is not None else 0
            if pool.name == "global_pool" and mg is not None:
                phases, free = megatron_phases(cfg, mg, pool.roles, cap, constants, engine_facts, _engine,
                                               _engine_terms, Phase)
            elif pool.name == "global_pool":
                phases, free = _training_phases(cfg, tr, pool.roles, cap, constants, engine_facts)
            else:
                phases, free = _engine_only_phases(cfg, pool.roles[0], cap, constants,
                                                   engine_facts.get(pool.roles[0]))
            driver = term("driver", "kept by the driver (NVML counts it as used on an idle GPU)", constants.driver_reserved)
            phases = [p.model_copy(update={"terms": [*p.terms, driver]}) for p in phases]
            groups.append(GpuEstimate(pool=pool.name, roles=pool.roles, gpus=gpus, capacity_bytes=capacity, phases=phases))
            if capacity is not None:
                for role in pool.roles:
                    if role in ("rollout", "reward", "teacher") and role not in kv:
                        facts = actor if role == "rollout" else models.get(role)
                        if facts is not None:
                            kv[role] = _kv(cfg, role, facts, cap, free, placement, constants)
    host = host_estimates(cfg, actor, critic, placement, cluster, constants, mg.host_per_rank() if mg else None)
    return MemoryReport(groups=groups, kv=kv, host=host, notes=notes, placement=placement, constants=constants,
                        unmodelled=unmodelled(cfg, actor) or (mg.unmodelled if mg else None)), None


def _megatron(values: Mapping, cfg: MemoryConfig, actor: ModelFacts, c: MemoryConstants, facts: Mapping,
              placement: Placement, cluster: Cluster | None) -> MegatronTrainer:
    """The Megatron trainer of the pipeline stage whose GPUs peak highest (on the training pool's largest GPU)."""
    pool = next((p for p in placement.pools if p.name == "global_pool"), None)
    caps = [cap for cap in _gpu_memory(cluster).values() if cap] or [0]

    def peak(tr: MegatronTrainer) -> int:
        phases, _ = megatron_phases(cfg, tr, pool.roles if pool else [], max(caps), c, facts, _engine, _engine_terms,
                                    Phase)
        return max(p.total for p in phases)

    return worst_stage(values, cfg, actor, c, peak)


_GROUPED: list[tuple[Placement, Cluster | None, list[dict[int | None, list[GpuRef]]]]] = []


def _by_capacity(placement: Placement, cluster: Cluster | None) -> list[dict[int | None, list[GpuRef]]]:
    """Each pool's GPUs by their memory; kept for the last few placements (the advice search estimates dozens of
    variants on one placement of up to 16,384 GPUs). Its readers never change it."""
    for p, c, grouped in _GROUPED:
        if p is placement and c is cluster:
            return grouped
    gpu_memory = _gpu_memory(cluster)
    grouped = []
    for pool in placement.pools:
        by_capacity: dict[int | None, list[GpuRef]] = {}
        for g in pool.gpus:
            by_capacity.setdefault(gpu_memory.get((g.node, g.index)), []).append(g)
        grouped.append(by_capacity)
    _GROUPED.insert(0, (placement, cluster, grouped))
    del _GROUPED[4:]
    return grouped


def _gpu_memory(cluster: Cluster | None) -> dict[tuple[str, int], int | None]:
    if cluster is None:
        return {}
    return {(n.name, g.index): g.memory_total_bytes for n in cluster.nodes for g in n.gpus}


def _kv(cfg: MemoryConfig, role: str, facts: ModelFacts, capacity: int, free: int, placement: Placement,
        c: MemoryConstants) -> KvCache:
    eng = cfg.engines[role]
    replicas = max(1, len(placement.replicas_of(role)))
    in_flight = mt.ceil_div(cfg.train_batch_size * cfg.rollout_n, replicas)
    max_len = eng.max_model_len or facts.max_position_embeddings
    if eng.name == "sglang":
        return sglang_kv_cache(facts, _sglang(eng, facts, capacity, free, c), tp=eng.tp, dp=eng.dp, pp=eng.pp,
                               seq_tokens=cfg.seq_tokens, max_model_len=max_len, max_num_seqs=eng.max_num_seqs,
                               in_flight=in_flight)
    return mt.kv_cache(facts, engine=eng.name, capacity=capacity, util=eng.util, tp=eng.tp,
                       dp=eng.dp, pp=eng.pp, batched_tokens=eng.max_num_batched_tokens, max_num_seqs=eng.max_num_seqs,
                       seq_tokens=cfg.seq_tokens, max_model_len=max_len, in_flight=in_flight,
                       graph_pool=mt.graphs(eng.enforce_eager, eng.capture_sizes, c), pinned=eng.kv_cache_bytes, c=c,
                       mm=eng.mm)


def gib(n: int | float | None) -> float | None:
    return None if n is None else round(n / GIB, 2)
