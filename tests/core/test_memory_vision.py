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
from wizard.core.memory.batching import SAMPLE_TOKENS
from wizard.core.memory.config import read_config
from wizard.core.memory.vision import max_image_tokens, max_video_tokens, profiled_tokens, train_activations
from wizard.core.verl.keys import A, R
from wizard.core.models.facts import facts_from_hf_config

VL3 = {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
       "hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36, "num_attention_heads": 16,
       "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": True, "max_position_embeddings": 128000,
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


def test_vllm_profiles_the_largest_item_an_image_or_a_video_as_long_as_max_model_len_allows():
    # qwen2_vl.py:871-1081 replayed: an image of max_pixels is 16,384 tokens; a video is 2-frame slices of that size,
    # as many as max_model_len holds (at least 1, at most 14 frames = 7 slices)
    assert [max_video_tokens(F, n) for n in (2048, 8192, 32768, 65536, 128000, 10**6)] == \
        [16384, 16384, 32768, 65536, 114688, 114688]
    # whole items, as many as max(max_num_batched_tokens, one item) holds (encoder_budget.py:140-179)
    assert profiled_tokens(F, 8192, 4096) == 16384 and profiled_tokens(F, 40000, 4096) == 32768
    assert profiled_tokens(F, 8192, 128000) == 114688  # verl's default max_model_len: max_position_embeddings


def test_the_profile_keeps_the_encoder_outputs_through_the_language_models_run():
    def tower(tokens, tp=1):
        patches = tokens * 4  # 2 x 2 patches per token
        return patches * (7.0 * 3420 / tp + 10.0 * 1280) + patches * 1176 * 2  # a block at a time; bf16 pixels

    lm = vllm_activation(F, 8192, 256, 1, encoder=False)
    assert tower(16384) > lm
    assert vllm_activation(F, 8192, 256, 1, max_model_len=4096) == max(lm, tower(16384)) + 16384 * 2048 * 2
    # with the model's own max_position_embeddings (128,000), the video of 114,688 tokens is profiled
    assert vllm_activation(F, 8192, 256, 2) == max(vllm_activation(F, 8192, 256, 2, encoder=False),
                                                   tower(114688, tp=2)) + 114688 * 2048 * 2
    # the plan reads the engine's max_model_len: a short one leaves more for the KV cache
    short = estimate_memory(full({**BASE, "actor_rollout_ref.rollout.max_model_len": 4096}), {"actor": F}, cluster())[0]
    long = estimate_memory(full(BASE), {"actor": F}, cluster())[0]
    assert short.kv["rollout"].kv_bytes > long.kv["rollout"].kv_bytes


def test_the_update_keeps_the_towers_activations_over_the_micro_batchs_prompts():
    rep, why = estimate_memory(full(BASE), {"actor": F}, cluster())
    assert rep is not None and rep.unmodelled is None, why  # a tower of known shape: a verdict
    patches = 4 * 512 * 4  # BASE: micro-batch 4, every prompt token (max 512) an image token, 2 x 2 patches each
    update = phase(rep, "actor_update")
    # with gradient checkpointing: each block's input and one block recomputed
    assert abs(term(update, "vision_activations") - (32 * patches * 2 * 1280 + 1.2 * patches * PER_PATCH_TRAIN)) < 1
    acts, how = train_activations(F, 4 * 512, False, C)
    assert acts == 32 * patches * PER_PATCH_TRAIN and "no checkpointing" in how


def test_every_ulysses_rank_embeds_the_whole_micro_batchs_images_and_dynamic_batches_may_be_all_prompts():
    cfg = read_config(full(BASE))
    assert cfg.actor_images == 4 * 512
    sp2 = read_config(full({**BASE, f"{A}.ulysses_sequence_parallel_size": 2}))
    assert sp2.actor_tokens == cfg.actor_tokens // 2 and sp2.actor_images == cfg.actor_images  # not halved
    dyn = read_config(full({**BASE, f"{A}.use_dynamic_bsz": True, f"{A}.ppo_max_token_len_per_gpu": 16384}))
    assert dyn.actor_images == 16384  # packed by length: the whole budget could be prompts full of images
    padded = read_config(full({**BASE, "actor_rollout_ref.model.use_remove_padding": True, SAMPLE_TOKENS: 300}))
    assert padded.actor_images == 4 * 300  # never more than the micro-batch's tokens


def test_a_log_prob_pass_over_images_peaks_in_the_tower_once_the_logits_are_fused():
    many = {**BASE, "data.max_prompt_length": 16384, "data.max_response_length": 64,
            f"{R}.log_prob_micro_batch_size_per_gpu": 16}
    plain = phase(estimate_memory(full(many), {"actor": F}, cluster())[0], "old_log_prob")
    assert term(plain, "logits") > 0 and term(plain, "vision_activations") == 0  # the logits are larger
    # fused kernels never make the logits: one tower block over 16 x 16,384 image tokens is the pass's peak
    fused = phase(estimate_memory(full({**many, "actor_rollout_ref.model.use_fused_kernels": True}), {"actor": F},
                                  cluster())[0], "old_log_prob")
    assert term(fused, "vision_activations") == int(0.25 * 16 * 16384 * 4 * PER_PATCH_TRAIN)


def test_megatron_with_a_vision_tower_gets_no_verdict():
    rep, _ = estimate_memory(full({**BASE, f"{A}.strategy": "megatron"}), {"actor": F}, cluster())
    assert rep is not None and "the vision tower under Megatron is not modelled" in rep.unmodelled


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


def test_what_verl_hands_vllm_about_images_shapes_its_profile():
    from wizard.core.check.verdict import check_overrides
    from wizard.adapters.files.resources import load_moves, load_schema

    def kv(*sets):
        base = ["actor_rollout_ref.model.path=Qwen/Qwen2.5-VL-3B-Instruct", f"{R}.tensor_model_parallel_size=1",
                "trainer.n_gpus_per_node=1", "data.train_batch_size=16", f"{A}.ppo_mini_batch_size=16",
                f"{A}.ppo_micro_batch_size_per_gpu=4", f"{R}.log_prob_micro_batch_size_per_gpu=4",
                "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4"]
        mp = check_overrides(load_schema(), base + list(sets), moves=load_moves(), models={"actor": F, "ref": F},
                             cluster=cluster(per_node=1)).memory
        return mp.report.kv["rollout"].activation_bytes

    video = kv()  # verl's defaults: max_model_len = 128,000, videos allowed: a 114,688-token video is profiled
    image_only = kv(f"+{R}.engine_kwargs.vllm.limit_mm_per_prompt={{video: 0}}")
    limit_images = kv(f"{R}.limit_images=2")  # verl sets limit_mm_per_prompt to {image: 2}: videos stay allowed
    small = kv(f"+{R}.engine_kwargs.vllm.limit_mm_per_prompt={{video: 0}}",
               f"+{R}.engine_kwargs.vllm.mm_processor_kwargs={{max_pixels: 1003520}}")  # 1,280 tokens an image
    skipped = kv(f"+{R}.engine_kwargs.vllm.skip_mm_profiling=true")
    assert video > image_only > small > skipped and limit_images == video
    assert skipped == int(vllm_activation(F, 8192, 256, 1, encoder=False))  # the language model's run alone
