"""``verl-wizard check``: read a config from wherever it comes, report findings."""

from __future__ import annotations

import json
import shlex
import sys

from wizard.cli._common import EXIT_ERRORS, EXIT_OK, UsageError, hardware, load_plan_arg, print_findings
from wizard.core.findings import Finding, Severity, Stage, sort_findings

BATCH_LIMIT = 64 * 1024 * 1024  # bytes of a --batch file: 2,000 cases are ~1 MiB


def add_parser(sub) -> None:
    c = sub.add_parser("check", help="check a config the way verl 0.9.1 would, plus the late mistakes")
    c.add_argument("source", nargs="?", help="a launch script (.sh), a YAML config, or a plan (.json)")
    c.add_argument("overrides", nargs="*",
                   help="verl overrides, e.g. -- data.train_batch_size=64; after a file they are added to its own")
    c.add_argument("--batch", metavar="CASES.jsonl", help='JSON lines {"id", "overrides": [...], "config_name"?}')
    c.add_argument("--format", choices=("text", "json"), default="text")
    c.add_argument("--gpus", metavar="SPEC", help="the cluster to check against, e.g. 8xH100-80GB or 2x8xH100-80GB")
    c.add_argument("--cluster", metavar="FILE", help="the cluster to check against, as a cluster spec YAML")
    c.add_argument("--ray-address", metavar="ADDR", help="check against a live Ray cluster (GPUs and CPUs it has)")
    c.add_argument("--verl", action="store_true", help="also run verl's own pre-flight in --python (needs verl there)")
    c.add_argument("--python", metavar="PATH", help="the Python that has verl (default: this one)")
    c.add_argument("--fix", action="store_true", help="apply the offered fixes and print the corrected overrides")
    c.add_argument("--data", action="store_true", help="also read the data files the config names (schema, rows, lengths)")
    c.add_argument("--preset", metavar="NAME", help="check a preset (verl-wizard presets lists them)")
    c.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="any verl override, added to the preset's or the file's")
    c.set_defaults(handler=run_check, takes_overrides=True)


def run_check(args, tail: list[str]) -> int:
    cluster, gpus, hw_findings = hardware(args, named_gpus_ok=True)
    extra = tail + list(args.overrides) + list(args.sets)
    if args.batch and (args.source or extra or args.preset):
        raise UsageError("--batch reads its cases from the file; give no other config")
    if args.batch:
        return _batch(args, gpus, cluster)
    if args.preset and args.source:
        raise UsageError("give --preset or a file, not both")
    if not args.source and not args.preset and not extra:
        raise UsageError("give a config: a .sh, .yaml or .json file, --preset NAME, or overrides after --")
    source = args.source or (f"preset {args.preset}" if args.preset else None)
    if args.fix:
        return _fix(args, extra, gpus, cluster)
    result = check_one(args.source, extra, gpus, args.verl, args.python, cluster=cluster, local_files=True,
                       deep_data=args.data, preset=args.preset)
    result.findings = sort_findings(result.findings + hw_findings)
    if args.format == "json":
        print(json.dumps(result.to_json()))
    else:
        print_findings(result.findings, header=source or "overrides")
    return EXIT_OK if result.ok else EXIT_ERRORS


def _read(source: str | None, overrides: list[str], preset: str | None = None, gpus=None):
    """The config to check: a file or a preset (shaped for ``gpus``), with ``overrides`` added to the end of its
    command line, or the overrides alone."""
    from wizard.adapters.files.sources import from_overrides, load_source

    if preset:  # the overrides set in the preset's plan, as plan does: one line a key (--fix prints them)
        from wizard.core.plan import emit_overrides

        plan, notes = load_plan_arg(preset=preset, gpus=gpus, sets=overrides)  # notes: its resizing for gpus
        src = from_overrides(emit_overrides(plan).overrides)
        src.config_name = plan.config_name
        src.findings = list(src.findings) + notes
        return src
    else:
        try:
            src = load_source(source) if source else from_overrides(overrides)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if (source or preset) and overrides:
        src.overrides = list(src.overrides) + list(overrides)
    return src


def check_one(source: str | None, overrides: list[str], gpus, use_verl: bool, python: str | None, case_id=None,
              model_cache: dict | None = None, cluster=None, local_files: bool = False, deep_data: bool = False,
              preset: str | None = None):
    from wizard.usecases.assessment import assess

    src = _read(source, overrides, preset, gpus)
    result = assess(src.overrides, config_name=src.config_name, gpus=gpus, case_id=case_id,
                        model_cache=model_cache, cluster=cluster, local_files=local_files, deep_data=deep_data)
    result.findings = sort_findings(result.findings + src.findings)
    if use_verl:
        result.findings = sort_findings(result.findings + _verl_findings([src], python))
    return result


def _fix(args, overrides: list[str], gpus, cluster=None) -> int:
    """Apply the fixes until none is left, each round judged as ``check`` judges (the models the config names and
    the GPUs' memory too, so the memory findings' fix, the advisor's best config that fits, is applied and
    re-checked); exit 1 while an error remains."""
    from wizard.core.check import apply_fixes
    from wizard.core.plan import plan_from_overrides, plan_overrides
    from wizard.usecases.assessment import assess

    src = _read(args.source, overrides, args.preset, gpus)
    cache: dict = {}

    def judge(ovs: list[str]):
        return assess(ovs, config_name=src.config_name, gpus=gpus, cluster=cluster, model_cache=cache).result

    fixed = apply_fixes(plan_from_overrides(src.overrides, config_name=src.config_name), judge)
    corrected = plan_overrides(fixed.plan)
    name = fixed.plan.config_name or "ppo_trainer"
    if args.format == "json":
        print(json.dumps({"config_name": name, "overrides": corrected, "applied": fixed.applied,
                          "removed": fixed.removed,
                          "not_applied": [{"rule": r, "fix": o, "errors_before": a, "errors_after": b}
                                          for r, o, a, b in fixed.rejected],
                          **fixed.result.to_json()}))
    else:
        # the overrides of another config than verl's default start with its name, as verl's command line takes it
        # (and plan/check take it back among the overrides): without it they would compose over FSDP's
        for line in ([f"--config-name={name}"] if name != "ppo_trainer" else []) + corrected:
            print(line)
        for fix in fixed.applied:
            print(f"fixed: {fix}", file=sys.stderr)
        for word in fixed.removed:
            print(f"removed: {word}", file=sys.stderr)
        for rule, fix, before, after in fixed.rejected:
            # a fix the re-check did not bear out (more errors, or its own still there): taken back, not applied
            print(f"not applied: {rule}: {fix} (re-checked: {after} errors instead of {before})", file=sys.stderr)
        remaining = [f for f in fixed.result.findings if f.severity is Severity.ERROR]
        said: dict[str, str] = {}  # a fix already printed -> the rule it was printed under
        for f in remaining:
            print(f"still an error: {f.rule}: {f.message}", file=sys.stderr)
            if not f.fix:
                continue
            # what --fix leaves to the user (a change of method, one choice among several): say it, once
            print("  fix (not applied by --fix): " + (f"the same as {said[f.fix]}'s above" if f.fix in said else f.fix),
                  file=sys.stderr)
            said.setdefault(f.fix, f.rule)
        # --fix applies the fixes of errors; a warning's (a plan that fits only tightly) is the user's call: say so,
        # with the overrides that apply it, rather than end as if there were nothing to fix
        left = [f for f in fixed.result.findings if f.severity is Severity.WARNING and f.fix_overrides and f.fix_auto]
        for f in left:
            print(f"left as a warning: {f.rule}: {f.message.split('. Largest')[0]}; to apply its fix, run check again "
                  "with: " + " ".join(f"--set {shlex.quote(o)}" for o in f.fix_overrides), file=sys.stderr)
        if left:
            print("  (--fix applies the fixes of errors; a warning's fix is your choice)", file=sys.stderr)
    return EXIT_OK if fixed.result.ok else EXIT_ERRORS


def _verl_findings(sources, python) -> list[Finding]:
    """verl's own verdict (composition and validate_config in the target Python): its error, or that it passed."""
    import time

    from wizard.adapters.verl_env.verl_preflight import PreflightError, preflight_finding, run_preflight

    cases = [{"id": str(i), "overrides": s.overrides, "config_name": s.config_name} for i, s in enumerate(sources)]
    started = time.monotonic()
    try:
        results = run_preflight(cases, python=python)
    except PreflightError as exc:
        raise UsageError(str(exc)) from None
    seconds = time.monotonic() - started
    return [preflight_finding(r) or _preflight_passed(python, seconds) for r in results]


def _preflight_passed(python: str | None, seconds: float) -> Finding:
    return Finding(rule="verl.preflight_ok", severity=Severity.INFO, stage=Stage.PREFLIGHT, keys=[],
                   message=f"verl 0.9.1 itself accepts this config: its composition and validate_config passed in "
                           f"{python or sys.executable} ({seconds:.1f} s)")


def _batch(args, gpus, cluster=None) -> int:
    from wizard.usecases.assessment import assess
    from wizard.adapters.files.disk import read_text

    try:
        text = read_text(args.batch, BATCH_LIMIT)
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
        results.append(assess(case.get("overrides", []), config_name=config_name, gpus=gpus,
                                  case_id=case.get("id"), model_cache=model_cache, cluster=cluster))
    if args.verl:
        from wizard.adapters.verl_env.verl_preflight import PreflightError, preflight_finding, run_preflight

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
