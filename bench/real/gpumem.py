"""GPU memory sampled through NVML: the device total and every process's share, 10 times a second.

One JSON line per sample, ``{"t": epoch_s, "used": MiB, "procs": {pid: MiB}}``, and one line
``{"t", "pid", "cmd"}`` the first time a process shows up (its command line, to tell the FSDP trainer, the vLLM
workers and the rest apart). Standard library + nvidia-ml-py (``pynvml``) only; runs on the device.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

MIB = 1024 * 1024


def _cmd(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()[:200]


class Sampler(threading.Thread):
    """Samples until ``stop()``; ``peak_mib`` is the highest device total seen."""

    def __init__(self, path: Path, period_s: float = 0.1, index: int = 0):
        super().__init__(daemon=True)
        self.path, self.period = Path(path), period_s
        self.index = index
        self.peak_mib = 0
        self.baseline_mib: int | None = None
        self.total_mib: int | None = None
        self._halt = threading.Event()
        self.error: str | None = None

    def run(self) -> None:
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(self.index)
        except Exception as exc:  # no NVML here: nothing to sample
            self.error = f"NVML: {exc}"
            return
        seen: set[int] = set()
        self.total_mib = pynvml.nvmlDeviceGetMemoryInfo(handle).total // MIB
        with self.path.open("a") as out:
            while not self._halt.is_set():
                out.write(json.dumps(self._sample(pynvml, handle, seen)) + "\n")
                out.flush()
                self._halt.wait(self.period)

    def _sample(self, pynvml, handle, seen: set[int]) -> dict:
        t = time.time()
        used = pynvml.nvmlDeviceGetMemoryInfo(handle).used // MIB
        procs = {}
        try:
            for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                procs[str(p.pid)] = (p.usedGpuMemory or 0) // MIB
        except pynvml.NVMLError:
            pass
        for pid in procs:
            if int(pid) not in seen:
                seen.add(int(pid))
                self._note_pid(int(pid), t)
        if self.baseline_mib is None:
            self.baseline_mib = used
        self.peak_mib = max(self.peak_mib, used)
        return {"t": round(t, 3), "used": used, "procs": procs}

    def _note_pid(self, pid: int, t: float) -> None:
        with self.path.with_name("pids.jsonl").open("a") as f:
            f.write(json.dumps({"t": round(t, 3), "pid": pid, "cmd": _cmd(pid)}) + "\n")

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=5)


def gpu_pids(index: int = 0) -> list[int]:
    """Processes that hold memory on the GPU now (to end what a run left behind)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        return [p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle)]
    except Exception:
        return []


def used_mib(index: int = 0) -> int | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(index)).used // MIB
    except Exception:
        return None
