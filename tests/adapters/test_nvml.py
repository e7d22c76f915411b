"""NVML discovery: recorded answers from real H200 machines, and this machine for real."""

import copy
import json
from pathlib import Path

import pytest

from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
from wizard.adapters.machine.nvml import discover_nvml, gather_nvml, host_memory_bytes
from wizard.core.hardware.cluster import MIB, LinkKind, P2P
from wizard.core.hardware.topology import nvml_to_discovery

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"


def raw(name: str) -> dict:
    return json.loads((DATA / name).read_text())


@pytest.fixture(scope="module")
def catalogue():
    return load_gpu_catalogue()


def test_h200_capture_is_one_h200_with_its_facts(catalogue):
    d = nvml_to_discovery(raw("h200-1gpu.nvml.json"), None, catalogue)
    assert d.ok and d.findings == []
    c = d.cluster
    assert (c.source, c.driver_version, c.cuda_driver_version, c.gpu_total) == ("nvml", "580.159.04", "13.0", 1)
    (gpu,) = c.nodes[0].gpus
    assert gpu.name == "NVIDIA H200" and gpu.catalogue_id == "H200-141GB"
    assert gpu.uuid == "GPU-b0af1628-1763-8b57-89b5-bbfd65a3bea4" and gpu.pci_bus_id == "00000000:00:06.0"
    assert gpu.compute_capability == (9, 0) and gpu.mig_enabled is False and gpu.processes == []
    # that capture lost its memory answer: the catalogue's recorded NVML total stands in
    assert gpu.memory_total_bytes == 143771 * MIB
    assert gpu.numa_node is None  # NVML said "Not Supported": unknown, not 0


def test_gathered_answers_carry_memory_and_cpu_affinity(catalogue):
    (gpu,) = nvml_to_discovery(raw("h200-idle.raw-nvml.json"), None, catalogue).cluster.nodes[0].gpus
    assert gpu.memory_total_bytes == 150_754_820_096 == 143771 * MIB
    assert gpu.memory_free_bytes == 150_109_880_320
    assert gpu.cpu_affinity == "0-15"


def test_a_busy_gpu_is_a_warning_naming_the_process_and_memory(catalogue):
    d = nvml_to_discovery(raw("h200-busy.raw-nvml.json"), None, catalogue)
    (busy,) = [f for f in d.findings if f.rule == "hw.busy"]
    assert busy.severity.value == "warning" and "pids 526" in busy.message and "10.5 GiB" in busy.message
    assert d.ok  # a warning, not an error


@pytest.mark.parametrize("visible, n_gpus, rule, severity, words", [
    ("0", 1, None, None, None),
    ("GPU-b0af1628", 1, None, None, None),  # a unique UUID prefix, as CUDA accepts
    ("1", 0, "hw.visible_devices", "error", "there is no GPU 1"),
    ("GPU-nope,0", 0, "hw.visible_devices", "error", "CUDA ignores 'GPU-nope,0'"),
    ("0,0", 1, "hw.visible_devices", "error", "names GPU 0 twice"),
    ("", 0, "hw.no_gpu", "info", "hides the only GPU"),
])
def test_cuda_visible_devices_is_honoured(catalogue, visible, n_gpus, rule, severity, words):
    d = nvml_to_discovery(raw("h200-1gpu.nvml.json"), visible, catalogue)
    assert d.cluster.gpu_total == n_gpus and d.cluster.visible_devices == visible
    if rule is None:
        assert d.findings == []
        assert d.cluster.nodes[0].gpus[0].physical_index == 0
    else:
        hit = [f for f in d.findings if f.rule == rule]
        assert hit and hit[0].severity.value == severity and words in hit[0].message and hit[0].fix


def test_visible_devices_reorder_gpus_and_links_follow(catalogue):
    """Two GPUs joined by 18 NVLinks, derived from the real capture (second GPU: new UUID and PCI bus)."""
    two = copy.deepcopy(raw("h200-idle.raw-nvml.json"))
    second = copy.deepcopy(two["devices"][0])
    second.update(uuid="GPU-22222222-0000-0000-0000-000000000000", pci="00000000:00:07.0")
    two["devices"].append(second)
    for dev, peer in ((two["devices"][0], "00000000:00:07.0"), (second, "00000000:00:06.0")):
        dev["nvlink"] = [{"link": i, "state": 1, "remote_pci": peer, "remote_type": 0} for i in range(18)]
    two["p2p"] = {k: {"read": 0, "write": 0, "nvlink": 0, "atomics": 0, "prop": 0, "ancestor": 50}
                  for k in ("0-1", "1-0")}
    node = nvml_to_discovery(two, "1,0", catalogue).cluster.nodes[0]
    assert [g.physical_index for g in node.gpus] == [1, 0]  # CUDA index 0 is physical GPU 1
    (link,) = node.links
    assert (link.kind, link.nvlinks, link.label, link.p2p_read) == (LinkKind.NV, 18, "NV18", P2P.OK)
    assert node.nvlink_islands() == [[0, 1]]
    # without NVLink the common ancestor decides: SYS, and a P2P refusal is a warning
    for dev in two["devices"]:
        dev["nvlink"] = []
    two["p2p"]["0-1"]["read"] = 5
    d = nvml_to_discovery(two, None, catalogue)
    assert d.cluster.nodes[0].links[0].label == "SYS"
    assert [f.rule for f in d.findings] == ["hw.p2p"]


def test_this_machine_for_real():
    """On a machine without an NVIDIA driver (this one) discovery explains it; with one, it lists the GPUs."""
    answers = gather_nvml()
    d = discover_nvml(catalogue=load_gpu_catalogue())
    if answers.get("error"):
        assert answers["error"]["kind"] in ("library_not_found", "driver_not_loaded")
        assert d.ok and d.cluster.gpu_total == 0 and d.cluster.source == "none"
        assert "driver" in d.cluster.notes[0]
        (f,) = d.findings
        assert f.rule == "hw.no_gpu" and f.severity.value == "info" and "--cluster" in f.fix
    else:
        assert d.cluster.source == "nvml" and answers["count"] == len(answers["devices"])


def test_the_machines_ram_is_read_beside_the_gpus(tmp_path, catalogue):
    """Host RAM bounds CPU offload and LoRA (memory.host: Ray kills workers past 95 % of it); detection reads it
    from /proc/meminfo, with or without a GPU, and says it."""
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       131962880 kB\nMemFree:        1000 kB\n")
    assert host_memory_bytes(str(meminfo)) == 131962880 * 1024
    assert host_memory_bytes(str(tmp_path / "missing")) is None
    answers = {**raw("h200-1gpu.nvml.json"), "host_memory": 131962880 * 1024}
    assert nvml_to_discovery(answers, None, catalogue).cluster.nodes[0].memory_bytes == 131962880 * 1024
    here = discover_nvml(catalogue=catalogue).cluster.nodes[0]  # this machine, GPU or not
    assert here.memory_bytes == host_memory_bytes() and here.memory_bytes > 2**30
