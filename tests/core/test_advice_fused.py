"""verl's fused log-prob head (use_fused_kernels) as a faster change where verl would compute the log-probs one
token at a time (no flash-attn): measured on the lent H100 at 28.2 s a step against 47.6 without it."""

import pytest

from tests.core.test_advice import Q15, plan
from tests.helpers.hf_configs import GEMMA2_2B
from wizard.core.advice import advise
from wizard.core.models.facts import facts_from_hf_config
from wizard.core.steptime import predict_step

KEY = "actor_rollout_ref.model.use_fused_kernels"
SDPA = "+actor_rollout_ref.model.override_config.attn_implementation=sdpa"  # a config written for no flash-attn


def step(mp) -> float:
    return predict_step(mp.values, mp.models, mp.cluster, mp.report).seconds


def peak(mp, phase: str) -> int:
    return next(p for p in mp.report.groups[0].phases if p.name == phase).total


def test_without_flash_attn_the_advisor_offers_the_fused_head_and_it_is_faster_and_smaller():
    mp = plan([SDPA], model=Q15)  # 1.5B GRPO on one H100: fits
    best = advise(mp.values, mp.models, mp.cluster).best
    assert best is not None and best.changes.get(KEY) is True and f"{KEY}=True" in best.overrides, best and best.text
    assert "fused log-prob head" in best.text
    # the key alone, re-estimated: the loop's share of the step is gone, and the log-prob passes hold no (T x V) logits
    on = plan([SDPA, f"{KEY}=True"], model=Q15)
    assert step(on) < 0.75 * step(mp)
    assert peak(on, "old_log_prob") < peak(mp, "old_log_prob") - 2 * 2**30


def test_with_flash_attn_or_the_key_already_set_it_is_not_offered():
    for extra in ([], [SDPA, f"{KEY}=True"]):  # flash-attn assumed where the config does not say sdpa
        mp = plan(extra, model=Q15)
        advice = advise(mp.values, mp.models, mp.cluster)
        assert advice.alternatives and not [a for a in advice.alternatives if KEY in a.changes], extra


def fused_offered(values, actor=Q15, mp=None) -> bool:
    from wizard.core.advice.moves import moves_for

    return any(KEY in dict(m.changes) for m in moves_for(values, {"actor": actor, "ref": actor}, mp.cluster,
                                                         mp.cluster, (), ()))


@pytest.mark.parametrize("case", ["sum_pi_squared", "topk_distillation", "softcapped_head"])
def test_not_offered_where_verl_s_fused_head_fails_or_differs(case):
    """calculate_sum_pi_squared raises NotImplementedError in the fused log-prob pass; a top-k distillation loss
    gets no distillation_losses from the torch backend; Gemma2's head is softcapped, which the fused head skips."""
    mp = plan([SDPA], model=Q15)
    assert fused_offered(mp.values, mp=mp)  # the plan it starts from gets it
    values, actor = dict(mp.values), Q15
    if case == "sum_pi_squared":
        values["actor_rollout_ref.actor.calculate_sum_pi_squared"] = True
    elif case == "topk_distillation":
        values.update({"distillation.enabled": True, "distillation.distillation_loss.loss_mode": "forward_kl_topk"})
        assert fused_offered({**values, "distillation.distillation_loss.loss_mode": "k3"}, mp=mp)
    else:
        actor = facts_from_hf_config(GEMMA2_2B, name="google/gemma-2-2b-it", source="catalogue")
    assert not fused_offered(values, actor, mp=mp)


def test_the_reference_pass_pays_the_head_too_and_flash_attn_pays_none():
    grpo = plan([SDPA, f"{KEY}=True"], model=Q15)  # GRPO with the KL loss: a reference pass
    st = predict_step(grpo.values, grpo.models, grpo.cluster, grpo.report)
    heads = {p.name: [t for t in p.terms if t.label == "fused log-prob head"] for p in st.phases}
    assert heads["old_log_prob"] and heads["ref"] and not heads["update_actor"]
    assert heads["ref"][0].seconds == pytest.approx(heads["old_log_prob"][0].seconds)
    # with flash-attn the head would take its cross-entropy (not measured): nothing added, as for flash-attn alone
    flash = plan([f"{KEY}=True"], model=Q15)
    st = predict_step(flash.values, flash.models, flash.cluster, flash.report)
    assert not [t for p in st.phases for t in p.terms if "fused" in t.label]


def test_never_offered_or_kept_with_fsdp2_and_an_untied_head():
    """FSDP2 leaves an untied lm_head sharded for the fused forward (measured: Qwen2.5-7B, RuntimeError at the first
    log-prob pass). The advisor's 7B choice on one H100 was FSDP2 + LoRA + the fused head; no alternative may hold
    the fused head with FSDP2 on an untied model, however the moves combine (an FSDP1 plan gets FSDP2 from the
    offload policy or LoRA's move)."""
    from tests.helpers.hf_configs import QWEN25_7B
    from wizard.core.verl.fused_head import fused_head_broken

    q7 = facts_from_hf_config(QWEN25_7B, name="Qwen/Qwen2.5-7B-Instruct", source="catalogue")
    fsdp1 = ["actor_rollout_ref.actor.strategy=fsdp", "actor_rollout_ref.ref.strategy=fsdp"]
    for extra in ([SDPA], [SDPA, "actor_rollout_ref.actor.strategy=fsdp2", "actor_rollout_ref.ref.strategy=fsdp2"],
                  [SDPA, f"{KEY}=True", *fsdp1]):  # the user's fused head on FSDP1, then the offload policy's FSDP2
        mp = plan(extra, model=q7)
        advice = advise(mp.values, mp.models, mp.cluster)
        assert advice.alternatives, extra
        for a in advice.alternatives:
            assert not fused_head_broken({**mp.values, **a.changes}, q7), (extra, a.text)
            # a head turned off is said, with why, and only where a move to FSDP2 needs it
            off = a.changes.get(KEY) is False
            assert off == ("the fused log-prob head off (FSDP2 never gathers" in a.text), a.text
            assert not off or a.changes.get("actor_rollout_ref.actor.strategy") == "fsdp2", a.text
        if f"{KEY}=True" in extra:
            assert any(a.changes.get(KEY) is False for a in advice.alternatives)
    # on FSDP1 the move is still offered alone (FSDP1 gathers the head with the root unit)
    on_fsdp1 = plan([SDPA, *fsdp1], model=q7)
    assert fused_offered(on_fsdp1.values, q7, mp=on_fsdp1)
    fsdp2 = plan([SDPA, "actor_rollout_ref.actor.strategy=fsdp2", "actor_rollout_ref.ref.strategy=fsdp2"], model=q7)
    assert not fused_offered(fsdp2.values, q7, mp=fsdp2)
    # the reference alone on FSDP2 (its strategy is among the values the advisor reads)
    ref2 = plan([SDPA, *fsdp1, "actor_rollout_ref.ref.strategy=fsdp2"], model=q7)
    assert ref2.values.get("actor_rollout_ref.ref.strategy") == "fsdp2" and not fused_offered(ref2.values, q7, mp=ref2)


def test_a_users_own_fused_head_is_turned_off_only_for_fsdp2s_untied_head():
    """The other refusals keep the advisor from turning the head on; they do not make a user's own fused config a
    state every move turns the head off in, with FSDP2's reason (calculate_sum_pi_squared is the check's)."""
    from tests.helpers.hf_configs import QWEN25_7B
    from wizard.core.verl.fused_head import fused_head_broken, fused_head_refused

    q7 = facts_from_hf_config(QWEN25_7B, name="Qwen/Qwen2.5-7B-Instruct", source="catalogue")
    fused = {KEY: True, "actor_rollout_ref.actor.strategy": "fsdp", "actor_rollout_ref.ref.strategy": "fsdp"}
    sum_pi = {**fused, "actor_rollout_ref.actor.calculate_sum_pi_squared": True}
    assert fused_head_refused(sum_pi, Q15) and not fused_head_broken(sum_pi, Q15)
    assert not fused_head_broken(fused, q7)
    assert fused_head_broken({**fused, "actor_rollout_ref.actor.strategy": "fsdp2"}, q7)
    assert not fused_head_broken({**fused, "actor_rollout_ref.actor.strategy": "fsdp2"}, Q15)  # tied
