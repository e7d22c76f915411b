"""Expand bash words statically: variables, defaults, arrays, arithmetic; unknowns stay references.

Used by the launch-script reader; it never runs anything.
"""

from __future__ import annotations

import ast
import operator
import re

from wizard.core.scripts.lexer import Part, Token, Word, lex

ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=")


class Unknown(str):
    """Text standing in for a value the script computes at run time."""


class Evaluator:
    def __init__(self) -> None:
        self.vars: dict[str, str | list[str]] = {}
        self.conditional: set[str] = set()
        self.env: set[str] = set()
        self.warnings: list[str] = []
        self.forwards_args = False

    # ---- expansion -------------------------------------------------------------------
    def expand_words(self, words: list[Word]) -> list[str]:
        out: list[str] = []
        for w in words:
            out.extend(self.expand(w))
        return out

    def expand(self, word: Word) -> list[str]:
        """Words after expansion and word splitting (no globbing: verl values are not paths to glob)."""
        fields: list[str] = [""]
        started = False
        for part in word.parts:
            if part.kind in ("lit", "esc"):
                fields[-1] += part.text
                started = True
            elif part.kind == "dq":
                if not _only_list_expansions(part):
                    started = True
                for sub in part.parts:
                    if sub.kind == "var" and sub.text in ("@", "*") or (sub.kind == "var" and sub.text.startswith("@:")):
                        self.forwards_args = True
                        continue
                    if sub.kind == "var" and re.fullmatch(r"[A-Za-z_]\w*\[[@*]\]", sub.text):
                        items = self._array_items(sub.text.split("[")[0])
                        if items is not None:
                            if items:
                                fields[-1] += items[0]
                                fields.extend(items[1:])
                            continue
                    fields[-1] += self._part_text(sub, word.line)
            else:  # unquoted expansion: split on whitespace
                if part.kind == "var" and (part.text in ("@", "*") or part.text.startswith("@:")):
                    self.forwards_args = True
                    continue
                if part.kind == "var" and re.fullmatch(r"[A-Za-z_]\w*\[[@*]\]", part.text):
                    items = self._array_items(part.text.split("[")[0]) or []
                    pieces = [p for item in items for p in item.split()]
                else:
                    text = self._part_text(part, word.line)
                    if isinstance(text, Unknown) or self._is_env_ref(part):
                        fields[-1] += text
                        started = True
                        continue
                    pieces = text.split()
                    if text[:1].isspace():
                        pieces = [""] + pieces if fields[-1] else pieces
                    if text[-1:].isspace() and pieces:
                        pieces = pieces + [""]
                if not pieces:
                    continue
                fields[-1] += pieces[0]
                fields.extend(pieces[1:])
                started = True
        if not started and fields == [""]:
            return []  # "${EMPTY[@]}" and "$@" expand to no word at all
        result = [f for f in fields if f != ""] if not _has_quoted_empty(word) else fields
        return result if (started or result) else []

    def _is_env_ref(self, part: Part) -> bool:
        name = _var_name(part.text)
        return part.kind == "var" and name is not None and name not in self.vars and not name.isdigit()

    def _array_items(self, name: str) -> list[str] | None:
        value = self.vars.get(name)
        if isinstance(value, list):
            return value
        if isinstance(value, str):
            return [value]
        return None

    def text(self, word: Word) -> str:
        """A word as one string (assignment values: no splitting); Unknown if any piece is."""
        out = []
        for part in word.parts:
            if part.kind in ("lit", "esc"):
                out.append(part.text)
            elif part.kind == "dq":
                out.extend(self._part_text(s, word.line) for s in part.parts)
            else:
                out.append(self._part_text(part, word.line))
        joined = "".join(out)
        return Unknown(joined) if any(isinstance(o, Unknown) for o in out) else joined

    def _part_text(self, part: Part, line: int) -> str:
        if part.kind in ("lit", "esc"):
            return part.text
        if part.kind == "cmd" and part.text.strip() == "pwd":
            return self._lookup("PWD", line)  # $(pwd) is $PWD
        if part.kind == "cmd":
            self.warnings.append(f"line {line}: $({part.text}) runs a command; its output is unknown, kept as text")
            return Unknown(f"$({part.text})")
        if part.kind == "arith":
            return self._arith(part.text, line)
        return self._param(part.text, line)

    def _param(self, expr: str, line: int) -> str:
        m = re.fullmatch(r"#?([A-Za-z_]\w*|\d+|[@*#?$!-])(.*)", expr, re.S)
        if not m:
            self.warnings.append(f"line {line}: cannot evaluate ${{{expr}}}; kept as text")
            return Unknown("${" + expr + "}")
        name, op = m.group(1), m.group(2)
        if expr.startswith("#") and name not in "@*#?$!-":
            value = self._lookup(name, line)
            return str(len(value)) if not isinstance(value, Unknown) else Unknown("${" + expr + "}")
        if name in ("@", "*"):
            self.forwards_args = True
            return ""
        if name in "#?$!-" and len(name) == 1:
            self.warnings.append(f"line {line}: ${name} depends on how the script is run; kept as text")
            return Unknown("$" + name)
        if name.isdigit():
            m2 = re.fullmatch(r":?-(.*)", op, re.S)
            if m2:
                return self._expand_text(m2.group(1), line)
            self.warnings.append(f"line {line}: ${name} is a command-line argument of the script; kept as text")
            return Unknown("${" + expr + "}")
        known = name in self.vars
        value = self.vars.get(name)
        if isinstance(value, list):
            value = value[0] if value else ""
        if not op:
            return self._lookup(name, line)
        for prefix, use_default_if_empty in ((":-", True), ("-", False), (":=", True), ("=", False)):
            if op.startswith(prefix):
                arg = op[len(prefix) :]
                if not known:
                    if name not in self.conditional:
                        self.warnings.append(
                            f"line {line}: ${{{name}{prefix}...}}: {name} is not set in the script, so the default "
                            "applies (the environment could change it)"
                        )
                    result = self._expand_text(arg, line)
                    if prefix.endswith("="):
                        self.vars[name] = result
                    return result
                if use_default_if_empty and value == "":
                    return self._expand_text(arg, line)
                return value
        for prefix, need_nonempty in ((":+", True), ("+", False)):
            if op.startswith(prefix):
                if not known and name not in self.conditional:
                    self.warnings.append(
                        f"line {line}: ${{{name}{prefix}...}}: {name} is not set in the script, so it expands to "
                        "nothing (the environment could change it)"
                    )
                present = known and (value != "" or not need_nonempty)
                return self._expand_text(op[len(prefix) :], line) if present else ""
        base = self._lookup(name, line)
        if isinstance(base, Unknown):
            return Unknown("${" + expr + "}")
        if op == ",,":
            return base.lower()
        if op == "^^":
            return base.upper()
        sub = re.fullmatch(r"(//?)([^/]*)/?(.*)", op, re.S)
        if sub:
            pattern, repl = self._expand_text(sub.group(2), line), self._expand_text(sub.group(3), line)
            return base.replace(pattern, repl) if sub.group(1) == "//" else base.replace(pattern, repl, 1)
        self.warnings.append(f"line {line}: cannot evaluate ${{{expr}}}; kept as text")
        return Unknown("${" + expr + "}")

    def _lookup(self, name: str, line: int) -> str:
        if name in self.vars:
            value = self.vars[name]
            if name in self.conditional:
                self.warnings.append(f"line {line}: {name} is assigned inside an if/loop; used its value before that")
            return value[0] if isinstance(value, list) and value else ("" if isinstance(value, list) else value)
        self.env.add(name)
        return Unknown("$" + name)

    def _expand_text(self, text: str, line: int) -> str:
        """Expand a default value such as ``"${HOME}/x"`` (it may carry quotes and expansions)."""
        tokens = lex(text)
        words = [t.word for t in tokens if t.kind == "word" and t.word is not None]
        return " ".join(self.text(w) for w in words)

    def _arith(self, expr: str, line: int) -> str:
        names = {}
        for name in set(re.findall(r"[A-Za-z_]\w*", expr)):
            value = self.vars.get(name)
            if not isinstance(value, str) or not re.fullmatch(r"-?\d+", value.strip()):
                self.warnings.append(f"line {line}: $(({expr})) uses {name}, which is not a known integer; kept as text")
                return Unknown(f"$(({expr}))")
            names[name] = int(value)
        expr_d = re.sub(r"\$\{?([A-Za-z_]\w*)\}?", r"\1", expr)
        try:
            return str(_eval_int(ast.parse(expr_d.strip(), mode="eval").body, names))
        except (ValueError, SyntaxError, ZeroDivisionError):
            self.warnings.append(f"line {line}: cannot evaluate $(({expr})); kept as text")
            return Unknown(f"$(({expr}))")

    # ---- statements --------------------------------------------------------------------
    def assign(self, word: Word, conditional: bool) -> None:
        raw = self.text(word)
        m = ASSIGN.match(raw)
        if not m:
            return
        name, append, value = m.group(1), m.group(2), raw[m.end() :]
        if isinstance(raw, Unknown):
            value = Unknown(value)
        if append and isinstance(self.vars.get(name), str):
            value = self.vars[name] + value
        self._set(name, value, conditional)

    def assign_array(self, tok: Token, conditional: bool) -> None:
        self._set(tok.name, self.expand_words(tok.items), conditional)

    def _set(self, name: str, value, conditional: bool) -> None:
        if conditional:
            self.conditional.add(name)
            if name in self.vars:
                return  # keep the value from before the branch
        self.vars[name] = value


_OPS_ARITH = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Div: operator.floordiv, ast.Mod: operator.mod,
}


def _eval_int(node, names) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS_ARITH:
        left, right = _eval_int(node.left, names), _eval_int(node.right, names)
        if isinstance(node.op, ast.Div):
            return int(left / right)  # bash truncates toward zero
        return _OPS_ARITH[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_eval_int(node.operand, names)
    raise ValueError("unsupported arithmetic")


def _var_name(text: str) -> str | None:
    m = re.match(r"#?([A-Za-z_]\w*)", text)
    return m.group(1) if m else None


def _only_list_expansions(part: Part) -> bool:
    """A double-quoted part that is nothing but "$@" / "${ARR[@]}" expansions (they may give zero words)."""
    return bool(part.parts) and all(
        s.kind == "var" and (s.text in ("@", "*") or s.text.startswith("@:") or re.fullmatch(r"[A-Za-z_]\w*\[[@*]\]", s.text))
        for s in part.parts
    )


def _has_quoted_empty(word: Word) -> bool:
    return any(p.kind == "dq" or (p.kind == "esc" and p.text == "") for p in word.parts)


