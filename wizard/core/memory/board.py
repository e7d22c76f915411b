"""The placement board's picture of one plan: where its roles run, how full each GPU gets, and the verdict.

:class:`BoardState` is a :class:`~wizard.core.placement.board.PlacedPlan` (pools, replicas, the moves it offers)
plus the memory estimate per GPU and the findings; :func:`fit_verdict` says ok / tight / OOM with the margin the
memory rules use, and :func:`headline` names the worst GPU. It lives with the memory estimate rather than with
the placement because the estimate itself places the roles first (memory imports placement, never back).

Pure: the plan's memory plan and findings are handed in, both from the plan's one check
(``wizard.usecases.board``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wizard.core.findings import Finding, sort_findings
from wizard.core.memory.estimate import GpuEstimate, MemoryReport
from wizard.core.memory.report import MemoryPlan
from wizard.core.memory.terms import GIB
from wizard.core.memory.verdict import Verdict
from wizard.core.placement.board import PlacedPlan
from wizard.core.plan.model import Plan

OK, TIGHT, OOM, UNKNOWN = "ok", "tight", "oom", "unknown"
# over its memory at the configured lengths, in a plan whose verdict is "fits while samples average <= N tokens":
# the GPU runs out of memory only on samples that long, not "OOM" beside a headline that says it fits
SHORT = "short"
HEADLINE_WORDS = {OK: "Fits", TIGHT: "Fits, tight", OOM: "Does not fit", UNKNOWN: "Unknown",
                  SHORT: "Fits while samples are short"}


@dataclass
class BoardState(PlacedPlan):
    """One plan as the board draws it: its placement, the estimate of each GPU, why there is none, the findings."""

    report: MemoryReport | None = None
    why: str | None = None  # why there is no report
    findings: list[Finding] = field(default_factory=list)
    by_gpu: dict[tuple[str, int], GpuEstimate] = field(default_factory=dict)
    # The plan's verdict in the words plan and check use: fits / tight / fits while short / does not fit / none.
    verdict: Verdict | None = None

    def estimate_of(self, node: str, index: int) -> GpuEstimate | None:
        return self.by_gpu.get((node, index))


def board_state(plan: Plan, memory: MemoryPlan, findings: list[Finding]) -> BoardState:
    """The board's picture of ``plan`` from its memory plan (made on the board's machine) and its findings, both
    from the plan's one check."""
    mp = memory
    report = mp.judged
    by_gpu = {(g.node, g.index): grp for grp in (report.groups if report else []) for g in grp.gpus}
    return BoardState(plan=plan, values=mp.values, placement=mp.placement, report=report, why=mp.why,
                      findings=sort_findings(list(findings)), by_gpu=by_gpu, verdict=mp.verdict)


def fit_verdict(report: MemoryReport | None, group: GpuEstimate | None, total: int | None = None,
                short: bool = False) -> str:
    """OK / tight / OOM of one GPU (or of one phase's ``total``), with the margin the memory rules use; ``short``:
    the plan fits while samples are short (its verdict), so over memory at the configured lengths is SHORT."""
    if report is None or group is None or group.capacity_bytes is None:
        return UNKNOWN
    cap = group.capacity_bytes
    used = group.peak.total if total is None else total
    if used > cap:
        return SHORT if short else OOM
    return TIGHT if used > cap - report.tight_margin(cap) else OK


def headline(state: BoardState) -> str:
    """The board's verdict in one line: "Fits, tight: worst GPU 74.1 of 80.0 GiB in the generation phase (global_pool)"."""
    r = state.report
    if r is None:
        return f"No memory estimate: {state.why}" if state.why else "No memory estimate"
    known = [g for g in r.groups if g.capacity_bytes]
    if not known:
        return "No memory estimate: the GPUs' memory is unknown"
    if r.unmodelled:
        return f"No memory verdict: {r.unmodelled}"
    worst = max(known, key=lambda g: g.peak.total / g.capacity_bytes)
    v = state.verdict
    word = v.text().capitalize() if v is not None and v.word is not None else HEADLINE_WORDS[fit_verdict(r, worst)]
    return (f"{word}: worst GPU {worst.peak.total / GIB:.1f} of {worst.capacity_bytes / GIB:.1f} GiB in the "
            f"{worst.peak.title} phase ({worst.pool})")
