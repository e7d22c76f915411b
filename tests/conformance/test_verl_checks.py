"""The committed inventory of verl's checks is exactly what the installed verl's source gives (nothing typed by
hand); the mapping to rules is checked in tests/core/test_verl_checks.py."""

import json
import subprocess
import sys

from tests.conftest import ROOT


def test_inventory_matches_the_installed_verl(tmp_path, verl_config_dir):
    out = tmp_path / "checks.json"
    probe = ROOT / "wizard" / "adapters" / "verl_env" / "probes" / "extract_verl_checks.py"
    subprocess.run([sys.executable, str(probe), "--out", str(out)], check=True, capture_output=True, timeout=300)
    fresh = json.loads(out.read_text())
    committed = ROOT / "resources" / "verl-checks" / f"{fresh['verl_version']}.json"
    assert committed.is_file(), f"no inventory for verl {fresh['verl_version']}: add the file this test wrote"
    assert fresh == json.loads(committed.read_text()), (
        "verl's checks drifted from the inventory: regenerate it with the probe script, then map the new checks in "
        "resources/verl-checks/mapping.yaml")
    assert len(fresh["checks"]) > 250 and {c["kind"] for c in fresh["checks"]} == {"assert", "raise", "call", "build"}
