"""Every file of a cluster launch, for the targets asked (``ray``, ``slurm``, ``kuberay``): what
``wizard.adapters.files.cluster_files`` writes and the Write step shows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wizard.core.cluster_launch.job import TARGETS, ClusterJob, ClusterTarget, cluster_job
from wizard.core.cluster_launch.ray_scripts import (render_ray_head, render_ray_worker, render_runtime_env,
                                                    render_submit)
from wizard.core.cluster_launch.schedulers import kuberay_notes, render_kuberay, render_slurm
from wizard.core.plan.model import Plan


@dataclass
class ClusterMaterial:
    files: dict[str, str]  # file name -> text
    executable: list[str]
    job: ClusterJob
    target: ClusterTarget
    notes: list[str] = field(default_factory=list)
    host_bytes: tuple[int, ...] | None = None  # the RAM each node needs by the memory estimate (KubeRay's pods)


RAY_FILES = ("ray-head.sh", "ray-worker.sh", "submit.sh", "runtime_env.yaml")


def render_cluster(plan: Plan, target: ClusterTarget, targets: tuple[str, ...] = TARGETS,
                   host_bytes: tuple[int, ...] | None = None, host_why: str | None = None) -> ClusterMaterial:
    """Every file of the chosen targets (``ray``, ``slurm``, ``kuberay``) for ``plan`` on ``target``; ``host_bytes``:
    the RAM each node needs by the memory estimate, in node order (KubeRay's pods request it), None where it was not
    estimated, ``host_why`` saying why."""
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        raise ValueError(f"unknown target {unknown[0]!r}: use {', '.join(TARGETS)} or all")
    job = cluster_job(plan, target)
    files: dict[str, str] = {}
    notes = list(job.notes)
    if "ray" in targets:
        files["ray-head.sh"] = render_ray_head(job, target)
        if target.nodes > 1:
            files["ray-worker.sh"] = render_ray_worker(job, target)
        files["submit.sh"] = render_submit(job, target)
        files["runtime_env.yaml"] = render_runtime_env(job, target)
    if "slurm" in targets:
        files["slurm.sbatch"] = render_slurm(job, target)
    if "kuberay" in targets:
        files["kuberay-rayjob.yaml"] = render_kuberay(job, target, host_bytes, host_why)
        notes += kuberay_notes(job, target, host_bytes)
    executable = [n for n in files if n.endswith((".sh", ".sbatch"))]
    return ClusterMaterial(files=files, executable=executable, job=job, target=target, notes=notes,
                           host_bytes=host_bytes)
