"""Attention in the trainer's passes without flash-attn: verl hands transformers a micro-batch packed into one row
(attention_mask None, position_ids restarting per sequence), and transformers' SDPA path turns that into one
(T x T) block-causal boolean mask, so every (query, key) pair of the micro-batch is computed: a token's attention
grows with the micro-batch's tokens T, not with its own sequence. A user who halves a log-prob micro-batch without
flash-attn should see the pass get faster; with flash-attn (varlen, per sequence) not."""

from dataclasses import replace

import pytest

from tests.core.test_advice import Q15, R, plan
from wizard.core.memory.config import FLASH_ATTN
from wizard.core.steptime import CALIBRATION, predict_step

M = "actor_rollout_ref.model"
RATE = 100.0
CAL = replace(CALIBRATION, attention_tflops=RATE)


def phases(extra=(), flash=False, c=CAL, gpus="1xH200-141GB"):
    mp = plan([*extra, "data.max_response_length=3072", "data.max_prompt_length=1024"], gpus=gpus, model=Q15)
    st = predict_step({**mp.values, FLASH_ATTN: flash}, mp.models, mp.cluster, mp.report, c)
    assert st.reason is None, st.reason
    return {p.name: p for p in st.phases}


def attention(phase):
    return next((t for t in phase.terms if t.label == "attention over the SDPA mask"), None)


def test_the_log_prob_pass_costs_more_per_token_with_a_larger_packed_micro_batch_without_flash_attn():
    small = phases([f"{R}.log_prob_micro_batch_size_per_gpu=4"])["old_log_prob"]
    large = phases([f"{R}.log_prob_micro_batch_size_per_gpu=16"])["old_log_prob"]
    # the same tokens, 4 x the tokens per micro-batch: 4 x the attention's work
    assert attention(large).seconds == pytest.approx(4 * attention(small).seconds, rel=1e-6)
    assert large.seconds > small.seconds


def test_with_flash_attn_the_micro_batch_does_not_change_the_pass():
    small = phases([f"{R}.log_prob_micro_batch_size_per_gpu=4"], flash=True)["old_log_prob"]
    large = phases([f"{R}.log_prob_micro_batch_size_per_gpu=16"], flash=True)["old_log_prob"]
    assert attention(small) is None and attention(large) is None

    def work(phase):  # all but verl's fixed cost per micro-batch, which 4 x the micro-batches pays 4 x
        return sum(t.seconds for t in phase.terms if t.label != "per micro-batch")
    assert work(small) == pytest.approx(work(large))
    [per_small] = [t.seconds for t in small.terms if t.label == "per micro-batch"]
    [per_large] = [t.seconds for t in large.terms if t.label == "per micro-batch"]
    assert per_small == pytest.approx(4 * per_large)


def test_the_term_is_the_mask_s_flops_at_the_stated_rate():
    """4 x T x heads x head_dim x layers FLOPs per token, T = 16 samples x (1,024 + 3,072) tokens, 64 samples."""
    term = attention(phases([f"{R}.log_prob_micro_batch_size_per_gpu=16"])["old_log_prob"])
    tokens = 16 * 4 * (1024 + 3072)
    T = 16 * (1024 + 3072)
    flops = 4 * T * (Q15.num_attention_heads * Q15.head_dim) * Q15.num_layers * tokens
    assert term.seconds == pytest.approx(flops / (RATE * 1e12), rel=1e-3)
    assert f"{T:,}" in term.note and "flash-attn" in term.note


def test_the_update_counts_the_backward_and_the_checkpointing_recompute():
    with_gc = attention(phases([f"{M}.enable_gradient_checkpointing=True"])["update_actor"])
    without = attention(phases([f"{M}.enable_gradient_checkpointing=False"])["update_actor"])
    assert with_gc.seconds == pytest.approx(4 / 3 * without.seconds)
    assert with_gc.note.startswith("4 x") and without.note.startswith("3 x")


def test_without_padding_removed_each_sequence_attends_over_its_padded_length():
    term = attention(phases([f"{M}.use_remove_padding=False", f"{R}.log_prob_micro_batch_size_per_gpu=16"])["old_log_prob"])
    assert "4,096 (the padded sequence)" in term.note


def test_not_counted_until_calibrated():
    assert attention(phases(c=replace(CALIBRATION, attention_tflops=None))["old_log_prob"]) is None


def test_a_micro_batch_beyond_the_measured_ones_is_named_in_the_assumptions():
    mp = plan(["data.max_response_length=3072", "data.max_prompt_length=1024",
               f"{R}.log_prob_micro_batch_size_per_gpu=16"], gpus="1xH200-141GB", model=Q15)
    st = predict_step({**mp.values, FLASH_ATTN: False}, mp.models, mp.cluster, mp.report)
    [line] = [a for a in st.assumptions if "packed tokens" in a]
    assert "65,536 packed tokens" in line and "39,800" in line
    flash = predict_step({**mp.values, FLASH_ATTN: True}, mp.models, mp.cluster, mp.report)
    short = plan([f"{R}.log_prob_micro_batch_size_per_gpu=16"], gpus="1xH200-141GB", model=Q15)
    within = predict_step({**short.values, FLASH_ATTN: False}, short.models, short.cluster, short.report)
    assert not [a for a in flash.assumptions + within.assumptions if "packed tokens" in a]


def test_the_advisor_offers_smaller_micro_batches_as_faster_only_down_to_the_measured_ones():
    """Without flash-attn at 4,096 tokens a smaller log-prob micro-batch is faster (less of the mask to compute),
    but verl's work per micro-batch was only measured at 4-16 samples: nothing below 4 is offered as faster."""
    from wizard.core.advice import advise

    mp = plan(["data.max_response_length=3072", "data.max_prompt_length=1024",
               f"{R}.log_prob_micro_batch_size_per_gpu=16"], gpus="1xH200-141GB", model=Q15)
    advice = advise({**mp.values, FLASH_ATTN: False}, mp.models, mp.cluster)
    assert advice.fits_now
    micro = [f"{R}.log_prob_micro_batch_size_per_gpu", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
             "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"]
    offered = [int(a.changes[k]) for a in advice.alternatives for k in micro if k in a.changes]
    assert not offered or min(offered) >= 4
    # what keeps it so: by the estimate a log-prob micro-batch of 2 is faster than 4, and 4 than 16; the search
    # takes 16 -> 4 as faster and not 4 -> 2 (the first choices now use dynamic batching, measured at one
    # 4,096-token sample a micro-batch, and list no micro-batch)
    from wizard.core.advice.search import _better
    from wizard.core.advice.state import _state

    at = {m: _state({**mp.values, FLASH_ATTN: False, micro[0]: m}, dict(mp.models), mp.cluster, ()) for m in (16, 4, 2)}
    assert at[2].seconds < at[4].seconds < at[16].seconds and all(s.fits for s in at.values())
    assert _better(at[4], at[16]) and not _better(at[2], at[4])


def rows(phase):
    return next((t for t in phase.terms if t.label == "log-probs row by row"), None)


PPO = ["algorithm.adv_estimator=gae", "actor_rollout_ref.actor.use_kl_loss=false", "critic.strategy=fsdp2",
       "critic.ppo_micro_batch_size_per_gpu=4"]


def test_without_flash_attn_the_actor_s_log_probs_loop_over_the_tokens_and_the_critic_s_passes_do_not():
    """verl's logprobs_from_logits_v2 (no flash-attn cross-entropy) is one log_softmax a token: measured as the
    critic's passes (a value head, no log-probs) costing a third to a half of the actor's over the same tokens."""
    without = phases(PPO)
    tokens = 64 * (1024 + 3072)  # the default 16 prompts x 4 samples, prompts and responses at their maximum
    for name in ("old_log_prob", "ref", "update_actor"):
        if name in without:
            per = CAL.logprob_rows_fwd_s_per_token if name != "update_actor" else CAL.logprob_rows_train_s_per_token
            assert rows(without[name]).seconds == pytest.approx(tokens * per, rel=1e-6), name
            assert "flash-attn removes it" in rows(without[name]).note
    assert rows(without["values"]) is None and rows(without["update_critic"]) is None
    # the critic's values pass over the same tokens is now well under the actor's log-prob pass (measured 7.0 / 17.9)
    assert without["values"].seconds < 0.6 * without["old_log_prob"].seconds
    # flash-attn's cross-entropy, or verl's fused kernels, compute the log-probs without the loop
    loop = rows(without["old_log_prob"]).seconds
    flash, fused = phases(PPO, flash=True), phases([*PPO, f"{M}.use_fused_kernels=true"])
    for phased in (flash, fused):
        assert all(rows(p) is None for p in phased.values())
    assert flash["old_log_prob"].seconds < without["old_log_prob"].seconds - 0.9 * loop
    # the fused head costs its own time in each log-prob pass, a fraction of the loop's (measured: 1.43 s a pass over
    # 93,536 tokens where the loop took about 5.2), and nothing in the update or the critic's passes
    for name in {"old_log_prob", "ref"} & set(fused):  # (this PPO plan has no reference model)
        [head] = [t for t in fused[name].terms if t.label == "fused log-prob head"]
        assert head.seconds == pytest.approx(tokens * 151_936 * CAL.fused_head_s_per_logit, rel=1e-6)
        assert 0.2 * loop < head.seconds < 0.4 * loop
        assert fused[name].seconds == pytest.approx(without[name].seconds - rows(without[name]).seconds + head.seconds)
    assert not [t for n in ("update_actor", "values", "update_critic") for t in fused[n].terms if "fused" in t.label]


def test_the_step_says_how_much_of_it_the_row_loop_is_and_that_flash_attn_removes_it():
    mp = plan(PPO, gpus="1xH200-141GB", model=Q15)
    without = predict_step({**mp.values, FLASH_ATTN: False}, mp.models, mp.cluster, mp.report, CAL)
    looped = sum(t.seconds for p in without.phases for t in p.terms if t.label == "log-probs row by row")
    [line] = [a for a in without.assumptions if "one token at a time" in a]
    assert f"{looped:.1f} s of this {without.seconds:.1f} s step" in line and "flash-attn installed" in line
    with_flash = predict_step({**mp.values, FLASH_ATTN: True}, mp.models, mp.cluster, mp.report, CAL)
    assert not [a for a in with_flash.assumptions if "one token at a time" in a]


def test_a_plan_with_a_critic_is_timed_with_flash_attn_unless_the_environment_is_known_to_lack_it():
    """verl 0.9.1 loads the critic with flash_attention_2 whatever override_config says (env.flash_attn_critic): a
    PPO plan that sets sdpa still runs only where flash-attn is installed, so its log-probs take flash-attn's
    cross-entropy, not the row loop (it was charged 21.8 s of loop on the 8-GPU PPO preset)."""
    sdpa = [*PPO, f"+{M}.override_config.attn_implementation=sdpa"]
    mp = plan(sdpa, gpus="1xH200-141GB", model=Q15)
    unknown = predict_step(mp.values, mp.models, mp.cluster, mp.report, CAL)
    assert not any(t.label == "log-probs row by row" for p in unknown.phases for t in p.terms)
    known = predict_step({**mp.values, FLASH_ATTN: False}, mp.models, mp.cluster, mp.report, CAL)
    assert any(t.label == "log-probs row by row" for p in known.phases for t in p.terms)
