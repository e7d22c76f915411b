"""Health alarms from a run's metric series: the "loss does not go down" checklist, as Findings.

Pure: series in (``RunLog.series``: name -> [(step, value)]), alarms out. The caller passes the clock
facts (seconds since the last new step, whether the GPUs are busy) so nothing here reads time.
Each alarm names the metric, the steps and the values involved.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from wizard.core.findings import Finding, Severity, Stage

Series = Mapping[str, Sequence[tuple[int, float]]]

REWARD_KEYS = ("critic/score/mean", "critic/rewards/mean")
KL_KEYS = ("actor/kl_loss", "actor/ppo_kl", "actor/reward_kl_penalty")
GRAD_KEYS = ("actor/grad_norm", "critic/grad_norm")


@dataclass(frozen=True)
class Thresholds:
    min_steps: int = 3  # steps of evidence before a trend alarm
    kl_max: float = 0.1  # KL (kl_loss / ppo_kl) above this and rising
    length_collapse_ratio: float = 0.25  # mean response length below this fraction of its peak
    length_collapse_min_peak: float = 8.0  # ...when the peak was at least this many tokens
    clip_ratio_max: float = 0.5  # over half the responses cut at max_response_length
    entropy_floor: float = 0.05  # entropy below this...
    entropy_drop_ratio: float = 0.1  # ...and below this fraction of its first value
    stall_minutes: float = 15.0
    gcs_failures: int = 3  # failed connections to Ray's head before the alarm (about 15 s to a minute)


def _alarm(rule: str, message: str, fix: str, keys: list[str], severity: Severity = Severity.WARNING) -> Finding:
    return Finding(rule=rule, severity=severity, stage=Stage.RUNTIME, keys=keys, message=message, fix=fix, fix_auto=False)


def _train(points: Sequence[tuple[int, float]]) -> list[tuple[int, float]]:
    return [(s, v) for s, v in points if s >= 1]  # step 0 is the validation before training


def _first(series: Series, keys: Sequence[str]) -> tuple[str, list[tuple[int, float]]] | None:
    for key in keys:
        points = _train(series.get(key, ()))
        if points:
            return key, points
    return None


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def check_reward(series: Series, t: Thresholds) -> list[Finding]:
    got = _first(series, REWARD_KEYS)
    if not got:
        return []
    key, points = got
    nan_steps = [s for s, v in points if math.isnan(v)]
    if nan_steps:
        return [_alarm("health.reward_nan", f"{key} is NaN at step(s) {', '.join(map(str, nan_steps[:5]))}: the reward "
                       "function returned NaN or None for some responses.",
                       "Make the reward function return a float for every response (0.0 when it cannot score); check "
                       "reward.custom_reward_function.path and the data_source of the rows", [key], Severity.ERROR)]
    if len(points) >= t.min_steps and all(v == 0 for _, v in points):
        return [_alarm("health.reward_zero", f"{key} has been 0 for all {len(points)} steps "
                       f"({points[0][0]}-{points[-1][0]}): no response has earned any reward yet.",
                       "Check that the reward matches the data (data_source selects verl's scorer; GSM8K expects "
                       "'#### <answer>'), that max_response_length leaves room for an answer, and the prompt asks for "
                       "the format the scorer parses", [key])]
    return []


def check_kl(series: Series, t: Thresholds) -> list[Finding]:
    got = _first(series, KL_KEYS)
    if not got:
        return []
    key, points = got
    values = [v for _, v in points if not math.isnan(v)]
    if len(values) < t.min_steps:
        return []
    recent = values[-t.min_steps:]
    rising = all(b >= a for a, b in zip(recent, recent[1:])) and recent[-1] > recent[0]
    if recent[-1] > t.kl_max and rising:
        return [_alarm("health.kl_rising", f"{key} = {_fmt(recent[-1])} at step {points[-1][0]} is above "
                       f"{t.kl_max} and rising (from {_fmt(recent[0])} {t.min_steps - 1} steps earlier): the policy is "
                       "drifting away from the reference.",
                       "Raise actor_rollout_ref.actor.kl_loss_coef (or algorithm.kl_ctrl.kl_coef), lower "
                       "actor_rollout_ref.actor.optim.lr, or check for a reward the policy can exploit", [key])]
    return []


def check_length(series: Series, t: Thresholds, max_response_length: int | None = None) -> list[Finding]:
    out: list[Finding] = []
    mean = _train(series.get("response_length/mean", ()))
    values = [v for _, v in mean if not math.isnan(v)]
    if len(values) >= t.min_steps:
        peak = max(values)
        last = values[-1]
        if peak >= t.length_collapse_min_peak and last < t.length_collapse_ratio * peak:
            out.append(_alarm("health.length_collapse", f"response_length/mean fell to {_fmt(last)} tokens at step "
                              f"{mean[-1][0]} from a peak of {_fmt(peak)}: the policy is collapsing to short answers.",
                              "Check the reward does not favour empty or short outputs, lower the learning rate, and "
                              "look at the generations (trainer.rollout_data_dir)", ["response_length/mean"]))
    clip = _train(series.get("response_length/clip_ratio", ()))
    hitting = None
    if clip and clip[-1][1] > t.clip_ratio_max:
        hitting = f"{_fmt(clip[-1][1] * 100)}% of the responses at step {clip[-1][0]} were cut at the length limit"
    elif values and max_response_length and values[-1] >= 0.95 * max_response_length:
        hitting = (f"response_length/mean = {_fmt(values[-1])} at step {mean[-1][0]} is at the limit "
                   f"data.max_response_length = {max_response_length}")
    if hitting:
        out.append(_alarm("health.length_at_limit", hitting + ": answers are truncated, and truncated answers rarely "
                          "score.", "Raise data.max_response_length (memory grows with it), or reward shorter answers "
                          "(an overlong penalty)", ["data.max_response_length"]))
    return out


def check_entropy(series: Series, t: Thresholds) -> list[Finding]:
    points = _train(series.get("actor/entropy", ()))
    values = [v for _, v in points if not math.isnan(v)]
    if len(values) < t.min_steps:
        return []
    first, last = values[0], values[-1]
    if last < t.entropy_floor and first > 0 and last < t.entropy_drop_ratio * first:
        return [_alarm("health.entropy_collapse", f"actor/entropy fell from {_fmt(first)} to {_fmt(last)} by step "
                       f"{points[-1][0]}: the policy has become almost deterministic and stops exploring.",
                       "Lower actor_rollout_ref.actor.optim.lr, raise rollout temperature (actor_rollout_ref.rollout."
                       "temperature=1.0), use clip_ratio_high > clip_ratio_low (clip-higher), or add "
                       "actor_rollout_ref.actor.entropy_coeff", ["actor/entropy"])]
    return []


def check_grad_norm(series: Series, t: Thresholds) -> list[Finding]:
    out = []
    for key in GRAD_KEYS:
        bad = [s for s, v in series.get(key, ()) if math.isnan(v) or math.isinf(v)]
        if bad:
            out.append(_alarm("health.grad_norm_nan", f"{key} is NaN/inf at step(s) {', '.join(map(str, bad[:5]))}: "
                              "the update diverged and the weights may now be NaN.",
                              "Lower the learning rate, keep gradient clipping on (actor_rollout_ref.actor.grad_clip), "
                              "check for a mismatch between rollout and training (high training/rollout_probs_diff_max), "
                              "and use bf16, not fp16", [key], Severity.ERROR))
    return out


def check_stall(seconds_since_step: float | None, steps_seen: int, t: Thresholds,
                gpus_busy: bool | None = None) -> list[Finding]:
    """No new step for ``stall_minutes``; ``gpus_busy`` False (from NVML) makes it a stalled rollout."""
    if seconds_since_step is None or seconds_since_step < t.stall_minutes * 60:
        return []
    minutes = seconds_since_step / 60
    since = "the last step" if steps_seen else "the start"
    if gpus_busy is False:
        return [_alarm("health.stalled", f"No new step for {minutes:.0f} minutes since {since} while the GPUs are "
                       "idle: the run is stuck (a rollout waiting forever, Ray waiting for CPUs, or a dead worker).",
                       "Check ray_kwargs.ray_init.num_cpus (verl's V1 trainer needs 10 or more), look for an actor "
                       "error in the log, and stop the run", ["ray_kwargs.ray_init.num_cpus"], Severity.ERROR)]
    return [_alarm("health.no_progress", f"No new step for {minutes:.0f} minutes since {since}.",
                   "A first step can take long (model load, vLLM start, compilation); if the GPUs are idle, the run is "
                   "stuck: check the log and ray_kwargs.ray_init.num_cpus", ["ray_kwargs.ray_init.num_cpus"])]


def check_head(gcs_failures: int, address: str | None, t: Thresholds) -> list[Finding]:
    """Ray failing again and again to reach its own head (GCS): the run will wait forever, long before any step
    is due, so it is said after a few attempts (each takes 5 s), not after ``stall_minutes``."""
    if gcs_failures < t.gcs_failures:
        return []
    where = address or "its head"
    return [_alarm("health.ray_head_unreachable",
                   f"Ray has failed {gcs_failures} times to reach its head's GCS at {where}: the run cannot start "
                   "and will wait forever.",
                   "Stop the run; check that the head's address is reachable from here (for 127.0.0.1: the loopback "
                   "interface is up), and that no other Ray is being joined (RAY_ADDRESS)",
                   ["ray_kwargs.ray_init._node_ip_address"], Severity.ERROR)]


def health(series: Series, thresholds: Thresholds | None = None, *, max_response_length: int | None = None,
           seconds_since_step: float | None = None, gpus_busy: bool | None = None, gcs_failures: int = 0,
           gcs_address: str | None = None) -> list[Finding]:
    """Every alarm the series (and the log's count of failed connections to Ray's head) raise now."""
    t = thresholds or Thresholds()
    steps_seen = max((len(v) for v in series.values()), default=0)
    return (check_head(gcs_failures, gcs_address, t) + check_reward(series, t) + check_kl(series, t)
            + check_length(series, t, max_response_length) + check_entropy(series, t) + check_grad_norm(series, t)
            + check_stall(seconds_since_step, steps_seen, t, gpus_busy))


__all__ = ["Thresholds", "health"]
