"""Facts a finished run's log holds besides the metrics: the training set's size, how long start-up took, the
versions the log shows, and how the run ended. Pure: raw console lines in.

Timestamps come from the lines that carry one: verl's logger (``INFO:2026-12-03 15:48:33,013:...``) and Ray's
(``2026-12-03 15:44:32,052\\tINFO ...``). Start-up is from the first timestamped line to verl's "all initialize
finished, ready to fit" (Ray, the workers, the models, the rollout engine and its CUDA graphs).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from wizard.core.run.logparse import split_line
from wizard.core.run.record import RunRecord

_STAMP = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})")
_DATASET = re.compile(r"train dataset size: (\d+)")
_VERSIONS = (  # (name, pattern with the version as group 1), from lines the tools print themselves
    ("Python", re.compile(r"/python(3\.\d+)/site-packages/")),
    ("NCCL", re.compile(r"NCCL version (\S+)")),
    ("vLLM", re.compile(r"(?:vLLM version|LLM engine \(v)\s*v?([\d.]+\w*)")),
    ("SGLang", re.compile(r"sglang(?:==| version )v?([\d.]+\w*)", re.IGNORECASE)),
)


def _time(text: str) -> datetime | None:
    m = _STAMP.search(text)
    if not m:
        return None
    try:
        return datetime.strptime(f"{m.group(1)}.{m.group(2)}", "%Y-%m-%d %H:%M:%S.%f")
    except ValueError:
        return None


def has_timestamp(text: str) -> bool:
    return _time(text) is not None


def dataset_size(lines: Sequence[str]) -> int | None:
    """The training set's size after filtering, as verl logs it ("train dataset size: N"); the last one wins."""
    for raw in reversed(lines):
        if "train dataset size" in raw and (m := _DATASET.search(raw)):
            return int(m.group(1))
    return None


def startup_seconds(lines: Sequence[str]) -> float | None:
    """Seconds from the first timestamped line to "ready to fit"; None when either is missing."""
    first = next((t for raw in lines if (t := _time(raw)) is not None), None)
    ready = next((_time(raw) for raw in lines if "ready to fit" in raw), None)
    if first is None or ready is None or ready < first:
        return None
    return (ready - first).total_seconds()


def versions_in_log(lines: Sequence[str], limit: int = 5000) -> dict[str, str]:
    """Versions the log shows by itself (Python from paths, NCCL, vLLM...), from its first ``limit`` lines."""
    found: dict[str, str] = {}
    for raw in lines[:limit]:
        for name, pattern in _VERSIONS:
            if name not in found and (m := pattern.search(raw)):
                found[name] = m.group(1).rstrip(".")
    return found


def outcome(record: RunRecord) -> str:
    """How the run ended, in a few words: from run.json when the launch recorded it, else from the log."""
    meta, state = record.meta, record.state
    progress = state.progress()
    steps = f" ({progress[0]}/{progress[1]} steps)" if progress else ""
    if meta is not None and meta.ended:
        if meta.stopped:
            return f"stopped by the user{steps}"
        return f"finished OK{steps}" if meta.exit_code == 0 else f"failed (exit code {meta.exit_code}){steps}"
    if "finished" in state.markers or (progress and progress[0] >= progress[1] > 0):
        return f"finished{steps}"
    if "error" in state.markers or any(split_line(raw).text.startswith("Error executing job")
                                       for raw in record.log_tail[-200:]):
        return f"failed{steps}"
    return f"running, or ended without a record of how{steps}"


__all__ = ["has_timestamp", "dataset_size", "startup_seconds", "versions_in_log", "outcome"]
