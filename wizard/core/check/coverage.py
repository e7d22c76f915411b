"""How much of what verl checks the rules mirror: the inventory of verl's checks joined with the reviewed mapping.

The inventory (``resources/verl-checks/<version>.json``) is generated from verl's source; the mapping
(``mapping.yaml`` beside it) says, for each check, the rule that mirrors it or why none does. Pure: both come in
as data, the adapters read the files.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from dataclasses import dataclass, field

EXCLUSIONS = ("call", "internal", "unreachable", "model", "data", "code", "environment", "gpu", "config")
NEEDS = ("model", "data", "cluster", "environment")


@dataclass(frozen=True)
class Mapped:
    check: dict  # the inventory entry: id, file, line, function, kind, condition, message...
    rules: tuple[str, ...] = ()
    needs: str | None = None  # a fact beyond the config that the mirroring rule reads
    excluded: str | None = None
    why: str = ""
    key: str | None = None  # the mapping key that matched; None when nothing did
    keys: tuple[str, ...] = ()  # the config keys the check reads (globs; +key for keys added under a section)

    @property
    def config_only(self) -> bool:
        """Depends only on config values (and can fail): what the coverage goal counts."""
        return (bool(self.rules) and self.needs is None) or self.excluded == "config"

    @property
    def mirrored(self) -> bool:
        return bool(self.rules)


@dataclass
class Coverage:
    entries: list[Mapped]
    problems: list[str] = field(default_factory=list)  # mapping errors: unmatched checks, unused keys, bad values

    def counts(self, entries: list[Mapped] | None = None) -> tuple[int, int]:
        """(mirrored, config-only) among ``entries``: the config-only checks a rule mirrors, of all config-only."""
        entries = self.entries if entries is None else entries
        only = [e for e in entries if e.config_only]
        return sum(e.mirrored for e in only), len(only)

    def by_file(self) -> dict[str, list[Mapped]]:
        out: dict[str, list[Mapped]] = {}
        for e in self.entries:
            out.setdefault(e.check["file"], []).append(e)
        return out

    def exclusions(self) -> Counter:
        return Counter(e.excluded for e in self.entries if e.excluded)


def _match(check_id: str, mapping: dict) -> str | None:
    if check_id in mapping:
        return check_id
    return next((k for k in mapping if any(c in k for c in "*?[") and fnmatch.fnmatchcase(check_id, k)), None)


def _entry(check: dict, key: str | None, value: dict | None, problems: list[str]) -> Mapped:
    if key is None or not isinstance(value, dict):
        problems.append(f"{check['id']} (line {check['line']}): no mapping entry")
        return Mapped(check)
    rules = tuple(value.get("rules") or ([value["rule"]] if value.get("rule") else []))
    excluded, needs = value.get("excluded"), value.get("needs")
    if bool(rules) == bool(excluded):
        problems.append(f"{key}: give a rule or an exclusion, not {'both' if rules else 'neither'}")
    if excluded and excluded not in EXCLUSIONS:
        problems.append(f"{key}: exclusion {excluded!r} is not one of {', '.join(EXCLUSIONS)}")
    if excluded and not value.get("why"):
        problems.append(f"{key}: an exclusion needs a why")
    if needs and needs not in NEEDS:
        problems.append(f"{key}: needs {needs!r} is not one of {', '.join(NEEDS)}")
    return Mapped(check, rules, needs, excluded, value.get("why", ""), key, tuple(value.get("keys") or ()))


def join(inventory: dict, mapping: dict) -> Coverage:
    """Each inventoried check with its mapping entry; ``problems`` lists what the mapping gets wrong."""
    problems: list[str] = []
    entries = [_entry(c, k := _match(c["id"], mapping), mapping.get(k) if k else None, problems)
               for c in inventory["checks"]]
    used = {e.key for e in entries}
    problems += [f"{k}: matches no check in the inventory" for k in mapping if k not in used]
    return Coverage(entries, problems)


def report(cov: Coverage) -> list[str]:
    """Lines for people: the total, then each file (mirrored / config-only, and what the rest is)."""
    done, total = cov.counts()
    pct = 100.0 * done / total if total else 100.0
    lines = [f"verl checks inventoried: {len(cov.entries)}; depending only on config values: {total}; "
             f"mirrored by a rule: {done} of {total} ({pct:.1f} %)"]
    needing = Counter(e.needs for e in cov.entries if e.mirrored and e.needs)
    lines.append("also mirrored, with facts beyond the config: "
                 + (", ".join(f"{k} {v}" for k, v in sorted(needing.items())) or "none"))
    lines.append("excluded: " + ", ".join(f"{k} {v}" for k, v in sorted(cov.exclusions().items())))
    for file, entries in sorted(cov.by_file().items()):
        done, total = cov.counts(entries)
        rest = Counter(e.excluded for e in entries if e.excluded)
        tail = ", ".join(f"{k} {v}" for k, v in sorted(rest.items()))
        lines.append(f"  {file}: {done} of {total} config-only mirrored" + (f"; excluded: {tail}" if tail else ""))
    return lines
