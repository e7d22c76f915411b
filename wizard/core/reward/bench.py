"""The reward bench: candidate responses for sampled rows, and the verdict on the scores they got.

"Reward always 0" is the classic silent failure of an RL run: the run goes on for hours and learns
nothing. Scoring a few rows with known-good and known-bad responses before training shows it in
seconds. The scoring itself runs in the target Python (adapters/reward_runner.py); this module only
builds the candidates and judges the results, so it is pure and fast to test.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field

from wizard.core.data.schema import ANSWER_FORMATS, format_rows, scorer_for
from wizard.core.findings import Finding, Severity, Stage

SLOW_CALL_S = 1.0  # one call slower than this stalls the reward step (thousands of calls per step)
SLOW_MEAN_S = 0.05
RESPONSES_PER_STEP = 1024  # e.g. train_batch_size 256 x rollout.n 4, for the per-step estimate


@dataclass(frozen=True)
class Candidate:
    """One response to score: ``kind`` is ground_truth, ground_truth_formatted, empty, wrong or user."""

    kind: str
    text: str


@dataclass(frozen=True)
class BenchRow:
    row: int
    data_source: str
    ground_truth: object
    extra_info: dict | None = None


@dataclass
class Trial:
    """One call of the scorer, as the probe reported it.

    ``kind`` is number, dict, none or other; ``score`` the number (from a dict's 'score'), None when there is none.
    """

    row: int
    candidate: str
    text: str
    kind: str = "number"
    score: float | None = None
    raw: str = ""
    seconds: float = 0.0
    error: str | None = None
    traceback: str | None = None

    def to_json(self) -> dict:
        score = self.score
        if score is not None and not math.isfinite(score):
            score = str(score)  # JSON has no NaN/inf
        return {"row": self.row, "candidate": self.candidate, "text": self.text, "kind": self.kind, "score": score,
                "raw": self.raw, "seconds": round(self.seconds, 6), "error": self.error, "traceback": self.traceback}


def _wrong_answer(ground_truth: str) -> str:
    """A plausible but wrong answer: a number off by one, else a different word."""
    m = re.fullmatch(r"\s*(-?\d+)\s*", ground_truth)
    if m:
        return str(int(m.group(1)) + 1)
    try:
        value = float(ground_truth)
        return repr(value + 1.0)
    except ValueError:
        return "42" if ground_truth.strip().lower() in ("", "wrong answer") else "wrong answer"


def candidates_for(row: BenchRow, user_texts: list[str] | None = None, custom: bool = False) -> list[Candidate]:
    """The responses to score for one row: the ground truth itself, the same in the format the built-in
    scorer extracts (when the scorer is known), an empty string, a wrong answer, and the user's texts."""
    gt = row.ground_truth if isinstance(row.ground_truth, str) else str(row.ground_truth)
    scorer = None if custom else scorer_for(row.data_source)
    fmt = ANSWER_FORMATS.get(scorer or "")
    out = [Candidate("ground_truth", gt)]
    if fmt:
        out.append(Candidate("ground_truth_formatted", fmt.format(answer=gt)))
    wrong = _wrong_answer(gt)
    out.append(Candidate("empty", ""))
    out.append(Candidate("wrong", fmt.format(answer=wrong) if fmt else wrong))
    out += [Candidate("user", t) for t in (user_texts or [])]
    return out


def classify(value: object) -> tuple[str, float | None]:
    """How verl would read a scorer's return: a number, a dict with 'score', or something it cannot use."""
    if isinstance(value, bool):
        return "number", float(value)
    if isinstance(value, (int, float)):
        return "number", float(value)
    if isinstance(value, dict):
        s = value.get("score")
        if isinstance(s, (int, float)):
            return "dict", float(s)
        return "dict", None
    if value is None:
        return "none", None
    try:  # numpy scalars and the like
        return "number", float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "other", None


@dataclass
class BenchSummary:
    trials: int
    min: float | None
    max: float | None
    mean: float | None
    distribution: dict[str, int] = field(default_factory=dict)
    by_candidate: dict[str, dict] = field(default_factory=dict)
    mean_seconds: float = 0.0
    max_seconds: float = 0.0

    def to_json(self) -> dict:
        return dict(self.__dict__)


def summarize(trials: list[Trial]) -> BenchSummary:
    """Range, distribution of values (rounded to 4 places) and per-candidate means."""
    finite = [t.score for t in trials if t.score is not None and math.isfinite(t.score)]
    dist = Counter(f"{s:.4g}" for s in finite)
    by: dict[str, dict] = {}
    for kind in dict.fromkeys(t.candidate for t in trials):
        scores = [t.score for t in trials if t.candidate == kind and t.score is not None and math.isfinite(t.score)]
        by[kind] = {"n": sum(1 for t in trials if t.candidate == kind),
                    "mean": sum(scores) / len(scores) if scores else None}
    secs = [t.seconds for t in trials if t.error is None] or [0.0]
    return BenchSummary(
        trials=len(trials), min=min(finite) if finite else None, max=max(finite) if finite else None,
        mean=sum(finite) / len(finite) if finite else None,
        distribution=dict(sorted(dist.items(), key=lambda kv: float(kv[0]))), by_candidate=by,
        mean_seconds=sum(secs) / len(secs), max_seconds=max(secs))


def _f(rule: str, severity: Severity, message: str, fix: str | None = None, keys: list[str] | None = None) -> Finding:
    return Finding(rule=rule, severity=severity, stage=Stage.RUNTIME, keys=keys or ["reward.custom_reward_function.path"],
                   message=message, fix=fix, fix_auto=False)


def _where(trials: list[Trial]) -> str:
    rows = sorted({t.row for t in trials})
    cands = ", ".join(dict.fromkeys(t.candidate for t in trials))
    return f"{format_rows(rows)} (candidates: {cands})"


def judge(trials: list[Trial], source: str = "the reward function", timed_out: str | None = None,
          ended: str | None = None) -> list[Finding]:
    """Flag exceptions, non-numeric returns, NaN/inf, the same score for every candidate, and slowness.
    ``ended``: the scorer's process ended before answering every call (how, in words)."""
    out: list[Finding] = []
    if timed_out:
        out.append(_f("reward.timeout", Severity.ERROR, f"{source} did not return: {timed_out}",
                      "look for a loop or a network call in the reward function; verl's reward workers would hang "
                      "the same way"))
    if ended:
        out.append(_f("reward.process_ended", Severity.ERROR,
                      f"{source}: its process {ended}; in verl the reward worker would end the same way",
                      "look for sys.exit/os._exit, a crash in native code, or memory use past the limit in the "
                      "reward function"))
    errors = [t for t in trials if t.error]
    if errors:
        first = errors[0]
        tb = f"\n{first.traceback.rstrip()}" if first.traceback else ""
        out.append(_f("reward.exception", Severity.ERROR,
                      f"{source} raised {first.error} on {len(errors)} of {len(trials)} calls, "
                      f"{_where(errors)}; in verl this kills the reward worker{tb}",
                      "fix the reward function for these inputs (the traceback above is from your code)"))
    bad_type = [t for t in trials if not t.error and t.score is None]
    if bad_type:
        what = sorted({t.raw if t.kind != "dict" else "a dict without a numeric 'score'" for t in bad_type})
        out.append(_f("reward.non_numeric", Severity.ERROR,
                      f"{source} returned {', '.join(what)[:160]} on {len(bad_type)} of {len(trials)} calls, "
                      f"{_where(bad_type)}; verl needs a number or a dict with a numeric 'score'",
                      "return a float (or {'score': float, ...}) on every path, including when no answer is found"))
    nonfinite = [t for t in trials if t.score is not None and not math.isfinite(t.score)]
    if nonfinite:
        out.append(_f("reward.nan", Severity.ERROR,
                      f"{source} returned {nonfinite[0].score} on {len(nonfinite)} of {len(trials)} calls, "
                      f"{_where(nonfinite)}; one NaN makes the advantages and the loss NaN",
                      "guard divisions and return 0.0 instead of NaN/inf"))
    scored = [t for t in trials if t.score is not None and math.isfinite(t.score)]
    kinds = {t.candidate for t in scored}
    values = {round(t.score, 9) for t in scored}  # type: ignore[arg-type]
    if len(scored) >= 2 and len(kinds) >= 2 and len(values) == 1:
        v = next(iter(values))
        out.append(_f("reward.constant", Severity.ERROR,
                      f"{source} gave every candidate the same score {v:g} ({len(scored)} calls over "
                      f"{', '.join(sorted(kinds))}); the right answer scores no higher than an empty or wrong one, "
                      "so GRPO/PPO advantages are all 0 and nothing is learned",
                      "check that the response format matches what the scorer extracts and that ground_truth "
                      "holds only the answer"))
    else:
        out += _ordering(scored, source)
    out += _slowness(trials, source)
    return out


def _ordering(scored: list[Trial], source: str) -> list[Finding]:
    """The ground truth (formatted, where known) should beat the empty and the wrong response on each row."""
    best_kind = "ground_truth_formatted" if any(t.candidate == "ground_truth_formatted" for t in scored) \
        else "ground_truth"
    bad_rows = []
    for row in sorted({t.row for t in scored}):
        by = {t.candidate: t.score for t in scored if t.row == row}
        if best_kind in by and any(k in by and by[k] >= by[best_kind] for k in ("empty", "wrong")):  # type: ignore
            bad_rows.append(row)
    if not bad_rows:
        return []
    return [_f("reward.no_signal", Severity.WARNING,
               f"on {format_rows(bad_rows)} the correct answer ({best_kind}) scores no higher than an empty or "
               f"wrong response under {source}",
               "check the scorer against these rows with `verl-wizard data reward FILE --response TEXT`")]


def _slowness(trials: list[Trial], source: str) -> list[Finding]:
    ok = [t for t in trials if t.error is None]
    if not ok:
        return []
    slowest = max(ok, key=lambda t: t.seconds)
    mean = sum(t.seconds for t in ok) / len(ok)
    if slowest.seconds < SLOW_CALL_S and mean < SLOW_MEAN_S:
        return []
    per_step = mean * RESPONSES_PER_STEP
    return [_f("reward.slow", Severity.WARNING,
               f"{source} took {mean * 1000:.0f} ms per call on average, {slowest.seconds:.2f} s at worst "
               f"(row {slowest.row}, {slowest.candidate}); at {RESPONSES_PER_STEP} responses per step that is "
               f"~{per_step:.0f} s of scoring per step",
               "cache expensive setup at module level, or raise reward.num_workers")]


def builtin_findings(rows: list[BenchRow]) -> list[Finding]:
    """Rows whose data_source no built-in scorer handles (the bench then has nothing to run for them)."""
    unknown: dict[str, list[int]] = {}
    for r in rows:
        if scorer_for(r.data_source) is None:
            unknown.setdefault(r.data_source, []).append(r.row)
    if not unknown:
        return []
    parts = ", ".join(f"'{s}' ({format_rows(rs)})" for s, rs in unknown.items())
    return [_f("reward.no_scorer", Severity.ERROR,
               f"no built-in scorer of verl 0.9.1 handles data_source {parts}; default_compute_score raises "
               "NotImplementedError",
               "pass --function FILE --name FN to bench your own reward function, and set "
               "reward.custom_reward_function.path/name for training")]


def bench_rows(records: list[tuple[int, dict]]) -> tuple[list[BenchRow], list[Finding]]:
    """Sampled dataset rows as bench rows; rows without data_source or reward_model.ground_truth are left out
    (and named), since verl could not score them either."""
    rows, missing = [], []
    for index, rec in records:
        rm = rec.get("reward_model")
        gt = rm.get("ground_truth") if isinstance(rm, dict) else None
        source = rec.get("data_source")
        if gt is None or not isinstance(source, str) or not source:
            missing.append(index)
            continue
        info = rec.get("extra_info")
        rows.append(BenchRow(index, source, gt, info if isinstance(info, dict) else None))
    if not missing:
        return rows, []
    return rows, [_f("reward.unscorable_rows", Severity.ERROR,
                     f"{format_rows(missing)} lack data_source or reward_model.ground_truth; the reward manager "
                     "cannot score them (KeyError)", "run `verl-wizard data check FILE` and fix the columns it names",
                     keys=[])]
