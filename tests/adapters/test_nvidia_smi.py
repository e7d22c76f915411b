"""nvidia-smi -q -x: the recorded H200 XML gives the same GPU as NVML; bad files are one-line errors."""

import json
from pathlib import Path

import pytest

from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
from wizard.adapters.machine.nvidia_smi import NvidiaSmiError, discover_nvidia_smi_xml, xml_to_raw
from wizard.usecases.hardware import read_nvidia_smi_xml
from wizard.core.hardware.topology import nvml_to_discovery

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"
XML = DATA / "h200-1gpu.nvidia-smi-q.xml"


def test_the_xml_describes_the_same_gpu_nvml_does():
    catalogue = load_gpu_catalogue()
    from_xml = discover_nvidia_smi_xml(read_nvidia_smi_xml(XML), None, catalogue)
    from_nvml = nvml_to_discovery(json.loads((DATA / "h200-1gpu.nvml.json").read_text()), None, catalogue)
    (x,), (n,) = from_xml.cluster.nodes[0].gpus, from_nvml.cluster.nodes[0].gpus
    assert from_xml.cluster.source == "nvidia-smi" and from_xml.ok
    for field in ("name", "uuid", "pci_bus_id", "mig_enabled", "catalogue_id", "compute_capability"):
        assert getattr(x, field) == getattr(n, field), field
    assert (from_xml.cluster.driver_version, from_xml.cluster.cuda_driver_version) == ("580.159.04", "13.0")
    # 143771 MiB total, 143156 MiB free, exactly what NVML reports in bytes on that machine
    assert x.memory_total_bytes == 150_754_820_096 and x.memory_free_bytes == 143156 * 2**20
    assert x.processes == []


def test_the_xml_honours_cuda_visible_devices():
    d = discover_nvidia_smi_xml(read_nvidia_smi_xml(XML), "GPU-nope", load_gpu_catalogue())
    assert not d.ok and d.cluster.gpu_total == 0
    assert d.findings[0].rule == "hw.visible_devices"


def test_xml_without_topology_has_no_links_rather_than_guessed_ones():
    raw = xml_to_raw(read_nvidia_smi_xml(XML))
    assert raw["p2p"] == {} and raw["count"] == 1


@pytest.mark.parametrize("text, words", [
    ("not xml at all", "not valid XML"),
    ("<html><body/></html>", "expected <nvidia_smi_log>"),
])
def test_other_text_is_refused_in_one_line(text, words):
    with pytest.raises(NvidiaSmiError) as exc:
        xml_to_raw(text, origin="saved.xml")
    assert words in str(exc.value) and "\n" not in str(exc.value) and "saved.xml" in str(exc.value)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(NvidiaSmiError, match="no such file"):
        read_nvidia_smi_xml(tmp_path / "nope.xml")
    with pytest.raises(NvidiaSmiError, match="is a directory"):
        read_nvidia_smi_xml(tmp_path)
