"""The one verdict of a memory estimate, in the words every output uses (``plan`` text and JSON, ``check``, the
Placement step): fits / tight / fits while samples average at most N tokens / does not fit, or no verdict with
the reason (an engine or model the estimate does not model, unknown GPU memory).

Does not fit: a GPU's peak over its memory with samples of any length, vLLM refusing to start (free memory below
gpu_memory_utilization x CUDA's total), or no room for a KV cache of one max_model_len request. Fits while short:
the only overflow is a fixed-size micro-batch of padding-free samples that fits when they average at most N
tokens. Tight: it fits with less than the estimate's error margin to spare. Pure, like the estimate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from wizard.core.hardware.cluster import Cluster
from wizard.core.memory.batching import SAMPLE_TOKENS
from wizard.core.memory.config import MemoryConfig, read_config
from wizard.core.memory.estimate import GpuEstimate, MemoryReport, estimate_memory
from wizard.core.memory.lengths import stated_sample
from wizard.core.memory.phases import PhaseName as P
from wizard.core.memory.terms import GIB
from wizard.core.models.facts import ModelFacts
from wizard.core.verl.keys import R

FITS, TIGHT, FITS_WHILE_SHORT, DOES_NOT_FIT = "fits", "tight", "fits_while_short", "does_not_fit"
DYNAMIC_KEYS = {P.ACTOR_UPDATE: "actor_rollout_ref.actor.use_dynamic_bsz", P.OLD_LOG_PROB: f"{R}.log_prob_use_dynamic_bsz",
                P.REF_LOG_PROB: "actor_rollout_ref.ref.log_prob_use_dynamic_bsz"}


@dataclass(frozen=True)
class Verdict:
    word: str | None  # FITS | TIGHT | FITS_WHILE_SHORT | DOES_NOT_FIT; None: no verdict (see reason)
    fits_up_to_avg_tokens: int | None = None  # FITS_WHILE_SHORT: the longest average sample that fits
    reason: str | None = None  # why there is no verdict
    group: GpuEstimate | None = field(default=None, repr=False)  # the fullest GPU, or the first that fails
    cause: str | None = None  # DOES_NOT_FIT: the phase over memory, "engine_start" or "kv_cache"
    # DOES_NOT_FIT at the lengths the user stated, past fits_up_to_avg_tokens: the mean sample stated (tokens)
    stated_tokens: int | None = None

    @property
    def fits(self) -> bool | None:
        """True for fits and tight, False for does not fit and fits while short, None without a verdict."""
        return None if self.word is None else self.word in (FITS, TIGHT)

    def text(self) -> str:
        """The words people read: "fits", "fits, tight", "fits while samples average <= 1,200 tokens", ..."""
        if self.word is None:
            return f"no verdict: {self.reason}" if self.reason else "no verdict"
        if self.word == FITS_WHILE_SHORT:
            # over memory where every sample runs to the configured lengths: said first, so that no one reads FITS
            return (f"over memory at the configured lengths; fits while samples average <= "
                    f"{self.fits_up_to_avg_tokens:,} tokens")
        if self.word == DOES_NOT_FIT and self.stated_tokens and self.fits_up_to_avg_tokens:
            return (f"does not fit at the stated lengths (samples of {self.stated_tokens:,} tokens, over the "
                    f"{self.fits_up_to_avg_tokens:,} that fit)")
        return {FITS: "fits", TIGHT: "fits, tight", DOES_NOT_FIT: "does not fit"}[self.word]


def memory_verdict(report: MemoryReport | None, values: Mapping, models: Mapping[str, ModelFacts],
                   cluster: Cluster | None, why: str | None = None, fitting=None) -> Verdict:
    """The verdict of ``report`` (estimated from ``values``, ``models`` and ``cluster``); ``fitting(group)`` gives the
    longest fitting average sample (default: searched here, see :func:`fitting_sample_tokens`)."""
    if report is None or why:
        return Verdict(None, reason=why or "no memory estimate")
    if report.unmodelled:
        return Verdict(None, reason=report.unmodelled)
    known = [g for g in report.groups if g.capacity_bytes]
    if not known:
        return Verdict(None, reason="the GPUs' memory is unknown")
    blocked = engine_start_blockers(report, values) or kv_blockers(report) or host_blockers(report, known[0])
    if blocked:
        group, cause = blocked[0]
        return Verdict(DOES_NOT_FIT, group=group, cause=cause)
    over = [g for g in known if g.peak.total > g.capacity_bytes]
    if over:
        fitting = fitting or (lambda g: fitting_sample_tokens(values, models, cluster, g))
        longest = [fitting(g) for g in over]
        if all(n is not None for n in longest):
            stated, _ = stated_sample(values, read_config(values))
            if stated is not None and stated > min(longest):  # what memory.gpu_oom_long calls an error
                return Verdict(DOES_NOT_FIT, fits_up_to_avg_tokens=min(longest), group=over[0],
                               cause=over[0].peak.name, stated_tokens=stated)
            return Verdict(FITS_WHILE_SHORT, fits_up_to_avg_tokens=min(longest), group=over[0], cause=over[0].peak.name)
        return Verdict(DOES_NOT_FIT, group=over[0], cause=over[0].peak.name)
    worst = max(known, key=lambda g: g.peak.total / g.capacity_bytes)
    tight = worst.peak.total > worst.capacity_bytes - report.tight_margin(worst.capacity_bytes)
    return Verdict(TIGHT if tight else FITS, group=worst)


def engine_start_blockers(report: MemoryReport, values: Mapping) -> list[tuple[GpuEstimate, str]]:
    """GPUs where vLLM refuses to start: free CUDA memory below gpu_memory_utilization x CUDA's total."""
    return [(g, "engine_start") for g in report.groups if engine_start_shortfall(report, values, g) is not None]


def engine_start_shortfall(report: MemoryReport, values: Mapping, group: GpuEstimate,
                           cfg: MemoryConfig | None = None) -> tuple[float, float, float] | None:
    """(free, wanted, trainer) bytes when vLLM on ``group`` refuses to start (gpu_worker.init_device: the trainer's
    params are already on the GPU when the engine starts), else None. ``cfg``: ``read_config(values)`` if at hand.
    SGLang has no such check: it takes mem_fraction_static of whatever is free (model_runner_kv_cache_mixin.py:61-74);
    its start fails when that leaves no KV pool (:func:`kv_blockers`) or when the graphs and activations overflow the
    rest (the load phase's total)."""
    eng = (cfg or read_config(values)).engines["rollout"]
    load = next((p for p in group.phases if p.name == P.LOAD), None)
    if eng.name == "sglang" or load is None or group.capacity_bytes is None:
        return None
    cuda_total = group.capacity_bytes - report.constants.driver_reserved  # what vLLM sizes from
    trainer = sum(t.bytes for t in load.terms if not t.key.startswith(("engine", "graphs", "driver")))
    free, want = cuda_total - trainer, eng.util * cuda_total
    return (free, want, trainer) if free < want else None


def host_blockers(report: MemoryReport, group: GpuEstimate) -> list[tuple[GpuEstimate, str]]:
    """A node whose host RAM the run needs more of than Ray lets it use (its OOM killer ends the workers at 95 %)."""
    over = [h for h in report.host if h.over]
    return [(group, "host")] if over else []


def kv_blockers(report: MemoryReport) -> list[tuple[GpuEstimate, str]]:
    """An engine without room for a KV cache, or for one request: vLLM refuses to start when one max_model_len request
    does not fit; SGLang stops with "Not enough memory. Please try to increase --mem-fraction-static." when its pool
    has no token (pool_configurator.py:51-56) and, with a pool shorter than prompt + response, caps every request at
    the pool (tp_worker.py:304-311) and cuts the responses there (scheduler.py:1883)."""
    bad = [kv for kv in report.kv.values() if kv.kv_bytes <= 0 or kv_too_short(kv)]
    group = next((g for g in report.groups if g.capacity_bytes), None)
    return [(group, "kv_cache")] if bad and group is not None else []


def kv_too_short(kv) -> bool:
    """One rank's KV cache holds less than one request: max_model_len (vLLM) or prompt + response (SGLang)."""
    held = kv.kv_bytes // max(1, kv.bytes_per_token)
    if kv.engine == "sglang":
        return held < kv.seq_tokens
    return bool(kv.max_model_len) and held < kv.max_model_len


def fitting_sample_tokens(values: Mapping, models: Mapping[str, ModelFacts], cluster: Cluster | None,
                          group: GpuEstimate) -> int | None:
    """With fixed micro-batches and padding removed, the longest average sample (prompt + response) at which the
    group still fits; None when the token count is not what overflows (or not even a quarter of the max fits)."""
    cfg = read_config(values)
    dyn = DYNAMIC_KEYS.get(group.peak.name)
    if dyn is None or values.get(dyn) or not values.get("actor_rollout_ref.model.use_remove_padding", True):
        return None

    def fits(tokens: int) -> bool:
        report, _ = estimate_memory({**values, SAMPLE_TOKENS: tokens}, models, cluster)
        same = [g for g in (report.groups if report else []) if g.pool == group.pool
                and g.capacity_bytes == group.capacity_bytes]
        return bool(same) and all(g.peak.total <= g.capacity_bytes for g in same)

    lo, hi = max(1, cfg.seq_tokens // 4), cfg.seq_tokens
    if not fits(lo):
        return None
    while hi - lo > 16:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def describe(v: Verdict) -> str:
    """One line: "fits, tight: worst GPU 74.1 of 80.0 GiB in the generation phase (+5.9 GiB spare)"."""
    g = v.group
    if v.word is None or g is None or not g.capacity_bytes:
        return v.text()
    if v.cause == "engine_start":
        return f"{v.text()}: vLLM cannot start on {g.pool} (free memory below gpu_memory_utilization x total)"
    if v.cause == "kv_cache":
        return f"{v.text()}: the rollout engine has no room for its KV cache (or for one request)"
    if v.cause == "host":
        return f"{v.text()}: a node needs more host memory than Ray lets the run use (95 %; see memory.host)"
    spare = (g.capacity_bytes - g.peak.total) / GIB
    room = f"{spare:.1f} GiB spare" if spare >= 0 else f"{-spare:.1f} GiB over"
    return (f"{v.text()}: worst GPU {g.peak.total / GIB:.1f} of {g.capacity_bytes / GIB:.1f} GiB in the "
            f"{g.peak.title} phase ({room})")
