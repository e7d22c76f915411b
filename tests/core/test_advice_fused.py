"""verl's fused log-prob head (use_fused_kernels) as a faster change where verl would compute the log-probs one
token at a time (no flash-attn): measured on the lent H100 at 28.2 s a step against 47.6 without it."""

from tests.core.test_advice import Q15, plan
from wizard.core.advice import advise
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
