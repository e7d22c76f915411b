"""What the actor's log-prob head must give, which verl finds out only when it first runs: the optimal-token-baseline
estimators read each token's sum of squared probabilities, and verl's fused log-prob head
(``model.use_fused_kernels``) never forms the logits that sum and the top-k distillation losses are made from."""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.verl.distillation import LOSSES
from wizard.core.verl.keys import A, D, M

SUM_PI = f"{A}.calculate_sum_pi_squared"
FUSED = f"{M}.use_fused_kernels"
ESTIMATOR = "algorithm.adv_estimator"
# the estimators whose advantage reads sum_pi_squared (trainer/ppo/ray_trainer.py:264-270)
SUM_PI_ESTIMATORS = ("optimal_token_baseline", "tir_optimal_token_baseline")
FSDP = ("fsdp", "fsdp2")


@rule("algorithm.sum_pi_squared", Stage.RUNTIME)
def sum_pi_squared(ctx: RuleContext):
    """The optimal-token-baseline estimators assert that the batch holds sum_pi_squared (trainer/ppo/ray_trainer.py:
    264-270). The legacy trainer asks the actor's old-log-prob pass for it with actor.calculate_sum_pi_squared=true
    (ray_trainer.py:1297-1309); the V1 trainer (trainer.use_v1, the default) never does, and reads only its own fields
    for the advantage (v1/trainer_base.py:1651-1657, 1745), so there the estimator fails whatever the key says."""
    estimator = ctx.get(ESTIMATOR)
    if estimator not in SUM_PI_ESTIMATORS:
        return
    fused = ctx.get(FUSED) is True
    unfuse = f", and {FUSED}=false (the fused head cannot compute it)" if fused else ""
    fail = ("everything loads and the first batch is generated, then the first advantage stops with: Step-dependent "
            "optimal baseline requires sum_pi_squared from actor. Please set actor.calculate_sum_pi_squared=True in "
            "config.")
    if ctx.get("trainer.use_v1"):
        yield finding(
            Severity.ERROR, [ESTIMATOR, "trainer.use_v1"],
            f"{ESTIMATOR}={estimator} weighs each token by the sum of its squared probabilities, which verl 0.9.1's V1 "
            f"trainer (trainer.use_v1=true, the default) neither asks the actor for nor passes to the advantage, "
            f"whatever {SUM_PI} says: {fail}",
            f"Run it on the legacy trainer: trainer.use_v1=false with {SUM_PI}=true{unfuse} (deprecated in 0.9.1), "
            "or use a group estimator such as grpo",
            ["trainer.use_v1=false", f"{SUM_PI}=true"] + ([f"{FUSED}=false"] if fused else []), fix_auto=False)
    elif ctx.get(SUM_PI) is not True:
        yield finding(
            Severity.ERROR, [ESTIMATOR, SUM_PI],
            f"{ESTIMATOR}={estimator} weighs each token by the sum of its squared probabilities, which the actor's "
            f"log-prob pass computes only with {SUM_PI}=true: {fail}",
            f"Set {SUM_PI}=true{unfuse}", [f"{SUM_PI}=true"] + ([f"{FUSED}=false"] if fused else []))


@rule("model.fused_head", Stage.RUNTIME)
def fused_head(ctx: RuleContext):
    """With use_fused_kernels the model returns log-probs from the hidden states, never the (tokens x vocabulary)
    logits: calculate_sum_pi_squared, which only the legacy trainer passes to the log-prob pass, raises
    NotImplementedError there (FSDP
    workers/engine/fsdp/transformer_impl.py:1343-1347, Megatron megatron/transformer_impl.py:1272-1276), and FSDP's
    fused forward gives no top-k distillation losses (fsdp/transformer_impl.py:1370-1380), which the forward_kl_topk
    loss reads at the first update (trainer/distillation/losses.py:319)."""
    if ctx.get(FUSED) is not True:
        return
    if ctx.get(SUM_PI) is True and not ctx.get("trainer.use_v1"):  # V1 never passes it to the pass
        yield finding(
            Severity.ERROR, [FUSED, SUM_PI],
            f"{FUSED}=true computes log-probs without forming the logits, and {SUM_PI}=true needs them: the first "
            "log-prob pass stops with NotImplementedError: calculate_sum_pi_squared=True is not supported with "
            "use_fused_kernels=True",
            f"Set {FUSED}=false (the log-prob passes form the logits again: slower without flash-attn, and more "
            "memory)", [f"{FUSED}=false"])
        return
    mode = ctx.get(f"{D}.distillation_loss.loss_mode")
    if ctx.get(f"{D}.enabled") is True and LOSSES.get(mode) and ctx.strategy in FSDP:
        yield finding(
            Severity.ERROR, [FUSED, f"{D}.distillation_loss.loss_mode"],
            f"{FUSED}=true with the top-k distillation loss {mode}: FSDP's fused head returns log-probs only, not the "
            "top-k distillation losses the loss reads, so the first update stops with KeyError: 'distillation_losses'",
            f"Set {FUSED}=false, or a distillation loss that reads log-probs only (such as k3)",
            [f"{FUSED}=false"])
