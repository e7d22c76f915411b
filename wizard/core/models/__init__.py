"""Model facts: what the planner needs to know about a model (layers, heads, vocabulary, context,
parameters, files), read from its config.json by the adapters or from the model catalogue.
"""

from wizard.core.face import face

# The names callers outside this package use, by the module that defines them.
__getattr__, __all__ = face(__name__, {
    "HF_DOWNLOAD": "facts",
    "ModelConfigError": "facts",
    "ModelFacts": "facts",
    "PLACEHOLDER_PATH": "facts",
    "facts_from_hf_config": "facts",
    "model_paths": "facts",
})
