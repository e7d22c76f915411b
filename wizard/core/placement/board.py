"""The placement board's moves: where each role runs, where it may be dropped, and what a drop would make.

A role is dropped on a pool that exists or on a slot for a pool that does not yet (``new:reward_pool``,
``new:rollout_pool``). Whether verl 0.9.1 can run it there is :func:`~wizard.core.placement.moves.check_move`'s
answer; this module sizes a *new* pool first (GPUs no pool uses, else the training pool's last node, else half
of its one node) and turns an accepted drop into the plan it makes. It also picks the machine the board draws
when nothing was chosen: the plan's own nodes (a machine the adapters build from the GPU catalogue for a named
GPU model is handed in by the caller).

Pure: a plan, its resolved values and its :class:`Placement` in; a :class:`BoardMove` out. How full each GPU
gets is the memory side of the board (:mod:`wizard.core.memory.board`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wizard.core.hardware.cluster import GPU, Cluster, ClusterNode
from wizard.core.hardware.gpus import GpuSpec
from wizard.core.placement.moves import MoveVerdict, check_move
from wizard.core.placement.models import GpuRef, Placement
from wizard.core.plan.convert import apply_overrides
from wizard.core.plan.model import Plan

NEW_TITLES = {"reward_pool": "New reward-model pool", "rollout_pool": "New standalone rollout pool",
              "teacher_pool": "New teacher pool"}
ROLE_TITLES = {"actor": "actor", "rollout": "rollout", "ref": "reference", "critic": "critic",
               "reward": "reward model", "teacher": "teacher"}


def role_title(role: str) -> str:
    return ROLE_TITLES.get(role, role)


def target_title(target: str) -> str:
    """A drop target as the user reads it: a pool's name, or "New reward-model pool" for ``new:reward_pool``."""
    return NEW_TITLES.get(target.removeprefix("new:"), target) if target.startswith("new:") else target


@dataclass
class PlacedPlan:
    """A plan with its resolved values and the placement verl would build for it: what a drop is judged on."""

    plan: Plan
    values: Mapping
    placement: Placement

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

    def describe(self) -> str:
        """The pools in words: "global_pool: 8 GPU(s) on node0 (actor, rollout, ref); ..." (screen readers)."""
        parts = []
        for pool in self.placement.pools:
            nodes = sorted({g.node for g in pool.gpus})
            where = f"{nodes[0]}" if len(nodes) == 1 else f"{len(nodes)} nodes" if nodes else "no GPUs"
            parts.append(f"{pool.name}: {len(pool.gpus)} GPU(s) on {where} ({', '.join(pool.roles)})")
        return "; ".join(parts)

    def missing_gpus(self) -> str | None:
        """Why the plan does not fit the machine (a pool the cluster could not give all its GPUs), or None."""
        short = [p for p in self.placement.pools if p.missing]
        if not short:
            return None
        return "; ".join(f"{p.name} lacks {p.missing} GPU(s)" for p in short)


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

    @property
    def text(self) -> str:
        """The undo step's name: "Move reward model to New reward-model pool"."""
        return f"Move {role_title(self.role)} to {target_title(self.target)}"


def _refused(role: str, target: str, reason: str) -> BoardMove:
    return BoardMove(role, target, MoveVerdict(expressible=False, reason=reason), None)


def propose(state: PlacedPlan, machine: Cluster, role: str, target: str) -> BoardMove:
    """Ask ``check_move`` about dropping ``role`` on ``target``; for a new pool, size it first."""
    pool = target.removeprefix("new:")
    current = next((p for r, p in state.roles() if r == role), None)
    if current is not None and (current == pool or (pool.startswith("rollout_pool") and
                                                    current.startswith("rollout_pool"))):
        return _refused(role, target, f"the {role_title(role)} already runs on {pool}")
    carve: list[str] = []
    per = nodes = None
    if target.startswith("new:"):
        size = new_pool_size(state.placement, machine)
        if size is None:
            return _refused(role, target, "no GPUs are free for a new pool and the training pool has a single GPU "
                            "to give")
        per, nodes, carve = size
    verdict = check_move(state.values, role, pool, per, nodes)
    if not verdict.expressible:
        return BoardMove(role, target, verdict, None)
    overrides = carve + list(verdict.overrides)
    verdict = verdict.model_copy(update={"overrides": overrides})
    return BoardMove(role, target, verdict, apply_overrides(state.plan, overrides) if overrides else state.plan)


def new_pool_size(placement: Placement, machine: Cluster) -> tuple[int, int, list[str]] | None:
    """(GPUs per node, nodes, overrides that free them) of a new pool: GPUs no pool uses first, else the training
    pool's last node, else half of its one node; None when the training pool has a single GPU and nothing is free."""
    used = {(g.node, g.index) for p in placement.pools for g in p.gpus}
    spare = {}
    for node in machine.nodes:
        free = [g for g in node.gpus if (node.name, g.index) not in used] if node.gpus else []
        if free:
            spare[node.name] = len(free)
    if spare:
        return min(spare.values()), len(spare), []
    glob = placement.pool("global_pool")
    if glob is None:
        return None
    if glob.nnodes > 1:
        return glob.per_node, 1, [f"trainer.nnodes={glob.nnodes - 1}"]
    if glob.per_node > 1:
        half = glob.per_node // 2
        return glob.per_node - half, 1, [f"trainer.n_gpus_per_node={half}"]
    return None


# ------------------------------------------------------------------------------------------------
# The machine the board draws when none was chosen


def planned_gpus(plan: Plan) -> GpuSpec:
    """The GPUs the plan itself asks for (``trainer.nnodes`` x ``trainer.n_gpus_per_node``, verl's defaults 1 x 8)."""
    hw = plan.hardware
    return GpuSpec(nodes=hw.nnodes or 1, gpus_per_node=hw.n_gpus_per_node or 8, model=hw.gpu)


def plain_cluster(nodes: int, per_node: int, name: str = "GPU") -> Cluster:
    """Nodes whose GPUs' memory is unknown (no GPU model named): the board still shows where roles run."""
    return Cluster(source="plan", nodes=[ClusterNode(name=f"node{i}", gpu_count=per_node,
                                                     gpus=[GPU(index=j, name=name) for j in range(per_node)])
                                         for i in range(max(1, nodes))])


def kept_machine(plan: Plan, previous: Cluster | None) -> Cluster | None:
    """The machine drawn before, when it was derived from the plan and still holds it, else None.

    A pool carved off the training GPUs shrinks ``trainer.n_gpus_per_node``; the machine did not shrink with it,
    so the board keeps drawing the GPUs the new pool took."""
    if previous is None or previous.source not in ("plan", "spec-plan"):
        return None
    spec = planned_gpus(plan)
    fits = len(previous.nodes) >= spec.nodes and all(n.gpu_count >= spec.gpus_per_node for n in previous.nodes)
    extra_pools = bool(plan.placement.reward_pool) or plan.trainer.trainer_mode == "separate_async"
    return previous if fits and (spec.total < previous.gpu_total or extra_pools) else None
