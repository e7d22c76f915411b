"""Real safetensors checkpoints of tiny Qwen2 models (zeros), for tests that read weights' headers.

The tensor names and shapes are those transformers' Qwen2ForCausalLM saves, so the parameter
count in the headers is the one the config implies.
"""

from __future__ import annotations

import json
from pathlib import Path


def qwen2_tensors(cfg: dict) -> dict[str, tuple[int, ...]]:
    """Tensor names and shapes of a transformers Qwen2ForCausalLM checkpoint of this config."""
    h, inter, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = cfg.get("head_dim") or h // heads
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (cfg["vocab_size"], h), "model.norm.weight": (h,)}
    for i in range(layers):
        p = f"model.layers.{i}."
        shapes.update({
            p + "self_attn.q_proj.weight": (heads * d, h), p + "self_attn.q_proj.bias": (heads * d,),
            p + "self_attn.k_proj.weight": (kv * d, h), p + "self_attn.k_proj.bias": (kv * d,),
            p + "self_attn.v_proj.weight": (kv * d, h), p + "self_attn.v_proj.bias": (kv * d,),
            p + "self_attn.o_proj.weight": (h, heads * d),
            p + "mlp.gate_proj.weight": (inter, h), p + "mlp.up_proj.weight": (inter, h),
            p + "mlp.down_proj.weight": (h, inter),
            p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
        })
    if not cfg.get("tie_word_embeddings"):
        shapes["lm_head.weight"] = (cfg["vocab_size"], h)
    return shapes


def write_qwen2_safetensors(folder: Path, cfg: dict, shards: int) -> list[Path]:
    """The checkpoint as ``shards`` safetensors files (bf16-sized zeros via float16), indexed when more than one."""
    import numpy as np
    from safetensors.numpy import save_file

    names = list(qwen2_tensors(cfg).items())
    per = -(-len(names) // shards)
    files, weight_map, total = [], {}, 0
    for n in range(shards):
        part = names[n * per:(n + 1) * per]
        name = "model.safetensors" if shards == 1 else f"model-{n + 1:05d}-of-{shards:05d}.safetensors"
        tensors = {k: np.zeros(shape, dtype=np.float16) for k, shape in part}
        save_file(tensors, str(folder / name), metadata={"format": "pt"})
        files.append(folder / name)
        weight_map.update({k: name for k, _ in part})
        total += sum(t.nbytes for t in tensors.values())
    if shards > 1:
        (folder / "model.safetensors.index.json").write_text(
            json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    return files
