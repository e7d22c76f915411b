"""One call for ``plan`` and the GUI: compose a config as verl would, then estimate its memory and placement and
judge it (:mod:`wizard.core.memory.verdict`).

The findings come from ``check_overrides`` (with the same models and cluster, so the memory rules agree with
this report); this module only adds the report itself, read from the same composed values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wizard.core.hardware.cluster import Cluster
from wizard.core.verl.compose import composed_view
from wizard.core.memory.estimate import MemoryReport, estimate_memory
from wizard.core.memory.config import MEMORY_KEYS
from wizard.core.memory.verdict import Verdict, memory_verdict
from wizard.core.models.facts import ModelFacts
from wizard.core.verl.moves import Moves
from wizard.core.verl.resolved import UNRESOLVABLE, ResolvedConfig
from wizard.core.placement.pools import Placement, plan_placement
from wizard.core.verl.schema import VerlSchema


@dataclass
class MemoryPlan:
    values: dict
    placement: Placement
    report: MemoryReport | None
    why: str | None  # why there is no report
    verdict: Verdict  # fits / tight / fits while short / does not fit, or none with the reason


def memory_plan(schema: VerlSchema, overrides: list[str], *, config_name: str = "ppo_trainer",
                moves: Moves | None = None, models: Mapping[str, ModelFacts] | None = None,
                cluster: Cluster | None = None) -> MemoryPlan:
    with composed_view(schema, overrides, config_name=config_name, moves=moves) as composed:
        ctx = ResolvedConfig(cfg=composed.cfg, variant=schema.variant(composed.engine), set_keys=composed.set_keys)
        values = {k: v for k in MEMORY_KEYS if (v := ctx.get(k)) is not UNRESOLVABLE}
    placement = plan_placement(values, cluster)
    report, why = estimate_memory(values, models or {}, cluster)
    if report is not None and all(g.capacity_bytes is None for g in report.groups):
        why = ("the GPUs' memory is unknown: name the GPU model (--gpus 8xH100-80GB or --cluster FILE on the command "
               "line; the GPUs field of the Start step or the Hardware step in the window)")
    verdict = memory_verdict(report, values, models or {}, cluster, why)
    return MemoryPlan(values=values, placement=placement, report=report, why=why, verdict=verdict)
