"""Processes a test started and expects gone: found by a marker in their command line."""

from __future__ import annotations

import subprocess
import time


def left(marker: str, wait: float = 60.0) -> list[str]:
    """The pids of ``sleep MARKER`` processes still running after up to ``wait`` seconds ([] as soon as none)."""
    deadline = time.monotonic() + wait
    while True:
        pids = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True).stdout.split()
        if not pids or time.monotonic() > deadline:
            return pids
        time.sleep(0.1)


def default_hangup() -> None:
    """``preexec_fn`` for a child that must die of SIGHUP, or take Ctrl-C's SIGINT, as in a terminal: a test run under
    ``nohup`` (CI in the background) hands its children SIGHUP ignored, a shell's background job (``cmd &``) hands
    them SIGINT ignored, and an ignored signal stays ignored through exec (Python then installs no KeyboardInterrupt
    handler)."""
    import signal

    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def killed_while_writing(code: str, args: list[str], env: dict, written, times: int, spread: int):
    """Start ``python -c code *args`` ``times`` times and SIGKILL each once the file ``written(proc)`` exists, at
    0.05 s steps after that (``n % spread`` of them, so the kill lands at different points of a write); yields that
    file after each kill, for the test to read."""
    import signal
    import sys
    from pathlib import Path

    for n in range(times):
        proc = subprocess.Popen([sys.executable, "-c", code, *args], env=env)
        path: Path = written(proc)
        deadline = time.monotonic() + 60
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.05 * (n % spread))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        yield path
