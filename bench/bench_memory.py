"""The memory estimator's error against real GPU measurements (bench/data/gpu_memory_h200.json).

For every measured case (actor update fwd+bwd, optimizer step, forward-only log-prob passes) it builds the same
setting as verl keys (one GPU, FSDP world 1, the case's token count as a dynamic-batch budget, gradient
checkpointing and entropy as measured), runs the estimator's own phase code (``wizard.core.memory.estimate``), and
compares its torch allocations with ``max_memory_allocated``, and its process total (allocations + allocator
slack + CUDA context + what the driver keeps) with NVML's used memory. It prints the error of the constants
the reference proposed before the measurement (``REFERENCE_CONSTANTS``) and of the tuned ones (``CONSTANTS``).

    .venv/bin/python bench/bench_memory.py [--data bench/data/gpu_memory_h200.json] [--json]

The constants were tuned on the H200 data. ``bench/data/gpu_memory_h100.json`` is the same script run later on
a lent H100 80GB HBM3 (same torch 2.11): another machine the constants never saw (the shapes are the same).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wizard.core.memory.trainer import Trainer, slack  # noqa: E402  (the estimator's own phase code)
from wizard.core.memory.config import complete_values, read_config  # noqa: E402
from wizard.core.memory.terms import CONSTANTS, GIB, REFERENCE_CONSTANTS, MemoryConstants  # noqa: E402
from wizard.core.models.facts import ModelFacts  # noqa: E402

TORCH_EXCLUDE = ("trainer_context", "allocator", "engine", "graphs", "kv")


def facts_of(case: dict) -> ModelFacts:
    s = case["shape"]
    return ModelFacts(source="config", name=case["model"], model_type="qwen2", hidden_size=s["hidden"],
                      intermediate_size=s["inter"], num_layers=s["layers"], num_attention_heads=s["heads"],
                      num_kv_heads=s["kv_heads"], head_dim=s["head_dim"], vocab_size=s["vocab"],
                      tie_word_embeddings=s["tie"], attention_bias=True)


def values_of(case: dict) -> dict:
    """The verl keys that reproduce the measured setting on one GPU."""
    T = case["tokens"]
    mode = case.get("entropy_mode") or "none"
    return {
        "trainer.n_gpus_per_node": 1, "trainer.nnodes": 1,
        "actor_rollout_ref.actor.use_dynamic_bsz": True, "actor_rollout_ref.actor.ppo_max_token_len_per_gpu": T,
        "actor_rollout_ref.rollout.log_prob_use_dynamic_bsz": True,
        "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu": T,
        "data.max_prompt_length": 512, "data.max_response_length": 512,
        "actor_rollout_ref.model.enable_gradient_checkpointing": bool(case.get("gradient_checkpointing", True)),
        "actor_rollout_ref.actor.entropy_coeff": 0.001 if case.get("entropy") and case["phase"] != "logprob_fwd" else 0,
        "actor_rollout_ref.actor.fsdp_config.use_torch_compile": mode != "eager",
        "actor_rollout_ref.rollout.tensor_model_parallel_size": 1,
    }


def _variant():
    """verl's FSDP config variant: the defaults of every key a case does not set (the schema snapshot's)."""
    from wizard.adapters.files.resources import load_schema

    return load_schema().variant(None)


IDLE_USED = 1_197_342_720  # NVML used before CUDA init on the machine of gpu_memory_h200.json (its "context")


def estimate(case: dict, c: MemoryConstants, idle_used: int = IDLE_USED) -> tuple[float, float] | None:
    """(torch allocations, process total as NVML sees it) the estimator gives for one measured case."""
    cfg = read_config(complete_values(values_of(case), _variant()))
    tr = Trainer(cfg, facts_of(case), None, c)
    phase = case["phase"]
    states, backward, step, _ = tr.update_parts()
    if phase == "update_fwd_bwd":
        terms = states + backward
    elif phase == "optimizer_step":
        terms = states + step
    elif phase == "logprob_fwd":
        mode = case.get("entropy_mode") or "none"
        terms = tr.forward(cfg.logprob_tokens, mode, False)
    else:
        return None
    torch_bytes = sum(t.bytes for t in terms if not t.key.startswith(TORCH_EXCLUDE))
    cached = sum(t.bytes for t in slack(terms, tr.f, c) if t.key == "allocator")
    total = torch_bytes + cached + c.cuda_context + idle_used  # that machine's idle NVML used, not the estimate's
    return torch_bytes, total


def rows(doc: dict) -> list[dict]:
    out = []
    for case in doc["cases"]:
        if case["phase"] not in ("update_fwd_bwd", "optimizer_step", "logprob_fwd") or case.get("error"):
            continue
        idle = (doc.get("context") or {}).get("nvml_used_before_cuda_init", IDLE_USED)
        before, after = estimate(case, REFERENCE_CONSTANTS, idle), estimate(case, CONSTANTS, idle)
        measured, nvml = case["peak_allocated"], case.get("nvml_used")
        out.append({
            "model": case["model"], "phase": case["phase"], "tokens": case.get("tokens"),
            "gc": case.get("gradient_checkpointing"), "entropy": case.get("entropy_mode") or "none",
            "measured_gib": measured / GIB, "before_gib": before[0] / GIB, "after_gib": after[0] / GIB,
            "before_err": (before[0] - measured) / measured, "after_err": (after[0] - measured) / measured,
            "nvml_gib": None if nvml is None else nvml / GIB,
            "after_nvml_err": None if nvml is None else (after[1] - nvml) / nvml,
        })
    return out


def summary(table: list[dict], key: str) -> str:
    errs = [abs(r[key]) for r in table if r[key] is not None]
    under = sum(1 for r in table if r[key] is not None and r[key] < -0.05)
    return (f"mean |error| {100 * statistics.mean(errs):.1f} %, max {100 * max(errs):.1f} %, "
            f"under-estimates by more than 5 %: {under} of {len(errs)}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(Path(__file__).parent / "data" / "gpu_memory_h200.json"))
    p.add_argument("--json", action="store_true", help="print the table as JSON lines")
    args = p.parse_args(argv)
    doc = json.loads(Path(args.data).read_text())
    table = rows(doc)
    if args.json:
        for r in table:
            print(json.dumps(r))
        return 0
    print(f"{doc['device']}, torch {doc['torch']}, {doc.get('allocator_conf') or 'default allocator'}, {doc['date']}")
    print(f"{'model':20} {'phase':15} {'tokens':>6} {'gc':>5} {'entropy':>8} {'measured':>9} {'before':>8} {'err':>7} "
          f"{'after':>8} {'err':>7} {'nvml':>7} {'err':>7}")
    for r in table:
        nv = f"{r['nvml_gib']:7.2f} {100 * r['after_nvml_err']:+6.1f}%" if r["nvml_gib"] is not None else ""
        print(f"{r['model']:20} {r['phase']:15} {r['tokens']:>6} {str(r['gc']):>5} {r['entropy']:>8} "
              f"{r['measured_gib']:9.2f} {r['before_gib']:8.2f} {100 * r['before_err']:+6.1f}% "
              f"{r['after_gib']:8.2f} {100 * r['after_err']:+6.1f}% {nv}")
    print(f"before tuning (reference constants), torch allocations: {summary(table, 'before_err')}")
    print(f"after tuning (CONSTANTS), torch allocations:            {summary(table, 'after_err')}")
    print(f"after tuning, process total vs NVML used:               {summary(table, 'after_nvml_err')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
