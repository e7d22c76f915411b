"""The program's front door: no arguments opens the GUI, anything else is the CLI."""

from __future__ import annotations

import sys


def run_gui(argv: list[str]) -> int:
    try:
        from wizard.gui.main import main as gui_main
    except ImportError as exc:
        print(f"verl-wizard: the GUI needs PySide6 ({exc}); install with: pip install 'verl-wizard[gui]'", file=sys.stderr)
        return 2
    return gui_main(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["__reaper__"]:  # the desktop bundle runs a run's reaper through its own program
        from wizard.adapters.processes import reaper

        return reaper.main(argv[1:])
    if not argv or argv[0] in ("gui", "--screenshots"):
        return run_gui(argv[1:] if argv[:1] == ["gui"] else argv)
    if argv[0] == "check":  # a resident checker of this code answers in milliseconds (verl-wizard serve)
        from wizard.adapters.processes.resident import forward

        rc = forward(argv)
        if rc is not None:
            return rc
    from wizard.cli import main as cli_main

    return cli_main(argv)
