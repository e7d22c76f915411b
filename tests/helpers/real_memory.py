"""The memory estimate against the recorded real verl runs (bench/data/verl_real/), phase by phase: what the estimate
predicts for each measured phase and whether its verdict met what happened. bench/bench_memory_real.py prints these
rows (its docstring says how runs are planned and compared); tests/core/test_memory_measured.py holds them to the
tolerance.
"""

from __future__ import annotations

import gzip
import json
import re

from tests.helpers.real_records import MIB, Run, overall_peak_mib, with_adam
from wizard.adapters.files.resources import load_moves, load_schema
from wizard.core.hardware.cluster import GPU, Cluster, ClusterNode
from wizard.core.memory.config import FLASH_ATTN
from wizard.core.memory.estimate import estimate_memory
from wizard.core.memory.trainer import FIRST_STEP_KEYS, first_step_terms
from wizard.core.check.verdict import check_overrides
from wizard.core.memory.verdict import DOES_NOT_FIT, memory_verdict
from wizard.core.models.facts import facts_from_hf_config

GIB = 1024**3
ROLLOUT = "actor_rollout_ref.rollout"


DEVICE_RAM = int(125.85 * 2**30)  # the lent machines' host RAM, as Ray read it ("125.85GB limit", 2026-12-06)


def h200(total_mib: int, host: bool = False) -> Cluster:
    """One card of the run's NVML total; ``host``: with the device's host RAM (concurrent runs shared it)."""
    gpu = GPU(index=0, name="NVIDIA H200", memory_total_bytes=total_mib * MIB)
    return Cluster(source="spec", nodes=[ClusterNode(name="node0", gpu_count=1, gpus=[gpu],
                                                     memory_bytes=DEVICE_RAM if host else None)])


def _planned(run: Run):
    """(the plan's values, its models, the run's card, its memory plan), as plan would resolve the run's config."""
    facts = facts_from_hf_config(run.model, name=run.spec.get("name", run.name), source="config")
    cluster = h200(run.record.get("total_mib") or 143771, host=not run.record.get("concurrent"))
    models = {"actor": facts, "ref": facts, "critic": facts}
    mp = check_overrides(load_schema(), run.overrides(), moves=load_moves(), models=models, cluster=cluster).memory
    return {**mp.values, FLASH_ATTN: False}, models, cluster, mp


def predict(run: Run):
    """(report, verdict, why) for the run's config as plan would give them, without flash-attn."""
    if run.spec.get("kind") == "vllm":
        return None, None, "vLLM alone: compared per engine term"
    values, models, cluster, mp = _planned(run)
    report, why = estimate_memory(values, models, cluster)
    return report, memory_verdict(report, values, models, cluster, why or mp.why), why


def phase_bytes(report, name: str, m) -> int | None:
    """The estimate's phase: its worse step (what the run's peak over its steps is compared with). A run that never
    reached the steady state (it stopped in the first step) is compared with the first step: no AdamW moments, and
    on one GPU with FSDP1 the reference model still on it until its first pass."""
    group = report.groups[0]
    phase = next((p for p in group.phases if p.name == name), None)
    if phase is None:
        return None
    if m.steady or with_adam(name, m.step):
        return phase.total
    load = next((p for p in group.phases if p.name == "load"), None)
    # what the load holds until the first step's passes (the estimate's first_step_extra)
    extra = [t for t in load.terms if t.key in FIRST_STEP_KEYS] if load and name in FIRST_PASS else []
    return sum(t.bytes for t in first_step_terms(phase.terms, extra))


FIRST_PASS = ("weight_sync", "generation", "old_log_prob", "ref_log_prob")


def trainer_at_load(report) -> int:
    """The load phase without the engine that never started (its budget and process)."""
    load = next(p for p in report.groups[0].phases if p.name == "load")
    return sum(t.bytes for t in load.terms if not t.key.startswith(("engine", "graphs")))


def vllm_rows(run: Run) -> list[dict]:
    """vLLM alone: the engine's own terms (budget + what its process holds beyond it, the driver's reserve)."""
    from wizard.core.memory.terms import CONSTANTS as C

    util = run.spec["args"]["util"]
    total = (run.record.get("total_mib") or 143771) * MIB
    awake = util * (total - C.driver_reserved) + C.vllm_outside_budget + C.driver_reserved
    return [_row(run, name, m, awake, 0.10) for name, m in run.phases.items()]


def _row(run: Run, phase: str, m, predicted: float | None, tolerance: float) -> dict:
    measured = m.peak_mib * MIB
    err = None if predicted is None or not m.complete else (predicted - measured) / measured
    return {"run": run.name, "phase": phase, "step": m.step, "complete": m.complete,
            "measured_gib": round(measured / GIB, 2), "predicted_gib": None if predicted is None else round(predicted / GIB, 2),
            "error": None if err is None else round(err, 4), "within": None if err is None else abs(err) <= tolerance}


def rows_for(run: Run) -> tuple[list[dict], dict]:
    if run.spec.get("kind") == "vllm":
        return vllm_rows(run), {"run": run.name, "outcome": run.outcome, "verdict": "n/a (engine alone)", "right": None}
    report, verdict, why = predict(run)
    if report is None:
        return [], {"run": run.name, "outcome": run.outcome, "verdict": f"none: {why}", "right": None}
    rows = [_row(run, name, m, phase_bytes(report, name, m), 0.10) for name, m in run.phases.items()]
    if verdict.cause == "engine_start" and "load" in run.phases:  # vLLM refused: what held the GPU was the trainer
        m = run.phases["load"]
        m = type("M", (), {"peak_mib": m.peak_mib, "step": 0, "complete": True})()
        rows = [_row(run, "load (trainer only)", m, trainer_at_load(report), 0.10)] + [
            r for r in rows if r["phase"] != "load"]
    if not run.phases and run.outcome == "error":  # stopped before it began (verl refused the config)
        rows = []
    elif not run.phases:  # measured end to end only
        m = type("M", (), {"peak_mib": overall_peak_mib(run), "step": 2, "complete": True})()
        rows = [_row(run, "peak (end to end)", m, report.groups[0].peak.total, 0.15)]
    # a run that stopped for another reason (a config error, a crash of its own) says nothing of the verdict
    right = (verdict.word == DOES_NOT_FIT) == (run.outcome == "oom") if verdict.word and run.outcome in ("ok", "oom") else None
    if run.outcome == "host_oom" and not run.record.get("concurrent") and verdict.word:  # Ray killed it for host RAM
        right = verdict.word == DOES_NOT_FIT and verdict.cause == "host"
    return rows, {"run": run.name, "outcome": run.outcome, "verdict": verdict.text(), "cause": verdict.cause,
                  "right": right}


# SGLang's own memory lines (sglang 0.5.12, model_runner.py; "GB" there is free bytes / 2**30): what it weighed, the
# KV pool it made and what each kind of CUDA graph took
_SGLANG_LINES = {
    "weights_gib": re.compile(r"Load weight end\..*?avail mem=[\d.]+ GB, mem usage=([\d.]+) GB"),
    "free_after_weights_gib": re.compile(r"Load weight end\..*?avail mem=([\d.]+) GB"),
    "kv_tokens": re.compile(r"KV Cache is allocated\. #tokens: (\d+)"),
    "decode_graphs_gib": re.compile(r"Capture cuda graph end\..*?mem usage=([\d.]+) GB"),
    "piecewise_graphs_gib": re.compile(r"Capture piecewise CUDA graph end\..*?mem usage=([\d.]+) GB"),
}


def sglang_logged(run: Run) -> dict[str, float]:
    """The first of each of SGLang's memory lines in the run's log (a value it did not log is absent)."""
    log = run.folder / "run.log.gz"
    found: dict[str, float] = {}
    if not log.exists():
        return found
    with gzip.open(log, "rt", errors="replace") as f:
        for line in f:
            for key, pattern in _SGLANG_LINES.items():
                if key not in found and (m := pattern.search(line)):
                    found[key] = float(m.group(1))
    return found


def sglang_rows(run: Run) -> list[dict]:
    """SGLang's logged terms against the estimate's: weights, the memory it found free before loading, its KV pool in
    tokens, and its CUDA graphs (decode + piecewise) beside the estimate's graphs term."""
    logged = sglang_logged(run)
    if run.spec.get("kind") == "vllm" or "kv_tokens" not in logged:
        return []
    values, models, cluster, _ = _planned(run)
    report, _ = estimate_memory(values, models, cluster)
    if report is None:
        return []
    kwargs = (values.get(f"{ROLLOUT}.engine_kwargs") or {}).get("sglang") or {}
    kv = report.kv["rollout"]
    gen = next(p for p in report.groups[0].phases if p.name == "generation")
    graphs = sum(t.bytes for t in gen.terms if t.key == "graphs_rollout") / GIB
    if kwargs.get("attention_backend") == "triton":
        # triton attention's decode buffers are made inside SGLang's CUDA-graph runner: its log line counts them
        runtime = next(t for t in gen.terms if t.key == "engine_rollout_runtime")
        graphs += _triton_buffers_gib(runtime.label)
    rows = [("weights (GiB)", logged.get("weights_gib"), kv.weights_bytes / GIB),
            ("KV pool (tokens)", logged["kv_tokens"], kv.tokens),
            ("graphs (GiB)", logged.get("decode_graphs_gib", 0.0) + logged.get("piecewise_graphs_gib", 0.0), graphs)]
    if not kwargs.get("max_total_tokens"):  # a capped pool is not util x the free memory
        util = values[f"{ROLLOUT}.gpu_memory_utilization"]
        # free before loading = what it found after + what it loaded; the estimate's weights + pool = util x that
        free = logged["free_after_weights_gib"] + logged["weights_gib"]
        rows.insert(1, ("free at start (GiB)", free, kv.budget_bytes / util / GIB))
    return [{"run": run.name, "term": name, "logged": mine, "predicted": round(pred, 3),
             "error": None if not mine else round((pred - mine) / mine, 4)} for name, mine, pred in rows]


def _triton_buffers_gib(label: str) -> float:
    """The triton decode buffers the runtime term's label names ("triton attention's decode buffers 45 MiB")."""
    m = re.search(r"triton attention's decode buffers ([\d.]+) (MiB|GiB)", label)
    return 0.0 if not m else float(m.group(1)) / (1024 if m.group(2) == "MiB" else 1)


# Host RAM: Ray's OOM report of a run it killed ("Memory on the node ... was 120.86GB used"; Ray's GB are GiB), or a
# run alone's host.jsonl (campaign.py's HostSampler: the node's used RAM once a second, less the first reading)
_RAY_USED = re.compile(r"Memory on the node .*? was ([\d.]+)GB used / ([\d.]+)GB limit")


# the campaign's own tools on the node (bench/real, copied to /tmp/dev/real): make_models.py writing the next run's
# model beside this one held 16 GiB at the 1.5B PPO run's start (advised-ppo-1.5b-critic-4096-h100-5), not verl
CAMPAIGN_TOOLS = "/tmp/dev/real/"


def _run_mib(reading: dict) -> int:
    """A host.jsonl reading's used RAM less what the campaign's own tools held then (each process: [MiB, command])."""
    return reading["used_mib"] - sum(p[0] for p in reading.get("procs", {}).values() if CAMPAIGN_TOOLS in p[1])


def host_row(run: Run) -> dict | None:
    """The run's host RAM at its highest (or when Ray killed it) against the estimate's node total; None where the
    run recorded neither."""
    if run.record.get("concurrent"):  # the node's RAM held its neighbour's too
        return None
    measured, how = None, ""
    log = run.folder / "run.log.gz"
    if run.outcome == "host_oom" and log.exists():
        m = _RAY_USED.search(gzip.decompress(log.read_bytes()).decode(errors="replace"))
        if m:
            measured, how = float(m.group(1)) * 2**30, "Ray's kill report"
    for name in ("host.jsonl.gz", "host.jsonl"):
        path = run.folder / name
        if measured is None and path.exists():
            text = gzip.decompress(path.read_bytes()).decode() if name.endswith(".gz") else path.read_text()
            used = [_run_mib(json.loads(line)) for line in text.splitlines() if line.strip()]
            if used:
                measured, how = (max(used) - used[0]) * MIB, "host.jsonl (less the first reading, the campaign's tools)"
    if measured is None:
        return None
    report, _, _ = predict(run)
    if report is None or not report.host:
        return None
    predicted = report.host[0].total
    return {"run": run.name, "measured_gib": round(measured / 2**30, 2), "predicted_gib": round(predicted / 2**30, 2),
            "error": round((predicted - measured) / measured, 4), "how": how}
