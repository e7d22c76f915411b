"""The rules engine: every check the wizard makes, one module per concern.

A rule is a function of a :class:`RuleContext` that yields :class:`Finding` s, registered by the ``@rule``
decorator when its module is imported. Every module in this package (but the helpers ``context`` and ``sections``) is imported on the first
check, found by listing the package, so a new module needs no list to join; a test fails for a module that
registers nothing. A rule's stage says when verl itself would fail (see ARCHITECTURE.md): for
compose/preflight/startup the verdict must equal verl 0.9.1's, and the conformance tests hold the rules to that
against real verl.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from wizard.core.findings import Finding, Severity, Stage

RuleFn = Callable[["RuleContext"], Iterable[Finding]]


@dataclass(frozen=True)
class Rule:
    id: str
    stage: Stage
    fn: RuleFn
    doc: str


RULES: list[Rule] = []


def rule(rule_id: str, stage: Stage) -> Callable[[RuleFn], RuleFn]:
    def register(fn: RuleFn) -> RuleFn:
        RULES.append(Rule(rule_id, stage, fn, (fn.__doc__ or "").strip()))
        return fn

    return register


from wizard.core.check.rules.context import RuleContext, finding  # noqa: E402


def run_rules(ctx: RuleContext) -> list[Finding]:
    _load()
    out: list[Finding] = []
    for r in RULES:
        try:
            out.extend(r.fn(ctx))
        except Exception as exc:  # noqa: BLE001 - one broken rule must not hide the others
            out.append(
                finding(
                    "internal.rule_failed",
                    Severity.WARNING,
                    Stage.ADVICE,
                    [],
                    f"the check {r.id} could not run on this config ({type(exc).__name__}: {exc})",
                    "Please report it; verl's own pre-flight (check --verl) still gives a verdict",
                )
            )
    return out


NOT_RULES = frozenset({"context", "sections"})  # modules here that hold helpers, not rules


def rule_modules() -> list[str]:
    """The modules whose rules run: every module of this package but the helpers."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name not in NOT_RULES)


def _load() -> None:
    if not _loaded:
        for name in rule_modules():
            importlib.import_module(f"{__name__}.{name}")
        _loaded.append(True)


_loaded: list[bool] = []


__all__ = ["RULES", "RuleContext", "Rule", "finding", "rule", "run_rules"]
