"""The whole check of a config, as the CLI and the GUI both run it.

``wizard.core.check.check_overrides`` is pure: it judges what it is given. This adds what only
the machine can give: the facts of the models the config names (local folders, the catalogue;
never the network). When some are found the config is checked again with them, so the rules
that need them (heads vs TP, context length, memory) run.
"""

from __future__ import annotations

from wizard.core.check import CheckResult, check_overrides
from wizard.core.cluster import Cluster
from wizard.core.findings import sort_findings
from wizard.core.gpus import GpuSpec


def full_check(overrides: list[str], *, config_name: str = "ppo_trainer", gpus: GpuSpec | None = None,
               cluster: Cluster | None = None, case_id: str | None = None,
               model_cache: dict | None = None, local_files: bool = False, deep_data: bool = False) -> CheckResult:
    """``local_files``: also say which data files the config names are not on this machine and whether
    resume_mode=auto would continue a checkpoint here (a few stat calls); ``deep_data``: read those files
    too (verl's row format, rows vs batch, prompt lengths)."""
    from wizard.adapters.resources import load_moves, load_schema

    result = check_overrides(load_schema(), overrides, config_name=config_name, moves=load_moves(), gpus=gpus,
                             cluster=cluster, case_id=case_id)
    result = with_models(result, overrides, config_name, gpus, model_cache, cluster=cluster)
    if local_files or deep_data:
        from wizard.adapters.local_facts import file_findings

        result.findings = sort_findings(result.findings + file_findings(result.facts, deep=deep_data))
    return result


def with_models(result: CheckResult, overrides: list[str], config_name: str, gpus: GpuSpec | None,
                cache: dict | None = None, cluster: Cluster | None = None) -> CheckResult:
    """Look at the models the composed config names and, when facts were found, check again with them.
    ``cache`` spares re-reading a folder that several checks name."""
    from wizard.adapters.model_facts import facts_by_role, load_models_for, lookup_findings
    from wizard.adapters.resources import load_moves, load_schema

    lookups = load_models_for(result.facts, cache)
    models = facts_by_role(lookups)
    if models:
        again = check_overrides(load_schema(), overrides, config_name=config_name, moves=load_moves(), gpus=gpus,
                                case_id=result.id, models=models, cluster=cluster)
        result.findings, result.facts = again.findings, again.facts
        result.models = models
    result.findings = sort_findings(result.findings + lookup_findings(lookups))
    return result
