"""``verl-wizard serve``: keep a checker resident, so that ``verl-wizard check`` answers in tens of milliseconds
(the schema, Hydra and pydantic stay loaded; see wizard/adapters/processes/resident.py for how a check finds it).

    verl-wizard serve [--idle-minutes N] [--background]     start (in the foreground unless --background)
    verl-wizard serve --status | --stop

A check the server cannot answer as a process would (``--verl``, ``--batch``, a script on stdin) runs in its own
process as before; so does every check while no server of this very code runs (after an upgrade or an edit the old
server is never asked, and ends when idle). Exit codes: 0 served / stopped / running, 1 not running (--status,
--stop), 2 cannot start (one line).
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time

from wizard.cli._common import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, UsageError


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("serve", help="keep a checker resident so that check answers in milliseconds")
    p.add_argument("--idle-minutes", type=float, default=30.0, metavar="N",
                   help="end after N minutes without a check (default 30)")
    p.add_argument("--background", action="store_true", help="start it detached and return once it answers")
    p.add_argument("--status", action="store_true", help="say whether a server of this code runs")
    p.add_argument("--stop", action="store_true", help="end the server of this code")
    p.set_defaults(handler=run_serve)


def run_serve(args) -> int:
    from wizard.adapters.processes import resident

    if args.idle_minutes <= 0 or args.idle_minutes > 7 * 24 * 60:
        raise UsageError("--idle-minutes takes a number of minutes above 0 and at most a week")
    if args.status:
        state = resident.status()
        n = state.get("answered", 0) if state else 0
        said = ("not running" if not state else "running but not answering (suspended?); verl-wizard serve --stop "
                "ends it" if state.get("silent") else f"running, {n} check{'' if n == 1 else 's'} answered")
        print(f"verl-wizard serve: {said} ({resident.socket_path()})")
        return EXIT_OK if state and not state.get("silent") else EXIT_ERRORS
    if args.stop:
        stopped, said = resident.stop()
        print(f"verl-wizard serve: {said}")
        return EXIT_OK if stopped else EXIT_ERRORS
    if args.background:
        return _background(args.idle_minutes, resident)
    os.chdir("/")  # hold no folder (a mount) busy; each check runs in its client's folder
    _streams.install()
    _warm()
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, _interrupt)
    from wizard.adapters.processes import resident_server

    try:
        resident_server.serve(answer, idle_s=60 * args.idle_minutes,
                       ready=lambda path: print(f"verl-wizard serve: answering check on {path} (ends after "
                                                f"{args.idle_minutes:g} idle minutes, or verl-wizard serve --stop)",
                                                flush=True))
    except resident.ServerError as exc:
        print(f"verl-wizard serve: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except _Stop:
        pass
    return EXIT_OK


class _Stop(BaseException):
    """A signal to end the server: not an Exception, so no check in progress catches it (the CLI turns
    KeyboardInterrupt into "interrupted"); the client of that check gets no answer and runs it itself."""


def _interrupt(signum, frame):
    raise _Stop


class _Switch(io.TextIOBase):
    """sys.stdout / sys.stderr for the server's life: writes go to the current check's buffer. A library that
    kept the stream it found at import (a logging handler) then writes into the check in progress, never into
    the first check's buffer."""

    def __init__(self, real):
        self.real, self.target = real, real

    def write(self, text: str) -> int:
        return self.target.write(text)

    def flush(self) -> None:
        self.target.flush()

    def isatty(self) -> bool:
        return False


class _Streams:
    out: _Switch | None = None
    err: _Switch | None = None

    def install(self) -> None:
        if self.out is None:
            self.out, self.err = _Switch(sys.stdout), _Switch(sys.stderr)
            sys.stdout, sys.stderr = self.out, self.err


_streams = _Streams()


def _background(idle_minutes: float, resident) -> int:
    if resident.running():
        print(f"verl-wizard serve: already running ({resident.socket_path()})")
        return EXIT_OK
    # -P: never a wizard.py of the caller's folder; cwd /: no folder held busy; what it says goes to a log beside
    # its socket (a pipe would break once this process is gone)
    cmd = [sys.executable, "-P", "-m", "wizard", "serve", "--idle-minutes", f"{idle_minutes:g}"]
    try:
        folder = resident.private_dir()  # another user's folder, or a link, is refused: nothing is written there
        fd = resident.open_log(folder)
    except resident.ServerError as exc:
        print(f"verl-wizard serve: {exc}", file=sys.stderr)
        return EXIT_USAGE
    start = os.lseek(fd, 0, os.SEEK_END)
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=fd, stderr=fd, cwd="/", start_new_session=True)
    finally:
        os.close(fd)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if resident.running():
            print(f"verl-wizard serve: running in the background, pid {proc.pid} ({resident.socket_path()})")
            return EXIT_OK
        if proc.poll() is not None:
            said = _log_tail(folder, start)
            print(f"verl-wizard serve: could not start: {said[-1] if said else f'exit code {proc.returncode}'}",
                  file=sys.stderr)
            return EXIT_USAGE
        time.sleep(0.1)
    proc.kill()
    print("verl-wizard serve: could not start within a minute", file=sys.stderr)
    return EXIT_USAGE


def _log_tail(folder, start: int) -> list[str]:
    """The lines the server wrote to its log from ``start`` (at most 64 KiB of them, never through a link)."""
    try:
        fd = os.open(folder / "serve.log", os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return []
    try:
        return os.pread(fd, 65536, start).decode(errors="replace").strip().splitlines()
    finally:
        os.close(fd)


def _warm() -> None:
    """Load what a check needs (the schema, the model catalogue, the memory estimate) before the first request."""
    for argv in (["check", "--", "trainer.nnodes=1"], ["check", "--preset", "grpo-1gpu-smoke", "--gpus", "1xH100-80GB"]):
        answer({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)})


def answer(request: dict) -> dict:
    """Run one forwarded check here as its own process would have: its folder, its environment, its output."""
    from wizard.adapters.processes.resident import forwardable
    from wizard.cli import main

    argv, cwd, env = request.get("argv"), request.get("cwd"), request.get("env")
    if not (isinstance(argv, list) and all(isinstance(a, str) for a in argv) and forwardable(argv)
            and isinstance(cwd, str) and isinstance(env, dict)):
        return {"rc": None}  # the client runs it itself
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    if any(not k or "=" in str(k) or "\0" in str(k) or "\0" in str(v) for k, v in env.items()):
        return {"rc": None}  # nothing a process's environment can hold: the client runs it itself
    try:
        os.chdir(cwd)
    except (OSError, ValueError):  # gone, not a folder, a NUL byte
        return {"rc": None}
    switched = _streams.out is not None
    saved_streams = (_streams.out.target, _streams.err.target) if switched else (sys.stdout, sys.stderr)
    try:
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
        if switched:
            _streams.out.target, _streams.err.target = out, err
        else:
            sys.stdout, sys.stderr = out, err
        try:
            rc = main(list(argv))
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except Exception as exc:  # noqa: BLE001 - VERL_WIZARD_DEBUG=1 re-raises in the CLI: one answer, never a dead server
            import traceback

            err.write(traceback.format_exc() if os.environ.get("VERL_WIZARD_DEBUG") else
                      f"verl-wizard: internal error: {type(exc).__name__}: {exc} (VERL_WIZARD_DEBUG=1 shows more)\n")
            rc = 3
    finally:
        if switched:
            _streams.out.target, _streams.err.target = saved_streams
        else:
            sys.stdout, sys.stderr = saved_streams
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
    return {"rc": rc, "stdout": out.getvalue(), "stderr": err.getvalue()}
