"""Plans the step time does not time because verl would not run a step of them: no response per prompt, a size
below one prompt, a dynamic-batching token budget below a sample at the lengths assumed. Each has its rule
(batch.no_responses, batch.not_positive, batch.token_budget) saying why the run fails. Pure."""

from __future__ import annotations

from collections.abc import Mapping

from wizard.core.memory.batching import sequence_parallel, sizes_below_one
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
