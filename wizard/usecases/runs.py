"""A run's folder, digested and reported: what the Run step's Samples and Time tabs, ``samples``, ``timing``,
``launch``'s closing lines and ``report`` all read. The folder is read by ``wizard.adapters.files.run_folder``
(never raising for a damaged file); the numbers are ``wizard.core.run.digest``'s; the report is
``wizard.core.run.report``'s, with every secret of this environment kept out."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from wizard.adapters.files.disk import write_atomic
from wizard.adapters.files.run_folder import REPORT, read_run_folder, secret_values
from wizard.core.run import Forecast, InspectedStep, RunRecord, TimingSummary, digest

RUNS = "runs"  # where smoke runs go by default (launch and the Run step), relative to the working folder


@dataclass
class RunDigest:
    """A run folder, read and judged: plain data (made on a worker thread in the window)."""

    record: RunRecord
    training: list[InspectedStep]
    validation: list[InspectedStep]
    timing: TimingSummary
    forecast: Forecast | str  # the full run's forecast, or why there is none


def digest_run(path: str | Path) -> RunDigest:
    """The folder at ``path`` read and digested (RunFolderError, one line, when it is no run folder)."""
    record = read_run_folder(path)
    max_len = digest.max_response_length(record)
    summary = digest.timing_of(record)
    return RunDigest(record=record, training=digest.inspect_steps(record.rollout, record.state, max_len),
                     validation=digest.inspect_steps(record.validation, record.state, max_len, validation=True),
                     timing=summary, forecast=digest.forecast_of(record, summary))


def report_text(record: RunRecord, environment: dict | None = None) -> str:
    """The Markdown report of ``record``: versions (``environment``, else what the run recorded), GPUs, the plan,
    findings, triage, timing and the forecast, the log's tail; this environment's secrets redacted."""
    from wizard import __version__
    from wizard.core.run import render_report

    env = environment or (record.meta.environment if record.meta else None)
    return render_report(record, secrets=secret_values(), environment=env, wizard_version=__version__,
                         written=time.strftime("%Y-%m-%d %H:%M"))


def write_run_report(record: RunRecord, environment: dict | None = None,
                     out: str | Path | None = None) -> tuple[Path, str]:
    """The report written atomically to ``out`` (default: ``report.md`` in the run folder); (its path, its text).
    WriteError (one line) when it cannot be written."""
    text = report_text(record, environment)
    path = Path(out) if out else Path(record.path) / REPORT
    write_atomic(path, text)
    return path, text


def mean_response_tokens(path: str | Path) -> tuple[int, int]:
    """(the mean response length of a run's last training step, that step) from its folder's metrics: what a smoke
    run says a plan's responses will average (RunFolderError when it is no run folder, ValueError when no step
    finished)."""
    record = read_run_folder(path)
    series = [(s, v) for s, v in record.state.series.get("response_length/mean", ()) if v == v]
    if not series:
        raise ValueError(f"{path}: no training step finished (no response_length/mean in its metrics)")
    step, mean = max(series)
    return max(1, round(mean)), step
