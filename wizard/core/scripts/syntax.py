"""The shapes of a bash script once parsed: commands, lists, branches, loops, functions.

Every node keeps its line; nodes whose text a user may need to see (a test, a launch) keep
their source text too, so a finding can quote what the script says.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wizard.core.scripts.lexer import Token, Word


@dataclass
class Redirect:
    op: str
    target: Word | None
    line: int
    fd: str = ""  # "2" in 2>&1


@dataclass
class Simple:
    """``A=1 B=(x y) cmd arg... >file``: assignments (word or array tokens), words, redirections."""

    assigns: list[Token]
    words: list[Token]  # "word" tokens, or "array" tokens after the command name (declare -a X=(...))
    redirects: list[Redirect]
    line: int
    text: str = ""


@dataclass
class DoubleBracket:
    """``[[ ... ]]``: its items are words, or operator strings (&&, ||, (, ), <, >)."""

    items: list[Word | str]
    line: int
    text: str = ""


@dataclass
class ArithCommand:
    expr: str
    line: int
    text: str = ""


@dataclass
class Pipeline:
    commands: list[Node]
    negated: bool
    line: int


@dataclass
class AndOr:
    first: Node
    rest: list[tuple[str, Node]]  # ("&&" | "||", pipeline)
    line: int
    background: bool = False


@dataclass
class Seq:
    items: list[Node] = field(default_factory=list)


@dataclass
class If:
    clauses: list[tuple[Seq, Seq]]  # (condition, body) for if and each elif
    else_body: Seq | None
    line: int


@dataclass
class For:
    var: str
    words: list[Token] | None  # None: "for x; do" iterates over "$@"
    body: Seq
    line: int
    c_style: str | None = None  # for (( init; cond; step ))


@dataclass
class While:
    cond: Seq
    body: Seq
    until: bool
    line: int


@dataclass
class CaseItem:
    patterns: list[Word]
    body: Seq
    line: int
    fallthrough: str = ";;"


@dataclass
class Case:
    word: Word
    items: list[CaseItem]
    line: int
    text: str = ""


@dataclass
class Group:
    body: Seq
    subshell: bool
    line: int


@dataclass
class FuncDef:
    name: str
    body: Node
    line: int


@dataclass
class Compound:
    """A compound command with redirections after it (``done < file``, ``} 2>&1 | tee``)."""

    node: Node
    redirects: list[Redirect]


@dataclass
class SyntaxStop:
    """Where bash stops reading: the message says why (it names the line)."""

    message: str
    line: int


Node = Simple | DoubleBracket | ArithCommand | Pipeline | AndOr | Seq | If | For | While | Case | Group | FuncDef | Compound
