"""A step's generations in one line ("31 % of responses hit the 512-token limit; in 9 of 16 groups every
response scored the same, so GRPO's advantage is 0 there"), and as findings with a fix each.

Errors are the steps a run learns nothing from (every group scored flat, every response empty); the rest are
warnings. The thresholds are shares of the step's responses or groups, named in each message.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wizard.core.findings import Finding, Severity, Stage

CUT_WARN = 0.2  # share of responses at the length limit
EMPTY_WARN = 0.05
LOOP_WARN = 0.1
LANGUAGE_WARN = 0.1
FLAT_WARN = 0.25  # share of groups whose responses all scored the same
SAME_TEXT_WARN = 0.25
RESPONSE_LEN = "data.max_response_length"
TEMPERATURE = "actor_rollout_ref.rollout.temperature"
ROLLOUT_N = "actor_rollout_ref.rollout.n"


@dataclass
class StepVerdict:
    """The counts of one step's flags (``wizard.core.run.samples.checks``), its line and its findings."""

    step: int
    samples: int
    groups: int
    group_size: int  # the largest group: rollout.n
    cut: int
    cut_exact: bool  # counted by verl (response_length/clip_ratio), not estimated
    empty: int
    loops: int
    language: int
    same_text_groups: int  # groups whose responses are all one text
    same_score_groups: int  # groups whose responses all scored the same
    scored: int  # responses with a score
    mean_score: float | None
    max_response_length: int | None
    flat_score: float | None = None  # the one score every flat group had, when it is the same everywhere
    line: str = ""
    findings: list[Finding] = field(default_factory=list)

    @property
    def grouped(self) -> bool:
        """Several responses per prompt (GRPO and the other group estimators)."""
        return self.group_size > 1

    def to_json(self) -> dict:
        doc = {k: v for k, v in self.__dict__.items() if k != "findings"}
        doc["findings"] = [f.to_json() for f in self.findings]
        return doc


def pct(part: int, whole: int) -> str:
    share = 100 * part / whole if whole else 0.0
    return f"{share:.0f} %" if share >= 1 or share == 0 else "<1 %"


def _limit(v: StepVerdict) -> str:
    return f"the {v.max_response_length}-token limit" if v.max_response_length else "the length limit"


def verdict_line(v: StepVerdict) -> str:
    """One line with the numbers: what is wrong first, what is fine after."""
    if not v.samples:
        return f"step {v.step}: no responses in the dump"
    head = f"step {v.step}: {v.samples} responses" + (f" to {v.groups} prompts ({v.group_size} each)"
                                                     if v.grouped else "")
    parts = []
    if v.cut:
        about = "" if v.cut_exact else "about "
        parts.append(f"{about}{pct(v.cut, v.samples)} of responses hit {_limit(v)}")
    if v.grouped and v.same_score_groups:
        which = "all" if v.same_score_groups == v.groups else f"{v.same_score_groups} of"
        score = f" ({v.flat_score:g})" if v.flat_score is not None else ""
        parts.append(f"in {which} {v.groups} groups every response scored the same{score}, so GRPO's advantage "
                     "is 0 there")
    if v.grouped and v.same_text_groups:
        parts.append(f"in {v.same_text_groups} of {v.groups} groups every response is the same text")
    for count, one, many in ((v.empty, "is empty", "are empty"), (v.loops, "repeats in a loop", "repeat in a loop"),
                             (v.language, "switches language", "switch language")):
        if count:
            parts.append(f"{count} {one if count == 1 else many}")
    if not parts:
        spread = (f"scores differ within all {v.groups} groups; " if v.grouped else "")
        parts.append(spread + "no response cut, empty, looping or in another language")
    if v.mean_score is not None:
        parts.append(f"mean score {v.mean_score:.3g}")
    return head + ": " + "; ".join(parts)


def _f(rule: str, severity: Severity, message: str, fix: str, keys: list[str],
       fix_overrides: list[str] | None = None) -> Finding:
    return Finding(rule=rule, severity=severity, stage=Stage.RUNTIME, keys=keys, message=message, fix=fix,
                   fix_overrides=fix_overrides or [], fix_auto=False)


def verdict_findings(v: StepVerdict) -> list[Finding]:
    """What the counts mean for training, each with a fix; empty for a healthy step."""
    out: list[Finding] = []
    n, s = v.samples, f"Step {v.step}"
    if not n:
        return out
    if v.grouped and v.same_score_groups == v.groups:
        score = f" ({v.flat_score:g})" if v.flat_score is not None else ""
        out.append(_f("samples.no_signal", Severity.ERROR,
                      f"{s}: in all {v.groups} groups every response scored the same{score}, so GRPO's advantage is 0 "
                      "for every response: this step taught the policy nothing",
                      "Read the responses next to their ground truth (Samples tab): a reward that never matches "
                      "(answer format, data_source) scores everything alike; test it with verl-wizard data reward FILE. "
                      "A model too weak for the data does too: start from an instruct model or easier prompts. More "
                      f"responses per prompt ({ROLLOUT_N}, now {v.group_size}) make a differing score likelier",
                      ["reward.custom_reward_function.path", ROLLOUT_N]))
    elif v.grouped and v.same_score_groups >= FLAT_WARN * v.groups:
        out.append(_f("samples.flat_groups", Severity.WARNING,
                      f"{s}: in {v.same_score_groups} of {v.groups} groups ({pct(v.same_score_groups, v.groups)}) every "
                      "response scored the same, so GRPO's advantage is 0 there and those prompts teach nothing",
                      f"Normal early on for hard data; if it stays, raise {ROLLOUT_N} (now {v.group_size}) or use "
                      "prompts the model solves sometimes, not never or always", [ROLLOUT_N]))
    if v.empty == n:
        out.append(_f("samples.all_empty", Severity.ERROR, f"{s}: all {n} responses are empty",
                      "The model ends at once: check the chat template and the EOS token of the tokenizer, and that "
                      "the prompts are in chat format (verl-wizard data checks them)", ["data.prompt_key"]))
    elif v.empty >= EMPTY_WARN * n:
        out.append(_f("samples.empty", Severity.WARNING, f"{s}: {v.empty} of {n} responses ({pct(v.empty, n)}) are "
                      "empty", "Check the chat template and the EOS token; an empty answer scores nothing",
                      ["data.prompt_key"]))
    if v.cut >= CUT_WARN * n:
        limit = v.max_response_length
        bigger = [f"{RESPONSE_LEN}={2 * limit}"] if limit else []
        out.append(_f("samples.cut", Severity.WARNING,
                      f"{s}: {'' if v.cut_exact else 'about '}{v.cut} of {n} responses ({pct(v.cut, n)}) hit "
                      f"{_limit(v)}: they end unfinished and the reward sees no final answer",
                      f"Raise {RESPONSE_LEN}" + (f" (now {limit}; e.g. {2 * limit}, if verl-wizard plan says it "
                                                 "fits)" if limit else "") + ", or reward shorter answers",
                      [RESPONSE_LEN], bigger))
    if v.loops >= LOOP_WARN * n:
        out.append(_f("samples.loops", Severity.WARNING, f"{s}: {v.loops} of {n} responses ({pct(v.loops, n)}) "
                      "repeat themselves in a loop", f"Keep {TEMPERATURE} at 1.0 (verl's default) while training; "
                      "an instruct model or a penalty for repetition in the reward helps", [TEMPERATURE]))
    if v.language >= LANGUAGE_WARN * n:
        out.append(_f("samples.language", Severity.WARNING, f"{s}: {v.language} of {n} responses "
                      f"({pct(v.language, n)}) switch to another language (script) than the prompt's",
                      "Common with multilingual base models; say the language in the system prompt, or reward it",
                      ["data.prompt_key"]))
    if v.grouped and v.same_text_groups >= SAME_TEXT_WARN * v.groups:
        out.append(_f("samples.same_text", Severity.WARNING,
                      f"{s}: in {v.same_text_groups} of {v.groups} groups every response is the same text: GRPO "
                      "learns nothing from identical responses", f"Sample with {TEMPERATURE}=1.0 (verl's default); "
                      "a lower temperature or greedy decoding makes a group's responses identical", [TEMPERATURE],
                      [f"{TEMPERATURE}=1.0"]))
    return out


__all__ = ["StepVerdict", "verdict_line", "verdict_findings", "pct"]
