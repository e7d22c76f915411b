"""What a rule sees: the composed config resolved as verl reads it, plus the hardware and the models' facts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wizard.core.findings import Finding, Severity, Stage
from wizard.core.hardware.gpus import GpuSpec
from wizard.core.models.facts import ModelFacts
from wizard.core.verl.resolved import UNRESOLVABLE, ResolvedConfig

if TYPE_CHECKING:
    from wizard.core.hardware.cluster import Cluster

__all__ = ["UNRESOLVABLE", "EnvironmentFacts", "RuleContext", "choices", "finding"]


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


def finding(
    rule: str,
    severity: Severity,
    stage: Stage,
    keys: list[str],
    message: str,
    fix: str | None = None,
    fix_overrides: list[str] | None = None,
    fix_auto: bool = True,
) -> Finding:
    return Finding(
        rule=rule,
        severity=severity,
        stage=stage,
        keys=keys,
        message=message,
        fix=fix,
        fix_overrides=fix_overrides or [],
        fix_auto=fix_auto,
    )


def choices(values) -> str:
    return ", ".join(str(v) for v in values)
