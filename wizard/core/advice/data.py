"""The verdict on the user's own data: the prompt lengths of data.train_files turn "fits while samples average <= N
tokens" into "your prompts average P tokens: fits while responses average <= N - P", and give the largest
micro-batch and batch that fit on that data. Pure: the lengths come in, counted by the adapters (the model's own
tokenizer where it is a local folder, else a stated approximation)."""

from __future__ import annotations

from dataclasses import dataclass

from wizard.core.advice.state import deficit
from wizard.core.data.schema import length_stats
from wizard.core.memory.batching import SAMPLE_TOKENS
from wizard.core.memory.config import read_config
from wizard.core.memory.estimate import estimate_memory
from wizard.core.memory.report import MemoryPlan
from wizard.core.memory.verdict import DOES_NOT_FIT, FITS, FITS_WHILE_SHORT, TIGHT
from wizard.core.verl.keys import A


@dataclass(frozen=True)
class DataFit:
    rows: int
    prompt_tokens_mean: int
    prompt_tokens_p95: int
    how: str  # how the prompts were counted
    verdict: str  # in words, on this data
    responses_up_to: int | None = None  # fits while short: the longest average response that fits on this data
    largest_micro_batch: int | None = None  # actor.ppo_micro_batch_size_per_gpu, at the data's prompts
    largest_train_batch: int | None = None  # data.train_batch_size, doubling while it fits (at most the rows)

    def to_json(self) -> dict:
        return dict(self.__dict__)


def data_fit(memory: MemoryPlan, lengths: list[int], rows: int, how: str) -> DataFit | None:
    """The plan judged on prompts of these ``lengths`` (None without any)."""
    if not lengths:
        return None
    values = memory.values
    cap = int(values.get("data.max_prompt_length") or 0)
    longer = sum(1 for n in lengths if cap and n > cap)
    if cap:  # verl drops (filter_overlong_prompts) or cuts what is longer: no prompt reaches the GPU longer
        lengths = [min(n, cap) for n in lengths]
    stats = length_stats(lengths)
    mean = round(sum(lengths) / len(lengths))
    response = int(values.get("data.max_response_length") or 0)
    v = memory.verdict
    up_to = None
    if v.word in (FITS_WHILE_SHORT, DOES_NOT_FIT) and v.fits_up_to_avg_tokens:  # (past it at the stated lengths)
        up_to = v.fits_up_to_avg_tokens - mean
        text = (f"your prompts average {mean:,} tokens: fits while responses average <= {up_to:,}" if up_to > 0 else
                f"your prompts alone average {mean:,} tokens, more than the {v.fits_up_to_avg_tokens:,} a sample "
                "may average: does not fit")
    elif v.word in (FITS, TIGHT):
        text = (f"your prompts average {mean:,} tokens (p95 {stats['p95']:,}): {v.text()} even with every response "
                f"at max_response_length = {response:,}")
    elif v.word == DOES_NOT_FIT:
        text = f"your prompts average {mean:,} tokens; the plan does not fit whatever the data"
    else:
        text = f"your prompts average {mean:,} tokens ({v.text()})"
    if longer:
        text += f" ({longer:,} of {len(lengths):,} prompts read are longer than data.max_prompt_length = {cap:,})"
    sample = mean + response
    return DataFit(rows=rows, prompt_tokens_mean=mean, prompt_tokens_p95=stats["p95"], how=how, verdict=text,
                   responses_up_to=up_to, largest_micro_batch=_largest_micro(memory, sample),
                   largest_train_batch=_largest_batch(memory, sample, rows))


def _fits(memory: MemoryPlan, values: dict) -> bool:
    report, _ = estimate_memory(values, memory.models, memory.cluster)
    return report is not None and not report.unmodelled and deficit(report, values)[0] <= 0


def _largest_micro(memory: MemoryPlan, sample: int) -> int | None:
    """The largest power-of-two actor micro-batch that fits with samples of the data's average length (fixed
    micro-batches with padding removed; None with dynamic batching or when not even 1 fits)."""
    values = memory.values
    if values.get(f"{A}.use_dynamic_bsz") or memory.judged is None:
        return None
    cfg = read_config(values)
    mini = int(values.get(f"{A}.ppo_mini_batch_size") or 1) * cfg.rollout_n // max(1, cfg.world)
    best, m = None, 1
    while m <= max(1, mini):
        if not _fits(memory, {**values, f"{A}.ppo_micro_batch_size_per_gpu": m, SAMPLE_TOKENS: sample}):
            break
        best, m = m, m * 2
    return best


def _largest_batch(memory: MemoryPlan, sample: int, rows: int) -> int | None:
    """data.train_batch_size doubled while the plan still fits at the data's average sample (at most the rows and
    8 times the plan's; None when the plan's own does not fit)."""
    values = memory.values
    batch = int(values.get("data.train_batch_size") or 0)
    if not batch or memory.judged is None or not _fits(memory, {**values, SAMPLE_TOKENS: sample}):
        return None
    best = batch
    while best * 2 <= min(rows, 8 * batch) and _fits(memory, {**values, "data.train_batch_size": best * 2,
                                                               SAMPLE_TOKENS: sample}):
        best *= 2
    return best
