"""What one reading of a script knows: variables, functions, notes, decisions, launches, budgets."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wizard.core.scripts.values import Table

# Budgets: a hostile or broken script gets a one-line refusal, never a hang or a traceback.
MAX_SCRIPT_CHARS = 262_144  # 256 KiB of text: the largest verl launch script is 14 KB
MAX_STEPS = 200_000  # commands run while reading (loops unrolled, functions called)
MAX_VALUE_CHARS = 1_048_576  # one variable's value, one word, one command's words
MAX_WORDS = 100_000  # words in one array or one command
MAX_CALL_DEPTH = 64  # functions calling functions, sourced files, command substitutions
MAX_NESTED_RUN = 120  # commands running inside one another (keeps Python's own stack well clear)
MAX_LOOP_ITEMS = 10_000
UNREADABLE = "\x00"  # a file the adapter found but could not read as text


class ScriptError(ValueError):
    """The script cannot be read as one verl launch; the message says why, on one line."""


class ScriptExit(Exception):
    """``exit`` (or a failed ``${X:?}``): the script stops here."""

    def __init__(self, line: int, why: str):
        super().__init__(why)
        self.line = line
        self.why = why


class FunctionReturn(Exception):
    pass


class LoopControl(Exception):
    def __init__(self, kind: str, levels: int):
        super().__init__(kind)
        self.kind = kind
        self.levels = levels


@dataclass
class Note:
    """Something the user should know about how the script was read; ``data`` holds the full detail."""

    line: int
    kind: str  # runtime, branch, source, defaults, env, orphan, flag, wrapper, syntax, other_entry
    message: str
    severity: str = "warning"  # "warning" | "info"
    data: dict | None = None
    file: str | None = None  # a sourced file, when the line is in it

    @property
    def text(self) -> str:
        where = f"{self.file}, line {self.line}" if self.file else f"line {self.line}"
        return f"{where}: {self.message}" if self.line else self.message


@dataclass
class Decision:
    """A test the reader cannot decide before the script runs; it takes ``options[chosen]``."""

    key: tuple
    line: int
    text: str
    why: str
    options: list[str]
    chosen: int = 0
    file: str | None = None


@dataclass
class Launch:
    argv: list[str]  # after "-m verl.trainer.main_ppo"; may hold markers and FORWARD
    line: int
    end_line: int
    env: dict[str, str]  # VAR=value given to the launch only
    via: list[str]  # the wrappers it runs through: exec, env, uv run, torchrun
    file: str | None = None


_KNOB = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*):?[-=+?]")


_BARE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?(?![A-Za-z0-9_\[:#%/,^@?=+-])")
_SET = re.compile(r"(?:^|[\s;&|(])(?:(?:local|declare|typeset|export|readonly)\s+(?:-\w+\s+)*)?"
                  r"([A-Za-z_][A-Za-z0-9_]*)\+?=|\b(?:for|read(?:\s+-\w+)*)\s+([A-Za-z_][A-Za-z0-9_]*)")


def knob_names(text: str) -> set[str]:
    """Names the script treats as optional (``${X:-d}``, ``${X:+a}``): unset, they read as empty."""
    return set(_KNOB.findall(text))


def environment_names(text: str) -> set[str]:
    """Names the script reads as they are (``$X``) and never sets: references to the environment, wherever in
    the script they are read first."""
    assigned = {a or b for a, b in _SET.findall(text)}
    return set(_BARE.findall(text)) - assigned - knob_names(text)


@dataclass
class Context:
    """Shared by everything one reading runs (subshells and substitutions included)."""

    table: Table = field(default_factory=Table)
    notes: list[Note] = field(default_factory=list)
    decisions: dict[tuple, Decision] = field(default_factory=dict)
    forced: dict[tuple, int] = field(default_factory=dict)
    defaults: dict[str, tuple[str, int]] = field(default_factory=dict)
    env_reads: dict[str, int] = field(default_factory=dict)
    required: dict[str, int] = field(default_factory=dict)
    launches: list[Launch] = field(default_factory=list)
    refusals: list[Note] = field(default_factory=list)
    files: dict[str, str | None] = field(default_factory=dict)
    wanted: list[str] = field(default_factory=list)
    script_path: str | None = None
    steps: int = 0
    exit: ScriptExit | None = None
    visited: set = field(default_factory=set)
    depth: int = 0  # commands running inside one another, right now
    args_read: dict[int, int] = field(default_factory=dict)  # the script's own $1, $2... read (line): empty
    knobs: set = field(default_factory=set)  # names the script gives a default or an alternative (${X:-d})
    environment: set = field(default_factory=set)  # names it reads from the environment (environment_names)
    _seen: set = field(default_factory=set)

    def note(self, line: int, kind: str, message: str, severity: str = "warning", data: dict | None = None,
             file: str | None = None) -> None:
        key = (file, line, kind, message)
        if key not in self._seen:
            self._seen.add(key)
            self.notes.append(Note(line, kind, message, severity, data, file))

    def refuse(self, line: int, message: str, file: str | None = None) -> None:
        if not any(r.message == message for r in self.refusals):
            self.refusals.append(Note(line, "refused", message, "error", None, file))

    def step(self, line: int) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise ScriptError(f"line {line}: the script runs more than {MAX_STEPS:,} commands before it is read "
                              "through (an endless loop?); the wizard stops reading it")


@dataclass
class State:
    """Variables (a list for an array), the positional parameters (None: the script's own, taken as none),
    functions and the working folder (None: wherever the script is run)."""

    vars: dict[str, str | list[str]] = field(default_factory=dict)
    positional: list[str] | None = None
    functions: dict = field(default_factory=dict)
    cwd: str | None = None
    locals: list[dict] = field(default_factory=list)
    nounset: bool = False  # set -u: reading an unset variable stops bash

    def fork(self) -> State:
        return State(
            vars={k: (list(v) if isinstance(v, list) else v) for k, v in self.vars.items()},
            positional=None if self.positional is None else list(self.positional),
            functions=dict(self.functions),
            cwd=self.cwd,
            locals=[],
            nounset=self.nounset,
        )

    def set(self, name: str, value: str | list[str], line: int) -> None:
        check_size(name, value, line)
        self.vars[name] = value


def check_size(what: str, value: str | list[str], line: int) -> None:
    """A value (or a list of words) past the budget stops the reading: characters, plus one per word."""
    if isinstance(value, list) and len(value) > MAX_WORDS:
        raise ScriptError(f"line {line}: {what} grows past {MAX_WORDS:,} words; the wizard stops reading the "
                          "script there")
    size = sum(len(v) + 1 for v in value) if isinstance(value, list) else len(value)
    if size > MAX_VALUE_CHARS:
        raise ScriptError(f"line {line}: {what} grows past {MAX_VALUE_CHARS:,} characters; the wizard stops "
                          "reading the script there")
