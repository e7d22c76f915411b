"""Plans the step time does not time because verl would not run a step of them: no response per prompt, a size
below one prompt, a dynamic-batching token budget below a sample at the lengths assumed (:func:`no_step`); a rollout
engine that does not start: a value it refuses, or no room for one request's KV cache (:func:`engine_stops`). Each
has its rule (batch.no_responses, batch.not_positive, batch.token_budget, the rollout's and memory's rules) saying why
the run fails. Pure."""

from __future__ import annotations

from collections.abc import Mapping

from wizard.core.memory.batching import sequence_parallel, sizes_below_one
from wizard.core.memory.config import NOT_NUMBERS
from wizard.core.memory.engines import refused_engine_values
from wizard.core.memory.estimate import MemoryReport
from wizard.core.memory.verdict import kv_too_short
from wizard.core.verl.keys import REF, A, R
from wizard.core.verl.roles import need_critic, need_ref


def no_step(values: Mapping, tokens: int) -> str | None:
    """Why a step of ``values`` is not timed, with samples of ``tokens`` (prompt + response, as assumed); None when
    it is."""
    n = values.get(f"{R}.n")
    if isinstance(n, int) and not isinstance(n, bool) and n < 1:  # read_config counts it as 1
        return f"rollout.n={n} samples no response: the step has nothing to train on"
    if small := sizes_below_one(values, need_critic(values)):
        key, size = small[0]
        return f"{key}={size}: a size in prompts must be 1 or more"
    sp = sequence_parallel(values, "actor")
    budgets = [(f"{A}.use_dynamic_bsz", f"{A}.ppo_max_token_len_per_gpu"),
               (f"{R}.log_prob_use_dynamic_bsz", f"{R}.log_prob_max_token_len_per_gpu")]
    if need_ref(values):
        budgets.append((f"{REF}.log_prob_use_dynamic_bsz", f"{REF}.log_prob_max_token_len_per_gpu"))
    for dynamic, budget in budgets:
        b = values.get(budget)
        if values.get(dynamic) is True and isinstance(b, int) and 0 < b * sp < tokens:
            # a micro-batch of dynamic batching takes whole sequences: at these lengths none fits
            return (f"{budget}={b} tokens is less than a sample at the lengths assumed ({tokens:,}): verl stops at "
                    "the first micro-batch")
    return None


def engine_stops(values: Mapping, report: MemoryReport | None) -> str | None:
    """Why the rollout engine would not start, so no step is timed (a step of one sequence at a time was timed where
    vLLM had no room for one request: 823 s for a 7B on a 24 GB GPU); None when it starts or nothing says otherwise."""
    if text := values.get(NOT_NUMBERS):
        return f"{text[0]} is not a number: its error is among the findings"
    if refused := refused_engine_values(values):
        return f"the rollout engine does not start with {refused[0].key}: its error is among the findings"
    kv = report.kv.get("rollout") if report is not None else None
    if kv is not None and (kv.kv_bytes <= 0 or kv_too_short(kv)):
        room = (f"{-kv.kv_bytes / 2**30:.1f} GiB short" if kv.kv_bytes < 0 else "none" if kv.kv_bytes == 0 else
                f"room for {kv.kv_bytes // max(1, kv.bytes_per_token):,} tokens")
        return (f"the rollout engine has no room for one request's KV cache ({room}): {kv.engine} stops at its start; "
                "apply an alternative that fits first")
    return None
