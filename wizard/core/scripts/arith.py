"""Bash arithmetic (``$(( ))``, ``(( ))``, ``let``): 64-bit integers, C operators, assignments.

A Pratt parser over the expression; a name whose value is not a known integer raises
``ArithUnknown`` so the caller keeps the whole expression as a run-time value.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_TOKEN = re.compile(
    r"\s*(?:(0[xX][0-9a-fA-F]+|\d+#[0-9a-zA-Z@_]+|\d+)|([A-Za-z_][A-Za-z0-9_]*)"
    r"|(\*\*=|<<=|>>=|\+\+|--|\*\*|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&^|]=|[-+*/%<>&^|!~?:=(),]))"
)
_BINARY = {  # operator: (precedence, right-associative)
    ",": (1, False), "?": (3, True), "||": (4, False), "&&": (5, False), "|": (6, False), "^": (7, False),
    "&": (8, False), "==": (9, False), "!=": (9, False), "<": (10, False), "<=": (10, False), ">": (10, False),
    ">=": (10, False), "<<": (11, False), ">>": (11, False), "+": (12, False), "-": (12, False),
    "*": (13, False), "/": (13, False), "%": (13, False), "**": (15, True),
}
_ASSIGN_OPS = {"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "^=", "|=", "**="}
MAX_DEPTH = 64


class ArithUnknown(Exception):
    """The expression uses a value known only when the script runs."""


class ArithError(ValueError):
    """Bash itself would fail on this expression (division by 0, a syntax error)."""


def wrap(n: int) -> int:
    n &= (1 << 64) - 1
    return n - (1 << 64) if n >= 1 << 63 else n


class Arith:
    def __init__(self, text: str, lookup: Callable[[str, int], int], assign: Callable[[str, int], None], depth=0):
        self.toks = _tokenize(text)
        self.i = 0
        self.lookup = lookup
        self.assign = assign
        self.depth = depth
        self.skip = 0  # >0 while evaluating a branch whose value is discarded (short-circuit)

    def evaluate(self) -> int:
        if not self.toks:
            return 0
        value = self.expr(0)
        if self.i < len(self.toks):
            raise ArithError(f"syntax error near {self.toks[self.i][1]!r}")
        return value

    def peek(self) -> str | None:
        return self.toks[self.i][1] if self.i < len(self.toks) else None

    def expr(self, min_prec: int) -> int:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ArithError("expression nested too deep")
        left = self.unary()
        while True:
            op = self.peek()
            if op in _ASSIGN_OPS:
                raise ArithError("assignment to something that is not a variable")
            if op not in _BINARY or _BINARY[op][0] < min_prec:
                break
            prec, right_assoc = _BINARY[op]
            self.i += 1
            if op == "?":
                left = self._ternary(left)
                continue
            if op in ("&&", "||"):
                short = (left == 0) if op == "&&" else (left != 0)
                self.skip += short
                right = self.expr(prec + 1)
                self.skip -= short
                left = int(left != 0 and right != 0) if op == "&&" else int(left != 0 or right != 0)
                continue
            right = self.expr(prec if right_assoc else prec + 1)
            left = self._binary(op, left, right)
        self.depth -= 1
        return left

    def _ternary(self, cond: int) -> int:
        self.skip += cond == 0
        a = self.expr(0)
        self.skip -= cond == 0
        if self.peek() != ":":
            raise ArithError("'?' without ':'")
        self.i += 1
        self.skip += cond != 0
        b = self.expr(3)
        self.skip -= cond != 0
        return a if cond else b

    def unary(self) -> int:
        tok = self.toks[self.i] if self.i < len(self.toks) else None
        if tok is None:
            raise ArithError("the expression ends too early")
        kind, text = tok
        self.i += 1
        if kind == "num":
            return wrap(_number(text))
        if kind == "name":
            if self.peek() in _ASSIGN_OPS:
                op = self.toks[self.i][1]
                self.i += 1
                value = self.expr(3)
                if op != "=":
                    value = self._binary(op[:-1], self._get(text), value)
                return self._set(text, value)
            if self.peek() in ("++", "--"):
                op = self.toks[self.i][1]
                self.i += 1
                old = self._get(text)
                self._set(text, old + (1 if op == "++" else -1))
                return old
            return self._get(text)
        if text == "(":
            value = self.expr(0)
            if self.peek() != ")":
                raise ArithError("'(' without ')'")
            self.i += 1
            return value
        if text in ("++", "--") and self.peek() is not None and self.toks[self.i][0] == "name":
            name = self.toks[self.i][1]
            self.i += 1
            return self._set(name, self._get(name) + (1 if text == "++" else -1))
        if text in ("+", "-", "!", "~"):
            value = self.unary()
            return {"+": value, "-": wrap(-value), "!": int(value == 0), "~": wrap(~value)}[text]
        raise ArithError(f"syntax error near {text!r}")

    def _get(self, name: str) -> int:
        return 0 if self.skip else self.lookup(name, self.depth)

    def _set(self, name: str, value: int) -> int:
        value = wrap(value)
        if not self.skip:
            self.assign(name, value)
        return value

    def _binary(self, op: str, a: int, b: int) -> int:
        if op in ("/", "%") and b == 0:
            if self.skip:
                return 0
            raise ArithError("division by 0")
        if op == "/":
            q = abs(a) // abs(b)
            return wrap(q if (a >= 0) == (b >= 0) else -q)
        if op == "%":
            return wrap(abs(a) % abs(b) * (1 if a >= 0 else -1))
        if op == "**":
            if b < 0:
                raise ArithError("exponent less than 0")
            return wrap(pow(a, b, 1 << 64))
        if op in ("<<", ">>"):
            b &= 63
            return wrap(a << b) if op == "<<" else a >> b
        return wrap({
            "+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "&": lambda: a & b, "|": lambda: a | b,
            "^": lambda: a ^ b, "==": lambda: int(a == b), "!=": lambda: int(a != b), "<": lambda: int(a < b),
            "<=": lambda: int(a <= b), ">": lambda: int(a > b), ">=": lambda: int(a >= b),
            ",": lambda: b,
        }[op]())


def _tokenize(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ArithError(f"cannot read {text[pos:pos + 10]!r}")
        pos = m.end()
        if m.group(1):
            out.append(("num", m.group(1)))
        elif m.group(2):
            out.append(("name", m.group(2)))
        elif m.group(3):
            out.append(("op", m.group(3)))
    return out


def _number(text: str) -> int:
    if "#" in text:
        base, digits = text.split("#", 1)
        return int(digits, int(base))
    if text[:2].lower() == "0x":
        return int(text, 16)
    if len(text) > 1 and text.startswith("0"):
        return int(text, 8)
    return int(text)


def evaluate(text: str, lookup: Callable[[str, int], int], assign: Callable[[str, int], None]) -> int:
    """The value bash gives ``text``; ArithUnknown or ArithError otherwise."""
    try:
        return Arith(text, lookup, assign).evaluate()
    except (ValueError, IndexError) as exc:
        if isinstance(exc, ArithError):
            raise
        raise ArithError(str(exc)) from None
