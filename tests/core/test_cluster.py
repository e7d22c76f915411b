"""Cluster model, GPU catalogue and cluster spec files: what a user planning without hardware relies on."""

import datetime
import re

import pytest
import yaml

from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
from wizard.core.hardware.cluster import (
    MIB,
    ClusterSpecError,
    GpuLink,
    LinkKind,
    cpu_list_text,
    cuda_version_text,
    parse_cluster_spec,
)


@pytest.fixture(scope="module")
def catalogue():
    return load_gpu_catalogue()


def test_catalogue_entries_are_sourced_dated_and_unambiguous(catalogue):
    ids = [g.id for g in catalogue.gpus]
    names = [n.casefold() for g in catalogue.gpus for n in g.nvml_names]
    assert len(ids) == len(set(ids)) and len(names) == len(set(names))
    assert len(ids) >= 20
    for g in catalogue.gpus:
        assert g.source.strip() and datetime.date.fromisoformat(g.date), g.id
        assert g.memory_gb > 0 and g.memory_bandwidth_gbs > 0, g.id
        assert g.kind in ("datacenter", "workstation", "consumer"), g.id
        assert not g.fp8 or g.compute_capability >= (8, 9), f"{g.id}: FP8 tensor cores start with Ada/Hopper"
        assert not g.bf16 or g.compute_capability >= (8, 0), f"{g.id}: BF16 tensor cores start with Ampere"
    kinds = {g.kind for g in catalogue.gpus}
    assert {"datacenter", "workstation"} <= kinds


def test_catalogue_matches_what_nvml_reports(catalogue):
    h200 = catalogue.find("NVIDIA H200")
    assert h200.id == "H200-141GB" and h200.memory_bytes == 143771 * MIB  # the recorded NVML total
    assert catalogue.find("nvidia h100 80gb hbm3").id == "H100-80GB"
    assert catalogue.find("h100").id == "H100-80GB"  # the id without its memory suffix, when unique
    assert catalogue.find("L4").id == "L4-24GB"
    assert catalogue.find("A100") is None  # 80GB, 40GB, PCIe: ambiguous, so no guess
    assert catalogue.find("TPU v5") is None


def test_short_form_spec_is_a_cluster_the_rules_understand(catalogue):
    cluster = parse_cluster_spec({"cluster": "4 nodes x 8 H100-80GB NVLink"}, catalogue)
    assert cluster.source == "spec" and cluster.gpu_total == 32 and len(cluster.nodes) == 4
    assert str(cluster.to_gpu_spec()) == "4x8xH100-80GB"
    node = cluster.nodes[0]
    assert node.interconnect == "nvlink" and node.link(0, 7).label == "NV18"
    assert node.nvlink_islands() == [list(range(8))]
    # what NVML reports on a real H100 80GB HBM3 (tests/data/gpu/h100-*), not the datasheet's 80 GiB
    assert node.gpus[0].memory_total_bytes == 81559 * 2**20 and node.gpus[0].compute_capability == (9, 0)


def test_yaml_spec_with_two_kinds_of_node(catalogue):
    doc = yaml.safe_load("""
name: lab
nodes:
  - {count: 2, gpus: 8, gpu: NVIDIA H200, cpus: 96, memory_gib: 1536, name: train}
  - {gpus: 4, gpu: L40S-48GB}
""")
    cluster = parse_cluster_spec(doc, catalogue)
    assert [n.name for n in cluster.nodes] == ["train0", "train1", "node1-0"]
    assert cluster.gpu_total == 20 and cluster.nodes[0].cpus == 96
    # host RAM, which bounds CPU offload (memory.host); unknown where the spec does not say
    assert cluster.nodes[1].memory_bytes == 1536 * 2**30 and cluster.nodes[2].memory_bytes is None
    assert cluster.nodes[2].interconnect == "pcie" and cluster.nodes[2].links == []  # L40S has no NVLink
    assert cluster.to_gpu_spec().gpus_per_node == 4  # verl puts the same count on every node
    assert "lab" in cluster.notes[0]


@pytest.mark.parametrize("doc, words", [
    (None, "the cluster spec is empty"),
    ("lots of GPUs", "cannot read cluster 'lots of GPUs'"),
    ({"nodes": []}, "nodes: List should have at least 1 item"),
    ({"nodes": [{"gpus": "eight"}]}, "nodes[0].gpus: Input should be a valid integer"),
    ({"nodes": [{"gpus": 8, "memory_gib": 0}]}, "nodes[0].memory_gib: Input should be greater than 0"),
    ({"nodes": [{"gpus": 8, "memory_gib": True}]}, "nodes[0].memory_gib: Input should be a valid number"),
    ({"nodes": [{"gpus": 8, "gpu_model": "H100"}]}, "nodes[0].gpu_model: unknown key (known: count, gpus, gpu"),
    ({"nodes": [{"gpus": 8, "gpu": "H1OO-80GB"}]}, "nodes[0].gpu: unknown GPU model 'H1OO-80GB'; did you mean H100-80GB"),
    # not "did you mean RTX-3090-24GB?"
    ({"nodes": [{"gpus": 8, "gpu": "MI300X"}]}, "nodes[0].gpu: 'MI300X' is not an NVIDIA GPU; the wizard's memory"),
    ({"nodes": [{"gpus": 8, "gpu": "Gaudi2"}]}, "nodes[0].gpu: 'Gaudi2' is not an NVIDIA GPU"),
    ({"nodes": [{"gpus": 8, "gpu": "L4", "interconnect": "nvlink"}]}, "nodes[0].interconnect: L4-24GB has no NVLink"),
    ({"nodes": [{"gpus": 8, "interconnect": "infiniband"}]}, "nodes[0].interconnect: String should match"),
    ([1, 2], "a cluster spec is a mapping"),
])
def test_bad_specs_are_one_line_naming_the_field(catalogue, doc, words):
    with pytest.raises(ClusterSpecError) as exc:
        parse_cluster_spec(doc, catalogue)
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_link_labels_and_helpers():
    assert GpuLink(a=0, b=1, kind=LinkKind.NV, nvlinks=12).label == "NV12"
    assert GpuLink(a=0, b=1, kind=LinkKind.PXB).label == "PXB"
    assert cpu_list_text([0, 1, 2, 3, 8, 9, 12]) == "0-3,8-9,12"
    assert cuda_version_text(13000) == "13.0" and cuda_version_text(12080) == "12.8"
    assert cuda_version_text(None) is None and cuda_version_text("ERR x") is None


def test_cluster_json_is_schema_versioned(catalogue):
    doc = parse_cluster_spec("2x8xH100-80GB", catalogue).model_dump(mode="json")
    assert doc["schema_version"] == 1 and doc["nodes"][0]["links"][0]["kind"] == "NV"
    assert re.match(r"^\d+$", str(doc["nodes"][0]["gpu_count"]))
