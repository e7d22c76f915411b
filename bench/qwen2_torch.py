"""A Qwen2-architecture decoder in plain torch, as transformers' modeling_qwen2 computes it (for the GPU calibration).

RMSNorm with an fp32 inner computation, rotary embeddings, GQA attention through SDPA's flash kernel with q/k/v
bias, SwiGLU MLP, tied or untied embeddings, and per-layer gradient checkpointing (``use_reentrant=False``, as
transformers' ``gradient_checkpointing_enable`` sets it in verl). No weights are loaded: the calibration measures
memory, so random initialisation is enough.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint



class RMSNorm(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x32 = x.to(torch.float32)
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(dtype)


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class Attention(nn.Module):
    def __init__(self, s: dict):
        super().__init__()
        h, d = s["hidden"], s["head_dim"]
        self.heads, self.kv_heads, self.head_dim = s["heads"], s["kv_heads"], d
        self.q_proj = nn.Linear(h, s["heads"] * d, bias=True)
        self.k_proj = nn.Linear(h, s["kv_heads"] * d, bias=True)
        self.v_proj = nn.Linear(h, s["kv_heads"] * d, bias=True)
        self.o_proj = nn.Linear(s["heads"] * d, h, bias=False)

    def forward(self, x, cos, sin):
        b, n, _ = x.shape
        q = self.q_proj(x).view(b, n, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, n, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, n, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        out = sdpa(q, k, v)
        return self.o_proj(out.transpose(1, 2).reshape(b, n, -1))


_GQA = {"mode": None}


def sdpa(q, k, v):
    """Causal attention with GQA on the flash kernel (what flash-attn varlen does in verl); never the
    O(s^2) math kernel. Falls back to repeating K/V (transformers' older sdpa path) if the kernel wants it."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = [SDPBackend.FLASH_ATTENTION] if q.is_cuda else [SDPBackend.MATH]
    if _GQA["mode"] in (None, "enable_gqa"):
        try:
            with sdpa_kernel(backends):
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
            _GQA["mode"] = "enable_gqa"
            return out
        except RuntimeError:
            _GQA["mode"] = "repeat_kv"
    rep = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
    with sdpa_kernel(backends):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


class MLP(nn.Module):
    def __init__(self, s: dict):
        super().__init__()
        self.gate_proj = nn.Linear(s["hidden"], s["inter"], bias=False)
        self.up_proj = nn.Linear(s["hidden"], s["inter"], bias=False)
        self.down_proj = nn.Linear(s["inter"], s["hidden"], bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, s: dict):
        super().__init__()
        self.input_layernorm = RMSNorm(s["hidden"])
        self.self_attn = Attention(s)
        self.post_attention_layernorm = RMSNorm(s["hidden"])
        self.mlp = MLP(s)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class Qwen2(nn.Module):
    def __init__(self, s: dict):
        super().__init__()
        self.s = s
        self.embed_tokens = nn.Embedding(s["vocab"], s["hidden"])
        self.layers = nn.ModuleList(DecoderLayer(s) for _ in range(s["layers"]))
        self.norm = RMSNorm(s["hidden"])
        self.lm_head = nn.Linear(s["hidden"], s["vocab"], bias=False)
        if s["tie"]:
            self.lm_head.weight = self.embed_tokens.weight
        self.gradient_checkpointing = False

    def rotary(self, n: int, device, dtype):
        d = self.s["head_dim"]
        inv = 1.0 / (1_000_000.0 ** (torch.arange(0, d, 2, device=device, dtype=torch.float32) / d))
        freqs = torch.outer(torch.arange(n, device=device, dtype=torch.float32), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(dtype)[None, None], emb.sin().to(dtype)[None, None]

    def forward(self, ids):
        x = self.embed_tokens(ids)
        cos, sin = self.rotary(ids.shape[1], ids.device, x.dtype)
        for layer in self.layers:
            if self.gradient_checkpointing and self.training:
                x = checkpoint(layer, x, cos, sin, use_reentrant=False)
            else:
                x = layer(x, cos, sin)
        return self.lm_head(self.norm(x))


def param_count(s: dict) -> int:
    h, d, inter = s["hidden"], s["head_dim"], s["inter"]
    q, kv = s["heads"] * d, s["kv_heads"] * d
    layer = h * q + 2 * h * kv + q * h + q + 2 * kv + 3 * h * inter + 2 * h
    return s["layers"] * layer + s["vocab"] * h * (1 if s["tie"] else 2) + h
