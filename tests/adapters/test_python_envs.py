"""Finding the user's verl environment: real environment folders written under tmp_path, HOME pointed there.

The venvs are real (``venv.create``, symlinked to this Python) so a found one can be probed by doctor; verl in
them is its dist-info folder (what pip leaves, and all discovery reads), never an import.
"""

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from wizard.adapters.files import bundle
from wizard.adapters.verl_env.doctor import run_doctor
from wizard.adapters.verl_env.python_envs import default_python, discover, how_to_create, inspect

PY = f"{sys.version_info.major}.{sys.version_info.minor}"


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty HOME, no active venv/conda, a PATH without python3, the work folder elsewhere."""
    home = tmp_path / "home"
    (home / "work").mkdir(parents=True)
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    monkeypatch.delenv("VIRTUAL_ENV", raising=False)
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    monkeypatch.chdir(home / "work")
    return home


def real_venv(prefix: Path, verl: str | None = None) -> Path:
    """A real venv of this Python; with ``verl``, verl's package and dist-info in its site-packages."""
    venv.create(prefix, with_pip=False, symlinks=True)
    if verl:
        add_verl(prefix / "lib" / f"python{PY}" / "site-packages", verl)
    return prefix / "bin" / "python3"


def add_verl(site: Path, version: str) -> None:
    (site / "verl").mkdir(parents=True)
    (site / "verl" / "__init__.py").write_text("")
    info = site / f"verl-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: verl\nVersion: {version}\n")


def conda_env(prefix: Path, py: str = PY, verl: str | None = None) -> Path:
    """A conda environment's layout: conda-meta/, bin/python3, lib/pythonX.Y/site-packages."""
    (prefix / "conda-meta").mkdir(parents=True)
    (prefix / "bin").mkdir()
    site = prefix / "lib" / f"python{py}" / "site-packages"
    site.mkdir(parents=True)
    exe = prefix / "bin" / "python3"
    exe.write_text("#!/bin/sh\nexit 0\n")  # discovery never runs it
    exe.chmod(0o755)
    if verl:
        add_verl(site, verl)
    return exe


def by_prefix(found):
    return {Path(c.prefix).name: c for c in found}


def test_the_env_with_verl_comes_first_then_other_verls_then_none(home, tmp_path):
    real_venv(home / ".venvs" / "scratch")
    real_venv(home / ".venvs" / "verl", verl="0.9.1")
    conda_env(home / "miniconda3" / "envs" / "old", verl="0.8.0")
    real_venv(home / "work" / ".venv")
    found = discover(include_self=False)
    names = [Path(c.prefix).name for c in found]
    assert names[0] == "verl" and names[1] == "old"
    assert set(names[2:]) >= {"scratch", ".venv"}
    best = found[0]
    assert (best.verl, best.python_version, best.origin) == ("0.9.1", PY, "~/.venvs")
    assert best.python == str(home / ".venvs" / "verl" / "bin" / "python3")
    assert by_prefix(found)["old"].summary() == f"verl 0.8.0, Python {PY}"
    assert by_prefix(found)[".venv"].origin == "./.venv"


def test_conda_environments_txt_finds_envs_outside_home_once(home, tmp_path):
    elsewhere = conda_env(tmp_path / "opt" / "envs" / "rl", verl="0.9.1")
    in_home = conda_env(home / "miniforge3" / "envs" / "rl2")
    (home / ".conda").mkdir()
    (home / ".conda" / "environments.txt").write_text(
        f"{elsewhere.parent.parent}\n\n{in_home.parent.parent}\n/no/such/env\n")
    found = discover(include_self=False)
    assert [c.python for c in found] == [str(elsewhere), str(in_home)]  # the listed one in ~/miniforge3 once
    assert found[0].origin == "conda (~/.conda/environments.txt)" and found[0].verl == "0.9.1"


def test_active_venv_and_conda_prefix_are_candidates(home, tmp_path, monkeypatch):
    active = real_venv(tmp_path / "proj" / "env")
    conda = conda_env(tmp_path / "conda" / "envs" / "train", verl="0.9.1")
    monkeypatch.setenv("VIRTUAL_ENV", str(active.parent.parent))
    monkeypatch.setenv("CONDA_PREFIX", str(conda.parent.parent))
    found = discover(include_self=False)
    assert [(c.python, c.origin) for c in found] == [
        (str(conda), "active conda env ($CONDA_PREFIX)"), (str(active), "active venv ($VIRTUAL_ENV)")]


def test_python3_on_path_is_a_candidate(home, tmp_path, monkeypatch):
    python = real_venv(tmp_path / "sys", verl="0.9.1")
    monkeypatch.setenv("PATH", f"{python.parent}{os.pathsep}{tmp_path / 'bin'}")
    (found,) = discover(include_self=False)
    assert found.origin == "python3 on PATH" and found.verl == "0.9.1"


def test_a_python_verl_cannot_use_is_dropped_unless_it_has_verl(home):
    conda_env(home / "anaconda3" / "envs" / "py39", py="3.9")
    conda_env(home / "anaconda3" / "envs" / "py313-verl", py="3.13", verl="0.9.1")
    conda_env(home / "anaconda3" / "envs" / "py311")
    found = discover(include_self=False)
    assert [Path(c.prefix).name for c in found] == ["py313-verl", "py311"]
    assert found[0].python_ok is False and "verl needs 3.10-3.12" in found[0].summary()


def test_folders_without_a_runnable_python_are_skipped(home):
    (home / ".venvs" / "empty").mkdir(parents=True)
    broken = conda_env(home / ".venvs" / "noexec")
    broken.chmod(0o644)
    assert discover(include_self=False) == []
    assert inspect(home / ".venvs" / "empty" / "bin" / "python3") is None


def test_a_source_install_without_dist_info_reads_verls_version_file(home):
    site = home / ".venvs" / "dev" / "lib" / f"python{PY}" / "site-packages"
    real_venv(home / ".venvs" / "dev")
    (site / "verl" / "version").mkdir(parents=True)
    (site / "verl" / "__init__.py").write_text("")
    (site / "verl" / "version" / "version").write_text("0.9.1\n")
    (found,) = discover(include_self=False)
    assert found.verl == "0.9.1"


def test_outside_the_bundle_this_python_is_offered_first_when_it_has_verl(home):
    real_venv(home / ".venvs" / "verl", verl="0.9.1")
    found = discover()
    assert found[0].python == sys.executable and found[0].origin.startswith("this Python")
    assert default_python() == sys.executable  # the test venv has verl 0.9.1: as before, doctor checks it


def test_inside_the_bundle_its_program_is_never_a_python(home, tmp_path, monkeypatch):
    """What PyInstaller sets in the bundle: sys.frozen, sys._MEIPASS, sys.executable = the bundle's program."""
    folder = tmp_path / "dist" / "verl-wizard"
    (folder / "_internal").mkdir(parents=True)
    program = folder / "verl-wizard"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    (tmp_path / "bin" / "python3").symlink_to(program)  # even a python3 on PATH that is the bundle
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(folder / "_internal"), raising=False)
    monkeypatch.setattr(sys, "executable", str(program))
    assert bundle.is_frozen()
    assert bundle.probe_path("doctor_probe.py") == str(folder / "_internal/wizard/adapters/verl_env/probes/doctor_probe.py")
    assert discover() == [] and default_python() is None
    env = real_venv(home / ".venvs" / "verl", verl="0.9.1")
    assert default_python() == str(env)


def test_a_found_environment_is_probed_by_doctor(home):
    python = real_venv(home / ".venvs" / "verl", verl="0.9.1")
    (best, *_) = discover(include_self=False)
    report = run_doctor(best.python, check_ray=False)
    assert report.python == str(python)
    assert report.facts["packages"]["verl"] == "0.9.1" and report.facts["packages"]["torch"] is None
    assert "env.torch.missing" in {f.rule for f in report.findings}


def test_how_to_create_gives_the_commands_with_a_python_verl_accepts():
    text = how_to_create(which=lambda name: f"/usr/bin/{name}" if name == "python3.11" else None)
    assert "python3.11 -m venv ~/.venvs/verl" in text
    assert '~/.venvs/verl/bin/pip install "verl[vllm]==0.9.1"' in text
    assert 'conda run -n verl pip install "verl[vllm]==0.9.1"' in text
    bare = how_to_create(which=lambda name: None)
    assert "First install Python 3.12" in bare and "python3.12 -m venv ~/.venvs/verl" in bare


def test_doctor_without_python_lists_what_it_found(home):
    real_venv(home / ".venvs" / "verl", verl="0.9.1")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "RAY_ADDRESS")}
    env.update(PYTHONWARNINGS="ignore")
    proc = subprocess.run([sys.executable, "-m", "wizard", "doctor", "--format", "json"], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["python"] == sys.executable and doc["how_to_create"] is None
    found = {c["python"]: c for c in doc["candidates"]}
    venv_python = str(home / ".venvs" / "verl" / "bin" / "python3")
    assert found[venv_python]["verl"] == "0.9.1" and found[venv_python]["origin"] == "~/.venvs"
    text = subprocess.run([sys.executable, "-m", "wizard", "doctor"], capture_output=True, text=True, env=env,
                          timeout=120).stdout
    assert text.startswith("Pythons found (best first")
    (line,) = [line for line in text.splitlines() if venv_python in line]
    assert "verl 0.9.1" in line and "~/.venvs" in line
    given = subprocess.run([sys.executable, "-m", "wizard", "doctor", "--python", sys.executable, "--format", "json"],
                           capture_output=True, text=True, env=env, timeout=120)
    assert "candidates" not in json.loads(given.stdout)  # a Python the user names is checked, nothing listed

