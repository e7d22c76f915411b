"""Where a plan starts: a preset (shaped for the GPUs given, with ``--set`` overrides), a plan file, a launch script
or a YAML config. The CLI's ``--preset``/``SOURCE`` arguments and the GUI's Start step read plans here."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wizard.adapters.files.resources import load_preset_doc
from wizard.core.findings import Finding
from wizard.core.hardware import GpuSpec
from wizard.core.plan import Plan, apply_overrides, follow_model, load_plan

SIZE_KEYS = ("trainer.nnodes", "trainer.n_gpus_per_node")


def preset_plan(name: str, gpus: GpuSpec | None = None, sets: list[str] | None = None) -> Plan:
    """The preset ``name``, shaped for ``gpus``, with ``sets`` applied (OverrideSyntaxError, ValueError)."""
    plan = load_plan(load_preset_doc(name))
    if gpus is not None:
        plan = plan_with_gpus(plan, gpus)
    if sets:  # the preset's experiment name follows a model set over its own
        plan = follow_model(plan, apply_overrides(plan, sets))
    return plan


def resized_note(before: Plan, after: Plan, gpus: GpuSpec | None, sets: list[str] | None = None,
                 what: str = "the plan") -> list[Finding]:
    """A note where ``gpus`` resized ``before``'s trainer into ``after`` (a preset of 2 x 8 GPUs planned on ``--gpus
    1xH100-80GB`` was planned as 1 x 1 and said nothing): the run's command line carries the new size. None where
    the size is unchanged or the user's own ``sets`` name it."""
    from wizard.core.placement import planned_gpus  # the sizes with verl's defaults where the plan leaves them unset

    was, now = planned_gpus(before), planned_gpus(after)
    size = (now.nodes, now.gpus_per_node)
    if (gpus is None or size == (was.nodes, was.gpus_per_node) or size != (gpus.nodes, gpus.gpus_per_node)
            or _given_sizes(sets or [])):
        return []
    from wizard.core.findings import Severity, Stage

    return [Finding(rule="gpus.resized", severity=Severity.INFO, stage=Stage.ADVICE, keys=list(SIZE_KEYS),
                    message=f"{what}'s trainer of {was.nodes} x {was.gpus_per_node} GPUs is planned on the GPUs given, {gpus.nodes} x "
                            f"{gpus.gpus_per_node}: trainer.nnodes={gpus.nodes} trainer.n_gpus_per_node="
                            f"{gpus.gpus_per_node} (its batch sizes are kept)")]


def _given_sizes(overrides: list[str]) -> dict[str, object]:
    """The trainer's size keys the overrides set, with their values (a word that does not parse is the check's)."""
    from wizard.core.verl.overrides import OverrideSyntaxError, parse_override

    given: dict[str, object] = {}
    for text in overrides:
        try:
            o = parse_override(text)
        except OverrideSyntaxError:
            continue
        if o.key in SIZE_KEYS and o.kind != "~":
            given[o.key] = o.value()
    return given


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
    from wizard.adapters.files.disk import exists, is_dir
    from wizard.adapters.files.resources import preset_names
    from wizard.adapters.files.sources import load_source

    # a bare preset name where a file was expected, also where a folder has that name (`cluster grpo-8gpu --out
    # grpo-8gpu` run twice)
    if source and not preset and (not exists(source) or (is_dir(Path(source)) and source in preset_names())):
        if source in preset_names():
            source, preset = None, source  # a bare preset name where a file was expected
        elif "/" not in source and not Path(source).suffix:
            raise ValueError(f"{source!r} is neither a file nor a preset; presets: {', '.join(preset_names())}")
    if bool(preset) == bool(source):
        raise ValueError("give one of --preset NAME or a file (a plan .json/.yaml, a run.sh or a YAML config)")
    if preset:
        plan = preset_plan(preset, gpus, sets or [])
        return plan, resized_note(preset_plan(preset), plan, gpus, sets, f"preset {preset}")
    src = load_source(source)
    before = plan = src.to_plan(name=Path(source).stem)
    if gpus is not None:
        plan = plan_with_gpus(plan, gpus)
    if sets:
        plan = apply_overrides(plan, sets)
    resized = resized_note(before, plan, gpus, sets) if src.plan is not None else []  # a script or YAML: no size
    return plan, list(src.findings) + resized



@dataclass(frozen=True)
class Sized:
    """A command line sized for ``--gpus``: ``note`` says which size keys were added, ``conflict`` (one line, with
    the keys to set) where the command line sets a size the GPUs cannot hold (then nothing is added)."""

    overrides: list[str]
    added: tuple[str, ...] = ()  # the size overrides added, KEY=VALUE
    note: str | None = None
    conflict: str | None = None


def sized_for_gpus(overrides: list[str], gpus: GpuSpec | None) -> Sized:
    """``overrides`` with the trainer sized for ``gpus``, for a what-if plan of a command line.

    verl's trainer asks for ``trainer.n_gpus_per_node`` (default 8) x ``trainer.nnodes`` (default 1) GPUs whatever
    the machine, so ``--gpus 1xRTX4090-24GB`` alone would plan 8 GPUs of which 7 are missing. Where the command line
    does not set a size key, it gets the one ``gpus`` gives (the note says so: the run needs them too); where it
    sets a size that ``gpus`` cannot hold, it is kept and ``conflict`` names the keys to set.
    """
    if gpus is None:
        return Sized(list(overrides))
    given = _given_sizes(overrides)
    wanted = {"trainer.nnodes": gpus.nodes, "trainer.n_gpus_per_node": gpus.gpus_per_node}
    nodes = given.get("trainer.nnodes", gpus.nodes)
    per_node = given.get("trainer.n_gpus_per_node", gpus.gpus_per_node)
    if isinstance(nodes, int) and isinstance(per_node, int) and (
            per_node > gpus.gpus_per_node or nodes * per_node > gpus.total):
        set_here = " ".join(f"{k}={given[k]}" for k in SIZE_KEYS if k in given)
        return Sized(list(overrides), conflict=(
            f"the config asks for {per_node} GPUs per node x {nodes} node(s) ({set_here}) but --gpus gives "
            f"{gpus}: set {' '.join(f'{k}={v}' for k, v in wanted.items())}"))
    added = [f"{k}={v}" for k, v in wanted.items() if k not in given]
    if not added:
        return Sized(list(overrides))
    return Sized(list(overrides) + added, tuple(added), note=(
        f"--gpus {gpus} sized the trainer: {' '.join(added)} added (verl's default is 8 GPUs on 1 node); the run's "
        f"command line needs them too"))
