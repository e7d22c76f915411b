"""Where verl 0.9.1 puts each role: resource pools laid over the cluster, rollout replicas as TP x DP x PP groups.

Only what a config alone can express (../shared/reference/verl-0.9.1.md §4, ``trainer_base._init_resource_pool_mgr``):

* ``global_pool`` = ``[trainer.n_gpus_per_node] * trainer.nnodes``: the actor, the hybrid rollout engines, the
  reference model (fused into the actor worker, or the actor itself with LoRA), the critic, and the reward
  model unless it has its own pool; all roles of a pool share one process per GPU (plus the engines' own).
* ``reward_pool`` (``reward.reward_model.enable_resource_pool``), ``teacher_pool`` (``distillation.enabled``).
* standalone rollout replicas (``trainer.v1.trainer_mode=separate_async``): one pool per replica,
  ``rollout.n_gpus_per_node x rollout.nnodes // replica size`` of them (``workers/rollout/replica.py``).

Replicas take consecutive ranks of their pool (``RolloutReplica.init_hybrid``: ranks ``k*ws .. (k+1)*ws``) and
ranks follow the pool's bundles node by node; a TP group is ``tp`` consecutive ranks of its replica. Pools are
laid over the nodes first-fit in the order verl creates them, each pool's bundles on different nodes while there are
any (:func:`lay_pools`), an approximation of Ray's placement groups.
Pure: a mapping of resolved keys and an optional :class:`Cluster` in, a :class:`Placement` out.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from wizard.core.verl.roles import lora_rank, need_critic, need_ref, ref_in_actor  # noqa: F401 - re-exported
from wizard.core.hardware.cluster import LINK_RANK, Cluster, LinkKind, ClusterNode
from wizard.core.findings import Finding, Severity, Stage
from wizard.core.hardware.gpus import MAX_GPUS, MAX_GPUS_PER_NODE
from wizard.core.verl.flags import truthy  # noqa: F401 - re-exported
from wizard.core.verl.keys import RM, R

PLACEMENT_KEYS = (
    "trainer.n_gpus_per_node", "trainer.nnodes", "trainer.v1.trainer_mode", "actor_rollout_ref.hybrid_engine",
    f"{R}.name", f"{R}.tensor_model_parallel_size", f"{R}.data_parallel_size", f"{R}.pipeline_model_parallel_size",
    f"{R}.nnodes", f"{R}.n_gpus_per_node",
    f"{RM}.enable", f"{RM}.enable_resource_pool", f"{RM}.n_gpus_per_node", f"{RM}.nnodes",
    f"{RM}.rollout.tensor_model_parallel_size", f"{RM}.rollout.data_parallel_size",
    f"{RM}.rollout.pipeline_model_parallel_size",
    "distillation.enabled", "distillation.n_gpus_per_node", "distillation.nnodes", "distillation.teacher_models",
    "algorithm.use_kl_in_reward", "actor_rollout_ref.actor.use_kl_loss", "critic.enable", "algorithm.adv_estimator",
    "actor_rollout_ref.model.lora_rank", "actor_rollout_ref.model.lora", "actor_rollout_ref.model.lora_adapter_path",
)
ROLES = ("actor", "rollout", "ref", "critic", "reward", "teacher")
POOLS = ("global_pool", "reward_pool", "teacher_pool", "rollout_pool")


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GpuRef(_Model):
    node: str
    index: int

    def __str__(self) -> str:
        return f"{self.node}:{self.index}"


class Pool(_Model):
    """A Ray resource pool: ``per_node`` GPUs on each of ``nnodes`` nodes, and the roles verl maps to it."""

    name: str
    roles: list[str]
    per_node: int
    nnodes: int
    gpus: list[GpuRef] = Field(default_factory=list)
    missing: int = 0  # GPUs the cluster could not give this pool (gpus.available reports it)

    @property
    def size(self) -> int:
        return self.per_node * self.nnodes


class ReplicaGroup(_Model):
    """One engine replica (rollout, reward model or teacher): ``tp x dp x pp`` GPUs of one pool."""

    role: str
    rank: int
    pool: str
    tp: int
    dp: int = 1
    pp: int = 1
    gpus: list[GpuRef]
    worst_link: str | None = None  # the slowest link inside one of its TP groups: NV18, PIX, SYS, "network"


class Placement(_Model):
    mode: str  # sync | colocate_async | separate_async
    pools: list[Pool]
    replicas: list[ReplicaGroup] = Field(default_factory=list)
    issues: list[Finding] = Field(default_factory=list)

    @property
    def gpus_needed(self) -> int:
        return sum(p.size for p in self.pools)

    def pool(self, name: str) -> Pool | None:
        return next((p for p in self.pools if p.name == name), None)

    def roles_on(self, gpu: GpuRef) -> list[str]:
        return [r for p in self.pools if gpu in p.gpus for r in p.roles]

    def replicas_of(self, role: str) -> list[ReplicaGroup]:
        return [g for g in self.replicas if g.role == role]


# ------------------------------------------------------------------------------------------------
# Reading the values


def _int(values: Mapping, key: str, default: int) -> int:
    v = values.get(key, default)
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def trainer_mode(values: Mapping) -> str:
    mode = values.get("trainer.v1.trainer_mode")
    return mode if isinstance(mode, str) else "sync"


def hybrid_replicas(values: Mapping) -> bool:
    """Colocated rollout engines on the training GPUs (all modes, unless separate_async with hybrid_engine=False)."""
    return not (trainer_mode(values) == "separate_async" and values.get("actor_rollout_ref.hybrid_engine") is False)


def replica_size(values: Mapping, prefix: str) -> tuple[int, int, int]:
    tp = max(1, _int(values, f"{prefix}.tensor_model_parallel_size", 2))
    dp = max(1, _int(values, f"{prefix}.data_parallel_size", 1))
    pp = max(1, _int(values, f"{prefix}.pipeline_model_parallel_size", 1))
    return tp, dp, pp


def teacher_sizes(values: Mapping) -> list[tuple[str, int, int]]:
    """(name, GPUs per replica, replicas) of each distillation teacher, as DistillationConfig._resolve_teacher_models
    (workers/config/distillation.py:289-319) reads them: verl's default ``teacher_model`` alone fills the teacher pool
    with as many replicas as fit; beside other teachers it is dropped, and each of those gives its num_replicas."""
    teachers = values.get("distillation.teacher_models")
    if not isinstance(teachers, Mapping):
        return []
    single = list(teachers) == ["teacher_model"]
    pool = _int(values, "distillation.n_gpus_per_node", 0) * _int(values, "distillation.nnodes", 0)
    out = []
    for name, t in teachers.items():
        if not isinstance(t, Mapping) or (name == "teacher_model" and len(teachers) > 1):
            continue
        inf = t.get("inference") if isinstance(t.get("inference"), Mapping) else {}
        tp, dp, pp = (max(1, inf.get(k) if isinstance(inf.get(k), int) else d) for k, d in
                      (("tensor_model_parallel_size", 2), ("data_parallel_size", 1),
                       ("pipeline_model_parallel_size", 1)))
        n = pool // (tp * dp * pp) if single else t.get("num_replicas") if isinstance(t.get("num_replicas"), int) else 0
        out.append((str(name), tp * dp * pp, n))
    return out


# ------------------------------------------------------------------------------------------------
# The pools


def pool_specs(values: Mapping) -> list[tuple[str, int, int, list[str]]]:
    """(name, per_node, nnodes, roles) in the order verl creates the pools."""
    per, nodes = _int(values, "trainer.n_gpus_per_node", 8), _int(values, "trainer.nnodes", 1)
    roles = ["actor"]
    if hybrid_replicas(values):
        roles.append("rollout")
    if need_ref(values) and not ref_in_actor(values):
        roles.append("ref")
    if need_critic(values):
        roles.append("critic")
    reward = truthy(values, f"{RM}.enable")
    own_reward = reward and truthy(values, f"{RM}.enable_resource_pool")
    if reward and not own_reward:
        roles.append("reward")
    specs = [("global_pool", per, nodes, roles)]
    if own_reward:
        specs.append(("reward_pool", _int(values, f"{RM}.n_gpus_per_node", 8), _int(values, f"{RM}.nnodes", 0),
                      ["reward"]))
    if truthy(values, "distillation.enabled"):
        specs.append(("teacher_pool", _int(values, "distillation.n_gpus_per_node", 8),
                      _int(values, "distillation.nnodes", 0), ["teacher"]))
    if trainer_mode(values) == "separate_async":
        tp, dp, pp = replica_size(values, R)
        ws = tp * dp * pp
        gpn = _int(values, f"{R}.n_gpus_per_node", per)
        total = gpn * _int(values, f"{R}.nnodes", 0)
        on_node = min(gpn, ws) if gpn > 0 else ws
        for k in range(total // ws if ws else 0):
            specs.append((f"rollout_pool_{k}", on_node, max(1, ws // on_node), ["rollout"]))
    return specs


def _nodes(cluster: Cluster | None, values: Mapping) -> list[ClusterNode]:
    if cluster is not None:
        alive = [n for n in cluster.nodes if n.alive and n.gpu_count > 0]
        if alive:
            return alive
    per, nodes = _int(values, "trainer.n_gpus_per_node", 8), _int(values, "trainer.nnodes", 1)
    from wizard.core.hardware.cluster import GPU

    # the machines the config describes, drawn at most MAX_GPUS wide (a typo of nnodes=100000000 must not hang
    # the check: the rules say what is wrong with such a size; the placement shows the first MAX_GPUS GPUs)
    per = min(max(1, per), MAX_GPUS_PER_NODE)
    nodes = min(max(1, nodes), MAX_GPUS // per)
    return [ClusterNode(name=f"node{i}", gpu_count=per, gpus=[GPU(index=j, name="GPU") for j in range(per)])
            for i in range(nodes)]


def _gpu_indices(node: ClusterNode) -> list[int]:
    return [g.index for g in node.gpus] if node.gpus else list(range(node.gpu_count))


def lay_pools(specs, nodes: list[ClusterNode]) -> list[Pool]:
    """First-fit over the nodes in order, one pool's per-node bundles on different nodes.

    verl asks Ray for ``[per_node] * nnodes``: one STRICT_PACK placement group per node entry. Each bundle goes on
    the first node with ``per_node`` free GPUs that holds no other bundle of its pool, so ``4 x 2`` on two 8-GPU
    nodes is node0:0-3 and node1:0-3 (the nodes the config names), not all of node0 (Ray 2.60 put two such groups
    on two empty 8-GPU nodes, in a local 2-node Ray cluster, every time of three). Only where no such node is
    left does a bundle share a node with another of its pool (Ray can pack two placement groups on one node, and
    verl's own check counts GPUs, not nodes): a pool of ``nnodes`` bundles on fewer nodes still gets its GPUs."""
    free = {n.name: _gpu_indices(n) for n in nodes}
    pools = []
    for name, per, count, roles in specs:
        gpus: list[GpuRef] = []
        missing = 0
        # both only move forward: nodes before ``spread`` have fewer than ``per`` free GPUs or hold a bundle of
        # this pool; nodes before ``packed`` have fewer than ``per`` free GPUs (free GPUs only ever get fewer)
        spread = packed = 0
        for placed in range(max(0, count)):
            while per > 0 and spread < len(nodes) and len(free[nodes[spread].name]) < per:
                spread += 1
            if per > 0 and spread < len(nodes):
                node = nodes[spread]
                spread += 1
            else:  # every node with room already holds a bundle of this pool: share one
                while per > 0 and packed < len(nodes) and len(free[nodes[packed].name]) < per:
                    packed += 1
                node = nodes[packed] if per > 0 and packed < len(nodes) else None
            if node is None:  # no node has room now, nor will one for the bundles still to place
                missing += per * (count - placed)
                break
            taken, free[node.name] = free[node.name][:per], free[node.name][per:]
            gpus += [GpuRef.model_construct(node=node.name, index=i) for i in taken]  # ints from the cluster
        pools.append(Pool(name=name, roles=roles, per_node=per, nnodes=max(0, count), gpus=gpus, missing=missing))
    return pools


def pool_cluster(cluster: Cluster | None, pool: Pool | None) -> Cluster | None:
    """The cluster as one pool's ranks see it: each node the pool uses, with only the pool's GPUs on it and the links
    between them, in the pool's order. ``4 x 2`` on two 8-GPU nodes is two nodes of 4 GPUs, so what reads the
    cluster node by node (the step time's rings: GPUs per node, a ring over more GPUs than one node has goes over the
    network) reads the GPUs the run uses. The cluster itself where the pool has no GPUs, or there is no cluster."""
    if cluster is None or pool is None or not pool.gpus:
        return cluster
    used: dict[str, set[int]] = {}
    for g in pool.gpus:
        used.setdefault(g.node, set()).add(g.index)
    by_name = {n.name: n for n in cluster.nodes}
    if any(name not in by_name for name in used):  # a placement made without this cluster
        return cluster
    nodes = []
    for name, indices in used.items():
        node = by_name[name]
        nodes.append(node.model_copy(update={
            "gpu_count": len(indices),
            "gpus": [g for g in node.gpus if g.index in indices],
            "links": [x for x in node.links if x.a in indices and x.b in indices]}))
    return cluster.model_copy(update={"nodes": nodes})


# ------------------------------------------------------------------------------------------------
# Replica groups and their links


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


def _replicas(role: str, pool: Pool, tp: int, dp: int, pp: int, nodes: dict[str, ClusterNode], start: int = 0):
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


_RECENT: list[tuple[str, tuple[tuple[str, str], ...] | None, Cluster | None, Placement]] = []
_ABSENT = object()


class _Reads(Mapping):
    """The values, noting each key the placement reads (with the repr of what it found, or that it was absent);
    ``whole`` when it walked them all."""

    def __init__(self, values: Mapping):
        self._values, self.read, self.whole = values, {}, False

    def __getitem__(self, key):
        try:
            value = self._values[key]
        except KeyError:
            self.read[key] = None
            raise
        self.read[key] = repr(value)
        return value

    def get(self, key, default=None):
        value = self._values.get(key, _ABSENT)
        self.read[key] = None if value is _ABSENT else repr(value)
        return default if value is _ABSENT else value

    def __contains__(self, key) -> bool:
        return self.get(key, _ABSENT) is not _ABSENT

    def __iter__(self):
        self.whole = True
        return iter(self._values)

    def __len__(self) -> int:
        self.whole = True
        return len(self._values)


def _same_reads(values: Mapping, reads: tuple[tuple[str, str | None], ...]) -> bool:
    for key, seen in reads:
        value = values.get(key, _ABSENT)
        if (None if value is _ABSENT else repr(value)) != seen:
            return False
    return True


def plan_placement(values: Mapping, cluster: Cluster | None = None) -> Placement:
    """The pools, the roles on them and the replica groups verl 0.9.1 would build for these values.

    The last few answers are kept (the same Cluster object, and the same values of every key the placement read):
    one check asks from several rules, the advice search asks for dozens of variants that differ in keys the
    placement never reads, and on 16,384 GPUs building the pools and replica groups is most of an estimate's cost.
    A Placement is never changed by its readers."""
    key = repr(sorted(values.items(), key=lambda kv: kv[0]))
    for k, reads, c, placement in _RECENT:
        if c is cluster and (k == key or (reads is not None and _same_reads(values, reads))):
            return placement
    seen = _Reads(values)
    placement = _plan_placement(seen, cluster)
    _RECENT.insert(0, (key, None if seen.whole else tuple(seen.read.items()), cluster, placement))
    del _RECENT[8:]
    return placement


def _plan_placement(values: Mapping, cluster: Cluster | None) -> Placement:
    nodes = _nodes(cluster, values)
    by_name = {n.name: n for n in nodes}
    pools = lay_pools(pool_specs(values), nodes)
    replicas: list[ReplicaGroup] = []
    issues: list[Finding] = []
    glob = pools[0]
    if "rollout" in glob.roles:
        replicas += _replicas("rollout", glob, *replica_size(values, R), by_name)
    hybrid = len(replicas)
    for k, pool in enumerate(p for p in pools if p.name.startswith("rollout_pool_")):
        replicas += _replicas("rollout", pool, *replica_size(values, R), by_name, start=hybrid + k)
    reward_pool = next((p for p in pools if "reward" in p.roles), None)
    if reward_pool is not None:
        tp, dp, pp = replica_size(values, f"{RM}.rollout")
        replicas += _replicas("reward", reward_pool, tp, dp, pp, by_name)
        issues += _reward_groups(reward_pool, tp * dp * pp)
    teacher = next((p for p in pools if p.name == "teacher_pool"), None)
    if teacher is not None:
        issues += _teacher_groups(teacher, teacher_sizes(values))
        start = 0
        for name, ws, n in teacher_sizes(values):
            sub = Pool(name="teacher_pool", roles=["teacher"], per_node=teacher.per_node, nnodes=teacher.nnodes,
                       gpus=teacher.gpus[start:start + ws * n])
            replicas += [g.model_copy(update={"role": f"teacher:{name}"}) for g in _replicas("teacher", sub, ws, 1, 1, by_name)]
            start += ws * n
    issues += _link_issues(replicas)
    return Placement(mode=trainer_mode(values), pools=pools, replicas=replicas, issues=issues)


def _issue(rule: str, severity: Severity, stage: Stage, keys: list[str], message: str, fix: str | None = None,
           overrides: list[str] | None = None) -> Finding:
    return Finding(rule=rule, severity=severity, stage=stage, keys=keys, message=message, fix=fix,
                   fix_overrides=overrides or [])


def _reward_groups(pool: Pool, ws: int) -> list[Finding]:
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


def _teacher_groups(pool: Pool, teachers: list[tuple[str, int, int]]) -> list[Finding]:
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


def _link_issues(replicas: list[ReplicaGroup]) -> list[Finding]:
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
                          f"Lower {key} so a TP group stays inside one NVLink island"))
    return out
