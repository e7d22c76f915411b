"""verl-wizard's command line: the same core as the GUI, no Qt.

One module per sub-command (``check``, ``generate`` with ``presets``, ``plan``, ``detect``, ``doctor``,
``data``, ``launch``, ``cluster``, for a run's folder ``samples``, ``timing``, ``report``, and ``serve``, the resident checker), each with ``add_parser(subparsers)`` that sets its ``handler``; what they
share is in ``_common``. A handler that takes overrides after ``--`` is marked ``takes_overrides`` and called
``handler(args, tail)``; the others ``handler(args)``.

Exit codes: 0 no errors, 1 errors found, 2 bad usage or unreadable input (one line,
never a traceback), 3 an internal error (one line; VERL_WIZARD_DEBUG=1 shows the traceback).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from wizard import __version__
from wizard.cli._common import EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, Parser, UsageError, redacted_output

# (module, the sub-commands it adds): only the module of the command asked for is imported, so a command
# starts without the others' imports (see bench/bench_check.py for what start-up costs).
COMMANDS = (("check", ("check",)), ("generate", ("generate", "presets")), ("plan", ("plan",)),
            ("detect", ("detect",)), ("doctor", ("doctor",)), ("data", ("data",)), ("launch", ("launch",)),
            ("cluster", ("cluster",)), ("samples", ("samples",)), ("timing", ("timing",)), ("report", ("report",)),
            ("serve", ("serve",)))
NAMES = [name for _, names in COMMANDS for name in names]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with ``only`` the one sub-command's (the others listed, for --help, not built)."""
    p = Parser(prog="verl-wizard", description="Plan, check and write verl 0.9.1 RL post-training runs. With no "
               "arguments (or `verl-wizard gui`) it opens the window.")
    p.add_argument("--version", action="version", version=f"verl-wizard {__version__}")
    sub = p.add_subparsers(dest="command", parser_class=Parser, metavar="{" + ",".join(NAMES) + "}")
    for module, names in COMMANDS:
        if only is None or only in names:
            importlib.import_module(f"wizard.cli.{module}").add_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    with redacted_output():
        return _main(argv)


def _main(argv: list[str]) -> int:
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
    command = next((w for w in argv if not w.startswith("-")), None)
    args = build_parser(command if command in NAMES else None).parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        raise UsageError("give a command: " + ", ".join(NAMES[:-1]) + f" or {NAMES[-1]} (or no arguments for the GUI)")
    if getattr(args, "takes_overrides", False):
        return handler(args, tail)
    if tail:
        raise UsageError("only check and plan take overrides after --")
    return handler(args)
