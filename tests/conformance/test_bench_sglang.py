"""The SGLang kit for the H200 (bench/real/SGLANG.md): the campaign's SGLang runs compose and validate with verl 0.9.1,
the wheel list pins each package once and leaves verl's and the image's own alone, and install_sglang.sh puts the
SGLang folder first on PYTHONPATH (with the folders its .pth files name) and hides vLLM from SGLang runs."""

import importlib.util
import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, need_verl

REAL = ROOT / "bench" / "real"


def _spec():
    spec = importlib.util.spec_from_file_location("campaign_spec", REAL / "campaign_spec.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.verl
def test_every_sglang_run_of_the_campaign_composes_and_validates_with_verl_091():
    need_verl()
    spec = _spec()
    runs = spec.sglang_runs()
    assert len(runs) >= 4
    for run in runs:
        assert f"{spec.R}.name=sglang" in run["args"]
        assert 0 < run["predicted_peak_gib"] < 140  # each fits the H200 alone, by the estimate made before it runs
    assert spec.preflight(sys.executable, runs)


def test_the_sglang_wheel_list_pins_each_package_once_and_never_verls_transformers_or_the_images_torch():
    names = []
    for line in (REAL / "sglang-wheels.txt").read_text().splitlines():
        line = re.sub(r"^\[[A-Z]+\]\s+", "", line.strip())
        if line and not line.startswith("#"):
            name, version = line.split("==")
            assert version, line
            names.append(re.sub(r"[-_.]+", "-", name).lower())
    assert len(names) == len(set(names))
    assert not {"transformers", "torch", "torchaudio", "torchvision", "triton", "verl", "vllm"} & set(names)


def _wheel(folder: Path, name: str, files: dict[str, str]) -> None:
    dist = f"{name}-1.0"
    with zipfile.ZipFile(folder / f"{dist}-py3-none-any.whl", "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
        z.writestr(f"{dist}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        z.writestr(f"{dist}.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{dist}.dist-info/RECORD", "")


def test_install_sglang_puts_its_folder_first_reads_its_pth_and_hides_vllm(tmp_path):
    wheels = tmp_path / "sgl"
    wheels.mkdir()
    _wheel(wheels, "sglang", {"sglang/__init__.py": "", "dsl.pth": "dsl/python_packages",
                              "dsl/python_packages/cutlass/__init__.py": ""})
    parts = tmp_path / "parts" / "s00"
    parts.mkdir(parents=True)
    with tarfile.open(tmp_path / "sgl.tar", "w") as tar:
        tar.add(wheels, arcname="sgl")
    (tmp_path / "sgl.tar").rename(parts / "part00")
    kit, site, envsh = tmp_path / "site", tmp_path / "site-sgl", tmp_path / "env.sh"
    env = {"PATH": "/usr/bin:/bin", "PARTS": str(tmp_path / "parts"), "SITE": str(site), "KIT": str(kit),
           "ENVSH": str(envsh), "UNPACK": str(tmp_path)}
    script = str(REAL / "install_sglang.sh")
    # without verl's kit: one reason, nothing installed
    res = subprocess.run(["bash", script], env=env, capture_output=True, text=True)
    assert res.returncode == 1 and "run install.sh first" in res.stdout and not site.exists()
    (kit / "verl").mkdir(parents=True)
    # this machine's python3 stands in for the image's (its import check then fails: no sglang, torch or GPU here)
    res = subprocess.run(["bash", script], env={**env, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"},
                         capture_output=True, text=True)
    assert (site / "sglang" / "__init__.py").exists(), res.stdout + res.stderr
    out = subprocess.run(["bash", "-c", f". {envsh}; echo $PYTHONPATH"], env={"PYTHONPATH": "/tmp/dev/wt"},
                         capture_output=True, text=True).stdout.strip()
    assert out == f"{site}:{site}/dsl/python_packages:{kit}:/tmp/dev/wt"
    hidden = subprocess.run([sys.executable, "-c", "import vllm"], env={"PYTHONPATH": out}, capture_output=True, text=True)
    assert "ImportError: vLLM is hidden in SGLang runs" in hidden.stderr
