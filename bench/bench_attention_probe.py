"""The packed SDPA mask's cost as measured on the lent GPU (bench/real/attn_probe.py; raw lines in
bench/data/attn_probe/): per shape and micro-batch size T, the forward's (and forward + backward's) extra seconds
with verl's packed input over the same tokens as separate rows, per token and layer, and the rate that makes of the
attention FLOPs the step time's ``attention over the SDPA mask`` term counts (4 x T x heads x head_dim per token and
layer, a forward; 3 x that for a forward and backward).

    .venv/bin/python bench/bench_attention_probe.py [FILE.jsonl ...]
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "attn_probe"


def rows(paths: list[Path]) -> list[dict]:
    out = []
    for path in paths:
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                row["file"] = path.name
                out.append(row)
    return out


def per_layer(rows_: list[dict], kind: str) -> list[dict]:
    """The extra seconds of the packed input per layer: (3-layer extra - 1-layer extra) / 2, per (file, model, T)."""
    by = {}
    for r in rows_:
        if r.get("kind") == kind and "packed_s" in r and "batched_s" in r:
            by.setdefault((r["file"], r["model"], r["T"]), {})[r["layers"]] = r
    out = []
    for (file, model, T), layers in sorted(by.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2])):
        one = layers.get(1)
        three = layers.get(3)
        extra1 = one["packed_s"] - one["batched_s"] if one else None
        if three:
            layer = ((three["packed_s"] - three["batched_s"]) - extra1) / 2 if one else (three["packed_s"] - three["batched_s"]) / 3
            fixed = extra1 - layer if one else None
        else:
            layer, fixed = extra1, None
        r = one or three
        width = r["heads"] * r["head_dim"]
        passes = 3 if kind == "backward" else 1
        flops = passes * 4 * T * T * width  # one layer, the whole micro-batch
        out.append({"file": file, "model": model, "T": T, "width": width, "layer_s": layer, "fixed_s": fixed,
                    "us_per_token_layer": layer / T * 1e6 if layer else None,
                    "tflops": flops / layer / 1e12 if layer and layer > 0 else None})
    return out


def main(argv: list[str]) -> int:
    paths = [Path(a) for a in argv[1:]] or sorted(DATA.glob("*.jsonl"))
    if not paths:
        print(f"no probe data ({DATA})")
        return 2
    data = rows(paths)
    for env in (r for r in data if r.get("kind") == "env"):
        print(f"{env['file']}: {env['device']}, torch {env['torch']}, transformers {env['transformers']}")
    for kind in ("forward", "backward"):
        table = per_layer(data, kind)
        if not table:
            continue
        print(f"\n{kind}: the packed input's extra cost per layer (3 layers - 1 layer) / 2, against the mask's FLOPs")
        print(f"{'model':6} {'T':>7} {'width':>6} {'s/layer':>9} {'us/token/layer':>15} {'TFLOP/s':>8} {'per forward s':>13}")
        for r in table:
            fixed = "" if r["fixed_s"] is None else f"{r['fixed_s']:13.4f}"
            print(f"{r['model']:6} {r['T']:7,} {r['width']:6} {r['layer_s']:9.4f} {r['us_per_token_layer'] or 0:15.3f} "
                  f"{r['tflops'] or 0:8.0f} {fixed}")
        rates = [r["tflops"] for r in table if r["tflops"] and r["T"] >= 15000]
        if rates:
            print(f"{kind}: the mask's attention at T >= 15,000: median {statistics.median(rates):.0f} TFLOP/s "
                  f"(range {min(rates):.0f}-{max(rates):.0f}, {len(rates)} shapes x sizes)")
    full = [r for r in data if r.get("kind") in ("full_forward", "full_fwd_bwd")]
    if full:
        print("\nthe whole model (its 28 layers and 151,936-token head; the log-probs), per token:")
        for r in full:
            what = "forward + log-probs" if r["kind"] == "full_forward" else \
                f"forward + backward{' (checkpointing)' if r.get('gc') else ''}"
            how = "packed row (one mask)" if r["packed"] else "separate rows"
            print(f"  {r['full_model']:22} {what:30} T {r['T']:6,} {how:22} "
                  + ("out of memory" if r.get("oom") else f"{r['us_per_token']:6.2f} us"))
    for k in (r for r in data if r.get("kind") == "kernels"):
        print(f"\nkernels of the packed forward ({k['model']}, T {k['T']:,}):")
        for name, ms in k["top"][:6]:
            print(f"  {ms:9.3f} ms  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
