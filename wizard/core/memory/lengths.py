"""The mean lengths a plan is judged at (not verl keys: what the user states, or the train file holds), read by the
memory verdict and the step time alike. Pure."""

from __future__ import annotations

from collections.abc import Mapping

# Not verl keys: what the run's data and responses are expected to hold (means, tokens). Unset: the maximum.
PROMPT_TOKENS = "wizard.prompt_tokens"
RESPONSE_TOKENS = "wizard.response_tokens"


def int_value(values: Mapping, key: str, default: int) -> int:
    """The key's value where it is a positive int, else ``default``."""
    v = values.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else default


def mean_lengths(values: Mapping, cfg) -> tuple[int, int]:
    """(prompt, response): the mean tokens a plan is judged at, the train file's prompts (PROMPT_TOKENS) and the
    responses the user stated (RESPONSE_TOKENS) where given, else data.max_prompt_length and
    data.max_response_length as the memory estimate reads them (``cfg``: its read_config); never past those."""
    prompt_max, response_max = cfg.prompt_tokens, cfg.seq_tokens - cfg.prompt_tokens
    return (min(prompt_max, int_value(values, PROMPT_TOKENS, prompt_max)),
            min(response_max, int_value(values, RESPONSE_TOKENS, response_max)))


def stated_sample(values: Mapping, cfg) -> tuple[int | None, str]:
    """(the mean sample the user stated, in tokens, or None; the words saying it): the mean response given to
    ``plan --response-tokens`` (or a smoke run's) with the prompts the step time takes (:func:`mean_lengths`)."""
    if not int_value(values, RESPONSE_TOKENS, 0):  # none stated (or not a length)
        return None, ""
    prompt, response = mean_lengths(values, cfg)
    how = (f"prompts averaging {prompt:,}" if PROMPT_TOKENS in values else
           f"prompts up to data.max_prompt_length = {prompt:,}")
    sample = prompt + response
    return sample, f"{how} and responses averaging {response:,} tokens: samples of {sample:,}"
