"""Hydra override strings: parse with Hydra's own grammar, render values back.

verl reads its command line through Hydra, so the wizard uses Hydra's parser
(pure Python, no I/O) instead of a look-alike. ``render_value`` is the inverse of
Hydra's value parser: ``parse(render_value(v)) == v`` with the same types.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, OverrideType
from hydra.errors import HydraException

PREFIX = {OverrideType.CHANGE: "", OverrideType.ADD: "+", OverrideType.FORCE_ADD: "++", OverrideType.DEL: "~"}


class OverrideSyntaxError(ValueError):
    """An override Hydra cannot parse; the message is Hydra's, on one line."""


@lru_cache(maxsize=1)
def _parser() -> OverridesParser:
    return OverridesParser.create()


@dataclass(frozen=True)
class ParsedOverride:
    text: str
    hydra: Override

    @property
    def key(self) -> str:
        return self.hydra.key_or_group

    @property
    def package(self) -> str | None:
        return self.hydra.package

    @property
    def kind(self) -> str:
        """'' (change), '+' (add), '++' (force add) or '~' (delete)."""
        return PREFIX[self.hydra.type]

    @property
    def is_plain(self) -> bool:
        return self.hydra.type == OverrideType.CHANGE and self.package is None

    @property
    def is_sweep(self) -> bool:
        return self.hydra.is_sweep_override()

    def value(self):
        return self.hydra.value()

    @property
    def value_text(self) -> str | None:
        return self.hydra.get_value_element_as_str() if self.hydra.value_type is not None else None


@lru_cache(maxsize=8192)
def parse_override(text: str) -> ParsedOverride:
    """Parse one override (cached: a GUI edit re-checks the same texts over and over)."""
    try:
        return ParsedOverride(text=text, hydra=_parser().parse_override(text))
    except HydraException as exc:
        message = one_line(str(exc))
        if "missing EQUAL" in message:  # Hydra's words for a word with no '=' in it
            message = f"expected KEY=VALUE (e.g. data.train_batch_size=64), got {text!r}; Hydra says: {message}"
        raise OverrideSyntaxError(message) from None


def one_line(message: str) -> str:
    return " ".join(line.strip() for line in str(message).strip().splitlines() if line.strip())


_BARE_STR = re.compile(r"^[A-Za-z_/.~$][A-Za-z0-9_\-/.~:@+$]*$")


def _quote(s: str) -> str:
    # Hydra only unescapes backslashes that precede a quote or end the string.
    body = re.sub(r"(\\*)('|$)", lambda m: m.group(1) * 2 + ("\\'" if m.group(2) else ""), s)
    return f"'{body}'"


def render_value(value) -> str:
    """Hydra override syntax for a Python value (inverse of Hydra's value parser)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        if _BARE_STR.match(value) and _parses_as(value, value):
            return value
        return _quote(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(render_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_render_key(k)}:{render_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot render {type(value).__name__} as a Hydra value")


def _render_key(key) -> str:
    key = str(key)
    if re.match(r"^[A-Za-z_][A-Za-z0-9_\-]*$", key):
        return key
    return _quote(key)


def _parses_as(text: str, expected) -> bool:
    try:
        value = parse_override(f"k={text}").value()
    except OverrideSyntaxError:
        return False
    return type(value) is type(expected) and value == expected


def render_override(key: str, value, kind: str = "") -> str:
    return f"{kind}{key}={render_value(value)}"


def same_value(a, b) -> bool:
    """Equality that also compares types (1 != True, 1 != '1'), recursively; nan == nan."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(
            a, bool
        ) and not isinstance(b, bool) and a == b
    if isinstance(a, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same_value(a[k], b[k]) for k in a)
    return a == b
