"""Run verl's own pre-flight in the target Python: the authoritative second opinion.

One subprocess serves many cases (importing verl costs seconds; each case is then
milliseconds), so checking a whole batch costs one import.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import resources

from wizard.core.findings import Finding, Severity, Stage


class PreflightError(RuntimeError):
    """The target Python could not run the probe; the message is one line."""


def _probe_path() -> str:
    return str(resources.files("wizard.adapters.probes") / "verl_preflight_probe.py")


def run_preflight(cases: list[dict], python: str | None = None, timeout: float = 600.0) -> list[dict]:
    python = python or sys.executable
    payload = "".join(json.dumps(c) + "\n" for c in cases)
    env = dict(os.environ, PYTHONUNBUFFERED="1", RAY_USAGE_STATS_ENABLED="0", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    try:
        proc = subprocess.run(
            [python, _probe_path()], input=payload, capture_output=True, text=True, timeout=timeout, env=env
        )
    except FileNotFoundError:
        raise PreflightError(f"cannot run {python}: no such file") from None
    except PermissionError:
        raise PreflightError(f"cannot run {python}: not executable") from None
    except subprocess.TimeoutExpired:
        raise PreflightError(f"verl's pre-flight in {python} did not finish within {timeout:.0f} s") from None
    results = []
    for line in proc.stdout.splitlines():
        if not line.strip():
            continue
        doc = json.loads(line)
        if "fatal" in doc:
            raise PreflightError(f"{python}: {doc['fatal']}")
        results.append(doc)
    if len(results) != len(cases):
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise PreflightError(f"verl's pre-flight in {python} stopped after {len(results)} of {len(cases)} cases: {tail}")
    return results


def preflight_finding(result: dict) -> Finding | None:
    if result.get("ok"):
        return None
    return Finding(
        rule="verl.preflight",
        severity=Severity.ERROR,
        stage=Stage(result.get("stage") or "preflight"),
        keys=[],
        message=f"verl 0.9.1 itself rejects this config ({result.get('error_type')}): {result.get('message')}",
        fix=None,
    )
