"""Where a plan starts: a preset (shaped for the GPUs given, with ``--set`` overrides), a plan file, a launch script
or a YAML config. The CLI's ``--preset``/``SOURCE`` arguments and the GUI's Start step read plans here."""

from __future__ import annotations

from pathlib import Path

from wizard.adapters.files.resources import load_preset_doc
from wizard.core.findings import Finding
from wizard.core.hardware import GpuSpec
from wizard.core.plan import Plan, apply_overrides, load_plan


def preset_plan(name: str, gpus: GpuSpec | None = None, sets: list[str] | None = None) -> Plan:
    """The preset ``name``, shaped for ``gpus``, with ``sets`` applied (OverrideSyntaxError, ValueError)."""
    plan = load_plan(load_preset_doc(name))
    if gpus is not None:
        plan = plan_with_gpus(plan, gpus)
    if sets:
        plan = apply_overrides(plan, sets)
    return plan


def plan_with_gpus(plan: Plan, gpus: GpuSpec) -> Plan:
    """``plan`` reshaped for ``gpus`` (trainer.nnodes, n_gpus_per_node and the GPU model)."""
    plan = plan.model_copy(deep=True)
    plan.hardware.nnodes = gpus.nodes
    plan.hardware.n_gpus_per_node = gpus.gpus_per_node
    if gpus.model:
        plan.hardware.gpu = gpus.model
    return plan


def open_plan(source: str | None = None, preset: str | None = None, gpus: GpuSpec | None = None,
              sets: list[str] | None = None) -> tuple[Plan, list[Finding]]:
    """(the plan, findings of reading it) from a file or a preset; ``source`` may name a preset too. ValueError
    with a one-line reason otherwise (OverrideSyntaxError for a bad ``sets`` word)."""
    from wizard.adapters.files.disk import exists
    from wizard.adapters.files.resources import preset_names
    from wizard.adapters.files.sources import load_source

    if source and not preset and not exists(source):
        if source in preset_names():
            source, preset = None, source  # a bare preset name where a file was expected
        elif "/" not in source and not Path(source).suffix:
            raise ValueError(f"{source!r} is neither a file nor a preset; presets: {', '.join(preset_names())}")
    if bool(preset) == bool(source):
        raise ValueError("give one of --preset NAME or a file (a plan .json/.yaml, a run.sh or a YAML config)")
    if preset:
        return preset_plan(preset, gpus, sets or []), []
    src = load_source(source)
    plan = src.to_plan(name=Path(source).stem)
    if gpus is not None:
        plan = plan_with_gpus(plan, gpus)
    if sets:
        plan = apply_overrides(plan, sets)
    return plan, list(src.findings)
