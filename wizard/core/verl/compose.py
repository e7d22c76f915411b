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

from wizard.core.findings import Finding, Severity
from wizard.core.verl.moves import Moves
from wizard.core.verl.override_findings import compose_finding, crash_finding, override_finding, remover
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
                compose_finding(
                    "compose.syntax",
                    [text.split("=", 1)[0].lstrip("+~")],
                    message=f"Hydra cannot parse the override {text!r}: {exc}",
                    fix=("Write it as KEY=VALUE, e.g. data.train_batch_size=64" if "=" not in text.lstrip("~") else
                         "Quote values that contain spaces, commas or brackets, e.g. key='a b'"),
                )
            )

    if config_name not in CONFIG_NAME_ENGINES:
        findings.append(
            compose_finding(
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
                compose_finding(
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
                    _failed(findings, override_finding(p, one_line(str(exc)), variant, moves, remover(value_overrides, p)))
                except (TypeError, ValueError, IndexError, KeyError, RecursionError) as exc:  # Hydra's crash: ~list.0, 500 parts
                    _failed(findings, crash_finding(p, exc))
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


def _failed(findings: list[Finding], finding: Finding) -> None:
    """``finding`` (an override Hydra refused) added in place of an earlier one of the same rule for the same key:
    a key set several times is judged by its last setting, as Hydra takes the last value (and a plan keeps it)."""
    findings[:] = [f for f in findings if (f.rule, list(f.keys)) != (finding.rule, list(finding.keys))]
    findings.append(finding)


def _group_override(schema: VerlSchema, p: ParsedOverride, engine: str, findings: list[Finding]) -> str:
    if p.key == "model_engine":
        value = p.value()
        if value in schema.variants:
            return value
        findings.append(
            compose_finding(
                "compose.group_option",
                ["model_engine"],
                message=f"model_engine={value!r} is not a config verl {schema.verl_version} ships",
                fix="One of: " + ", ".join(schema.engines),
                fix_overrides=[],
            )
        )
        return engine
    findings.append(
        compose_finding(
            "compose.group_unchecked",
            [p.key],
            severity=Severity.WARNING,
            message=f"{p.text!r} swaps a whole config group; the wizard does not model that, so keys below "
            f"{p.key} are checked against the default group",
            fix="Run the verl pre-flight (verl-wizard check --verl) for an exact verdict",
        )
    )
    return engine
