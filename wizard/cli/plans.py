"""Reading a plan from the command line: a preset name or a file, then --gpus and --set (one place for all)."""

from __future__ import annotations

import json
from pathlib import Path


def load_plan_arg(source: str | None = None, preset: str | None = None, gpus=None, sets: list[str] | None = None):
    """(Plan, findings of reading it). ``source`` may be a file or a preset name. UsageError (one line) otherwise."""
    from wizard.adapters.generate import plan_with_gpus, preset_plan
    from wizard.adapters.resources import preset_names
    from wizard.adapters.sources import load_source
    from wizard.cli import UsageError
    from wizard.core.verl.overrides import OverrideSyntaxError
    from wizard.core.plan.convert import apply_overrides

    if source and not preset and not Path(source).exists():
        if source in preset_names():
            source, preset = None, source  # a bare preset name where a file was expected
        elif "/" not in source and not Path(source).suffix:
            raise UsageError(f"{source!r} is neither a file nor a preset; presets: {', '.join(preset_names())}")
    if bool(preset) == bool(source):
        raise UsageError("give one of --preset NAME or a file (a plan .json/.yaml, a run.sh or a YAML config)")
    findings = []
    try:
        if preset:
            plan = preset_plan(preset, gpus, sets or [])
        else:
            src = load_source(source)
            findings = src.findings
            plan = src.to_plan(name=Path(source).stem)
            if gpus is not None:
                plan = plan_with_gpus(plan, gpus)
            if sets:
                plan = apply_overrides(plan, sets)
    except OverrideSyntaxError as exc:
        raise UsageError(f"--set: {exc}") from None
    except ValueError as exc:
        raise UsageError(str(exc).splitlines()[0]) from None
    return plan, findings


def refuse_to_write(findings, header: str, fmt: str, **json_fields) -> None:
    """Say why nothing was written (errors in the config), as text or as the command's JSON."""
    from wizard.cli.check import print_findings

    if fmt == "json":
        print(json.dumps({"ok": False, "files": [], "findings": [f.to_json() for f in findings], **json_fields}))
    else:
        print_findings(findings, header=header)
        print("Nothing written: fix the errors above (with --set KEY=VALUE), or pass --force.")
