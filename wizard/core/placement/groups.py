"""The engines' replica groups in their pools, the links inside each TP group, and what verl refuses about them.

A replica takes ``tp x dp x pp`` consecutive GPUs of its pool (``RolloutReplica.init_hybrid``); a TP group is ``tp``
consecutive ranks of its replica and all-reduces every layer, so the slowest link inside one (PCIe, across NUMA nodes,
the network) is named (``placement.tp_link``). The reward model's and the teachers' pools must split into whole
replicas (``placement.reward_groups``, ``placement.teacher_groups``).
"""

from __future__ import annotations

from wizard.core.findings import Finding, Severity, Stage
from wizard.core.hardware.cluster import LINK_RANK, ClusterNode, LinkKind
from wizard.core.placement.models import GpuRef, Pool, ReplicaGroup
from wizard.core.verl.keys import RM, R


def _link_between(node: ClusterNode, a: int, b: int) -> str | None:
    link = node.link(a, b)
    if link is not None:
        return link.label
    if node.interconnect == "pcie":
        return "PCIe"
    return None


def worst_link(group: list[GpuRef], nodes: dict[str, ClusterNode]) -> str | None:
    """The slowest link between any two GPUs of a TP group; "network" across nodes; None when unknown/NVLink."""
    if len({g.node for g in group}) > 1:
        return "network"
    node = nodes.get(group[0].node) if group else None
    if node is None:
        return None
    worst, rank = None, -1
    numa = {g.index: g.numa_node for g in node.gpus}
    for i, a in enumerate(group):
        for b in group[i + 1:]:
            label = _link_between(node, a.index, b.index)
            if label is None:
                continue
            kind = LinkKind.NV if label.startswith("NV") else (LinkKind.PHB if label == "PCIe" else LinkKind(label))
            if numa.get(a.index) is not None and numa.get(b.index) is not None and numa[a.index] != numa[b.index]:
                kind, label = LinkKind.SYS, "SYS"
            if LINK_RANK[kind] > rank:
                worst, rank = label, LINK_RANK[kind]
    return None if worst is None or worst.startswith("NV") else worst


def replica_groups(role: str, pool: Pool, tp: int, dp: int, pp: int, nodes: dict[str, ClusterNode], start: int = 0):
    ws = tp * dp * pp
    out = []
    for k in range(len(pool.gpus) // ws if ws else 0):
        gpus = pool.gpus[k * ws:(k + 1) * ws]
        links = [worst_link(gpus[i:i + tp], nodes) for i in range(0, ws, tp)] if tp > 1 else [None]
        bad = [x for x in links if x is not None]
        worst = max(bad, key=_badness) if bad else None
        out.append(ReplicaGroup(role=role, rank=start + k, pool=pool.name, tp=tp, dp=dp, pp=pp, gpus=gpus,
                                worst_link=worst))
    return out


def _badness(label: str) -> int:
    if label == "network":
        return 99
    if label == "PCIe":
        return LINK_RANK[LinkKind.PHB]
    return LINK_RANK.get(LinkKind(label), 0) if label in LinkKind._value2member_map_ else 0


def _issue(rule: str, severity: Severity, stage: Stage, keys: list[str], message: str, fix: str | None = None,
           overrides: list[str] | None = None) -> Finding:
    return Finding(rule=rule, severity=severity, stage=stage, keys=keys, message=message, fix=fix,
                   fix_overrides=overrides or [])


def reward_groups(pool: Pool, ws: int) -> list[Finding]:
    """reward_model.py: ``num_replicas = world_size // rollout_world_size`` must be > 0, and the pool must split
    into whole replicas (split_resource_pool asserts ``world_size % split_size == 0``)."""
    keys = [f"{RM}.rollout.tensor_model_parallel_size", f"{RM}.n_gpus_per_node", f"{RM}.nnodes"]
    if pool.size and pool.size < ws:
        return [_issue("placement.reward_groups", Severity.ERROR, Stage.STARTUP, keys,
                       f"The reward model's replica needs TP x DP x PP = {ws} GPUs but its pool ({pool.name}) has "
                       f"{pool.size}; verl stops with: Not enough GPUs to run the reward model",
                       f"Set {RM}.rollout.tensor_model_parallel_size to at most {pool.size}",
                       [f"{RM}.rollout.tensor_model_parallel_size={_largest_divisor(pool.size, ws)}"])]
    if pool.size and pool.size % ws:
        return [_issue("placement.reward_groups", Severity.ERROR, Stage.STARTUP, keys,
                       f"The reward model's pool ({pool.name}, {pool.size} GPUs) does not split into replicas of "
                       f"{ws} GPUs; verl stops with: split_size must be a divisor of world_size",
                       f"Use a reward-model TP x DP x PP that divides {pool.size}",
                       [f"{RM}.rollout.tensor_model_parallel_size={_largest_divisor(pool.size, ws)}"])]
    return []


def teacher_groups(pool: Pool, teachers: list[tuple[str, int, int]]) -> list[Finding]:
    """DistillationConfig.__post_init__ (distillation.py:276-287): the teacher pool must equal num_replicas x
    per-replica GPUs summed over the teachers. verl's single default teacher fills the pool by construction (a
    replica size that does not divide it is rule distillation.config's)."""
    want = sum(ws * n for _, ws, n in teachers)
    if not teachers or want == pool.size or [name for name, _, _ in teachers] == ["teacher_model"]:
        return []
    parts = ", ".join(f"{name}: {n} x {ws}" for name, ws, n in teachers)
    return [_issue("placement.teacher_groups", Severity.ERROR, Stage.STARTUP,
                   ["distillation.n_gpus_per_node", "distillation.nnodes", "distillation.teacher_models"],
                   f"The teacher pool has {pool.size} GPUs but the teachers need {want} ({parts}); verl stops when "
                   "it splits the pool", f"Make distillation.n_gpus_per_node x distillation.nnodes = {want}")]


def _largest_divisor(n: int, at_most: int) -> int:
    return max(d for d in range(1, max(1, min(n, at_most)) + 1) if n % d == 0)


def link_issues(replicas: list[ReplicaGroup]) -> list[Finding]:
    """A TP group all-reduces every layer: over PCIe, across NUMA nodes or across machines it is slow."""
    out = []
    by_kind: dict[tuple[str, str], list[ReplicaGroup]] = {}
    for g in replicas:
        if g.worst_link:
            by_kind.setdefault((g.role.split(":")[0], g.worst_link), []).append(g)
    for (role, link), groups in sorted(by_kind.items()):
        where = {"network": "across nodes (over the network)", "SYS": "across NUMA nodes (through the CPUs' interconnect)",
                 "NODE": "across PCIe host bridges of one NUMA node", "PHB": "through a PCIe host bridge",
                 "PXB": "over PCIe bridges (no NVLink)", "PIX": "over one PCIe bridge (no NVLink)",
                 "PCIe": "over PCIe (no NVLink)"}.get(link, link)
        key = {"rollout": f"{R}.tensor_model_parallel_size", "reward": f"{RM}.rollout.tensor_model_parallel_size"}.get(
            role, "distillation.teacher_models")
        first = groups[0]
        out.append(_issue("placement.tp_link", Severity.WARNING, Stage.ADVICE, [key],
                          f"{len(groups)} {role} replica(s) have a TP group of {first.tp} GPUs that talks {where} "
                          f"(e.g. replica {first.rank} on {', '.join(map(str, first.gpus[:first.tp]))}); every layer "
                          "all-reduces over that link, so generation is much slower than within NVLink",
                          f"Lower {key} so a TP group stays inside one NVLink island, where the engine still fits "
                          "on fewer GPUs (where the model needs this TP for memory, keep it: the step time counts "
                          "these all-reduces)"))
    return out
