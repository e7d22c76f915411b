"""Live GPU readings for the Run page: memory used/total and utilisation per GPU, once a second, through NVML.

Two halves, like ``wizard.adapters.machine.nvml``: ``GpuSampler.sample`` only asks NVML and returns a plain dict;
``parse_sample`` turns such a dict into a ``GpuSnapshot`` the monitor shows. ``parse_sample`` also reads the
recorded captures (``gather_nvml``'s ``*.raw-nvml.json`` and ``capture_monitor.py``'s JSON lines), so the
display is tested on answers from real GPUs on a machine that has none.

NVML is initialised once and the device handles kept, so a sample is a few cheap queries (memory,
utilisation, compute processes) per GPU rather than an ``nvmlInit`` each second. A machine without the NVIDIA
driver is a normal answer (``{"error": {"kind": "library_not_found"}}``), never an exception; the sampler then
stops asking, since the answer cannot change while the process lives.
"""

from __future__ import annotations

from dataclasses import dataclass

from wizard.adapters.machine.nvml import _ERROR_KINDS as ERROR_KINDS

GIB = 1 << 30
BUSY_PERCENT = 10  # a GPU above this utilisation is working (the stall alarm's "GPUs idle" is the opposite)

_EXPLAIN = {
    "library_not_found": "no NVIDIA GPU visible here (NVML: library not found)",
    "driver_not_loaded": "no NVIDIA GPU visible here (NVML: the NVIDIA driver is not loaded)",
    "no_permission": "the GPUs cannot be read here (NVML: no permission)",
    "no_nvml_module": "the GPUs cannot be read: the nvidia-ml-py module is missing (pip install nvidia-ml-py)",
    "no_gpu": "no NVIDIA GPU visible here (NVML found 0 GPUs)",
}


@dataclass(frozen=True)
class GpuReading:
    """One GPU at one moment; None where NVML did not answer (a field the recording lacks, or an ERR)."""

    index: int
    name: str
    memory_used: int | None = None  # bytes
    memory_total: int | None = None  # bytes
    util_gpu: int | None = None  # percent of the last sample period a kernel ran
    util_memory: int | None = None  # percent of the period memory was read or written
    processes: tuple[int, ...] | None = None  # pids of compute processes

    @property
    def memory_fraction(self) -> float | None:
        if self.memory_used is None or not self.memory_total:
            return None
        return self.memory_used / self.memory_total


@dataclass(frozen=True)
class GpuSnapshot:
    gpus: tuple[GpuReading, ...] = ()
    error_kind: str | None = None
    error_message: str | None = None

    @property
    def explanation(self) -> str | None:
        """Why there is nothing to show, in one line; None when there are GPUs."""
        if self.gpus:
            return None
        kind = self.error_kind or "no_gpu"
        if kind in _EXPLAIN:
            return _EXPLAIN[kind]
        return f"the GPUs cannot be read here (NVML: {self.error_message or kind})"

    def busy(self) -> bool | None:
        """Any GPU working (utilisation above BUSY_PERCENT); None when utilisation is unknown."""
        utils = [g.util_gpu for g in self.gpus if g.util_gpu is not None]
        if not utils:
            return None
        return max(utils) > BUSY_PERCENT


def _number(value) -> int | None:
    """A recorded answer: a number, or None for "ERR ...", missing, or a bool."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return int(value)


def _pids(procs) -> tuple[int, ...] | None:
    if not isinstance(procs, list):
        return None
    return tuple(p["pid"] for p in procs if isinstance(p, dict) and isinstance(p.get("pid"), int))


def _device(index: int, d: dict) -> GpuReading:
    memory = d.get("memory") if isinstance(d.get("memory"), dict) else {}
    util = d.get("util") if isinstance(d.get("util"), dict) else {}
    name = d.get("name") if isinstance(d.get("name"), str) and not d["name"].startswith("ERR ") else f"GPU {index}"
    return GpuReading(index=index, name=name, memory_used=_number(memory.get("used")),
                      memory_total=_number(memory.get("total")), util_gpu=_number(util.get("gpu")),
                      util_memory=_number(util.get("memory")), processes=_pids(d.get("procs")))


def parse_sample(raw: dict, name: str = "GPU 0") -> GpuSnapshot:
    """A sample, a ``gather_nvml`` answer or a ``capture_monitor.py`` row -> what the monitor shows."""
    if not isinstance(raw, dict):
        return GpuSnapshot(error_kind="unknown", error_message="not an NVML answer")
    if "mem_total" in raw:  # capture_monitor.py: one GPU per row
        return GpuSnapshot(gpus=(GpuReading(
            index=0, name=raw.get("name") or name, memory_used=_number(raw.get("mem_used")),
            memory_total=_number(raw.get("mem_total")), util_gpu=_number(raw.get("util_gpu")),
            util_memory=_number(raw.get("util_mem")), processes=_pids(raw.get("procs"))),))
    devices = raw.get("devices") if isinstance(raw.get("devices"), list) else []
    gpus = tuple(_device(i, d) for i, d in enumerate(devices) if isinstance(d, dict))
    error = raw.get("error") if isinstance(raw.get("error"), dict) else None
    return GpuSnapshot(gpus=gpus, error_kind=error.get("kind") if error else None,
                       error_message=error.get("message") if error else None)


class GpuSampler:
    """NVML opened once; ``sample`` asks each GPU for memory, utilisation and its compute processes."""

    def __init__(self) -> None:
        self._nvml = None
        self._handles: list = []
        self._names: list[str] = []
        self._error: dict | None = None
        self._opened = False

    def _open(self) -> None:
        self._opened = True
        try:
            import pynvml as N
        except ImportError as exc:
            self._error = {"kind": "no_nvml_module", "message": str(exc)}
            return
        try:
            N.nvmlInit()
            count = N.nvmlDeviceGetCount()
            self._handles = [N.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
            self._names = [_text(N.nvmlDeviceGetName(h)) for h in self._handles]
        except N.NVMLError as exc:
            self._error = {"kind": ERROR_KINDS.get(type(exc).__name__, "unknown"), "message": _text(exc)}
            return
        self._nvml = N

    @property
    def available(self) -> bool | None:
        """True: NVML answers; False: it never will in this process; None: not asked yet."""
        if not self._opened:
            return None
        return self._nvml is not None

    def sample(self) -> dict:
        """One reading of every GPU, in ``parse_sample``'s shape (``devices``, or ``error``)."""
        if not self._opened:
            self._open()
        if self._nvml is None:
            return {"error": dict(self._error or {"kind": "unknown", "message": "NVML is closed"})}
        N = self._nvml
        devices = []
        for name, h in zip(self._names, self._handles):
            devices.append({
                "name": name,
                "memory": _ask(lambda: {k: getattr(N.nvmlDeviceGetMemoryInfo(h), k) for k in ("total", "used")}),
                "util": _ask(lambda: {k: getattr(N.nvmlDeviceGetUtilizationRates(h), k) for k in ("gpu", "memory")}),
                "procs": _ask(lambda: [{"pid": p.pid} for p in N.nvmlDeviceGetComputeRunningProcesses(h)]),
            })
        return {"devices": devices}

    def close(self) -> None:
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except self._nvml.NVMLError:
                pass
            self._nvml = None
            self._error = {"kind": "unknown", "message": "NVML is closed"}


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _ask(fn):
    """One NVML query; a failure is recorded as 'ERR <name>: <text>', as ``wizard.adapters.machine.nvml`` records it."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - NVMLError and ctypes errors alike mean "unknown"
        return f"ERR {type(exc).__name__}: {exc}"


def format_gib(n: int | None) -> str:
    return "?" if n is None else f"{n / GIB:.1f}"


__all__ = ["GpuReading", "GpuSnapshot", "GpuSampler", "parse_sample", "format_gib", "BUSY_PERCENT", "GIB"]
