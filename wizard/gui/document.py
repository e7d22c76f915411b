"""The GUI's one piece of state: the Plan being edited, the dataflow graph as drawn, and the verdict.

Widgets never hold edit state; they ask this object and listen to ``changed``. Every edit is one undo command
that swaps the document's whole state (plan, GPUs, machines, import findings, graph, the response length the step
times assume) for another, so undo works
the same whether or not the widget that made the edit still exists; an edit that changes nothing pushes nothing.
All checking is the core's (the same call the CLI makes).
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from wizard.adapters.files.session_store import save_session
from wizard.core.check import CheckResult
from wizard.core.hardware import Cluster
from wizard.usecases.assessment import Assessment, assess_plan
from wizard.usecases.board import board_machine
from wizard.usecases.hardware import machines_for
from wizard.usecases.plan_notes import plan_notes
from wizard.usecases.plans import plan_with_gpus, preset_plan
from wizard.core.dataflow import Graph, graph_for_plan, plan_from_graph
from wizard.core.findings import Finding, Severity, Stage, plan_fix, sort_findings
from wizard.core.verl import one_line
from wizard.core.hardware import GpuSpec
from wizard.core.plan import Plan, apply_fix


_KEEP = object()  # PlanDocument._state_with: keep the document's own value
FIELDS = "fields"  # context findings: fields holding text they cannot take (set_field_error)


class _SetState(QUndoCommand):
    """One edit of the document: undo puts the previous state back (plans and graphs are immutable values). Edits
    of one ``merge`` kind in a row (the response length stepped with the arrows) are one undo step."""

    MERGING = 1

    def __init__(self, doc: PlanDocument, old: tuple, new: tuple, text: str, merge: str | None = None) -> None:
        super().__init__(text)
        self.doc, self.old, self.new, self.merge = doc, old, new, merge

    def id(self) -> int:  # noqa: A003 - Qt's name
        return self.MERGING if self.merge else -1

    def mergeWith(self, other: QUndoCommand) -> bool:  # noqa: N802 - Qt's name
        if not isinstance(other, _SetState) or other.merge != self.merge:
            return False
        self.new = other.new
        self.setText(other.text())
        return True

    def redo(self) -> None:
        self.doc._restore(self.new)

    def undo(self) -> None:
        self.doc._restore(self.old)


class PlanDocument(QObject):
    changed = Signal()

    def __init__(self, parent: QObject | None = None, autosave: bool = True) -> None:
        super().__init__(parent)
        self.plan: Plan = Plan()
        # The dataflow graph as drawn: it says what the plan's keys say, and may hold what no key can (a cut link).
        self.graph: Graph = graph_for_plan(self.plan)
        self.gpus: GpuSpec | None = None
        self.cluster: Cluster | None = None  # detected or planned machines, when the user chose some
        # The mean response length the step times assume (None: every response runs to max_response_length, the
        # worst case); the user states it or takes it from a smoke run. No verl key holds it.
        self.response_tokens: int | None = None
        self.context_findings: dict[str, list[Finding]] = {}  # e.g. "environment": doctor's verdict
        self.environment: dict | None = None  # the Environment step's probe, summarised (run records, reports)
        self._model_cache: dict = {}  # model folders read once per session (config.json, tokenizer, headers)
        self.path: str | None = None  # the plan file this document was opened from or saved to
        self.source_findings: list[Finding] = []
        # The plan judged once per edit (one composition, one estimate) on ``machine``: the findings dock, every
        # page and the placement board read it.
        self.assessment: Assessment | None = None
        self.machine: Cluster | None = None  # the machines the plan is judged and drawn on (see board_machine)
        self.check_error: Finding | None = None  # the check itself failed (a bug): shown as a finding
        self.files: dict[str, str] = {}
        self.overrides: list[str] = []  # the plan's verl overrides, as run.sh and config.yaml hold them
        self.notes: list[str] = []
        self.undo_stack = QUndoStack(self)
        self.autosave = autosave
        self._autosave_timer = QTimer(self)
        self._autosave_timer.setSingleShot(True)
        self._autosave_timer.setInterval(300)
        self._autosave_timer.timeout.connect(self.save_now)

    # -- edits: every one is an undoable command, and returns whether it changed anything -------------------------
    def load_preset(self, name: str) -> bool:
        """Another run: the response length stated for the last one does not carry over."""
        return self._push(self._state_with(preset_plan(name, self.gpus), [], response_tokens=None), f"Preset {name}")

    def set_plan(self, plan: Plan, source_findings: list[Finding] | None = None, text: str = "Edit plan",
                 another_run: bool = False) -> bool:
        """``plan`` in place of the document's (one undo step); ``another_run`` (an opened or imported file): the
        response length stated for the last plan does not carry over."""
        keep = None if another_run else _KEEP
        return self._push(self._state_with(plan, source_findings, response_tokens=keep), text)

    def set_graph(self, graph: Graph, text: str) -> bool:
        """Draw ``graph`` and set the plan's keys to what it means, as one undo step."""
        return self._push(self._state_with(plan_from_graph(graph, self.plan), graph=graph), text)

    def set_gpus(self, gpus: GpuSpec | None) -> bool:
        plan = plan_with_gpus(self.plan, gpus) if gpus is not None else self.plan
        cluster = self.cluster
        if cluster is not None and cluster.to_gpu_spec() != gpus:
            cluster = None  # typed by hand: the detected machines no longer describe the plan
        return self._push(self._state_with(plan, gpus=gpus, cluster=cluster), f"GPUs {gpus or 'as planned'}")

    def set_cluster(self, cluster: Cluster | None) -> bool:
        """Plan for these machines: the GPU shape follows them, memory rules use their sizes."""
        gpus = cluster.to_gpu_spec() if cluster is not None else None
        plan = plan_with_gpus(self.plan, gpus) if gpus is not None else self.plan
        return self._push(self._state_with(plan, gpus=gpus, cluster=cluster), f"Use {gpus or 'the planned GPUs'}")

    def set_response_tokens(self, tokens: int | None, text: str | None = None) -> bool:
        """The mean response length the step times (the plan's and the advisor's) assume; None: the maximum."""
        tokens = tokens if tokens and tokens > 0 else None
        words = text or (f"Responses average {tokens:,} tokens" if tokens else "Responses as long as allowed")
        return self._push(self._state_with(self.plan, response_tokens=tokens), words, merge="responses")

    def set_field_error(self, key: str, message: str | None) -> None:
        """A field holding text it cannot take (``message``; None: no more): an error in the Findings, about its key,
        that holds writing back; not an edit of the plan, which keeps its value."""
        errors = {f.keys[0]: f for f in self.context_findings.get(FIELDS, [])}
        if message is None:
            if errors.pop(key, None) is None:
                return
        else:
            errors[key] = Finding(rule="field.unreadable", severity=Severity.ERROR, stage=Stage.COMPOSE, keys=[key],
                                  message=message, fix="Type a value the field takes (or undo to the plan's value)")
        self.set_context_findings(FIELDS, list(errors.values()))

    def set_context_findings(self, name: str, findings: list[Finding]) -> None:
        """Findings about the surroundings (the environment), not an edit: not undoable."""
        self.context_findings[name] = list(findings)
        self.changed.emit()

    def apply_fix(self, finding: Finding) -> bool:
        """Apply ``finding``'s fix to the plan, as one undo step; an environment finding has none (``plan_fix``)."""
        if not plan_fix(finding):
            return False
        return self._push(self._state_with(apply_fix(self.plan, finding)), f"Fix {finding.rule}")

    def _state(self) -> tuple:
        return (self.plan, self.gpus, self.cluster, self.source_findings, self.graph, self.response_tokens)

    def _state_with(self, plan: Plan, source_findings: list[Finding] | None = None, graph: Graph | None = None,
                    gpus=_KEEP, cluster=_KEEP, response_tokens=_KEEP) -> tuple:
        """The document's state with ``plan``; the graph drawn for it, unless given, is the one on screen while it
        still says what ``plan`` says (it may hold a cut link), else the plan's own."""
        return (plan, self.gpus if gpus is _KEEP else gpus,
                self.cluster if cluster is _KEEP else cluster,
                self.source_findings if source_findings is None else source_findings,
                graph_for_plan(plan, self.graph) if graph is None else graph,
                self.response_tokens if response_tokens is _KEEP else response_tokens)

    def _push(self, new: tuple, text: str, merge: str | None = None) -> bool:
        """One undo step to ``new``; nothing is pushed when it is the state the document is in."""
        old = self._state()
        if new == old:
            return False
        self.undo_stack.push(_SetState(self, old, new, text, merge))
        return True

    def _restore(self, state: tuple) -> None:
        self.plan, self.gpus, self.cluster, self.source_findings, self.graph, self.response_tokens = state
        self._recheck()
        if self.autosave:
            self._autosave_timer.start()

    def assumptions(self) -> dict | None:
        """What the user states that no verl key holds, for the assessment (the step times read it)."""
        from wizard.core.steptime import RESPONSE_TOKENS

        return {RESPONSE_TOKENS: self.response_tokens} if self.response_tokens else None

    @property
    def result(self) -> CheckResult | None:
        """The check's part of the assessment (findings, models, engine)."""
        return self.assessment.result if self.assessment is not None else None

    def effective_cluster(self) -> Cluster | None:
        """The machines chosen on the Hardware step, else those a typed GPU spec (8xH100-80GB) describes (None for
        an unknown GPU model: the check says so through the GPU spec itself)."""
        if self.cluster is not None:
            return self.cluster
        return machines_for(self.gpus) if self.gpus is not None and self.gpus.model else None

    def save_now(self) -> None:
        save_session({"plan": self.plan.model_dump(mode="json"), "gpus": str(self.gpus) if self.gpus else None,
                      "response_tokens": self.response_tokens})

    def _recheck(self) -> None:
        self.files, self.overrides, self.notes = {}, [], []  # never the previous plan's files under this one's name
        try:
            self.machine = board_machine(self.plan, self.effective_cluster(), self.machine)
            # the advisor's search runs on a worker thread when asked (Make it fit), never on an edit
            self.assessment = assess_plan(self.plan, gpus=self.gpus, cluster=self.machine,
                                          model_cache=self._model_cache, local_files=True, advise=False,
                                          assumptions=self.assumptions())
            # what `plan` adds to the check's findings (memory not checked, and why), in the same words
            if notes := plan_notes(self.assessment.memory, self.assessment.findings):
                self.assessment.findings = sort_findings(self.assessment.findings + notes)
            self.files, self.overrides, self.notes = (self.assessment.files, self.assessment.overrides,
                                                      self.assessment.notes)  # the overrides run.sh holds
            self.check_error = None
        except Exception as exc:  # noqa: BLE001 - a bug in a rule: say so, never keep an old verdict silently
            self.assessment = None
            self.check_error = Finding(
                rule="wizard.internal_error", severity=Severity.ERROR, stage=Stage.COMPOSE, keys=[],
                message=f"verl-wizard's own check failed ({type(exc).__name__}: {one_line(str(exc))}); no verdict "
                "for this plan",
                fix="Undo the last edit, or save the plan (File ▸ Save plan) and report it with that file")
        self.changed.emit()

    @property
    def plan_errors(self) -> list[Finding]:
        """The errors of the plan itself (not of the machine the wizard runs on): what holds writing back."""
        own = ([self.check_error] if self.check_error is not None else []) + (
            self.result.findings if self.result else []) + self.source_findings + self.context_findings.get(FIELDS, [])
        return [f for f in own if f.severity is Severity.ERROR]

    @property
    def findings(self) -> list[Finding]:
        extra = [f for findings in self.context_findings.values() for f in findings]
        errors = [self.check_error] if self.check_error is not None else []
        return errors + (self.result.findings if self.result else []) + self.source_findings + extra
