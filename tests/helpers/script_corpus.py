"""The launch-script corpus and its comparison with real bash (python stubbed).

Shared by the conformance tests and bench/bench_scripts.py: for one script, what the reader
says verl gets, what bash hands verl (``bash_argv``), and whether the two are the same, word
for word. Environment references the reader keeps (``$HOME``) are set for bash and compared
by value; values bash computes only when it runs (``$(date)``) match whatever bash computed.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.bash_argv import FAKE_HOME, bash_argv

SCRIPTS = Path(__file__).resolve().parents[1] / "data" / "verl_scripts"
FOLDERS = (".", "main", "release-v0.9.0")  # first corpus, verl main, verl release/v0.9.0


def main_ppo_scripts() -> list[Path]:
    """Every main_ppo launch script of the corpus (other/ holds the ones to refuse)."""
    return [p for folder in FOLDERS for p in sorted((SCRIPTS / folder).glob("*.sh"))]


def other_scripts() -> list[Path]:
    return sorted((SCRIPTS / "other").rglob("*.sh"))


def corpus_name(path: Path) -> str:
    return path.relative_to(SCRIPTS).as_posix()


@dataclass
class Comparison:
    name: str
    agree: bool
    detail: str
    script: object | None  # the LaunchScript, when the reader read one
    reader_error: str | None
    bash_argv: list[str] | None
    seconds: float  # the reader's time (the adapter's read, files next to the script included)


def compare_with_bash(path: Path) -> Comparison:
    from wizard.adapters.files.script_source import read_script

    text = path.read_text()
    with tempfile.TemporaryDirectory() as tmp:
        script_path = Path(tmp) / "script.sh"
        script_path.write_text(text)
        work = Path(tmp) / "work"
        t0 = time.perf_counter()
        try:
            script, error = read_script(text, str(script_path)), None
        except ValueError as exc:
            script, error = None, str(exc).split(": ", 1)[-1]
        seconds = time.perf_counter() - t0
        env, values = _environment(script, str(work))
        argv = bash_argv(text, env, workdir=str(work), script_path=str(script_path))
    name = corpus_name(path)
    if script is None:
        agree = argv is None
        detail = "both stop before launching" if agree else f"the reader refuses ({error}); bash launches"
        return Comparison(name, agree, detail, None, error, argv, seconds)
    if argv is None:
        return Comparison(name, False, "bash never launches verl; the reader reads a launch", script, None, argv,
                          seconds)
    patterns = script.argv_patterns(values)
    if len(patterns) != len(argv):
        detail = f"{len(patterns)} words from the reader, {len(argv)} from bash"
        return Comparison(name, False, detail, script, None, argv, seconds)
    wrong = [(i, script.argv[i], a) for i, (p, a) in enumerate(zip(patterns, argv)) if not p.match(a)]
    detail = "same argv" if not wrong else f"word {wrong[0][0]}: reader {wrong[0][1]!r}, bash {wrong[0][2]!r}"
    return Comparison(name, not wrong, detail, script, None, argv, seconds)


def _environment(script, workdir: str) -> tuple[dict[str, str], dict[str, str]]:
    """(what bash runs with, what each environment reference should read as)."""
    if script is None:
        return {}, {}
    env, values = {}, {"HOME": FAKE_HOME, "PWD": workdir}
    for name in script.env:
        if name in ("HOME", "PWD"):
            continue
        if name in script.defaults and name not in script.required:
            values[name] = ""  # a knob read before its default: empty in an empty environment
        else:
            env[name] = values[name] = f"/env/{name}"
    return env, values
