"""The inventory of verl's checks is fully mapped, to rules that exist, and the rules mirror >= 95 % of the checks
that depend only on config values (resources/verl-checks/; regenerated from verl by tests/conformance)."""

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT
from wizard.adapters.files.resources import load_verl_checks
from wizard.core.check.coverage import join, report


@pytest.fixture(scope="module")
def coverage():
    return join(*load_verl_checks())


def known_rule_ids() -> tuple[set[str], list[re.Pattern]]:
    """Registered rule ids and every finding id a rule or an adapter emits (a quoted 'family.name'), plus the
    f-string ids (f"batch.{who}_mini_vs_train") as patterns."""
    from wizard.core.check.rules import RULES, _load

    _load()
    ids, patterns = {r.id for r in RULES}, []
    folders = [ROOT / "wizard" / "core" / "check" / "rules", ROOT / "wizard" / "core" / "placement", ROOT / "wizard" / "adapters",
               ROOT / "wizard" / "usecases"]
    for path in [p for folder in folders for p in folder.rglob("*.py")]:
        text = path.read_text()
        ids |= set(re.findall(r'"([a-z_]+\.[a-z_]+)"', text))
        for fid in re.findall(r'f"([a-z_]+\.[a-z_{}]+)"', text):
            patterns.append(re.compile(re.sub(r"\\\{\w+\\\}", "[a-z_]+", re.escape(fid)) + "$"))
    return ids, patterns


def test_every_check_has_exactly_one_reviewed_entry(coverage):
    assert coverage.problems == []


def test_every_rule_named_in_the_mapping_exists(coverage):
    ids, patterns = known_rule_ids()
    named = {r for e in coverage.entries for r in e.rules}
    missing = sorted(r for r in named - ids if not any(p.match(r) for p in patterns))
    assert missing == []


def test_the_rules_mirror_at_least_95_percent_of_the_config_only_checks(coverage):
    done, total = coverage.counts()
    assert total >= 150, total  # the inventory reaches validate_config, the config classes, trainer and workers
    assert done / total >= 0.95, "\n".join(report(coverage))


def test_every_exclusion_says_why(coverage):
    for e in coverage.entries:
        if e.excluded:
            assert len(e.why) > 15, e.check["id"]


def test_the_report_counts_per_file(coverage):
    lines = report(coverage)
    assert lines[0].startswith("verl checks inventoried: ")
    assert any(line.strip().startswith("utils/config.py:") for line in lines)


def test_the_report_says_what_is_mirrored_and_why_the_rest_is_excluded(coverage):
    # what bench/bench_verl_checks.py prints: the mapping file read, both kinds of entry counted
    lines = report(coverage)
    assert "mirrored by a rule: " in lines[0]
    (excluded,) = [line for line in lines if line.startswith("excluded: ")]
    assert "internal " in excluded
    assert any(e.excluded == "internal" and e.why for e in coverage.entries)
    assert any(e.rules for e in coverage.entries)


def test_a_check_without_an_entry_and_an_unused_entry_are_problems():
    inventory = {"checks": [{"id": "a.py::f#1", "line": 3, "file": "a.py"}]}
    cov = join(inventory, {"b.py::*": {"rule": "x.y"}})
    assert any("no mapping entry" in p for p in cov.problems) and any("matches no check" in p for p in cov.problems)
    cov = join(inventory, {"a.py::f#1": {"excluded": "nonsense", "why": "because it is long enough"}})
    assert any("not one of" in p for p in cov.problems)
    assert Path(ROOT / "resources" / "verl-checks" / "mapping.yaml").is_file()


# Config-only checks mirrored without keys for the parity property, and why.
KEYLESS = {
    "workers/rollout/vllm_rollout/utils.py::get_vllm_max_lora_rank#2": "LoRA with vLLM: see parity_edits.NOT_VARIED",
    "workers/config/actor.py::VeOmniActorConfig.__post_init__#1": "the VeOmni engine's keys (model_engine=veomni)",
    "workers/config/critic.py::VeOmniCriticConfig.validate#2": "the VeOmni engine's keys (model_engine=veomni)",
}


def _lhs(override: str) -> tuple[str, str]:
    raw = override.split("=", 1)[0]
    return raw, raw.lstrip("+~")


def test_the_parity_property_varies_every_key_an_inventoried_check_reads(coverage):
    """Each key (glob) the mapping says a config-only check reads is set by at least one edit the property draws."""
    import fnmatch

    from tests.helpers.parity_edits import EDITS

    sides = {side for edit in EDITS for o in edit for side in _lhs(o)}
    unvaried = []
    for e in coverage.entries:
        if not e.config_only:
            continue
        if not e.keys:
            assert e.check["id"] in KEYLESS or (e.key or "") in KEYLESS, f"{e.key}: give the keys the check reads"
        for pattern in e.keys:
            if not any(fnmatch.fnmatchcase(s, pattern) for s in sides):
                unvaried.append(f"{pattern} ({e.key})")
    assert sorted(set(unvaried)) == []


def test_the_property_draws_both_sides_of_choices():
    from tests.helpers.parity_edits import EDITS

    values: dict[str, set[str]] = {}
    for edit in EDITS:
        key, _, value = edit[-1].partition("=")
        values.setdefault(key, set()).add(value)
    singles = sorted(k for k, v in values.items() if len(v) < 2 and not k.startswith(("+", "++")))
    # a key set to one value only is part of a setup, or a mode switch that its other value is the default of
    assert len(singles) < len(values) // 4, singles


def test_every_edit_is_a_tuple_of_overrides():
    from tests.helpers.parity_edits import EDITS

    assert all(isinstance(e, tuple) and e and all("=" in o for o in e) for e in EDITS)
