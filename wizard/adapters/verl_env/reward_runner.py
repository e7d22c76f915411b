"""Run the reward bench in the target Python: verl's built-in scorer or the user's reward function.

A subprocess, so the user's code cannot crash or hang the wizard, and so the scorer is the one of the
verl the run will use. Results stream back one line per call; on a timeout the calls that finished are
kept and the one that hung is named.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

from wizard.adapters.files.bundle import probe_path
from wizard.adapters.processes.guarded import run_guarded
from wizard.core.data import scorer_for
from wizard.core.findings import Finding
from wizard.core.reward import BenchRow, BenchSummary, Trial, builtin_findings, candidates_for, judge, summarize
from wizard.adapters.verl_env.python_envs import resolve_python


class RewardRunError(RuntimeError):
    """The bench could not run at all (no such Python, no such function file); the message is one line."""


@dataclass
class BenchResult:
    trials: list[Trial]
    findings: list[Finding]
    summary: BenchSummary
    source: str
    timed_out: str | None = None
    skipped_rows: list[int] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"source": self.source, "trials": [t.to_json() for t in self.trials],
                "summary": self.summary.to_json(), "timed_out": self.timed_out,
                "findings": [f.to_json() for f in self.findings]}


def _probe_path() -> str:
    return probe_path("reward_probe.py")


def run_probe(doc: dict, python: str | None = None, timeout: float = 60.0,
              cancel: threading.Event | None = None) -> tuple[list[dict], str | None, int | None]:
    """Send ``doc`` to the probe; return its result lines, on a timeout a note saying so, and its exit code.
    ``cancel`` set from another thread kills the probe at once (RewardRunError "cancelled")."""
    python = resolve_python(python)
    env = dict(os.environ, PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               VERL_USE_EXTERNAL_PLUGINS=os.environ.get("VERL_USE_EXTERNAL_PLUGINS", "none"))
    try:  # the user's code: its own process group, a memory and an output cap, nothing of it left afterwards
        done = run_guarded([python, _probe_path()], input=json.dumps(doc), timeout=timeout, env=env, cancel=cancel)
    except FileNotFoundError:
        raise RewardRunError(f"cannot run {python}: no such file") from None
    except PermissionError:
        raise RewardRunError(f"cannot run {python}: not executable") from None
    if done.cancelled:
        raise RewardRunError("cancelled")
    out, err = done.stdout, done.stderr
    timed_out = f"no answer within {timeout:g} s" if done.timed_out else None
    lines = [json.loads(line) for line in out.splitlines() if line.strip().startswith("{")]
    if lines and "fatal" in lines[0]:
        fatal = lines[0]
        raise RewardRunError(f"{fatal['fatal']} (in {python})" + _last_user_line(fatal.get("traceback")))
    if not lines and not timed_out and done.returncode:
        tail = (err.strip().splitlines() or ["no output"])[-1]
        raise RewardRunError(f"the reward probe failed in {python}: {tail}")
    return lines, timed_out, done.returncode


def _last_user_line(tb: str | None) -> str:
    lines = [line.strip() for line in (tb or "").splitlines() if line.strip().startswith("File ")]
    return f"; at {lines[-1]}" if lines else ""


def _trial(doc: dict, text: str) -> Trial:
    score = doc.get("score")
    if isinstance(score, str):
        score = float(score)  # 'nan', 'inf'
    return Trial(row=doc["row"], candidate=doc["candidate"], text=text, kind=doc.get("kind", "other"), score=score,
                 raw=doc.get("raw", ""), seconds=float(doc.get("seconds", 0.0)), error=doc.get("error"),
                 traceback=doc.get("traceback"))


def run_bench(rows: list[BenchRow], function: str | None = None, name: str | None = None,
              user_texts: list[str] | None = None, python: str | None = None, timeout: float = 60.0,
              cancel: threading.Event | None = None) -> BenchResult:
    """Score each row's candidates; judge the scores. ``function``/``name``: the user's reward function."""
    custom = function is not None
    if custom:
        path = Path(function)  # type: ignore[arg-type]
        if not path.is_file():
            raise RewardRunError(f"{function}: no such file")
        if not name:
            raise RewardRunError("--function needs --name, the function to call in it")
        source = f"{name} in {path.name}"
    else:
        source = "verl's built-in scorer"
    findings: list[Finding] = []
    usable = rows if custom else [r for r in rows if scorer_for(r.data_source)]
    if not custom:
        findings += builtin_findings(rows)
    trials_in: list[dict] = []
    for r in usable:
        for c in candidates_for(r, user_texts, custom=custom):
            trials_in.append({"row": r.row, "candidate": c.kind, "text": c.text, "data_source": r.data_source,
                              "ground_truth": r.ground_truth, "extra_info": r.extra_info})
    lines: list[dict] = []
    timed_out, code = None, 0
    if trials_in:
        doc = {"mode": "custom" if custom else "builtin", "path": str(Path(function).resolve()) if custom else None,
               "name": name, "trials": trials_in}
        lines, timed_out, code = run_probe(doc, python, timeout, cancel=cancel)
    trials = [_trial(line, trials_in[i]["text"]) for i, line in enumerate(lines)]
    nxt = trials_in[len(lines)] if len(lines) < len(trials_in) else None
    where = f" on row {nxt['row']} ({nxt['candidate']})" if nxt else ""
    note = f"{timed_out}{where}, after {len(lines)} of {len(trials_in)} calls" if timed_out else None
    ended = None  # a missing answer is a failure, never "ok"
    if nxt is not None and not timed_out:
        how = f"was killed by signal {-code}" if code and code < 0 else f"exited with code {code}"
        ended = f"{how} after {len(lines)} of {len(trials_in)} calls, without answering the next one{where}"
    findings += judge(trials, source, timed_out=note, ended=ended)
    skipped = [r.row for r in rows if not custom and not scorer_for(r.data_source)]
    return BenchResult(trials, findings, summarize(trials), source, note, skipped)
