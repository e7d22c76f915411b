"""Host (CPU) memory per node: Ray workers die from host OOM as often as GPUs run out (gpu-memory.md §2.14).

Per training GPU, its trainer process holds on the host what FSDP keeps on CPU: the reference model's shard
(always: verl forces CPU offload for it), the actor's and critic's offloaded params and AdamW moments, and
FSDP2 ``offload_policy`` states; rank 0 also reads the whole model into CPU memory once at start. Each process
costs its resident size, and the head node runs the TaskRunner, TransferQueue, agent-loop and reward workers
and the dataloader workers. The process sizes are estimates ([E] in :class:`MemoryConstants`).
"""

from __future__ import annotations

from wizard.core.memory import pinned, terms as mt
from wizard.core.hardware.cluster import Cluster
from wizard.core.memory.config import MemoryConfig
from wizard.core.memory.terms import HostEstimate, MemoryConstants, Term
from wizard.core.models.facts import ModelFacts
from wizard.core.placement.models import Placement


def _t(key: str, label: str, value: float, note: str = "") -> Term:
    return Term(key=key, label=label, bytes=int(value), note=note)


_RECENT: list[tuple[Placement, Cluster | None, tuple, list[HostEstimate]]] = []  # see host_estimates


def host_estimates(cfg: MemoryConfig, actor: ModelFacts, critic: ModelFacts | None, placement: Placement,
                   cluster: Cluster | None, c: MemoryConstants,
                   per_rank: list[tuple[str, str, float]] | None = None) -> list[HostEstimate]:
    """One estimate per node that holds GPUs of the placement.

    Nodes that hold the same share have the same terms, made once; the answer for the same placement and cluster
    objects and the same terms is kept (the advice search estimates dozens of variants on one placement, and a
    16,384-node spec has 16,384 of these). Its readers never change it. ``per_rank``: what one trainer rank keeps
    on the host when the trainer is not FSDP's (the Megatron engine's)."""
    per_node = _shares(placement)
    first = next(iter(per_node), None)
    shard = per_rank if per_rank is not None else _per_rank(cfg, actor, critic)
    made = {share: _node_terms(cfg, actor, share, shard, c) for share in set(per_node.values())}
    if first is not None:
        head = per_node[first][:2] + (True,)
        made[head] = _node_terms(cfg, actor, head, shard, c)
    key = tuple(sorted(made.items()))
    for p, cl, k, out in _RECENT:
        if p is placement and cl is cluster and k == key:
            return out
    ram = {n.name: n.memory_bytes for n in cluster.nodes} if cluster is not None else {}
    # built without validation: the frozen terms made (and checked) once above
    out = [HostEstimate.model_construct(node=node, terms=list(made[head if node == first else share]),
                                        capacity_bytes=ram.get(node))
           for node, share in per_node.items()]
    _RECENT.insert(0, (placement, cluster, key, out))
    del _RECENT[4:]
    return out


_SHARES: list[tuple[Placement, dict[str, tuple[int, int, bool]]]] = []


def _shares(placement: Placement) -> dict[str, tuple[int, int, bool]]:
    """(trainer GPUs, engine GPUs, False) of each node, in the placement's order of first use."""
    for p, shares in _SHARES:
        if p is placement:
            return shares
    per_node: dict[str, dict[str, int]] = {}
    for pool in placement.pools:
        for g in pool.gpus:
            counts = per_node.setdefault(g.node, {"trainer": 0, "engine": 0})
            if pool.name == "global_pool":
                counts["trainer"] += 1
                counts["engine"] += 1 if "rollout" in pool.roles else 0
            else:
                counts["engine"] += 1
    shares = {node: (n["trainer"], n["engine"], False) for node, n in per_node.items()}
    _SHARES.insert(0, (placement, shares))
    del _SHARES[4:]
    return shares


def _node_terms(cfg: MemoryConfig, actor: ModelFacts, share: tuple[int, int, bool],
                shard: list[tuple[str, str, float]], c: MemoryConstants) -> list[Term]:
    """What one node's processes hold on the host: its trainer and engine GPUs, and whether it is the head."""
    k, engines, first = share
    terms = []
    if k:
        for key, label, value in shard:
            terms.append(_t(key, f"{label} x {k} GPUs", value * k))
        each = c.host_trainer_megatron if cfg.strategy == "megatron" else c.host_trainer_process
        terms.append(_t("host_trainer", f"trainer processes x {k}", each * k))
    if engines:
        terms.append(_t("host_engine", f"engine worker processes x {engines}", c.host_engine_process * engines))
        if cfg.lora_adapter:
            eng = cfg.engines["rollout"]
            terms.append(_t("host_engine_sleep", "rollout weights kept on CPU while asleep (LoRA: level-1 sleep, "
                            "pinned in power-of-two blocks)", pinned.sleep_backup(actor, eng.tp, eng.pp) * engines))
    if k and cfg.lora_sends_base:
        # every rank gathers the whole base model at the trainer's dtype; rank 0's read at start is gone by then
        # (verl H200, 14B LoRA on one GPU: the trainer held 56.0 GiB at the first sync, 4 bytes x 14.8B params)
        terms.append(_t("host_lora_base_sync", f"first weight sync: each rank gathers the base model on CPU "
                        f"({cfg.actor_dtype}) x {k} GPUs", cfg.actor_dtype_bytes * actor.param_count * k))
    elif first and cfg.strategy != "megatron":
        # Megatron: every rank reads its own tensors from the safetensors files through megatron-bridge
        # (verl/workers/engine/megatron/transformer_impl.py:499-512), no whole copy on rank 0
        terms.append(_t("host_init", "rank 0 reads the whole actor into CPU memory at start",
                        cfg.actor_dtype_bytes * actor.param_count))
    if first:
        terms.append(_t("host_fixed", "TaskRunner, TransferQueue, agent-loop and reward workers", c.host_node_fixed))
        if cfg.dataloader_workers:
            terms.append(_t("host_dataloader", f"dataloader workers x {cfg.dataloader_workers}",
                            c.host_dataloader_worker * cfg.dataloader_workers))
    return terms


def _per_rank(cfg: MemoryConfig, actor: ModelFacts, critic: ModelFacts | None) -> list[tuple[str, str, float]]:
    """(key, label, bytes) one trainer rank keeps on the host. Every offload is a pinned copy (pinned.pinned_shard:
    a power of two a tensor); AdamW's moments under FSDP2's offload policy are made on the CPU, not pinned."""
    N, bm, lora = cfg.shards, cfg.actor_dtype_bytes, cfg.lora_rank
    fsdp1 = cfg.strategy == "fsdp"
    out = []
    if cfg.ref_separate:
        # FSDP1's CPUOffload(offload_params=True) also pins a gradient as large as each flat parameter, even for a
        # model that never trains (torch/distributed/fsdp/_flat_param.py: ``_cpu_grad = zeros_like(...).pin_memory()``)
        dtype = "fp32" if cfg.ref_dtype_bytes == 4 else "bf16"
        out.append(("host_ref", f"reference model shard ({dtype}, always CPU-offloaded, pinned"
                    + (", with FSDP1's CPU gradient)" if fsdp1 else ")"),
                    pinned.pinned_shard(actor, N, cfg.ref_dtype_bytes, fsdp1=fsdp1) * (2 if fsdp1 else 1)))
    trainable = pinned.pinned_shard(actor, N, bm, fsdp1=fsdp1, lora_rank=lora)  # a pinned copy of what is trained
    if cfg.actor_offload_policy:
        # every parameter (a LoRA base too) lives on the CPU, pinned; the gradients come back pinned
        base = pinned.pinned_shard(actor, N, bm) if lora else 0.0
        out.append(("host_actor_states", "actor params, grads and AdamW on CPU (FSDP2 offload_policy, pinned)",
                    base + 2 * trainable + 2 * bm * cfg.trainable_params(actor) / N))
    else:
        if cfg.actor_param_offload:
            out.append(("host_actor_params", "actor params offloaded between calls (pinned)",
                        pinned.pinned_shard(actor, N, bm, fsdp1=fsdp1)))
        if cfg.actor_optimizer_offload:
            out.append(("host_actor_adam", "actor AdamW moments offloaded between calls (pinned)", 2 * trainable))
    if critic is not None:
        Nc, bc, c1 = cfg.critic_shards, cfg.critic_dtype_bytes, cfg.critic_fsdp1
        states = pinned.pinned_shard(critic, Nc, bc, fsdp1=c1, head=False)
        if cfg.critic_offload_policy:
            out.append(("host_critic_states", "critic states on CPU (FSDP2 offload_policy, pinned)",
                        2 * states + 2 * bc * mt.critic_params(critic) / Nc))
        else:
            if cfg.critic_param_offload:
                out.append(("host_critic_params", "critic params offloaded (pinned)", states))
            if cfg.critic_optimizer_offload:
                out.append(("host_critic_adam", "critic AdamW moments offloaded (pinned)", 2 * states))
    return out
