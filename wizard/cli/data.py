"""``verl-wizard data check|preview|convert|reward``: the dataset and the reward, tested before a GPU is touched.

Exit codes: 0 fine, 1 problems found, 2 bad input (one line).
"""

from __future__ import annotations

import json
import math

from wizard.cli._common import EXIT_ERRORS, EXIT_OK, UsageError, print_findings
from wizard.core.findings import has_errors, sort_findings
from wizard.core.visible import json_visible, visible

CELL = 70
VERL_MAX_PROMPT_LENGTH = 512  # data.max_prompt_length's default in verl 0.9.1 (trainer/config/data/legacy_data.yaml)


def add_parser(subparsers) -> None:
    d = subparsers.add_parser("data", help="check, preview and convert a dataset; test the reward on it")
    d.set_defaults(handler=_no_subcommand)
    sub = d.add_subparsers(dest="data_command")

    c = sub.add_parser("check", help="check a dataset against verl's format, batch size and prompt length")
    c.add_argument("file", metavar="FILE", help="a .parquet, .jsonl, .json or .csv file")
    c.add_argument("--batch-size", type=_positive, metavar="N", help="data.train_batch_size to count rows against")
    c.add_argument("--model", metavar="DIR", help="a local model folder: count prompt tokens with its tokenizer")
    c.add_argument("--max-prompt-length", type=_positive, metavar="N",
                   help="data.max_prompt_length in tokens (with --model: verl's default 512 unless given)")
    c.add_argument("--filter-overlong-prompts", action="store_true",
                   help="data.filter_overlong_prompts=True is set (long prompts are dropped, not truncated)")
    c.add_argument("--function", metavar="PATH", help="a custom reward function file covers every data_source")
    c.add_argument("--prompt-key", default="prompt", metavar="COL", help="data.prompt_key (default: prompt)")
    c.add_argument("--format", choices=("text", "json"), default="text")
    c.set_defaults(handler=run_check)

    p = sub.add_parser("preview", help="show the schema and the first rows (reads only what it shows)")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--rows", type=_positive, default=5, metavar="N", help="how many rows (5)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=run_preview)

    v = sub.add_parser("convert", help="turn question/answer columns into verl's row format (parquet)")
    v.add_argument("input", metavar="IN", help="a .parquet, .jsonl, .json or .csv file")
    v.add_argument("--out", required=True, metavar="OUT.parquet", help="where to write (an existing file is backed up)")
    v.add_argument("--question", required=True, metavar="COL", help="the column with the question")
    v.add_argument("--answer", required=True, metavar="COL", help="the column with the ground-truth answer")
    v.add_argument("--system", metavar="TEXT", help="a system prompt put before each question")
    v.add_argument("--template", metavar="TEXT", help="wraps each question; {question} marks where it goes")
    v.add_argument("--data-source", default="custom", metavar="NAME",
                   help="data_source for every row, e.g. openai/gsm8k to use verl's GSM8K scorer (custom)")
    v.add_argument("--ability", metavar="NAME", help="the ability column (e.g. math)")
    v.add_argument("--split", metavar="NAME", help="extra_info.split (e.g. train)")
    v.add_argument("--preview", action="store_true", help="show the first converted rows; write nothing")
    v.add_argument("--format", choices=("text", "json"), default="text")
    v.set_defaults(handler=run_convert)

    r = sub.add_parser("reward", help="score sampled rows with verl's scorer or your reward function")
    r.add_argument("file", metavar="FILE")
    r.add_argument("--function", metavar="PATH", help="your reward function's file (default: verl's built-in scorer)")
    r.add_argument("--name", metavar="NAME", help="the function in --function (compute_score)")
    r.add_argument("--python", metavar="PATH", help="the Python that will run verl (default: this one)")
    r.add_argument("--rows", type=_positive, default=5, metavar="N", help="rows to sample (5)")
    r.add_argument("--response", action="append", default=[], metavar="TEXT",
                   help="a response of your own to score on every sampled row (repeatable)")
    r.add_argument("--timeout", type=float, default=60.0, metavar="S", help="for the whole bench (60)")
    r.add_argument("--format", choices=("text", "json"), default="text")
    r.set_defaults(handler=run_reward)


def _positive(text: str) -> int:
    import argparse

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n <= 0:
        raise argparse.ArgumentTypeError(f"{text} must be 1 or more")
    return n


def _no_subcommand(args) -> int:
    raise UsageError("give a data command: check, preview, convert or reward (see verl-wizard data --help)")


def _cell(value: object, width: int = CELL) -> str:
    """A dataset's value on one line, its control characters shown, not obeyed by the terminal."""
    text = json.dumps(value, ensure_ascii=False, default=str) if not isinstance(value, str) else repr(value)
    text = visible(text)
    return text if len(text) <= width else text[: width - 3] + "..."


# ---- check ----------------------------------------------------------------------------------------


def run_check(args) -> int:
    from wizard.adapters.files.dataset import DatasetError, check_file

    if args.function and not _is_file(args.function):
        raise UsageError(f"{args.function}: no such file")
    max_len = args.max_prompt_length or (VERL_MAX_PROMPT_LENGTH if args.model else None)
    try:
        report = check_file(args.file, batch_size=args.batch_size, model_dir=args.model,
                            max_prompt_length=max_len, filter_overlong=args.filter_overlong_prompts,
                            has_custom_reward=bool(args.function), prompt_key=args.prompt_key)
    except DatasetError as exc:
        raise UsageError(str(exc)) from None
    if args.format == "json":
        print(json.dumps(report.to_json(), default=str))
        return EXIT_OK if report.ok else EXIT_ERRORS
    print(f"{report.path}: {report.rows} rows, columns: {', '.join(report.columns) or 'none'} "
          f"(checked in {report.seconds:.2f} s)")
    if report.data_sources:
        print(f"  {'data_source':32} {'rows':>8}  scorer")
        for line in report.data_sources:
            print(f"  {visible(str(line['data_source']))[:32]:32} {line['rows']:>8}  {line['scorer'] or 'NONE (NotImplementedError)'}")
    if report.prompt_tokens:
        t = report.prompt_tokens
        print(f"  prompt tokens (chat template, {t['count']} prompts): min {t['min']}, median {t['median']}, "
              f"p95 {t['p95']}, max {t['max']}")
    print_findings(report.findings, header=report.path)
    return EXIT_OK if report.ok else EXIT_ERRORS


def _is_file(path: str) -> bool:

    from wizard.adapters.files.disk import is_file

    return is_file(path)


# ---- preview --------------------------------------------------------------------------------------


def run_preview(args) -> int:
    from wizard.adapters.files.dataset import DatasetError, preview

    try:
        pv = preview(args.file, args.rows)
    except DatasetError as exc:
        raise UsageError(str(exc)) from None
    if args.format == "json":
        print(json.dumps(pv.to_json(), default=str))
        return EXIT_OK
    total = f"{pv.num_rows} rows" if pv.num_rows is not None else "rows not counted (text file)"
    print(f"{pv.path}: {pv.format}, {total}, first {len(pv.rows)} read in {pv.seconds * 1000:.0f} ms")
    print("schema:")
    for line in pv.schema.splitlines() if pv.format == "parquet" else [pv.schema]:
        print(f"  {line}")
    for i, row in enumerate(pv.rows):
        print(f"row {i}:")
        for key in pv.columns:
            print(f"  {key:14} {_cell(row.get(key))}")
    return EXIT_OK


# ---- convert --------------------------------------------------------------------------------------


def run_convert(args) -> int:
    from wizard.adapters.files.dataset import DatasetError
    from wizard.adapters.files.dataset_convert import convert_file, convert_preview
    from wizard.core.data import ConversionError, ConversionSpec, conversion_findings

    spec = ConversionSpec(question=args.question, answer=args.answer, data_source=args.data_source,
                          system=args.system, template=args.template, ability=args.ability, split=args.split)
    try:
        spec.validate()
        if args.preview:
            rows = convert_preview(args.input, spec, 3)
            findings = conversion_findings(spec)
            result = {"preview": rows, "written": 0, "out": None, "findings": [f.to_json() for f in findings]}
        else:
            conv = convert_file(args.input, args.out, spec)
            rows, findings = conv.rows, conv.findings
            result = {"preview": rows, "written": conv.written, "out": conv.out, "backup": conv.backup,
                      "skipped_rows": conv.skipped, "findings": [f.to_json() for f in findings]}
    except (DatasetError, ConversionError) as exc:
        raise UsageError(str(exc)) from None
    if args.format == "json":
        print(json_visible(json.dumps(result, default=str, ensure_ascii=False)))
    else:
        for i, row in enumerate(rows):
            print(f"row {i} as verl will read it:")
            for key, value in row.items():
                if key == "prompt":  # the text the model will see, in full (to 500 characters a message)
                    for j, msg in enumerate(value):
                        print(f"  {f'prompt[{j}]':14} {msg['role']}: {_cell(msg['content'], 500)[1:-1]}")
                else:
                    print(f"  {key:14} {_cell(value, 110)}")
        if args.preview:
            print(f"Nothing written (--preview). Without it, writes {args.out}.")
        else:
            print(f"wrote {result['written']} rows to {result['out']}")
            if result.get("backup"):
                print(f"kept the previous file as {result['backup']}")
            print(f"Next: verl-wizard data check {result['out']} --batch-size N, then "
                  f"data.train_files={result['out']}")
        if findings:
            print_findings(sort_findings(findings), header="conversion")
    return EXIT_ERRORS if has_errors(findings) else EXIT_OK


# ---- reward ---------------------------------------------------------------------------------------


def run_reward(args) -> int:
    from wizard.adapters.files.dataset import DatasetError, DatasetFile
    from wizard.adapters.verl_env.reward_runner import RewardRunError, run_bench
    from wizard.core.reward import bench_rows

    if args.name and not args.function:
        raise UsageError("--name needs --function, the file that defines it")
    if not math.isfinite(args.timeout) or args.timeout <= 0:
        raise UsageError(f"--timeout must be a number of seconds more than 0, not {args.timeout:g}")
    try:
        ds = DatasetFile(args.file)
        sampled = ds.sample(args.rows, ["data_source", "reward_model", "extra_info"])
    except DatasetError as exc:
        raise UsageError(str(exc)) from None
    rows, findings = bench_rows(sampled)
    try:
        result = run_bench(rows, function=args.function, name=args.name or ("compute_score" if args.function else None),
                           user_texts=args.response, python=args.python, timeout=args.timeout)
    except RewardRunError as exc:
        raise UsageError(str(exc)) from None
    findings = sort_findings(findings + result.findings)
    if args.format == "json":
        doc = result.to_json()
        doc["findings"] = [f.to_json() for f in findings]
        doc["ok"] = not has_errors(findings)
        print(json.dumps(doc, default=str))
        return EXIT_ERRORS if has_errors(findings) else EXIT_OK
    print(f"reward bench: {result.source}, {len(rows)} rows, {len(result.trials)} calls")
    if result.trials:
        print(f"  {'row':>6}  {'candidate':24} {'score':>8} {'ms':>8}  response")
        for t in result.trials:
            score = "ERROR" if t.error else (f"{t.score:g}" if t.score is not None else t.raw[:8])
            print(f"  {t.row:>6}  {t.candidate:24} {score:>8} {t.seconds * 1000:>8.1f}  {_cell(t.text, 50)}")
        s = result.summary
        if s.min is not None:
            dist = ", ".join(f"{v} x{n}" for v, n in s.distribution.items())
            print(f"  scores: min {s.min:g}, max {s.max:g}, mean {s.mean:.3g}; distribution: {dist}")
            means = ", ".join(f"{k} {_g(v['mean'])}" for k, v in s.by_candidate.items())
            print(f"  mean by candidate: {means}")
    print_findings(findings, header=f"reward bench on {args.file}")
    return EXIT_ERRORS if has_errors(findings) else EXIT_OK


def _g(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.3g}"


# ---- standalone entry (until wizard.cli wires it in): python -m wizard.cli.data data check FILE ----
