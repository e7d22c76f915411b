"""A Qwen2.5-VL model's vision tower at work (wizard/core/memory/vision.py), each term held to the arithmetic it comes
from: the tower's shape from config.json, vLLM 0.24's encoder profile (the largest image its processor allows,
max_pixels 12,845,056 = 16,384 tokens, through the tower while the language model's dummy run keeps the outputs),
and the trainer's activations over a micro-batch's image tokens (at worst every prompt token). From code, not
measured: no vision-language run was made on the lent GPU."""

from __future__ import annotations

from tests.cli.test_plan_model_families import plan
from tests.core.test_memory import BASE, cluster, phase, term
from tests.helpers.memory_values import full
from wizard.core.memory.estimate import estimate_memory
from wizard.core.memory.terms import CONSTANTS as C
from wizard.core.memory.terms import vllm_activation
from wizard.core.memory.vision import max_image_tokens, train_activations
from wizard.core.models.facts import facts_from_hf_config

VL3 = {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
       "hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36, "num_attention_heads": 16,
       "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": True,
       "vision_config": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "in_chans": 3,
                         "out_hidden_size": 2048, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}}
F = facts_from_hf_config(VL3, name="Qwen/Qwen2.5-VL-3B-Instruct", source="config")
PER_PATCH_TRAIN = 16 * 1280 + 6 * 1280 + 4 * 1280 + 8 * 3420  # a decoder layer's rates, q = k = v = hidden


def test_the_towers_shape_comes_from_vision_config():
    assert (F.vision_hidden_size, F.vision_depth, F.vision_intermediate_size) == (1280, 32, 3420)
    assert (F.vision_merge_size, F.vision_patch_size) == (2, 14)
    assert max_image_tokens(F) == 12_845_056 // (28 * 28) == 16_384
    qwen2_vl = facts_from_hf_config({**VL3, "model_type": "qwen2_vl", "vision_config": {
        "depth": 32, "embed_dim": 1280, "mlp_ratio": 4, "hidden_size": 2048, "patch_size": 14,
        "spatial_merge_size": 2}}, name="q2vl", source="config")
    assert (qwen2_vl.vision_hidden_size, qwen2_vl.vision_intermediate_size) == (1280, 5120)  # GELU MLP of 4 h


def test_vllm_profiles_the_largest_image_and_keeps_its_outputs_through_the_language_models_run():
    patches = 16_384 * 4  # 2 x 2 patches per token
    tower = patches * (7.0 * 3420 + 10.0 * 1280) + patches * 1176 * 2  # one block at a time; bf16 pixel values
    kept = 16_384 * 2048 * 2  # the encoder outputs, at the language model's width
    lm = vllm_activation(F, 8192, 256, 1, encoder=False)
    assert tower > lm
    assert vllm_activation(F, 8192, 256, 1) == max(lm, tower) + kept
    # a budget above the largest image widens the profile to it (max(max_num_batched_tokens, the image))
    assert vllm_activation(F, 32768, 256, 1) > vllm_activation(F, 8192, 256, 1)


def test_the_update_keeps_the_towers_activations_over_the_micro_batchs_prompt_tokens():
    rep, why = estimate_memory(full(BASE), {"actor": F}, cluster())
    assert rep is not None and rep.unmodelled is None, why  # a tower of known shape: a verdict
    T = 4 * (512 + 1024)  # BASE: micro-batch 4 at full length
    images = T * 512 / (512 + 1024)  # at worst every prompt token an image token
    patches = images * 4
    update = phase(rep, "actor_update")
    # with gradient checkpointing: each block's input and one block recomputed
    assert abs(term(update, "vision_activations") - (32 * patches * 2 * 1280 + 1.2 * patches * PER_PATCH_TRAIN)) < 1
    acts, how = train_activations(F, images, False, C)
    assert acts == 32 * patches * PER_PATCH_TRAIN and "no checkpointing" in how


def test_a_vision_language_model_of_unknown_tower_still_gets_no_verdict():
    gemma = plan("google/gemma-3-4b-it", "8xH100-80GB")
    assert gemma["fits"] is None and "vision tower" in gemma["fits_reason"]
    qwen = plan("Qwen/Qwen2.5-VL-3B-Instruct", "8xH100-80GB")
    assert qwen["fits"] is not None and qwen["verdict"] in ("fits", "tight", "fits_while_short", "does_not_fit")
    # the step time says what it leaves out
    assert any("vision tower's work on the images is not timed" in a for a in qwen["step_assumptions"])


def test_sglang_with_a_vision_tower_gets_no_verdict_and_says_why():
    rep, _ = estimate_memory(full({**BASE, "actor_rollout_ref.rollout.name": "sglang"}), {"actor": F}, cluster())
    assert rep is not None and "SGLang's vision encoder is not modelled" in rep.unmodelled
