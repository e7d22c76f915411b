"""Start, watch and stop a local verl run: one subprocess in its own session, its output line by line.

- The child runs in a new session (its own process group): Stop signals the whole group, SIGTERM first,
  SIGKILL after a grace period.
- Output is read in bounded chunks (``poll`` never blocks longer than its timeout, and reads at most
  ``max_read`` bytes per call, so a flood cannot freeze the caller), decoded with an incremental UTF-8
  decoder (a character split across two reads stays whole), split into lines at ``\\n`` and tqdm's ``\\r``;
  a line longer than ``max_line`` is cut rather than buffered forever.
- The processes the run starts are tracked (Linux ``/proc``: its session, and its descendants with their
  start times). A ``ray.init`` inside the run starts a local Ray instance whose processes are such
  descendants; whatever of them outlives the driver is ended too. ``ray stop`` is never called: it would
  end every Ray instance of this user on the machine, not only the one this run started.
- The run's command runs under a reaper (``reaper``): a child subreaper that holds one end of a pipe only the
  wizard writes to. Whatever ends the wizard (a clean close, Ctrl-C, SIGTERM, SIGHUP, SIGKILL), the reaper ends
  the run's whole tree, those that called ``setsid()`` or cleared their environment included.
- The run's Ray keeps its session (logs that hold verl's resolved config, sockets) in a private folder
  (``RAY_TMPDIR``, a fresh 0700 folder in /tmp: short, for Ray's socket paths), removed when the run ends: another
  user of the machine cannot read it.
- Every line goes to ``run.log`` in the run directory; values of secret environment variables the command
  reads are replaced by ``${NAME}`` first.
"""

from __future__ import annotations

import codecs
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from wizard.adapters.processes import reaper
from wizard.adapters.machine.procs import RUN_MARK, Proc, _has_mark, alive, list_processes  # noqa: F401 - re-exported
from wizard.adapters.processes.run_dir import LaunchError
from wizard.core.run import LOG
from wizard.core.secrets import redact

# what an earlier run in the same folder left (its record, GPU samples, generations, report): kept as .bak too
@dataclass
class _Stream:
    name: str
    decoder: codecs.IncrementalDecoder = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace"))
    partial: str = ""
    eof: bool = False


@dataclass
class StopReport:
    signalled: list[int]  # pids that got SIGTERM
    killed: list[int]  # pids that needed SIGKILL
    left: list[int]  # pids still alive afterwards (should be empty)


class RunProcess:
    """One run. ``start``, then call ``poll`` until ``finished``; ``stop`` at any time; ``close`` at the end."""

    def __init__(self, argv: list[str], *, env_add: dict[str, str], cwd: str | Path, run_dir: str | Path,
                 secrets: dict[str, str] | None = None, max_read: int = 1 << 20, chunk: int = 64 << 10,
                 max_line: int = 64 << 10, env_remove: tuple[str, ...] = ()) -> None:
        self.argv = argv
        self.env_add = dict(env_add)
        self.env_remove = env_remove
        self.cwd = str(cwd)
        self.run_dir = Path(run_dir)
        self.secrets = {k: v for k, v in (secrets or {}).items() if v}
        self.max_read, self.chunk, self.max_line = max_read, chunk, max_line
        self.proc: subprocess.Popen | None = None
        self.returncode: int | None = None
        self.stop_report: StopReport | None = None
        self._sel: selectors.BaseSelector | None = None
        self._streams: dict[int, _Stream] = {}
        self._log = None
        self._tracked: dict[int, int] = {}  # pid -> start time, every process seen belonging to the run
        self._last_scan = 0.0
        self._exited_at: float | None = None
        self._mark = uuid.uuid4().hex
        self._root_start: int | None = None
        self._lifeline: int | None = None  # the pipe end the reaper watches: closed, the run ends
        self.write_error: str | None = None  # run.log could not be written (a full disk): one line, for the caller
        self.ray_tmp: str | None = None  # the run's private Ray folder

    # -- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k not in self.env_remove}
        env.update(self.env_add)
        env[RUN_MARK] = self._mark  # inherited by every process of the run, daemons that left it included
        self.run_dir.mkdir(parents=True, exist_ok=True)
        program = self.argv[0] if os.sep in self.argv[0] else shutil.which(self.argv[0], path=env.get("PATH"))
        if not program or not os.path.isfile(program) or not os.access(program, os.X_OK):
            reason = "not executable" if program and os.path.isfile(program) else "no such file"
            raise LaunchError(f"cannot run {self.argv[0]}: {reason}")
        try:
            self.ray_tmp = private_tmp("vw-ray-")
        except OSError as exc:
            raise LaunchError(f"cannot make the run's private Ray folder: {exc.strerror or exc}") from None
        env["RAY_TMPDIR"] = self.ray_tmp  # Ray's session folder: logs, sockets; its own folders there are 0777
        try:
            self._log = open(self.run_dir / LOG, "a", encoding="utf-8", errors="replace")
        except OSError:
            self._let_go()
            raise
        read_end, self._lifeline = os.pipe()
        try:
            self.proc = subprocess.Popen(reaper.command(read_end, self.argv, remove=self.ray_tmp), cwd=self.cwd,
                                         env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, start_new_session=True, pass_fds=(read_end,))
        except OSError as exc:
            self._log.close()
            self._let_go()
            raise LaunchError(f"cannot run {self.argv[0]}: {exc.strerror or exc}") from None
        finally:
            os.close(read_end)
        self._sel = selectors.DefaultSelector()
        for name, pipe in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr)):
            os.set_blocking(pipe.fileno(), False)
            self._streams[pipe.fileno()] = _Stream(name)
            self._sel.register(pipe.fileno(), selectors.EVENT_READ)
        self._scan(force=True)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def finished(self) -> bool:
        """The child has exited and its output is read (or, when processes it left keep the pipes open,
        those processes have been ended)."""
        return self.returncode is not None and all(s.eof for s in self._streams.values())

    def poll(self, timeout: float = 0.5) -> list[tuple[str, str]]:
        """Lines that arrived, as (stream, line), waiting at most ``timeout`` seconds for the first."""
        assert self.proc is not None and self._sel is not None, "start() first"
        lines: list[tuple[str, str]] = []
        budget = self.max_read
        wait = timeout
        while budget > 0 and self._sel.get_map():
            ready = self._sel.select(wait)
            if not ready:
                break
            wait = 0
            for key, _ in ready:
                budget -= self._read(key.fd, lines)
        self._scan()
        if self.returncode is None and self.proc.poll() is not None:
            self.returncode = self.proc.returncode
            self._exited_at = time.monotonic()
        if self.returncode is not None and not self.finished:
            self._after_exit(lines)
        return lines

    def _read(self, fd: int, lines: list[tuple[str, str]]) -> int:
        stream = self._streams[fd]
        try:
            data = os.read(fd, self.chunk)
        except BlockingIOError:
            return 0
        except OSError:
            data = b""
        if not data:
            self._eof(fd, lines)
            return 1
        text = stream.decoder.decode(data)
        self._split(stream, text, lines)
        return len(data)

    def _split(self, stream: _Stream, text: str, lines: list[tuple[str, str]], final: bool = False) -> None:
        buf = stream.partial + text
        if "\r" in buf:
            buf = buf.replace("\r\n", "\n").replace("\r", "\n")
        parts = buf.split("\n")
        stream.partial = "" if final else parts.pop()
        while len(stream.partial) > self.max_line:  # flood guard: a line without end is cut, not hoarded
            parts.append(stream.partial[: self.max_line])
            stream.partial = stream.partial[self.max_line:]
        for line in parts:
            if final and not line:
                continue
            while len(line) > self.max_line:
                self._emit(stream.name, line[: self.max_line], lines)
                line = line[self.max_line:]
            self._emit(stream.name, line, lines)

    def _emit(self, name: str, line: str, lines: list[tuple[str, str]]) -> None:
        if self.secrets:
            line = redact(line, self.secrets)
        lines.append((name, line))
        self._write(line)

    def _write(self, line: str, flush: bool = False) -> None:
        """A line into run.log; a write that fails (a full disk) is said once in ``write_error``, and the log
        closed: the caller decides what becomes of the run."""
        if not self._log:
            return
        try:
            self._log.write(line + "\n")
            if flush:
                self._log.flush()
        except OSError as exc:
            self.write_error = f"cannot write {self.run_dir / LOG}: {exc.strerror or exc}"
            log, self._log = self._log, None
            try:
                log.close()
            except OSError:
                pass

    def note(self, text: str) -> None:
        """A line of the wizard's own in run.log (why the run was stopped)."""
        self._write(f"verl-wizard: {text}", flush=True)

    def _eof(self, fd: int, lines: list[tuple[str, str]]) -> None:
        stream = self._streams[fd]
        if stream.eof:
            return
        self._split(stream, stream.decoder.decode(b"", final=True), lines, final=True)
        stream.eof = True
        if self._sel:
            self._sel.unregister(fd)
        if self._log:
            try:
                self._log.flush()
            except OSError as exc:
                self.write_error = f"cannot write {self.run_dir / LOG}: {exc.strerror or exc}"

    def _after_exit(self, lines: list[tuple[str, str]], linger: float = 5.0) -> None:
        """The driver is gone. Its own Ray instance normally dies with it; what is left of the run after
        ``linger`` seconds (and still holds our pipes) is ended."""
        if self._exited_at is not None and time.monotonic() - self._exited_at >= linger:
            self._end_leftovers(grace=2.0)
            self.drain(lines)
            for fd in list(self._streams):  # a holder outside the run's tree: stop listening, do not hang
                self._eof(fd, lines)

    # -- processes of the run --------------------------------------------------------------------------------

    def _scan(self, force: bool = False) -> None:
        """Remember every process of the run: its session (the group Stop signals) and its descendants
        (a process that made its own session, as some daemons do, is still a descendant)."""
        now = time.monotonic()
        if not force and now - self._last_scan < 1.0:
            return
        self._last_scan = now
        if self.proc is None:
            return
        procs = list_processes()
        root = self.proc.pid
        if self._root_start is None and root in procs:
            self._root_start = procs[root].start
        children: dict[int, list[int]] = {}
        for p in procs.values():
            children.setdefault(p.ppid, []).append(p.pid)
        stack = [root] + [p.pid for p in procs.values() if p.session == root]
        # a process whose parent exited before any scan saw it (a daemon that made its own session) is no
        # descendant any more; the run's mark in its environment still names it
        since = self._root_start
        stack += [p.pid for p in procs.values() if since is not None and p.start >= since
                  and p.pid not in self._tracked and _has_mark(p.pid, self._mark)]
        seen: set[int] = set()
        while stack:
            pid = stack.pop()
            p = procs.get(pid)
            if p is None or pid in seen:
                continue
            seen.add(pid)
            if p.state != "Z":
                self._tracked[pid] = p.start
            stack.extend(children.get(pid, ()))

    def run_processes(self) -> list[int]:
        """The run's processes alive now (the driver included while it lives)."""
        self._scan(force=True)
        return sorted(pid for pid, start in self._tracked.items() if alive(pid, start))

    def _signal(self, sig: int, pids: list[int], group: bool = True) -> list[int]:
        hit = []
        if group and self.proc is not None:
            try:
                os.killpg(self.proc.pid, sig)  # the group is the session leader's pid
            except (ProcessLookupError, PermissionError):
                pass
        for pid in pids:
            start = self._tracked.get(pid)
            if alive(pid, start):
                try:
                    os.kill(pid, sig)
                    hit.append(pid)
                except (ProcessLookupError, PermissionError):
                    pass
        return hit

    def _wait_gone(self, deadline: float) -> list[int]:
        while True:
            if self.proc is not None and self.returncode is None and self.proc.poll() is not None:
                self.returncode = self.proc.returncode
                self._exited_at = time.monotonic()
            left = [pid for pid, start in self._tracked.items() if alive(pid, start)]
            if not left or time.monotonic() >= deadline:
                return left
            time.sleep(0.05)

    def _pipe_holders(self) -> None:
        """Track processes that hold the run's output pipes: a process that left the session and whose parent
        exited before a scan saw it is still found this way."""
        inodes = set()
        for fd in self._streams:
            try:
                inodes.add(f"pipe:[{os.fstat(fd).st_ino}]")
            except OSError:
                pass
        if not inodes:
            return
        for pid, p in list_processes().items():
            if pid == os.getpid() or p.state == "Z":
                continue
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                        self._tracked[pid] = p.start
                        break
                except OSError:
                    continue

    def _end_leftovers(self, grace: float) -> StopReport:
        signalled = self._signal_until_gone(signal.SIGTERM, grace)
        left = self._wait_gone(time.monotonic())
        killed = self._signal_until_gone(signal.SIGKILL, 5.0) if left else []
        left = self._wait_gone(time.monotonic())
        return StopReport(signalled=signalled, killed=killed, left=left)

    def _signal_until_gone(self, sig: int, seconds: float) -> list[int]:
        """Send ``sig`` to every process of the run, and to any the run starts meanwhile (Ray spawns daemons
        while it starts), until none is left or ``seconds`` have passed; the pids signalled."""
        hit: list[int] = []
        first = True  # the whole process group once; later rounds only what appeared since
        deadline = time.monotonic() + seconds
        while True:
            self._scan(force=True)
            self._pipe_holders()
            pids = [pid for pid, start in self._tracked.items() if alive(pid, start) and pid not in hit]
            root = self.proc.pid if self.proc is not None else None
            if sig == signal.SIGKILL and any(pid != root for pid in pids):
                # the reaper last: while it lives, an orphan of the run becomes its child, not init's, and is found
                pids = [pid for pid in pids if pid != root]
                first = False
            hit += self._signal(sig, pids, group=first)
            first = False
            if not self._wait_gone(min(deadline, time.monotonic() + 0.25)) or time.monotonic() >= deadline:
                return hit

    def stop(self, grace: float = 10.0) -> StopReport:
        """End the run: SIGTERM to its process group and every process it started, SIGKILL to whatever is
        left after ``grace`` seconds. Safe to call more than once, and after the run ended by itself."""
        if self.proc is None:
            return StopReport([], [], [])
        self.stop_report = self._end_leftovers(grace)
        if self.returncode is None:
            try:
                self.returncode = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        return self.stop_report

    def drain(self, lines: list[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
        """After ``stop``: whatever output is still in the pipes."""
        lines = [] if lines is None else lines
        for fd in list(self._streams):
            while not self._streams[fd].eof:
                try:
                    data = os.read(fd, self.chunk)
                except BlockingIOError:
                    break
                if data:
                    self._split(self._streams[fd], self._streams[fd].decoder.decode(data), lines)
                else:
                    self._eof(fd, lines)
        return lines

    def close(self) -> None:
        if self._sel is not None:
            self._sel.close()
            self._sel = None
        if self.proc is not None:
            for pipe in (self.proc.stdout, self.proc.stderr):
                if pipe:
                    pipe.close()
        if self._log:
            try:
                self._log.close()
            except OSError as exc:
                self.write_error = f"cannot write {self.run_dir / LOG}: {exc.strerror or exc}"
            self._log = None
        self._let_go()

    def _let_go(self) -> None:
        """Close the reaper's pipe (it ends whatever of the run is left) and remove the private Ray folder."""
        if self._lifeline is not None:
            os.close(self._lifeline)
            self._lifeline = None
        if self.ray_tmp and (self.proc is None or self.proc.poll() is not None):
            shutil.rmtree(self.ray_tmp, ignore_errors=True)

    def __enter__(self) -> RunProcess:
        return self

    def __exit__(self, *exc) -> None:
        if self.proc is not None and (self.returncode is None or self.run_processes()):
            self.stop(grace=5.0)
        self.close()


def private_tmp(prefix: str) -> str:
    """A fresh folder only this user can enter (0700), in /tmp when it can be written (a short path: Ray's socket
    paths must stay under 108 bytes), else in the system's temporary folder."""
    base = "/tmp" if os.access("/tmp", os.W_OK | os.X_OK) else None
    return tempfile.mkdtemp(prefix=prefix, dir=base)


__all__ = ["RunProcess", "StopReport", "alive", "list_processes", "private_tmp"]
