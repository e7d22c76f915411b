"""The findings of a composition: an override Hydra refuses (an unknown key, with what the user most likely meant:
a moved key, the same setting under the engine the config was composed for, or a key close in spelling), a crash
of Hydra's on an odd override, and the one-line shape they share. Split from :mod:`wizard.core.verl.compose`,
which applies the overrides. Pure."""

from __future__ import annotations

from wizard.core.findings import Finding, Severity, Stage
from wizard.core.verl.moves import Moves
from wizard.core.verl.overrides import ParsedOverride, one_line
from wizard.core.verl.schema import SchemaVariant

def compose_finding(rule: str, keys: list[str], *, message: str, fix: str,
                     severity: Severity = Severity.ERROR, fix_overrides: list[str] | None = None,
                     fix_auto: bool = True, data: dict | None = None) -> Finding:
    return Finding(rule=rule, severity=severity, stage=Stage.COMPOSE, keys=keys, message=message, fix=fix,
                   fix_overrides=fix_overrides or [], fix_auto=fix_auto, data=data)


def _whole_value(key: str) -> str:
    return f"the whole value instead, e.g. {key}=[...]"


def crash_finding(p: ParsedOverride, exc: Exception) -> Finding:
    target = "a list element" if p.key.rpartition(".")[2].isdigit() else p.key
    return compose_finding(
        "compose.override_crash",
        [p.key],
        message=f"Hydra stops with {type(exc).__name__} on {p.text!r} ({one_line(str(exc))}): verl would exit "
        f"with a traceback before it starts",
        fix=f"Hydra cannot {'delete' if p.kind == '~' else 'change'} {target} this way; "
        "set " + _whole_value(p.key.rpartition(".")[0] or p.key),
    )


def override_finding(p: ParsedOverride, hydra_message: str, variant: SchemaVariant, moves: Moves | None,
                      removed_by: str | None = None) -> Finding:
    """``removed_by``: the earlier override that deleted or replaced a section above ``p``'s key, if one did."""
    key = p.key
    guess = False  # a fix that is a guess: offered, not applied by check --fix
    moved = moves.lookup(key) if moves else None
    info = variant.keys.get(key)
    fix_overrides: list[str] = []
    value_part = p.text.split("=", 1)[1] if "=" in p.text else ""
    if moved is not None:
        new_key, note = moved
        message = f"{key} does not exist in verl {variant_version(moves)}: it moved to {new_key}"
        if note:
            message += f" ({note})"
        if new_key:
            fix = f"{p.kind}{new_key}={value_part}" if p.kind != "~" else f"~{new_key}"
            fix_overrides = [fix]
        else:
            fix = "Remove it"
    elif info is not None and not info.in_yaml and p.kind == "":
        message = f"{key} is a field of verl's config class but not in its YAML, so it needs a '+'"
        fix = f"+{key}={value_part}"
        fix_overrides = [fix]
    elif p.kind == "+" and info is not None:
        message = f"{key} already exists, so '+' cannot add it; drop the '+' to change it"
        fix = f"{key}={value_part}"
        fix_overrides = [fix]
    elif (engine_key := fsdp_only(key, variant)) is not None:
        # an FSDP engine setting in a config composed for another engine (model_engine=megatron over a script or
        # preset written for FSDP): its counterpart where the engine has the same setting, else nothing to keep; a
        # "did you mean" by spelling would point at an unrelated key (fsdp_size -> profiler)
        head, counterpart = engine_key
        message = (f"Unknown key {key}: it is a key of verl's FSDP engine config, and this config was composed for "
                   f"the {variant.engine} engine (no {head}.fsdp_config section; {hydra_message})")
        if counterpart and p.kind != "~":
            message += f"; did you mean {counterpart}?"
            fix = f"{'' if variant.keys[counterpart].in_yaml else '+'}{counterpart}={value_part}"
            fix_overrides = [fix]
        else:  # nothing to delete under this engine, or no such setting in it: the word goes
            note = ("nothing to delete" if p.kind == "~" else
                    f"the {variant.engine} engine has no counterpart" + (f" ({counterpart} is its own, set it there "
                                                                         "if you meant it)" if counterpart else ""))
            fix = f"Remove it: {note}"
            return compose_finding("compose.unknown_key", [key], message=message, fix=fix,
                                    data={"replaces": {"key": key, "kind": p.kind}, "drop": True})
    elif ".megatron." in f".{key}." and not any(k.startswith(key.split(".megatron.")[0] + ".megatron")
                                              for k in variant.keys):
        # a Megatron key in a config composed for FSDP: the engine is switched as a whole, not key by key (a
        # "did you mean" would point at rollout.pipeline_model_parallel_size, which verl refuses above 1)
        message = (f"Unknown key {key}: it is a key of verl's Megatron config, and this config was composed for FSDP "
                   f"(no {key.split('.megatron.')[0]}.megatron section; {hydra_message})")
        fix = "Switch the engine as a whole: model_engine=megatron (or --config-name=ppo_megatron_trainer)"
        fix_overrides = ["model_engine=megatron"]
    elif key in variant.keys:
        # a key of verl's config that an earlier override took away (``~section``, or the section set to a value):
        # suggesting the key itself would only repeat the refusal
        by = f" ({removed_by})" if removed_by else ""
        message = (f"{key} is a key of verl's config, but an earlier override removed its section{by}, so Hydra "
                   f"cannot set it ({hydra_message})")
        fix = f"Drop the override that removes its section{by}, or add the key back with a leading '+'"
    else:
        suggestions = [s for s in variant.suggest(key) if s != key]
        message = f"Unknown key {key}: Hydra refuses it ({hydra_message})"
        parent = variant.keys.get(suggestions[0]) if suggestions else None
        if (parent is not None and parent.type == "dict" and parent.default == {} and p.kind == "" and value_part
                and key.startswith(suggestions[0] + ".")):
            # a key added under a free-form mapping that is empty in verl's YAML (engine_kwargs.vllm: {}): Hydra adds
            # it with '+' (its own message says so); a list value there would break verl's ``.items()``
            message = (f"Unknown key {key}: {suggestions[0]} is an empty mapping in verl's config, so Hydra only "
                       f"adds a key to it with a leading '+' ({hydra_message})")
            fix = f"+{key}={value_part}"
            fix_overrides = [fix]
        elif suggestions and key.startswith(suggestions[0] + "."):  # inside a value (a list element's field)
            message = f"Unknown key {key}: {suggestions[0]} holds a value, not keys ({hydra_message})"
            fix = "Set " + _whole_value(suggestions[0])
        elif suggestions:
            message = f"Unknown key {key}; did you mean {' or '.join(suggestions)}?"
            fix = f"{p.kind}{suggestions[0]}={value_part}" if p.kind != "~" else f"~{suggestions[0]}"
            fix_overrides = [fix]
            # deleting another key because its name is close is a guess (~actor.fsdp_config -> ~actor.profiler
            # under Megatron): offered, never applied on its own
            guess = p.kind == "~"
        else:
            fix = "Remove it, or check the key against verl's config (verl-wizard keys)"
    # the fix sets the right key (or the same one with the right prefix): applying it also takes this word off the
    # command line, or Hydra would refuse it again (named by its key and prefix: no value in a finding)
    engine_switch = fix_overrides == ["model_engine=megatron"]
    replaces = {"key": key, "kind": p.kind} if fix_overrides and not engine_switch else None
    return compose_finding(
        "compose.unknown_key" if moved is None else "compose.moved_key",
        [key],
        message=message,
        fix=fix,
        fix_overrides=fix_overrides,
        # the engine is a choice: switching it leaves the FSDP keys the config sets
        fix_auto=not engine_switch and not guess,
        data={"replaces": replaces} if replaces else None,
    )


def _has_fsdp_sections(variant: SchemaVariant) -> bool:
    """Whether this engine's config has FSDP engine sections (``fsdp_config``) at all."""
    return any(".fsdp_config" in k for k in variant.keys)


def remover(overrides: list[ParsedOverride], p: ParsedOverride) -> str | None:
    """The last override before ``p`` that deletes or sets a section above ``p``'s key (``~a.b`` before ``a.b.c=1``)."""
    found = None
    for q in overrides:
        if q is p:
            break
        if q.package is None and p.key.startswith(q.key + ".") and (q.kind == "~" or q.is_plain):
            found = q.text
    return found


def fsdp_only(key: str, variant: SchemaVariant) -> tuple[str, str | None] | None:
    """(the role, its engine's counterpart key or None) for a key of the FSDP engine section (``ROLE.fsdp_config``
    or a key below it) in a variant that has no such section; None otherwise. The counterpart is the same setting
    in the Megatron section of the same role (``fsdp_config.param_offload`` -> ``megatron.param_offload``)."""
    # the actor's and reference's section is ROLE.fsdp_config, the critic's critic.fsdp (verl 0.9.1's YAML)
    section = ".fsdp." if key.startswith("critic.fsdp.") or key == "critic.fsdp" else ".fsdp_config."
    head, sep, rest = key.partition(section)
    if not sep:
        if not key.endswith(section.rstrip(".")):
            return None
        head, rest = key[: -len(section.rstrip("."))], ""
    if not head or _has_fsdp_sections(variant):
        return None
    counterpart = f"{head}.megatron.{rest}" if rest else None
    return head, counterpart if counterpart in variant.keys else None


def variant_version(moves: Moves | None) -> str:
    return moves.version if moves else "0.9.x"
