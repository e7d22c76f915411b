"""The desktop bundle builds from this checkout and starts: what `make bundle bundle-check` does, in CI.

The build (PyInstaller in its own venv under build/, packages from PyPI) takes about 2 minutes here
from nothing and about 1 minute with the build venv already there, so it runs with the suite rather
than as a separate job. packaging/check_bundle.sh starts the bundle offscreen: --version, every GUI
page rendered, the CLI, parquet through pyarrow, doctor's probe in a Python found on the machine.
"""

import subprocess

import pytest

from tests.conftest import ROOT


@pytest.mark.slow
def test_the_bundle_builds_opens_offscreen_and_answers_version():
    build = subprocess.run(["bash", str(ROOT / "packaging" / "build.sh")], capture_output=True, text=True,
                           timeout=1200, cwd=ROOT)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    assert "built dist/verl-wizard in" in build.stdout
    check = subprocess.run(["bash", str(ROOT / "packaging" / "check_bundle.sh")], capture_output=True, text=True,
                           timeout=600, cwd=ROOT)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "ok    --version: verl-wizard" in check.stdout
    assert "ok    GUI: opened offscreen" in check.stdout
    assert check.stdout.rstrip().endswith("0 failed")
