"""Where a step's time goes, from the timers verl logs every step, and what to change when one phase dominates.

verl 0.9.1 times each phase of a training step (``marked_timer`` in ``trainer/ppo/v1/trainer_base.py``) and logs
``timing_s/<name>``: ``step`` (the whole step), ``gen`` (rollout), ``reward`` (a colocated reward model),
``old_log_prob``, ``ref``, ``values``, ``adv``, ``update_critic``, ``update_actor``, ``update_weights`` (the new
weights into the rollout engine; ``switch_*`` in the separate-async mode), ``save_checkpoint``; ``testing``
(validation) and ``dump_rollout_generations`` come after the step, outside ``timing_s/step``. It also logs
``timing_per_token_ms/gen`` (per generated token) and ``timing_per_token_ms/update_actor`` (per prompt+response
token, ``trainer/ppo/metric_utils.py``), from which the tokens per second here come.

The first step carries the warm-up (CUDA graphs, kernel compilation, first allocations): it is told apart
when it is clearly slower than the steps after it, and left out of the steady step time. Pure.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from wizard.core.findings import Finding

Series = Mapping[str, Sequence[tuple[int, float]]]

# (phase, the timers it sums); "other" is the step's time the named timers do not cover
PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("generation", ("gen",)),
    ("reward", ("reward",)),
    ("log-probs", ("old_log_prob",)),
    ("reference", ("ref",)),
    ("critic", ("values", "update_critic")),
    ("update", ("update_actor",)),
    ("weight sync", ("update_weights", "switch_to_rollout", "switch_to_trainer", "switch_wait")),
)
OTHER = "other"
PHASE_NAMES = tuple(name for name, _ in PHASES) + (OTHER,)
WARMUP_FACTOR = 1.3  # step 1 this much slower than the steady median: warm-up


@dataclass
class StepTiming:
    step: int
    total: float  # timing_s/step
    phases: dict[str, float]  # PHASE_NAMES -> seconds, "other" included
    validation: float | None = None  # timing_s/testing (after the step)
    gen_tokens_s: float | None = None  # generated tokens per second (all GPUs)
    update_tokens_s: float | None = None  # tokens per second through the actor update (all GPUs)
    gpu_busy: float | None = None  # mean GPU utilisation during the step, percent (the monitor's samples)
    warmup: bool = False

    def share(self, phase: str) -> float:
        return self.phases.get(phase, 0.0) / self.total if self.total > 0 else 0.0


@dataclass
class TimingSummary:
    steps: list[StepTiming]
    steady: list[int]  # the steps the steady figures come from (warm-up left out)
    step_s: float | None  # the median steady step
    phases: dict[str, float]  # mean steady seconds per phase
    validation_s: float | None  # mean validation time seen
    gen_tokens_s: float | None
    update_tokens_s: float | None
    gpu_busy: float | None
    n_gpus: int | None
    advice: list[Finding] = field(default_factory=list)

    @property
    def warmup(self) -> StepTiming | None:
        return next((s for s in self.steps if s.warmup), None)

    def share(self, phase: str) -> float:
        return self.phases.get(phase, 0.0) / self.step_s if self.step_s else 0.0

    def shown_phases(self) -> tuple[str, ...]:
        """The phases any step spent time in (a GRPO run has no critic, most runs no reward model)."""
        return tuple(p for p in PHASE_NAMES if any(s.phases.get(p, 0.0) >= 0.05 for s in self.steps))


def _at(series: Series, key: str) -> dict[int, float]:
    return {step: value for step, value in series.get(key, ()) if value == value}  # NaN dropped


def _rate(per_token_ms: float | None) -> float | None:
    return 1000.0 / per_token_ms if per_token_ms and per_token_ms > 0 else None


def step_timings(series: Series, gpu_busy: Mapping[int, float] | None = None) -> list[StepTiming]:
    """One entry per training step that logged ``timing_s/step`` (step 0, the initial validation, has none)."""
    totals = _at(series, "timing_s/step")
    timers = {name: _at(series, f"timing_s/{name}") for _, names in PHASES for name in names}
    testing, gen_ms, upd_ms = (_at(series, k) for k in ("timing_s/testing", "timing_per_token_ms/gen",
                                                         "timing_per_token_ms/update_actor"))
    out = []
    for step in sorted(totals):
        phases = {phase: sum(timers[n].get(step, 0.0) for n in names) for phase, names in PHASES}
        phases[OTHER] = max(0.0, totals[step] - sum(phases.values()))
        out.append(StepTiming(step=step, total=totals[step], phases=phases, validation=testing.get(step),
                              gen_tokens_s=_rate(gen_ms.get(step)), update_tokens_s=_rate(upd_ms.get(step)),
                              gpu_busy=(gpu_busy or {}).get(step)))
    return out


def _mean(values: Sequence[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return sum(got) / len(got) if got else None


def summarize(series: Series, *, gpu_busy: Mapping[int, float] | None = None,
              n_gpus: int | None = None) -> TimingSummary:
    """The steps, the warm-up told apart, and the steady figures (``advice.advise`` adds the advice)."""
    steps = step_timings(series, gpu_busy)
    if len(steps) >= 2:
        later = statistics.median(s.total for s in steps[1:])
        steps[0].warmup = steps[0].total > WARMUP_FACTOR * later
    steady = [s for s in steps if not s.warmup] or steps
    phases = {p: sum(s.phases[p] for s in steady) / len(steady) for p in PHASE_NAMES} if steady else {}
    return TimingSummary(
        steps=steps, steady=[s.step for s in steady],
        step_s=statistics.median(s.total for s in steady) if steady else None, phases=phases,
        validation_s=_mean([s.validation for s in steps]), gen_tokens_s=_mean([s.gen_tokens_s for s in steady]),
        update_tokens_s=_mean([s.update_tokens_s for s in steady]), gpu_busy=_mean([s.gpu_busy for s in steady]),
        n_gpus=n_gpus)


def fmt_s(seconds: float | None) -> str:
    """3.2 s, 48 s, 6 min 5 s, 2 h 14 min, 3 d 4 h."""
    if seconds is None:
        return "?"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if seconds < 3600:
        m, s = divmod(round(seconds), 60)
        return f"{m} min {s} s" if m < 10 else f"{minutes} min"
    h, m = divmod(minutes, 60)
    if h < 48:
        return f"{h} h {m} min"
    d, h = divmod(h, 24)
    return f"{d} d {h} h"


def fmt_rate(tokens_s: float | None) -> str:
    if tokens_s is None:
        return "?"
    return f"{tokens_s / 1000:.1f}k tokens/s" if tokens_s >= 1000 else f"{tokens_s:.0f} tokens/s"


__all__ = ["PHASES", "PHASE_NAMES", "OTHER", "StepTiming", "TimingSummary", "step_timings", "summarize", "fmt_s",
           "fmt_rate"]
