"""The step-time prediction against real verl 0.9.1 runs (bench/data/verl_real/): predicted vs measured seconds per
phase and per step, and the error on runs left out of the calibration.

    .venv/bin/python bench/bench_step_time.py [--data bench/data/verl_real] [--json]

Each run is planned as ``verl-wizard plan`` plans it (verl's composed config, the run's overrides and its model's
config.json, the run's GPU from the GPU catalogue: an H200 unless its spec names another), told the run's own mean prompt and response lengths of the step
compared (what a user states, or a smoke run's samples give). Measured is verl's ``timing_s/*`` of the run's last
step (the steady one: the first also warms up). Runs measured alone on the GPU are the calibration's; runs measured
side by side (``"concurrent"`` in their record: several runs shared the GPU and slowed each other) are printed for
reference and never fitted. A run whose spec carries ``predicted_step_s`` was left out of the calibration: it is
printed on its own line, with the step time ``plan`` predicted before it ran. (The calibration's constants,
``wizard.core.steptime.terms.Calibration``, were set from the alone runs by hand, term by term: there is no fit to
leave a run out of, so the runs left out are those measured after the constants were set. The generation phase's
constants were set again on 2026-12-05 from every alone run, and later that day the trainer passes' were refitted to
every alone run (``bench/fit_trainer_passes.py``, with the model's own speed and the packed mask's attention measured
on the GPU by ``bench/real/attn_probe.py``): re-planned, every alone run is in the fit now, and only the step time
predicted before each run, ``STEP (before)``, is a left-out test.)
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.helpers.real_records import load_runs  # noqa: E402
from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue  # noqa: E402
from wizard.adapters.files.resources import load_moves, load_schema  # noqa: E402
from wizard.core.check.verdict import check_overrides  # noqa: E402
from wizard.core.hardware.cluster import Cluster, parse_cluster_spec  # noqa: E402
from wizard.core.memory.config import FLASH_ATTN  # noqa: E402
from wizard.core.models.facts import facts_from_hf_config  # noqa: E402
from wizard.core.steptime import CALIBRATION, PROMPT_TOKENS, RESPONSE_TOKENS, predict_step  # noqa: E402

ANSI = re.compile(r"\x1b\[[0-9;]*m")
PHASES = ("gen", "old_log_prob", "ref", "values", "update_critic", "update_actor", "update_weights")


def lent(gpu_id: str = "H200-141GB") -> Cluster:
    """The one card a run had, from the GPU catalogue (its spec's ``gpu``; the H200 where it names none)."""
    return parse_cluster_spec(f"1x{gpu_id}", load_gpu_catalogue())


def metrics(run) -> list[dict]:
    path = run.folder / "metrics.jsonl"
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r.get("data", r) for r in rows]


def cases(root: Path) -> list[dict]:
    """Per run with a steady step: the inputs of the prediction and the measured seconds."""
    out = []
    for run in load_runs(root):
        steps = metrics(run)
        if len(steps) < 2 or run.spec.get("kind") == "vllm":
            continue
        last = steps[-1]
        facts = facts_from_hf_config(run.model, name=run.name, source="config")
        models = {"actor": facts, "ref": facts, "critic": facts}
        cluster = lent(run.spec.get("gpu", "H200-141GB"))
        mp = check_overrides(load_schema(), run.overrides(), moves=load_moves(), models=models, cluster=cluster).memory
        values = {**mp.values, FLASH_ATTN: False, PROMPT_TOKENS: round(last["prompt_length/mean"]),
                  RESPONSE_TOKENS: round(last["response_length/mean"])}
        measured = {p: last[f"timing_s/{p}"] for p in PHASES if f"timing_s/{p}" in last}
        out.append({"run": run.name, "alone": not run.record.get("concurrent"),
                    # a run that carries the step time predicted before it ran was never part of the fit
                    "left_out": "predicted_step_s" in run.spec, "before": run.spec.get("predicted_step_s"),
                    "values": values, "models": models,
                    "cluster": cluster, "report": mp.report, "measured": measured, "step": last["timing_s/step"]})
    return out


def predicted(case: dict, calibration=CALIBRATION) -> tuple[dict, float | None]:
    st = predict_step(case["values"], case["models"], case["cluster"], case["report"], calibration)
    return st.by_name(), st.seconds


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=str(Path(__file__).parent / "data" / "verl_real"))
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    rows = cases(Path(args.data))
    errs = {"fit": [], "left_out": [], "side": [], "before": []}
    gen = []  # the generation phase of the alone runs: (measured, predicted)
    print(f"{'run':44} {'alone':5} {'phase':14} {'measured':>9} {'predicted':>9} {'error':>7}")
    for case in rows:
        pred, step = predicted(case)
        for phase, m in case["measured"].items():
            got = pred.get(phase)
            err = "" if got is None or not m else f"{100 * (got - m) / m:+6.0f}%"
            print(f"{case['run'][:44]:44} {'yes' if case['alone'] else 'no':5} {phase:14} {m:9.1f} "
                  f"{'' if got is None else f'{got:9.1f}':>9} {err:>7}")
        if case["alone"] and "gen" in case["measured"] and pred.get("gen") is not None:
            gen.append((case["measured"]["gen"], pred["gen"]))
        serr = None if step is None else (step - case["step"]) / case["step"]
        print(f"{case['run'][:44]:44} {'yes' if case['alone'] else 'no':5} {'STEP':14} {case['step']:9.1f} "
              f"{'' if step is None else f'{step:9.1f}':>9} {'' if serr is None else f'{100 * serr:+6.0f}%':>7}")
        group = "side" if not case["alone"] else "left_out" if case["left_out"] else "fit"
        if serr is not None:
            errs[group].append(serr)
        if case["before"]:  # what plan said before the run (responses at their maximum, as the run's were)
            errs["before"].append((case["before"] - case["step"]) / case["step"])
            print(f"{case['run'][:44]:44} {'yes':5} {'STEP (before)':14} {case['step']:9.1f} {case['before']:9.1f} "
                  f"{100 * errs['before'][-1]:+6.0f}%")
        if args.json:
            print(json.dumps({"run": case["run"], "alone": case["alone"], "measured": case["measured"],
                              "predicted": pred, "step_measured": case["step"], "step_predicted": step}))
    print()
    names = {"fit": "alone on the GPU, the first calibration's runs (re-planned)",
             "left_out": "alone on the GPU, recorded after the first calibration (re-planned with the run's own "
                         "lengths: NOT left out any more, the constants were refit on every alone run)",
             "before": "alone, left out: the step time predicted before the run (spec.json predicted_step_s)",
             "side": "side by side (not fitted; slowed by neighbours)"}
    for group, e in errs.items():
        if e:
            print(f"{names[group]}: {len(e)} runs, step error mean {100 * statistics.mean(e):+.0f} %, mean |error| "
                  f"{100 * statistics.mean(abs(x) for x in e):.0f} %, worst {100 * max(e, key=abs):+.0f} %")
    advised(Path(args.data), {c["run"]: predicted(c)[1] for c in rows})
    if gen:
        off = [g - m for m, g in gen]
        print(f"generation, alone runs: {len(gen)} runs, predicted - measured mean {statistics.mean(off):+.2f} s, "
              f"worst {max(off, key=abs):+.2f} s (verl sees it end at its 2-s poll), within one poll "
              f"{sum(abs(x) < 2 for x in off)} of {len(off)}")
    return 0


# the lines of a failed run's log that say why, first match wins (Hydra's last line says only where to look)
CAUSES = (re.compile(r"(Memory on the node .* limit[^)]*\))"), re.compile(r"(ValueError\(.*)"),
          re.compile(r"(CUDA out of memory.{0,80})"), re.compile(r"(\w+Error: .{0,120})"))


def cause(run) -> str:
    """Why a run stopped, from its log (the record's last error line where the log says nothing more)."""
    log = run.folder / "run.log.gz"
    if log.exists():
        text = ANSI.sub("", gzip.decompress(log.read_bytes()).decode(errors="replace"))
        for pattern in CAUSES:
            m = pattern.search(text)
            if m:
                return m.group(1).strip()[:160]
    return ANSI.sub("", run.record.get("last_error_line") or "").strip()[:100]


def advised(root: Path, now: dict | None = None, within: float = 0.10) -> None:
    """The advisor's first choices run on the device (a spec with ``question``): did it train 2 steps, at the peak
    and the step time predicted before it ran (+-10 %)? The peak measured is NVML's used memory at its highest, the
    step verl's ``timing_s/step`` of the last step."""
    runs = [r for r in load_runs(root) if r.spec.get("question")]
    if not runs:
        return
    print(f"\nthe advisor's first choices, run on the device (within +-{100 * within:.0f} % of what plan predicted "
          f"before the run):")
    for run in runs:
        steps = metrics(run)
        done, want = run.record.get("steps_done", len(steps)), run.spec.get("steps", 2)
        head = f"  {run.spec['question']} ({run.name}): {run.spec.get('advised', '')}"
        if done < want or not steps:
            print(f"{head}\n    did not train {want} steps: {run.record.get('status')}, {done} done ({cause(run)})")
            continue
        step, peak = steps[-1]["timing_s/step"], run.record["peak_used_mib"] / 1024
        p_step, p_peak = run.spec.get("predicted_step_s"), run.spec.get("predicted_peak_gib")

        def judged(pred, got, unit):
            if pred is None:
                return f"{got:.1f} {unit} (none predicted)"
            err = (pred - got) / got  # as every other line here: predicted - measured, of measured
            return f"{got:.1f} {unit} measured, {pred:.1f} predicted ({100 * err:+.0f} %: " \
                   f"{'within' if abs(err) <= within else 'OUTSIDE'})"

        again = (now or {}).get(run.name)
        replanned = f"; re-planned with today's constants {again:.1f} s ({100 * (again - step) / step:+.0f} %)" \
            if again is not None else ""
        print(f"{head}\n    {done} steps; step {judged(p_step, step, 's')}; peak {judged(p_peak, peak, 'GiB')}"
              f"{replanned}")


if __name__ == "__main__":
    sys.exit(main())
