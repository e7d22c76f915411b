"""The advisor: the fastest config that fits this model, these GPUs and this data (``search``), from the knobs a
user can turn (``moves``), every candidate re-estimated and timed (``state``); what of it is offered, ranked
(``offer``); what it says where nothing fits (``statement``)."""

from wizard.core.face import face

__getattr__, __all__ = face(__name__, {
    "Advice": "state",
    "Alternative": "state",
    "advise": "search",
    "deficit": "state",
    "HARDWARE": "moves",
    "METHOD": "moves",
    "Move": "moves",
    "NONE_FASTER": "search",
    "TUNING": "moves",
})
