"""Writing behind the check gate: a plan's run.sh, config.yaml and plan.json (``generate``, the Write step), and a
plan's cluster launch material (``cluster``, the Write step's cluster box). The plan is judged first, on the shape it
is written for; with errors nothing is written unless forced. Every write is all-or-nothing, earlier files kept as
backups (``wizard.adapters.files.disk``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from wizard.adapters.files.cluster_files import WrittenCluster, write_cluster_files
from wizard.adapters.files.disk import write_file_set
from wizard.core.cluster_launch import ClusterMaterial, ClusterTarget, cluster_job, render_cluster
from wizard.core.hardware import Cluster, GpuSpec
from wizard.core.plan import Plan, RUN_SH, hide_known_values, render_files
from wizard.core.secrets import known_secrets
from wizard.usecases.assessment import Assessment, assess, assess_plan


@dataclass
class Written:
    overrides: list[str]
    files: list[str]
    backups: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class PlanWrite:
    """What ``write_plan`` did: the plan's assessment, and the files (None: refused for its errors)."""

    assessment: Assessment
    written: Written | None


@dataclass
class ClusterWrite:
    assessment: Assessment
    material: ClusterMaterial
    written: WrittenCluster | None


def without_known_secrets(plan: Plan) -> tuple[Plan, list[str]]:
    """``plan`` with the values of this environment's secret variables (HF_TOKEN, WANDB_API_KEY...) as references
    wherever they sit, and a note per key changed: what every writer and every launch writes from."""
    return hide_known_values(plan, known_secrets(os.environ))


def write_plan_files(plan: Plan, out_dir: str | Path) -> Written:
    """run.sh, config.yaml and plan.json into ``out_dir`` without a check, all or nothing (WriteError, one line)."""
    plan, hidden = without_known_secrets(plan)
    files, overrides, notes = render_files(plan)
    return _write((files, overrides, hidden + notes), out_dir)


def _write(rendered: tuple[dict[str, str], list[str], list[str]], out_dir: str | Path) -> Written:
    texts, overrides, notes = rendered
    done = write_file_set(out_dir, {name: (text, 0o755 if name == RUN_SH else None) for name, text in texts.items()})
    return Written(overrides=list(overrides), files=[str(f) for f in done.files],
                   backups=[str(b) for b in done.backups.values()], notes=list(notes))


def write_plan(plan: Plan, out_dir: str | Path, *, gpus: GpuSpec | None = None, cluster: Cluster | None = None,
               force: bool = False) -> PlanWrite:
    """Judge ``plan`` (the same full check as ``check``: memory on the GPUs named, data files on this machine), then
    write its files unless it has errors and ``force`` is off. WriteError when the folder cannot take them."""
    plan, hidden = without_known_secrets(plan)
    assessment = assess_plan(plan, gpus=gpus, cluster=cluster, local_files=True)
    assessment.notes = hidden + assessment.notes
    if not assessment.ok and not force:
        return PlanWrite(assessment, None)
    return PlanWrite(assessment, _write((assessment.files, assessment.overrides, assessment.notes), out_dir))


def write_cluster(plan: Plan, target: ClusterTarget, targets: tuple[str, ...], out_dir: str | Path, *,
                  cluster: Cluster | None = None, force: bool = False) -> ClusterWrite:
    """Judge ``plan`` on the cluster's shape (the job's own overrides), then write the launch material unless it has
    errors and ``force`` is off. WriteError when the folder cannot take them."""
    plan, hidden = without_known_secrets(plan)
    gpus = GpuSpec(nodes=target.nodes, gpus_per_node=target.gpus_per_node, model=target.gpu_model,
                   cpus=target.total_cpus)
    assessment = assess(cluster_job(plan, target).overrides, config_name=plan.config_name, gpus=gpus,
                        cluster=cluster)
    memory = assessment.memory
    report = memory.report if memory is not None else None
    host = tuple(h.total for h in report.host) if report is not None and report.host else None
    why = None if host else (memory.estimate_why if memory is not None else None) or "the config names no model"
    # with what each node needs of RAM (KubeRay's pods request it), or why that is not known
    material = render_cluster(plan, target, targets, host_bytes=host, host_why=why)
    material.notes = hidden + material.notes
    if not assessment.ok and not force:
        return ClusterWrite(assessment, material, None)
    return ClusterWrite(assessment, material, write_cluster_files(material, out_dir))
