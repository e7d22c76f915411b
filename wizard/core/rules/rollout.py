"""Rollout engine settings verl only checks when workers start (RolloutConfig, engine_workers)."""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
from wizard.core.rules import rule
from wizard.core.rules.context import Context, choices, finding

R = "actor_rollout_ref.rollout"
ENGINES = ("vllm", "sglang", "trtllm")


@rule("rollout.name", Stage.STARTUP)
def rollout_name(ctx: Context):
    """rollout.name has no default (???) and must name a registered engine."""
    if ctx.missing(f"{R}.name"):
        yield finding(
            "rollout.name",
            Severity.ERROR,
            Stage.STARTUP,
            [f"{R}.name"],
            "actor_rollout_ref.rollout.name is not set (verl has no default); verl's pre-flight passes, then the "
            "actor workers die with: Missing mandatory value: actor_rollout_ref.rollout.name",
            f"Set {R}.name=vllm (or sglang)",
            [f"{R}.name=vllm"],
            fix_auto=False,
        )
        return
    name = ctx.get(f"{R}.name")
    if name not in ENGINES:
        hint = " (the HF rollout was removed in verl 0.9)" if name == "hf" else ""
        yield finding(
            "rollout.engine",
            Severity.ERROR,
            Stage.STARTUP,
            [f"{R}.name"],
            f"Rollout {name} is not an engine verl 0.9.1 has{hint}; workers die at startup "
            f"with: Rollout {name} with mode async not found",
            "One of: " + choices(ENGINES),
            [f"{R}.name=vllm"],
            fix_auto=False,
        )


@rule("rollout.mode", Stage.STARTUP)
def rollout_mode(ctx: Context):
    """RolloutConfig.__post_init__: mode 'sync' was removed."""
    if ctx.get(f"{R}.mode") == "sync":
        yield finding(
            "rollout.mode",
            Severity.ERROR,
            Stage.STARTUP,
            [f"{R}.mode"],
            "Rollout mode 'sync' has been removed. Please set `actor_rollout_ref.rollout.mode=async` or remove the "
            "mode setting entirely.",
            f"Set {R}.mode=async",
            [f"{R}.mode=async"],
        )


@rule("rollout.pipeline_parallel", Stage.STARTUP)
def rollout_pp(ctx: Context):
    """RolloutConfig.__post_init__: no engine implements rollout pipeline parallelism."""
    pp = ctx.int(f"{R}.pipeline_model_parallel_size")
    name = ctx.get(f"{R}.name")
    if pp is not None and pp > 1 and name in ENGINES:
        yield finding(
            "rollout.pipeline_parallel",
            Severity.ERROR,
            Stage.STARTUP,
            [f"{R}.pipeline_model_parallel_size"],
            f"Current rollout self.name={name!r} not implemented pipeline_model_parallel_size > 1 yet "
            f"(pipeline_model_parallel_size={pp})",
            f"Set {R}.pipeline_model_parallel_size=1",
            [f"{R}.pipeline_model_parallel_size=1"],
        )


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@rule("rollout.world_size", Stage.STARTUP)
def rollout_world_size(ctx: Context):
    """engine_workers.py:655: TP x DP x PP of a rollout replica must divide the actor's GPUs."""
    tp, dp, pp = (ctx.int(f"{R}.{k}") for k in ("tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size"))
    n_gpus = ctx.n_gpus
    if None in (tp, dp, pp) or not n_gpus or tp < 1 or dp < 1 or pp < 1:
        return
    replica = tp * dp * pp
    if n_gpus % replica != 0:
        fits = [d for d in _divisors(n_gpus) if d <= tp] or [1]
        yield finding(
            "rollout.world_size",
            Severity.ERROR,
            Stage.STARTUP,
            [f"{R}.tensor_model_parallel_size", "trainer.n_gpus_per_node", "trainer.nnodes"],
            f"A rollout replica needs TP x DP x PP = {tp} x {dp} x {pp} = {replica} GPUs, which does not divide the "
            f"{n_gpus} training GPUs; workers die at startup with: rollout world_size: {n_gpus} is not divisible by "
            f"infer_world_size: {replica}",
            f"Set {R}.tensor_model_parallel_size={fits[-1]}",
            [f"{R}.tensor_model_parallel_size={fits[-1]}"],
        )
        return
    per_node = ctx.int("trainer.n_gpus_per_node")
    if per_node and replica > per_node and replica % per_node != 0:
        yield finding(
            "rollout.replica_nodes",
            Severity.ERROR,
            Stage.STARTUP,
            [f"{R}.tensor_model_parallel_size", "trainer.n_gpus_per_node"],
            f"A rollout replica of {replica} GPUs spans nodes of {per_node} GPUs unevenly; verl stops with: "
            f"world_size {replica} must be divisible by gpus_per_node {per_node}",
            f"Use a TP x DP x PP that is a multiple of {per_node} or at most {per_node}",
        )
