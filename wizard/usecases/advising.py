"""The advisor and the step-time prediction for an assessed plan: what ``plan`` prints and the GUI shows beside the
memory verdict. The core searches and predicts (``wizard.core.advice``, ``wizard.core.steptime``); this adds what
only the machine has: the smaller models of the actor's family in the model catalogue."""

from __future__ import annotations

from wizard.core.advice import Advice, advise
from wizard.core.memory import MemoryPlan
from wizard.core.steptime import StepTime, predict_step


def step_time(memory: MemoryPlan, data=None) -> StepTime:
    """The plan's predicted steady step, per phase (``reason`` where it is not modelled), at the train file's mean
    prompt (``data``, a DataFit) and the mean response the user expects where the assessment was told one (its
    ``assumptions``, which the memory values carry)."""
    from wizard.core.steptime import PROMPT_TOKENS

    if memory.short_of_gpus:
        return StepTime(reason=memory.short_of_gpus)
    values = dict(memory.values)
    if data is not None:
        values[PROMPT_TOKENS] = data.prompt_tokens_mean
    return predict_step(values, memory.models, memory.cluster, memory.report)


def plan_advice(memory: MemoryPlan, limit: int = 5, searched: Advice | None = None) -> Advice:
    """Alternatives for the plan on its GPUs, best first, with the catalogue's smaller models of the actor's family
    as changes of method; ``searched``: the same search, already made by the check's memory findings."""
    if searched is not None:
        return searched
    from wizard.adapters.files.model_facts import smaller_in_family

    actor = memory.models.get("actor")
    smaller = smaller_in_family(actor.name) if actor is not None else []
    return advise(memory.values, memory.models, memory.cluster, smaller=smaller, limit=limit)


def train_data_fit(memory: MemoryPlan, train_files, model_path) -> tuple[object | None, str | None]:
    """(the plan judged on its train file's prompt lengths, why not) where data.train_files names one readable local
    file (the first of a list); the model's own tokenizer where its path is a local folder."""
    from wizard.adapters.files.dataset import DatasetError, prompt_lengths
    from wizard.core.advice.data import data_fit

    path = train_files[0] if isinstance(train_files, (list, tuple)) and train_files else train_files
    if not isinstance(path, str) or not path:
        return None, "data.train_files is not set"
    try:
        lengths, rows, how = prompt_lengths(path, model_path if isinstance(model_path, str) else None)
    except (DatasetError, OSError, ValueError) as exc:
        return None, f"{path}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    fit = data_fit(memory, lengths, rows, how)
    return fit, None if fit is not None else f"{path}: no readable prompts"
