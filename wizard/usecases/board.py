"""The placement board's use cases: the machine it draws, and the board's picture of a plan or of a drag candidate,
each made from one assessment (one composition, one estimate) on that machine.

The picture itself is the core's (:mod:`wizard.core.memory.board` for memory and the verdict,
:mod:`wizard.core.placement.board` for pools and moves); this module only fetches what the core is handed.
"""

from __future__ import annotations

from wizard.core.hardware import Cluster, GpuSpec
from wizard.core.memory import BoardState, board_state
from wizard.core.placement import kept_machine, plain_cluster, planned_gpus
from wizard.core.plan import Plan
from wizard.usecases.assessment import Assessment, assess_plan
from wizard.usecases.hardware import machines_for


def board_machine(plan: Plan, chosen: Cluster | None = None, previous: Cluster | None = None) -> Cluster:
    """The machines to draw and judge ``plan`` on: those chosen (the Hardware step, a typed GPU spec), else the
    plan's own (``trainer.nnodes`` x ``n_gpus_per_node`` of the GPU model it names, sized from the catalogue; a
    plan-derived machine is kept while it still holds the plan, see ``kept_machine``)."""
    if chosen is not None:
        return chosen
    kept = kept_machine(plan, previous)
    if kept is not None:
        return kept
    spec = planned_gpus(plan)
    cluster = machines_for(spec) if spec.model else None
    if cluster is not None:
        return cluster.model_copy(update={"source": "spec-plan"})
    return plain_cluster(spec.nodes, spec.gpus_per_node)


def board_of(assessment: Assessment) -> BoardState:
    """The board's picture of an assessed plan: no composition of its own."""
    return board_state(assessment.plan, assessment.memory, assessment.findings)


def candidate_board(plan: Plan, machine: Cluster, gpus: GpuSpec | None = None,
                    model_cache: dict | None = None) -> BoardState:
    """What the board would show after a drop: the candidate ``plan`` assessed once on ``machine``. Data in, data out:
    safe to run off the GUI thread."""
    return board_of(assess_plan(plan, gpus=gpus, cluster=machine, model_cache=model_cache, local_files=True,
                                advise=False))
