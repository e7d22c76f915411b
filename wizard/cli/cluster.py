"""``verl-wizard cluster``: the same plan as Ray cluster launch material (Ray scripts, SLURM, KubeRay).

The plan is checked for the cluster's shape first; with errors nothing is written (unless --force).
Exit codes: 0 written, no errors; 1 config errors (nothing written, or written with --force); 2 bad input.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

from wizard.cli._common import (EXIT_ERRORS, EXIT_OK, UsageError, cluster_spec, load_plan_arg, print_findings,
                                refuse_to_write)
from wizard.core.findings import sort_findings

CHOICES = ("ray", "slurm", "kuberay", "all")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("cluster", help="write Ray cluster launch material: ray start scripts, ray job submit, "
                                              "SLURM, KubeRay")
    p.add_argument("source", metavar="SOURCE_OR_PRESET", help="a plan (.json/.yaml), a launch script, or a preset name")
    p.add_argument("--target", choices=CHOICES, default="all", help="what to write (default all)")
    p.add_argument("--out", required=True, metavar="DIR", help="folder to write into (existing files are backed up)")
    p.add_argument("--head-address", metavar="HOST", help="the head node's address (else the scripts ask for it)")
    p.add_argument("--nodes", type=int, metavar="N", help="nodes (default: the plan's trainer.nnodes)")
    p.add_argument("--gpus-per-node", type=int, metavar="G", help="GPUs per node (default: trainer.n_gpus_per_node)")
    p.add_argument("--cpus-per-node", type=int, metavar="C", help="logical CPUs Ray offers per node (default: Ray "
                                                                   "counts them; SLURM/KubeRay ask for 8 per GPU)")
    p.add_argument("--cluster", metavar="FILE", help="take the shape from a cluster spec YAML (see detect --cluster)")
    p.add_argument("--image", metavar="IMG", help="container image for KubeRay (default: verl's image for the "
                                                 "rollout engine)")
    p.add_argument("--working-dir", metavar="DIR", help="folder `ray job submit` uploads (default: this folder)")
    p.add_argument("--port", type=int, default=6379, help="the head's GCS port (default 6379)")
    p.add_argument("--dashboard-port", type=int, default=8265, help="the head's dashboard/job port (default 8265)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="any verl override")
    p.add_argument("--force", action="store_true", help="write even when the config has errors")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=run_cluster)


def _plan(args):
    """The plan from a file or a preset name, with --set applied. UsageError (one line) otherwise."""
    return load_plan_arg(args.source, sets=args.sets)


def _target(args, plan):
    from wizard.core.cluster_launch import target_for
    from wizard.core.cluster_launch.job import upload_folder

    cluster = None
    if args.cluster:
        from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue

        cluster = cluster_spec(args.cluster, load_gpu_catalogue()).cluster
        if cluster.to_gpu_spec() is None:
            raise UsageError(f"{args.cluster}: the cluster has no node with GPUs")
    for name in ("nodes", "gpus_per_node"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be 1 or more, not {value}")
    working_dir = os.path.abspath(args.working_dir or os.getcwd())
    if args.working_dir and not os.path.isdir(working_dir):
        raise UsageError(f"--working-dir {args.working_dir}: no such folder")
    working_dir = upload_folder(working_dir, os.path.abspath(args.out))
    try:
        return target_for(plan, nodes=args.nodes, gpus_per_node=args.gpus_per_node, cluster=cluster,
                          cpus_per_node=args.cpus_per_node, head_address=args.head_address, image=args.image,
                          working_dir=working_dir, port=args.port, dashboard_port=args.dashboard_port), cluster
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def run_cluster(args) -> int:
    from wizard.adapters.files.disk import WriteError
    from wizard.core.cluster_launch import TARGETS
    from wizard.core.cluster_launch.schedulers import pod_requests
    from wizard.usecases.writing import write_cluster

    plan, source_findings = _plan(args)
    target, cluster = _target(args, plan)
    targets = TARGETS if args.target == "all" else (args.target,)
    try:
        outcome = write_cluster(plan, target, targets, args.out, cluster=cluster, force=args.force)
    except WriteError as exc:
        raise UsageError(str(exc)) from None
    result, material, written = outcome.assessment, outcome.material, outcome.written
    findings = sort_findings(result.findings + source_findings)
    header = f"{plan.name or args.source} on {target.nodes} node(s) x {target.gpus_per_node} GPU(s)"
    if written is None:
        refuse_to_write(findings, header, args.format, overrides=material.job.overrides)
        return EXIT_ERRORS
    if args.format == "json":
        print(json.dumps({"ok": result.ok, "files": written.files, "backups": written.backups, "notes": material.notes,
                          "overrides": material.job.overrides, "dropped": material.job.dropped,
                          "findings": [f.to_json() for f in findings],
                          "target": {"nodes": target.nodes, "gpus_per_node": target.gpus_per_node,
                                     "cpus_per_node": target.cpus_per_node, "head_address": target.head_address,
                                     # what KubeRay's pods request (the estimate's node peaks); null: not estimated
                                     "memory_request": pod_requests(material.host_bytes)}}))
    else:
        print_findings(findings, header=header)
        for path in written.files:
            print(f"wrote {path}")
        for path in written.backups:
            print(f"kept the previous file as {path}")
        for note in material.notes:
            print(f"note: {note}")
        _print_next(Path(args.out), material)
    return EXIT_OK if result.ok else EXIT_ERRORS


def _print_next(out: Path, material) -> None:
    files, t = material.files, material.target

    def at(name: str) -> str:  # quoted for a shell: a folder with a space or a $ is copied and pasted whole
        return shlex.quote(str(out / name))

    print("Next:")
    if "submit.sh" in files:
        where = "" if t.head_address else " (give HEAD_ADDRESS=... to the worker and submit scripts)"
        print(f"  Ray:     on the head node: bash {at('ray-head.sh')}{where}")
        if "ray-worker.sh" in files:
            print(f"           on each of the {t.nodes - 1} other node(s): bash {at('ray-worker.sh')}")
        print(f"           then: bash {at('submit.sh')}   (it prints how to follow the logs and stop the job)")
    if "slurm.sbatch" in files:
        print(f"  SLURM:   sbatch {at('slurm.sbatch')}")
    if "kuberay-rayjob.yaml" in files:
        print(f"  KubeRay: kubectl apply -f {at('kuberay-rayjob.yaml')}")
