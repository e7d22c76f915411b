"""Ray and GPU resources: what the cluster must offer for verl to start (and not hang)."""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding

TQ_UNITS = "transfer_queue.backend.SimpleStorage.num_data_storage_units"


def transfer_queue_cpus(units: int) -> int:
    """Logical CPUs the V1 trainer needs before the first step: TaskRunner + TQ controller + storage units."""
    return 1 + 1 + units


@rule("ray.transfer_queue_cpus", Stage.RUNTIME)
def ray_cpus(ctx: RuleContext):
    """TransferQueue keeps 1 + num_data_storage_units one-CPU actors; with fewer Ray CPUs the run hangs silently."""
    units = ctx.int(TQ_UNITS) or 8
    need = transfer_queue_cpus(units)
    live = ctx.gpus.cpus if ctx.gpus is not None else None
    if live is not None:
        if live < need:
            yield finding(
                Severity.ERROR,
                [TQ_UNITS],
                f"The Ray cluster has {live:g} CPUs but verl's V1 trainer needs at least {need} (TaskRunner 1 + "
                f"TransferQueue controller 1 + {units} storage units); the run hangs silently after the config dump",
                f"Lower {TQ_UNITS} to {max(1, int(live) - 2)}, or start Ray with more --num-cpus",
                [f"{TQ_UNITS}={max(1, int(live) - 2)}"] if live >= 3 else [],
            )
        return
    if ctx.get("ray_kwargs.ray_init.address") not in (None,):
        return  # an existing cluster: its CPUs are what they are (check it with --ray-address)
    cpus = ctx.int("ray_kwargs.ray_init.num_cpus")
    if cpus is not None and cpus < need:
        yield finding(
            Severity.ERROR,
            ["ray_kwargs.ray_init.num_cpus", TQ_UNITS],
            f"Ray gets {cpus} CPUs but verl's V1 trainer needs at least {need} (TaskRunner 1 + TransferQueue "
            f"controller 1 + {units} storage units); the run hangs silently right after printing the config",
            f"Set ray_kwargs.ray_init.num_cpus={max(need, 16)}, or lower {TQ_UNITS}",
            [f"ray_kwargs.ray_init.num_cpus={max(need, 16)}"],
        )


def desired_gpus(ctx: RuleContext) -> tuple[int, list[str]] | None:
    """GPUs verl asks Ray for (trainer_base._init_resource_pool_mgr), with the parts."""
    n_gpus = ctx.n_gpus
    if n_gpus is None:
        return None
    total, parts = n_gpus, [f"{n_gpus} for training and rollout"]
    if ctx.get("reward.reward_model.enable") and ctx.get("reward.reward_model.enable_resource_pool"):
        per, nodes = ctx.int("reward.reward_model.n_gpus_per_node"), ctx.int("reward.reward_model.nnodes")
        if per and nodes:
            total += per * nodes
            parts.append(f"{per * nodes} for the reward model pool")
    if ctx.get("distillation.enabled"):
        per, nodes = ctx.int("distillation.n_gpus_per_node"), ctx.int("distillation.nnodes")
        if per and nodes:
            total += per * nodes
            parts.append(f"{per * nodes} for distillation teachers")
    return total, parts


@rule("gpus.available", Stage.RUNTIME, also={"gpus.per_node": Stage.RUNTIME})
def gpus_available(ctx: RuleContext):
    """single_controller/ray/base.py: Ray must have every GPU the pools ask for."""
    if ctx.gpus is None:
        return
    desired = desired_gpus(ctx)
    if desired is None:
        return
    total, parts = desired
    have = ctx.gpus
    if total > have.total:
        default = (f"; trainer.n_gpus_per_node={ctx.get('trainer.n_gpus_per_node')} is verl's default, which the "
                   "GPUs given do not change" if ctx.untouched("trainer.n_gpus_per_node") else "")
        yield finding(
            Severity.ERROR,
            ["trainer.n_gpus_per_node", "trainer.nnodes"],
            f"The config asks for {total} GPUs ({', '.join(parts)}{default}) but the cluster has {have.total} ({have}); "
            f"verl fails after Ray starts with: Total available GPUs {have.total} is less than total desired GPUs "
            f"{total}",
            f"Set trainer.n_gpus_per_node={min(have.gpus_per_node, ctx.int('trainer.n_gpus_per_node') or have.gpus_per_node)} "
            f"trainer.nnodes={have.nodes}",
            [f"trainer.n_gpus_per_node={have.gpus_per_node}", f"trainer.nnodes={have.nodes}"],
        )
    per_node = ctx.int("trainer.n_gpus_per_node")
    if per_node and per_node > have.gpus_per_node and total <= have.total:
        yield finding(
            Severity.ERROR,
            ["trainer.n_gpus_per_node"],
            f"trainer.n_gpus_per_node={per_node} but the nodes have {have.gpus_per_node} GPUs each; Ray cannot "
            "place a bundle that large and the run waits for resources forever",
            f"Set trainer.n_gpus_per_node={have.gpus_per_node}",
            [f"trainer.n_gpus_per_node={have.gpus_per_node}"], rule="gpus.per_node",
        )


@rule("gpus.count", Stage.STARTUP)
def gpu_count(ctx: RuleContext):
    """A negative GPU or node count: verl's pre-flight arithmetic may pass (x % -8 == 0), but the resource pool
    ``[n_gpus_per_node] * nnodes`` holds no GPU, and the workers never start. (0 GPUs: batch.no_gpus, at pre-flight.)"""
    per, nodes = ctx.int("trainer.n_gpus_per_node"), ctx.int("trainer.nnodes")
    if per is None or nodes is None or (per >= 0 and nodes >= 0) or per * nodes == 0:
        return
    yield finding(
        Severity.ERROR, ["trainer.n_gpus_per_node", "trainer.nnodes"],
        f"trainer.n_gpus_per_node={per}, trainer.nnodes={nodes}: a count below 0 gives verl's resource pool no "
        "GPU, and its workers fail when they start",
        "Give the GPUs per node and the nodes, each 1 or more", ["trainer.n_gpus_per_node=1", "trainer.nnodes=1"],
        fix_auto=False)
