"""Hostile scripts: a one-line refusal, never a hang, a traceback or a blow-up.

A word of megabytes lexes whole; the reader refuses scripts past its size budget before lexing, and stops at
budgets for nesting, commands run, value sizes and calls. How long these take (the lexer's time per byte on small
and large words, the refusal, the longest script read) is measured by bench/bench_scripts.py, not asserted here.
"""

import pytest

from wizard.core.scripts.lexer import lex
from wizard.core.scripts.reader import ScriptError, read_launch_script
from wizard.core.scripts.state import MAX_SCRIPT_CHARS

M = "python3 -m verl.trainer.main_ppo"


def _text(parts) -> str:
    return "".join(p.text + _text(p.parts) for p in parts)


@pytest.mark.parametrize("make, value", [
    (lambda n: "a=" + "x" * n, lambda n: "a=" + "x" * n),
    (lambda n: '"' + "x" * n + '"', lambda n: "x" * n),
    (lambda n: "'" + "x" * n + "'", lambda n: "x" * n),
    (lambda n: "a\\ b" * (n // 4), lambda n: "a b" * (n // 4)),
], ids=["unquoted", "double-quoted", "single-quoted", "escapes"])
def test_a_4mb_word_lexes_whole(make, value):
    text = make(4_000_000)
    word, end = lex(text)
    assert word.kind == "word" and (word.pos, word.end) == (0, len(text)) and end.op == "\n"
    assert _text(word.word.parts) == value(4_000_000)


def test_a_1mb_word_is_refused_with_the_size_budget_before_it_is_lexed(monkeypatch):
    import wizard.core.scripts.reader as reader

    def parsed(*args, **kw):
        raise AssertionError("a script past the size budget was parsed")

    monkeypatch.setattr(reader, "parse_program", parsed)
    with pytest.raises(ScriptError, match=f"characters long; the wizard reads scripts up to {MAX_SCRIPT_CHARS:,}"):
        read_launch_script(f"{M} a.b=" + "x" * 1_000_000 + "\n")


def test_a_word_just_under_the_budget_is_read_whole():
    value = "x" * (MAX_SCRIPT_CHARS - 100)
    script = read_launch_script(f"{M} a.b={value}\n")
    assert script.args == [f"a.b={value}"]


@pytest.mark.parametrize("text, reason", [
    ("X=" + "$(" * 300 + ")" * 300 + f"\n{M} a=1\n", "nested more than 64 deep"),
    ("X=" + "${A:-" * 300 + "}" * 300 + f"\n{M} a=1\n", "nested more than 64 deep"),
    ("{ " * 300 + M + " a=1" + "; }" * 300 + "\n", "nested more than 64 deep"),
    ("if true; then " * 300 + M + " a=1" + "; fi" * 300 + "\n", "nested more than 64 deep"),
    (f"while true; do :; done\n{M} a=1\n", "runs more than 200,000 commands"),
    ("X=x\nwhile true; do X=$X$X; done\n", "line 2: a value grows past"),
    ("A=('')\nwhile true; do A=(\"${A[@]}\" \"${A[@]}\"); done\n", "grows past 100,000 words"),
    (f"f() {{ f; }}\nf\n{M} a=1\n", "nested more than 120 deep \\(in function f, called"),
    (f"f() {{ g; }}\ng() {{ f; }}\nf\n{M} a=1\n", "nested more than 120 deep \\(in function [fg], called"),
    ("X=$(" + "echo $(" * 70 + "x" + ")" * 71 + f"\n{M} a=$X\n", "nested more than 64 deep"),
    ("f() { " + "if true; then " * 30 + "f" + "; fi" * 30 + f"; }}\nf\n{M} a=1\n", "nested more than 120 deep"),
    (f"f() {{ X=$(f); }}\nf\n{M} a=1\n", "nested more than 120 deep"),
])
def test_budgets_stop_the_reading_with_one_line(text, reason):
    with pytest.raises(ScriptError, match=reason) as info:
        read_launch_script(text)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("text", [
    f"X=$(( {'9' * 100_000} ))\n{M} a=$X\n",
    f"X=$((1/0))\nY=$((2**64 + 1<<70))\n{M} a=$X b=$Y\n",
    f"X={'a' * 4000}\nY=${{X%%*b}}\n{M} a=$Y\n",
    "".join(f"if [ -f /x{i} ]; then A{i}=1; fi\n" for i in range(500)) + f"{M} a=1\n",
])
def test_odd_but_bounded_scripts_are_read(text):
    script = read_launch_script(text)
    assert script.args


def test_mangled_corpus_scripts_are_read_or_refused_never_a_crash():
    """Real scripts with lines dropped, doubled, cut or prefixed with stray syntax: a reading or a ScriptError."""
    import random

    from tests.helpers.script_corpus import main_ppo_scripts

    texts = [p.read_text() for p in main_ppo_scripts()[::7]]
    snippets = ["$(", ")", "${", "}", '"', "'", "`", "((", "))", "if true; then", "fi", "case x in", "esac", ";;",
                "do", "done", "f() {", "}", "set -- a", "exec", "env A=1", "A+=(x)", '"${A[@]}"', "$((1/0))",
                "${X:?m}", "shift 5", "source ./x.sh", 'eval "$X"', "exit", "return", "break", "(", "<<EOF", "\\",
                "[[ -f x ]] &&", "for i in 1 2; do", '"" A=(x)']
    rng = random.Random(17)
    for _ in range(400):
        lines = rng.choice(texts).split("\n")
        for _ in range(rng.randint(1, 4)):
            i, op = rng.randrange(len(lines)), rng.random()
            if op < 0.3:
                del lines[i]
            elif op < 0.6:
                lines.insert(i, rng.choice(snippets) + " " + rng.choice(lines))
            elif op < 0.8:
                lines[i] = lines[i][: rng.randint(0, len(lines[i]))] + rng.choice(snippets)
            else:
                lines.insert(i, lines[rng.randrange(len(lines))])
        try:
            read_launch_script("\n".join(lines), files={"./x.sh": "A=1\n"})
        except ScriptError as exc:
            assert "\n" not in str(exc)
