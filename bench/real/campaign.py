"""Run a list of real verl (or vLLM-alone) configurations one after another on one GPU, with NVML sampling.

    python3 campaign.py CAMPAIGN.json OUT_DIR [--deadline EPOCH_S]

CAMPAIGN.json is ``{"env": {...}, "runs": [{"name", "kind": "verl"|"launch"|"vllm", "args": [...],
"timeout_s", "expect_s"}]}`` (``campaign_spec.py`` writes it). Per run, OUT_DIR/NAME/ gets ``spec.json``,
``samples.jsonl`` + ``pids.jsonl`` (NVML, 10 Hz), ``phases.jsonl`` (verl's phase marks, see patch_verl.py),
``metrics.jsonl`` (verl's file logger), ``run.log.gz`` and ``record.json`` (status ok / oom / error / timeout, the
first error line, wall time, peak). A run that runs out of memory is a data point: the campaign goes on. Between
runs every process left on the GPU is ended (by its pid) and Ray is stopped. Runs that cannot finish before the
deadline are skipped. OUT_DIR/progress.txt has one line per run.
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
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpumem import Sampler, gpu_pids, used_mib  # noqa: E402

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


def run_one(run: dict, out: Path, env: dict) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    (out / "spec.json").write_text(json.dumps(run, indent=1))
    env = {**os.environ, **env, "VERL_PHASE_LOG": str(out / "phases.jsonl"),
           "VERL_FILE_LOGGER_PATH": str(out / "metrics.jsonl")}
    sampler = Sampler(out / "samples.jsonl")
    sampler.start()
    time.sleep(0.5)
    t0 = time.time()
    status = None
    with (out / "run.log").open("wb") as log:
        # cwd: the run's folder, so that `python -m wizard` imports the wizard on PYTHONPATH, not a checkout's
        proc = subprocess.Popen(command(run, out), stdout=log, stderr=subprocess.STDOUT, env=env, cwd=str(out),
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=run.get("timeout_s", 420))
        except subprocess.TimeoutExpired:
            rc, status = None, "timeout"
        _kill_group(proc.pid)  # what the run left in its process group (Ray's services among them)
    wall = time.time() - t0
    _cleanup(env)
    time.sleep(1.0)
    sampler.stop()
    return _record(run, out, rc, status, wall, sampler)


def _kill_group(pid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(2)


def _cleanup(env: dict) -> None:
    """Stop the run's Ray and end every process it left on the GPU (each by its pid), then wait for the memory."""
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
    rec = {"name": run["name"], "status": status, "exit_code": rc, "steps_done": steps, "wall_s": round(wall, 1),
           "peak_used_mib": sampler.peak_mib, "baseline_used_mib": sampler.baseline_mib, "total_mib": sampler.total_mib,
           "sampler_error": sampler.error, "oom_line": oom_line, "last_error_line": err_line}
    (out / "record.json").write_text(json.dumps(rec, indent=1))
    with (out / "run.log").open("rb") as src, gzip.open(out / "run.log.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    (out / "run.log").unlink()
    return rec


def _wait_for(path: str | None, deadline: float) -> None:
    """A model another process is still writing (make_models.py writes DONE last)."""
    while path and not Path(path).exists() and time.time() < deadline - 60:
        time.sleep(2)


def main(argv: list[str]) -> int:
    campaign, root = json.loads(Path(argv[1]).read_text()), Path(argv[2])
    deadline = float(argv[argv.index("--deadline") + 1]) if "--deadline" in argv else float("inf")
    root.mkdir(parents=True, exist_ok=True)
    progress = root / "progress.txt"
    for run in campaign["runs"]:
        if (root / run["name"] / "record.json").exists():
            continue
        left = deadline - time.time()
        if left < run.get("expect_s", 180):
            with progress.open("a") as f:
                f.write(f"{time.strftime('%H:%M:%S')} skip {run['name']}: {left:.0f} s left\n")
            continue
        _wait_for(run.get("needs"), deadline)
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
