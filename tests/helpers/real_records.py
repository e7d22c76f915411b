"""The recorded real runs of bench/data/verl_real/ (bench/real/campaign.py on the device): what ran, and the GPU
memory measured per verl phase.

A run's folder holds ``spec.json`` (what the campaign ran), ``record.json`` (ok / oom / error, peak), ``model.json``
(the model's config.json), ``samples.jsonl.gz`` (NVML: device total and per process, 10 Hz), ``phases.jsonl.gz``
(verl's own phase marks, bench/real/patch_verl.py), ``metrics.jsonl`` and ``run.log.gz``; a launch also
``command.sh``, the exact command. Phases are cut as the estimate names them: ``load`` (start until the first
weight sync, the engine's start inside), ``weight_sync`` ("Before resume weights" to "After offload model to cpu": the
KV cache is not back yet), ``generation``, ``old_log_prob``, ``ref_log_prob``, ``actor_update``,
``critic_update`` (verl's timing_s windows). A window a crash left open runs to the last sample.

The sync's own transient (the trainer's send buffer, FSDP1's state_dict copy) lasts 0.1-0.2 s: NVML at 10 Hz
catches it in part or not at all. Its peak is rebuilt from two measurements that are exact: NVML's level of every
process in the window before the transient (the woken engine, the trainer's resident state; many samples) and the
trainer's own torch counters (``max_allocated`` over the sync, in the marks). A sync that set no new torch peak (the
update before it went higher) takes the transient of the last one of the same kind (the same sequence of marks: LoRA's
first sync also sends the base model) that did: the same code moves the same tensors. patch_verl.py now resets torch's
peak counter at each sync's start (``peak_reset`` in the mark), which makes every sync of a later campaign exact; the
runs recorded so far predate it.
The phase's peak is the higher of the sampled and the rebuilt value; ``rebuilt`` says which.
"""

from __future__ import annotations

import gzip
import json
import shlex
import statistics
from dataclasses import dataclass, field
from pathlib import Path

MIB = 1024 * 1024
STEP_PHASES = {"gen": "generation", "old_log_prob": "old_log_prob", "ref": "ref_log_prob", "values": "values",
               "update_actor": "actor_update", "update_critic": "critic_update"}
VLLM_PHASES = {"init": "load", "generate": "generation", "wake": "generation"}


@dataclass
class Measured:
    peak_mib: int
    step: int  # 0: before the first step (load, the first sync); 1: the first step (no AdamW moments yet); 2+
    complete: bool  # False: the window was open when the run ended (the crash happened in it)
    steady: bool = False  # a complete window with AdamW's moments resident was measured (the run got that far)


@dataclass
class Run:
    name: str
    folder: Path
    spec: dict
    record: dict
    model: dict
    samples: list[dict]
    marks: list[dict]
    phases: dict[str, Measured] = field(default_factory=dict)

    @property
    def outcome(self) -> str:
        return self.record["status"]

    def overrides(self) -> list[str]:
        """The verl overrides the run had: the exact command when the launcher wrote one, else the spec's."""
        cmd = self.folder / "command.sh"
        if cmd.exists():
            words = shlex.split(cmd.read_text().strip().splitlines()[-1])
            args = words[words.index("verl.trainer.main_ppo") + 1:]
        else:
            args = list(self.spec["args"])
        return [a for a in args if not a.startswith("hydra.")]


def _jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_run(folder: Path) -> Run:
    run = Run(name=folder.name, folder=folder, spec=json.loads((folder / "spec.json").read_text()),
              record=json.loads((folder / "record.json").read_text()),
              model=json.loads((folder / "model.json").read_text()),
              samples=_jsonl(folder / "samples.jsonl.gz"), marks=_jsonl(folder / "phases.jsonl.gz"))
    run.phases = measured_phases(run)
    return run


def load_runs(root: Path) -> list[Run]:
    return [load_run(p) for p in sorted(root.iterdir()) if (p / "record.json").exists()]


def _peak(samples: list[dict], t0: float, t1: float) -> int | None:
    inside = [s["used"] for s in samples if t0 <= s["t"] <= t1]
    return max(inside) if inside else None


def _windows(run: Run) -> list[tuple[str, int, float, float, bool]]:
    """(phase, step, start, end, complete) from verl's marks; the end of the samples closes what a crash left open."""
    names = VLLM_PHASES if run.spec.get("kind") == "vllm" else STEP_PHASES
    end_t = run.samples[-1]["t"] if run.samples else 0.0
    out, open_, step, syncs = [], {}, 0, 0
    for m in run.marks:
        kind, name = m.get("kind"), m.get("name")
        if kind == "start" and name == "step":
            step += 1
        if kind == "start" and name in names:
            open_[name] = (m["t"], step)
        elif kind == "end" and name in open_:
            t0, st = open_.pop(name)
            out.append((names[name], st, t0, m["t"], True))
        elif kind == "mark" and name == "Before resume weights":
            open_["sync"] = (m["t"], step)
        elif kind == "mark" and name == "After offload model to cpu" and "sync" in open_:
            t0, st = open_.pop("sync")
            out.append(("weight_sync", st if syncs else 0, t0, m["t"], True))
            syncs += 1
    out += [(names.get(n, "weight_sync"), st, t0, end_t, False) for n, (t0, st) in open_.items()]
    return out


def _sync_rebuilt(run: Run) -> dict[float, int]:
    """The start of each weight-sync window -> its peak (MiB) rebuilt from NVML's level before the transient and the
    trainer's torch counters, where the marks and the per-process samples allow it."""
    marks = [m for m in run.marks if m.get("kind") == "mark"]
    out, transients = {}, {}  # the transient of each kind of sync (its sequence of marks): LoRA's first differs
    for i, first in enumerate(marks):
        if first.get("name") != "Before resume weights" or "max_allocated" not in first:
            continue
        pid, inside = first.get("pid"), []
        for m in marks[i + 1:]:
            if m.get("pid") != pid:
                continue
            if m.get("name") == "Before resume weights":
                break
            inside.append(m)
            if m.get("name") == "After offload model to cpu":
                break
        seen = {}
        for m in inside:
            seen.setdefault(m.get("name"), m)
        start = seen.get("Before load_fsdp_model_to_gpu") or seen.get("After resume weights")
        end, close = seen.get("After update_weights"), seen.get("After offload model to cpu")
        fields = ("allocated", "reserved", "max_allocated")
        if not (start and end and close) or not all(k in m for m in (start, end) for k in fields):
            continue
        kind = tuple(m.get("name") for m in inside)
        if first.get("peak_reset") or end["max_allocated"] > first["max_allocated"]:  # its own peak: exact
            transients[kind] = end["max_allocated"] - start["allocated"]
        key = str(pid)
        mine = [s for s in run.samples if key in s.get("procs", {})]  # a sample that lost the trainer says nothing
        before = [s["procs"][key] for s in mine if first["t"] <= s["t"] <= start["t"]]
        window = [s for s in mine if first["t"] <= s["t"] <= close["t"]]
        if kind not in transients or not before or not window:
            continue
        others = max(s["used"] - s["procs"][key] for s in window)  # the woken engine, the driver
        # the sync's buffers (2 GiB and more) take new segments: the allocator's small free blocks do not hold them
        out[first["t"]] = int(others + statistics.median(before) + transients[kind] / MIB)
    return out


def with_adam(phase: str, step: int) -> bool:
    """AdamW's moments exist from the first optimizer step on: in the update itself, the syncs after it, and
    every phase of the second step."""
    return phase == "actor_update" or (phase == "weight_sync" and step >= 1) or step >= 2


def measured_phases(run: Run) -> dict[str, Measured]:
    """The peak of each phase: its highest complete window over the run, whatever the step (the first step can be
    the higher one: no AdamW moments yet, but FSDP1 on one GPU still holds the reference model); ``steady`` says
    whether a window with AdamW's moments was among them. ``load`` runs from the first sample to the first weight
    sync (or the first step): the engines' start, with the trainer's state at load."""
    if not run.samples or not run.marks:
        return {}
    out: dict[str, Measured] = {}
    windows = _windows(run)
    first_step = min((t0 for n, st, t0, _, _ in windows if st >= 1), default=None)
    if run.spec.get("kind") != "vllm":  # the load: until the first weight sync (its own window), else the first step
        first_sync = min((t0 for n, _, t0, _, _ in windows if n == "weight_sync"), default=None)
        ends = [t for t in (first_sync, first_step) if t is not None]
        t_end = min(ends) if ends else run.samples[-1]["t"]
        out["load"] = Measured(_peak(run.samples, run.samples[0]["t"], t_end) or 0, 0, bool(ends), steady=True)
    rebuilt = _sync_rebuilt(run)
    steady = set()
    for name, step, t0, t1, complete in windows:
        peak = _peak(run.samples, t0, t1)
        if peak is None:
            continue
        if name == "weight_sync" and t0 in rebuilt:
            peak = max(peak, rebuilt[t0])
        best = out.get(name)
        if best is None or (complete, peak) > (best.complete, best.peak_mib):
            out[name] = Measured(peak, step, complete)
        if complete and with_adam(name, step):
            steady.add(name)
    for name in steady:
        out[name].steady = True
    return out


def overall_peak_mib(run: Run) -> int:
    return max((s["used"] for s in run.samples), default=run.record.get("peak_used_mib") or 0)
