"""A composed config read as verl reads it: resolved values (interpolations, defaults), what was set, and the
facts verl derives from them (GPU count, which models it loads).

Values that no override touches are cached across checks on the schema variant, so the thousandth check reads
most keys without OmegaConf's resolver."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from omegaconf import DictConfig, OmegaConf

from wizard.core.verl import roles
from wizard.core.verl.schema import SchemaVariant


class _Unresolvable:
    def __repr__(self) -> str:
        return "<unresolvable>"


UNRESOLVABLE = _Unresolvable()


@dataclass
class ResolvedConfig:
    cfg: DictConfig
    variant: SchemaVariant
    set_keys: set[str] = field(default_factory=set)
    # Every key an override sets, adds or deletes: values that depend on none of them are cached
    # across checks. None (unknown) caches nothing.
    touched: frozenset[str] | None = None
    # Values set by overrides as plain values (see Composed.plain_values): no lookup needed.
    plain_values: Mapping[str, object] = field(default_factory=dict)
    _memo: dict = field(default_factory=dict, repr=False)

    def get(self, key: str, default=None):
        """The resolved value of ``key`` as verl would read it; UNRESOLVABLE if it cannot resolve."""
        memo_key = (key, default if isinstance(default, (int, str, bool, type(None))) else id(default))
        if memo_key not in self._memo:
            self._memo[memo_key] = self._get(key, default)
        return self._memo[memo_key]

    def _get(self, key: str, default=None):
        if key in self.plain_values:
            return self.plain_values[key]
        cacheable = default is None and self._untouched(key)
        if cacheable:
            cache = self.variant.resolved_defaults
            if key in cache:
                value = cache[key]
                return copy.deepcopy(value) if isinstance(value, (list, dict)) else value
        value = self._select(key, default)
        if cacheable and value is not UNRESOLVABLE:
            self.variant.resolved_defaults[key] = copy.deepcopy(value) if isinstance(value, (list, dict)) else value
        return value

    def untouched(self, key: str) -> bool:
        """True when no override touches ``key`` or a key its default reads: its value is verl's default."""
        return self._untouched(key)

    def _untouched(self, key: str) -> bool:
        """True when no override touches ``key`` or a key its default reads: its value is verl's default."""
        deps = self.variant.interpolation_deps(key)
        if deps is None:
            return False
        touched = self.touched
        if touched is None:
            return False
        if not touched:
            return True
        for dep in deps:
            parts = dep.split(".")
            for i in range(1, len(parts) + 1):
                if ".".join(parts[:i]) in touched:
                    return False
            if dep in self._touched_ancestors:
                return False
        return True

    @property
    def _touched_ancestors(self) -> set[str]:
        if "_anc" not in self._memo:
            self._memo["_anc"] = {".".join(t.split(".")[:i]) for t in self.touched for i in range(1, t.count(".") + 1)}
        return self._memo["_anc"]

    def _select(self, key: str, default=None):
        if default is None:
            found, value = self._simple(key)
            if found:
                return value
        try:
            value = OmegaConf.select(self.cfg, key, default=default, throw_on_missing=False)
        except Exception:  # noqa: BLE001 - interpolation errors are reported by their own rule
            return UNRESOLVABLE
        if OmegaConf.is_config(value):
            return OmegaConf.to_container(value, resolve=True)
        return value

    def _simple(self, key: str) -> tuple[bool, object]:
        """(True, value) for a plain leaf or a whole-string ``${a.b}`` / ``${oc.select:a.b,default}``
        over plain leaves, resolved as OmegaConf would without its grammar parser; (False, None)
        for anything else, which OmegaConf then resolves."""
        raw = _raw_leaf(self.cfg, key)
        if raw is _NO:
            return False, None
        if not isinstance(raw, str) or "${" not in raw:
            return (raw != "???"), (None if raw == "???" else raw)
        m = _SIMPLE.match(raw)
        if not m:
            return self._text_interpolation(raw)
        if "${" in (m.group(3) or ""):
            return False, None
        select, ref, fallback = m.group(1), m.group(2), m.group(3)
        if ref.startswith("."):
            return False, None
        target = _raw_leaf(self.cfg, ref)
        if target is _NO:
            if select and fallback is not None and _absent(self.cfg, ref):
                return True, _literal(fallback)
            return False, None
        if isinstance(target, str) and "${" in target:
            return False, None
        if target == "???":
            if select and fallback is not None:
                return True, _literal(fallback)
            return False, None
        return True, target

    def _text_interpolation(self, raw: str) -> tuple[bool, object]:
        """``checkpoints/${a}/${b}``: each piece a plain leaf, joined as text (OmegaConf's str())."""
        pieces = _PIECE.findall(raw)
        if not pieces or raw.count("${") != len(pieces):
            return False, None
        values = {}
        for ref in pieces:
            value = _raw_leaf(self.cfg, ref) if not ref.startswith(".") else _NO
            if value is _NO or value == "???" or (isinstance(value, str) and "${" in value):
                return False, None
            values[ref] = value
        return True, _PIECE.sub(lambda m: str(values[m.group(1)]), raw)

    def int(self, key: str) -> int | None:
        """The value if it is an int verl can do arithmetic with, else None."""
        value = self.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def num(self, key: str) -> float | None:
        value = self.get(key)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def missing(self, key: str) -> bool:
        try:
            return _is_missing(self.cfg, key) if "." in key else OmegaConf.is_missing(self.cfg, key)
        except Exception:  # noqa: BLE001
            return False

    # Derived facts, computed exactly as verl computes them.
    @property
    def n_gpus(self) -> int | None:
        per_node, nodes = self.int("trainer.n_gpus_per_node"), self.int("trainer.nnodes")
        return per_node * nodes if per_node is not None and nodes is not None else None

    @property
    def dynamic_bsz(self) -> bool:
        return bool(self.get("actor_rollout_ref.actor.use_dynamic_bsz"))

    @property
    def strategy(self):
        return self.get("actor_rollout_ref.actor.strategy")

    @property
    def need_ref(self) -> bool:
        """verl.trainer.ppo.utils.need_reference_policy."""
        return roles.need_ref(self)

    @property
    def need_critic(self) -> bool:
        """verl.trainer.ppo.utils.need_critic."""
        return roles.need_critic(self)

    def is_set(self, key: str) -> bool:
        return key in self.set_keys


_NO = object()
_PIECE = re.compile(r"\$\{\s*([\w.\-]+)\s*\}")
_SIMPLE = re.compile(r"^\$\{(oc\.select:)?\s*([\w.\-]+)\s*(?:,\s*(.*?)\s*)?\}$")


def _raw_leaf(cfg: DictConfig, key: str):
    """The stored value of a plain leaf (interpolations unresolved), or _NO when the path is not
    plain dictionaries down to a value node."""
    node = cfg
    for part in key.split("."):
        content = node._content if isinstance(node, DictConfig) else None
        if not isinstance(content, dict):
            return _NO
        node = content.get(part)
        if node is None:
            return _NO
    if isinstance(node, DictConfig) or not hasattr(node, "_val") or OmegaConf.is_list(node):
        return _NO
    return node._val


def _absent(cfg: DictConfig, key: str) -> bool:
    """True when some dictionary on the path to ``key`` lacks the next part (oc.select's default case)."""
    node = cfg
    for part in key.split("."):
        content = node._content if isinstance(node, DictConfig) else None
        if not isinstance(content, dict):
            return False
        if part not in content:
            return True
        node = content[part]
    return False


def _literal(text: str):
    """An oc.select default as OmegaConf's grammar reads it (null, numbers, bools, [], {}, text)."""
    from wizard.core.verl.overrides import OverrideSyntaxError, parse_override

    try:
        return parse_override(f"x={text}").value()
    except OverrideSyntaxError:
        return text


def _is_missing(cfg: DictConfig, key: str) -> bool:
    parent_key, _, leaf = key.rpartition(".")
    parent = OmegaConf.select(cfg, parent_key)
    return OmegaConf.is_config(parent) and leaf in parent.keys() and OmegaConf.is_missing(parent, leaf)




def default_values(variant: SchemaVariant, keys: tuple[str, ...]) -> dict:
    """verl's own value of each of ``keys`` when no override touches the config, from the schema snapshot: the
    default config resolved (interpolations followed), a dataclass field's own default where the YAML has no key
    (``+`` keys), None where verl has neither. Kept on the variant: the same for every check."""
    memo = variant.__dict__.setdefault("_default_values", {})
    if keys not in memo:
        # a config of its own: the shared default config is changed in place while a check composes on it
        resolved = ResolvedConfig(cfg=OmegaConf.create(variant.tree), variant=variant, touched=frozenset())
        out = {}
        for key in keys:
            info = variant.keys.get(key)
            if info is not None and not info.in_yaml:
                out[key] = info.default
                continue
            value = resolved.get(key)
            out[key] = None if value is UNRESOLVABLE else value
        memo[keys] = out
    return dict(memo[keys])
