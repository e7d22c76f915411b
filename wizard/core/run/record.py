"""A run folder's contents, as data: what the launch recorded, the log, the metrics, the GPU samples, the dumps.

A run folder written by ``verl-wizard launch`` or the Run step holds ``run.log`` (every line, secrets as
``${NAME}``), ``command.sh``, ``metrics.jsonl`` (verl's file logger), ``run.json`` (this module's ``RunMeta``:
the plan's overrides with secrets as ``${NAME}``, where the generations go, the environment and GPUs when known,
how the run ended), ``gpus.csv`` (the GPU monitor's samples, tagged with the step in progress) and the
generations verl dumps (``rollout/<step>.jsonl``, ``validation/<step>.jsonl``). Older folders and folders of
runs started elsewhere have only some of these; everything here copes with what is missing.

``wizard.adapters.files.run_folder`` reads the files into a ``RunRecord``; nothing here touches the disk.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field

from wizard.core.plan.emit import emit_overrides
from wizard.core.plan.model import Plan
from wizard.core.run.logparse import RunLog
from wizard.core.run.samples.dump import Sample
from wizard.core.run.smoke import dump_dirs

META_FORMAT = 1
# The files a launch writes into its run folder, beside run.json and gpus.csv.
LOG, COMMAND, METRICS = "run.log", "command.sh", "metrics.jsonl"
ROLLOUT_DIR, VALIDATION_DIR = "rollout", "validation"
TRACE_HEADER = "time_s,step,gpu,util_percent,memory_mib"


def plan_fingerprint(plan: Plan) -> str:
    """Equal for two plans that launch the same verl run (the overrides as written, secrets as references)."""
    text = "\n".join([plan.config_name, *emit_overrides(plan).overrides])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class RunMeta:
    """``run.json``: what the launch knew when it started, and how the run ended."""

    plan_overrides: list[str]  # the plan's own overrides (before the smoke edits), secrets as ${NAME}
    config_name: str = "ppo_trainer"
    fingerprint: str = ""
    wizard_version: str = ""
    started: str | None = None  # ISO time
    python: str | None = None
    steps: int | None = None  # the smoke run's training steps
    rollout_dir: str | None = None
    validation_dir: str | None = None
    environment: dict | None = None  # {"python": "3.11.7", "packages": {"verl": "0.9.1", ...}} from doctor's probe
    gpus: list[dict] | None = None  # [{"index": 0, "name": "NVIDIA H200", "memory_mib": 143771}]
    ended: str | None = None
    exit_code: int | None = None
    stopped: bool | None = None  # the user stopped it

    def to_json(self) -> dict:
        return {"format": META_FORMAT, **asdict(self)}

    @classmethod
    def from_json(cls, doc: object) -> RunMeta | None:
        """None for anything that is not a run.json this version can read."""
        if not isinstance(doc, dict) or doc.get("format") != META_FORMAT:
            return None
        words = doc.get("plan_overrides")
        if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
            return None
        known = {k: v for k, v in doc.items() if k in cls.__dataclass_fields__}
        try:
            return cls(**known)
        except TypeError:
            return None


def start_meta(plan: Plan, smoke: Plan, *, steps: int, python: str, started: str, wizard_version: str,
               environment: dict | None = None, gpus: list[dict] | None = None) -> RunMeta:
    """run.json at the start: ``plan`` is the user's plan (its overrides, its fingerprint), ``smoke`` the smoke plan
    (where verl will dump the generations)."""
    rollout, validation = dump_dirs(smoke)
    return RunMeta(plan_overrides=emit_overrides(plan).overrides, config_name=plan.config_name,
                   fingerprint=plan_fingerprint(plan), wizard_version=wizard_version, started=started, python=python,
                   steps=steps, rollout_dir=rollout, validation_dir=validation, environment=environment, gpus=gpus)


@dataclass
class RunRecord:
    """Everything a run folder says, read (``wizard.adapters.files.run_folder.read_run_folder``)."""

    path: str
    meta: RunMeta | None = None
    plan: Plan | None = None
    plan_smoke_only: bool = False  # the plan was read back from command.sh: its step count is the smoke run's
    log_tail: list[str] = field(default_factory=list)  # the last lines of run.log (raw)
    log_lines: int = 0  # lines in run.log
    state: RunLog = field(default_factory=RunLog)  # metrics (file logger and console) and lifecycle markers
    gpu_busy: dict[int, float] = field(default_factory=dict)  # step -> mean utilisation, percent
    gpu_count: int | None = None  # GPUs the monitor saw
    rollout: dict[int, list[Sample]] = field(default_factory=dict)  # step -> the training generations
    validation: dict[int, list[Sample]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # files that could not be read, lines that were no sample

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]


# --- the GPU monitor's samples -----------------------------------------------------------------------------

def trace_lines(t: float, step: int, readings: Iterable[tuple[int, int | None, int | None]]) -> list[str]:
    """Rows for ``gpus.csv``: ``readings`` are (GPU index, utilisation %, memory used in bytes)."""
    return [f"{t:.1f},{step},{gpu},{'' if util is None else util},"
            f"{'' if mem is None else round(mem / (1 << 20))}" for gpu, util, mem in readings]


def busy_by_step(lines: Iterable[str]) -> tuple[dict[int, float], int]:
    """(step -> mean utilisation over its samples and GPUs, GPUs seen) from ``gpus.csv`` lines; step 0 (start-up)
    is left out."""
    sums: dict[int, list[float]] = {}
    gpus: set[str] = set()
    for line in lines:
        parts = line.strip().split(",")
        if len(parts) != 5 or not parts[1].isdigit():
            continue
        gpus.add(parts[2])
        step, util = int(parts[1]), parts[3]
        if step > 0 and util.isdigit():
            sums.setdefault(step, []).append(float(util))
    return {s: sum(v) / len(v) for s, v in sums.items()}, len(gpus)


def step_in_progress(state: RunLog) -> int:
    """The training step running now: 0 until training starts (verl's "ready to fit"), then the step after the
    last one logged."""
    started = "ready" in state.markers or state.last_step is not None
    return (state.last_step or 0) + 1 if started else 0


def samples_of(steps: dict[int, list[Sample]], order: Sequence[int] | None = None) -> list[Sample]:
    """All samples of the given steps (all steps, in order, by default)."""
    return [s for step in (order or sorted(steps)) for s in steps.get(step, [])]


__all__ = ["RunMeta", "RunRecord", "plan_fingerprint", "start_meta", "trace_lines", "busy_by_step", "step_in_progress",
           "samples_of", "ROLLOUT_DIR", "VALIDATION_DIR", "TRACE_HEADER", "META_FORMAT"]
