"""Model facts from config.json dicts: sizes, families, MoE, MLA, nesting, and the one-line errors.

The configs (tests/helpers/hf_configs.py) are the published ones; the expected parameter counts
are the table of shared/reference/gpu-memory.md §4.3 and the model cards.
"""

import pytest

from tests.helpers.hf_configs import (
    DEEPSEEK_V3, GEMMA2_2B, LLAMA31_8B, MIXTRAL, QWEN3_8B, QWEN3_30B_A3B, QWEN15_MOE, QWEN25_05B, QWEN25_7B, QWEN25_15B,
    QWEN25_32B,
)
from wizard.core.models.facts import ModelConfigError, facts_from_hf_config, model_paths


def facts(config, **kw):
    return facts_from_hf_config(config, name="m", source="config", **kw)


@pytest.mark.parametrize("config, billions, kv_kib", [
    (QWEN25_05B, 0.494, 12), (QWEN25_15B, 1.544, 28), (QWEN25_7B, 7.616, 56), (QWEN25_32B, 32.76, 256),
    (LLAMA31_8B, 8.030, 128), (QWEN3_8B, 8.191, 144), (GEMMA2_2B, 2.614, 104),
])
def test_parameter_counts_and_kv_match_the_reference_table(config, billions, kv_kib):
    f = facts(config)
    assert f.param_count / 1e9 == pytest.approx(billions, abs=0.006)
    assert f.kv_bytes_per_token() == kv_kib * 1024


def test_head_dim_defaults_to_hidden_over_heads():
    assert facts(QWEN25_7B).head_dim == 3584 // 28 == 128
    assert facts(QWEN25_05B).head_dim == 64
    assert facts(GEMMA2_2B).head_dim == 256  # given explicitly, not 2304 / 8


def test_family_details():
    qwen2, qwen3, llama, gemma = facts(QWEN25_7B), facts(QWEN3_8B), facts(LLAMA31_8B), facts(GEMMA2_2B)
    assert qwen2.attention_bias and not qwen3.attention_bias and not llama.attention_bias
    assert qwen3.qk_norm and not qwen2.qk_norm
    assert gemma.norms_per_layer == 4 and gemma.tie_word_embeddings  # Gemma ties by default
    assert not facts({**QWEN25_05B, "tie_word_embeddings": False}).tie_word_embeddings
    assert facts({**LLAMA31_8B, "attention_bias": True}).attention_bias
    assert llama.rope_scaling_type == "llama3" and llama.rope_scaling_factor == 8.0
    assert gemma.sliding_window == 4096 and qwen2.sliding_window is None


def test_moe_counts_total_and_active():
    qwen3 = facts(QWEN3_30B_A3B)  # card: 30.5B total, 3.3B activated
    assert qwen3.param_count / 1e9 == pytest.approx(30.53, abs=0.01)
    assert qwen3.active_param_count / 1e9 == pytest.approx(3.35, abs=0.01)
    assert facts(MIXTRAL).param_count / 1e9 == pytest.approx(46.70, abs=0.01)
    qwen15 = facts(QWEN15_MOE)  # card: 14.3B total, 2.7B activated; one shared expert of 5632
    assert qwen15.param_count / 1e9 == pytest.approx(14.32, abs=0.01)
    assert qwen15.active_param_count / 1e9 == pytest.approx(2.69, abs=0.01)
    assert qwen15.num_experts == 60 and qwen15.shared_expert_intermediate_size == 5632


def test_deepseek_v3_mla_and_dense_layers():
    f = facts(DEEPSEEK_V3)
    assert f.num_experts == 256 and f.num_shared_experts == 1 and f.num_dense_layers == 3
    assert f.param_count / 1e9 == pytest.approx(671.0, abs=0.1)  # the published 671B (MTP layer not counted)
    assert f.kv_bytes_per_token() == (512 + 64) * 61 * 2  # latent KV, not per head
    assert f.rope_scaling_type == "yarn" and f.original_max_position_embeddings == 4096
    assert facts({**DEEPSEEK_V3, "n_routed_experts": 256}).num_experts == 256  # the official spelling too


def test_multimodal_wrapper_reads_text_config():
    gemma3 = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
              "text_config": {"model_type": "gemma3_text", "hidden_size": 3840, "intermediate_size": 15360,
                              "num_hidden_layers": 48, "num_attention_heads": 16, "num_key_value_heads": 8,
                              "head_dim": 256, "vocab_size": 262208, "max_position_embeddings": 131072}}
    f = facts(gemma3)
    assert f.multimodal and f.architecture == "Gemma3ForConditionalGeneration" and f.model_type == "gemma3_text"
    assert f.qk_norm and f.norms_per_layer == 4 and f.tie_word_embeddings
    assert f.param_count / 1e9 == pytest.approx(11.77, abs=0.01)  # text decoder, as the reference table


def test_auto_map_and_remote_code():
    custom = {**QWEN25_05B, "model_type": "my_lm", "auto_map": {"AutoConfig": "cfg.MyConfig"}}
    assert facts(custom).auto_map and facts(custom).remote_code is None  # unknown without transformers' list
    assert facts(custom, native_model_types={"qwen2"}).remote_code is True
    assert facts({**custom, "model_type": "qwen2"}, native_model_types={"qwen2"}).remote_code is False
    only_model = {**QWEN25_05B, "auto_map": {"AutoModelForCausalLM": "m.M"}}
    assert facts(only_model).auto_map and facts(only_model).remote_code is False  # AutoConfig is built in
    assert facts(DEEPSEEK_V3).remote_code is False  # deepseek_v3 is a family transformers implements


@pytest.mark.parametrize("config, reason", [
    ({**QWEN25_05B, "hidden_size": None}, "no hidden_size"),
    ({k: v for k, v in QWEN25_05B.items() if k != "vocab_size"}, "no vocab_size"),
    ({**QWEN25_05B, "num_attention_heads": "14"}, "num_attention_heads must be a positive whole number, got '14'"),
    ({**QWEN25_05B, "num_hidden_layers": True}, "num_hidden_layers must be a positive whole number"),
    ({"architectures": ["X"], "text_config": {"hidden_size": 8}}, "text_config.num_hidden_layers"),
    (["not", "a", "dict"], "must hold a JSON object"),
])
def test_unreadable_configs_give_one_line_reasons(config, reason):
    with pytest.raises(ModelConfigError) as err:
        facts(config)
    assert reason in str(err.value) and "\n" not in str(err.value)


def test_model_paths_follow_verls_roles():
    base = {"actor_rollout_ref.model.path": "A", "critic.model.path": "C", "reward.reward_model.model_path": "R",
            "algorithm.adv_estimator": "grpo"}
    assert model_paths(base) == {"actor": ("actor_rollout_ref.model.path", "A")}
    gae = model_paths({**base, "algorithm.adv_estimator": "gae", "algorithm.use_kl_in_reward": True,
                       "reward.reward_model.enable": True})
    assert gae["critic"] == ("critic.model.path", "C") and gae["reward"][1] == "R"
    assert gae["ref"] == ("actor_rollout_ref.model.path", "A")  # the reference policy loads the actor's path
    assert "critic" not in model_paths({**base, "algorithm.adv_estimator": "gae", "critic.enable": False})
    lora = {**base, "actor_rollout_ref.actor.use_kl_loss": True, "actor_rollout_ref.model.lora_rank": 32}
    assert "ref" not in model_paths(lora)  # with LoRA the reference is the actor with the adapter off
    assert "ref" in model_paths({**lora, "actor_rollout_ref.model.lora_rank": 0})


def test_the_vision_tower_of_qwen2_5_vl_is_counted_as_transformers_builds_it():
    """torchinfo of Qwen2.5-VL-3B-Instruct (the catalogue row's source): Conv3d 1,505,280, each of the 32 vision
    blocks 19,702,200, merger 1,280 + 36,707,328; each decoder layer 77,076,992 (q/k/v biases)."""
    from wizard.core.models.facts import facts_from_hf_config, vision_params

    config = {"architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
              "hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36, "num_attention_heads": 16,
              "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": True,
              "vision_config": {"depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "in_chans": 3,
                                "out_hidden_size": 2048, "patch_size": 14, "spatial_merge_size": 2,
                                "temporal_patch_size": 2}}
    assert vision_params(config) == 1_505_280 + 32 * 19_702_200 + 1_280 + 36_707_328
    facts = facts_from_hf_config(config, name="vl", source="config")
    assert facts.multimodal and facts.layer_params == 77_076_992
    assert facts.param_count == 36 * 77_076_992 + 151936 * 2048 + 2048 + vision_params(config)
    assert facts.active_param_count == facts.param_count - vision_params(config)
    assert vision_params({**config, "model_type": "llava"}) is None  # a tower of unknown layout is not guessed
