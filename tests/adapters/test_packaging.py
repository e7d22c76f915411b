"""The wheel, installed as a user installs it (not editable): every module imports from there and the GUI starts.

The packages are found, not listed (setup.py), so a new package ships without anyone remembering to add it;
this test is what notices when one does not.
"""

import os
import shutil
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

IMPORT_ALL = """
import importlib, pkgutil, sys, wizard
assert not wizard.__file__.startswith(sys.argv[1]), f"imported from the checkout: {wizard.__file__}"
failed = []
for m in pkgutil.walk_packages(wizard.__path__, "wizard."):
    if m.name == "wizard.__main__":
        continue
    try:
        importlib.import_module(m.name)
    except Exception as exc:
        failed.append(f"{m.name}: {type(exc).__name__}: {exc}")
print(len(list(pkgutil.walk_packages(wizard.__path__, "wizard."))), "modules")
print("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv with the wheel installed (no deps: those come from this environment's site-packages)."""
    tmp = tmp_path_factory.mktemp("wheel")
    # built from a copy of what git would commit: a build/ left in the checkout by an earlier build keeps deleted
    # modules, and setuptools ships them (seen: a removed gui/placement/state.py in the wheel, failing to import)
    source = tmp / "source"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w",
                    str(tmp), str(source)], check=True, capture_output=True, timeout=600)
    (wheel,) = tmp.glob("verl_wizard-*.whl")
    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # the dependencies, as a plain path: .pth files over there (this checkout's editable install) are not run
    Path(purelib, "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", str(wheel)], check=True, capture_output=True, timeout=600)
    return wheel, env_dir


def test_the_wheel_ships_resources_and_probes(installed):
    wheel, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("wizard/resources/verl-schema/0.9.1.json", "wizard/resources/verl-key-docs/0.9.1.json",
                   "wizard/resources/presets/grpo-1gpu-smoke.yaml", "wizard/resources/verl-moves.yaml",
                   "wizard/adapters/verl_env/probes/verl_preflight_probe.py", "wizard/adapters/verl_env/probes/extract_verl_schema.py",
                   "wizard/resources/verl-checks/0.9.1.json", "wizard/resources/verl-checks/mapping.yaml",
                   "wizard/adapters/verl_env/probes/extract_verl_checks.py"):
        assert needed in names, needed
    shipped = {n[: -len("/__init__.py")].replace("/", ".") for n in names if n.endswith("/__init__.py")}
    on_disk = {str(p.parent.relative_to(ROOT)).replace(os.sep, ".") for p in (ROOT / "wizard").rglob("__init__.py")}
    assert on_disk <= shipped, f"packages missing from the wheel: {sorted(on_disk - shipped)}"


def test_every_module_imports_from_the_installed_wheel(installed):
    _, env_dir = installed
    proc = subprocess.run([str(env_dir / "bin" / "python"), "-c", IMPORT_ALL, str(ROOT)], capture_output=True,
                          text=True, timeout=600, cwd=env_dir, env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_installed_program_checks_and_starts_the_gui_offscreen(installed, tmp_path):
    _, env_dir = installed
    program = str(env_dir / "bin" / "verl-wizard")
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    check = subprocess.run([program, "check", "--", "data.train_batch_size=abc"], capture_output=True, text=True,
                           timeout=300, cwd=tmp_path, env=env)
    assert check.returncode == 1 and "data.train_batch_size" in check.stdout, check.stdout + check.stderr
    shots = tmp_path / "shots"
    gui = subprocess.run([program, "--screenshots", str(shots)], capture_output=True, text=True, timeout=600,
                         cwd=tmp_path, env=env)
    assert gui.returncode == 0, gui.stdout + gui.stderr
    assert len(list(shots.glob("*.png"))) >= 10  # every step drawn, the Placement board included
