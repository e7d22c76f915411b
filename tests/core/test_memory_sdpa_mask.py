"""The SDPA mask of a packed log-prob pass without flash-attn: transformers builds one (T x T) boolean mask for the
micro-batch packed in one row, and torch makes a bf16 bias of it in each layer's attention. The fused log-prob head
leaves nothing (no (T x V) logits) to hide it; the run that showed it is in test_memory_measured.py."""

from __future__ import annotations

import pytest

from tests.core.test_memory import BASE, Q7, cluster, phase, term
from tests.helpers.memory_values import full
from wizard.core.memory.config import FLASH_ATTN
from wizard.core.memory.estimate import estimate_memory
from wizard.core.memory.terms import CONSTANTS as C

M = "actor_rollout_ref.model"
R = "actor_rollout_ref.rollout"
SEQ = 1536  # BASE: 512 prompt + 1,024 response tokens


def report(**values):
    rep, why = estimate_memory(full({**BASE, FLASH_ATTN: False, f"{M}.use_fused_kernels": True,
                                     f"{R}.log_prob_micro_batch_size_per_gpu": 16, **values}),
                               {"actor": Q7}, cluster(gib=141))
    assert rep is not None, why
    return rep


def mask(rep, name="old_log_prob"):
    ph = phase(rep, name)
    return term(ph, "sdpa_mask") + term(ph, "sdpa_mask_bias")


def test_the_fused_heads_long_packed_pass_peaks_on_the_mask_growing_as_the_square_of_its_tokens():
    T = 16 * SEQ
    rep = report()
    assert mask(rep) == pytest.approx(C.sdpa_mask_pair * T * T, rel=1e-6)  # 3.4 GiB at 24,576 tokens
    lp = phase(rep, "old_log_prob")
    assert term(lp, "logits") == 0 and term(lp, "layer_activations") > 0  # a layer's moment, not the head's
    label = next(t.label for t in lp.terms if t.key == "sdpa_mask")
    assert "24,576 tokens" in label
    # half the micro-batch, a quarter of the mask
    assert mask(report(**{f"{R}.log_prob_micro_batch_size_per_gpu": 8})) == pytest.approx(mask(rep) / 4, rel=1e-6)


def test_with_flash_attn_there_is_no_mask():
    rep, _ = estimate_memory(full({**BASE, FLASH_ATTN: True, f"{M}.use_fused_kernels": True,
                                   f"{R}.log_prob_micro_batch_size_per_gpu": 16}), {"actor": Q7}, cluster(gib=141))
    assert mask(rep) == 0 and mask(report()) > 0  # the same config without flash-attn has it


def test_the_logits_hide_the_mask_where_they_are_larger():
    # without the fused head 24,576 tokens' (T x V) logits are 7.0 GiB against the mask's 3.4: the pass's moment is
    # the head's, and the mask is not counted beside it (the model's forward frees it before the head)
    lp = phase(report(**{f"{M}.use_fused_kernels": False}), "old_log_prob")
    assert term(lp, "logits") > 0 and term(lp, "sdpa_mask") == 0
    # past about 50,000 tokens a micro-batch (6 bytes a pair against 2 a logit) the mask is the larger
    long = phase(report(**{f"{M}.use_fused_kernels": False, f"{R}.log_prob_micro_batch_size_per_gpu": 64}),
                 "old_log_prob")
    assert term(long, "logits") == 0 and term(long, "sdpa_mask") > 0


def test_padded_sequences_each_attend_over_their_own_length():
    rep = report(**{f"{M}.use_remove_padding": False})
    assert mask(rep) == pytest.approx(C.sdpa_mask_pair * 16 * SEQ * SEQ, rel=1e-6)


def test_a_ulysses_group_slices_the_packed_row_before_the_model():
    # verl slices each packed micro-batch over the group (ulysses_pad_and_slice_inputs) and transformers sizes the
    # mask from the slice: two GPUs, half the tokens each, a quarter of the mask each
    sp2 = report(**{"actor_rollout_ref.actor.ulysses_sequence_parallel_size": 2})
    label = next(t.label for t in phase(sp2, "old_log_prob").terms if t.key == "sdpa_mask")
    assert "12,288 tokens" in label and mask(sp2) == pytest.approx(mask(report()) / 4, rel=1e-6)


def test_the_masks_blocks_stay_cached_for_the_updates_after_the_pass():
    # the same process's allocator keeps them (verl H100: the PPO run's updates held their own working set over the
    # 59.4 GiB its log-prob pass had reserved): the mask and its bias, at the share of a pass's blocks the allocator
    # was measured to keep
    rep = report(**{f"{R}.log_prob_micro_batch_size_per_gpu": 32})
    kept = term(phase(rep, "actor_update"), "allocator_logprob_mask")
    assert kept == pytest.approx(C.update_cache_fraction * mask(rep), rel=1e-6)
    # the logits hide it without the fused head: the update's own logits reuse their blocks
    plain = report(**{f"{M}.use_fused_kernels": False})
    assert term(phase(plain, "actor_update"), "allocator_logprob_mask") == 0


def test_a_model_with_sliding_window_layers_holds_a_second_mask():
    # Gemma2 alternates full and sliding-window layers: transformers builds a mask for each kind (a model whose every
    # layer slides, or none, builds one)
    sliding = Q7.model_copy(update={"model_type": "gemma2", "sliding_window": 4096})
    assert term(phase(report(), "old_log_prob"), "sdpa_mask") > 0
    rep, _ = estimate_memory(full({**BASE, FLASH_ATTN: False, f"{M}.use_fused_kernels": True,
                                   f"{R}.log_prob_micro_batch_size_per_gpu": 16}), {"actor": sliding}, cluster(gib=141))
    assert term(phase(rep, "old_log_prob"), "sdpa_mask") == 2 * term(phase(report(), "old_log_prob"), "sdpa_mask")
    every = Q7.model_copy(update={"model_type": "mistral", "sliding_window": 4096})
    rep, _ = estimate_memory(full({**BASE, FLASH_ATTN: False, f"{M}.use_fused_kernels": True,
                                   f"{R}.log_prob_micro_batch_size_per_gpu": 16}), {"actor": every}, cluster(gib=141))
    assert term(phase(rep, "old_log_prob"), "sdpa_mask") == term(phase(report(), "old_log_prob"), "sdpa_mask")
