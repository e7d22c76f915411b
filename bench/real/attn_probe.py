"""What attention costs verl's trainer without flash-attn, measured on the lent GPU before the campaign (go.sh PROBE=1).

verl packs a micro-batch's sequences into one row (``use_remove_padding``) and passes ``attention_mask=None`` with
the packed ``position_ids`` (``workers/engine/fsdp/transformer_impl.py``); transformers' SDPA path then finds the
packed sequences and builds one (T x T) block-causal boolean mask for the whole micro-batch, which torch's attention
computes pair by pair. The step time's ``attention over the SDPA mask`` term says a token then costs 4 x T x heads x
head_dim FLOPs per layer. This probe times the same forward (and forward + backward) of Qwen2-shaped layers both ways:

- ``packed``: one row of T tokens, sequences of ``SEQ`` tokens, their position_ids restarting (verl's input);
- ``batched``: the same tokens as T / SEQ rows of SEQ tokens, no mask (causal within each row): the same linear
  work, attention only within each sequence.

Their difference per token, against T, model width and layer count, says whether the packed mask's cost grows as the
attention FLOPs say (with width x layers) or as something else, and at what rate. One JSON line per measurement.

    python3 attn_probe.py OUT.jsonl [--tiny]   (--tiny: small shapes on the CPU, a smoke test)
"""

from __future__ import annotations

import json
import statistics
import sys
import time

SEQ = 950  # tokens a sample had in the calibration runs (440 prompt + 512 response, about)
SHAPES = {  # name: (hidden, intermediate, heads, kv heads): Qwen2.5's, the most wanted first (a deadline may cut)
    "1.5b": (1536, 8960, 12, 2), "7b": (3584, 18944, 28, 4), "0.5b": (896, 4864, 14, 2), "3b": (2048, 11008, 16, 2),
}
FORWARD_T = (5700, 15200, 23400, 40000, 56000)  # tokens of a log-prob micro-batch: 6 x 950 ... 16 x 3,500
BACKWARD_T = (7600, 15200, 28000)  # an update's micro-batch: 8 x 950 ... 8 x 3,500


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1].startswith("-"):
        print(__doc__.strip().splitlines()[-1].strip())
        return 2
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tiny = "--tiny" in argv
    dev = "cpu" if tiny else "cuda"
    shapes = {"tiny": (64, 128, 4, 2)} if tiny else SHAPES
    seq = 16 if tiny else SEQ
    fwd_t, bwd_t = ((64, 128), (64,)) if tiny else (FORWARD_T, BACKWARD_T)
    deadline = time.time() + (60 if tiny else 150)
    out = open(argv[1], "w")

    def emit(row: dict) -> None:
        out.write(json.dumps(row) + "\n")
        out.flush()
        print(json.dumps(row), flush=True)

    def sync():
        if dev == "cuda":
            torch.cuda.synchronize()

    def timed(fn, reps: int = 3) -> float:
        fn()
        sync()
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            sync()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    def inputs(T: int, packed: bool):
        rows = max(1, T // seq)
        T = rows * seq
        ids = torch.randint(0, 1000, (1, T) if packed else (rows, seq), device=dev)
        if packed:
            pos = torch.arange(seq, device=dev).repeat(rows).unsqueeze(0)
        else:
            pos = torch.arange(seq, device=dev).unsqueeze(0).expand(rows, seq)
        return ids, pos, T

    emit({"kind": "env", "torch": torch.__version__, "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu",
          "transformers": __import__("transformers").__version__})
    for name, (hidden, inter, heads, kv) in shapes.items():
        for layers in (1, 3):
            if time.time() > deadline:
                emit({"kind": "stopped", "why": "deadline"})
                return 0
            cfg = Qwen2Config(vocab_size=1024, hidden_size=hidden, intermediate_size=inter, num_attention_heads=heads,
                              num_key_value_heads=kv, num_hidden_layers=layers, max_position_embeddings=65536)
            cfg._attn_implementation = "sdpa"
            model = Qwen2ForCausalLM(cfg).to(dev, torch.bfloat16)
            def measure(kind: str, T: int, call) -> None:
                """Time ``call(ids, pos)`` on the packed row and on separate rows of the same T tokens; one line."""
                row = {"kind": kind, "model": name, "layers": layers, "hidden": hidden, "heads": heads,
                       "head_dim": hidden // heads}
                try:
                    for packed in (True, False):
                        ids, pos, row["T"] = inputs(T, packed)
                        row["packed_s" if packed else "batched_s"] = round(timed(lambda: call(ids, pos)), 5)
                except torch.OutOfMemoryError:
                    row["oom"] = True
                model.zero_grad(set_to_none=True)
                if dev == "cuda":
                    torch.cuda.empty_cache()
                emit(row)

            def forward(ids, pos):
                with torch.no_grad():
                    model(input_ids=ids, position_ids=pos, attention_mask=None, use_cache=False)

            def forward_backward(ids, pos):
                model(input_ids=ids, position_ids=pos, attention_mask=None, use_cache=False).logits.float().mean().backward()

            for T in fwd_t:
                measure("forward", T, forward)
            if name in ("1.5b", "tiny") and layers == 1:
                for T in bwd_t:
                    measure("backward", T, forward_backward)
                # which kernels the packed forward runs (the SDPA backend torch chose for the boolean mask)
                ids, pos, n = inputs(fwd_t[1], True)
                acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if dev == "cuda" else [])
                with torch.no_grad(), torch.profiler.profile(activities=acts) as prof:
                    model(input_ids=ids, position_ids=pos, attention_mask=None, use_cache=False)
                    sync()
                key = "self_device_time_total" if dev == "cuda" else "self_cpu_time_total"
                top = sorted(prof.key_averages(), key=lambda e: -getattr(e, key, 0))[:10]
                emit({"kind": "kernels", "model": name, "T": n,
                      "top": [[e.key[:120], round(getattr(e, key, 0) / 1e3, 3)] for e in top]})
            model = None  # freed before the next shape is built
            if dev == "cuda":
                torch.cuda.empty_cache()
    emit({"kind": "done"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
