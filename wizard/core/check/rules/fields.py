"""Keys of the sections verl builds into config classes: a field the class lacks, a field left at ``???``.

Hydra lets ``+key``/``++key`` add anything, so ``+actor_rollout_ref.actor.ppo_epoch=2`` composes; the failure
comes when verl builds the section's class, at that build's stage (see ``sections``): ``TypeError:
FSDPActorConfig.__init__() got an unexpected keyword argument 'ppo_epoch'`` inside validate_config for the actor,
minutes later for the rollout. A ``???`` left in a built section fails the same way, with MissingMandatoryValue.
"""

from __future__ import annotations

import difflib

from wizard.core.findings import Severity
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.check.rules.sections import WHEN, build_of, built_sections, fields, is_missing, targets
from wizard.core.verl.override_findings import fsdp_only



def _owner(ctx: RuleContext, key: str) -> str | None:
    """The innermost section with a class that ``key`` lies in."""
    parts = key.split(".")
    sections = targets(ctx)
    for i in range(len(parts) - 1, 0, -1):
        path = ".".join(parts[:i])
        if path in sections:
            return path
    return None


_ABSENT = object()  # ctx.get's default where the composed config has no such key


def _render(value) -> str:
    from wizard.core.verl.overrides import render_value

    return render_value(value)


@rule("fields.unknown", None)  # the stage verl builds the section at
def unknown_field(ctx: RuleContext):
    """A key added with +/++ under a section verl builds into a class that has no such field."""
    for key in sorted(ctx.set_keys):
        if key in ctx.variant.keys:
            continue
        path = _owner(ctx, key)
        build = build_of(ctx, path) if path else None
        if build is None:
            continue
        child = key[len(path) + 1:].split(".")[0]
        names = fields(ctx, path)
        if child in names:
            continue
        if ctx.get(key, _ABSENT) is _ABSENT:
            continue  # Hydra refused it (compose.unknown_key says so) or a later override deleted it: verl never sees it
        cls = targets(ctx)[path]
        # the same setting elsewhere in this section first (fsdp_config.param_offload under Megatron is
        # megatron.param_offload), then a field spelt like the one added; never the key itself
        same = [k for k in ctx.variant.suggest(key) if k != key and k.startswith(path + ".")
                and k.rsplit(".", 1)[-1] == key.rsplit(".", 1)[-1] and ctx.variant.keys[k].type != "dict"]
        if same:
            target = same[0]
        elif child == key[len(path) + 1:]:  # a field of the class spelt close (not a section named close: the
            close = difflib.get_close_matches(child, names, n=1, cutoff=0.6)  # fsdp_config.x is no model_config.x)
            target = f"{path}.{close[0]}" if close else None
        else:
            target = None
        hint = f"; did you mean {target}?" if target else ""
        fix = [f"~{path}.{child}"]
        if target:
            plus = "" if ctx.variant.keys[target].in_yaml else "+"
            fix.append(f"{plus}{target}={_render(ctx.get(key))}")
        if same:  # set the counterpart in the added word's place (deleting {path}.{child} would take its siblings)
            fix = fix[1:]
        f = finding(
            Severity.ERROR, [key],
            f"{key} is not a field of {cls} ({path}){hint}; Hydra adds it, but verl builds {path} into {cls} "
            f"{WHEN[build.stage]} and stops with: TypeError: {cls}.__init__() got an unexpected keyword argument "
            f"'{child}'",
            (f"Use {target}" if target else f"Remove it; {cls}'s fields are: {', '.join(names)}"),
            fix, fix_auto=bool(target), stage=build.stage,
        )
        if same:
            f = f.model_copy(update={"data": {"replaces": {"key": key, "kinds": ["+", "++"]}}})
        elif not target and fsdp_only(key, ctx.variant) is not None:
            # an FSDP setting added under another engine (model_engine=megatron over an FSDP script) with no
            # counterpart there: the added word goes, as the same key without '+' does (compose.unknown_key)
            f = f.model_copy(update={
                "fix": f"Remove it: the {ctx.variant.engine} engine has no counterpart", "fix_overrides": [],
                "fix_auto": True, "data": {"replaces": {"key": key, "kinds": ["+", "++"]}, "drop": True}})
        yield f


@rule("fields.missing", None)  # the stage verl builds the section at
def missing_field(ctx: RuleContext):
    """A field of a built section left at ``???`` (strategy, rollout_n, optim.lr...): the build fails."""
    for section in built_sections(ctx):
        for name in fields(ctx, section.path):
            key = f"{section.path}.{name}"
            if key == "actor_rollout_ref.rollout.name" or key not in ctx.variant.keys:
                continue  # rollout.name has its own rule with the engines to choose from
            if ctx.variant.keys[key].type == "dict" or not _missing(ctx, key):
                continue
            if build_of(ctx, key) is not section.build:
                continue
            yield finding(
                Severity.ERROR, [key],
                f"{key} is '???' (a value verl requires and has no default for); verl builds {section.path} into "
                f"{section.cls} {WHEN[section.stage]} and stops with: Missing mandatory value: {key}",
                f"Set {key}", fix_auto=False, stage=section.stage,
            )


def _missing(ctx: RuleContext, key: str) -> bool:
    """``is_missing``, remembered on the schema variant for a key no override touches (its default's verdict is
    the same in every check, like the resolved defaults ``RuleContext.get`` keeps)."""
    plain = ctx.plain_values.get(key, _UNSET)
    if plain is not _UNSET:
        return plain == "???"
    if not ctx.untouched(key):
        return is_missing(ctx, key)
    known = ctx.variant.__dict__.setdefault("_missing_defaults", {})
    if key not in known:
        known[key] = is_missing(ctx, key)
    return known[key]


_UNSET = object()
