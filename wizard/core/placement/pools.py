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

from wizard.core.verl.roles import lora_rank, need_critic, need_ref, ref_in_actor  # noqa: F401 - re-exported
from wizard.core.hardware.cluster import Cluster, ClusterNode
from wizard.core.findings import Finding
from wizard.core.hardware.gpus import MAX_GPUS, MAX_GPUS_PER_NODE
from wizard.core.placement.groups import link_issues, replica_groups, reward_groups, teacher_groups
from wizard.core.placement.models import GpuRef, Placement, Pool, ReplicaGroup
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
        replicas += replica_groups("rollout", glob, *replica_size(values, R), by_name)
    hybrid = len(replicas)
    for k, pool in enumerate(p for p in pools if p.name.startswith("rollout_pool_")):
        replicas += replica_groups("rollout", pool, *replica_size(values, R), by_name, start=hybrid + k)
    reward_pool = next((p for p in pools if "reward" in p.roles), None)
    if reward_pool is not None:
        tp, dp, pp = replica_size(values, f"{RM}.rollout")
        replicas += replica_groups("reward", reward_pool, tp, dp, pp, by_name)
        issues += reward_groups(reward_pool, tp * dp * pp)
    teacher = next((p for p in pools if p.name == "teacher_pool"), None)
    if teacher is not None:
        issues += teacher_groups(teacher, teacher_sizes(values))
        start = 0
        for name, ws, n in teacher_sizes(values):
            sub = Pool(name="teacher_pool", roles=["teacher"], per_node=teacher.per_node, nnodes=teacher.nnodes,
                       gpus=teacher.gpus[start:start + ws * n])
            replicas += [g.model_copy(update={"role": f"teacher:{name}"}) for g in replica_groups("teacher", sub, ws, 1, 1, by_name)]
            start += ws * n
    issues += link_issues(replicas)
    return Placement(mode=trainer_mode(values), pools=pools, replicas=replicas, issues=issues)
