"""Value types: a value verl cannot use as the number or flag its key holds.

verl's YAML nodes are untyped, so Hydra accepts ``data.train_batch_size=abc``;
the failure comes later, and where depends on who reads the key first:
the arithmetic in validate_config, a config dataclass conversion, or the code at
runtime. The stage below follows that.
"""

from __future__ import annotations

import re

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import UNRESOLVABLE, RuleContext, finding

# Read with plain arithmetic by validate_config before any conversion: any non-int fails there.
ARITHMETIC_KEYS = ("data.train_batch_size", "actor_rollout_ref.rollout.n", "trainer.n_gpus_per_node", "trainer.nnodes")
_INT = re.compile(r"^[+-]?\d+$")
_FLOAT = re.compile(r"^[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|inf|nan)$", re.IGNORECASE)
_BOOL = {"true", "false", "yes", "no", "on", "off", "1", "0", "y", "n"}


def expected_type(info) -> str | None:
    """int, float or bool when the schema says so.

    The dataclass annotation wins (it is what verl converts to); without one, a YAML
    int default only tells that a number is expected (verl does not convert it).
    """
    if info.field_type:
        parts = [p.strip() for p in info.field_type.split("|")]
        scalar = [p for p in parts if p not in ("None", "NoneType")]
        return scalar[0] if len(scalar) == 1 and scalar[0] in ("int", "float", "bool") else None
    if info.type in ("int", "float"):
        return "float"
    if info.type == "bool":
        return "bool"
    return None


def converts(value, kind: str) -> bool:
    """Whether OmegaConf would convert ``value`` to ``kind`` (its Integer/Float/BooleanNode rules)."""
    if value is None:
        return True
    if kind == "int":
        return (isinstance(value, int) and not isinstance(value, bool)) or (isinstance(value, str) and bool(_INT.match(value.strip())))
    if kind == "float":
        return (isinstance(value, (int, float)) and not isinstance(value, bool)) or (isinstance(value, str) and bool(_FLOAT.match(value.strip())))
    if kind == "bool":
        return isinstance(value, bool) or (isinstance(value, int)) or (isinstance(value, str) and value.strip().lower() in _BOOL)
    return True


def _stage(ctx: RuleContext, key: str) -> Stage:
    """verl converts its config classes with Hydra's instantiate, which does not check
    field types; only validate_config's own arithmetic (without dynamic batch size)
    trips over a wrong type before launch. Everything else fails when first used."""
    if key in ARITHMETIC_KEYS and not ctx.dynamic_bsz:
        return Stage.PREFLIGHT
    return Stage.RUNTIME


@rule("types.value", None)  # the stage verl builds the section at
def value_types(ctx: RuleContext):
    """A value that cannot be the int/float/bool its key holds."""
    for key in sorted(ctx.set_keys):
        info = ctx.variant.keys.get(key)
        if info is None:
            continue
        kind = "int" if key in ARITHMETIC_KEYS else expected_type(info)
        if kind is None:
            continue
        value = ctx.get(key)
        if value is UNRESOLVABLE:
            continue
        strict = key in ARITHMETIC_KEYS and not ctx.dynamic_bsz
        ok = (isinstance(value, int) and not isinstance(value, bool)) if strict else converts(value, kind)
        if ok:
            continue
        default = info.default  # verl's own value for the key is the example, where it has one of this type
        usable = default is not None and not isinstance(default, str) and converts(default, kind)
        example = (str(default).lower() if isinstance(default, bool) else str(default)) if usable else \
            {"int": "64", "float": "1e-6", "bool": "true"}[kind]
        yield finding(
            Severity.ERROR,
            [key],
            f"{key}={value!r} is not {'an' if kind == 'int' else 'a'} {kind}; verl reads it as a number/flag"
            + (" in its pre-flight arithmetic" if strict else ""),
            f"Give a plain {kind}, e.g. {key}={example}" + (" (no quotes)" if isinstance(value, str) else ""), stage=_stage(ctx, key),
        )


# megatron-core's TransformerConfig.__post_init__ refuses any other word for these (transformer_config.py: "When
# using recompute_granularity: ... must be \"full\" or \"selective\"", "recompute_method ... must be \"block\" or
# \"uniform\""), when verl's Megatron worker builds the model
_MEGATRON_WORDS = {"recompute_granularity": ("full", "selective"), "recompute_method": ("uniform", "block")}


def _recomputes(ctx: RuleContext, key: str) -> bool:
    """megatron-core reads recompute_method only when recompute_granularity is set (transformer_config.py)."""
    gran = ctx.get(key.rsplit(".", 1)[0] + ".recompute_granularity")
    return gran in ("full", "selective")


@rule("types.none_string", None)
def none_strings(ctx: RuleContext):
    """``key=None`` on the command line: Hydra's override grammar reads it as the string "None", not null."""
    for key in sorted(ctx.set_keys):
        value = ctx.get(key)
        if not isinstance(value, str) or value.strip() != "None":  # "none" is a word some keys take
            continue
        info = ctx.variant.keys.get(key)
        if info is not None and expected_type(info) in ("int", "float", "bool"):
            continue  # types.value says it is not a number or flag
        leaf = key.rsplit(".", 1)[-1]
        if ".megatron.override_transformer_config." in key and leaf in _MEGATRON_WORDS and (
                leaf == "recompute_granularity" or _recomputes(ctx, key)):
            words = " or ".join(f'"{w}"' for w in _MEGATRON_WORDS[leaf])
            yield finding(Severity.ERROR, [key],
                          f"{key}={value} is the string {value!r} to Hydra, not null: megatron-core refuses it when "
                          f"verl's Megatron worker builds the model ({leaf} must be {words}, or null for none)",
                          f"Write {key}=null", [f"{key}=null"], stage=Stage.STARTUP)
        else:
            yield finding(Severity.WARNING, [key],
                          f"{key}={value} is the string {value!r} to Hydra, not null (unset): verl and what it hands "
                          "the value to see a name",
                          f"Write {key}=null if you meant unset", [f"{key}=null"], stage=Stage.ADVICE)
