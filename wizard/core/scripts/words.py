"""Words and tokens: what the lexer makes of bash text, with the quoting of every piece kept."""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_NESTING = 64  # brackets, commands and substitutions nested deeper than this are refused

# Part kinds: "lit" unquoted text, "esc" escaped/single-quoted literal (never split or globbed),
# "var" a parameter expansion (the text inside ${} or after $), "cmd" command substitution,
# "arith" arithmetic expansion, "proc" process substitution <(...). "dq" holds sub-parts.


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
    kind: str  # "word", "op", "array" (NAME=( words )), "arith" (a (( )) command), "error"
    line: int
    word: Word | None = None
    op: str = ""
    name: str = ""  # for "array"
    items: list[Word] = field(default_factory=list)
    append: bool = False  # NAME+=( ... )
    text: str = ""  # "arith": the expression; "error": the message
    pos: int = 0
    end: int = 0


class ShellSyntaxError(ValueError):
    """Bash cannot read the script here; the message names the line."""
