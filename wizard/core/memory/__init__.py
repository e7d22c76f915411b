"""GPU and host memory of a verl run, per GPU and per phase, and the verdict.

``terms`` has every term of the estimate and the constants it uses, each with its source (measured in real verl
runs where it says "verl H200"); ``megatron`` the Megatron engine's terms, from megatron-core's formulas (``megatron_layout`` its
layout as verl reads it); ``sglang`` an SGLang engine's, from its code; ``config``
reads the keys the estimate needs; ``estimate`` adds the terms per GPU and phase; ``scope`` says what it does not model
(vision-language: no verdict); ``host`` sizes host RAM per
node; ``verdict`` judges a report in the words every output uses (fits / tight / fits while short / does not fit,
or none with the reason); ``report`` is the one call
for ``plan`` and the GUI (compose, place, estimate, judge); ``board`` is what the placement board shows of a plan
(the placement, each GPU's estimate, the ok / tight / OOM colour of a GPU, the verdict and the headline).
"""

from wizard.core.face import face

# The names callers outside this package use, by the module that defines them.
__getattr__, __all__ = face(__name__, {
    "BoardState": "board",
    "OK": "board",
    "OOM": "board",
    "TIGHT": "board",
    "SHORT": "board",
    "UNKNOWN": "board",
    "board_state": "board",
    "fit_verdict": "board",
    "headline": "board",
    "MEMORY_KEYS": "config",
    "complete_values": "config",
    "read_config": "config",
    "GpuEstimate": "estimate",
    "MemoryReport": "estimate",
    "Phase": "estimate",
    "estimate_memory": "estimate",
    "PHASES": "phases",
    "PhaseName": "phases",
    "phase_of": "phases",
    "step_index": "phases",
    "MemoryPlan": "report",
    "plan_memory": "report",
    "GIB": "terms",
    "Verdict": "verdict",
    "describe": "verdict",
    "memory_verdict": "verdict",
})
