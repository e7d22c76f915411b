"""doctor against real environments: this project's venv (verl 0.9.1, CPU torch), a bare Python, and the
facts recorded from a GPU machine's Python (torch 2.11.0+cu130, no verl)."""

import json
import os
import socket
import sys
from pathlib import Path

import pytest

from wizard.adapters.verl_env.doctor import DoctorError, doctor_findings, run_doctor, satisfies

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"


def by_rule(findings):
    return {f.rule: f for f in findings}


@pytest.fixture(scope="module")
def venv_report():
    return run_doctor(sys.executable)  # the venv the tests run in: verl 0.9.1 + CPU torch


def test_the_cpu_venv_reports_no_cuda_and_no_rollout_engine_with_fixes(venv_report):
    facts, found = venv_report.facts, by_rule(venv_report.findings)
    assert facts["packages"]["verl"] == "0.9.1" and facts["packages"]["torch"].endswith("+cpu")
    assert not venv_report.ok
    cuda = found["env.cuda.unavailable"]
    assert cuda.severity.value == "error" and "CUDA not available" in cuda.message and "CPU-only" in cuda.message
    engine = found["env.rollout.missing"]
    assert engine.severity.value == "error" and "no vLLM/SGLang" in engine.message
    # this is the Python verl-wizard runs in: the fix is a separate training environment, never CUDA torch or vLLM
    # installed into the wizard's own (issue 30)
    for f in (cuda, engine, found["env.flash_attn"]):
        assert "verl-wizard's own" in f.message and f.fix.startswith("for training, make a separate environment")
        assert "python3.12 -m venv ~/verl-train" in f.fix and sys.executable not in f.fix
    # the same facts from another Python: the fix installs into that one
    other = dict(venv_report.facts, python=dict(venv_report.facts["python"], prefix="/opt/train-env"))
    again = by_rule(doctor_findings(other, "/opt/train-env/bin/python"))
    assert again["env.cuda.unavailable"].fix == (
        "/opt/train-env/bin/python -m pip install torch==2.11.0 --index-url https://download.pytorch.org/whl/cu130")
    assert again["env.rollout.missing"].fix.startswith('/opt/train-env/bin/python -m pip install "verl[vllm]==0.9.1"')
    # what is right is not reported
    assert not {"env.verl.missing", "env.verl.version", "env.verl.extras", "env.transformers", "env.tensordict",
                "env.ray", "env.python"} & set(found)


def test_a_bare_python_is_told_to_install_verl():
    if not Path("/usr/bin/python3").exists():
        pytest.skip("no system python3 here")
    report = run_doctor("/usr/bin/python3")
    found = by_rule(report.findings)
    if report.facts["packages"]["verl"]:
        pytest.skip("the system python3 has verl")
    assert found["env.verl.missing"].fix == '/usr/bin/python3 -m pip install "verl[verl-core]==0.9.1"'
    # installing verl brings transformers/tensordict/ray: they are not listed one by one
    assert "env.transformers" not in found and "env.ray" not in found


def test_recorded_gpu_python_has_working_cuda_but_no_verl_and_a_too_new_transformers():
    facts = json.loads((DATA / "h200-torch-cu130.doctor-facts.json").read_text())
    found = by_rule(doctor_findings(facts, "python3"))
    assert not [r for r in found if r.startswith("env.cuda")]  # torch cu130 on a CUDA 13.0 driver: fine
    assert found["env.verl.missing"].severity.value == "error"
    tf = found["env.transformers"]
    assert "transformers 5.17.0 is outside verl 0.9.1's pin transformers>=5.5.3,<5.11,!=5.6.0" in tf.message
    assert tf.fix == 'python3 -m pip install "transformers>=5.5.3,<5.11,!=5.6.0"'


def test_the_fast_probe_gives_the_same_verdict_as_importing_torch_on_the_gpu_machine():
    deep = json.loads((DATA / "h200-torch-cu130.doctor-facts.json").read_text())
    static = json.loads((DATA / "h200-torch-cu130.doctor-static-facts.json").read_text())
    assert static["torch"]["imported"] is None and static["torch"]["cuda_available"]  # nothing was imported
    rules = lambda facts: sorted((f.rule, f.severity.value) for f in doctor_findings(facts, "python3"))  # noqa: E731
    assert rules(static) == rules(deep)


def test_torch_whose_cuda_libraries_do_not_resolve_is_named_before_import_fails():
    facts = json.loads((DATA / "h200-torch-cu130.doctor-static-facts.json").read_text())
    facts["torch"]["missing_libs"] = ["libcudart.so.13"]  # what ldd says when nvidia-cuda-runtime is gone
    f = by_rule(doctor_findings(facts, "python3"))["env.torch.broken"]
    assert f.severity.value == "error" and "libcudart.so.13: cannot open shared object file" in f.message
    assert "--force-reinstall" in f.fix


def test_the_fast_probe_reads_this_pythons_torch_without_importing_it():
    from wizard.adapters.verl_env.doctor import run_probe

    facts = run_probe(sys.executable)
    torch = facts["torch"]
    assert torch["version"] and torch["version"].split("+")[0].count(".") == 2
    assert torch.get("static") or torch.get("skipped")  # read from its files, not imported; its time: bench/bench_detect.py


def test_driver_older_than_torch_build_is_an_error_with_both_ways_out():
    facts = json.loads((DATA / "h200-torch-cu130.doctor-facts.json").read_text())
    facts["driver"]["cuda"] = 12040
    f = by_rule(doctor_findings(facts, "python3"))["env.cuda.driver"]
    assert "built for CUDA 13.0 but the driver supports CUDA 12.4" in f.message
    assert "whl/cu124" in f.fix and "upgrade the NVIDIA driver" in f.fix


def test_ray_address_that_does_not_answer_is_an_error(monkeypatch):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    f = by_rule(run_doctor(sys.executable).findings)["env.ray.unreachable"]
    assert f.severity.value == "error" and f"127.0.0.1:{port}" in f.message and "--block" in f.fix


@pytest.mark.parametrize("python, words", [
    ("/nonexistent/bin/python", "no such file"),
    ("/bin/true", "not a Python 3 that can run the probe"),
    (os.path.dirname(sys.executable), "is a folder"),
])
def test_a_bad_python_is_one_line(python, words):
    with pytest.raises(DoctorError) as exc:
        run_doctor(python)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_version_ranges_as_verl_pins_them():
    spec = ">=5.5.3,<5.11,!=5.6.0"
    assert satisfies("5.10.4", spec) and satisfies("5.5.3", spec)
    assert not satisfies("5.6.0", spec) and not satisfies("5.11.0", spec) and not satisfies("5.5.2", spec)
    assert satisfies("0.10.0", ">=0.8.0,<=0.10.0,!=0.9.0") and not satisfies("0.9.0", ">=0.8.0,<=0.10.0,!=0.9.0")
    assert satisfies("2.13.0+cpu", ">=2.41.0") is False and satisfies("2.60.0", ">=2.41.0")


def fake_verl(root: Path, version: str) -> Path:
    """A verl ``version`` whose config tree is 0.9.1's with three edits: a key added, a section removed, a default
    changed (what a release does to the tree); importable by the probes from ``root`` on PYTHONPATH."""
    import importlib.util
    import shutil

    real = Path(importlib.util.find_spec("verl").origin).parent / "trainer" / "config"
    pkg = root / "verl"
    shutil.copytree(real, pkg / "trainer" / "config", ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    for init in (pkg / "__init__.py", pkg / "trainer" / "__init__.py"):
        init.write_text("")
    fsdp = pkg / "trainer" / "config" / "engine" / "fsdp.yaml"
    text = fsdp.read_text().replace("forward_prefetch: False", "forward_prefetch: False\n\ngrad_offload: false")
    fsdp.write_text(text.replace("\nturbo_config:", "\nturbo_config_removed_here:", 1).split("\nturbo_config_removed_here:")[0] + "\n")
    rollout = pkg / "trainer" / "config" / "rollout" / "rollout.yaml"
    rollout.write_text(rollout.read_text().replace("dtype: bfloat16", "dtype: float16", 1))
    info = root / f"verl-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: verl\nVersion: {version}\n")
    return root


def test_another_verl_is_said_once_with_the_keys_its_config_tree_has_differently(tmp_path, monkeypatch):
    """Issue 30: the environment's verl is 0.9.0: doctor says so once, with the keys that differ from 0.9.1's tree."""
    root = fake_verl(tmp_path / "site", "0.9.0")
    monkeypatch.setenv("PYTHONPATH", f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    report = run_doctor(sys.executable, check_ray=False)
    drift = report.facts["key_drift"]
    assert drift["installed"] == "0.9.0" and drift["shipped"] == "0.9.1"
    assert "actor_rollout_ref.actor.fsdp_config.grad_offload" in drift["only_installed"]
    assert "actor_rollout_ref.actor.fsdp_config.turbo_config.distributed.fsdp_plan.param_dtype" in drift["only_shipped"]
    assert ["actor_rollout_ref.rollout.dtype", "float16", "bfloat16"] in [list(c) for c in drift["changed"]]
    (version,) = [f for f in report.findings if f.rule == "env.verl.version"]
    assert "verl 0.9.0 is installed" in version.message and "fsdp_config.grad_offload" in version.message
    assert "only in verl 0.9.0" in version.message and "that verl 0.9.0 lacks" in version.message
    assert sum("0.9.0" in f.message for f in report.findings) == 1  # said once


def test_verl_0_9_1_gets_no_key_comparison(venv_report):
    assert "key_drift" not in venv_report.facts
