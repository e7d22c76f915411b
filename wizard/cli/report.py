"""``verl-wizard report RUN_DIR``: one Markdown file to paste into an issue (versions, GPUs, the plan's overrides,
findings, triage, timing with the forecast, the last 200 log lines), with every secret redacted.

Exit codes: 0 written, 2 no run folder, or the report could not be written (one line).
"""

from __future__ import annotations

import json
import sys

from wizard.cli._common import EXIT_OK, UsageError, read_run_dir


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("report", help="a Markdown report of a run to paste into an issue, secrets redacted")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run folder (run.log, metrics.jsonl, ...)")
    p.add_argument("--out", metavar="FILE", help="where to write it (default RUN_DIR/report.md; - for stdout)")
    p.add_argument("--python", metavar="PATH", help="probe this Python for the versions (when the run did not record them)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=run_report)


def run_report(args) -> int:
    from wizard.adapters.files.disk import WriteError
    from wizard.usecases.runs import report_text, write_run_report

    record = read_run_dir(args.run_dir)
    environment = _environment(record, args.python)
    if args.out == "-":
        sys.stdout.write(report_text(record, environment))
        return EXIT_OK
    try:
        path, text = write_run_report(record, environment, args.out)
    except WriteError as exc:
        raise UsageError(str(exc)) from None
    lines = text.count("\n")
    if args.format == "json":
        print(json.dumps({"ok": True, "path": str(path), "lines": lines}))
    else:
        print(f"wrote {path} ({lines} lines): paste it into an issue (secrets are redacted; read it first anyway)")
    return EXIT_OK


def _environment(record, python: str | None) -> dict | None:
    if python is None:
        return record.meta.environment if record.meta else None
    from wizard.adapters.verl_env.doctor import DoctorError, run_probe
    from wizard.core.run import environment_summary

    try:
        return environment_summary(run_probe(python, timeout=60, imports=False))
    except DoctorError as exc:
        raise UsageError(str(exc)) from None
