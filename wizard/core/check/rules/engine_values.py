"""Rollout engine settings the engine itself refuses: a memory fraction outside (0, 1] or not a number, and a vLLM
``kv_cache_memory_bytes`` its argument parser does not read.

verl checks neither (workers/config/rollout.py:185 is a plain float) and hands them on: vLLM gets every argument
through its own command-line parser (vllm_async_server.py:456-470), SGLang gets ``engine_kwargs.sglang`` as they are,
after its own arguments (async_sglang_server.py:317-340). The rollout server then fails at its start, after the
workers have loaded. The memory estimate is not made for such a value
(:func:`wizard.core.memory.engines.refused_engine_values`): it would size an engine that never starts.
"""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
from wizard.core.memory.engines import RefusedValue, refused_values, vllm_kv_bytes
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.check.rules.sections import Section, built_sections
from wizard.core.verl.keys import R

ENGINES = ("vllm", "sglang")


def _rollouts(ctx: RuleContext):
    """Each rollout verl builds, with its engine's name (the actor rollout's where it names none)."""
    default = ctx.get(f"{R}.name")
    for section in built_sections(ctx, ("RolloutConfig",)):
        name = ctx.get(f"{section.path}.name")
        name = name if name in ENGINES else default if name in (None, "???") else name
        if name in ENGINES:
            yield section, name


def _said(section: Section, r: RefusedValue, rule_id: str | None = None):
    return finding(Severity.ERROR, [r.key], f"{r.key}={r.value!r}: {r.said}", r.fix, list(r.overrides),
                   fix_auto=bool(r.overrides), rule=rule_id, stage=section.stage)


@rule("rollout.memory_fraction_out_of_range", None, also={"rollout.memory_fraction_not_a_fraction": None})
def memory_fraction_out_of_range(ctx: RuleContext):
    """The rollout's memory fraction (gpu_memory_utilization, or engine_kwargs.vllm.gpu_memory_utilization /
    engine_kwargs.sglang.mem_fraction_static, which win) outside (0, 1], or not a number: vLLM's CacheConfig refuses
    it, SGLang sizes its memory with it and fails."""
    for section, name in _rollouts(ctx):
        for r in refused_values(ctx.get, section.path, name):
            if r.kind == "fraction_range":
                yield _said(section, r)
            elif r.kind == "fraction_type":
                yield _said(section, r, "rollout.memory_fraction_not_a_fraction")


@rule("rollout.kv_cache_memory_bytes", None, also={"memory.kv_cache_memory_bytes_unset": Stage.ADVICE})
def kv_cache_memory_bytes(ctx: RuleContext):
    """engine_kwargs.vllm.kv_cache_memory_bytes as vLLM's parser reads it (human_readable_int: 10G is 10 GiB, 10g
    10^10 bytes): text it does not parse, a float (verl passes '10000000000.0') or a negative size stop vLLM at its
    start; 0 is vLLM's 'unset' (the KV cache is sized from gpu_memory_utilization)."""
    for section, name in _rollouts(ctx):
        if name != "vllm":
            continue
        for r in refused_values(ctx.get, section.path, name):
            if r.kind == "kv_bytes":
                yield _said(section, r)
        kwargs = ctx.get(f"{section.path}.engine_kwargs.vllm")
        value = kwargs.get("kv_cache_memory_bytes") if isinstance(kwargs, dict) else None
        if value is not None and vllm_kv_bytes(value)[0] == 0:
            key = f"{section.path}.engine_kwargs.vllm.kv_cache_memory_bytes"
            util = ctx.get(f"{section.path}.gpu_memory_utilization")
            yield finding(Severity.INFO, [key],
                          f"{key}={value!r} pins no KV cache: vLLM reads 0 as unset and sizes the KV cache from "
                          f"gpu_memory_utilization={util} (as the memory estimate does)",
                          "Remove it, or give the KV cache's size per GPU, e.g. 10G (10 GiB; 10g is 10^10 bytes)",
                          rule="memory.kv_cache_memory_bytes_unset", fix_auto=False)
