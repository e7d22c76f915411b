"""Measure the GPU memory of verl's actor passes on a real GPU, in plain torch (no transformers, no verl).

What it builds is what verl 0.9.1's FSDP engine builds for a Qwen2 actor, reduced to one GPU:

* a Qwen2-architecture model (RMSNorm, rotary, GQA attention through SDPA with q/k/v bias, SwiGLU MLP,
  tied or untied embeddings), random-initialised in **fp32** (verl's ``fsdp_config.model_dtype: fp32``);
* wrapped with FSDP2 ``fully_shard`` exactly as ``verl.utils.fsdp_utils.apply_fsdp2`` does (each decoder
  layer, embedding and lm_head when untied, then the root), with ``MixedPrecisionPolicy(param_dtype=bf16,
  reduce_dtype=fp32)`` and ``torch.autocast(bf16)`` around the forward, on a one-rank process group, so
  each unit is all-gathered to bf16 and freed the way it is on N GPUs;
* ``torch.optim.AdamW`` (verl's default ``optimizer_impl: torch.optim``: foreach on CUDA) with
  gradient-norm clipping, gradient checkpointing per decoder layer (``use_reentrant=False``) on or off;
* logits ``(T, V)`` in bf16, log-probs through a cross-entropy that works like flash-attn's (fp32 row
  logsumexp, gradient written in place into the logits: what verl uses when flash-attn is installed),
  and the old-log-prob pass's entropy as ``verl.utils.torch_functional.entropy_from_logits`` computes it,
  eager and under ``torch.compile`` (verl's default ``use_torch_compile: true``).

Per case it records ``torch.cuda.max_memory_allocated``, ``max_memory_reserved`` and NVML's used memory,
and the resident states before the pass. The update phase runs two micro-batches per optimizer step, so
the second one runs with the gradients of the first already resident, as verl's gradient accumulation does.
Output: ``bench/data/gpu_memory_h200.json`` (or ``--out``). ``bench/bench_memory.py`` compares the
estimator with it.

    # the recorded data (one H200, torch 2.11; verl trains with expandable segments on):
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python3 bench/calibrate_gpu_memory.py --out bench/data/gpu_memory_h200.json
    python3 bench/calibrate_gpu_memory.py --out bench/data/gpu_memory_h200_noexpand.json   # default allocator
    python3 bench/calibrate_gpu_memory.py --tiny --device cpu   # a smoke run of the code path, no numbers
    # the held-out machine (one H100 80GB HBM3, torch 2.11, 2026-12-02; 88 cases in 76 s):
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python3 bench/calibrate_gpu_memory.py --out bench/data/gpu_memory_h100.json

A case that does not fit the GPU is recorded as ``"error": "out of memory"`` and the run goes on.

The model itself is ``bench/qwen2_torch.py``. A full run takes about 90 s on an H200.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import gc
import json
import math
import os
import sys
import time
from pathlib import Path

import torch

from qwen2_torch import _GQA, Qwen2, param_count  # bench/ is on sys.path when this script runs

GIB = 1024**3
# Shapes from the models' config.json (../shared/reference/gpu-memory.md §4.3).
SHAPES = {
    "qwen2.5-0.5b": dict(hidden=896, inter=4864, layers=24, heads=14, kv_heads=2, head_dim=64, vocab=151936, tie=True),
    "qwen2.5-1.5b": dict(hidden=1536, inter=8960, layers=28, heads=12, kv_heads=2, head_dim=128, vocab=151936, tie=True),
    # DeepSeek-R1-Distill-Qwen-1.5B: the 1.5B shape with untied embeddings (a separate lm_head)
    "qwen2-1.5b-untied": dict(hidden=1536, inter=8960, layers=28, heads=12, kv_heads=2, head_dim=128, vocab=151936,
                              tie=False),
    "qwen2.5-3b": dict(hidden=2048, inter=11008, layers=36, heads=16, kv_heads=2, head_dim=128, vocab=151936, tie=True),
    # Qwen2.5-7B's layer and vocabulary (untied, 152064) with 4 of its 28 layers: a 7B-sized layer that fits
    # with fp32 AdamW states on one GPU
    "qwen2.5-7b-4layers": dict(hidden=3584, inter=18944, layers=4, heads=28, kv_heads=4, head_dim=128, vocab=152064,
                               tie=False),
}
TINY = dict(hidden=64, inter=128, layers=2, heads=4, kv_heads=2, head_dim=16, vocab=1000, tie=True)
SEQ_LEN = 1024  # tokens per sample; T tokens per micro-batch = T / SEQ_LEN samples


# ------------------------------------------------------------------------------------------------
# Log-probs and entropy, as verl computes them


class FlashLikeLogprob(torch.autograd.Function):
    """log p(label) with flash-attn's memory behaviour: an fp32 logsumexp per row in the forward, and the
    gradient written in place into the logits in the backward (``inplace_backward=True`` in verl)."""

    # rows per fp32 chunk: flash-attn's kernel keeps no such temporaries; 128 rows x 152k x 4 B = 78 MB each
    CHUNK = 128

    @staticmethod
    def forward(ctx, logits, labels):
        lse = torch.empty(logits.shape[0], device=logits.device, dtype=torch.float32)
        for i in range(0, logits.shape[0], FlashLikeLogprob.CHUNK):
            lse[i:i + FlashLikeLogprob.CHUNK] = torch.logsumexp(logits[i:i + FlashLikeLogprob.CHUNK].float(), dim=-1)
        picked = logits.gather(-1, labels[:, None]).squeeze(-1).float()
        ctx.save_for_backward(logits, labels, lse)
        return picked - lse

    @staticmethod
    def backward(ctx, grad):
        logits, labels, lse = ctx.saved_tensors
        buf = logits.data  # written in place without a version bump, as flash-attn's Triton kernel does
        for i in range(0, buf.shape[0], FlashLikeLogprob.CHUNK):
            rows = slice(i, i + FlashLikeLogprob.CHUNK)
            p = torch.exp(buf[rows].float() - lse[rows, None])
            buf[rows] = (-p * grad[rows, None]).to(buf.dtype)
        buf.scatter_add_(-1, labels[:, None], grad[:, None].to(buf.dtype))
        return buf, None


def entropy_from_logits(logits):
    """verl.utils.torch_functional.entropy_from_logits, verbatim."""
    pd = torch.nn.functional.softmax(logits, dim=-1)
    return torch.logsumexp(logits, dim=-1) - torch.sum(pd * logits, dim=-1)


_COMPILED = {}


def compiled_entropy(logits):
    if "fn" not in _COMPILED:
        _COMPILED["fn"] = torch.compile(entropy_from_logits, dynamic=True)
    return _COMPILED["fn"](logits)


# ------------------------------------------------------------------------------------------------
# Measuring


class Meter:
    def __init__(self, device: str):
        self.cuda = device == "cuda"
        self.nvml = None
        if self.cuda:
            try:
                import pynvml

                pynvml.nvmlInit()
                self.nvml = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
                self._pynvml = pynvml
            except Exception as exc:  # noqa: BLE001 - NVML is a bonus column
                print(f"no NVML: {exc}", file=sys.stderr)

    def nvml_used(self) -> int | None:
        if self.nvml is None:
            return None
        return int(self._pynvml.nvmlDeviceGetMemoryInfo(self.nvml).used)

    def nvml_total(self) -> int | None:
        if self.nvml is None:
            return None
        return int(self._pynvml.nvmlDeviceGetMemoryInfo(self.nvml).total)

    def start(self) -> dict:
        if not self.cuda:
            return {"resident": 0}
        torch.cuda.synchronize()
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        return {"resident": torch.cuda.memory_allocated(), "reserved_before": torch.cuda.memory_reserved()}

    def stop(self, before: dict) -> dict:
        if not self.cuda:
            return {**before, "peak_allocated": 0, "peak_reserved": 0, "nvml_used": None}
        torch.cuda.synchronize()
        return {**before, "peak_allocated": torch.cuda.max_memory_allocated(),
                "peak_reserved": torch.cuda.max_memory_reserved(), "nvml_used": self.nvml_used(),
                "allocated_after": torch.cuda.memory_allocated()}


def build(shape: dict, device: str):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    with torch.device(device):
        model = Qwen2(shape).to(torch.float32)
    mesh = init_device_mesh(device, (1,))
    mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32, cast_forward_inputs=True)
    kwargs = {"mesh": mesh, "mp_policy": mp, "reshard_after_forward": True}
    for layer in model.layers:
        fully_shard(layer, **kwargs)
    if not shape["tie"]:
        fully_shard(model.embed_tokens, **kwargs)
        fully_shard(model.lm_head, **kwargs)
    fully_shard(model, **kwargs)
    optim = torch.optim.AdamW(model.parameters(), lr=1e-6, betas=(0.9, 0.999), weight_decay=0.01)
    return model, optim


def batch(tokens: int, vocab: int, device: str, seq_len: int):
    n = max(1, tokens // seq_len)
    ids = torch.randint(0, vocab, (n, seq_len), device=device)
    return ids, torch.roll(ids, -1, dims=1).reshape(-1)


def autocast(device: str):
    return torch.autocast(device_type=device, dtype=torch.bfloat16)


def micro_step(model, ids, labels, device: str, entropy: str = "none"):
    with autocast(device):
        logits = model(ids)
    logits = logits.reshape(-1, logits.shape[-1])
    logp = FlashLikeLogprob.apply(logits, labels)
    loss = -logp.mean()
    if entropy != "none":
        fn = compiled_entropy if entropy == "compiled" else entropy_from_logits
        loss = loss - 0.001 * fn(logits).mean()
    loss.backward()


def update_case(model, optim, meter, shape, device, tokens, gc_on, seq_len, micro=2, entropy="none") -> list[dict]:
    """One optimizer step of ``micro`` micro-batches; the fwd+bwd peak and the optimizer-step peak apart."""
    model.train()
    model.gradient_checkpointing = gc_on
    optim.zero_grad(set_to_none=True)
    before = meter.start()
    for _ in range(micro):
        ids, labels = batch(tokens, shape["vocab"], device, seq_len)
        micro_step(model, ids, labels, device, entropy=entropy)
    fwd = meter.stop(before)
    before = meter.start()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optim.step()
    optim.zero_grad(set_to_none=True)
    step = meter.stop(before)
    common = {"tokens": tokens, "gradient_checkpointing": gc_on, "micro_batches": micro, "entropy": entropy != "none",
              "entropy_mode": entropy, "seq_len": seq_len}
    return [{"phase": "update_fwd_bwd", **common, **fwd}, {"phase": "optimizer_step", **common, **step}]


def logprob_case(model, meter, shape, device, tokens, seq_len, entropy: str) -> dict:
    """A forward-only pass: log-probs of every token, and the entropy (``eager``/``compiled``) as the
    old-log-prob pass computes it, or none (``none``: the reference model's pass)."""
    model.eval()
    before = meter.start()
    error = None
    with torch.no_grad():
        ids, labels = batch(tokens, shape["vocab"], device, seq_len)
        with autocast(device):
            logits = model(ids)
        logits = logits.reshape(-1, logits.shape[-1])
        logp = FlashLikeLogprob.apply(logits, labels)
        try:
            ent = {"none": lambda x: None, "eager": entropy_from_logits, "compiled": compiled_entropy}[entropy](logits)
        except Exception as exc:  # noqa: BLE001 - torch.compile may be unable to build here: record why
            ent, error = None, f"{type(exc).__name__}: {str(exc)[:200]}"
        del logp, ent, logits
    out = meter.stop(before)
    return {"phase": "logprob_fwd", "tokens": tokens, "entropy": entropy != "none", "entropy_mode": entropy,
            "seq_len": seq_len, "error": error, **out}


def kv_case(meter, shape, device, tokens: int, block: int = 16) -> dict:
    """A paged KV cache in bf16 as vLLM lays it out (per layer: 2 x blocks x block x kv_heads x head_dim)."""
    before = meter.start()
    blocks = math.ceil(tokens / block)
    caches = [torch.empty((2, blocks, block, shape["kv_heads"], shape["head_dim"]), dtype=torch.bfloat16,
                          device=device) for _ in range(shape["layers"])]
    out = meter.stop(before)
    used = (out["peak_allocated"] - out["resident"]) if device == "cuda" else 0
    del caches
    return {"phase": "kv_cache", "tokens": blocks * block, "bytes_per_token": used / (blocks * block), **out}


def run_model(name: str, shape: dict, device: str, meter: Meter, plan: dict, seq_len: int) -> list[dict]:
    t0 = time.time()
    model, optim = build(shape, device)
    P = param_count(shape)
    head = {"model": name, "shape": shape, "params": P}
    rows = []
    resident = meter.start()
    rows.append({**head, "phase": "params_loaded", **meter.stop(resident)})
    # the first step creates AdamW's moments (lazy state), as in verl's first update_actor
    update_case(model, optim, meter, shape, device, plan["tokens"][0], True, seq_len, micro=1)
    resident = meter.start()
    rows.append({**head, "phase": "states_after_step", **meter.stop(resident)})
    for gc_on in (True, False):
        for tokens in plan["tokens"]:
            if not gc_on and tokens > plan.get("max_tokens_no_gc", 10**9):
                continue
            try:
                for row in update_case(model, optim, meter, shape, device, tokens, gc_on, seq_len):
                    rows.append({**head, **row})
            except torch.OutOfMemoryError:  # a smaller GPU than the plan was made for: record it, go on
                optim.zero_grad(set_to_none=True)
                model.zero_grad(set_to_none=True)
                gc.collect()
                torch.cuda.empty_cache()
                rows.append({**head, "phase": "update_fwd_bwd", "tokens": tokens, "gradient_checkpointing": gc_on,
                             "error": "out of memory"})
                print(f"{name} gc={gc_on} T={tokens}: out of memory", flush=True)
                continue
            print(f"{name} gc={gc_on} T={tokens}: {rows[-2]['peak_allocated'] / GIB:.2f} GiB fwd+bwd, "
                  f"{rows[-1]['peak_allocated'] / GIB:.2f} GiB step", flush=True)
    if plan.get("entropy_update"):
        for mode in ("eager", "compiled") if device == "cuda" else ("eager",):
            try:
                for row in update_case(model, optim, meter, shape, device, plan["entropy_update"], True, seq_len,
                                       entropy=mode):
                    rows.append({**head, **row})
            except Exception as exc:  # noqa: BLE001 - torch.compile may be unable to build here: record why
                rows.append({**head, "phase": "update_fwd_bwd", "entropy_mode": mode, "error": str(exc)[:200]})
    for tokens in plan.get("logprob_tokens", ()):
        for mode in ("none", "eager", "compiled") if device == "cuda" else ("none", "eager"):
            try:
                rows.append({**head, **logprob_case(model, meter, shape, device, tokens, seq_len, mode)})
            except torch.OutOfMemoryError:
                gc.collect()
                torch.cuda.empty_cache()
                rows.append({**head, "phase": "logprob_fwd", "tokens": tokens, "entropy_mode": mode,
                             "error": "out of memory"})
    del model, optim
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
    rows.append({**head, **kv_case(meter, shape, device, plan.get("kv_tokens", 65536))})
    print(f"{name}: {len(rows)} rows in {time.time() - t0:.0f} s", flush=True)
    return rows


PLANS = {
    "qwen2.5-0.5b": {"tokens": [2048, 8192, 16384, 32768], "logprob_tokens": [8192, 16384], "entropy_update": 8192,
                     "max_tokens_no_gc": 16384},
    "qwen2.5-1.5b": {"tokens": [2048, 8192, 16384, 32768], "logprob_tokens": [16384], "entropy_update": 8192,
                     "max_tokens_no_gc": 16384},
    "qwen2-1.5b-untied": {"tokens": [4096, 16384], "logprob_tokens": [16384]},
    "qwen2.5-3b": {"tokens": [4096, 16384], "max_tokens_no_gc": 8192},
    "qwen2.5-7b-4layers": {"tokens": [4096, 16384], "logprob_tokens": [16384]},
}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(Path(__file__).parent / "data" / "gpu_memory_h200.json"))
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--tiny", action="store_true", help="tiny shapes: check the code path, not the GPU")
    p.add_argument("--models", nargs="*", default=list(PLANS), help=f"subset of {', '.join(PLANS)}")
    args = p.parse_args(argv)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    import torch.distributed as dist

    backend = "nccl" if args.device == "cuda" else "gloo"
    dist.init_process_group(backend, rank=0, world_size=1)
    if args.device == "cuda":
        torch.cuda.set_device(0)
    meter = Meter(args.device)
    nvml_idle = meter.nvml_used()
    if args.device == "cuda":
        torch.zeros(1, device="cuda")
    context = {"nvml_used_before_cuda_init": nvml_idle, "nvml_used_after_cuda_init": meter.nvml_used()}
    rows: list[dict] = []
    t0 = time.time()
    for name in args.models:
        shape = TINY if args.tiny else SHAPES[name]
        plan = {"tokens": [256, 512], "logprob_tokens": [512], "entropy_update": 256, "kv_tokens": 1024} if args.tiny \
            else PLANS[name]
        seq_len = 128 if args.tiny else SEQ_LEN
        rows += run_model(name + ("-tiny" if args.tiny else ""), shape, args.device, meter, plan, seq_len)
    doc = {
        "what": "peak GPU memory of verl-like actor passes (FSDP2 on one rank, fp32 master weights, AdamW, bf16 "
                "compute), written by bench/calibrate_gpu_memory.py",
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name(0) if args.device == "cuda" else "cpu",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nvml_total_bytes": meter.nvml_total(),
        "cuda_total_bytes": torch.cuda.get_device_properties(0).total_memory if args.device == "cuda" else None,
        "sdpa_gqa": _GQA["mode"],
        "allocator_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
        "context": context,
        "wall_s": round(time.time() - t0, 1),
        "cases": rows,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(args.out).with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(args.out)
    print(f"wrote {args.out}: {len(rows)} cases in {doc['wall_s']} s")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
