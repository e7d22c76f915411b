"""The wheel carries the resources (schema, presets, moves) and the probe scripts."""

import subprocess
import sys
import zipfile

from tests.conftest import ROOT


def test_wheel_ships_resources_and_probes(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )
    (wheel,) = tmp_path.glob("verl_wizard-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("wizard/resources/verl-schema/0.9.1.json", "wizard/resources/verl-key-docs/0.9.1.json", "wizard/resources/presets/grpo-1gpu-smoke.yaml",
                   "wizard/resources/verl-moves.yaml", "wizard/adapters/probes/verl_preflight_probe.py",
                   "wizard/adapters/probes/extract_verl_schema.py", "wizard/gui/app.py", "wizard/cli/__init__.py"):
        assert needed in names, needed
