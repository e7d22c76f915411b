"""A run folder on disk: read it whole (a finished run, or one still going), follow its dumps live, and write
what the launch records beside the log (``run.json``, ``gpus.csv``). The formats are ``wizard.core.run.record``'s.

Reading never raises for a missing or damaged file: what could not be read is listed in the record's
``problems``. Only a path that is no run folder at all is an error (``RunFolderError``, one line).
"""

from __future__ import annotations

import io
import json
import os
import time
from collections import deque
from pathlib import Path

from wizard.core.plan import plan_from_overrides
from wizard.core.run import RunLog
from wizard.core.run import (
    COMMAND,
    LOG,
    METRICS,
    ROLLOUT_DIR,
    TRACE_HEADER,
    VALIDATION_DIR,
    RunMeta,
    RunRecord,
    busy_by_step,
    step_in_progress,
    trace_lines,
)
from wizard.core.run import Sample, dump_step, parse_dump

META = "run.json"
TRACE = "gpus.csv"
REPORT = "report.md"
LOG_TAIL = 20000  # lines of run.log kept (the triage reads as many; the report quotes the last 200)
LOG_READ_BYTES = 32 * 1024 * 1024  # of run.log parsed, from its end: a 500 MB log of a long run is read in ~1 s
MAX_DUMP_BYTES = 512 << 20  # a dump file larger than this is skipped, not read into memory


class RunFolderError(ValueError):
    """Not a run folder; the message is one line."""


# --- reading ---------------------------------------------------------------------------------------------------

def read_run_folder(path: str | Path) -> RunRecord:
    """Everything the folder holds. A folder of dumps alone (``1.jsonl``, ``2.jsonl``...) is read as a run's
    rollout dumps."""
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise RunFolderError(f"{path}: no such folder")
    record = RunRecord(path=str(folder.absolute()))
    record.meta = _read_meta(folder / META, record.problems)
    _read_plan(folder, record)
    _read_log(folder / LOG, record)
    _read_metrics(folder / METRICS, record.state, record.problems)
    _read_trace(folder / TRACE, record)
    rollout, validation = dump_folders(folder, record.meta)
    record.rollout = read_dumps(rollout, record.problems)
    record.validation = read_dumps(validation, record.problems)
    if not record.rollout and any(dump_step(p.name) is not None for p in folder.glob("*.jsonl")):
        record.rollout = read_dumps(folder, record.problems)
    if not (record.log_lines or record.state.series or record.rollout or record.validation or record.meta):
        raise RunFolderError(f"{path}: not a run folder (no {LOG}, {METRICS}, {META} or generations dumps in it)")
    return record


def dump_folders(folder: Path, meta: RunMeta | None) -> tuple[Path, Path]:
    """Where the run's generations are: as run.json says, else the folders a smoke run uses."""
    rollout = Path(meta.rollout_dir) if meta and meta.rollout_dir else folder / ROLLOUT_DIR
    validation = Path(meta.validation_dir) if meta and meta.validation_dir else folder / VALIDATION_DIR
    if not rollout.is_dir() and (folder / ROLLOUT_DIR).is_dir():  # a folder moved since the run
        rollout = folder / ROLLOUT_DIR
    if not validation.is_dir() and (folder / VALIDATION_DIR).is_dir():
        validation = folder / VALIDATION_DIR
    return rollout, validation


def _read_meta(path: Path, problems: list[str]) -> RunMeta | None:
    if not path.is_file():
        return None
    try:
        meta = RunMeta.from_json(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        problems.append(f"{path.name}: cannot be read ({exc})")
        return None
    if meta is None:
        problems.append(f"{path.name}: not a run record this version of verl-wizard reads")
    return meta


def _read_plan(folder: Path, record: RunRecord) -> None:
    meta = record.meta
    if meta is not None:
        record.plan = plan_from_overrides(meta.plan_overrides, config_name=meta.config_name)
        return
    if (folder / COMMAND).is_file():
        from wizard.adapters.files.sources import load_source

        try:
            record.plan = load_source(str(folder / COMMAND)).to_plan(name=folder.name)
            record.plan_smoke_only = True
        except ValueError as exc:
            record.problems.append(f"{COMMAND}: {exc}")


def _read_log(path: Path, record: RunRecord) -> None:
    """run.log's lines into the record; of a log over LOG_READ_BYTES only the last LOG_READ_BYTES are parsed (the
    triage, the versions and the report read the tail; the series come from metrics.jsonl), the lines before are
    counted, and a problem says what was skipped."""
    if not path.is_file():
        return
    tail: deque[str] = deque(maxlen=LOG_TAIL)
    try:
        with open(path, "rb") as raw:
            start = max(0, os.fstat(raw.fileno()).st_size - LOG_READ_BYTES)
            if start:
                record.log_lines += _count_lines(raw, start)
                raw.seek(start)
                record.log_lines += raw.readline().endswith(b"\n")  # the end of a line that began before start
                record.problems.append(f"{LOG}: its first {start / 2**20:,.0f} MiB ({record.log_lines:,} lines); only "
                                       f"the last {LOG_READ_BYTES >> 20} MiB are parsed (the series come from {METRICS})")
            with io.TextIOWrapper(raw, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    line = line.rstrip("\n")
                    record.log_lines += 1
                    tail.append(line)
                    record.state.feed(line)
    except OSError as exc:
        record.problems.append(f"{LOG}: {exc.strerror or exc}")
    record.log_tail = list(tail)


def _count_lines(raw, end: int) -> int:
    """Newlines in the first ``end`` bytes of the binary file ``raw`` (read in chunks: no line is built)."""
    raw.seek(0)
    count, left = 0, end
    while left > 0:
        chunk = raw.read(min(1 << 23, left))
        if not chunk:
            break
        count += chunk.count(b"\n")
        left -= len(chunk)
    return count


def _read_metrics(path: Path, state: RunLog, problems: list[str]) -> None:
    if not path.is_file():
        return
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                state.feed_jsonl(line)
    except OSError as exc:
        problems.append(f"{METRICS}: {exc.strerror or exc}")


def _read_trace(path: Path, record: RunRecord) -> None:
    if not path.is_file():
        return
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            record.gpu_busy, record.gpu_count = busy_by_step(fh)
    except OSError as exc:
        record.problems.append(f"{TRACE}: {exc.strerror or exc}")


def read_dump(path: Path, step: int, problems: list[str]) -> list[Sample]:
    try:
        if path.stat().st_size > MAX_DUMP_BYTES:
            problems.append(f"{path.name}: larger than {MAX_DUMP_BYTES >> 20} MiB, skipped")
            return []
        with open(path, encoding="utf-8", errors="replace") as fh:
            read = parse_dump(fh, step)
    except OSError as exc:
        problems.append(f"{path.name}: {exc.strerror or exc}")
        return []
    problems += [f"{path.parent.name}/{path.name} {p}" for p in read.bad_lines[:3]]
    if len(read.bad_lines) > 3:
        problems.append(f"{path.parent.name}/{path.name}: {len(read.bad_lines) - 3} more lines that are no sample")
    return read.samples


def read_dumps(folder: Path, problems: list[str]) -> dict[int, list[Sample]]:
    """step -> samples, for every ``<step>.jsonl`` in ``folder`` (none when it does not exist)."""
    out: dict[int, list[Sample]] = {}
    if not folder.is_dir():
        return out
    for path in folder.iterdir():
        step = dump_step(path.name)
        if step is not None:
            out[step] = read_dump(path, step, problems)
    return dict(sorted(out.items()))


class DumpWatcher:
    """New dump files of a live run: ``poll`` returns the steps whose file appeared complete since the last call.

    verl writes a step's file in one go from a background thread; a file whose size still changes, or whose last
    line has no newline yet, is taken at a later poll."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self._done: set[str] = set()
        self._sizes: dict[str, int] = {}

    def poll(self, problems: list[str] | None = None, final: bool = False) -> list[tuple[int, list[Sample]]]:
        """``final``: the run has ended, nothing is being written: every file that ends in a newline is taken."""
        if not self.folder.is_dir():
            return []
        out = []
        for path in sorted(self.folder.iterdir(), key=lambda p: dump_step(p.name) or 0):
            step = dump_step(path.name)
            if step is None or path.name in self._done:
                continue
            try:
                size = path.stat().st_size
                with open(path, "rb") as fh:
                    fh.seek(max(0, size - 1))
                    ends = fh.read(1) == b"\n"
            except OSError:
                continue
            if size == 0 or not ends or (self._sizes.get(path.name) != size and not final):
                self._sizes[path.name] = size  # taken when it is seen the same twice
                continue
            self._done.add(path.name)
            out.append((step, read_dump(path, step, problems if problems is not None else [])))
        return out


# --- writing ---------------------------------------------------------------------------------------------------

def write_meta(run_dir: str | Path, meta: RunMeta) -> None:
    """``run.json``, replaced atomically (no backup: it is the launch's own record). Best effort: a run is never
    refused or stopped because its record could not be written. Temporary files a killed write left are removed."""
    from wizard.adapters.files.disk import WriteError, replace_atomic

    try:
        replace_atomic(Path(run_dir) / META, json.dumps(meta.to_json(), indent=1) + "\n")
    except WriteError:
        pass


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


class GpuTrace:
    """Appends the GPU monitor's samples to ``gpus.csv``, each tagged with the step in progress."""

    def __init__(self, run_dir: str | Path) -> None:
        self.path = Path(run_dir) / TRACE
        self._t0 = time.monotonic()
        self._fh = None
        self.failed = False

    def add(self, step: int, readings: list[tuple[int, int | None, int | None]]) -> None:
        if self.failed or not readings:
            return
        try:
            if self._fh is None:
                self._fh = open(self.path, "a", encoding="utf-8")
                if self._fh.tell() == 0:
                    self._fh.write(TRACE_HEADER + "\n")
            self._fh.write("\n".join(trace_lines(time.monotonic() - self._t0, step, readings)) + "\n")
            self._fh.flush()
        except OSError:
            self.failed = True  # a full disk must not stop the run or its monitor

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class RunRecorder:
    """What a launch records beside the log: ``run.json`` at the start and at the end, and the GPUs' samples in
    ``gpus.csv`` tagged with the step in progress. The CLI lets it sample NVML itself (``own_sampler``); the GUI
    hands it the GPU monitor's snapshots. Never raises: a record that cannot be written never stops a run."""

    def __init__(self, run_dir: str | Path, meta: RunMeta, own_sampler: bool = False, interval_s: float = 1.0) -> None:
        self.run_dir, self.meta, self.interval_s = Path(run_dir), meta, interval_s
        self.trace = GpuTrace(run_dir)
        self._sampler = None
        self._next = 0.0
        self._last = None
        if own_sampler:
            from wizard.adapters.machine.gpu_sampler import GpuSampler

            self._sampler = GpuSampler()

    def start(self) -> None:
        if self.meta.gpus is None and self._sampler is not None:
            self._last = self._sample()
            self.meta.gpus = gpu_inventory(self._last) if self._last is not None else None
        write_meta(self.run_dir, self.meta)

    def _sample(self):
        from wizard.adapters.machine.gpu_sampler import parse_sample

        try:
            return parse_sample(self._sampler.sample())
        except Exception:  # noqa: BLE001 - a driver that misbehaves costs the trace, never the run
            self._sampler = None
            return None

    def tick(self, state: RunLog, snapshot=None) -> None:
        """At most once per ``interval_s``: the GPUs now (``snapshot``, or a sample of its own), with the step."""
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self.interval_s
        if snapshot is None and self._sampler is not None:
            snapshot = self._sample()
        if snapshot is not None and snapshot is not self._last:
            self._last = snapshot
            self.trace.add(step_in_progress(state), readings(snapshot))

    def end(self, exit_code: int | None, stopped: bool) -> None:
        self.meta.ended, self.meta.exit_code, self.meta.stopped = now_iso(), exit_code, stopped
        write_meta(self.run_dir, self.meta)
        self.trace.close()
        if self._sampler is not None:
            self._sampler.close()
            self._sampler = None


def secret_values() -> dict[str, str]:
    """What a report must never show: the values of this environment's secret-looking variables."""
    from wizard.core.secrets import is_secret_name

    return {k: v for k, v in os.environ.items() if v and is_secret_name(k)}


def readings(snapshot) -> list[tuple[int, int | None, int | None]]:
    """A ``GpuSnapshot``'s rows for ``gpus.csv``: (index, utilisation %, memory used in bytes)."""
    return [(g.index, g.util_gpu, g.memory_used) for g in getattr(snapshot, "gpus", ())]


def gpu_inventory(snapshot=None) -> list[dict] | None:
    """The GPUs for run.json: from ``snapshot`` (the monitor's last) or one NVML sample now; None without GPUs."""
    if snapshot is None:
        from wizard.adapters.machine.gpu_sampler import GpuSampler, parse_sample

        sampler = GpuSampler()
        try:
            snapshot = parse_sample(sampler.sample())
        finally:
            sampler.close()
    gpus = [{"index": g.index, "name": g.name,
             "memory_mib": round(g.memory_total / (1 << 20)) if g.memory_total else None} for g in snapshot.gpus]
    return gpus or None


def find_smoke_run(root: str | Path, fingerprint: str, limit: int = 500) -> Path | None:
    """The newest run folder directly under ``root`` whose run.json has ``fingerprint`` (the same plan)."""
    base = Path(root)
    if not base.is_dir():
        return None
    best: tuple[float, Path] | None = None
    for i, folder in enumerate(base.iterdir()):
        if i >= limit:
            break
        meta_path = folder / META
        try:
            doc = json.loads(meta_path.read_text(encoding="utf-8"))
            mtime = meta_path.stat().st_mtime
        except (OSError, ValueError):
            continue
        meta = RunMeta.from_json(doc)
        if meta is not None and meta.fingerprint == fingerprint and (best is None or mtime > best[0]):
            best = (mtime, folder)
    return best[1] if best else None


def forecast_for_plan(root: str, fingerprint: str) -> tuple[str, object] | None:
    """On a worker thread: the forecast of the newest smoke run of this plan under ``root`` (runs/), if any."""
    from wizard.core.run import Forecast, forecast_of

    folder = find_smoke_run(root, fingerprint)
    if folder is None:
        return None
    try:
        record = read_run_folder(folder)
    except RunFolderError:
        return None
    fc = forecast_of(record)
    return (str(folder), fc) if isinstance(fc, Forecast) else None


__all__ = ["RunFolderError", "read_run_folder", "read_dumps", "read_dump", "dump_folders", "DumpWatcher",
           "write_meta", "now_iso", "GpuTrace", "RunRecorder", "secret_values", "readings", "gpu_inventory", "find_smoke_run", "forecast_for_plan", "META", "TRACE", "REPORT"]
