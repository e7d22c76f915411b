"""Models: what verl and the rollout engine require of the models a config names.

These rules read ``ctx.models`` (role -> ModelFacts, from a local folder or the catalogue) and
stay silent for a role whose facts are unknown. Everything here fails late: at worker start
(tokenizer, weights, remote code, heads vs TP / Ulysses, max_model_len) or during the run (context
length, critic vocabulary), so stages are startup/runtime.

The reference policy needs no rule of its own: verl 0.9.1 always builds it from
actor_rollout_ref.model.path (engine_workers.ActorRolloutRefWorker.init_model deep-copies the
actor's model config), so it cannot differ from the actor.
"""

from __future__ import annotations

from collections.abc import Iterator

from wizard.core.findings import Severity, Stage
from wizard.core.memory.megatron_layout import layout_problems, read_megatron
from wizard.core.memory.lora_sync import BUCKET_KEY, KEYS as SYNC_KEYS, LOAD_FORMAT_KEY, base_sync_blocked, served_as_adapter
from wizard.core.models.facts import ModelFacts
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.verl.keys import ATTN_KEY, R, RM
from wizard.core.verl.roles import lora_rank, need_ref, ref_in_actor, trained_lora_rank

PATH_KEYS = {"actor": "actor_rollout_ref.model.path", "ref": "actor_rollout_ref.model.path",
             "critic": "critic.model.path", "reward": f"{RM}.model_path"}
TRUST_KEYS = {"actor": "actor_rollout_ref.model.trust_remote_code", "critic": "critic.model.trust_remote_code"}
TOKENIZER_KEYS = {"actor": "actor_rollout_ref.model.tokenizer_path", "critic": "critic.model.tokenizer_path"}


def roles_with_facts(ctx: RuleContext, *roles: str) -> Iterator[tuple[str, ModelFacts]]:
    for role in roles:
        facts = ctx.models.get(role)
        if facts is not None:
            yield role, facts


# -- tensor parallelism of the rollout engine ---------------------------------------------------
#
# vLLM's rules (vllm-project/vllm):
#  - vllm/config/model.py, ModelConfig.verify_with_parallel_config (commit 0052a5b8): raises
#    ValueError "Total number of attention heads (N) must be divisible by tensor parallel size (T)."
#  - vllm/model_executor/layers/linear.py, QKVParallelLinear.__init__ (commit 0036d38d): with
#    T >= KV heads each rank holds one KV head and divide(T, KV) needs T % KV == 0 (heads replicated);
#    with T < KV heads divide(KV, T) needs KV % T == 0. divide() asserts "A is not divisible by B".
# MLA models (DeepSeek-V2/V3) keep one latent KV per token and have no KV-head constraint.

def kv_heads_fit(kv_heads: int, tp: int) -> bool:
    return tp % kv_heads == 0 if tp >= kv_heads else kv_heads % tp == 0


def tp_fits(facts: ModelFacts, tp: int) -> bool:
    heads_ok = facts.num_attention_heads % tp == 0
    return heads_ok and (bool(facts.kv_lora_rank) or kv_heads_fit(facts.num_kv_heads, tp))


def _rollouts(ctx: RuleContext) -> Iterator[tuple[str, ModelFacts, str, object]]:
    """(role, facts, TP key, engine name) of every rollout engine a model runs in."""
    if "actor" in ctx.models:
        yield "actor", ctx.models["actor"], f"{R}.tensor_model_parallel_size", ctx.get(f"{R}.name")
    if "reward" in ctx.models and ctx.get(f"{RM}.enable"):
        yield "reward", ctx.models["reward"], f"{RM}.rollout.tensor_model_parallel_size", ctx.get(f"{RM}.rollout.name")


def _smaller_fit(facts: ModelFacts, size: int, n_gpus: int | None, fits=tp_fits) -> int:
    for t in range(size - 1, 0, -1):
        if fits(facts, t) and (not n_gpus or n_gpus % t == 0):
            return t
    return 1


@rule("models.tp_heads", Stage.STARTUP, also={"models.tp_kv_heads": Stage.STARTUP})
def tp_heads(ctx: RuleContext):
    """The rollout engine splits attention heads over its TP ranks: TP must divide them (vLLM's
    verify_with_parallel_config), and KV heads must split or replicate evenly (QKVParallelLinear)."""
    for role, facts, key, engine in _rollouts(ctx):
        tp = ctx.int(key)
        if not tp or tp <= 1 or tp_fits(facts, tp):
            continue
        gpus = ctx.n_gpus if role == "actor" else None
        best = _smaller_fit(facts, tp, gpus)
        # the sizes on offer fit the heads and the GPUs the rollout has (its world size must divide by TP)
        sizes = [t for t in range(1, facts.num_attention_heads + 1) if tp_fits(facts, t) and (not gpus or gpus % t == 0)]
        heads, kv = facts.num_attention_heads, facts.num_kv_heads
        if heads % tp:
            rule_id = "models.tp_heads"
            why = (f"{facts.name} has {heads} attention heads, which {tp} tensor-parallel ranks cannot split; "
                   + (f"vLLM stops at startup with: Total number of attention heads ({heads}) must be divisible by "
                      f"tensor parallel size ({tp})." if engine == "vllm"
                      else f"the {engine if isinstance(engine, str) else 'rollout'} engine shards heads over its "
                      "TP ranks and fails at startup"))
        else:
            rule_id = "models.tp_kv_heads"
            need = f"{tp} % {kv} == 0 to replicate them" if tp >= kv else f"{kv} % {tp} == 0 to split them"
            why = (f"{facts.name} has {kv} KV heads and {key}={tp}: the rollout engine needs {need}; vLLM's QKV "
                   f"layer fails to build at startup with: {max(tp, kv)} is not divisible by {min(tp, kv)}")
        yield finding(
            Severity.ERROR, [key, PATH_KEYS[role]], why,
            f"Set {key}={best} (TP sizes that fit {heads} heads / {kv} KV heads"
            f"{f' and {gpus} GPUs' if gpus else ''}: {', '.join(str(t) for t in sizes)})",
            [f"{key}={best}"], rule=rule_id,
        )


# -- Ulysses sequence parallelism of the FSDP engine ----------------------------------------------

def _sp_keys(ctx: RuleContext) -> Iterator[tuple[str, str, int]]:
    """(role, the key that sets SP, SP size) for the roles the FSDP engine runs with Ulysses SP > 1.

    The actor's legacy actor.ulysses_sequence_parallel_size wins when > 1 (FSDPActorConfig.__post_init__
    copies it into fsdp_config); the critic's engine reads only critic.fsdp.*; the reference model gets
    its own value, which defaults to the actor's (reported only when it differs).
    """
    actor_sp = None
    for role, section, engine in (("actor", "actor_rollout_ref.actor", "fsdp_config"),
                                  ("ref", "actor_rollout_ref.ref", "fsdp_config"), ("critic", "critic", "fsdp")):
        if ctx.get(f"{section}.strategy") not in ("fsdp", "fsdp2"):
            continue
        key = f"{section}.ulysses_sequence_parallel_size"
        if role == "critic" or not (ctx.int(key) or 1) > 1:
            key = f"{section}.{engine}.ulysses_sequence_parallel_size"
        sp = ctx.int(key) or 1
        if role == "actor":
            actor_sp = sp
        elif role == "ref" and sp == actor_sp:
            continue
        if sp > 1:
            yield role, key, sp


def _ulysses(ctx: RuleContext) -> Iterator[tuple[str, ModelFacts, str, int]]:
    """(role, facts, the key that sets SP, SP size) of :func:`_sp_keys` for the roles whose model is known."""
    for role, key, sp in _sp_keys(ctx):
        if (facts := ctx.models.get(role)) is not None:
            yield role, facts, key, sp


def _sp_fits(facts: ModelFacts, sp: int) -> bool:
    return facts.num_attention_heads % sp == 0 and kv_heads_fit(facts.num_kv_heads, sp)


@rule("models.ulysses_heads", Stage.STARTUP)
def ulysses_heads(ctx: RuleContext):
    """verl/models/transformers/monkey_patch.py apply_monkey_patch: Ulysses SP must divide the attention
    heads, and KV heads must divide by SP or SP by them; asserted when the FSDP engine builds the model."""
    for role, facts, key, sp in _ulysses(ctx):
        if _sp_fits(facts, sp):
            continue
        heads, kv = facts.num_attention_heads, facts.num_kv_heads
        said = (f"num_attention_heads {heads} must be divisible by ulysses_sp_size {sp}" if heads % sp
                else f"num_key_value_heads {kv} must be divisible by ulysses_sp_size {sp} or vise versa")
        best = _smaller_fit(facts, sp, None, fits=_sp_fits)
        yield finding(
            Severity.ERROR, [key, PATH_KEYS[role]],
            f"{key}={sp} does not fit {facts.name} ({heads} attention heads, {kv} KV heads): the {role} workers die "
            f"building the model with: {said}",
            f"Set {key}={best}", [f"{key}={best}"],
        )


# verl replaces these models' attention with its own, which runs flash-attn with the Ulysses exchange whatever the
# attention setting (models/transformers/monkey_patch.py:407-413, 475-480, 486-490; qwen2_vl.py:322): right, or a
# loud failure without flash-attn
OWN_ULYSSES_ATTENTION = frozenset({"qwen2_vl", "qwen2_5_vl", "glm4v", "kimi_vl"})


def _flash(attn: str) -> bool:
    """flash_attention_2/3/4 and hub kernels such as kernels-community/flash-attn2: the function verl patches."""
    return "flash" in attn


@rule("advice.ulysses_attention", Stage.ADVICE)
def ulysses_attention(ctx: RuleContext):
    """verl 0.9.1 puts Ulysses' exchange of attention heads into flash-attn's forward only
    (models/transformers/monkey_patch.py:544-552, _ulysses_flash_attention_forward), while the FSDP engine slices
    every packed micro-batch over the group before the model whatever the attention
    (workers/engine/fsdp/transformer_impl.py:1218-1241, ulysses_pad_and_slice_inputs): with sdpa, eager or flex each
    GPU's tokens attend only to the tokens of its own slice. Nothing fails; the log-probs and gradients are wrong.
    The actor and a reference model of its own read actor_rollout_ref.model's attention; the critic is always loaded
    with flash_attention_2 (verl/utils/model.py load_valuehead_model: env.flash_attn_critic), so it is right or
    fails to load."""
    attn = str(ctx.get(ATTN_KEY) or "flash_attention_2")
    facts = ctx.models.get("actor")
    if _flash(attn) or facts is not None and facts.model_type in OWN_ULYSSES_ATTENTION:
        return
    for role, key, sp in _sp_keys(ctx):
        if role == "critic" or role == "ref" and not (ctx.need_ref and not ref_in_actor(ctx)):
            continue
        section = "actor_rollout_ref.actor" if role == "actor" else "actor_rollout_ref.ref"
        # verl copies the legacy key into fsdp_config only when it is > 1: every one that is must go to 1
        keys = [k for k in (f"{section}.ulysses_sequence_parallel_size",
                            f"{section}.fsdp_config.ulysses_sequence_parallel_size") if (ctx.int(k) or 1) > 1]
        who = "actor" if role == "actor" else "reference model"
        fixes = [f"{k}=1" for k in keys]
        yield finding(
            Severity.ERROR, [key, ATTN_KEY],
            f"{key}={sp} with {ATTN_KEY}={attn}: verl 0.9.1 exchanges the attention heads over a Ulysses "
            f"group only inside flash-attn's attention, but still cuts each of the {who}'s packed micro-batches "
            f"into {sp} slices, one a GPU, so with {attn} every token attends only to the tokens of its own slice: "
            "the run trains without an error, on wrong log-probs" + (" and gradients" if role == "actor" else ""),
            f"Set {' '.join(fixes)}, or install flash-attn where the run happens and use flash_attention_2", fixes,
        )


# -- context length -------------------------------------------------------------------------------

def _model_max_len(ctx: RuleContext, facts: ModelFacts) -> int | None:
    """max_position_embeddings as verl reads it: override_config can raise it (HFModelConfig applies it)."""
    override = ctx.get("actor_rollout_ref.model.override_config")
    value = override.get("max_position_embeddings") if isinstance(override, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    return facts.max_position_embeddings


def _rope_note(facts: ModelFacts, max_pos: int) -> str:
    if facts.rope_scaling_type in (None, "llama3") or not facts.rope_scaling_factor:
        return ""  # llama3-style configs already state the scaled length
    base = facts.original_max_position_embeddings or max_pos
    return (f"; config.json's rope_scaling ({facts.rope_scaling_type}, factor {facts.rope_scaling_factor:g}) stretches "
            f"{base} positions to {int(base * facts.rope_scaling_factor)}, but verl checks max_model_len against "
            "max_position_embeddings: raise that with "
            f"+actor_rollout_ref.model.override_config.max_position_embeddings={int(base * facts.rope_scaling_factor)}")


@rule("models.context_length", Stage.RUNTIME, also={"models.max_model_len": Stage.STARTUP})
def context_length(ctx: RuleContext):
    """The rollout server refuses max_model_len > max_position_embeddings (vllm_async_server._validate_configs,
    same for SGLang/TRT-LLM); left null, the model's length is the limit for prompt + response."""
    facts = ctx.models.get("actor")
    if facts is None:
        return
    max_pos = _model_max_len(ctx, facts)
    prompt, response = ctx.int(f"{R}.prompt_length"), ctx.int(f"{R}.response_length")
    max_len = ctx.int(f"{R}.max_model_len")
    if max_pos is None:
        return
    keys = [f"{R}.max_model_len", "data.max_prompt_length", "data.max_response_length", PATH_KEYS["actor"]]
    if max_len is not None:
        if max_len > max_pos:
            fit = prompt is not None and response is not None and prompt + response <= max_pos
            yield finding(
                Severity.ERROR, keys,
                f"{R}.max_model_len={max_len} is longer than {facts.name}'s max_position_embeddings={max_pos}; the "
                f"rollout server stops at startup with: max_model_len ({max_len}) should be less than or equal to "
                f"max_position_embeddings ({max_pos})" + _rope_note(facts, max_pos),
                f"Set {R}.max_model_len={max_pos if fit else 'null'}" + ("" if fit else " and shorten the lengths"),
                [f"{R}.max_model_len={max_pos}"] if fit else [], rule="models.max_model_len",
            )
        return
    if prompt is None or response is None or prompt + response <= max_pos:
        return
    cut = prompt < max_pos
    yield finding(
        Severity.WARNING if cut else Severity.ERROR, keys,
        f"prompt + response = {prompt} + {response} = {prompt + response} tokens, but {facts.name} takes "
        f"{max_pos} (max_position_embeddings, which verl uses as max_model_len): "
        + (f"responses after long prompts are cut at {max_pos} tokens, before data.max_response_length"
           if cut else f"a {prompt}-token prompt leaves no room, and the rollout stops with: Prompt length "
           f"({prompt}) leaves no room to generate within the model's maximum context length ({max_pos})")
        + _rope_note(facts, max_pos),
        f"Set data.max_response_length={max_pos - prompt}" if cut
        else f"Set data.max_prompt_length below {max_pos}, or use a model with a longer context",
        [f"data.max_response_length={max_pos - prompt}"] if cut else [],
    )


# -- the first LoRA weight sync ---------------------------------------------------------------------

@rule("models.lora_base_sync_bucket", Stage.RUNTIME)
def lora_base_sync_bucket(ctx: RuleContext):
    """verl 0.9.1's first LoRA sync sends the base model from the CPU; a base weight larger than the weight-sync
    buffer takes a CUDA IPC path a CPU tensor cannot, and vLLM's worker dies (wizard/core/memory/lora_sync.py)."""
    facts = ctx.models.get("actor")
    block = base_sync_blocked({k: ctx.get(k) for k in SYNC_KEYS}, facts)
    if block is None:
        return
    v, h = facts.vocab_size, facts.hidden_size
    yield finding(
        Severity.ERROR, [BUCKET_KEY, "actor_rollout_ref.model.lora_rank", PATH_KEYS["actor"]],
        f"with LoRA served as an adapter and vLLM started from dummy weights, verl 0.9.1's first weight sync sends "
        f"{facts.name}'s base model from the CPU at {block.dtype}: its largest weight ({v:,} x {h:,} = "
        f"{block.largest_mib:,.0f} MiB) is over the {block.bucket_mb:,} MiB weight-sync buffer, and verl sends such a "
        f"weight as a CUDA IPC handle, which a CPU tensor does not have. vLLM's worker dies at the first sync with "
        f"IndexError: list assignment index out of range (in rebuild_ipc) and the run then hangs without a step "
        f"(seen on an H200 with Qwen2.5-7B and LoRA 32)",
        f"Set {LOAD_FORMAT_KEY}=safetensors, as verl's LoRA guide does: vLLM loads the base weights itself and only "
        f"the adapter is sent (nor does every trainer rank gather the base model on its CPU first); or "
        f"{BUCKET_KEY}={block.needed_mb} (a buffer the trainer allocates whole at each sync)",
        [f"{LOAD_FORMAT_KEY}=safetensors"],
    )


@rule("models.lora_layered_summon_dummy", Stage.RUNTIME)
def lora_layered_summon_dummy(ctx: RuleContext):
    """rollout.layered_summon gathers the adapter a layer at a time, which needs the base model in vLLM already:
    from dummy weights verl 0.9.1's ``collect_lora_params`` raises at the first weight sync, after the models and
    the engine have loaded (verl/utils/fsdp_utils.py:725-730)."""
    values = {k: ctx.get(k) for k in SYNC_KEYS}
    if values.get(f"{R}.layered_summon") is not True or not served_as_adapter(values):
        return
    if "dummy" not in str(values.get(LOAD_FORMAT_KEY) or "dummy"):
        return
    if str(values.get("actor_rollout_ref.actor.strategy") or "fsdp") not in ("fsdp", "fsdp2"):
        return
    yield finding(
        Severity.ERROR, [f"{R}.layered_summon", LOAD_FORMAT_KEY],
        f"{R}.layered_summon=True with vLLM started from dummy weights ({LOAD_FORMAT_KEY}="
        f"{values.get(LOAD_FORMAT_KEY) or 'dummy'}): verl 0.9.1 stops at the first weight sync, after the models and "
        f"the engine have loaded, with ValueError: To use layered_summon, you must make sure base-model is preloaded "
        f"in vllm, e.g. let rollout.load_format=safetensors",
        f"Set {LOAD_FORMAT_KEY}=safetensors (vLLM loads the base weights; the syncs send the adapter), or "
        f"{R}.layered_summon=False",
        [f"{LOAD_FORMAT_KEY}=safetensors"],
    )


# -- the Megatron engine's layout over the model ------------------------------------------------------

_LAYOUT_KEYS = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "virtual_pipeline_model_parallel_size",
                "context_parallel_size", "expert_model_parallel_size", "expert_tensor_parallel_size")


@rule("models.megatron_layout", Stage.STARTUP)
def megatron_layout(ctx: RuleContext):
    """megatron-core splits the actor's heads over TP, its layers over PP (and the virtual stages), its experts over
    EP; a split that does not divide stops the workers at start (wizard/core/memory/megatron.py layout_problems)."""
    facts = ctx.models.get("actor")
    if facts is None or ctx.get("actor_rollout_ref.actor.strategy") != "megatron" or not ctx.n_gpus:
        return
    section = "actor_rollout_ref.actor.megatron"
    values = {f"{section}.{k}": ctx.get(f"{section}.{k}") for k in _LAYOUT_KEYS}
    layout = read_megatron(values, ctx.n_gpus)
    for key, why in layout_problems(facts, layout):
        yield finding(
            Severity.ERROR, [f"{section}.{key}", PATH_KEYS["actor"]],
            f"{facts.name}: {why}; Megatron's workers stop at start",
            f"Choose {section}.{key} that divides it",
        )


@rule("models.lora_megatron_key_on_fsdp", Stage.RUNTIME)
def lora_megatron_key_on_fsdp(ctx: RuleContext):
    """``model.lora.rank`` without ``model.lora_rank`` on FSDP: verl 0.9.1's FSDP engine trains adapters from
    ``lora_rank`` only (``model.lora`` is the "megatron lora config", workers/config/model.py), while its trainer
    (trainer_base, ray_trainer) and vLLM read ``lora.rank`` first: the whole model is trained, no reference model is
    loaded, and the reference log-probs are asked of the actor with its adapter off, which it does not have
    (FSDPEngine.disable_adapter calls the module's, which a model without PEFT lacks)."""
    if ctx.get("actor_rollout_ref.actor.strategy") == "megatron" or trained_lora_rank(ctx) > 0:
        return
    rank = lora_rank(ctx)  # the trainer's reading: lora.rank first (lora_rank is 0 here)
    if rank <= 0:
        return
    ref = need_ref(ctx)
    yield finding(
        Severity.ERROR if ref else Severity.WARNING,
        ["actor_rollout_ref.model.lora.rank", "actor_rollout_ref.model.lora_rank", "actor_rollout_ref.actor.strategy"],
        f"actor_rollout_ref.model.lora.rank={rank} is the Megatron engine's LoRA setting: verl's FSDP engine trains "
        f"adapters from actor_rollout_ref.model.lora_rank only (0 here), so it trains the whole model, while the "
        f"trainer and vLLM read lora.rank as LoRA (no reference model is loaded; vLLM is started to serve an adapter)"
        + ("; the reference log-probs are then asked of the actor with its adapter off, which it does not have: the "
           "run fails at its first reference pass (FSDPEngine.disable_adapter)" if ref else ""),
        f"Set actor_rollout_ref.model.lora_rank={rank}: what verl's FSDP engine reads",
        [f"actor_rollout_ref.model.lora_rank={rank}"],
    )
