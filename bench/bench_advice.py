"""What the advisor costs: one search per question a user brings (the plan assessed first, as ``plan`` does), the
states it estimated and the alternatives it found.

    .venv/bin/python bench/bench_advice.py [--runs 3]

The search runs in ``plan``, in ``check`` when a memory finding needs a fix, and on a worker thread behind the
window's Make it fit (never on an edit: the window's check passes ``advise=False``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

QUESTIONS = [  # (question, preset, GPUs, --set words)
    ("7B GRPO on one 80 GB GPU", "grpo-1gpu-smoke", "1xH100-80GB", ["actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct"]),
    ("7B GRPO on one 24 GB GPU", "grpo-1gpu-smoke", "1xRTX-4090-24GB",
     ["actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct"]),
    ("the 8-GPU preset on 8 x 24 GB", "grpo-8gpu", "8xRTX-4090-24GB", []),
    ("the 8-GPU preset on 8 x H100 (fits: faster?)", "grpo-8gpu", "8xH100-80GB", []),
    ("14B on one H200", "grpo-1gpu-smoke", "1xH200-141GB", ["actor_rollout_ref.model.path=Qwen/Qwen2.5-14B-Instruct"]),
    ("14B on one H100, 125 GiB of host RAM", "grpo-1gpu-smoke", "1xH100-80GB",
     ["actor_rollout_ref.model.path=Qwen/Qwen2.5-14B-Instruct"]),
    ("14B LoRA on one H200, 125 GiB of host RAM", "grpo-1gpu-smoke", "1xH200-141GB",
     ["actor_rollout_ref.model.path=Qwen/Qwen2.5-14B-Instruct", "actor_rollout_ref.model.lora_rank=32",
      "actor_rollout_ref.actor.strategy=fsdp2", "actor_rollout_ref.ref.strategy=fsdp2"]),
    ("72B LoRA on 8 x H100", "grpo-8gpu", "8xH100-80GB",
     ["actor_rollout_ref.model.path=Qwen/Qwen2.5-72B-Instruct", "actor_rollout_ref.model.lora_rank=32"]),
    ("the PPO preset (7B actor and critic) at 4,096 tokens on 8 x H100", "ppo-8gpu", "8xH100-80GB",
     ["data.max_prompt_length=1024", "data.max_response_length=3072"]),
    ("the 8-GPU preset with SGLang on 8 x H100", "grpo-8gpu", "8xH100-80GB", ["actor_rollout_ref.rollout.name=sglang"]),
    # a script (tests/data/megatron): Megatron's knobs, timed by its formulas
    ("32B Megatron TP 4 PP 2 on 2 x 8 H100", "tests/data/megatron/grpo_qwen2.5-32b_tp4_pp2.sh", "2x8xH100-80GB", []),
    ("Qwen3-30B-A3B Megatron EP 8 on 2 x 8 H100", "tests/data/megatron/grpo_qwen3-30b-a3b_ep8.sh", "2x8xH100-80GB", []),
    # Megatron where nothing of the model fits: the smaller models' seeds and the GPU count over TP and PP
    ("7B Megatron on one 24 GB GPU", "grpo-1gpu-smoke", "1xRTX-4090-24GB",
     ["model_engine=megatron", "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct"]),
    ("32B Megatron on 8 x 24 GB", "grpo-1gpu-smoke", "8xRTX-4090-24GB",
     ["model_engine=megatron", "trainer.n_gpus_per_node=8", "actor_rollout_ref.model.path=Qwen/Qwen2.5-32B-Instruct"]),
]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    args = p.parse_args(argv)
    from wizard.usecases.advising import plan_advice
    from wizard.usecases.assessment import assess_plan
    from wizard.usecases.hardware import machines_for, read_gpu_spec
    from wizard.usecases.plans import open_plan, preset_plan
    import wizard.core.memory.estimate as est

    for question, preset, spec, sets in QUESTIONS:
        gpus = read_gpu_spec(spec)
        plan = (open_plan(str(ROOT / preset), gpus=gpus)[0] if preset.endswith(".sh") else
                preset_plan(preset, gpus, sets))
        cluster = machines_for(gpus)
        if "GiB of host RAM" in question:  # the lent machines' RAM: what bounds LoRA's and offload's host copies
            ram = int(question.split(", ")[1].split()[0]) * 2**30  # a copy: machines_for remembers its clusters
            cluster = cluster.model_copy(update={"nodes": [n.model_copy(update={"memory_bytes": ram})
                                                            for n in cluster.nodes]})
        memory = assess_plan(plan, gpus=gpus, cluster=cluster, advise=False).memory
        calls = 0
        original = est.estimate_memory

        def counting(*a, **k):
            nonlocal calls
            calls += 1
            return original(*a, **k)

        times = []
        for _ in range(args.runs):
            calls = 0
            # every module that estimates a candidate, by the name it imported (state.py since the search's split)
            import wizard.core.advice.state as state
            estimating = [m for m in (est, state) if getattr(m, "estimate_memory", None) is original]
            assert estimating, "nothing to count: the advisor no longer calls estimate_memory by that name"
            for m in estimating:
                m.estimate_memory = counting
            t0 = time.perf_counter()
            advice = plan_advice(memory)
            times.append(time.perf_counter() - t0)
            for m in estimating:
                m.estimate_memory = original
        best = advice.best
        print(f"{question:46} {statistics.median(times) * 1000:7.0f} ms  {calls:4d} estimates  "
              f"{len(advice.alternatives)} alternatives; best: "
              f"{best.text if best else (advice.statement or 'none')[:70]}"
              + (f" ({best.step_seconds:.0f} s per step)" if best and best.step_seconds else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
