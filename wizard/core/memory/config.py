"""The verl keys the memory estimate reads (:data:`MEMORY_KEYS`) and what they mean for it (:class:`MemoryConfig`);
the rollout engines' side is :mod:`wizard.core.memory.engines`.

Values come resolved as verl reads them (``RuleContext.get``), completed by :func:`complete_values` with verl's
own defaults from the schema snapshot: a key missing, null, unresolvable or not the number its default is reads
as that default (the type rules report it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from wizard.core.memory import terms as mt
from wizard.core.memory.engines import EngineConfig, all_engines
from wizard.core.memory.batching import (
    actor_micro_batches, actor_samples, critic_micro_batches, critic_samples, critic_tokens,
    micro_batch_tokens, sequence_parallel,
)
from wizard.core.memory.readers import flag_at as _flag, float_at as _float, int_at as _int
from wizard.core.memory.lora_sync import sends_base, served_as_adapter
from wizard.core.verl.resolved import UNRESOLVABLE, default_values
from wizard.core.verl.schema import SchemaVariant
from wizard.core.models.facts import ModelFacts
from wizard.core.placement.pools import (
    PLACEMENT_KEYS, need_critic, need_ref, ref_in_actor, trainer_mode,
)
from wizard.core.verl.roles import trained_lora_rank
from wizard.core.verl.keys import ATTN_KEY, CF, REF, RM, A, AF, M, R

# The keys the estimate reads beyond where roles run; their defaults are verl's own, from the schema snapshot
# (``complete_values``), never typed here.
ESTIMATE_KEYS: tuple[str, ...] = (
    "trainer.n_gpus_per_node", "trainer.nnodes", "data.train_batch_size", "data.max_prompt_length",
    "data.max_response_length", "data.dataloader_num_workers", f"{A}.strategy", f"{A}.ppo_mini_batch_size",
    f"{A}.ppo_micro_batch_size_per_gpu", f"{A}.ppo_micro_batch_size", f"{R}.log_prob_micro_batch_size",
    f"{REF}.log_prob_micro_batch_size", ATTN_KEY, f"{R}.layered_summon",
    f"{R}.checkpoint_engine.update_weights_bucket_megabytes", f"{A}.use_dynamic_bsz",
    f"{A}.ppo_max_token_len_per_gpu", f"{A}.ppo_epochs", "critic.ppo_epochs", f"{A}.entropy_coeff", f"{A}.calculate_entropy",
    f"{A}.ulysses_sequence_parallel_size", f"{AF}.param_offload", f"{AF}.optimizer_offload", f"{AF}.offload_policy",
    f"{AF}.fsdp_size", f"{AF}.model_dtype", f"{AF}.ulysses_sequence_parallel_size",
    f"{AF}.entropy_from_logits_with_chunking", f"{AF}.entropy_checkpointing", f"{AF}.use_torch_compile",
    f"{M}.enable_gradient_checkpointing", f"{M}.enable_activation_offload", f"{M}.use_remove_padding",
    f"{M}.use_fused_kernels", f"{M}.lora_rank", f"{M}.lora_adapter_path", f"{M}.lora", f"{R}.load_format",
    f"{R}.name", f"{R}.n",
    f"{R}.gpu_memory_utilization", f"{R}.tensor_model_parallel_size", f"{R}.data_parallel_size",
    f"{R}.pipeline_model_parallel_size", f"{R}.max_num_seqs", f"{R}.max_num_batched_tokens", f"{R}.max_model_len",
    f"{R}.enforce_eager", f"{R}.free_cache_engine", f"{R}.cudagraph_capture_sizes", f"{R}.limit_images",
    f"{R}.agent.num_workers", f"{R}.enable_prefix_caching",
    f"{R}.log_prob_micro_batch_size_per_gpu", f"{R}.log_prob_use_dynamic_bsz", f"{R}.log_prob_max_token_len_per_gpu",
    f"{REF}.log_prob_micro_batch_size_per_gpu", f"{REF}.log_prob_use_dynamic_bsz",
    f"{REF}.log_prob_max_token_len_per_gpu", f"{REF}.ulysses_sequence_parallel_size",
    f"{REF}.fsdp_config.model_dtype", f"{REF}.strategy", "critic.strategy", "critic.ppo_mini_batch_size",
    f"{CF}.param_offload", f"{CF}.optimizer_offload", f"{CF}.offload_policy", f"{CF}.fsdp_size", f"{CF}.model_dtype",
    f"{CF}.ulysses_sequence_parallel_size", "critic.ppo_infer_max_token_len_per_gpu",
    # how verl 0.9.1 batches the critic (verl #7462): the V1 trainer's engine, or the legacy trainer's keys
    "trainer.use_v1", f"{CF}.use_dynamic_bsz", f"{CF}.micro_batch_size_per_gpu", "critic.use_dynamic_bsz",
    # the V1 trainer's synthetic padding of a step (batching.step_batch): its mode, parameter sync and critic warmup
    "trainer.v1.trainer_mode", "trainer.critic_warmup", *(f"trainer.v1.{mode}.parameter_sync_step"
                                                         for mode in ("sync", "colocate_async", "separate_async")),
    "critic.ppo_max_token_len_per_gpu", "critic.ppo_micro_batch_size_per_gpu",
    "critic.model.enable_gradient_checkpointing",
    # gradient accumulation without FSDP's per-micro-batch sync keeps whole unsharded gradients (verl 0.9.1's engine,
    # fsdp/transformer_impl.py:692-720) in the reduce dtype (mixed_precision)
    f"{AF}.use_no_sync_for_gradient_accumulation", f"{CF}.use_no_sync_for_gradient_accumulation",
    f"{AF}.mixed_precision", f"{CF}.mixed_precision",
    # reshard_after_forward=false keeps every layer's bf16 params gathered after its forward (FSDP2; FSDP1's
    # SHARD_GRAD_OP over 2+ GPUs) until a backward frees them (see _keeps_gathered)
    f"{AF}.reshard_after_forward", f"{REF}.fsdp_config.reshard_after_forward", f"{CF}.reshard_after_forward",
    f"{RM}.rollout.name", f"{RM}.rollout.gpu_memory_utilization",
    f"{RM}.rollout.enforce_eager", f"{RM}.rollout.free_cache_engine", f"{RM}.rollout.max_num_seqs",
    f"{RM}.rollout.max_num_batched_tokens", f"{RM}.rollout.max_model_len", f"{RM}.rollout.cudagraph_capture_sizes",
    # '+' keys: verl passes engine_kwargs.<engine> to the engine after its own arguments, so they win
    # (vllm_async_server.py ``args = {..., **engine_kwargs}``; async_sglang_server.py the same)
    f"{R}.engine_kwargs", f"{RM}.rollout.engine_kwargs",
)
# The Megatron engine's keys (actor_rollout_ref.actor.megatron, verl/trainer/config/engine/megatron.yaml; the reference
# takes the actor's parallel sizes, _generated_ppo_megatron_trainer.yaml): read by wizard.core.memory.megatron
MEGATRON_KEYS: tuple[str, ...] = tuple(f"{A}.megatron.{k}" for k in (
    "tensor_model_parallel_size", "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
    "context_parallel_size", "expert_model_parallel_size", "expert_tensor_parallel_size", "sequence_parallel",
    "use_distributed_optimizer", "param_offload", "optimizer_offload", "override_transformer_config",
    "override_ddp_config", "dtype", "use_megatron_fsdp")) + (
    f"{REF}.megatron.param_offload", f"{A}.optim.optimizer", f"{A}.optim.use_precision_aware_optimizer",
    f"{A}.optim.main_grads_dtype",
    f"{A}.optim.override_optimizer_config")
MEMORY_KEYS: tuple[str, ...] = tuple(dict.fromkeys(PLACEMENT_KEYS + ESTIMATE_KEYS + MEGATRON_KEYS))
# Not a verl key: whether flash-attn imports where verl runs (the environment probe), when known.
FLASH_ATTN = "wizard.flash_attn"
# {a knob: the knob it follows} (check.rules.memory.follows): where the composed config makes one take another's
# value, so that the advisor moves them together as verl would
FOLLOWS = "wizard.follows"
# Not a verl key: the memory keys given as text where verl needs a number (complete_values puts the default there)
NOT_NUMBERS = "wizard.not_numbers"


def complete_values(values: Mapping, variant: SchemaVariant) -> dict:
    """``values`` with every :data:`MEMORY_KEYS` key, verl's own default (the schema snapshot's, for this engine)
    where a key is missing, null (a null where verl has a default means "unset"), unresolvable, or not the number
    the default is (the type rules report that): what :func:`read_config` and the estimate are given."""
    defaults = default_values(variant, MEMORY_KEYS)
    out = dict(values)
    text = []
    for key in MEMORY_KEYS:
        v, d = out.get(key, UNRESOLVABLE), defaults.get(key)
        info = variant.keys.get(key)
        if v is None or v is UNRESOLVABLE or not _same_kind(v, d, info.field_type if info else None):
            if isinstance(v, str) and isinstance(d, (int, float)) and not isinstance(d, bool):
                text.append(f"{key}={v!r}")
            out[key] = d
    if text:  # text where verl needs a number: no sizes for a run that fails on it (the estimate says so)
        out[NOT_NUMBERS] = tuple(text)
    return out


def _same_kind(value, default, field_type: str | None) -> bool:
    """False for a value where verl's default is a number and the value is not one a ``field_type`` field takes
    (a flag is no number; a float is no count)."""
    if isinstance(default, bool) or default is None or not isinstance(default, (int, float)):
        return True
    if isinstance(value, bool):
        return False
    counts = isinstance(default, int) and "float" not in (field_type or "")
    return isinstance(value, int) if counts else isinstance(value, (int, float))


@dataclass(frozen=True)
class MemoryConfig:
    """What the estimate needs, derived from the keys as verl derives it."""

    world: int  # GPUs of global_pool (the actor's FSDP world)
    shards: int  # actor FSDP shard count (fsdp_size, -1 = world)
    strategy: str
    actor_dtype: str
    actor_dtype_bytes: int
    actor_param_offload: bool
    actor_optimizer_offload: bool
    actor_offload_policy: bool
    actor_gc: bool
    activation_offload: bool
    fused_kernels: bool
    lora_rank: int
    lora_adapter: bool  # served to vLLM as an adapter: the engine sleeps at level 1 (lora_sync.served_as_adapter)
    lora_sends_base: bool  # the first weight sync gathers the base model on every rank's CPU (lora_sync.sends_base)
    actor_tokens: int  # tokens per GPU per micro-batch in update_actor
    logprob_tokens: int
    ref_tokens: int
    entropy_mode: str  # compiled | eager | chunked | checkpointed | fused
    update_entropy: bool
    ref_separate: bool  # a reference model pass with its own (CPU-offloaded) weights
    ref_dtype_bytes: int  # ref.fsdp_config.model_dtype (fp32 by default): the reference's copy on the host
    need_critic: bool
    critic_shards: int
    critic_dtype: str
    critic_dtype_bytes: int
    critic_param_offload: bool
    critic_optimizer_offload: bool
    critic_offload_policy: bool
    critic_gc: bool
    critic_tokens: int
    train_batch_size: int
    rollout_n: int
    seq_tokens: int
    dataloader_workers: int
    engines: dict[str, EngineConfig] = field(default_factory=dict)
    prompt_tokens: int = 512  # data.max_prompt_length: what a vision tower's image tokens are bounded by
    # The image tokens a GPU's vision tower runs per micro-batch of update_actor, the old log-prob and the reference
    # pass, at worst (every prompt token an image token): micro-batch x max_prompt_length, never more than the
    # micro-batch's tokens; with Ulysses every rank of the group runs the whole micro-batch's images (verl's
    # qwen2_vl forward embeds, then slices), so these are the group's, not the rank's share
    actor_images: int = 0
    logprob_images: int = 0
    ref_images: int = 0
    flash_attn: bool = True  # verl's log-probs through flash-attn's cross-entropy (else logprobs_from_logits_v2)
    layered_summon: bool = False  # LoRA weight sync gathers one layer at a time (rollout.layered_summon)
    critic_fsdp1: bool = False  # critic.strategy=fsdp
    sync_bucket_bytes: int = 2048 << 20  # the weight sync's send buffer (checkpoint_engine.update_weights_bucket_megabytes)
    # use_no_sync_for_gradient_accumulation with more than one micro-batch per mini-batch on a GPU: the bytes per
    # trainable param of the whole unsharded gradient held until the mini-batch's last micro-batch (0: not held)
    actor_unsharded_grad_bytes: int = 0
    critic_unsharded_grad_bytes: int = 0
    actor_reduce_bytes: int = 4  # the gradients' reduce-scatter dtype (mixed_precision.reduce_dtype; fp32 by default)
    critic_reduce_bytes: int = 4
    # reshard_after_forward=false: the whole model stays gathered in bf16 through a pass (see _keeps_gathered)
    actor_keeps_gathered: bool = False
    ref_keeps_gathered: bool = False
    critic_keeps_gathered: bool = False
    # the log-prob passes' micro-batches packed into one row (model.use_remove_padding) or padded to the longest:
    # the SDPA mask without flash-attn (mask_pairs)
    actor_packed: bool = True
    notes: tuple[str, ...] = ()

    def mask_pairs(self, tokens: float) -> float:
        """(query, key) pairs of the attention mask transformers' SDPA path builds for a micro-batch of ``tokens`` per
        GPU, without flash-attn (0 with it: its varlen kernel takes the sequences' boundaries and builds none).
        Packed (use_remove_padding, verl's default), one (T x T) row (masking_utils turns position_ids restarting at
        each sequence into a block-causal mask, tests/conformance/test_sdpa_packed_mask.py); with Ulysses verl slices
        the row over the group before the model, so each GPU's mask covers its own slice (``tokens`` is already
        it); padded, each sequence's own (seq x seq)."""
        if self.flash_attn or tokens <= 0:
            return 0.0
        if self.actor_packed:
            return float(tokens) ** 2
        return float(tokens) * self.seq_tokens

    def trainable_params(self, facts: ModelFacts) -> int:
        return mt.lora_params(facts, self.lora_rank) if self.lora_rank else facts.param_count


def _legacy_micro(values: Mapping, key: str, per_gpu_key: str, dp: int, notes: list[str]) -> int | None:
    """What a deprecated global micro-batch key means per GPU (verl <= 0.8 divided it by the data-parallel size);
    verl 0.9.1 stops at startup with it (the batch.worker_micro finding), the estimate sizes what was meant."""
    v = values.get(key)
    if values.get(per_gpu_key) is not None or isinstance(v, bool) or not isinstance(v, int) or v < 1:
        return None
    per_gpu = max(1, v // max(1, dp))
    notes.append(f"{key}={v} (deprecated, global) is sized as {per_gpu} per GPU ({v} / {dp} data-parallel ranks)")
    return per_gpu


def _entropy_mode(values: Mapping) -> str:
    if _flag(values, f"{M}.use_fused_kernels"):
        return "fused"
    if _flag(values, f"{AF}.entropy_checkpointing"):
        return "checkpointed"
    if _flag(values, f"{AF}.entropy_from_logits_with_chunking"):
        return "chunked"
    return "compiled" if _flag(values, f"{AF}.use_torch_compile") else "eager"


def _flash_attn(values: Mapping) -> bool:
    """Whether verl's log-probs take flash-attn's cross-entropy: ``wizard.flash_attn`` when the environment is known
    (the launcher's probe), else assumed unless the model's attention is overridden to another implementation
    (a config that sets sdpa or eager is written for an environment without flash-attn). A plan with a critic runs
    only where flash-attn is installed (verl 0.9.1's load_valuehead_model asks for flash_attention_2 whatever the
    override: env.flash_attn_critic), so there it is assumed too."""
    known = values.get(FLASH_ATTN)
    if isinstance(known, bool):
        return known
    attn = values.get(ATTN_KEY)
    return attn is None or str(attn) == "flash_attention_2" or need_critic(values)


def _actor_tokens(values: Mapping, world: int, seq: int, notes: list[str]) -> dict[str, int]:
    """Tokens per GPU per micro-batch of update_actor, the old log-prob pass and the reference pass."""
    samples, sp = actor_samples(values, world)  # per GPU in one mini-batch of update_actor
    ref_sp = sequence_parallel(values, "ref")
    n = _int(values, f"{R}.n", 1) or 1
    batch = _int(values, "data.train_batch_size", 1) or 1024
    all_samples = max(1, -(-batch * n // max(1, world)))  # per GPU in a log-prob pass over the whole batch

    def legacy(section: str, name: str, dp: int, dynamic: str) -> int | None:
        if _flag(values, dynamic):
            return None
        return _legacy_micro(values, f"{section}.{name}", f"{section}.{name}_per_gpu", dp, notes)

    prompt = _int(values, "data.max_prompt_length", 1) or 512

    def images(tokens: int, group: int, dynamic: str, micro: str, samples: int, legacy_micro: int | None) -> int:
        """At worst every prompt token an image token, over the whole micro-batch a Ulysses group embeds."""
        m = samples if _flag(values, dynamic) else min(_int(values, micro, 1) or legacy_micro or 1, samples)
        return min(tokens * group, m * prompt)

    leg_a = legacy(A, "ppo_micro_batch_size", world // sp, f"{A}.use_dynamic_bsz")
    leg_r = legacy(R, "log_prob_micro_batch_size", world // sp, f"{R}.log_prob_use_dynamic_bsz")
    leg_ref = legacy(REF, "log_prob_micro_batch_size", world // ref_sp, f"{REF}.log_prob_use_dynamic_bsz")
    out = {
        "actor_tokens": micro_batch_tokens(values, dynamic=f"{A}.use_dynamic_bsz", budget=f"{A}.ppo_max_token_len_per_gpu",
                                micro=f"{A}.ppo_micro_batch_size_per_gpu", seq=seq, sp=sp, per_gpu_samples=samples,
                                legacy_micro=leg_a),
        "logprob_tokens": micro_batch_tokens(values, dynamic=f"{R}.log_prob_use_dynamic_bsz",
                                  budget=f"{R}.log_prob_max_token_len_per_gpu",
                                  micro=f"{R}.log_prob_micro_batch_size_per_gpu", seq=seq, sp=sp,
                                  per_gpu_samples=all_samples, legacy_micro=leg_r),
        "ref_tokens": micro_batch_tokens(values, dynamic=f"{REF}.log_prob_use_dynamic_bsz",
                              budget=f"{REF}.log_prob_max_token_len_per_gpu",
                              micro=f"{REF}.log_prob_micro_batch_size_per_gpu", seq=seq, sp=ref_sp,
                              per_gpu_samples=all_samples, legacy_micro=leg_ref),
    }
    out["actor_images"] = images(out["actor_tokens"], sp, f"{A}.use_dynamic_bsz", f"{A}.ppo_micro_batch_size_per_gpu",
                                 samples, leg_a)
    out["logprob_images"] = images(out["logprob_tokens"], sp, f"{R}.log_prob_use_dynamic_bsz",
                                   f"{R}.log_prob_micro_batch_size_per_gpu", all_samples, leg_r)
    out["ref_images"] = images(out["ref_tokens"], ref_sp, f"{REF}.log_prob_use_dynamic_bsz",
                               f"{REF}.log_prob_micro_batch_size_per_gpu", all_samples, leg_ref)
    return out


def _critic(values: Mapping, world: int, seq: int) -> dict:
    critic_dtype = str(values.get(f"{CF}.model_dtype") or "fp32")
    c_shards = _int(values, f"{CF}.fsdp_size") or -1
    samples, c_sp = critic_samples(values, world)
    return dict(
        need_critic=need_critic(values), critic_shards=c_shards if c_shards > 0 else world,
        critic_dtype=critic_dtype, critic_dtype_bytes=mt.dtype_bytes(critic_dtype),
        critic_param_offload=_flag(values, f"{CF}.param_offload"),
        critic_optimizer_offload=_flag(values, f"{CF}.optimizer_offload"),
        critic_offload_policy=str(values.get("critic.strategy")) == "fsdp2" and _flag(values, f"{CF}.offload_policy"),
        critic_fsdp1=str(values.get("critic.strategy") or values.get(f"{A}.strategy") or "fsdp") == "fsdp",
        critic_gc=_flag(values, "critic.model.enable_gradient_checkpointing"),
        critic_tokens=critic_tokens(values, seq, c_sp, samples))


def _actor(values: Mapping, world: int) -> dict:
    fsdp_size = _int(values, f"{AF}.fsdp_size") or -1
    strategy = str(values.get(f"{A}.strategy") or "fsdp")
    actor_dtype = str(values.get(f"{AF}.model_dtype") or "fp32")
    return dict(
        shards=fsdp_size if fsdp_size > 0 else world, strategy=strategy,
        actor_dtype=actor_dtype, actor_dtype_bytes=mt.dtype_bytes(actor_dtype),
        actor_param_offload=_flag(values, f"{AF}.param_offload"),
        actor_optimizer_offload=_flag(values, f"{AF}.optimizer_offload"),
        actor_offload_policy=strategy == "fsdp2" and _flag(values, f"{AF}.offload_policy"),
        actor_gc=_flag(values, f"{M}.enable_gradient_checkpointing"),
        activation_offload=_flag(values, f"{M}.enable_activation_offload"),
        fused_kernels=_flag(values, f"{M}.use_fused_kernels"), lora_rank=trained_lora_rank(values),
        lora_adapter=served_as_adapter(values), lora_sends_base=sends_base(values),
        layered_summon=_flag(values, f"{R}.layered_summon"),
        sync_bucket_bytes=(_int(values, f"{R}.checkpoint_engine.update_weights_bucket_megabytes", low=1) or 2048) << 20,
        actor_packed=values.get(f"{M}.use_remove_padding") is not False)


def _unsharded_grad_bytes(values: Mapping, fsdp: str, strategy: str, shards: int, micro_batches: int) -> int:
    """Bytes per trainable param of the whole unsharded gradient that ``{fsdp}.use_no_sync_for_gradient_accumulation``
    keeps until a mini-batch's last micro-batch (verl 0.9.1, fsdp/transformer_impl.py:692-720), beyond the sharded
    one the estimate counts: FSDP2 accumulates it in the reduce dtype (torch _fsdp_param.py: unsharded_accumulated_grad
    ``.to(reduce_dtype)``; verl's default mixed precision reduces in fp32), FSDP1 keeps the unsharded bf16 grad of its
    flat parameter (_runtime_utils.py: the post-backward hook returns before the cast). One micro-batch, or one
    shard (nothing to reduce-scatter), holds nothing more."""
    if not _flag(values, f"{fsdp}.use_no_sync_for_gradient_accumulation") or micro_batches < 2 or shards < 2:
        return 0
    if strategy == "fsdp":  # FSDP1 keeps the flat gradient in the param dtype (mixed_precision.param_dtype, bf16)
        mp = values.get(f"{fsdp}.mixed_precision")
        return mt.dtype_bytes(str(mp.get("param_dtype", "bf16")) if isinstance(mp, Mapping) else "bf16")
    return _reduce_bytes(values, fsdp)


def _reduce_bytes(values: Mapping, fsdp: str) -> int:
    """Bytes a gradient element is reduced in: ``{fsdp}.mixed_precision.reduce_dtype``, fp32 by verl's default
    (fsdp/transformer_impl.py:391-398)."""
    mp = values.get(f"{fsdp}.mixed_precision")
    return mt.dtype_bytes(str(mp.get("reduce_dtype", "fp32")) if isinstance(mp, Mapping) else "fp32")


def _keeps_gathered(values: Mapping, key: str, strategy: str, shards: int) -> bool:
    """``reshard_after_forward=false``: FSDP2 leaves each layer's bf16 params unsharded after its forward (torch
    _fsdp_param_group.py ``reshard``: returns at once in FORWARD), so by the end of a forward every layer is gathered
    and stays so until its backward, on one GPU too (its bf16 copies of the fp32 params); FSDP1 maps it to
    SHARD_GRAD_OP (fsdp/utils.py:72-77), which torch runs as NO_SHARD on one GPU. After a forward-only pass verl's
    eval context reshards the root module alone (fsdp/transformer_impl.py:1113-1119; torch's ``reshard`` is not
    recursive), so the layers stay gathered: the actor's from its old log-prob pass until its update's backward, the
    reference's (which never runs a backward) in every phase after its first pass."""
    if values.get(key) is not False:
        return False
    return strategy == "fsdp2" or shards > 1


def read_config(values: Mapping) -> MemoryConfig:
    per, nodes = _int(values, "trainer.n_gpus_per_node", 1), _int(values, "trainer.nnodes", 1)
    world = per * nodes
    prompt = _int(values, "data.max_prompt_length", 1) or 512
    seq = prompt + (_int(values, "data.max_response_length", 1) or 512)
    notes: list[str] = []
    if trainer_mode(values) != "sync":
        notes.append(f"trainer mode {trainer_mode(values)}: phases may overlap more than in sync mode")
    tokens = _actor_tokens(values, world, seq, notes)
    engines = all_engines(values)  # engine_kwargs it does not read: the memory.engine_kwargs_unread finding
    actor, critic = _actor(values, world), _critic(values, world, seq)
    return MemoryConfig(
        world=world, **actor, **tokens, entropy_mode=_entropy_mode(values),
        update_entropy=_float(values, f"{A}.entropy_coeff") != 0 or _flag(values, f"{A}.calculate_entropy"),
        ref_separate=need_ref(values) and not ref_in_actor(values), **critic,
        ref_dtype_bytes=mt.dtype_bytes(str(values.get(f"{REF}.fsdp_config.model_dtype") or "fp32")),
        actor_unsharded_grad_bytes=_unsharded_grad_bytes(values, AF, actor["strategy"], actor["shards"],
                                                         actor_micro_batches(values, world, seq)),
        critic_unsharded_grad_bytes=_unsharded_grad_bytes(values, CF, "fsdp" if critic["critic_fsdp1"] else "fsdp2",
                                                          critic["critic_shards"], critic_micro_batches(values, world, seq)),
        actor_reduce_bytes=_reduce_bytes(values, AF), critic_reduce_bytes=_reduce_bytes(values, CF),
        actor_keeps_gathered=_keeps_gathered(values, f"{AF}.reshard_after_forward", actor["strategy"], actor["shards"]),
        ref_keeps_gathered=_keeps_gathered(values, f"{REF}.fsdp_config.reshard_after_forward",
                                           str(values.get(f"{REF}.strategy") or actor["strategy"]), world),
        critic_keeps_gathered=_keeps_gathered(values, f"{CF}.reshard_after_forward",
                                              "fsdp" if critic["critic_fsdp1"] else "fsdp2", critic["critic_shards"]),
        train_batch_size=_int(values, "data.train_batch_size", 1) or 1, rollout_n=_int(values, f"{R}.n", 1) or 1,
        seq_tokens=seq, prompt_tokens=prompt, dataloader_workers=_int(values, "data.dataloader_num_workers", 0) or 0,
        engines=engines, flash_attn=_flash_attn(values), notes=tuple(notes))
