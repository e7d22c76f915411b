"""GPU discovery through NVML (the ``pynvml`` module of nvidia-ml-py).

``gather_nvml`` only asks NVML and writes the answers into a plain dict, in the shape of
``shared/fixtures/gpu/capture_nvml.py``'s captures (``*.nvml.json``); ``wizard.core.hardware.topology``
turns that dict into a Cluster. So every decision is tested on recorded answers from real GPUs,
and this module stays a thin recorder. A machine without a driver is a normal answer
(``{"error": {"kind": "library_not_found", ...}}``), never an exception.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable

from wizard.core.hardware import Discovery, GpuCatalogue, nvml_to_discovery

MAX_NVLINKS = 18  # NVML_NVLINK_MAX_LINKS on Hopper/Blackwell
_ERROR_KINDS = {
    "NVMLError_LibraryNotFound": "library_not_found",
    "NVMLError_DriverNotLoaded": "driver_not_loaded",
    "NVMLError_NoPermission": "no_permission",
}


def discover_nvml(visible: str | None = None, catalogue: GpuCatalogue | None = None,
                  use_env: bool = True) -> Discovery:
    """This machine's GPUs as the wizard's processes will see them.

    ``visible`` overrides ``CUDA_VISIBLE_DEVICES``; with ``use_env`` the environment's value applies.
    """
    if visible is None and use_env:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    return nvml_to_discovery(gather_nvml(), visible, catalogue)


def gather_nvml(timings: dict[str, float] | None = None) -> dict:
    """NVML's raw answers for the whole machine (all GPUs, physical order)."""
    raw: dict = {"hostname": socket.gethostname(), "host_memory": host_memory_bytes()}
    try:
        import pynvml as N
    except ImportError as exc:
        raw["error"] = {"kind": "no_nvml_module", "message": str(exc)}
        return raw
    t0 = time.perf_counter()
    try:
        N.nvmlInit()
    except N.NVMLError as exc:
        raw["error"] = {"kind": _ERROR_KINDS.get(type(exc).__name__, "unknown"), "message": _text(exc)}
        return raw
    try:
        raw["driver"] = _ask(N.nvmlSystemGetDriverVersion)
        raw["cuda_driver"] = _ask(N.nvmlSystemGetCudaDriverVersion_v2)
        count = N.nvmlDeviceGetCount()
        raw["count"] = count
        handles = [N.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        raw["devices"] = [_device(N, h) for h in handles]
        raw["p2p"] = _p2p_matrix(N, handles)
    except N.NVMLError as exc:  # the driver went away mid-way: report what was gathered
        raw["error"] = {"kind": _ERROR_KINDS.get(type(exc).__name__, "unknown"), "message": _text(exc)}
    finally:
        try:
            N.nvmlShutdown()
        except N.NVMLError:
            pass
    if timings is not None:
        timings["nvml_total_s"] = time.perf_counter() - t0
    return raw


def host_memory_bytes(meminfo: str = "/proc/meminfo") -> int | None:
    """This machine's RAM (MemTotal), which bounds CPU offload; None where it cannot be read."""
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _ask(fn: Callable, *args):
    """One NVML query; a failure is recorded as 'ERR <name>: <text>' the way the fixtures record it."""
    try:
        value = fn(*args)
    except Exception as exc:  # noqa: BLE001 - NVMLError and ctypes errors alike mean "unknown"
        return f"ERR {type(exc).__name__}: {exc}"
    return value.decode() if isinstance(value, bytes) else value


def _device(N, h) -> dict:
    d: dict = {
        "name": _ask(N.nvmlDeviceGetName, h),
        "uuid": _ask(N.nvmlDeviceGetUUID, h),
        "memory": _ask(lambda: {k: getattr(N.nvmlDeviceGetMemoryInfo(h), k) for k in ("total", "free", "used")}),
        "pci": _ask(lambda: _text(N.nvmlDeviceGetPciInfo(h).busId)),
        "cc": _ask(lambda: list(N.nvmlDeviceGetCudaComputeCapability(h))),
        "mig": _ask(lambda: list(N.nvmlDeviceGetMigMode(h))),
        "numa": _ask(N.nvmlDeviceGetNumaNodeId, h),
        "cpu_affinity": _ask(lambda: _cpu_affinity(N, h)),
        "procs": _ask(lambda: [{"pid": p.pid, "used": p.usedGpuMemory}
                               for p in N.nvmlDeviceGetComputeRunningProcesses(h)]),
    }
    links = []
    for link in range(MAX_NVLINKS):
        state = _ask(N.nvmlDeviceGetNvLinkState, h, link)
        if isinstance(state, str):  # not supported / no such link: the GPU has no more links
            links.append({"link": link, "err": state})
            break
        entry = {"link": link, "state": state}
        if state == 1:
            entry["remote_pci"] = _ask(lambda: _text(N.nvmlDeviceGetNvLinkRemotePciInfo(h, link).busId))
            entry["remote_type"] = _ask(N.nvmlDeviceGetNvLinkRemoteDeviceType, h, link)
        links.append(entry)
    d["nvlink"] = links
    return d


def _cpu_affinity(N, h) -> list[int]:
    """The CPUs nearest the GPU, from NVML's bitmask words (64 CPUs per word)."""
    ncpu = os.cpu_count() or 64
    words = N.nvmlDeviceGetCpuAffinity(h, (ncpu + 63) // 64)
    return [w * 64 + bit for w, mask in enumerate(words) for bit in range(64) if mask >> bit & 1]


def _p2p_matrix(N, handles: list) -> dict:
    out = {}
    for i, hi in enumerate(handles):
        for j, hj in enumerate(handles):
            if i == j:
                continue
            row = {name: _ask(N.nvmlDeviceGetP2PStatus, hi, hj, idx)
                   for name, idx in (("read", 0), ("write", 1), ("nvlink", 2), ("atomics", 3), ("prop", 4))}
            row["ancestor"] = _ask(N.nvmlDeviceGetTopologyCommonAncestor, hi, hj)
            out[f"{i}-{j}"] = row
    return out
