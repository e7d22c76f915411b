"""The notes a plan's report adds to the check's findings: that memory was not judged and why, and that ``--gpus``
sized the trainer. One builder, so ``verl-wizard plan`` and the window's Findings say the same thing.

A missing verdict has one reason, said once, the most basic first: a GPU count the machines cannot hold (the
config asks for 4 GPUs, the machines have 2) comes before "the GPUs' memory is unknown", which an estimate with no
GPU placed also reads as.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from wizard.core.findings import Finding, Severity, Stage

if TYPE_CHECKING:
    from wizard.core.memory import MemoryPlan
    from wizard.usecases.plans import Sized

MEMORY_UNKNOWN = "memory.unknown"
NOT_MODELLED = "memory.not_modelled"  # the check's own note that the estimate is not made: said once, by it
NO_ESTIMATE = "no estimate was made for this plan"


def no_estimate_reason(memory: MemoryPlan, conflict: str | None = None) -> str | None:
    """Why ``memory`` has no verdict to give (None when it has one): ``conflict`` (the command line's sizes against
    ``--gpus``, see ``Sized``), else the memory plan's own reason (GPUs the machines lack before their memory being
    unknown: ``MemoryPlan.why``; an engine or model not modelled)."""
    if memory.judged is not None:
        return None
    return conflict or memory.why or NO_ESTIMATE


def memory_unknown_note(memory: MemoryPlan, findings: list[Finding], conflict: str | None = None) -> Finding | None:
    """The note that memory was not checked, with why; None when it was, or when the check says so already."""
    why = no_estimate_reason(memory, conflict)
    if why is None or any(f.rule == NOT_MODELLED for f in findings):
        return None
    return Finding(rule=MEMORY_UNKNOWN, severity=Severity.INFO, stage=Stage.ADVICE, keys=[],
                   message=f"No memory estimate: {why}")


def sized_note(sized: Sized | None) -> Finding | None:
    """The note that ``--gpus`` added the trainer's size keys (the run's command line needs them too)."""
    if sized is None or not sized.note:
        return None
    return Finding(rule="gpus.sized", severity=Severity.INFO, stage=Stage.ADVICE,
                   keys=["trainer.nnodes", "trainer.n_gpus_per_node"], message=sized.note,
                   fix=f"Set {' '.join(sized.added)}")


def plan_notes(memory: MemoryPlan, findings: list[Finding], sized: Sized | None = None) -> list[Finding]:
    """The notes to add to ``findings`` (the check's, for the plan ``memory`` was made from), in the order ``plan``
    prints them."""
    notes = [sized_note(sized)]
    notes.append(memory_unknown_note(memory, findings + [n for n in notes if n is not None],
                                     sized.conflict if sized is not None else None))
    return [n for n in notes if n is not None]
