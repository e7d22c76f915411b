"""The parent of every process the wizard starts for someone else's code (a verl run, a reward function): whatever
stops the wizard, nothing of what it started outlives it.

Run as a script (standard library only, ``python -I reaper.py --fd N [...] -- ARGV...``), it

- makes itself a child subreaper (``PR_SET_CHILD_SUBREAPER``): a descendant whose parent exits, one that called
  ``setsid()`` and a daemon that double-forked included, becomes its child instead of init's, so the whole tree
  stays findable under it through ``/proc``, whatever the descendants do to their sessions or environments;
- starts ARGV in its own process group and session (the reaper's: the wizard starts the reaper in a new one;
  stdin, stdout and stderr inherited), and exits with ARGV's
  status once ARGV has exited and what ARGV left running is ended (after ``--linger`` seconds: Ray's daemons get
  that long to go by themselves);
- holds the read end of a pipe whose write end only the wizard has (``--fd``): when the wizard ends in any way
  (a clean close, Ctrl-C, SIGTERM, SIGHUP, SIGKILL, a crash), the pipe reads end-of-file and the reaper ends the
  whole tree (SIGTERM, then SIGKILL after ``--grace`` seconds);
- on SIGTERM, SIGINT or SIGHUP ends the whole tree the same way;
- removes ``--remove DIR`` (the run's private Ray folder) once the tree is gone.

No parent-death signal (``PR_SET_PDEATHSIG``): it fires when the *thread* that forked exits, and the GUI starts runs
from worker threads.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import select
import shutil
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
_stop: list[int] = []


def _subreaper() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the wizard's own tracking (session, descendants, the run's mark) still applies


def _table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state) for every process /proc shows."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                raw = fh.read().decode("ascii", "replace")
        except OSError:
            continue
        rest = raw[raw.rfind(")") + 2:].split()
        try:
            out[int(name)] = (int(rest[1]), rest[0])
        except (IndexError, ValueError):
            continue
    return out


def descendants() -> list[int]:
    """This process's live descendants (zombies waiting to be reaped left out)."""
    table = _table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, stack = [], list(children.get(os.getpid(), ()))
    while stack:
        pid = stack.pop()
        if table[pid][1] != "Z":
            found.append(pid)
        stack.extend(children.get(pid, ()))
    return found


class Reaper:
    def __init__(self, child: subprocess.Popen):
        self.child = child
        self.status: int | None = None  # ARGV's wait status, once reaped

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.child.pid:
                self.status = status

    def end_tree(self, grace: float) -> None:
        """SIGTERM to every descendant (and whatever they start meanwhile), SIGKILL after ``grace`` seconds, until
        none is left."""
        deadline = time.monotonic() + grace
        sig = signal.SIGTERM if grace > 0 else signal.SIGKILL
        hit: set[int] = set()
        while True:
            self.reap()
            pids = descendants()
            if not pids:
                return
            if sig == signal.SIGTERM and time.monotonic() >= deadline:
                sig, hit = signal.SIGKILL, set()
            for pid in pids:
                if pid not in hit:
                    try:
                        os.kill(pid, sig)
                    except OSError:
                        pass
                    hit.add(pid)
            time.sleep(0.05)


def _on_signal(signum, frame) -> None:
    _stop.append(signum)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="reaper")
    p.add_argument("--fd", type=int, required=True)
    p.add_argument("--grace", type=float, default=10.0)
    p.add_argument("--linger", type=float, default=5.0)
    p.add_argument("--remove", default=None)
    p.add_argument("cmd", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    wake_r, wake_w = os.pipe()  # a signal (a child's end included) wakes the select below at once
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    _subreaper()
    try:
        child = subprocess.Popen(cmd, start_new_session=False)
    except OSError as exc:
        print(f"verl-wizard: cannot run {cmd[0] if cmd else '(nothing)'}: {exc.strerror or exc}", file=sys.stderr)
        _remove(args.remove)
        return 127
    reaper = Reaper(child)
    exited_at = None
    while True:
        reaper.reap()
        if _stop:
            _forward(_stop[0], child.pid)
            reaper.end_tree(args.grace)
            break
        if reaper.status is not None:
            exited_at = exited_at if exited_at is not None else time.monotonic()
            if not descendants() or time.monotonic() - exited_at >= args.linger:
                reaper.end_tree(min(args.grace, 2.0))
                break
        try:
            ready, _, _ = select.select([args.fd, wake_r], [], [], 0.5)
            if wake_r in ready:
                _drain(wake_r)
            if args.fd in ready and not os.read(args.fd, 64):  # the wizard is gone
                reaper.end_tree(args.grace)
                break
        except OSError:
            reaper.end_tree(args.grace)
            break
    reaper.reap()
    _remove(args.remove)
    if reaper.status is None:
        return 128 + (_stop[0] if _stop else signal.SIGKILL)
    code = os.waitstatus_to_exitcode(reaper.status)
    if code < 0:  # ended by a signal: end the same way, so the wizard sees what the run saw
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
        time.sleep(1)
    return code


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except (BlockingIOError, OSError):
        pass


def _forward(signum: int, pid: int) -> None:
    try:
        os.kill(pid, signum)
    except OSError:
        pass


def _remove(path: str | None) -> None:
    if path:
        shutil.rmtree(path, ignore_errors=True)


PROGRAM_ARG = "__reaper__"  # ``verl-wizard __reaper__ ...``: the reaper, where the program is no Python (the bundle)


def command(fd: int, argv: list[str], *, grace: float = 10.0, linger: float = 5.0,
            remove: str | None = None) -> list[str]:
    """The words that run ``argv`` under a reaper watching ``fd``: this file run by this Python (isolated: no
    site, no PYTHON* variables), or, in the desktop bundle (whose program is no Python), the program itself."""
    head = ([sys.executable, PROGRAM_ARG] if getattr(sys, "frozen", False)
            else [sys.executable, "-I", os.path.abspath(__file__)])
    words = [*head, "--fd", str(fd), "--grace", str(grace), "--linger", str(linger)]
    if remove:
        words += ["--remove", remove]
    return [*words, "--", *argv]


if __name__ == "__main__":
    sys.exit(main())
