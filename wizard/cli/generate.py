"""``verl-wizard generate`` (run.sh, config.yaml and plan.json from a preset) and ``verl-wizard presets``.

With errors nothing is written unless --force. Exit codes: 0 written, no errors; 1 config errors; 2 bad input.
"""

from __future__ import annotations

import json

from wizard.cli._common import EXIT_ERRORS, EXIT_OK, UsageError, hardware, print_findings, refuse_to_write


def add_parser(sub) -> None:
    g = sub.add_parser("generate", help="write run.sh, config.yaml and plan.json from a preset")
    g.add_argument("--preset", required=True, help="preset name (verl-wizard presets lists them)")
    g.add_argument("--gpus", metavar="SPEC", help="nodes and GPUs, e.g. 1, 8xH100-80GB, 2x8xH100-80GB")
    g.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="any verl override")
    g.add_argument("--out", required=True, metavar="DIR", help="folder to write into (existing files are backed up)")
    g.add_argument("--format", choices=("text", "json"), default="text")
    g.add_argument("--force", action="store_true", help="write even when the config has errors")
    g.set_defaults(handler=run_generate)

    p = sub.add_parser("presets", help="list the presets")
    p.set_defaults(handler=run_presets)


def run_presets(args) -> int:
    from wizard.adapters.files.resources import load_preset_doc, preset_names

    for name in preset_names():
        print(f"{name:18} {load_preset_doc(name).get('description', '')}")
    return EXIT_OK


def run_generate(args) -> int:
    from wizard.adapters.files.disk import WriteError
    from wizard.core.verl import OverrideSyntaxError
    from wizard.usecases.plans import preset_plan
    from wizard.usecases.writing import write_plan

    if not args.out.strip():
        raise UsageError("--out needs a folder (it was empty)")
    cluster, gpus, _ = hardware(args)  # the same reading of --gpus as check and plan: an unknown GPU is refused
    try:
        plan = preset_plan(args.preset, gpus, args.sets)
    except OverrideSyntaxError as exc:
        raise UsageError(f"--set: {exc}") from None
    except ValueError as exc:
        raise UsageError(str(exc).splitlines()[0]) from None
    # the same full check as `check` and `plan` (memory on the GPUs named, data files on this machine)
    try:
        outcome = write_plan(plan, args.out, gpus=gpus, cluster=cluster, force=args.force)
    except WriteError as exc:
        raise UsageError(str(exc)) from None
    result, written = outcome.assessment, outcome.written
    if written is None:
        refuse_to_write(result.findings, f"preset {args.preset}", args.format, overrides=result.overrides)
        return EXIT_ERRORS
    if args.format == "json":
        doc = {"overrides": written.overrides, "files": written.files, "ok": result.ok,
               "findings": result.to_json()["findings"], "backups": written.backups, "notes": written.notes}
        print(json.dumps(doc))
    else:
        print_findings(result.findings, header=f"preset {args.preset}")
        for path in written.files:
            print(f"wrote {path}")
        for path in written.backups:
            print(f"kept the previous file as {path}")
        for note in written.notes:
            print(f"note: {note}")
        run_sh = next(f for f in written.files if f.endswith("run.sh"))
        print(f"Start it with: bash {run_sh}")
    return EXIT_OK if result.ok else EXIT_ERRORS
