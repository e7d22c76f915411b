"""Published config.json values of common models, for the model-facts tests.

Fields copied from the sources named in resources/model-catalogue.yaml (Hugging Face copies of the
official config.json, mlc-llm's model presets, alibaba/InferSim's hf_configs).
"""

QWEN25_05B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
              "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
              "vocab_size": 151936, "tie_word_embeddings": True, "max_position_embeddings": 32768}
QWEN25_15B = {**QWEN25_05B, "hidden_size": 1536, "intermediate_size": 8960, "num_hidden_layers": 28,
              "num_attention_heads": 12}
QWEN25_7B = {**QWEN25_05B, "hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
             "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064, "tie_word_embeddings": False}
QWEN25_32B = {**QWEN25_7B, "hidden_size": 5120, "intermediate_size": 27648, "num_hidden_layers": 64,
              "num_attention_heads": 40, "num_key_value_heads": 8, "max_position_embeddings": 131072}
LLAMA31_8B = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
              "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
              "vocab_size": 128256, "tie_word_embeddings": False, "max_position_embeddings": 131072,
              "attention_bias": False,
              "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                               "original_max_position_embeddings": 8192, "rope_type": "llama3"}}
QWEN3_8B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "attention_bias": False, "head_dim": 128,
            "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36, "num_attention_heads": 32,
            "num_key_value_heads": 8, "vocab_size": 151936, "tie_word_embeddings": False,
            "max_position_embeddings": 40960}
GEMMA2_2B = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "attention_bias": False, "head_dim": 256,
             "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 8,
             "num_key_value_heads": 4, "vocab_size": 256000, "max_position_embeddings": 8192, "sliding_window": 4096}
QWEN3_30B_A3B = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "head_dim": 128,
                 "hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 48, "num_attention_heads": 32,
                 "num_key_value_heads": 4, "vocab_size": 151936, "tie_word_embeddings": False,
                 "max_position_embeddings": 40960, "num_experts": 128, "num_experts_per_tok": 8,
                 "moe_intermediate_size": 768, "decoder_sparse_step": 1, "mlp_only_layers": []}
# alibaba/InferSim hf_configs/deepseek_v3_config.json (spells the expert counts num_routed/num_shared_experts)
DEEPSEEK_V3 = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
               "auto_map": {"AutoConfig": "configuration_deepseek.DeepseekV3Config"},
               "first_k_dense_replace": 3, "hidden_size": 7168, "intermediate_size": 18432, "kv_lora_rank": 512,
               "max_position_embeddings": 163840, "moe_intermediate_size": 2048, "moe_layer_freq": 1,
               "num_routed_experts": 256, "num_shared_experts": 1, "num_attention_heads": 128,
               "num_experts_per_tok": 8, "num_hidden_layers": 61, "num_key_value_heads": 128, "q_lora_rank": 1536,
               "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "vocab_size": 129280,
               "tie_word_embeddings": False,
               "rope_scaling": {"factor": 40, "original_max_position_embeddings": 4096, "type": "yarn"}}
MIXTRAL = {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": 4096,
           "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
           "num_local_experts": 8, "num_experts_per_tok": 2, "vocab_size": 32000, "tie_word_embeddings": False,
           "max_position_embeddings": 32768}
QWEN15_MOE = {"architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "hidden_size": 2048,
              "intermediate_size": 5632, "num_hidden_layers": 24, "num_attention_heads": 16,
              "num_key_value_heads": 16, "vocab_size": 151936, "tie_word_embeddings": False, "decoder_sparse_step": 1,
              "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "num_experts_per_tok": 4,
              "num_experts": 60}

