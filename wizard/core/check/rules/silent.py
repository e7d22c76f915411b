"""What verl accepts and then does differently from what the config says: no assertion fires, the run starts, and
trains something else (or nothing). Read from the V1 trainer's fit() and what it calls (trainer_base.py), and in
verl's issue tracker where users met them.
"""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.verl.keys import A, R



def _v1(ctx: RuleContext) -> bool:
    return bool(ctx.get("trainer.use_v1"))


def _warn(keys: list[str], message: str, fix: str, overrides=(), severity=Severity.WARNING):
    return finding(severity, keys, message, fix, list(overrides), fix_auto=False)


CRITIC_IGNORED = ("critic.ppo_micro_batch_size_per_gpu", "critic.use_dynamic_bsz", "critic.ppo_max_token_len_per_gpu",
                  "critic.forward_max_token_len_per_gpu", "critic.forward_micro_batch_size_per_gpu")
CRITIC_ENGINE = {"fsdp": "critic.fsdp", "fsdp2": "critic.fsdp", "megatron": "critic.megatron", "veomni": "critic.veomni",
                 "torchtitan": "critic.torchtitan"}  # workers/config/critic.py: each class's __post_init__ engine = ...


@rule("advice.critic_batching", Stage.ADVICE)
def critic_batching(ctx: RuleContext):
    """trainer_base.py:266-268: the V1 trainer converts critic.* into a CriticConfig and sets only its engine's two
    token budgets, both from ppo_infer_max_token_len_per_gpu (``engine.infer_max_token_len_per_gpu`` and
    ``engine.max_token_len_per_gpu``); the engine's use_dynamic_bsz and micro-batch sizes keep the engine section's own
    values (workers/config/engine.py:100-106: dynamic batching on, no micro batch), which TrainingWorker.train_batch and
    infer_batch read (engine_workers.py:352-357, 406-411). So critic.ppo_micro_batch_size_per_gpu, use_dynamic_bsz,
    ppo_max_token_len_per_gpu and the forward_* keys never reach it (verl issue #7462); fixed micro-batches are set on
    the engine section itself (+critic.fsdp.use_dynamic_bsz=false +critic.fsdp.micro_batch_size_per_gpu=N)."""
    if not _v1(ctx) or not ctx.need_critic:
        return
    # the micro batch alone is no news: verl's pre-flight requires it (without dynamic batching) and it is then unused
    if not any(ctx.is_set(k) and ctx.get(k) is not None for k in CRITIC_IGNORED[1:]):
        return
    ignored = [k for k in CRITIC_IGNORED if ctx.is_set(k) and ctx.get(k) is not None]  # "=null" sets nothing
    budget = ctx.int("critic.ppo_infer_max_token_len_per_gpu") or 32768
    engine = CRITIC_ENGINE.get(str(ctx.get("critic.strategy")), "critic.fsdp")
    dynamic = ctx.get(f"{engine}.use_dynamic_bsz")
    said = ", ".join(f"{k}={ctx.get(k)}" for k in ignored)
    if dynamic is False:
        how = (f"it batches as {engine}.micro_batch_size_per_gpu={ctx.get(f'{engine}.micro_batch_size_per_gpu')} "
               f"(training) and {engine}.infer_micro_batch_size_per_gpu="
               f"{ctx.get(f'{engine}.infer_micro_batch_size_per_gpu')} (values) say")
    else:
        how = (f"the critic trains and computes values with dynamic batching and critic.ppo_infer_max_token_len_per_gpu "
               f"= {budget} tokens per GPU as its budget for both")
    still = (" (verl's pre-flight check still asks for critic.ppo_micro_batch_size_per_gpu without dynamic batching:"
             " keep it)" if "critic.ppo_micro_batch_size_per_gpu" in ignored else "")
    yield _warn(ignored,
                f"{said} does not reach the critic in verl 0.9.1's V1 trainer: {how}{still}",
                "Set +critic.ppo_infer_max_token_len_per_gpu to the per-GPU token budget you want the critic to use "
                f"(lower it if the critic update runs out of memory), or fixed micro-batches on the engine: "
                f"+{engine}.use_dynamic_bsz=false +{engine}.micro_batch_size_per_gpu=N "
                f"+{engine}.infer_micro_batch_size_per_gpu=N")


@rule("advice.critic_unused", Stage.ADVICE)
def critic_unused(ctx: RuleContext):
    """critic.model.path set on a plan that trains no critic: verl builds the critic only where need_critic holds
    (critic.enable, else adv_estimator=gae: trainer/ppo/utils.py), so the model is never loaded. Users set it for
    GRPO and expect a value model."""
    if ctx.need_critic or not ctx.is_set("critic.model.path") or ctx.get("critic.enable") is False:
        return
    yield _warn(["critic.model.path", "algorithm.adv_estimator"],
                f"critic.model.path is set, but this plan trains no critic: adv_estimator="
                f"{ctx.get('algorithm.adv_estimator')} needs none and critic.enable is not set, so verl never loads it",
                "For PPO with a value model set algorithm.adv_estimator=gae (or critic.enable=true); otherwise drop "
                "the critic keys", severity=Severity.INFO)


@rule("advice.kl_unused", Stage.ADVICE)
def kl_unused(ctx: RuleContext):
    """A KL coefficient whose switch is off does nothing: algorithm.kl_ctrl.* needs use_kl_in_reward, actor.kl_loss_*
    needs use_kl_loss (users set both and expect both; verl issue #455)."""
    pairs = (("algorithm.use_kl_in_reward", ("algorithm.kl_ctrl.kl_coef", "algorithm.kl_ctrl.type", "algorithm.kl_penalty")),
             (f"{A}.use_kl_loss", (f"{A}.kl_loss_coef", f"{A}.kl_loss_type")))
    for switch, keys in pairs:
        set_keys = [k for k in keys if ctx.is_set(k)]
        if set_keys and not ctx.get(switch):
            yield _warn(set_keys + [switch],
                        f"{', '.join(f'{k}={ctx.get(k)}' for k in set_keys)} has no effect: {switch} is off, so verl "
                        "computes no KL there", f"Set {switch}=true if you want that KL, or remove the setting",
                        severity=Severity.INFO)


@rule("advice.no_training", Stage.ADVICE)
def no_training(ctx: RuleContext):
    """trainer_base.py:455-460: fit() loops while epoch < total_epochs and step <= total_training_steps."""
    epochs, steps = ctx.get("trainer.total_epochs"), ctx.get("trainer.total_training_steps")
    zero = [(k, v) for k, v in (("trainer.total_epochs", epochs), ("trainer.total_training_steps", steps))
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v <= 0]
    if zero:
        key, value = zero[0]
        yield _warn([key], f"{key}={value}: fit() runs no training step (it loops while the "
                    "epoch is below trainer.total_epochs and the step at most trainer.total_training_steps), and the "
                    "run ends 'successfully' after loading everything", f"Set {key} to 1 or more", [f"{key}=1"])


@rule("advice.critic_warmup", Stage.ADVICE)
def critic_warmup(ctx: RuleContext):
    """trainer_base.py:608: the actor is updated only from step trainer.critic_warmup on."""
    warmup, steps = ctx.int("trainer.critic_warmup"), ctx.int("trainer.total_training_steps")
    if not warmup or warmup <= 0:
        return
    if steps is not None and warmup > steps:
        yield _warn(["trainer.critic_warmup", "trainer.total_training_steps"],
                    f"trainer.critic_warmup={warmup} but the run has {steps} steps: the actor is updated only from step "
                    f"{warmup} on, so it is never trained", f"Lower trainer.critic_warmup below {steps}, or 0",
                    ["trainer.critic_warmup=0"])
    elif not ctx.need_critic:
        yield _warn(["trainer.critic_warmup"],
                    f"trainer.critic_warmup={warmup} without a critic: the first {warmup - 1} step(s) generate and score "
                    "but do not update the actor, and there is no critic to warm up", "Set trainer.critic_warmup=0",
                    ["trainer.critic_warmup=0"])


@rule("advice.lr_warmup", Stage.ADVICE)
def lr_warmup(ctx: RuleContext):
    """fsdp/transformer_impl.py:508-516: warmup is lr_warmup_steps (when > 0) or ratio x total; the scheduler steps once
    per training step."""
    steps = ctx.int("trainer.total_training_steps")
    if steps is not None:  # trainer_base.py:779: the scheduler counts local updates, parameter_sync_step per step
        steps *= ctx.int(f"trainer.v1.{ctx.get('trainer.v1.trainer_mode')}.parameter_sync_step") or 1
    for section in (f"{A}.optim", "critic.optim"):
        if section == "critic.optim" and not ctx.need_critic:
            continue
        warm, ratio = ctx.num(f"{section}.lr_warmup_steps"), ctx.num(f"{section}.lr_warmup_steps_ratio")
        if warm is not None and warm > 0 and steps is not None and warm >= steps:
            yield _warn([f"{section}.lr_warmup_steps", "trainer.total_training_steps"],
                        f"{section}.lr_warmup_steps={warm:g} but the run has {steps} optimizer steps: the learning rate is still "
                        f"warming up when training ends (it reaches {steps / warm:.0%} of {section}.lr at most)",
                        f"Set {section}.lr_warmup_steps below {steps}, e.g. {max(1, steps // 10)}",
                        [f"{section}.lr_warmup_steps={max(1, steps // 10)}"])
        elif (warm is None or warm <= 0) and ratio is not None and ratio >= 1:
            yield _warn([f"{section}.lr_warmup_steps_ratio"],
                        f"{section}.lr_warmup_steps_ratio={ratio:g}: the warmup lasts the whole run, so the learning "
                        f"rate never reaches {section}.lr", f"Use a ratio below 1, e.g. {section}.lr_warmup_steps_ratio=0.1",
                        [f"{section}.lr_warmup_steps_ratio=0.1"])


@rule("advice.overridden", Stage.ADVICE)
def overridden(ctx: RuleContext):
    """Settings verl replaces: gen_batch_size by 1 for exact refills (trainer_base.py:727-739), per-GPU micro batches
    under dynamic batch size, max_num_gen_batches in the V1 buffer (trainer_base.py:205-211), hybrid_engine outside
    separate_async (trainer_separate_async.py:82)."""
    if not _v1(ctx):
        return
    mode = ctx.get("trainer.v1.trainer_mode")
    exact = (mode != "sync" or ctx.get("algorithm.filter_groups.enable")
             or ctx.get("trainer.v1.sampler.sync_refill_failed_groups"))
    gen = ctx.get("data.gen_batch_size")
    if exact and gen not in (None, 1):
        yield _warn(["data.gen_batch_size"],
                    f"data.gen_batch_size={gen} is overridden to 1 (verl logs it): {mode} mode / group filtering / "
                    "failed-group refills fetch prompts one at a time", "Remove data.gen_batch_size",
                    severity=Severity.INFO)
    if ctx.dynamic_bsz:
        set_micro = [k for k in (f"{A}.ppo_micro_batch_size_per_gpu", f"{R}.log_prob_micro_batch_size_per_gpu")
                     if ctx.is_set(k) and ctx.get(k) is not None]
        if set_micro:
            yield _warn(set_micro,
                        f"{', '.join(f'{k}={ctx.get(k)}' for k in set_micro)} is not used: with "
                        f"{A}.use_dynamic_bsz=true the batches are packed up to {A}.ppo_max_token_len_per_gpu = "
                        f"{ctx.get(f'{A}.ppo_max_token_len_per_gpu')} tokens per GPU instead",
                        f"Tune {A}.ppo_max_token_len_per_gpu (and {R}.log_prob_max_token_len_per_gpu) instead",
                        severity=Severity.INFO)
    batches = ctx.int("algorithm.filter_groups.max_num_gen_batches")
    if ctx.get("algorithm.filter_groups.enable") and batches and batches > 0:
        yield _warn(["algorithm.filter_groups.max_num_gen_batches"],
                    f"algorithm.filter_groups.max_num_gen_batches={batches} is ignored by the V1 replay buffer (verl "
                    "logs a warning); it bounds concurrent generation with max_inflight_gen_batches",
                    "Use algorithm.filter_groups.max_inflight_gen_batches", severity=Severity.INFO)
    if ctx.is_set("actor_rollout_ref.hybrid_engine") and not ctx.get("actor_rollout_ref.hybrid_engine") and mode != "separate_async":
        yield _warn(["actor_rollout_ref.hybrid_engine"],
                    f"actor_rollout_ref.hybrid_engine=false is read only in separate_async mode; in {mode} mode the "
                    "rollout still shares the training GPUs", "Remove it, or use trainer.v1.trainer_mode=separate_async")


@rule("advice.prompt_truncated", Stage.ADVICE)
def prompt_truncated(ctx: RuleContext):
    """agent_loop.py:437-446: text prompts longer than rollout.prompt_length are cut from the left with a warning;
    data.filter_overlong_prompts drops them by data.max_prompt_length, and data.truncation is not read (rl_dataset.py)."""
    prompt, data_max = ctx.int(f"{R}.prompt_length"), ctx.int("data.max_prompt_length")
    if prompt is not None and data_max is not None and prompt < data_max:
        yield _warn([f"{R}.prompt_length", "data.max_prompt_length"],
                    f"{R}.prompt_length={prompt} is shorter than data.max_prompt_length={data_max}: prompts of "
                    f"{prompt + 1}-{data_max} tokens pass the data filter, then the agent loop cuts their beginning "
                    "(a warning in the log, no error)", f"Remove the {R}.prompt_length override (it follows "
                    "data.max_prompt_length)", [f"{R}.prompt_length={data_max}"])
    if ctx.is_set("data.truncation") and ctx.get("data.truncation") != "error":
        yield _warn(["data.truncation"],
                    f"data.truncation={ctx.get('data.truncation')} is not used by verl 0.9.1's RL path: long prompts are "
                    "left-truncated in the agent loop whatever it says", "Use data.filter_overlong_prompts=true to drop "
                    "them instead", ["data.filter_overlong_prompts=true"], severity=Severity.INFO)


@rule("algorithm.gae_without_critic", Stage.RUNTIME)
def gae_without_critic(ctx: RuleContext):
    """need_critic (trainer/ppo/utils.py:96-107) follows critic.enable when it is set: GAE with the critic off has no
    values to compute advantages from (trainer_base.py:1745)."""
    if ctx.get("algorithm.adv_estimator") == "gae" and ctx.get("critic.enable") is False:
        yield finding(Severity.ERROR, ["critic.enable", "algorithm.adv_estimator"],
                      "algorithm.adv_estimator=gae computes advantages from the critic's values, but critic.enable=false "
                      "builds no critic: everything loads, then the first advantage computation has no values to read",
                      "Remove critic.enable=false (GAE turns the critic on), or use a critic-free estimator such as grpo",
                      ["critic.enable=null"], fix_auto=False)
