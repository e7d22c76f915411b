"""The reward bench's verdict in one plain sentence: can this reward teach the model?

The bench's findings (core.reward_bench.judge) say what is wrong in detail, with rows and counts. A
newcomer first needs the answer to one question: does the right answer score higher than a wrong one?
This module turns the findings and the summary into that sentence; it adds no rule of its own, and the
GUI and the CLI can both print it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from wizard.core.findings import Finding
from wizard.core.reward.bench import BenchSummary, Trial

# The findings that decide the verdict, worst first (their rule ids are core.reward_bench.judge's).
BLOCKING = ("reward.timeout", "reward.exception", "reward.non_numeric", "reward.nan", "reward.constant")


@dataclass(frozen=True)
class Verdict:
    """``level``: good, warning, error or none (nothing was scored); ``text``: one or two sentences."""

    level: str
    text: str


def fmt_score(value: float | None) -> str:
    """A score as people read one: 1.0 and 0.0 (a reward, not a count), 0.333 for a third."""
    if value is None:
        return "nothing"
    if not math.isfinite(value):
        return str(value)
    return f"{value:.1f}" if float(value).is_integer() else f"{value:.3g}"


def _first_sentence(message: str) -> str:
    head = message.split("\n", 1)[0]
    return head.split("; ", 1)[0]


def _blocking(rule: str, who: str, trials: list[Trial], summary: BenchSummary, finding: Finding) -> str:
    total = len(trials)
    if rule == "reward.timeout":
        return f"{who} did not answer in time ({_first_sentence(finding.message).split(': ', 1)[-1]}): " \
               "verl's reward workers would hang the same way."
    if rule == "reward.exception":
        errors = [t for t in trials if t.error]
        first = errors[0].error if errors else "an exception"
        return f"{who} raised {first} on {len(errors)} of {total} calls: in training this stops the run. " \
               "The traceback of your code is below."
    if rule == "reward.non_numeric":
        bad = [t for t in trials if not t.error and t.score is None]
        raw = bad[0].raw if bad else "something else"
        return f"{who} returned {raw} instead of a number on {len(bad)} of {total} calls: verl needs a float " \
               "(or a dict with a numeric 'score') on every path."
    if rule == "reward.nan":
        bad = [t for t in trials if t.score is not None and not math.isfinite(t.score)]
        return f"{who} returned {bad[0].score if bad else 'NaN'} on {len(bad)} of {total} calls: one NaN makes " \
               "the advantages and the loss NaN."
    return f"{who} gives every response the same score ({fmt_score(summary.min)}), right or wrong: the advantages " \
           "are all 0 and the model learns nothing."


def _format_note(trials: list[Trial], summary: BenchSummary) -> str:
    """When the bare answer scores below the formatted one, say what the scorer looks for."""
    by = summary.by_candidate
    formatted, bare = by.get("ground_truth_formatted", {}).get("mean"), by.get("ground_truth", {}).get("mean")
    if formatted is None or bare is None or bare >= formatted:
        return ""
    example = next((t.text for t in trials if t.candidate == "ground_truth_formatted"), "")
    last = example.strip().splitlines()[-1] if example.strip() else example
    return f" The answer counts only in the form the scorer extracts (like {last!r}); the bare answer " \
           f"scores {fmt_score(bare)}, so the prompt must ask for that form."


def verdict(trials: list[Trial], summary: BenchSummary, findings: list[Finding],
            who: str = "Your reward") -> Verdict:
    """One verdict for the bench: the worst blocking finding, else whether right beats wrong."""
    rules = {f.rule: f for f in findings}
    if not trials:
        reason = next((f for f in findings), None)
        text = "Nothing was scored" + (f": {_first_sentence(reason.message)}." if reason else ".")
        return Verdict("none", text)
    for rule in BLOCKING:
        if rule in rules:
            return Verdict("error", _blocking(rule, who, trials, summary, rules[rule]))
    by = summary.by_candidate
    best = "ground_truth_formatted" if "ground_truth_formatted" in by else "ground_truth"
    right, wrong = by.get(best, {}).get("mean"), by.get("wrong", {}).get("mean")
    slow = rules.get("reward.slow")
    tail = f" But it is slow: {summary.mean_seconds * 1000:.0f} ms per call on average." if slow else ""
    if "reward.no_signal" in rules:
        where = _first_sentence(rules["reward.no_signal"].message).removeprefix("on ").split(" the correct")[0]
        return Verdict("warning", f"On {where} the right answer scores no higher than an empty or wrong one "
                                  f"under {who[0].lower() + who[1:]}: those rows cannot teach.{tail}")
    text = f"{who} gives {fmt_score(right)} to the right answer and {fmt_score(wrong)} to a wrong one: it can teach."
    return Verdict("warning" if slow else "good", text + _format_note(trials, summary) + tail)
