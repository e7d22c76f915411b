"""The Run page's follower: polls one started ``RunProcess`` on a worker thread until the run ends.

Everything that touches the process happens here, off the GUI thread (``RunFollower.follow``, run by a
``wizard.gui.workers.Worker``): reading its output in bounded chunks, parsing lines (``wizard.core.run.logparse``),
raising health alarms (``wizard.core.run.health``), Stop (the whole process tree, Ray included) and, at the end,
the triage (``wizard.core.run.triage``). It also watches the folders verl dumps the generations into and sends
each new step judged (``wizard.core.run.samples``), and keeps the run's record (``run.json``, the GPU samples
in ``gpus.csv``) through a ``RunRecorder``. The GUI receives ``RunBatch``es about ten times a second (the job's
progress) and one ``RunResult`` (its answer); it never waits for the process.
"""

from __future__ import annotations

import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from wizard.adapters.processes.launcher import RunProcess
from wizard.adapters.processes.run_dir import tail_jsonl
from wizard.adapters.files.run_folder import DumpWatcher, RunRecorder
from wizard.core.findings import Finding
from wizard.core.run.health import Thresholds, health
from wizard.core.run import InspectedStep, RunLog, Sample, StepHints, StepMetrics, inspect_step, split_line, step_hints
from wizard.core.run.triage import triage
from wizard.gui.run.log_view import Entry, log_entry
from wizard.gui.workers import Job

TRIAGE_TAIL = 20000  # log lines the triage reads at the end, as ``verl-wizard launch`` does
BATCH_S = 0.1  # the worker sends the GUI at most ~10 batches a second
HEALTH_EVERY_S = 5.0  # the stall alarm needs the clock even when no line arrives
STOP_GRACE_S = 10.0
DUMPS_EVERY_S = 1.0  # how often the dump folders are looked at


@dataclass
class RunBatch:
    """What arrived since the last batch."""

    entries: list[Entry] = field(default_factory=list)
    metrics: list[StepMetrics] = field(default_factory=list)
    events: list[tuple[str, object]] = field(default_factory=list)  # logparse lifecycle events (kind, value)
    progress: tuple[int, int] | None = None
    alarms: list[Finding] = field(default_factory=list)  # health alarms that fired for the first time
    samples: list[tuple[str, InspectedStep]] = field(default_factory=list)  # ("training"|"validation", a step)

    def __bool__(self) -> bool:
        return bool(self.entries or self.metrics or self.events or self.alarms or self.samples)


@dataclass
class RunResult:
    exit_code: int | None
    stopped: bool  # the user pressed Stop (or closed the window)
    findings: list[Finding]  # the triage, worst first
    last_error: str | None  # the last error line of the log: the text the triage read
    ended: list[int]  # pids Stop (or the clean-up after the exit) had to end
    left: list[int]  # pids still alive afterwards: empty unless something could not be ended
    progress: tuple[int, int] | None
    halted: str | None = None  # why the wizard stopped the run itself (run.log could not be written: a full disk)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.stopped


class RunFollower:
    """Follows one started ``RunProcess`` until it ends: ``follow(job)`` on a worker thread; Stop is ``job.stop``.

    Plain data, no Qt: the GUI sets ``gpus_busy`` from the GPU monitor, the worker thread reads it."""

    def __init__(self, run: RunProcess, max_response_length: int | None = None,
                 metrics_file: Path | None = None, recorder: RunRecorder | None = None,
                 dump_dirs: tuple[str | None, str | None] = (None, None)) -> None:
        self.run = run
        self.recorder = recorder
        self.gpu_snapshot = None  # set by the GUI from the GPU monitor; recorded with the step in progress
        self._watchers = [(kind, DumpWatcher(d)) for kind, d in zip(("training", "validation"), dump_dirs) if d]
        self._dumped: list[tuple[str, int, list[Sample]]] = []  # read, waiting for their step's metrics
        self._dumps_at = 0.0
        self.metrics_file = metrics_file  # the file logger's JSONL: exact values where the console rounds
        self._metrics_offset = 0
        self.max_response_length = max_response_length
        self.gpus_busy: bool | None = None  # set by the GUI from the GPU monitor; read by the stall alarm
        self._state = RunLog()
        self._tail: deque[str] = deque(maxlen=TRIAGE_TAIL)
        self._alarms: dict[str, Finding] = {}
        self._last_error: str | None = None

    def follow(self, job: Job) -> RunResult:
        """Report batches (``job.progress``) until the run ends or ``job.stop`` is set; then stop what is left
        of it and answer with the result. Always answers: the page never stays "running"."""
        started = last_step = last_health = last_emit = time.monotonic()
        pending = RunBatch()
        stopped = False
        try:
            while not self.run.finished:
                if job.stopped or self.run.write_error:  # Stop, or run.log cannot be written (a full disk)
                    stopped = True
                    break
                steps_before = self._state.last_step
                self._take(self.run.poll(BATCH_S), pending)
                if self.metrics_file is not None:
                    self._metrics_offset, events = tail_jsonl(self.metrics_file, self._metrics_offset, self._state)
                    self._events(events, pending)
                now = time.monotonic()
                self._record_and_dumps(pending, now)
                if self._state.last_step != steps_before:
                    last_step = now
                if pending.metrics or now - last_health >= HEALTH_EVERY_S:
                    last_health = now
                    since = now - (last_step if self._state.last_step is not None else started)
                    self._health(pending, since)
                if pending and now - last_emit >= BATCH_S:
                    pending.progress = self._state.progress()
                    job.progress(pending)
                    pending, last_emit = RunBatch(), now
        except Exception:  # noqa: BLE001 - shown on stderr; the run is still stopped, read and reported
            traceback.print_exc()
        return self._finish(job, pending, stopped or job.stopped)

    def _take(self, lines: list[tuple[str, str]], pending: RunBatch) -> None:
        for _stream, line in lines:
            self._tail.append(line)
            entry = log_entry(line)
            pending.entries.append(entry)
            if entry[0] in ("ERROR", "CRITICAL") and not entry[1].startswith("Traceback"):
                self._last_error = split_line(entry[1]).text
            self._events(self._state.feed(line), pending)

    @staticmethod
    def _events(events, pending: RunBatch) -> None:
        for ev in events:
            if ev.kind == "metrics":
                pending.metrics.append(ev.value)
            else:
                pending.events.append((ev.kind, ev.value))

    def _record_and_dumps(self, pending: RunBatch, now: float, final: bool = False) -> None:
        """The GPU sample into the record; new dump files read, and judged once their step's metrics are in (verl
        logs a step's metrics right after it dumps; validation has none to wait for)."""
        if self.recorder is not None and not final:
            self.recorder.tick(self._state, self.gpu_snapshot)
        if not self._watchers or (now - self._dumps_at < DUMPS_EVERY_S and not final):
            return
        self._dumps_at = now
        for kind, watcher in self._watchers:
            self._dumped += [(kind, step, samples) for step, samples in watcher.poll(final=final)]
        waiting = []
        for kind, step, samples in self._dumped:
            if kind == "training" and not final and (self._state.last_step or 0) < step:
                waiting.append((kind, step, samples))
                continue
            hints = (step_hints(self._state, step, self.max_response_length) if kind == "training"
                     else StepHints(max_response_length=self.max_response_length))
            pending.samples.append((kind, inspect_step(samples, hints)))
        self._dumped = waiting

    def _health(self, pending: RunBatch, since: float) -> None:
        for f in health(self._state.series, Thresholds(), max_response_length=self.max_response_length,
                        seconds_since_step=since, gpus_busy=self.gpus_busy, gcs_failures=self._state.gcs_failures,
                        gcs_address=self._state.gcs_address):
            if f.rule not in self._alarms:
                self._alarms[f.rule] = f
                pending.alarms.append(f)

    def _finish(self, job: Job, pending: RunBatch, stopped: bool) -> RunResult:
        """Stop what is left of the run, read the last lines, ask the triage; the result comes whatever happened
        here."""
        run = self.run
        report = None
        findings: list[Finding] = []
        try:
            try:
                if stopped or not run.finished or run.run_processes():
                    report = run.stop(grace=STOP_GRACE_S)
                self._take(run.drain(), pending)
            finally:
                run.close()
                if self.recorder is not None:
                    self.recorder.end(run.returncode, stopped)
            self._record_and_dumps(pending, time.monotonic(), final=True)
            self._health(pending, 0.0)
            pending.progress = self._state.progress()
            job.progress(pending)
            failed = not stopped and run.returncode not in (0, None)
            findings = triage(self._tail, run.returncode if failed else None)
        except Exception:  # noqa: BLE001 - shown on stderr, as above
            traceback.print_exc()
        return RunResult(
            exit_code=run.returncode, stopped=stopped, findings=findings, last_error=self._last_error,
            ended=sorted(set(report.signalled + report.killed)) if report else [],
            left=report.left if report else [], progress=self._state.progress(), halted=run.write_error)


__all__ = ["RunFollower", "RunBatch", "RunResult", "STOP_GRACE_S"]
