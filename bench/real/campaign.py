"""Run a list of real verl (or vLLM-alone) configurations one after another on one GPU, with NVML sampling.

    python3 campaign.py CAMPAIGN.json OUT_DIR [--deadline EPOCH_S] [--lanes N]

CAMPAIGN.json is ``{"env": {...}, "runs": [{"name", "kind": "verl"|"launch"|"vllm", "args": [...],
"timeout_s", "expect_s"}]}`` (``campaign_spec.py`` writes it). Per run, OUT_DIR/NAME/ gets ``spec.json``,
``samples.jsonl`` + ``pids.jsonl`` (NVML, 10 Hz; side by side, the run's host RAM as PSS once a second; alone,
``host.jsonl``: the node's used RAM and each process's PSS once a second), ``phases.jsonl`` (verl's phase marks, see patch_verl.py),
``metrics.jsonl`` (verl's file logger), ``run.log.gz`` and ``record.json`` (status ok / oom / host_oom / error / timeout, the
first error line, wall time, peak). A run that runs out of memory is a data point: the campaign goes on. Between
runs every process left on the GPU is ended (by its pid) and Ray is stopped. Runs that cannot finish before the
deadline are skipped. OUT_DIR/progress.txt has one line per run.

Side by side (``--lanes N``, N > 1): up to N runs at once on the one GPU, each admitted only while the memory it
reserves (``reserve_mib``: the estimate's peak plus a margin) fits beside the reservations of the runs in flight; a
run marked ``exclusive`` waits until it can run alone (an out-of-memory verdict means something only on a GPU of
its own). Each run's processes carry ``VERL_CAMPAIGN_RUN=<name>`` in their environment (Ray's workers and vLLM's
inherit it), so one NVML sampler tells each run's share apart: a run's ``samples.jsonl`` holds the driver's
reserve plus its own processes' memory, what the GPU would show with the run alone; ``device`` is the whole GPU.
A run ends by ending every process that carries its name (never ``ray stop``: the other runs' Ray stays).
Beside other runs vLLM must not size its KV cache from the device's free memory (the others' allocations during
its profile would be counted as its own): such runs pin it (engine_kwargs.vllm.kv_cache_memory_bytes, written by
campaign_spec.py from the estimate's own KV term) and their record says ``"kv_pinned"``.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpumem import Sampler, gpu_pids, used_mib  # noqa: E402

HOST_OOM = re.compile(r"worker\(s\) were killed due to the node running low on memory")
OOM = re.compile(r"CUDA out of memory|OutOfMemoryError|out of memory|Free memory on device .* is less than desired"
                 r"|No available memory for the cache blocks|insufficient memory|larger than the maximum number of "
                 r"tokens that can be stored in KV cache|cudaErrorMemoryAllocation", re.IGNORECASE)
ERROR = re.compile(r"(Error|Exception)\b.*|Traceback", re.IGNORECASE)


def command(run: dict, out: Path) -> list[str]:
    py = sys.executable
    if run["kind"] == "verl":
        return [py, "-m", "verl.trainer.main_ppo", *run["args"], f"hydra.run.dir={out}/hydra"]
    if run["kind"] == "launch":
        return [py, "-m", "wizard", "launch", *run["args"], "--out", str(out / "launch")]
    if run["kind"] == "vllm":
        return [py, str(Path(__file__).with_name("vllm_probe.py")), json.dumps(run["args"])]
    raise ValueError(run["kind"])


def _last(run: dict, key: str) -> str | None:
    """The value the run's arguments give ``key`` (Hydra: the last assignment wins; a leading + and the shell's quotes
    dropped)."""
    values = [a.split("=", 1)[1].strip("'\"") for a in (run.get("args") or [])
              if isinstance(a, str) and "=" in a and a.split("=", 1)[0].lstrip("+") == key]
    return values[-1] if values else None


def uses_sglang(run: dict) -> bool:
    """The run's rollout engine is SGLang."""
    return _last(run, "actor_rollout_ref.rollout.name") == "sglang"


def uses_megatron(run: dict) -> bool:
    """The run trains with verl's Megatron engine: model_engine=megatron or --config-name=ppo_megatron_trainer."""
    args = [a for a in (run.get("args") or []) if isinstance(a, str)]
    names = [b for a, b in zip(args, args[1:]) if a in ("--config-name", "-cn")]
    names.append(_last(run, "--config-name") or "")
    return _last(run, "model_engine") == "megatron" or any(
        n.removesuffix(".yaml") == "ppo_megatron_trainer" for n in names)


def _prepare(run: dict, out: Path, env: dict, **extra: str) -> dict:
    """The run's folder and spec, and the environment it runs with: an SGLang run takes SGLang's Python path
    (go.sh with SGL=1 exports it as SGL_PYTHONPATH: SGLang's own folder first, vLLM hidden), a Megatron run
    Megatron's (MEG=1: MEG_PYTHONPATH, megatron-core, mbridge and TransformerEngine before the kit), any other the
    kit's, so that one campaign holds every kind."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "spec.json").write_text(json.dumps(run, indent=1))
    if uses_sglang(run) and os.environ.get("SGL_PYTHONPATH"):
        extra = {**extra, "PYTHONPATH": os.environ["SGL_PYTHONPATH"]}
    elif uses_megatron(run) and os.environ.get("MEG_PYTHONPATH"):
        extra = {**extra, "PYTHONPATH": os.environ["MEG_PYTHONPATH"]}
    return {**os.environ, **env, **extra, "VERL_PHASE_LOG": str(out / "phases.jsonl"),
            "VERL_FILE_LOGGER_PATH": str(out / "metrics.jsonl")}


def _launch(run: dict, out: Path, env: dict) -> tuple[int | None, str | None, float]:
    """Run it to its end or its time limit: (exit code, "timeout" or None, wall seconds)."""
    t0, status = time.time(), None
    with (out / "run.log").open("wb") as log:
        # cwd: the run's folder, so that `python -m wizard` imports the wizard on PYTHONPATH, not a checkout's
        proc = subprocess.Popen(command(run, out), stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(out),
                                start_new_session=True)
        rc, status = _wait(proc, out / "run.log", run.get("timeout_s", 420))
        _kill_group(proc.pid)  # what the run left in its process group (Ray's services among them)
    return rc, status, time.time() - t0


# An engine worker that died: verl waits for it without end (seen: a LoRA sync that killed vLLM's worker hung the run
# for 3 more minutes until its time limit). Such a run is ended 30 s after the line, so the campaign moves on.
FATAL = re.compile(r"WorkerProc hit an exception|Worker failed with error|EngineDeadError|Engine core initialization failed")
FATAL_GRACE_S = 30


def _wait(proc: subprocess.Popen, log: Path, timeout_s: float, grace_s: float = FATAL_GRACE_S
          ) -> tuple[int | None, str | None]:
    """(exit code, None), or (None, "timeout"), or (None, "dead_engine") once the log shows an engine worker died."""
    t0, seen_at, read = time.time(), None, 0
    while True:
        try:
            return proc.wait(timeout=5), None
        except subprocess.TimeoutExpired:
            pass
        if seen_at is None:
            try:
                with log.open("rb") as f:
                    f.seek(read)
                    chunk = f.read()
                read += len(chunk)
                if FATAL.search(chunk.decode(errors="replace")):
                    seen_at = time.time()
            except OSError:
                pass
        elif time.time() - seen_at > grace_s:
            return None, "dead_engine"
        if time.time() - t0 > timeout_s:
            return None, "timeout"


def run_one(run: dict, out: Path, env: dict) -> dict:
    env = _prepare(run, out, env)
    sampler = Sampler(out / "samples.jsonl")
    host = HostSampler(out / "host.jsonl")
    sampler.start()
    host.start()
    time.sleep(0.5)
    rc, status, wall = _launch(run, out, env)
    _cleanup(env)
    time.sleep(1.0)
    sampler.stop()
    host.stop()
    rec = _record(run, out, rc, status, wall, sampler)
    rec["host_peak_mib"], rec["host_used_peak_mib"] = host.peak_mib, host.used_peak_mib
    (out / "record.json").write_text(json.dumps(rec, indent=1))
    _keep_model_config(run, out)
    return rec


class HostSampler(threading.Thread):
    """The host RAM of a run alone on the machine, once a second (``host.jsonl``): the node's used memory as Ray
    judges it (total - available) and each process of >= 100 MiB, PSS and its command's first words, as Ray's OOM
    report lists them. ``peak_mib``: the most the processes held together; ``used_peak_mib``: the node's."""

    def __init__(self, path: Path, period_s: float | None = None, floor_mib: int = 100):
        super().__init__(daemon=True)
        self.path, self.period, self.floor = Path(path), period_s or HOST_PERIOD_S, floor_mib
        self.peak_mib, self.used_peak_mib = 0, 0
        self._halt = threading.Event()

    def reading(self) -> dict:
        procs = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                mib = _pss_mib(int(entry.name))
                if mib >= self.floor:
                    procs[entry.name] = [mib, _cmd_line(int(entry.name))[:60]]
        used = int((_host_total_gib() - _host_free_gib()) * 1024)
        self.peak_mib = max(self.peak_mib, sum(m for m, _ in procs.values()))
        self.used_peak_mib = max(self.used_peak_mib, used)
        return {"t": round(time.time(), 2), "used_mib": used, "procs": procs}

    def run(self) -> None:
        with self.path.open("a") as out:
            while not self._halt.is_set():
                out.write(json.dumps(self.reading()) + "\n")
                out.flush()
                self._halt.wait(self.period)

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=10)


def _kill_group(pid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(2)


def _cleanup(env: dict) -> None:
    """Stop the run's Ray and end every process it left on the GPU (each by its pid), then wait for the memory.
    For a GPU of the campaign's own (the lent device): every process on it is ended, whoever started it."""
    ray = shutil.which("ray") or "/tmp/site/bin/ray"
    if Path(ray).exists():
        subprocess.run([ray, "stop", "--force"], env=env, capture_output=True, timeout=60)
    me = os.getpid()
    for _ in range(3):
        pids = [p for p in gpu_pids() if p != me]
        if not pids:
            break
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(3)
    for _ in range(30):
        used = used_mib()
        if used is None or used < 2048:
            break
        time.sleep(1)


def _record(run: dict, out: Path, rc, status, wall: float, sampler: Sampler) -> dict:
    log = (out / "run.log").read_text(errors="replace")
    steps = 0
    for metrics in (out / "metrics.jsonl", out / "launch" / "metrics.jsonl"):  # the launcher names its own
        if metrics.exists():
            steps = max(steps, sum(1 for line in metrics.read_text().splitlines() if line.strip()))
    oom = next((m.group(0) for m in OOM.finditer(log)), None)
    oom_line = next((ln.strip()[:400] for ln in log.splitlines() if oom and oom in ln), None)
    err_line = next((ln.strip()[:400] for ln in reversed(log.splitlines()) if ERROR.search(ln)), None)
    if status is None:
        want = run.get("steps")
        if rc == 0 and (want is None or steps >= want):
            status = "ok"
        else:
            status = "oom" if oom else "error"
            if HOST_OOM.search(log):  # Ray's memory monitor killed workers: the host's RAM ran out, not the GPU's
                status = "host_oom"
    rec = {"name": run["name"], "status": status, "exit_code": rc, "steps_done": steps, "wall_s": round(wall, 1),
           "peak_used_mib": sampler.peak_mib, "baseline_used_mib": sampler.baseline_mib, "total_mib": sampler.total_mib,
           "sampler_error": sampler.error, "oom_line": oom_line, "last_error_line": err_line}
    (out / "record.json").write_text(json.dumps(rec, indent=1))
    with (out / "run.log").open("rb") as src, gzip.open(out / "run.log.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    (out / "run.log").unlink()
    return rec


def _wait_for(path: str | None, deadline: float) -> None:
    """A model another process is still writing (make_models.py writes DONE last); not while no make_models.py runs
    (go.sh makes FIRST's and MORE's models: one it was not asked for never appears)."""
    while path and not Path(path).exists() and time.time() < deadline - 60 and _making_models():
        time.sleep(2)


def _making_models() -> bool:
    """A make_models.py process is running on this machine (its command line, from /proc)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if b"make_models.py" in cmdline.read_bytes():
                return True
        except OSError:  # the process ended while we looked
            continue
    return False


MARK = "VERL_CAMPAIGN_RUN"


def _owner(pid: int) -> str | None:
    """The run a process belongs to: the mark in its environment (inherited by Ray's and vLLM's processes)."""
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    key = MARK.encode() + b"="
    return next((e[len(key):].decode(errors="replace") for e in env if e.startswith(key)), None)


def _marked(name: str) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid() and _owner(int(entry.name)) == name:
            out.append(int(entry.name))
    return out


def _pss_mib(pid: int) -> int:
    """The process's proportional share of host RAM (shared pages split among their users), MiB."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError):
        pass
    return 0


def host_by_run(owners: dict[int, str | None]) -> dict[str, int]:
    """Host RAM (PSS, MiB) of every marked run's processes; ``owners`` caches pid -> run across calls."""
    seen, out = set(), {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        seen.add(pid)
        if pid not in owners:
            owners[pid] = _owner(pid)
        if owners[pid]:
            out[owners[pid]] = out.get(owners[pid], 0) + _pss_mib(pid)
    for gone in set(owners) - seen:
        del owners[gone]
    return out


class RunShare:
    """What one run's record needs of the shared sampler (the attributes ``_record`` reads of a Sampler)."""

    def __init__(self, baseline: int | None, total: int | None):
        self.peak_mib, self.device_peak_mib = 0, 0
        self.baseline_mib, self.total_mib = baseline, total
        self.error: str | None = None


HOST_PERIOD_S = 1.0  # between two readings of host RAM


class SharedSampler(threading.Thread):
    """One NVML sampler for runs side by side: each registered run's folder gets its own ``samples.jsonl``."""

    def __init__(self, root: Path, period_s: float = 0.1):
        super().__init__(daemon=True)
        self.root, self.period = root, period_s
        self.lock = threading.Lock()
        self.active: dict[str, tuple[Path, RunShare, object]] = {}
        self.owners: dict[int, str | None] = {}
        self.last: dict[str, set[int]] = {}
        self.baseline_mib: int | None = None
        self.total_mib: int | None = None
        self.error: str | None = None
        self._halt = threading.Event()
        self.ready = threading.Event()
        self._host: tuple[float, dict[str, int], int] | None = None  # (time, MiB per run, MiB available)
        self._host_written = 0.0

    def register(self, name: str, folder: Path) -> RunShare:
        share = RunShare(self.baseline_mib, self.total_mib)
        with self.lock:
            self.active[name] = (folder, share, (folder / "samples.jsonl").open("a"))
        return share

    def unregister(self, name: str) -> None:
        with self.lock:
            folder, share, handle = self.active.pop(name)
        handle.close()

    def pids_of(self, name: str) -> set[int]:
        with self.lock:
            return set(self.last.get(name, set()))

    def run(self) -> None:
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            self.total_mib = pynvml.nvmlDeviceGetMemoryInfo(handle).total // (1024 * 1024)
        except Exception as exc:
            self.error = f"NVML: {exc}"
            self.ready.set()
            return
        threading.Thread(target=self._host_loop, daemon=True).start()
        with (self.root / "device.jsonl").open("a") as device_log:
            while not self._halt.is_set():
                self._sample(pynvml, handle, device_log)
                self.ready.set()
                self._halt.wait(self.period)

    def _sample(self, pynvml, handle, device_log) -> None:
        t = round(time.time(), 3)
        used = pynvml.nvmlDeviceGetMemoryInfo(handle).used // (1024 * 1024)
        procs: dict[int, int] = {}
        try:
            for p in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                procs[p.pid] = (p.usedGpuMemory or 0) // (1024 * 1024)
        except pynvml.NVMLError:
            pass
        if self.baseline_mib is None:
            self.baseline_mib = used
        for gone in set(self.owners) - set(procs):  # a pid is reused: its next owner is read again
            del self.owners[gone]
        by_run: dict[str, dict[str, int]] = {}
        for pid, mib in procs.items():
            if pid not in self.owners:
                self.owners[pid] = _owner(pid)
                self._note(pid, t)
            if self.owners[pid]:
                by_run.setdefault(self.owners[pid], {})[str(pid)] = mib
        host = None
        with self.lock:  # the host thread's latest reading, written once
            if self._host is not None and self._host[0] > self._host_written:
                host_t, host, available = self._host
                self._host_written = host_t
        row = {"t": t, "used": used, "procs": {str(k): v for k, v in procs.items()},
               "runs": {k: sum(v.values()) for k, v in by_run.items()}}
        if host is not None:
            row["host"], row["host_available_mib"] = host, available
        device_log.write(json.dumps(row) + "\n")
        with self.lock:
            self.last = {k: {int(p) for p in v} for k, v in by_run.items()}
            for name, (folder, share, out) in self.active.items():
                own = by_run.get(name, {})
                mine = (self.baseline_mib or 0) + sum(own.values())
                share.peak_mib, share.device_peak_mib = max(share.peak_mib, mine), max(share.device_peak_mib, used)
                share.baseline_mib, share.total_mib = self.baseline_mib, self.total_mib
                sample = {"t": t, "used": mine, "device": used, "procs": own}
                if host is not None:
                    sample["host_mib"] = host.get(name, 0)
                out.write(json.dumps(sample) + "\n")
                out.flush()

    def _host_loop(self) -> None:
        """Host RAM per run, once a second, in its own thread: reading every process's smaps takes longer than the
        GPU samples' 0.1 s period (a weight sync lasts 0.1-0.2 s)."""
        owners: dict[int, str | None] = {}
        while not self._halt.is_set():
            reading = (time.time(), host_by_run(owners), int(_host_free_gib() * 1024))
            with self.lock:
                self._host = reading
            self._halt.wait(HOST_PERIOD_S)

    def _note(self, pid: int, t: float) -> None:
        owner = self.owners[pid]
        line = json.dumps({"t": t, "pid": pid, "cmd": _cmd_line(pid), "run": owner}) + "\n"
        with (self.root / "pids.jsonl").open("a") as f:
            f.write(line)
        entry = self.active.get(owner) if owner else None
        if entry:
            with (entry[0] / "pids.jsonl").open("a") as f:
                f.write(line)

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=5)


def _cmd_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:200]
    except OSError:
        return "?"


def _end_run(name: str, sampler: SharedSampler) -> None:
    """End every process carrying the run's name, then wait (30 s at most) until none of them holds GPU memory."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in _marked(name):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(3)
    for _ in range(30):
        if not sampler.pids_of(name):
            return
        time.sleep(1)


def run_side_by_side(run: dict, out: Path, env: dict, sampler: SharedSampler) -> dict:
    env = _prepare(run, out, env, **{MARK: run["name"]})
    share = sampler.register(run["name"], out)
    try:
        time.sleep(0.5)
        rc, status, wall = _launch(run, out, env)
        _end_run(run["name"], sampler)
        time.sleep(1.0)
    finally:
        sampler.unregister(run["name"])
    rec = _record(run, out, rc, status, wall, share)
    _keep_model_config(run, out)
    log = gzip.open(out / "run.log.gz", "rt", errors="replace").read()
    rec.update({"concurrent": True, "device_peak_mib": share.device_peak_mib,
                "kv_pinned": any("kv_cache_memory_bytes=" in a for a in run.get("args", []) if isinstance(a, str)),
                # vLLM's sleep measures the whole GPU: beside other runs it can fail for their allocations
                "neighbours_suspected": "Memory usage increased after sleeping" in log})
    (out / "record.json").write_text(json.dumps(rec, indent=1))
    return rec


def _keep_model_config(run: dict, out: Path) -> None:
    """The model's config.json beside the record (bench_memory_real.py plans the run with it)."""
    words = [w for w in run.get("args", []) if isinstance(w, str)]
    path = next((w.split("=", 1)[1] for w in words if w.startswith("actor_rollout_ref.model.path=")), None)
    if path and (Path(path) / "config.json").exists():
        shutil.copy(Path(path) / "config.json", out / "model.json")


NEEDS_WAIT_S = 1800  # a model that is not written within half an hour will not be


class Admission:
    """Which run may start now: in order, the first whose reservation fits beside those in flight."""

    def __init__(self, runs: list[dict], total_mib: int, deadline: float, root: Path):
        self.queue, self.total, self.deadline, self.root = list(runs), total_mib, deadline, root
        self.in_flight: dict[str, int] = {}
        self.host: dict[str, float] = {}  # GiB of host RAM reserved by the runs in flight
        self.cond = threading.Condition()
        self.started = time.time()

    def flying(self) -> str:
        with self.cond:
            return ", ".join(self.in_flight)

    def _log(self, text: str) -> None:
        with (self.root / "progress.txt").open("a") as f:
            f.write(f"{time.strftime('%H:%M:%S')} {text}\n")

    def take(self) -> dict | None:
        with self.cond:
            while True:
                left = self.deadline - time.time()
                for run in list(self.queue):
                    if left < run.get("expect_s", 180):
                        self.queue.remove(run)
                        self._log(f"skip {run['name']}: {left:.0f} s left")
                        continue
                    if not Path(run.get("needs") or "/").exists():
                        if time.time() - self.started > NEEDS_WAIT_S:
                            self.queue.remove(run)
                            self._log(f"skip {run['name']}: {run['needs']} never appeared")
                        continue  # its model is still being written
                    want = self.total if run.get("exclusive") else run.get("reserve_mib", self.total)
                    if run.get("exclusive") and self.in_flight:
                        continue
                    # the machine's 128 GiB of RAM are a limit too (offloaded params and AdamW live there): the
                    # host reservations of the runs in flight, which grow into them, and what is free now
                    host = run.get("host_reserve_mib", 24 * 1024) / 1024
                    if self.in_flight and (_host_free_gib() < 24 or
                                           sum(self.host.values()) + host > _host_total_gib() - 8):
                        continue
                    # alone on the GPU a run goes whatever it reserves (an out-of-memory run is a data point)
                    if not self.in_flight or sum(self.in_flight.values()) + want <= self.total:
                        self.queue.remove(run)
                        self.in_flight[run["name"]] = want
                        self.host[run["name"]] = host
                        return {**run, "timeout_s": min(run.get("timeout_s", 420), max(60, left - 20))}
                if not self.queue:
                    return None
                self.cond.wait(2)

    def done(self, name: str) -> None:
        with self.cond:
            self.in_flight.pop(name, None)
            self.host.pop(name, None)
            self.cond.notify_all()


def _meminfo_gib(field: str) -> float:
    """A /proc/meminfo field (MemTotal, MemAvailable) in GiB; infinite where it cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return float("inf")


def _host_total_gib() -> float:
    return _meminfo_gib("MemTotal")


def _host_free_gib() -> float:
    return _meminfo_gib("MemAvailable")


def side_by_side(campaign: dict, root: Path, deadline: float, lanes: int) -> None:
    sampler = SharedSampler(root)
    sampler.start()
    sampler.ready.wait(10)
    todo = [r for r in campaign["runs"] if not (root / r["name"] / "record.json").exists()]
    admission = Admission(todo, (sampler.total_mib or 143771) - 2048, deadline, root)

    def lane() -> None:
        while (run := admission.take()) is not None:
            try:
                admission._log(f"start {run['name']} (in flight: {admission.flying()})")
                rec = run_side_by_side(run, root / run["name"], campaign.get("env", {}), sampler)
                admission._log(f"{rec['status']} {run['name']} {rec['wall_s']} s peak {rec['peak_used_mib']} MiB "
                               f"(device {rec['device_peak_mib']}) steps {rec['steps_done']} | {rec['oom_line'] or ''}")
            except Exception as exc:  # a broken run must not end the lane
                admission._log(f"crash {run['name']}: {exc!r}")
            finally:
                admission.done(run["name"])

    threads = [threading.Thread(target=lane, daemon=True) for _ in range(lanes)]
    for i, t in enumerate(threads):
        t.start()
        time.sleep(5 if i < lanes - 1 else 0)  # staggered: imports and Ray starts compete for the CPUs
    for t in threads:
        t.join()
    sampler.stop()


def main(argv: list[str]) -> int:
    campaign, root = json.loads(Path(argv[1]).read_text()), Path(argv[2])
    deadline = float(argv[argv.index("--deadline") + 1]) if "--deadline" in argv else float("inf")
    root.mkdir(parents=True, exist_ok=True)
    progress = root / "progress.txt"
    lanes = int(argv[argv.index("--lanes") + 1]) if "--lanes" in argv else 1
    if lanes > 1:
        side_by_side(campaign, root, deadline, lanes)
        with progress.open("a") as f:
            f.write(f"{time.strftime('%H:%M:%S')} campaign done\n")
        return 0
    for run in campaign["runs"]:
        if (root / run["name"] / "record.json").exists():
            continue
        left = deadline - time.time()
        if left < run.get("expect_s", 180):
            with progress.open("a") as f:
                f.write(f"{time.strftime('%H:%M:%S')} skip {run['name']}: {left:.0f} s left\n")
            continue
        _wait_for(run.get("needs"), deadline)
        # a model that never appeared, or a wait that ate the time the run needs: skip it, or the run starts without
        # its model (2026-12-06: a 7B run started 64 s before the deadline with no model, and spent that lease's end)
        why = (f"{run['needs']} never appeared" if not Path(run.get("needs") or "/").exists()
               else f"{deadline - time.time():.0f} s left after its model" if deadline - time.time() < run.get(
                   "expect_s", 180) else None)
        if why:
            with progress.open("a") as f:
                f.write(f"{time.strftime('%H:%M:%S')} skip {run['name']}: {why}\n")
            continue
        run = {**run, "timeout_s": min(run.get("timeout_s", 420), max(60, deadline - time.time() - 20))}
        with progress.open("a") as f:
            f.write(f"{time.strftime('%H:%M:%S')} start {run['name']}\n")
        rec = run_one(run, root / run["name"], campaign.get("env", {}))
        with progress.open("a") as f:
            f.write(f"{time.strftime('%H:%M:%S')} {rec['status']} {run['name']} {rec['wall_s']} s "
                    f"peak {rec['peak_used_mib']} MiB steps {rec['steps_done']} | {rec['oom_line'] or ''}\n")
    with progress.open("a") as f:
        f.write(f"{time.strftime('%H:%M:%S')} campaign done\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
