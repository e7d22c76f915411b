"""A bash lexer: enough of bash's word rules to read verl launch scripts, in linear time.

It never runs anything. Words keep their quoting (single, double, none) and their expansions
($VAR, ${...}, $(...), $((...)), backticks) as parts, so the expander can expand them as bash
would. Runs of ordinary characters are taken with one regular-expression match and text is
gathered in lists joined once, so a 1 MB word costs one pass, not one copy per character.

A lexing error (an unterminated quote) does not lose what came before it: bash reads a script
one command at a time, so the tokens so far are kept and an ``error`` token marks where bash
would stop.
"""

from __future__ import annotations

import re

from wizard.core.scripts.words import MAX_NESTING, Part, ShellSyntaxError, Token, Word

__all__ = ["MAX_NESTING", "Part", "ShellSyntaxError", "Token", "Word", "lex", "matching", "REDIRECTS"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ARRAY_START = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+?)=$")
_RUN = re.compile(r"[^\s'\"\\$`;&|<>()]+")
_DQ_RUN = re.compile(r'[^"\\$`]+')
_OPS3 = (";;&", "&>>", "<<<")
_OPS2 = ("&&", "||", ";;", ";&", "|&", "&>", ">>", ">&", "<&", ">|", "<<", "<>")
_OP_START = set(";&|<>()")
_KEEP_ESCAPED = set("*?[]~=")
REDIRECTS = {">", ">>", "<", ">&", "<&", "&>", "&>>", ">|", "<>", "<<", "<<<"}
# after these words the next word starts a command again (so "((" is an arithmetic command)
_COMMAND_WORDS = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time", "for"}


class Lexer:
    def __init__(self, text: str, line: int = 1, depth: int = 0):
        self.s = text.replace("\r\n", "\n")
        self.n = len(self.s)
        self.i = 0
        self.line = line
        self.depth = depth
        self.tokens: list[Token] = []
        self.pending_heredocs: list[tuple[str, bool]] = []
        self.command_start = True
        self.pending_fd = ""

    def lex(self) -> list[Token]:
        try:
            self._lex()
        except ShellSyntaxError as exc:
            # bash runs nothing of a command it cannot finish reading: drop the unfinished one
            while self.tokens and not (self.tokens[-1].kind == "op" and self.tokens[-1].op == "\n"):
                self.tokens.pop()
            self._emit_op("\n")
            self.tokens.append(Token(kind="error", line=self.line, text=str(exc), pos=self.i, end=self.i))
            return self.tokens
        self._emit_op("\n")
        return self.tokens

    def _lex(self) -> None:
        s = self.s
        while self.i < self.n:
            c = s[self.i]
            if c in " \t":
                self.i += 1
            elif c == "\\" and s.startswith("\n", self.i + 1):
                self.i += 2
                self.line += 1
            elif c == "\n":
                self._emit_op("\n")
                self.i += 1
                self.line += 1
                if self.pending_heredocs:
                    self._skip_heredocs()
            elif c == "#":
                end = s.find("\n", self.i)
                self.i = self.n if end < 0 else end
            elif c == "(" and self.command_start and s.startswith("((", self.i):
                self._arith_command()
            elif c in _OP_START and not (c in "<>" and s.startswith("(", self.i + 1)):
                op = self._match_op()
                self.i += len(op)
                if op == "<<":
                    self._heredoc_start()
                else:
                    self._emit_op(op)
            else:
                self._word()

    def _emit_op(self, op: str) -> None:
        fd, self.pending_fd = self.pending_fd, ""
        self.tokens.append(Token(kind="op", op=op, line=self.line, text=fd, pos=self.i, end=self.i + len(op)))
        self.command_start = op not in REDIRECTS

    def _match_op(self) -> str:
        for group in (_OPS3, _OPS2):
            for op in group:
                if self.s.startswith(op, self.i):
                    return op
        return self.s[self.i]

    def _arith_command(self) -> None:
        start, line = self.i, self.line
        end = matching(self.s, self.i, "(", ")", line)
        if self.s[end - 1] != ")":
            self._emit_op("(")
            self.i += 1
            return
        text = self.s[start + 2 : end - 1]
        self.line += text.count("\n")
        self.i = end + 1
        self.tokens.append(Token(kind="arith", line=line, text=text, pos=start, end=self.i))
        self.command_start = False

    def _heredoc_start(self) -> None:
        strip_tabs = self.s.startswith("-", self.i)
        if strip_tabs:
            self.i += 1
        while self.i < self.n and self.s[self.i] in " \t":
            self.i += 1
        word = self._read_word()
        delim = "".join(p.text if p.kind != "dq" else "".join(x.text for x in p.parts) for p in word.parts)
        self.pending_heredocs.append((delim, strip_tabs))
        self._emit_op("<<")

    def _skip_heredocs(self) -> None:
        for delim, strip_tabs in self.pending_heredocs:
            while self.i < self.n:
                end = self.s.find("\n", self.i)
                end = self.n if end < 0 else end
                line = self.s[self.i : end]
                self.i = end + 1
                self.line += 1
                if (line.lstrip("\t") if strip_tabs else line) == delim:
                    break
        self.pending_heredocs = []

    def _word(self) -> None:
        start, line = self.i, self.line
        m = _RUN.match(self.s, self.i)
        if m and self.s.startswith("(", m.end()):
            arr = _ARRAY_START.match(m.group(0))
            if arr:
                self.i = m.end() + 1
                items = self._array(arr.group(1), line)
                self.tokens.append(Token(kind="array", line=line, name=arr.group(1), items=items,
                                         append=bool(arr.group(2)), pos=start, end=self.i))
                self.command_start = False
                return
        word = self._read_word()
        if not word.parts:
            return  # a file-descriptor number before a redirection (2>&1)
        self.tokens.append(Token(kind="word", word=word, line=line, pos=start, end=self.i))
        self.command_start = word.raw_literal in _COMMAND_WORDS

    def _read_word(self) -> Word:
        s, line = self.s, self.line
        parts: list[Part] = []
        buf: list[str] = []
        kind = ""

        def push(k: str, text: str) -> None:
            nonlocal kind
            if buf and kind != k:
                parts.append(Part(kind, "".join(buf)))
                buf.clear()
            kind = k
            buf.append(text)

        def flush() -> None:
            if buf:
                parts.append(Part(kind, "".join(buf)))
                buf.clear()

        while self.i < self.n:
            c = s[self.i]
            if c in " \t\n":
                break
            if c in _OP_START:
                if c in "<>" and s.startswith("(", self.i + 1):
                    flush()
                    end = matching(s, self.i + 1, "(", ")", self.line)
                    parts.append(Part("proc", s[self.i + 2 : end]))
                    self.line += s.count("\n", self.i, end)
                    self.i = end + 1
                    continue
                if c in "<>" and not parts and kind == "lit" and "".join(buf).isdigit():
                    self.pending_fd = "".join(buf)  # "2>": the digits belong to the redirection
                    buf.clear()
                break
            if c == "\\":
                if s.startswith("\n", self.i + 1):
                    self.i += 2
                    self.line += 1
                    continue
                char = s[self.i + 1 : self.i + 2]
                # an escaped character is literal text; it stays apart ("esc") only where quoting
                # changes its meaning: glob and tilde characters, '=', and a word's first character
                push("esc" if char in _KEEP_ESCAPED or not (parts or buf) else "lit", char)
                self.i += 2
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise ShellSyntaxError(f"line {self.line}: unterminated single quote")
                text = s[self.i + 1 : end]
                self.line += text.count("\n")
                push("esc", text)
                self.i = end + 1
            elif c == '"':
                flush()
                parts.append(self._double_quoted())
            elif c == "$":
                flush()
                parts.append(self._dollar())
            elif c == "`":
                flush()
                parts.append(self._backtick())
            else:
                m = _RUN.match(s, self.i)
                push("lit", m.group(0))
                self.i = m.end()
        flush()
        return Word(parts=_merge(parts), line=line)

    def _array(self, name: str, line: int) -> list[Word]:
        items: list[Word] = []
        s = self.s
        while self.i < self.n:
            c = s[self.i]
            if c in " \t":
                self.i += 1
            elif c == "\n":
                self.i += 1
                self.line += 1
            elif c == "\\" and s.startswith("\n", self.i + 1):
                self.i += 2
                self.line += 1
            elif c == "#":
                end = s.find("\n", self.i)
                self.i = self.n if end < 0 else end
            elif c == ")":
                self.i += 1
                return items
            else:
                before = self.i
                w = self._read_word()
                if w.parts:
                    items.append(w)
                elif self.i == before:
                    raise ShellSyntaxError(f"line {self.line}: cannot read {c!r} in the array {name}=( ... )")
        raise ShellSyntaxError(f"line {line}: the array {name}=( is never closed")

    def _double_quoted(self) -> Part:
        s = self.s
        self.i += 1
        sub: list[Part] = []
        buf: list[str] = []

        def flush() -> None:
            if buf:
                sub.append(Part("esc", "".join(buf)))
                buf.clear()

        while True:
            if self.i >= self.n:
                raise ShellSyntaxError(f"line {self.line}: unterminated double quote")
            c = s[self.i]
            if c == '"':
                self.i += 1
                flush()
                return Part("dq", parts=sub)
            if c == "\\":
                nxt = s[self.i + 1 : self.i + 2]
                if nxt == "\n":
                    self.i += 2
                    self.line += 1
                elif nxt in ("$", "`", '"', "\\"):
                    buf.append(nxt)
                    self.i += 2
                else:
                    buf.append("\\")
                    self.i += 1
            elif c == "$":
                flush()
                sub.append(self._dollar())
            elif c == "`":
                flush()
                sub.append(self._backtick())
            else:
                m = _DQ_RUN.match(s, self.i)
                text = m.group(0)
                self.line += text.count("\n")
                buf.append(text)
                self.i = m.end()

    def _dollar(self) -> Part:
        s, i = self.s, self.i
        nxt = s[i + 1 : i + 2]
        if nxt == "(":
            end = matching(s, i + 1, "(", ")", self.line)
            if s.startswith("$((", i) and s[end - 1] == ")":
                return self._enclosed("arith", i + 3, end - 1, end + 1)
            return self._enclosed("cmd", i + 2, end, end + 1)
        if nxt == "{":
            end = matching(s, i + 1, "{", "}", self.line)
            return self._enclosed("var", i + 2, end, end + 1)
        if nxt == "'":
            return self._ansi_c()
        m = _NAME.match(s, i + 1)
        if m:
            self.i = m.end()
            return Part("var", m.group(0))
        if i + 1 < self.n and (s[i + 1].isdigit() or s[i + 1] in "@*#?$!-"):
            self.i = i + 2
            return Part("var", s[i + 1])
        self.i = i + 1
        return Part("lit", "$")

    def _enclosed(self, kind: str, start: int, stop: int, after: int) -> Part:
        text = self.s[start:stop]
        self.line += text.count("\n")
        self.i = after
        return Part(kind, text)

    def _ansi_c(self) -> Part:
        s, j, out = self.s, self.i + 2, []
        escapes = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a", "e": "\x1b", "0": "\0"}
        while j < self.n and s[j] != "'":
            if s[j] == "\\" and j + 1 < self.n:
                out.append(escapes.get(s[j + 1], "\\" + s[j + 1]))
                j += 2
            else:
                out.append(s[j])
                j += 1
        if j >= self.n:
            raise ShellSyntaxError(f"line {self.line}: unterminated $'...' quote")
        self.i = j + 1
        return Part("esc", "".join(out))

    def _backtick(self) -> Part:
        end = self.s.find("`", self.i + 1)
        if end < 0:
            raise ShellSyntaxError(f"line {self.line}: unterminated backtick")
        return self._enclosed("cmd", self.i + 1, end, end + 1)


def matching(s: str, i: int, open_: str, close: str, line: int = 0) -> int:
    """Index of the bracket closing the one at s[i], skipping quoted text (one pass)."""
    depth, j, n = 0, i, len(s)
    while j < n:
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
            while k < n and s[k] != '"':
                k += 2 if s[k] == "\\" else 1
            j = k
        elif c == open_:
            depth += 1
            if depth > MAX_NESTING:
                raise ShellSyntaxError(f"line {line}: brackets nested more than {MAX_NESTING} deep")
        elif c == close:
            depth -= 1
            if depth == 0:
                return j
        j += 1
    where = f"line {line}: " if line else ""
    raise ShellSyntaxError(f"{where}unbalanced {open_}{close}: the {open_} is never closed")


def _merge(parts: list[Part]) -> list[Part]:
    out: list[Part] = []
    for p in parts:
        if out and p.kind == "lit" and out[-1].kind == "lit":
            out[-1] = Part("lit", out[-1].text + p.text)
        else:
            out.append(p)
    return out


def lex(text: str, line: int = 1) -> list[Token]:
    return Lexer(text, line).lex()
