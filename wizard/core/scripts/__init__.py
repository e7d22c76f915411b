"""Reading verl launch scripts statically, without running them.

``lexer`` splits bash into words, ``evaluator`` expands them (variables, defaults, arrays, arithmetic),
``reader`` finds the verl launch and the overrides bash would hand it.
"""

from wizard.core.face import face

# The names callers outside this package use, by the module that defines them.
__getattr__, __all__ = face(__name__, {
    "LaunchScript": "reader",
    "ScriptError": "reader",
    "read_launch_script": "reader",
    "MAX_SCRIPT_CHARS": "state",
    "Note": "state",
    "UNREADABLE": "state",
})
