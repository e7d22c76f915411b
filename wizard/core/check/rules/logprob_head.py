"""What the actor's log-prob head must give, which verl finds out only when it first runs: the optimal-token-baseline
estimators read each token's sum of squared probabilities, and verl's fused log-prob head
(``model.use_fused_kernels``) never forms the logits that sum and the top-k distillation losses are made from."""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.verl.distillation import LOSSES
from wizard.core.verl.fused_head import DTENSOR_ERROR, FUSED_KEY as FUSED, fsdp2_lm_head
from wizard.core.verl.keys import REF, A, D, M

SUM_PI = f"{A}.calculate_sum_pi_squared"
ESTIMATOR = "algorithm.adv_estimator"
# the estimators whose advantage reads sum_pi_squared (trainer/ppo/ray_trainer.py:264-270)
SUM_PI_ESTIMATORS = ("optimal_token_baseline", "tir_optimal_token_baseline")
FSDP = ("fsdp", "fsdp2")
BYPASS = "algorithm.rollout_correction.bypass_mode"


@rule("algorithm.sum_pi_squared", Stage.RUNTIME)
def sum_pi_squared(ctx: RuleContext):
    """The optimal-token-baseline estimators assert that the batch holds sum_pi_squared (trainer/ppo/ray_trainer.py:
    264-270). The legacy trainer asks the actor's old-log-prob pass for it with actor.calculate_sum_pi_squared=true
    (ray_trainer.py:1297-1309), unless rollout_correction.bypass_mode skips that pass (:1576-1583); the V1 trainer
    (trainer.use_v1, the default) never does, and reads only its own fields for the advantage
    (v1/trainer_base.py:1651-1657, 1745), so there the estimator fails whatever the key says. The fix is every change
    the estimator needs at once, the fused head's too (it cannot compute the sum)."""
    estimator = ctx.get(ESTIMATOR)
    if estimator not in SUM_PI_ESTIMATORS:
        return
    bypass, v1, asked = ctx.get(BYPASS) is True, bool(ctx.get("trainer.use_v1")), ctx.get(SUM_PI) is True
    if not (bypass or v1 or not asked):
        return
    fix = ([f"{BYPASS}=false"] if bypass else []) + (["trainer.use_v1=false"] if v1 else []) + (
        [] if asked else [f"{SUM_PI}=true"]) + ([f"{FUSED}=false"] if ctx.get(FUSED) is True else [])
    if bypass:
        why, keys = f"{BYPASS}=true skips the actor's old-log-prob pass that computes it", [ESTIMATOR, BYPASS]
    elif v1:
        why, keys = (f"verl 0.9.1's V1 trainer (trainer.use_v1=true, the default) neither asks the actor for it nor "
                     f"passes it to the advantage, whatever {SUM_PI} says", [ESTIMATOR, "trainer.use_v1"])
    else:
        why, keys = f"the actor's log-prob pass computes it only with {SUM_PI}=true", [ESTIMATOR, SUM_PI]
    yield finding(
        Severity.ERROR, keys,
        f"{ESTIMATOR}={estimator} weighs each token by the sum of its squared probabilities, and {why}: everything "
        "loads and the first batch is generated, then the first advantage stops with: Step-dependent optimal baseline "
        "requires sum_pi_squared from actor. Please set actor.calculate_sum_pi_squared=True in config.",
        "Set " + ", ".join(fix) + (" (the legacy trainer: deprecated in 0.9.1, the one that computes the sum)"
                                   if v1 else "") + ", or use a group estimator such as grpo",
        fix, fix_auto=not (bypass or v1))


@rule("model.fused_head", Stage.RUNTIME)
def fused_head(ctx: RuleContext):
    """With use_fused_kernels the model returns log-probs from the hidden states, never the (tokens x vocabulary)
    logits: calculate_sum_pi_squared, which only the legacy trainer passes to the log-prob pass, raises
    NotImplementedError there (FSDP workers/engine/fsdp/transformer_impl.py:1343-1347, Megatron
    megatron/transformer_impl.py:1272-1276), and the fused
    forwards give no top-k distillation losses (FSDP fsdp/transformer_impl.py:1370-1380, 1456-1470; Megatron's fused
    branch :1334-1350 never calls the logits processor that makes them, :1236), which the forward_kl_topk loss reads
    at the first update (trainer/distillation/losses.py:319). On FSDP2 an untied lm_head is never gathered for it
    (wizard.core.verl.fused_head.fsdp2_lm_head, measured)."""
    if ctx.get(FUSED) is not True:
        return
    # only the legacy trainer passes the sum to the pass, and bypass_mode skips the pass
    if ctx.get(SUM_PI) is True and not ctx.get("trainer.use_v1") and ctx.get(BYPASS) is not True:
        yield finding(
            Severity.ERROR, [FUSED, SUM_PI],
            f"{FUSED}=true computes log-probs without forming the logits, and {SUM_PI}=true needs them: the first "
            "log-prob pass stops with NotImplementedError: calculate_sum_pi_squared=True is not supported with "
            "use_fused_kernels=True",
            f"Set {FUSED}=false (the log-prob passes form the full logits again: more memory, and slower where "
            "flash-attn is not installed)", [f"{FUSED}=false"])
        return
    role = fsdp2_lm_head(ctx, ctx.models.get("actor"))
    if role is not None:
        actor = ctx.models["actor"].name
        yield finding(
            Severity.ERROR, [FUSED, f"{A if role == 'actor' else REF}.strategy"],
            f"{FUSED}=true on FSDP2 with {actor}, whose lm_head is not tied to its embedding: FSDP2 shards that head as "
            "a unit of its own and the fused head reads its weight without calling it, so nothing gathers it and the "
            f"{'actor' if role == 'actor' else 'reference'}'s first log-prob pass stops with {DTENSOR_ERROR} "
            "(measured on Qwen2.5-7B; a tied head, as the 0.5B-3B Qwen2.5 models have, and FSDP1's root unit are "
            "fine)", f"Set {FUSED}=false", [f"{FUSED}=false"])
        return
    mode = ctx.get(f"{D}.distillation_loss.loss_mode")
    # Megatron turns the fused head off itself without remove-padding or with MTP (megatron/transformer_impl.py:526)
    megatron = ctx.strategy == "megatron" and ctx.get(f"{M}.use_remove_padding") is not False and not ctx.get(
        f"{M}.mtp.enable")
    if ctx.get(f"{D}.enabled") is True and LOSSES.get(mode) and (ctx.strategy in FSDP or megatron):
        yield finding(
            Severity.ERROR, [FUSED, f"{D}.distillation_loss.loss_mode"],
            f"{FUSED}=true with the top-k distillation loss {mode}: the fused head returns log-probs and entropy only, "
            "not the top-k distillation losses the loss reads, so the first update stops with KeyError: "
            "'distillation_losses'",
            f"Set {FUSED}=false, or a distillation loss that reads log-probs only (such as k3)",
            [f"{FUSED}=false"])
