"""Syntax colouring for the generated run.sh and YAML (comments, keys, quoted values)."""

from __future__ import annotations

import re

from PySide6.QtGui import QColor, QFont, QSyntaxHighlighter, QTextCharFormat


def _fmt(color: str, bold: bool = False) -> QTextCharFormat:
    f = QTextCharFormat()
    f.setForeground(QColor(color))
    if bold:
        f.setFontWeight(QFont.Bold)
    return f


class ConfigHighlighter(QSyntaxHighlighter):
    RULES = [
        (re.compile(r"^\s*[+~]{0,2}[A-Za-z_][\w.]*(?==)"), _fmt("#2a6fdb")),  # override keys
        (re.compile(r"^\s*[A-Za-z_][\w\-]*(?=:)"), _fmt("#2a6fdb")),  # yaml keys
        (re.compile(r"'[^']*'|\"[^\"]*\""), _fmt("#1b8a3a")),  # quoted values
        (re.compile(r"\$\{?\w+\}?"), _fmt("#b35900", bold=True)),  # environment references
        (re.compile(r"#.*$"), _fmt("#888888")),  # comments
    ]

    def highlightBlock(self, text: str) -> None:  # noqa: N802 - Qt's name
        for pattern, fmt in self.RULES:
            for m in pattern.finditer(text):
                self.setFormat(m.start(), m.end() - m.start(), fmt)
