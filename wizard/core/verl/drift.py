"""How another verl's config tree differs from the one the wizard ships (0.9.1): keys only one of them has, and keys
whose default changed. Both sides are schemas extracted by the same probe (extract_verl_schema.py), so the
comparison is of like with like; only the YAML tree is compared (the dataclass-only fields a ``+`` reaches depend on
which classes import where the probe ran)."""

from __future__ import annotations

from dataclasses import dataclass, field

from wizard.core.verl.schema import VerlSchema


@dataclass(frozen=True)
class KeyDrift:
    installed: str  # the other verl's version
    shipped: str
    only_installed: list[str] = field(default_factory=list)  # keys the installed verl has and the wizard does not know
    only_shipped: list[str] = field(default_factory=list)  # the wizard's keys the installed verl does not have
    changed: list[tuple[str, object, object]] = field(default_factory=list)  # (key, installed default, shipped)

    @property
    def same(self) -> bool:
        return not (self.only_installed or self.only_shipped or self.changed)

    def summary(self, limit: int = 8) -> str:
        """One line: counts, and the first keys of each kind."""
        if self.same:
            return f"its config tree has the same keys and defaults as verl {self.shipped}'s"
        parts = []

        def some(keys: list[str]) -> str:
            more = f" and {len(keys) - limit} more" if len(keys) > limit else ""
            return ", ".join(keys[:limit]) + more

        if self.only_installed:
            parts.append(f"{len(self.only_installed)} key(s) only in verl {self.installed} (the wizard does not know "
                         f"them: check reports them as unknown): {some(self.only_installed)}")
        if self.only_shipped:
            parts.append(f"{len(self.only_shipped)} key(s) of verl {self.shipped} that verl {self.installed} lacks "
                         f"(Hydra refuses them there): {some(self.only_shipped)}")
        if self.changed:
            parts.append(f"{len(self.changed)} default(s) differ: "
                         + some([f"{k} ({a!r} there, {b!r} in {self.shipped})" for k, a, b in self.changed]))
        return "; ".join(parts)


def _leaves(schema: VerlSchema) -> dict[str, object]:
    """Every YAML key of every model_engine variant with its default (containers as keys too, default None)."""
    out: dict[str, object] = {}
    for variant in schema.variants.values():
        for key, info in variant.keys.items():
            if info.in_yaml:
                out.setdefault(key, None if info.type == "dict" else info.default)
    return out


def key_drift(installed: VerlSchema, shipped: VerlSchema) -> KeyDrift:
    """The keys and defaults that differ between ``installed`` and ``shipped``, sorted."""
    mine, theirs = _leaves(shipped), _leaves(installed)
    changed = [(k, theirs[k], mine[k]) for k in sorted(mine.keys() & theirs.keys()) if theirs[k] != mine[k]]
    return KeyDrift(installed=installed.verl_version, shipped=shipped.verl_version,
                    only_installed=sorted(theirs.keys() - mine.keys()), only_shipped=sorted(mine.keys() - theirs.keys()),
                    changed=changed)
