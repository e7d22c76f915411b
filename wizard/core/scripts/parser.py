"""Parse bash tokens into commands (recursive descent over bash's grammar, nesting bounded).

Bash reads a script one complete command at a time and stops at the first it cannot parse, so
``parse_program`` returns the commands before a syntax error plus a ``SyntaxStop`` saying where
bash would stop; everything before it still runs.
"""

from __future__ import annotations

from wizard.core.scripts.lexer import MAX_NESTING, REDIRECTS, ShellSyntaxError, Token, lex
from wizard.core.scripts.syntax import (AndOr, ArithCommand, Case, CaseItem, Compound, DoubleBracket, For, FuncDef,
                                        Group, If, Node, Pipeline, Redirect, Seq, Simple, SyntaxStop, While)

_ASSIGN_START = __import__("re").compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_SEPARATORS = {"\n", ";", "&"}
_CASE_ENDS = {";;", ";&", ";;&"}
_COMPOUND = {"if": "if_", "for": "for_", "while": "while_", "until": "while_", "case": "case", "{": "group",
             "function": "function"}


class Parser:
    def __init__(self, tokens: list[Token], src: str, depth: int = 0):
        self.t = tokens
        self.src = src
        self.i = 0
        self.depth = depth

    # ---- token helpers ---------------------------------------------------------------------
    def peek(self) -> Token | None:
        return self.t[self.i] if self.i < len(self.t) else None

    def next(self) -> Token:
        tok = self.t[self.i]
        self.i += 1
        return tok

    def at_op(self, *ops: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "op" and tok.op in ops

    def at_word(self, *words: str) -> bool:
        tok = self.peek()
        return tok is not None and tok.kind == "word" and tok.word.raw_literal in words

    def expect_word(self, word: str, opened: str, line: int) -> Token:
        self.skip_newlines()
        if not self.at_word(word):
            raise ShellSyntaxError(f"line {self._line()}: expected '{word}' to close the {opened} of line {line}"
                                   f"{self._found()}")
        return self.next()

    def skip_newlines(self) -> None:
        while self.at_op("\n"):
            self.i += 1

    def _line(self) -> int:
        tok = self.peek()
        return tok.line if tok else (self.t[-1].line if self.t else 1)

    def _found(self) -> str:
        tok = self.peek()
        if tok is None or tok.kind == "op" and tok.op == "\n" and self.i >= len(self.t) - 1:
            return ", found the end of the script"
        if tok.kind == "error":
            return f" ({tok.text})"
        return f", found {self.src[tok.pos:tok.end][:40]!r}"

    def _check(self) -> None:
        tok = self.peek()
        if tok is not None and tok.kind == "error":
            raise ShellSyntaxError(tok.text)

    # ---- grammar -----------------------------------------------------------------------------
    def program(self) -> list[Node]:
        items: list[Node] = []
        try:
            while True:
                while self.at_op("\n", ";", "&"):
                    self.i += 1
                self._check()
                if self.peek() is None:
                    return items
                items.append(self.and_or())
                if not self.at_op(*_SEPARATORS) and self.peek() is not None:
                    raise ShellSyntaxError(f"line {self._line()}: unexpected {self._found()[8:]}")
        except ShellSyntaxError as exc:
            items.append(SyntaxStop(str(exc), self._line()))
            return items

    def compound_list(self, *ends: str) -> Seq:
        seq = Seq()
        while True:
            while self.at_op(*_SEPARATORS):
                self.i += 1
            self._check()
            tok = self.peek()
            if tok is None or self.at_word(*ends) or self.at_op(")", *_CASE_ENDS):
                return seq
            seq.items.append(self.and_or())

    def and_or(self) -> AndOr:
        line = self._line()
        first = self.pipeline()
        rest = []
        while self.at_op("&&", "||"):
            op = self.next().op
            self.skip_newlines()
            rest.append((op, self.pipeline()))
        node = AndOr(first, rest, line)
        if self.at_op("&"):
            node.background = True
        return node

    def pipeline(self) -> Node:
        line = self._line()
        negated = False
        while self.at_word("!", "time"):
            negated ^= self.next().word.raw_literal == "!"
        commands = [self.command()]
        while self.at_op("|", "|&"):
            self.next()
            self.skip_newlines()
            commands.append(self.command())
        if len(commands) == 1 and not negated:
            return commands[0]
        return Pipeline(commands, negated, line)

    def command(self) -> Node:
        self._check()
        tok = self.peek()
        if tok is None:
            raise ShellSyntaxError(f"line {self._line()}: a command is missing at the end of the script")
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise ShellSyntaxError(f"line {tok.line}: commands nested more than {MAX_NESTING} deep")
        try:
            node = self._compound(tok)
            if node is None:
                return self.simple()
            redirects = self.redirects()
            return Compound(node, redirects) if redirects else node
        finally:
            self.depth -= 1

    def _compound(self, tok: Token) -> Node | None:
        if tok.kind == "arith":
            self.next()
            return ArithCommand(tok.text, tok.line, self.src[tok.pos:tok.end])
        if tok.kind == "op" and tok.op == "(":
            self.next()
            body = self.compound_list()
            if not self.at_op(")"):
                raise ShellSyntaxError(f"line {self._line()}: expected ')' to close the '(' of line {tok.line}"
                                       f"{self._found()}")
            self.next()
            return Group(body, True, tok.line)
        if tok.kind == "array":
            return None
        if tok.kind != "word":
            raise ShellSyntaxError(f"line {tok.line}: unexpected {self.src[tok.pos:tok.end]!r}")
        word = tok.word.raw_literal
        handler = _COMPOUND.get(word or "")
        if handler:
            return getattr(self, handler)()
        if word in ("then", "else", "elif", "fi", "do", "done", "esac", "}", "in"):
            raise ShellSyntaxError(f"line {tok.line}: unexpected '{word}'")
        nxt = self.t[self.i + 1] if self.i + 1 < len(self.t) else None
        after = self.t[self.i + 2] if self.i + 2 < len(self.t) else None
        if (nxt and nxt.kind == "op" and nxt.op == "(" and after and after.kind == "op" and after.op == ")"
                and word and _is_name(word)):
            self.i += 3
            self.skip_newlines()
            return FuncDef(word, self.command(), tok.line)
        return None

    def if_(self) -> If:
        line = self.next().line
        clauses = []
        cond = self.compound_list("then")
        self.expect_word("then", "if", line)
        clauses.append((cond, self.compound_list("elif", "else", "fi")))
        else_body = None
        while True:
            if self.at_word("elif"):
                self.next()
                cond = self.compound_list("then")
                self.expect_word("then", "elif", line)
                clauses.append((cond, self.compound_list("elif", "else", "fi")))
            elif self.at_word("else"):
                self.next()
                else_body = self.compound_list("fi")
            else:
                self.expect_word("fi", "if", line)
                return If(clauses, else_body, line)

    def for_(self) -> For:
        line = self.next().line
        if self.peek() is not None and self.peek().kind == "arith":
            c_style = self.next().text
            self._loop_start()
            return For("", [], self._do_body(line), line, c_style=c_style)
        tok = self.next()
        if tok.kind != "word" or not _is_name(tok.word.raw_literal or ""):
            raise ShellSyntaxError(f"line {line}: 'for' needs a variable name")
        words = None
        self.skip_newlines()
        if self.at_word("in"):
            self.next()
            words = []
            while self.peek() is not None and self.peek().kind == "word" and not self.at_op(";", "\n"):
                words.append(self.next())
        self._loop_start()
        return For(tok.word.raw_literal, words, self._do_body(line), line)

    def _loop_start(self) -> None:
        while self.at_op(";", "\n"):
            self.i += 1

    def _do_body(self, line: int) -> Seq:
        self.expect_word("do", "loop", line)
        body = self.compound_list("done")
        self.expect_word("done", "loop", line)
        return body

    def while_(self) -> While:
        tok = self.next()
        cond = self.compound_list("do")
        return While(cond, self._do_body(tok.line), tok.word.raw_literal == "until", tok.line)

    def case(self) -> Case:
        start = self.next()
        tok = self.next()
        if tok.kind != "word":
            raise ShellSyntaxError(f"line {start.line}: 'case' needs a word to test")
        self.skip_newlines()
        if not self.at_word("in"):
            raise ShellSyntaxError(f"line {start.line}: expected 'in' after 'case WORD'{self._found()}")
        self.next()
        items = []
        while True:
            self.skip_newlines()
            if self.at_word("esac"):
                end = self.next()
                text = self.src[start.pos:tok.end]
                return Case(tok.word, items, start.line, text + " in ... esac" if end else text)
            items.append(self._case_item(start.line))

    def _case_item(self, case_line: int) -> CaseItem:
        if self.at_op("("):
            self.next()
        patterns, line = [], self._line()
        while True:
            tok = self.peek()
            if tok is None or tok.kind != "word":
                raise ShellSyntaxError(f"line {line}: expected a pattern in the case of line {case_line}"
                                       f"{self._found()}")
            patterns.append(self.next().word)
            if self.at_op("|"):
                self.next()
                continue
            if self.at_op(")"):
                self.next()
                break
            raise ShellSyntaxError(f"line {line}: expected ')' after the case pattern{self._found()}")
        body = self.compound_list("esac")
        ending = ";;"
        if self.at_op(*_CASE_ENDS):
            ending = self.next().op
        elif not self.at_word("esac"):
            raise ShellSyntaxError(f"line {self._line()}: expected ';;' or 'esac'{self._found()}")
        return CaseItem(patterns, body, line, ending)

    def group(self) -> Group:
        line = self.next().line
        body = self.compound_list("}")
        self.expect_word("}", "{", line)
        return Group(body, False, line)

    def function(self) -> FuncDef:
        line = self.next().line
        tok = self.next()
        if tok.kind != "word" or not tok.word.raw_literal:
            raise ShellSyntaxError(f"line {line}: 'function' needs a name")
        if self.at_op("("):
            self.next()
            if not self.at_op(")"):
                raise ShellSyntaxError(f"line {line}: expected ')' after 'function {tok.word.raw_literal}('")
            self.next()
        self.skip_newlines()
        return FuncDef(tok.word.raw_literal, self.command(), line)

    def redirects(self) -> list[Redirect]:
        out = []
        while self.at_op(*REDIRECTS):
            out.append(self._redirect())
        return out

    def _redirect(self) -> Redirect:
        op = self.next()
        if op.op == "<<":
            return Redirect("<<", None, op.line, op.text)
        tok = self.peek()
        if tok is None or tok.kind != "word":
            raise ShellSyntaxError(f"line {op.line}: '{op.op}' needs a file or descriptor after it")
        return Redirect(op.op, self.next().word, op.line, op.text)

    def simple(self) -> Node:
        first = self.peek()
        if first.kind == "word" and first.word.raw_literal == "[[":
            return self.double_bracket()
        assigns, words, redirects = [], [], []
        last = first
        while True:
            tok = self.peek()
            if tok is None or tok.kind in ("error",):
                break
            if tok.kind == "op" and tok.op in REDIRECTS:
                redirects.append(self._redirect())
                last = self.t[self.i - 1]
                continue
            if tok.kind == "op" or tok.kind == "arith":
                break
            if not words and self.at_word("}") and assigns:
                break
            if not words and (tok.kind == "array" or _is_assignment(tok)):
                assigns.append(self.next())
            else:
                words.append(self.next())
            last = tok
        if not assigns and not words and not redirects:
            raise ShellSyntaxError(f"line {first.line}: unexpected {self.src[first.pos:first.end]!r}")
        return Simple(assigns, words, redirects, first.line, self.src[first.pos:last.end])

    def double_bracket(self) -> DoubleBracket:
        first = self.next()
        items: list = []
        while True:
            tok = self.peek()
            if tok is None or tok.kind == "error" or (tok.kind == "op" and tok.op == "\n"):
                raise ShellSyntaxError(f"line {first.line}: '[[' is never closed with ']]'")
            self.next()
            if tok.kind == "word" and tok.word.raw_literal == "]]":
                return DoubleBracket(items, first.line, self.src[first.pos:tok.end])
            items.append(tok.word if tok.kind == "word" else tok.op if tok.kind == "op" else f"(({tok.text}))")


def _is_name(text: str) -> bool:
    return bool(text) and (text[0].isalpha() or text[0] == "_") and all(c.isalnum() or c in "_-:." for c in text)


def _is_assignment(tok: Token) -> bool:
    if tok.kind != "word" or not tok.word.parts:
        return False
    first = tok.word.parts[0]
    return first.kind == "lit" and bool(_ASSIGN_START.match(first.text))


def parse_program(text: str, line: int = 1, depth: int = 0) -> list[Node]:
    """The script's top-level commands; a ``SyntaxStop`` last where bash would stop reading."""
    if depth > MAX_NESTING:
        return [SyntaxStop(f"line {line}: command substitutions nested more than {MAX_NESTING} deep", line)]
    tokens = lex(text, line)
    return Parser(tokens, text.replace("\r\n", "\n"), depth).program()


_PARSED: dict[tuple[str, int, int], list[Node]] = {}


def parse_cached(text: str, line: int, depth: int) -> list[Node]:
    """``parse_program``, remembered: a substitution or a sourced file is read again on every re-reading."""
    key = (text, line, depth)
    if key not in _PARSED:
        if len(_PARSED) > 512:
            _PARSED.clear()
        _PARSED[key] = parse_program(text, line, depth)
    return _PARSED[key]
