"""``verl-wizard samples RUN_DIR``: what the model generated in a run, step by step, with the flags and a one-line
verdict per step (the Run step's Samples tab, in a terminal).

Exit codes: 0 nothing that stops learning, 1 the last step taught nothing (every GRPO group scored flat, or every
response empty), 2 no run folder or no generations dumped in it (one line).
"""

from __future__ import annotations

import json

from wizard.cli._common import EXIT_ERRORS, EXIT_OK, UsageError, print_findings, read_run_dir

CLIP = 300  # characters of a prompt or response shown per example


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("samples", help="the generations a run dumped, flagged, with a verdict per step")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run folder (or a folder of verl's <step>.jsonl dumps)")
    p.add_argument("--validation", action="store_true", help="the validation generations instead of training's")
    p.add_argument("--step", type=int, metavar="N", help="only this step (default: every step; examples from the last)")
    p.add_argument("--flag", action="append", default=[], metavar="FLAG",
                   help="examples with this flag: cut, empty, loop, language, 'same text', 'same score'")
    p.add_argument("--grep", metavar="TEXT", help="examples whose prompt, response or ground truth has every word")
    p.add_argument("--show", type=int, default=3, metavar="N", help="examples to print (default 3, flagged first)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=run_samples)


def run_samples(args) -> int:
    from wizard.core.findings import has_errors
    from wizard.core.run import FLAGS, digest

    bad = [f for f in args.flag if f not in FLAGS]
    if bad:
        raise UsageError(f"--flag {bad[0]!r}: one of {', '.join(FLAGS)}")
    record = read_run_dir(args.run_dir)
    steps = record.validation if args.validation else record.rollout
    if not steps:
        kind = "validation" if args.validation else "training"
        raise UsageError(f"{args.run_dir}: no {kind} generations dumped in this run (verl writes them when "
                         f"trainer.{'validation' if args.validation else 'rollout'}_data_dir is set; smoke runs of "
                         "this verl-wizard set it)")
    if args.step is not None:
        if args.step not in steps:
            raise UsageError(f"--step {args.step}: no dump for it; steps: {', '.join(map(str, steps))}")
        steps = {args.step: steps[args.step]}
    inspected = digest.inspect_steps(steps, record.state, digest.max_response_length(record), args.validation)
    last = inspected[-1]
    examples = _examples(last, args.flag, args.grep, args.show)
    findings = last.verdict.findings
    if args.format == "json":
        print(json.dumps({"ok": not has_errors(findings), "run_dir": record.path, "validation": args.validation,
                          "steps": [s.verdict.to_json() for s in inspected], "findings": [f.to_json() for f in findings],
                          "examples": [_example_json(s, f) for s, f in examples]}))
    else:
        _print(record, inspected, examples, args.validation)
    return EXIT_ERRORS if has_errors(findings) else EXIT_OK


def _examples(step, flags: list[str], grep: str | None, n: int):
    """Up to ``n`` samples of ``step`` with the flags asked for and the words searched, flagged ones first."""
    from wizard.core.run import haystack, matches

    pairs = [(s, f) for s, f in zip(step.samples, step.flags)
             if all(x in f for x in flags) and (not grep or matches(haystack(s), grep))]
    pairs.sort(key=lambda p: (-len(p[1]), p[0].index))
    return pairs[:max(0, n)]


def _example_json(s, flags) -> dict:
    return {"step": s.step, "index": s.index, "group": s.group, "answer": s.answer, "score": s.score,
            "ground_truth": s.ground_truth, "prompt": s.prompt, "response": s.response, "flags": list(flags)}


def _clip(text: str) -> str:
    """One line, every control character shown (a response can hold ESC sequences: printed raw, they would
    drive the terminal), at most CLIP characters of it."""
    from wizard.core.visible import visible

    one = visible(text)
    return one if len(one) <= CLIP else one[:CLIP] + f"… ({len(text):,} characters)"


def _print(record, inspected, examples, validation: bool) -> None:
    total = sum(s.verdict.samples for s in inspected)
    kind = "validation" if validation else "training"
    print(f"samples: {len(inspected)} step(s) of {kind} generations in {record.path} ({total:,} responses)")
    for s in inspected:
        print(f"  {s.verdict.line}")
    last = inspected[-1].verdict
    if last.findings:
        print_findings(last.findings, header=f"step {last.step}")
    if examples:
        print(f"examples from step {last.step}:")
    for s, flags in examples:
        score = "no score" if s.score is None else f"score {s.score:g}"
        truth = f", ground truth {_clip(s.ground_truth)}" if s.ground_truth is not None else ""
        print(f"  #{s.index} (prompt {_clip(s.group[:8])}, answer {s.answer}; {score}{truth})"
              + (f" [{', '.join(flags)}]" if flags else ""))
        print(f"    prompt:   {_clip(s.prompt)}")
        print(f"    response: {_clip(s.response) if s.response else '(empty)'}")
