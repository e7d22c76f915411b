"""What every sub-command shares: exit codes, the one-line usage error, findings as text, and reading the
inputs several commands take the same way (a plan from a preset or a file, the hardware from --gpus,
--cluster or --ray-address). Light to import: everything heavy is imported where it is used.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import sys
from contextlib import contextmanager

EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class UsageError(Exception):
    """Bad usage or unreadable input: one line for the user, exit 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line instead of usage + error
        raise UsageError(f"{message} (see {self.prog} --help)")


def parse_gpus(text: str | None):
    if text is None:
        return None
    from wizard.core.hardware import parse_gpu_spec

    try:
        return parse_gpu_spec(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


# ------------------------------------------------------------------------------------------------
# Output


class _Redacting(io.TextIOBase):
    """A stream that writes through ``wizard.core.secrets.redact``: the last net under every command's output."""

    def __init__(self, stream, values: dict[str, str]):
        self._stream, self._values = stream, values

    def write(self, text: str) -> int:
        from wizard.core.secrets import redact

        self._stream.write(redact(text, self._values))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()


@contextmanager
def redacted_output():
    """stdout and stderr with secrets replaced by ``${NAME}``: the values of this environment's secret variables
    and anything shaped like a credential (see wizard.core.secrets), whatever a command prints."""
    from wizard.core.secrets import secret_values

    values = secret_values(os.environ)
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Redacting(saved[0], values), _Redacting(saved[1], values)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


# ------------------------------------------------------------------------------------------------
# Findings as text


def print_findings(findings, header: str, out=None, shown: dict[str, str] | None = None) -> None:
    """Findings by stage (or by a script's line); a message quoting a file or a model (a data_source, a path) has
    its control characters shown, never written raw. A fix already printed (above, or by ``shown``: its text ->
    where it stands) is named, not printed again: the memory findings all offer the advisor's same alternatives."""
    from wizard.core.findings import STAGE_ORDER, STAGE_TITLES, Severity, sort_findings
    from wizard.core.visible import visible

    icon = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
    out = out or sys.stdout
    counts = {s: sum(1 for f in findings if f.severity is s) for s in Severity}
    verdict = "FAIL" if counts[Severity.ERROR] else "OK"
    parts = [f"{counts[s]} {icon[s]}{'s' if counts[s] != 1 else ''}" for s in Severity if counts[s]]
    print(f"{verdict}  {visible(header)}: " + (", ".join(parts) if parts else "no findings"), file=out)
    by_line = [f for f in findings if f.line is not None]
    rest = [f for f in findings if f.line is None]
    stages = sorted({f.stage for f in rest}, key=STAGE_ORDER.__getitem__)
    seen = dict(shown or {})
    for stage in stages:
        print(f" {STAGE_TITLES[stage]}", file=out)
        for f in sort_findings([f for f in rest if f.stage is stage]):
            print(f"  {icon[f.severity]:7} {f.rule}: {visible(f.message, newline=None)}", file=out)
            if f.fix and len(f.fix) > 80 and f.fix in seen:
                print(f"          fix: {seen[f.fix]}", file=out)
            elif f.fix:
                print(f"          fix: {visible(f.fix, newline=None)}", file=out)
                seen.setdefault(f.fix, f"the same as {f.rule}'s above")
    if by_line:
        _print_by_line(by_line, icon, out)


def _print_by_line(findings, icon, out) -> None:
    """A script's findings under the line they are about (--format json keeps each one's data)."""
    from wizard.core.findings import sort_findings
    from wizard.core.visible import visible

    print(" From the script, by line", file=out)
    for line in sorted({f.line for f in findings}):
        print(f"  line {line}", file=out)
        for f in sort_findings([f for f in findings if f.line == line]):
            print(f"    {icon[f.severity]:7} {f.rule}: {visible(f.message, newline=None)}", file=out)
            if f.fix:
                print(f"            fix: {visible(f.fix, newline=None)}", file=out)


def findings_text(findings, header: str, shown: dict[str, str] | None = None) -> str:
    import io

    buf = io.StringIO()
    print_findings(findings, header=header, out=buf, shown=shown)
    return buf.getvalue().rstrip()


def refuse_to_write(findings, header: str, fmt: str, **json_fields) -> None:
    """Say why nothing was written (errors in the config), as text or as the command's JSON."""
    if fmt == "json":
        print(json.dumps({"ok": False, "files": [], "findings": [f.to_json() for f in findings], **json_fields}))
    else:
        print_findings(findings, header=header)
        print("Nothing written: fix the errors above (with --set KEY=VALUE), or pass --force.")


# ------------------------------------------------------------------------------------------------
# Inputs several commands share


def load_plan_arg(source: str | None = None, preset: str | None = None, gpus=None, sets: list[str] | None = None):
    """(Plan, findings of reading it). ``source`` may be a file or a preset name. UsageError (one line) otherwise."""
    from wizard.core.verl import OverrideSyntaxError
    from wizard.usecases.plans import open_plan

    try:
        return open_plan(source, preset, gpus, sets)
    except OverrideSyntaxError as exc:
        raise UsageError(f"--set: {exc}") from None
    except ValueError as exc:
        raise UsageError(str(exc).splitlines()[0]) from None


def cluster_spec(path: str, catalogue):
    """The discovery answer a cluster spec file (or a saved ``detect --format json``) gives."""
    from wizard.adapters.files.disk import exists
    from wizard.usecases.hardware import load_cluster_spec_file

    if not exists(path):  # often the cluster in words where a file is expected
        raise UsageError(f"{path}: no such file; --cluster takes a cluster spec YAML file, e.g. one holding 'nodes: "
                         "[{count: 2, gpus: 8, gpu: H100-80GB, interconnect: nvlink}]' (or a saved `verl-wizard detect "
                         "--format json`); for GPUs in words use --gpus 2x8xH100-80GB")
    try:
        return load_cluster_spec_file(path, catalogue)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def ray_discovery(address: str, python: str | None = None, timeout: float | None = None):
    """A live Ray cluster's nodes, GPUs and CPUs (never hangs; a dead address is a UsageError)."""
    from wizard.adapters.verl_env.ray_cluster import RayAddressError, discover_ray

    kwargs = {"python": python} if timeout is None else {"python": python, "timeout": timeout}
    try:
        return discover_ray(address, **kwargs)
    except RayAddressError as exc:
        raise UsageError(str(exc)) from None
    except UnicodeError:  # the resolver's refusal of a host name over 253 characters, or a label over 63
        shown = address if len(address) <= 60 else f"{address[:40]}... ({len(address):,} characters)"
        raise UsageError(f"--ray-address {shown}: not a host name (at most 253 characters, 63 between dots)") from None


def hardware(args, named_gpus_ok: bool = False):
    """(Cluster or None, GpuSpec or None, findings) from one of --gpus, --cluster, --ray-address; with
    ``named_gpus_ok`` (plan, check) and none of them, the GPUs a preset or plan file names (a ``gpus.from_plan`` note).

    The one reading of the hardware options for every command that checks a config against GPUs: a cluster
    spec or a Ray cluster gives both the machines and the ``--gpus`` view (a Ray cluster's CPUs included, for
    the Ray-CPUs rule); ``--gpus`` with a GPU model gives machines sized from the GPU catalogue.
    """
    if sum(bool(getattr(args, x, None)) for x in ("gpus", "cluster", "ray_address")) > 1:
        raise UsageError("give one of --gpus, --cluster, --ray-address")
    if getattr(args, "ray_address", None):
        discovery = ray_discovery(args.ray_address, getattr(args, "python", None))
        cluster = discovery.cluster
        spec = cluster.to_gpu_spec()
        cpus = sum(n.cpus or 0 for n in cluster.nodes if n.alive)
        if spec is not None:
            spec = dataclasses.replace(spec, cpus=cpus or None)
        return cluster, spec, list(discovery.findings)
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue

    if getattr(args, "cluster", None):
        cluster = cluster_spec(args.cluster, load_gpu_catalogue()).cluster
        return cluster, cluster.to_gpu_spec(), []
    if not getattr(args, "gpus", None) and named_gpus_ok:
        named = _named_gpus(args)  # a preset's or plan file's own GPUs (hardware.gpu), judged as --gpus would be
        if named is not None:
            return named
    spec = parse_gpus(getattr(args, "gpus", None))
    if spec is None or spec.model is None:
        return None, spec, []
    from wizard.usecases.hardware import canonical_spec, cluster_for_spec

    try:
        spec = canonical_spec(spec, load_gpu_catalogue())
        return cluster_for_spec(spec, load_gpu_catalogue()), spec, []  # memory rules need the GPUs' size
    except ValueError as exc:
        raise UsageError(f"--gpus {args.gpus}: {exc}") from None


def _named_gpus(args):
    """(cluster, spec, [its note]) for the GPUs a preset or a plan file names (``hardware.gpu``, with the trainer's size
    before any ``--set``: the preset names the GPUs it was sized for, ``generate --gpus`` writes them), as ``--gpus``
    would give them; None where none is named or the file does not read (the command itself then says why). Never
    raises for the file's own values: a size the catalogue's machines cannot be, or an unknown model, is a note."""
    source, preset = getattr(args, "source", None), getattr(args, "preset", None)
    if not (source or preset) or (source and preset) or (source or "").endswith(".sh"):
        return None
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
    from wizard.core.hardware.gpus import MAX_GPUS, MAX_GPUS_PER_NODE
    from wizard.core.placement import planned_gpus
    from wizard.usecases.hardware import canonical_spec, cluster_for_spec
    from wizard.usecases.plans import open_plan

    try:
        plan, _ = open_plan(source, preset)
    except (ValueError, OSError):
        return None
    if not plan.hardware.gpu:
        return None
    spec = planned_gpus(plan)
    text = (f"{spec.nodes}x" if spec.nodes != 1 else "") + f"{spec.gpus_per_node}x{plan.hardware.gpu}"  # as --gpus
    if spec.nodes < 1 or not 1 <= spec.gpus_per_node <= MAX_GPUS_PER_NODE or spec.total > MAX_GPUS:  # the size's own rules say what is wrong
        return None, None, [_gpus_note(f"the plan names its GPUs ({text}) but not a size the machines can be: "
                                       "judged without them")]
    try:
        spec = canonical_spec(spec, load_gpu_catalogue())
    except ValueError as exc:
        return None, None, [_gpus_note(f"the plan's GPU model (hardware.gpu: {plan.hardware.gpu}) is not known: "
                                       f"{str(exc).splitlines()[0]}")]
    return cluster_for_spec(spec, load_gpu_catalogue()), spec, [_gpus_note(
        f"GPUs: {text}, as the plan names them (hardware.gpu and its trainer size); --gpus, --cluster or "
        "--ray-address judges it on others")]


def _gpus_note(message: str):
    from wizard.core.findings import Finding, Severity, Stage

    return Finding(rule="gpus.from_plan", severity=Severity.INFO, stage=Stage.ADVICE,
                   keys=["trainer.nnodes", "trainer.n_gpus_per_node"], message=message)


def read_run_dir(path: str):
    """A run folder (``wizard.core.run.record.RunRecord``) for samples, timing and report; UsageError otherwise."""
    from wizard.adapters.files.run_folder import RunFolderError, read_run_folder

    try:
        return read_run_folder(path)
    except RunFolderError as exc:
        raise UsageError(str(exc)) from None
