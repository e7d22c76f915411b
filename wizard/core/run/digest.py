"""A run folder digested into what the Run step's tabs, ``samples``, ``timing`` and ``report`` show: the
samples with their flags and verdicts, the timing with its advice, the forecast, the health alarms and the
triage. One place, so the GUI and the CLI say the same. Pure: a ``RunRecord`` in.
"""

from __future__ import annotations

from wizard.core.findings import Finding
from wizard.core.run.health import health
from wizard.core.run.logfacts import dataset_size, startup_seconds
from wizard.core.run.logparse import RunLog
from wizard.core.run.record import RunRecord
from wizard.core.run.samples.checks import InspectedStep, StepHints, inspect_step
from wizard.core.run.samples.dump import Sample
from wizard.core.run.timing.advice import advise
from wizard.core.run.timing.forecast import Forecast, forecast, schedule_of
from wizard.core.run.timing.steps import TimingSummary, summarize
from wizard.core.run.triage import triage


def _metric(state: RunLog, key: str, step: int) -> float | None:
    for s, v in state.series.get(key, ()):
        if s == step and v == v:
            return v
    return None


def step_hints(state: RunLog, step: int, max_response_length: int | None) -> StepHints:
    """What the step's metrics say about its responses (verl's clip ratio and mean length)."""
    return StepHints(max_response_length=max_response_length,
                     clip_ratio=_metric(state, "response_length/clip_ratio", step),
                     mean_tokens=_metric(state, "response_length/mean", step))


def max_response_length(record: RunRecord) -> int | None:
    return record.plan.data.max_response_length if record.plan is not None else None


def inspect_steps(steps: dict[int, list[Sample]], state: RunLog, max_len: int | None,
                  validation: bool = False) -> list[InspectedStep]:
    """Every dumped step, flagged and judged. Validation responses have no clip-ratio metric: their cut flag
    is estimated from their length."""
    out = []
    for step in sorted(steps):
        hints = StepHints(max_response_length=max_len) if validation else step_hints(state, step, max_len)
        out.append(inspect_step(steps[step], hints))
    return out


def timing_of(record: RunRecord) -> TimingSummary:
    """The steps' timing with the advice, GPU busy % where the monitor sampled."""
    plan = record.plan
    n_gpus = None
    if plan is not None and plan.hardware.n_gpus_per_node:
        n_gpus = (plan.hardware.nnodes or 1) * plan.hardware.n_gpus_per_node
    summary = summarize(record.state.series, gpu_busy=record.gpu_busy, n_gpus=n_gpus or record.gpu_count)
    summary.advice = advise(summary, record.state.series, plan)
    return summary


def forecast_of(record: RunRecord, summary: TimingSummary | None = None) -> Forecast | str:
    """The configured full run's time and GPU-hours, or why there is none."""
    if record.plan is None:
        return "the folder has neither run.json nor command.sh: the plan's schedule is unknown"
    summary = summary or timing_of(record)
    return forecast(summary, schedule_of(record.plan, record.plan_smoke_only),
                    dataset_size=dataset_size(record.log_tail), startup_s=startup_seconds(record.log_tail))


def health_of(record: RunRecord) -> list[Finding]:
    """The health alarms the metrics raise (reward stuck, KL rising, NaN...), as the live run raised them."""
    return health(record.state.series, max_response_length=max_response_length(record))


def triage_of(record: RunRecord) -> list[Finding]:
    """The failure's cause and fix when the run failed (run.json's exit code; else any known failure text)."""
    meta = record.meta
    failed = meta is not None and meta.ended is not None and not meta.stopped and meta.exit_code not in (0, None)
    return triage(record.log_tail, meta.exit_code if failed else None)


__all__ = ["step_hints", "inspect_steps", "timing_of", "forecast_of", "health_of", "triage_of",
           "max_response_length"]
