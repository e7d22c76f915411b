"""verl's interpolation strings read in Python, as OmegaConf's grammar reads them, for the forms verl's config holds
and users write the same way: ``${a.b}``, ``${.x}``/``${..x}``, ``${oc.select:key,default}`` (literal and nested
defaults), text of several pieces, lists and dicts holding them. Anything else (quotes, escapes, other grammar) is
:class:`Unknown`: OmegaConf reads it instead (:mod:`wizard.core.verl.resolver`)."""

from __future__ import annotations

import re
from functools import lru_cache


class Unknown(Exception):
    """A form this module (or the resolver) does not evaluate: OmegaConf answers instead."""


# Keys this resolver walks: dotted names (list indices as numbers); anything else (brackets, spaces) is OmegaConf's.
KEY = re.compile(r"[\w\-]+(?:\.[\w\-]+)*")
REL_KEY = re.compile(r"\.*[\w\-]+(?:\.[\w\-]+)*")


# Parsing: a string holding ``${`` becomes a tuple of pieces, each a text or an interpolation:
#   ("node", key)                   ${a.b}, ${.x}
#   ("resolver", name, (arg, ...))  ${oc.select:a,b}
# an argument being ("literal", value), ("pieces", (piece, ...)), ("list", (arg, ...)) or ("dict", ((key, arg), ...)).
# None: a form this does not read.

_INT = r"(?:0|[1-9](?:_?[0-9])*)"
_POINT = rf"(?:{_INT}\.|(?:{_INT})?\.[0-9](?:_?[0-9])*)"
_FLOAT = re.compile(rf"[+-]?(?:{_POINT}|(?:{_INT}|{_POINT})[eE][+-]?[0-9](?:_?[0-9])*|[Ii][Nn][Ff]|[Nn][Aa][Nn])")
_INT_RE = re.compile(rf"[+-]?{_INT}")
_BOOL = re.compile(r"[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]")
_NULL = re.compile(r"[Nn][Uu][Ll][Ll]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*(?:\.[A-Za-z_][A-Za-z0-9_\-]*)*")
_PRIMITIVE_CHARS = re.compile(r"[A-Za-z0-9_\-/+.%*@?| \t]*")  # what an unquoted value may hold here (no quotes, escapes)
_WS = " \t"


def _primitive(text: str):
    """An unquoted value as OmegaConf's lexer reads it: one token is typed (int, float, bool, null), else text."""
    if _INT_RE.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return float(text)
    if _BOOL.fullmatch(text):
        return text.lower() == "true"
    if _NULL.fullmatch(text):
        return None
    return text


@lru_cache(maxsize=4096)
def parse(text: str) -> tuple | None:
    if "\\" in text:
        return None  # escapes
    try:
        pieces, pos = [], 0
        while True:
            start = text.find("${", pos)
            if start < 0:
                if pos < len(text):
                    pieces.append(text[pos:])
                return tuple(pieces)
            if start > pos:
                pieces.append(text[pos:start])
            interp, pos = _interpolation_at(text, start)
            pieces.append(interp)
    except Unknown:
        return None


def _interpolation_at(text: str, start: int) -> tuple[tuple, int]:
    """The interpolation that opens at ``text[start]`` (``${``) and the position after it."""
    pos = _skip_ws(text, start + 2)
    m = REL_KEY.match(text, pos)
    if not m:
        raise Unknown
    after = _skip_ws(text, m.end())
    if after < len(text) and text[after] == "}":
        return ("node", m.group(0)), after + 1
    if after < len(text) and text[after] == ":" and _NAME.fullmatch(m.group(0)):
        args, pos = _sequence(text, _skip_ws(text, after + 1), "}")
        return ("resolver", m.group(0), args), pos
    raise Unknown


def _sequence(text: str, pos: int, close: str) -> tuple[tuple, int]:
    """Comma-separated elements up to ``close``; the position after it."""
    items = []
    pos = _skip_ws(text, pos)
    if pos < len(text) and text[pos] == close:
        return (), pos + 1
    while True:
        element, pos = _element_at(text, pos)
        items.append(element)
        pos = _skip_ws(text, pos)
        if pos >= len(text):
            raise Unknown
        if text[pos] == close:
            return tuple(items), pos + 1
        if text[pos] != ",":
            raise Unknown
        pos = _skip_ws(text, pos + 1)


def _element_at(text: str, pos: int) -> tuple[tuple, int]:
    pos = _skip_ws(text, pos)
    if pos >= len(text):
        raise Unknown
    if text[pos] == "[":
        items, pos = _sequence(text, pos + 1, "]")
        return ("list", items), pos
    if text[pos] == "{":
        pairs, pos = [], _skip_ws(text, pos + 1)
        if pos < len(text) and text[pos] == "}":
            return ("dict", ()), pos + 1
        while True:
            m = _NAME.match(text, pos)
            if not m or "." in m.group(0):
                raise Unknown
            key = _primitive(m.group(0))
            pos = _skip_ws(text, m.end())
            if pos >= len(text) or text[pos] != ":":
                raise Unknown
            value, pos = _element_at(text, pos + 1)
            pairs.append((key, value))
            pos = _skip_ws(text, pos)
            if pos < len(text) and text[pos] == "}":
                return ("dict", tuple(pairs)), pos + 1
            if pos >= len(text) or text[pos] != ",":
                raise Unknown
            pos += 1
    # a primitive: text and interpolations up to a comma or a closing bracket, outer whitespace dropped
    pieces: list = []
    chunk_start = pos
    while pos < len(text) and text[pos] not in ",}]":
        if text.startswith("${", pos):
            if pos > chunk_start:
                pieces.append(text[chunk_start:pos])
            interp, pos = _interpolation_at(text, pos)
            pieces.append(interp)
            chunk_start = pos
        else:
            pos += 1
    if pos > chunk_start:
        pieces.append(text[chunk_start:pos])
    if pieces and isinstance(pieces[-1], str):
        pieces[-1] = pieces[-1].rstrip(_WS)
        if not pieces[-1]:
            pieces.pop()
    if not pieces:
        raise Unknown  # an empty argument (OmegaConf warns and passes '')
    for piece in pieces:
        if isinstance(piece, str) and not _PRIMITIVE_CHARS.fullmatch(piece):
            raise Unknown
    if len(pieces) == 1 and isinstance(pieces[0], str):
        return ("literal", _primitive(pieces[0])), pos
    return ("pieces", tuple(pieces)), pos


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos


# OmegaConf itself, for what the resolver does not read: the calls each answer stands for.


def followed_key(text: object, key: str) -> str | None:
    """The key whose value ``key``'s raw ``text`` takes whole (``${a.b}``, ``${.x}``, ``${oc.select:a.b,default}``),
    made absolute from ``key``'s place; None for anything else (a literal, text around an interpolation, another
    resolver). verl's YAML makes one knob follow another this way (the log-prob passes' token budgets follow the
    actor's: ``${oc.select:actor_rollout_ref.actor.ppo_max_token_len_per_gpu,16384}``)."""
    if not isinstance(text, str) or "${" not in text:
        return None
    pieces = parse(text)
    if not pieces or len(pieces) != 1:
        return None
    piece = pieces[0]
    if piece[0] == "node":
        target = piece[1]
    elif piece[0] == "resolver" and piece[1] == "oc.select" and piece[2] and piece[2][0][0] == "literal" \
            and isinstance(piece[2][0][1], str):
        target = piece[2][0][1]
    else:
        return None
    if not REL_KEY.fullmatch(target):
        return None
    dots = len(target) - len(target.lstrip("."))
    if not dots:
        return target
    parent = key.split(".")[:-1]
    if dots - 1 > len(parent):
        return None
    return ".".join(parent[:len(parent) - (dots - 1)] + [target[dots:]])
