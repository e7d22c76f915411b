"""How long ``verl-wizard check --batch`` takes on a realistic batch: 336 launches, the CLI as a process.

The batch: every preset, the launch scripts of the first script corpus (tests/data/verl_scripts, read with the
wizard's own script reader into overrides), the listed conformance variants (each preset with each of
tests/conformance/test_verl_parity.py's MUTATIONS), topped up to exactly 336 with seeded random variants of the
presets (two or three mutations together, as that test draws them).

Also, in-process, one full check of each preset (models, memory on 8 x H100: what ``check`` runs per launch).

Prints figures; asserts nothing. Run: .venv/bin/python bench/bench_check_batch.py [--runs 5] [--gpus 8xH100-80GB]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from timing import fmt, timed  # noqa: E402

SIZE = 336


def build_cases(size: int = SIZE, seed: int = 0) -> list[dict]:
    from tests.conformance.test_verl_parity import MUTATIONS
    from tests.helpers.script_corpus import SCRIPTS
    from wizard.adapters.files.resources import preset_names
    from wizard.adapters.files.script_source import read_script
    from wizard.core.plan.emit import emit_overrides
    from wizard.usecases.plans import preset_plan

    bases = {name: emit_overrides(preset_plan(name)).overrides for name in preset_names()}
    cases = [{"id": name, "overrides": overrides} for name, overrides in bases.items()]
    for path in sorted(SCRIPTS.glob("*.sh")):  # the first corpus (verl's main and release branches: main/, release-v0.9.0/)
        try:
            script = read_script(path.read_text(), str(path))
        except Exception:  # noqa: BLE001 - a script the reader refuses is not a launch to check
            continue
        case = {"id": path.name, "overrides": list(script.args)}
        if script.config_name != "ppo_trainer":
            case["config_name"] = script.config_name
        cases.append(case)
    for name, overrides in bases.items():
        cases += [{"id": f"{name} + {m}", "overrides": overrides + [m]} for m in MUTATIONS]
    rng = random.Random(seed)
    while len(cases) < size:
        name = rng.choice(sorted(bases))
        picks = rng.sample(MUTATIONS, rng.randint(2, 3))
        cases.append({"id": f"{name} + {' + '.join(picks)}", "overrides": bases[name] + picks})
    return cases[:size]


def preset_checks(n: int = 50) -> None:
    """The median of ``n`` full checks of each preset, in this process."""
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
    from wizard.adapters.files.resources import preset_names
    from wizard.core.hardware.gpus import parse_gpu_spec
    from wizard.core.plan.emit import emit_overrides
    from wizard.usecases.assessment import assess
    from wizard.usecases.hardware import cluster_for_spec
    from wizard.usecases.plans import preset_plan

    spec = parse_gpu_spec("8xH100-80GB")
    cluster, cache = cluster_for_spec(spec, load_gpu_catalogue()), {}
    for name in preset_names():
        overrides = emit_overrides(preset_plan(name)).overrides
        assess(overrides, gpus=spec, cluster=cluster, model_cache=cache)
        samples = timed(lambda: assess(overrides, gpus=spec, cluster=cluster, model_cache=cache), n)
        print(f"full check of {name + ',':17} 8 x H100 (in-process) {fmt(samples, 2)}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5, help="process runs to take the median of")
    parser.add_argument("--gpus", help="passed on to check (e.g. 8xH100-80GB); default: none")
    parser.add_argument("--size", type=int, default=SIZE)
    args = parser.parse_args()
    preset_checks()
    cases = build_cases(args.size)
    kinds = {"presets": sum(" " not in c["id"] and not c["id"].endswith(".sh") for c in cases),
             "scripts": sum(c["id"].endswith(".sh") for c in cases),
             "variants": sum(" + " in c["id"] for c in cases)}
    print(f"batch: {len(cases)} launches ({', '.join(f'{n} {k}' for k, n in kinds.items())})")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cases.jsonl"
        path.write_text("".join(json.dumps(c) + "\n" for c in cases))
        cli = [sys.executable, "-m", "wizard", "check", "--batch", str(path), "--format", "json"]
        if args.gpus:
            cli += ["--gpus", args.gpus]
        first = subprocess.run(cli, capture_output=True, text=True, cwd=ROOT)
        answers = [json.loads(line) for line in first.stdout.splitlines() if line.startswith("{")]
        if len(answers) != len(cases):
            print(f"the batch answered {len(answers)} of {len(cases)} cases (exit {first.returncode}): "
                  f"{first.stderr.strip()[-500:]}")
            return
        print(f"verdicts: {sum(a['ok'] for a in answers)} ok, {sum(not a['ok'] for a in answers)} with errors")
        load = os.getloadavg()[0]
        samples = timed(lambda: subprocess.run(cli, capture_output=True, cwd=ROOT), args.runs)
        print(f"CLI 'check --batch' {len(cases)} launches (process) {fmt(samples)}  "
              f"[load {load:.2f} before, {os.getloadavg()[0]:.2f} after]")
        per = sorted(samples)[len(samples) // 2] / len(cases)
        print(f"per launch (median run / {len(cases)})              {1000 * per:7.2f} ms")


if __name__ == "__main__":
    main()
