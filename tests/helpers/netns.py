"""Loopback-only namespaces for the tests that start Ray: no traffic ever leaves 127.0.0.1.

The PID and mount namespaces keep ``ray stop --force`` and /tmp/ray of a test cluster away
from any other Ray on the machine.
"""

from __future__ import annotations

import shutil
import subprocess

UNSHARE = ["unshare", "-n", "-p", "-f", "-m", "--mount-proc"]


def namespaces_work() -> str | None:
    """None when a loopback-only namespace can be made here, else why not (for a skip reason)."""
    if not shutil.which("unshare"):
        return "unshare is not installed"
    try:
        proc = subprocess.run([*UNSHARE, "sh", "-c", "ip link set lo up"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare failed: {exc}"
    return None if proc.returncode == 0 else f"cannot make a loopback-only namespace here: {proc.stderr.strip()}"


# The first commands inside the namespace: loopback up, and a /tmp/ray of its own (Ray's sockets and session logs).
LOOPBACK_RAY = "ip link set lo up && mkdir -p /tmp/ray && mount -t tmpfs tmpfs /tmp/ray"
