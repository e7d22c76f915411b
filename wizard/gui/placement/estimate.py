"""What the board needs from outside the core: the machine to draw, and a plan's board state.

The logic is the core's (:mod:`wizard.core.placement.board` for pools and moves, :mod:`wizard.core.memory.board`
for memory and the verdict); this module only fetches what the core is handed: the machines chosen on the
Hardware step, a machine built from the GPU catalogue for the GPU model the plan names, the verl schema and
renamed keys, and the full check's findings (the same call the CLI makes).
"""

from __future__ import annotations

from wizard.usecases.checking import full_check
from wizard.usecases.hardware import cluster_for_spec
from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
from wizard.adapters.files.resources import load_moves, load_schema
from wizard.core.findings import Finding
from wizard.core.hardware.cluster import Cluster
from wizard.core.memory.board import BoardState, board_state
from wizard.core.placement.board import kept_machine, plain_cluster, planned_gpus
from wizard.core.plan.emit import emit_overrides
from wizard.core.plan.model import Plan


def machine_for(doc, previous: Cluster | None = None) -> Cluster:
    """The machines to draw: those chosen on the Hardware step (or a typed GPU spec), else the plan's own.

    A plan-derived machine is kept while it still holds the plan (see ``kept_machine``)."""
    chosen = doc.effective_cluster() if hasattr(doc, "effective_cluster") else doc.cluster
    if chosen is not None:
        return chosen
    kept = kept_machine(doc.plan, previous)
    if kept is not None:
        return kept
    spec = planned_gpus(doc.plan)
    if spec.model:
        try:
            cluster = cluster_for_spec(spec, load_gpu_catalogue())
        except ValueError:
            cluster = None
        if cluster is not None:
            return cluster.model_copy(update={"source": "spec-plan"})
    return plain_cluster(spec.nodes, spec.gpus_per_node)


def estimate(plan: Plan, machine: Cluster, models: dict, findings: list[Finding] | None = None,
             model_cache: dict | None = None) -> BoardState:
    """The board's picture of ``plan`` on ``machine``; ``findings`` when the document already checked it."""
    if findings is None:
        findings = full_check(emit_overrides(plan).overrides, config_name=plan.config_name, cluster=machine,
                              model_cache=model_cache).findings
    return board_state(plan, machine, findings, schema=load_schema(), moves=load_moves(), models=models)
