"""``nvidia-smi -q -x``: the fallback when NVML cannot be asked directly, and saved captures from other machines.

The XML is translated into the raw NVML shape (see ``wizard.adapters.machine.nvml``), so the same pure code in
``wizard.core.hardware.topology`` builds the Cluster and applies ``CUDA_VISIBLE_DEVICES``. The XML carries no
link matrix and no compute capability: links stay unknown, the capability comes from the GPU catalogue.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import xml.etree.ElementTree as ET

from wizard.core.hardware import Discovery, GpuCatalogue, MAX_GPUS_PER_NODE, MIB, nvml_to_discovery


class NvidiaSmiError(ValueError):
    """A file or an nvidia-smi answer that is not ``nvidia-smi -q -x`` XML; the message is one line."""


def discover_nvidia_smi_xml(text: str, visible: str | None = None, catalogue: GpuCatalogue | None = None,
                            origin: str = "nvidia-smi") -> Discovery:
    return nvml_to_discovery(xml_to_raw(text, origin), visible, catalogue, source="nvidia-smi")


MAX_XML_CHARS = 16 * 1024 * 1024  # nvidia-smi -q -x of 8 GPUs busy with processes is ~200 KiB


def run_nvidia_smi_xml(timeout: float = 15.0) -> str | None:
    """This machine's ``nvidia-smi -q -x``; None when nvidia-smi is not installed or does not answer."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        proc = subprocess.run([exe, "-q", "-x"], capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 and proc.stdout.strip() else None


def xml_to_raw(text: str, origin: str = "nvidia-smi") -> dict:
    """The XML as the raw NVML dict: driver, cuda_driver, devices (no p2p: the XML has no links)."""
    if len(text) > MAX_XML_CHARS:
        raise NvidiaSmiError(f"{origin}: {len(text):,} characters is more than nvidia-smi writes for one machine")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise NvidiaSmiError(f"{origin}: not valid XML ({exc})") from None
    if root.tag != "nvidia_smi_log":
        raise NvidiaSmiError(f"{origin}: not nvidia-smi -q -x output (the root element is <{root.tag}>, "
                             "expected <nvidia_smi_log>)")
    gpus = root.findall("gpu")
    if len(gpus) > MAX_GPUS_PER_NODE:  # one machine's answer: bounded before anything is built from it
        raise NvidiaSmiError(f"{origin}: {len(gpus):,} <gpu> entries; one machine has at most {MAX_GPUS_PER_NODE}")
    raw: dict = {
        "hostname": None,
        "driver": _text(root, "driver_version"),
        "cuda_driver": _cuda_int(_text(root, "cuda_version")),
        "devices": [_device(g) for g in gpus],
        "p2p": {},
    }
    raw["count"] = len(raw["devices"])
    return raw


def _text(el: ET.Element, path: str) -> str | None:
    node = el.find(path)
    if node is None or node.text is None:
        return None
    value = node.text.strip()
    return None if value in ("", "N/A", "None", "[N/A]") else value


def _cuda_int(text: str | None) -> int | None:
    """'13.0' -> 13000, the way NVML reports the driver's CUDA version."""
    if not text:
        return None
    try:
        major, _, minor = text.partition(".")
        return int(major) * 1000 + int(minor or 0) * 10
    except ValueError:
        return None


def _mib(text: str | None) -> int | None:
    """'143771 MiB' -> bytes."""
    if not text:
        return None
    number, _, unit = text.partition(" ")
    try:
        value = float(number)
    except ValueError:
        return None
    if not math.isfinite(value) or value < 0 or value > 1 << 50:  # "inf MiB" and the like: not a reading
        return None
    return int(value) * {"MiB": MIB, "GiB": 1024 * MIB, "KiB": 1024}.get(unit.strip(), MIB)


def _int(text: str | None) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0


def _device(g: ET.Element) -> dict:
    mig = _text(g, "mig_mode/current_mig")
    procs = [
        {"pid": _int(_text(p, "pid")), "used": _mib(_text(p, "used_memory"))}
        for p in g.findall("processes/process_info")
    ]
    return {
        "name": _text(g, "product_name"),
        "uuid": _text(g, "uuid"),
        "memory": {k: _mib(_text(g, f"fb_memory_usage/{k}")) for k in ("total", "free", "used")},
        "pci": _text(g, "pci/pci_bus_id") or g.get("id"),
        "mig": [1 if mig == "Enabled" else 0, 0] if mig else "ERR not reported",
        "procs": procs,
        "nvlink": [],
    }
