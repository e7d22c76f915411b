"""One plan's memory: where each role runs, the estimate per GPU and phase, and the verdict, from values already
resolved (no composition here: the check composes once and hands its values in, see
``wizard.core.check.verdict.CheckResult.memory``).

The memory rules, ``plan``, the findings dock and the placement board all read the same :class:`MemoryPlan`, so the
estimate is made once per plan and the verdict's search for the longest fitting sample once per GPU group.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from wizard.core.hardware.cluster import Cluster
from wizard.core.memory.estimate import GpuEstimate, MemoryReport, estimate_memory
from wizard.core.memory.verdict import Verdict, fitting_sample_tokens, memory_verdict
from wizard.core.models.facts import ModelFacts
from wizard.core.placement.models import Placement
from wizard.core.placement.pools import plan_placement

UNKNOWN_GPU_MEMORY = ("the GPUs' memory is unknown: name the GPU model (--gpus 8xH100-80GB or --cluster FILE on the "
                      "command line; the GPUs field of the Start step or the Hardware step in the window)")


@dataclass
class MemoryPlan:
    """The memory side of one plan: ``report`` is the estimate (None, with ``estimate_why``, when it cannot be made);
    ``why`` says why there is nothing to judge, also where no GPU's memory is known."""

    values: Mapping
    models: Mapping[str, ModelFacts]
    cluster: Cluster | None
    placement: Placement
    report: MemoryReport | None
    estimate_why: str | None
    _fitting: dict = field(default_factory=dict, repr=False)

    @property
    def why(self) -> str | None:
        """Why there is no report to judge (None when there is one). GPUs the config asks for and the cluster lacks
        come before their memory: with none of the pool's GPUs placed, no group has a capacity either."""
        if self.report is not None and (short := self.short_of_gpus):
            return short
        if self.report is not None and all(g.capacity_bytes is None for g in self.report.groups):
            return UNKNOWN_GPU_MEMORY
        return self.estimate_why or self.short_of_gpus

    @property
    def short_of_gpus(self) -> str | None:
        """Why a verdict or a step time on this cluster would be about GPUs that are not there (None: all are): it
        would say FITS for a run verl refuses (gpus.available says so)."""
        missing = sum(p.missing for p in self.placement.pools)
        if self.cluster is None or not missing:
            return None
        need, have = self.placement.gpus_needed, self.cluster.gpu_total
        # a pool's GPUs of one node must be on one node: 16 a node on 8-GPU nodes are all missing, of 8 there
        shape = (f" ({missing} of them do not fit the nodes' shape: a pool's GPUs of one node must be on one node)"
                 if have >= need else "")
        return (f"the config asks for {need} GPUs and the cluster has {have}{shape}: size the config to the "
                "cluster (trainer.nnodes x trainer.n_gpus_per_node), or name the cluster it will run on")

    @property
    def judged(self) -> MemoryReport | None:
        """The report when there is something to judge; None where ``why`` says why not."""
        return self.report if self.why is None else None

    @cached_property
    def verdict(self) -> Verdict:
        """fits / tight / fits while short / does not fit, or none with the reason (the words every output uses)."""
        return memory_verdict(self.report, self.values, self.models, self.cluster, self.why,
                              fitting=self.fitting_tokens)

    def fitting_tokens(self, group: GpuEstimate) -> int | None:
        """The longest average sample at which ``group`` still fits (searched once per group and plan)."""
        key = (group.pool, group.capacity_bytes, group.peak.name)
        if key not in self._fitting:
            self._fitting[key] = fitting_sample_tokens(self.values, self.models, self.cluster, group)
        return self._fitting[key]


def plan_memory(values: Mapping, models: Mapping[str, ModelFacts] | None = None,
                cluster: Cluster | None = None) -> MemoryPlan:
    """Place the roles and estimate their memory for ``values`` (the resolved ``MEMORY_KEYS``)."""
    models = dict(models or {})
    placement = plan_placement(values, cluster)
    report, why = estimate_memory(values, models, cluster)
    return MemoryPlan(values=values, models=models, cluster=cluster, placement=placement, report=report,
                      estimate_why=why)
