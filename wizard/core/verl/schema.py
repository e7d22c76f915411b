"""verl's config key schema, as extracted from an installed verl (never typed by hand).

The snapshot (``resources/verl-schema/<version>.json``) is produced by
``wizard/adapters/verl_env/probes/extract_verl_schema.py``. This module gives it a typed
face: the default tree of each ``model_engine`` variant (to compose on), every
key with its default and type, keys that need ``+``, and "did you mean".
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from functools import cached_property


@dataclass(frozen=True)
class KeyInfo:
    key: str
    type: str  # int|float|bool|str|null|list|dict|interpolation|missing|plus_only
    default: object = None
    field_type: str | None = None  # the dataclass annotation, when a _target_ declares it

    @property
    def in_yaml(self) -> bool:
        """False for dataclass-only fields, which need ``+key=value``."""
        return self.type != "plus_only"


_REF = re.compile(r"\$\{\s*(oc\.select\s*:\s*)?([\w.\-]+)\s*[,}]")


def _deps(variant: SchemaVariant, key: str, seen: set[str]) -> frozenset[str] | None:
    if key in seen:
        return frozenset()
    seen.add(key)
    info = variant.keys.get(key)
    if info is None or info.type in ("dict", "list"):
        return None  # containers and unknown keys: resolved by OmegaConf every time
    out = {key}
    default = info.default
    if isinstance(default, str) and "${" in default:
        refs = _REF.findall(default)
        if default.count("${") != len(refs):
            return None  # oc.env, custom resolvers, nested forms: not followed
        for _select, ref in refs:
            if ref.startswith("."):
                parent = key.split(".")[:-1]
                up = len(ref) - len(ref.lstrip("."))
                ref = ".".join(parent[: len(parent) - (up - 1)] + [ref.lstrip(".")])
            if ref not in variant.keys:
                out.add(ref)  # absent by default (an oc.select fallback): an override may add it
                continue
            sub = _deps(variant, ref, seen)
            if sub is None:
                return None
            out |= sub
    return frozenset(out)


@dataclass(eq=False)
class SchemaVariant:
    engine: str
    keys: dict[str, KeyInfo]

    @cached_property
    def tree(self) -> dict:
        """The composed default config as nested dicts (interpolations kept as text)."""
        root: dict = {}
        for info in self.keys.values():
            if not info.in_yaml:
                continue
            parts = info.key.split(".")
            node = root
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            if info.type == "dict":
                node.setdefault(parts[-1], {})
            else:
                node[parts[-1]] = info.default
        return root

    @cached_property
    def resolved_defaults(self) -> dict:
        """Resolved default values of leaf keys, filled in by RuleContext as rules ask for them.

        Valid across checks because RuleContext only stores a key here when no override touches
        the key or anything its default interpolates from (see ``interpolation_deps``).
        """
        return {}

    def interpolation_deps(self, key: str) -> frozenset[str] | None:
        """Every key the default of ``key`` reads through interpolations, transitively (``key``
        itself included); None when it reads the environment or a form this does not follow."""
        cache = self.__dict__.setdefault("_deps", {})
        if key not in cache:
            cache[key] = _deps(self, key, set())
        return cache[key]

    @cached_property
    def yaml_keys(self) -> list[str]:
        return [k for k, v in self.keys.items() if v.in_yaml]

    def suggest(self, key: str, n: int = 3) -> list[str]:
        """Closest existing keys: same-leaf matches first, then by overall similarity."""
        leaf = key.rsplit(".", 1)[-1]
        same_leaf = [k for k in self.yaml_keys if k.rsplit(".", 1)[-1] == leaf]
        if same_leaf:
            same_leaf.sort(key=lambda k: -difflib.SequenceMatcher(None, key, k).ratio())
            return same_leaf[:n]
        return difflib.get_close_matches(key, self.yaml_keys, n=n, cutoff=0.75)


@dataclass
class VerlSchema:
    verl_version: str
    config_name: str
    default_engine: str
    config_groups: list[str]
    variants: dict[str, SchemaVariant] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, doc: dict) -> VerlSchema:
        variants = {
            engine: SchemaVariant(
                engine=engine,
                keys={
                    e["key"]: KeyInfo(
                        key=e["key"], type=e["type"], default=e.get("default"), field_type=e.get("field_type")
                    )
                    for e in body["keys"]
                },
            )
            for engine, body in doc["variants"].items()
        }
        return cls(
            verl_version=doc["verl_version"],
            config_name=doc["config_name"],
            default_engine=doc["default_model_engine"],
            config_groups=list(doc["config_groups"]),
            variants=variants,
        )

    @property
    def engines(self) -> list[str]:
        return list(self.variants)

    def variant(self, engine: str | None = None) -> SchemaVariant:
        return self.variants[engine or self.default_engine]
