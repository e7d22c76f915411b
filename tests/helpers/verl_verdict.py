"""The earliest stage at which the wizard says verl fails, within what verl's pre-flight probe runs: what the parity
tests (tests/conformance) compare with verl's own verdict, and bench/bench_scripts.py --verl counts."""

from wizard.core.findings import Severity, Stage

# Startup checks the probe reproduces (verl_preflight_probe.startup: the trainer's constructor, its pools, the config
# classes the workers build), so parity is asserted for them too.
PROBED_STARTUP_RULES = {
    "rollout.name", "rollout.mode", "rollout.pipeline_parallel", "rollout.config", "types.value", "fields.unknown",
    "fields.missing", "engine.config", "profiler.config", "names.trainer_mode", "names.kl_ctrl", "names.reward_manager",
    "trainer.separate_async", "trainer.hybrid_switch", "trainer.replay_buffer", "trainer.kl_horizon", "trainer.pools",
    "distillation.config", "placement.teacher_groups", "batch.ref_micro", "reward.loading", "trainer.callback_class",
    "compose.interpolation",
}
# Sections the probe cannot build on a CPU without the model's files or a run: HFModelConfig loads the model.
UNPROBED_SECTIONS = ("actor_rollout_ref.model.", "skip.")


def probed(f) -> bool:
    if f.stage is not Stage.STARTUP or f.rule not in PROBED_STARTUP_RULES:
        return False
    return not (f.rule.startswith("fields.") and any(k.startswith(UNPROBED_SECTIONS) for k in f.keys))


def wizard_stage(findings):
    """The earliest stage at which the wizard says verl fails (within what the probe runs)."""
    errors = [f for f in findings if f.severity is Severity.ERROR]
    for stage in (Stage.COMPOSE, Stage.PREFLIGHT):
        if any(f.stage is stage for f in errors):
            return stage.value
    if any(probed(f) for f in errors):
        return "startup"
    return None
