"""How well the wizard reads verl's own launch scripts: read rate, agreement with real bash,
agreement of the early verdict with verl 0.9.1, and time per script; and how long hostile input takes: the lexer's
time per byte on a 250 KB and a 4 MB word (a ratio near 1 is linear), the refusal of a script past the size
budget and the reading of a word just under it.

The corpus is every main_ppo launch script in tests/data/verl_scripts (the first corpus, verl's
main and release/v0.9.0 branches). Bash runs each script with python stubbed
(tests/helpers/bash_argv.py). With --verl (needs verl in --python), verl's own composition +
validate_config judges each script's overrides (model paths pointed at a tiny local model), and
the wizard's check is compared with it.

Prints figures; asserts nothing. Run: .venv/bin/python bench/bench_scripts.py [--verl] [--python PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import fmt, timed  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--verl", action="store_true", help="also compare the check with verl's own verdict")
    parser.add_argument("--python", help="the Python that has verl (default: this one)")
    parser.add_argument("--list", action="store_true", help="print every script that differs or is refused")
    args = parser.parse_args()
    from tests.helpers.script_corpus import compare_with_bash, main_ppo_scripts

    scripts = main_ppo_scripts()
    results = [compare_with_bash(p) for p in scripts]
    read = [r for r in results if r.script is not None]
    agree = [r for r in results if r.agree]
    print(f"corpus: {len(scripts)} main_ppo launch scripts ({_by_folder(results)})")
    print(f"read:               {len(read):4d} of {len(scripts)}  ({100 * len(read) / len(scripts):5.1f} %)")
    exact = [r for r in agree if r.script is not None]
    print(f"read with exactly the argv bash hands verl: {len(exact):4d} of {len(scripts)}  "
          f"({100 * len(exact) / len(scripts):5.1f} %)")
    print(f"same outcome as bash: {len(agree):4d} of {len(scripts)}  ({100 * len(agree) / len(scripts):5.1f} %)"
          "  (counting scripts both refuse)")
    print(f"time per script (read, files next to it included): {fmt([r.seconds for r in results])}")
    slow = sorted(results, key=lambda r: -r.seconds)[:3]
    print("slowest: " + ", ".join(f"{r.name} {1000 * r.seconds:.0f} ms" for r in slow))
    warnings = [sum(n.severity == "warning" for n in r.script.notes) for r in read]
    print(f"script findings per script: warnings median {statistics.median(warnings):.0f}, max {max(warnings)}; "
          f"one defaults note listing a median of "
          f"{statistics.median([len(r.script.defaults) for r in read]):.0f} knobs")
    for r in results:
        if not r.agree or (args.list and r.script is None):
            print(f"  differs: {r.name}: {r.detail}")
    _hostile()
    if args.verl:
        _verl(read, args.python)


def _hostile() -> None:
    """Figures tests/core/test_script_bounds.py leaves to the bench: linear lexing, a quick refusal."""
    from wizard.core.scripts.lexer import lex
    from wizard.core.scripts.reader import ScriptError, read_launch_script
    from wizard.core.scripts.state import MAX_SCRIPT_CHARS

    shapes = {"unquoted": lambda n: "a=" + "x" * n, "double-quoted": lambda n: '"' + "x" * n + '"',
              "single-quoted": lambda n: "'" + "x" * n + "'", "escapes": lambda n: "a\\ b" * (n // 4)}
    print("lexing one word, time per byte (250 KB / 4 MB; the ratio is near 1 where lexing is linear):")
    for name, make in shapes.items():
        small, large = make(250_000), make(4_000_000)
        per_small = min(timed(lambda: lex(small), 3)) / len(small)
        per_large = min(timed(lambda: lex(large), 3)) / len(large)
        print(f"  {name:14s} {1e9 * per_small:7.1f} ns/byte  {1e9 * per_large:7.1f} ns/byte  "
              f"ratio {per_large / per_small:5.2f}  (4 MB in {1000 * per_large * len(large):.0f} ms)")
    m = "python3 -m verl.trainer.main_ppo a.b="

    def refused():
        try:
            read_launch_script(m + "x" * 1_000_000 + "\n")
        except ScriptError:
            pass

    print(f"a 1 MB script refused by the size budget: {fmt(timed(refused, 5), 2)}")
    under = m + "x" * (MAX_SCRIPT_CHARS - 100) + "\n"
    print(f"a word just under the budget ({MAX_SCRIPT_CHARS - 100:,} characters) read: "
          f"{fmt(timed(lambda: read_launch_script(under), 3))}")


def _by_folder(results) -> str:
    counts: dict[str, int] = {}
    for r in results:
        folder = r.name.split("/")[0] if "/" in r.name else "first corpus"
        counts[folder] = counts.get(folder, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in counts.items())


def _verl(read, python: str | None) -> None:
    from tests.helpers.verl_verdict import wizard_stage
    from tests.helpers.tiny_model import write_tiny_model
    from wizard.adapters.files.resources import load_moves, load_schema
    from wizard.adapters.verl_env.verl_preflight import run_preflight
    from wizard.core.check.verdict import check_overrides
    from wizard.core.verl.compose import CONFIG_NAME_ENGINES

    keys = ("actor_rollout_ref.model.path", "critic.model.path", "reward.reward_model.model_path")
    schema, moves = load_schema(), load_moves()
    with tempfile.TemporaryDirectory() as tmp:
        model = write_tiny_model(Path(tmp) / "tiny")
        cases = []
        for r in read:
            s = r.script
            if s.config_name not in CONFIG_NAME_ENGINES or s.config_path not in (None, "config", "./config"):
                continue
            overrides = [a for a in s.args if a.split("=", 1)[0].lstrip("+") not in keys]
            cases.append((r.name, s.config_name, overrides + [f"{k}={model}" for k in keys[:2]]))
        t0 = time.perf_counter()
        verdicts = run_preflight([{"id": n, "config_name": c, "overrides": o} for n, c, o in cases], python=python)
        verl_seconds = time.perf_counter() - t0
        same = false_errors = misses = vllm = 0
        check_times = []
        for (name, config_name, overrides), verl in zip(cases, verdicts):
            if "vllm version None not supported" in (verl["message"] or ""):
                vllm += 1
                continue
            t0 = time.perf_counter()
            mine = wizard_stage(check_overrides(schema, overrides, config_name=config_name, moves=moves).findings)
            check_times.append(time.perf_counter() - t0)
            theirs = None if verl["ok"] else verl["stage"]
            same += mine == theirs
            false_errors += mine is not None and mine != theirs
            if mine is None and theirs is not None:
                misses += 1
                print(f"  verl rejects, the wizard does not (yet): {name}: {verl['message'][:140]}")
    judged = len(cases) - vllm
    print(f"verl 0.9.1 judged {judged} scripts ({vllm} need vLLM installed to judge), rejecting "
          f"{sum(not v['ok'] for v in verdicts)}, in {verl_seconds:.0f} s")
    print(f"same early verdict as verl: {same} of {judged} ({100 * same / judged:.1f} %); false errors: "
          f"{false_errors}; misses: {misses}")
    print(f"check per script (compose + rules, in-process): {fmt(check_times)}")


if __name__ == "__main__":
    main()
