"""The trainer passes' constants (wizard.core.steptime.terms.Calibration) refitted to the runs measured alone on the
GPU: for each log-prob pass (old log-prob, reference, critic values) and update (actor, critic) of those runs, the
prediction's terms are split by what scales them (the FLOPs term by 1/efficiency, the per-token and per-sequence
terms by their constants, the packed-mask attention by 1/its rate; the rest, offload and optimizer, held), and the
free constants are fitted by non-negative least squares on the relative error. Prints the fit and each phase's error
before and after.

    .venv/bin/python bench/fit_trainer_passes.py [--attention TFLOPS] [--fwd-eff F --train-eff F] [--free-eff] [-v]

--attention: the packed mask's rate held at this value (bench_attention_probe.py measures it); without it, fitted.
--fwd-eff/--train-eff: the FLOPs efficiencies held (default: the calibration's); --free-eff fits them too.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_step_time as bst  # noqa: E402
from wizard.core.steptime import CALIBRATION, predict_step  # noqa: E402
from wizard.core.steptime.predict import ROWS_LABEL  # noqa: E402

FWD = ("old_log_prob", "ref", "values")
UPD = ("update_actor", "update_critic")
NAMES = ("1/fwd_efficiency", "fwd_s_per_token", "1/train_efficiency", "train_s_per_token", "train_s_per_sequence",
         "1/attention_tflops", "micro_batch_s", "logprob_rows_fwd_s_per_token", "logprob_rows_train_s_per_token")
K = len(NAMES)


def nnls(a: np.ndarray, y: np.ndarray, iters: int = 500) -> np.ndarray:
    """Lawson-Hanson non-negative least squares (numpy only)."""
    n = a.shape[1]
    active: list[int] = []
    x = np.zeros(n)
    for _ in range(iters):
        w = a.T @ (y - a @ x)
        free = [j for j in range(n) if j not in active]
        if not free or max(w[j] for j in free) <= 1e-12:
            break
        active.append(max(free, key=lambda j: w[j]))
        while True:
            z = np.zeros(n)
            z[active] = np.linalg.lstsq(a[:, active], y, rcond=None)[0]
            if all(z[j] > 0 for j in active):
                x = z
                break
            alpha = min(x[j] / (x[j] - z[j]) for j in active if z[j] <= 0)
            x = x + alpha * (z - x)
            active = [j for j in active if x[j] > 1e-15]
    return x


def basis(probe_rate: float = 100.0):
    """Per measured phase: (run, phase, measured s, the six bases, the held seconds); the bases are the terms'
    seconds divided by the constant that scales them (so a constant's value times its basis is its term)."""
    c = replace(CALIBRATION, attention_tflops=probe_rate, micro_batch_s=0.01)
    cur = (1 / c.fwd_efficiency, c.fwd_s_per_token, 1 / c.train_efficiency, c.train_s_per_token,
           c.train_s_per_sequence, 1 / c.attention_tflops, c.micro_batch_s, c.logprob_rows_fwd_s_per_token,
           c.logprob_rows_train_s_per_token)
    out = []
    # FSDP's constants: a Megatron run's passes have their own (Calibration.megatron_*, measured on that run)
    for case in (k for k in bst.cases(Path(bst.__file__).parent / "data" / "verl_real")
                 if k["alone"] and k["values"].get("actor_rollout_ref.actor.strategy") != "megatron"):
        st = predict_step(case["values"], case["models"], case["cluster"], case["report"], c)
        for ph in st.phases:
            if ph.name not in case["measured"] or ph.name not in FWD + UPD:
                continue
            fwd = ph.name in FWD
            row, held = [0.0] * K, 0.0
            for t in ph.terms:
                i = {"FLOPs": 0 if fwd else 2, "per token": 1 if fwd else 3, "per sequence": 4,
                     "attention over the SDPA mask": 5, "per micro-batch": 6, ROWS_LABEL: 7 if fwd else 8}.get(t.label)
                if i is None:
                    held += t.seconds
                else:
                    row[i] += t.seconds / cur[i]
            out.append((case["run"], ph.name, case["measured"][ph.name], row, held))
    return out


def errors(rows, p) -> np.ndarray:
    return np.array([(np.dot(r, p) + held - m) / m for _, _, m, r, held in rows])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--attention", type=float)
    ap.add_argument("--fwd-eff", type=float, default=CALIBRATION.fwd_efficiency)
    ap.add_argument("--train-eff", type=float, default=CALIBRATION.train_efficiency)
    ap.add_argument("--free-eff", action="store_true")
    ap.add_argument("--no-micro", action="store_true", help="no per-micro-batch term")
    ap.add_argument("-v", action="store_true")
    args = ap.parse_args(argv)
    rows = basis()
    a = np.array([np.array(r) / m for _, _, m, r, _ in rows])
    y = np.array([(m - held) / m for _, _, m, _, held in rows])
    held = {}
    if not args.free_eff:
        held[0], held[2] = 1 / args.fwd_eff, 1 / args.train_eff
    if args.attention:
        held[5] = 1 / args.attention
    if args.no_micro:
        held[6] = 0.0
    free = [i for i in range(K) if i not in held]
    rhs = y - sum(a[:, i] * v for i, v in held.items())
    q = nnls(a[:, free], rhs)
    p = np.zeros(K)
    for i, v in held.items():
        p[i] = v
    p[free] = q
    c = CALIBRATION
    before = np.array([1 / c.fwd_efficiency, c.fwd_s_per_token, 1 / c.train_efficiency, c.train_s_per_token,
                       c.train_s_per_sequence, 1 / c.attention_tflops if c.attention_tflops else 0.0, c.micro_batch_s,
                       c.logprob_rows_fwd_s_per_token, c.logprob_rows_train_s_per_token])
    e0, e1 = errors(rows, before), errors(rows, p)

    def show(v, i):
        if i in (0, 2, 5):
            return "inf" if v == 0 else (f"{1 / v:.3f}" if i != 5 else f"{1 / v:.0f}")
        return f"{v * 1e6:.1f} us" if i in (1, 3, 7, 8) else f"{v * 1e3:.1f} ms"  # per sequence, per micro-batch

    print(f"{len(rows)} phases of {len({r[0] for r in rows})} alone runs")
    for i, name in enumerate(NAMES):
        print(f"  {name.lstrip('1/'):22} {show(p[i], i):>10}  {'held' if i in held else 'fitted'}")
    for tag, e in (("the calibration as it is", e0), ("this fit", e1)):
        k = int(np.argmax(np.abs(e)))
        print(f"{tag}: mean |error| {100 * np.mean(np.abs(e)):.1f} %, worst {100 * e[k]:+.1f} % "
              f"({rows[k][0]} {rows[k][1]})")
    if args.v:
        for (run, phase, m, _, _), a0, a1 in zip(rows, e0, e1):
            print(f"  {run[:44]:44} {phase:14} {m:6.1f} s  {100 * a0:+6.1f} %  ->  {100 * a1:+6.1f} %")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
