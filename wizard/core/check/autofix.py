"""Apply the fixes the rules offer, until nothing fixable is left (``check --fix``, the GUI's button)."""

from __future__ import annotations

from dataclasses import dataclass, field

from wizard.core.check.verdict import CheckResult, check_overrides
from wizard.core.findings import Severity
from wizard.core.plan.model import Plan
from wizard.core.plan.convert import apply_fix, plan_from_overrides, plan_overrides

MAX_ROUNDS = 8


@dataclass
class FixResult:
    plan: Plan
    applied: list[str] = field(default_factory=list)  # the fix overrides, in the order applied
    result: CheckResult | None = None


def apply_fixes(plan: Plan, check) -> FixResult:
    """Fix errors one at a time (earliest stage first), re-checking after each: a fix may
    change what the next rule sees. ``check`` is ``overrides -> CheckResult``."""
    applied: list[str] = []
    seen: set[tuple[str, ...]] = set()
    result = check(plan_overrides(plan))
    for _ in range(MAX_ROUNDS * 4):
        fixable = [f for f in result.findings if f.severity is Severity.ERROR and f.fix_overrides and f.fix_auto]
        fixable = [f for f in fixable if tuple(f.fix_overrides) not in seen]
        if not fixable:
            break
        fix = fixable[0]
        seen.add(tuple(fix.fix_overrides))
        plan = apply_fix(plan, fix)
        applied.extend(fix.fix_overrides)
        result = check(plan_overrides(plan))
    return FixResult(plan=plan, applied=applied, result=result)


def autofix_overrides(schema, overrides: list[str], *, config_name: str = "ppo_trainer", moves=None, gpus=None) -> FixResult:
    def run(ovs: list[str]) -> CheckResult:
        return check_overrides(schema, ovs, config_name=config_name, moves=moves, gpus=gpus)

    return apply_fixes(plan_from_overrides(overrides, config_name=config_name), run)
