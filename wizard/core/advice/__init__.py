"""The advisor: the fastest config that fits this model, these GPUs and this data (``search``), from the knobs a
user can turn (``moves``), every candidate re-estimated and timed."""

from wizard.core.face import face

__getattr__, __all__ = face(__name__, {
    "Advice": "search",
    "Alternative": "search",
    "advise": "search",
    "deficit": "search",
    "HARDWARE": "moves",
    "METHOD": "moves",
    "Move": "moves",
    "TUNING": "moves",
})
