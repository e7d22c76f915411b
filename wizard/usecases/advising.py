"""The advisor and the step-time prediction for an assessed plan: what ``plan`` prints and the GUI shows beside the
memory verdict. The core searches and predicts (``wizard.core.advice``, ``wizard.core.steptime``); this adds what
only the machine has: the smaller models of the actor's family in the model catalogue."""

from __future__ import annotations

from wizard.core.advice import Advice, advise
from wizard.core.memory import MemoryPlan
from wizard.core.steptime import StepTime, predict_step


def step_time(memory: MemoryPlan) -> StepTime:
    """The plan's predicted steady step, per phase (``reason`` where it is not modelled)."""
    return predict_step(memory.values, memory.models, memory.cluster, memory.report)


def plan_advice(memory: MemoryPlan, limit: int = 5) -> Advice:
    """Alternatives for the plan on its GPUs, best first, with the catalogue's smaller models of the actor's family
    as changes of method."""
    from wizard.adapters.files.model_facts import smaller_in_family

    actor = memory.models.get("actor")
    smaller = smaller_in_family(actor.name) if actor is not None else []
    return advise(memory.values, memory.models, memory.cluster, smaller=smaller, limit=limit)
