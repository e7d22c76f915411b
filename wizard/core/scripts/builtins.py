"""Bash builtins as the reader needs them: assignments, declare/export/local, set/shift, source,
eval, exit/return, cd/pwd, echo/printf (for ``$(...)``), tests, and pure helpers (basename, dirname).

Every handler takes (interpreter, argv, node, cond) and answers a status: True, False or None.
"""

from __future__ import annotations

import posixpath
import re

from wizard.core.scripts.lexer import Part, Word
from wizard.core.scripts.parser import parse_cached
from wizard.core.scripts.state import UNREADABLE, FunctionReturn, LoopControl, ScriptExit, knob_names
from wizard.core.scripts.syntax import SyntaxStop
from wizard.core.scripts.values import FORWARD, has_marker, is_known
from wizard.core.secrets import is_secret_name

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[([^\]]*)\])?(\+?)=")
SPECIAL = {"exec", "eval", "export", "set", "source", ".", "exit", "return", "shift", "unset", "readonly",
           "declare", "local", "typeset", "break", "continue", ":"}
_STDOUT_OPS = {">", ">>", ">|", ">&"}


def stdout_redirected(redirects) -> bool:
    for r in redirects:
        if r.op in ("&>", "&>>"):
            return True
        target = r.target.raw_literal if r.target is not None else None
        if r.op in _STDOUT_OPS and r.fd in ("", "1") and target not in ("1", "&1"):
            return True
    return False


# ---- assignments -----------------------------------------------------------------------------------
def assign_all(interp, assigns) -> None:
    for tok in assigns:
        assign_token(interp, tok)


def assign_token(interp, tok) -> None:
    state, ex = interp.state, interp.ex
    if tok.kind == "array":
        items = ex.words(tok.items)
        old = state.vars.get(tok.name)
        if tok.append and old is not None:
            items = (old if isinstance(old, list) else [old]) + items
        state.set(tok.name, items, tok.line)
        return
    name, index, append, value = split_assignment(interp, tok.word)
    old = state.vars.get(name)
    if append and old is None and ex.from_environment(name):
        old = ex.env_ref(name)  # X+=... onto a value the script takes from the environment
    if index is not None:
        items = list(old) if isinstance(old, list) else ([] if old is None else [old])
        n = ex._int(index)
        if n is None or n < 0 or n > 100_000:
            items.append(value)
        else:
            items.extend([""] * (n + 1 - len(items)))
            items[n] = (items[n] + value) if append else value
        state.set(name, items, tok.line)
    elif append and isinstance(old, list):
        state.set(name, old + [value], tok.line)
    elif is_secret_name(name) and value and is_known(value) and not append:
        # a credential written into the script: read it as the environment's, so the value never reaches a
        # plan, a file or an override (wizard.core.secrets); whoever runs the launch sets the variable
        state.set(name, ex.env_ref(name), tok.line)
        interp.ctx.note(tok.line, "secret", f"{name} is set to a secret here; the wizard reads it as the "
                        f"environment's ${name} instead, and never keeps the value", severity="info")
    else:
        state.set(name, (old or "") + value if append and isinstance(old, str) else value, tok.line)


def split_assignment(interp, word: Word) -> tuple[str, str | None, bool, str]:
    first = word.parts[0]
    m = _ASSIGN.match(first.text)
    rest = first.text[m.end():]
    parts = ([Part("lit", rest)] if rest else []) + word.parts[1:]
    value = interp.ex.text(Word(parts, word.line), assignment=True)
    return m.group(1), m.group(2), bool(m.group(3)), value


def prefix_env(interp, assigns) -> dict[str, str]:
    env = {}
    for tok in assigns:
        if tok.kind == "word":
            name, _, _, value = split_assignment(interp, tok.word)
            env[name] = value
    return env


def _declare(interp, argv, node, cond):
    local = argv[0] == "local"
    for tok in node.words[1:]:
        if tok.kind == "array":
            _remember_local(interp, tok.name, local)
            assign_token(interp, tok)
        elif tok.word.parts and tok.word.parts[0].kind == "lit" and _ASSIGN.match(tok.word.parts[0].text):
            _remember_local(interp, _ASSIGN.match(tok.word.parts[0].text).group(1), local)
            assign_token(interp, tok)
        else:
            for word in interp.ex.expand(tok.word):
                if not word.startswith(("-", "+")) and re.fullmatch(r"[A-Za-z_]\w*", word):
                    _remember_local(interp, word, local)
                    if local:
                        interp.state.vars.setdefault(word, "")
    return True


def _remember_local(interp, name: str, local: bool) -> None:
    if local and interp.state.locals and name not in interp.state.locals[-1]:
        interp.state.locals[-1][name] = interp.state.vars.get(name)


def _unset(interp, argv, node, cond):
    functions = "-f" in argv[1:]
    for name in argv[1:]:
        if not name.startswith("-"):
            (interp.state.functions if functions else interp.state.vars).pop(name, None)
    return True


def _set(interp, argv, node, cond):
    args = argv[1:]
    for k, a in enumerate(args):
        if a == "--":
            break
        if re.fullmatch(r"[-+][a-zA-Z]+", a) and "u" in a:
            interp.state.nounset = a[0] == "-"
        if a in ("-o", "+o") and args[k + 1:k + 2] == ["nounset"]:
            interp.state.nounset = a == "-o"
    if "--" in args:
        interp.state.positional = args[args.index("--") + 1:]
    elif args and not args[0].startswith(("-", "+")):
        interp.state.positional = args
    return True


def _shift(interp, argv, node, cond):
    pos = interp.state.positional
    n = interp.ex._int(argv[1]) if len(argv) > 1 else 1
    if pos is not None and n is not None:
        if FORWARD in pos[:n]:
            interp.state.positional = [FORWARD]
        else:
            interp.state.positional = pos[n:]
    return True


# ---- files and text ----------------------------------------------------------------------------------
def _source(interp, argv, node, cond):
    ctx, render = interp.ctx, interp.ctx.table.render
    if len(argv) < 2:
        return False
    path = argv[1]
    if has_marker(path):
        ctx.note(node.line, "source", f"the script sources {render(path)}, a path known only when it runs; "
                 "what that file sets is unknown", "warning", None, interp.file)
        return _unknown(interp, cond, f"{render(path)} is known only when the script runs")
    if path not in ctx.wanted:
        ctx.wanted.append(path)
    text = ctx.files.get(path, UNREADABLE)
    if text is None:
        ctx.note(node.line, "source", f"the script sources {path}, which is not there; bash says 'No such file' "
                 "and goes on", "warning", None, interp.file)
        return False
    if text == UNREADABLE:
        ctx.note(node.line, "source", f"the script sources {path}; the wizard reads sourced files only when they "
                 "sit next to the script, so what this one sets is unknown", "warning", None, interp.file)
        return _unknown(interp, cond, f"whether {path} can be sourced is known only where the script runs")
    ctx.note(node.line, "source", f"read {path}, which the script sources", "info", None, interp.file)
    ctx.knobs |= knob_names(text)
    sub = interp.child(interp.state, interp.capture, file=path)
    saved = interp.state.positional
    if len(argv) > 2:
        interp.state.positional = argv[2:]
    try:
        for item in parse_cached(text, 1, interp.depth + 1):
            if isinstance(item, SyntaxStop):
                ctx.note(item.line, "syntax", f"bash cannot read this: {item.message}", "warning", None, path)
                return False
            sub.exec(item)
    except FunctionReturn:
        pass
    finally:
        interp.state.positional = saved
    return True


def _eval(interp, argv, node, cond):
    text = " ".join(argv[1:])
    if has_marker(text):
        interp.ctx.note(node.line, "runtime", f"eval runs {interp.ctx.table.render(text)}, text known only when "
                        "the script runs; the wizard skips it", "warning", None, interp.file)
        return _unknown(interp, cond, "eval runs text known only when the script runs")
    status = True
    for item in parse_cached(text, node.line, interp.depth + 1):
        if isinstance(item, SyntaxStop):
            return False
        status = interp.exec(item)
    return status


def _echo(interp, argv, node, cond):
    if interp.capture is None or stdout_redirected(node.redirects):
        return True
    args, newline = argv[1:], True
    while args and re.fullmatch(r"-[neE]+", args[0]):
        newline = newline and "n" not in args[0]
        args = args[1:]
    interp.capture.append(" ".join(args) + ("\n" if newline else ""))
    return True


def _printf(interp, argv, node, cond):
    if interp.capture is None or stdout_redirected(node.redirects) or len(argv) < 2:
        return True
    fmt, args = argv[1], argv[2:]
    if not re.fullmatch(r"(?:[^%]|%[sd%])*", fmt):
        interp.opaque = True
        return True
    out, k = [], 0
    for m in re.finditer(r"%[sd%]|[^%]+", fmt):
        piece = m.group(0)
        if piece == "%%":
            out.append("%")
        elif piece in ("%s", "%d"):
            out.append(args[k] if k < len(args) else ("" if piece == "%s" else "0"))
            k += 1
        else:
            out.append(piece.replace("\\n", "\n").replace("\\t", "\t"))
    interp.capture.append("".join(out))
    return True


def _basename(interp, argv, node, cond):
    args = [a for a in argv[1:] if not a.startswith("-")]
    if args and interp.capture is not None:
        base = args[0].rstrip("/").rsplit("/", 1)[-1] or "/"
        if len(args) > 1 and base.endswith(args[1]) and base != args[1]:
            base = base[: -len(args[1])]
        interp.capture.append(base + "\n")
    return True


def _dirname(interp, argv, node, cond):
    if len(argv) > 1 and interp.capture is not None:
        path = argv[1].rstrip("/") or "/"
        head = path.rsplit("/", 1)[0] if "/" in path else "."
        interp.capture.append((head or "/") + "\n")
    return True


def _cd(interp, argv, node, cond):
    target = argv[1] if len(argv) > 1 else None
    cwd = interp.state.cwd
    if target is None or target == "-" or has_marker(target):
        interp.state.cwd = "\ue003"  # somewhere known only at run time
    elif target.startswith("/"):
        interp.state.cwd = posixpath.normpath(target)
    elif cwd and cwd != "\ue003":
        interp.state.cwd = posixpath.normpath(posixpath.join(cwd, target))
    else:
        interp.state.cwd = "\ue003"
    return True


def _pwd(interp, argv, node, cond):
    if interp.capture is None or stdout_redirected(node.redirects):
        return True
    cwd = interp.state.cwd
    if cwd == "\ue003":
        interp.opaque = True
    else:
        interp.capture.append((cwd if cwd is not None else interp.ex.env_ref("PWD")) + "\n")
    return True


def _read(interp, argv, node, cond):
    names, array, k = [], False, 1
    while k < len(argv) and argv[k].startswith("-") and argv[k] != "-":
        option = argv[k]
        k += 1
        if option.endswith("a") and k < len(argv):
            array = True
            names.append(argv[k])
            k += 1
        elif option[-1] in "pdunNti":
            k += 1  # the option's value
    names += argv[k:]
    for name in names or ["REPLY"]:
        value = interp.ctx.table.runtime(f"(read into {name})", node.line)
        interp.state.set(name, [value] if array else value, node.line)
    return _unknown(interp, cond, "read takes its input when the script runs")


def _let(interp, argv, node, cond):
    status = True
    for expr in argv[1:]:
        status = interp.ex.arith_status(expr)
    return status


def _command(interp, argv, node, cond):
    if len(argv) > 1 and argv[1] in ("-v", "-V"):
        return _probe(interp, argv, node, cond)
    rest = [a for a in argv[1:] if not a.startswith("-")] if len(argv) > 1 else []
    if not rest:
        return True
    handler = BUILTINS.get(rest[0])
    return handler(interp, rest, node, cond) if handler else interp.external(rest, node, {}, cond)


def _probe(interp, argv, node, cond):
    return _unknown(interp, cond, f"'{' '.join(argv[:2])}' asks the machine that runs the script")


def _unknown(interp, cond, why: str):
    if cond:
        interp.why = why
        return None
    return True


def _test(interp, argv, node, cond):
    args = argv[1:]
    if argv[0] == "[":
        if not args or args[-1] != "]":
            interp.why = "the test has no closing ]"
            return False
        args = args[:-1]
    status, interp.why = interp.tests.test(args)
    return status


def _exit(interp, argv, node, cond):
    code = argv[1] if len(argv) > 1 else "0"
    raise ScriptExit(node.line, f"exit {interp.ctx.table.render(code)}")


def _return(interp, argv, node, cond):
    raise FunctionReturn()


def _loop_control(interp, argv, node, cond):
    if not interp.loops:
        return True
    n = interp.ex._int(argv[1]) if len(argv) > 1 else 1
    raise LoopControl(argv[0], max(1, n or 1))


def _exec(interp, argv, node, cond):
    if len(argv) == 1:
        return True  # exec with redirections only: the shell goes on
    return interp.external(argv, node, {}, cond)


def _no_op(interp, argv, node, cond):
    return True


BUILTINS = {
    ":": _no_op, "true": _no_op, "false": lambda i, a, n, c: False, "[": _test, "test": _test,
    "echo": _echo, "printf": _printf, "export": _declare, "declare": _declare, "typeset": _declare,
    "local": _declare, "readonly": _declare, "unset": _unset, "set": _set, "shift": _shift, "source": _source,
    ".": _source, "eval": _eval, "exit": _exit, "return": _return, "break": _loop_control,
    "continue": _loop_control, "cd": _cd, "pushd": _cd, "popd": _cd, "pwd": _pwd, "read": _read,
    "mapfile": _read, "readarray": _read, "let": _let, "command": _command, "type": _probe, "which": _probe,
    "hash": _probe, "basename": _basename, "dirname": _dirname, "exec": _exec, "getopts": lambda i, a, n, c: False,
    **{name: _no_op for name in ("trap", "ulimit", "umask", "wait", "sleep", "shopt", "alias", "unalias", "kill",
                                 "jobs", "disown", "builtin", "caller", "times", "dirs", "history", "bind",
                                 "complete", "enable", "logout")},
}
