"""Text from outside (a model's response, a prompt, a ground truth, a log line) made safe to print, to write into
Markdown and to show in a widget: its control characters are shown, never obeyed.

A random-weight model writes every byte there is (tests/data/verl-run-h200-dumps); any model can write an escape
sequence that clears a terminal or retitles its window (``"\\x1b[2J\\x1b]0;pwned\\x07"``), a carriage return that
overwrites what came before on the line, or a bidi override that reorders it. ``visible`` writes each control
character as Python writes it in a string literal: ESC as ``\\x1b``, BEL as ``\\x07``, a carriage return as
``\\r``, a tab as ``\\t``, a C1 control as ``\\x9b``, a line separator or bidi control as ``\\u202e``. Plain ASCII,
so every font shows it (Unicode's control pictures, ␛ ␇, are missing from common fonts such as DejaVu and show as
empty boxes). The line break becomes the caller's marker (⏎ on one line) or stays. Pure.
"""

from __future__ import annotations

import re
from functools import lru_cache

NEWLINE = "⏎ "  # a line break in text shown on one line
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028-\u202e\u2066-\u2069]")
_BASE: dict[int, str] = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}  # C0, DEL, C1
_BASE.update({0x09: "\\t", 0x0D: "\\r"})
_BASE.update({c: f"\\u{c:04x}" for c in (*range(0x2028, 0x202F), *range(0x2066, 0x206A))})


@lru_cache(maxsize=8)
def _table(newline: str | None, tabs: bool) -> dict[int, str]:
    table = dict(_BASE)
    if newline is None:
        del table[0x0A]
    else:
        table[0x0A] = newline
    if tabs:
        del table[0x09]
    return table


def visible(text: str, newline: str | None = NEWLINE, tabs: bool = False) -> str:
    """``text`` with every control character shown instead of obeyed. ``newline``: what a line break (``\\n`` or
    ``\\r\\n``) becomes; None keeps it. ``tabs``: keep tabs (a widget or Markdown shows them as space)."""
    if not _UNSAFE.search(text):
        return text
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text.translate(_table(newline, tabs))


_JSON_UNSAFE = re.compile("[\x7f-\x9f\u2028-\u202e\u2066-\u2069]")


def json_visible(text: str) -> str:
    """JSON dumped with ``ensure_ascii=False`` (json escapes C0 itself), with DEL, C1, the separators and the bidi
    controls escaped too (``\\u009b``): the same JSON, safe to print."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if _JSON_UNSAFE.search(text) else text


__all__ = ["visible", "json_visible", "NEWLINE"]
