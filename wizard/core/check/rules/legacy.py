"""Keys verl accepts and then ignores, and other silent traps."""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding

# What migrate_legacy_reward_impl would do (verl experimental/reward_loop/reward_loop.py:39-89);
# main_ppo never calls it, so these keys compose and are ignored.
LEGACY_REWARD = {
    "custom_reward_function.path": "reward.custom_reward_function.path",
    "custom_reward_function.name": "reward.custom_reward_function.name",
    "reward_model.num_workers": "reward.num_workers",
    "reward_model.reward_manager": "reward.reward_manager.name",
    "reward_model.reward_loop_source": "reward.reward_manager.source",
    "reward_model.reward_loop_module_path": "reward.reward_manager.module.path",
    "reward_model.reward_loop_class_name": "reward.reward_manager.name",
    "reward_model.enable": "reward.reward_model.enable",
    "reward_model.enable_resource_pool": "reward.reward_model.enable_resource_pool",
    "reward_model.n_gpus_per_node": "reward.reward_model.n_gpus_per_node",
    "reward_model.nnodes": "reward.reward_model.nnodes",
    "reward_model.model.path": "reward.reward_model.model_path",
    "sandbox_fusion.url": "reward.sandbox_fusion.url",
    "sandbox_fusion.max_concurrent": "reward.sandbox_fusion.max_concurrent",
    "sandbox_fusion.memory_limit_mb": "reward.sandbox_fusion.memory_limit_mb",
}
IGNORED_BY_V1 = ("trainer.balance_batch", "trainer.esi_redundant_time", "trainer.ray_wait_register_center_timeout")


def _new_key(key: str) -> str | None:
    if key in LEGACY_REWARD:
        return LEGACY_REWARD[key]
    if key.startswith("reward_model.rollout."):
        return "reward.reward_model.rollout." + key[len("reward_model.rollout.") :]
    if key.startswith("reward_model.model."):
        return None
    return None


@rule("legacy.reward_keys", Stage.ADVICE)
def legacy_reward_keys(ctx: RuleContext):
    """verl 0.9.1's main_ppo reads only reward.*; the old top-level keys still compose and do nothing."""
    for key in sorted(ctx.set_keys):
        if not key.startswith(("custom_reward_function.", "reward_model.", "sandbox_fusion.")):
            continue
        value = ctx.get(key)
        if value is None:
            continue
        new = _new_key(key)
        yield finding(
            Severity.WARNING,
            [key],
            f"{key} is a verl 0.8 key: 0.9.1 still accepts it but main_ppo ignores it, so your setting "
            f"({value!r}) has no effect" + (f"; the 0.9.1 key is {new}" if new else ""),
            f"Set {new} instead" if new else "Remove it",
            [f"{key}=null"] + ([f"{new}={_render(value)}"] if new else []),
        )


def _render(value) -> str:
    from wizard.core.verl.overrides import render_value

    return render_value(value)


@rule("legacy.ignored_by_v1", Stage.ADVICE)
def ignored_by_v1(ctx: RuleContext):
    """Trainer keys only the legacy (v0) trainer reads."""
    if not ctx.get("trainer.use_v1"):
        return
    for key in IGNORED_BY_V1:
        if ctx.is_set(key):
            yield finding(
                Severity.INFO,
                [key],
                f"{key} is read only by the legacy trainer; verl 0.9.1's default V1 trainer ignores it",
                "Remove it",
            )


@rule("advice.resume_auto", Stage.ADVICE)
def resume_auto(ctx: RuleContext):
    """trainer.resume_mode=auto (the default) silently continues from an old checkpoint."""
    if ctx.get("trainer.resume_mode") == "auto":
        where = ctx.get("trainer.default_local_dir")
        yield finding(
            Severity.INFO,
            ["trainer.resume_mode"],
            f"trainer.resume_mode=auto resumes from the latest checkpoint in {where} if one exists, so a "
            "'new' run can silently continue an old one",
            "Set trainer.resume_mode=disable for a fresh run",
            ["trainer.resume_mode=disable"],
        )


@rule("models.critic_path", Stage.PREFLIGHT)
def critic_model(ctx: RuleContext):
    """need_critic loads critic.model.path in validate_config; its default is a placeholder path."""
    if not ctx.need_critic:
        return
    path = ctx.get("critic.model.path")
    if path == "~/models/deepseek-llm-7b-chat" and not ctx.is_set("critic.model.path"):
        actor = ctx.get("actor_rollout_ref.model.path")
        yield finding(
            Severity.ERROR,
            ["critic.model.path"],
            "The critic is on (adv_estimator=gae) but critic.model.path is verl's placeholder "
            f"'{path}'; it is not linked to the actor's model, and verl's pre-flight fails loading it",
            f"Set critic.model.path to the critic's model (usually the actor's: {actor})",
            [f"critic.model.path={_render(actor)}"] if isinstance(actor, str) else [],
            fix_auto=False,
        )


@rule("advice.kl_both", Stage.ADVICE)
def kl_both(ctx: RuleContext):
    """validate_config prints a NOTICE when both KL placements are on."""
    if ctx.get("algorithm.use_kl_in_reward") and ctx.get("actor_rollout_ref.actor.use_kl_loss"):
        yield finding(
            Severity.INFO,
            ["algorithm.use_kl_in_reward", "actor_rollout_ref.actor.use_kl_loss"],
            "KL is applied twice: as a reward penalty and as an actor loss term (verl prints a NOTICE and goes on)",
            "Usually pick one: GRPO uses the loss (use_kl_loss), PPO the reward (use_kl_in_reward)",
        )


@rule("models.actor_path", Stage.STARTUP)
def actor_path(ctx: RuleContext):
    """The actor model path defaults to a placeholder; the TaskRunner loads it before any GPU work."""
    path = ctx.get("actor_rollout_ref.model.path")
    if path == "~/models/deepseek-llm-7b-chat" and not ctx.is_set("actor_rollout_ref.model.path"):
        yield finding(
            Severity.ERROR,
            ["actor_rollout_ref.model.path"],
            f"actor_rollout_ref.model.path is not set: verl's default '{path}' is a placeholder, and the "
            "TaskRunner fails loading its tokenizer",
            "Set actor_rollout_ref.model.path to a local model folder or a hub id, e.g. Qwen/Qwen2.5-0.5B-Instruct",
            ["actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct"],
            fix_auto=False,
        )
