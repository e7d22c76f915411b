"""How long a check takes: the CLI end to end (process start included) and one validation in-process.

Prints figures; asserts nothing. Run: make bench (or .venv/bin/python bench/bench_check.py).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import fmt, timed


def main() -> None:
    from wizard.usecases.plans import preset_plan
    from wizard.usecases.writing import write_plan_files
    from wizard.adapters.files.resources import load_moves, load_schema
    from wizard.core.check.verdict import check_overrides
    from wizard.core.plan.emit import emit_overrides
    from wizard.core.scripts.reader import read_launch_script
    from wizard.core.plan.convert import plan_from_overrides

    t0 = time.perf_counter()
    schema, moves = load_schema(), load_moves()
    print(f"load schema + moves (first time)        {1000 * (time.perf_counter() - t0):7.1f} ms")

    overrides = emit_overrides(preset_plan("grpo-8gpu")).overrides
    first = timed(lambda: check_overrides(schema, overrides, moves=moves), 1)
    print(f"in-process check, first call (cold)     {fmt(first)}")
    print(f"in-process check per validation         {fmt(timed(lambda: check_overrides(schema, overrides, moves=moves), 50))}")

    big = overrides + ["trainer.nnodes=128", "trainer.n_gpus_per_node=8", "data.train_batch_size=8192"]
    print(f"in-process check, 128 nodes x 8 GPUs     {fmt(timed(lambda: check_overrides(schema, big, moves=moves), 50))}")

    # the whole check a user gets: the model's facts (catalogue), the memory rules on the GPUs' sizes
    from wizard.usecases.assessment import assess
    from wizard.usecases.hardware import cluster_for_spec
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
    from wizard.core.hardware.gpus import parse_gpu_spec

    cache: dict = {}
    spec = parse_gpu_spec("8xH100-80GB")
    one = cluster_for_spec(spec, load_gpu_catalogue())
    assess(overrides, gpus=spec, cluster=one, model_cache=cache)
    print(f"full check (models + memory), 8 x H100  {fmt(timed(lambda: assess(overrides, gpus=spec, cluster=one, model_cache=cache), 50))}")
    spec_big = parse_gpu_spec("128x8xH100-80GB")
    many = cluster_for_spec(spec_big, load_gpu_catalogue())
    print(f"full check (models + memory), 128 x 8   {fmt(timed(lambda: assess(big, gpus=spec_big, cluster=many, model_cache=cache), 20))}")

    script = (Path(__file__).parents[1] / "tests/data/verl_scripts/examples__grpo_trainer__run_qwen2-7b_math.sh").read_text()
    print(f"read a launch script + plan it          {fmt(timed(lambda: plan_from_overrides(read_launch_script(script).args), 50))}")

    with tempfile.TemporaryDirectory() as tmp:
        write_plan_files(preset_plan("grpo-1gpu-smoke"), tmp)
        run_sh = str(Path(tmp) / "run.sh")
        cli = [sys.executable, "-m", "wizard", "check", run_sh]
        print(f"CLI 'verl-wizard check run.sh' (process) {fmt(timed(lambda: subprocess.run(cli, capture_output=True), 5))}")
        versus_verl(run_sh)
        cli_o = [sys.executable, "-m", "wizard", "check", "--", *overrides]
        print(f"CLI 'check -- OVERRIDES' (process)      {fmt(timed(lambda: subprocess.run(cli_o, capture_output=True), 5))}")
        cases = Path(tmp) / "cases.jsonl"
        import json
        import random

        rng = random.Random(0)
        with cases.open("w") as fh:
            for i in range(300):
                edits = [f"data.train_batch_size={rng.choice([16, 17, 64, 100, 1024])}",
                         f"trainer.n_gpus_per_node={rng.choice([1, 2, 8])}"]
                fh.write(json.dumps({"id": str(i), "overrides": overrides + edits}) + "\n")
        batch = [sys.executable, "-m", "wizard", "check", "--batch", str(cases), "--format", "json"]
        print(f"CLI 'check --batch' 300 configs         {fmt(timed(lambda: subprocess.run(batch, capture_output=True), 2))}")
        verl = [sys.executable, "-m", "wizard", "check", "--verl", run_sh]
        print(f"CLI 'check --verl run.sh' (+ verl)      {fmt(timed(lambda: subprocess.run(verl, capture_output=True), 2))}")


# A mistake verl 0.9.1's own validate_config catches before Ray starts: its first error, on the same launch.
BAD = "actor_rollout_ref.actor.ppo_mini_batch_size=32"  # > data.train_batch_size=16 of the smoke preset


def versus_verl(run_sh: str, runs: int = 9, verl_runs: int = 3) -> None:
    """``check run.sh`` (process start included) next to verl's own first error on the same bad launch."""
    import os
    import shutil
    import statistics

    wizard = [sys.executable, "-m", "wizard", "check", run_sh, BAD]
    samples = timed(lambda: subprocess.run(wizard, capture_output=True), runs)
    print(f"CLI 'check run.sh {BAD}' {fmt(samples)}")
    try:
        import verl  # noqa: F401
    except ImportError:
        print("verl's first error: verl is not installed here (make setup installs it)")
        return
    if not shutil.which("unshare"):
        print("verl's first error: not measured (needs unshare for a loopback-only namespace)")
        return
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
           "RAY_USAGE_STATS_ENABLED": "0", "PYTHON": sys.executable}
    # verl stops in validate_config before ray.init; the namespace keeps it on loopback all the same
    cmd = ["unshare", "-n", "bash", "-c", 'ip link set lo up; exec bash "$0" "$1"', run_sh, BAD]
    last = None

    def once():
        nonlocal last
        # in a folder of its own: Hydra writes outputs/DATE/ where verl starts
        last = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tempfile.mkdtemp(prefix="verl-run-"))

    verl_samples = timed(once, verl_runs)
    said = next((line for line in reversed(last.stderr.splitlines()) if "Error" in line), "?")
    print(f"verl's own first error, same launch   {fmt(verl_samples)}: {said.strip()[:90]}")
    ratio = statistics.median(verl_samples) / statistics.median(samples)
    print(f"check is {ratio:.1f}x faster than verl's first error (medians, process start included)")
    served = with_server(wizard, runs)
    if served:
        ratio = statistics.median(verl_samples) / statistics.median(served)
        print(f"check with 'verl-wizard serve' running  {fmt(served)}: {ratio:.1f}x faster than verl's first error")


def with_server(wizard: list[str], runs: int) -> list[float] | None:
    """The same check answered by a resident checker (verl-wizard serve, in a socket folder of its own)."""
    import os
    import shutil

    folder = tempfile.mkdtemp(prefix="verl-wizard-bench-run-")
    env = {**os.environ, "XDG_RUNTIME_DIR": folder}
    serve = [sys.executable, "-m", "wizard", "serve"]
    if subprocess.run([*serve, "--background", "--idle-minutes", "5"], env=env, capture_output=True).returncode:
        print("check with 'verl-wizard serve': the server did not start")
        return None
    try:
        return timed(lambda: subprocess.run(wizard, capture_output=True, env=env), runs)
    finally:
        subprocess.run([*serve, "--stop"], env=env, capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
