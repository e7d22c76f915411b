"""Names verl looks up in registries only when it first needs them (late failures)."""

from __future__ import annotations

import difflib

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, choices, finding

LOGGERS = ("wandb", "mlflow", "swanlab", "vemlp_wandb", "tensorboard", "console", "clearml", "trackio", "file", "rl_insight")
TRAINER_MODES = ("sync", "colocate_async", "separate_async")
ESTIMATORS = (
    "gae", "grpo", "reinforce_plus_plus", "reinforce_plus_plus_baseline", "remax", "rloo", "opo", "grpo_passk", "gpg",
    "rloo_vectorized", "grpo_vectorized", "optimal_token_baseline", "tir_optimal_token_baseline", "gdpo",
)
LOSS_MODES = (
    "vanilla", "dppo_tv", "dppo_kl", "gspo", "sapo", "gpg", "clip_cov", "kl_cov", "geo_mean", "dro", "cispo", "bypass_mode",
)
KL_TYPES = ("kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3")
REWARD_MANAGERS = ("naive", "dapo", "gdpo", "rate_limited", "remote")
GROUP_ESTIMATORS = ("grpo", "rloo", "grpo_passk", "opo", "gpg", "reinforce_plus_plus_baseline", "rloo_vectorized", "grpo_vectorized", "gdpo")
GROUP_N = 5  # rollout.n verl's GRPO/RLOO examples use: what a fix sets for a group estimator


def _did_you_mean(value, options) -> str:
    close = difflib.get_close_matches(str(value), options, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def _unknown(key, value, options, when, default_fix, rule=None):
    close = difflib.get_close_matches(str(value), options, n=1, cutoff=0.6)
    yield finding(
        Severity.ERROR,
        [key],
        f"{key}={value!r} is not a name verl 0.9.1 knows{_did_you_mean(value, options)}; verl accepts it before "
        f"launch and fails {when}",
        "One of: " + choices(options),
        [f"{key}={close[0] if close else default_fix}"] if (close or default_fix) else [],
        fix_auto=bool(close), rule=rule,
    )


def _close(value, options):
    found = difflib.get_close_matches(str(value), options, n=1, cutoff=0.6)
    return found[0] if found else None


def _logger_fix(entry) -> str:
    return entry if entry in LOGGERS else (_close(entry, LOGGERS) or "console")


@rule("names.logger", Stage.RUNTIME)
def logger(ctx: RuleContext):
    """utils/tracking.py: every trainer.logger entry must be a supported backend (checked only at fit())."""
    value = ctx.get("trainer.logger")
    entries = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    for entry in entries:
        if entry not in LOGGERS:
            yield finding(
                Severity.ERROR,
                ["trainer.logger"],
                f"trainer.logger has {entry!r}, which is not a logger verl supports{_did_you_mean(entry, LOGGERS)}; "
                f"verl fails with '{entry} is not supported' only after all models and inference servers are up",
                "Supported: " + choices(LOGGERS),
                ["trainer.logger=[" + ",".join(_logger_fix(e) for e in entries) + "]"],
                fix_auto=all(e in LOGGERS or _close(e, LOGGERS) for e in entries),
            )


@rule("names.trainer_mode", Stage.STARTUP)
def trainer_mode(ctx: RuleContext):
    """trainer_base.get_trainer_cls: trainer.v1.trainer_mode must be registered."""
    mode = ctx.get("trainer.v1.trainer_mode")
    if mode not in TRAINER_MODES:
        yield from _unknown("trainer.v1.trainer_mode", mode, TRAINER_MODES, "in the TaskRunner with: Unknown trainer", "sync")


@rule("names.adv_estimator", Stage.RUNTIME)
def adv_estimator(ctx: RuleContext):
    """core_algos.get_adv_estimator_fn: unknown names fail at the first advantage computation."""
    value = ctx.get("algorithm.adv_estimator")
    if value not in ESTIMATORS:
        yield from _unknown("algorithm.adv_estimator", value, ESTIMATORS, "at the first training step with: Unknown advantage estimator", "grpo")


@rule("names.loss_mode", Stage.RUNTIME)
def loss_mode(ctx: RuleContext):
    """core_algos.get_policy_loss_fn: unknown loss modes fail at the first update."""
    value = ctx.get("actor_rollout_ref.actor.policy_loss.loss_mode")
    if value not in LOSS_MODES:
        yield from _unknown("actor_rollout_ref.actor.policy_loss.loss_mode", value, LOSS_MODES, "at the first update with: Unsupported loss mode", "vanilla")


def _kl_name_ok(value) -> bool:
    return isinstance(value, str) and value.rstrip("+") in KL_TYPES


@rule("names.kl_type", Stage.RUNTIME, also={"names.kl_ctrl": Stage.STARTUP})
def kl_type(ctx: RuleContext):
    """core_algos.kl_penalty: unknown KL estimators (and 'full') raise NotImplementedError at the first step."""
    pairs = []
    if ctx.get("actor_rollout_ref.actor.use_kl_loss"):
        pairs.append("actor_rollout_ref.actor.kl_loss_type")
    if ctx.get("algorithm.use_kl_in_reward"):
        pairs.append("algorithm.kl_penalty")
    for key in pairs:
        value = ctx.get(key)
        if not _kl_name_ok(value):
            yield from _unknown(key, value, KL_TYPES, "at the first step with a bare NotImplementedError", "low_var_kl")
    if ctx.get("algorithm.use_kl_in_reward") and ctx.get("algorithm.kl_ctrl.type") not in ("fixed", "adaptive"):
        yield from _unknown("algorithm.kl_ctrl.type", ctx.get("algorithm.kl_ctrl.type"), ("fixed", "adaptive"),
                            "when the trainer starts with a bare NotImplementedError", "fixed", rule="names.kl_ctrl")


@rule("names.reward_manager", Stage.STARTUP)
def reward_manager(ctx: RuleContext):
    """reward_manager/registry.py: the reward manager is looked up in each reward worker."""
    if ctx.get("reward.reward_manager.source") != "register":
        return
    value = ctx.get("reward.reward_manager.name")
    if value not in REWARD_MANAGERS:
        yield from _unknown("reward.reward_manager.name", value, REWARD_MANAGERS, "when reward workers start with: Unknown reward manager", "naive")


@rule("advice.group_size", Stage.ADVICE)
def group_size(ctx: RuleContext):
    """Group estimators compare responses to the same prompt; with one response the advantage is 0."""
    est, n = ctx.get("algorithm.adv_estimator"), ctx.int("actor_rollout_ref.rollout.n")
    if est in GROUP_ESTIMATORS and n == 1:  # below 1: batch.no_responses
        yield finding(
            Severity.WARNING,
            ["actor_rollout_ref.rollout.n", "algorithm.adv_estimator"],
            f"{est} normalises rewards within a group of responses to one prompt, but rollout.n={n}: every "
            "advantage is 0 and the policy does not learn (verl raises no error)",
            f"Sample several responses per prompt: actor_rollout_ref.rollout.n={GROUP_N} (and check batch sizes again)",
            [f"actor_rollout_ref.rollout.n={GROUP_N}"],
            fix_auto=False,
        )


# checkpoint_engine/*.py @CheckpointEngineRegistry.register (some need their transport library installed)
CHECKPOINT_ENGINES = ("naive", "nccl", "nixl", "mooncake", "kimi_ckpt_engine", "delta_sharded")
AGENT_LOOPS = ("single_turn_agent", "tool_agent")  # experimental/agent_loop/*.py @register


@rule("names.checkpoint_engine", Stage.STARTUP)
def checkpoint_engine(ctx: RuleContext):
    """engine_workers.py:679 / checkpoint_engine/base.py:98: the actor worker builds the weight-sync engine by name."""
    value = ctx.get("actor_rollout_ref.rollout.checkpoint_engine.backend")
    if value not in CHECKPOINT_ENGINES and not ctx.get("actor_rollout_ref.rollout.checkpoint_engine.custom_backend_module"):
        yield from _unknown("actor_rollout_ref.rollout.checkpoint_engine.backend",
                            value, CHECKPOINT_ENGINES, "when the actor workers start with: Checkpoint engine ... not registered", "naive")


@rule("names.agent_loop", Stage.RUNTIME)
def agent_loop(ctx: RuleContext):
    """agent_loop.py:678: every prompt runs the agent loop its data row or rollout.agent.default_agent_loop names."""
    key = "actor_rollout_ref.rollout.agent.default_agent_loop"
    value = ctx.get(key)
    if value not in AGENT_LOOPS and not ctx.get("actor_rollout_ref.rollout.agent.agent_loop_config_path"):
        yield from _unknown(key, value, AGENT_LOOPS,
                            "at the first generation, for every prompt, with: Agent loop ... not registered", "single_turn_agent")
