"""The memory estimate against real verl 0.9.1 runs (bench/data/verl_real/): predicted vs measured peak per phase,
the verdict against what happened, and a summary line.

    .venv/bin/python bench/bench_memory_real.py [--data bench/data/verl_real] [--json]

Each run is planned the way ``verl-wizard plan`` plans it (verl's composed config, the run's overrides, its model's
config.json, one H200 of the run's NVML total), with ``wizard.flash_attn`` off: the device has no flash-attn wheel.
Measured is NVML's used memory of the whole GPU (what the estimate's phase totals count, the driver's reserve
included). A phase of the first step has no AdamW moments yet (PyTorch creates them at the first optimizer step):
its prediction leaves them out. A verdict is right when "fits" / "tight" / "fits while short" met a run that
trained its steps, and "does not fit" met one that ran out of memory; a run that stopped for another reason is not
judged. Runs measured side by side (campaign.py --lanes, ``"concurrent"`` in their record) count the driver's
reserve and their own processes only, with vLLM's KV cache pinned to the estimate's KV term (so their engine rows
check the estimate's terms beside the KV cache, not vLLM's own sizing). Phases measured only end to end (the fixture:
nvidia-smi, no phase marks) are held to +-15 %, the others to +-10 %.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers.real_memory import host_row, rows_for, sglang_rows  # noqa: E402
from tests.helpers.real_records import load_runs  # noqa: E402


def summary(rows: list[dict], verdicts: list[dict]) -> str:
    errs = [abs(r["error"]) for r in rows if r["error"] is not None]
    within = sum(1 for r in rows if r["within"])
    judged = [v for v in verdicts if v["right"] is not None]
    return (f"{len(verdicts)} real runs: verdicts right {sum(v['right'] for v in judged)} of {len(judged)}; "
            f"phase peaks within tolerance {within} of {len(errs)} (mean |error| {100 * statistics.mean(errs):.1f} %, "
            f"max {100 * max(errs):.1f} %)" if errs else f"{len(verdicts)} runs, nothing comparable")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(Path(__file__).parent / "data" / "verl_real"))
    p.add_argument("--json", action="store_true", help="print the rows and verdicts as JSON lines")
    args = p.parse_args(argv)
    all_rows, verdicts = [], []
    for run in load_runs(Path(args.data)):
        rows, v = rows_for(run)
        all_rows += rows
        verdicts.append(v)
    if args.json:
        for r in all_rows + verdicts:
            print(json.dumps(r))
        return 0
    print(f"{'run':40} {'phase':18} {'step':>4} {'measured':>9} {'predicted':>9} {'error':>7}")
    for r in all_rows:
        err = "open" if not r["complete"] else ("" if r["error"] is None else f"{100 * r['error']:+6.1f}%")
        pred = "" if r["predicted_gib"] is None else f"{r['predicted_gib']:9.2f}"
        print(f"{r['run'][:40]:40} {r['phase']:18} {r['step']:>4} {r['measured_gib']:9.2f} {pred:>9} {err:>7}")
    print()
    sgl = [r for run in load_runs(Path(args.data)) if run.name.startswith("sgl-") for r in sglang_rows(run)]
    if sgl:  # SGLang's own memory lines (its log) against the estimate's terms
        print(f"{'SGLang run':40} {'term (its own log line)':22} {'logged':>11} {'predicted':>11} {'error':>7}")
        for r in sgl:
            print(f"{r['run'][:40]:40} {r['term']:22} {r['logged']:11,.2f} {r['predicted']:11,.2f} "
                  f"{100 * r['error']:+6.1f}%")
        print()
    hosts = [r for r in (host_row(run) for run in load_runs(Path(args.data))) if r is not None]
    if hosts:  # host RAM: what Ray killed at, or what a run alone held (campaign.py's host.jsonl)
        print(f"{'host RAM':40} {'measured':>9} {'predicted':>9} {'error':>7}  from")
        for r in hosts:
            print(f"{r['run'][:40]:40} {r['measured_gib']:9.2f} {r['predicted_gib']:9.2f} {100 * r['error']:+6.1f}%  "
                  f"{r['how']}")
        print()
    for v in verdicts:
        mark = {True: "right", False: "WRONG", None: "-"}[v["right"]]
        print(f"{v['run'][:40]:40} ran: {v['outcome']:6} verdict: {v['verdict']}  [{mark}]")
    print(summary(all_rows, verdicts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
