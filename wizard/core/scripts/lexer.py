"""A small bash lexer: enough of bash's word rules to read verl launch scripts statically.

It never runs anything. Words keep their quoting (single, double, none) and their
expansions ($VAR, ${...}, $(...), $((...)), backticks) as parts, so an evaluator
can expand them as bash would, or keep them as references.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# Part kinds: "lit" unquoted text, "esc" escaped/single-quoted literal (never split or globbed),
# "var" a parameter expansion (text inside ${} or after $), "cmd" command substitution,
# "arith" arithmetic expansion. A double-quoted region is a "dq" part holding sub-parts.


@dataclass
class Part:
    kind: str
    text: str = ""
    parts: list[Part] = field(default_factory=list)  # for "dq"


@dataclass
class Word:
    parts: list[Part]
    line: int

    @property
    def raw_literal(self) -> str | None:
        """The word's text when it has no expansions at all, else None."""
        out = []
        for p in self.parts:
            if p.kind in ("lit", "esc"):
                out.append(p.text)
            elif p.kind == "dq" and all(s.kind == "esc" for s in p.parts):
                out.append("".join(s.text for s in p.parts))
            else:
                return None
        return "".join(out)


@dataclass
class Token:
    kind: str  # "word", "op", "array"
    line: int
    word: Word | None = None
    op: str = ""
    name: str = ""  # for "array": NAME=( words )
    items: list[Word] = field(default_factory=list)


class ShellSyntaxError(ValueError):
    pass


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPS = ("&&", "||", ";;", ">>", "&>", "<<<", "<<", ";", "|", "&", "(", ")", "<", ">")


class Lexer:
    def __init__(self, text: str):
        self.s = text.replace("\r\n", "\n")
        self.i = 0
        self.line = 1
        self.tokens: list[Token] = []
        self.pending_heredocs: list[tuple[str, bool]] = []

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def lex(self) -> list[Token]:
        while self.i < len(self.s):
            c = self.peek()
            if c in " \t":
                self.i += 1
            elif c == "\\" and self.peek(1) == "\n":
                self.i += 2
                self.line += 1
            elif c == "\n":
                self._emit_op("\n")
                self.i += 1
                self.line += 1
                if self.pending_heredocs:
                    self._skip_heredocs()
            elif c == "#":
                while self.i < len(self.s) and self.peek() != "\n":
                    self.i += 1
            else:
                op = self._match_op()
                if op:
                    self.i += len(op)
                    if op in ("<<",):
                        self._heredoc_start()
                    else:
                        self._emit_op(op)
                else:
                    self._word()
        self._emit_op("\n")
        return self.tokens

    def _emit_op(self, op: str) -> None:
        self.tokens.append(Token(kind="op", op=op, line=self.line))

    def _match_op(self) -> str:
        for op in _OPS:
            if self.s.startswith(op, self.i):
                return op
        return ""

    def _heredoc_start(self) -> None:
        strip_tabs = self.peek() == "-"
        if strip_tabs:
            self.i += 1
        while self.peek() in " \t":
            self.i += 1
        word = self._word(emit=False)
        delim = word.raw_literal if word else None
        if not delim:
            delim = "".join(p.text for p in word.parts) if word else ""
        self.pending_heredocs.append((delim, strip_tabs))
        self._emit_op("<<")

    def _skip_heredocs(self) -> None:
        for delim, strip_tabs in self.pending_heredocs:
            while self.i < len(self.s):
                end = self.s.find("\n", self.i)
                end = len(self.s) if end < 0 else end
                line = self.s[self.i : end]
                self.i = end + 1
                self.line += 1
                if (line.lstrip("\t") if strip_tabs else line) == delim:
                    break
        self.pending_heredocs = []

    def _word(self, emit: bool = True) -> Word | None:
        start_line = self.line
        parts: list[Part] = []
        while self.i < len(self.s):
            c = self.peek()
            if c in " \t\n" or (self._match_op() and not (c == "<" and self.peek(1) == "(")):
                # digits before a redirection belong to it (2>&1)
                if c in "<>" and parts and all(p.kind == "lit" and p.text.isdigit() for p in parts):
                    parts = []
                    op = self._match_op()
                    self.i += len(op)
                    self._emit_op(op)
                    return None
                break
            if c == "\\":
                nxt = self.peek(1)
                if nxt == "\n":
                    self.i += 2
                    self.line += 1
                    continue
                parts.append(Part("esc", nxt))
                self.i += 2
            elif c == "'":
                end = self.s.find("'", self.i + 1)
                if end < 0:
                    raise ShellSyntaxError(f"line {self.line}: unterminated single quote")
                text = self.s[self.i + 1 : end]
                self.line += text.count("\n")
                parts.append(Part("esc", text))
                self.i = end + 1
            elif c == '"':
                parts.append(self._double_quoted())
            elif c == "$":
                parts.append(self._dollar())
            elif c == "`":
                parts.append(self._backtick())
            elif c == "=" and emit and self.peek(1) == "(" and parts and _is_name_lit(parts):
                name = "".join(p.text for p in parts)
                self.i += 2
                self._array(name, start_line)
                return None
            else:
                parts.append(Part("lit", c))
                self.i += 1
        word = Word(parts=_merge(parts), line=start_line)
        if emit:
            self.tokens.append(Token(kind="word", word=word, line=start_line))
        return word

    def _array(self, name: str, line: int) -> None:
        items: list[Word] = []
        while self.i < len(self.s):
            c = self.peek()
            if c in " \t":
                self.i += 1
            elif c == "\n":
                self.i += 1
                self.line += 1
            elif c == "\\" and self.peek(1) == "\n":
                self.i += 2
                self.line += 1
            elif c == "#":
                while self.i < len(self.s) and self.peek() != "\n":
                    self.i += 1
            elif c == ")":
                self.i += 1
                self.tokens.append(Token(kind="array", line=line, name=name, items=items))
                return
            else:
                w = self._word(emit=False)
                if w is not None and w.parts:
                    items.append(w)
                elif self.i < len(self.s) and self.peek() not in " \t\n)":
                    raise ShellSyntaxError(f"line {self.line}: cannot read the array {name}")
        raise ShellSyntaxError(f"line {line}: array {name}=( is never closed")

    def _double_quoted(self) -> Part:
        self.i += 1
        sub: list[Part] = []
        while True:
            if self.i >= len(self.s):
                raise ShellSyntaxError(f"line {self.line}: unterminated double quote")
            c = self.peek()
            if c == '"':
                self.i += 1
                return Part("dq", parts=_merge(sub))
            if c == "\\":
                nxt = self.peek(1)
                if nxt == "\n":
                    self.i += 2
                    self.line += 1
                    continue
                if nxt in '$`"\\':
                    sub.append(Part("esc", nxt))
                    self.i += 2
                    continue
                sub.append(Part("esc", "\\"))
                self.i += 1
            elif c == "$":
                sub.append(self._dollar())
            elif c == "`":
                sub.append(self._backtick())
            else:
                if c == "\n":
                    self.line += 1
                sub.append(Part("esc", c))
                self.i += 1

    def _dollar(self) -> Part:
        s, i = self.s, self.i
        if s.startswith("$((", i):
            end = _matching(s, i + 1, "(", ")")
            self.i = end + 1
            return Part("arith", s[i + 3 : end - 1])
        if s.startswith("$(", i):
            end = _matching(s, i + 1, "(", ")")
            self.i = end + 1
            return Part("cmd", s[i + 2 : end])
        if s.startswith("${", i):
            end = _matching(s, i + 1, "{", "}")
            self.i = end + 1
            return Part("var", s[i + 2 : end])
        m = _NAME.match(s, i + 1)
        if m:
            self.i = m.end()
            return Part("var", m.group(0))
        if i + 1 < len(s) and (s[i + 1].isdigit() or s[i + 1] in "@*#?$!-"):
            self.i = i + 2
            return Part("var", s[i + 1])
        self.i = i + 1
        return Part("lit", "$")

    def _backtick(self) -> Part:
        end = self.s.find("`", self.i + 1)
        if end < 0:
            raise ShellSyntaxError(f"line {self.line}: unterminated backtick")
        text = self.s[self.i + 1 : end]
        self.i = end + 1
        return Part("cmd", text)


def _is_name_lit(parts: list[Part]) -> bool:
    return all(p.kind == "lit" for p in parts) and bool(_NAME.fullmatch("".join(p.text for p in parts)))


def _matching(s: str, i: int, open_: str, close: str) -> int:
    """Index of the bracket closing the one at s[i], skipping quoted text."""
    depth, j = 0, i
    while j < len(s):
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if c == "'" and open_ != "{":
            j = s.find("'", j + 1)
            if j < 0:
                break
        elif c == '"':
            k = j + 1
            while k < len(s) and s[k] != '"':
                k += 2 if s[k] == "\\" else 1
            j = k
        elif c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    raise ShellSyntaxError(f"unbalanced {open_}{close} in the script")


def _merge(parts: list[Part]) -> list[Part]:
    out: list[Part] = []
    for p in parts:
        if out and p.kind in ("lit", "esc") and out[-1].kind == p.kind:
            out[-1] = Part(p.kind, out[-1].text + p.text)
        else:
            out.append(p)
    return out


def lex(text: str) -> list[Token]:
    return Lexer(text).lex()
