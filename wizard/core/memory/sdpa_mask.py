"""The attention mask transformers' SDPA path builds for a forward-only pass without flash-attn: one (T x T) boolean
mask over a micro-batch packed in one row (MemoryConfig.mask_pairs), and in the layer in flight the bf16 bias torch
makes of it (MemoryConstants.sdpa_mask_pair bytes a (query, key) pair in all). Pure."""

from __future__ import annotations

from wizard.core.memory.terms import CONSTANTS, MemoryConstants

BOOL_BYTES = 1  # of MemoryConstants.sdpa_mask_pair: the boolean mask, alive from the first layer to the last
# Model types whose layers mix full and sliding-window attention, for which transformers builds two masks (a full
# and a sliding one; transformers 5.10.4 with a packed row, checked with tiny models): one whose every layer slides
# (Mistral, Phi-3) or none (Qwen2 with use_sliding_window false) builds one
TWO_MASK_MODEL_TYPES = frozenset({"gemma2", "gemma3", "gemma3_text", "gpt_oss", "cohere2", "olmo3", "ministral",
                                  "qwen2_moe"})


def mask_bytes(pairs: float, model_type: str, c: MemoryConstants = CONSTANTS) -> tuple[float, float]:
    """(held through the model's forward: the boolean mask, two for a model of TWO_MASK_MODEL_TYPES; added by the
    layer in flight: torch's negation of it, the bf16 bias and its aligned copy) over ``pairs`` (query, key) pairs."""
    masks = 2 if model_type in TWO_MASK_MODEL_TYPES else 1
    return masks * BOOL_BYTES * pairs, (c.sdpa_mask_pair - BOOL_BYTES) * pairs
