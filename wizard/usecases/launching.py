"""A local smoke run behind the check gate: the plan made into a short run (few steps, console and file logging,
generations dumped), judged with the same full check as ``check`` (the models, the data files on this machine, memory
where the GPUs are known, what the run's Python can do), and the exact command. ``verl-wizard launch`` and the Run
step both prepare a run here; starting and watching it is ``wizard.adapters.processes.launcher``'s."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from wizard.adapters.processes.run_dir import model_is_local
from wizard.core.check import EnvironmentFacts
from wizard.core.hardware import Cluster, GpuSpec
from wizard.core.plan import Plan, hide_known_values
from wizard.core.run import METRICS, SmokeCommand, SmokeOptions, render_command, smoke_command, smoke_notes, smoke_plan
from wizard.core.secrets import known_secrets
from wizard.usecases.assessment import Assessment, assess_plan


@dataclass
class SmokeRun:
    """A run ready to start (or to show in a dry run)."""

    python: str
    command: SmokeCommand
    check: Assessment
    run_dir: Path
    plan: Plan  # the smoke plan (what runs)
    base: Plan  # the user's plan (what the run's record and the forecast are about)
    notes: list[str] = field(default_factory=list)  # what the launch changed on its own (the SDPA override)

    @property
    def max_response_length(self) -> int | None:
        return self.plan.data.max_response_length

    @property
    def shell(self) -> str:
        """The command as one shell line, environment included."""
        return render_command(self.python, self.command)


def prepare_smoke(base: Plan, *, python: str, run_dir: Path, steps: int, validation: str,
                  environment: EnvironmentFacts | None = None, gpus: GpuSpec | None = None,
                  cluster: Cluster | None = None, model_cache: dict | None = None,
                  environ: Mapping[str, str] | None = None) -> SmokeRun:
    """The smoke run of ``base`` in ``run_dir``; ``environment`` is what a probe found in ``python`` (flash-attn).
    ValueError (one line) when the config reads an environment variable that is not set."""
    environ = os.environ if environ is None else environ
    if environment is not None and environment.python != python:
        environment = None  # probed in another Python than the one that will run
    base, hidden = hide_known_values(base, known_secrets(environ))
    opts = SmokeOptions(steps=steps, validation=validation, samples_dir=str(run_dir),
                        flash_attn=environment.flash_attn if environment is not None else None)
    plan = smoke_plan(base, opts)
    assessment = assess_plan(plan, gpus=gpus, cluster=cluster, model_cache=model_cache, local_files=True,
                             environment=environment)
    cmd = smoke_command(plan, opts, run_dir=str(run_dir), file_logger_path=str(run_dir / METRICS),
                        model_is_local=model_is_local(plan.models.actor_path), environ=environ)
    if cmd.missing:
        raise ValueError(f"the config reads ${cmd.missing[0]}, which is not set in this environment")
    return SmokeRun(python=python, command=cmd, check=assessment, run_dir=run_dir, plan=plan, base=base,
                    notes=hidden + smoke_notes(base, opts))
