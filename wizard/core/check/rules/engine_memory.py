"""Engine arguments that size the rollout engine's memory (``rollout.engine_kwargs.<engine>``): what the estimate reads
of them, and a note for each one it does not read, so a verdict is never silently about another engine setup.

verl passes ``engine_kwargs.vllm`` / ``engine_kwargs.sglang`` to the engine after its own arguments, so they win
(vllm_async_server.py and async_sglang_server.py: ``args = {..., **engine_kwargs}``). The estimate reads
kv_cache_memory_bytes, gpu_memory_utilization / mem_fraction_static, the sequence and token caps and the eager flag
(:func:`wizard.core.memory.config.read_config`); the others it names here.
"""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
from wizard.core.memory.engines import read_engines
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.check.rules.memory import memory_values


@rule("memory.engine_kwargs_unread", Stage.ADVICE)
def engine_kwargs_unread(ctx: RuleContext):
    """An engine_kwargs entry that changes the engine's memory (a KV cache dtype, CPU offload, a token cap) and that
    the memory estimate does not model: said, with the key, so the verdict is read with it in mind."""
    for role, eng in read_engines(memory_values(ctx)).items():
        if not eng.unread_kwargs:
            continue
        keys = [item.split("=", 1)[0] for item in eng.unread_kwargs]
        yield finding(Severity.INFO, keys,
                      f"The memory estimate does not read {', '.join(eng.unread_kwargs)}: it sizes the {role} engine "
                      f"({eng.name}) without {'it' if len(keys) == 1 else 'them'} (a bf16 KV cache, every weight on the "
                      "GPU, the engine's own token caps), so its memory verdict may be off by what "
                      f"{'this changes' if len(keys) == 1 else 'these change'}",
                      "Check the engine's memory in its start-up log (vLLM: 'Available KV cache memory' / 'GPU KV "
                      "cache size'), or drop the entry to use the estimate as is", fix_auto=False)
