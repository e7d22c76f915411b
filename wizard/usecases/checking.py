"""The whole check of a config, as the CLI and the GUI both run it.

``wizard.core.check.verdict.check_overrides`` is pure: it judges what it is given. This adds what only
the machine can give: the facts of the models the config names (local folders, the catalogue;
never the network), looked up from the composed config's own values within the one
composition, so the rules that need them (heads vs TP, context length, memory) run.
"""

from __future__ import annotations

from wizard.core.check.verdict import CheckResult, check_overrides
from wizard.core.hardware.cluster import Cluster
from wizard.core.findings import sort_findings
from wizard.core.hardware.gpus import GpuSpec


def full_check(overrides: list[str], *, config_name: str = "ppo_trainer", gpus: GpuSpec | None = None,
               cluster: Cluster | None = None, case_id: str | None = None,
               model_cache: dict | None = None, local_files: bool = False, deep_data: bool = False,
               environment=None) -> CheckResult:
    """``local_files``: also say which data files the config names are not on this machine and whether
    resume_mode=auto would continue a checkpoint here (a few stat calls); ``environment``: what the run's Python
    can do (``EnvironmentFacts``: flash-attn), for the rules that depend on it; ``deep_data``: read those files
    too (verl's row format, rows vs batch, prompt lengths)."""
    from wizard.adapters.files.model_facts import facts_by_role, load_models_for, lookup_findings
    from wizard.adapters.files.resources import load_moves, load_schema

    lookups: dict = {}

    def models_for(facts: dict) -> dict:
        """The models the composed config names (local folders, the catalogue; never the network)."""
        lookups.update(load_models_for(facts, model_cache))
        return facts_by_role(lookups)

    result = check_overrides(load_schema(), overrides, config_name=config_name, moves=load_moves(), gpus=gpus,
                             cluster=cluster, case_id=case_id, models=models_for, environment=environment)
    result.findings = sort_findings(result.findings + lookup_findings(lookups))
    if local_files or deep_data:
        from wizard.adapters.files.local_facts import file_findings

        result.findings = sort_findings(result.findings + file_findings(result.facts, deep=deep_data))
    return result
