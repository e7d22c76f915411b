"""What the rollout servers check when they start (workers/rollout/llm_server.py, vllm_rollout/vllm_async_server.py):
metrics that need vLLM's stats, data-parallel vLLM on a node, quantization names, the delta_sharded weight sync.
"""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.verl.keys import R

QUANTIZATIONS = ("fp8", "torchao", "ascend")  # vllm_async_server.py:1240
DELTA_BACKEND = "verl_delta_ipc"  # vllm_rollout/delta_weight_transfer.py:52


def _err(keys: list[str], message: str, fix: str, overrides=(), auto=True):
    return finding(Severity.ERROR, keys, message, fix, list(overrides), fix_auto=auto)


@rule("rollout.servers", Stage.STARTUP)
def servers(ctx: RuleContext):
    """LLMServerManager (llm_server.py:491) and vLLMHttpServer (vllm_async_server.py:385, 1142-1242)."""
    logger = ctx.get("trainer.logger")
    insight = "rl_insight" in ([logger] if isinstance(logger, str) else logger if isinstance(logger, list) else [])
    if ctx.get(f"{R}.disable_log_stats") and (ctx.get(f"{R}.prometheus.enable") or insight):
        what = f"{R}.prometheus.enable=true" if ctx.get(f"{R}.prometheus.enable") else "trainer.logger has rl_insight"
        yield _err([f"{R}.disable_log_stats"], f"{what} reads the rollout servers' statistics, but "
                   f"{R}.disable_log_stats=true turns them off; once the servers are up verl stops with: Metrics "
                   "monitoring requires disable_log_stats=False, but it is currently True.",
                   f"Set {R}.disable_log_stats=false", [f"{R}.disable_log_stats=false"])
    if ctx.get(f"{R}.name") != "vllm":
        return
    yield from _vllm(ctx)


def _vllm(ctx: RuleContext):
    tp, dp, pp = (ctx.int(f"{R}.{k}") for k in ("tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size"))
    per_node = ctx.int("trainer.n_gpus_per_node")
    if None not in (tp, dp, pp, per_node) and dp > 1 and tp > 0 and min(per_node, tp * dp * pp) % tp:
        yield _err([f"{R}.tensor_model_parallel_size", f"{R}.data_parallel_size", "trainer.n_gpus_per_node"],
                   f"Data-parallel vLLM (data_parallel_size={dp}) places TP groups of {tp} GPUs on nodes of "
                   f"{per_node}; vLLM's server asserts: gpus_per_node should be divisible by tensor_model_parallel_size",
                   f"Use a {R}.tensor_model_parallel_size that divides {per_node}", auto=False)
    quantization = ctx.get(f"{R}.quantization")
    qat = ctx.get(f"{R}.qat")
    if quantization is not None and not (isinstance(qat, dict) and qat.get("enable")) and quantization not in QUANTIZATIONS:
        yield _err([f"{R}.quantization"], f"Currently only support {list(QUANTIZATIONS)} quantization, got: "
                   f"{quantization} (vLLM's server stops at startup)", f"Set {R}.quantization=fp8, or null",
                   [f"{R}.quantization=null"], auto=False)
    if ctx.get(f"{R}.checkpoint_engine.backend") == "delta_sharded":
        yield from _delta(ctx, dp)


def _delta(ctx: RuleContext, dp):
    """vllm_async_server.py:1142-1194: the delta_sharded weight sync maps verl's workers onto vLLM's one to one."""
    kwargs = ctx.get(f"{R}.engine_kwargs.vllm") or {}
    delta = ctx.get(f"{R}.checkpoint_engine.engine_kwargs.delta_sharded") or {}
    problems = []
    if _int(delta.get("verify_every", 0)) > 0:
        problems.append(("delta_sharded with vLLM does not support verify_every > 0",
                         f"{R}.checkpoint_engine.engine_kwargs.delta_sharded.verify_every"))
    if dp not in (None, 1) or _int(kwargs.get("data_parallel_size") or 1) > 1:
        problems.append(("delta_sharded with vLLM requires data_parallel_size=1", f"{R}.data_parallel_size"))
    if ctx.get(f"{R}.disaggregation.enabled"):
        problems.append(("delta_sharded with vLLM does not support PD disaggregation", f"{R}.disaggregation.enabled"))
    if _int(kwargs.get("pipeline_parallel_size") or 1) > 1:
        problems.append(("delta_sharded with vLLM requires pipeline_parallel_size=1", f"{R}.engine_kwargs.vllm.pipeline_parallel_size"))
    tp = kwargs.get("tensor_parallel_size")
    if tp is not None and _int(tp) != ctx.int(f"{R}.tensor_model_parallel_size"):
        problems.append(("delta_sharded with vLLM requires engine_kwargs tensor_parallel_size to match "
                         "rollout.tensor_model_parallel_size", f"{R}.engine_kwargs.vllm.tensor_parallel_size"))
    transfer = kwargs.get("weight_transfer_config")
    if transfer is not None and not isinstance(transfer, dict):
        problems.append(("weight_transfer_config must be a mapping when using delta_sharded",
                         f"{R}.engine_kwargs.vllm.weight_transfer_config"))
    elif isinstance(transfer, dict) and transfer.get("backend") not in (None, DELTA_BACKEND):
        problems.append((f"checkpoint_engine.backend='delta_sharded' requires vLLM weight transfer backend "
                         f"{DELTA_BACKEND!r}, but got {transfer.get('backend')!r}",
                         f"{R}.engine_kwargs.vllm.weight_transfer_config.backend"))
    if problems:
        said, key = problems[0]
        yield _err([key, f"{R}.checkpoint_engine.backend"], f"checkpoint_engine.backend=delta_sharded: each vLLM "
                   f"server stops at startup with: {said}", f"Change {key}, or use {R}.checkpoint_engine.backend=nccl",
                   auto=False)


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
