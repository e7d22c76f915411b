"""Discover a live Ray cluster at an address: nodes, alive state, GPU/CPU resources, Ray version.

Ray's own API (``ray.init(address=...)`` + ``ray.nodes()``) runs in a probe subprocess of the
target Python, for two reasons: the wizard need not have Ray, and a cluster that does not answer
is killed after a timeout instead of hanging the wizard. Before that, a plain TCP connect to the
head's GCS port answers "nothing listens there" in milliseconds.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess

from wizard.adapters.files.bundle import probe_path
from wizard.core.findings import Finding, Severity, Stage
from wizard.core.hardware import Cluster, Discovery, ray_to_discovery
from wizard.adapters.verl_env.python_envs import resolve_python

DEFAULT_TIMEOUT_S = 30.0
CONNECT_TIMEOUT_S = 3.0


class RayAddressError(ValueError):
    """An address the wizard cannot even try (bad syntax); the message is one line."""


def parse_address(address: str) -> tuple[str, int] | None:
    """'host:port' -> (host, port); 'auto' and 'ray://...' -> None (Ray resolves those); ValueError otherwise."""
    address = address.strip()
    if address == "auto" or address.startswith("ray://"):
        return None
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise RayAddressError(f"cannot read Ray address {address!r}: use HOST:PORT (the head's GCS port, "
                              "6379 by default), e.g. 127.0.0.1:6379, or 'auto'")
    return host, int(port)


def discover_ray(address: str, python: str | None = None, timeout: float = DEFAULT_TIMEOUT_S) -> Discovery:
    """The Ray cluster at ``address``; an unreachable one is a Discovery with an error finding, not an exception."""
    target = parse_address(address)
    if target is not None:
        reason = _tcp_refusal(*target, min(CONNECT_TIMEOUT_S, timeout))
        if reason:
            return _unreachable(address, reason)
    doc = _run_probe(address, resolve_python(python), timeout)
    if "fatal" in doc:
        return _unreachable(address, doc["fatal"], doc.get("ray_version"))
    return ray_to_discovery(doc.get("nodes") or [], doc.get("ray_version"), address)


def _tcp_refusal(host: str, port: int, timeout: float) -> str | None:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except socket.timeout:
        return f"nothing answered on {host}:{port} within {timeout:.0f} s"
    except OSError as exc:
        return f"cannot connect to {host}:{port} ({exc.strerror or exc})"


def _run_probe(address: str, python: str, timeout: float) -> dict:
    probe = probe_path("ray_probe.py")
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", PYTHONUNBUFFERED="1")
    env.pop("RAY_ADDRESS", None)
    try:
        proc = subprocess.Popen([python, probe, address], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, start_new_session=True)
    except OSError as exc:
        return {"fatal": f"cannot run {python}: {exc.strerror or exc}"}
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return {"fatal": f"the Ray cluster at {address} did not answer within {timeout:.0f} s"}
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    tail = (err.strip().splitlines() or ["no output"])[-1]
    return {"fatal": f"the Ray probe stopped without an answer (exit {proc.returncode}): {tail[:300]}"}


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()


def _unreachable(address: str, reason: str, version: str | None = None) -> Discovery:
    finding = Finding(
        rule="ray.unreachable", severity=Severity.ERROR, stage=Stage.RUNTIME, keys=[],
        message=f"no Ray cluster answers at {address}: {reason}",
        fix=("start one with `ray start --head --port=6379` (add --block when a script or container must keep it "
             "running), or give the head's address; unset RAY_ADDRESS to let verl start its own local Ray"),
    )
    cluster = Cluster(source="ray", nodes=[], ray_version=version, notes=[f"Ray cluster at {address}: no answer"])
    return Discovery(cluster=cluster, findings=[finding])


