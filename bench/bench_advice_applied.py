"""Whether the advisor's alternatives are where it would stop: each fitting alternative of each question of
``bench_advice.py`` is applied (its overrides set on the plan, as Apply and ``check --fix`` do) and the plan it
becomes is advised again. Printed: the alternative's predicted step, the fastest change of tuning offered once it
is applied, and by how much that is faster (0 % where nothing faster is offered). A search that stops where a user
applying its advice would not shows here as a large share.

    .venv/bin/python bench/bench_advice_applied.py [--first] [--sweep]

``--sweep``: instead, a grid a user could bring: Qwen2.5 0.5B-32B x five GPU sets (one 24 GB, one 80 GB, 2 x 40 GB,
4 x 48 GB, 8 x 80 GB) x three presets (GRPO on one GPU, GRPO on 8, PPO with a critic of the actor's size): 90
questions, about 7 minutes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_advice import QUESTIONS  # noqa: E402


SWEEP = [(f"{m} on {g}, {p}", p, g, [f"actor_rollout_ref.model.path=Qwen/Qwen2.5-{m}-Instruct"]
          + ([f"critic.model.path=Qwen/Qwen2.5-{m}-Instruct"] if p == "ppo-8gpu" else []))
         for m in ("0.5B", "1.5B", "3B", "7B", "14B", "32B")
         for g in ("1xRTX-4090-24GB", "1xH100-80GB", "2xA100-40GB", "4xL40S-48GB", "8xH100-80GB")
         for p in ("grpo-1gpu-smoke", "grpo-8gpu", "ppo-8gpu")]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--first", action="store_true", help="the first alternative of each question only")
    p.add_argument("--only", help="questions whose text contains this")
    p.add_argument("--sweep", action="store_true", help="the grid of models, GPUs and presets instead")
    args = p.parse_args(argv)
    from wizard.core.advice import METHOD
    from wizard.usecases.advising import plan_advice
    from wizard.usecases.assessment import assess_plan
    from wizard.usecases.hardware import machines_for, read_gpu_spec
    from wizard.core.plan import apply_overrides
    from wizard.usecases.plans import open_plan, preset_plan

    misses, firsts = [], []
    for question, preset, spec, sets in (SWEEP if args.sweep else QUESTIONS):
        if args.only and args.only not in question:
            continue
        gpus = read_gpu_spec(spec)
        cluster = machines_for(gpus)
        if "GiB of host RAM" in question:
            ram = int(question.split(", ")[1].split()[0]) * 2**30
            cluster = cluster.model_copy(update={"nodes": [n.model_copy(update={"memory_bytes": ram})
                                                            for n in cluster.nodes]})

        def planned(extra):
            plan = (open_plan(str(ROOT / preset), gpus=gpus)[0] if preset.endswith(".sh") else
                    preset_plan(preset, gpus, sets))
            if extra:
                plan = apply_overrides(plan, list(extra))
            memory = assess_plan(plan, gpus=gpus, cluster=cluster, advise=False).memory
            return plan_advice(memory)

        advice = planned(())
        print(f"{question}: {'fits' if advice.fits_now else 'over'}"
              + (f", {advice.step_seconds:.1f} s" if advice.step_seconds else ""))
        alternatives = [a for a in advice.alternatives if a.fits][:1 if args.first else None]
        offered: dict = {}  # the fastest offered of each family: a change of tuning, LoRA, each smaller model
        for a in alternatives:
            if a.step_seconds is not None:
                offered[a.trains] = min(offered.get(a.trains, a.step_seconds), a.step_seconds)
        for i, alt in enumerate(alternatives):
            again = planned(alt.overrides)
            faster = [a.step_seconds for a in again.alternatives
                      if a.fits and a.kind != METHOD and a.step_seconds is not None]
            best = min(faster, default=None)
            gain = 0.0 if best is None or alt.step_seconds is None else max(0.0, 1 - best / alt.step_seconds)
            ours = offered.get(alt.trains)
            missed = 0.0 if best is None or ours is None else max(0.0, 1 - best / ours)
            if i == 0:
                firsts.append(gain)
            misses.append(missed)
            now = again.step_seconds
            print(f"  {i + 1}. [{alt.kind}] {alt.step_seconds if alt.step_seconds is not None else '-'} s "
                  f"(applied: {'fits' if again.fits_now else 'OVER'}, {f'{now:.1f}' if now is not None else '-'} s); "
                  f"then offered {best if best is not None else '-'} s: {gain * 100:.1f} % faster, "
                  f"{missed * 100:.1f} % past its family's fastest offered  "
                  f"[{alt.text[:90]}]")
    if misses:
        print(f"\nthe first choice, applied ({len(firsts)} questions): max {max(firsts) * 100:.1f} % faster offered "
              f"then, {sum(g > 0.02 for g in firsts)} over 2 %")
        print(f"every alternative, applied ({len(misses)}), against the fastest offered before that trains the same "
              f"(the plan's own model, LoRA, each smaller model): median {statistics.median(misses) * 100:.1f} %, "
              f"max {max(misses) * 100:.1f} % faster offered then, {sum(g > 0.05 for g in misses)} over 5 %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
