"""``verl-wizard launch``: a local smoke run of a plan, streamed, watched, and explained when it fails.

Exit codes: 0 the run finished OK, 1 the run failed or the config has errors (findings printed), or the run
folder could not be written (a full disk: the run is stopped, one line on stderr says why), 2 bad input (one line on
stderr), 128 + the signal when stopped by Ctrl-C, SIGTERM or SIGHUP (the run is ended first, and not triaged), 141
(128 + SIGPIPE) when whatever reads the output went away (``launch ... | head``): the run is stopped, as a pipeline's
writer is, and run.log says why.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections import deque
from pathlib import Path

from wizard.adapters.processes.run_dir import tail_jsonl
from wizard.cli._common import EXIT_ERRORS, EXIT_OK, UsageError, hardware, load_plan_arg, print_findings
from wizard.core.findings import Finding, has_errors, sort_findings
from wizard.core.run import VALIDATION

TRIAGE_TAIL = 20000  # lines of the log the triage reads at the end (the full log is in the run directory)


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("launch", help="start a local smoke run of a plan, stream it, explain failures")
    p.add_argument("source", nargs="?", metavar="PLAN.json|run.sh", help="a plan or a launch script to run")
    p.add_argument("--preset", metavar="NAME", help="run a preset (verl-wizard presets lists them)")
    p.add_argument("--gpus", metavar="SPEC", help="nodes and GPUs, e.g. 1 or 8xH100-80GB")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="any verl override")
    p.add_argument("--python", metavar="PATH", help="the Python that has verl (default: this one)")
    p.add_argument("--steps", type=int, default=5, metavar="N", help="training steps of the smoke run (default 5)")
    p.add_argument("--val", choices=VALIDATION, default="end",
                   help="validation: end (after the last step, default), none, start (before training), both")
    p.add_argument("--dry-run", action="store_true", help="print the exact command and environment, run nothing")
    p.add_argument("--out", metavar="DIR", help="run directory: full log, command, metrics (default runs/launch-<time>)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=run_launch)


# --- reading the input into a smoke plan -----------------------------------------------------------------------

def _python(path: str | None) -> str:
    if path is None:
        return sys.executable
    p = Path(path)
    from wizard.adapters.files.disk import is_file

    if not is_file(p):
        raise UsageError(f"--python {path}: no such file")
    if not os.access(p, os.X_OK):
        raise UsageError(f"--python {path}: not executable")
    return str(p)


def prepare(args):
    """Everything a launch or a dry run needs (``wizard.usecases.launching.SmokeRun``). Raises UsageError."""
    from wizard.usecases.launching import prepare_smoke
    from wizard.usecases.runs import RUNS

    if args.steps < 1:
        raise UsageError(f"--steps must be 1 or more, not {args.steps}")
    python = _python(args.python)
    env = environment_facts(python)
    cluster, gpus, _ = hardware(args)
    base = load_plan_arg(args.source, args.preset, gpus, args.sets)[0]
    run_dir = Path(args.out or Path(RUNS) / time.strftime("launch-%Y%m%d-%H%M%S")).absolute()
    try:
        return prepare_smoke(base, python=python, run_dir=run_dir, steps=args.steps, validation=args.val,
                             environment=env, gpus=gpus, cluster=cluster)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def environment_facts(python: str):
    """What the launch needs to know of the run's Python: does flash-attn import there."""
    from wizard.adapters.verl_env.doctor import flash_attn_importable
    from wizard.core.check import EnvironmentFacts

    return EnvironmentFacts(flash_attn=flash_attn_importable(python), python=python)


# --- the command ---------------------------------------------------------------------------------------------

def run_launch(args) -> int:
    smoke = prepare(args)
    plan, result, python, cmd, run_dir, base, notes = (smoke.plan, smoke.check, smoke.python, smoke.command,
                                                       smoke.run_dir, smoke.base, smoke.notes)
    shell = smoke.shell
    if args.dry_run:
        if args.format == "json":
            print(json.dumps({"command": [python, *cmd.display], "env": cmd.env, "shell": shell, "run_dir": str(run_dir),
                              "ok": result.ok, "notes": notes, "findings": result.to_json()["findings"]}))
        else:
            for text in notes:
                print(f"verl-wizard: {text}")
            print_findings(result.findings, header="smoke run")
            print("environment (added to yours):")
            for k, v in cmd.env.items():
                print(f"  {k}={v}")
            print("command:")
            print(f"  {shell}")
            print(f"run directory: {run_dir}")
        return EXIT_OK if result.ok else EXIT_ERRORS
    if not result.ok:
        if args.format == "json":
            print(json.dumps({"event": "end", "ok": False, "exit_code": None, "started": False,
                              "findings": result.to_json()["findings"]}))
        else:
            print_findings(result.findings, header="smoke run")
            print("Not started: fix the errors above (with --set KEY=VALUE).")
        return EXIT_ERRORS
    return _run(args, plan, python, cmd, run_dir, shell, base, notes)


class _Out:
    """Where the stream goes: text for people (log lines, then the wizard's own lines), or JSON lines."""

    def __init__(self, fmt: str):
        self.json = fmt == "json"
        self.tty = sys.stdout.isatty()
        self.closed = False  # the reader of stdout went away (EPIPE): nothing more is printed

    def _print(self, text: str, flush: bool = True) -> None:
        if self.closed:
            return
        try:
            print(text, flush=flush)
        except BrokenPipeError:
            self.closed = True
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - Python flushes stdout at exit

    def flush(self) -> None:
        if not self.closed:
            try:
                sys.stdout.flush()
            except BrokenPipeError:
                self.closed = True
                sys.stdout = open(os.devnull, "w")  # noqa: SIM115

    def event(self, kind: str, **doc) -> None:
        if self.json:
            self._print(json.dumps({"event": kind, **doc}))

    def log(self, stream: str, line: str) -> None:
        if self.json:
            self.event("log", stream=stream, line=line)
        else:
            from wizard.core.run import strip_ansi

            self._print(line if self.tty else strip_ansi(line), flush=False)

    def note(self, text: str) -> None:
        if not self.json:
            self._print(f"verl-wizard: {text}")


def _recorder(run_dir: Path, base, plan, python: str, steps: int):
    """run.json and gpus.csv beside the log (``wizard.adapters.files.run_folder.RunRecorder``), NVML sampled here."""
    from wizard import __version__
    from wizard.adapters.files.run_folder import RunRecorder, now_iso
    from wizard.core.run import start_meta

    meta = start_meta(base, plan, steps=steps, python=python, started=now_iso(), wizard_version=__version__)
    return RunRecorder(run_dir, meta, own_sampler=True)


def _run(args, plan, python: str, cmd, run_dir: Path, shell: str, base, notes: list[str]) -> int:
    from wizard.adapters.processes.launcher import RunProcess
    from wizard.adapters.processes.run_dir import LaunchError, prepare_run_dir, write_command_file
    from wizard.core.run.health import Thresholds, health
    from wizard.core.run import RunLog, format_step
    from wizard.core.run.triage import triage
    from wizard.core.secrets import secret_values

    out = _Out(args.format)
    for text in notes:
        out.event("note", text=text)
        out.note(text)
    try:
        prepare_run_dir(run_dir)
        write_command_file(run_dir, shell)
    except (LaunchError, OSError) as exc:
        raise UsageError(str(exc)) from None
    # every secret of this environment is kept out of run.log, not only those the config names
    secrets = secret_values(os.environ) | secret_values(os.environ, cmd.secrets)
    run = RunProcess([python, *cmd.args], env_add=cmd.env, cwd=os.getcwd(), run_dir=run_dir, secrets=secrets)
    try:
        run.start()
    except LaunchError as exc:
        raise UsageError(str(exc)) from None
    recorder = _recorder(run_dir, base, plan, python, args.steps)
    recorder.start()
    out.event("started", pid=run.pid, run_dir=str(run_dir), command=[python, *cmd.display], env=cmd.env)
    out.note(f"started pid {run.pid}; full log in {run_dir / 'run.log'}")
    state = RunLog()
    tail: deque[str] = deque(maxlen=TRIAGE_TAIL)
    alarms: dict[str, Finding] = {}
    thresholds = Thresholds()
    metrics_file = run_dir / "metrics.jsonl"
    offset = 0
    started = last_step_at = time.monotonic()
    stop = _UserStop()
    halted: str | None = None  # why the wizard stopped the run on its own (stdout gone, run folder full)
    try:
        stop.arm()
        while not run.finished:
            if stop.signum is not None:  # the signal's exception was swallowed on the way (an except clause below)
                raise _Stopped(stop.signum)
            if out.closed or run.write_error:
                halted = run.write_error or ("the output was closed by whatever read it (e.g. `| head`): the run "
                                             "is stopped as a pipeline's writer is; use --out and run.log to follow "
                                             "a run without reading all of it")
                raise _Stopped(signal.SIGPIPE if out.closed and not run.write_error else None)
            events = []
            for stream, line in run.poll(0.5):
                out.log(stream, line)
                tail.append(line)
                events += state.feed(line)
            out.flush()  # once per batch of lines, not per line
            offset, more = tail_jsonl(metrics_file, offset, state)
            events += more
            recorder.tick(state)
            for ev in events:
                if ev.kind == "metrics":
                    last_step_at = time.monotonic()
                    if ev.value.source == "console":
                        out.event("metrics", step=ev.value.step, data=_json_safe(ev.value.data))
                        out.note(format_step(ev.value, state.total_steps))
                elif ev.kind in ("total_steps", "progress", "ray_started", "ready", "finished", "file_logger"):
                    out.event(ev.kind, value=ev.value)
                    if ev.kind == "total_steps":
                        out.note(f"{ev.value} training steps")
            since = time.monotonic() - (last_step_at if state.last_step is not None else started)
            for f in health(state.series, thresholds, max_response_length=plan.data.max_response_length,
                            seconds_since_step=since, gcs_failures=state.gcs_failures,
                            gcs_address=state.gcs_address):
                if f.rule not in alarms:
                    alarms[f.rule] = f
                    out.event("alarm", **f.to_json())
                    out.note(f"alarm: {f.message} Fix: {f.fix}")
    except _Stopped as exc:
        out.note(f"stopping the run ({halted or exc.name})")
        if halted:
            run.note(f"stopped: {halted}")
    finally:
        stop.stopping()
        report = run.stop(grace=10.0) if not run.finished or run.run_processes() else None
        for stream, line in run.drain():
            out.log(stream, line)
            tail.append(line)
            state.feed(line)
        run.close()
        stop.disarm()
    out.flush()
    code = run.returncode
    interrupted = stop.signum is not None or halted is not None
    recorder.end(code, interrupted)
    if halted:
        print(f"verl-wizard: error: the run was stopped: {halted}", file=sys.stderr)
        return 128 + signal.SIGPIPE if out.closed and not run.write_error else EXIT_ERRORS
    ok = code == 0 and not interrupted
    # after a stop the user asked for, the run's exit is no failure to explain: only the alarms seen until then
    failure = [] if interrupted else triage(tail, None if ok else (code if code is not None else -1))
    findings = sort_findings(failure + list(alarms.values()))
    progress = state.progress()
    if out.json:
        _insight(out, run_dir)  # before "end": the end event is the stream's last
        out.event("end", ok=ok, exit_code=code, run_dir=str(run_dir), log=str(run_dir / "run.log"),
                  progress=list(progress) if progress else None, findings=[f.to_json() for f in findings],
                  stopped=[*report.signalled] if report else [])
    else:
        _print_end(ok, code, run_dir, progress, findings, interrupted)
        _insight(out, run_dir)
    if interrupted:
        return 128 + stop.signum  # 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP, as a shell reports them
    return EXIT_OK if ok and not has_errors([f for f in findings if f.rule.startswith("triage.")]) else EXIT_ERRORS


class _Stopped(BaseException):
    """Raised in the watch loop by a stop signal: a BaseException, so no ``except Exception`` on the way (a log
    reader, a metrics parser) swallows it and leaves the loop watching a run nobody ends."""

    def __init__(self, signum: int | None):
        super().__init__(signum)
        self.name = "" if signum is None else signal.Signals(signum).name if signum != signal.SIGINT else "Ctrl-C"


class _UserStop:
    """Ctrl-C, SIGTERM and SIGHUP all stop the run the same way: the first one interrupts the watch loop, the
    run's whole process tree is ended, and signals that come while that happens are noted, not obeyed (a second
    Ctrl-C must not leave Ray running). The previous handlers come back afterwards."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self) -> None:
        self.signum: int | None = None
        self._saved: dict = {}
        self._watching = False

    def arm(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self._saved = {s: signal.signal(s, self._handle) for s in self.SIGNALS}
        self._watching = True

    def stopping(self) -> None:
        """From here on (the run being ended) a signal is noted, never raised."""
        self._watching = False

    def disarm(self) -> None:
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)
        self._saved = {}

    def _handle(self, signum, frame) -> None:
        if self.signum is None:
            self.signum = signum
            if self._watching:
                self._watching = False
                raise _Stopped(signum)


def _print_end(ok, code, run_dir, progress, findings, interrupted) -> None:
    print()
    if interrupted:
        print(f"verl-wizard: the run was stopped (exit code {code}).")
    elif ok:
        print("verl-wizard: the run finished OK" + (f" ({progress[0]}/{progress[1]} steps)." if progress else "."))
    else:
        print(f"verl-wizard: the run failed (exit code {code}).")
    if findings:
        print_findings(findings, header="triage")
    print(f"verl-wizard: full log: {run_dir / 'run.log'}")


def _insight(out: _Out, run_dir: Path) -> None:
    """After the run: the last step's samples verdict, where the time went, and the full run's forecast."""
    from wizard.adapters.files.run_folder import RunFolderError
    from wizard.core.run import fmt_s
    from wizard.usecases.runs import digest_run

    try:
        run = digest_run(run_dir)
    except RunFolderError:
        return
    inspected, summary, fc = run.training, run.timing, run.forecast
    if out.json:
        if inspected or summary.step_s:
            out.event("insight", samples=inspected[-1].verdict.to_json() if inspected else None,
                      step_s=summary.step_s, phases=summary.phases,
                      forecast=fc if isinstance(fc, str) else fc.to_json())
        return
    if inspected:
        out.note(f"samples, {inspected[-1].verdict.line} (verl-wizard samples {run_dir})")
    if summary.step_s:
        parts = ", ".join(f"{p} {100 * summary.share(p):.0f} %" for p in summary.shown_phases()
                          if summary.share(p) >= 0.05)
        warm = f"; step {summary.warmup.step} warm-up {fmt_s(summary.warmup.total)}" if summary.warmup else ""
        out.note(f"time: a steady step takes {fmt_s(summary.step_s)} ({parts}){warm} (verl-wizard timing {run_dir})")
        out.note(f"forecast: none ({fc})" if isinstance(fc, str) else fc.line())


def _json_safe(data: dict) -> dict:
    import math

    return {k: (None if isinstance(v, float) and (math.isnan(v) or math.isinf(v)) else v) for k, v in data.items()}
