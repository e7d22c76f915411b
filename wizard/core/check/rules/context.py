"""What a rule sees: the composed config resolved as verl reads it, plus the hardware and the models' facts."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wizard.core.findings import Finding, Severity, Stage
from wizard.core.hardware.gpus import GpuSpec
from wizard.core.models.facts import ModelFacts
from wizard.core.verl.resolved import UNRESOLVABLE, ResolvedConfig

if TYPE_CHECKING:
    from wizard.core.hardware.cluster import Cluster

__all__ = ["RUNNING", "UNRESOLVABLE", "EnvironmentFacts", "RuleContext", "choices", "finding"]


@dataclass(frozen=True)
class EnvironmentFacts:
    """What the environment probe found in the Python that will run verl (None: not known)."""

    flash_attn: bool | None = None  # flash-attn imports there
    python: str | None = None


@dataclass
class RuleContext(ResolvedConfig):
    gpus: GpuSpec | None = None
    # Facts of the models the config names, by role ("actor", "ref", "critic", "reward"), when known.
    models: Mapping[str, ModelFacts] = field(default_factory=dict)
    # The detected or planned machines (per-GPU memory, links), when known; ``gpus`` is its shape.
    cluster: "Cluster | None" = None
    # The target Python environment (doctor's probe), when known.
    environment: EnvironmentFacts | None = None
    # Whether the memory findings search the advisor's alternatives for their fix (see check_overrides), and the
    # smaller models of the actor's family it may offer (a function: looked up only when it searches).
    advise: bool = True
    family: Callable[[], Sequence[ModelFacts]] | None = None
    # What the user states about the run that no verl key holds (``wizard.response_tokens``: the mean response
    # length the step time assumes): read with the memory values by the step time and the advisor's ranking.
    assumptions: Mapping[str, object] = field(default_factory=dict)


# The rule ``run_rules`` is running (its ``@rule`` declaration): what ``finding`` takes the id and stage from.
RUNNING: ContextVar = ContextVar("wizard_rule_running", default=None)


def finding(
    severity: Severity,
    keys: list[str],
    message: str,
    fix: str | None = None,
    fix_overrides: list[str] | None = None,
    fix_auto: bool = True,
    *,
    rule: str | None = None,
    stage: Stage | None = None,
) -> Finding:
    """A finding of the rule being run, under its id and stage as its ``@rule`` declares them; ``rule`` names another
    id it declares (``also``), ``stage`` is given only where the declaration leaves it to the finding (``None``).
    A finding the declaration does not cover is a bug in the rule (ValueError: the engine reports the rule failed)."""
    running = RUNNING.get()
    if running is None:
        raise ValueError("finding() outside a rule: only run_rules runs rules")
    rule = rule or running.id
    declared = running.ids
    if rule not in declared:
        raise ValueError(f"the rule {running.id} reports {rule}, which its @rule does not declare")
    want = declared[rule]
    if want is None and stage is None:
        raise ValueError(f"{rule} is declared without a stage: its findings must give one")
    if want is not None and stage is not None and stage is not want:
        raise ValueError(f"{rule} is declared {want.value}, not {stage.value}")
    return Finding(
        rule=rule,
        severity=severity,
        stage=stage or want,
        keys=keys,
        message=message,
        fix=fix,
        fix_overrides=fix_overrides or [],
        fix_auto=fix_auto,
    )


def choices(values) -> str:
    return ", ".join(str(v) for v in values)
