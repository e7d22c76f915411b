"""The step's counts as a whole: responses per prompt, prompts per step and per mini-batch below one, and a step
larger than any run generates: values verl's pre-flight lets through and the run meets at its first step."""

from __future__ import annotations

from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.check.rules.names import GROUP_ESTIMATORS, GROUP_N
from wizard.core.findings import Severity, Stage
from wizard.core.memory.batching import sizes_below_one
from wizard.core.verl.keys import A, R

TBS = "data.train_batch_size"
N = f"{R}.n"
ABSURD_RESPONSES = 10**8  # responses in one step: the largest verl recipes generate ~10^5 (1024 prompts x 64)


@rule("batch.not_positive", Stage.RUNTIME)
def not_positive(ctx: RuleContext):
    """A step or mini-batch of no prompts (0 or negative): verl's pre-flight lets some through (0 with a mini-batch
    of 0, or negative mini-batches: x % -8 == 0), and the run fails when the trainer builds its dataloader or at the
    first update, whose batch multiple lcm(DP, mini x n) is 0."""
    bad = sizes_below_one(ctx, ctx.need_critic)  # ctx reads as the values do (.get)
    if not bad:
        return
    key, value = bad[0]
    good = max(1, ctx.int(TBS) or 0) if key != TBS else max(ctx.int(f"{A}.ppo_mini_batch_size") or 0, 16)
    yield finding(
        Severity.ERROR, [k for k, _ in bad],
        ", ".join(f"{k}={v}" for k, v in bad) + ": a size in prompts must be 1 or more; verl's pre-flight does "
        "not always stop it, and the run fails when the trainer builds its dataloader or at the first update",
        f"Set {key}={good}", [f"{key}={good}"],
    )


@rule("batch.no_responses", Stage.RUNTIME)
def no_responses(ctx: RuleContext):
    """rollout.n below 1: agent_loop_tq.py:123 spawns ``range(n)`` agent loops per prompt, so no response is sampled and
    the step has nothing to score or train on; verl's pre-flight and config classes accept it."""
    n = ctx.int(N)
    if n is None or n >= 1:
        return
    group = ctx.get("algorithm.adv_estimator") in GROUP_ESTIMATORS
    good = GROUP_N if group else 1
    yield finding(
        Severity.ERROR, [N],
        f"{N}={n} samples no response per prompt (verl's agent loop starts range({n}) = no requests): the step has "
        "nothing to score or train on; verl's pre-flight accepts it and the run fails or idles at the first step",
        f"Sample {'several responses' if group else 'one response'} per prompt: {N}={good}"
        + (" (the estimator compares the responses to one prompt)" if group else ""),
        [f"{N}={good}"],
    )


@rule("batch.absurd_size", Stage.RUNTIME)
def absurd_size(ctx: RuleContext):
    """A step of more responses than any run generates: memory is planned per micro batch, so the plan alone would
    say it fits; most likely a typo."""
    tbs, n = ctx.int(TBS), ctx.int(N)
    if tbs is None or n is None or tbs < 1 or n < 1 or tbs * n <= ABSURD_RESPONSES:
        return
    yield finding(
        Severity.WARNING, [TBS, N],
        f"{TBS} x {N} = {tbs:,} x {n:,} = {tbs * n:.3g} responses to generate per step, beyond any run (verl's "
        f"largest recipes generate about 10^5); no dataset holds {tbs:,} prompts, and verl's dataloader drops an "
        "incomplete last batch, so a smaller one gives no step at all. The memory plan is per micro batch: it "
        "fitting says nothing about this",
        f"Set the prompts per step and the responses per prompt you meant (e.g. {TBS}=1024 {N}=8)", fix_auto=False)
