"""``[ ]``, ``test`` and ``[[ ]]`` over values that may be known only at run time.

Each test answers True, False or None (undecidable here) with the reason it is undecidable. A
value the script reads from the environment without a default is taken as set and not empty;
whether a file exists is known only for files the adapter looked at (next to the script).
"""

from __future__ import annotations

import re

from wizard.core.scripts.lexer import Word
from wizard.core.scripts.values import has_marker, strip_markers

_UNARY_FILE = {"-e", "-f", "-r", "-s", "-w", "-x", "-d", "-L", "-h", "-p", "-S", "-b", "-c", "-g", "-u", "-k",
               "-O", "-G", "-N", "-a"}
_BINARY_STR = {"=", "==", "!=", "<", ">"}
_BINARY_NUM = {"-eq", "-ne", "-lt", "-le", "-gt", "-ge"}
_BINARY_FILE = {"-nt", "-ot", "-ef"}

Result = tuple[bool | None, str]


class Tests:
    """Evaluates tests for one interpreter (its expander and its context)."""

    def __init__(self, interp):
        self.interp = interp
        self.ex = interp.ex
        self.ctx = interp.ctx

    # ---- [ ] and test ---------------------------------------------------------------------------
    def test(self, args: list[str]) -> Result:
        if "-o" in args[1:-1]:
            i = len(args) - 1 - args[::-1].index("-o")
            return _or(self.test(args[:i]), self.test(args[i + 1:]))
        if "-a" in args[1:-1] and not (len(args) == 2 and args[0] == "-a"):
            i = len(args) - 1 - args[::-1].index("-a")
            return _and(self.test(args[:i]), self.test(args[i + 1:]))
        n = len(args)
        if n == 0:
            return False, ""
        if args[0] == "!" and n > 1:
            return _not(self.test(args[1:]))
        if n == 1:
            return self.nonempty(args[0])
        if args[0] == "(" and args[-1] == ")":
            return self.test(args[1:-1])
        if n == 2:
            return self.unary(args[0], args[1])
        if n == 3:
            return self.binary(args[0], args[1], args[2])
        return None, f"the test has {n} words, which the wizard does not read"

    def nonempty(self, value: str) -> Result:
        if strip_markers(value):
            return True, ""
        if value == "":
            return False, ""
        kinds = {p.kind for p in self.ctx.table.of(value)}
        if kinds == {"env"}:
            return True, ""  # read from the environment, taken as set
        return None, self._why(value)

    def unary(self, op: str, value: str) -> Result:
        if op == "-n":
            return self.nonempty(value)
        if op == "-z":
            return _not(self.nonempty(value))
        if op == "-v":
            return value in self.interp.state.vars, ""
        if op in _UNARY_FILE:
            return self.file_test(op, value)
        if op == "-t":
            return None, "whether the output is a terminal is known only when the script runs"
        return None, f"the test {op} is not one the wizard reads"

    def file_test(self, op: str, path: str) -> Result:
        if has_marker(path):
            return None, f"the path {self.ctx.table.render(path)} is known only when the script runs"
        if path not in self.ctx.wanted:
            self.ctx.wanted.append(path)
        if path in self.ctx.files and op in ("-e", "-f", "-r", "-s", "-a"):
            text = self.ctx.files[path]
            return (text is not None and (op != "-s" or text != "")), ""
        return None, f"whether {path} exists is known only on the machine that runs the script"

    def binary(self, a: str, op: str, b: str, pattern: re.Pattern | None = None) -> Result:
        if op in _BINARY_STR:
            if has_marker(a) or (pattern is None and has_marker(b)):
                return self._compare_unknown(a, op, b)
            if op in ("<", ">"):
                return (a < b) if op == "<" else (a > b), ""
            same = bool(pattern.match(a)) if pattern is not None else a == b
            return (same if op != "!=" else not same), ""
        if op in _BINARY_NUM:
            if has_marker(a) or has_marker(b):
                return None, self._why(a + b)
            try:
                x, y = int(a.strip() or "0"), int(b.strip() or "0")
            except ValueError:
                return False, ""  # bash: "integer expression expected", the test fails
            return {"-eq": x == y, "-ne": x != y, "-lt": x < y, "-le": x <= y, "-gt": x > y, "-ge": x >= y}[op], ""
        if op in _BINARY_FILE:
            return None, "comparing files is known only on the machine that runs the script"
        if op == "=~":
            if has_marker(a) or has_marker(b):
                return None, self._why(a + b)
            try:
                return re.search(b, a) is not None, ""
            except re.error:
                return None, f"the pattern {b!r} is not one the wizard reads"
        return None, f"the test {op} is not one the wizard reads"

    def _compare_unknown(self, a: str, op: str, b: str) -> Result:
        if op in ("=", "==", "!=") and ("" in (a, b)):
            other = b if a == "" else a
            status, why = self.nonempty(other)
            if status is not None:
                return (not status) if op != "!=" else status, ""
        return None, self._why(a + b)

    def _why(self, value: str) -> str:
        items = self.ctx.table.of(value)
        texts = list(dict.fromkeys(p.text for p in items))
        if not texts:
            return "it depends on a value known only when the script runs"
        return f"{', '.join(texts[:3])} {'is' if len(texts) == 1 else 'are'} known only when the script runs"

    # ---- [[ ]] ---------------------------------------------------------------------------------
    def double_bracket(self, items: list[Word | str]) -> Result:
        self._items, self._i = items, 0
        result = self._or_expr()
        if self._i < len(items):
            return None, "the [[ ]] test is not one the wizard reads"
        return result

    def _peek(self):
        return self._items[self._i] if self._i < len(self._items) else None

    def _or_expr(self) -> Result:
        left = self._and_expr()
        while self._peek() == "||":
            self._i += 1
            left = _or(left, self._and_expr())
        return left

    def _and_expr(self) -> Result:
        left = self._unary_expr()
        while self._peek() == "&&":
            self._i += 1
            left = _and(left, self._unary_expr())
        return left

    def _unary_expr(self) -> Result:
        tok = self._peek()
        if isinstance(tok, Word) and tok.raw_literal == "!":
            self._i += 1
            return _not(self._unary_expr())
        if tok == "(":
            self._i += 1
            inner = self._or_expr()
            if self._peek() == ")":
                self._i += 1
            return inner
        return self._primary()

    def _primary(self) -> Result:
        words = []
        while self._i < len(self._items) and self._peek() not in ("&&", "||", ")") and len(words) < 3:
            words.append(self._items[self._i])
            self._i += 1
        if len(words) == 3 and (isinstance(words[1], str) or words[1].raw_literal in _BINARY_STR | _BINARY_NUM
                                | _BINARY_FILE | {"=~"}):
            op = words[1] if isinstance(words[1], str) else words[1].raw_literal
            a = self.ex.text(words[0])
            pattern = self.ex.pattern(words[2]) if op in ("==", "=", "!=") else None
            b = self.ex.text(words[2]) if pattern is None or op == "=~" else "<pattern>"
            if op in ("==", "=", "!=") and pattern is None:
                return None, self._why(self.ex.text(words[2]))
            return self.binary(a, op, b, pattern)
        if len(words) == 2 and not isinstance(words[0], str):
            return self.unary(words[0].raw_literal or "", self.ex.text(words[1]))
        if len(words) == 1 and not isinstance(words[0], str):
            return self.nonempty(self.ex.text(words[0]))
        return None, "the [[ ]] test is not one the wizard reads"


def _not(r: Result) -> Result:
    return (None if r[0] is None else not r[0]), r[1]


def _and(a: Result, b: Result) -> Result:
    if a[0] is False or b[0] is False:
        return False, ""
    if a[0] is True and b[0] is True:
        return True, ""
    return None, a[1] or b[1]


def _or(a: Result, b: Result) -> Result:
    if a[0] is True or b[0] is True:
        return True, ""
    if a[0] is False and b[0] is False:
        return False, ""
    return None, a[1] or b[1]
