"""Turn a plan into files on disk: run.sh, config.yaml, plan.json (atomic, backed up)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from wizard.adapters.files.disk import write_file_set
from wizard.adapters.files.resources import load_preset_doc
from wizard.core.plan.emit import YamlEmitError, emit_overrides, render_run_sh, render_yaml
from wizard.core.hardware.gpus import GpuSpec
from wizard.core.plan.model import Plan, load_plan
from wizard.core.plan.convert import apply_overrides

RUN_SH = "run.sh"
CONFIG_YAML = "config.yaml"
PLAN_JSON = "plan.json"


@dataclass
class Written:
    overrides: list[str]
    files: list[str]
    backups: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def preset_plan(name: str, gpus: GpuSpec | None = None, sets: list[str] | None = None) -> Plan:
    plan = load_plan(load_preset_doc(name))
    if gpus is not None:
        plan = plan_with_gpus(plan, gpus)
    if sets:
        plan = apply_overrides(plan, sets)
    return plan


def plan_with_gpus(plan: Plan, gpus: GpuSpec) -> Plan:
    plan = plan.model_copy(deep=True)
    plan.hardware.nnodes = gpus.nodes
    plan.hardware.n_gpus_per_node = gpus.gpus_per_node
    if gpus.model:
        plan.hardware.gpu = gpus.model
    return plan


def render_files(plan: Plan) -> tuple[dict[str, str], list[str], list[str]]:
    """{file name: text}, the overrides, and notes; nothing is written."""
    emitted = emit_overrides(plan)
    files = {RUN_SH: render_run_sh(plan, emitted)}
    notes = list(emitted.notes)
    try:
        text, cli_only = render_yaml(plan, emitted)
        files[CONFIG_YAML] = text
        if cli_only:
            notes.append(f"{CONFIG_YAML} cannot hold {', '.join(cli_only)}; pass them on the command line")
    except YamlEmitError as exc:
        notes.append(f"no {CONFIG_YAML}: {exc}")
    files[PLAN_JSON] = json.dumps(plan.model_dump(mode="json"), indent=2) + "\n"
    return files, emitted.overrides, notes


def write_plan_files(plan: Plan, out_dir: str | Path) -> Written:
    """run.sh, config.yaml and plan.json into ``out_dir``, all or nothing (WriteError, one line, otherwise)."""
    texts, overrides, notes = render_files(plan)
    done = write_file_set(out_dir, {name: (text, 0o755 if name == RUN_SH else None) for name, text in texts.items()})
    return Written(overrides=overrides, files=[str(f) for f in done.files],
                   backups=[str(b) for b in done.backups.values()], notes=notes)
