"""How long ``plan`` and ``check`` take on big input (issue 31, item 10), the CLI as a process, the grpo-8gpu preset:
cluster specs up to the wizard's limit of 16,384 GPUs (16,384 one-GPU nodes, 2,048 eight-GPU nodes), and 10,000
overrides on the command line (keys added under one parent, and one key set 10,000 times).

Prints figures; asserts nothing. Run: .venv/bin/python bench/bench_big_input.py [--runs 1]

Before (issue 31: 28-29 s for a 16,384-node spec), at 79c0cb3 on a 2-core machine, load 3-5: plan 512 x 1 GPU
12.3 s, 1,024 x 1 GPU 29.9 s, 16,384 x 1 GPU over 9 minutes (stopped), 2,048 x 8 GPUs 288 s; check with 10,000
``+extra.kN=N`` 18.7 s. At load 1.4: plan 1,024 x 1 GPU 8.8 s, check 16,384 x 1 GPU 8.5 s, check with 10,000
``+extra.kN=N`` 7.1 s. After, at load 1.7: 0.75 s, 1.37 s and 1.91 s; plan 16,384 x 1 GPU 5.1 s, 2,048 x 8 GPUs 4.1 s.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from timing import timed  # noqa: E402

SPECS = ["2x8xH100-80GB", "1024x1xH100-80GB", "16384x1xH100-80GB", "2048x8xH100-80GB"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1, help="process runs to take the median of")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    with tempfile.TemporaryDirectory() as tmp:
        for text in SPECS:
            path = Path(tmp) / "cluster.yaml"
            path.write_text(f"cluster: {text}\n")
            for command in ("plan", "check"):
                cli = [sys.executable, "-m", "wizard", command, "--preset", "grpo-8gpu", "--cluster", str(path)]
                samples = sorted(timed(lambda: subprocess.run(cli, capture_output=True, cwd=ROOT, env=env), args.runs))
                print(f"{command:5} --cluster {text:20} {samples[len(samples) // 2]:6.2f} s  "
                      f"[load {os.getloadavg()[0]:.2f}]", flush=True)
    for what, overrides in (("10,000 added keys", [f"+extra.k{i}={i}" for i in range(10_000)]),
                            ("one key set 10,000 times", [f"data.train_batch_size={i + 1}" for i in range(10_000)])):
        cli = [sys.executable, "-m", "wizard", "check", "--preset", "grpo-8gpu", "--", *overrides]
        samples = sorted(timed(lambda: subprocess.run(cli, capture_output=True, cwd=ROOT, env=env), args.runs))
        print(f"check, {what:35} {samples[len(samples) // 2]:6.2f} s  [load {os.getloadavg()[0]:.2f}]", flush=True)


if __name__ == "__main__":
    main()
