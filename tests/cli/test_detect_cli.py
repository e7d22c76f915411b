"""verl-wizard detect / doctor: exit codes, JSON shapes, one-line errors, never a traceback."""

import json
import socket
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli


DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"
XML = str(DATA / "h200-1gpu.nvidia-smi-q.xml")


def run(*args, env=None):
    return run_cli(*args, env=env)


def assert_one_line_error(proc, words):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], proc.stderr


def test_detect_on_this_machine_exits_0_and_explains():
    proc = run("detect")
    assert proc.returncode == 0, proc.stderr
    from wizard.adapters.machine.nvml import gather_nvml

    if gather_nvml().get("error"):
        assert "no NVIDIA driver" in proc.stdout and "--cluster FILE" in proc.stdout


def test_detect_a_saved_xml_as_json():
    proc = run("detect", "--format", "json", "--nvidia-smi-xml", XML)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["ok"] is True and doc["findings"] == []
    (gpu,) = doc["cluster"]["nodes"][0]["gpus"]
    assert gpu["name"] == "NVIDIA H200" and gpu["memory_total_bytes"] == 150_754_820_096
    assert gpu["catalogue_id"] == "H200-141GB"


def test_detect_text_and_hidden_gpus_exit_1():
    text = run("detect", "--nvidia-smi-xml", XML)
    assert "GPU0  NVIDIA H200 [H200-141GB]  140.4 GiB (139.8 GiB free)  cc 9.0" in text.stdout
    proc = run("detect", "--format", "json", "--nvidia-smi-xml", XML, env={"CUDA_VISIBLE_DEVICES": "3"})
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["ok"] is False
    assert doc["findings"][0]["rule"] == "hw.visible_devices" and "there is no GPU 3" in doc["findings"][0]["message"]


def test_detect_a_cluster_spec(tmp_path):
    spec = tmp_path / "cluster.yaml"
    spec.write_text("nodes:\n  - {count: 4, gpus: 8, gpu: H100-80GB}\n")
    proc = run("detect", "--format", "json", "--cluster", str(spec))
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["cluster"]["source"] == "spec" and sum(n["gpu_count"] for n in doc["cluster"]["nodes"]) == 32


def test_detect_bad_inputs_are_one_line_exit_2(tmp_path):
    assert_one_line_error(run("detect", "--nvidia-smi-xml", str(tmp_path / "nope.xml")), "no such file")
    junk = tmp_path / "junk.xml"
    junk.write_text("<html/>")
    assert_one_line_error(run("detect", "--nvidia-smi-xml", str(junk)), "expected <nvidia_smi_log>")
    spec = tmp_path / "bad.yaml"
    spec.write_text("nodes:\n  - {gpus: 8, gpu: H1OO}\n")
    assert_one_line_error(run("detect", "--cluster", str(spec)), "nodes[0].gpu: unknown GPU model 'H1OO'")
    spec.write_text("nodes: [\n")
    assert_one_line_error(run("detect", "--cluster", str(spec)), "not valid YAML")
    assert_one_line_error(run("detect", "--ray-address", "somewhere"), "cannot read Ray address 'somewhere'")
    assert_one_line_error(run("detect", "--cluster", str(spec), "--nvidia-smi-xml", XML), "not allowed with")


def test_detect_a_ray_address_nothing_listens_on_exits_1():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = run("detect", "--format", "json", "--ray-address", f"127.0.0.1:{port}", "--timeout", "10")
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["findings"][0]["rule"] == "ray.unreachable"


def test_catalogue_listing():
    proc = run("detect", "--catalogue")
    assert proc.returncode == 0 and "H200-141GB" in proc.stdout and "nvidia.com" in proc.stdout


@pytest.mark.verl  # this project's venv: verl 0.9.1 with CPU torch
def test_doctor_json_on_the_cpu_venv_exits_1_with_fixes():
    proc = run("doctor", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    rules = {f["rule"]: f for f in doc["findings"]}
    assert doc["ok"] is False and {"env.cuda.unavailable", "env.rollout.missing"} <= set(rules)
    assert all(set(f) >= {"rule", "severity", "stage", "keys", "message", "fix"} for f in doc["findings"])
    assert doc["facts"]["packages"]["verl"] == "0.9.1"


@pytest.mark.verl
def test_doctor_text_on_the_cpu_venv():
    proc = run("doctor")
    assert proc.returncode == 1 and "FAIL  environment" in proc.stdout and "CUDA not available" in proc.stdout


def test_doctor_with_a_python_that_is_not_there():
    assert_one_line_error(run("doctor", "--python", "/no/such/python"), "--python /no/such/python: no such file")
