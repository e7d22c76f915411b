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
    """``preexec_fn`` for a child that must die of SIGHUP as in a terminal: a test run under ``nohup`` (CI in the
    background) hands its children SIGHUP ignored, and an ignored SIGHUP stays ignored through exec."""
    import signal

    signal.signal(signal.SIGHUP, signal.SIG_DFL)
