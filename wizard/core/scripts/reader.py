"""Read a verl launch script statically: find its one ``python -m verl.trainer.main_ppo``
command and the overrides bash would pass it, without running anything.

Assignments made before the command (``X=...``, ``export``, arrays, ``${X:-default}``,
``$(( ))``) are evaluated in order with an empty environment, so defaults apply.
Variables the script never assigns (``$HOME``) stay references and are reported in
``env``. What cannot be known statically (``$(...)``, ``source``, positional
parameters, assignments inside ``if``) is kept as text with a warning. Scripts whose
launch runs inside a loop, a function, a branch or a wrapper (srun, ray job submit,
torchrun) are refused with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wizard.core.scripts.evaluator import ASSIGN as _ASSIGN
from wizard.core.scripts.evaluator import Evaluator, Unknown
from wizard.core.scripts.lexer import ShellSyntaxError, Token, Word, lex

ENTRY = "verl.trainer.main_ppo"
_PYTHON = re.compile(r"^(?:.*/)?python(?:\d+(?:\.\d+)*)?$")
_WRAPPERS = {"srun", "torchrun", "ray", "mpirun", "deepspeed", "accelerate", "sbatch", "docker", "kubectl"}
_TRANSPARENT = {"exec", "env", "time", "nohup", "command"}
# Variables every shell has; reading them is not a sign of a mistake.
STANDARD_ENV = {"HOME", "USER", "PWD", "PATH", "HOSTNAME", "SHELL", "TMPDIR", "LOGNAME"}
_OVERRIDE_LINE = re.compile(r"^[+~]{0,2}[A-Za-z_][\w]*(\.[\w@]+)+=")
_OPEN = {"if", "for", "while", "until", "case", "select"}
_CLOSE = {"fi", "done", "esac"}
_MID = {"then", "do", "else", "elif"}


class ScriptError(ValueError):
    """The script cannot be read as one verl launch; the message says why, on one line."""


@dataclass
class LaunchScript:
    args: list[str]  # the overrides, as bash would pass them (env references kept as $NAME)
    config_name: str = "ppo_trainer"
    config_path: str | None = None
    env: list[str] = field(default_factory=list)  # environment variables the launch reads
    forwards_args: bool = False  # the script passes "$@" on
    launch_env: dict[str, str] = field(default_factory=dict)  # VAR=value prefixes on the launch line
    warnings: list[str] = field(default_factory=list)
    line: int = 0


@dataclass
class _Cmd:
    tokens: list[Token]
    depth: int
    in_function: bool
    line: int
    keyword: str = ""  # "if"/"elif" (tokens = condition), "else", "fi", "loop", "end"


def _commands(tokens: list[Token]) -> list[_Cmd]:
    """Split tokens into simple commands, with their nesting depth (if/for/while/functions)."""
    cmds: list[_Cmd] = []
    depth, fn_depth, cur = 0, [], []
    pipe_follow = False

    def flush():
        nonlocal cur, depth
        if not cur:
            return
        words = cur
        first = _lit(words)
        while first in _MID or first in _CLOSE or first in ("{", "}"):
            if first in _CLOSE:
                depth = max(0, depth - 1)
                cmds.append(_Cmd([], depth, bool(fn_depth), words[0].line, "fi" if first == "fi" else "end"))
            elif first == "elif":
                cmds.append(_Cmd(words[1:], depth, bool(fn_depth), words[0].line, "elif"))
                cur = []
                return
            elif first == "else":
                cmds.append(_Cmd([], depth, bool(fn_depth), words[0].line, "else"))
            if first == "}" and fn_depth and fn_depth[-1] == depth:
                fn_depth.pop()
                depth = max(0, depth - 1)
            words = words[1:]
            first = _lit(words)
        if first in _OPEN:
            cmds.append(_Cmd(words[1:], depth, bool(fn_depth), words[0].line, "if" if first == "if" else "loop"))
            depth += 1
        elif _is_function_def(words):
            fn_depth.append(depth + 1)
            depth += 1
        elif words:
            cmds.append(_Cmd(words, depth, bool(fn_depth), words[0].line))
        cur = []

    for tok in tokens:
        if tok.kind == "op" and tok.op in ("\n", ";", "&&", "||", "&", ";;"):
            if pipe_follow and tok.op == "\n":
                continue
            flush()
            pipe_follow = False
        elif tok.kind == "op" and tok.op == "|":
            cur.append(tok)
            pipe_follow = True
        else:
            cur.append(tok)
            pipe_follow = False
    flush()
    return cmds


def _lit(tokens: list[Token]) -> str | None:
    return tokens[0].word.raw_literal if tokens and tokens[0].kind == "word" and tokens[0].word else None


def _condition(ev: Evaluator, tokens: list[Token]) -> bool | None:
    """The truth of a simple test ([ a = b ], [[ a != b ]], [ -z a ], [ a -eq b ]), None when unknown."""
    words = [t.word for t in tokens if t.kind == "word" and t.word is not None]
    texts = [ev.text(w) for w in words]
    if texts[:1] in (["["], ["[["], ["test"]):
        texts = texts[1:]
    if texts and texts[-1] in ("]", "]]"):
        texts = texts[:-1]
    if any(isinstance(t, Unknown) for t in texts):
        return None
    if len(texts) == 3 and texts[1] in ("=", "==", "!="):
        return (texts[0] == texts[2]) == (texts[1] != "!=")
    if len(texts) == 3 and texts[1] in ("-eq", "-ne", "-lt", "-le", "-gt", "-ge"):
        try:
            a, b = int(texts[0]), int(texts[2])
        except ValueError:
            return None
        return {"-eq": a == b, "-ne": a != b, "-lt": a < b, "-le": a <= b, "-gt": a > b, "-ge": a >= b}[texts[1]]
    if len(texts) == 2 and texts[0] in ("-z", "-n"):
        return (texts[1] == "") == (texts[0] == "-z")
    return None


class _Frames:
    """Which if/elif/else branch runs, as far as the script's own values tell."""

    def __init__(self) -> None:
        self.stack: list[list] = []  # [state: True/False/None, some branch already taken: True/False/None]

    def open(self, state: bool | None) -> None:
        self.stack.append([state, state])

    def branch(self, state: bool | None) -> None:
        if not self.stack:
            return
        frame = self.stack[-1]
        taken = frame[1]
        if taken is True:
            frame[0] = False
        elif taken is False:
            frame[0], frame[1] = state, state
        else:
            frame[0] = None

    def close(self) -> None:
        if self.stack:
            self.stack.pop()

    @property
    def state(self) -> bool | None:
        """True: this code surely runs; False: surely not; None: it depends."""
        states = [f[0] for f in self.stack]
        if any(s is False for s in states):
            return False
        return True if all(s is True for s in states) else None


def _is_function_def(tokens: list[Token]) -> bool:
    lits = [t.word.raw_literal if t.kind == "word" and t.word else t.op for t in tokens]
    if lits[:1] == ["function"]:
        return True
    return len(lits) >= 3 and lits[1:3] == ["(", ")"]


def _launch_words(cmd: _Cmd) -> tuple[list[Word], dict[str, Word], list[str]] | None:
    """(words up to the first pipe/redirect, VAR=value prefixes, leading program words) if this runs Python."""
    words: list[Word] = []
    for tok in cmd.tokens:
        if tok.kind == "op":
            break
        if tok.kind == "word" and tok.word is not None:
            words.append(tok.word)
    prefix: dict[str, Word] = {}
    i = 0
    while i < len(words):
        lit = words[i].raw_literal
        raw = lit if lit is not None else "".join(p.text for p in words[i].parts if p.kind in ("lit", "esc"))
        if _ASSIGN.match(raw) and i < len(words) - 1:
            prefix[_ASSIGN.match(raw).group(1)] = words[i]
            i += 1
        elif lit in _TRANSPARENT:
            i += 1
        else:
            break
    return words[i:], prefix, [w.raw_literal or "" for w in words[:i]]


def read_launch_script(text: str) -> LaunchScript:
    try:
        tokens = lex(text)
    except ShellSyntaxError as exc:
        raise ScriptError(f"cannot read the script: {exc}") from None
    cmds = _commands(tokens)
    ev = Evaluator()
    launches: list[tuple[_Cmd, list[Word], dict[str, Word], str]] = []
    refusals: list[str] = []
    orphans: list[str] = []
    frames = _Frames()
    for cmd in cmds:
        if cmd.keyword in ("if", "loop"):
            frames.open(_condition(ev, cmd.tokens) if cmd.keyword == "if" and not cmd.in_function else None)
            continue
        if cmd.keyword == "elif":
            frames.branch(_condition(ev, cmd.tokens))
            continue
        if cmd.keyword == "else":
            frames.branch(True)
            continue
        if cmd.keyword in ("fi", "end"):
            frames.close()
            continue
        if cmd.in_function or frames.state is False:
            if cmd.in_function and _mentions_verl(_plain_words(cmd), ev):
                refusals.append(f"line {cmd.line}: the {ENTRY} launch is inside a shell function; call it at the top level")
            continue
        nested = frames.state is None
        if cmd.tokens and all(t.kind == "array" or _is_assignment_word(t) for t in cmd.tokens):
            for t in cmd.tokens:
                if t.kind == "array":
                    ev.assign_array(t, nested)
                else:
                    ev.assign(t.word, nested)
            continue
        found = _launch_words(cmd)
        if found is None:
            continue
        words, prefix, _ = found
        if not words:
            continue
        first = words[0].raw_literal
        if first is None:  # "$PYTHON" and the like: the program is a variable's value
            first = str(ev.text(words[0]))
        literal = "".join(p.text for p in words[0].parts if p.kind in ("lit", "esc"))
        if launches and _OVERRIDE_LINE.match(literal):
            orphans.append(f"line {cmd.line}: {literal!r} looks like an override but is not part of the "
                           f"launch (a comment or a missing backslash ends the command at line "
                           f"{launches[-1][0].tokens[-1].line}); bash runs it as a command and it fails")
            continue
        if first in ("export", "declare", "local", "readonly", "typeset"):
            for w in words[1:]:
                if _ASSIGN.match(ev.text(w)):
                    ev.assign(w, nested)
            continue
        if first in ("source", "."):
            ev.warnings.append(f"line {cmd.line}: the script sources {ev.text(words[1]) if len(words) > 1 else '?'}; "
                               "what that file sets is unknown")
            continue
        if first == "eval":
            ev.warnings.append(f"line {cmd.line}: eval runs text built at run time; ignored")
            continue
        module = _python_module(words, ev)
        if first in _WRAPPERS or (not _PYTHON.match(first) and _mentions_verl(words, ev)):
            if _mentions_verl(words, ev):
                refusals.append(f"line {cmd.line}: verl is started through {first!r}; the wizard reads plain "
                                f"'python3 -m {ENTRY}' launches (run the wrapper around the script it writes)")
            continue
        if module is None:
            continue
        if module != ENTRY:
            if module.startswith(("verl.", "recipe.")):
                refusals.append(f"line {cmd.line}: this script runs {module}, not {ENTRY}; the wizard plans "
                                f"{ENTRY} runs only")
            continue
        if nested or frames.stack:
            refusals.append(f"line {cmd.line}: the {ENTRY} launch is inside an if/loop, so whether and how it "
                            "runs depends on run time; move it to the top level")
            continue
        launches.append((cmd, words, prefix, module))
    if not launches:
        raise ScriptError(refusals[0] if refusals else f"no 'python3 -m {ENTRY}' command found in the script")
    if len(launches) > 1:
        lines = ", ".join(str(c.line) for c, *_ in launches)
        raise ScriptError(f"the script launches {ENTRY} {len(launches)} times (lines {lines}); give the wizard one launch")
    cmd, words, prefix, _ = launches[0]
    ev.warnings.extend(refusals)
    # the interpreter (exec "$PYTHON" -m ...) is not part of the config: its default is no news
    program_vars = {p.text for p in words[0].parts for p in ([p] + p.parts) if p.kind == "var"}
    ev.warnings = [w for w in ev.warnings if not any(f"${{{v}:" in w for v in program_vars)]
    script = _build(ev, cmd, words, prefix)
    script.warnings = _dedupe(orphans[:1] + script.warnings + [
        f"{name} is never assigned in the script; it is read from the environment as ${name}"
        for name in script.env
        if name not in STANDARD_ENV
    ])
    return script


def _is_assignment_word(tok: Token) -> bool:
    if tok.kind != "word" or tok.word is None or not tok.word.parts:
        return False
    first = tok.word.parts[0]
    return first.kind == "lit" and bool(_ASSIGN.match(first.text))


def _plain_words(cmd: _Cmd) -> list[Word]:
    return [t.word for t in cmd.tokens if t.kind == "word" and t.word is not None]


def _mentions_verl(words: list[Word], ev: Evaluator) -> bool:
    return any("verl." in (w.raw_literal or "") or "main_ppo" in (w.raw_literal or "") for w in words)


def _python_module(words: list[Word], ev: Evaluator) -> str | None:
    first = words[0].raw_literal
    if first is None:
        first = str(ev.text(words[0]))
    if not _PYTHON.match(first):
        return None
    for i, w in enumerate(words[1:-1], start=1):
        if w.raw_literal == "-m":
            return ev.text(words[i + 1])
        if (w.raw_literal or "").startswith("-m") and len(w.raw_literal) > 2:
            return w.raw_literal[2:]
    return None


def _build(ev: Evaluator, cmd: _Cmd, words: list[Word], prefix: dict[str, Word]) -> LaunchScript:
    launch_env = {name: ev.text(w).split("=", 1)[1] for name, w in prefix.items()}
    # drop "python3 -m verl.trainer.main_ppo"
    idx = next(i for i, w in enumerate(words) if w.raw_literal == "-m" or (w.raw_literal or "").startswith("-m"))
    rest = words[idx + (2 if words[idx].raw_literal == "-m" else 1) :]
    ev.forwards_args = False
    argv = ev.expand_words(rest)
    config_name, config_path = "ppo_trainer", None
    args: list[str] = []
    it = iter(range(len(argv)))
    skip = False
    for i in it:
        if skip:
            skip = False
            continue
        a = argv[i]
        for flag, short in (("--config-name", "-cn"), ("--config-path", "-cp")):
            if a.startswith(flag + "=") or a.startswith(short + "="):
                value = a.split("=", 1)[1]
            elif a in (flag, short) and i + 1 < len(argv):
                value = argv[i + 1]
                skip = True
            else:
                continue
            if flag == "--config-name":
                config_name = value[:-5] if value.endswith(".yaml") else value
            else:
                config_path = value
            break
        else:
            if a.startswith("-"):
                ev.warnings.append(f"line {cmd.line}: Hydra flag {a!r} kept as given")
            args.append(a)
    for a in args:
        if " " in a and "=" in a and a.split("=", 1)[1].endswith(" "):
            ev.warnings.append(f"line {cmd.line}: the value of {a.split('=', 1)[0]} ends in a space (an escaped "
                               "space before a comment?); bash passes it that way")
    if "$" in config_name:
        raise ScriptError(f"line {cmd.line}: --config-name is {config_name}, known only when the script runs; "
                          "give the wizard a script with a fixed config name")
    used = args + [config_path or "", config_name] + list(launch_env.values())
    env = sorted(n for n in ev.env if any(re.search(r"\$\{?" + re.escape(n) + r"\b", a) for a in used))
    return LaunchScript(
        args=args,
        config_name=config_name,
        config_path=config_path,
        env=env,
        forwards_args=ev.forwards_args,
        launch_env=launch_env,
        warnings=_dedupe(ev.warnings),
        line=cmd.line,
    )


def _dedupe(items: list[str]) -> list[str]:
    seen, out = set(), []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out
