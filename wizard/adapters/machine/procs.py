"""The machine's processes as /proc shows them: what a run's Stop needs to find and end every one of them."""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    pgrp: int
    session: int
    start: int  # start time in clock ticks since boot: tells a reused pid apart
    state: str


def _read_stat(pid: int) -> Proc | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    rest = raw[raw.rfind(")") + 2:].split()  # the command name may hold spaces and parentheses
    try:
        return Proc(pid=pid, ppid=int(rest[1]), pgrp=int(rest[2]), session=int(rest[3]), start=int(rest[19]),
                    state=rest[0])
    except (IndexError, ValueError):
        return None


def list_processes() -> dict[int, Proc]:
    """Every process this machine shows in /proc (empty where there is no /proc)."""
    out = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if name.isdigit():
            p = _read_stat(int(name))
            if p is not None:
                out[p.pid] = p
    return out


RUN_MARK = "VERL_WIZARD_RUN"  # environment variable naming one run, on every process it starts


def _has_mark(pid: int, mark: str) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return f"{RUN_MARK}={mark}".encode() in fh.read().split(b"\0")
    except OSError:
        return False


def alive(pid: int, start: int | None = None) -> bool:
    """The process exists, is not a zombie, and (when ``start`` is given) is the same process."""
    p = _read_stat(pid)
    if p is None:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return not os.path.isdir("/proc")  # no /proc: trust kill(0)
    return p.state != "Z" and (start is None or p.start == start)
