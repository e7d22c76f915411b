"""A composed config read as verl reads it: resolved values (interpolations, defaults), what was set, and the
facts verl derives from them (GPU count, which models it loads).

Values come from :class:`~wizard.core.verl.resolver.Resolver`, which evaluates, in Python, every interpolation form
verl's config holds (and the ones users write the same way) once per composition, and answers exactly as OmegaConf
would; a form it does not know (``oc.env``, quoting, escapes...) is handed to OmegaConf itself. Values that no
override touches are also cached across checks on the schema variant, so the thousandth check reads most keys from
a dictionary."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field

from omegaconf import DictConfig, OmegaConf

from wizard.core.verl import roles
from wizard.core.verl.resolver import MISSING, UNRESOLVABLE, Resolver
from wizard.core.verl.schema import SchemaVariant

__all__ = ["MISSING", "UNRESOLVABLE", "ResolvedConfig", "Resolver", "default_values"]


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
    _resolver: Resolver | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def resolver(self) -> Resolver:
        """This composition's values, evaluated once each."""
        if self._resolver is None:
            self._resolver = Resolver(self.cfg)
        return self._resolver

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
        value = self.resolver.select(key, default)
        if cacheable and value is not UNRESOLVABLE:
            self.variant.resolved_defaults[key] = copy.deepcopy(value) if isinstance(value, (list, dict)) else value
        return value

    def untouched(self, key: str) -> bool:
        """True when no override touches ``key`` or a key its default reads: its value is verl's default."""
        return self._untouched(key)

    def _untouched(self, key: str) -> bool:
        """True when no override touches ``key`` or a key its default reads: its value is verl's default."""
        touched = self.touched
        if touched is None:
            return False
        reach = _reach(self.variant, key)
        if reach is None:
            return False
        if not touched:
            return True
        deps, above = reach
        return above.isdisjoint(touched) and deps.isdisjoint(self._touched_ancestors)

    @property
    def _touched_ancestors(self) -> frozenset[str]:
        """Every section above a touched key (an override of ``a.b.c`` touches what ``a.b`` holds)."""
        if "_anc" not in self._memo:
            self._memo["_anc"] = frozenset(".".join(t.split(".")[:i])
                                           for t in self.touched for i in range(1, t.count(".") + 1))
        return self._memo["_anc"]

    def int(self, key: str) -> int | None:
        """The value if it is an int verl can do arithmetic with, else None."""
        value = self.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def num(self, key: str) -> float | None:
        value = self.get(key)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def missing(self, key: str) -> bool:
        """``key`` itself holds ``???`` (OmegaConf.is_missing on its resolved parent: not through an interpolation)."""
        return self.resolver.is_missing_here(key)

    def missing_value(self, key: str) -> bool:
        """``key`` is ``???`` as verl reads it: itself, or through an interpolation or a path that reaches one."""
        return self.resolver.is_missing(key)

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


# ---------------------------------------------------------------------------------------------------------------
# The resolver.
#
# OmegaConf resolves ``${...}`` by parsing the string with its ANTLR grammar every time a value is read, which is
# most of what a check used to cost. This reads the same node tree and mirrors what OmegaConf 2.3 does
# (``BaseContainer._select_impl``, ``_resolve_node_interpolation``, the ``oc.select`` resolver, ``GrammarVisitor``,
# ``_to_content``) for the forms below; anything else raises ``_Unknown`` and the public call asks OmegaConf:
#
#   ${a.b}  ${.x}  ${..x}              node interpolations, absolute and relative
#   ${oc.select:key}  ${oc.select:key,default}
#                                      default: null, true/false, ints, floats, text, [], {}, [..], {k: v},
#                                      and interpolations (``${oc.select:a,${oc.select:b,null}}``)
#   text ${a} more ${b}                several pieces, joined as text
#
# and lists and dictionaries holding any of them (their values read as ``OmegaConf.to_container(resolve=True)``).
# The tests hold every answer to OmegaConf's, on every interpolation in the schema and on random overrides.
# ---------------------------------------------------------------------------------------------------------------


def _reach(variant: SchemaVariant, key: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """The keys the default of ``key`` reads (``interpolation_deps``) and every section above or at them: an
    override of any of those, or of a key below one of the reads, can change the value. Kept on the variant."""
    cache = variant.__dict__.setdefault("_reach", {})
    if key not in cache:
        deps = variant.interpolation_deps(key)
        cache[key] = None if deps is None else (deps, frozenset(
            ".".join(parts[:i]) for parts in (d.split(".") for d in deps) for i in range(1, len(parts) + 1)))
    return cache[key]
