"""verl-wizard's command line: the same core as the GUI, no Qt.

Exit codes: 0 no errors, 1 errors found, 2 bad usage or unreadable input (one line,
never a traceback), 3 an internal error (one line; VERL_WIZARD_DEBUG=1 shows the traceback).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from wizard import __version__

EXIT_OK, EXIT_ERRORS, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class UsageError(Exception):
    """Bad usage or unreadable input: one line for the user, exit 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line instead of usage + error
        raise UsageError(f"{message} (see {self.prog} --help)")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="verl-wizard", description="Plan, check and write verl 0.9.1 RL post-training runs.")
    p.add_argument("--version", action="version", version=f"verl-wizard {__version__}")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)

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

    g = sub.add_parser("generate", help="write run.sh, config.yaml and plan.json from a preset")
    g.add_argument("--preset", required=True, help="preset name (verl-wizard presets lists them)")
    g.add_argument("--gpus", metavar="SPEC", help="nodes and GPUs, e.g. 1, 8xH100-80GB, 2x8xH100-80GB")
    g.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="any verl override")
    g.add_argument("--out", required=True, metavar="DIR", help="folder to write into (existing files are backed up)")
    g.add_argument("--format", choices=("text", "json"), default="text")
    g.add_argument("--force", action="store_true", help="write even when the config has errors")

    sub.add_parser("presets", help="list the presets")
    from wizard.cli.detect import add_parsers as add_detect_parsers  # detect, doctor

    add_detect_parsers(sub)
    from wizard.cli.data import add_parsers as add_data_parsers  # data check|preview|convert|reward

    add_data_parsers(sub)
    from wizard.cli.launch import add_parsers as add_launch_parsers  # launch

    add_launch_parsers(sub)
    from wizard.cli.plan import add_parsers as add_plan_parsers  # plan

    add_plan_parsers(sub)
    from wizard.cli.cluster import add_parsers as add_cluster_parsers  # cluster

    add_cluster_parsers(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        return _dispatch(argv)
    except UsageError as exc:
        print(f"verl-wizard: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("verl-wizard: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and the like: not an error
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - Python flushes stdout at exit
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - never a traceback for users
        if os.environ.get("VERL_WIZARD_DEBUG"):
            raise
        print(f"verl-wizard: internal error: {type(exc).__name__}: {exc} (VERL_WIZARD_DEBUG=1 shows more)", file=sys.stderr)
        return EXIT_INTERNAL


def _dispatch(argv: list[str]) -> int:
    # everything after "--" is overrides, even words that look like options
    tail: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, tail = argv[:i], argv[i + 1 :]
    args = build_parser().parse_args(argv)
    if args.command == "check":
        from wizard.cli.check import run_check

        return run_check(args, tail)
    if args.command == "plan":
        return args.handler(args, tail)
    if tail:
        raise UsageError("only check and plan take overrides after --")
    if hasattr(args, "handler"):  # detect, doctor
        return args.handler(args)
    if args.command == "generate":
        return _generate(args)
    if args.command == "presets":
        return _presets()
    raise UsageError("give a command: check, plan, generate, presets, detect, doctor, data, launch or cluster "
                     "(or no arguments for the GUI)")


def parse_gpus(text: str | None):
    if text is None:
        return None
    from wizard.core.hardware.gpus import parse_gpu_spec

    try:
        return parse_gpu_spec(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _presets() -> int:
    from wizard.adapters.resources import load_preset_doc, preset_names

    for name in preset_names():
        print(f"{name:18} {load_preset_doc(name).get('description', '')}")
    return EXIT_OK


def _generate(args) -> int:
    from wizard.adapters.files import WriteError
    from wizard.adapters.generate import preset_plan, write_plan_files
    from wizard.adapters.checking import full_check
    from wizard.cli.check import print_findings
    from wizard.core.plan.emit import emit_overrides
    from wizard.core.verl.overrides import OverrideSyntaxError

    gpus = parse_gpus(args.gpus)
    try:
        plan = preset_plan(args.preset, gpus, args.sets)
    except OverrideSyntaxError as exc:
        raise UsageError(f"--set: {exc}") from None
    except ValueError as exc:
        raise UsageError(str(exc).splitlines()[0]) from None
    overrides = emit_overrides(plan).overrides
    result = full_check(overrides, config_name=plan.config_name, gpus=gpus)
    if not result.ok and not args.force:
        from wizard.cli.plans import refuse_to_write

        refuse_to_write(result.findings, f"preset {args.preset}", args.format, overrides=overrides)
        return EXIT_ERRORS
    try:
        written = write_plan_files(plan, args.out)
    except WriteError as exc:
        raise UsageError(str(exc)) from None
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
