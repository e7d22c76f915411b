"""The root cause of a failed run: the distinct exceptions of every process, and the one that explains the rest.

A verl run prints from many processes (the driver, the TaskRunner, workers, agent-loop and reward workers; Ray
prefixes each line with its actor). The last error is usually not the cause: an agent loop that fails for every
trajectory ends the run with "replay buffer selected terminal groups with no materializable trajectories"; a model
that cannot be downloaded ends it with Hydra's "Error in call to target ... HFModelConfig". This module clusters the
exceptions (type and message, numbers and ids masked), links them the way Python prints chains ("The above
exception was the direct cause...", "During handling...", Hydra's wrapped exception on the next line), and picks:
the earliest cause of the run's final error; or, when that error is known fallout (an empty replay buffer, a dead
actor, a collective timeout), the earliest distinct error before it, the most repeated first.

Pure: prefix-free log lines in, clusters out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_EXC = re.compile(r"^(?:[A-Za-z_]\w*\.)*(?P<type>[A-Z]\w*(?:Error|Exception|Exit|Interrupt))"
                  r"(?:\((?P<wrapped>\w+)\))?(?::\s*(?P<msg>.*))?$")
_INNER = re.compile(r"^(?P<type>[A-Z]\w*(?:Error|Exception))\((?P<q>['\"])(?P<msg>.*?)(?:(?P=q)\)?)?$")
_MARKERS = ("The above exception was the direct cause of the following exception",
            "During handling of the above exception, another exception occurred")
_MASK = (re.compile(r"0x[0-9a-fA-F]+"), re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f-]{27,}\b"),
         re.compile(r"\b[0-9a-f]{16,}\b"), re.compile(r"pid=\d+"))
# The run's final error is often a consequence of an earlier one; these say so by themselves.
# vLLM's engine processes print their tracebacks through its logger, behind the process and the log record:
# "(Worker pid=8396) ERROR 12-05 04:32:43 [multiproc_executor.py:1000] IndexError: ..."
_LOGGED = re.compile(r"^(?:\(\w+ pid=\d+\) )?(?:ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d \[[\w./-]+:\d+\] ")
FALLOUT = re.compile(r"no materializable trajectories|ActorDiedError|actor died unexpectedly|"
                     r"collective operation timeout|DistBackendError|GetTimeoutError|ActorUnavailableError")


@dataclass
class Cluster:
    """One distinct exception: where it first appears, how often, in which processes, and its links."""

    type: str
    message: str  # as first printed (one line)
    first: int  # index of the first line it appears on
    last: int = 0  # and of the last
    count: int = 0
    processes: list[str] = field(default_factory=list)
    causes: set[int] = field(default_factory=set)  # ids of clusters that caused it
    id: int = 0

    @property
    def text(self) -> str:
        return f"{self.type}: {self.message}" if self.message else self.type

    @property
    def fallout(self) -> bool:
        return bool(FALLOUT.search(self.text))


def _key(type_: str, message: str) -> tuple[str, str]:
    text = message.split("\\n")[0].strip().strip("'\"")
    for pattern in _MASK:
        text = pattern.sub("#", text)
    return type_, " ".join(text.split())[:240]


class Analysis:
    """Clusters and causal links over a run's lines; ``root`` is the answer."""

    def __init__(self, lines: list[tuple[str | None, str]]):
        self.clusters: list[Cluster] = []
        self._by_key: dict[tuple[str, str], Cluster] = {}
        last: dict[str | None, Cluster] = {}
        pending: dict[str | None, Cluster] = {}
        for i, (process, text) in enumerate(lines):
            stripped = text.strip()
            if stripped.startswith(_MARKERS):
                if process in last:
                    pending[process] = last[process]
                continue
            found = self._exception(lines, i, process, text)
            if found is None:
                continue
            cause = pending.pop(process, None)
            if cause is not None and cause is not found:
                found.causes.add(cause.id)
            last[process] = found

    def _exception(self, lines, i: int, process: str | None, text: str) -> Cluster | None:
        m = _EXC.match(text)
        if not m or (m.group("msg") is None and not (i and lines[i - 1][1].startswith((" ", "\t")))):
            return None
        type_, msg = m.group("type"), (m.group("msg") or "").strip()
        if m.group("wrapped") or type_ == "RayTaskError":
            return None  # Ray's wrapper: the remote error is printed on its own line
        if type_ == "InstantiationException" and i + 1 < len(lines):
            inner = _INNER.match(lines[i + 1][1].strip())
            if inner:  # Hydra: "Error in call to target 'X':" then the real error, repr'd, on the next line
                return self._add(inner.group("type"), inner.group("msg"), i + 1, process, count=False)
        return self._add(type_, msg, i, process)

    def _add(self, type_: str, msg: str, i: int, process: str | None, count: bool = True) -> Cluster:
        key = _key(type_, msg)
        cluster = self._by_key.get(key)
        if cluster is None:
            cluster = Cluster(type_, msg.split("\\n")[0], i, id=len(self.clusters))
            self._by_key[key] = cluster
            self.clusters.append(cluster)
        cluster.count += 1 if count or not cluster.count else 0
        cluster.last = i
        name = process or "driver"
        if name not in cluster.processes:
            cluster.processes.append(name)
        return cluster

    def ancestors(self, cluster: Cluster) -> list[Cluster]:
        """Every cluster that led to ``cluster`` through printed chains, ``cluster`` included, earliest first."""
        seen, todo = {cluster.id}, [cluster]
        while todo:
            for cid in todo.pop().causes:
                if cid not in seen:
                    seen.add(cid)
                    todo.append(self.clusters[cid])
        return sorted((self.clusters[c] for c in seen), key=lambda c: c.first)

    def final(self) -> Cluster | None:
        """The run's last error (the one it stopped with)."""
        return max(self.clusters, key=lambda c: c.last, default=None)

    def root(self) -> tuple[Cluster, Cluster] | None:
        """(root cause, the final error it explains); None when the log shows no exception."""
        final = self.final()
        if final is None:
            return None
        chain = self.ancestors(final)
        root = chain[0]
        if root is final and final.fallout:
            before = [c for c in self.clusters if c.first < final.first and not c.fallout]
            if before:
                root = min(before, key=lambda c: (c.first, -c.count))
                root = self.ancestors(root)[0]
        return root, final


def analyse(lines: list[tuple[str | None, str]]) -> Analysis:
    """``lines`` are (process, text): the Ray actor (with its pid) or None for the driver, and the text without
    Ray's prefix or colours (a vLLM logger's prefix is taken off here)."""
    return Analysis([(process, _LOGGED.sub("", text)) for process, text in lines])


__all__ = ["Analysis", "Cluster", "analyse", "FALLOUT"]
