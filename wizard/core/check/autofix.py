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
    sees. A fix is kept only when the re-check bears it out: fewer errors, or as many with its own gone (a compose
    error giving way to a later one it hid); any other is taken back and reported, so the errors never grow and no
    fix undoes another (setting keys under a section a fix deleted). ``check`` is ``overrides -> CheckResult``."""
    applied: list[str] = []
    removed: list[str] = []
    rejected: list[tuple[str, str, int, int]] = []
    seen: set[tuple] = set()
    result = check(plan_overrides(plan))
    before = len(_errors(result))
    for _ in range(MAX_ROUNDS * 4):
        fixable = [f for f in result.findings if _fixable(f)]
        fixable = [f for f in fixable if _identity(f) not in seen]
        if not fixable:
            break
        fix = fixable[0]
        seen.add(_identity(fix))
        now = len(_errors(result))
        trial = apply_fix(plan, fix)
        trial_result = check(plan_overrides(trial))
        after = _errors(trial_result)
        if len(after) < now or (len(after) == now and not any(_same(fix, f) for f in after)):
            plan, result = trial, trial_result
            applied.extend(fix.fix_overrides)
            if drops_word(fix):
                removed.append(f"{fix.keys[0] if fix.keys else fix.rule} ({(fix.fix or '').removeprefix('Remove it: ')})")
        else:
            rejected.append((fix.rule, " ".join(fix.fix_overrides) or fix.fix or "", now, len(after)))
    return FixResult(plan=plan, applied=applied, result=result, removed=removed, rejected=rejected,
                     errors_before=before)


def _identity(f) -> tuple:
    """A fix tried once: its overrides, or for a fix that only drops its word, the word."""
    return tuple(f.fix_overrides) or ("drop", f.rule, *f.keys)


def autofix_overrides(schema, overrides: list[str], *, config_name: str = "ppo_trainer", moves=None, gpus=None) -> FixResult:
    def run(ovs: list[str]) -> CheckResult:
        return check_overrides(schema, ovs, config_name=config_name, moves=moves, gpus=gpus)

    return apply_fixes(plan_from_overrides(overrides, config_name=config_name), run)
