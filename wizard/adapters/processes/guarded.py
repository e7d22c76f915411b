"""Run a process that executes someone else's code (a reward function, a probe in the user's Python), so that
whatever it does, the wizard stays whole and nothing of it is left behind.

- Its own session and process group, and a mark in its environment that every descendant inherits: a stop ends
  the group and every marked process, also one that started a session of its own (a daemon) or outlived its parent.
- Under a reaper (``reaper``: a child subreaper holding a pipe only the wizard writes to): a descendant that called
  ``setsid()`` and cleared its environment is still ended, and so is everything when the wizard itself is ended
  (Ctrl-C, SIGTERM, SIGHUP, SIGKILL) while the process runs.
- A time limit and a cancel: both end everything it started, and the wizard never waits for the end of a pipe a
  leftover grandchild still holds.
- A data limit (RLIMIT_DATA: the heap and private writable mappings, so not the address space CUDA reserves):
  an allocation past it fails inside that process (MemoryError), not the machine.
- A cap on captured output: past it, output is read and dropped (the process never blocks on a full pipe).
"""

from __future__ import annotations

import math
import os
import resource
import shutil
import signal
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass

from wizard.adapters.machine.procs import RUN_MARK, _has_mark, list_processes
from wizard.adapters.processes import reaper

MEMORY_BYTES = 16 * 1024**3  # a scorer that wants more has a bug (a tokenizer-based one needs ~2 GiB)
OUTPUT_BYTES = 8 * 1024**2  # per stream


@dataclass
class Guarded:
    returncode: int | None  # None: ended by the wizard (time limit or cancel)
    stdout: str
    stderr: str
    timed_out: bool = False
    cancelled: bool = False
    truncated: bool = False  # some output went past the cap and was dropped


def run_guarded(argv: list[str], *, input: str | None = None, timeout: float, env: dict | None = None,
                memory_bytes: int | None = MEMORY_BYTES, output_bytes: int = OUTPUT_BYTES,
                cancel: threading.Event | None = None) -> Guarded:
    """Run ``argv`` to its end, its time limit or ``cancel``; OSError when it cannot start."""
    mark = f"guarded-{uuid.uuid4().hex}"
    if not math.isfinite(timeout) or timeout <= 0:
        raise ValueError(f"a time limit must be a number of seconds more than 0, not {timeout}")
    program = argv[0] if os.sep in argv[0] else shutil.which(argv[0])
    if not program or not os.path.exists(program):
        raise FileNotFoundError(2, "No such file or directory", argv[0])
    if not os.access(program, os.X_OK) or os.path.isdir(program):
        raise PermissionError(13, "Permission denied", argv[0])
    read_end, lifeline = os.pipe()  # the reaper ends everything when this end closes, however the wizard ends
    try:
        proc = subprocess.Popen(reaper.command(read_end, argv, grace=0, linger=0),
                                stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env={**(env or os.environ), RUN_MARK: mark}, start_new_session=True,
                                preexec_fn=_limits(memory_bytes), pass_fds=(read_end,))
    except BaseException:
        os.close(lifeline)
        raise
    finally:
        os.close(read_end)
    try:
        readers = [_Reader(proc.stdout, output_bytes), _Reader(proc.stderr, output_bytes)]
        if input is not None:
            threading.Thread(target=_feed, args=(proc.stdin, input), daemon=True).start()
        deadline = time.monotonic() + timeout
        timed_out = cancelled = False
        while proc.poll() is None:
            if cancel is not None and cancel.is_set():
                cancelled = True
                break
            if time.monotonic() >= deadline:
                timed_out = True
                break
            try:
                proc.wait(timeout=0.05)  # returns as soon as it ends (a short poll inside), else checks again
            except subprocess.TimeoutExpired:
                pass
    finally:  # Ctrl-C (KeyboardInterrupt) on the way out included
        os.close(lifeline)  # the reaper ends its whole tree, then itself; killed first, it could not
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        end_all(proc, mark)  # and anything marked that is left (also when it ended by itself)
    out, err = (r.finish() for r in readers)
    return Guarded(None if (timed_out or cancelled) else proc.returncode, out, err, timed_out, cancelled,
                   any(r.dropped for r in readers))


def end_all(proc: subprocess.Popen, mark: str) -> None:
    """SIGKILL the process group and every process carrying ``mark``, until none is left (a few rounds)."""
    for _ in range(20):
        pids = {p.pid for p in list_processes().values() if p.state != "Z" and _has_mark(p.pid, mark)}
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            continue
        if not pids:
            return


def _limits(memory_bytes: int | None):
    def apply() -> None:
        if memory_bytes:
            resource.setrlimit(resource.RLIMIT_DATA, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


def _feed(pipe, text: str) -> None:
    try:
        pipe.write(text.encode("utf-8"))
        pipe.close()
    except (BrokenPipeError, OSError, ValueError):
        pass


class _Reader:
    """Reads one pipe to its end on a thread, keeping the first ``cap`` bytes."""

    def __init__(self, pipe, cap: int):
        self.pipe, self.cap, self.kept, self.size, self.dropped = pipe, cap, bytearray(), 0, False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while chunk := self.pipe.read1(65536):
                room = self.cap - len(self.kept)
                self.kept += chunk[:room]
                self.dropped |= len(chunk) > room
        except (OSError, ValueError):
            pass

    def finish(self) -> str:
        """The text read; a pipe still held open by something that could not be ended is closed, not waited on."""
        self.thread.join(timeout=5)
        if self.thread.is_alive():
            try:
                self.pipe.close()
            except OSError:
                pass
        return self.kept.decode("utf-8", "replace")
