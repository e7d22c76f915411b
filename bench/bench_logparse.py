"""Parser throughput: lines/second for RunLog.feed and for triage over a large synthetic verl log.

The log mixes what a real run prints (reference §5): Ray-prefixed, ANSI-coloured lines of the ~900-line
config pprint, verl logger lines, tqdm progress, and one metric line per step with ~60 numpy-repr values.
Prints figures; asserts nothing. Run: .venv/bin/python bench/bench_logparse.py [steps]
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from wizard.core.run.logparse import RunLog  # noqa: E402
from wizard.core.run.triage import triage  # noqa: E402

P = "\x1b[36m(TaskRunnerV1 pid=466)\x1b[0m "
KEYS = [f"{fam}/{name}" for fam in ("critic/score", "critic/rewards", "critic/advantages", "critic/returns",
                                     "response_length", "prompt_length") for name in ("mean", "max", "min")] + [
    "actor/pg_loss", "actor/pg_clipfrac", "actor/ppo_kl", "actor/entropy", "actor/kl_loss", "actor/grad_norm",
    "actor/lr", "perf/throughput", "perf/total_num_tokens", "perf/time_per_step"] + [
    f"timing_s/{p}" for p in ("step", "gen", "reward", "old_log_prob", "ref", "adv", "update_actor", "update_weights")] + [
    f"global_seqlen/{k}" for k in ("min", "max", "minmax_diff", "balanced_min", "balanced_max", "mean")] + [
    f"training/rollout_probs_diff_{k}" for k in ("valid", "max", "mean", "std")]


def synthetic_log(steps: int, seed: int = 0) -> list[str]:
    rnd = random.Random(seed)
    lines = ["[validate_config] All configuration checks passed successfully!",
             "2026-12-02 14:06:31,183\tINFO worker.py:2029 -- Started a local Ray instance."]
    lines += [f"{P}{' ' * 33}'key_{i}': {rnd.random()}," for i in range(900)]
    lines.append(f"{P}INFO:2026-12-02 14:07:12,343:Total training steps: {steps}")
    for step in range(1, steps + 1):
        for _ in range(8):
            lines.append(f"{P}INFO:2026-12-02 14:07:12,343:some worker chatter about step {step}")
        vals = []
        for k in KEYS:
            v = rnd.random()
            vals.append(f"{k}:" + rnd.choice([f"np.float64({v})", f"np.float32({v:.6f})", f"np.int64({int(v * 1e4)})",
                                               repr(v)]))
        lines.append(f"{P}step:{step} - " + " - ".join(vals))
        lines.append(f"{P}Training Progress: {100 * step // steps}%|####| {step}/{steps} [00:31<02:04, 31.00s/it]")
    lines.append("ValueError: Total available GPUs 0 is less than total desired GPUs 1")
    return lines


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    lines = synthetic_log(steps)
    metric_lines = sum(1 for x in lines if "step:" in x)
    size = sum(len(x) + 1 for x in lines) / 1e6
    print(f"synthetic log: {len(lines):,} lines ({size:.0f} MB), {metric_lines:,} metric lines x {len(KEYS)} values")

    best = None
    for _ in range(3):
        state = RunLog()
        t0 = time.perf_counter()
        for line in lines:
            state.feed(line)
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    assert state.last_step == steps and len(state.series) == len(KEYS)
    print(f"RunLog.feed (all lines):     {len(lines) / best:12,.0f} lines/s  ({best:.2f} s, best of 3)")
    mlines = [x for x in lines if "step:" in x]
    t0 = time.perf_counter()
    state = RunLog()
    for line in mlines:
        state.feed(line)
    dt = time.perf_counter() - t0
    print(f"RunLog.feed (metric lines):  {len(mlines) / dt:12,.0f} lines/s  ({len(mlines) * len(KEYS) / dt:,.0f} values/s)")
    tail = lines[-20000:]
    t0 = time.perf_counter()
    found = triage(tail, 1)
    dt = time.perf_counter() - t0
    print(f"triage (20,000-line tail):   {len(tail) / dt:12,.0f} lines/s  ({dt * 1000:.0f} ms; {found[0].rule})")


if __name__ == "__main__":
    main()
