"""Text from outside (a model's response, a prompt, a ground truth, a log line) made safe to print, to write into
Markdown and to show in a widget: its control characters are shown, never obeyed.

A random-weight model writes every byte there is (tests/data/verl-run-h200-dumps); any model can write an escape
sequence that clears a terminal or retitles its window (``"\\x1b[2J\\x1b]0;pwned\\x07"``), a carriage return that
overwrites what came before on the line, or a bidi override that reorders it. ``visible`` shows each C0 control
as its Unicode control picture (ESC as ␛, BEL as ␇, NUL as ␀), DEL as ␡, and the C1 controls, the line and
paragraph separators and the bidi controls as escapes (``\\x9b``, ``\\u202e``). The line break becomes the
caller's marker (⏎ on one line) or stays. Pure.
"""

from __future__ import annotations

import re
from functools import lru_cache

NEWLINE = "⏎ "  # a line break in text shown on one line
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028-\u202e\u2066-\u2069]")
_BASE: dict[int, str] = {c: chr(0x2400 + c) for c in range(0x20)}  # ␀ … ␟
_BASE[0x7F] = "\u2421"  # ␡
_BASE.update({c: f"\\x{c:02x}" for c in range(0x80, 0xA0)})  # C1: no control pictures
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
