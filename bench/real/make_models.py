"""Random-weight Qwen2.5 models with their real shapes (vocabulary included), a byte-level BPE tokenizer of
exactly that vocabulary size, and GSM8K-style parquet files in verl's row format. Nothing is downloaded.

    python3 make_models.py OUT_DIR [--cpu] [--no-data] [0.5b 1.5b 3b ...]   -> OUT_DIR/q0.5b, ..., OUT_DIR/data

Each model folder gets a DONE file last (the campaign waits for it). ``--cpu`` draws the weights on the CPU (while
another run measures the GPU).

Extends ../shared/tools/device-verl/make_tiny_model.py: the tokenizer is a small trained BPE (Qwen's chat markers,
"\\n" one token, as verl's agent loop expects) padded with unreachable filler tokens up to the model's vocabulary,
so the logits are as large as the real model's and every id the sampler draws decodes. With random weights the
end-of-sequence token is almost never drawn, so every response runs to max_response_length (the worst case).
Prompts are about ``PROMPT_TOKENS`` tokens long, so prompt + response is close to the configured maximum.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pandas as pd
import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedTokenizerFast, Qwen2Config, Qwen3MoeConfig

SHAPES = {  # config.json of the Qwen2.5 base models (../shared/reference/gpu-memory.md section 4.3)
    "0.5b": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                 num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "1.5b": dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
                 num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "3b": dict(hidden_size=2048, intermediate_size=11008, num_hidden_layers=36, num_attention_heads=16,
               num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True),
    "7b": dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
               num_key_value_heads=4, vocab_size=152064, tie_word_embeddings=False),
    "14b": dict(hidden_size=5120, intermediate_size=13824, num_hidden_layers=48, num_attention_heads=40,
                num_key_value_heads=8, vocab_size=152064, tie_word_embeddings=False),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=2048, tie_word_embeddings=True),
}
# Qwen3-MoE shapes (model_type qwen3_moe): a small one for one GPU (1.2B params, 0.4B active: 32 experts, 4 per
# token) and a tiny one for tests. Their checkpoints name each expert's weights as Qwen3-MoE's Hugging Face
# checkpoints do (mlp.experts.E.gate_proj / up_proj / down_proj), which vLLM, mbridge and transformers' loader read;
# transformers 5's module holds them fused (experts.gate_up_proj), so they are written here, not from its state_dict.
MOE_SHAPES = {
    "moe1b": dict(hidden_size=1024, intermediate_size=3072, moe_intermediate_size=512, num_hidden_layers=16,
                  num_attention_heads=16, num_key_value_heads=4, head_dim=64, num_experts=32, num_experts_per_tok=4,
                  vocab_size=151936, tie_word_embeddings=False),
    "moetiny": dict(hidden_size=64, intermediate_size=128, moe_intermediate_size=32, num_hidden_layers=2,
                    num_attention_heads=4, num_key_value_heads=2, head_dim=16, num_experts=4, num_experts_per_tok=2,
                    vocab_size=2048, tie_word_embeddings=False),
}
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
PROMPT_TOKENS = 440
CHAT = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def tokenizer(vocab_size: int) -> PreTrainedTokenizerFast:
    corpus = [f"what is {a} + {b} ? let think step by step.\nthe answer is #### {a + b}\n"
              for a in range(60) for b in range(60)]
    small = Tokenizer(models.BPE(unk_token=None))
    small.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    small.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=400, special_tokens=SPECIALS,
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    state = json.loads(small.to_str())
    vocab, merges = state["model"]["vocab"], state["model"]["merges"]
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    rng = random.Random(0)
    while len(vocab) < vocab_size:  # unreachable filler tokens: no merge produces them, every id decodes
        word = "".join(rng.choice(alphabet) for _ in range(rng.randint(4, 8)))
        vocab.setdefault(word, len(vocab))
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(SPECIALS)
    assert len(tok.encode("\n").ids) == 1 and tok.get_vocab_size() == vocab_size, tok.get_vocab_size()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<|endoftext|>", eos_token="<|im_end|>",
                                   model_max_length=32768)
    fast.chat_template = CHAT
    return fast


def weights(model: torch.nn.Module, device: str) -> dict[str, torch.Tensor]:
    out, gen = {}, torch.Generator(device=device).manual_seed(0)
    for name, p in model.named_parameters():  # tied weights appear once
        if ".mlp.experts." in name:  # transformers 5's fused routed experts: expert_weights writes them per expert
            continue
        if name.endswith("norm.weight"):
            t = torch.ones(p.shape, dtype=torch.bfloat16)
        elif name.endswith(".bias"):
            t = torch.zeros(p.shape, dtype=torch.bfloat16)
        else:
            t = (torch.randn(p.shape, generator=gen, device=device) * 0.02).to(torch.bfloat16).cpu()
        out[name] = t.contiguous()
    return out


def config(shape: str):
    """The shape's transformers config (Qwen2 or Qwen3-MoE), as config.json holds it (make_model sets the
    tokenizer's end and padding ids)."""
    moe = shape in MOE_SHAPES
    kind, arch = (Qwen3MoeConfig, "Qwen3MoeForCausalLM") if moe else (Qwen2Config, "Qwen2ForCausalLM")
    extra = dict(decoder_sparse_step=1, mlp_only_layers=[], norm_topk_prob=True) if moe else {}
    return kind(**(MOE_SHAPES[shape] if moe else SHAPES[shape]), **extra, max_position_embeddings=32768,
                rms_norm_eps=1e-6, rope_theta=1000000.0, bos_token_id=None, torch_dtype="bfloat16",
                architectures=[arch])


def expert_weights(cfg, device: str) -> dict[str, torch.Tensor]:
    """Each routed expert's weights under Qwen3-MoE's checkpoint names."""
    out, gen = {}, torch.Generator(device=device).manual_seed(1)
    h, m = cfg.hidden_size, cfg.moe_intermediate_size
    for layer in range(cfg.num_hidden_layers):
        for e in range(cfg.num_experts):
            for name, shape in (("gate_proj", (m, h)), ("up_proj", (m, h)), ("down_proj", (h, m))):
                t = torch.randn(shape, generator=gen, device=device) * 0.02
                out[f"model.layers.{layer}.mlp.experts.{e}.{name}.weight"] = t.to(torch.bfloat16).cpu().contiguous()
    return out


def make_model(out: Path, shape: str, device: str) -> None:
    cfg = config(shape)
    fast = tokenizer(cfg.vocab_size)
    out.mkdir(parents=True, exist_ok=True)
    fast.save_pretrained(out)
    cfg.eos_token_id, cfg.pad_token_id = fast.convert_tokens_to_ids("<|im_end|>"), fast.convert_tokens_to_ids("<|endoftext|>")
    cfg.save_pretrained(out)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    sd = weights(model, device) | (expert_weights(cfg, device) if shape in MOE_SHAPES else {})
    save_file(sd, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "DONE").write_text("ok\n")
    print(shape, "params", sum(t.numel() for t in sd.values()), flush=True)


def make_data(out: Path, fast) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    filler = " ".join(f"note {i} : {rng.randint(1, 99)} + {rng.randint(1, 99)} ." for i in range(400))

    def prompt(a: int, b: int) -> str:
        q = f"what is {a} + {b} ? let think step"
        words = filler.split(" ")
        lo, hi = 0, len(words)
        while lo < hi:  # the longest filler prefix that keeps the chat prompt under PROMPT_TOKENS tokens
            mid = (lo + hi + 1) // 2
            text = " ".join(words[:mid]) + " " + q
            chat = fast.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                            tokenize=False)
            n = len(fast.encode(chat, add_special_tokens=False))
            lo, hi = (mid, hi) if n <= PROMPT_TOKENS else (lo, mid - 1)
        return " ".join(words[:lo]) + " " + q

    def rows(n: int, split: str) -> pd.DataFrame:
        out_rows = []
        for i in range(n):
            a, b = rng.randint(1, 40), rng.randint(1, 40)
            q = prompt(a, b)
            out_rows.append({"data_source": "openai/gsm8k", "prompt": [{"role": "user", "content": q}],
                             "ability": "math", "reward_model": {"style": "rule", "ground_truth": str(a + b)},
                             "extra_info": {"split": split, "index": i, "answer": f"#### {a + b}", "question": q}})
        return pd.DataFrame(out_rows)

    rows(64, "train").to_parquet(out / "train.parquet")
    rows(16, "test").to_parquet(out / "test.parquet")
    print("data written", out, flush=True)


def main(argv: list[str]) -> int:
    flags = {a for a in argv[2:] if a.startswith("--")}
    root, shapes = Path(argv[1]), [a for a in argv[2:] if not a.startswith("--")] or ["0.5b"]
    device = "cuda" if torch.cuda.is_available() and "--cpu" not in flags else "cpu"
    for shape in shapes:
        make_model(root / f"q{shape}", shape, device)
    if "--no-data" not in flags:
        # as verl loads it: transformers picks Qwen2Tokenizer for a qwen2 config (Qwen's pre-tokenizer regex)
        loaded = AutoTokenizer.from_pretrained(root / f"q{shapes[0]}")
        assert len(loaded.encode("\n", add_special_tokens=False)) == 1
        make_data(root / "data", loaded)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
