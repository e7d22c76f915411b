"""Compose overrides onto verl's default config, in memory, with Hydra's own rules.

This is what ``hydra.compose(config_name="ppo_trainer", overrides=...)`` does in
``verl.trainer.main_ppo``, minus reading YAML files: the default tree comes from the
schema snapshot, and value overrides are applied by Hydra's own
``_apply_overrides_to_config`` (struct mode, ``+``/``++``/``~`` semantics, the same
error texts). Where Hydra stops at the first error, this applies every override it
can and reports each one it cannot, so a user sees all of them at once.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from dataclasses import dataclass, field

from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra.errors import HydraException
from omegaconf import AnyNode, DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from wizard.core.findings import Finding, Severity, Stage
from wizard.core.verl.moves import Moves
from wizard.core.verl.overrides import OverrideSyntaxError, ParsedOverride, one_line, parse_override
from wizard.core.verl.schema import SchemaVariant, VerlSchema

# Config names verl ships that are the PPO trainer with a different model engine.
CONFIG_NAME_ENGINES = {"ppo_trainer": None, "ppo_megatron_trainer": "megatron"}


@dataclass
class Composed:
    cfg: DictConfig | None
    engine: str
    findings: list[Finding] = field(default_factory=list)
    parsed: list[ParsedOverride] = field(default_factory=list)
    # Keys whose value is exactly an override's plain value (no interpolation): read without OmegaConf.
    plain_values: dict[str, object] = field(default_factory=dict)

    @property
    def touched(self) -> frozenset[str]:
        """Keys any override sets, adds or deletes (for the default-value cache)."""
        return frozenset(p.key for p in self.parsed if p.package is None)

    @property
    def set_keys(self) -> set[str]:
        """Keys an override set or added (not deleted)."""
        return {p.key for p in self.parsed if p.kind != "~" and p.package is None}


def _base(variant: SchemaVariant) -> DictConfig:
    """verl's default config for a variant, built once and kept on the variant (so a schema the adapters
    cached between runs brings it along: building the ~1,300-node tree is most of a first check)."""
    cfg = variant.__dict__.get("base_config")
    if cfg is None:
        cfg = OmegaConf.create(variant.tree)
        OmegaConf.set_struct(cfg, True)
        variant.__dict__["base_config"] = cfg
    return cfg


def build_base_configs(schema: VerlSchema) -> None:
    """Build every variant's default config now (before the schema is cached between runs)."""
    for variant in schema.variants.values():
        _base(variant)


def base_config(schema: VerlSchema, engine: str | None = None) -> DictConfig:
    """A fresh, struct-mode copy of verl's default config for this engine."""
    return copy.deepcopy(_base(schema.variant(engine)))


def compose(
    schema: VerlSchema,
    overrides: list[str],
    *,
    config_name: str = "ppo_trainer",
    moves: Moves | None = None,
) -> Composed:
    """The composed config as a new object the caller may keep."""
    with composed_view(schema, overrides, config_name=config_name, moves=moves) as view:
        view.cfg = copy.deepcopy(view.cfg)
        return view


_LOCK = threading.RLock()


@contextmanager
def composed_view(
    schema: VerlSchema,
    overrides: list[str],
    *,
    config_name: str = "ppo_trainer",
    moves: Moves | None = None,
) -> Iterator[Composed]:
    """The composed config, valid only inside the ``with``: overrides are applied to the
    cached default config and undone on exit (copying the ~1,300-node tree per check
    costs 20x more than everything else)."""
    findings: list[Finding] = []
    parsed: list[ParsedOverride] = []
    for text in overrides:
        try:
            parsed.append(parse_override(text))
        except OverrideSyntaxError as exc:
            findings.append(
                _compose_finding(
                    "compose.syntax",
                    [text.split("=", 1)[0].lstrip("+~")],
                    message=f"Hydra cannot parse the override {text!r}: {exc}",
                    fix=("Write it as KEY=VALUE, e.g. data.train_batch_size=64" if "=" not in text.lstrip("~") else
                         "Quote values that contain spaces, commas or brackets, e.g. key='a b'"),
                )
            )

    if config_name not in CONFIG_NAME_ENGINES:
        findings.append(
            _compose_finding(
                "compose.config_name",
                [],
                severity=Severity.WARNING,
                message=f"--config-name={config_name} is not a config verl ships; the wizard checks the overrides "
                f"against ppo_trainer, the config that file most likely builds on",
                fix="Use the wizard's YAML (defaults: [ppo_trainer, _self_]) or check that file with verl itself",
            )
        )
    engine = CONFIG_NAME_ENGINES.get(config_name) or schema.default_engine
    value_overrides: list[ParsedOverride] = []
    for p in parsed:
        if p.is_plain and p.key in schema.config_groups:
            engine = _group_override(schema, p, engine, findings)
        elif p.is_sweep:
            findings.append(
                _compose_finding(
                    "compose.sweep",
                    [p.key],
                    message=f"{p.text!r} is a Hydra sweep (several values); main_ppo runs one config, not --multirun",
                    fix="Give one value",
                )
            )
        elif p.key.startswith("hydra.") or p.key == "hydra":
            continue  # Hydra's own settings (run dir, logging): not part of verl's config
        else:
            value_overrides.append(p)

    variant = schema.variant(engine)
    with _LOCK:
        cfg = _base(variant)
        undo: list[tuple] = []
        try:
            plain: dict[str, object] = {}
            for p in value_overrides:
                fast = _fast_change(cfg, p)
                if fast is not None:
                    undo.append(fast)
                    value = fast[2]._val
                    if isinstance(value, str) and ("${" in value or value == "???"):
                        plain.pop(p.key, None)
                    else:
                        plain[p.key] = value
                    continue
                for key in [k for k in plain if k == p.key or k.startswith(p.key + ".") or p.key.startswith(k + ".")]:
                    del plain[key]
                added = _fast_add(cfg, p)
                if added is not None:
                    undo.append(added)
                    continue
                undo.append(_snapshot(cfg, p.key))
                try:
                    ConfigLoaderImpl._apply_overrides_to_config([p.hydra], cfg)
                except (HydraException, OmegaConfBaseException) as exc:
                    findings.append(_override_finding(p, one_line(str(exc)), variant, moves, _remover(value_overrides, p)))
                except (TypeError, ValueError, IndexError, KeyError, RecursionError) as exc:  # Hydra's crash: ~list.0, 500 parts
                    findings.append(_crash_finding(p, exc))
            yield Composed(cfg=cfg, engine=engine, findings=findings, parsed=parsed, plain_values=plain)
        finally:
            for snap in reversed(undo):
                _restore(cfg, snap)


def _fast_change(cfg: DictConfig, p: ParsedOverride) -> tuple | None:
    """Apply the commonest override, ``key=primitive`` on an existing plain leaf, in place; its undo.

    What ``OmegaConf.update(cfg, key, value, merge=True)`` does in that case (``setattr`` on the
    parent, then ``_set_value`` on the existing ``AnyNode``) minus the path parsing and flag
    handling it needs for every other case; anything else (``+``/``~``, containers, missing keys,
    typed nodes, list paths) returns None and goes through Hydra. The parity tests hold the two
    paths to the same composed config.
    """
    if not p.is_plain:
        return None
    value = p.value()
    if not isinstance(value, (str, int, float, bool, type(None))):
        return None
    node = cfg
    parts = p.key.split(".")
    for part in parts[:-1]:
        content = node._content if isinstance(node, DictConfig) else None
        if not isinstance(content, dict):
            return None
        node = content.get(part)
    content = node._content if isinstance(node, DictConfig) else None
    if not isinstance(content, dict) or node._get_flag("readonly"):
        return None
    leaf = content.get(parts[-1])
    if type(leaf) is not AnyNode:
        return None
    undo = ("fast", p.key, leaf, leaf._value(), node)
    try:
        leaf._set_value(value)  # validates, e.g. a malformed ${...}: then Hydra says it in its words
    except OmegaConfBaseException:
        return None
    return undo


def _fast_add(cfg: DictConfig, p: ParsedOverride) -> tuple | None:
    """Apply ``+key=primitive`` for a key absent from an existing plain dict, in place; its undo.

    What Hydra does in that case (``OmegaConf.update(cfg, key, value, merge=True, force_add=True)``: an ``AnyNode``
    set on the parent with its struct flag lifted) without lifting the flag, which walks every node below the
    parent: 10,000 added keys under one parent took ~20 s that way. Anything else returns None and goes through
    Hydra; the parity tests hold the two paths to the same composed config."""
    if p.kind != "+" or p.package is not None:
        return None
    value = p.value()
    if not isinstance(value, (str, int, float, bool, type(None))) or (isinstance(value, str) and "$" in value):
        return None
    parts = p.key.split(".")
    parent = _attached(cfg, parts[:-1])
    if (not isinstance(parent, DictConfig) or not isinstance(parent._content, dict) or parts[-1] in parent._content
            or parent._is_typed() or parent._metadata.element_type is not Any or parent._get_flag("readonly")):
        return None
    try:
        node = AnyNode(value=value, key=parts[-1], parent=parent)
    except OmegaConfBaseException:
        return None
    parent._content[parts[-1]] = node
    return ("added", p.key, node, parent)


def _snapshot(cfg: DictConfig, key: str) -> tuple:
    """What is at ``key`` now, to put back later:
    ("leaf", key, value node, raw value) / ("node", key, container) / ("absent", first missing path).
    A path through a list (``trainer.logger.0``) keeps the whole list: an element has no key to restore."""
    parts = key.split(".")
    node = cfg
    for i, part in enumerate(parts):
        if i and (not OmegaConf.is_config(node) or node._is_interpolation() or node._is_none()):
            # a value, an interpolation (``${.save_contents}``) or None where the path goes on: keep it as is
            return ("leaf", ".".join(parts[:i]), node, node._value())
        if OmegaConf.is_list(node):
            return ("node", ".".join(parts[:i]), OmegaConf.to_container(node, resolve=False))
        if not OmegaConf.is_dict(node) or part not in node.keys():
            return ("absent", ".".join(parts[: i + 1]))
        child = node._get_node(part)
        if i == len(parts) - 1:
            if OmegaConf.is_config(child):
                return ("node", key, OmegaConf.to_container(child, resolve=False))
            return ("leaf", key, child, child._value())
        node = child
    return ("absent", key)


def _attached(cfg: DictConfig, parts: list[str]) -> object:
    """The node now at ``parts`` in ``cfg`` (None where the path is gone)."""
    node: object = cfg
    for part in parts:
        content = node._content if isinstance(node, DictConfig) else None
        if not isinstance(content, dict):
            return None
        node = content.get(part)
    return node


def _restore(cfg: DictConfig, snap: tuple) -> None:
    kind, key = snap[0], snap[1]
    if kind == "added":
        node, parent = snap[2], snap[3]
        leaf = key.rpartition(".")[2]
        if _attached(cfg, key.split(".")[:-1]) is parent and parent._content.get(leaf) is node:
            del parent._content[leaf]  # (``del parent[leaf]`` inside open_dict, without walking its siblings)
            return
        kind = "absent"  # a later override replaced the parent: remove by key
    if kind == "fast":
        leaf, old, parent = snap[2], snap[3], snap[4]
        if _attached(cfg, key.split(".")[:-1]) is parent and parent._content.get(key.rpartition(".")[2]) is leaf:
            leaf._val = old  # the node's own earlier value: nothing to validate
            return
        # a later override replaced or deleted a parent (``~a.b`` after ``a.b.c=1``): restore by key
        kind, snap = "leaf", ("leaf", key, leaf, old)
    parent_key, _, leaf = key.rpartition(".")
    parent = OmegaConf.select(cfg, parent_key) if parent_key else cfg
    if kind == "absent":
        if OmegaConf.is_dict(parent) and leaf in parent.keys():
            with open_dict(parent):
                del parent[leaf]
        return
    if kind == "leaf" and OmegaConf.is_dict(parent) and leaf in parent.keys() and parent._get_node(leaf) is snap[2]:
        snap[2]._set_value(snap[3])  # the same value node is still there: put its value back
        return
    value = snap[3] if kind == "leaf" else snap[2]
    with open_dict(cfg):
        OmegaConf.update(cfg, key, value, merge=False, force_add=True)


def _compose_finding(rule: str, keys: list[str], *, message: str, fix: str,
                     severity: Severity = Severity.ERROR, fix_overrides: list[str] | None = None,
                     fix_auto: bool = True, data: dict | None = None) -> Finding:
    return Finding(rule=rule, severity=severity, stage=Stage.COMPOSE, keys=keys, message=message, fix=fix,
                   fix_overrides=fix_overrides or [], fix_auto=fix_auto, data=data)


def _whole_value(key: str) -> str:
    return f"the whole value instead, e.g. {key}=[...]"


def _crash_finding(p: ParsedOverride, exc: Exception) -> Finding:
    target = "a list element" if p.key.rpartition(".")[2].isdigit() else p.key
    return _compose_finding(
        "compose.override_crash",
        [p.key],
        message=f"Hydra stops with {type(exc).__name__} on {p.text!r} ({one_line(str(exc))}): verl would exit "
        f"with a traceback before it starts",
        fix=f"Hydra cannot {'delete' if p.kind == '~' else 'change'} {target} this way; "
        "set " + _whole_value(p.key.rpartition(".")[0] or p.key),
    )


def _group_override(schema: VerlSchema, p: ParsedOverride, engine: str, findings: list[Finding]) -> str:
    if p.key == "model_engine":
        value = p.value()
        if value in schema.variants:
            return value
        findings.append(
            _compose_finding(
                "compose.group_option",
                ["model_engine"],
                message=f"model_engine={value!r} is not a config verl {schema.verl_version} ships",
                fix="One of: " + ", ".join(schema.engines),
                fix_overrides=[],
            )
        )
        return engine
    findings.append(
        _compose_finding(
            "compose.group_unchecked",
            [p.key],
            severity=Severity.WARNING,
            message=f"{p.text!r} swaps a whole config group; the wizard does not model that, so keys below "
            f"{p.key} are checked against the default group",
            fix="Run the verl pre-flight (verl-wizard check --verl) for an exact verdict",
        )
    )
    return engine


def _override_finding(p: ParsedOverride, hydra_message: str, variant: SchemaVariant, moves: Moves | None,
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
            return _compose_finding("compose.unknown_key", [key], message=message, fix=fix,
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
    return _compose_finding(
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
    """Whether this engine's config has FSDP engine sections (``fsdp_config``) at all (kept on the variant)."""
    known = variant.__dict__.get("_has_fsdp_sections")
    if known is None:
        known = variant.__dict__["_has_fsdp_sections"] = any(".fsdp_config" in k for k in variant.keys)
    return known


def _remover(overrides: list[ParsedOverride], p: ParsedOverride) -> str | None:
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
