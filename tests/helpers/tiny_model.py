"""A tiny local Hugging Face model folder (config + tokenizer; real safetensors weights with ``shards``), written by the tests.

verl's pre-flight loads the critic's tokenizer and config from ``critic.model.path``;
nothing can be downloaded here, so conformance tests point model paths at this.

The optional arguments (all off by default, so the folder stays what the older callers expect)
shape it for the model-facts tests: other config values, a checkpoint of ``shards`` real
safetensors files holding exactly the tensors of a Qwen2 model of that config (with
model.safetensors.index.json when there are several), no tokenizer, no chat template.
"""

from __future__ import annotations

import json
from pathlib import Path


def write_tiny_model(folder: Path, *, config: dict | None = None, shards: int = 0, tokenizer: bool = True,
                     chat_template: bool = True) -> Path:
    from tokenizers import Tokenizer, models, pre_tokenizers

    folder.mkdir(parents=True, exist_ok=True)
    vocab = {"<pad>": 0, "<unk>": 1, "<|im_start|>": 2, "<|im_end|>": 3}
    for i, word in enumerate("the a of to and is in what how many answer question step".split()):
        vocab[word] = len(vocab)
    if tokenizer:
        tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        tok.save(str(folder / "tokenizer.json"))
        tok_config = {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "pad_token": "<pad>", "unk_token": "<unk>", "eos_token": "<|im_end|>", "bos_token": None,
            "model_max_length": 2048,
        }
        if chat_template:
            tok_config["chat_template"] = (
                "{% for m in messages %}<|im_start|>{{ m['role'] }} {{ m['content'] }}<|im_end|>{% endfor %}")
        (folder / "tokenizer_config.json").write_text(json.dumps(tok_config))
    full_config = {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
        "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
        "num_hidden_layers": 2, "vocab_size": len(vocab), "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "bos_token_id": None, "eos_token_id": 3, "pad_token_id": 0,
        **(config or {}),
    }
    (folder / "config.json").write_text(json.dumps(full_config))
    if shards:
        from tests.helpers.tiny_checkpoint import write_qwen2_safetensors

        write_qwen2_safetensors(folder, full_config, shards)
    return folder
