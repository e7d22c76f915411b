"""Findings: what a rule reports, in the shape of the CLI's JSON contract."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field


class Stage(str, Enum):
    """When verl itself would fail; the order is the order a run meets them."""

    COMPOSE = "compose"
    PREFLIGHT = "preflight"
    STARTUP = "startup"
    RUNTIME = "runtime"
    ADVICE = "advice"


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


STAGE_ORDER = {s: i for i, s in enumerate(Stage)}
# What each stage costs the user, in words (the GUI's group titles and the CLI's headings).
STAGE_TITLES = {
    Stage.COMPOSE: "Composition (verl refuses the command line)",
    Stage.PREFLIGHT: "Pre-flight (verl stops before Ray starts)",
    Stage.STARTUP: "Startup (workers die after minutes of loading)",
    Stage.RUNTIME: "Run time (fails or hangs during training)",
    Stage.ADVICE: "Advice (runs, but likely not what you meant)",
}
SEVERITY_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}


class Finding(BaseModel):
    """One problem, with the numbers involved and a fix.

    ``fix`` is text for people: the override to set, or the choices.
    ``fix_overrides`` is the same fix as overrides a tool can apply (may be empty);
    ``fix_auto`` says whether it is unambiguous enough to apply without asking.
    """

    model_config = ConfigDict(frozen=True, use_enum_values=False)

    rule: str
    severity: Severity
    stage: Stage
    keys: list[str] = Field(default_factory=list)
    message: str
    fix: str | None = None
    fix_overrides: list[str] = Field(default_factory=list)
    # False when the fix is one reasonable choice among several (a model, an engine):
    # the GUI offers it as a button, but check --fix does not apply it on its own.
    fix_auto: bool = True
    # A finding about a launch script names its line, and may carry the full detail behind a
    # summary message (every knob left at its default, what each side of a branch gives).
    line: int | None = None
    data: dict | None = None

    def to_json(self) -> dict:
        doc = self.model_dump(mode="json")
        for key in ("line", "data"):
            if doc[key] is None:
                del doc[key]
        return doc


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Worst first, then by stage (earliest failure first), then by rule id."""
    return sorted(findings, key=lambda f: (SEVERITY_ORDER[f.severity], STAGE_ORDER[f.stage], f.rule))


def about_environment(finding: Finding) -> bool:
    """Whether ``finding`` is about the Python environment that was probed (``verl-wizard doctor``, rules ``env.*``)
    rather than about the plan.

    The environment is a property of the machine the wizard runs on, which need not be where training runs: such
    a finding is shown where the environment is chosen, it marks no step of the plan, and nothing in it is ever
    applied to the plan (a missing flash-attn is fixed by installing it, not by an attention override)."""
    return finding.rule.startswith("env.")


def plan_fix(finding: Finding) -> list[str]:
    """The overrides that fix ``finding`` in the plan: none for an environment finding (see ``about_environment``)."""
    return [] if about_environment(finding) else list(finding.fix_overrides)


def has_errors(findings: list[Finding]) -> bool:
    return any(f.severity is Severity.ERROR for f in findings)
