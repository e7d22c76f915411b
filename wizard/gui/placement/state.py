"""What the board shows for one plan: its pools, replicas, per-GPU memory and findings, and the moves it offers.

Every judgement is the core's: ``plan_placement`` / ``memory_plan`` for where things run and how much memory each
phase takes, ``check_move`` for whether verl 0.9.1 can express a drop, ``full_check`` for the findings. This module
only picks the machine to draw (the chosen cluster, else the one the plan describes) and sizes a *new* pool from
GPUs no pool uses, or, when there are none, from the training pool's last node (or half of it on one node).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wizard.core.hardware.cluster import GPU, Cluster, ClusterNode
from wizard.core.plan.emit import emit_overrides
from wizard.core.findings import Finding, sort_findings
from wizard.core.hardware.gpus import GpuSpec
from wizard.core.memory.estimate import GpuEstimate, MemoryReport
from wizard.core.placement.pools import GpuRef, Placement
from wizard.core.placement.moves import MoveVerdict, check_move
from wizard.core.plan.model import Plan
from wizard.core.plan.convert import apply_overrides

NEW_POOLS = {"reward_pool": "reward", "rollout_pool": "rollout", "teacher_pool": "teacher"}
NEW_TITLES = {"reward_pool": "New reward-model pool", "rollout_pool": "New standalone rollout pool",
              "teacher_pool": "New teacher pool"}
ROLE_TITLES = {"actor": "actor", "rollout": "rollout", "ref": "reference", "critic": "critic",
               "reward": "reward model", "teacher": "teacher"}
OK, TIGHT, OOM, UNKNOWN = "ok", "tight", "oom", "unknown"


@dataclass
class BoardState:
    """One plan as the board draws it."""

    plan: Plan
    values: dict
    placement: Placement
    report: MemoryReport | None
    why: str | None
    findings: list[Finding]
    by_gpu: dict[tuple[str, int], GpuEstimate] = field(default_factory=dict)

    def estimate_of(self, node: str, index: int) -> GpuEstimate | None:
        return self.by_gpu.get((node, index))

    def pool_of(self, node: str, index: int) -> str | None:
        ref = GpuRef(node=node, index=index)
        return next((p.name for p in self.placement.pools if ref in p.gpus), None)

    def targets(self) -> list[str]:
        """Drop targets: the pools that exist, then the kinds of pool that could be made."""
        names = [p.name for p in self.placement.pools]
        have_rollout = any(n.startswith("rollout_pool") for n in names)
        # a teacher pool exists whenever distillation is on, so there is never a new one to offer
        new = [f"new:{k}" for k in ("reward_pool", "rollout_pool")
               if k not in names and not (k == "rollout_pool" and have_rollout)]
        return names + new

    def roles(self) -> list[tuple[str, str]]:
        """(role, pool) of every role the plan places, once each (standalone rollout: its first pool)."""
        out: list[tuple[str, str]] = []
        for pool in self.placement.pools:
            for role in pool.roles:
                if all(r != role for r, _ in out):
                    out.append((role, pool.name))
        return out


def fit_verdict(report: MemoryReport | None, group: GpuEstimate | None, total: int | None = None) -> str:
    """OK / tight / OOM of one GPU (or of one phase's ``total``), with the margin the memory rules use."""
    if report is None or group is None or group.capacity_bytes is None:
        return UNKNOWN
    cap = group.capacity_bytes
    used = group.peak.total if total is None else total
    if used > cap:
        return OOM
    return TIGHT if used > cap - report.tight_margin(cap) else OK


# ------------------------------------------------------------------------------------------------
# The machine


def plain_cluster(nodes: int, per_node: int, name: str = "GPU") -> Cluster:
    """Nodes whose GPUs' memory is unknown (no GPU model named): the board still shows where roles run."""
    return Cluster(source="plan", nodes=[ClusterNode(name=f"node{i}", gpu_count=per_node,
                                              gpus=[GPU(index=j, name=name) for j in range(per_node)])
                                         for i in range(max(1, nodes))])


def machine_for(doc, previous: Cluster | None = None) -> Cluster:
    """The machines to draw: those chosen on the Hardware step (or a typed GPU spec), else the plan's own.

    A plan-derived machine is kept while it still holds the plan (a pool carved off the training GPUs shrinks
    ``trainer.n_gpus_per_node``; the machine did not shrink with it)."""
    chosen = doc.effective_cluster() if hasattr(doc, "effective_cluster") else doc.cluster
    if chosen is not None:
        return chosen
    hw = doc.plan.hardware
    nodes, per = hw.nnodes or 1, hw.n_gpus_per_node or 8
    if previous is not None and previous.source in ("plan", "spec-plan"):
        fits = len(previous.nodes) >= nodes and all(n.gpu_count >= per for n in previous.nodes)
        if fits and (nodes * per < previous.gpu_total or _extra_pools(doc.plan)):
            return previous
    if hw.gpu:
        from wizard.adapters.discovery import cluster_for_spec
        from wizard.adapters.gpu_catalogue import load_gpu_catalogue

        try:
            cluster = cluster_for_spec(GpuSpec(nodes=nodes, gpus_per_node=per, model=hw.gpu), load_gpu_catalogue())
        except ValueError:
            cluster = None
        if cluster is not None:
            return cluster.model_copy(update={"source": "spec-plan"})
    return plain_cluster(nodes, per)


def _extra_pools(plan: Plan) -> bool:
    p = plan.placement
    return bool(p.reward_pool) or plan.trainer.trainer_mode == "separate_async"


# ------------------------------------------------------------------------------------------------
# Estimating a plan


def estimate(plan: Plan, machine: Cluster, models: dict, findings: list[Finding] | None = None,
             model_cache: dict | None = None) -> BoardState:
    """The board's picture of ``plan`` on ``machine``; ``findings`` when the document already checked it."""
    from wizard.adapters.resources import load_moves, load_schema
    from wizard.core.memory.report import memory_plan

    overrides = emit_overrides(plan).overrides
    if findings is None:
        from wizard.adapters.checking import full_check

        findings = full_check(overrides, config_name=plan.config_name, cluster=machine,
                              model_cache=model_cache).findings
    mp = memory_plan(load_schema(), overrides, config_name=plan.config_name, moves=load_moves(), models=models,
                     cluster=machine)
    report = mp.report if mp.report is not None and not mp.why else None
    by_gpu = {(g.node, g.index): grp for grp in (report.groups if report else []) for g in grp.gpus}
    return BoardState(plan=plan, values=mp.values, placement=mp.placement, report=report, why=mp.why,
                      findings=sort_findings(list(findings)), by_gpu=by_gpu)


# ------------------------------------------------------------------------------------------------
# Moves


@dataclass(frozen=True)
class BoardMove:
    """A proposed drop: the core's verdict plus the plan it would make (None when refused)."""

    role: str
    target: str
    verdict: MoveVerdict
    plan: Plan | None

    @property
    def ok(self) -> bool:
        return self.verdict.expressible and self.plan is not None

    @property
    def pool(self) -> str:
        return self.target.removeprefix("new:")


def target_title(target: str) -> str:
    return NEW_TITLES.get(target.removeprefix("new:"), target) if target.startswith("new:") else target


def propose(state: BoardState, machine: Cluster, role: str, target: str) -> BoardMove:
    """Ask ``check_move`` about dropping ``role`` on ``target``; for a new pool, size it first."""
    pool = target.removeprefix("new:")
    current = next((p for r, p in state.roles() if r == role), None)
    if current is not None and (current == pool or (pool.startswith("rollout_pool") and
                                                    current.startswith("rollout_pool"))):
        return BoardMove(role, target, MoveVerdict(expressible=False, reason=f"the {ROLE_TITLES.get(role, role)} "
                                              f"already runs on {pool}"), None)
    carve: list[str] = []
    per = nodes = None
    if target.startswith("new:"):
        size = _new_pool_size(state, machine)
        if size is None:
            return BoardMove(role, target, MoveVerdict(expressible=False, reason="no GPUs are free for a new pool and "
                                                  "the training pool has a single GPU to give"), None)
        per, nodes, carve = size
    verdict_ = check_move(state.values, role, pool, per, nodes)
    if not verdict_.expressible:
        return BoardMove(role, target, verdict_, None)
    overrides = carve + list(verdict_.overrides)
    verdict_ = verdict_.model_copy(update={"overrides": overrides})
    return BoardMove(role, target, verdict_, apply_overrides(state.plan, overrides) if overrides else state.plan)


def _new_pool_size(state: BoardState, machine: Cluster) -> tuple[int, int, list[str]] | None:
    """(GPUs per node, nodes, overrides that free them): spare GPUs first, else the training pool's last node,
    else half of its one node."""
    used = {(g.node, g.index) for p in state.placement.pools for g in p.gpus}
    spare = {}
    for node in machine.nodes:
        free = [g for g in node.gpus if (node.name, g.index) not in used] if node.gpus else []
        if free:
            spare[node.name] = len(free)
    if spare:
        return min(spare.values()), len(spare), []
    glob = state.placement.pool("global_pool")
    if glob is None:
        return None
    if glob.nnodes > 1:
        return glob.per_node, 1, [f"trainer.nnodes={glob.nnodes - 1}"]
    if glob.per_node > 1:
        half = glob.per_node // 2
        return glob.per_node - half, 1, [f"trainer.n_gpus_per_node={half}"]
    return None


def missing_gpus(state: BoardState) -> str | None:
    """Why the plan does not fit the machine (a pool the cluster could not give all its GPUs), or None."""
    short = [p for p in state.placement.pools if p.missing]
    if not short:
        return None
    return "; ".join(f"{p.name} lacks {p.missing} GPU(s)" for p in short)
