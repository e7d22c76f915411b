"""Values the reader cannot know before the script runs, carried inside ordinary strings.

A value bash computes only at run time (``$(date)``, ``$RANDOM``) or reads from the environment
(``$HOME``) is stored as a marker, ``\\ue000<n>\\ue001``, that indexes a ``Placeholder``. Markers
hold no blanks, so they survive concatenation, word splitting and ``${X//a/b}``, and each
knows how to be written back as the script's own text. ``FORWARD`` stands for the arguments
the script itself was given (``"$@"``), which the reader takes as none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

OPEN, CLOSE = "\ue000", "\ue001"
FORWARD = "\ue002"
MARKER = re.compile("\ue000(\\d+)\ue001")
_NAME_CHAR = re.compile(r"[A-Za-z0-9_]")


@dataclass
class Placeholder:
    kind: str  # "env": read from the environment (assumed set); "runtime": computed when the script runs
    text: str  # how the script wrote it: "$HOME", "$(date +%s)"
    line: int
    name: str = ""  # the variable, for "env"
    why: str = ""  # for "runtime": why only the run knows it


@dataclass
class Table:
    """The placeholders of one reading; markers index into it."""

    items: list[Placeholder] = field(default_factory=list)
    _env: dict[str, int] = field(default_factory=dict)

    def env(self, name: str, line: int) -> str:
        if name not in self._env:
            self._env[name] = len(self.items)
            self.items.append(Placeholder("env", "$" + name, line, name))
        return f"{OPEN}{self._env[name]}{CLOSE}"

    def runtime(self, text: str, line: int, why: str = "is known only when the script runs") -> str:
        self.items.append(Placeholder("runtime", text, line, why=why))
        return f"{OPEN}{len(self.items) - 1}{CLOSE}"

    def of(self, value: str) -> list[Placeholder]:
        return [self.items[int(m.group(1))] for m in MARKER.finditer(value)]

    def render(self, value: str) -> str:
        """The value as the script's text: markers become ``$NAME`` (``${NAME}`` before a name character)
        or the ``$(...)`` they stand for."""
        if OPEN not in value:
            return value.replace(FORWARD, "")
        out, pos = [], 0
        for m in MARKER.finditer(value):
            out.append(value[pos : m.start()])
            p = self.items[int(m.group(1))]
            if p.kind == "env" and _NAME_CHAR.match(value, m.end()):
                out.append("${" + p.name + "}")
            else:
                out.append(p.text)
            pos = m.end()
        out.append(value[pos:])
        return "".join(out).replace(FORWARD, "")

    def pattern(self, value: str, env: dict[str, str]) -> str:
        """A regular expression bash's value must match: env markers take ``env``'s value (or their
        name), run-time ones match anything."""
        out, pos = [], 0
        for m in MARKER.finditer(value):
            out.append(re.escape(value[pos : m.start()]))
            p = self.items[int(m.group(1))]
            out.append(re.escape(env.get(p.name, p.text)) if p.kind == "env" else "(?s:.*)")
            pos = m.end()
        out.append(re.escape(value[pos:]))
        return "".join(out)


def has_marker(value: str) -> bool:
    return OPEN in value


def is_known(value: str) -> bool:
    return OPEN not in value


def strip_markers(value: str) -> str:
    return MARKER.sub("", value)
