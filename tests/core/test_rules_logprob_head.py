"""What the actor's log-prob head must give, found by verl only at the first step: the optimal-token-baseline
estimators' sum of squared probabilities, and what the fused head (use_fused_kernels) cannot give. Each fix, applied,
leaves neither rule firing (no fix loop)."""

import pytest

from tests.core.test_rules import GOOD
from tests.core.test_rules_verl_classes import DISTILL
from wizard.core.findings import Severity, Stage

OTB = ["algorithm.adv_estimator=optimal_token_baseline"]
LEGACY = ["trainer.use_v1=false"]
SUM_PI = ["actor_rollout_ref.actor.calculate_sum_pi_squared=true"]
FUSED = ["actor_rollout_ref.model.use_fused_kernels=true"]
RULES = ("algorithm.sum_pi_squared", "model.fused_head")


def ours(result):
    return [f for f in result.findings if f.rule in RULES]


def fixed(check, overrides):
    """The config after its one finding's fix: none of these rules fire there."""
    found = ours(check(overrides))
    assert len(found) == 1, [f.rule for f in found]
    after = ours(check(overrides + list(found[0].fix_overrides)))
    assert after == [], [f.message for f in after]
    return found[0]


@pytest.mark.parametrize("estimator", ["optimal_token_baseline", "tir_optimal_token_baseline"])
def test_the_v1_trainer_never_gives_the_optimal_baseline_its_sum(check, estimator):
    """verl 0.9.1's own OTB example runs main_ppo on the default V1 trainer with calculate_sum_pi_squared=True: it
    stops at the first advantage all the same."""
    f = fixed(check, GOOD + [f"algorithm.adv_estimator={estimator}"] + SUM_PI)
    assert f.rule == "algorithm.sum_pi_squared" and f.severity is Severity.ERROR and f.stage is Stage.RUNTIME
    assert "V1 trainer" in f.message and "requires sum_pi_squared from actor" in f.message
    assert "trainer.use_v1=false" in f.fix_overrides and not f.fix_auto


def test_the_legacy_trainer_needs_the_key_and_says_so_in_verls_words(check):
    f = fixed(check, GOOD + OTB + LEGACY)
    assert f.rule == "algorithm.sum_pi_squared" and f.fix_overrides == SUM_PI
    assert ("Step-dependent optimal baseline requires sum_pi_squared from actor. Please set "
            "actor.calculate_sum_pi_squared=True in config.") in f.message
    assert ours(check(GOOD + OTB + LEGACY + SUM_PI)) == []


def test_the_fix_for_the_sum_also_turns_the_fused_head_off(check):
    """Setting the key alone would trade the assertion for the fused head's NotImplementedError."""
    f = fixed(check, GOOD + OTB + LEGACY + FUSED)
    assert set(f.fix_overrides) == {SUM_PI[0], "actor_rollout_ref.model.use_fused_kernels=false"}


def test_the_fused_head_cannot_compute_the_sum(check):
    f = fixed(check, GOOD + LEGACY + SUM_PI + FUSED)
    assert f.rule == "model.fused_head" and "NotImplementedError" in f.message
    # the V1 trainer never asks the pass for the sum: the same keys run there
    assert ours(check(GOOD + SUM_PI + FUSED)) == []


def test_the_fused_head_gives_no_top_k_distillation_losses(check):
    topk = GOOD + DISTILL + FUSED + ["distillation.distillation_loss.loss_mode=forward_kl_topk"]
    f = fixed(check, topk)
    assert f.rule == "model.fused_head" and "KeyError: 'distillation_losses'" in f.message
    # a loss that reads log-probs only is fine with the fused head
    assert ours(check(GOOD + DISTILL + FUSED + ["distillation.distillation_loss.loss_mode=k3"])) == []


def test_bypass_mode_skips_the_pass_that_computes_the_sum_and_the_fix_undoes_everything_at_once(check):
    """With rollout_correction.bypass_mode the old-log-prob pass never runs, in either trainer: one fix turns it off,
    moves to the legacy trainer and asks for the sum (not three findings one after another)."""
    bypass = ["algorithm.rollout_correction.bypass_mode=true"]
    f = fixed(check, GOOD + OTB + bypass)
    assert "skips the actor's old-log-prob pass" in f.message and not f.fix_auto
    assert set(f.fix_overrides) == {"algorithm.rollout_correction.bypass_mode=false", "trainer.use_v1=false", SUM_PI[0]}
    # nor does the fused head's NotImplementedError happen there: the pass that raises it is skipped
    assert [g.rule for g in ours(check(GOOD + LEGACY + SUM_PI + FUSED + bypass))] == []


def test_megatron_s_fused_head_gives_no_top_k_losses_either_unless_it_turns_itself_off(check):
    meg = GOOD + ["model_engine=megatron"] + DISTILL + FUSED + ["distillation.distillation_loss.loss_mode=forward_kl_topk"]
    assert [f.rule for f in ours(check(meg))] == ["model.fused_head"]
    # without remove-padding Megatron's engine turns the fused head off itself (megatron/transformer_impl.py:526)
    assert ours(check(meg + ["actor_rollout_ref.model.use_remove_padding=false"])) == []


def test_a_plain_fused_config_has_no_finding(check):
    assert ours(check(GOOD + FUSED)) == []


def facts(config, name):
    from wizard.core.models.facts import facts_from_hf_config

    f = facts_from_hf_config(config, name=name, source="catalogue")
    return {"actor": f, "ref": f}


FSDP2 = ["actor_rollout_ref.actor.strategy=fsdp2", "actor_rollout_ref.ref.strategy=fsdp2"]


def test_fsdp2_never_gathers_an_untied_head_for_the_fused_forward(check):
    """Measured on the lent H100 (advised-grpo-7b-full-1gpu-h100-3): Qwen2.5-7B with the fused head on FSDP2 stopped
    at its first log-prob pass with aten.mm mixing a Tensor and a DTensor; the tied 1.5B trained (28.2 s a step)."""
    from tests.helpers.hf_configs import QWEN25_7B, QWEN25_15B

    q7 = facts(QWEN25_7B, "Qwen/Qwen2.5-7B-Instruct")
    found = ours(check(GOOD + FSDP2 + FUSED, models=q7))
    assert [f.rule for f in found] == ["model.fused_head"] and found[0].severity is Severity.ERROR
    assert "got mixed torch.Tensor and DTensor" in found[0].message and "Qwen/Qwen2.5-7B-Instruct" in found[0].message
    assert ours(check(GOOD + FSDP2 + FUSED + found[0].fix_overrides, models=q7)) == []
    assert ours(check(GOOD + FUSED, models=q7)) == []  # FSDP1 (verl's default) keeps the head in the root unit
    assert ours(check(GOOD + FSDP2 + FUSED, models=facts(QWEN25_15B, "Qwen/Qwen2.5-1.5B-Instruct"))) == []
    assert ours(check(GOOD + FSDP2 + FUSED)) == []  # the model unknown: nothing said
    # the reference alone on FSDP2 stops its own pass; with LoRA there is no reference model (the actor, adapter off)
    ref_fsdp2 = GOOD + FUSED + ["actor_rollout_ref.ref.strategy=fsdp2", "actor_rollout_ref.actor.use_kl_loss=true"]
    found = ours(check(ref_fsdp2, models=q7))
    assert [f.rule for f in found] == ["model.fused_head"] and "reference's first log-prob pass" in found[0].message
    assert ours(check(ref_fsdp2 + ["actor_rollout_ref.model.lora_rank=32"], models=q7)) == []
