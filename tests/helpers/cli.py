"""The command line in this process, as a user calls it: ``main(argv)`` with stdout and stderr captured.

Starting a Python per call cost most of the CLI tests' time; the entry point itself (``python -m wizard``, the
console script) keeps a test of its own (tests/cli/test_cli.py::test_the_installed_entry_points_start).
"""

from __future__ import annotations

import io
import os
import warnings
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def process_env(**add: str) -> dict[str, str]:
    """The environment for a program of this checkout in a process of its own (``python -m wizard``, the console
    script): this checkout first on PYTHONPATH, whatever folder the process starts in, since the venv's editable
    install may point at another checkout of the wizard."""
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **add}


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def run_cli(*args, cwd=None, env: dict | None = None, unset: tuple[str, ...] = ("RAY_ADDRESS",)) -> Result:
    """Exit code, stdout and stderr of ``verl-wizard ARGS`` run in-process, in ``cwd`` with ``env`` added."""
    from wizard.app import main

    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    try:
        for name in unset:
            os.environ.pop(name, None)
        os.environ.update(env or {})
        if cwd is not None:
            os.chdir(cwd)
        with redirect_stdout(out), redirect_stderr(err), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                code = main([str(a) for a in args])
            except SystemExit as exc:  # argparse's --help and --version
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return Result(code, out.getvalue(), err.getvalue())
