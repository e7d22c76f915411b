"""Model facts: what the planner needs to know about a model, from its config.json.

Pure: the dict of a ``config.json`` comes in (read by ``wizard.adapters.files.model_facts``
from a local folder, or taken from the catalogue in ``resources/model-catalogue.yaml``
for a hub id), a ``ModelFacts`` comes out. The memory estimator
(``wizard.core.memory.estimate``) and the model rules (``wizard.core.check.rules.models``) read only this.

Parameter count follows ../shared/reference/gpu-memory.md §4.1 (the decomposition
verl's own FLOPs counter uses), extended for MoE (routed + shared experts, dense
leading layers) and DeepSeek's multi-head latent attention; KV bytes per token
follows §4.2.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from pydantic import BaseModel, ConfigDict

from wizard.core.verl.roles import need_critic, need_ref, ref_in_actor


# The Hugging Face commands fixes suggest: huggingface_hub >= 1.0 (what verl 0.9.1's transformers pulls in) has
# only ``hf`` (``huggingface-cli`` prints "deprecated and no longer works"); ``hf`` exists since 0.34.
# tests/adapters/test_model_facts.py runs each with --help in the target environment.
HF_DOWNLOAD = "hf download"
HF_LOGIN = "hf auth login"
HF_COMMANDS = (HF_DOWNLOAD, HF_LOGIN)

# model_type values whose layout facts_from_hf_config knows (norms, biases, q/k norms, MoE, MLA).
# Others still parse with the generic decoder formula; the rules call them out as unknown.
KNOWN_MODEL_TYPES = frozenset({
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe",
    "gemma", "gemma2", "gemma3", "gemma3_text", "deepseek_v2", "deepseek_v3",
    "phi3",  # fused qkv / gate_up projections: the same parameters as Llama's layout
    "qwen2_vl", "qwen2_5_vl",  # a Qwen2 decoder and a vision tower (vision_params)
})
# Qwen2/2.5 q/k/v projections carry a bias (torchinfo of Qwen2.5-VL-3B's decoder layer: 77,076,992 with it)
_QKV_BIAS_TYPES = frozenset({"qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl"})
_QK_NORM_TYPES = frozenset({"qwen3", "qwen3_moe", "gemma3", "gemma3_text"})
_FOUR_NORM_TYPES = frozenset({"gemma2", "gemma3", "gemma3_text"})  # pre/post norms around attn and MLP
# the causal LMs whose config classes default tie_word_embeddings to True (transformers 5.10; save_pretrained leaves
# the key out where it equals the default): tests/conformance/test_verl_unchecked.py holds the list to transformers
_TIED_BY_DEFAULT = frozenset({
    "gemma", "gemma2", "gemma3", "gemma3_text", "bloom", "cohere", "cohere2", "ernie4_5", "ernie4_5_moe", "falcon",
    "gpt2", "gpt_bigcode", "gpt_neo", "jetmoe", "mpt", "opt", "smollm3", "starcoder2", "vaultgemma"})


class ModelConfigError(ValueError):
    """A config.json the wizard cannot read; the message is one line for the user."""


class ModelFacts(BaseModel):
    """Architecture facts of one model. Sizes are counts, not bytes, unless named *_bytes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str  # "local" | "catalogue" | "guess" (a catalogue row an unknown id is named after) | "config" (a dict)
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
    # -- added with the model rules (all optional, defaults keep older callers working) --
    norms_per_layer: int = 2  # RMSNorm vectors per layer: 2, or 4 for Gemma2/3
    num_dense_layers: int = 0  # MoE models: leading/listed layers with a dense MLP (intermediate_size)
    shared_expert_intermediate_size: int | None = None  # Qwen2-MoE's one shared expert
    q_lora_rank: int | None = None  # MLA query compression (None: plain q projection)
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None
    sliding_window: int | None = None  # None when the model attends to the whole context
    rope_scaling_type: str | None = None  # "yarn", "llama3", "linear", "dynamic", ...
    rope_scaling_factor: float | None = None
    original_max_position_embeddings: int | None = None
    remote_code: bool | None = None  # transformers must run the repo's code (None: cannot tell)
    multimodal: bool = False  # decoder facts come from text_config (or a vision_config sits beside them)
    # The vision tower's parameters, from vision_config where its layout is known (Qwen2-VL, Qwen2.5-VL); None where
    # a multimodal model's tower is not counted. Included in computed_param_count (verl trains and vLLM loads it).
    vision_params: int | None = None
    # The tower's shape where vision_params is known: what its activations and vLLM's encoder profile are sized by.
    vision_hidden_size: int | None = None
    vision_depth: int | None = None
    vision_intermediate_size: int | None = None  # the MLP's width (Qwen2-VL: mlp_ratio x hidden)
    vision_merge_size: int = 2  # spatial_merge_size: merge x merge patches make one language-model token
    vision_patch_size: int = 14
    has_chat_template: bool | None = None
    has_weights: bool | None = None
    gated: bool | None = None  # hub repo needs an accepted licence and a token (catalogue only)
    verified: bool | None = None  # catalogue row checked against a real config.json

    # -- derived sizes ---------------------------------------------------------------
    @property
    def attention_params(self) -> int:
        """Projections (and biases / q-k norms) of one layer's attention."""
        h, d = self.hidden_size, self.head_dim
        if self.kv_lora_rank:
            return self._mla_params()
        q = self.num_attention_heads * d
        kv = self.num_kv_heads * d
        attn = h * q + 2 * h * kv + q * h
        if self.attention_bias:
            attn += q + 2 * kv
        if self.qk_norm:
            attn += 2 * d
        return attn

    def _mla_params(self) -> int:
        h, heads = self.hidden_size, self.num_attention_heads
        nope, rope = self.qk_nope_head_dim or 0, self.qk_rope_head_dim or 0
        v = self.v_head_dim or self.head_dim
        lora = self.kv_lora_rank or 0
        if self.q_lora_rank:
            q = h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * heads * (nope + rope)
        else:
            q = h * heads * (nope + rope)
        kv = h * (lora + rope) + lora + lora * heads * (nope + v)
        return q + kv + heads * v * h

    @property
    def layer_params(self) -> int:
        """One decoder layer; for MoE models a layer with routed experts."""
        h = self.hidden_size
        if self.num_experts:
            per_expert = 3 * h * (self.moe_intermediate_size or self.intermediate_size)
            mlp = self.num_experts * per_expert + h * self.num_experts
            if self.shared_expert_intermediate_size:
                mlp += 3 * h * self.shared_expert_intermediate_size + h  # + its sigmoid gate
            elif self.num_shared_experts:
                mlp += self.num_shared_experts * per_expert
        else:
            mlp = 3 * h * self.intermediate_size
        return self.attention_params + mlp + self.norms_per_layer * h

    @property
    def dense_layer_params(self) -> int:
        """A layer with a plain gated MLP of intermediate_size (every layer of a dense model)."""
        h = self.hidden_size
        return self.attention_params + 3 * h * self.intermediate_size + self.norms_per_layer * h

    @property
    def embedding_params(self) -> int:
        return self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)

    @property
    def computed_param_count(self) -> int:
        """Total parameters from the config alone: the decoder, plus the vision tower where it is counted
        (``vision_params``; a multimodal model's tower of unknown layout is left out)."""
        dense = self.num_dense_layers if self.num_experts else 0
        return ((self.num_layers - dense) * self.layer_params + dense * self.dense_layer_params
                + self.embedding_params + self.hidden_size + (self.vision_params or 0))

    @property
    def param_count(self) -> int:
        """Total parameters: the safetensors count when known, else computed from the config."""
        if self.param_count_from_weights:
            return self.param_count_from_weights
        return self.computed_param_count

    @property
    def active_param_count(self) -> int:
        """Parameters one token passes through (MoE: only its top-k experts); the total for dense models."""
        if not self.num_experts or not self.num_experts_per_tok:
            return self.computed_param_count - (self.vision_params or 0)
        idle = (self.num_experts - self.num_experts_per_tok) * 3 * self.hidden_size * (
            self.moe_intermediate_size or self.intermediate_size)
        return self.computed_param_count - (self.vision_params or 0) - (self.num_layers - self.num_dense_layers) * idle

    @property
    def known_layout(self) -> bool:
        return self.model_type in KNOWN_MODEL_TYPES

    def kv_bytes_per_token(self, tp: int = 1, dtype_bytes: int = 2) -> int:
        """KV-cache bytes one token takes on one rank of a TP group (K and V, all layers)."""
        if self.kv_lora_rank:
            return (self.kv_lora_rank + (self.qk_rope_head_dim or 0)) * self.num_layers * dtype_bytes
        heads_per_rank = max(1, self.num_kv_heads // max(1, tp))
        return 2 * self.num_layers * heads_per_rank * self.head_dim * dtype_bytes


# -- reading a config.json -------------------------------------------------------------

def facts_from_hf_config(
    config: dict, *, name: str, source: str, native_model_types: Collection[str] | None = None
) -> ModelFacts:
    """The facts of a Hugging Face ``config.json`` dict.

    Multimodal wrappers (Gemma3ForConditionalGeneration, ...) keep the decoder under
    ``text_config``; its values win, the top level fills the gaps. ``native_model_types``
    (the model types transformers implements itself) lets ``remote_code`` say whether an
    ``auto_map`` really forces remote code; without it only the known families are judged.
    Raises ModelConfigError with a one-line reason when a required size is missing or not a number.
    """
    if not isinstance(config, Mapping):
        raise ModelConfigError(f"config.json must hold a JSON object, not {type(config).__name__}")
    text = config.get("text_config")
    text_nested = isinstance(text, Mapping) and "hidden_size" not in config
    multimodal = text_nested or isinstance(config.get("vision_config"), Mapping)
    cfg: dict = {**config, **text} if text_nested else dict(config)
    prefix = "text_config." if text_nested else ""
    model_type = _str(cfg.get("model_type")) or _str(config.get("model_type"))
    top_type = _str(config.get("model_type"))

    hidden = _required(cfg, prefix, "hidden_size", "n_embd", "d_model")
    layers = _required(cfg, prefix, "num_hidden_layers", "n_layer", "num_layers")
    heads = _required(cfg, prefix, "num_attention_heads", "n_head")
    vocab = _required(cfg, prefix, "vocab_size")
    kv_heads = 1 if cfg.get("multi_query") else (_optional(cfg, "num_key_value_heads", "num_kv_heads") or heads)
    intermediate = _optional(cfg, "intermediate_size", "n_inner", "ffn_dim") or 4 * hidden
    nope, rope_dim = _optional(cfg, "qk_nope_head_dim"), _optional(cfg, "qk_rope_head_dim")
    kv_lora = _optional(cfg, "kv_lora_rank")
    head_dim = _optional(cfg, "head_dim") or ((nope or 0) + (rope_dim or 0) if kv_lora else hidden // heads)
    experts = _optional(cfg, "num_experts", "n_routed_experts", "num_routed_experts", "num_local_experts")
    auto_map = config.get("auto_map") if isinstance(config.get("auto_map"), Mapping) else None
    tie = cfg.get("tie_word_embeddings", config.get("tie_word_embeddings"))
    scaling = _rope_scaling(cfg)
    return ModelFacts(
        source=source, name=name,
        architecture=_architecture(config), model_type=model_type,
        hidden_size=hidden, intermediate_size=intermediate, num_layers=layers,
        num_attention_heads=heads, num_kv_heads=kv_heads, head_dim=head_dim, vocab_size=vocab,
        tie_word_embeddings=bool(tie) if isinstance(tie, bool) else model_type in _TIED_BY_DEFAULT,
        max_position_embeddings=_optional(cfg, "max_position_embeddings", "n_positions", "max_sequence_length"),
        attention_bias=_attention_bias(cfg, model_type), qk_norm=model_type in _QK_NORM_TYPES,
        torch_dtype=_str(cfg.get("torch_dtype")) or _str(cfg.get("dtype")) or _str(config.get("torch_dtype")),
        num_experts=experts or None,
        num_experts_per_tok=_optional(cfg, "num_experts_per_tok", "moe_topk") if experts else None,
        moe_intermediate_size=_optional(cfg, "moe_intermediate_size") if experts else None,
        num_shared_experts=_optional(cfg, "n_shared_experts", "num_shared_experts") if experts else None,
        shared_expert_intermediate_size=_optional(cfg, "shared_expert_intermediate_size") if experts else None,
        num_dense_layers=_dense_layers(cfg, layers) if experts else 0,
        kv_lora_rank=kv_lora, qk_rope_head_dim=rope_dim if kv_lora else None,
        q_lora_rank=_optional(cfg, "q_lora_rank") if kv_lora else None,
        qk_nope_head_dim=nope if kv_lora else None, v_head_dim=_optional(cfg, "v_head_dim") if kv_lora else None,
        norms_per_layer=4 if model_type in _FOUR_NORM_TYPES else 2,
        sliding_window=_sliding_window(cfg),
        rope_scaling_type=scaling[0], rope_scaling_factor=scaling[1], original_max_position_embeddings=scaling[2],
        auto_map=auto_map is not None,
        remote_code=_remote_code(auto_map, top_type, native_model_types),
        multimodal=multimodal, vision_params=vision_params(config), **vision_shape(config),
    )


def vision_shape(config: Mapping) -> dict:
    """The vision tower's hidden size, depth, MLP width, merge and patch sizes, where :func:`vision_params` counts the
    tower (Qwen2-VL, Qwen2.5-VL); {} otherwise."""
    if vision_params(config) is None:
        return {}
    v, kind = config["vision_config"], _str(config.get("model_type"))
    h = _optional(v, "hidden_size" if kind == "qwen2_5_vl" else "embed_dim") or _optional(v, "embed_dim", "hidden_size")
    if kind == "qwen2_5_vl":
        inter = _optional(v, "intermediate_size") or 4 * h
    else:
        ratio = v.get("mlp_ratio", 4)
        inter = int(h * ratio) if isinstance(ratio, (int, float)) and not isinstance(ratio, bool) else 4 * h
    return {"vision_hidden_size": h, "vision_depth": _optional(v, "depth"), "vision_intermediate_size": inter,
            "vision_merge_size": _optional(v, "spatial_merge_size") or 2,
            "vision_patch_size": _optional(v, "patch_size", "spatial_patch_size") or 14}


def vision_params(config: Mapping) -> int | None:
    """Parameters of the vision tower of a Qwen2-VL / Qwen2.5-VL config.json (``vision_config``), as transformers
    builds it (modeling_qwen2_5_vl.py / modeling_qwen2_vl.py): a Conv3d patch embedding without bias, ``depth``
    blocks (qkv and proj with biases, two norms, an MLP), and the patch merger (a norm, then
    (h·m²) -> (h·m²) -> out_hidden_size with biases, m = spatial_merge_size). Qwen2.5-VL's blocks have RMSNorms and
    a gated SiLU MLP of intermediate_size; Qwen2-VL's LayerNorms (with bias) and a GELU MLP of mlp_ratio x h.
    torchinfo of Qwen2.5-VL-3B-Instruct: 1,505,280 (patch) + 32 x 19,702,200 (blocks) + 1,280 + 36,707,328 (merger).
    None for other models (their tower is not counted)."""
    v = config.get("vision_config")
    kind = _str(config.get("model_type"))
    if not isinstance(v, Mapping) or kind not in ("qwen2_5_vl", "qwen2_vl"):
        return None
    h = _optional(v, "hidden_size" if kind == "qwen2_5_vl" else "embed_dim") or _optional(v, "embed_dim", "hidden_size")
    depth = _optional(v, "depth")
    patch, temporal = _optional(v, "patch_size", "spatial_patch_size") or 14, _optional(v, "temporal_patch_size") or 2
    chans, merge = _optional(v, "in_chans", "in_channels") or 3, _optional(v, "spatial_merge_size") or 2
    out = _optional(v, "out_hidden_size") if kind == "qwen2_5_vl" else _optional(v, "hidden_size")
    out = out or _optional(config, "hidden_size")
    if not (h and depth and out):
        return None
    attn = h * 3 * h + 3 * h + h * h + h
    if kind == "qwen2_5_vl":
        inter = _optional(v, "intermediate_size") or 4 * h
        mlp, norms, ln_q = 3 * h * inter + 2 * inter + h, 2 * h, h
    else:
        ratio = v.get("mlp_ratio", 4)
        inter = int(h * ratio) if isinstance(ratio, (int, float)) and not isinstance(ratio, bool) else 4 * h
        mlp, norms, ln_q = 2 * h * inter + inter + h, 4 * h, 2 * h
    wide = h * merge * merge
    merger = ln_q + wide * wide + wide + wide * out + out
    return chans * temporal * patch * patch * h + depth * (attn + mlp + norms) + merger


def _str(value) -> str | None:
    return value if isinstance(value, str) and value else None


def _as_int(value) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _optional(cfg: Mapping, *keys: str) -> int | None:
    for key in keys:
        value = _as_int(cfg.get(key))
        if value is not None and value > 0:
            return value
    return None


def _required(cfg: Mapping, prefix: str, *keys: str) -> int:
    for key in keys:
        if key in cfg and cfg[key] is not None:
            value = _as_int(cfg[key])
            if value is None or value <= 0:
                raise ModelConfigError(f"config.json {prefix}{key} must be a positive whole number, got {cfg[key]!r}")
            return value
    raise ModelConfigError(f"config.json has no {prefix}{keys[0]}: not a decoder-only language model config the "
                           "wizard can read")


def _architecture(config: Mapping) -> str | None:
    archs = config.get("architectures")
    if isinstance(archs, list) and archs and isinstance(archs[0], str):
        return archs[0]
    return None


def _attention_bias(cfg: Mapping, model_type: str | None) -> bool:
    if isinstance(cfg.get("attention_bias"), bool):
        return cfg["attention_bias"]
    return model_type in _QKV_BIAS_TYPES


def _dense_layers(cfg: Mapping, layers: int) -> int:
    """Layers of an MoE model whose MLP is dense (DeepSeek's first_k_dense_replace, Qwen-MoE's mlp_only_layers)."""
    first_dense = _as_int(cfg.get("first_k_dense_replace")) or 0
    listed = cfg.get("mlp_only_layers") if isinstance(cfg.get("mlp_only_layers"), list) else []
    step = _as_int(cfg.get("decoder_sparse_step")) or 1
    freq = _as_int(cfg.get("moe_layer_freq")) or 1
    dense = 0
    for i in range(layers):
        sparse = i >= first_dense and i not in listed and (i + 1) % step == 0 and i % freq == 0
        dense += not sparse
    return dense


def _sliding_window(cfg: Mapping) -> int | None:
    if cfg.get("use_sliding_window") is False:  # Qwen2 writes a window but does not use it
        return None
    return _optional(cfg, "sliding_window")


def _rope_scaling(cfg: Mapping) -> tuple[str | None, float | None, int | None]:
    """(type, factor, original length) from rope_scaling (transformers 4) or rope_parameters (5)."""
    scaling = cfg.get("rope_scaling") or cfg.get("rope_parameters")
    if not isinstance(scaling, Mapping):
        return None, None, None
    kind = _str(scaling.get("rope_type")) or _str(scaling.get("type"))
    if kind == "default":
        return None, None, None
    factor = scaling.get("factor")
    factor = float(factor) if isinstance(factor, (int, float)) and not isinstance(factor, bool) else None
    return kind, factor, _optional(scaling, "original_max_position_embeddings")


def _remote_code(auto_map: Mapping | None, model_type: str | None,
                 native_model_types: Collection[str] | None) -> bool | None:
    """transformers runs the repo's code only when auto_map names an AutoConfig and the model_type is not built in
    (transformers' AutoConfig.from_pretrained / resolve_trust_remote_code)."""
    if auto_map is None or "AutoConfig" not in auto_map:
        return False
    if model_type is None:
        return True
    if native_model_types is not None:
        return model_type not in native_model_types
    return False if model_type in KNOWN_MODEL_TYPES else None


# -- which models a config loads -------------------------------------------------------

PLACEHOLDER_PATH = "~/models/deepseek-llm-7b-chat"  # verl's default actor/critic path (reported by other rules)


def model_paths(values: Mapping[str, object]) -> dict[str, tuple[str, str]]:
    """Role -> (key, path) of every model a resolved config makes verl load.

    ``values`` are resolved keys (``CheckResult.facts``). The reference policy always loads
    ``actor_rollout_ref.model.path`` in verl 0.9.1 (engine_workers.ActorRolloutRefWorker.init_model
    deep-copies the actor's HFModelConfig), and with LoRA it is the actor itself with the adapter
    off (ref_in_actor), so "ref" appears only when a separate reference model is built. The critic
    follows verl.trainer.ppo.utils.need_critic, the reward model reward.reward_model.enable.
    """
    out: dict[str, tuple[str, str]] = {}
    actor = values.get("actor_rollout_ref.model.path")
    if isinstance(actor, str) and actor:
        out["actor"] = ("actor_rollout_ref.model.path", actor)
        if need_ref(values) and not ref_in_actor(values):
            out["ref"] = ("actor_rollout_ref.model.path", actor)
    critic = values.get("critic.model.path")
    if need_critic(values) and isinstance(critic, str) and critic:
        out["critic"] = ("critic.model.path", critic)
    reward = values.get("reward.reward_model.model_path")
    if values.get("reward.reward_model.enable") and isinstance(reward, str) and reward:
        out["reward"] = ("reward.reward_model.model_path", reward)
    return out


