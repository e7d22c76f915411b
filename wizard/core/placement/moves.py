"""Moves the placement board may propose, and whether verl 0.9.1 can run them by config alone.

The placement itself is :mod:`wizard.core.placement.pools`; this module answers "can I drag this role there?"
with the overrides that say so, or the reason it needs code (../shared/reference/verl-0.9.1.md §4.3-4.4).
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from wizard.core.placement.models import POOLS, ROLES
from wizard.core.verl.flags import truthy
from wizard.core.verl.keys import RM, R


class MoveVerdict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    expressible: bool
    reason: str
    overrides: list[str] = Field(default_factory=list)


def check_move(values: Mapping, role: str, to_pool: str, per_node: int | None = None,
               nnodes: int | None = None) -> MoveVerdict:
    """Whether verl 0.9.1 can run ``role`` on ``to_pool`` by config alone, with the overrides that say so."""
    to = "rollout_pool" if to_pool.startswith("rollout_pool") else to_pool
    if role not in ROLES or to not in POOLS:
        return MoveVerdict(expressible=False, reason=f"unknown role {role!r} or pool {to_pool!r}")
    sizes = bool(per_node and nnodes)
    if to == "global_pool":
        return _to_global(values, role)
    if role == "reward" and to == "reward_pool":
        if not truthy(values, f"{RM}.enable"):
            return MoveVerdict(expressible=False, reason=f"no reward model is configured: set {RM}.enable=True and "
                               f"{RM}.model_path first")
        extra = [f"{RM}.n_gpus_per_node={per_node}", f"{RM}.nnodes={nnodes}"] if sizes else []
        return MoveVerdict(expressible=True, reason="the reward model gets its own pool and scores while generating",
                           overrides=[f"{RM}.enable_resource_pool=True", *extra])
    if role == "teacher" and to == "teacher_pool":
        extra = [f"distillation.n_gpus_per_node={per_node}", f"distillation.nnodes={nnodes}"] if sizes else []
        return MoveVerdict(expressible=True, reason="distillation teachers always run on their own pool",
                           overrides=["distillation.enabled=True", *extra])
    if role == "rollout" and to == "rollout_pool":
        extra = [f"{R}.n_gpus_per_node={per_node}", f"{R}.nnodes={nnodes}"] if sizes else []
        note = ("separate_async also needs data.train_batch_size = trainer.v1.separate_async.parameter_sync_step x "
                "actor.ppo_mini_batch_size")
        if truthy(values, f"{RM}.enable") and not truthy(values, f"{RM}.enable_resource_pool"):
            note += f", and the reward model on its own pool ({RM}.enable_resource_pool=True)"
        return MoveVerdict(expressible=True, reason=f"standalone rollout replicas (trainer.v1.trainer_mode=separate_async); "
                           f"actor_rollout_ref.hybrid_engine=False keeps the training GPUs out of rollout; {note}",
                           overrides=["trainer.v1.trainer_mode=separate_async", *extra,
                                      f"{R}.checkpoint_engine.backend=nccl", "actor_rollout_ref.hybrid_engine=False"])
    return MoveVerdict(expressible=False, reason=_why_not(role, to))


def _to_global(values: Mapping, role: str) -> MoveVerdict:
    if role in ("actor", "ref", "critic"):
        return MoveVerdict(expressible=True, reason=f"the {role} always runs on global_pool")
    if role == "reward":
        return MoveVerdict(expressible=True, reason="the reward model shares the training GPUs and is woken after "
                           "generation", overrides=[f"{RM}.enable_resource_pool=False"])
    if role == "rollout":
        return MoveVerdict(expressible=True, reason="hybrid engine: rollout sleeps while the actor trains",
                           overrides=["trainer.v1.trainer_mode=sync", "actor_rollout_ref.hybrid_engine=True"])
    return MoveVerdict(expressible=False, reason="distillation teachers always get their own pool (teacher_pool); "
                       "verl 0.9.1 cannot colocate them with training")


def _why_not(role: str, to: str) -> str:
    if role == "actor":
        return ("the actor defines global_pool (trainer.n_gpus_per_node x trainer.nnodes); resize that pool or move "
                "the other roles instead")
    if role in ("ref", "critic"):
        return (f"verl 0.9.1 puts the {role} on the training GPUs (global_pool) in its code, not in a key "
                "(trainer/ppo/v1/trainer_base.py, _init_resource_pool_mgr); another pool needs your own trainer class "
                "(a PPOTrainer subclass registered as a trainer mode)")
    return f"verl 0.9.1 has no way to run the {role} on {to}"


def check_pool_shape(counts_per_node: list[int]) -> MoveVerdict:
    """A pool is ``[per_node] * nnodes``: the same number of GPUs on every node it uses."""
    used = [c for c in counts_per_node if c > 0]
    if not used:
        return MoveVerdict(expressible=False, reason="a pool needs at least one GPU")
    if len(set(used)) > 1:
        return MoveVerdict(expressible=False, reason=f"verl pools take the same number of GPUs on every node; "
                           f"this one would take {', '.join(map(str, used))}")
    return MoveVerdict(expressible=True, reason=f"{used[0]} GPU(s) on each of {len(used)} node(s)")
