"""Model facts: what the planner needs to know about a model, from its config.json.

Pure: the dict of a ``config.json`` comes in (read by ``wizard.adapters.model_facts``
from a local folder, or taken from the catalogue in ``resources/model-catalogue.yaml``
for a hub id), a ``ModelFacts`` comes out. The memory estimator
(``wizard.core.memory``) and the model rules read only this.

Parameter count follows ../shared/reference/gpu-memory.md §4.1 (the decomposition
verl's own FLOPs counter uses); KV bytes per token follows §4.2.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ModelFacts(BaseModel):
    """Architecture facts of one model. Sizes are counts, not bytes, unless named *_bytes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str  # "local" | "catalogue" | "config" (a dict given directly)
    name: str  # the path or hub id the user gave
    architecture: str | None = None  # config.json "architectures"[0], e.g. "Qwen2ForCausalLM"
    model_type: str | None = None  # config.json "model_type", e.g. "qwen2"
    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int
    tie_word_embeddings: bool = False
    max_position_embeddings: int | None = None
    attention_bias: bool = False  # Qwen2/2.5 q/k/v bias
    qk_norm: bool = False  # Qwen3 / Gemma3 per-head q/k RMSNorm
    torch_dtype: str | None = None  # dtype the weights are stored in
    # Mixture of experts (None for dense models).
    num_experts: int | None = None
    num_experts_per_tok: int | None = None
    moe_intermediate_size: int | None = None
    num_shared_experts: int | None = None
    # Multi-head latent attention (DeepSeek-V2/V3); None otherwise.
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    # Facts about the files (local folders only; None = unknown).
    auto_map: bool = False  # config.json has auto_map: needs trust_remote_code
    has_tokenizer: bool | None = None
    weight_bytes: int | None = None  # size of the safetensors/bin files on disk
    param_count_from_weights: int | None = None  # from safetensors metadata when present

    # -- derived sizes ---------------------------------------------------------------
    @property
    def layer_params(self) -> int:
        h, d = self.hidden_size, self.head_dim
        q = self.num_attention_heads * d
        kv = self.num_kv_heads * d
        attn = h * q + 2 * h * kv + q * h
        if self.attention_bias:
            attn += q + 2 * kv
        if self.qk_norm:
            attn += 2 * d
        if self.num_experts:
            per_expert = 3 * h * (self.moe_intermediate_size or self.intermediate_size)
            mlp = self.num_experts * per_expert + h * self.num_experts
            if self.num_shared_experts:
                mlp += self.num_shared_experts * per_expert
        else:
            mlp = 3 * h * self.intermediate_size
        return attn + mlp + 2 * h

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)

    @property
    def param_count(self) -> int:
        """Total parameters: the safetensors count when known, else computed from the config."""
        if self.param_count_from_weights:
            return self.param_count_from_weights
        return self.num_layers * self.layer_params + self.embedding_params + self.hidden_size

    def kv_bytes_per_token(self, tp: int = 1, dtype_bytes: int = 2) -> int:
        """KV-cache bytes one token takes on one rank of a TP group (K and V, all layers)."""
        if self.kv_lora_rank:
            return (self.kv_lora_rank + (self.qk_rope_head_dim or 0)) * self.num_layers * dtype_bytes
        heads_per_rank = max(1, self.num_kv_heads // max(1, tp))
        return 2 * self.num_layers * heads_per_rank * self.head_dim * dtype_bytes
