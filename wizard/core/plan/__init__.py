"""The Plan: the one description of a training setup that the GUI and the CLI edit.

``model`` is the pydantic Plan (sections of modelled verl keys plus ``passthrough`` for every other
override); ``convert`` turns a Plan into verl overrides and back; ``emit`` writes it as ``run.sh`` and a
Hydra YAML. Anything that reads or writes the Plan as a whole belongs here.
"""
