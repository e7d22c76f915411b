"""The estimate's Megatron terms against megatron-core's own formulas: runs megatron-core 0.19.2's
megatron/training/theoretical_memory_usage.py (``compute_weight_and_optimizer_memory`` and
``compute_activation_memory``, the file as shipped, its two helpers from ``.utils`` stubbed) beside
``wizard.core.memory.megatron`` and prints both.

megatron-core needs TransformerEngine to build a model, but this file is plain arithmetic on an ``args``
namespace, so it runs here. Get it with

    cd /tmp && python3 -m pip download --no-deps megatron-core==0.19.2 --python-version 3.12 \
        --platform manylinux_2_28_x86_64 --only-binary=:all: && unzip -q megatron_core-0.19.2-*.whl -d mcore
    .venv/bin/python bench/bench_megatron_terms.py /tmp/mcore/megatron/training

Compared, on the first pipeline stage (megatron's "most loaded shard"; its formula spreads the final norm over the
stages where the estimate puts it on the last, a few thousand parameters of billions): bf16 params, fp32 gradients,
fp32 main params and Adam over DP (or EP-DP for routed experts), with and without the distributed optimizer; and,
for dense models with PP > 1, the saved activations (sequence parallel, selective recompute, 1F1B and interleaved
schedules). Not compared, because megatron-core's formula has no term for them: MoE activations (its formula
counts the FFN once, with no top-k experts and no routed token copies), biases and q/k norms (the shapes below
have none), PP = 1 activations (the estimate counts the output layer's logits as their own term).
It prints one line per case and "mismatches: N"; exit status 1 when any term differs by more than 1e-5.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import types
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wizard.core.memory.megatron_formulas import activations, stage, states  # noqa: E402
from wizard.core.memory.megatron_layout import MegatronConfig  # noqa: E402
from wizard.core.models.facts import ModelFacts  # noqa: E402

TOLERANCE = 1e-5


def dense(name: str, h: int, ffn: int, layers: int, heads: int, kv: int, vocab: int, head_dim: int = 128) -> ModelFacts:
    return ModelFacts(source="config", name=name, model_type="llama", hidden_size=h, intermediate_size=ffn,
                      num_layers=layers, num_attention_heads=heads, num_kv_heads=kv, head_dim=head_dim,
                      vocab_size=vocab)


# public shapes (config.json of each), without biases and q/k norms, which megatron-core's formula does not count
MODELS = [
    dense("Qwen2.5-7B shape", 3584, 18944, 28, 28, 4, 152064),
    dense("Qwen2.5-32B shape", 5120, 27648, 64, 40, 8, 152064),
    dense("Llama-3.1-70B shape", 8192, 28672, 80, 64, 8, 128256),
    ModelFacts(source="config", name="Qwen3-30B-A3B shape", model_type="qwen3_moe", hidden_size=2048,
               intermediate_size=6144, num_layers=48, num_attention_heads=32, num_kv_heads=4, head_dim=128,
               vocab_size=151936, num_experts=128, num_experts_per_tok=8, moe_intermediate_size=768),
]


def load_megatron(training: Path) -> types.ModuleType:
    """theoretical_memory_usage.py as shipped, with ``from .utils import is_hybrid_model, print_rank_0`` served
    by stubs (utils.py imports torch and megatron.core)."""
    pkg = types.ModuleType("mtraining")
    pkg.__path__ = [str(training)]
    utils = types.ModuleType("mtraining.utils")
    utils.is_hybrid_model = lambda args: False
    utils.print_rank_0 = print
    sys.modules.update({"mtraining": pkg, "mtraining.utils": utils})
    mod = types.ModuleType("mtraining.theoretical_memory_usage")
    mod.__package__ = "mtraining"
    src = (training / "theoretical_memory_usage.py").read_text()
    exec(compile(src, str(training / "theoretical_memory_usage.py"), "exec"), mod.__dict__)  # noqa: S102
    return mod


def megatron_args(f: ModelFacts, m: MegatronConfig, seq: int) -> SimpleNamespace:
    moe = bool(f.num_experts)
    return SimpleNamespace(
        hidden_size=f.hidden_size, kv_channels=f.head_dim, num_attention_heads=f.num_attention_heads,
        group_query_attention=f.num_kv_heads != f.num_attention_heads, num_query_groups=f.num_kv_heads,
        ffn_hidden_size=f.intermediate_size, padded_vocab_size=f.vocab_size, num_layers=f.num_layers,
        num_experts=f.num_experts if moe else None, moe_layer_freq=1, moe_ffn_hidden_size=f.moe_intermediate_size,
        moe_router_topk=f.num_experts_per_tok or 1, moe_shared_expert_intermediate_size=None, moe_latent_size=None,
        mtp_num_layers=None, swiglu=True, normalization="RMSNorm", multi_latent_attention=False,
        q_lora_rank=None, kv_lora_rank=None, qk_head_dim=None, qk_pos_emb_head_dim=None, v_head_dim=None,
        add_bias_linear=False, untie_embeddings_and_output_weights=not f.tie_word_embeddings,
        tensor_model_parallel_size=m.tp, pipeline_model_parallel_size=m.pp,
        virtual_pipeline_model_parallel_size=m.vpp, expert_model_parallel_size=m.ep,
        expert_tensor_parallel_size=m.etp, data_parallel_size=m.dp, world_size=m.world,
        use_distributed_optimizer=m.dist_opt, sequence_parallel=m.sp, recompute_granularity="selective",
        seq_length=seq, micro_batch_size=1)


def cases():
    for f in MODELS:
        moe = bool(f.num_experts)
        for tp, pp, dp, dist in itertools.product((1, 2, 4, 8), (1, 2, 4), (1, 2, 4), (True, False)):
            if f.num_layers % pp or f.num_attention_heads % tp:
                continue
            world = tp * pp * dp
            for ep in ((1, 2, 4, 8) if moe else (1,)):
                if moe and (world // pp) % ep:
                    continue
                yield f, MegatronConfig(world=world, tp=tp, pp=pp, ep=ep, etp=1, dist_opt=dist), None
        if not moe:
            for pp, vpp in ((2, 2), (4, 2), (4, 7) if f.num_layers % 28 == 0 else (4, 4)):
                if f.num_layers % (pp * vpp) == 0:
                    yield f, MegatronConfig(world=8 * pp, tp=8 if f.hidden_size > 4096 else 4, pp=pp, vpp=vpp), None
            for micro in (1, 3, 64):
                yield f, MegatronConfig(world=16, tp=4, pp=4), micro


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("training", type=Path, help="megatron/training of the unzipped megatron-core wheel")
    args = ap.parse_args()
    if not (args.training / "theoretical_memory_usage.py").is_file():
        print(f"no theoretical_memory_usage.py in {args.training} (see this script's docstring for how to get it)")
        return 2
    mc = load_megatron(args.training)
    seq = 4096
    n = bad = 0
    for f, m, micro in cases():
        first = stage(f, m, 0)
        ours = states(first, m).total
        theirs = mc.compute_weight_and_optimizer_memory(megatron_args(f, m, seq))
        rows = [("weights+optimizer", ours, theirs)]
        if not f.num_experts and m.pp > 1:
            mb = micro if micro is not None else 64
            acts, _ = activations(f, seq, m, first, mb)
            rows.append(("activations", acts, mc.compute_activation_memory(megatron_args(f, m, seq), mb)))
        for what, a, b in rows:
            n += 1
            off = abs(a - b) / b
            bad += off > TOLERANCE
            layout = (f"TP{m.tp} PP{m.pp}" + (f" VPP{m.vpp}" if m.vpp else "") + f" DP{m.dp}"
                      + (f" EP{m.ep}" if m.ep > 1 else "") + ("" if m.dist_opt else " no-dist-opt")
                      + (f" {micro} micro" if micro else ""))
            print(f"{'DIFF' if off > TOLERANCE else 'ok  '} {f.name:22} {layout:32} {what:18} "
                  f"estimate {a / 2**30:9.3f} GiB  megatron-core {b / 2**30:9.3f} GiB  ({off:.1e})")
    print(f"cases: {n}, mismatches: {bad} (tolerance {TOLERANCE:g} relative)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
