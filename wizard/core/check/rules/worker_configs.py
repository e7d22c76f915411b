"""Config classes the workers build from keys validate_config does not check the same way: the reference model's
ActorConfig (engine_workers.py:543-553), the models' HFModelConfig target modules (model.py:247-258), the VeOmni
critic's micro batch (critic.py:304-315)."""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.check.rules.sections import build_of
from wizard.core.verl.keys import REF



@rule("batch.ref_micro", Stage.STARTUP)
def ref_micro(ctx: RuleContext):
    """The ref worker builds an ActorConfig from ref.log_prob_* keys; with the actor on dynamic batch size the
    pre-flight skips the ref's micro-batch keys, but the ref's own log_prob_use_dynamic_bsz decides here."""
    if not ctx.dynamic_bsz or build_of(ctx, REF) is None or ctx.get(f"{REF}.log_prob_use_dynamic_bsz"):
        return
    micro, per_gpu = ctx.get(f"{REF}.log_prob_micro_batch_size"), ctx.get(f"{REF}.log_prob_micro_batch_size_per_gpu")
    if micro is None and per_gpu is None:
        said = "[actor] Please set at least one of 'actor.ppo_micro_batch_size' or 'actor.ppo_micro_batch_size_per_gpu'"
        fix, keys = [f"{REF}.log_prob_micro_batch_size_per_gpu=8"], [f"{REF}.log_prob_micro_batch_size_per_gpu"]
    elif micro is not None and per_gpu is not None:
        said = "[actor] You have set both 'actor.ppo_micro_batch_size' AND 'actor.ppo_micro_batch_size_per_gpu'"
        fix, keys = [f"{REF}.log_prob_micro_batch_size=null"], [f"{REF}.log_prob_micro_batch_size"]
    else:
        return
    yield finding(Severity.ERROR, keys + [f"{REF}.log_prob_use_dynamic_bsz"],
                  f"{REF}.log_prob_use_dynamic_bsz=false while the actor uses dynamic batch size, and the reference "
                  f"model's micro-batch keys are log_prob_micro_batch_size={micro}, _per_gpu={per_gpu}; the reference "
                  f"worker builds its config at startup and stops with: {said}",
                  f"Set {fix[0]}, or {REF}.log_prob_use_dynamic_bsz=true", fix)


@rule("models.target_modules", None)  # the stage verl builds the section at
def target_modules(ctx: RuleContext):
    """HFModelConfig.__post_init__: LoRA target modules are a string or a list of strings."""
    for section in ("actor_rollout_ref.model", "critic.model"):
        build = build_of(ctx, section)
        key = f"{section}.target_modules"
        value = ctx.get(key)
        if build is None or value is None:
            continue
        if not isinstance(value, (str, list)):
            said = f"target_modules must be a string or a list of strings, but got {type(value).__name__}"
        elif isinstance(value, list) and any(not isinstance(x, str) for x in value):
            bad = next(x for x in value if not isinstance(x, str))
            said = f"All elements in target_modules list must be strings, but found {type(bad).__name__}"
        else:
            continue
        yield finding(Severity.ERROR, [key],
                      f"{key}={value!r}: verl builds {section} into HFModelConfig and stops with: TypeError: {said}",
                      f"Give module names: {key}=all-linear or {key}=[q_proj,v_proj]", [f"{key}=all-linear"],
                      fix_auto=False, stage=build.stage)


@rule("batch.critic_veomni_micro", Stage.PREFLIGHT)
def critic_veomni_micro(ctx: RuleContext):
    """VeOmniCriticConfig.validate: the deprecated global micro batch x Ulysses size must cover the GPUs."""
    if not ctx.need_critic or ctx.get("critic.strategy") != "veomni" or ctx.get("critic.use_dynamic_bsz"):
        return
    micro, sp, n_gpus = ctx.int("critic.ppo_micro_batch_size"), ctx.int("critic.veomni.ulysses_parallel_size") or 1, ctx.n_gpus
    tbs, mini = ctx.int("data.train_batch_size"), ctx.int("critic.ppo_mini_batch_size")
    if None in (micro, n_gpus, tbs, mini) or tbs < mini or micro * sp >= n_gpus:
        return
    yield finding(Severity.ERROR, ["critic.ppo_micro_batch_size"],
                  f"critic.ppo_micro_batch_size ({micro}) * veomni.ulysses_parallel_size ({sp}) must be >= n_gpus "
                  f"({n_gpus})", "Use critic.ppo_micro_batch_size_per_gpu instead", ["critic.ppo_micro_batch_size=null"])
