"""Apply the fixes the rules offer, until nothing fixable is left (``check --fix``, the GUI's button)."""

from __future__ import annotations

from dataclasses import dataclass, field

from wizard.core.check.verdict import CheckResult, check_overrides
from wizard.core.findings import Severity
from wizard.core.plan.model import Plan
from wizard.core.plan.convert import apply_fix, drops_word, plan_from_overrides, plan_overrides

MAX_ROUNDS = 8


@dataclass
class FixResult:
    plan: Plan
    applied: list[str] = field(default_factory=list)  # the fix overrides, in the order applied
    result: CheckResult | None = None
    removed: list[str] = field(default_factory=list)  # words taken off with nothing in their place, and why
    # fixes tried and taken back because the re-check did not bear them out: (rule, the fix, errors before, after)
    rejected: list[tuple[str, str, int, int]] = field(default_factory=list)
    errors_before: int = 0


def _errors(result: CheckResult) -> list:
    return [f for f in result.findings if f.severity is Severity.ERROR]


def _fixable(f) -> bool:
    return f.severity is Severity.ERROR and f.fix_auto and bool(f.fix_overrides or drops_word(f))


def _same(a, b) -> bool:
    return a.rule == b.rule and a.keys == b.keys


def apply_fixes(plan: Plan, check) -> FixResult:
    """Fix errors one at a time (earliest stage first), re-checking after each: a fix may change what the next rule
    sees. A fix is kept where the re-check bears it out: fewer errors, or its own gone with nothing new but errors
    that have fixes of their own (a mini-batch that splits over 3 GPUs, then the micro-batches that divide it); any
    other is taken back and reported. The result is the best plan the loop reached (the fewest errors, the latest of
    those), so --fix never ends with more errors than it started with, and no fix undoes another (setting keys
    under a section a fix deleted). ``check`` is ``overrides -> CheckResult``."""
    kept: list = []  # the fixes kept, in order
    rejected: list[tuple[str, str, int, int]] = []
    seen: set[tuple] = set()
    result = check(plan_overrides(plan))
    before = len(_errors(result))
    best = (before, plan, result, 0)  # the fewest errors reached, its plan and result, the fixes kept to reach it
    for _ in range(MAX_ROUNDS * 4):
        fixable = [f for f in result.findings if _fixable(f) and _identity(f) not in seen]
        if not fixable:
            break
        fix = fixable[0]
        seen.add(_identity(fix))
        had = _errors(result)
        trial = apply_fix(plan, fix)
        trial_result = check(plan_overrides(trial))
        after = _errors(trial_result)
        gone = not any(_same(fix, f) for f in after)
        new = [f for f in after if not any(_same(f, g) for g in had)]
        if len(after) < len(had) or (gone and (len(after) == len(had) or all(_fixable(f) for f in new))):
            plan, result = trial, trial_result
            kept.append(fix)
            if len(after) <= best[0]:
                best = (len(after), plan, result, len(kept))
        else:
            rejected.append((fix.rule, _words(fix), len(had), len(after)))
    final = len(_errors(result))
    if final > best[0]:  # fixes that led on to errors no fix removed: back to the best reached, and said so
        _, plan, result, n = best
        rejected = [(f.rule, _words(f), best[0], final) for f in kept[n:]] + rejected
        kept = kept[:n]
    return FixResult(plan=plan, applied=[o for f in kept for o in f.fix_overrides], result=result,
                     removed=[f"{f.keys[0] if f.keys else f.rule} ({(f.fix or '').removeprefix('Remove it: ')})"
                              for f in kept if drops_word(f)],
                     rejected=rejected, errors_before=before)


def _words(f) -> str:
    """A fix as the user reads it: its overrides, or its words where it only drops its own."""
    return " ".join(f.fix_overrides) or f.fix or ""


def _identity(f) -> tuple:
    """A fix tried once: its overrides, or for a fix that only drops its word, the word."""
    return tuple(f.fix_overrides) or ("drop", f.rule, *f.keys)


def autofix_overrides(schema, overrides: list[str], *, config_name: str = "ppo_trainer", moves=None, gpus=None) -> FixResult:
    def run(ovs: list[str]) -> CheckResult:
        return check_overrides(schema, ovs, config_name=config_name, moves=moves, gpus=gpus)

    return apply_fixes(plan_from_overrides(overrides, config_name=config_name), run)
