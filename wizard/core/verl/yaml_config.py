"""A Hydra YAML config (verl-wizard's own, or a user's) as verl overrides."""

from __future__ import annotations

from dataclasses import dataclass, field

from wizard.core.verl.overrides import render_override
from wizard.core.verl.schema import VerlSchema

KNOWN_BASES = ("ppo_trainer", "ppo_megatron_trainer")


@dataclass
class YamlOverrides:
    overrides: list[str]
    config_name: str = "ppo_trainer"
    warnings: list[str] = field(default_factory=list)
    unknown_keys: list[str] = field(default_factory=list)


def _flatten(node: dict, prefix: str, out: list[tuple[str, object]]) -> None:
    for key, value in node.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict) and value:
            _flatten(value, path, out)
        else:
            out.append((path, value))


def yaml_to_overrides(doc: object, schema: VerlSchema) -> YamlOverrides:
    """Overrides equivalent to composing ``doc`` as a primary config.

    With a defaults list over ppo_trainer, keys verl does not have are accepted by
    Hydra (they are merged, not checked) and written as ``+key``; they are reported,
    since verl then ignores them.
    """
    if not isinstance(doc, dict):
        raise ValueError("the YAML file is not a mapping of verl keys")
    body = {k: v for k, v in doc.items() if k not in ("defaults", "hydra")}
    defaults = doc.get("defaults")
    if not body and not defaults:  # only Hydra's own section: importing it would replace a plan with verl's defaults
        raise ValueError("the YAML file sets no verl key" + (f" (only {', '.join(map(str, doc))})" if doc else ""))
    result = YamlOverrides(overrides=[])
    overrides: list[str] = []
    if defaults is None:
        result.warnings.append(
            "the file has no defaults list; the wizard reads its keys as overrides of ppo_trainer "
            "(with --config-name verl would use this file alone)"
        )
        merged = False
    else:
        if not isinstance(defaults, list):
            raise ValueError("defaults must be a list, as in Hydra")
        merged = True
        for entry in defaults:
            if isinstance(entry, str) and entry in KNOWN_BASES:
                result.config_name = entry
            elif isinstance(entry, dict) and len(entry) == 1:
                (group, choice), = entry.items()
                group = str(group).removeprefix("override ").strip()
                overrides.append(f"{group}={choice}")
            elif entry != "_self_":
                result.warnings.append(f"defaults entry {entry!r} is not checked by the wizard")
    variant = schema.variant("megatron" if result.config_name == "ppo_megatron_trainer" else None)
    leaves: list[tuple[str, object]] = []
    _flatten(body, "", leaves)
    for key, value in leaves:
        known = key in variant.keys and variant.keys[key].in_yaml
        if merged and not known:
            result.unknown_keys.append(key)
            overrides.append(render_override(key, value, "+"))
        else:
            overrides.append(render_override(key, value))
    result.overrides = overrides
    return result
