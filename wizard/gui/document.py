"""The GUI's one piece of state: the Plan being edited, and its verdict.

Widgets never hold plan state; they ask this object and listen to ``changed``.
All checking is the core's (the same call the CLI makes).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from wizard.adapters.generate import plan_with_gpus, preset_plan, render_files
from wizard.adapters.resources import load_moves, load_schema
from wizard.core.check import CheckResult, check_overrides
from wizard.core.emit import emit_overrides
from wizard.core.findings import Finding
from wizard.core.gpus import GpuSpec
from wizard.core.plan import Plan
from wizard.core.plan_io import apply_overrides


class PlanDocument(QObject):
    changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.plan: Plan = Plan()
        self.gpus: GpuSpec | None = None
        self.source_findings: list[Finding] = []
        self.result: CheckResult | None = None
        self.files: dict[str, str] = {}
        self.notes: list[str] = []

    def load_preset(self, name: str) -> None:
        self.source_findings = []
        self.set_plan(preset_plan(name, self.gpus))

    def set_plan(self, plan: Plan, source_findings: list[Finding] | None = None) -> None:
        if source_findings is not None:
            self.source_findings = source_findings
        self.plan = plan
        self._recheck()

    def set_gpus(self, gpus: GpuSpec | None) -> None:
        self.gpus = gpus
        if gpus is not None:
            self.plan = plan_with_gpus(self.plan, gpus)
        self._recheck()

    def apply_fix(self, finding: Finding) -> None:
        if finding.fix_overrides:
            self.set_plan(apply_overrides(self.plan, list(finding.fix_overrides)))

    def _recheck(self) -> None:
        overrides = emit_overrides(self.plan).overrides
        self.result = check_overrides(
            load_schema(), overrides, config_name=self.plan.config_name, moves=load_moves(), gpus=self.gpus
        )
        self.files, _, self.notes = render_files(self.plan)
        self.changed.emit()

    @property
    def findings(self) -> list[Finding]:
        return (self.result.findings if self.result else []) + self.source_findings
