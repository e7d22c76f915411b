"""Plan <-> verl overrides.

Reading: an override becomes a Plan field only when doing so cannot change the
effective config: a plain ``key=value`` of a modelled key, set once, with no other
override on an ancestor or descendant key, whose value has the field's exact type
and renders back to the same value. Everything else stays verbatim, in order, in
``passthrough``. Writing: modelled fields first (section order), then passthrough.
"""

from __future__ import annotations

import re
from functools import lru_cache

from pydantic import TypeAdapter, ValidationError

from wizard.core.verl.overrides import OverrideSyntaxError, ParsedOverride, parse_override, render_override, render_value, same_value
from wizard.core.plan.model import Plan, field_map
from wizard.core.findings import Finding, about_environment, plan_fix
from wizard.core.secrets import hide_secrets


@lru_cache(maxsize=None)
def _adapter(key: str) -> TypeAdapter:
    section, name = field_map()[key]
    annotation = Plan.model_fields[section].annotation.model_fields[name].annotation
    return TypeAdapter(annotation)


def _field_value(key: str, value):
    """The value as the field stores it, or raise ValueError if the field cannot hold it exactly."""
    if value is None:
        raise ValueError("an explicit null is not 'unset': keep it verbatim")
    if isinstance(value, str) and "${" in value:
        raise ValueError("interpolation")
    try:
        stored = _adapter(key).validate_python(value, strict=True)
    except ValidationError as exc:
        raise ValueError(str(exc)) from None
    if not same_value(stored, value):
        raise ValueError("not exact")
    return stored


def _try_parse(text: str) -> ParsedOverride | None:
    try:
        return parse_override(text)
    except OverrideSyntaxError:
        return None


def _last_of_each(parsed: list[ParsedOverride | None], fields) -> set[int]:
    """A plain ``key=value`` of a plan field set again later by another is dropped: Hydra takes the last, so the plan
    says it once (a script's ``trainer.nnodes=2`` with ``--set trainer.nnodes=1`` after it). Only where both values
    are ones the field holds (an invalid first one is an error verl would stop at) and nothing between
    the two could read or change what the first set: a deletion (``~key``, ``~key=value`` deletes only a match), an
    append, a dict value (merged into what came before: ``OmegaConf.update(merge=True)``) or any override of a
    parent or a child keeps both, as does a sweep or a dict value itself."""
    def settable(p) -> bool:  # a plain set of a plan field with a value the field holds: it replaces what was there
        if p is None or not p.is_plain or p.is_sweep or p.key not in fields:
            return False
        try:
            _field_value(p.key, p.value())
        except Exception:  # noqa: BLE001 - not a value the field holds exactly (a null, an interpolation, a type)
            return False
        return True

    dropped: set[int] = set()
    for i, p in enumerate(parsed):
        if not settable(p):
            continue
        for j in range(i + 1, len(parsed)):
            q = parsed[j]
            if q is None or not _related(q.key, p.key):
                continue
            if q.key == p.key and settable(q):
                dropped.add(i)
            break  # the next override on this key (or a parent or child): only a plain set replaces the first
    return dropped


def _related(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def plan_from_overrides(
    overrides: list[str],
    *,
    base: Plan | None = None,
    config_name: str = "ppo_trainer",
    config_path: str | None = None,
    script_env: list[str] | tuple[str, ...] = (),
    script_runtime: list[str] | tuple[str, ...] = (),
    name: str = "",
) -> Plan:
    overrides, _ = hide_secrets(overrides)  # a Plan never holds a secret: see wizard.core.secrets
    plan = (base or Plan()).model_copy(deep=True)
    plan.config_name = config_name
    plan.config_path = config_path
    plan.script_env = sorted(set(plan.script_env) | set(script_env))
    plan.script_runtime = sorted(set(plan.script_runtime) | set(script_runtime))
    if name:
        plan.name = name
    fields = field_map()
    parsed = [_try_parse(t) for t in overrides]
    dropped = _last_of_each(parsed, fields)
    overrides = [t for i, t in enumerate(overrides) if i not in dropped]
    parsed = [p for i, p in enumerate(parsed) if i not in dropped]
    keys = [p.key for p in parsed if p is not None]
    passthrough: list[str] = []
    for text, p in zip(overrides, parsed):
        if p is None or not p.is_plain or p.is_sweep or p.key not in fields:
            passthrough.append(text)
            continue
        if sum(1 for k in keys if _related(k, p.key)) != 1:
            passthrough.append(text)
            continue
        try:
            value = _field_value(p.key, p.value())
        except ValueError:
            passthrough.append(text)
            continue
        section, field_name = fields[p.key]
        setattr(getattr(plan, section), field_name, value)
    plan.passthrough = passthrough
    return plan


def apply_overrides(plan: Plan, overrides: list[str]) -> Plan:
    """Apply edits (``--set``, a GUI fix button) to a plan; later ones win, as on verl's command line."""
    plan = plan.model_copy(deep=True)
    fields = field_map()
    for text in overrides:
        parse_override(text)  # OverrideSyntaxError is the caller's to report
        kept = hide_secrets([text])[0]  # a Plan never holds a secret (wizard.core.secrets)
        if not kept:
            continue
        text = kept[0]
        p = parse_override(text)
        plain_same_key = [
            i for i, t in enumerate(plan.passthrough) if (q := _try_parse(t)) is not None and q.is_plain and q.key == p.key
        ]
        if p.is_plain and p.key in fields and not p.is_sweep:
            try:
                value = _field_value(p.key, p.value())
            except ValueError:
                value = None
            else:
                section, field_name = fields[p.key]
                setattr(getattr(plan, section), field_name, value)
                plan.passthrough = [t for i, t in enumerate(plan.passthrough) if i not in plain_same_key]
                continue
        if p.key in fields and (p.kind == "~" or p.is_plain):
            section, field_name = fields[p.key]
            setattr(getattr(plan, section), field_name, None)
        if p.is_plain and plain_same_key:
            plan.passthrough[plain_same_key[-1]] = text
            plan.passthrough = [t for i, t in enumerate(plan.passthrough) if i not in plain_same_key[:-1]]
        else:
            if p.kind in ("+", "++") and p.package is None:
                # adding the key replaces what set it before: a plain override of a key verl's YAML lacks (Hydra
                # refuses it; the fix is this '+'), or an earlier add (a second '+' of one key is an error too)
                plan.passthrough = [t for t in plan.passthrough if (q := _try_parse(t)) is None or q.key != p.key
                                    or q.package is not None or q.kind not in ("", "+", "++")]
            plan.passthrough.append(text)
    return plan


def plan_value(plan: Plan, key: str):
    """``key``'s value in ``plan``: its field where the Plan models it, else what the passthrough sets it to, the
    last word winning as on verl's command line (None: nothing sets it, verl's default; ``~key`` deletes it)."""
    if key in field_map():
        section, name = field_map()[key]
        value = getattr(getattr(plan, section), name)
        if value is not None:
            return value
    value = None
    for text in plan.passthrough:
        if (o := _try_parse(text)) is not None and o.key == key and o.package is None:
            value = None if o.kind == "~" else o.value()
    return value


def with_passthrough(plan: Plan, key: str, value) -> Plan:
    """``plan`` with its passthrough setting ``key`` (a key the Plan does not model) to ``value``; None: nothing sets
    it (verl's default). OverrideSyntaxError where the value cannot be written as an override."""
    plan = plan.model_copy(deep=True)
    plan.passthrough = [t for t in plan.passthrough
                        if (o := _try_parse(t)) is None or o.key != key or o.package is not None]
    return plan if value is None else apply_overrides(plan, [render_override(key, value)])


def plan_overrides(plan: Plan) -> list[str]:
    """The verl overrides this plan stands for: modelled fields, then passthrough."""
    out = []
    for key, (section, field_name) in field_map().items():
        value = getattr(getattr(plan, section), field_name)
        if value is not None:
            out.append(render_override(key, value))
    return out + list(plan.passthrough)  # config name/path travel as --config-name/--config-path


def hide_known_values(plan: Plan, known: dict[str, str]) -> tuple[Plan, list[str]]:
    """``plan`` with every value of ``known`` (the secret variables of the environment the plan is written or run
    from) replaced by its ``${oc.env:NAME}`` reference wherever it sits, and a note per key changed: a credential
    in a key the wizard does not know as secret (an experiment name holding a W&B key) never reaches a file or a
    command line."""
    if not known:
        return plan, []
    from wizard.core.secrets import hide_known

    plan = plan.model_copy(deep=True)
    notes: list[str] = []

    def hide(text: str) -> str:
        new, names = hide_known(text, known)
        if names:
            notes.append(f"{text.split('=', 1)[0].lstrip('+~')} holds the value of {', '.join(names)}: written as "
                         f"${{oc.env:{names[0]}}}, so no file or command line holds it (verl reads it from the "
                         "environment where it runs)")
        return new

    plan.passthrough = [hide(t) for t in plan.passthrough]
    own = set(plan.passthrough)
    edits = [new for t in plan_overrides(plan) if t not in own and (new := hide(t)) != t]
    return (apply_overrides(plan, edits) if edits else plan), notes


__all__ = ["apply_overrides", "drops_word", "hide_known_values", "plan_from_overrides", "plan_overrides", "plan_value",
           "render_value", "with_passthrough"]


def _model_slug(path: str) -> str:
    """How a preset's experiment name spells its model: Qwen/Qwen2.5-0.5B-Instruct -> qwen2.5_0.5b."""
    name = path.rstrip("/").rsplit("/", 1)[-1].lower()
    for tail in ("-instruct", "-chat", "-it"):
        name = name.removesuffix(tail)
    return re.sub(r"[^a-z0-9.]+", "_", name).strip("_")


def follow_model(before: Plan, after: Plan) -> Plan:
    """``after`` with its experiment name following a new policy model, where the name spells the old one and was
    not itself changed: a preset's ``grpo_smoke_qwen2.5_0.5b`` run with Qwen/Qwen2.5-7B-Instruct becomes
    ``grpo_smoke_qwen2.5_7b`` (its checkpoints and logger runs would otherwise carry the wrong model's name)."""
    old, new, name = before.models.actor_path, after.models.actor_path, after.trainer.experiment_name
    if not (old and new and name) or old == new or name != before.trainer.experiment_name:
        return after
    a, b = _model_slug(old), _model_slug(new)
    if not a or not b or a == b or a not in name:
        return after
    out = after.model_copy(deep=True)
    out.trainer.experiment_name = name.replace(a, b)
    return out


def apply_fix(plan: Plan, finding: Finding) -> Plan:
    """``plan`` with ``finding``'s fix applied (none for an environment finding): its overrides, and the word it
    replaces taken off the command line (a misspelled or moved key: ``data.train_bach_size=32`` gives way to
    ``data.train_batch_size=32``, or Hydra would refuse it again), wherever the plan holds it: verbatim, or as a
    field of the plan (``actor_rollout_ref.actor.fsdp_config.param_offload``, which the Megatron config lacks, gives
    way to ``actor_rollout_ref.actor.megatron.param_offload``). A fix that only drops its word (``data.drop``: an
    FSDP setting the engine has no counterpart for) removes it and sets nothing."""
    fix = plan_fix(finding)
    out = apply_overrides(plan, fix)
    gone = (finding.data or {}).get("replaces")
    if isinstance(gone, dict) and gone.get("key"):
        keep = set(fix)  # never the fix itself (a '+' fix of the same key)
        kinds = gone.get("kinds") or [gone.get("kind", "")]  # the word's prefix, or any of these
        out.passthrough = [t for t in out.passthrough if t in keep or (q := _try_parse(t)) is None
                           or q.key != gone["key"] or q.kind not in kinds or q.package is not None]
        fields = field_map()
        if "" in kinds and gone["key"] in fields and not any(
                (q := _try_parse(t)) is not None and q.key == gone["key"] for t in fix):
            section, field_name = fields[gone["key"]]
            setattr(getattr(out, section), field_name, None)
    return out


def drops_word(finding: Finding) -> bool:
    """Whether ``finding``'s fix is taking its word off the command line, with nothing set in its place."""
    data = finding.data or {}
    return bool(data.get("drop")) and isinstance(data.get("replaces"), dict) and not about_environment(finding)
