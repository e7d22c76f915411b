"""The inventory of verl's checks is fully mapped, to rules that exist, and the rules mirror >= 95 % of the checks
that depend only on config values (resources/verl-checks/; regenerated from verl by tests/conformance)."""

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT
from wizard.adapters.resources import load_verl_checks
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
    for path in [*(ROOT / "wizard" / "core" / "check" / "rules").glob("*.py"), *(ROOT / "wizard" / "adapters").glob("*.py")]:
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


def test_the_mapping_file_is_read_by_the_bench(capsys):
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_verl_checks", ROOT / "bench" / "bench_verl_checks.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.main(["--list", "excluded"]) == 0
    out = capsys.readouterr().out
    assert "mirrored by a rule" in out and "excluded (internal)" in out


def test_a_check_without_an_entry_and_an_unused_entry_are_problems():
    inventory = {"checks": [{"id": "a.py::f#1", "line": 3, "file": "a.py"}]}
    cov = join(inventory, {"b.py::*": {"rule": "x.y"}})
    assert any("no mapping entry" in p for p in cov.problems) and any("matches no check" in p for p in cov.problems)
    cov = join(inventory, {"a.py::f#1": {"excluded": "nonsense", "why": "because it is long enough"}})
    assert any("not one of" in p for p in cov.problems)
    assert Path(ROOT / "resources" / "verl-checks" / "mapping.yaml").is_file()
