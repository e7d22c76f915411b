"""What a newcomer checks first in the generations, per sample and per step, with a one-line verdict.

Per answer: cut at the length limit, empty, looping (a repeated tail or repeated word 4-grams), switching
language (letters of another script than the prompt's). Per GRPO group (the answers to one prompt): every
answer the same text, every answer the same score (GRPO's advantage, score minus the group mean, is 0 for the
whole group: the step learns nothing from it).

The dump has no token counts (verl decodes without special tokens), so "cut" is counted by verl itself where
the step's metrics have it (``response_length/clip_ratio``: the share of responses exactly
``data.max_response_length`` tokens long): the longest answers (in characters) carry the flag, as many as verl
counted. Without the metric, tokens are estimated from characters (calibrated on ``response_length/mean`` when
known) and the verdict says so. Pure and fast: 10,000 answers in well under a second (bench/bench_samples.py).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from wizard.core.run.samples.dump import Sample, groups_of
from wizard.core.run.samples.verdict import StepVerdict, verdict_findings, verdict_line

CUT, EMPTY, LOOP, LANGUAGE, SAME_TEXT, SAME_SCORE = "cut", "empty", "loop", "language", "same text", "same score"
FLAGS = (CUT, EMPTY, LOOP, LANGUAGE, SAME_TEXT, SAME_SCORE)
FLAG_HELP = {
    CUT: "reached the length limit (data.max_response_length): the response is unfinished",
    EMPTY: "an empty response",
    LOOP: "ends in a loop, or repeats the same 4-word sequences over and over",
    LANGUAGE: "switches to another script (language) than the prompt's",
    SAME_TEXT: "the same text as another response to the same prompt",
    SAME_SCORE: "every response to this prompt scored the same: GRPO's advantage is 0 for all of them",
}
CHARS_PER_TOKEN = 3.5  # when neither verl's clip ratio nor its mean length is known (English-like text)
_SCRIPTS = {  # letters by script; Greek is left out (math writes α, π in any language)
    "Latin": r"A-Za-z\u00C0-\u024F",
    "CJK": r"\u3400-\u4DBF\u4E00-\u9FFF\uF900-\uFAFF",
    "Kana": r"\u3040-\u30FF",
    "Hangul": r"\uAC00-\uD7AF\u1100-\u11FF",
    "Cyrillic": r"\u0400-\u04FF",
    "Arabic": r"\u0600-\u06FF",
    "Hebrew": r"\u0590-\u05FF",
    "Devanagari": r"\u0900-\u097F",
    "Thai": r"\u0E00-\u0E7F",
}
_SCRIPT_RE = {name: re.compile(f"[{chars}]") for name, chars in _SCRIPTS.items()}
_WIDE = {"CJK": 3, "Kana": 3, "Hangul": 2}  # one such character carries about a word: weighed like 3 letters


@dataclass(frozen=True)
class StepHints:
    """What the step's metrics say about its responses (None where unknown)."""

    max_response_length: int | None = None  # data.max_response_length
    clip_ratio: float | None = None  # response_length/clip_ratio: verl's own count of cut responses
    mean_tokens: float | None = None  # response_length/mean


@dataclass
class InspectedStep:
    samples: list[Sample]
    flags: list[tuple[str, ...]]  # one per sample, in FLAGS order
    verdict: StepVerdict


# --- per answer ------------------------------------------------------------------------------------------

def loop_period(text: str, max_period: int = 120) -> int | None:
    """The length of the unit the answer's tail repeats (at least 4 times, 48 characters or more), or None.
    Candidate periods are where the last character occurs again (found by ``rfind``, not tried one by one)."""
    n = len(text)
    if n < 48:
        return None
    last, low = text[-1], max(0, n - 1 - max_period)
    j = text.rfind(last, low, n - 1)
    while j >= 0:
        p = n - 1 - j
        m = max(4 * p, 48)
        if m > n:
            return None
        tail = text[n - m:]
        if tail[p:] == tail[:-p] and tail.strip():
            return p
        j = text.rfind(last, low, j)
    return None


def repeated_ngrams(text: str, n: int = 4) -> float:
    """The share of the answer's word n-grams that repeat an earlier one (0 for fewer than 40 words)."""
    words = text.split()
    if len(words) < 40:
        return 0.0
    grams = list(zip(*(words[i:] for i in range(n))))
    return 1.0 - len(set(grams)) / len(grams)


def is_loop(text: str) -> bool:
    if len(text) < 48:
        return False
    tail = text[-600:].encode("utf-8", "replace")
    ratio = len(zlib.compress(tail, 1)) / len(tail)
    if ratio > 0.6:  # text that compresses this little does not repeat
        return False
    return loop_period(text) is not None or (ratio < 0.5 and repeated_ngrams(text) >= 0.5)


def script_weights(text: str) -> dict[str, int]:
    """Letters per script (wide scripts weighed as words); ASCII text is Latin without a scan."""
    if text.isascii():
        return {"Latin": sum(1 for c in text if c.isalpha())}
    out = {}
    for name, pattern in _SCRIPT_RE.items():
        count = len(pattern.findall(text))
        if count:
            out[name] = count * _WIDE.get(name, 1)
    return out


_ROLE = re.compile(r"(?:^|\n)(system|user|assistant)\s*\n")


def question_of(prompt: str) -> str:
    """The last user turn of a prompt decoded from a chat template (verl dumps "system\n…user\n…assistant\n" once
    the special tokens are gone): the language is the question's, not the role names' or the system prompt's."""
    roles = list(_ROLE.finditer(prompt))
    users = [m for m in roles if m.group(1) == "user"]
    if not users:
        return prompt
    start = users[-1].end()
    end = next((m.start() for m in roles if m.start() >= start and m.group(1) == "assistant"), len(prompt))
    return prompt[start:end]


def main_script(weights: dict[str, int]) -> str | None:
    return max(weights, key=weights.get) if weights else None


def switches_language(prompt_script: str | None, response: str) -> bool:
    """The answer's letters are mostly another script than the prompt's, or (prompt in Latin) 10 % or more
    of them are."""
    if prompt_script is None or response.isascii():
        return prompt_script not in (None, "Latin") and any(c.isalpha() for c in response[:2000])
    weights = script_weights(response)
    total = sum(weights.values())
    if total < 8:
        return False
    other = total - weights.get(prompt_script, 0)
    return main_script(weights) != prompt_script or (prompt_script == "Latin" and other >= max(8, 0.1 * total))


# --- cut at the limit ----------------------------------------------------------------------------------------

def _cut_flags(samples: Sequence[Sample], hints: StepHints) -> tuple[list[bool], bool]:
    """(cut or not per sample, counted by verl)."""
    n = len(samples)
    if hints.clip_ratio is not None and n:
        k = round(hints.clip_ratio * n)
        longest = sorted(range(n), key=lambda i: len(samples[i].response), reverse=True)[:k]
        out = [False] * n
        for i in longest:
            out[i] = True
        return out, True
    if not hints.max_response_length or not n:
        return [False] * n, False
    chars = [len(s.response) for s in samples]
    per_token = CHARS_PER_TOKEN
    if hints.mean_tokens:
        per_token = max(0.5, sum(chars) / n / hints.mean_tokens)
    limit = 0.97 * hints.max_response_length * per_token
    return [c >= limit for c in chars], False


# --- one step ------------------------------------------------------------------------------------------------

def inspect_step(samples: Sequence[Sample], hints: StepHints = StepHints()) -> InspectedStep:
    """Flags for every answer of one step, and the step's verdict."""
    samples = list(samples)
    cut, exact = _cut_flags(samples, hints)
    index = {id(s): i for i, s in enumerate(samples)}
    flags: list[list[str]] = [[CUT] if c else [] for c in cut]
    prompt_script: dict[str, str | None] = {}
    same_text_groups = same_score_groups = 0
    flat_scores: set[float] = set()
    groups = groups_of(samples)
    for group in groups.values():
        if group[0].group not in prompt_script:
            prompt_script[group[0].group] = main_script(script_weights(question_of(group[0].prompt)))
        texts = [s.response.strip() for s in group]
        scores = [s.score for s in group]
        flat = len(group) > 1 and None not in scores and len(set(scores)) == 1
        same_text_groups += len(group) > 1 and len(set(texts)) == 1
        same_score_groups += flat
        if flat:
            flat_scores.add(scores[0])
        seen: dict[str, int] = {}
        for t in texts:
            seen[t] = seen.get(t, 0) + 1
        for s, t in zip(group, texts):
            f = flags[index[id(s)]]
            _answer_flags(f, s, t, prompt_script[s.group])
            if len(group) > 1 and seen[t] > 1:
                f.append(SAME_TEXT)
            if flat:
                f.append(SAME_SCORE)
    ordered = [tuple(x for x in FLAGS if x in f) for f in flags]
    verdict = _verdict(samples, ordered, groups, exact, same_text_groups, same_score_groups, hints)
    verdict.flat_score = flat_scores.pop() if len(flat_scores) == 1 else None
    _finish(verdict)
    return InspectedStep(samples=samples, flags=ordered, verdict=verdict)


def _answer_flags(flags: list[str], s: Sample, text: str, prompt_script: str | None) -> None:
    if not text:
        flags.append(EMPTY)
        return
    if is_loop(text):
        flags.append(LOOP)
    if switches_language(prompt_script, text):
        flags.append(LANGUAGE)


def _count(flags: Sequence[tuple[str, ...]], name: str) -> int:
    return sum(1 for f in flags if name in f)


def _verdict(samples, flags, groups, exact, same_text_groups, same_score_groups, hints: StepHints) -> StepVerdict:
    scores = [s.score for s in samples if s.score is not None]
    step = samples[0].step if samples else 0
    v = StepVerdict(step=step, samples=len(samples), groups=len(groups),
                    group_size=max((len(g) for g in groups.values()), default=0), cut=_count(flags, CUT),
                    cut_exact=exact, empty=_count(flags, EMPTY), loops=_count(flags, LOOP),
                    language=_count(flags, LANGUAGE), same_text_groups=same_text_groups,
                    same_score_groups=same_score_groups, scored=len(scores),
                    mean_score=sum(scores) / len(scores) if scores else None,
                    max_response_length=hints.max_response_length)
    return v


def _finish(v: StepVerdict) -> None:
    v.line = verdict_line(v)
    v.findings = verdict_findings(v)


__all__ = ["FLAGS", "FLAG_HELP", "CUT", "EMPTY", "LOOP", "LANGUAGE", "SAME_TEXT", "SAME_SCORE", "StepHints",
           "StepVerdict", "InspectedStep", "inspect_step", "loop_period", "repeated_ngrams", "is_loop",
           "script_weights", "switches_language", "question_of"]
