"""Expand bash words as bash would: parameters, defaults, arrays, arithmetic, word splitting.

What the script does not set is taken from an empty environment, so ``${X:-default}`` gives its
default (recorded as a knob left at its default); a bare ``$X`` the script never sets stays a
reference to the environment; a value bash computes only when it runs (``$(date)``,
``$RANDOM``) becomes a placeholder with a note. No globbing: verl values are not paths to glob.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable

from wizard.core.scripts.arith import ArithError, ArithUnknown, evaluate
from wizard.core.scripts.lexer import Lexer, Part, ShellSyntaxError, Word, lex
from wizard.core.scripts.param_ops import apply_op
from wizard.core.scripts.state import MAX_VALUE_CHARS, Context, ScriptExit, State, check_size
from wizard.core.scripts.values import FORWARD, has_marker

_PARAM = re.compile(r"([A-Za-z_]\w*|\d+|[@*#?$!-])(?:\[([^\]]*)\])?(.*)", re.S)
_LIST = re.compile(r"(?:([A-Za-z_]\w*)\[([@*])\]|([@*]))(?::(.*))?", re.S)
_RUNTIME_VARS = {"RANDOM", "SRANDOM", "SECONDS", "EPOCHSECONDS", "EPOCHREALTIME", "BASHPID", "PPID", "UID", "EUID",
                 "BASH_VERSION", "BASH_VERSINFO", "HISTCMD", "COLUMNS", "LINES", "OSTYPE", "MACHTYPE", "HOSTTYPE"}
_IFS_SPLIT = re.compile(r"[ \t\n]+")


class Expander:
    def __init__(self, ctx: Context, state: State, substitute: Callable[[str, int], str], file: str | None = None):
        self.ctx = ctx
        self.state = state
        self.substitute = substitute
        self.file = file
        self.line = 0
        self.function = ""

    # ---- words -------------------------------------------------------------------------------
    def words(self, words: list[Word]) -> list[str]:
        out: list[str] = []
        for w in words:
            out.extend(self.expand(w))
            if len(out) > 1000:
                check_size("the command's words", out, w.line)
        return out

    def expand(self, word: Word) -> list[str]:
        """The fields bash makes of ``word``: expansions, then splitting of unquoted results."""
        self.line = word.line
        fields: list[list[str]] = [[]]
        quoted = [False]

        size = [0]

        def add(text: str, q: bool) -> None:
            fields[-1].append(text)
            quoted[-1] = quoted[-1] or q
            size[0] += len(text) + 1
            if size[0] > MAX_VALUE_CHARS:
                check_size("a word", "".join("".join(f) for f in fields), word.line)

        def new_field() -> None:
            fields.append([])
            quoted.append(False)

        for k, part in enumerate(word.parts):
            if part.kind in ("lit", "esc"):
                text = self._tilde(part.text) if part.kind == "lit" and k == 0 else part.text
                add(text, part.kind == "esc")
            elif part.kind == "dq":
                self._expand_dq(part, add, new_field)
            else:
                items = self.list_value(part.text) if part.kind == "var" else None
                for n, item in enumerate(items if items is not None else [self.part_text(part)]):
                    if n:
                        new_field()
                    for m, piece in enumerate(_IFS_SPLIT.split(item) if item else []):
                        if m:
                            new_field()
                        if piece:
                            add(piece, False)
        out = ["".join(f) for f, q in zip(fields, quoted) if q or "".join(f)]
        check_size("a word", out, word.line)
        return out

    def _expand_dq(self, part: Part, add, new_field) -> None:
        lists = [self.list_value(s.text) if s.kind == "var" else None for s in part.parts]
        if part.parts and all(v is not None and not v for v in lists):
            return  # "$@" / "${EMPTY[@]}" with nothing in it: no word at all
        if not part.parts:
            add("", True)
        for sub, items in zip(part.parts, lists):
            if items is None:
                add(self.part_text(sub), True)
            elif sub.text.startswith("*") or sub.text.split(":")[0].endswith("[*]"):
                add(" ".join(items), True)
            else:
                for n, item in enumerate(items):
                    if n:
                        new_field()
                    add(item, True)

    def text(self, word: Word, assignment: bool = False) -> str:
        """The word as one string, with no splitting (an assignment's value, a test's operand)."""
        self.line = word.line
        out = []
        for k, part in enumerate(word.parts):
            if part.kind in ("lit", "esc"):
                out.append(self._tilde(part.text) if part.kind == "lit" and k == 0 and assignment else part.text)
            elif part.kind == "dq":
                out.extend(self._joined(s) for s in part.parts)
            else:
                out.append(self._joined(part))
        text = "".join(out)
        check_size("a value", text, word.line)
        return text

    def _joined(self, part: Part) -> str:
        items = self.list_value(part.text) if part.kind == "var" else None
        return " ".join(items) if items is not None else self.part_text(part)

    def pattern(self, word: Word) -> re.Pattern | None:
        """A case/[[ == ]] pattern as a regex (quoted parts literal); None when it holds a run-time value."""
        out = []
        for part in word.parts:
            if part.kind == "lit":
                out.append(fnmatch.translate(part.text)[4:-3])
            elif part.kind == "esc":
                out.append(re.escape(part.text))
            else:
                text = self.text(Word([part], word.line))
                if has_marker(text):
                    return None
                out.append(re.escape(text) if part.kind == "dq" else fnmatch.translate(text)[4:-3])
        return re.compile("(?s:" + "".join(out) + r")\Z")

    def _tilde(self, text: str) -> str:
        if text == "~" or text.startswith("~/"):
            return self.ctx.table.env("HOME", self.line) + text[1:]
        return text

    # ---- parts -------------------------------------------------------------------------------
    def part_text(self, part: Part) -> str:
        if part.kind in ("lit", "esc"):
            return part.text
        if part.kind == "cmd":
            return self.substitute(part.text, self.line)
        if part.kind == "arith":
            return self.arith(part.text)
        if part.kind == "proc":
            return self.runtime(f"<({part.text})", "is a process substitution; it exists only when the script runs")
        if part.text in self.state.vars and isinstance(self.state.vars[part.text], str):
            return self.state.vars[part.text]  # the common case, $NAME of a set variable
        value = self.param(part.text)
        return " ".join(value) if isinstance(value, list) else value

    def runtime(self, text: str, why: str) -> str:
        return self.ctx.table.runtime(text, self.line, why)

    def list_value(self, expr: str) -> list[str] | None:
        """Items of "$@", "${A[@]}", "${@:2}", "${A[@]:1:2}"; None when ``expr`` is no list expansion."""
        m = _LIST.fullmatch(expr)
        if not m:
            return None
        name = m.group(1)
        if name is None:
            if self.state.positional is None:
                return [FORWARD]  # the script's own arguments: none when it is read, passed on when run
            items = list(self.state.positional)
        else:
            value = self.state.vars.get(name)
            items = value if isinstance(value, list) else ([] if value is None else [value])
            if value is None and name not in self.state.vars:
                items = self._unset_array(name)
        if m.group(4) is not None:
            items = self._slice(items, m.group(4), positional=name is None)
        return items

    def _unset_array(self, name: str) -> list[str]:
        if name == "BASH_SOURCE":
            return [self._script_path()]
        return []

    def _slice(self, items: list[str], spec: str, positional: bool) -> list[str]:
        start_text, _, length_text = spec.partition(":")
        start = self._int(start_text)
        if positional and FORWARD in items:
            return [FORWARD]
        if start is None:
            return [self.runtime("${...:" + spec + "}", "has an offset known only at run time")]
        start = start - 1 if positional and start > 0 else start
        chosen = items[start:] if start >= 0 else items[start:]
        if length_text:
            length = self._int(length_text)
            chosen = chosen[:length] if length is not None and length >= 0 else chosen
        return chosen

    def _int(self, text: str) -> int | None:
        value = self.arith(text) if text.strip() else "0"
        try:
            return int(value)
        except ValueError:
            return None

    def _script_path(self) -> str:
        if self.ctx.script_path:
            return self.ctx.script_path
        return self.runtime("${BASH_SOURCE[0]}", "is the script's own path, known when it runs")

    # ---- parameters --------------------------------------------------------------------------
    def param(self, expr: str) -> str | list[str]:
        if expr == "#":
            if self.state.positional is None:
                return self.runtime("$#", "is the number of arguments the script is given")
            return str(len([p for p in self.state.positional if p != FORWARD]))
        if expr.startswith("#") and len(expr) > 1:
            return self._length(expr[1:])
        if expr.startswith("!") and len(expr) > 1:
            target = self.param(expr[1:])
            if isinstance(target, str) and re.fullmatch(r"[A-Za-z_]\w*", target):
                return self.param(target)
            return self.runtime("${" + expr + "}", "names its variable only at run time")
        m = _PARAM.fullmatch(expr)
        if not m:
            return self.runtime("${" + expr + "}", "is an expansion the wizard does not evaluate")
        name, index, op = m.group(1), m.group(2), m.group(3)
        value = self._get(name, index)
        if not op:
            return self._bare(name, value, index)
        return apply_op(self, name, index, value, op, expr)

    def _length(self, expr: str) -> str:
        items = self.list_value(expr)
        if items is not None:
            return str(len(items)) if FORWARD not in items else self.runtime("${#" + expr + "}", "counts the "
                                                                               "script's arguments")
        m = _PARAM.fullmatch(expr)
        if m and not m.group(3) and self._get(m.group(1), m.group(2)) is None and (
                m.group(1).isdigit() or m.group(2) is not None or not self.from_environment(m.group(1))):
            return "0"  # unset in an empty environment (an argument the script is not given, an array element)
        value = self.param(expr)
        value = " ".join(value) if isinstance(value, list) else value
        if has_marker(value):
            return self.runtime("${#" + expr + "}", "is the length of a value known only at run time")
        return str(len(value))

    def _get(self, name: str, index: str | None) -> str | None:
        """The value (None: unset). Positional parameters of the script itself read as unset."""
        if name.isdigit():
            if name == "0":
                return self._script_path()
            pos = self.state.positional
            if pos is None:
                return None
            n = int(name) - 1
            return pos[n] if n < len(pos) and pos[n] != FORWARD else None
        if name in ("@", "*"):
            items = self.list_value(name) or []
            return " ".join(items)
        if name in ("?", "$", "!", "-"):
            return self.runtime("$" + name, "depends on how the script runs")
        if name == "LINENO":
            return str(self.line)
        if name == "FUNCNAME":
            return self.function
        if name in _RUNTIME_VARS and name not in self.state.vars:
            return self.runtime("$" + name, "changes every time the script runs")
        if name == "PWD" and self.state.cwd is not None and name not in self.state.vars:
            return self.state.cwd
        value = self.state.vars.get(name)
        if name == "BASH_SOURCE" and value is None:
            value = [self._script_path()]
        if isinstance(value, list):
            if index in (None, "", "0"):
                return value[0] if value else ""
            n = self._int(index)
            return value[n] if n is not None and -len(value) <= n < len(value) else ""
        return value

    def _bare(self, name: str, value: str | None, index: str | None = None) -> str:
        if value is not None:
            return value
        if name.isdigit():
            return self.argument(name)
        if index is not None:
            return ""  # an element of an array the script never set
        if name in self.ctx.knobs:  # the script gives it a default somewhere: unset, it is empty
            self.ctx.defaults.setdefault(name, ("", self.line))
            if self.state.nounset:
                self.ctx.note(self.line, "env", f"${{{name}}} is read before the script sets it, under set -u: "
                              f"bash stops here ('{name}: unbound variable') unless {name} is in the environment; "
                              "read as empty", "warning", None, self.file)
            return ""
        return self.env_ref(name)

    def from_environment(self, name: str) -> bool:
        """Whether the script reads ``name`` from the environment (so it is taken as set), not as an empty knob."""
        return name in self.ctx.env_reads or name in self.ctx.environment

    def argument(self, name: str) -> str:
        """A positional parameter that is not there: the script is read as run with no arguments."""
        if self.state.positional is None:
            self.ctx.args_read.setdefault(int(name), self.line)
        return ""

    def env_ref(self, name: str) -> str:
        self.ctx.env_reads.setdefault(name, self.line)
        return self.ctx.table.env(name, self.line)

    def default(self, name: str, text: str) -> str:
        value = self.fragment(text)
        if not name.isdigit():
            self.ctx.defaults.setdefault(name, (self.ctx.table.render(value), self.line))
        return value

    def fragment(self, text: str) -> str:
        """Expand the word inside ``${X:-word}`` (it may hold quotes and expansions of its own)."""
        if not text:
            return ""
        words = [t.word for t in lex(text, self.line) if t.kind == "word" and t.word is not None]
        line = self.line
        out = " ".join(self.text(w, assignment=True) for w in words)  # ~ expands in ${X:-~/dir} too
        self.line = line
        return out

    def arith(self, expr: str) -> str:
        try:
            text = self._expand_in_arith(expr)
        except ShellSyntaxError as exc:
            return self.runtime(f"$(({expr}))", f"is an error in bash ({exc})")
        if has_marker(text):
            return self.runtime(f"$(({expr}))", "uses a value known only at run time")
        try:
            return str(evaluate(text, self._arith_lookup, self._arith_assign))
        except ArithUnknown:
            return self.runtime(f"$(({expr}))", "uses a variable the script never sets")
        except ArithError as exc:
            return self.runtime(f"$(({expr}))", f"is an error in bash ({exc})")

    def arith_status(self, expr: str) -> bool | None:
        try:
            text = self._expand_in_arith(expr)
        except ShellSyntaxError:
            return False  # bash: a syntax error in the expression, the command fails
        if has_marker(text):
            return None
        try:
            return evaluate(text, self._arith_lookup, self._arith_assign) != 0
        except (ArithUnknown, ArithError):
            return None

    def _expand_in_arith(self, expr: str) -> str:
        if "$" not in expr:
            return expr
        out, i = [], 0
        lexer = Lexer(expr, self.line)
        while i < len(expr):
            j = expr.find("$", i)
            if j < 0:
                out.append(expr[i:])
                break
            out.append(expr[i:j])
            lexer.i = j
            part = lexer._dollar()
            out.append(self.part_text(part) if part.kind != "lit" else "$")
            i = max(lexer.i, j + 1)
        return "".join(out)

    def _arith_lookup(self, name: str, depth: int) -> int:
        value = self._get(name, None)
        if value is None:
            if name in self.state.vars:
                return 0
            raise ArithUnknown(name)
        value = value.strip()
        if has_marker(value):
            raise ArithUnknown(name)
        if not value:
            return 0
        if re.fullmatch(r"-?\d+", value):
            return int(value)
        if depth > 8:
            raise ArithError(f"{name}: expression recursion level exceeded")
        return evaluate(value, lambda n, d: self._arith_lookup(n, depth + 1 + d), self._arith_assign)

    def _arith_assign(self, name: str, value: int) -> None:
        self.state.set(name, str(value), self.line)

    def stop(self, why: str) -> None:
        raise ScriptExit(self.line, why)
