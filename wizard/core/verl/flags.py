"""A resolved verl flag as the wizard reads it: true, or a string that says so ("true", "1", "yes"); anything else,
unset included, is off (the type rules say what is wrong with a value that is not a flag). Pure, and imports
nothing of the wizard, so every layer of the core can read flags the same way."""

from __future__ import annotations

from collections.abc import Mapping


def is_on(v: object, words: tuple[str, ...] = ("true", "1", "yes")) -> bool:
    """True, or a string among ``words`` (megatron-core's OptimizerConfig, from verl's YAML, takes "true" only)."""
    return v is True or (isinstance(v, str) and v.strip().lower() in words)


def truthy(values: Mapping, key: str) -> bool:
    return is_on(values.get(key))
