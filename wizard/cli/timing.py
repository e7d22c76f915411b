"""``verl-wizard timing RUN_DIR``: where each step's time went (a bar per step), the warm-up told apart, tokens/s,
GPU busy % when the monitor sampled, advice tied to the numbers, and the forecast of the configured full run.

Exit codes: 0 at least one step timed, 1 no training step finished in this run, 2 no run folder (one line).
"""

from __future__ import annotations

import json

from wizard.cli._common import EXIT_ERRORS, EXIT_OK, print_findings, read_run_dir

BAR = 48  # characters of the longest step's bar
LETTERS = {"generation": "g", "reward": "R", "log-probs": "l", "reference": "r", "critic": "c", "update": "u",
           "weight sync": "w", "other": "o"}


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("timing", help="where a run's step time goes, advice, and the full run's forecast")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run folder (run.log, metrics.jsonl, ...)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=run_timing)


def run_timing(args) -> int:
    from wizard.core.run import digest

    record = read_run_dir(args.run_dir)
    summary = digest.timing_of(record)
    fc = digest.forecast_of(record, summary)
    if args.format == "json":
        print(json.dumps({"ok": bool(summary.steps), "run_dir": record.path, "steps": [vars(s) for s in summary.steps],
                          "steady_steps": summary.steady, "step_s": summary.step_s, "phases": summary.phases,
                          "gen_tokens_s": summary.gen_tokens_s, "update_tokens_s": summary.update_tokens_s,
                          "gpu_busy": summary.gpu_busy, "advice": [f.to_json() for f in summary.advice],
                          "forecast": fc if isinstance(fc, str) else fc.to_json()}))
    else:
        _print(record, summary, fc)
    return EXIT_OK if summary.steps else EXIT_ERRORS


def bar(phases: dict[str, float], shown, scale: float) -> str:
    """A step as letters, one per share of the time (g generation, l log-probs, u update, ...)."""
    out, carry = [], 0.0
    for p in shown:
        exact = phases.get(p, 0.0) * scale + carry
        n = int(round(exact))
        carry = exact - n
        out.append(LETTERS[p] * n)
    return "".join(out)


def _print(record, summary, fc) -> None:
    from wizard.core.run import fmt_rate, fmt_s

    if not summary.steps:
        print(f"timing: no training step finished in {record.path} (the log has {record.log_lines} lines)")
        return
    steady = ", ".join(map(str, summary.steady))
    print(f"timing: {len(summary.steps)} step(s) in {record.path}; steady step {fmt_s(summary.step_s)} "
          f"(median of step(s) {steady})")
    shown = summary.shown_phases()
    print("  " + "  ".join(f"{LETTERS[p]} {p}" for p in shown))
    scale = BAR / max(s.total for s in summary.steps)
    for s in summary.steps:
        busy = f", GPUs busy {s.gpu_busy:.0f} %" if s.gpu_busy is not None else ""
        rates = f"gen {fmt_rate(s.gen_tokens_s)}, update {fmt_rate(s.update_tokens_s)}"
        print(f"  step {s.step:>3} {s.total:7.1f} s |{bar(s.phases, shown, scale):<{BAR}}| {rates}{busy}"
              + ("  (warm-up)" if s.warmup else ""))
    parts = ", ".join(f"{p} {100 * summary.share(p):.0f} %" for p in shown if summary.share(p) >= 0.005)
    print(f"  steady step: {parts}")
    if summary.gpu_busy is None:
        print("  GPU busy: not recorded (the GPU monitor samples it during runs this verl-wizard starts)")
    if summary.advice:
        print_findings(summary.advice, header="timing")
    if isinstance(fc, str):
        print(f"forecast: none: {fc}")
    else:
        print(f"forecast: {fc.line()}")
        for a in fc.assumptions:
            print(f"  assuming {a}")
