"""The model rules, through the real check (verl's composed config) with model facts given by role."""

import pytest

from tests.helpers.hf_configs import DEEPSEEK_V3, LLAMA31_8B, QWEN25_05B, QWEN25_7B, QWEN3_8B
from wizard.core.models.facts import facts_from_hf_config

R = "actor_rollout_ref.rollout"
BASE = ["algorithm.adv_estimator=grpo", "actor_rollout_ref.model.path=/models/m", f"{R}.name=vllm", f"{R}.n=4",
        "data.train_batch_size=16", "actor_rollout_ref.actor.ppo_mini_batch_size=8",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1", f"{R}.log_prob_micro_batch_size_per_gpu=1",
        "trainer.n_gpus_per_node=8", "trainer.resume_mode=disable", "trainer.logger=[console]"]
AF_DTYPE = "actor_rollout_ref.actor.fsdp_config.model_dtype"
QWEN25_MATH_7B = {**QWEN25_7B, "max_position_embeddings": 4096}
QWEN25_YARN = {**QWEN25_7B, "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}


def facts(config, name="/models/m", **update):
    return facts_from_hf_config(config, name=name, source="local").model_copy(update=update)


def found(result, rule):
    return [f for f in result.findings if f.rule == rule]


@pytest.fixture
def run(check):
    def go(overrides, **models):
        return check(BASE + list(overrides), models=models)
    return go


def test_heads_not_divisible_by_rollout_tp(run):
    result = run([f"{R}.tensor_model_parallel_size=4"], actor=facts(QWEN25_05B))
    (f,) = found(result, "models.tp_heads")
    assert f.severity.value == "error" and f.stage.value == "startup"
    assert "14 attention heads" in f.message and "tensor parallel size (4)" in f.message
    assert f.fix_overrides == [f"{R}.tensor_model_parallel_size=2"]
    assert f"{R}.tensor_model_parallel_size" in f.keys and not result.ok



def test_the_tp_sizes_offered_divide_the_gpus_too(run):
    """A 28-head model on 8 GPUs: 7, 14 and 28 split the heads but no 8-GPU rollout can use them."""
    (f,) = found(run([f"{R}.tensor_model_parallel_size=3"], actor=facts(QWEN25_7B)), "models.tp_heads")
    assert f.fix.endswith("(TP sizes that fit 28 heads / 4 KV heads and 8 GPUs: 1, 2, 4)")


def test_tp_that_divides_heads_is_quiet_and_no_facts_is_quiet(run):
    assert not found(run([f"{R}.tensor_model_parallel_size=2"], actor=facts(QWEN25_05B)), "models.tp_heads")
    assert not found(run([f"{R}.tensor_model_parallel_size=4"]), "models.tp_heads")  # facts unknown: silent


def test_kv_heads_must_split_or_replicate_evenly(run):
    # 28 heads split over 14 ranks, but 4 KV heads cannot be replicated evenly over 14 (14 % 4 = 2)
    result = run([f"{R}.tensor_model_parallel_size=14", "trainer.n_gpus_per_node=14", "data.train_batch_size=14",
                  "actor_rollout_ref.actor.ppo_mini_batch_size=7"], actor=facts(QWEN25_7B))
    (f,) = found(result, "models.tp_kv_heads")
    assert "4 KV heads" in f.message and "14 % 4 == 0" in f.message and f.severity.value == "error"
    assert f.fix_overrides == [f"{R}.tensor_model_parallel_size=2"]  # 7 splits the heads but not the 4 KV heads
    # MLA keeps one latent KV: only the attention heads count
    assert not found(run([f"{R}.tensor_model_parallel_size=8"], actor=facts(DEEPSEEK_V3)), "models.tp_kv_heads")


def test_ulysses_sp_must_divide_heads(run):
    key = "actor_rollout_ref.actor.ulysses_sequence_parallel_size"
    result = run([f"{key}=4", "actor_rollout_ref.model.use_remove_padding=true"], actor=facts(QWEN25_05B))
    (f,) = found(result, "models.ulysses_heads")
    assert "num_attention_heads 14 must be divisible by ulysses_sp_size 4" in f.message
    assert f.fix_overrides == [f"{key}=2"] and f.stage.value == "startup"
    fsdp_key = "actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size"
    (g,) = found(run([f"{fsdp_key}=4"], actor=facts(QWEN25_05B)), "models.ulysses_heads")
    assert g.keys[0] == fsdp_key
    assert not found(run([f"{key}=2"], actor=facts(QWEN25_05B)), "models.ulysses_heads")


def test_max_model_len_longer_than_the_model(run):
    result = run([f"{R}.max_model_len=40000"], actor=facts(QWEN25_7B))
    (f,) = found(result, "models.max_model_len")
    assert "max_model_len (40000) should be less than or equal to max_position_embeddings (32768)" in f.message
    assert f.stage.value == "startup" and f.fix_overrides == [f"{R}.max_model_len=32768"]


def test_rope_scaling_is_named_with_the_override_that_lifts_the_limit(run):
    (f,) = found(run([f"{R}.max_model_len=65536"], actor=facts(QWEN25_YARN)), "models.max_model_len")
    assert "yarn, factor 4" in f.message and "override_config.max_position_embeddings=131072" in f.message
    lifted = run([f"{R}.max_model_len=65536", "+actor_rollout_ref.model.override_config.max_position_embeddings=131072"],
                 actor=facts(QWEN25_YARN))
    assert not found(lifted, "models.max_model_len")


def test_prompt_and_response_longer_than_the_model_context(run):
    # Qwen2.5-Math-7B has 4096 positions; verl's max_model_len defaults to them
    result = run(["data.max_prompt_length=1024", "data.max_response_length=4096"], actor=facts(QWEN25_MATH_7B))
    (f,) = found(result, "models.context_length")
    assert f.severity.value == "warning" and "1024 + 4096 = 5120" in f.message and "4096" in f.message
    assert f.fix_overrides == ["data.max_response_length=3072"]
    (g,) = found(run(["data.max_prompt_length=4096", "data.max_response_length=512"], actor=facts(QWEN25_MATH_7B)),
                 "models.context_length")
    assert g.severity.value == "error" and "leaves no room" in g.message
    assert not found(run(["data.max_prompt_length=1024", "data.max_response_length=3072"],
                         actor=facts(QWEN25_MATH_7B)), "models.context_length")


def test_missing_tokenizer_unless_a_tokenizer_path_is_given(run):
    no_tok = facts(QWEN25_05B, has_tokenizer=False)
    (f,) = found(run([], actor=no_tok), "models.tokenizer_missing")
    assert f.severity.value == "error" and "/models/m has no tokenizer" in f.message
    assert not found(run(["actor_rollout_ref.model.tokenizer_path=/models/tok"], actor=no_tok),
                     "models.tokenizer_missing")


def test_missing_chat_template_and_weights(run):
    result = run([], actor=facts(QWEN25_05B, has_tokenizer=True, has_chat_template=False, has_weights=False))
    (tmpl,) = found(result, "models.chat_template")
    assert "chat_template is not set" in tmpl.message
    (weights,) = found(result, "models.weights_missing")
    assert weights.severity.value == "error" and "no weights" in weights.message
    ok = run(["+actor_rollout_ref.model.custom_chat_template='{{ messages }}'"],
             actor=facts(QWEN25_05B, has_chat_template=False))
    assert not found(ok, "models.chat_template")


def test_remote_code_needs_trust_remote_code(run):
    custom = facts({**QWEN25_05B, "model_type": "my_lm", "auto_map": {"AutoConfig": "c.C"}},
                   remote_code=True)
    (f,) = found(run([], actor=custom), "models.remote_code")
    assert f.severity.value == "error" and f.fix_overrides == ["actor_rollout_ref.model.trust_remote_code=True"]
    assert not found(run(["actor_rollout_ref.model.trust_remote_code=true"], actor=custom), "models.remote_code")
    unsure = facts({**QWEN25_05B, "model_type": "my_lm", "auto_map": {"AutoConfig": "c.C"}})
    (g,) = found(run([], actor=unsure), "models.remote_code")
    assert g.severity.value == "warning"


def test_gated_repo_is_a_note_without_any_token(run):
    llama = facts(LLAMA31_8B, name="meta-llama/Llama-3.1-8B-Instruct", gated=True)
    (f,) = found(run(["actor_rollout_ref.model.path=meta-llama/Llama-3.1-8B-Instruct"], actor=llama), "models.gated")
    assert f.severity.value == "info" and "hf auth login" in f.message and "HF_TOKEN" in f.message
    assert "hf_" not in f.message.replace("HF_TOKEN", "")


def test_critic_must_read_the_actors_tokens(run):
    gae = ["algorithm.adv_estimator=gae", "critic.model.path=/models/c", "critic.ppo_micro_batch_size_per_gpu=1"]
    actor, small_critic = facts(QWEN25_7B), facts(QWEN25_05B, name="/models/c")  # 152064 vs 151936 rows
    (f,) = found(run(gae, actor=actor, critic=small_critic), "models.critic_vocab")
    assert "151936" in f.message and "152064" in f.message and f.severity.value == "warning"
    assert not found(run(gae, actor=actor, critic=facts(QWEN25_7B, name="/models/c")), "models.critic_vocab")
    # a Qwen critic under a Llama actor: every Llama id fits its 151,936 rows, but they mean other tokens
    (g,) = found(run(gae, actor=facts(LLAMA31_8B), critic=facts(QWEN3_8B, name="/models/c")), "models.critic_vocab")
    assert "qwen3" in g.message and "llama" in g.message and g.severity.value == "warning"
    assert not found(run([], actor=actor, critic=small_critic), "models.critic_vocab")  # GRPO: no critic


@pytest.mark.parametrize("actor", [QWEN25_7B, QWEN3_8B], ids=["qwen2.5", "qwen3"])
def test_a_critic_whose_embedding_ends_below_the_actors_prompt_tokens_is_an_error(run, actor):
    """Qwen's chat template puts <|im_start|> (151,644) into every prompt; Llama 3's embedding has 128,256 rows, and
    verl hands the critic the actor's ids unchanged: its first forward indexes out of range."""
    gae = ["algorithm.adv_estimator=gae", "critic.model.path=/models/c", "critic.ppo_micro_batch_size_per_gpu=1"]
    result = run(gae, actor=facts(actor), critic=facts(LLAMA31_8B, name="/models/c"))
    (f,) = found(result, "models.critic_vocab")
    assert f.severity.value == "error" and f.stage.value == "runtime" and not result.ok
    assert "<|im_start|> (id 151,644)" in f.message and "128,256 rows" in f.message
    assert "device-side assert" in f.message and "compute_values" in f.message
    assert f.fix_overrides == ["critic.model.path=/models/m"]  # the actor's own model
    # the fix applied: the critic is the actor's model, so it reads the actor's ids
    assert not found(run(gae[:1] + ["critic.model.path=/models/m", *gae[2:]], actor=facts(actor),
                         critic=facts(actor)), "models.critic_vocab")


def test_a_llama_actor_with_a_shorter_critic_is_an_error_at_its_bos_token(run):
    gae = ["algorithm.adv_estimator=gae", "critic.model.path=/models/c", "critic.ppo_micro_batch_size_per_gpu=1"]
    mistral = {**LLAMA31_8B, "model_type": "mistral", "vocab_size": 32768}
    (f,) = found(run(gae, actor=facts(LLAMA31_8B), critic=facts(mistral, name="/models/c")), "models.critic_vocab")
    assert f.severity.value == "error" and "<|begin_of_text|> (id 128,000)" in f.message and "32,768 rows" in f.message
    # Llama 2's 32,000-row tokenizer has no such token: only the warning that the ids mean other tokens
    llama2 = facts({**LLAMA31_8B, "vocab_size": 32000})
    (g,) = found(run(gae, actor=llama2, critic=facts(QWEN25_05B, name="/models/c")), "models.critic_vocab")
    assert g.severity.value == "warning"


def test_unknown_architecture_is_a_note(run):
    odd = facts({**QWEN25_05B, "architectures": ["FancyForCausalLM"], "model_type": "fancy"})
    (f,) = found(run([], actor=odd), "models.unknown_architecture")
    assert f.severity.value == "info" and "FancyForCausalLM" in f.message
    assert not found(run([], actor=facts(QWEN25_05B)), "models.unknown_architecture")


def test_reward_model_tp_is_checked_against_the_reward_model(run):
    rm = facts({**QWEN25_05B, "num_attention_heads": 9, "num_key_value_heads": 3, "hidden_size": 576},
               name="/models/rm")
    on = ["reward.reward_model.enable=true", "reward.reward_model.model_path=/models/rm",
          "reward.reward_model.rollout.name=vllm", "reward.reward_model.rollout.tensor_model_parallel_size=2"]
    (f,) = found(run(on, actor=facts(QWEN25_05B), reward=rm), "models.tp_heads")
    assert f.keys[0] == "reward.reward_model.rollout.tensor_model_parallel_size" and "9 attention heads" in f.message


# -- the first LoRA weight sync (models.lora_base_sync_bucket) ------------------------------------------

BUCKET = f"{R}.checkpoint_engine.update_weights_bucket_megabytes"
LORA = ["actor_rollout_ref.model.lora_rank=32", "actor_rollout_ref.model.lora_alpha=32",
        "actor_rollout_ref.actor.strategy=fsdp2", "actor_rollout_ref.ref.strategy=fsdp2"]


def test_lora_on_a_7b_whose_fp32_embedding_is_over_the_sync_buffer_is_an_error_with_its_numbers(run):
    """Seen on the H200 (bench/data/verl_real/advised-grpo-7b-full-1gpu): vLLM's worker died at the first sync."""
    result = run(LORA, actor=facts(QWEN25_7B))
    (f,) = found(result, "models.lora_base_sync_bucket")
    assert f.severity.value == "error" and f.stage.value == "runtime" and not result.ok
    assert "152,064 x 3,584 = 2,079 MiB" in f.message and "2,048 MiB" in f.message
    assert "IndexError: list assignment index out of range" in f.message
    assert f.fix_overrides == [f"{R}.load_format=safetensors"] and f"{BUCKET}=4096" in f.fix
    # either fix applied (vLLM loads the base; or the buffer holds the embedding): the finding is gone
    assert not found(run([*LORA, *f.fix_overrides], actor=facts(QWEN25_7B)), "models.lora_base_sync_bucket")
    assert not found(run([*LORA, f"{BUCKET}=4096"], actor=facts(QWEN25_7B)), "models.lora_base_sync_bucket")


@pytest.mark.parametrize("extra", [[f"{R}.load_format=safetensors"], ["actor_rollout_ref.model.lora.merge=True"],
                                   [f"{AF_DTYPE}=bf16"], ["actor_rollout_ref.model.lora_rank=0",
                                                          "actor_rollout_ref.model.lora.rank=32"],
                                   [f"{R}.checkpoint_engine.backend=nccl"], []],
                         ids=["vllm-loads-the-base", "merged", "bf16", "lora.rank-is-megatrons", "nccl-backend", "0.5b"])
def test_lora_base_sync_is_quiet_where_the_base_never_goes_through_the_buffer_or_fits_it(run, extra):
    model = facts(QWEN25_05B) if not extra else facts(QWEN25_7B)
    assert not found(run([*LORA, *extra], actor=model), "models.lora_base_sync_bucket")


def test_layered_summon_from_dummy_weights_is_an_error_verl_raises_at_the_first_sync(run):
    """verl/utils/fsdp_utils.py:725-730: ValueError("To use layered_summon, you must make sure base-model is preloaded
    in vllm, e.g. let rollout.load_format=safetensors"); the plan's host estimate had counted a sync that never
    happens. Its fix clears it; merged LoRA or vLLM loading the base does not need it."""
    summon = [*LORA, f"{R}.layered_summon=True"]
    result = run(summon, actor=facts(QWEN25_05B))
    (f,) = found(result, "models.lora_layered_summon_dummy")
    assert f.severity.value == "error" and "base-model is preloaded in vllm" in f.message and not result.ok
    assert not found(run([*summon, *f.fix_overrides], actor=facts(QWEN25_05B)), "models.lora_layered_summon_dummy")
    assert not found(run([*summon, "actor_rollout_ref.model.lora.merge=True"], actor=facts(QWEN25_05B)),
                     "models.lora_layered_summon_dummy")
    assert not found(run(LORA, actor=facts(QWEN25_05B)), "models.lora_layered_summon_dummy")


def test_ulysses_without_flash_attn_attends_within_each_gpus_slice(run):
    # verl 0.9.1 exchanges the heads over the group inside flash-attn's forward only, and slices the packed row
    # anyway: with sdpa each GPU's tokens see only its slice, and nothing fails
    key = "actor_rollout_ref.actor.ulysses_sequence_parallel_size"
    attn = "+actor_rollout_ref.model.override_config.attn_implementation"
    result = run([f"{key}=2", f"{attn}=sdpa"], actor=facts(QWEN25_05B))
    (f,) = found(result, "advice.ulysses_attention")
    assert f.severity.value == "error" and f.stage.value == "advice" and not result.ok
    assert f"{key}=2" in f.message and "=sdpa" in f.message and "wrong log-probs and gradients" in f.message
    assert f.fix_overrides == [f"{key}=1"]
    assert not found(run([f"{key}=1", f"{attn}=sdpa"]), "advice.ulysses_attention")
    assert not found(run([f"{key}=2"]), "advice.ulysses_attention")  # flash_attention_2, verl's default
    # both of the actor's keys > 1: verl copies the legacy one into fsdp_config only when it is > 1, so both go to 1
    fsdp_key = "actor_rollout_ref.actor.fsdp_config.ulysses_sequence_parallel_size"
    (both,) = found(run([f"{key}=2", f"{fsdp_key}=4", f"{attn}=eager"]), "advice.ulysses_attention")
    assert sorted(both.fix_overrides) == sorted([f"{key}=1", f"{fsdp_key}=1"])
    # verl runs Qwen2-VL's attention through flash-attn with the exchange whatever the setting
    vl = facts(QWEN25_05B, model_type="qwen2_vl")
    assert not found(run([f"{key}=2", f"{attn}=sdpa"], actor=vl), "advice.ulysses_attention")
    # the critic is always loaded with flash_attention_2 (load_valuehead_model): its attention key is not read
    ppo = ["algorithm.adv_estimator=gae", "critic.model.path=/models/m", "critic.ppo_micro_batch_size_per_gpu=1",
           "critic.fsdp.ulysses_sequence_parallel_size=2", "+critic.model.override_config.attn_implementation=eager"]
    assert not found(run(ppo), "advice.ulysses_attention")


def test_megatrons_lora_rank_on_fsdp_trains_the_whole_model_and_fails_at_the_reference_pass(run):
    """``model.lora.rank`` is the Megatron engine's LoRA key (verl's workers/config/model.py); the FSDP engine reads
    ``lora_rank`` only, while the trainer and vLLM read ``lora.rank`` first. The plan was estimated as LoRA (0.5 GiB
    of AdamW moments for a 14B) and offered a bf16 base: it trains the whole model, with no reference model."""
    key = ["actor_rollout_ref.model.lora.rank=32", "actor_rollout_ref.actor.strategy=fsdp2"]
    kl = ["actor_rollout_ref.actor.use_kl_loss=True"]
    result = run([*key, *kl], actor=facts(QWEN25_05B))
    (f,) = found(result, "models.lora_megatron_key_on_fsdp")
    assert f.severity.value == "error" and "trains the whole model" in f.message and "first reference pass" in f.message
    assert f.fix_overrides == ["actor_rollout_ref.model.lora_rank=32"]
    assert not found(run([*key, *kl, *f.fix_overrides], actor=facts(QWEN25_05B)), "models.lora_megatron_key_on_fsdp")
    # without a reference policy it runs, training the whole model: a warning
    (w,) = found(run([*key, "actor_rollout_ref.actor.use_kl_loss=False"], actor=facts(QWEN25_05B)),
                 "models.lora_megatron_key_on_fsdp")
    assert w.severity.value == "warning" and "first reference pass" not in w.message
    assert not found(run(LORA, actor=facts(QWEN25_05B)), "models.lora_megatron_key_on_fsdp")


def test_megatrons_lora_rank_on_fsdp_is_estimated_as_the_full_model_it_trains():
    from tests.helpers.memory_values import full
    from wizard.core.memory.config import read_config
    from wizard.core.verl.roles import ref_in_actor

    values = {"actor_rollout_ref.model.lora": {"rank": 32}, "actor_rollout_ref.actor.strategy": "fsdp2"}
    assert read_config(full(values)).lora_rank == 0 and ref_in_actor(values)  # the trainer still loads no reference
    assert read_config(full({**values, "actor_rollout_ref.model.lora_rank": 32})).lora_rank == 32
    megatron = {**values, "actor_rollout_ref.actor.strategy": "megatron"}
    assert read_config(full(megatron, "megatron")).lora_rank == 32
