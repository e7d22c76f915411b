"""``verl-wizard check``: read a config from wherever it comes, report findings."""

from __future__ import annotations

import json
import sys

from wizard.core.findings import STAGE_ORDER, STAGE_TITLES, Finding, Severity, sort_findings

ICON = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def run_check(args, tail: list[str]) -> int:
    from wizard.cli import EXIT_ERRORS, EXIT_OK, UsageError, parse_gpus

    gpus = parse_gpus(args.gpus)
    if sum(bool(x) for x in (args.gpus, args.cluster, args.ray_address)) > 1:
        raise UsageError("give one of --gpus, --cluster, --ray-address")
    ray_findings = []
    if args.ray_address:
        gpus, ray_findings = _ray_cluster(args.ray_address, args.python)
    cluster = None
    if args.cluster:
        from wizard.adapters.gpu_catalogue import load_gpu_catalogue
        from wizard.cli.detect import _spec

        cluster = _spec(args.cluster, load_gpu_catalogue()).cluster
        gpus = cluster.to_gpu_spec()
    elif gpus is not None and gpus.model:
        from wizard.adapters.discovery import cluster_for_spec
        from wizard.adapters.gpu_catalogue import load_gpu_catalogue

        try:
            cluster = cluster_for_spec(gpus, load_gpu_catalogue())  # memory rules need the GPUs' size
        except ValueError as exc:
            raise UsageError(f"--gpus {args.gpus}: {exc}") from None
    if args.batch and (args.source or tail or args.overrides):
        raise UsageError("--batch reads its cases from the file; give no other config")
    if args.batch:
        return _batch(args, gpus, cluster)
    if not args.source and not tail:
        raise UsageError("give a config: a .sh or .yaml file, or overrides after --")
    if args.fix:
        return _fix(args, tail + list(args.overrides), gpus)
    result = check_one(args.source, tail + list(args.overrides), gpus, args.verl, args.python, cluster=cluster,
                       local_files=True, deep_data=args.data)
    result.findings = sort_findings(result.findings + ray_findings)
    if args.format == "json":
        print(json.dumps(result.to_json()))
    else:
        print_findings(result.findings, header=args.source or "overrides")
    return EXIT_OK if result.ok else EXIT_ERRORS


def _ray_cluster(address: str, python: str | None):
    """The GPUs and CPUs of a live Ray cluster, and what discovery found wrong (never hangs)."""
    import dataclasses

    from wizard.adapters.ray_cluster import RayAddressError, discover_ray
    from wizard.cli import UsageError

    try:
        discovery = discover_ray(address, python=python)
    except RayAddressError as exc:
        raise UsageError(str(exc)) from None
    spec = discovery.cluster.to_gpu_spec()
    cpus = sum(n.cpus or 0 for n in discovery.cluster.nodes if getattr(n, "alive", True))
    if spec is not None:
        spec = dataclasses.replace(spec, cpus=cpus or None)
    return spec, list(discovery.findings)


def _read(source: str | None, overrides: list[str]):
    """The config to check: a file, with ``overrides`` added to the end of its command line, or the overrides."""
    from wizard.adapters.sources import from_overrides, load_source
    from wizard.cli import UsageError

    try:
        src = load_source(source) if source else from_overrides(overrides)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if source and overrides:
        src.overrides = list(src.overrides) + list(overrides)
    return src


def check_one(source: str | None, overrides: list[str], gpus, use_verl: bool, python: str | None, case_id=None,
              model_cache: dict | None = None, cluster=None, local_files: bool = False, deep_data: bool = False):
    from wizard.adapters.checking import full_check

    src = _read(source, overrides)
    result = full_check(src.overrides, config_name=src.config_name, gpus=gpus, case_id=case_id,
                        model_cache=model_cache, cluster=cluster, local_files=local_files, deep_data=deep_data)
    result.findings = sort_findings(result.findings + src.findings)
    if use_verl:
        result.findings = sort_findings(result.findings + _verl_findings([src], python))
    return result


def _fix(args, overrides: list[str], gpus) -> int:
    from wizard.adapters.resources import load_moves, load_schema
    from wizard.cli import EXIT_ERRORS, EXIT_OK
    from wizard.core.check.autofix import autofix_overrides
    from wizard.core.plan.convert import plan_overrides

    src = _read(args.source, overrides)
    fixed = autofix_overrides(load_schema(), src.overrides, config_name=src.config_name, moves=load_moves(), gpus=gpus)
    corrected = plan_overrides(fixed.plan)
    if args.format == "json":
        print(json.dumps({"overrides": corrected, "applied": fixed.applied, **fixed.result.to_json()}))
    else:
        for line in corrected:
            print(line)
        for fix in fixed.applied:
            print(f"fixed: {fix}", file=sys.stderr)
        remaining = [f for f in fixed.result.findings if f.severity is Severity.ERROR]
        for f in remaining:
            print(f"still an error: {f.rule}: {f.message}", file=sys.stderr)
    return EXIT_OK if fixed.result.ok else EXIT_ERRORS


def _verl_findings(sources, python) -> list[Finding]:
    from wizard.adapters.verl_preflight import PreflightError, preflight_finding, run_preflight
    from wizard.cli import UsageError

    cases = [{"id": str(i), "overrides": s.overrides, "config_name": s.config_name} for i, s in enumerate(sources)]
    try:
        results = run_preflight(cases, python=python)
    except PreflightError as exc:
        raise UsageError(str(exc)) from None
    return [f for f in (preflight_finding(r) for r in results) if f is not None]


def _batch(args, gpus, cluster=None) -> int:
    from wizard.adapters.checking import full_check
    from wizard.adapters.files import read_text
    from wizard.cli import EXIT_ERRORS, EXIT_OK, UsageError

    try:
        text = read_text(args.batch)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    cases = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{args.batch}:{n}: not valid JSON: {exc.msg}") from None
        if not isinstance(case, dict) or not isinstance(case.get("overrides", []), list):
            raise UsageError(f'{args.batch}:{n}: expected {{"id": ..., "overrides": [...]}}')
        if not all(isinstance(o, str) for o in case.get("overrides", [])):
            raise UsageError(f"{args.batch}:{n}: overrides must be strings")
        cases.append(case)
    any_errors = False
    results = []
    model_cache: dict = {}  # each distinct model path is read once for the whole batch
    for case in cases:
        config_name = case.get("config_name") or "ppo_trainer"
        results.append(full_check(case.get("overrides", []), config_name=config_name, gpus=gpus,
                                  case_id=case.get("id"), model_cache=model_cache, cluster=cluster))
    if args.verl:
        from wizard.adapters.verl_preflight import PreflightError, preflight_finding, run_preflight

        try:
            verdicts = run_preflight(
                [{"id": str(i), "overrides": c.get("overrides", []), "config_name": c.get("config_name")} for i, c in enumerate(cases)],
                python=args.python,
            )
        except PreflightError as exc:
            raise UsageError(str(exc)) from None
        for result, verdict in zip(results, verdicts):
            f = preflight_finding(verdict)
            if f:
                result.findings = sort_findings(result.findings + [f])
    for result in results:
        any_errors |= not result.ok
        if args.format == "json":
            print(json.dumps(result.to_json()))
        else:
            print_findings(result.findings, header=f"case {result.id}")
    return EXIT_ERRORS if any_errors else EXIT_OK


def print_findings(findings: list[Finding], header: str, out=None) -> None:
    out = out or sys.stdout
    counts = {s: sum(1 for f in findings if f.severity is s) for s in Severity}
    verdict = "FAIL" if counts[Severity.ERROR] else "OK"
    parts = [f"{counts[s]} {ICON[s]}{'s' if counts[s] != 1 else ''}" for s in Severity if counts[s]]
    print(f"{verdict}  {header}: " + (", ".join(parts) if parts else "no findings"), file=out)
    stages = sorted({f.stage for f in findings}, key=STAGE_ORDER.__getitem__)
    for stage in stages:
        print(f" {STAGE_TITLES[stage]}", file=out)
        for f in sort_findings([f for f in findings if f.stage is stage]):
            print(f"  {ICON[f.severity]:7} {f.rule}: {f.message}", file=out)
            if f.fix:
                print(f"          fix: {f.fix}", file=out)
