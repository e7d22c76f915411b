"""Run verl's own pre-flight in the target Python: the authoritative second opinion.

One subprocess serves many cases (importing verl costs seconds; each case is then
milliseconds), so checking a whole batch costs one import.
"""

from __future__ import annotations

import json
import os
import subprocess

from wizard.adapters.processes.guarded import run_guarded
from wizard.adapters.files.bundle import probe_path
from wizard.core.findings import Finding, Severity, Stage
from wizard.adapters.verl_env.python_envs import resolve_python


class PreflightError(RuntimeError):
    """The target Python could not run the probe; the message is one line."""


def _probe_path() -> str:
    return probe_path("verl_preflight_probe.py")


def run_preflight(cases: list[dict], python: str | None = None, timeout: float = 600.0) -> list[dict]:
    python = resolve_python(python)
    payload = "".join(json.dumps(c) + "\n" for c in cases)
    env = dict(os.environ, PYTHONUNBUFFERED="1", RAY_USAGE_STATS_ENABLED="0", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    try:  # verl in the user's Python: its own process group, nothing of it left afterwards
        proc = run_guarded([python, _probe_path()], input=payload, timeout=timeout, env=env, memory_bytes=None,
                           output_bytes=64 * 1024**2)
    except FileNotFoundError:
        raise PreflightError(f"cannot run {python}: no such file") from None
    except PermissionError:
        raise PreflightError(f"cannot run {python}: not executable") from None
    if proc.timed_out:
        raise PreflightError(f"verl's pre-flight in {python} did not finish within {timeout:.0f} s")
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


class PreflightSession:
    """One long-lived probe process: verl is imported once, then each case costs milliseconds.

    ``check`` sends one case and waits for its verdict (with a timeout, never a hang).
    """

    def __init__(self, python: str | None = None, timeout: float = 120.0) -> None:
        self.python = resolve_python(python)
        self.timeout = timeout
        env = dict(os.environ, PYTHONUNBUFFERED="1", RAY_USAGE_STATS_ENABLED="0", HF_HUB_OFFLINE="1",
                   TRANSFORMERS_OFFLINE="1")
        try:
            self.proc = subprocess.Popen(
                [self.python, _probe_path()], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, text=True, env=env, bufsize=1,
            )
        except OSError as exc:
            raise PreflightError(f"cannot run {self.python}: {exc.strerror or exc}") from None

    def check(self, case: dict) -> dict:
        import select

        assert self.proc.stdin and self.proc.stdout
        try:
            self.proc.stdin.write(json.dumps(case) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise PreflightError(f"verl's pre-flight in {self.python} exited") from None
        ready, _, _ = select.select([self.proc.stdout], [], [], self.timeout)
        if not ready:
            self.close()
            raise PreflightError(f"verl's pre-flight gave no answer within {self.timeout:.0f} s")
        line = self.proc.stdout.readline()
        if not line:
            raise PreflightError(f"verl's pre-flight in {self.python} exited")
        doc = json.loads(line)
        if "fatal" in doc:
            raise PreflightError(f"{self.python}: {doc['fatal']}")
        return doc

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream:
                stream.close()

    def __enter__(self) -> PreflightSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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
