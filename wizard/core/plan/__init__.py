"""The Plan: the one description of a training setup that the GUI and the CLI edit.

``model`` is the pydantic Plan (sections of modelled verl keys plus ``passthrough`` for every other
override); ``convert`` turns a Plan into verl overrides and back; ``emit`` writes it as ``run.sh`` and a
Hydra YAML. Anything that reads or writes the Plan as a whole belongs here.
"""

from wizard.core.face import face

# The names callers outside this package use, by the module that defines them.
__getattr__, __all__ = face(__name__, {
    "apply_fix": "convert",
    "apply_overrides": "convert",
    "drops_word": "convert",
    "follow_model": "convert",
    "hide_known_values": "convert",
    "plan_from_overrides": "convert",
    "plan_overrides": "convert",
    "plan_value": "convert",
    "with_passthrough": "convert",
    "CONFIG_YAML": "emit",
    "RUN_SH": "emit",
    "emit_overrides": "emit",
    "render_files": "emit",
    "string_values": "emit",
    "Plan": "model",
    "load_plan": "model",
})
