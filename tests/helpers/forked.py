"""The program run in a process of its own per call, forked from a Python that has imported the wizard already.

A hostile-input case is a whole process, as a user's call is: its own session, a memory cap, stdin/stdout/stderr of
its own, exit code and all (tests/cli/test_hostile_input.py). Starting ``python -m wizard`` for each one costs the
interpreter's start and the imports (most of a case's time); a fork of a process that imported every non-GUI module
of the wizard, and ran none of it, costs neither. The child then does what ``python -m wizard ARGS``
(wizard/__main__.py) does: ``raise SystemExit(main())``, the interpreter ending as usual (a traceback for an exception
nobody caught, exit handlers, threads joined). The entry points themselves are started by
tests/cli/test_cli.py::test_the_installed_entry_points_start.
"""

from __future__ import annotations

import json
import locale
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.cli import ROOT, process_env

_SERVER = r"""
import json, os, resource, select, signal, sys, time
from pathlib import Path

root = Path(sys.argv[1])
for path in sorted((root / "wizard").rglob("*.py")):  # import, never run, every module a command may use
    name = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
    if not name.startswith(("wizard.gui", "wizard.adapters.verl_env.probes", "wizard.__main__")):
        try:
            __import__(name)
        except ImportError:  # a missing optional library: the call that needs it imports it, and says so
            pass
requests, replies = os.fdopen(os.dup(0), "r"), os.dup(1)
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 0)
os.dup2(null, 1)  # nothing but the replies on the reply pipe


def wait(pid, timeout):  # the child's wait status, or None past the time limit (it is killed then)
    deadline = time.monotonic() + timeout
    pidfd = os.pidfd_open(pid) if hasattr(os, "pidfd_open") else None
    try:
        while time.monotonic() < deadline:
            if pidfd is not None:
                select.select([pidfd], [], [], max(0.0, deadline - time.monotonic()))
            else:
                time.sleep(0.005)
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                return status
    finally:
        if pidfd is not None:
            os.close(pidfd)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


os.write(replies, b"ready\n")
for line in requests:
    req = json.loads(line)
    pid = os.fork()
    if pid == 0:
        os.close(replies)
        requests.close()
        os.setsid()
        resource.setrlimit(resource.RLIMIT_AS, (req["memory"], req["memory"]))
        for fd, path, flags in ((0, req["stdin"], os.O_RDONLY), (1, req["stdout"], os.O_WRONLY | os.O_TRUNC),
                                (2, req["stderr"], os.O_WRONLY | os.O_TRUNC)):
            os.dup2(os.open(path, flags), fd)
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        sys.argv = [str(root / "wizard" / "__main__.py"), *req["argv"]]
        from wizard.app import main
        raise SystemExit(main())  # wizard/__main__.py
    status = wait(pid, req["timeout"])
    os.write(replies, (json.dumps({"pid": pid, "status": None if status is None else os.waitstatus_to_exitcode(status)})
                       + "\n").encode())
"""


@dataclass
class Finished:
    pid: int  # the process (and its session) that ran the call
    returncode: int | None  # as subprocess gives it (negative: a signal); None: it ran past the time limit
    stdout: str
    stderr: str


def _text(path: Path) -> str:
    return path.read_bytes().decode(locale.getpreferredencoding(False))  # as subprocess's text=True reads it


class Forker:
    """One server process; :meth:`run` forks it once per call."""

    def __init__(self, env_add: dict[str, str] | None = None, unset: tuple[str, ...] = ()) -> None:
        self.env = {k: v for k, v in process_env(**(env_add or {})).items() if k not in unset}
        self.proc = subprocess.Popen([sys.executable, "-c", _SERVER, ROOT], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=self.env)
        if self.proc.stdout.readline().strip() != "ready":
            self.close()
            raise RuntimeError("the forking server did not start")
        self.folder = Path(tempfile.mkdtemp(prefix="verl-wizard-forked-"))

    def run(self, args, *, cwd, stdin: str | None = None, memory: int, timeout: float) -> Finished:
        out, err, inp = self.folder / "stdout", self.folder / "stderr", self.folder / "stdin"
        for path in (out, err):
            path.write_bytes(b"")
        inp.write_text(stdin or "")
        req = {"argv": [str(a) for a in args], "cwd": str(cwd), "env": self.env, "stdin": str(inp) if stdin else os.devnull,
               "stdout": str(out), "stderr": str(err), "memory": memory, "timeout": timeout}
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        reply = json.loads(self.proc.stdout.readline())
        return Finished(reply["pid"], reply["status"], _text(out), _text(err))

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()
        folder = getattr(self, "folder", None)
        if folder is not None:
            for path in folder.iterdir():
                path.unlink()
            folder.rmdir()
