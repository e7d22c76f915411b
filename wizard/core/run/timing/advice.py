"""What to change when one phase of the steady steps dominates, tied to the numbers (advice findings).

Shares are of the steady step (warm-up left out). Each finding names the phase's seconds and share and the
setting the plan has now; none is applied without asking (``fix_auto`` is False): a larger batch or memory
budget only helps where memory allows, which ``verl-wizard plan`` tells.
"""

from __future__ import annotations

from collections.abc import Sequence

from wizard.core.findings import Finding, Severity, Stage
from wizard.core.plan.convert import plan_value
from wizard.core.plan.model import Plan
from wizard.core.run.timing.steps import OTHER, Series, TimingSummary, fmt_rate, fmt_s
from wizard.core.verl.keys import ACTOR, ROLLOUT as RO

GEN_BOUND = 0.5  # generation this share of a steady step
UPDATE_BOUND = 0.4
LOGPROB_BOUND = 0.3  # old log-probs + reference together
SYNC_BOUND = 0.15
OTHER_BOUND = 0.25
IDLE_GPU = 50.0  # mean GPU utilisation (percent) under which the GPUs wait more than they work


def _f(rule: str, message: str, fix: str | None, keys: list[str], severity: Severity = Severity.INFO,
       fix_overrides: list[str] | None = None) -> Finding:
    return Finding(rule=rule, severity=severity, stage=Stage.ADVICE, keys=keys, message=message, fix=fix,
                   fix_overrides=fix_overrides or [], fix_auto=False)


def _value(plan: Plan | None, key: str):
    """The run's own value of ``key``: the plan's field, else the last override of it the plan passes through."""
    return None if plan is None else plan_value(plan, key)

def _now(plan: Plan | None, key: str, default: object = None) -> str:
    """" (now 0.4)": the run's value; verl's default only where the run's plan is known and does not set it (without
    a plan the run's value is unknown, and the default would be a guess)."""
    value = _value(plan, key)
    if value is None:
        return f" (verl's default {default})" if default is not None and plan is not None else ""
    return f" (now {str(value).lower() if isinstance(value, bool) else value})"


def _last(series: Series, key: str) -> float | None:
    points = [v for _, v in series.get(key, ()) if v == v]
    return points[-1] if points else None


def _part(s: TimingSummary, phase: str) -> str:
    return f"{phase.capitalize()} takes {100 * s.share(phase):.0f} % of a step ({fmt_s(s.phases[phase])} of {fmt_s(s.step_s)})"


def _generation(s: TimingSummary, series: Series, plan: Plan | None) -> list[Finding]:
    if s.share("generation") < GEN_BOUND:
        return []
    clip = _last(series, "response_length/clip_ratio")
    limit = _value(plan, "data.max_response_length")
    cut = (f"; {100 * clip:.0f} % of responses run to the {limit or 'length'}-token limit, and generation "
           "lasts as long as the longest response" if clip and clip >= 0.1 else "")
    rate = f" at {fmt_rate(s.gen_tokens_s)}" if s.gen_tokens_s else ""
    return [_f("timing.generation_bound", f"{_part(s, 'generation')}{rate}{cut}.",
               f"Give vLLM more room for sequences at once: raise {RO}.gpu_memory_utilization"
               f"{_now(plan, RO + '.gpu_memory_utilization', 0.5)} if the memory estimate allows, or "
               f"{RO}.tensor_model_parallel_size{_now(plan, RO + '.tensor_model_parallel_size', 2)} for a model "
               f"that fills a GPU; shorten data.max_response_length{_now(plan, 'data.max_response_length', 512)} "
               "if answers need less",
               [f"{RO}.gpu_memory_utilization", f"{RO}.tensor_model_parallel_size", "data.max_response_length"])]


def _update(s: TimingSummary, plan: Plan | None) -> list[Finding]:
    if s.share("update") < UPDATE_BOUND:
        return []
    dynamic = _value(plan, f"{ACTOR}.use_dynamic_bsz")
    rate = f" at {fmt_rate(s.update_tokens_s)}" if s.update_tokens_s else ""
    how = (f"raise {ACTOR}.ppo_max_token_len_per_gpu{_now(plan, ACTOR + '.ppo_max_token_len_per_gpu', 16384)}"
           if dynamic else
           f"turn on dynamic batching ({ACTOR}.use_dynamic_bsz=true: micro-batches packed by tokens, not padded "
           f"to the longest), or raise {ACTOR}.ppo_micro_batch_size_per_gpu"
           f"{_now(plan, ACTOR + '.ppo_micro_batch_size_per_gpu')}")
    return [_f("timing.update_bound", f"{_part(s, 'update')}{rate}.",
               f"If memory allows (the update phase in verl-wizard plan): {how}",
               [f"{ACTOR}.use_dynamic_bsz", f"{ACTOR}.ppo_micro_batch_size_per_gpu"],
               fix_overrides=[] if dynamic else [f"{ACTOR}.use_dynamic_bsz=true"])]


def _logprobs(s: TimingSummary, plan: Plan | None) -> list[Finding]:
    both = s.phases.get("log-probs", 0.0) + s.phases.get("reference", 0.0)
    if not s.step_s or both / s.step_s < LOGPROB_BOUND:
        return []
    key = f"{RO}.log_prob_micro_batch_size_per_gpu"
    return [_f("timing.logprob_bound",
               f"The log-prob passes (old policy and reference) take {100 * both / s.step_s:.0f} % of a step "
               f"({fmt_s(both)} of {fmt_s(s.step_s)}).",
               f"They only run forward: raise {key}{_now(plan, key)} and "
               f"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"
               f"{_now(plan, 'actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu')} if memory allows",
               [key, "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"])]


def _sync(s: TimingSummary, plan: Plan | None) -> list[Finding]:
    if s.share("weight sync") < SYNC_BOUND:
        return []
    offload = _value(plan, f"{ACTOR}.fsdp_config.param_offload")
    cause = ("the actor's parameters are offloaded to the CPU (param_offload=true), so each sync first copies them "
             "back" if offload else "every step the trainer sends the whole model to the rollout engine; the share "
             "is large when the rest of the step is short (a small batch) or the model is large")
    return [_f("timing.sync_bound", f"{_part(s, 'weight sync')}: {cause}.",
               "Turn parameter offload off if memory allows" if offload else
               "A larger data.train_batch_size spreads the sync over more samples",
               [f"{ACTOR}.fsdp_config.param_offload", "data.train_batch_size"])]


def _other(s: TimingSummary) -> list[Finding]:
    if s.share(OTHER) < OTHER_BOUND:
        return []
    return [_f("timing.other", f"{_part(s, OTHER)} outside the named phases (advantages, balancing the batch, "
               "checkpoints, waiting between phases).", "Checkpoints every few steps (trainer.save_freq) count here; "
               "so does a slow reward function", ["trainer.save_freq"])]


def _warmup(s: TimingSummary) -> list[Finding]:
    w = s.warmup
    if w is None or not s.step_s:
        return []
    return [_f("timing.warmup", f"Step {w.step} took {fmt_s(w.total)}, {w.total / s.step_s:.1f}× the steady "
               f"{fmt_s(s.step_s)} of step{'s' if len(s.steady) > 1 else ''} {_steps(s.steady)}: warm-up (CUDA "
               "graphs, kernel compilation, first allocations). It happens once per run: the forecast counts it once, "
               "not every step.",
               None, [])]


def _idle(s: TimingSummary) -> list[Finding]:
    if s.gpu_busy is None or s.gpu_busy >= IDLE_GPU:
        return []
    return [_f("timing.gpus_idle", f"The GPUs were busy {s.gpu_busy:.0f} % of the steady steps' time on average: "
               "they wait for the CPU, the reward or each other more than they compute.",
               "A larger batch per step (data.train_batch_size) keeps them fed; a slow reward function shows as "
               "'reward' or 'other' time", ["data.train_batch_size"])]


def _steps(steps: Sequence[int]) -> str:
    if len(steps) > 2 and steps == list(range(steps[0], steps[-1] + 1)):
        return f"{steps[0]}–{steps[-1]}"
    return ", ".join(map(str, steps))


def advise(summary: TimingSummary, series: Series, plan: Plan | None = None) -> list[Finding]:
    """The advice for a run's timing (empty before a step has finished)."""
    if not summary.steps or not summary.step_s:
        return []
    return (_warmup(summary) + _generation(summary, series, plan) + _update(summary, plan)
            + _logprobs(summary, plan) + _sync(summary, plan) + _other(summary) + _idle(summary))


__all__ = ["advise"]
