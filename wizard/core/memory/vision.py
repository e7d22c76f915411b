"""A vision-language model's vision tower at work: its activations in the trainer and vLLM's encoder profile. Pure.

Modelled for the towers whose shape :func:`wizard.core.models.facts.vision_shape` reads (Qwen2-VL, Qwen2.5-VL), from
the code, not measured: no vision-language run has been made on the lent GPU.

- **How many image tokens.** verl's dataset expands each image into its placeholder tokens inside the prompt
  (``data.max_prompt_length`` bounds them: verl drops or cuts longer prompts), so the language model's terms already
  count them as tokens. What is new is the tower's work on them: ``merge x merge`` patches per language-model token
  (Qwen2.5-VL's merger joins 2 x 2 patches of 14 x 14 pixels). The estimate takes the worst case, every prompt token
  an image token, because the share of images in the prompts is the data's and not in the config.
- **The trainer** (verl's FSDP engine trains the tower: nothing in verl 0.9.1 reads ``actor.freeze_vision_tower``;
  transformers checkpoints its blocks, ``GradientCheckpointingLayer``s, when gradient checkpointing is on): the
  tower's blocks keep activations for the backward at the same per-token rates as a decoder layer (full attention:
  q = k = v = hidden), over the patches of a micro-batch's images (MemoryConfig.actor_images: micro-batch x
  max_prompt_length at worst; every Ulysses rank embeds the whole micro-batch, verl's qwen2_vl forward slicing only
  after); a log-prob pass holds one block's at a time.
- **vLLM** profiles the encoder before it sizes the KV cache (gpu_model_runner.py:6239-6297 of vLLM 0.24): a dummy
  batch of the modality whose item has the most tokens, as many items as ``max(max_num_batched_tokens, that item)``
  holds (encoder_budget.py:140-179, encoder_cache_manager.py:309-316), run through the tower, its outputs kept in
  the encoder cache while the language model's dummy run goes. The profile's peak is the larger of the two runs,
  plus those outputs. For Qwen2-VL and Qwen2.5-VL the largest image is ``max_pixels`` 12,845,056 = 16,384 tokens
  (qwen2_vl.py:965-1027), and a video (allowed unless ``limit_mm_per_prompt`` says otherwise; verl's
  ``limit_images`` limits images only) is up to 14 frames of that size, two frames to a 16,384-token slice, as many
  slices as ``max_model_len`` holds (qwen2_vl.py:871-878 and 1029-1081): with verl's default ``max_model_len`` (the
  model's ``max_position_embeddings``, 128,000) that is 7 slices, 114,688 tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

from wizard.core.models.facts import ModelFacts

# preprocessor_config.json of Qwen2-VL and Qwen2.5-VL: max_pixels (the processor's size["longest_edge"])
QWEN_VL_MAX_PIXELS = 12_845_056
MAX_FRAMES_PER_VIDEO = 14  # qwen2_vl.py:117; frames are padded to pairs (temporal_patch_size 2)
PIXEL_VALUES_PER_PATCH = 3 * 2 * 14 * 14  # channels x temporal_patch_size x patch x patch (bf16 in vLLM)


def has_tower(f: ModelFacts | None) -> bool:
    """The model's vision tower has a shape the estimate sizes."""
    return f is not None and bool(f.vision_depth and f.vision_hidden_size and f.vision_intermediate_size)


def patches(f: ModelFacts, image_tokens: float) -> float:
    """Patches the tower runs for ``image_tokens`` language-model tokens of images."""
    return image_tokens * f.vision_merge_size ** 2


def block_activation(f: ModelFacts, n_patches: float, c) -> float:
    """Bytes one tower block saves for its backward over ``n_patches`` (a decoder layer's rates, c.act_*)."""
    h, inter = f.vision_hidden_size, f.vision_intermediate_size
    return n_patches * (c.act_h * h + c.act_q * h + c.act_kv * h + c.act_i * inter)


def train_activations(f: ModelFacts, image_tokens: float, gc: bool, c) -> tuple[float, str]:
    """The tower's activations kept for the backward of a micro-batch with ``image_tokens`` image tokens."""
    n = patches(f, image_tokens)
    one = block_activation(f, n, c)
    if gc:
        return (c.gc_store * f.vision_depth * n * 2 * f.vision_hidden_size + c.gc_recompute * one,
                f"{n:,.0f} patches: checkpointed, {f.vision_depth} block inputs + one block recomputed")
    return f.vision_depth * one, f"{n:,.0f} patches: no checkpointing, all {f.vision_depth} blocks' activations"


def forward_peak(f: ModelFacts, image_tokens: float, c) -> float:
    """A log-prob pass: one tower block's activations at a time (freed as it goes, as a decoder layer's)."""
    return c.forward_layer_fraction * block_activation(f, patches(f, image_tokens), c)


@dataclass(frozen=True)
class MmProfile:
    """What verl hands vLLM that shapes the encoder's profile: ``engine_kwargs.vllm.skip_mm_profiling``,
    ``limit_mm_per_prompt`` (a modality at 0 is not profiled; verl's ``rollout.limit_images`` replaces the whole
    dict with ``{"image": N}``, vllm_async_server.py:289-290) and ``mm_processor_kwargs.max_pixels``."""

    skip: bool = False
    images: bool = True
    videos: bool = True
    max_pixels: int | None = None


NO_SETTINGS = MmProfile()


def max_image_tokens(f: ModelFacts, mm: MmProfile = NO_SETTINGS) -> int:
    """The language-model tokens of the largest image the processor allows (max_pixels / (patch x merge)^2)."""
    unit = f.vision_patch_size * f.vision_merge_size
    return max(1, (mm.max_pixels or QWEN_VL_MAX_PIXELS) // (unit * unit))


def max_video_tokens(f: ModelFacts, max_model_len: int | None, mm: MmProfile = NO_SETTINGS) -> int:
    """The language-model tokens of the largest video vLLM profiles: slices of two frames at the largest image size,
    as many as ``max_model_len`` holds, at least one and at most 14 frames' worth."""
    per_slice = max_image_tokens(f, mm)
    slices = min(MAX_FRAMES_PER_VIDEO // 2, max(1, (max_model_len or per_slice) // per_slice))
    return slices * per_slice


def profiled_tokens(f: ModelFacts, batched_tokens: int, max_model_len: int | None,
                    mm: MmProfile = NO_SETTINGS) -> int:
    """The tokens of the dummy items vLLM runs through the tower: whole items of the largest kind (a video where it
    has more tokens than an image), as many as max(max_num_batched_tokens, one item) holds; 0 when the profile is
    skipped or both kinds are limited to none."""
    kinds = ([max_image_tokens(f, mm)] if mm.images else []) + (
        [max_video_tokens(f, max_model_len, mm)] if mm.videos else [])
    if mm.skip or not kinds:
        return 0
    per_item = max(kinds)
    return max(1, max(batched_tokens, per_item) // per_item) * per_item


def vllm_encoder_profile(f: ModelFacts, batched_tokens: int, tp: int, c,
                         max_model_len: int | None = None, mm: MmProfile = NO_SETTINGS) -> tuple[float, float]:
    """(the tower's peak in vLLM's profile run, the encoder outputs kept through the language model's dummy run): the
    profiled items (:func:`profiled_tokens`) through one block at a time (its MLP split over TP, as vLLM's tower is),
    the pixel values beside it."""
    tokens = profiled_tokens(f, batched_tokens, max_model_len, mm)
    n = patches(f, tokens)
    h, inter = f.vision_hidden_size, f.vision_intermediate_size
    peak = n * (c.vllm_act_i * inter / max(1, tp) + c.vllm_act_h * h) + n * PIXEL_VALUES_PER_PATCH * 2
    return peak, tokens * f.hidden_size * 2
