"""One value per plan, made by one composition and one estimate: what ``check``, ``plan``, the findings dock, the
placement board and a drag candidate all read.

``wizard.core.check.verdict.check_overrides`` is pure: it composes the config as verl would, runs every rule and
keeps the resolved values the memory plan is made from. This adds what only the machine can give: the facts of the
models the config names (local folders, the catalogue; never the network), looked up from the composed config's own
values within the one composition, and, when asked, whether the files it names are on this machine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wizard.core.check import CheckResult, EnvironmentFacts, check_overrides
from wizard.core.findings import Finding, has_errors, sort_findings
from wizard.core.hardware import Cluster, GpuSpec
from wizard.core.memory import MemoryPlan
from wizard.core.plan import Plan, render_files


@dataclass
class Assessment:
    """A config judged once: its findings (composition, every rule, the models and files it names) and its memory
    plan (placement, estimate per GPU and phase, verdict), from the same composed values."""

    overrides: list[str]
    config_name: str
    result: CheckResult
    gpus: GpuSpec | None = None
    cluster: Cluster | None = None
    plan: Plan | None = None
    files: dict[str, str] = field(default_factory=dict)  # run.sh, config.yaml, plan.json as written (a plan's)
    notes: list[str] = field(default_factory=list)

    @property
    def findings(self) -> list[Finding]:
        return self.result.findings

    @findings.setter
    def findings(self, findings: list[Finding]) -> None:
        """Findings the caller adds (how the config was read, the hardware options) join the verdict."""
        self.result.findings = findings

    @property
    def id(self) -> str | None:
        return self.result.id

    @property
    def ok(self) -> bool:
        return not has_errors(self.result.findings)

    @property
    def models(self) -> dict:
        return self.result.models

    @property
    def memory(self) -> MemoryPlan:
        return self.result.memory

    def to_json(self) -> dict:
        return self.result.to_json()


def assess(overrides: list[str], *, config_name: str = "ppo_trainer", gpus: GpuSpec | None = None,
           cluster: Cluster | None = None, case_id: str | None = None, model_cache: dict | None = None,
           local_files: bool = False, deep_data: bool = False,
           environment: EnvironmentFacts | None = None, advise: bool = True,
           assumptions: dict | None = None) -> Assessment:
    """Judge ``overrides`` once (``assumptions``: what the user states that no verl key holds, such as the mean
    response length the step times assume: ``wizard.core.steptime.RESPONSE_TOKENS``). ``local_files``: also say which data files the config names are not on this machine
    and whether resume_mode=auto would continue a checkpoint here (a few stat calls); ``environment``: what the run's
    Python can do (flash-attn), for the rules that depend on it; ``deep_data``: read those files too (verl's row
    format, rows vs batch, prompt lengths)."""
    from wizard.adapters.files.model_facts import facts_by_role, load_models_for, lookup_findings
    from wizard.adapters.files.resources import load_moves, load_schema

    lookups: dict = {}

    def models_for(facts: dict) -> dict:
        """The models the composed config names (local folders, the catalogue; never the network)."""
        lookups.update(load_models_for(facts, model_cache))
        return facts_by_role(lookups)

    def family() -> list:
        """The catalogue's smaller models of the actor's family (the advisor offers them as a change of method)."""
        from wizard.adapters.files.model_facts import smaller_in_family

        actor = facts_by_role(lookups).get("actor")
        return smaller_in_family(actor.name) if actor is not None else []

    result = check_overrides(load_schema(), overrides, config_name=config_name, moves=load_moves(), gpus=gpus,
                             cluster=cluster, case_id=case_id, models=models_for, environment=environment,
                             advise=advise, family=family, assumptions=assumptions)
    result.findings = sort_findings(result.findings + lookup_findings(lookups))
    if local_files or deep_data:
        from wizard.adapters.files.local_facts import file_findings

        result.findings = sort_findings(result.findings + file_findings(result.facts, deep=deep_data))
    return Assessment(overrides=list(overrides), config_name=config_name, result=result, gpus=gpus, cluster=cluster)


def assess_plan(plan: Plan, *, gpus: GpuSpec | None = None, cluster: Cluster | None = None,
                model_cache: dict | None = None, local_files: bool = False,
                environment: EnvironmentFacts | None = None, advise: bool = True,
                assumptions: dict | None = None) -> Assessment:
    """A plan judged once, with the files it writes (run.sh, config.yaml, plan.json) and their notes."""
    files, overrides, notes = render_files(plan)
    assessment = assess(overrides, config_name=plan.config_name, gpus=gpus, cluster=cluster,
                        model_cache=model_cache, local_files=local_files, environment=environment, advise=advise,
                        assumptions=assumptions)
    assessment.plan, assessment.files, assessment.notes = plan, files, notes
    return assessment
