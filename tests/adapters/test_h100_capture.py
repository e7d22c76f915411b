"""A second real machine: one H100 80GB HBM3 (lent, 2026-12-02), as NVML, nvidia-smi and verl-wizard saw it.

The files in tests/data/gpu/h100-* were captured there (see NOTES.md); the discovery code here must read
them as that machine's own ``verl-wizard detect`` did, and the planner must plan for it."""

import json
from pathlib import Path

import pytest

from wizard.usecases.hardware import load_cluster_spec_file
from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
from wizard.adapters.machine.nvidia_smi import discover_nvidia_smi_xml
from wizard.usecases.hardware import read_nvidia_smi_xml
from wizard.cli import main as cli
from wizard.core.hardware.cluster import MIB, parse_cluster_spec
from wizard.core.placement.pools import plan_placement
from wizard.core.hardware.topology import nvml_to_discovery

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"
DETECTED = DATA / "h100-1gpu.detect.json"


@pytest.fixture(scope="module")
def catalogue():
    return load_gpu_catalogue()


def raw(name):
    return json.loads((DATA / name).read_text())


def test_nvml_answers_give_what_detect_printed_on_that_machine(catalogue):
    found = nvml_to_discovery(raw("h100-idle.raw-nvml.json"), None, catalogue)
    printed = json.loads(DETECTED.read_text())
    assert found.ok and printed["ok"] and found.findings == []
    # the catalogue's speed figures (bf16_tflops, memory_bandwidth_gbs, nvlink_gbs_per_link) joined each GPU after
    # the capture, and a node's network rate (a cluster spec's network_gbps; NVML does not say it) each node
    assert found.cluster.nodes[0].network_gbs is None
    assert found.cluster.model_dump(mode="json", exclude={"nodes": {"__all__": {"network_gbs": True, "gpus": {
        "__all__": {"bf16_tflops", "memory_bandwidth_gbs", "nvlink_gbs_per_link"}}}}}) == printed["cluster"]
    (gpu,) = found.cluster.nodes[0].gpus
    assert (gpu.name, gpu.catalogue_id, gpu.compute_capability) == ("NVIDIA H100 80GB HBM3", "H100-80GB", (9, 0))
    assert gpu.memory_total_bytes == 81559 * MIB  # 79.6 GiB, not the datasheet's 80
    assert gpu.numa_node is None and gpu.cpu_affinity == "0-15"  # NVML: NUMA "Not Supported" in this VM
    assert found.cluster.nodes[0].links == []  # one GPU: no link to anything (NVLink "Not Supported" there)


def test_the_xml_and_the_capture_script_agree_with_nvml(catalogue):
    from_xml = discover_nvidia_smi_xml(read_nvidia_smi_xml(DATA / "h100-1gpu.nvidia-smi-q.xml"), None, catalogue)
    from_capture = nvml_to_discovery(raw("h100-1gpu.nvml.json"), None, catalogue)
    from_nvml = nvml_to_discovery(raw("h100-idle.raw-nvml.json"), None, catalogue)
    (x,), (c,), (n,) = (d.cluster.nodes[0].gpus for d in (from_xml, from_capture, from_nvml))
    for field in ("name", "uuid", "pci_bus_id", "catalogue_id", "compute_capability", "memory_total_bytes"):
        assert getattr(x, field) == getattr(c, field) == getattr(n, field), field


def test_a_typed_h100_spec_plans_with_the_memory_the_real_card_reports(catalogue):
    (planned,) = parse_cluster_spec("1x1xH100-80GB", catalogue).nodes[0].gpus
    (detected,) = nvml_to_discovery(raw("h100-idle.raw-nvml.json"), None, catalogue).cluster.nodes[0].gpus
    assert planned.memory_total_bytes == detected.memory_total_bytes


def test_the_planner_on_that_machine_builds_one_tp1_replica_on_gpu_0():
    cluster = load_cluster_spec_file(str(DETECTED), load_gpu_catalogue()).cluster
    values = {"trainer.n_gpus_per_node": 1, "trainer.nnodes": 1, "algorithm.adv_estimator": "grpo",
              "actor_rollout_ref.rollout.tensor_model_parallel_size": 1}
    p = plan_placement(values, cluster)
    assert [[g.index for g in r.gpus] for r in p.replicas_of("rollout")] == [[0]]
    assert p.issues == []


def test_plan_reads_a_saved_detect_answer_and_gives_the_verdict_for_that_gpu(capsys):
    assert cli(["plan", "--preset", "grpo-1gpu-smoke", "--cluster", str(DETECTED), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (gpu,) = out["gpus"]
    assert out["fits"] and (gpu["node"], gpu["index"], gpu["capacity_gib"]) == ("vm", 0, 79.65)
    assert gpu["roles"] == ["actor", "rollout", "ref"] and gpu["peak_phase"] == "generation"
    text_rc = cli(["plan", "--preset", "grpo-1gpu-smoke", "--cluster", str(DETECTED)])
    text = capsys.readouterr().out
    assert text_rc == 0 and "FITS" in text and "of 79.6 GiB" in text


def test_a_damaged_detect_answer_is_one_line(tmp_path, capsys):
    bad = json.loads(DETECTED.read_text())
    bad["cluster"]["nodes"][0]["gpus"][0]["memory_total_bytes"] = "lots"
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(bad))
    assert cli(["plan", "--preset", "grpo-1gpu-smoke", "--cluster", str(path)]) == 2
    err = capsys.readouterr().err
    assert "detect --format json" in err and "memory_total_bytes" in err and err.count("\n") == 1


def test_a_detect_answer_from_a_machine_without_gpus_is_refused_with_why(tmp_path, capsys):
    empty = {"ok": True, "cluster": {"schema_version": 1, "source": "none", "nodes": [],
                                     "notes": ["no NVIDIA driver on this machine (libnvidia-ml.so not found)"]},
             "findings": []}
    path = tmp_path / "laptop.json"
    path.write_text(json.dumps(empty))
    assert cli(["plan", "--preset", "grpo-1gpu-smoke", "--cluster", str(path)]) == 2
    err = capsys.readouterr().err
    assert "found no GPUs" in err and "no NVIDIA driver" in err and err.count("\n") == 1


def test_a_hand_written_spec_with_a_source_key_gets_the_spec_answer(tmp_path, capsys):
    path = tmp_path / "cluster.yaml"
    for text in ("source: mine\nnodes:\n  - {count: 2, gpus: 8, gpu: H100-80GB}\n",
                 "source: nvml\nnodes:\n  - {gpus: '8', gpu: H100-80GB}\n"):
        path.write_text(text)
        assert cli(["plan", "--preset", "grpo-1gpu-smoke", "--cluster", str(path)]) == 2
        err = capsys.readouterr().err
        assert "source: unknown key" in err and "detect" not in err
