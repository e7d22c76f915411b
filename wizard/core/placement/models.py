"""What a placement is: resource pools of GPUs, the roles verl maps to each, and the engines' replica groups.

The models :mod:`wizard.core.placement.pools` builds and the memory estimate, the step time and the placement board
read. Frozen: a Placement is never changed by its readers.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from wizard.core.findings import Finding

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
