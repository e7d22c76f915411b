"""One verdict for a config: compose it as verl would, then run every rule."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from wizard.core.hardware.cluster import Cluster
from wizard.core.verl.compose import composed_view
from wizard.core.findings import Finding, has_errors, sort_findings
from wizard.core.hardware.gpus import GpuSpec
from wizard.core.models.facts import ModelFacts
from wizard.core.verl.moves import Moves
from wizard.core.check.rules import RuleContext, run_rules
from wizard.core.check.rules.context import EnvironmentFacts
from wizard.core.check.rules.memory import memory_values
from wizard.core.memory.report import MemoryPlan, plan_memory
from wizard.core.verl.schema import VerlSchema


# Values the adapters need after a check (files to look at, sizes to compare), resolved as verl would.
FACT_KEYS = (
    "data.train_files", "data.val_files", "data.train_batch_size", "data.max_prompt_length",
    "data.filter_overlong_prompts", "data.prompt_key", "actor_rollout_ref.model.path",
    "reward.custom_reward_function.path", "trainer.resume_mode", "trainer.default_local_dir",
    # which models verl loads (wizard.core.models.facts.model_paths) and whether it may run their code
    "critic.model.path", "critic.enable", "algorithm.adv_estimator", "algorithm.use_kl_in_reward",
    "actor_rollout_ref.actor.use_kl_loss", "actor_rollout_ref.model.lora", "actor_rollout_ref.model.lora_rank",
    "actor_rollout_ref.model.lora_adapter_path", "reward.reward_model.enable", "reward.reward_model.model_path",
    "actor_rollout_ref.model.trust_remote_code", "critic.model.trust_remote_code",
    # Python files the workers load by path (utils/import_utils.py load_module)
    "reward.reward_manager.source", "reward.reward_manager.module.path", "trainer.v1.sampler.custom_sampler.path",
)


@dataclass
class CheckResult:
    findings: list[Finding]
    engine: str = "dp"
    facts: dict = field(default_factory=dict)
    id: str | None = None
    notes: list[str] = field(default_factory=list)
    models: dict = field(default_factory=dict)  # facts of the models found, by role (set by the adapters)
    # The resolved values the memory estimate reads, and the machines it was checked against: the memory plan
    # is made from them, never by composing again.
    memory_values: dict = field(default_factory=dict)
    cluster: Cluster | None = None
    _memory: MemoryPlan | None = field(default=None, repr=False)
    # The advisor's alternatives, where a memory finding searched them for its fix (None: not searched)
    advice: object | None = field(default=None, repr=False)

    @property
    def memory(self) -> MemoryPlan:
        """Placement, estimate and verdict of this config: the one the memory rules used, or made now from the
        same values."""
        if self._memory is None:
            self._memory = plan_memory(self.memory_values, self.models, self.cluster)
        return self._memory

    @property
    def ok(self) -> bool:
        return not has_errors(self.findings)

    def to_json(self) -> dict:
        out: dict = {"id": self.id} if self.id is not None else {}
        out["ok"] = self.ok
        out["findings"] = [f.to_json() for f in self.findings]
        return out


def check_overrides(
    schema: VerlSchema,
    overrides: list[str],
    *,
    config_name: str = "ppo_trainer",
    moves: Moves | None = None,
    gpus: GpuSpec | None = None,
    case_id: str | None = None,
    models: Mapping[str, ModelFacts] | Callable[[dict], Mapping[str, ModelFacts]] | None = None,
    cluster: Cluster | None = None,
    environment: EnvironmentFacts | None = None,
    advise: bool = True,
    family: Callable[[], Sequence[ModelFacts]] | None = None,
    assumptions: Mapping[str, object] | None = None,
) -> CheckResult:
    """Compose ``overrides`` as verl would and run every rule.

    ``models`` (facts by role: actor/ref/critic/reward) and ``cluster`` (per-GPU memory and links)
    switch on the rules that need them (heads vs TP, context length, memory); without them those
    rules stay silent. ``models`` may be a function of the resolved ``FACT_KEYS`` values (the model
    paths the config names), so the adapters can look the models up within this one composition. ``advise``:
    the memory findings carry the advisor's best config that fits as their fix (a search of a few hundred
    estimates); without it they point at the advisor instead (the window asks it on a worker thread). ``family``:
    the smaller models of the actor's family the advisor may offer (asked only when it searches). ``assumptions``:
    what the user states that no verl key holds (``wizard.response_tokens``), carried with the memory values.
    """
    with composed_view(schema, overrides, config_name=config_name, moves=moves) as composed:
        findings = list(composed.findings)
        ctx = RuleContext(cfg=composed.cfg, variant=schema.variant(composed.engine), set_keys=composed.set_keys, gpus=gpus,
                      cluster=cluster, touched=composed.touched, plain_values=composed.plain_values,
                      environment=environment, advise=advise, family=family, assumptions=dict(assumptions or {}))
        facts = {key: ctx.get(key) for key in FACT_KEYS}
        ctx.models = (models(facts) if callable(models) else models) or {}
        findings.extend(run_rules(ctx))
        values = memory_values(ctx)
    return CheckResult(findings=sort_findings(findings), engine=composed.engine, id=case_id, facts=facts,
                       models=dict(ctx.models), memory_values=values, cluster=cluster,
                       _memory=ctx._memo.get("memory.plan"), advice=ctx._memo.get("memory.advice"))
