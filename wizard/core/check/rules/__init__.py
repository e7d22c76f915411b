"""The rules engine: every check the wizard makes, one module per concern.

A rule is a function of a :class:`RuleContext` that yields :class:`Finding` s, registered by the ``@rule``
decorator when its module is imported. The decorator is the one place a rule's id and stage are written: ``finding``
takes them from the rule being run, and a rule that reports under other ids as well declares each, with its stage,
in ``also``; a stage that depends on the config (when verl builds the section a key is in) is declared ``None`` and
given by each finding. Every module in this package (but the helpers ``context`` and ``sections``) is imported on the first
check, found by listing the package, so a new module needs no list to join; a test fails for a module that
registers nothing. A rule's stage says when verl itself would fail (see ARCHITECTURE.md): for
compose/preflight/startup the verdict must equal verl 0.9.1's, and the conformance tests hold the rules to that
against real verl.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from wizard.core.findings import Finding, Severity, Stage

RuleFn = Callable[["RuleContext"], Iterable[Finding]]


@dataclass(frozen=True)
class Rule:
    id: str
    stage: Stage | None  # None: each finding gives it (when verl builds the section its key is in)
    fn: RuleFn
    doc: str
    also: Mapping[str, Stage | None] = field(default_factory=dict)  # other ids it reports under, with their stage

    @property
    def ids(self) -> dict[str, Stage | None]:
        """Every id this rule reports under, with its declared stage."""
        return {self.id: self.stage, **self.also}


RULES: list[Rule] = []


def rule(rule_id: str, stage: Stage | None, also: Mapping[str, Stage | None] | None = None
         ) -> Callable[[RuleFn], RuleFn]:
    def register(fn: RuleFn) -> RuleFn:
        RULES.append(Rule(rule_id, stage, fn, (fn.__doc__ or "").strip(), dict(also or {})))
        return fn

    return register


from wizard.core.check.rules.context import RUNNING, RuleContext, finding  # noqa: E402


def run_rules(ctx: RuleContext) -> list[Finding]:
    _load()
    out: list[Finding] = []
    for r in RULES:
        running = RUNNING.set(r)
        try:
            out.extend(_declared(r, f) for f in r.fn(ctx))
        except Exception as exc:  # noqa: BLE001 - one broken rule must not hide the others
            out.append(Finding(
                rule="internal.rule_failed", severity=Severity.WARNING, stage=Stage.ADVICE, keys=[],
                message=f"the check {r.id} could not run on this config ({type(exc).__name__}: {exc})",
                fix="Please report it; verl's own pre-flight (check --verl) still gives a verdict"))
        finally:
            RUNNING.reset(running)
    return out


def _declared(r: Rule, f: Finding) -> Finding:
    """``f`` as ``r`` declares it; ValueError for an id or a stage its ``@rule`` does not say (a bug in the rule)."""
    ids = r.ids
    if f.rule not in ids:
        raise ValueError(f"it reports {f.rule}, which its @rule does not declare")
    if ids[f.rule] is not None and f.stage is not ids[f.rule]:
        raise ValueError(f"it reports {f.rule} at {f.stage.value}, declared {ids[f.rule].value}")
    return f


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
