"""Ray and GPU resources: what the cluster must offer for verl to start (and not hang)."""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding

TQ_UNITS = "transfer_queue.backend.SimpleStorage.num_data_storage_units"


# single_controller/ray/base.py:146, :192: each GPU's bundle in a resource pool's placement group holds
# ResourcePoolManager.max_colocate_count CPUs, and a node's bundles are placed together (STRICT_PACK)
CPUS_PER_GPU = 3


def transfer_queue_cpus(units: int) -> int:
    """Logical CPUs the V1 trainer's actors hold beside the pools: TaskRunner + TQ controller + storage units."""
    return 1 + 1 + units


# workers/rollout/replica.py:202-206: a standalone rollout replica's pool (separate_async without the hybrid engine)
# is a ResourcePoolManager of its own with max_colocate_count=2
CPUS_PER_STANDALONE_GPU = 2


def ray_cpus_needed(gpus: int, units: int, standalone: int = 0) -> int:
    """Logical CPUs a Ray cluster needs for verl's V1 trainer on ``gpus`` GPUs of its pools and ``standalone`` GPUs
    of standalone rollout replicas: each GPU's bundle, and the actors."""
    return CPUS_PER_GPU * gpus + CPUS_PER_STANDALONE_GPU * standalone + transfer_queue_cpus(units)


def _parts(gpus: int, units: int, standalone: int = 0) -> str:
    rollout = (f" + {CPUS_PER_STANDALONE_GPU} with each of the {standalone} standalone rollout GPU(s)"
               if standalone else "")
    return (f"{CPUS_PER_GPU} with each of the {gpus} GPU(s) in verl's resource pools{rollout} + TaskRunner 1 + "
            f"TransferQueue controller 1 + {units} storage units")


def _standalone_gpus(ctx: RuleContext) -> int:
    """GPUs of standalone rollout replicas: separate_async without the hybrid engine (rollout.nnodes x
    rollout.n_gpus_per_node)."""
    if ctx.get("trainer.v1.trainer_mode") != "separate_async" or ctx.get("actor_rollout_ref.hybrid_engine") is not False:
        return 0
    nodes, per = ctx.int("actor_rollout_ref.rollout.nnodes"), ctx.int("actor_rollout_ref.rollout.n_gpus_per_node")
    return nodes * per if nodes and per and nodes > 0 and per > 0 else 0


@rule("ray.transfer_queue_cpus", Stage.RUNTIME, also={"ray.node_cpus": Stage.RUNTIME})
def ray_cpus(ctx: RuleContext):
    """Ray must hold CPUs for every GPU bundle of verl's resource pools (3 each, a node's together) and for the V1
    trainer's one-CPU actors (TaskRunner, TransferQueue's controller and storage units); short of either, Ray waits
    for them and the run hangs silently."""
    units = ctx.int(TQ_UNITS) or 8
    desired = desired_gpus(ctx)
    gpus = desired[0] if desired is not None and desired[0] > 0 else 0
    standalone = _standalone_gpus(ctx)
    need = ray_cpus_needed(gpus, units, standalone)
    yield from _node_cpus(ctx)
    live = ctx.gpus.cpus if ctx.gpus is not None else None
    if live is not None:
        if live < need:
            spare = int(live) - CPUS_PER_GPU * gpus - CPUS_PER_STANDALONE_GPU * standalone - 2
            yield finding(
                Severity.ERROR,
                [TQ_UNITS],
                f"The Ray cluster has {live:g} CPUs but verl's V1 trainer needs at least {need} "
                f"({_parts(gpus, units, standalone)}); "
                "Ray waits for them and the run hangs silently after the config dump",
                (f"Lower {TQ_UNITS} to {spare}, or " if spare >= 1 else "") + "start Ray with more --num-cpus",
                [f"{TQ_UNITS}={spare}"] if spare >= 1 else [],
            )
        return
    if ctx.get("ray_kwargs.ray_init.address") not in (None,):
        return  # an existing cluster: its CPUs are what they are (check it with --ray-address)
    cpus = ctx.int("ray_kwargs.ray_init.num_cpus")
    if cpus is not None and cpus < need:
        yield finding(
            Severity.ERROR,
            ["ray_kwargs.ray_init.num_cpus", TQ_UNITS],
            f"Ray gets {cpus} CPUs but verl's V1 trainer needs at least {need} ({_parts(gpus, units, standalone)}); "
            "Ray waits for "
            "them and the run hangs silently right after printing the config",
            f"Set ray_kwargs.ray_init.num_cpus={max(need, 16)}, or lower {TQ_UNITS}",
            [f"ray_kwargs.ray_init.num_cpus={max(need, 16)}"],
        )


def _node_cpus(ctx: RuleContext):
    """A node whose CPUs (known from a live Ray cluster or the cluster spec) cannot hold the bundles of the trainer's
    GPUs on it: a node's bundles are placed together, so no other node can take them."""
    per = ctx.int("trainer.n_gpus_per_node")
    nodes = ctx.cluster.nodes if ctx.cluster is not None else []
    if not per or per < 1:
        return
    fit = [n for n in nodes if n.gpu_count >= per]
    short = [n for n in fit if n.cpus is not None and n.cpus < CPUS_PER_GPU * per]
    if not short or len(fit) - len(short) >= (ctx.int("trainer.nnodes") or 1):
        return  # enough nodes hold them (gpus.per_node / gpus.available speak for GPUs)
    node = short[0]
    yield finding(
        Severity.ERROR,
        ["trainer.n_gpus_per_node"],
        f"{node.name} has {node.cpus:g} CPUs, but verl places {CPUS_PER_GPU} CPUs with each of the {per} GPUs it uses "
        f"on a node, together ({CPUS_PER_GPU * per}: single_controller/ray/base.py, STRICT_PACK); Ray waits for a "
        "node that has them and the run hangs silently",
        f"Give Ray at least {CPUS_PER_GPU * per} CPUs on each node (ray start --num-cpus), or use fewer GPUs per node",
        rule="ray.node_cpus", fix_auto=False,
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
