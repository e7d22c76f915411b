"""Read what a verl 0.9.1 run prints: console lines and the file logger's JSONL, into metric series.

Pure: lines in, events and series out. The launcher (adapters) and the GUI's run page feed
lines as they arrive; nothing here reads files or clocks.

Console lines come through Ray's log forwarding: ``(TaskRunnerV1 pid=466, ip=...) text``, the prefix
in ANSI colour unless ``RAY_COLOR_PREFIX=0``, sometimes a ``[repeated 3x across cluster]`` tail.
A metric line is ``step:N - key:value - ...`` where a value is ``pprint.pformat`` of a number:
``1.5``, ``np.float64(0.25)``, ``np.int64(3)``, ``True``, ``nan``, ``1e-07``
(verl ``utils/logger/aggregate_logger.py``). The file logger writes ``{"step": N, "data": {...}}``
with orjson, which writes NaN as ``null``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# (TaskRunnerV1 pid=466) / (TaskRunnerV1 pid=466, ip=10.0.0.2) / (pid=123) / (raylet) / (raylet, ip=...)
_PREFIX = re.compile(r"^\((?:(?P<actor>[\w.]+) )?(?:pid=(?P<pid>\d+)|(?P<bare>raylet|gcs_server|autoscaler|monitor))"
                     r"(?:, ip=(?P<ip>[^)]*))?\) ?")
_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]\s*$")
_NP = re.compile(r"^np\.(?:float|int|uint|bool_?|complex)\d*\((.*)\)$")
_STEP = re.compile(r"^step:(\d+)(?: - (.*))?$")
_TOTAL = re.compile(r"Total training steps: (\d+)")
_LEVEL = re.compile(r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL):\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+:(.*)$")
_RAY_LEVEL = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+\s+(DEBUG|INFO|WARNING|ERROR|CRITICAL) ")
_PROGRESS = re.compile(r"Training Progress:\s+(\d+)%\|[^|]*\|\s*(\d+)/(\d+)")
_FILE_LOGGER = re.compile(r"Creating file logger at (.+?)\s*$")
_EXC = re.compile(r"^(?:[\w.]+\.)?(\w*(?:Error|Exception|Exit|Interrupt))(?:\(\w+\))?: ")

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


@dataclass(frozen=True)
class Line:
    """One console line, taken apart: who printed it, its level if it has one, the text."""

    text: str  # without ANSI colour, Ray prefix or dedup tail
    actor: str | None = None  # TaskRunnerV1, WorkerDict, ... (None: the driver)
    pid: int | None = None
    ip: str | None = None
    level: str | None = None  # DEBUG..CRITICAL when the line says so (verl/Ray loggers, tracebacks)


@dataclass(frozen=True)
class StepMetrics:
    step: int
    data: dict[str, float]
    source: str = "console"  # console | file


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text) if "\x1b" in text else text


# Python's warnings module: "/path/file.py:12: UserWarning: text" (also FutureWarning, DeprecationWarning...).
_PY_WARNING = re.compile(r"^\S+\.py:\d+: \w*Warning: ")


def split_line(raw: str) -> Line:
    """Take a console line apart (never raises)."""
    text = strip_ansi(raw.rstrip("\r\n"))
    actor = ip = None
    pid = None
    if text.startswith("("):
        m = _PREFIX.match(text)
        if m:
            actor = m.group("actor") or m.group("bare")
            pid = int(m.group("pid")) if m.group("pid") else None
            ip = m.group("ip")
            text = text[m.end():]
    if text.endswith("]") and "[repeated" in text:
        text = _REPEATED.sub("", text)
    level = None
    m = _LEVEL.match(text)
    if m:
        level = m.group(1)
    else:
        m = _RAY_LEVEL.match(text)
        if m:
            level = m.group(1)
        elif _EXC.match(text) or text.startswith("Traceback (most recent call last)"):
            level = "ERROR"
        elif _PY_WARNING.search(text):
            level = "WARNING"
    return Line(text=text, actor=actor, pid=pid, ip=ip, level=level)


def parse_value(text: str) -> float | None:
    """A metric value as printed by pprint: numbers, numpy scalar reprs, bools, nan/inf. None if not a number."""
    t = text.strip()
    m = _NP.match(t)
    if m:
        t = m.group(1).strip()
    if t == "True":
        return 1.0
    if t == "False":
        return 0.0
    try:
        return float(t)  # handles nan, inf, -inf, 1e-07
    except ValueError:
        return None


def parse_metric_text(text: str) -> StepMetrics | None:
    """``step:N - key:value - ...`` (already without prefix) -> StepMetrics, or None."""
    if not text.startswith("step:"):
        return None
    m = _STEP.match(text.rstrip())
    if not m:
        return None
    data: dict[str, float] = {}
    if m.group(2):
        for part in m.group(2).split(" - "):
            key, sep, value = part.rpartition(":")
            if not sep or not key:
                continue
            v = parse_value(value)
            if v is not None:
                data[key] = v
    return StepMetrics(step=int(m.group(1)), data=data)


def parse_metric_line(raw: str) -> StepMetrics | None:
    """A raw console line (prefix, colour and all) -> StepMetrics, or None."""
    if "step:" not in raw:
        return None
    return parse_metric_text(split_line(raw).text)


def parse_jsonl_line(raw: str) -> StepMetrics | None:
    """One line of the file logger: ``{"step": N, "data": {...}}``; null (orjson's NaN) reads as nan."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("step"), int) or not isinstance(doc.get("data"), dict):
        return None
    data: dict[str, float] = {}
    for key, value in doc["data"].items():
        if value is None:
            data[key] = math.nan
        elif isinstance(value, bool):
            data[key] = 1.0 if value else 0.0
        elif isinstance(value, (int, float)):
            data[key] = float(value)
    return StepMetrics(step=doc["step"], data=data, source="file")


@dataclass
class Event:
    """Something the monitor shows: ``kind`` is metrics, total_steps, progress, file_logger, ray_started,
    ready, finished or error; ``value`` depends on it."""

    kind: str
    value: object = None


# Lifecycle lines (substring -> event kind), checked only on lines that are not metrics.
_GCS = re.compile(r"Failed to connect to GCS at address (\S+?) within")
_MARKERS = (
    ("Started a local Ray instance", "ray_started"),
    ("All configuration checks passed", "config_ok"),
    ("ready to fit", "ready"),
    ("Final validation metrics", "finished"),
    ("Error executing job with overrides", "error"),
)


@dataclass
class RunLog:
    """The state of a run as its lines arrive: metric series, steps, progress, markers.

    ``series[name]`` is a list of (step, value); a step logged twice (console and file) is kept once,
    the later value winning, so feeding both sources is safe.
    """

    series: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    total_steps: int | None = None
    last_step: int | None = None
    file_logger_path: str | None = None
    started_ray: bool = False
    markers: list[str] = field(default_factory=list)
    lines: int = 0
    levels: dict[str, int] = field(default_factory=dict)
    gcs_failures: int = 0  # "Failed to connect to GCS at address ..." lines: Ray cannot reach its head
    gcs_address: str | None = None
    _seen: dict[str, dict[int, int]] = field(default_factory=dict, repr=False)

    def feed(self, raw: str) -> list[Event]:
        """One console line; returns what it meant (often nothing)."""
        self.lines += 1
        events: list[Event] = []
        if "step:" in raw:
            m = parse_metric_text(split_line(raw).text)
            if m is not None:
                self.add_metrics(m)
                return [Event("metrics", m)]
        line = split_line(raw)
        if line.level:
            self.levels[line.level] = self.levels.get(line.level, 0) + 1
        text = line.text
        if "Total training steps" in text:
            t = _TOTAL.search(text)
            if t:
                self.total_steps = int(t.group(1))
                events.append(Event("total_steps", self.total_steps))
        elif "Training Progress" in text:
            p = _PROGRESS.search(text.rsplit("\r", 1)[-1])
            if p:
                done, total = int(p.group(2)), int(p.group(3))
                self.total_steps = self.total_steps or total
                events.append(Event("progress", (done, total)))
        elif "Creating file logger at" in text:
            f = _FILE_LOGGER.search(text)
            if f:
                self.file_logger_path = f.group(1)
                events.append(Event("file_logger", self.file_logger_path))
        elif "Failed to connect to GCS at address" in text:
            self.gcs_failures += 1
            g = _GCS.search(text)
            self.gcs_address = g.group(1) if g else self.gcs_address
        else:
            for needle, kind in _MARKERS:
                if needle in text:
                    if kind == "ray_started":
                        self.started_ray = True
                    self.markers.append(kind)
                    events.append(Event(kind, text))
                    break
        return events

    def feed_jsonl(self, raw: str) -> list[Event]:
        m = parse_jsonl_line(raw)
        if m is None:
            return []
        self.add_metrics(m)
        return [Event("metrics", m)]

    def add_metrics(self, m: StepMetrics) -> None:
        self.last_step = m.step if self.last_step is None else max(self.last_step, m.step)
        for key, value in m.data.items():
            points = self.series.setdefault(key, [])
            index = self._seen.setdefault(key, {})
            at = index.get(m.step)
            if at is not None:
                points[at] = (m.step, value)
            else:
                index[m.step] = len(points)
                points.append((m.step, value))

    def progress(self) -> tuple[int, int] | None:
        """(steps done, total) when the total is known: training steps start at 1, step 0 is validation."""
        if self.total_steps is None:
            return None
        return (min(self.last_step or 0, self.total_steps), self.total_steps)

    def values(self, name: str) -> list[float]:
        return [v for _, v in self.series.get(name, [])]


def format_step(m: StepMetrics, total: int | None = None, keys: tuple[str, ...] = ()) -> str:
    """A short human line for a step: the few metrics a newcomer watches."""
    keys = keys or SUMMARY_KEYS
    head = f"step {m.step}" + (f"/{total}" if total else "")
    parts = [f"{_short(k)}={_fmt(m.data[k])}" for k in keys if k in m.data]
    return head + (": " + ", ".join(parts) if parts else "")


SUMMARY_KEYS = (
    "critic/score/mean", "val-core/openai/gsm8k/acc/mean@1", "actor/kl_loss", "actor/entropy", "actor/pg_loss",
    "actor/grad_norm", "response_length/mean", "perf/throughput", "timing_s/step",
)


def _short(key: str) -> str:
    return key.replace("critic/", "").replace("actor/", "").replace("val-core/openai/gsm8k/", "val/")


def _fmt(v: float) -> str:
    if math.isnan(v) or math.isinf(v):
        return str(v)
    return f"{v:.4g}"
