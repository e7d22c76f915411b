"""RolloutConfig.__post_init__ (workers/config/rollout.py:278-345) and the classes it builds: for every rollout
verl builds - the actor's, the reward model's, a distillation teacher's - parallelism, PD disaggregation, tracing.

Each fails when that rollout's config is built, at startup; the actor rollout's engine name, mode and pipeline
parallelism have their own rules in ``rollout``.
"""

from __future__ import annotations

import math

from wizard.core.findings import Severity
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.check.rules.sections import Section, built_sections, stops, unset_field

DISAGG_BACKENDS = ("nixl", "mooncake", "ascend", "mori", "fake")
MOONCAKE_PROTOCOLS = ("nvlink", "local", "rdma", "tcp")


def _bad(section: Section, keys: list[str], what: str, said: str, fix: str, overrides=(), auto=True):
    return finding(Severity.ERROR, keys, f"{what}; " + stops(section, said), fix,
                   list(overrides), fix_auto=auto, stage=section.stage)


@rule("rollout.config", None)  # the stage verl builds the section at
def rollout_config(ctx: RuleContext):
    """Expert/MoE parallelism, disaggregation and trace settings of every RolloutConfig verl builds."""
    for section in built_sections(ctx, ("RolloutConfig",)):
        found = next(iter(_parallel(ctx, section)), None) or next(iter(_disaggregation(ctx, section)), None)
        if found is None:
            found = next(iter(_trace(ctx, section)), None)
        if found is not None:
            yield found


def _parallel(ctx: RuleContext, s: Section):
    p = s.path
    name, tp, dp = ctx.get(f"{p}.name"), ctx.int(f"{p}.tensor_model_parallel_size"), ctx.int(f"{p}.data_parallel_size")
    ep, moe = ctx.get(f"{p}.expert_parallel_size"), ctx.get(f"{p}.moe_tensor_parallel_size")
    if name != "trtllm" and isinstance(ep, int) and ep > 1 and tp is not None and dp is not None and ep != tp * dp:
        yield _bad(s, [f"{p}.expert_parallel_size", f"{p}.tensor_model_parallel_size", f"{p}.data_parallel_size"],
                   f"{p}.expert_parallel_size={ep} but tensor_model_parallel_size x data_parallel_size = {tp} x {dp} = "
                   f"{tp * dp}", "expert_parallel_size must be equal to tensor_model_parallel_size * data_parallel_size",
                   f"Set {p}.expert_parallel_size={tp * dp}", [f"{p}.expert_parallel_size={tp * dp}"])
    elif isinstance(moe, int) and moe > 1 and name != "trtllm":
        yield _bad(s, [f"{p}.moe_tensor_parallel_size", f"{p}.name"],
                   f"{p}.moe_tensor_parallel_size={moe} with the {name} engine",
                   "moe_tensor_parallel_size is only supported for trtllm", f"Remove {p}.moe_tensor_parallel_size",
                   [f"~{p}.moe_tensor_parallel_size"])
    elif name == "trtllm" and isinstance(ep, int) and ep > 1 and isinstance(moe, int) and moe > 1 and tp is not None and moe * ep != tp:
        yield _bad(s, [f"{p}.moe_tensor_parallel_size", f"{p}.expert_parallel_size"],
                   f"{p}.moe_tensor_parallel_size x expert_parallel_size = {moe} x {ep} = {moe * ep}, not "
                   f"tensor_model_parallel_size={tp}",
                   f"moe_tensor_parallel_size * expert_parallel_size must equal tensor_model_parallel_size (got {moe} * "
                   f"{ep} = {moe * ep}, tensor_model_parallel_size={tp})", f"Make their product {tp}", auto=False)


def _disaggregation(ctx: RuleContext, s: Section):
    d = f"{s.path}.disaggregation"
    if unset_field(ctx, d):
        return
    value = ctx.get(d)
    if not isinstance(value, dict):
        yield _bad(s, [d], f"{d}={value!r} is not a mapping",
                   f"rollout.disaggregation must be dict, DictConfig, or DisaggregationConfig; got {type(value).__name__}.",
                   f"Remove the override of {d} (its keys are set one by one: {d}.enabled=...)")
        return
    if not value.get("enabled"):
        return
    name = ctx.get(f"{s.path}.name")
    backend, protocol = value.get("transfer_backend", "nixl"), value.get("mooncake_protocol", "nvlink")
    prefill, decode, port = value.get("prefill_replicas", 1), value.get("decode_replicas", 1), value.get("bootstrap_port")
    if backend not in DISAGG_BACKENDS:
        yield _bad(s, [f"{d}.transfer_backend"], f"{d}.transfer_backend={backend!r}",
                   f"disaggregation.transfer_backend={backend!r} not in {DISAGG_BACKENDS}", f"Set {d}.transfer_backend=nixl",
                   [f"{d}.transfer_backend=nixl"], auto=False)
    elif _num(prefill) < 1 or _num(decode) < 1:
        yield _bad(s, [f"{d}.prefill_replicas", f"{d}.decode_replicas"],
                   f"PD disaggregation with {prefill} prefill and {decode} decode replicas",
                   f"disaggregation requires >=1 prefill and >=1 decode replica (got prefill_replicas={prefill}, "
                   f"decode_replicas={decode})", "Give each side at least one replica")
    elif port is not None and not 0 < _num(port) < 65536:
        yield _bad(s, [f"{d}.bootstrap_port"], f"{d}.bootstrap_port={port}", f"bootstrap_port out of range: {port}",
                   f"Set {d}.bootstrap_port to a free port in 1-65535, or null", [f"{d}.bootstrap_port=null"])
    elif backend == "mooncake" and protocol not in MOONCAKE_PROTOCOLS:
        yield _bad(s, [f"{d}.mooncake_protocol"], f"{d}.mooncake_protocol={protocol!r}",
                   f"disaggregation.mooncake_protocol={protocol!r} not in {MOONCAKE_PROTOCOLS}",
                   f"Set {d}.mooncake_protocol=rdma (or nvlink, local, tcp)", auto=False)
    elif name not in ("sglang", "vllm"):
        yield _bad(s, [f"{d}.enabled", f"{s.path}.name"], f"PD disaggregation with the {name} engine",
                   f"rollout.disaggregation.enabled=True requires rollout.name in ('sglang', 'vllm'); got {name!r}.",
                   f"Use {s.path}.name=vllm or sglang, or {d}.enabled=false", [f"{d}.enabled=false"], auto=False)


def _num(value) -> float:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else float("nan")


def _trace(ctx: RuleContext, s: Section):
    key = f"{s.path}.trace.max_samples_per_step_per_worker"
    value = ctx.get(key)
    if isinstance(value, (int, float)) and value < 0:
        yield _bad(s, [key], f"{key}={value}",
                   "`max_samples_per_step_per_worker` must be a non-negative integer or null.",
                   f"Set {key}=null (trace every sample) or a count >= 0", [f"{key}=null"])


@rule("rollout.memory_fraction_not_a_number", None)  # the stage verl builds the section at
def memory_fraction_not_a_number(ctx: RuleContext):
    """gpu_memory_utilization=nan or inf: verl passes it on as it is; the engine cannot size its memory with it."""
    for section in built_sections(ctx, ("RolloutConfig",)):
        key = f"{section.path}.gpu_memory_utilization"
        v = ctx.get(key)
        if isinstance(v, float) and not math.isfinite(v):
            yield finding(Severity.ERROR, [key],
                          f"{key}={v} is not a fraction of the GPU's memory; verl hands it to the rollout engine "
                          "as it is, and vLLM's CacheConfig refuses anything outside 0 < gpu_memory_utilization <= 1 "
                          "when the engine starts", f"Set {key}=0.5 (verl's default) or the fraction you meant",
                          [f"{key}=0.5"], fix_auto=False, stage=section.stage)
